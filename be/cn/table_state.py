"""One table on a CN: the rows its commits inserted (with row id and commit timestamp) and the
rows they deleted (row id and delete timestamp), in memory until a flush puts them in objects,
then in the table's objects and tombstones; the snapshot at T is every row committed at or before
T and not deleted at or before T, from objects and memory alike.

Rows in memory are kept as Arrow tables in commit order; many small ones are combined into one
now and then, so that a snapshot concatenates few pieces. A flush (TableChanges.flushed_ts) drops
from memory what was committed at or before it: rows committed later stay (MatrixOne's rule).
An object a merge wrote serves snapshots from the merge on; the ones it replaced, those before.

A read bounded on the first key column (a point or range read) is answered from a key index
(be/cn/key_index.py) made by the first such read and fed by every commit after it, instead of
filtering the whole snapshot; a read it cannot answer takes the snapshot's path."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from be.cn.bounds import ColumnBound, within
from be.cn.key_index import KeyIndex
from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.logtail.entries import COMMIT_TS, ROW_ID, TableChanges
from be.storage.blocks import ObjectMeta, prune, read_blocks
from be.storage.errors import StorageError
from be.storage.objects import ObjectStore
from be.storage.tombstones import DELETE_TS, TombstoneMeta, read_tombstones
from be.table_schema import TableSchema
from metadata.records import KeyModel

COMBINE_PIECES = 64  # pieces of rows (or of deletes) combined into one past this many
MAX_CACHED_SNAPSHOTS = 8  # of the newest state: per schema version, with and without row ids

AGGREGATIONS = {  # Doris's aggregation of a value column: pyarrow's hash aggregate
    "SUM": "sum",
    "MAX": "max",
    "MIN": "min",
    "REPLACE": "last",
    "REPLACE_IF_NOT_NULL": "last",
}


FOREVER = 1 << 63


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
    ):
        self.table_id = table_id
        self.store = store
        self.cache = cache
        self.max_indexed_rows = max_indexed_rows
        self._objects: dict[str, _Stored] = {}
        self._tombstones: list[TombstoneMeta] = []
        self._lock = threading.Lock()
        self._rows: list[pa.Table] = []  # ROW_ID, COMMIT_TS, then the columns at its version
        self._delete_ids: list[pa.Array] = []
        self._delete_ts: list[pa.Array] = []
        self.row_count = 0  # rows inserted (deleted ones included)
        self.nbytes = 0
        # Every snapshot at or after the newest change is the same: those asked for are kept
        # until the next change.
        self._changed_ts = 0
        self._newest: dict[tuple[TableSchema, bool], pa.Table] = {}
        # Point and range reads by the first key column: made by the first such read.
        self._index: KeyIndex | None = None
        self._removed_ts = 0  # the last merge: objects it replaced served snapshots before it

    def apply(self, change: TableChanges, commit_ts: int) -> None:
        assert change.table_id == self.table_id
        if change.changes_storage:
            self._apply_storage(change, commit_ts)
        with self._lock:
            assert commit_ts > self._changed_ts
            self._changed_ts = commit_ts
            self._newest = {}
            if change.inserts is not None and change.inserts.num_rows:
                rows = change.inserts
                stamps = pa.array([commit_ts] * rows.num_rows, pa.int64())
                rows = rows.add_column(1, pa.field(COMMIT_TS, pa.int64(), False), stamps)
                self._rows.append(rows)
                if self._index is not None:
                    self._index.add_rows(rows)
                self.row_count += rows.num_rows
                self.nbytes += rows.nbytes
                if len(self._rows) > COMBINE_PIECES:
                    self._rows = [_concat(self._rows).combine_chunks()]
            if change.deletes is not None and change.deletes.num_rows:
                ids = change.deletes.column(ROW_ID).combine_chunks()
                self._delete_ids.append(ids)
                if self._index is not None:
                    self._index.add_deletes(ids.to_pylist(), commit_ts)
                self._delete_ts.append(pa.array([commit_ts] * len(ids), pa.int64()))
                self.nbytes += ids.nbytes * 2
                if len(self._delete_ids) > COMBINE_PIECES:
                    self._delete_ids = [pa.concat_arrays(self._delete_ids)]
                    self._delete_ts = [pa.concat_arrays(self._delete_ts)]

    def _apply_storage(self, change: TableChanges, commit_ts: int) -> None:
        assert self.store is not None, "a CN reading flushed tables needs the object store"
        with self._lock:
            for name in change.objects_removed:
                stored = self._objects.get(name)
                if stored is not None:
                    self._objects[name] = _Stored(stored.meta, stored.serves_from, commit_ts)
            serves_from = commit_ts if change.objects_removed else 0
            if change.objects_removed:
                self._removed_ts = commit_ts
            elif change.objects_added and not change.flushed_ts:
                self._index = None  # rows that never were in memory: the index is made again
            for meta in change.objects_added:
                self._objects[meta.name] = _Stored(meta, serves_from)
            self._tombstones.extend(change.tombstones_added)
            if change.flushed_ts:
                self._drop_until(change.flushed_ts)

    def _drop_until(self, ts: int) -> None:
        if self._rows:
            rows = _concat(self._rows)
            rows = rows.filter(pc.greater(rows.column(COMMIT_TS), ts))
            self._rows = [rows] if rows.num_rows else []
        if self._delete_ids:
            ids, stamps = pa.concat_arrays(self._delete_ids), pa.concat_arrays(self._delete_ts)
            later = pc.greater(stamps, ts)
            ids, stamps = ids.filter(later), stamps.filter(later)
            self._delete_ids, self._delete_ts = ([ids], [stamps]) if len(ids) else ([], [])
        self.nbytes = sum(rows.nbytes for rows in self._rows) + sum(
            ids.nbytes * 2 for ids in self._delete_ids
        )

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
    ) -> pa.Table:
        """The table as of ts, in schema's columns (a column added later reads as NULL); with
        row_ids, ROW_ID first (what DELETE and UPDATE name rows by). AGGREGATE KEY tables come
        merged by their keys, as Doris reads them. bounds (ColumnBound) may leave out rows
        outside them, and blocks whose min/max hold none (never on AGGREGATE KEY tables, whose
        rows merge first): the caller still applies its whole WHERE."""
        bounded = bool(bounds) and schema.key_model is not KeyModel.AGGREGATE
        if bounded:
            found = self._indexed(schema, ts, row_ids, bounds, may_wait=True)
            if found is not None:
                return found
        with self._lock:
            newest = ts >= self._changed_ts
            kept = self._newest.get((schema, row_ids)) if newest else None
            changed_ts = self._changed_ts
        if kept is not None:
            return within(kept, bounds) if bounded else kept
        if bounded:  # only the rows within: not kept, and cheaper than the whole table
            return self._snapshot(schema, ts, row_ids, bounds)
        snapshot = self._snapshot(schema, ts, row_ids)
        if newest:
            snapshot = snapshot.combine_chunks()  # read again and again: one chunk reads faster
            with self._lock:
                if self._changed_ts == changed_ts and len(self._newest) < MAX_CACHED_SNAPSHOTS:
                    self._newest[schema, row_ids] = snapshot
        return snapshot

    def indexed_snapshot(
        self, schema: TableSchema, ts: int, row_ids: bool, bounds: tuple[ColumnBound, ...]
    ) -> pa.Table | None:
        """snapshot(), if the key index answers it at once (no object to read, no fold to do):
        then exactly the rows within bounds; else None."""
        if not bounds or schema.key_model is KeyModel.AGGREGATE:
            return None
        return self._indexed(schema, ts, row_ids, bounds, may_wait=False)

    def _indexed(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...],
        may_wait: bool,
    ) -> pa.Table | None:
        """The rows within the bound on the first key column, from the key index (made now if
        may_wait); None if there is no such bound or the index cannot answer."""
        if not schema.key_columns:
            return None
        column = schema.key_columns[0]
        bound = next((bound for bound in bounds if bound.column == column), None)
        key_type = next(item.type for item in schema.columns if item.name == column)
        if bound is None or not pa.types.is_integer(key_type):
            return None
        index = self._index
        if index is None:
            if not may_wait:
                return None
            index = self._make_index(column)
        if index is None or index.column != column or ts < index.valid_from:
            return None
        rows = index.within(bound.low, bound.high, ts, may_fold=may_wait)
        if rows is None:
            return None
        others = tuple(other for other in bounds if other is not bound)
        if others:
            rows = within(rows, others)
        target = _target(schema, row_ids)
        try:
            chosen = rows.select(target.names)
        except KeyError:  # a column added since some of these rows were written
            return _projected(rows, target)
        return chosen if chosen.schema.equals(target) else _projected(chosen, target)

    def _make_index(self, column: str) -> KeyIndex | None:
        with self._lock:
            if self._index is not None or self.row_count >= self.max_indexed_rows:
                return self._index
            index = self._index = KeyIndex(column, self._removed_ts, self.max_indexed_rows)
            pieces = list(self._rows)
            delete_ids = list(self._delete_ids)
            delete_ts = list(self._delete_ts)
            stored = [item.meta for item in self._objects.values() if item.serves_until == FOREVER]
            tombstones = list(self._tombstones)
        read = False
        try:
            pieces = [self._read_object(meta, None) for meta in stored] + pieces
            for meta in tombstones:
                table = self._read_tombstones(meta)
                delete_ids.append(table.column(ROW_ID).combine_chunks())
                delete_ts.append(table.column(DELETE_TS).combine_chunks())
            read = True
        finally:
            if not read:  # the next read tries again
                with self._lock:
                    if self._index is index:
                        self._index = None
        index.build(pieces, delete_ids, delete_ts)
        return index

    def _snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...] = (),
    ) -> pa.Table:
        ranges = {bound.column: (bound.low, bound.high) for bound in bounds}
        with self._lock:
            pieces = list(self._rows)
            delete_ids = list(self._delete_ids)
            delete_ts = list(self._delete_ts)
            stored = [
                item.meta
                for item in self._objects.values()
                if item.serves_from <= ts < item.serves_until
                and min(block.min_commit_ts for block in item.meta.blocks) <= ts
            ]
            tombstones = [meta for meta in self._tombstones if meta.min_delete_ts <= ts]
        pieces = [
            piece
            for piece in (self._read_object(meta, ranges) for meta in stored)
            if piece is not None
        ] + pieces
        for meta in tombstones:
            table = self._read_tombstones(meta)
            delete_ids.append(table.column(ROW_ID).combine_chunks())
            delete_ts.append(table.column(DELETE_TS).combine_chunks())
        target = schema.with_row_ids() if row_ids else schema.arrow()
        if not pieces:
            return target.empty_table()
        rows = _concat(pieces)
        if bounds:  # first: what is left to check is a few rows
            rows = within(rows, bounds)
        visible = pc.less_equal(rows.column(COMMIT_TS), ts)
        if delete_ids and rows.num_rows:
            ids = pa.concat_arrays(delete_ids)
            stamps = pa.concat_arrays(delete_ts)
            gone = ids.filter(pc.less_equal(stamps, ts))
            if len(gone):
                visible = pc.and_(visible, pc.invert(pc.is_in(rows.column(ROW_ID), gone)))
        rows = rows.filter(visible)
        if schema.key_model is KeyModel.AGGREGATE and not row_ids:
            return merged(rows, schema).cast(target)
        return _projected(rows, target)

    def _read_object(self, meta: ObjectMeta, ranges) -> pa.Table | None:
        """The object's rows, of the blocks that may match ranges; None if none may."""
        assert self.store is not None and self.cache is not None
        rows = self.cache.get(meta.name, lambda: read_blocks(self.store, meta))
        usable = {
            name: bounds for name, bounds in (ranges or {}).items() if name in meta.column_names
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

    def _read_tombstones(self, meta: TombstoneMeta) -> pa.Table:
        assert self.store is not None and self.cache is not None
        return self.cache.get(meta.name, lambda: read_tombstones(self.store, meta))


def _concat(pieces: list[pa.Table]) -> pa.Table:
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces, promote_options="permissive")


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
        if field.name in rows.column_names:
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
    for column in schema.columns:
        if column.name in keys:
            continue
        function = AGGREGATIONS.get((column.aggregation or "REPLACE").upper(), "last")
        if column.aggregation and column.aggregation.upper() == "REPLACE_IF_NOT_NULL":
            options = pc.ScalarAggregateOptions(skip_nulls=True)
        else:
            options = pc.ScalarAggregateOptions(skip_nulls=False)
        aggregations.append((column.name, function, options))
    grouped = rows.group_by(keys, use_threads=False).aggregate(aggregations)
    names = {f"{name}_{function}": name for name, function, _ in aggregations}
    grouped = grouped.rename_columns([names.get(name, name) for name in grouped.column_names])
    return grouped.select(list(schema.names))
