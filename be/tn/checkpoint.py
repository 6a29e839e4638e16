"""A TN checkpoint: everything the TN knows once every table is flushed, as one object, so that
a restart loads it and replays only the log after it.

It holds, per table, its schema, its commit state (next row id, the rows deleted lately for
first-committer-wins, the key index of a UNIQUE KEY table, its last overwrite: a key older
checkpoints lack) and the metadata of its objects and tombstones; the request ids the TN answers again; and the records of committed bulk loads (their
labels). Layout: magic, version, header length and a CRC-32 of what follows, a JSON header, then
Arrow IPC streams (object metadata, key indexes, deletes) whose sizes the header gives. Strict: a
checkpoint that is damaged is refused whole."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field

import pyarrow as pa

from be.storage import meta_codec
from be.storage.blocks import ObjectMeta
from be.storage.tombstones import TombstoneMeta
from be.table_schema import TableSchema
from be.tn import wal_records
from be.tn.errors import CheckpointCorrupt
from be.tn.state import TableWriteState, WriteState
from be.wire import arrow_stream

MAGIC = b"QCKP"
VERSION = 1
_HEAD = struct.Struct(">4sBII")  # magic, version, header length, CRC-32 of header and streams
FOLDER = "checkpoints"
ROW_ID = "row_id"
TS = "ts"
SEQUENCE = "sequence"  # a key's holder's value of the table's sequence column


def object_name(ts: int) -> str:
    return f"{FOLDER}/{ts:020d}.ckpt"


@dataclass
class TableCheckpoint:
    schema: TableSchema
    state: TableWriteState
    objects: list[ObjectMeta] = field(default_factory=list)
    tombstones: list[TombstoneMeta] = field(default_factory=list)


@dataclass
class Checkpoint:
    ts: int  # every commit at or before it is in the checkpoint
    horizon_ts: int
    tables: dict[int, TableCheckpoint]
    requests: list[tuple[str, int]]
    pending_deletions: list[tuple[int, str]] = field(default_factory=list)  # merged away at ts
    # per table, the next AUTO_INCREMENT value: the rows holding the largest ones may be in
    # objects only, and the log behind the checkpoint is gone
    auto_increments: list[tuple[int, int]] = field(default_factory=list)
    loads: list[dict] = field(default_factory=list)  # committed loads' records (their labels)


def encode(checkpoint: Checkpoint) -> bytes:
    streams: list[bytes] = []

    def stream(data: bytes) -> int:
        streams.append(data)
        return len(data)

    tables = []
    for table_id, table in sorted(checkpoint.tables.items()):
        state = table.state
        tables.append(
            {
                "schema": table.schema.fields(),
                "schema_version": state.schema_version,
                "next_row_id": state.next_row_id,
                "overwritten_ts": state.overwritten_ts,
                "objects": [stream(meta_codec.encode_object(meta)) for meta in table.objects],
                "tombstones": [meta_codec.encode_tombstone(meta) for meta in table.tombstones],
                "keys": stream(arrow_stream(_keys_table(table.schema, state)).to_pybytes()),
                "deleted": stream(arrow_stream(_deleted_table(state)).to_pybytes()),
            }
        )
        assert table.schema.table_id == table_id
    header = json.dumps(
        {
            "ts": checkpoint.ts,
            "horizon_ts": checkpoint.horizon_ts,
            "tables": tables,
            "requests": checkpoint.requests,
            "pending_deletions": checkpoint.pending_deletions,
            "auto_increments": checkpoint.auto_increments,
            "loads": checkpoint.loads,
        },
        separators=(",", ":"),
    ).encode()
    body = header + b"".join(streams)
    return _HEAD.pack(MAGIC, VERSION, len(header), zlib.crc32(body)) + body


@dataclass(frozen=True)
class TableStorage:
    """What a CN needs of a table from a checkpoint: its objects and tombstones, not its rows."""

    schema: TableSchema
    objects: tuple[ObjectMeta, ...]
    tombstones: tuple[TombstoneMeta, ...]


def decode_storage(data: bytes, table_ids: frozenset[int]) -> dict[int, TableStorage]:
    """The objects and tombstones of table_ids in a checkpoint (tables it does not name are left
    out); the TN's commit state (key indexes, deletes) is skipped, never decoded."""
    try:
        header, body, offset = _opened(data)
        found = {}
        for fields in header["tables"]:
            sizes = fields["objects"]
            if fields["schema"]["id"] not in table_ids:
                offset += sum(sizes) + fields["keys"] + fields["deleted"]
                continue
            schema = TableSchema.from_fields(fields["schema"])
            objects = []
            for size in sizes:
                objects.append(meta_codec.decode_object(bytes(body[offset : offset + size])))
                offset += size
            offset += fields["keys"] + fields["deleted"]
            tombstones = tuple(meta_codec.decode_tombstone(item) for item in fields["tombstones"])
            found[schema.table_id] = TableStorage(schema, tuple(objects), tombstones)
        if offset != len(body):
            raise CheckpointCorrupt("checkpoint's streams do not add up to its size")
        return found
    except CheckpointCorrupt:
        raise
    except wal_records.DAMAGED as error:
        raise CheckpointCorrupt(f"checkpoint is damaged: {error}") from None


def _opened(data: bytes) -> tuple[dict, memoryview, int]:
    """The header, the body, and where the body's streams start; the checksum checked."""
    magic, version, header_size, crc = _HEAD.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise CheckpointCorrupt(f"not a checkpoint of version {VERSION}")
    body = memoryview(data)[_HEAD.size :]
    if zlib.crc32(body) != crc:
        raise CheckpointCorrupt("checkpoint checksum does not match: truncated or damaged")
    return json.loads(bytes(body[:header_size])), body, header_size


def decode(data: bytes) -> Checkpoint:
    try:
        header, body, offset = _opened(data)

        def stream(size: int) -> bytes:
            nonlocal offset
            chunk = bytes(body[offset : offset + size])
            if len(chunk) != size:
                raise CheckpointCorrupt("checkpoint is truncated")
            offset += size
            return chunk

        tables = {}
        for fields in header["tables"]:
            schema = TableSchema.from_fields(fields["schema"])
            objects = [meta_codec.decode_object(stream(size)) for size in fields["objects"]]
            tombstones = [meta_codec.decode_tombstone(item) for item in fields["tombstones"]]
            keys, sequences = _key_index(
                pa.ipc.open_stream(stream(fields["keys"])).read_all(), schema.key_columns
            )
            deleted = pa.ipc.open_stream(stream(fields["deleted"])).read_all()
            state = TableWriteState(
                schema_version=fields["schema_version"],
                key_columns=schema.key_columns,
                replaces_on_key=schema.replaces_on_key,
                next_row_id=fields["next_row_id"],
                deleted=dict(
                    zip(
                        deleted.column(ROW_ID).to_pylist(),
                        deleted.column(TS).to_pylist(),
                        strict=True,
                    )
                ),
                keys=keys,
                sequence=schema.sequence,
                sequences=sequences,
                overwritten_ts=int(fields.get("overwritten_ts", 0)),
            )
            tables[schema.table_id] = TableCheckpoint(schema, state, objects, tombstones)
        if offset != len(body):
            raise CheckpointCorrupt("checkpoint has trailing bytes")
        requests = [(str(request), int(ts)) for request, ts in header["requests"]]
        pending = [(int(ts), str(name)) for ts, name in header["pending_deletions"]]
        counters = [(int(table), int(value)) for table, value in header.get("auto_increments", [])]
        kept_loads = header.get("loads", [])
        if not isinstance(kept_loads, list) or not all(isinstance(f, dict) for f in kept_loads):
            raise CheckpointCorrupt("checkpoint's loads are damaged")
        return Checkpoint(
            header["ts"], header["horizon_ts"], tables, requests, pending, counters, kept_loads
        )
    except CheckpointCorrupt:
        raise
    except (*wal_records.DAMAGED, wal_records.WalRecordError) as error:
        raise CheckpointCorrupt(f"checkpoint is damaged: {error}") from None


def restore(state: WriteState, checkpoint: Checkpoint) -> None:
    """The commit state a checkpoint holds, into an empty WriteState."""
    assert not state.tables and state.last_ts == 0
    state.last_ts = checkpoint.ts
    state.horizon_ts = checkpoint.horizon_ts
    by_ts: dict[tuple[int, int], list[int]] = {}
    for table_id, table in checkpoint.tables.items():
        state.tables[table_id] = table.state
        for row_id, ts in table.state.deleted.items():
            by_ts.setdefault((ts, table_id), []).append(row_id)
    for (ts, table_id), row_ids in sorted(by_ts.items()):
        state.remember_deletes(ts, table_id, row_ids)


def _keys_table(schema: TableSchema, state: TableWriteState) -> pa.Table:
    names = list(schema.key_columns) if state.replaces_on_key else []
    keys = list(state.keys.items()) if names else []
    arrays = [
        pa.array([key[position] for key, _ in keys], schema.column(name).type)
        for position, name in enumerate(names)
    ]
    arrays.append(pa.array([holder[0] for _, holder in keys], pa.int64()))
    arrays.append(pa.array([holder[1] for _, holder in keys], pa.int64()))
    table = pa.Table.from_arrays(arrays, names=[*names, ROW_ID, TS])
    if names and schema.sequence is not None:
        values = [state.sequences.get(key) for key, _ in keys]
        table = table.append_column(SEQUENCE, pa.array(values, schema.column(schema.sequence).type))
    return table


def _key_index(table: pa.Table, key_columns: tuple[str, ...]) -> tuple[dict, dict]:
    """The keys table read by position (a key column may be named as a column after it): by
    key, its holder (row id, ts) and, where the table has a sequence column, its value."""
    if not table.num_rows:
        return {}, {}
    width = len(key_columns)
    keys = list(zip(*(table.column(at).to_pylist() for at in range(width)), strict=True))
    holders = zip(table.column(width).to_pylist(), table.column(width + 1).to_pylist(), strict=True)
    sequences = {}
    if table.num_columns > width + 2:
        sequences = dict(zip(keys, table.column(width + 2).to_pylist(), strict=True))
    return dict(zip(keys, holders, strict=True)), sequences


def _deleted_table(state: TableWriteState) -> pa.Table:
    return pa.table(
        {
            ROW_ID: pa.array(list(state.deleted), pa.int64()),
            TS: pa.array(list(state.deleted.values()), pa.int64()),
        }
    )
