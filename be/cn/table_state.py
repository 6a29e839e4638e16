"""One table on a CN: the rows its commits inserted (with row id and commit timestamp) and the
rows they deleted (row id and delete timestamp), in memory until a flush puts them in objects,
then in the table's objects and tombstones; the snapshot at T is every row committed at or before
T and not deleted at or before T, from objects and memory alike.

Rows in memory are kept as Arrow tables in commit order; many small ones are combined into one
now and then, so that a snapshot concatenates few pieces. A flush (TableChanges.flushed_ts) drops
from memory what was committed at or before it: rows committed later stay (MatrixOne's rule).
An object a merge wrote serves snapshots from the merge on; the ones it replaced, those before;
so do a tombstone compaction's, and the tombstones it removed (be/tn/compaction.py), and an
overwrite's (TableChanges.overwrites: its deletes remove the rows in memory at the same time).

A CN that subscribes below the TN's checkpoint restores the table from it: its objects and
tombstones (metadata only: the rows stay in the objects until a snapshot reads them), then the
commits after it; changes at or below the checkpoint that arrive later are already in it. Snapshots
below a restore's timestamp see the checkpoint's objects, not the history before them.

A snapshot reads the table as the reading schema has it: only rows of the partitions it lists
(rows in memory carry the partition they were placed in, objects name theirs), so TRUNCATE,
REPLACE and DROP PARTITION hide rows and RECOVER shows them again; and rows written at an older
schema version adapted to it by column id (be/row_adapter.py).

A read bounded on the first key column (a point or range read) is answered from a key index
(be/cn/key_index.py) made by the first such read and fed by every commit after it, instead of
filtering the whole snapshot; a read it cannot answer takes the snapshot's path. The index
holds the rows as one schema version reads them (its partitions, its columns): a commit at another
version, or a read at a newer one, makes it again.

Kept snapshots and the key index are entries of the CN's byte budget (be/cn/kept_bytes.py), which
may evict them between reads; one larger than the budget takes is used once and not kept."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from be.cn.bounds import ColumnBound, within
from be.cn.kept_bytes import KeptBytes
from be.cn.key_index import KeyIndex
from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.logtail.entries import COMMIT_TS, PARTITION_ID, ROW_ID, TableChanges
from be.read_plan import ReadPlan
from be.row_adapter import adapted
from be.storage.blocks import ObjectMeta, prune, read_blocks, read_whole_objects
from be.storage.errors import StorageError
from be.storage.objects import ObjectStore
from be.storage.tombstones import DELETE_TS, TombstoneMeta, read_tombstones
from be.table_schema import TableSchema, column_id
from be.tn.placement import in_partitions
from metadata.records import KeyModel

COMBINE_PIECES = 64  # pieces of deletes combined into one past this many
MAX_ROW_PIECES = 256  # pieces of rows combined into one past this many (settled ones pile up)
TIER_BITS = 3  # pieces of rows are tiered by size, each tier 8x the one below
TIER_PIECES = 1 << TIER_BITS  # this many of one tier or below, at the end: combined into one
MIN_CHUNK_ROWS = 4096  # a kept snapshot whose chunks hold fewer rows on average is combined
# pieces of this tier or above (2048 rows or more) are combined no more
SETTLED_TIER = (MIN_CHUNK_ROWS.bit_length() - 1) // TIER_BITS
MAX_CACHED_SNAPSHOTS = (
    32  # of the newest state: per schema (a scan's columns), with and without row ids
)

AGGREGATIONS = {  # Doris's aggregation of a value column: pyarrow's hash aggregate
    "SUM": "sum",
    "MAX": "max",
    "MIN": "min",
    "REPLACE": "last",
    "REPLACE_IF_NOT_NULL": "last",
}
SET_UNIONS = ("BITMAP_UNION", "HLL_UNION")  # of BITMAP and HLL values: sorted lists (_unioned)


FOREVER = 1 << 63
_NOT_KEPT = (None, None)


@dataclass(frozen=True, slots=True)
class _Stored:
    meta: ObjectMeta
    serves_from: int  # the first snapshot timestamp it serves (0 for a flush's objects)
    serves_until: int = FOREVER  # the merge that replaced it


class TableState:
    def __init__(
        self,
        table_id: int,
        store: ObjectStore | None = None,
        cache: ObjectCache | None = None,
        max_indexed_rows: int = ComputeLimits.key_index_max_rows,
        kept: KeptBytes | None = None,
        key_index_history_ns: int = ComputeLimits().key_index_history_ns,
        newest_readable: Callable[[], int] | None = None,
    ):
        """newest_readable: the newest timestamp a read may ask for (the CN's watermark), past
        which the key index never forgets the rows deleted."""
        self.table_id = table_id
        self.newest_readable = newest_readable
        self.store = store
        self.cache = cache
        self.max_indexed_rows = max_indexed_rows
        self.key_index_history_ns = key_index_history_ns
        self.kept = kept or KeptBytes(ComputeLimits())
        self._objects: dict[str, _Stored] = {}
        self._tombstones: list[TombstoneMeta] = []
        # Tombstones a compaction removed (with their rows) as (its timestamp, tombstone), in
        # the order removed: they serve the snapshots before it, as the objects it replaced do.
        self._removed_tombstones: list[tuple[int, TombstoneMeta]] = []
        self._replaced = 0  # objects in _objects a merge replaced (kept for older snapshots)
        self._lock = threading.Lock()
        # ROW_ID, COMMIT_TS, PARTITION_ID (if placed), then the columns at its version (with ids)
        self._rows: list[pa.Table] = []
        self._row_partitions: list[frozenset[int] | None] = []  # per piece: its PARTITION_IDs
        self._delete_ids: list[pa.Array] = []
        self._delete_ts: list[pa.Array] = []
        self.row_count = 0  # rows inserted (deleted ones included)
        self.nbytes = 0
        # Every snapshot at or after the newest change is the same: those asked for are kept
        # until the next change.
        self._changed_ts = 0
        # (schema, row_ids) -> the snapshot and its entry in the kept_bytes budget
        self._newest: dict[tuple[TableSchema, bool], tuple[pa.Table, int]] = {}
        self.restored_ts = 0  # the checkpoint this state was restored from, if any
        # Point and range reads by the first key column: made by the first such read, for the
        # schema it read with.
        self._index: KeyIndex | None = None
        self._index_schema: TableSchema | None = None
        self._index_token: int | None = None
        self._removed_ts = 0  # the last merge: objects it replaced served snapshots before it

    def restore(
        self, objects: tuple[ObjectMeta, ...], tombstones: tuple[TombstoneMeta, ...], ts: int
    ) -> None:
        """The table as a checkpoint at ts holds it: these objects and tombstones, and the rows
        in memory committed after ts."""
        with self._lock:
            assert ts >= self._changed_ts, "a checkpoint older than what was applied"
            self._objects = {meta.name: _Stored(meta, 0) for meta in objects}
            self._tombstones = list(tombstones)
            self._removed_tombstones = []
            self._replaced = 0
            self._drop_until(ts)
            self.restored_ts = self._changed_ts = ts
            let_go = self._let_all_go()

        self._release(let_go)

    def restore_memory(self, rows: list[pa.Table], delete_ids: list, delete_ts: list) -> None:
        """After restore(): the rows and deletes committed after its timestamp (ROW_ID,
        COMMIT_TS, then the columns; row ids and their delete timestamps), in commit order."""
        with self._lock:
            assert not self._rows and not self._delete_ids, "restored into an empty table"
            self._rows = [piece for piece in rows if piece.num_rows]
            self._row_partitions = [_partitions_in(piece) for piece in self._rows]
            if len(self._rows) > MAX_ROW_PIECES:
                self._rows, self._row_partitions = _combined(self._rows, self._row_partitions)
            self._delete_ids, self._delete_ts = list(delete_ids), list(delete_ts)
            self.row_count = sum(piece.num_rows for piece in self._rows)
            self.nbytes = sum(piece.nbytes for piece in self._rows) + sum(
                ids.nbytes * 2 for ids in self._delete_ids
            )

    def let_go(self) -> None:
        """The CN drops this table: its kept snapshots and index leave the budget."""
        with self._lock:
            let_go = self._let_all_go()
        self._release(let_go)

    def _let_all_go(self) -> list[int]:
        """Under the lock: the kept snapshots and the index dropped; their tokens to release."""
        tokens = [token for _, token in self._newest.values()]
        if self._index_token is not None:
            tokens.append(self._index_token)
        self._newest = {}
        self._index, self._index_token = None, None
        return tokens

    def _release(self, tokens: list[int]) -> None:
        for token in tokens:
            self.kept.release(token)

    def apply(self, change: TableChanges, commit_ts: int) -> None:
        assert change.table_id == self.table_id
        if commit_ts <= self.restored_ts:
            return  # the checkpoint holds it already
        if change.changes_storage:
            self._apply_storage(change, commit_ts)
        let_go: list[int] = []
        with self._lock:
            assert commit_ts > self._changed_ts
            self._changed_ts = commit_ts
            if self._newest:
                let_go.extend(token for _, token in self._newest.values())
                self._newest = {}
            if self._index is not None and (
                change.schema_version != self._index_schema.schema_version
            ):
                let_go.extend(self._drop_index())  # rows of another version: made again
            if change.inserts is not None and change.inserts.num_rows:
                rows = change.inserts
                stamps = pa.repeat(pa.scalar(commit_ts, pa.int64()), rows.num_rows)
                rows = rows.add_column(1, pa.field(COMMIT_TS, pa.int64(), False), stamps)
                self._rows.append(rows)
                self._row_partitions.append(_partitions_in(rows))
                if self._index is not None:
                    self._index.add_rows(_adapted(rows, self._index_schema))
                self.row_count += rows.num_rows
                self.nbytes += rows.nbytes
                _combine_tail(self._rows, self._row_partitions)
                if len(self._rows) > MAX_ROW_PIECES:
                    self._rows, self._row_partitions = _combined(self._rows, self._row_partitions)
            if change.deletes is not None and change.deletes.num_rows:
                ids = change.deletes.column(ROW_ID).combine_chunks()
                self._delete_ids.append(ids)
                if self._index is not None:
                    self._index.add_deletes(ids.to_pylist(), commit_ts)
                self._delete_ts.append(pa.repeat(pa.scalar(commit_ts, pa.int64()), len(ids)))
                self.nbytes += ids.nbytes * 2
                if len(self._delete_ids) > COMBINE_PIECES:
                    self._delete_ids = [pa.concat_arrays(self._delete_ids)]
                    self._delete_ts = [pa.concat_arrays(self._delete_ts)]
        self._release(let_go)

    def _drop_index(self) -> list[int]:
        """Under the lock: the index dropped (made again by the next read); its token."""
        token = self._index_token
        self._index, self._index_token = None, None
        return [] if token is None else [token]

    def _apply_storage(self, change: TableChanges, commit_ts: int) -> None:
        assert self.store is not None, "a CN reading flushed tables needs the object store"
        let_go: list[int] = []
        with self._lock:
            for name in change.objects_removed:
                stored = self._objects.get(name)
                if stored is not None and stored.serves_until == FOREVER:
                    self._objects[name] = _Stored(stored.meta, stored.serves_from, commit_ts)
                    self._replaced += 1
            if change.objects_removed and self._tombstones:
                removed = set(change.objects_removed)
                gone = [meta for meta in self._tombstones if meta.name in removed]
                if gone:
                    self._tombstones = [m for m in self._tombstones if m.name not in removed]
                    self._removed_tombstones += [(commit_ts, meta) for meta in gone]
            serves_from = commit_ts if change.objects_removed or change.loads_objects else 0
            if change.objects_removed or change.overwrites:
                self._removed_ts = commit_ts
            if change.overwrites or change.loads_objects:
                # rows never in memory, or an overwrite's rows gone: the index is made again
                let_go = self._drop_index()
            for meta in change.objects_added:
                self._objects[meta.name] = _Stored(meta, serves_from)
            self._tombstones.extend(change.tombstones_added)
            if change.flushed_ts:
                self._drop_until(change.flushed_ts)
        self._release(let_go)

    def _drop_until(self, ts: int) -> None:
        if self._rows:
            later = [
                (piece.filter(pc.greater(piece.column(COMMIT_TS), ts)), partitions)
                for piece, partitions in zip(self._rows, self._row_partitions, strict=True)
            ]
            later = [(piece, partitions) for piece, partitions in later if piece.num_rows]
            self._rows, self._row_partitions = _combined(
                [piece for piece, _ in later], [partitions for _, partitions in later]
            )
        if self._delete_ids:
            ids, stamps = pa.concat_arrays(self._delete_ids), pa.concat_arrays(self._delete_ts)
            later = pc.greater(stamps, ts)
            ids, stamps = ids.filter(later), stamps.filter(later)
            self._delete_ids, self._delete_ts = ([ids], [stamps]) if len(ids) else ([], [])
        self.nbytes = sum(rows.nbytes for rows in self._rows) + sum(
            ids.nbytes * 2 for ids in self._delete_ids
        )

    def forget_replaced(self, cutoff_ts: int) -> None:
        """Forget the objects a merge replaced and the tombstones a compaction removed at or
        before cutoff_ts (the TN deletes their files then): the objects that replaced them serve
        the older snapshots, as after a restore from a checkpoint (a merge keeps the rows deleted
        after the oldest readable snapshot, so they answer every snapshot a read may ask for)."""
        with self._lock:
            if not self._replaced and not self._removed_tombstones:
                return  # nothing kept for older snapshots: no object to look at
            replaced = [
                name for name, stored in self._objects.items() if stored.serves_until <= cutoff_ts
            ]
            removed = len(self._removed_tombstones)
            self._removed_tombstones = [
                (at, meta) for at, meta in self._removed_tombstones if at > cutoff_ts
            ]
            if not replaced and removed == len(self._removed_tombstones):
                return
            for name in replaced:
                del self._objects[name]
            self._replaced -= len(replaced)
            assert self._replaced >= 0
            for name, stored in self._objects.items():
                if 0 < stored.serves_from <= cutoff_ts:
                    self._objects[name] = _Stored(stored.meta, 0, stored.serves_until)

    @property
    def replaced_objects(self) -> int:
        """Objects kept for the snapshots before the merge that replaced them."""
        return self._replaced

    def memory_rows(self) -> int:
        with self._lock:
            return sum(rows.num_rows for rows in self._rows)

    def objects(self) -> list[ObjectMeta]:
        with self._lock:
            return [stored.meta for stored in self._objects.values()]

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool = False,
        bounds: tuple[ColumnBound, ...] = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        """The table as of ts, in schema's columns (older rows adapted by column id, a column added
        later read as its default: be/row_adapter.py), of the tablets schema lists; with
        row_ids, ROW_ID first (what DELETE and UPDATE name rows by). AGGREGATE KEY tables come
        merged by their keys, as Doris reads them. bounds (ColumnBound) may leave out rows
        outside them, and blocks whose min/max hold none (never on AGGREGATE KEY tables, whose
        rows merge first): the caller still applies its whole WHERE. columns (lower-case
        names): the columns the caller reads, if it knows; others may be left out (objects are
        read only in the columns given and the partition columns: _scanned). partitions: the
        ids of the schema's partitions the caller reads (a pruning, or the partitions a statement
        names), None for all: no row of another partition is answered."""
        bounded = bool(bounds) and schema.key_model is not KeyModel.AGGREGATE
        if bounded:  # the index holds whole rows: made for the whole schema
            found = self._indexed(schema, ts, row_ids, bounds, may_wait=True, partitions=partitions)
            if found is not None:
                return found
        if columns is not None and schema.key_model is not KeyModel.AGGREGATE:
            schema = _scanned(schema, columns, bounds)
        if partitions is not None:  # after the index, which holds every partition's rows
            schema = _of_partitions_only(schema, partitions)
            if not schema.partitions:
                return (schema.with_row_ids() if row_ids else schema.arrow()).empty_table()
        with self._lock:
            newest = ts >= self._changed_ts
            kept, token = self._newest.get((schema, row_ids), _NOT_KEPT) if newest else _NOT_KEPT
            changed_ts = self._changed_ts
        if kept is not None:
            self.kept.touch(token)
            if _small_chunks(kept):
                # Read again, and maybe again: one chunk reads faster. Not on the first read,
                # which a restarted CN (or a new subscription) waits for.
                kept = kept.combine_chunks()
                with self._lock:
                    if self._newest.get((schema, row_ids), _NOT_KEPT)[1] == token:
                        self._newest[schema, row_ids] = (kept, token)
            return within(kept, bounds) if bounded else kept
        if bounded:  # only the rows within: not kept, and cheaper than the whole table
            return self._snapshot(schema, ts, row_ids, bounds)
        snapshot = self._snapshot(schema, ts, row_ids)
        if newest:
            if _small_chunks(snapshot):  # read again and again: few chunks read faster
                snapshot = snapshot.combine_chunks()
            self._keep((schema, row_ids), snapshot, changed_ts)
        return snapshot

    def _keep(self, key: tuple[TableSchema, bool], snapshot: pa.Table, changed_ts: int) -> None:
        """Keep the newest state's snapshot for the next reads, if the budget takes it."""
        token = self.kept.token()
        let_go = []
        with self._lock:
            if self._changed_ts != changed_ts:
                return
            if len(self._newest) >= MAX_CACHED_SNAPSHOTS:  # the oldest kept goes
                let_go.append(self._newest.pop(next(iter(self._newest)))[1])
            if key in self._newest:
                let_go.append(self._newest[key][1])
            self._newest[key] = (snapshot, token)
        self._release(let_go)
        admitted = self.kept.admit(token, snapshot.nbytes, lambda: self._evicted(key, token))
        with self._lock:
            held = self._newest.get(key, _NOT_KEPT)[1] == token
            if held and not admitted:  # too large to keep: used once
                del self._newest[key]
        if admitted and not held:  # the table changed meanwhile
            self.kept.release(token)

    def _evicted(self, key: tuple[TableSchema, bool], token: int) -> None:
        with self._lock:
            if self._newest.get(key, _NOT_KEPT)[1] == token:
                del self._newest[key]

    def indexed_snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...],
        partitions: frozenset[int] | None = None,
    ) -> pa.Table | None:
        """snapshot(), if the key index answers it at once (no object to read, no fold to do):
        then exactly the rows within bounds (of those partitions); else None."""
        if not bounds or schema.key_model is KeyModel.AGGREGATE:
            return None
        return self._indexed(schema, ts, row_ids, bounds, may_wait=False, partitions=partitions)

    def values_within(
        self, schema: TableSchema, ts: int, bound: ColumnBound, names: tuple[str, ...], limit: int
    ) -> list[tuple] | None:
        """The values of names in the rows within bound (on the first key column, both ends
        given), visible at ts, from the key index as Python values; None if the index cannot
        answer at once (not made for this schema version, behind, or over limit rows)."""
        with self._lock:
            index, made_for, token = self._index, self._index_schema, self._index_token
        if index is None or made_for.schema_version != schema.schema_version:
            return None
        if schema.key_model is KeyModel.AGGREGATE or ts < index.valid_from:
            return None
        if not schema.key_columns or index.column != schema.key_columns[0] != bound.column:
            return None
        if token is not None:
            self.kept.touch(token)
        return index.values_within(bound.low, bound.high, ts, names, limit)

    def _indexed(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...],
        may_wait: bool,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table | None:
        """The rows within the bound on the first key column (of those partitions: the index
        holds every partition's rows), from the key index (made now if may_wait); None if there
        is no such bound or the index cannot answer."""
        if not schema.key_columns:
            return None
        column = schema.key_columns[0]
        bound = next((bound for bound in bounds if bound.column == column), None)
        key_type = next(item.type for item in schema.columns if item.name == column)
        if bound is None or not pa.types.is_integer(key_type):
            return None
        with self._lock:
            index, made_for, token = self._index, self._index_schema, self._index_token
        if index is not None and made_for.schema_version != schema.schema_version:
            if made_for.schema_version > schema.schema_version:
                return None  # an older reader: the snapshot's path
            index = None  # a newer reader: made again for it
        if index is None:
            if not may_wait:
                return None
            index = self._make_index(column, schema)
        if index is None or index.column != column or ts < index.valid_from:
            return None
        rows = index.within(bound.low, bound.high, ts, may_fold=may_wait)
        if token is not None:
            if may_wait:  # a fold (only here) may have changed its size
                if not self.kept.resize(token, index.nbytes):
                    self._index_evicted(index)
            else:
                self.kept.touch(token)
        if rows is None:
            return None
        others = tuple(other for other in bounds if other is not bound)
        if others:
            rows = within(rows, others)
        if partitions is not None:
            rows = in_partitions(schema, rows, partitions)
        target = _target(schema, row_ids)
        try:
            chosen = rows.select(target.names)
        except KeyError:  # a column added since some of these rows were written
            return _projected(rows, target)
        return chosen if chosen.schema.equals(target) else _projected(chosen, target)

    def _make_index(self, column: str, schema: TableSchema) -> KeyIndex | None:
        """The index of the rows as schema reads them (its partitions, its columns)."""
        partitions = frozenset(p.id for p in schema.partitions) if schema.partitions else None
        with self._lock:
            made_for = self._index_schema
            if self._index is not None and made_for.schema_version == schema.schema_version:
                return self._index
            if self.row_count >= self.max_indexed_rows:
                return None
            let_go = self._drop_index()
            index = self._index = KeyIndex(
                column,
                self._removed_ts,
                self.max_indexed_rows,
                self.key_index_history_ns,
                self.newest_readable,
            )
            self._index_schema = schema
            memory = list(zip(self._rows, self._row_partitions, strict=True))
            delete_ids = list(self._delete_ids)
            delete_ts = list(self._delete_ts)
            stored = [
                item.meta
                for item in self._objects.values()
                if item.serves_until == FOREVER
                and (partitions is None or item.meta.partition_id in partitions)
            ]
            tombstones = list(self._tombstones)
        self._release(let_go)
        read = False
        try:
            pieces = [self._read_object(meta, None) for meta in stored]
            pieces += [_of_partitions(piece, placed, partitions) for piece, placed in memory]
            pieces = [_adapted(piece, schema) for piece in pieces if piece.num_rows]
            self._read_deletes(tombstones, delete_ids, delete_ts)
            read = True
        finally:
            if not read:  # the next read tries again
                with self._lock:
                    if self._index is index:
                        self._index = None
        index.build(pieces, delete_ids, delete_ts)
        self._keep_index(index)
        return index

    def _keep_index(self, index: KeyIndex) -> None:
        """Keep the index for the next reads, if the budget takes it (else this read uses it)."""
        token = self.kept.token()
        with self._lock:
            if self._index is not index:
                return
            self._index_token = token
        admitted = self.kept.admit(token, index.nbytes, lambda: self._index_evicted(index))
        with self._lock:
            held = self._index is index and self._index_token == token
            if held and not admitted:  # larger than the budget keeps: no index from now on
                self._index, self._index_token = None, None
                self.max_indexed_rows = min(self.max_indexed_rows, max(self.row_count, 1))
        if admitted and not held:
            self.kept.release(token)

    def _index_evicted(self, index: KeyIndex) -> None:
        with self._lock:
            if self._index is index:
                self._index, self._index_token = None, None

    def _snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...] = (),
    ) -> pa.Table:
        ranges = {bound.column: (bound.low, bound.high) for bound in bounds}
        partitions = frozenset(p.id for p in schema.partitions) if schema.partitions else None
        memory, delete_ids, delete_ts, stored, tombstones = self._visible_parts(ts, partitions)
        self._read_deletes(tombstones, delete_ids, delete_ts)
        gone = None
        if delete_ids:
            ids = pa.concat_arrays(delete_ids)
            gone = ids.filter(pc.less_equal(pa.concat_arrays(delete_ts), ts))
        # Only the columns asked for are read: commit timestamps where some rows are later than
        # ts, row ids where they are asked for, merged by, or deleted by.
        keep_row_ids = row_ids or schema.key_model is KeyModel.AGGREGATE
        wanted = {*schema.names, *ranges}
        if keep_row_ids or (gone is not None and len(gone)):
            wanted.add(ROW_ID)
        pieces = []
        decoded = self._decoded_together(stored, wanted, ts, schema)
        for meta in stored:
            needed = wanted | {COMMIT_TS} if meta.max_commit_ts > ts else wanted
            if meta.schema_version != schema.schema_version:
                needed = None  # its columns may have other names: all read, matched by id
            piece = self._read_object(meta, ranges, needed, schema, decoded.get(meta.name))
            if piece is not None and piece.num_rows:
                pieces.append(_visible(_adapted(piece, schema), ts, bounds, gone, keep_row_ids))
        for piece in _runs(_of_partitions(piece, placed, partitions) for piece, placed in memory):
            pieces.append(_visible(_adapted(piece, schema), ts, bounds, gone, keep_row_ids))
        target = schema.with_row_ids() if row_ids else schema.arrow()
        if not pieces:
            return target.empty_table()
        rows = _concat(pieces)
        if schema.key_model is KeyModel.AGGREGATE and not row_ids:
            return merged(rows, schema).cast(target)
        return _projected(rows, target)

    def _visible_parts(self, ts: int, partitions: frozenset[int] | None) -> tuple:
        """What a snapshot at ts is made of: the rows in memory (with the partitions of each
        piece), the in-memory deletes (row ids, delete timestamps), the objects serving ts and
        the tombstones that may delete at or before ts, of the partitions given (None: all)."""
        with self._lock:
            memory = list(zip(self._rows, self._row_partitions, strict=True))
            delete_ids = list(self._delete_ids)
            delete_ts = list(self._delete_ts)
            stored = [
                item.meta
                for item in self._objects.values()
                if item.serves_from <= ts < item.serves_until
                and min(block.min_commit_ts for block in item.meta.blocks) <= ts
                and (partitions is None or item.meta.partition_id in partitions)
            ]
            tombstones = [meta for meta in self._tombstones if meta.min_delete_ts <= ts]
            later = bisect.bisect_right(self._removed_tombstones, ts, key=lambda item: item[0])
            tombstones += [
                meta for _, meta in self._removed_tombstones[later:] if meta.min_delete_ts <= ts
            ]
        return memory, delete_ids, delete_ts, stored, tombstones

    def read_plan(
        self, schema: TableSchema, ts: int, columns: frozenset[str] | None = None
    ) -> ReadPlan:
        """What a reader outside the CN needs to read the table as of ts itself (be/read_plan):
        the objects and tombstones a snapshot reads, the in-memory deletes at or before ts, and
        the rows in memory visible at ts (ROW_ID, then schema's columns). columns (lower-case
        names, when given): the columns read (with the keys and the placement columns)."""
        if columns is not None and schema.key_model is not KeyModel.AGGREGATE:
            schema = _narrowed(schema, columns)
        partitions = frozenset(p.id for p in schema.partitions) if schema.partitions else None
        memory, delete_ids, delete_ts, stored, tombstones = self._visible_parts(ts, partitions)
        gone = pa.array([], pa.int64())
        if delete_ids:
            ids = pa.concat_arrays(delete_ids)
            gone = ids.filter(pc.less_equal(pa.concat_arrays(delete_ts), ts))
        pieces = [
            _visible(_adapted(piece, schema), ts, (), gone, keep_row_ids=True)
            for piece in _runs(
                _of_partitions(piece, placed, partitions) for piece, placed in memory
            )
        ]
        target = schema.with_row_ids()
        tail = _projected(_concat(pieces), target) if pieces else target.empty_table()
        return ReadPlan(schema, ts, tuple(stored), tuple(tombstones), gone, tail)

    def _decoded_together(
        self, stored: list[ObjectMeta], wanted: set[str], ts: int, schema: TableSchema
    ) -> dict[str, pa.Table]:
        """Of the objects a snapshot reads in some of their columns, the columns not cached,
        decoded at once for the objects missing the same ones (a decode per object costs more
        than the object, when they are many and small); by name. None read so: {}."""
        groups: dict[tuple[str, ...], list[ObjectMeta]] = {}
        for meta in stored:
            if meta.schema_version != schema.schema_version or meta.max_commit_ts > ts:
                continue
            columns = tuple(name for name in meta.column_names if name in wanted)
            if len(columns) == len(meta.column_names):
                continue
            missing = self.cache.missing(meta.name, columns)
            if missing:
                groups.setdefault(missing, []).append(meta)
        decoded: dict[str, pa.Table] = {}
        for columns, metas in groups.items():
            if len(metas) < 2:
                continue
            tables = read_whole_objects(self.store, metas, columns)
            if tables is not None:
                decoded.update(
                    (meta.name, table) for meta, table in zip(metas, tables, strict=True)
                )
        return decoded

    def _read_object(
        self,
        meta: ObjectMeta,
        ranges,
        needed: set[str] | None = None,
        schema: TableSchema | None = None,
        decoded: pa.Table | None = None,
    ) -> pa.Table | None:
        """The object's rows, of the blocks that may match ranges, in the columns needed (all by
        default) that it has; None if no block may match. schema: prune only by the columns
        that are its columns still (not dropped and added again)."""
        assert self.store is not None and self.cache is not None
        columns = None
        if needed is not None and not set(meta.column_names) <= needed:
            columns = [name for name in meta.column_names if name in needed]
        if columns is None:
            rows = self.cache.get(meta.name, lambda: read_blocks(self.store, meta))
        else:
            rows = self.cache.get_columns(
                meta.name,
                columns,
                lambda missing: (
                    decoded.select(missing)
                    if decoded is not None and set(missing) <= set(decoded.schema.names)
                    else read_blocks(self.store, meta, missing)
                ),
            )
        usable = {
            name: bounds
            for name, bounds in (ranges or {}).items()
            if name in rows.schema.names
            and (schema is None or _same_column(rows.schema.field(name), schema, name))
        }
        if not usable:
            return rows
        try:
            chosen = prune(meta, usable)
        except StorageError:  # a bound of another type: no pruning
            return rows
        if len(chosen) == len(meta.blocks):
            return rows
        if not chosen:
            return None
        starts = [0]
        for block in meta.blocks:
            starts.append(starts[-1] + block.rows)
        return pa.concat_tables(
            [rows.slice(starts[index], meta.blocks[index].rows) for index in chosen]
        )

    def _read_deletes(self, tombstones, delete_ids: list, delete_ts: list) -> None:
        """The row ids and delete timestamps of tombstones, appended to the in-memory ones."""
        for meta in tombstones:
            table = self._read_tombstones(meta)
            delete_ids.append(table.column(ROW_ID).combine_chunks())
            delete_ts.append(table.column(DELETE_TS).combine_chunks())

    def _read_tombstones(self, meta: TombstoneMeta) -> pa.Table:
        assert self.store is not None and self.cache is not None
        return self.cache.get(meta.name, lambda: read_tombstones(self.store, meta))


_ROW_FIELDS = (pa.field(ROW_ID, pa.int64(), False), pa.field(COMMIT_TS, pa.int64(), False))


def _partitions_in(rows: pa.Table) -> frozenset[int] | None:
    if PARTITION_ID not in rows.schema.names:
        return None
    ids = rows.column(PARTITION_ID)
    if len(ids) <= FEW_PARTITION_IDS:
        return frozenset(ids.to_pylist())
    return frozenset(pc.unique(ids).to_pylist())


FEW_PARTITION_IDS = 16  # a commit's rows this few are looked at in Python (Arrow costs more)


def _of_partitions(
    rows: pa.Table, placed: frozenset[int] | None, partitions: frozenset[int] | None
) -> pa.Table:
    """The rows (placed in the partitions `placed`) placed in one of partitions (all when the
    rows or the schema do not say): a truncated, replaced or dropped partition's rows are not
    read, a recovered one's are again."""
    if partitions is None or placed is None or placed <= partitions:
        return rows
    kept = pc.is_in(rows.column(PARTITION_ID), value_set=pa.array(sorted(partitions), pa.int64()))
    return rows.filter(kept)


def _same_column(field: pa.Field, schema: TableSchema, name: str) -> bool:
    """Whether an object's column of this name holds the schema's column of this name (not one
    dropped and added again), so that its min/max may prune."""
    if name not in schema.names:
        return False
    return column_id(field) == schema.column(name).id


def _combined(
    pieces: list[pa.Table], partitions: list[frozenset[int] | None]
) -> tuple[list[pa.Table], list[frozenset[int] | None]]:
    """Runs of pieces written at one schema, each as one piece (with the partitions of all)."""
    runs: list[list[pa.Table]] = []
    placed: list[frozenset[int] | None] = []
    for piece, held in zip(pieces, partitions, strict=True):
        if runs and runs[-1][0].schema.equals(piece.schema, check_metadata=True):
            runs[-1].append(piece)
            placed[-1] = None if held is None or placed[-1] is None else placed[-1] | held
        else:
            runs.append([piece])
            placed.append(held)
    combined = [run[0] if len(run) == 1 else pa.concat_tables(run).combine_chunks() for run in runs]
    return combined, placed


def _tier(rows: int) -> int:
    return rows.bit_length() // TIER_BITS


def _combine_tail(pieces: list[pa.Table], partitions: list[frozenset[int] | None]) -> None:
    """After a piece is appended: the pieces at the end of its tier or below (by rows, of one
    schema), once TIER_PIECES of them, combined into one, and so on up to SETTLED_TIER. A
    size-tiered merge: a row is copied about once a tier, and no commit copies every row held
    (one combined at MAX_ROW_PIECES pieces would copy them all every MAX_ROW_PIECES commits).
    Pieces of SETTLED_TIER are big enough to scan as they are: a bulk load's rows are copied
    once at most, and not at all when its commits are that big; when one comes, the smaller
    pieces before it are combined into one, so that they are not left behind one by one."""
    while len(pieces) >= 2:
        last = pieces[-1]
        tier = _tier(last.num_rows)
        settled = tier >= SETTLED_TIER
        end = len(pieces) - 1 if settled else len(pieces)
        start = end - 1
        while (
            start > 0
            and _tier(pieces[start - 1].num_rows) <= min(tier, SETTLED_TIER - 1)
            and pieces[start - 1].schema.equals(pieces[end - 1].schema, check_metadata=True)
        ):
            start -= 1
        if settled:
            if end - start >= 2 and _tier(pieces[end - 1].num_rows) < SETTLED_TIER:
                _combine(pieces, partitions, start, end)
            return
        if end - start < TIER_PIECES:
            return
        _combine(pieces, partitions, start, end)


def _combine(pieces: list[pa.Table], partitions: list, start: int, end: int) -> None:
    held = partitions[start:end]
    pieces[start:end] = [pa.concat_tables(pieces[start:end]).combine_chunks()]
    partitions[start:end] = [None if None in held else frozenset().union(*held)]


def _runs(pieces) -> list[pa.Table]:
    """The pieces with rows, each run of pieces of one layout as one table (not copied): adapted
    and filtered once, not per commit."""
    runs: list[list[pa.Table]] = []
    for piece in pieces:
        if not piece.num_rows:
            continue
        if runs and runs[-1][0].schema.equals(piece.schema, check_metadata=True):
            runs[-1].append(piece)
        else:
            runs.append([piece])
    return [run[0] if len(run) == 1 else pa.concat_tables(run) for run in runs]


def _narrowed(schema: TableSchema, columns: frozenset[str]) -> TableSchema:
    """schema with only the columns named, its keys and the columns that place its rows."""
    needed = {
        *schema.key_columns,
        *schema.partition_columns,
        *schema.distribution_columns,
    }
    kept = tuple(
        column
        for column in schema.columns
        if column.name.lower() in columns or column.name in needed
    )
    if len(kept) == len(schema.columns):
        return schema
    names = {column.name for column in kept}
    return replace(schema, columns=kept, **_named_columns_within(schema, names))


def _scanned(
    schema: TableSchema, columns: frozenset[str], bounds: tuple[ColumnBound, ...]
) -> TableSchema:
    """schema with only the columns a scan reads (named, bounded, and the partition columns a
    partitioned schema needs): keys and distribution columns no one reads are not decoded. A
    scan that names none (COUNT(*)) keeps the first key column, so that its rows are counted."""
    bounded = {bound.column for bound in bounds}
    kept = tuple(
        column
        for column in schema.columns
        if column.name.lower() in columns
        or column.name in bounded
        or column.name in schema.partition_columns
    )
    if not kept:
        first = schema.key_columns[0] if schema.key_columns else schema.columns[0].name
        kept = tuple(column for column in schema.columns if column.name == first)
    if len(kept) == len(schema.columns):
        return schema
    names = {column.name for column in kept}
    return replace(
        schema,
        columns=kept,
        key_columns=tuple(name for name in schema.key_columns if name in names),
        distribution_columns=tuple(name for name in schema.distribution_columns if name in names),
        **_named_columns_within(schema, names),
    )


def _named_columns_within(schema: TableSchema, names: set[str]) -> dict:
    """The schema's columns named by a role (AUTO_INCREMENT, sequence), None if not in names."""
    return {
        "auto_increment": schema.auto_increment if schema.auto_increment in names else None,
        "sequence": schema.sequence if schema.sequence in names else None,
    }


def _of_partitions_only(schema: TableSchema, partitions: frozenset[int]) -> TableSchema:
    """schema listing only the partitions named (maybe none)."""
    kept = tuple(partition for partition in schema.partitions if partition.id in partitions)
    return schema if len(kept) == len(schema.partitions) else replace(schema, partitions=kept)


def _small_chunks(rows: pa.Table) -> bool:
    """Whether rows' chunks are small (many small commits): blocks' chunks are not, and
    combining a large table copies it all for no faster read."""
    chunks = max((column.num_chunks for column in rows.columns), default=0)
    return chunks > 1 and chunks * MIN_CHUNK_ROWS > rows.num_rows


def _concat(pieces: list[pa.Table]) -> pa.Table:
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces, promote_options="permissive")


def _visible(
    rows: pa.Table,
    ts: int,
    bounds: tuple[ColumnBound, ...],
    gone: pa.Array | None,
    keep_row_ids: bool,
) -> pa.Table:
    """rows within bounds, committed at or before ts (when they carry their commit timestamps)
    and not deleted (gone: row ids deleted at or before ts), without the hidden columns (the
    row ids kept if asked)."""
    if bounds:  # first: what is left to check is a few rows
        rows = within(rows, bounds)
    keep = None
    if COMMIT_TS in rows.schema.names:
        keep = pc.less_equal(rows.column(COMMIT_TS), ts)
    if gone is not None and len(gone) and rows.num_rows:
        present = pc.invert(pc.is_in(rows.column(ROW_ID), gone))
        keep = present if keep is None else pc.and_(keep, present)
    if keep is not None and not pc.all(keep).as_py():  # else shared, not copied
        rows = rows.filter(keep)
    hidden = [COMMIT_TS] if keep_row_ids else [COMMIT_TS, ROW_ID]
    dropped = [name for name in hidden if name in rows.schema.names]
    return rows.drop_columns(dropped) if dropped else rows


def _adapted(rows: pa.Table, schema: TableSchema) -> pa.Table:
    """rows (read at any schema version) in schema's columns, after the hidden ones they have."""
    names = rows.schema.names
    hidden = tuple(field for field in _ROW_FIELDS if field.name in names)
    return adapted(rows, schema, hidden)


MAX_KEPT_TARGETS = 1024  # Arrow schemas of TableSchemas kept; past it all are let go
_TARGETS: dict[tuple[int, bool], tuple[TableSchema, pa.Schema]] = {}


def _target(schema: TableSchema, row_ids: bool) -> pa.Schema:
    """schema as Arrow (ROW_ID first with row_ids), kept per TableSchema object."""
    kept = _TARGETS.get((id(schema), row_ids))
    if kept is not None and kept[0] is schema:
        return kept[1]
    target = schema.with_row_ids() if row_ids else schema.arrow()
    if len(_TARGETS) >= MAX_KEPT_TARGETS:
        _TARGETS.clear()
    _TARGETS[id(schema), row_ids] = (schema, target)
    return target


def _projected(rows: pa.Table, target: pa.Schema) -> pa.Table:
    schema = rows.schema
    if all(
        field.name in schema.names and schema.field(field.name).type == field.type
        for field in target
    ):  # the common case, without a cast per column
        return pa.Table.from_arrays(
            [rows.column(field.name) for field in target], schema=target.with_metadata(None)
        )
    arrays = []
    for field in target:
        if field.name in rows.schema.names:
            arrays.append(rows.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(rows.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=target.with_metadata(None))


def merged(rows: pa.Table, schema: TableSchema) -> pa.Table:
    """Rows (with row ids) of equal keys folded into one by each value column's aggregation, in
    row id order (the order they were written in)."""
    keys = list(schema.key_columns)
    rows = _projected(rows, schema.with_row_ids())
    if not rows.num_rows:
        return rows.drop_columns([ROW_ID])
    rows = rows.sort_by(ROW_ID)
    aggregations = []
    unions = []
    for column in schema.columns:
        if column.name in keys:
            continue
        if (column.aggregation or "").upper() in SET_UNIONS:
            unions.append(column.name)
            continue
        function = AGGREGATIONS.get((column.aggregation or "REPLACE").upper(), "last")
        if column.aggregation and column.aggregation.upper() == "REPLACE_IF_NOT_NULL":
            options = pc.ScalarAggregateOptions(skip_nulls=True)
        else:
            options = pc.ScalarAggregateOptions(skip_nulls=False)
        aggregations.append((column.name, function, options))
    if unions:  # each group's row positions, the sets at them united after
        rows = rows.append_column(ROW_POSITIONS, pa.array(np.arange(rows.num_rows)))
        aggregations.append((ROW_POSITIONS, "list", None))
    grouped = rows.group_by(keys, use_threads=False).aggregate(aggregations)
    names = {f"{name}_{function}": name for name, function, _ in aggregations}
    grouped = grouped.rename_columns([names.get(name, name) for name in grouped.schema.names])
    if unions:
        positions = grouped.column(ROW_POSITIONS).combine_chunks()
        taken, set_group = pc.list_flatten(positions), pc.list_parent_indices(positions)
        for name in unions:
            sets = rows.column(name).take(taken).combine_chunks()
            grouped = grouped.append_column(name, _unioned(sets, set_group, len(positions)))
    return grouped.select(list(schema.names))


ROW_POSITIONS = "__quire_row_position"


def _unioned(sets: pa.ListArray, set_group: pa.Array, groups: int) -> pa.ListArray:
    """Per group, the sorted distinct values of its sets (lists; set_group: the group of each):
    NULL where each was NULL."""
    values = pc.list_flatten(sets)
    value_group = pc.take(set_group, pc.list_parent_indices(sets))
    distinct = (
        pa.table({"g": value_group, "v": values})
        .group_by(["g", "v"], use_threads=False)
        .aggregate([])
        .sort_by([("g", "ascending"), ("v", "ascending")])
    )
    counts = np.bincount(distinct.column("g").to_numpy(), minlength=groups)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    some = np.bincount(set_group.filter(sets.is_valid()).to_numpy(), minlength=groups) > 0
    return pa.ListArray.from_arrays(
        pa.array(offsets),
        distinct.column("v").combine_chunks().cast(sets.type.value_type),
        mask=pa.array(~some),
    )
