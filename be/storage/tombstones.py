"""Tombstones: the row ids of a tablet's flushed rows that were deleted, with the timestamp of the
commit that deleted each, as one object (ROW_ID, DELETE_TS, sorted by row id, in blocks).

Rows are never rewritten to delete them: a reader at timestamp T drops the row ids a tombstone
gives with a delete timestamp at or before T; a merge drops them for good.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from be.logtail.entries import ROW_ID
from be.storage.blocks import (
    decoding_failure,
    encode_parquet,
    opened_parquet,
    sorted_by_row_id,
    without_footer,
)
from be.storage.errors import BadRows, ObjectCorrupt
from be.storage.footer import Footer, FooterError
from be.storage.names import Tablet
from be.storage.objects import ObjectStore

logger = logging.getLogger(__name__)

DELETE_TS = "__QUIRE_DELETE_TS"
TOMBSTONE_SCHEMA = pa.schema(
    [pa.field(ROW_ID, pa.int64(), False), pa.field(DELETE_TS, pa.int64(), False)]
)


@dataclass(frozen=True, slots=True)
class TombstoneMeta:
    name: str
    table_id: int
    partition_id: int
    tablet_id: int
    rows: int
    bytes: int
    min_row_id: int
    max_row_id: int
    min_delete_ts: int
    max_delete_ts: int

    def __post_init__(self) -> None:
        assert self.rows > 0 and self.bytes > 0, self
        assert self.min_row_id <= self.max_row_id and 0 < self.min_delete_ts <= self.max_delete_ts

    @property
    def tablet(self) -> Tablet:
        return Tablet(self.table_id, self.partition_id, self.tablet_id)


def write_tombstones(
    store: ObjectStore,
    tablet: Tablet,
    row_ids: pa.Array | Sequence[int],
    delete_ts: int | pa.Array | Sequence[int],
    *,
    seq: int = 0,
    name_ts: int | None = None,
) -> TombstoneMeta:
    """Write the deletes of flushed rows as one new object: one delete timestamp for all, or one
    per row id. Named after name_ts (the newest delete timestamp by default) and seq;
    ObjectExists if taken."""
    row_ids = pa.array(row_ids, pa.int64())
    if isinstance(delete_ts, int):
        delete_ts = pa.array([delete_ts] * len(row_ids), pa.int64())
    table = pa.table([row_ids, pa.array(delete_ts, pa.int64())], schema=TOMBSTONE_SCHEMA)
    limit = store.limits.max_object_rows
    if not 0 < table.num_rows <= limit:
        raise BadRows(f"a tombstone object holds 1 to {limit} row ids, not {table.num_rows}")
    if table.column(DELETE_TS).null_count or pc.min(table.column(DELETE_TS)).as_py() <= 0:
        raise BadRows("every delete timestamp must be positive")
    table = sorted_by_row_id(table)
    newest = pc.max(table.column(DELETE_TS)).as_py()
    footer = Footer("tomb", tablet.table_id, tablet.partition_id, tablet.tablet_id, 0, newest)
    assert name_ts is None or name_ts >= newest, (name_ts, newest)
    name = str(tablet.object_name(name_ts or newest, seq, "tomb"))
    buffer = encode_parquet(table, footer, store)
    store.put(name, buffer)
    logger.debug("wrote %d tombstones of tablet %d as %s", table.num_rows, tablet.tablet_id, name)
    return _meta(name, footer, table, buffer.size)


def read_tombstones(store: ObjectStore, meta: TombstoneMeta) -> pa.Table:
    """ROW_ID and DELETE_TS of every tombstone in the object, sorted by row id."""
    with opened_parquet(store, meta.name, meta.bytes) as parquet:
        footer = Footer.decode(parquet.metadata.metadata)
        table = parquet.read()
    if (
        footer.kind != "tomb"
        or footer.ts != meta.max_delete_ts
        or table.num_rows != meta.rows
        or not table.schema.equals(TOMBSTONE_SCHEMA, check_metadata=False)
    ):
        raise ObjectCorrupt("does not match its metadata", meta.name)
    return without_footer(table)


def read_tombstone_meta(store: ObjectStore, name: str) -> TombstoneMeta:
    """A tombstone object's metadata from its footer alone."""
    with store.open(name) as file:
        size = file.size()
        try:
            metadata = pq.ParquetFile(file).metadata
            footer = Footer.decode(metadata.metadata)
        except FooterError as error:
            raise ObjectCorrupt(str(error), name) from None
        except (pa.ArrowException, OSError) as error:
            raise decoding_failure(error, name) from None
    if footer.kind != "tomb" or metadata.schema.to_arrow_schema().names != TOMBSTONE_SCHEMA.names:
        raise ObjectCorrupt("is not a tombstone object", name)
    bounds = []
    for column in range(2):
        statistics = [
            metadata.row_group(g).column(column).statistics for g in range(metadata.num_row_groups)
        ]
        if not statistics or any(s is None or not s.has_min_max for s in statistics):
            raise ObjectCorrupt("has no row id or delete timestamp statistics", name)
        bounds += [min(s.min for s in statistics), max(s.max for s in statistics)]
    return TombstoneMeta(
        name,
        footer.table_id,
        footer.partition_id,
        footer.tablet_id,
        metadata.num_rows,
        size,
        *bounds,
    )


def deleted_row_ids(
    store: ObjectStore,
    tombstones: Iterable[TombstoneMeta],
    at_ts: int,
    *,
    row_id_range: tuple[int, int] | None = None,
) -> pa.Array:
    """The row ids deleted at or before at_ts (within the inclusive row id range, if given): the
    rows a snapshot at at_ts, or a merge at at_ts, leaves out. Objects that cannot hold any are
    not read."""
    found = []
    for meta in tombstones:
        if meta.min_delete_ts > at_ts:
            continue
        if row_id_range and (
            meta.max_row_id < row_id_range[0] or meta.min_row_id > row_id_range[1]
        ):
            continue
        table = read_tombstones(store, meta)
        found.append(table.filter(pc.less_equal(table.column(DELETE_TS), at_ts)).column(ROW_ID))
    chunks = [chunk for column in found for chunk in column.chunks]
    return pc.unique(pa.chunked_array(chunks, pa.int64()))


def _meta(name: str, footer: Footer, table: pa.Table, size: int) -> TombstoneMeta:
    row_ids, delete_ts = table.column(ROW_ID), table.column(DELETE_TS)
    return TombstoneMeta(
        name,
        footer.table_id,
        footer.partition_id,
        footer.tablet_id,
        table.num_rows,
        size,
        pc.min(row_ids).as_py(),
        pc.max(row_ids).as_py(),
        pc.min(delete_ts).as_py(),
        pc.max(delete_ts).as_py(),
    )
