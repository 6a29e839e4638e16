"""A TN log record: one commit, the request id it answered, and the schemas of the tables it
wrote (so a replay knows each table's keys without asking the FE).

Layout: version (1 byte), header length (4 bytes, big endian), a JSON header, then per table an
Arrow IPC stream of its inserts and one of its deletes (empty when the header says so), then the
metadata of each object it added (be/storage/meta_codec). Version 2 added the tables' placement
(partitions, tablets, distribution) and the storage changes of flushes and merges; version 3
inserts carry the partition each row was placed in (PARTITION_ID) and their columns' ids (in the
fields' metadata), and schemas their columns' ids and backfills. Versions 1 and 2 are still read
(their rows are placed by the flush's schema and matched to columns by name). A bulk load's commit
carries the load's record (be/tn/loads.py) in its header's "load", which readers without it skip.
Version 4 marks a table's change that overwrites it ("overwrites": TableChanges.overwrites); a
record of version 3 or older overwrites nothing. A record whose header holds "clean_labels" (no
commit) lets go of the finished loads' labels of a database (CLEAN LABEL), so that a replay does.
"""

from __future__ import annotations

import json
import struct

import pyarrow as pa

from be.logtail.entries import Commit, TableChanges
from be.storage import meta_codec
from be.storage.errors import ObjectCorrupt
from be.table_schema import TableSchema
from be.wire import arrow_stream

# What decoding a damaged record (or checkpoint) raises from the libraries it uses.
DAMAGED = (struct.error, ValueError, KeyError, TypeError, pa.ArrowException, ObjectCorrupt)

VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
_CHECKPOINT_VERSIONS = (2, 3, 4)  # versions whose records may name a checkpoint
_HEAD = struct.Struct(">BI")


class WalRecordError(Exception):
    """A log record this TN cannot read."""


def encode(
    commit: Commit, request_id: str, schemas: dict[int, TableSchema], load: dict | None = None
) -> bytes:
    """load: a bulk load's record (be/tn/loads.py), kept in the header so that its label
    outlives a restart."""
    tables = []
    streams: list[bytes] = []
    for change in commit.changes:
        schema = schemas[change.table_id]
        sizes = []
        for batch in (change.inserts, change.deletes):
            data = arrow_stream(batch).to_pybytes() if batch is not None else b""
            sizes.append(len(data))
            streams.append(data)
        objects = []
        for meta in change.objects_added:
            data = meta_codec.encode_object(meta)
            objects.append(len(data))
            streams.append(data)
        tables.append(
            {
                **schema.fields(),
                "version": change.schema_version,
                "sizes": sizes,
                "objects": objects,
                "tombstones": [meta_codec.encode_tombstone(m) for m in change.tombstones_added],
                "removed": list(change.objects_removed),
                "flushed_ts": change.flushed_ts,
                "overwrites": change.overwrites,
            }
        )
    fields = {"ts": commit.commit_ts, "request": request_id, "tables": tables}
    if load is not None:
        fields["load"] = load
    header = json.dumps(fields, separators=(",", ":")).encode()
    return _HEAD.pack(VERSION, len(header)) + header + b"".join(streams)


def decode_load(record: bytes) -> dict | None:
    """The load record a commit's header carries, or None."""
    try:
        _, header_size = _HEAD.unpack_from(record)
        if b'"load":{' not in record[_HEAD.size : _HEAD.size + header_size]:
            return None
        header = json.loads(record[_HEAD.size : _HEAD.size + header_size])
    except (struct.error, ValueError) as error:
        raise WalRecordError(f"log record is damaged: {error}") from None
    load = header.get("load") if isinstance(header, dict) else None
    if load is not None and not isinstance(load, dict):
        raise WalRecordError("log record's load is damaged")
    return load


def encode_checkpoint_note(name: str, ts: int) -> bytes:
    """The record naming a checkpoint: the first the log keeps after truncating behind it."""
    header = json.dumps({"checkpoint": name, "ts": ts}, separators=(",", ":")).encode()
    return _HEAD.pack(VERSION, len(header)) + header


def encode_labels_cleaned(db: str, label: str | None) -> bytes:
    """The record of a CLEAN LABEL: the finished loads of db (of that label, if one) let go."""
    fields = {"clean_labels": {"db": db, "label": label}}
    header = json.dumps(fields, separators=(",", ":")).encode()
    return _HEAD.pack(VERSION, len(header)) + header


def labels_cleaned(record: bytes) -> tuple[str, str | None] | None:
    """The database and label (None: every one) a CLEAN LABEL's record names, or None if the
    record is another."""
    try:
        _, header_size = _HEAD.unpack_from(record)
        head = record[_HEAD.size : _HEAD.size + header_size]
        if b'"clean_labels"' not in head:
            return None
        cleaned = json.loads(head).get("clean_labels")
    except (struct.error, ValueError, AttributeError) as error:
        raise WalRecordError(f"log record is damaged: {error}") from None
    if not isinstance(cleaned, dict) or set(cleaned) != {"db", "label"}:
        raise WalRecordError("log record's cleaned labels are damaged")
    db, label = cleaned["db"], cleaned["label"]
    if not isinstance(db, str) or not (label is None or isinstance(label, str)):
        raise WalRecordError("log record's cleaned labels are damaged")
    return db, label


def checkpoint_named(record: bytes) -> str | None:
    """The checkpoint a record names, or None if it is a commit."""
    try:
        version, header_size = _HEAD.unpack_from(record)
        if (
            version not in _CHECKPOINT_VERSIONS
            or b'"checkpoint"' not in record[: _HEAD.size + header_size]
        ):
            return None
        header = json.loads(record[_HEAD.size : _HEAD.size + header_size])
    except (struct.error, ValueError) as error:
        raise WalRecordError(f"log record is damaged: {error}") from None
    name = header.get("checkpoint") if isinstance(header, dict) else None
    return name if isinstance(name, str) else None


def decode(record: bytes) -> tuple[Commit, str, dict[int, TableSchema]]:
    try:
        version, header_size = _HEAD.unpack_from(record)
        if version not in READABLE_VERSIONS:
            raise WalRecordError(f"log record version {version}; this TN reads {READABLE_VERSIONS}")
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
            objects = []
            for size in table.get("objects", ()):
                data = record[offset : offset + size]
                if len(data) != size:
                    raise WalRecordError("log record is truncated")
                objects.append(meta_codec.decode_object(data))
                offset += size
            changes.append(
                TableChanges(
                    table["id"],
                    table["version"],
                    *batches,
                    objects_added=tuple(objects),
                    tombstones_added=tuple(
                        meta_codec.decode_tombstone(fields)
                        for fields in table.get("tombstones", ())
                    ),
                    objects_removed=tuple(table.get("removed", ())),
                    flushed_ts=table.get("flushed_ts", 0),
                    overwrites=_overwrites(table, version),
                )
            )
            schemas[table["id"]] = TableSchema.from_fields(table)
        if offset != len(record):
            raise WalRecordError("log record has trailing bytes")
        return Commit(header["ts"], tuple(changes)), header["request"], schemas
    except DAMAGED as error:
        raise WalRecordError(f"log record is damaged: {error}") from None


def _overwrites(table: dict, version: int) -> bool:
    if version < 4:
        return False
    overwrites = table["overwrites"]
    if type(overwrites) is not bool:
        raise WalRecordError("log record's overwrites is damaged")
    return overwrites
