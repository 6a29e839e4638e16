"""One Spark partition's rows, read straight from object storage with pyarrow: the chosen blocks
of its objects, less the rows committed after the snapshot and the rows deleted at or before it
(its tablets' tombstones and the plan's in-memory deletes), plus the plan's tail when the
partition carries it. What the CN does for a snapshot (be/cn/table_state.py), on a reader's side.

An AGGREGATE KEY table's rows are merged by key after they are read (be/cn/table_state.merged):
one partition then holds the whole table."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from be.cn.table_state import merged
from be.logtail.entries import COMMIT_TS, ROW_ID
from be.row_adapter import adapted
from be.storage.blocks import ObjectMeta, read_blocks
from be.storage.limits import StorageLimits
from be.storage.objects import DEFAULT_LIMITS, ObjectStore, S3Options
from be.storage.tombstones import DELETE_TS, TombstoneMeta, read_tombstones
from be.table_schema import TableSchema
from metadata.records import KeyModel

_ROW_ID_FIELD = pa.field(ROW_ID, pa.int64(), False)
_COMMIT_TS_FIELD = pa.field(COMMIT_TS, pa.int64(), False)


@dataclass(frozen=True)
class PartitionParts:
    """What one partition reads: plain values, pickled to the Spark task that reads them."""

    location: str
    ts: int
    schema: TableSchema
    objects: tuple[tuple[ObjectMeta, tuple[int, ...]], ...]  # (object, its chosen blocks)
    tombstones: tuple[TombstoneMeta, ...]  # of the objects' tablets
    deleted: pa.Array  # row ids deleted at or before ts that no tombstone holds
    tail: pa.Table | None  # ROW_ID, then the schema's columns; in one partition only

    @property
    def rows(self) -> int:
        blocks = sum(meta.blocks[i].rows for meta, chosen in self.objects for i in chosen)
        return blocks + (self.tail.num_rows if self.tail is not None else 0)


def open_store(location: str, s3: S3Options, limits: StorageLimits = DEFAULT_LIMITS) -> ObjectStore:
    """The object store at a plan's location (a local folder, s3://bucket/prefix/objects, or
    another pyarrow filesystem URI)."""
    if "://" not in location:
        return ObjectStore(
            pafs.LocalFileSystem(), location, location=location, limits=limits, local=True
        )
    if location.startswith("s3://"):
        return ObjectStore(
            s3.filesystem(), location[len("s3://") :], location=location, limits=limits
        )
    filesystem, path = pafs.FileSystem.from_uri(location)
    return ObjectStore(filesystem, path.rstrip("/"), location=location, limits=limits)


def scan(parts: PartitionParts, store: ObjectStore) -> Iterator[pa.Table]:
    """The partition's visible rows in the schema's columns, a table per object (and the tail)."""
    schema = parts.schema
    aggregate = schema.key_model is KeyModel.AGGREGATE
    gone = _deleted(parts, store)
    pieces = []
    for meta, chosen in parts.objects:
        rows = _object_rows(store, meta, chosen, parts.ts, gone, schema, aggregate)
        if not rows.num_rows:
            continue
        if aggregate:
            pieces.append(rows)
        else:
            yield rows
    if parts.tail is not None and parts.tail.num_rows:
        if aggregate:
            pieces.append(parts.tail)
        else:
            yield parts.tail.drop_columns([ROW_ID])
    if aggregate and pieces:
        yield merged(pa.concat_tables(pieces, promote_options="permissive"), schema)


def _deleted(parts: PartitionParts, store: ObjectStore) -> np.ndarray:
    """The row ids deleted at the snapshot, sorted, each once."""
    arrays = [parts.deleted]
    for meta in parts.tombstones:
        table = read_tombstones(store, meta)
        visible = pc.less_equal(table.column(DELETE_TS), parts.ts)
        arrays.append(table.column(ROW_ID).filter(visible).combine_chunks())
    gone = pa.concat_arrays(arrays) if len(arrays) > 1 else parts.deleted
    assert not gone.null_count
    return np.unique(gone.to_numpy(zero_copy_only=False).astype(np.int64, copy=False))


def _object_rows(
    store: ObjectStore,
    meta: ObjectMeta,
    chosen: tuple[int, ...],
    ts: int,
    gone: np.ndarray,
    schema: TableSchema,
    aggregate: bool,
) -> pa.Table:
    later = meta.max_commit_ts > ts
    gone = _within(gone, meta)
    deletes = bool(len(gone))
    columns = None  # another schema version: every column, matched by id
    if meta.schema_version == schema.schema_version:
        columns = [name for name in schema.names if name in meta.column_names]
        if deletes or aggregate:
            columns.insert(0, ROW_ID)
        if later:
            columns.append(COMMIT_TS)
    rows = read_blocks(store, meta, columns, chosen)
    keep = pc.less_equal(rows.column(COMMIT_TS), ts) if later else None
    if deletes:
        present = _present(rows.column(ROW_ID), gone)
        keep = present if keep is None else pc.and_(keep, present)
    if keep is not None:
        rows = rows.filter(keep)
    hidden = (_ROW_ID_FIELD,) if aggregate else ()
    extra = [name for name in (ROW_ID, COMMIT_TS) if name in rows.schema.names]
    if not aggregate:
        rows = rows.drop_columns(extra)
    elif COMMIT_TS in extra:
        rows = rows.drop_columns([COMMIT_TS])
    return adapted(rows, schema, hidden)


def _within(gone: np.ndarray, meta: ObjectMeta) -> np.ndarray:
    """The deleted row ids (sorted) between the object's least and greatest row ids."""
    low = np.searchsorted(gone, meta.min_row_id, side="left")
    high = np.searchsorted(gone, meta.max_row_id, side="right")
    return gone[low:high]


def _present(row_ids: pa.ChunkedArray, gone: np.ndarray) -> pa.Array:
    """Per row, whether its id is not among gone (sorted, not empty): a binary search per
    deleted id among the rows' ids when they ascend (as an object's rows are written), else
    one per row among the deleted ids."""
    ids = row_ids.to_numpy()
    if len(ids) < 2 or bool(np.all(ids[1:] > ids[:-1])):
        at = np.minimum(np.searchsorted(ids, gone), len(ids) - 1)
        present = np.ones(len(ids), np.bool_)
        present[at[ids[at] == gone]] = False
        return pa.array(present)
    at = np.minimum(np.searchsorted(gone, ids), len(gone) - 1)
    return pa.array(gone[at] != ids)
