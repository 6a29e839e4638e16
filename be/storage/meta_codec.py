"""Object and tombstone metadata as bytes, for the TN's log and checkpoints.

An object's metadata is one Arrow IPC stream: one row per block (rows, row id and commit timestamp
ranges, then per user column its min, max, null count and NaN flag, typed as the values are) with
the object's own fields in the schema's metadata. Strict, as the journal codec: a stream of another
version, or whose fields are missing, is refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import repeat

import pyarrow as pa

from be.storage.blocks import BlockMeta, ColumnStats, ObjectMeta
from be.storage.errors import ObjectCorrupt
from be.storage.tombstones import TombstoneMeta
from be.wire import arrow_stream

VERSION = 2  # 2: the object's column checksums
SUPPORTED_VERSIONS = (1, 2)
META_KEY = b"quire.object_meta"
_BLOCK_FIELDS = ("rows", "min_row_id", "max_row_id", "min_commit_ts", "max_commit_ts")
_OBJECT_FIELDS = (
    "name",
    "table_id",
    "partition_id",
    "tablet_id",
    "schema_version",
    "flush_ts",
    "rows",
    "bytes",
)
TOMBSTONE_FIELDS = (
    "name",
    "table_id",
    "partition_id",
    "tablet_id",
    "rows",
    "bytes",
    "min_row_id",
    "max_row_id",
    "min_delete_ts",
    "max_delete_ts",
)


def encode_object(meta: ObjectMeta) -> bytes:
    arrays: dict[str, pa.Array] = {
        field: pa.array([getattr(block, field) for block in meta.blocks], pa.int64())
        for field in _BLOCK_FIELDS
    }
    names = [stats.name for stats in meta.blocks[0].columns]
    for position, name in enumerate(names):
        columns = [block.columns[position] for block in meta.blocks]
        assert all(stats.name == name for stats in columns), meta.name
        arrays[f"{name}.min"] = _values([stats.min for stats in columns])
        arrays[f"{name}.max"] = _values([stats.max for stats in columns])
        arrays[f"{name}.nulls"] = pa.array([stats.null_count for stats in columns], pa.int64())
        arrays[f"{name}.nan"] = pa.array([stats.may_have_nan for stats in columns], pa.bool_())
    header = {"version": VERSION, "columns": names}
    header.update({field: getattr(meta, field) for field in _OBJECT_FIELDS})
    header["column_checksums"] = list(meta.column_checksums)
    table = pa.table(arrays).replace_schema_metadata({META_KEY: json.dumps(header).encode()})
    return arrow_stream(table).to_pybytes()


def decode_object(data: bytes) -> ObjectMeta:
    try:
        table = pa.ipc.open_stream(data).read_all()
        header = json.loads(table.schema.metadata[META_KEY])
        version = header.pop("version")
        if version not in SUPPORTED_VERSIONS:
            raise ObjectCorrupt(f"object metadata of version {version} is not read here")
        names = header.pop("columns")
        expected = (*_OBJECT_FIELDS, "column_checksums") if version >= 2 else _OBJECT_FIELDS
        if set(header) != set(expected):
            raise ObjectCorrupt(f"object metadata fields {sorted(header)} are not expected")
        columns = {name: table.column(name).to_pylist() for name in table.schema.names}
        stats = [
            map(
                ColumnStats,
                repeat(name),
                columns[f"{name}.min"],
                columns[f"{name}.max"],
                columns[f"{name}.nulls"],
                columns[f"{name}.nan"],
            )
            for name in names
        ]
        fields = [columns[field] for field in _BLOCK_FIELDS]
        per_block = zip(*stats, strict=True) if stats else repeat(())
        blocks = tuple(map(BlockMeta, range(table.num_rows), *fields, per_block))
        sums = header.pop("column_checksums", [])
        if type(sums) is not list or not all(type(value) is int for value in sums):
            raise ObjectCorrupt("object metadata's column checksums are damaged")
        return ObjectMeta(**header, blocks=blocks, column_checksums=tuple(sums))
    except ObjectCorrupt:
        raise
    except (pa.ArrowException, KeyError, TypeError, ValueError, AssertionError) as error:
        raise ObjectCorrupt(f"object metadata is damaged: {error}") from None


def encode_tombstone(meta: TombstoneMeta) -> list:
    return [getattr(meta, field) for field in TOMBSTONE_FIELDS]


def decode_tombstone(fields: Sequence) -> TombstoneMeta:
    if len(fields) != len(TOMBSTONE_FIELDS) or not isinstance(fields[0], str):
        raise ObjectCorrupt("tombstone metadata is damaged")
    if not all(type(value) is int for value in fields[1:]):
        raise ObjectCorrupt("tombstone metadata is damaged")
    try:
        return TombstoneMeta(*fields)
    except AssertionError:
        raise ObjectCorrupt("tombstone metadata breaks its invariants") from None


def _values(values: list) -> pa.Array:
    """Statistics as Arrow values of their own type; where they do not make one column (mixed
    decimal scales, say), unknown: a reader then never prunes by them."""
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError):
        return pa.nulls(len(values))
