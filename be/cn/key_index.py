"""A table's rows by its first key column (an integer), for point and range reads (sysbench's
`WHERE id = ?` and `WHERE id BETWEEN ? AND ?`), which would otherwise filter the whole snapshot.

It holds every row version the table had since it was built, with its commit timestamp, and every
delete with its timestamp: rows are never changed, only deleted, so these facts stay true (a flush
moves rows into objects, a merge rewrites objects: neither changes what a snapshot holds). A read
at ts takes the rows within the bounds and keeps those committed at or before ts and not deleted at
or before ts.

Rows are in a base sorted by the key, found by binary search, each with the timestamp it was
deleted at (if it was when the base was made), and a tail of the pieces committed since, found
through a dict by key; deletes since are in a dict by row id. The tail is folded into the base
once it outgrows a share of it, so a fold costs little per row. A fold forgets the rows deleted
longer than history_ns ago (a hot key would otherwise gather a version per write, and every read
of it would step over them): the index then answers only snapshots since. A tail short of its
fold point is folded too once it has waited a while."""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
import time
from array import array
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import COMMIT_TS, ROW_ID

MIN_TAIL_ROWS = 256  # the tail is folded past this many rows (or deletes) ...
TAIL_SHARE = 64  # ... or past 1/TAIL_SHARE of the base, whichever is more
MAX_TAIL_ROWS = 65_536  # ... and always past this many
IDLE_FOLD_SECONDS = 2.0  # a shorter tail is folded once it waited this long ...
IDLE_FOLD_ROWS = 100_000  # ... and as much again per this many rows of the base
FOLD_BEHIND = 4  # values are read from a tail this many times past its fold point (a fold runs)
MAX_KEPT_CHOICES = 64  # column lists kept with their positions, per table
MAX_KEPT_VALUES = 16_384  # rows kept as Python values for point reads; past it ...
KEPT_LET_GO_SHARE = 8  # ... at least 1/KEPT_LET_GO_SHARE of them are let go, the longest kept
VALUES_ROW_BYTES = 120  # about what a row kept as a Python tuple costs besides its values
FEW_ROWS = 16  # more rows found are checked by Arrow, fewer in Python
FEW_ROWS_ONE_BY_ONE = 2  # rows loaded into the kept values a scalar at a time, not by slices
LOAD_WINDOW_ROWS = 256  # while the kept values have room, a base row missing loads its window
TAIL_ENTRY_BYTES = 128  # what a row or delete since the base costs, about (its place, its key)
DELETED_AT = "__QUIRE_DELETED_AT"  # a base row's delete timestamp (NULL: not deleted)


class KeyIndex:
    def __init__(
        self,
        column: str,
        valid_from: int,
        max_rows: int,
        history_ns: int,
        newest_readable: Callable[[], int] | None = None,
    ):
        """column: the integer column rows are found by; valid_from: the first timestamp it
        answers at (older snapshots may hold objects it never saw); max_rows: past this many
        rows the index gives up (its rows are a copy of the table's); history_ns: how long
        a fold keeps the rows deleted (by the wall clock, which timestamps follow);
        newest_readable: the newest timestamp a read may ask for (the CN's watermark, which
        lags the clock while nothing commits), which a fold never forgets past."""
        assert max_rows > 0 and history_ns > 0
        self.column = column
        self.newest_readable = newest_readable
        self.valid_from = valid_from
        self.max_rows = max_rows
        self.history_ns = history_ns
        self._folded_at = time.monotonic()  # the base was made or last folded
        self._lock = threading.Lock()
        self.ready = False  # the base is built
        self.broken = False  # a piece it cannot index (no such integer column, too many rows)
        self._base: pa.Table | None = None
        self._base_bytes = 0
        self._base_keys = array("q")
        self._pieces: list[pa.Table] = []  # committed since the base, in commit order
        self._tail_table: pa.Table | None = None  # the first _joined_parts of the tail, as one
        self._joined_parts = 0
        self._tail_parts: list[pa.Table] = []  # the same pieces, as they came
        self._tail_at: list[tuple[int, int]] = []  # offset -> (part, position in it)
        self._tail: dict[int, list[int]] = {}  # key -> its rows' offsets in _tail_table
        self._tail_keys: list[int] = []  # the tail's keys, sorted
        self._tail_pieces = 0  # of _pieces, those in _tail
        self._tail_rows = 0
        self._deleted_tail: dict[int, int] = {}  # row id -> delete ts, since the base
        self._later: tuple[pa.Array, pa.Array] | None = None  # _deleted_tail as Arrow
        self._folding = False
        self.rows = 0
        # rows read as Python values, by row id (a row never changes), in the columns of
        # _layout; let go when the columns change
        self._values: dict[int, tuple] = {}
        self._layout: tuple[str, ...] = ()
        self._chosen: dict[tuple[str, ...], tuple[int, ...] | None] = {}  # names -> positions
        self._base_ids = array("q")  # the base's row ids, by position
        self._base_layout: tuple[str, ...] | None = None  # the base's columns but DELETED_AT
        self._tail_layout: tuple[str, ...] | None = None
        self._base_deleted: dict[int, int] = {}  # base position -> its DELETED_AT, if any
        self._oldest_deleted_at: int | None = None  # the earliest of them
        self._tail_ids: list[int] = []  # the tail table's row ids, by offset

    # -- fed by the table --------------------------------------------------------------------

    def add_rows(self, rows: pa.Table) -> None:
        """rows: ROW_ID, COMMIT_TS, then columns, as the table keeps them."""
        with self._lock:
            self._pieces.append(rows)
            self.rows += rows.num_rows
            if self.rows > self.max_rows:
                self._give_up()

    def add_deletes(self, row_ids: list[int], delete_ts: int) -> None:
        with self._lock:
            for row_id in row_ids:
                self._deleted_tail[row_id] = delete_ts
            self._later = None

    def build(self, pieces: list[pa.Table], delete_ids: list[pa.Array], delete_ts: list[pa.Array]):
        """The base from the table's rows and deletes when the index was made (pieces and deletes
        added since are kept apart until then)."""
        rows = sum(piece.num_rows for piece in pieces)
        with self._lock:
            self.rows += rows
            if self.rows > self.max_rows:
                self._give_up()
                return
        deleted = (
            (pa.concat_arrays(delete_ids), pa.concat_arrays(delete_ts)) if delete_ids else None
        )
        try:
            base, keys, _ = self._sorted(pieces, deleted)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, _Unindexable):
            with self._lock:
                self._give_up()
            return
        with self._lock:
            self._set_base(base, keys)
            self.ready = not self.broken

    @property
    def nbytes(self) -> int:
        """About what the index holds: its base (rows and keys), and a share per row or delete
        since (the tail is folded into the base before it grows large)."""
        if self.broken:
            return 0
        base = 0 if self._base is None else self._base_bytes + 8 * len(self._base_keys)
        pending = self.rows - (0 if self._base is None else self._base.num_rows)
        row_bytes = base // max(len(self._base_keys), 1)
        values = len(self._values) * (VALUES_ROW_BYTES + 2 * row_bytes)  # as Python objects
        return base + values + TAIL_ENTRY_BYTES * (max(pending, 0) + len(self._deleted_tail))

    def _give_up(self) -> None:
        self.broken = True
        self._base, self._base_keys, self._pieces, self._tail = None, array("q"), [], {}
        self._tail_keys, self._deleted_tail, self._later = [], {}, None
        self._tail_table, self._joined_parts, self._tail_parts, self._tail_at = None, 0, [], []
        self._base_ids, self._base_deleted, self._tail_ids = array("q"), {}, []
        self._oldest_deleted_at = None
        self._base_layout = self._tail_layout = None
        self._forget_values()

    def _forget_values(self) -> None:
        self._values, self._layout, self._chosen = {}, (), {}

    def _set_base(self, base: pa.Table | None, keys: array) -> None:
        """The base and what reads of values need of it (under the lock)."""
        self._base, self._base_keys = base, keys
        self._base_bytes = 0 if base is None else base.nbytes  # Arrow's count: costly per call
        if base is None:
            self._base_ids, self._base_deleted, self._base_layout = array("q"), {}, None
            self._oldest_deleted_at = None
            return
        self._base_ids = array("q", base.column(ROW_ID).to_pylist())
        deleted = base.column(DELETED_AT)
        at = pc.indices_nonzero(pc.is_valid(deleted)).to_pylist()
        stamps = deleted.take(pa.array(at, pa.int64())).to_pylist()
        self._base_deleted = dict(zip(at, stamps, strict=True))
        self._oldest_deleted_at = min(stamps, default=None)
        self._base_layout = _layout(base)

    # -- read --------------------------------------------------------------------------------

    def within(self, low: int | None, high: int | None, ts: int, may_fold: bool) -> pa.Table | None:
        """The rows with low <= key <= high (None: unbounded) visible at ts: ROW_ID, COMMIT_TS,
        then the columns (of the pieces' schemas, unified); None if the index cannot answer (not
        ready, or its tail needs a fold and may_fold is false)."""
        if self.needs_fold():
            if not may_fold:
                return None
            self._fold()
        with self._lock:
            if ts < self.valid_from or not self._tail_indexed():
                return None
            found = []
            if self._base is not None:
                start = 0 if low is None else bisect.bisect_left(self._base_keys, low)
                end = (
                    len(self._base_keys)
                    if high is None
                    else bisect.bisect_right(self._base_keys, high)
                )
                if end > start:
                    found.append(self._base.slice(start, end - start))
            hits = self._tail_hits(low, high)
            if hits:
                found.append(self._joined_tail().take(hits))
            if not found:
                return None if self._base is None else self._base.slice(0, 0)
            rows = _concat(found)
            later = self._deleted_tail
            if rows.num_rows > FEW_ROWS:  # a range: Arrow decides for the many
                later_arrays = self._later_arrays() if later else None
            else:
                deleted_later = (
                    [later.get(row_id) for row_id in rows.column(ROW_ID).to_pylist()]
                    if later
                    else None
                )
        if rows.num_rows > FEW_ROWS:
            visible = pc.less_equal(rows.column(COMMIT_TS), ts)
            if DELETED_AT in rows.schema.names:
                gone = pc.fill_null(pc.less_equal(rows.column(DELETED_AT), ts), False)
                visible = pc.and_(visible, pc.invert(gone))
            if later_arrays is not None:
                ids, stamps = later_arrays
                at = pc.index_in(rows.column(ROW_ID), value_set=ids)
                gone = pc.fill_null(pc.less_equal(pc.take(stamps, at), ts), False)
                visible = pc.and_(visible, pc.invert(gone))
            return rows.take(pc.indices_nonzero(visible))  # a take reads pieces faster
        stamps = rows.column(COMMIT_TS).to_pylist()
        gone = (
            rows.column(DELETED_AT).to_pylist()
            if DELETED_AT in rows.schema.names
            else [None] * len(stamps)
        )
        if deleted_later is not None:
            gone = [
                stamp if stamp is not None else old
                for stamp, old in zip(deleted_later, gone, strict=True)
            ]
        visible = [
            stamp <= ts and (deleted is None or deleted > ts)
            for stamp, deleted in zip(stamps, gone, strict=True)
        ]
        if all(visible):
            return rows
        return rows.filter(pa.array(visible, pa.bool_()))

    def values_within(
        self, low: int, high: int, ts: int, names: tuple[str, ...], limit: int
    ) -> list[tuple] | None:
        """The values of names in the rows with low <= key <= high visible at ts, as within()
        finds them (in its order) but as Python values: a point or short range read's answer
        without Arrow's cost per call. None if the index cannot answer at once, a name is not
        a column of its rows, or more than limit rows are in the range."""
        with self._lock:
            if ts < self.valid_from:
                return None
            if self.needs_fold():
                if not self._fold_beside():
                    return None
            elif self._idle_fold_due():
                self._fold_beside()
            if not self._tail_indexed():
                return None
            start = bisect.bisect_left(self._base_keys, low)
            end = bisect.bisect_right(self._base_keys, high, start)
            hits = self._tail_hits(low, high)
            if end - start + len(hits) > limit:
                return None
            if not self._layout_agreed():
                return None
            chosen = self._chosen.get(names, _UNKNOWN)
            if chosen is _UNKNOWN:
                chosen = self._choose(names)
            if chosen is None:
                return None
            ids = self._base_ids[start:end]
            tail_ids = self._tail_ids
            ids.extend(tail_ids[offset] for offset in hits)
            rows = self._visible_values(ids, start, end - start, ts)
            if rows is None:
                self._load(start, end, hits)
                rows = self._visible_values(ids, start, end - start, ts)
                if rows is None:  # more than the values kept can hold
                    return None
            if len(chosen) == 1:
                at = chosen[0]
                return [(values[at],) for values in rows]
            if not chosen:
                return [()] * len(rows)
            return list(map(operator.itemgetter(*chosen), rows))

    def _visible_values(self, ids, start: int, in_base: int, ts: int) -> list[tuple] | None:
        """The kept values of the rows ids (the base's in_base rows from start, then the tail's)
        visible at ts, in one pass: committed at or before ts and not deleted at or before it
        (a delete since the base decides for its row); None if one of them is not kept."""
        kept, later, base_deleted = self._values, self._deleted_tail, self._base_deleted
        commit_at = self._layout.index(COMMIT_TS)
        if not later and not base_deleted:
            rows = list(map(kept.get, ids))
            if None in rows:
                return None
            return [values for values in rows if values[commit_at] <= ts]
        visible = []
        for place, row_id in enumerate(ids):
            values = kept.get(row_id)
            if values is None:
                return None
            if values[commit_at] > ts:
                continue
            deleted_at = later.get(row_id)
            if deleted_at is None and place < in_base and base_deleted:
                deleted_at = base_deleted.get(start + place)
            if deleted_at is None or deleted_at > ts:
                visible.append(values)
        return visible

    def _layout_agreed(self) -> bool:
        """Whether the base and the tail have the same columns (not so after a column was added,
        until the next fold); the values kept are let go when the columns change."""
        base, tail = self._base_layout, self._tail_layout
        layout = base if base is not None else tail
        if layout is None or (tail is not None and tail is not layout and tail != layout):
            return False
        if layout is not self._layout:
            if layout != self._layout:
                self._forget_values()
            self._layout = layout
        return True

    def _choose(self, names: tuple[str, ...]) -> tuple[int, ...] | None:
        """The positions of names in the kept values (None: one is not a column), kept."""
        positions = {name: at for at, name in enumerate(self._layout)}
        picked = None
        if all(name in positions for name in names):
            picked = tuple(positions[name] for name in names)
        if len(self._chosen) >= MAX_KEPT_CHOICES:
            self._chosen.clear()
        self._chosen[names] = picked
        return picked

    def _load(self, start: int, end: int, hits: list[int]) -> None:
        """The values of those of the base's rows start..end and the tail's rows at hits not
        kept yet, kept; while the kept values have room, a short range's whole window of the
        base with them (one slice, not a scalar a column per row: a table that fits is read
        whole soon enough)."""
        kept = self._values
        base_ids = self._base_ids[start:end]
        missing = [place for place, row_id in enumerate(base_ids) if row_id not in kept]
        tail_missing = [offset for offset in hits if self._tail_ids[offset] not in kept]
        window = LOAD_WINDOW_ROWS
        if missing and end - start <= window and len(kept) + 2 * window <= MAX_KEPT_VALUES:
            first = start - start % window
            last = min(len(self._base_ids), max(end, first + window))
            self._keep(self._base.slice(first, last - first), self._base_ids[first:last])
            missing = []
        if len(missing) + len(tail_missing) <= FEW_ROWS_ONE_BY_ONE:  # a point read's row or two
            for place in missing:
                self._keep_one(self._base, start + place, base_ids[place])
            for offset in tail_missing:
                part, position = self._tail_at[offset]
                self._keep_one(self._tail_parts[part], position, self._tail_ids[offset])
            return
        if missing:  # a slice from the first missing to the last: one call per column
            first, last = start + missing[0], start + missing[-1] + 1
            self._keep(self._base.slice(first, last - first), self._base_ids[first:last])
        if tail_missing:
            rows = self._joined_tail().take(pa.array(tail_missing, pa.int64()))
            self._keep(rows, [self._tail_ids[offset] for offset in tail_missing])

    def _made_room(self, rows: int) -> bool:
        """Whether the kept values have room for rows more, the longest kept let go for them a
        share at a time; False if rows are more than they may ever hold."""
        kept = self._values
        excess = len(kept) + rows - MAX_KEPT_VALUES
        if excess <= 0:
            return True
        if rows > MAX_KEPT_VALUES:
            return False
        let_go = min(len(kept), max(excess, MAX_KEPT_VALUES // KEPT_LET_GO_SHARE))
        for row_id in list(itertools.islice(kept, let_go)):
            del kept[row_id]
        return True

    def _keep(self, rows: pa.Table, ids) -> None:
        if not self._made_room(len(ids)):
            return
        columns = [rows.column(name).to_pylist() for name in self._layout]
        self._values.update(zip(ids, zip(*columns, strict=True), strict=True))

    def _keep_one(self, table: pa.Table, position: int, row_id: int) -> None:
        """One row's values, a scalar a column (cheaper than a slice for a row or two)."""
        self._made_room(1)
        self._values[row_id] = tuple(table.column(name)[position].as_py() for name in self._layout)

    def _later_arrays(self) -> tuple[pa.Array, pa.Array]:
        """The deletes since the base as Arrow (row ids, timestamps), kept until the next."""
        if self._later is None:
            later = self._deleted_tail
            self._later = (
                pa.array(list(later), pa.int64()),
                pa.array(list(later.values()), pa.int64()),
            )
        return self._later

    def _tail_indexed(self) -> bool:
        """Whether the index answers, its tail indexed (under the lock); False if it gave up."""
        if not self.ready or self.broken:
            return False
        try:
            self._index_tail()
        except _Unindexable:
            self._give_up()
            return False
        return True

    def _tail_hits(self, low: int | None, high: int | None) -> list[int]:
        tail = self._tail
        if not tail:
            return []
        if low is not None and low == high:
            return tail.get(low, [])
        keys = self._tail_keys
        start = 0 if low is None else bisect.bisect_left(keys, low)
        end = len(keys) if high is None else bisect.bisect_right(keys, high)
        return [place for key in keys[start:end] for place in tail[key]]

    def _index_tail(self) -> None:
        """The pieces committed since the last call into the tail: one table (a read takes its
        rows with one take, not a slice per row) and the offsets of each key's rows in it."""
        new = self._pieces[self._tail_pieces :]
        if not new:
            return
        offset = self._tail_rows
        for piece in new:
            part = len(self._tail_parts)
            layout = _layout(piece)
            if piece.num_rows <= FEW_ROWS:  # read soon, most likely: its values kept at once
                _check_indexable(piece, self.column)
                values = [column.to_pylist() for column in piece.columns]
                columns = dict(zip(piece.schema.names, values, strict=True))
                keys, ids = columns[self.column], columns[ROW_ID]
                if layout == self._layout and self._made_room(len(ids)):
                    rows = zip(*(columns[name] for name in layout), strict=True)
                    self._values.update(zip(ids, rows, strict=True))
            else:
                keys, ids = _keys(piece, self.column), piece.column(ROW_ID).to_pylist()
            for position, key in enumerate(keys):
                if key is not None:
                    places = self._tail.get(key)
                    if places is None:
                        places = self._tail[key] = []
                        bisect.insort(self._tail_keys, key)
                    places.append(offset)
                self._tail_at.append((part, position))
                offset += 1
            self._tail_parts.append(piece)
            self._tail_ids.extend(ids)
            if self._tail_layout is not None and layout != self._tail_layout:
                layout = _MIXED  # values are read from one layout only
            self._tail_layout = layout
        self._tail_rows = offset
        self._tail_pieces = len(self._pieces)

    def _joined_tail(self) -> pa.Table:
        """The tail's pieces as one table (under the lock), kept until the next piece."""
        parts = self._tail_parts
        if self._joined_parts < len(parts):  # the parts since joined to it: not all again
            joined = [] if self._tail_table is None else [self._tail_table]
            table = _concat(joined + parts[self._joined_parts :])
            self._tail_table = table.combine_chunks()  # small; a take from chunks would join them
            self._joined_parts = len(parts)
        return self._tail_table

    def _fold_beside(self) -> bool:
        """A fold started on a thread of its own (under the lock), unless one runs; whether the
        tail may still be read meanwhile (not too far past its fold point)."""
        if not self._folding:
            self._folding = True
            threading.Thread(
                target=self._fold, args=(True,), name="key-index-fold", daemon=True
            ).start()
        limit = self._fold_limit()
        return (
            self._tail_rows <= FOLD_BEHIND * limit
            and len(self._deleted_tail) <= FOLD_BEHIND * limit
        )

    # -- fold --------------------------------------------------------------------------------

    def _idle_fold_due(self) -> bool:
        """Whether a tail short of its fold point, or a version in the base deleted before the
        history, waited long enough (longer for a larger base) to be folded anyway: once writes
        stop, reads step over no version deleted before the history."""
        tail = self._tail_rows or self._deleted_tail or self._tail_pieces < len(self._pieces)
        oldest = self._oldest_deleted_at
        if not tail and (oldest is None or oldest > time.time_ns() - self.history_ns):
            return False
        wait = IDLE_FOLD_SECONDS * (1 + len(self._base_keys) // IDLE_FOLD_ROWS)
        return time.monotonic() - self._folded_at > wait

    def _fold_limit(self) -> int:
        """Rows (or deletes) the tail holds before a fold is due."""
        return min(MAX_TAIL_ROWS, max(MIN_TAIL_ROWS, len(self._base_keys) // TAIL_SHARE))

    def needs_fold(self) -> bool:
        limit = self._fold_limit()
        pending = 0
        if self._tail_pieces < len(self._pieces):
            pending = sum(piece.num_rows for piece in self._pieces[self._tail_pieces :])
        return self.ready and (self._tail_rows + pending > limit or len(self._deleted_tail) > limit)

    def _fold(self, claimed: bool = False) -> None:
        """The tail into the base, worked out outside the lock (the table keeps applying);
        claimed: the caller marked the fold as running."""
        with self._lock:
            if (self._folding and not claimed) or not self.ready or self.broken:
                if claimed:
                    self._folding = False
                return
            self._folding = True
            base, pieces = self._base, list(self._pieces)
            joined, in_joined = self._tail_table, self._joined_parts  # the tail as one, if made
            deleted = dict(self._deleted_tail)
            horizon = time.time_ns() - self.history_ns  # timestamps follow the wall clock
            if self.newest_readable is not None:
                horizon = min(horizon, self.newest_readable())
            forget_until = horizon if horizon > self.valid_from else None
        try:
            later = (
                pa.array(list(deleted), pa.int64()),
                pa.array(list(deleted.values()), pa.int64()),
            )
            try:
                parts = pieces if joined is None else [joined, *pieces[in_joined:]]
                sorted_base, keys, forgotten = self._sorted(
                    ([base] if base is not None else []) + parts, later, forget_until
                )
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, _Unindexable):
                with self._lock:
                    self._give_up()
                return
            with self._lock:
                if self.broken:
                    return
                self._set_base(sorted_base, keys)
                self._folded_at = time.monotonic()
                if forget_until is not None:
                    self.valid_from = forget_until
                    self.rows -= len(forgotten)
                    for row_id in forgotten:
                        self._values.pop(row_id, None)
                self._pieces = self._pieces[len(pieces) :]
                self._tail, self._tail_keys, self._tail_pieces, self._tail_rows = {}, [], 0, 0
                self._tail_table, self._joined_parts = None, 0
                self._tail_ids, self._tail_layout = [], None
                self._tail_parts, self._tail_at = [], []
                for row_id, stamp in deleted.items():
                    if self._deleted_tail.get(row_id) == stamp:
                        del self._deleted_tail[row_id]
                self._later = None
        finally:
            with self._lock:
                self._folding = False

    def _sorted(
        self,
        pieces: list[pa.Table],
        deleted: tuple[pa.Array, pa.Array] | None,
        forget_until: int | None = None,
    ) -> tuple[pa.Table | None, array, list[int]]:
        """pieces as one table sorted by the key (rows without a key left out), each row's
        DELETED_AT its own or deleted's (row ids, delete timestamps); with forget_until, the rows
        deleted at or before it are left out too, and their row ids returned."""
        pieces = [piece for piece in pieces if piece.num_rows]
        if not pieces:
            return None, array("q"), []
        if any(self.column not in piece.schema.names for piece in pieces):
            raise _Unindexable(self.column)
        rows = _concat(pieces).combine_chunks()  # Arrow's kernels are slow over many chunks
        _check_indexable(rows, self.column)
        rows = rows.filter(pc.is_valid(rows.column(self.column)))
        stamps = (
            rows.column(DELETED_AT)
            if DELETED_AT in rows.schema.names
            else pa.nulls(rows.num_rows, pa.int64())
        )
        if deleted is not None and len(deleted[0]):
            ids, at = deleted
            found = pc.index_in(rows.column(ROW_ID), value_set=ids)
            stamps = pc.if_else(pc.is_valid(found), pc.take(at, found), stamps)
        if DELETED_AT in rows.schema.names:
            rows = rows.drop_columns([DELETED_AT])
        rows = rows.append_column(pa.field(DELETED_AT, pa.int64()), stamps)
        forgotten = []
        if forget_until is not None:
            gone = pc.fill_null(pc.less_equal(stamps, forget_until), False)
            forgotten = rows.column(ROW_ID).filter(gone).to_pylist()
            if forgotten:
                rows = rows.filter(pc.invert(gone))
        rows = rows.take(pc.sort_indices(rows, [(self.column, "ascending")])).combine_chunks()
        return rows, array("q", rows.column(self.column).to_pylist()), forgotten


_UNKNOWN = object()
_MIXED = ("<pieces of several layouts>",)


def _layout(table: pa.Table) -> tuple[str, ...]:
    """The columns values are kept in: table's, but a base's delete timestamps."""
    return tuple(name for name in table.schema.names if name != DELETED_AT)


class _Unindexable(Exception):
    """A piece without the column as an integer."""


def _check_indexable(piece: pa.Table, column: str) -> None:
    if column not in piece.schema.names or not pa.types.is_integer(piece.schema.field(column).type):
        raise _Unindexable(column)
    if pa.types.is_uint64(piece.schema.field(column).type):
        raise _Unindexable(column)


def _keys(piece: pa.Table, column: str) -> list:
    _check_indexable(piece, column)
    return piece.column(column).to_pylist()


def _concat(pieces: list[pa.Table]) -> pa.Table:
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces, promote_options="permissive")
