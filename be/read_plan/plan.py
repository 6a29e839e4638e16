"""A read plan: one table as of a snapshot timestamp, for a reader that reads the objects itself.

It holds the table's schema (as the reader reads it: maybe a few of its columns), the timestamp,
where the objects live (the store's location), the objects a snapshot at that timestamp reads
(with their blocks' row counts, row id and commit timestamp ranges and per-column min/max), the
tombstones that may delete rows of them at or before it, the row ids deleted at or before it that
no tombstone holds yet, and the rows not yet flushed that are visible at it (ROW_ID first).

A reader of an object keeps its rows committed at or before ts (an object may hold later ones),
drops the row ids its tablet's tombstones give with a delete timestamp at or before ts and those
in `deleted`, and reads the tail as it is. What the CN does for its own snapshots
(be/cn/table_state.py) chose the parts, so both read the same rows.

As bytes: the node service's envelope (a version byte, a CRC-32, a msgpack body) holding the
schema's fields as JSON, the objects' metadata as be/storage/meta_codec makes it, and the tail
and deletes as Arrow IPC streams. Decoding is strict, as the other formats are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa

from be.logtail.entries import ROW_ID
from be.read_plan.errors import ReadPlanFormatError
from be.storage.blocks import ObjectMeta
from be.storage.errors import ObjectCorrupt
from be.storage.meta_codec import decode_object, decode_tombstone, encode_object, encode_tombstone
from be.storage.tombstones import TombstoneMeta
from be.table_schema import TableSchema
from be.wire import Envelope, arrow_stream

VERSION = 1
KIND = 1
MAX_PLAN_BYTES = 1 << 30  # a plan's bytes (its tail is most of them)
MAX_OBJECTS = 1 << 20  # objects or tombstones in one plan
MAX_LOCATION_CHARS = 4096

_ENVELOPE = Envelope("read plan", ReadPlanFormatError, VERSION, (VERSION,))


@dataclass(frozen=True, slots=True)
class ReadPlan:
    schema: TableSchema
    ts: int
    objects: tuple[ObjectMeta, ...]
    tombstones: tuple[TombstoneMeta, ...]
    deleted: pa.Array  # int64 row ids deleted at or before ts, not in a tombstone object
    tail: pa.Table  # ROW_ID, then the schema's columns: unflushed rows visible at ts
    location: str = ""  # the object store's folder: a local path or s3://bucket/prefix/objects

    def __post_init__(self) -> None:
        assert self.ts > 0, self.ts
        assert self.deleted.type == pa.int64(), self.deleted.type
        assert self.tail.schema.names == [ROW_ID, *self.schema.names], self.tail.schema.names
        assert all(meta.table_id == self.schema.table_id for meta in self.objects)
        assert all(meta.table_id == self.schema.table_id for meta in self.tombstones)

    @property
    def rows(self) -> int:
        """Rows of the objects and the tail, before deletes and later commits are left out."""
        return sum(meta.rows for meta in self.objects) + self.tail.num_rows


def encode(plan: ReadPlan, max_bytes: int = MAX_PLAN_BYTES) -> bytes:
    if len(plan.objects) > MAX_OBJECTS or len(plan.tombstones) > MAX_OBJECTS:
        raise ReadPlanFormatError(f"a plan holds at most {MAX_OBJECTS} objects and tombstones")
    fields = [
        KIND,
        json.dumps(plan.schema.fields()),
        plan.ts,
        plan.location,
        [encode_object(meta) for meta in plan.objects],
        [encode_tombstone(meta) for meta in plan.tombstones],
        arrow_stream(pa.table({ROW_ID: plan.deleted})).to_pybytes(),
        arrow_stream(plan.tail).to_pybytes(),
    ]
    return _ENVELOPE.seal(fields, max_bytes)


def decode(data: bytes | memoryview, max_bytes: int = MAX_PLAN_BYTES) -> ReadPlan:
    _, fields = _ENVELOPE.open(data, max_bytes)
    if fields[0] != KIND or len(fields) != 8:
        raise ReadPlanFormatError(f"not a read plan: kind {fields[0]}, {len(fields)} fields")
    _, schema, ts, location, objects, tombstones, deleted, tail = fields
    if type(ts) is not int or ts <= 0:
        raise ReadPlanFormatError(f"a read plan's timestamp is {ts!r:.40}")
    if type(location) is not str or len(location) > MAX_LOCATION_CHARS:
        raise ReadPlanFormatError("a read plan's location is not a short text")
    for listed in (objects, tombstones):
        if type(listed) is not tuple or len(listed) > MAX_OBJECTS:
            raise ReadPlanFormatError("a read plan's objects are not a list within its limit")
    try:
        table_schema = TableSchema.from_fields(json.loads(schema))
        deleted_rows = _table(deleted)
        tail_rows = _table(tail)
        return ReadPlan(
            table_schema,
            ts,
            tuple(decode_object(_bytes(item)) for item in objects),
            tuple(decode_tombstone(item) for item in tombstones),
            deleted_rows.column(ROW_ID).combine_chunks(),
            tail_rows,
            location,
        )
    except ReadPlanFormatError:
        raise
    except (ObjectCorrupt, pa.ArrowException, KeyError, TypeError, ValueError) as error:
        raise ReadPlanFormatError(f"a damaged read plan: {error}") from None
    except AssertionError as error:
        raise ReadPlanFormatError(f"a read plan breaks its invariants: {error}") from None


def _bytes(value) -> bytes:
    if type(value) is not bytes:
        raise ReadPlanFormatError("a read plan's part is not bytes")
    return value


def _table(value) -> pa.Table:
    return pa.ipc.open_stream(_bytes(value)).read_all()
