"""The node service's messages as self-contained bytes.

A message is a format-version byte, the CRC-32 of its body (four bytes, big-endian), and the body:
a msgpack array whose first element is the message's kind and whose other elements are its fields
in declaration order. Tables travel as Arrow IPC streams, a table's schema (its id, version, key
model and keys in the schema's metadata, a column's aggregation in the field's) as an Arrow IPC
schema. Decoding is strict: an unknown version, a bad checksum, a wrong shape, trailing bytes or a
limit passed is a `ServiceFormatError`.

A released version is never changed: a new field means a new version, and the decoder keeps reading
the old ones. Versions:

    1   the first release
    2   a table schema carries its placement (partitions, tablets, distribution)
    3   a snapshot request carries the read's bounds and columns; AUTO_INCREMENT values and tablet statistics
        are asked of the TN; the FE tells the TN which tables and partitions may still be read
    4   a snapshot request (and a query's table) carries the partitions the read needs (partition
        pruning); a CN runs a query (QueryRequest) and streams its result back (ResultPart...,
        ResultEnd); a Failure carries its kind's arguments, so the kind is made again as raised;
        a node's status carries its statistics (name, count pairs: a CN's kept and cached bytes)
    5   bulk loads: BeginLoad, ReserveRowIds (answered with LoadNumber), CommitLoad (objects
        written elsewhere, as their metadata; answered with Committed) and AbortLoad
    6   the TN answers a read plan request with a read plan's bytes (be/read_plan)
    7   CommitLoad ends with overwrite (the load replaces every row of the table)
    8   BeginLoad ends with the load's claim (a label the TN keeps its record under) or nil
    9   tablet statistics are asked for many tables at once (TabletStatsRequest carries their
        schemas, TabletStats answers each table's tablets)
    10  a commit request ends with its write set's claim (an INSERT or transaction WITH LABEL) or nil
    11  a tablet's statistics end with how many objects (data and tombstones) it has; the FE asks
        the TN to compact a table's tablets now (CompactRequest, ADMIN COMPACT TABLE)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

import pyarrow as pa

from be.cn.bounds import MAX_BOUNDS, ColumnBound
from be.logtail.entries import ROW_ID
from be.logtail.format import MAX_OBJECTS_PER_CHANGE
from be.service.errors import ServiceFormatError
from be.service.limits import ServiceLimits
from be.storage import meta_codec
from be.storage.blocks import ObjectMeta
from be.storage.errors import ObjectCorrupt
from be.table_schema import TableSchema
from be.tn.loads import MAX_LABEL_CHARS, SOURCES, LoadClaim
from be.tn.write_set import TableWrite, WriteSet
from be.wire import Envelope, FieldReader, arrow_stream

FORMAT_VERSION = 11
MAX_STATS = 64  # statistics in a node's status
SUPPORTED_VERSIONS = (FORMAT_VERSION,)  # nodes and FEs of one build talk: no older version is read

NONCE_BYTES = 32
PROOF_BYTES = 32
MAX_NAME_CHARS = 255
MAX_TEXT_CHARS = 2000
MAX_REQUEST_ID_CHARS = 64
MAX_COLUMN_NAME_CHARS = 1 << 16  # a result column's name: the projection's text, as written
MAX_FAILURE_ARGUMENTS = 8


class Role(StrEnum):
    TN = "TN"
    CN = "CN"


class Kind(IntEnum):
    CHALLENGE = 1
    AUTH = 2
    WELCOME = 3
    STATUS_REQUEST = 4
    STATUS = 5
    COMMIT_REQUEST = 6
    COMMITTED = 7
    READ_TS_REQUEST = 8
    READ_TS = 9
    SNAPSHOT_REQUEST = 10
    ROWS = 11
    FAILURE = 12
    TAKE_AUTO_INCREMENT = 13
    OBSERVE_AUTO_INCREMENT = 14
    AUTO_INCREMENT = 15
    TABLET_STATS_REQUEST = 16
    TABLET_STATS = 17
    REACHABLE = 18
    ACCEPTED = 19
    QUERY_REQUEST = 20
    RESULT_PART = 21
    RESULT_END = 22
    BEGIN_LOAD = 23
    RESERVE_ROW_IDS = 24
    LOAD_NUMBER = 25
    COMMIT_LOAD = 26
    ABORT_LOAD = 27
    READ_PLAN_REQUEST = 28
    READ_PLAN = 29
    COMPACT_REQUEST = 30


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
    role: Role
    name: str


@dataclass(frozen=True, slots=True)
class StatusRequest:
    pass


@dataclass(frozen=True, slots=True)
class Status:
    role: Role
    name: str
    watermark: int  # TN: the newest timestamp published; CN: its subscriber's watermark
    tables: tuple[int, ...]  # CN: the tables it is subscribed to
    started_ms: int
    stats: tuple[tuple[str, int], ...] = ()  # CN: be/cn/node.py's stats


@dataclass(frozen=True, slots=True)
class CommitRequest:
    write_set: WriteSet


@dataclass(frozen=True, slots=True)
class Committed:
    commit_ts: int


@dataclass(frozen=True, slots=True)
class ReadTsRequest:
    pass


@dataclass(frozen=True, slots=True)
class ReadTs:
    ts: int


@dataclass(frozen=True, slots=True)
class SnapshotRequest:
    schema: TableSchema
    ts: int
    row_ids: bool
    timeout_ms: int
    bounds: tuple[ColumnBound, ...] = ()
    columns: tuple[str, ...] | None = None  # lower-case names a read needs; None: every column
    # The ids of the schema's partitions a read needs (a partition pruning); None: every one
    partitions: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReadPlanRequest:
    schema: TableSchema
    ts: int
    timeout_ms: int
    columns: tuple[str, ...] | None = None  # lower-case names a read needs; None: every column


@dataclass(frozen=True, slots=True)
class ReadPlanReply:
    plan: bytes  # be/read_plan's encoding


@dataclass(frozen=True, slots=True)
class Rows:
    table: pa.Table


@dataclass(frozen=True, slots=True)
class TakeAutoIncrement:
    table_id: int
    count: int


@dataclass(frozen=True, slots=True)
class ObserveAutoIncrement:
    table_id: int
    given: int  # a value a statement wrote into the column: later values are above it


@dataclass(frozen=True, slots=True)
class AutoIncrement:
    first: int  # TakeAutoIncrement: the first of its count values; ObserveAutoIncrement: given


@dataclass(frozen=True, slots=True)
class TabletStatsRequest:
    schemas: tuple[TableSchema, ...]  # distinct tables, at most max_stats_tables


@dataclass(frozen=True, slots=True)
class TabletStats:
    # (table id, its tablets' (tablet id, rows, bytes, objects)) per table asked, in the request's
    # order
    tables: tuple[tuple[int, tuple[tuple[int, int, int, int], ...]], ...]


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """Flush the table's rows and merge each of its tablets' objects now, of the partitions
    named (none: all; answered Accepted at once: the work is the TN's, in the background)."""

    table_id: int
    partition_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Reachable:
    """Of what was committed at or before as_of_ts, only these partitions may be read again."""

    as_of_ts: int
    tables: tuple[tuple[int, tuple[int, ...]], ...]  # (table id, its partition ids)


@dataclass(frozen=True, slots=True)
class Accepted:
    pass


@dataclass(frozen=True, slots=True)
class BeginLoad:
    """A bulk load of the table begins: answered with its transaction id (a LoadNumber); with
    a claim, the TN keeps its record under the claim's label."""

    schema: TableSchema
    claim: LoadClaim | None = None


@dataclass(frozen=True, slots=True)
class ReserveRowIds:
    """count row ids for the load's rows: answered with the first (a LoadNumber)."""

    txn_id: int
    count: int


@dataclass(frozen=True, slots=True)
class LoadNumber:
    value: int


@dataclass(frozen=True, slots=True)
class CommitLoad:
    """The load's objects, committed at once: answered with Committed."""

    txn_id: int
    schema: TableSchema
    objects: tuple[ObjectMeta, ...]
    overwrite: bool = False


@dataclass(frozen=True, slots=True)
class AbortLoad:
    """The load will not commit: the TN removes the objects named (those of this load only)."""

    txn_id: int
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueryTable:
    """A table a query reads, by the name its SQL gives it: the snapshot request's fields."""

    name: str
    schema: TableSchema
    ts: int
    row_ids: bool
    bounds: tuple[ColumnBound, ...] = ()
    columns: tuple[str, ...] | None = None
    partitions: tuple[int, ...] | None = None  # as a snapshot request's


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """Engine SQL (DuckDB's dialect, checked by the FE) over table snapshots the CN builds and
    tables the FE gives (long IN lists, information_schema)."""

    sql: str
    tables: tuple[QueryTable, ...]
    given: tuple[tuple[str, pa.Table], ...]
    read_wait_ms: int  # how long the snapshots may wait for the CN's watermark
    timeout_ms: int  # the query's time, snapshots included
    memory_limit_bytes: int


@dataclass(frozen=True, slots=True)
class ResultPart:
    rows: pa.Table  # some of the result's rows, in order


@dataclass(frozen=True, slots=True)
class ResultEnd:
    columns: tuple[tuple[str, str], ...]  # (name, the engine's type name) per column
    row_count: int  # of all the parts before it


@dataclass(frozen=True, slots=True)
class Failure:
    kind: str  # the error class's name: the client maps it back to its own kinds
    message: str
    arguments: tuple[str | int | float | bool | None, ...] = ()  # what the kind is made from


Message = (
    Challenge
    | Auth
    | Welcome
    | StatusRequest
    | Status
    | CommitRequest
    | Committed
    | ReadTsRequest
    | ReadTs
    | SnapshotRequest
    | Rows
    | ReadPlanRequest
    | ReadPlanReply
    | TakeAutoIncrement
    | ObserveAutoIncrement
    | AutoIncrement
    | TabletStatsRequest
    | TabletStats
    | Reachable
    | CompactRequest
    | Accepted
    | QueryRequest
    | ResultPart
    | ResultEnd
    | BeginLoad
    | ReserveRowIds
    | LoadNumber
    | CommitLoad
    | AbortLoad
    | Failure
)

STREAMED = (ResultPart,)  # replies that more replies to the same request follow


# Schemas and tables.


MAX_KEPT_SCHEMAS = 1024  # schemas kept decoded (a node is asked of the same few again and again)
_DECODED: dict[bytes, TableSchema] = {}


def encode_schema(schema: TableSchema) -> bytes:
    return json.dumps(schema.fields(), separators=(",", ":")).encode()


def decode_schema(data: Any, limits: ServiceLimits) -> TableSchema:
    """The schema data encodes, checked (one decoded before and within limits is kept)."""
    kept = _DECODED.get(data) if type(data) is bytes else None
    if kept is not None and len(kept.columns) <= limits.max_columns:
        return kept
    schema = _decoded_schema(data, limits)
    if type(data) is bytes:
        if len(_DECODED) >= MAX_KEPT_SCHEMAS:
            _DECODED.clear()
        _DECODED[data] = schema
    return schema


def _decoded_schema(data: Any, limits: ServiceLimits) -> TableSchema:
    try:
        fields = json.loads(_bytes(data, "schema"))
        if type(fields) is not dict:
            raise ServiceFormatError("malformed table schema")
        schema = TableSchema.from_fields(fields)
    except ServiceFormatError:
        raise
    except (
        pa.ArrowException,
        KeyError,
        ValueError,
        TypeError,
        AssertionError,
        UnicodeDecodeError,
    ) as error:
        raise ServiceFormatError(f"malformed table schema: {error}") from None
    if len(schema.columns) > limits.max_columns:
        raise ServiceFormatError(f"{len(schema.columns)} columns over max_columns")
    if schema.table_id <= 0 or schema.schema_version <= 0:
        raise ServiceFormatError("malformed table schema: ids start at 1")
    return schema


def _within_limits(table: pa.Table, limits: ServiceLimits) -> pa.Table:
    if table.num_rows > limits.max_rows or table.num_columns > limits.max_columns:
        raise ServiceFormatError(f"a {table.num_rows}x{table.num_columns} table is over the limits")
    return table


def _ipc(table: pa.Table | None, limits: ServiceLimits) -> bytes | None:
    if table is None:
        return None
    _within_limits(table, limits)
    return arrow_stream(table).to_pybytes()


def _table(value: Any, limits: ServiceLimits) -> pa.Table | None:
    if value is None:
        return None
    try:
        table = pa.ipc.open_stream(pa.py_buffer(_bytes(value, "Arrow stream"))).read_all()
    except (pa.ArrowException, ValueError) as error:
        raise ServiceFormatError(f"malformed Arrow stream: {error}") from None
    return _within_limits(table, limits)


def _rows(value: Any, limits: ServiceLimits, what: str) -> pa.Table:
    """A table that must be there."""
    table = _table(value, limits)
    if table is None:
        raise ServiceFormatError(f"{what} without rows")
    return table


def _table_write(value: Any, limits: ServiceLimits) -> TableWrite:
    schema, inserts, deletes = _shape(value, 3, "table write")
    schema = decode_schema(schema, limits)
    inserts, deletes = _table(inserts, limits), _table(deletes, limits)
    if inserts is not None and tuple(inserts.schema.names) != schema.names:
        raise ServiceFormatError(f"inserts of table {schema.table_id} not in its columns")
    if deletes is not None and (
        not deletes.num_columns
        or deletes.schema.names[0] != ROW_ID
        or deletes.schema.types[0] != pa.int64()
    ):
        raise ServiceFormatError(f"deletes of table {schema.table_id} without row ids first")
    return TableWrite(schema, inserts, deletes)


# Encoding.


def _fields(message: Message, limits: ServiceLimits) -> list:
    match message:
        case Challenge(nonce):
            return [Kind.CHALLENGE, nonce]
        case Auth(name, nonce, proof):
            return [Kind.AUTH, name, nonce, proof]
        case Welcome(proof, role, name):
            return [Kind.WELCOME, proof, role.value, name]
        case StatusRequest():
            return [Kind.STATUS_REQUEST]
        case Status(role, name, watermark, tables, started_ms, stats):
            named = [[stat, count] for stat, count in stats]
            return [Kind.STATUS, role.value, name, watermark, list(tables), started_ms, named]
        case CommitRequest(write_set):
            writes = [
                [encode_schema(w.schema), _ipc(w.inserts, limits), _ipc(w.deletes, limits)]
                for w in write_set.writes
            ]
            claimed = _claim_fields(write_set.claim)
            return [
                Kind.COMMIT_REQUEST,
                write_set.snapshot_ts,
                write_set.request_id,
                writes,
                claimed,
            ]
        case Committed(commit_ts):
            return [Kind.COMMITTED, commit_ts]
        case ReadTsRequest():
            return [Kind.READ_TS_REQUEST]
        case ReadTs(ts):
            return [Kind.READ_TS, ts]
        case SnapshotRequest(schema, ts, row_ids, timeout_ms, bounds, columns, partitions):
            read = _read_fields(schema, ts, row_ids, bounds, columns, partitions)
            return [Kind.SNAPSHOT_REQUEST, *read[:3], timeout_ms, *read[3:]]
        case Rows(table):
            return [Kind.ROWS, _ipc(table, limits)]
        case ReadPlanRequest(schema, ts, timeout_ms, columns):
            named = None if columns is None else list(columns)
            return [Kind.READ_PLAN_REQUEST, encode_schema(schema), ts, timeout_ms, named]
        case ReadPlanReply(plan):
            return [Kind.READ_PLAN, plan]
        case TakeAutoIncrement(table_id, count):
            return [Kind.TAKE_AUTO_INCREMENT, table_id, count]
        case ObserveAutoIncrement(table_id, given):
            return [Kind.OBSERVE_AUTO_INCREMENT, table_id, given]
        case AutoIncrement(first):
            return [Kind.AUTO_INCREMENT, first]
        case TabletStatsRequest(schemas):
            _stats_tables(len(schemas), limits)
            return [Kind.TABLET_STATS_REQUEST, [encode_schema(schema) for schema in schemas]]
        case TabletStats(tables):
            _stats_tables(len(tables), limits)
            encoded = [[table, [list(tablet) for tablet in tablets]] for table, tablets in tables]
            return [Kind.TABLET_STATS, encoded]
        case Reachable(as_of_ts, tables):
            return [Kind.REACHABLE, as_of_ts, [[table, list(ids)] for table, ids in tables]]
        case CompactRequest(table_id, partition_ids):
            return [Kind.COMPACT_REQUEST, table_id, list(partition_ids)]
        case Accepted():
            return [Kind.ACCEPTED]
        case QueryRequest(sql, tables, given, read_wait_ms, timeout_ms, memory_limit_bytes):
            if len(sql) > limits.max_query_chars or len(tables) > limits.max_query_tables:
                raise ServiceFormatError("a query over max_query_chars or max_query_tables")
            return [
                Kind.QUERY_REQUEST,
                sql,
                [_query_table_fields(table) for table in tables],
                [[name, _ipc(table, limits)] for name, table in given],
                read_wait_ms,
                timeout_ms,
                memory_limit_bytes,
            ]
        case ResultPart(rows):
            return [Kind.RESULT_PART, _ipc(rows, limits)]
        case ResultEnd(columns, row_count):
            return [Kind.RESULT_END, [list(column) for column in columns], row_count]
        case BeginLoad(schema, claim):
            return [Kind.BEGIN_LOAD, encode_schema(schema), _claim_fields(claim)]
        case ReserveRowIds(txn_id, count):
            return [Kind.RESERVE_ROW_IDS, txn_id, count]
        case LoadNumber(value):
            return [Kind.LOAD_NUMBER, value]
        case CommitLoad(txn_id, schema, objects, overwrite):
            if len(objects) > MAX_OBJECTS_PER_CHANGE:
                raise ServiceFormatError(f"a load commits at most {MAX_OBJECTS_PER_CHANGE} objects")
            encoded = [meta_codec.encode_object(meta) for meta in objects]
            return [Kind.COMMIT_LOAD, txn_id, encode_schema(schema), encoded, overwrite]
        case AbortLoad(txn_id, names):
            if len(names) > MAX_OBJECTS_PER_CHANGE:
                raise ServiceFormatError(f"a load names at most {MAX_OBJECTS_PER_CHANGE} objects")
            return [Kind.ABORT_LOAD, txn_id, list(names)]
        case Failure(kind, text, arguments):
            return [
                Kind.FAILURE,
                kind[:MAX_NAME_CHARS],
                text[:MAX_TEXT_CHARS],
                [_argument(value) for value in arguments[:MAX_FAILURE_ARGUMENTS]],
            ]
    raise AssertionError(f"not a service message: {message!r:.200}")


def _stats_tables(count: int, limits: ServiceLimits) -> None:
    if count > limits.max_stats_tables:
        raise ServiceFormatError(f"statistics of {count} tables over max_stats_tables")


def _read_fields(schema: TableSchema, ts: int, row_ids: bool, bounds, columns, partitions) -> list:
    encoded = [[bound.column, bound.low, bound.high] for bound in bounds[:MAX_BOUNDS]]
    named = None if columns is None else list(columns)
    chosen = None if partitions is None else list(partitions)
    return [encode_schema(schema), ts, row_ids, encoded, named, chosen]


def _query_table_fields(table: QueryTable) -> list:
    read = _read_fields(
        table.schema, table.ts, table.row_ids, table.bounds, table.columns, table.partitions
    )
    return [table.name, *read]


def _argument(value: Any) -> str | int | float | bool | None:
    if value is None or type(value) in (int, float, bool):
        return value
    return str(value)[:MAX_TEXT_CHARS]


def encode(message: Message, limits: ServiceLimits) -> bytes:
    return _ENVELOPE.seal(_fields(message, limits), limits.max_message_bytes)


# Decoding.


_ENVELOPE = Envelope("service", ServiceFormatError, FORMAT_VERSION, SUPPORTED_VERSIONS)
_fields_of = FieldReader(ServiceFormatError)
_shape, _items, _int, _bytes, _str = (
    _fields_of.shape,
    _fields_of.items,
    _fields_of.integer,
    _fields_of.bytes,
    _fields_of.text,
)


def _distinct(values: list, refusal: str) -> None:
    if len(set(values)) != len(values):
        raise ServiceFormatError(refusal)


def _columns(value: Any, limits: ServiceLimits) -> tuple[str, ...] | None:
    """The lower-case names a read needs; None: every column."""
    if value is None:
        return None
    return tuple(
        _str(column, "column", MAX_NAME_CHARS)
        for column in _items(value, limits.max_columns, "column list")
    )


def _role(value: Any) -> Role:
    try:
        return Role(_str(value, "role", 8))
    except ValueError:
        raise ServiceFormatError(f"unknown role {value!r:.20}") from None


def _signed(value: Any, what: str) -> int:
    if type(value) is not int or not -(1 << 63) <= value < (1 << 63):
        raise ServiceFormatError(f"malformed {what}")
    return value


def _bound(value: Any) -> ColumnBound:
    column, low, high = _shape(value, 3, "bound")
    low = None if low is None else _signed(low, "bound")
    high = None if high is None else _signed(high, "bound")
    if low is None and high is None:
        raise ServiceFormatError("a bound without limits")
    return ColumnBound(_str(column, "column", MAX_NAME_CHARS), low, high)


def _partition_ids(value: Any, schema: TableSchema) -> tuple[int, ...]:
    """Distinct ids of partitions the schema lists."""
    listed = {partition.id for partition in schema.partitions}
    ids = tuple(_int(item, "partition id", 1) for item in _items(value, len(listed), "partitions"))
    if len(set(ids)) != len(ids) or not set(ids) <= listed:
        raise ServiceFormatError("a partition list naming partitions the schema does not list")
    return ids


def _stat(value: Any) -> tuple[str, int]:
    name, count = _shape(value, 2, "statistic")
    return _str(name, "statistic name", MAX_NAME_CHARS), _int(count, "statistic")


def _tablet_stat(value: Any) -> tuple[int, int, int, int]:
    tablet_id, rows, size, objects = _shape(value, 4, "tablet statistic")
    return (
        _int(tablet_id, "tablet id", 1),
        _int(rows, "rows"),
        _int(size, "bytes"),
        _int(objects, "objects"),
    )


def _table_stats(
    value: Any, limits: ServiceLimits
) -> tuple[int, tuple[tuple[int, int, int, int], ...]]:
    table_id, tablets = _shape(value, 2, "table statistics")
    stats = tuple(
        _tablet_stat(tablet) for tablet in _items(tablets, limits.max_rows, "tablet statistics")
    )
    return _int(table_id, "table id", 1), stats


def _reachable(value: Any, limits: ServiceLimits) -> tuple[int, tuple[int, ...]]:
    table_id, partitions = _shape(value, 2, "reachable table")
    ids = tuple(
        _int(p, "partition id", 1) for p in _items(partitions, limits.max_rows, "partition ids")
    )
    return _int(table_id, "table id", 1), ids


def _read(fields: tuple, limits: ServiceLimits, what: str) -> tuple:
    """(schema, ts, row_ids, bounds, columns, partitions) of a snapshot request or a query's
    table."""
    schema, ts, row_ids, bounds, columns, partitions = _shape(fields, 6, what)
    if type(row_ids) is not bool:
        raise ServiceFormatError("malformed row_ids flag")
    bounds = tuple(_bound(bound) for bound in _items(bounds, MAX_BOUNDS, "bounds"))
    columns = _columns(columns, limits)
    table = decode_schema(schema, limits)
    return (
        table,
        _int(ts, "timestamp"),
        row_ids,
        bounds,
        columns,
        None if partitions is None else _partition_ids(partitions, table),
    )


def _snapshot_request(fields: tuple, limits: ServiceLimits) -> SnapshotRequest:
    _shape(fields, 7, "snapshot request")
    schema, ts, row_ids, bounds, columns, partitions = _read(
        fields[:3] + fields[4:], limits, "snapshot"
    )
    return SnapshotRequest(
        schema, ts, row_ids, _int(fields[3], "timeout"), bounds, columns, partitions
    )


def _query_table(value: Any, limits: ServiceLimits) -> QueryTable:
    _shape(value, 7, "query table")
    return QueryTable(
        _str(value[0], "table name", MAX_NAME_CHARS), *_read(value[1:], limits, "query table")
    )


def _given_table(value: Any, limits: ServiceLimits) -> tuple[str, pa.Table]:
    name, data = _shape(value, 2, "given table")
    return _str(name, "table name", MAX_NAME_CHARS), _rows(data, limits, "a given table")


def _result_column(value: Any) -> tuple[str, str]:
    name, type_name = _shape(value, 2, "result column")
    return _str(name, "column name", MAX_COLUMN_NAME_CHARS), _str(type_name, "type", MAX_TEXT_CHARS)


def _failure_argument(value: Any) -> str | int | float | bool | None:
    if type(value) is str:
        return _str(value, "error argument", MAX_TEXT_CHARS)
    if value is None or type(value) in (int, float, bool):
        return value
    raise ServiceFormatError(f"malformed error argument: {value!r:.100}")


def _claim_fields(claim: LoadClaim | None) -> list | None:
    if claim is None:
        return None
    return [
        claim.label,
        claim.db,
        claim.table,
        claim.user,
        claim.client_ip,
        claim.source,
        claim.overwrite,
    ]


def _claim(value: Any) -> LoadClaim | None:
    if value is None:
        return None
    label, db, table, user, client_ip, source, overwrite = _shape(value, 7, "load claim")
    if source not in SOURCES or type(overwrite) is not bool:
        raise ServiceFormatError(f"malformed load claim: {value!r:.100}")
    return LoadClaim(
        _str(label, "label", MAX_LABEL_CHARS),
        _str(db, "database name", MAX_NAME_CHARS),
        _str(table, "table name", MAX_NAME_CHARS),
        _str(user, "user name", MAX_NAME_CHARS),
        _str(client_ip, "client address", MAX_NAME_CHARS),
        source,
        overwrite,
    )


def _load_message(kind: Kind, fields: tuple, limits: ServiceLimits) -> Message:
    match kind:
        case Kind.BEGIN_LOAD:
            schema, claimed = _shape(fields, 2, "load begin")
            return BeginLoad(decode_schema(schema, limits), _claim(claimed))
        case Kind.RESERVE_ROW_IDS:
            txn_id, count = _shape(fields, 2, "row id request")
            return ReserveRowIds(_int(txn_id, "load", 1), _int(count, "count", 1))
        case Kind.LOAD_NUMBER:
            (value,) = _shape(fields, 1, "load number")
            return LoadNumber(_int(value, "load number", 1))
        case Kind.COMMIT_LOAD:
            txn_id, schema, objects, overwrite = _shape(fields, 4, "load commit")
            if type(overwrite) is not bool:
                raise ServiceFormatError("malformed load overwrite")
            objects = _items(objects, MAX_OBJECTS_PER_CHANGE, "load objects")
            schema = decode_schema(schema, limits)
            try:
                metas = tuple(meta_codec.decode_object(_bytes(o, "object")) for o in objects)
            except (ObjectCorrupt, ValueError, TypeError, KeyError) as error:
                raise ServiceFormatError(f"malformed object metadata: {error}") from None
            if any(meta.table_id != schema.table_id for meta in metas):
                raise ServiceFormatError("a load's object of another table")
            return CommitLoad(_int(txn_id, "load", 1), schema, metas, overwrite)
        case Kind.ABORT_LOAD:
            txn_id, names = _shape(fields, 2, "load abort")
            named = tuple(
                _str(name, "object name", MAX_TEXT_CHARS)
                for name in _items(names, MAX_OBJECTS_PER_CHANGE, "object names")
            )
            return AbortLoad(_int(txn_id, "load", 1), named)
    raise AssertionError(kind)


def _message(kind: Kind, fields: tuple, limits: ServiceLimits) -> Message:
    if Kind.BEGIN_LOAD <= kind <= Kind.ABORT_LOAD:
        return _load_message(kind, fields, limits)
    match kind:
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
            proof, role, name = _shape(fields, 3, "welcome")
            return Welcome(
                _bytes(proof, "proof", PROOF_BYTES), _role(role), _str(name, "name", MAX_NAME_CHARS)
            )
        case Kind.STATUS_REQUEST:
            _shape(fields, 0, "status request")
            return StatusRequest()
        case Kind.STATUS:
            role, name, watermark, tables, started_ms, stats = _shape(fields, 6, "status")
            return Status(
                _role(role),
                _str(name, "name", MAX_NAME_CHARS),
                _int(watermark, "watermark"),
                tuple(_int(t, "table id", 1) for t in _items(tables, limits.max_rows, "tables")),
                _int(started_ms, "start time"),
                tuple(_stat(stat) for stat in _items(stats, MAX_STATS, "statistics")),
            )
        case Kind.COMMIT_REQUEST:
            snapshot_ts, request_id, writes, claimed = _shape(fields, 4, "commit request")
            decoded = tuple(
                _table_write(write, limits)
                for write in _items(writes, limits.max_columns, "writes")
            )
            _distinct(
                [write.schema.table_id for write in decoded], "a table twice in one write set"
            )
            return CommitRequest(
                WriteSet(
                    _int(snapshot_ts, "snapshot timestamp"),
                    decoded,
                    _str(request_id, "request id", MAX_REQUEST_ID_CHARS),
                    _claim(claimed),
                )
            )
        case Kind.COMMITTED:
            (commit_ts,) = _shape(fields, 1, "committed")
            return Committed(_int(commit_ts, "commit timestamp", 1))
        case Kind.READ_TS_REQUEST:
            _shape(fields, 0, "read timestamp request")
            return ReadTsRequest()
        case Kind.READ_TS:
            (ts,) = _shape(fields, 1, "read timestamp")
            return ReadTs(_int(ts, "read timestamp"))
        case Kind.SNAPSHOT_REQUEST:
            return _snapshot_request(fields, limits)
        case Kind.ROWS:
            (table,) = _shape(fields, 1, "rows")
            return Rows(_rows(table, limits, "rows"))
        case Kind.READ_PLAN_REQUEST:
            schema, ts, timeout_ms, columns = _shape(fields, 4, "read plan request")
            return ReadPlanRequest(
                decode_schema(schema, limits),
                _int(ts, "timestamp", 1),
                _int(timeout_ms, "timeout"),
                _columns(columns, limits),
            )
        case Kind.READ_PLAN:
            (plan,) = _shape(fields, 1, "read plan")
            return ReadPlanReply(_bytes(plan, "read plan"))
        case Kind.TAKE_AUTO_INCREMENT:
            table_id, count = _shape(fields, 2, "AUTO_INCREMENT request")
            return TakeAutoIncrement(_int(table_id, "table id", 1), _int(count, "count", 1))
        case Kind.OBSERVE_AUTO_INCREMENT:
            table_id, given = _shape(fields, 2, "AUTO_INCREMENT value")
            return ObserveAutoIncrement(_int(table_id, "table id", 1), _signed(given, "value"))
        case Kind.AUTO_INCREMENT:
            (first,) = _shape(fields, 1, "AUTO_INCREMENT values")
            return AutoIncrement(_signed(first, "value"))
        case Kind.TABLET_STATS_REQUEST:
            (schemas,) = _shape(fields, 1, "tablet statistics request")
            decoded = tuple(
                decode_schema(schema, limits)
                for schema in _items(schemas, limits.max_stats_tables, "statistics tables")
            )
            _distinct([schema.table_id for schema in decoded], "a table twice in one request")
            return TabletStatsRequest(decoded)
        case Kind.TABLET_STATS:
            (tables,) = _shape(fields, 1, "tablet statistics")
            decoded = tuple(
                _table_stats(table, limits)
                for table in _items(tables, limits.max_stats_tables, "tablet statistics")
            )
            _distinct([table for table, _ in decoded], "a table twice in one answer")
            return TabletStats(decoded)
        case Kind.REACHABLE:
            as_of_ts, tables = _shape(fields, 2, "reachable partitions")
            reachable = _items(tables, limits.max_rows, "reachable tables")
            return Reachable(
                _int(as_of_ts, "timestamp"), tuple(_reachable(table, limits) for table in reachable)
            )
        case Kind.COMPACT_REQUEST:
            table_id, partitions = _shape(fields, 2, "compaction request")
            ids = tuple(
                _int(p, "partition id", 1)
                for p in _items(partitions, limits.max_rows, "partitions")
            )
            return CompactRequest(_int(table_id, "table id", 1), ids)
        case Kind.ACCEPTED:
            _shape(fields, 0, "accepted")
            return Accepted()
        case Kind.QUERY_REQUEST:
            sql, tables, given, read_wait_ms, timeout_ms, memory = _shape(fields, 6, "query")
            tables = _items(tables, limits.max_query_tables, "query tables")
            given = _items(given, limits.max_query_tables, "given tables")
            decoded = tuple(_query_table(table, limits) for table in tables)
            supplied = tuple(_given_table(table, limits) for table in given)
            names = [table.name for table in decoded] + [name for name, _ in supplied]
            _distinct(names, "a table name twice in one query")
            return QueryRequest(
                _str(sql, "query", limits.max_query_chars),
                decoded,
                supplied,
                _int(read_wait_ms, "read wait"),
                _int(timeout_ms, "query timeout", 1),
                _int(memory, "memory limit", 1),
            )
        case Kind.RESULT_PART:
            (rows,) = _shape(fields, 1, "result part")
            return ResultPart(_rows(rows, limits, "a result part"))
        case Kind.RESULT_END:
            columns, row_count = _shape(fields, 2, "result end")
            named = _items(columns, limits.max_columns, "result columns")
            return ResultEnd(
                tuple(_result_column(column) for column in named), _int(row_count, "row count")
            )
        case Kind.FAILURE:
            kind_name, text, arguments = _shape(fields, 3, "failure")
            arguments = _items(arguments, MAX_FAILURE_ARGUMENTS, "error arguments")
            return Failure(
                _str(kind_name, "error kind", MAX_NAME_CHARS),
                _str(text, "text", MAX_TEXT_CHARS),
                tuple(_failure_argument(value) for value in arguments),
            )
    raise AssertionError(kind)


def decode(data: bytes | memoryview, limits: ServiceLimits) -> Message:
    _, fields = _ENVELOPE.open(data, limits.max_message_bytes)
    try:
        kind = Kind(fields[0])
    except ValueError:
        raise ServiceFormatError(f"unknown service message kind {fields[0]}") from None
    return _message(kind, fields[1:], limits)
