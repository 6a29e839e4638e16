"""One table on a CN: the rows its commits inserted (with row id and commit timestamp) and the
rows they deleted (row id and delete timestamp); the snapshot at T is every row committed at or
before T and not deleted at or before T.

Rows are kept as Arrow tables in commit order; many small ones are combined into one now and
then, so that a snapshot concatenates few pieces."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import pyarrow as pa
import pyarrow.compute as pc

from be.cn.bounds import ColumnBound, inside, within
from be.logtail.entries import COMMIT_TS, ROW_ID, TableChanges
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


class TableState:
    def __init__(self, table_id: int):
        self.table_id = table_id
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
        self._whole: _Whole | None = None  # the pieces as one table and arrays, until a change

    def apply(self, change: TableChanges, commit_ts: int) -> None:
        assert change.table_id == self.table_id
        with self._lock:
            assert commit_ts > self._changed_ts
            self._changed_ts = commit_ts
            self._newest = {}
            self._whole = None
            if change.inserts is not None and change.inserts.num_rows:
                rows = change.inserts
                stamps = pa.array([commit_ts] * rows.num_rows, pa.int64())
                rows = rows.add_column(1, pa.field(COMMIT_TS, pa.int64(), False), stamps)
                self._rows.append(rows)
                self.row_count += rows.num_rows
                self.nbytes += rows.nbytes
                if len(self._rows) > COMBINE_PIECES:
                    self._rows = [_concat(self._rows).combine_chunks()]
            if change.deletes is not None and change.deletes.num_rows:
                ids = change.deletes.column(ROW_ID).combine_chunks()
                self._delete_ids.append(ids)
                self._delete_ts.append(pa.array([commit_ts] * len(ids), pa.int64()))
                self.nbytes += ids.nbytes * 2
                if len(self._delete_ids) > COMBINE_PIECES:
                    self._delete_ids = [pa.concat_arrays(self._delete_ids)]
                    self._delete_ts = [pa.concat_arrays(self._delete_ts)]

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
        outside them (never on AGGREGATE KEY tables, whose rows merge first)."""
        bounded = bool(bounds) and schema.key_model is not KeyModel.AGGREGATE
        with self._lock:
            newest = ts >= self._changed_ts
            kept = self._newest.get((schema, row_ids)) if newest else None
            changed_ts = self._changed_ts
            if kept is None and self._whole is None:
                self._whole = _Whole.of(self._rows, self._delete_ids, self._delete_ts)
            whole = self._whole
        if kept is not None:
            return within(kept, bounds) if bounded else kept
        if bounded:  # only the rows within: not kept, and cheaper than the whole table
            return _snapshot(schema, ts, row_ids, whole, bounds)
        snapshot = _snapshot(schema, ts, row_ids, whole)
        if newest:
            snapshot = snapshot.combine_chunks()  # read again and again: one chunk reads faster
            with self._lock:
                if self._changed_ts == changed_ts and len(self._newest) < MAX_CACHED_SNAPSHOTS:
                    self._newest[schema, row_ids] = snapshot
        return snapshot


@dataclass(frozen=True, slots=True)
class _Whole:
    rows: pa.Table | None
    delete_ids: pa.Array | None
    delete_ts: pa.Array | None
    combined: dict[str, pa.Array] = dataclass_field(
        default_factory=dict
    )  # columns bounds test, in one chunk

    @classmethod
    def of(cls, pieces: list[pa.Table], ids: list[pa.Array], stamps: list[pa.Array]) -> _Whole:
        if not ids:
            return cls(_concat(pieces) if pieces else None, None, None)
        return cls(
            _concat(pieces) if pieces else None, pa.concat_arrays(ids), pa.concat_arrays(stamps)
        )

    def bounded_columns(self, bounds: tuple[ColumnBound, ...]) -> pa.Table:
        """The columns bounds name, each in one chunk (kept for the next read)."""
        names = [
            name
            for name in dict.fromkeys(bound.column for bound in bounds)
            if name in self.rows.column_names
        ]
        for name in names:
            if name not in self.combined:
                self.combined[name] = self.rows.column(name).combine_chunks()
        return pa.table({name: self.combined[name] for name in names})


def _snapshot(
    schema: TableSchema,
    ts: int,
    row_ids: bool,
    whole: _Whole,
    bounds: tuple[ColumnBound, ...] = (),
) -> pa.Table:
    target = schema.with_row_ids() if row_ids else schema.arrow()
    if whole.rows is None:
        return target.empty_table()
    rows = whole.rows
    bounded = inside(whole.bounded_columns(bounds), bounds) if bounds else None
    if bounded is not None:  # first: what is left to check is a few rows
        rows = rows.filter(bounded)
    visible = pc.less_equal(rows.column(COMMIT_TS), ts)
    if whole.delete_ids is not None and rows.num_rows:
        gone = whole.delete_ids.filter(pc.less_equal(whole.delete_ts, ts))
        if len(gone):
            visible = pc.and_(visible, pc.invert(pc.is_in(rows.column(ROW_ID), gone)))
    rows = rows.filter(visible)
    if schema.key_model is KeyModel.AGGREGATE and not row_ids:
        return merged(rows, schema).cast(target)
    return _projected(rows, target)


def _concat(pieces: list[pa.Table]) -> pa.Table:
    if len(pieces) == 1:
        return pieces[0]
    first = pieces[0].schema
    if all(piece.schema.equals(first) for piece in pieces):  # no schema change between them
        return pa.concat_tables(pieces)
    return pa.concat_tables(pieces, promote_options="permissive")


def _projected(rows: pa.Table, target: pa.Schema) -> pa.Table:
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
