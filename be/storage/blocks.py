"""The block format: one tablet's rows as one Parquet object whose row groups are the blocks.

Rows come as a pa.Table whose first columns are ROW_ID and COMMIT_TS, then the user columns at
one schema version. They are written sorted by row id, in blocks of at most `block_rows` rows, with
Parquet's column statistics and page checksums; `ObjectMeta` carries what a reader needs to choose
blocks without opening the object (row id, commit timestamp and per-column min/max per block).
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from be.logtail.entries import COMMIT_TS, HIDDEN_PREFIX, ROW_ID
from be.storage import parquet_decoder
from be.storage.errors import (
    BadPredicate,
    BadRows,
    ObjectCorrupt,
    ObjectStoreError,
    ObjectTooLarge,
    StoreUnavailable,
    UnknownColumn,
    without_paths,
)
from be.storage.footer import FOOTER_KEY, Footer, FooterError
from be.storage.names import Tablet
from be.storage.objects import ObjectStore

logger = logging.getLogger(__name__)

PARQUET_MAGIC = b"PAR1"
HIDDEN_COLUMNS = (ROW_ID, COMMIT_TS)


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """A column's values in one block. min/max are None where unknown: all NULL, only NaN, values
    too long for Parquet's statistics, nested types."""

    name: str
    min: object | None
    max: object | None
    null_count: int | None
    may_have_nan: bool = False  # DuckDB orders NaN above every number: no pruning from above


@dataclass(frozen=True, slots=True)
class BlockMeta:
    index: int
    rows: int
    min_row_id: int
    max_row_id: int
    min_commit_ts: int
    max_commit_ts: int
    columns: tuple[ColumnStats, ...]  # the user columns, in schema order

    def __post_init__(self) -> None:
        assert self.index >= 0 and self.rows > 0, self
        assert self.min_row_id <= self.max_row_id and self.min_commit_ts <= self.max_commit_ts

    def column(self, name: str) -> ColumnStats:
        if name == ROW_ID:
            return ColumnStats(ROW_ID, self.min_row_id, self.max_row_id, 0)
        if name == COMMIT_TS:
            return ColumnStats(COMMIT_TS, self.min_commit_ts, self.max_commit_ts, 0)
        for stats in self.columns:
            if stats.name == name:
                return stats
        raise UnknownColumn(f"no column {name!r} in the block")


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    table_id: int
    partition_id: int
    tablet_id: int
    schema_version: int
    flush_ts: int  # rows of this object committed at or before it; a CN drops its in-memory copies
    rows: int
    bytes: int
    blocks: tuple[BlockMeta, ...]
    # per column (in the object's order), the CRC-32 of its chunks' bytes in block order, as
    # written; () when not known (the object is then read with its page checksums)
    column_checksums: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        assert self.blocks and self.rows == sum(block.rows for block in self.blocks), self.name
        assert [block.index for block in self.blocks] == list(range(len(self.blocks)))
        assert self.max_commit_ts <= self.flush_ts, self.name

    @property
    def tablet(self) -> Tablet:
        return Tablet(self.table_id, self.partition_id, self.tablet_id)

    @property
    def min_row_id(self) -> int:
        return self.blocks[0].min_row_id

    @property
    def max_row_id(self) -> int:
        return self.blocks[-1].max_row_id

    @property
    def max_commit_ts(self) -> int:
        return max(block.max_commit_ts for block in self.blocks)

    @property
    def column_names(self) -> tuple[str, ...]:
        return HIDDEN_COLUMNS + tuple(stats.name for stats in self.blocks[0].columns)


def write_blocks(
    store: ObjectStore,
    tablet: Tablet,
    rows: pa.Table,
    *,
    schema_version: int,
    flush_ts: int,
    seq: int = 0,
    name_ts: int | None = None,
) -> ObjectMeta:
    """Write a tablet's rows (committed at or before flush_ts) as one new object.

    The name is the tablet's, at name_ts (flush_ts by default) and seq; ObjectExists if taken."""
    assert schema_version > 0 and flush_ts > 0
    rows = _checked_rows(rows, store.limits.max_object_rows, flush_ts)
    footer = Footer("data", *_ids(tablet), schema_version, flush_ts)
    name = str(tablet.object_name(name_ts or flush_ts, seq, "data"))
    buffer = encode_parquet(rows, footer, store)
    store.put(name, buffer)
    meta = _object_meta(name, footer, pq.ParquetFile(pa.BufferReader(buffer)).metadata, buffer.size)
    metadata = pq.ParquetFile(pa.BufferReader(buffer)).metadata
    sums = tuple(
        _chunks_checksum(lambda start, length: buffer.slice(start, length), metadata, leaf)
        for leaf in range(metadata.num_columns)
    )
    meta = replace(meta, column_checksums=sums)
    nan_columns = _nan_columns(rows, store.limits.block_rows)
    blocks = tuple(
        replace(
            block,
            columns=tuple(
                replace(stats, may_have_nan=stats.name in nan_columns[block.index])
                for stats in block.columns
            ),
        )
        for block in meta.blocks
    )
    logger.debug("flushed %d rows of tablet %d as %s", meta.rows, tablet.tablet_id, name)
    return replace(meta, blocks=blocks)


def read_blocks(
    store: ObjectStore,
    meta: ObjectMeta,
    columns: Sequence[str] | None = None,
    blocks: Iterable[int] | None = None,
) -> pa.Table:
    """The chosen blocks (all by default, in the order given) and columns (all by default) of an
    object, reading only those row groups and column chunks."""
    chosen = list(range(len(meta.blocks))) if blocks is None else list(blocks)
    assert all(0 <= index < len(meta.blocks) for index in chosen), (chosen, meta.name)
    if columns is not None:
        unknown = [column for column in columns if column not in meta.column_names]
        if unknown:
            raise UnknownColumn(f"no column {unknown[0]!r} in object {meta.name}")
    if blocks is None and meta.column_checksums and store.local:
        found = _read_whole(store, meta, columns)
        if found is not None:
            return found
    with opened_parquet(store, meta.name, meta.bytes) as parquet:
        _check_footer(meta, parquet.metadata)
        table = parquet.read_row_groups(chosen, columns=columns)
    if table.num_rows != sum(meta.blocks[index].rows for index in chosen):
        raise ObjectCorrupt("holds other row counts than its metadata says", meta.name)
    return without_footer(table)


def read_whole_objects(
    store: ObjectStore, metas: Sequence[ObjectMeta], columns: Sequence[str]
) -> list[pa.Table] | None:
    """Every block of each object, in these columns: one decode by DuckDB's reader for them all
    (each column read checked against its checksum first), the tables in the order of metas; None
    if they cannot be read so (not all local with checksums, another type per column, a type
    only pyarrow reads exactly): the caller reads them one by one."""
    if not metas or not store.local or not all(meta.column_checksums for meta in metas):
        return None
    schemas = {_checked_schema(store, meta, columns) for meta in metas}
    if len(schemas) != 1 or None in schemas:
        return None
    (schema,) = schemas
    paths = [store.local_path(meta.name) for meta in metas]
    table = parquet_decoder.decoded(paths, metas[0].name, schema)
    if table.num_rows != sum(meta.rows for meta in metas):
        raise ObjectCorrupt("hold other row counts than their metadata says", metas[0].name)
    tables, start = [], 0
    for meta in metas:
        tables.append(without_footer(table.slice(start, meta.rows)))
        start += meta.rows
    return tables


def _read_whole(
    store: ObjectStore, meta: ObjectMeta, columns: Sequence[str] | None
) -> pa.Table | None:
    """Every block of a local object whose column checksums are known, decoded by DuckDB's reader
    (be/storage/parquet_decoder.py); None if a column is of a type only pyarrow reads exactly."""
    schema = _checked_schema(store, meta, columns)
    if schema is None:
        return None
    table = parquet_decoder.decoded([store.local_path(meta.name)], meta.name, schema)
    if table.num_rows != meta.rows:
        raise ObjectCorrupt("holds other row counts than its metadata says", meta.name)
    return without_footer(table)


def _checked_schema(
    store: ObjectStore, meta: ObjectMeta, columns: Sequence[str] | None
) -> pa.Schema | None:
    """The object's schema in these columns (all by default), once their chunks match their
    checksums; None if a column is of a type DuckDB does not read exactly."""
    if meta.bytes > store.limits.max_object_bytes:
        raise ObjectTooLarge(f"{meta.bytes} bytes, over max_object_bytes", meta.name)
    with store.open(meta.name) as file:
        found = file.size()
        if found != meta.bytes:
            raise ObjectCorrupt(f"is {found} bytes, its metadata says {meta.bytes}", meta.name)
        try:
            metadata = pq.read_metadata(file)
            schema = metadata.schema.to_arrow_schema()
        except (pa.ArrowException, OSError) as error:
            raise decoding_failure(error, meta.name) from None
        _check_footer(meta, metadata)
        if len(meta.column_checksums) != metadata.num_columns:  # a checksum a Parquet leaf
            raise ObjectCorrupt("does not match its metadata", meta.name)
        wanted = schema.names if columns is None else list(columns)
        unknown = [name for name in wanted if name not in schema.names]
        if unknown:
            raise UnknownColumn(f"no column {unknown[0]!r} in object {meta.name}")
        schema = pa.schema([schema.field(name) for name in wanted])
        if not parquet_decoder.decodes_exactly(schema):
            return None
        for name in wanted:  # each a leaf of its own (an ARRAY, MAP or STRUCT was let go above)
            leaf = _leaf(meta.name, metadata, name)
            checksum = _chunks_checksum(lambda at, length: file.read_at(length, at), metadata, leaf)
            if checksum != meta.column_checksums[leaf]:
                raise ObjectCorrupt(
                    f"unreadable Parquet: column {name!r} does not match its checksum", meta.name
                )
    return schema


def _chunks_checksum(read, metadata: pq.FileMetaData, leaf: int) -> int:
    """The CRC-32 of a column's chunks, in block order; read(start, length) gives bytes."""
    checksum = 0
    for index in range(metadata.num_row_groups):
        chunk = metadata.row_group(index).column(leaf)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else None
        start = chunk.data_page_offset if start is None else start
        checksum = zlib.crc32(read(start, chunk.total_compressed_size), checksum)
    return checksum


def _leaf(object_name: str, metadata: pq.FileMetaData, name: str) -> int:
    for leaf in range(metadata.num_columns):
        if metadata.schema.column(leaf).path == name:
            return leaf
    raise ObjectCorrupt(f"has no column {name!r}", object_name)


def _check_footer(meta: ObjectMeta, metadata: pq.FileMetaData) -> None:
    footer = _footer(meta.name, metadata)
    if (
        footer.ts != meta.flush_ts
        or (footer.table_id, footer.partition_id, footer.tablet_id) != _ids(meta.tablet)
        or footer.schema_version != meta.schema_version
        or metadata.num_row_groups != len(meta.blocks)
    ):
        raise ObjectCorrupt("does not match its metadata", meta.name)


@contextlib.contextmanager
def opened_parquet(store: ObjectStore, name: str, size: int) -> Iterator[pq.ParquetFile]:
    """The object as a Parquet file (page checksums checked), once its size is the one its
    metadata says; what reading it raises becomes ObjectCorrupt (or the store's own error)."""
    if size > store.limits.max_object_bytes:
        raise ObjectTooLarge(f"{size} bytes, over max_object_bytes", name)
    with store.open(name) as file:
        found = file.size()
        if found != size:
            raise ObjectCorrupt(f"is {found} bytes, its metadata says {size}", name)
        try:
            yield pq.ParquetFile(file, page_checksum_verification=True, pre_buffer=not store.local)
        except ObjectStoreError:
            raise
        except FooterError as error:
            raise ObjectCorrupt(str(error), name) from None
        except (pa.ArrowException, OSError) as error:
            raise decoding_failure(error, name) from None


def without_footer(table: pa.Table) -> pa.Table:
    metadata = {k: v for k, v in (table.schema.metadata or {}).items() if k != FOOTER_KEY}
    return table.replace_schema_metadata(metadata or None)


def read_object_meta(store: ObjectStore, name: str) -> ObjectMeta:
    """An object's metadata from its footer alone (a bulk load's objects; a check after a crash)."""
    with store.open(name) as file:
        try:
            size = file.size()
            if size < 12:
                raise ObjectCorrupt(f"is {size} bytes: too short for Parquet", name)
            file.seek(size - 8)
            tail = file.read(8)
            footer_length = int.from_bytes(tail[:4], "little")
            if tail[4:] != PARQUET_MAGIC:
                raise ObjectCorrupt("has no Parquet end marker: truncated or not Parquet", name)
            if footer_length > min(size - 12, store.limits.max_footer_bytes):
                raise ObjectCorrupt(f"claims a footer of {footer_length} bytes", name)
            file.seek(0)
            metadata = pq.ParquetFile(file).metadata
        except ObjectStoreError:
            raise
        except (pa.ArrowException, OSError) as error:
            raise decoding_failure(error, name) from None
    return _object_meta(name, _footer(name, metadata), metadata, size)


def prune(meta: ObjectMeta, ranges: Mapping[str, tuple[object, object]]) -> list[int]:
    """The indexes of the blocks whose min/max may hold a row matching every range: column ->
    (low, high), both inclusive, None for an open end (equality: low == high). NULL matches no
    range. Values compare as Python values (int, Decimal, float, str, date, datetime, bytes)."""
    for column in ranges:
        if column not in meta.column_names:
            raise UnknownColumn(f"no column {column!r} in object {meta.name}")
    return [
        block.index
        for block in meta.blocks
        if all(_may_match(block, column, *bounds) for column, bounds in ranges.items())
    ]


def encode_parquet(table: pa.Table, footer: Footer, store: ObjectStore) -> pa.Buffer:
    """The Parquet bytes of a table with Quire's footer (shared with tombstones)."""
    limits = store.limits
    metadata = {**(table.schema.metadata or {}), **footer.encode()}
    table = table.replace_schema_metadata(metadata)
    sink = pa.BufferOutputStream()
    compression = limits.compression if limits.compression != "NONE" else None
    names = table.schema.names
    pq.write_table(
        table,
        sink,
        row_group_size=limits.block_rows,
        compression=compression,
        write_statistics=True,
        write_page_checksum=True,
        store_schema=True,
        # Row ids are distinct and mostly ascending: deltas, never a dictionary.
        use_dictionary=[name for name in names if name != ROW_ID],
        column_encoding={ROW_ID: "DELTA_BINARY_PACKED"} if ROW_ID in names else None,
        dictionary_pagesize_limit=limits.dictionary_page_bytes,
    )
    buffer = sink.getvalue()
    if buffer.size > limits.max_object_bytes:
        raise ObjectTooLarge(
            f"{buffer.size} bytes, over max_object_bytes {limits.max_object_bytes}"
        )
    return buffer


def _checked_rows(rows: pa.Table, max_rows: int, flush_ts: int) -> pa.Table:
    if not 0 < rows.num_rows <= max_rows:
        raise BadRows(f"an object holds 1 to {max_rows} rows, not {rows.num_rows}")
    names = rows.schema.names
    if names[:2] != list(HIDDEN_COLUMNS):
        raise BadRows(f"rows start with {ROW_ID} and {COMMIT_TS}, not {names[:2]}")
    hidden = [name for name in names[2:] if name.startswith(HIDDEN_PREFIX)]
    if hidden or len(set(names)) != len(names):
        raise BadRows(f"user columns must be unique and not hidden: {hidden or names}")
    for name in HIDDEN_COLUMNS:
        column = rows.column(name)
        if column.type != pa.int64() or column.null_count:
            raise BadRows(f"{name} must be a non-null int64")
    if pc.max(rows.column(COMMIT_TS)).as_py() > flush_ts:
        raise BadRows(f"rows committed after the flush timestamp {flush_ts}")
    return sorted_by_row_id(rows)


def sorted_by_row_id(rows: pa.Table) -> pa.Table:
    """The rows in increasing row id order; BadRows if a row id repeats."""
    row_ids = rows.column(ROW_ID)
    if len(row_ids) > 1:
        steps = pc.subtract(row_ids.slice(1), row_ids.slice(0, len(row_ids) - 1))
        if pc.min(steps).as_py() <= 0:
            rows = rows.take(pc.sort_indices(row_ids))
            row_ids = rows.column(ROW_ID)
            steps = pc.subtract(row_ids.slice(1), row_ids.slice(0, len(row_ids) - 1))
            if pc.min(steps).as_py() == 0:
                raise BadRows("a row id appears twice")
    return rows


def _ids(tablet: Tablet) -> tuple[int, int, int]:
    return tablet.table_id, tablet.partition_id, tablet.tablet_id


def _footer(name: str, metadata: pq.FileMetaData) -> Footer:
    try:
        return Footer.decode(metadata.metadata)
    except FooterError as error:
        raise ObjectCorrupt(str(error), name) from None


def decoding_failure(error: Exception, name: str) -> ObjectStoreError:
    text = without_paths(str(error)) or type(error).__name__
    if isinstance(error, OSError) and ("AWS Error" in text or "curl" in text.lower()):
        logger.warning("read of %s failed: %s", name, error)
        return StoreUnavailable(f"read failed: {text}", name)
    logger.warning("object %s is unreadable: %s", name, error)
    return ObjectCorrupt(f"unreadable Parquet: {text}", name)


def _object_meta(name: str, footer: Footer, metadata: pq.FileMetaData, size: int) -> ObjectMeta:
    if footer.kind != "data":
        raise ObjectCorrupt(f"is a {footer.kind} object, not a data object", name)
    schema = metadata.schema.to_arrow_schema()
    if schema.names[:2] != list(HIDDEN_COLUMNS) or metadata.num_row_groups == 0:
        raise ObjectCorrupt("has no row ids and commit timestamps", name)
    leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    blocks = []
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        row_id, commit_ts = (_stats(group, leaves, column, None) for column in HIDDEN_COLUMNS)
        if row_id.min is None or commit_ts.min is None:
            raise ObjectCorrupt(f"block {index} has no row id or commit timestamp statistics", name)
        columns = tuple(_stats(group, leaves, field.name, field.type) for field in list(schema)[2:])
        blocks.append(
            BlockMeta(
                index, group.num_rows, row_id.min, row_id.max, commit_ts.min, commit_ts.max, columns
            )
        )
    return ObjectMeta(
        name,
        footer.table_id,
        footer.partition_id,
        footer.tablet_id,
        footer.schema_version,
        footer.ts,
        metadata.num_rows,
        size,
        tuple(blocks),
    )


def _stats(group, leaves: dict[str, int], name: str, arrow_type) -> ColumnStats:
    floating = arrow_type is not None and pa.types.is_floating(arrow_type)
    leaf = leaves.get(name)  # nested columns have leaves a.list.element, ...: no statistics
    statistics = group.column(leaf).statistics if leaf is not None else None
    if statistics is None:
        return ColumnStats(name, None, None, None, floating)
    null_count = statistics.null_count if statistics.has_null_count else None
    if not statistics.has_min_max:
        return ColumnStats(name, None, None, null_count, floating)
    return ColumnStats(name, statistics.min, statistics.max, null_count, floating)


def _nan_columns(rows: pa.Table, block_rows: int) -> list[frozenset[str]]:
    """Per block, the floating columns that hold a NaN."""
    floating = [field.name for field in rows.schema if pa.types.is_floating(field.type)]
    found = []
    for start in range(0, rows.num_rows, block_rows):
        block = rows.slice(start, block_rows)
        found.append(
            frozenset(name for name in floating if pc.any(pc.is_nan(block.column(name))).as_py())
        )
    return found


def _may_match(block: BlockMeta, column: str, low: object, high: object) -> bool:
    stats = block.column(column)
    if stats.null_count == block.rows:
        return False  # only NULLs: no range holds them
    if stats.min is None or stats.max is None:
        return True
    try:
        if low is not None and high is not None and low > high:
            return False
        if high is not None and stats.min > high:
            return False
        if low is not None and stats.max < low and not stats.may_have_nan:
            return False
    except TypeError:
        raise BadPredicate(
            f"range ({low!r}, {high!r}) does not compare with {column}'s values ({stats.min!r})"
        ) from None
    return True
