"""The logtail format: a commit, and the messages of the push stream, as self-contained bytes.

A message is a format-version byte, the CRC-32 of its body (four bytes, big-endian), and the body:
a msgpack array whose first element is the message's kind and whose other elements are its fields
in declaration order. A table's inserts or deletes travel as one Arrow IPC stream (schema, then its
record batches). The TN writes an encoded commit to its log and pushes the same bytes to CNs, so a
message carries everything needed to decode it, and decoding is strict: an unknown version, a bad
checksum, a wrong shape, trailing bytes or a limit passed is a `LogtailFormatError`.

A released version is never changed: a new field means a new version, and the decoder keeps reading
the old ones. Versions:

    1   the first release
    2   a table's changes carry the storage changes of flushes and merges: the objects added (each
        as be/storage/meta_codec bytes), the tombstones added, the objects removed, flushed_ts
    3   a table's changes end with `overwrites` (a load that replaces the table's rows)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import pyarrow as pa

from be.logtail.entries import ROW_ID, Commit, TableChanges
from be.logtail.errors import LogtailFormatError
from be.logtail.limits import LogtailLimits
from be.storage import meta_codec
from be.storage.errors import ObjectCorrupt
from be.wire import Envelope, FieldReader, arrow_stream

FORMAT_VERSION = 3
SUPPORTED_VERSIONS = frozenset({1, 2, 3})
MAX_OBJECTS_PER_CHANGE = 1 << 16  # objects (or tombstones, or removals) of one table's change

NONCE_BYTES = 32
PROOF_BYTES = 32  # HMAC-SHA256
MAX_NAME_CHARS = 255
MAX_ERROR_CHARS = 1000


class Kind(IntEnum):
    COMMIT = 1
    CHALLENGE = 2  # TN -> CN: prove you hold the token
    AUTH = 3  # CN -> TN: the proof, and a challenge back
    WELCOME = 4  # TN -> CN: the TN's proof
    SUBSCRIBE = 5
    UNSUBSCRIBE = 6
    SUBSCRIBED = 7  # the pull that answers a subscription
    REFUSED = 8  # a request the TN could not answer now


class RefusalCode(IntEnum):
    RESPONSE_TOO_LARGE = 1  # ask again after the TN's flush
    TOO_MANY_TABLES = 2


@dataclass(frozen=True, slots=True)
class Challenge:
    nonce: bytes


@dataclass(frozen=True, slots=True)
class Auth:
    name: str
    nonce: bytes
    proof: bytes


@dataclass(frozen=True, slots=True)
class Welcome:
    proof: bytes


@dataclass(frozen=True, slots=True)
class Subscribe:
    table_ids: tuple[int, ...]
    from_ts: int  # exclusive: the subscriber has everything of these tables up to it


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    table_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subscribed:
    """The changes of `table_ids` in (from, to_ts]; from is the subscription's from_ts, or
    `checkpoint_ts` when that was older than the TN's checkpoint (the CN reads the checkpoint
    first); 0 means no checkpoint was needed."""

    table_ids: tuple[int, ...]
    to_ts: int
    checkpoint_ts: int
    commits: tuple[Commit, ...]


@dataclass(frozen=True, slots=True)
class Refused:
    code: RefusalCode
    table_ids: tuple[int, ...]
    message: str


Message = Commit | Challenge | Auth | Welcome | Subscribe | Unsubscribe | Subscribed | Refused


# Encoding.


def _ipc(table: pa.Table | None, limits: LogtailLimits) -> memoryview | None:
    if table is None:
        return None
    if table.num_rows > limits.max_rows_per_batch:
        raise LogtailFormatError(f"{table.num_rows} rows over max_rows_per_batch")
    if table.num_columns > limits.max_columns_per_batch:
        raise LogtailFormatError(f"{table.num_columns} columns over max_columns_per_batch")
    return memoryview(arrow_stream(table))


def _commit_fields(commit: Commit, limits: LogtailLimits) -> list:
    if len(commit.changes) > limits.max_tables_per_commit:
        raise LogtailFormatError(f"{len(commit.changes)} tables over max_tables_per_commit")
    return [
        commit.commit_ts,
        [
            [
                change.table_id,
                change.schema_version,
                _ipc(change.inserts, limits),
                _ipc(change.deletes, limits),
                [meta_codec.encode_object(meta) for meta in change.objects_added],
                [meta_codec.encode_tombstone(meta) for meta in change.tombstones_added],
                list(change.objects_removed),
                change.flushed_ts,
                change.overwrites,
            ]
            for change in commit.changes
        ],
    ]


def _fields(message: Message, limits: LogtailLimits) -> list:
    match message:
        case Commit():
            return [Kind.COMMIT, *_commit_fields(message, limits)]
        case Challenge(nonce):
            return [Kind.CHALLENGE, nonce]
        case Auth(name, nonce, proof):
            return [Kind.AUTH, name, nonce, proof]
        case Welcome(proof):
            return [Kind.WELCOME, proof]
        case Subscribe(table_ids, from_ts):
            return [Kind.SUBSCRIBE, list(table_ids), from_ts]
        case Unsubscribe(table_ids):
            return [Kind.UNSUBSCRIBE, list(table_ids)]
        case Subscribed(table_ids, to_ts, checkpoint_ts, commits):
            if len(commits) > limits.max_commits_per_response:
                raise LogtailFormatError(f"{len(commits)} commits over max_commits_per_response")
            return [
                Kind.SUBSCRIBED,
                list(table_ids),
                to_ts,
                checkpoint_ts,
                [_commit_fields(commit, limits) for commit in commits],
            ]
        case Refused(code, table_ids, text):
            return [Kind.REFUSED, int(code), list(table_ids), text[:MAX_ERROR_CHARS]]
    raise AssertionError(f"not a logtail message: {message!r:.200}")


def encode(message: Message, limits: LogtailLimits) -> bytes:
    return _ENVELOPE.seal(_fields(message, limits), limits.max_message_bytes)


def encode_commit(commit: Commit, limits: LogtailLimits) -> bytes:
    """A commit as the TN writes it to its log and pushes it."""
    return encode(commit, limits)


# Decoding. Every helper checks the exact type of what msgpack gave back.


_ENVELOPE = Envelope("logtail", LogtailFormatError, FORMAT_VERSION, SUPPORTED_VERSIONS)
_fields_of = FieldReader(LogtailFormatError)
_shape, _int, _bytes, _str = (
    _fields_of.shape,
    _fields_of.integer,
    _fields_of.bytes,
    _fields_of.text,
)


def _table_ids(value: Any, limits: LogtailLimits) -> tuple[int, ...]:
    if type(value) is not tuple or len(value) > limits.max_tables_per_request:
        raise LogtailFormatError(f"malformed table ids: {value!r:.200}")
    ids = tuple(_int(table_id, "table id", 1) for table_id in value)
    if len(set(ids)) != len(ids):
        raise LogtailFormatError("a table id twice in one request")
    return ids


def _arrow(value: Any, limits: LogtailLimits) -> pa.Table | None:
    if value is None:
        return None
    data = _bytes(value, "Arrow stream")
    try:
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (pa.ArrowException, ValueError) as error:
        raise LogtailFormatError(f"malformed Arrow stream: {error}") from None
    if table.num_rows > limits.max_rows_per_batch:
        raise LogtailFormatError(f"{table.num_rows} rows over max_rows_per_batch")
    if not 0 < table.num_columns <= limits.max_columns_per_batch:
        raise LogtailFormatError(f"{table.num_columns} columns: not within max_columns_per_batch")
    if table.schema.names[0] != ROW_ID or table.schema.types[0] != pa.int64():
        raise LogtailFormatError("an Arrow stream whose first column is not the int64 row id")
    return table


def _commit(fields: Any, limits: LogtailLimits, version: int) -> Commit:
    commit_ts, changes = _shape(fields, 2, "commit")
    commit_ts = _int(commit_ts, "commit timestamp", 1)
    if type(changes) is not tuple or len(changes) > limits.max_tables_per_commit:
        raise LogtailFormatError(f"malformed changes of commit {commit_ts}")
    decoded = []
    for change in changes:
        if version == 1:
            table_id, schema_version, inserts, deletes = _shape(change, 4, "table changes")
            storage: dict = {}
        elif version == 2:
            table_id, schema_version, inserts, deletes, *rest = _shape(change, 8, "table changes")
            storage = _storage_changes(*rest)
        else:
            table_id, schema_version, inserts, deletes, *rest, overwrites = _shape(
                change, 9, "table changes"
            )
            storage = _storage_changes(*rest)
            if type(overwrites) is not bool:
                raise LogtailFormatError(f"malformed overwrites: {overwrites!r:.40}")
            if overwrites and storage["flushed_ts"]:
                raise LogtailFormatError("an overwrite that is a flush")
            storage["overwrites"] = overwrites
        table_id = _int(table_id, "table id", 1)
        if any(meta.table_id != table_id for meta in storage.get("objects_added", ())):
            raise LogtailFormatError("an object of another table")
        if any(meta.table_id != table_id for meta in storage.get("tombstones_added", ())):
            raise LogtailFormatError("a tombstone of another table")
        decoded.append(
            TableChanges(
                table_id,
                _int(schema_version, "schema version", 1),
                _arrow(inserts, limits),
                _arrow(deletes, limits),
                **storage,
            )
        )
    if len({change.table_id for change in decoded}) != len(decoded):
        raise LogtailFormatError(f"a table twice in commit {commit_ts}")
    return Commit(commit_ts, tuple(decoded))


def _storage_changes(objects: Any, tombstones: Any, removed: Any, flushed_ts: Any) -> dict:
    for value, what in ((objects, "objects"), (tombstones, "tombstones"), (removed, "removals")):
        if type(value) is not tuple or len(value) > MAX_OBJECTS_PER_CHANGE:
            raise LogtailFormatError(f"malformed {what}: {value!r:.200}")
    try:
        return {
            "objects_added": tuple(
                meta_codec.decode_object(_bytes(data, "object metadata")) for data in objects
            ),
            "tombstones_added": tuple(meta_codec.decode_tombstone(item) for item in tombstones),
            "objects_removed": tuple(_str(name, "object name", 1024) for name in removed),
            "flushed_ts": _int(flushed_ts, "flush timestamp"),
        }
    except ObjectCorrupt as error:
        raise LogtailFormatError(f"malformed storage change: {error}") from None


def _message(kind: Kind, fields: tuple, limits: LogtailLimits, version: int) -> Message:
    match kind:
        case Kind.COMMIT:
            return _commit(fields, limits, version)
        case Kind.CHALLENGE:
            (nonce,) = _shape(fields, 1, "challenge")
            return Challenge(_bytes(nonce, "nonce", NONCE_BYTES))
        case Kind.AUTH:
            name, nonce, proof = _shape(fields, 3, "auth")
            return Auth(
                _str(name, "name", MAX_NAME_CHARS),
                _bytes(nonce, "nonce", NONCE_BYTES),
                _bytes(proof, "proof", PROOF_BYTES),
            )
        case Kind.WELCOME:
            (proof,) = _shape(fields, 1, "welcome")
            return Welcome(_bytes(proof, "proof", PROOF_BYTES))
        case Kind.SUBSCRIBE:
            table_ids, from_ts = _shape(fields, 2, "subscribe")
            return Subscribe(_table_ids(table_ids, limits), _int(from_ts, "from timestamp"))
        case Kind.UNSUBSCRIBE:
            (table_ids,) = _shape(fields, 1, "unsubscribe")
            return Unsubscribe(_table_ids(table_ids, limits))
        case Kind.SUBSCRIBED:
            table_ids, to_ts, checkpoint_ts, commits = _shape(fields, 4, "subscribed")
            if type(commits) is not tuple or len(commits) > limits.max_commits_per_response:
                raise LogtailFormatError("malformed commits of a subscription")
            decoded = tuple(_commit(commit, limits, version) for commit in commits)
            to_ts = _int(to_ts, "to timestamp")
            checkpoint_ts = _int(checkpoint_ts, "checkpoint timestamp")
            timestamps = [commit.commit_ts for commit in decoded]
            if timestamps != sorted(set(timestamps)) or (timestamps and timestamps[-1] > to_ts):
                raise LogtailFormatError("a subscription's commits out of order")
            if timestamps and timestamps[0] <= checkpoint_ts:
                raise LogtailFormatError("a subscription's commit at or below its checkpoint")
            return Subscribed(_table_ids(table_ids, limits), to_ts, checkpoint_ts, decoded)
        case Kind.REFUSED:
            code, table_ids, text = _shape(fields, 3, "refusal")
            try:
                code = RefusalCode(_int(code, "refusal code"))
            except ValueError:
                raise LogtailFormatError(f"unknown refusal code {code}") from None
            return Refused(code, _table_ids(table_ids, limits), _str(text, "text", MAX_ERROR_CHARS))
    raise AssertionError(kind)


def decode(data: bytes | memoryview, limits: LogtailLimits) -> Message:
    version, fields = _ENVELOPE.open(data, limits.max_message_bytes)
    try:
        kind = Kind(fields[0])
    except ValueError:
        raise LogtailFormatError(f"unknown logtail message kind {fields[0]}") from None
    return _message(kind, fields[1:], limits, version)


def decode_commit(data: bytes | memoryview, limits: LogtailLimits) -> Commit:
    """A commit back from the TN's log or a push."""
    message = decode(data, limits)
    if type(message) is not Commit:
        raise LogtailFormatError(f"expected a commit, got {type(message).__name__}")
    return message
