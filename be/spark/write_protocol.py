"""What a Spark write (be/spark/writer.py) and an FE (fe/cluster/spark_writes.py) say to each
other over HTTP. No pyspark here: the FE imports it.

  POST /api/{db}/{table}/_spark_write   begin a load (basic auth: an account with LOAD on the
                                        table); JSON {"overwrite": bool, "label": str}
                                        -> JSON Begun (409: Label Already Exists)
  POST /api/_spark_write/row_ids        JSON {"count": n} -> {"first": id}
  POST /api/_spark_write/commit         the objects (ObjectList bytes) -> {"commit_ts": ts}
  POST /api/_spark_write/abort          the objects' names (ObjectList bytes) -> {}

The last three carry the token the FE signed at the beginning (header X-Quire-Load-Token, HMAC
with the cluster token, which never leaves the FE): it names the user, the table, its schema and
the load's transaction. A refusal is JSON {"code", "msg"} with 400, 401, 403, 404 or 503.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from be.storage.blocks import ObjectMeta
from be.storage.errors import ObjectCorrupt
from be.storage.meta_codec import decode_object, encode_object
from be.table_schema import TableSchema
from be.wire import Envelope

BEGIN_PATH = "/api/{db}/{table}/_spark_write"
BEGIN_SUFFIX = "/_spark_write"
ROW_IDS_PATH = "/api/_spark_write/row_ids"
COMMIT_PATH = "/api/_spark_write/commit"
ABORT_PATH = "/api/_spark_write/abort"
PARTITIONS_PATH = "/api/_spark_write/partitions"  # auto partitions for rows: the grown schema
TOKEN_HEADER = "X-Quire-Load-Token"
CONTENT_TYPE = "application/x-quire-objects"

VERSION = 1
COMMIT = 1
ABORT = 2
MAX_OBJECTS = 1 << 16  # objects one write commits
MAX_NAME_CHARS = 512
MAX_MESSAGE_BYTES = 256 << 20  # an ObjectList (metadata only: a few KB per object)
MAX_JSON_BYTES = 1 << 20  # a begin answer (it carries the schema)


class WriteProtocolError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


_ENVELOPE = Envelope("spark write", WriteProtocolError, VERSION, (VERSION,))


def is_spark_write(path: str) -> bool:
    return path.startswith("/api/") and (
        path.endswith(BEGIN_SUFFIX) or path.startswith("/api/_spark_write/")
    )


@dataclass(frozen=True)
class Begun:
    """The FE's answer to a begin: what every task of the write needs."""

    txn_id: int
    schema: TableSchema
    location: str  # the object store's folder, as a read plan names it
    token: str
    lengths: dict[str, int]  # the most characters of each CHAR(n) / VARCHAR(n) column
    label: str = ""  # the load's, as SHOW LOAD lists it
    # each column's default as text, for a frame that lacks the column (none: its backfill)
    defaults: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "txn_id": self.txn_id,
                "schema": self.schema.fields(),
                "location": self.location,
                "token": self.token,
                "lengths": self.lengths,
                "label": self.label,
                "defaults": self.defaults,
            }
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Begun:
        try:
            fields = json.loads(data)
            begun = cls(
                fields["txn_id"],
                TableSchema.from_fields(fields["schema"]),
                fields["location"],
                fields["token"],
                dict(fields["lengths"]),
                str(fields.get("label", "")),
                {str(name): str(value) for name, value in fields.get("defaults", {}).items()},
            )
        except (ValueError, KeyError, TypeError, AssertionError) as error:
            raise WriteProtocolError(
                f"the FE's answer to a write's begin is damaged: {error}"
            ) from None
        if type(begun.txn_id) is not int or begun.txn_id <= 0 or not begun.token:
            raise WriteProtocolError("the FE's answer to a write's begin has no load")
        return begun


def encode_commit(objects: tuple[ObjectMeta, ...]) -> bytes:
    if len(objects) > MAX_OBJECTS:
        raise WriteProtocolError(f"a write commits at most {MAX_OBJECTS} objects")
    return _ENVELOPE.seal([COMMIT, [encode_object(meta) for meta in objects]], MAX_MESSAGE_BYTES)


def decode_commit(data: bytes) -> tuple[ObjectMeta, ...]:
    listed = _opened(data, COMMIT)
    try:
        return tuple(decode_object(_bytes(item)) for item in listed)
    except ObjectCorrupt as error:
        raise WriteProtocolError(f"a write's object metadata is damaged: {error}") from None


def encode_abort(names: tuple[str, ...]) -> bytes:
    if len(names) > MAX_OBJECTS:
        raise WriteProtocolError(f"a write aborts at most {MAX_OBJECTS} objects")
    return _ENVELOPE.seal([ABORT, list(names)], MAX_MESSAGE_BYTES)


def decode_abort(data: bytes) -> tuple[str, ...]:
    listed = _opened(data, ABORT)
    if not all(type(name) is str and 0 < len(name) <= MAX_NAME_CHARS for name in listed):
        raise WriteProtocolError("an abort names its objects by short texts")
    return listed


def _opened(data: bytes, kind: int) -> tuple:
    _, fields = _ENVELOPE.open(data, MAX_MESSAGE_BYTES)
    if fields[0] != kind or len(fields) != 2:
        raise WriteProtocolError(
            f"not the message expected: kind {fields[0]}, {len(fields)} fields"
        )
    listed = fields[1]
    if type(listed) is not tuple or len(listed) > MAX_OBJECTS:
        raise WriteProtocolError(f"a write names at most {MAX_OBJECTS} objects")
    return listed


def _bytes(value) -> bytes:
    if type(value) is not bytes:
        raise WriteProtocolError("an object's metadata is not bytes")
    return value
