"""A TN log record: one commit, the request id it answered, and the schemas of the tables it
wrote (so a replay knows each table's keys without asking the FE).

Layout: version (1 byte), header length (4 bytes, big endian), a JSON header, then per table an
Arrow IPC stream of its inserts and one of its deletes (empty when the header says so).
"""

from __future__ import annotations

import json
import struct

import pyarrow as pa

from be.logtail.entries import Commit, TableChanges
from be.table_schema import ColumnSchema, TableSchema
from metadata.records import KeyModel

VERSION = 1
_HEAD = struct.Struct(">BI")


class WalRecordError(Exception):
    """A log record this TN cannot read."""


def encode(commit: Commit, request_id: str, schemas: dict[int, TableSchema]) -> bytes:
    tables = []
    streams: list[bytes] = []
    for change in commit.changes:
        schema = schemas[change.table_id]
        sizes = []
        for batch in (change.inserts, change.deletes):
            data = _ipc(batch) if batch is not None else b""
            sizes.append(len(data))
            streams.append(data)
        tables.append(
            {
                "id": change.table_id,
                "version": change.schema_version,
                "key_model": schema.key_model.value,
                "keys": list(schema.key_columns),
                "auto_increment": schema.auto_increment,
                "schema": _ipc_schema(schema),
                "sizes": sizes,
            }
        )
    header = json.dumps(
        {"ts": commit.commit_ts, "request": request_id, "tables": tables}, separators=(",", ":")
    ).encode()
    return _HEAD.pack(VERSION, len(header)) + header + b"".join(streams)


def decode(record: bytes) -> tuple[Commit, str, dict[int, TableSchema]]:
    try:
        version, header_size = _HEAD.unpack_from(record)
        if version != VERSION:
            raise WalRecordError(f"log record version {version}; this TN reads {VERSION}")
        offset = _HEAD.size + header_size
        header = json.loads(record[_HEAD.size : offset])
        changes = []
        schemas = {}
        for table in header["tables"]:
            batches = []
            for size in table["sizes"]:
                data = record[offset : offset + size]
                if len(data) != size:
                    raise WalRecordError("log record is truncated")
                batches.append(pa.ipc.open_stream(data).read_all() if size else None)
                offset += size
            changes.append(TableChanges(table["id"], table["version"], *batches))
            schemas[table["id"]] = _schema(table)
        if offset != len(record):
            raise WalRecordError("log record has trailing bytes")
        return Commit(header["ts"], tuple(changes)), header["request"], schemas
    except (struct.error, ValueError, KeyError, TypeError, pa.ArrowException) as error:
        raise WalRecordError(f"log record is damaged: {error}") from None


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _ipc_schema(schema: TableSchema) -> str:
    fields = [
        pa.field(
            column.name,
            column.type,
            column.nullable,
            metadata={"aggregation": column.aggregation} if column.aggregation else None,
        )
        for column in schema.columns
    ]
    return pa.schema(fields).serialize().to_pybytes().hex()


def _schema(table: dict) -> TableSchema:
    arrow = pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(table["schema"])))
    columns = tuple(
        ColumnSchema(
            field.name,
            field.type,
            field.nullable,
            (field.metadata or {}).get(b"aggregation", b"").decode() or None,
        )
        for field in arrow
    )
    return TableSchema(
        table["id"],
        table["version"],
        columns,
        KeyModel(table["key_model"]),
        tuple(table["keys"]),
        table.get("auto_increment"),  # absent from records written before it existed
    )
