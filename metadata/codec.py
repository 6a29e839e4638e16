"""The versioned binary encoding of journal operations and catalog records.

A batch is one format-version byte followed by a msgpack array of operations. Each operation is an
array whose first element is its `OpCode` and whose other elements are the operation's fields in
declaration order; a record is an array of its fields in declaration order, enums by value, and
privilege sets sorted so that equal records always encode to equal bytes.

A released version is never changed: adding a field means a new version, and the decoder keeps
reading the old ones. Versions:

    1   the first release
    2   a User record ends with its lock-out policy (failed_login_attempts, password_lock_seconds,
        lockout_epoch); operation SET_LOCKOUT_POLICY
    3   a Table record ends with its schema_version (1 for tables older versions wrote)
    4   a Partition record ends with its LIST values, its properties and its rollups' tablets; a
        Table record with its partition kind, temporary partitions and rollups; a Frontend
        record with its connection prefix; the AlterJob record and operations CREATE_ALTER_JOB,
        UPDATE_ALTER_JOB, REMOVE_ALTER_JOBS
    5   a Column record ends with its id and backfill (older columns get their ids from the
        Table they are in, their backfill is their default)
    6   a User record ends with its roles and properties; the Role record and operations
        CREATE_ROLE, DROP_ROLE, GRANT_TO_ROLE, REVOKE_FROM_ROLE, GRANT_ROLE, REVOKE_ROLE,
        SET_USER_PROPERTIES
    7   the TableStats record (with its ColumnStats) and operations SET_TABLE_STATS,
        DROP_TABLE_STATS
    8   the LabelledJobRecord record and operation SET_LABELLED_JOB
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import msgpack

from metadata.ops import (
    AddBackend,
    AddFrontend,
    ClientRequest,
    CreateAlterJob,
    CreateDatabase,
    CreateRole,
    CreateTable,
    CreateUser,
    DropBackend,
    DropDatabase,
    DropFrontend,
    DropRole,
    DropTable,
    DropTableStats,
    DropUser,
    EraseRecycled,
    GrantPrivileges,
    GrantRole,
    GrantToRole,
    NextId,
    Op,
    OpCode,
    RecoverDatabase,
    RecoverPartition,
    RecoverTable,
    RecycleDatabase,
    RecyclePartition,
    RecycleTable,
    RemoveAlterJobs,
    ReplaceTable,
    RevokeFromRole,
    RevokePrivileges,
    RevokeRole,
    SetGlobalVariable,
    SetLabelledJob,
    SetLockoutPolicy,
    SetPassword,
    SetTableStats,
    SetUserProperties,
    SwapTables,
    Timestamp,
    TruncateTable,
    UpdateAlterJob,
    UpdateFrontend,
)
from metadata.records import (
    CONNECTION_PREFIXES,
    LABELLED_JOB_KINDS,
    NO_CONNECTION_PREFIX,
    AlterJob,
    AlterJobState,
    AlterJobType,
    Backend,
    Column,
    ColumnStats,
    Database,
    Frontend,
    FrontendRole,
    Grant,
    KeyModel,
    LabelledJobRecord,
    Partition,
    PartitionKind,
    RecycledKind,
    RecycledObject,
    RequestOutcome,
    Role,
    Rollup,
    Table,
    TableStats,
    User,
)
from metadata.types import parse_column_type

FORMAT_VERSION = 8
SUPPORTED_VERSIONS = frozenset({1, 2, 3, 4, 5, 6, 7, 8})

MAX_OPS_PER_BATCH = 65_536
MAX_BATCH_BYTES = 64 * 1024 * 1024

_KEY_MODELS = {model.value: model for model in KeyModel}
_FRONTEND_ROLES = {role.value: role for role in FrontendRole}
_PARTITION_KINDS = {kind.value: kind for kind in PartitionKind}


class CodecError(ValueError):
    """Bytes that are not a valid encoding of this format (or of a version this build reads)."""


# Records. Each encoder returns a tuple of plain values; each decoder takes what msgpack gives back
# for it (tuples, because batches and images are unpacked with use_list=False) and checks its shape:
# the number of fields and the type of every field that apply computes with or uses as a key.

_NONE = type(None)


def _expect(value: Any, kinds: tuple[tuple[type, ...], ...], what: str) -> None:
    if type(value) is not tuple or len(value) != len(kinds):
        raise CodecError(f"malformed {what}: expected {len(kinds)} fields, got {value!r:.200}")
    for position, (item, allowed) in enumerate(zip(value, kinds, strict=True)):
        if type(item) not in allowed:
            raise CodecError(
                f"malformed {what}: field {position} is {type(item).__name__}, expected "
                + " or ".join(kind.__name__ for kind in allowed)
            )


def _int(value: Any) -> int:
    if type(value) is not int:
        raise CodecError(f"expected an integer, got {value!r:.200}")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise CodecError(f"expected a string, got {value!r:.200}")
    return value


def _encode_column(column: Column) -> tuple:
    return (
        column.name,
        column.type.sql,
        column.nullable,
        column.default,
        column.comment,
        column.is_key,
        column.aggregation,
        column.auto_increment,
        column.id,
        column.backfill,
    )


_COLUMN_FIELDS_VERSION_4 = (
    (str,), (str,), (bool,), (str, _NONE), (str,), (bool,), (str, _NONE), (bool,),
)  # fmt: skip
_COLUMN_FIELDS = (*_COLUMN_FIELDS_VERSION_4, (int,), (str, _NONE))

# The same values come back again and again across tables: column definitions ("id BIGINT NOT
# NULL"), key column lists, partition bounds, properties. Everything decoded is immutable, so
# decoding keeps one object per distinct value: faster, a smaller catalog, and fewer objects for
# the garbage collector to walk.
_SHARED_LIMIT = 200_000
_shared_columns: dict[tuple, Column] = {}
_shared_tuples: dict[tuple, tuple] = {}


def _decode_column_version_4(value: tuple) -> Column:
    _expect(value, _COLUMN_FIELDS_VERSION_4, "Column")
    return _decode_column((*value, 0, value[3]))  # the Table gives it an id


def _decode_column(value: tuple) -> Column:
    column = _shared_columns.get(value)
    if column is None:
        _expect(value, _COLUMN_FIELDS, "Column")
        if value[8] < 0:
            raise CodecError(f"malformed Column {value[0]!r:.200}: id {value[8]}")
        name, type_text, *options = value
        try:
            column_type = parse_column_type(type_text)
        except ValueError as error:
            raise CodecError(f"malformed Column {name!r:.200}: {error}") from None
        column = Column(name, column_type, *options)
        if len(_shared_columns) >= _SHARED_LIMIT:
            _shared_columns.clear()
        _shared_columns[value] = column
    return column


def _shared(value: tuple) -> tuple:
    shared = _shared_tuples.get(value)
    if shared is None:
        if type(value) is not tuple:
            raise CodecError(f"expected an array, got {value!r:.200}")
        if len(_shared_tuples) >= _SHARED_LIMIT:
            _shared_tuples.clear()
        _shared_tuples[value] = shared = value
    return shared


def _encode_partition(partition: Partition) -> tuple:
    return (
        partition.id,
        partition.name,
        partition.lower,
        partition.upper,
        partition.tablet_start,
        partition.buckets,
        partition.values,
        partition.properties,
        partition.rollup_tablets,
    )


def _decode_partition(value: tuple) -> Partition:
    if type(value) is not tuple or len(value) != 9:
        raise CodecError(f"malformed Partition: expected 9 fields, got {value!r:.200}")
    id_, name, lower, upper, tablet_start, buckets, values, properties, rollup_tablets = value
    if not (
        type(id_) is int
        and type(name) is str
        and type(tablet_start) is int
        and type(buckets) is int
    ):
        raise CodecError(f"malformed Partition: {value!r:.200}")
    return Partition(
        id_,
        name,
        _shared(lower),
        _shared(upper),
        tablet_start,
        buckets,
        _shared(values),
        _shared(properties),
        _int_pairs(rollup_tablets) if rollup_tablets else (),
    )


def _decode_partition_version_3(value: tuple) -> Partition:
    if type(value) is not tuple or len(value) != 6:
        raise CodecError(f"malformed Partition: expected 6 fields, got {value!r:.200}")
    return _decode_partition((*value, (), (), ()))


def _encode_rollup(rollup: Rollup) -> tuple:
    return (rollup.id, rollup.name, rollup.columns, rollup.key_columns, rollup.schema_version)


def _decode_rollup(value: tuple) -> Rollup:
    _expect(value, ((int,), (str,), (tuple,), (tuple,), (int,)), "Rollup")
    id_, name, columns, key_columns, schema_version = value
    try:
        return Rollup(id_, name, _shared(columns), _shared(key_columns), schema_version)
    except AssertionError:
        raise CodecError(f"malformed Rollup: {value!r:.200}") from None


def _encode_table(table: Table) -> tuple:
    return (
        table.id,
        table.db_id,
        table.name,
        tuple(map(_encode_column, table.columns)),
        table.key_model.value,
        table.key_columns,
        table.distribution_columns,
        table.buckets,
        table.partition_columns,
        tuple(map(_encode_partition, table.partitions)),
        table.properties,
        table.comment,
        table.engine,
        table.schema_version,
        table.partition_kind.value,
        tuple(map(_encode_partition, table.temporary_partitions)),
        tuple(map(_encode_rollup, table.rollups)),
    )


def _decode_table(value: tuple, decode_column: Callable[[tuple], Column] = _decode_column) -> Table:
    if type(value) is not tuple or len(value) != 17:
        raise CodecError(f"malformed Table: expected 17 fields, got {value!r:.200}")
    *fields, partition_kind, temporary_partitions, rollups = value
    if partition_kind not in _PARTITION_KINDS or not (
        type(temporary_partitions) is tuple and type(rollups) is tuple
    ):
        raise CodecError(f"malformed Table: {value!r:.200}")
    return _decode_table_fields(
        fields,
        _decode_partition,
        _PARTITION_KINDS[partition_kind],
        tuple(map(_decode_partition, temporary_partitions)),
        tuple(map(_decode_rollup, rollups)),
        decode_column,
    )


def _decode_table_version_4(value: tuple) -> Table:
    return _decode_table(value, _decode_column_version_4)


def _decode_table_version_3(value: tuple) -> Table:
    if type(value) is not tuple or len(value) != 14:
        raise CodecError(f"malformed Table: expected 14 fields, got {value!r:.200}")
    return _decode_table_fields(
        value, _decode_partition_version_3, decode_column=_decode_column_version_4
    )


def _decode_table_version_2(value: tuple) -> Table:
    if type(value) is not tuple or len(value) != 13:
        raise CodecError(f"malformed Table: expected 13 fields, got {value!r:.200}")
    return _decode_table_fields(
        (*value, 1), _decode_partition_version_3, decode_column=_decode_column_version_4
    )


def _decode_table_fields(
    value: Sequence,
    decode_partition: Callable[[tuple], Partition],
    partition_kind: PartitionKind = PartitionKind.RANGE,
    temporary_partitions: tuple[Partition, ...] = (),
    rollups: tuple[Rollup, ...] = (),
    decode_column: Callable[[tuple], Column] = _decode_column,
) -> Table:
    (
        id_,
        db_id,
        name,
        columns,
        key_model,
        key_columns,
        distribution_columns,
        buckets,
        partition_columns,
        partitions,
        properties,
        comment,
        engine,
        schema_version,
    ) = value
    if not (
        type(id_) is int
        and type(db_id) is int
        and type(name) is str
        and type(columns) is tuple
        and type(buckets) is int
        and type(partitions) is tuple
        and type(comment) is str
        and type(engine) is str
        and type(schema_version) is int
        and schema_version >= 1
    ):
        raise CodecError(f"malformed Table: {value!r:.200}")
    try:
        return Table(
            id_,
            db_id,
            name,
            tuple(map(decode_column, columns)),
            _KEY_MODELS[key_model],
            _shared(key_columns),
            _shared(distribution_columns),
            buckets,
            _shared(partition_columns),
            tuple(map(decode_partition, partitions)),
            _shared(properties),
            comment,
            engine,
            schema_version,
            partition_kind,
            temporary_partitions,
            rollups,
        )
    except AssertionError:
        raise CodecError(f"malformed Table: {value!r:.200}") from None


def _encode_database(database: Database) -> tuple:
    return (database.id, database.name, database.properties)


def _decode_database(value: tuple) -> Database:
    _expect(value, ((int,), (str,), (tuple,)), "Database")
    return Database(*value)


def _encode_grant(grant: Grant) -> tuple:
    return (grant.db, grant.table, tuple(sorted(grant.privileges)))


def _decode_grant(value: tuple) -> Grant:
    _expect(value, ((str,), (str,), (tuple,)), "Grant")
    db, table, privileges = value
    return Grant(db, table, frozenset(map(_str, privileges)))


def _encode_user(user: User) -> tuple:
    return (
        user.name,
        user.host,
        user.password_hash,
        tuple(map(_encode_grant, user.grants)),
        user.failed_login_attempts,
        user.password_lock_seconds,
        user.lockout_epoch,
        user.roles,
        user.properties,
    )


_USER_FIELDS_VERSION_5 = ((str,), (str,), (str,), (tuple,), (int,), (int,), (int,))
_USER_FIELDS = (*_USER_FIELDS_VERSION_5, (tuple,), (tuple,))


def _decode_user(value: tuple) -> User:
    _expect(value, _USER_FIELDS, "User")
    *older, roles, properties = value
    user = _decode_user_version_5(tuple(older))
    return replace(user, roles=tuple(map(_str, roles)), properties=_str_pairs(properties))


def _str_pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if type(value) is not tuple or not all(
        type(pair) is tuple and len(pair) == 2 and all(type(item) is str for item in pair)
        for pair in value
    ):
        raise CodecError(f"expected an array of string pairs, got {value!r:.200}")
    return value


def _decode_user_version_5(value: tuple) -> User:
    _expect(value, _USER_FIELDS_VERSION_5, "User")
    name, host, password_hash, grants, *lockout_policy = value
    return User(name, host, password_hash, tuple(map(_decode_grant, grants)), *lockout_policy)


def _encode_role(role: Role) -> tuple:
    return (role.name, role.comment, tuple(map(_encode_grant, role.grants)))


def _decode_role(value: tuple) -> Role:
    _expect(value, ((str,), (str,), (tuple,)), "Role")
    name, comment, grants = value
    return Role(name, comment, tuple(map(_decode_grant, grants)))


_COLUMN_STATS_FIELDS = (
    (str,),
    (int,),
    (int,),
    (int,),
    (int,),
    (str, type(None)),
    (str, type(None)),
)


def _encode_table_stats(stats: TableStats) -> tuple:
    columns = tuple(
        (c.column, c.count, c.ndv, c.nulls, c.data_size, c.min, c.max) for c in stats.columns
    )
    return (stats.table_id, stats.row_count, stats.updated_ms, columns)


def _decode_table_stats(value: tuple) -> TableStats:
    _expect(value, ((int,), (int,), (int,), (tuple,)), "TableStats")
    table_id, row_count, updated_ms, columns = value
    for column in columns:
        _expect(column, _COLUMN_STATS_FIELDS, "ColumnStats")
    return TableStats(table_id, row_count, updated_ms, tuple(ColumnStats(*c) for c in columns))


def _encode_labelled_job(job: LabelledJobRecord) -> tuple:
    return (
        job.kind, job.db, job.label, job.job_id, job.user, job.tables, job.timeout_seconds,
        job.created_ms, job.state, job.started_ms, job.finished_ms, job.message, job.runner,
        job.details,
    )  # fmt: skip


_LABELLED_JOB_FIELDS = (
    (str,), (str,), (str,), (int,), (str,), (tuple,), (int,), (int,), (str,), (int,), (int,),
    (str,), (str,), (tuple,),
)  # fmt: skip


def _decode_labelled_job(value: tuple) -> LabelledJobRecord:
    _expect(value, _LABELLED_JOB_FIELDS, "LabelledJobRecord")
    kind, db, label, job_id, user, tables, *rest, details = value
    if kind not in LABELLED_JOB_KINDS or not label or job_id <= 0:
        raise CodecError(f"malformed LabelledJobRecord: {value!r:.200}")
    tables = tuple(map(_str, tables))
    return LabelledJobRecord(kind, db, label, job_id, user, tables, *rest, _str_pairs(details))


def _decode_user_version_1(value: tuple) -> User:
    _expect(value, _USER_FIELDS_VERSION_5[:4], "User")
    name, host, password_hash, grants = value
    return User(name, host, password_hash, tuple(map(_decode_grant, grants)))


def _encode_frontend(frontend: Frontend) -> tuple:
    return (
        frontend.name,
        frontend.host,
        frontend.edit_log_port,
        frontend.http_port,
        frontend.query_port,
        frontend.role.value,
        frontend.connection_prefix,
    )


_FRONTEND_FIELDS = ((str,), (str,), (int,), (int,), (int,), (str,))


def _decode_frontend(value: tuple) -> Frontend:
    _expect(value, (*_FRONTEND_FIELDS, (int,)), "Frontend")
    *fields, connection_prefix = value
    if not NO_CONNECTION_PREFIX <= connection_prefix < CONNECTION_PREFIXES:
        raise CodecError(f"malformed Frontend: {value!r:.200}")
    return _decode_frontend_version_3(fields, connection_prefix)


def _decode_frontend_version_3(
    value: Sequence, connection_prefix: int = NO_CONNECTION_PREFIX
) -> Frontend:
    _expect(tuple(value), _FRONTEND_FIELDS, "Frontend")
    name, host, edit_log_port, http_port, query_port, role = value
    return Frontend(
        name, host, edit_log_port, http_port, query_port, _FRONTEND_ROLES[role], connection_prefix
    )


def _encode_backend(backend: Backend) -> tuple:
    return (backend.id, backend.host, backend.heartbeat_port, backend.properties)


def _decode_backend(value: tuple) -> Backend:
    _expect(value, ((int,), (str,), (int,), (tuple,)), "Backend")
    return Backend(*value)


MAX_REQUEST_ID_CHARS = 64


def _request_id(value: Any) -> str:
    if type(value) is not str or not 0 < len(value) <= MAX_REQUEST_ID_CHARS:
        raise CodecError(f"expected a request id, got {value!r:.200}")
    return value


def _encode_request_outcome(outcome: RequestOutcome) -> tuple:
    return (
        outcome.request_id,
        outcome.journal_id,
        outcome.refusal,
        outcome.message,
        outcome.refused_op,
    )


def _decode_request_outcome(value: tuple) -> RequestOutcome:
    _expect(value, ((str,), (int,), (str,), (str,), (bytes,)), "RequestOutcome")
    _request_id(value[0])
    return RequestOutcome(*value)


_RECYCLED_KINDS = {kind.value: kind for kind in RecycledKind}


def _encode_recycled(recycled: RecycledObject) -> tuple:
    return (
        recycled.kind.value,
        recycled.drop_time_ms,
        recycled.db_id,
        recycled.table_id,
        None if recycled.database is None else _encode_database(recycled.database),
        tuple(map(_encode_table, recycled.tables)),
        None if recycled.partition is None else _encode_partition(recycled.partition),
    )


def _decode_recycled(
    value: tuple,
    decode_table: Callable[[tuple], Table] = _decode_table,
    decode_partition: Callable[[tuple], Partition] = _decode_partition,
) -> RecycledObject:
    _expect(
        value,
        ((str,), (int,), (int,), (int,), (tuple, _NONE), (tuple,), (tuple, _NONE)),
        "RecycledObject",
    )
    kind, drop_time_ms, db_id, table_id, database, tables, partition = value
    if kind not in _RECYCLED_KINDS:
        raise CodecError(f"malformed RecycledObject: unknown kind {kind!r:.200}")
    try:
        return RecycledObject(
            _RECYCLED_KINDS[kind],
            drop_time_ms,
            db_id,
            table_id,
            None if database is None else _decode_database(database),
            tuple(map(decode_table, tables)),
            None if partition is None else decode_partition(partition),
        )
    except AssertionError:
        raise CodecError(f"malformed RecycledObject: {value!r:.200}") from None


def _decode_recycled_version_4(value: tuple) -> RecycledObject:
    return _decode_recycled(value, _decode_table_version_4)


def _decode_recycled_version_3(value: tuple) -> RecycledObject:
    return _decode_recycled(value, _decode_table_version_3, _decode_partition_version_3)


_ALTER_JOB_FIELDS = (
    (int,), (str,), (int,), (int,), (str,), (str,), (int,), (str,), (int,), (int,), (int,),
    (str,), (int,), (str,), (int,), (tuple, _NONE), (tuple, _NONE), (tuple,),
)  # fmt: skip
_ALTER_JOB_TYPES = {kind.value: kind for kind in AlterJobType}
_ALTER_JOB_STATES = {state.value: state for state in AlterJobState}


def _encode_alter_job(job: AlterJob) -> tuple:
    return (
        job.id,
        job.job_type.value,
        job.db_id,
        job.table_id,
        job.table_name,
        job.index_name,
        job.index_id,
        job.origin_index_name,
        job.origin_index_id,
        job.create_time_ms,
        job.timeout_ms,
        job.state.value,
        job.finish_time_ms,
        job.message,
        job.schema_version,
        None if job.table is None else _encode_table(job.table),
        None if job.rollup is None else _encode_rollup(job.rollup),
        job.rollup_tablets,
    )


def _decode_alter_job_version_4(value: tuple) -> AlterJob:
    return _decode_alter_job(value, _decode_table_version_4)


def _decode_alter_job(
    value: tuple, decode_table: Callable[[tuple], Table] = _decode_table
) -> AlterJob:
    _expect(value, _ALTER_JOB_FIELDS, "AlterJob")
    *fields, table, rollup, rollup_tablets = value
    job_type, state = fields[1], fields[11]
    if job_type not in _ALTER_JOB_TYPES or state not in _ALTER_JOB_STATES:
        raise CodecError(f"malformed AlterJob: {value!r:.200}")
    fields[1], fields[11] = _ALTER_JOB_TYPES[job_type], _ALTER_JOB_STATES[state]
    try:
        return AlterJob(
            *fields,
            table=None if table is None else decode_table(table),
            rollup=None if rollup is None else _decode_rollup(rollup),
            rollup_tablets=_int_pairs(rollup_tablets),
        )
    except AssertionError:
        raise CodecError(f"malformed AlterJob: {value!r:.200}") from None


def _decode_alter_job_state(value: Any) -> AlterJobState:
    if value not in _ALTER_JOB_STATES:
        raise CodecError(f"unknown alter job state {value!r:.200}")
    return _ALTER_JOB_STATES[value]


def _array(value: Any) -> tuple:
    if type(value) is not tuple:
        raise CodecError(f"expected an array, got {value!r:.200}")
    return value


def _int_pairs(value: Any) -> tuple[tuple[int, int], ...]:
    if type(value) is not tuple or not all(
        type(pair) is tuple and len(pair) == 2 and all(type(item) is int for item in pair)
        for pair in value
    ):
        raise CodecError(f"expected an array of integer pairs, got {value!r:.200}")
    return value


_RECORD_CODECS: dict[type, tuple[Callable[[Any], tuple], Callable[[Sequence], Any]]] = {
    Column: (_encode_column, _decode_column),
    Partition: (_encode_partition, _decode_partition),
    Rollup: (_encode_rollup, _decode_rollup),
    Table: (_encode_table, _decode_table),
    Database: (_encode_database, _decode_database),
    Grant: (_encode_grant, _decode_grant),
    User: (_encode_user, _decode_user),
    Role: (_encode_role, _decode_role),
    Frontend: (_encode_frontend, _decode_frontend),
    Backend: (_encode_backend, _decode_backend),
    RequestOutcome: (_encode_request_outcome, _decode_request_outcome),
    RecycledObject: (_encode_recycled, _decode_recycled),
    AlterJob: (_encode_alter_job, _decode_alter_job),
    TableStats: (_encode_table_stats, _decode_table_stats),
    LabelledJobRecord: (_encode_labelled_job, _decode_labelled_job),
}


def encode_record(record: Any) -> tuple:
    """The record as a tuple of msgpack-able values (what the image stores)."""
    codec = _RECORD_CODECS.get(type(record))
    if codec is None:
        raise CodecError(f"no encoding for records of type {type(record).__name__}")
    return codec[0](record)


# What older versions decode differently from FORMAT_VERSION.
_RECORD_DECODERS_OF_VERSION: dict[int, dict[type, Callable[[Sequence], Any]]] = {
    1: {
        User: _decode_user_version_1,
        Table: _decode_table_version_2,
        Frontend: _decode_frontend_version_3,
    },
    2: {
        User: _decode_user_version_5,
        Table: _decode_table_version_2,
        Frontend: _decode_frontend_version_3,
    },
    3: {
        User: _decode_user_version_5,
        Frontend: _decode_frontend_version_3,
        Table: _decode_table_version_3,
        Partition: _decode_partition_version_3,
        RecycledObject: _decode_recycled_version_3,
    },
    4: {
        User: _decode_user_version_5,
        Column: _decode_column_version_4,
        Table: _decode_table_version_4,
        RecycledObject: _decode_recycled_version_4,
        AlterJob: _decode_alter_job_version_4,
    },
    5: {User: _decode_user_version_5},
}


def decode_record(record_type: type, value: Sequence, version: int = FORMAT_VERSION) -> Any:
    """The inverse of `encode_record` for a record of `record_type`, as `version` encoded it."""
    assert version in SUPPORTED_VERSIONS, version
    codec = _RECORD_CODECS.get(record_type)
    if codec is None:
        raise CodecError(f"no encoding for records of type {record_type.__name__}")
    decode = _RECORD_DECODERS_OF_VERSION.get(version, {}).get(record_type, codec[1])
    try:
        return decode(value)
    except CodecError:
        raise
    except (TypeError, ValueError, KeyError) as error:
        raise CodecError(f"malformed {record_type.__name__} record: {error!r}") from error


# Operations. Each entry: (class, number of fields, encode fields, decode from the whole array).

_OpEncoder = Callable[[Any], tuple]
_OpDecoder = Callable[[tuple], Op]

_OP_CODECS: dict[OpCode, tuple[type, int, _OpEncoder, _OpDecoder]] = {
    OpCode.CREATE_DATABASE: (
        CreateDatabase,
        1,
        lambda op: (_encode_database(op.database),),
        lambda a: CreateDatabase(_decode_database(a[1])),
    ),
    OpCode.DROP_DATABASE: (
        DropDatabase,
        1,
        lambda op: (op.db_id,),
        lambda a: DropDatabase(_int(a[1])),
    ),
    OpCode.CREATE_TABLE: (
        CreateTable,
        1,
        lambda op: (_encode_table(op.table),),
        lambda a: CreateTable(_decode_table(a[1])),
    ),
    OpCode.DROP_TABLE: (
        DropTable,
        1,
        lambda op: (op.table_id,),
        lambda a: DropTable(_int(a[1])),
    ),
    OpCode.REPLACE_TABLE: (
        ReplaceTable,
        1,
        lambda op: (_encode_table(op.table),),
        lambda a: ReplaceTable(_decode_table(a[1])),
    ),
    OpCode.CREATE_USER: (
        CreateUser,
        1,
        lambda op: (_encode_user(op.user),),
        lambda a: CreateUser(_decode_user(a[1])),
    ),
    OpCode.DROP_USER: (
        DropUser,
        2,
        lambda op: (op.name, op.host),
        lambda a: DropUser(_str(a[1]), _str(a[2])),
    ),
    OpCode.SET_PASSWORD: (
        SetPassword,
        3,
        lambda op: (op.name, op.host, op.password_hash),
        lambda a: SetPassword(_str(a[1]), _str(a[2]), _str(a[3])),
    ),
    OpCode.GRANT: (
        GrantPrivileges,
        3,
        lambda op: (op.name, op.host, _encode_grant(op.grant)),
        lambda a: GrantPrivileges(_str(a[1]), _str(a[2]), _decode_grant(a[3])),
    ),
    OpCode.REVOKE: (
        RevokePrivileges,
        3,
        lambda op: (op.name, op.host, _encode_grant(op.grant)),
        lambda a: RevokePrivileges(_str(a[1]), _str(a[2]), _decode_grant(a[3])),
    ),
    OpCode.SET_LOCKOUT_POLICY: (
        SetLockoutPolicy,
        5,
        lambda op: (
            op.name,
            op.host,
            op.failed_login_attempts,
            op.password_lock_seconds,
            op.lockout_epoch,
        ),
        lambda a: SetLockoutPolicy(_str(a[1]), _str(a[2]), _int(a[3]), _int(a[4]), _int(a[5])),
    ),
    OpCode.CREATE_ROLE: (
        CreateRole,
        1,
        lambda op: (_encode_role(op.role),),
        lambda a: CreateRole(_decode_role(a[1])),
    ),
    OpCode.DROP_ROLE: (DropRole, 1, lambda op: (op.name,), lambda a: DropRole(_str(a[1]))),
    OpCode.GRANT_TO_ROLE: (
        GrantToRole,
        2,
        lambda op: (op.role, _encode_grant(op.grant)),
        lambda a: GrantToRole(_str(a[1]), _decode_grant(a[2])),
    ),
    OpCode.REVOKE_FROM_ROLE: (
        RevokeFromRole,
        2,
        lambda op: (op.role, _encode_grant(op.grant)),
        lambda a: RevokeFromRole(_str(a[1]), _decode_grant(a[2])),
    ),
    OpCode.GRANT_ROLE: (
        GrantRole,
        3,
        lambda op: (op.name, op.host, op.role),
        lambda a: GrantRole(_str(a[1]), _str(a[2]), _str(a[3])),
    ),
    OpCode.REVOKE_ROLE: (
        RevokeRole,
        3,
        lambda op: (op.name, op.host, op.role),
        lambda a: RevokeRole(_str(a[1]), _str(a[2]), _str(a[3])),
    ),
    OpCode.SET_USER_PROPERTIES: (
        SetUserProperties,
        2,
        lambda op: (op.name, op.properties),
        lambda a: SetUserProperties(_str(a[1]), _str_pairs(a[2])),
    ),
    OpCode.ADD_FRONTEND: (
        AddFrontend,
        1,
        lambda op: (_encode_frontend(op.frontend),),
        lambda a: AddFrontend(_decode_frontend(a[1])),
    ),
    OpCode.UPDATE_FRONTEND: (
        UpdateFrontend,
        1,
        lambda op: (_encode_frontend(op.frontend),),
        lambda a: UpdateFrontend(_decode_frontend(a[1])),
    ),
    OpCode.DROP_FRONTEND: (
        DropFrontend,
        1,
        lambda op: (op.name,),
        lambda a: DropFrontend(_str(a[1])),
    ),
    OpCode.ADD_BACKEND: (
        AddBackend,
        1,
        lambda op: (_encode_backend(op.backend),),
        lambda a: AddBackend(_decode_backend(a[1])),
    ),
    OpCode.DROP_BACKEND: (
        DropBackend,
        1,
        lambda op: (op.backend_id,),
        lambda a: DropBackend(_int(a[1])),
    ),
    OpCode.TIMESTAMP: (
        Timestamp,
        1,
        lambda op: (op.millis,),
        lambda a: Timestamp(_int(a[1])),
    ),
    OpCode.NEXT_ID: (
        NextId,
        1,
        lambda op: (op.next_id,),
        lambda a: NextId(_int(a[1])),
    ),
    OpCode.SET_GLOBAL_VARIABLE: (
        SetGlobalVariable,
        2,
        lambda op: (op.name, op.value),
        lambda a: SetGlobalVariable(_str(a[1]), _str(a[2])),
    ),
    OpCode.CLIENT_REQUEST: (
        ClientRequest,
        1,
        lambda op: (op.request_id,),
        lambda a: ClientRequest(_request_id(a[1])),
    ),
    OpCode.RECYCLE_DATABASE: (
        RecycleDatabase,
        2,
        lambda op: (op.db_id, op.drop_time_ms),
        lambda a: RecycleDatabase(_int(a[1]), _int(a[2])),
    ),
    OpCode.RECYCLE_TABLE: (
        RecycleTable,
        2,
        lambda op: (op.table_id, op.drop_time_ms),
        lambda a: RecycleTable(_int(a[1]), _int(a[2])),
    ),
    OpCode.RECYCLE_PARTITION: (
        RecyclePartition,
        3,
        lambda op: (op.table_id, op.partition_id, op.drop_time_ms),
        lambda a: RecyclePartition(_int(a[1]), _int(a[2]), _int(a[3])),
    ),
    OpCode.RECOVER_DATABASE: (
        RecoverDatabase,
        2,
        lambda op: (op.db_id, op.name),
        lambda a: RecoverDatabase(_int(a[1]), _str(a[2])),
    ),
    OpCode.RECOVER_TABLE: (
        RecoverTable,
        2,
        lambda op: (op.table_id, op.name),
        lambda a: RecoverTable(_int(a[1]), _str(a[2])),
    ),
    OpCode.RECOVER_PARTITION: (
        RecoverPartition,
        2,
        lambda op: (op.partition_id, op.name),
        lambda a: RecoverPartition(_int(a[1]), _str(a[2])),
    ),
    OpCode.ERASE_RECYCLED: (
        EraseRecycled,
        1,
        lambda op: (op.entries,),
        lambda a: EraseRecycled(_int_pairs(a[1])),
    ),
    OpCode.TRUNCATE_TABLE: (
        TruncateTable,
        2,
        lambda op: (op.table_id, tuple(map(_encode_partition, op.partitions))),
        lambda a: TruncateTable(_int(a[1]), tuple(map(_decode_partition, _array(a[2])))),
    ),
    OpCode.SWAP_TABLES: (
        SwapTables,
        2,
        lambda op: (op.table_id, op.other_table_id),
        lambda a: SwapTables(_int(a[1]), _int(a[2])),
    ),
    OpCode.CREATE_ALTER_JOB: (
        CreateAlterJob,
        1,
        lambda op: (_encode_alter_job(op.job),),
        lambda a: CreateAlterJob(_decode_alter_job(a[1])),
    ),
    OpCode.UPDATE_ALTER_JOB: (
        UpdateAlterJob,
        4,
        lambda op: (op.job_id, op.state.value, op.time_ms, op.message),
        lambda a: UpdateAlterJob(_int(a[1]), _decode_alter_job_state(a[2]), _int(a[3]), _str(a[4])),
    ),
    OpCode.REMOVE_ALTER_JOBS: (
        RemoveAlterJobs,
        1,
        lambda op: (op.job_ids,),
        lambda a: RemoveAlterJobs(tuple(map(_int, _array(a[1])))),
    ),
    OpCode.SET_TABLE_STATS: (
        SetTableStats,
        1,
        lambda op: (_encode_table_stats(op.stats),),
        lambda a: SetTableStats(_decode_table_stats(a[1])),
    ),
    OpCode.DROP_TABLE_STATS: (
        DropTableStats,
        2,
        lambda op: (op.table_id, op.columns),
        lambda a: DropTableStats(_int(a[1]), tuple(map(_str, _array(a[2])))),
    ),
    OpCode.SET_LABELLED_JOB: (
        SetLabelledJob,
        1,
        lambda op: (_encode_labelled_job(op.job),),
        lambda a: SetLabelledJob(_decode_labelled_job(a[1])),
    ),
}

_OP_ENCODERS = {op_class: (code, encode) for code, (op_class, _, encode, _) in _OP_CODECS.items()}
_OP_DECODERS = {
    int(code): (arity + 1, decode) for code, (_, arity, _, decode) in _OP_CODECS.items()
}
ROLE_OP_CODES = frozenset(
    {
        OpCode.CREATE_ROLE,
        OpCode.DROP_ROLE,
        OpCode.GRANT_TO_ROLE,
        OpCode.REVOKE_FROM_ROLE,
        OpCode.GRANT_ROLE,
        OpCode.REVOKE_ROLE,
        OpCode.SET_USER_PROPERTIES,
    }
)
STATS_OP_CODES = frozenset({OpCode.SET_TABLE_STATS, OpCode.DROP_TABLE_STATS})
_OP_DECODERS_VERSION_7 = {
    code: entry for code, entry in _OP_DECODERS.items() if code != OpCode.SET_LABELLED_JOB
}
_OP_DECODERS_VERSION_6 = {
    code: entry for code, entry in _OP_DECODERS_VERSION_7.items() if code not in STATS_OP_CODES
}
_OP_DECODERS_VERSION_5 = {
    **{code: entry for code, entry in _OP_DECODERS_VERSION_6.items() if code not in ROLE_OP_CODES},
    int(OpCode.CREATE_USER): (2, lambda a: CreateUser(_decode_user_version_5(a[1]))),
}
_OP_DECODERS_VERSION_4 = {
    **_OP_DECODERS_VERSION_5,
    int(OpCode.CREATE_TABLE): (2, lambda a: CreateTable(_decode_table_version_4(a[1]))),
    int(OpCode.REPLACE_TABLE): (2, lambda a: ReplaceTable(_decode_table_version_4(a[1]))),
    int(OpCode.CREATE_ALTER_JOB): (2, lambda a: CreateAlterJob(_decode_alter_job_version_4(a[1]))),
}
_OP_DECODERS_VERSION_3 = {
    **_OP_DECODERS_VERSION_4,
    int(OpCode.CREATE_TABLE): (2, lambda a: CreateTable(_decode_table_version_3(a[1]))),
    int(OpCode.REPLACE_TABLE): (2, lambda a: ReplaceTable(_decode_table_version_3(a[1]))),
    int(OpCode.TRUNCATE_TABLE): (
        3,
        lambda a: TruncateTable(_int(a[1]), tuple(map(_decode_partition_version_3, _array(a[2])))),
    ),
    int(OpCode.ADD_FRONTEND): (2, lambda a: AddFrontend(_decode_frontend_version_3(a[1]))),
    int(OpCode.UPDATE_FRONTEND): (2, lambda a: UpdateFrontend(_decode_frontend_version_3(a[1]))),
}
_OP_DECODERS_VERSION_2 = {
    **{
        code: entry
        for code, entry in _OP_DECODERS_VERSION_3.items()
        if code != OpCode.CLIENT_REQUEST
    },
    int(OpCode.CREATE_TABLE): (2, lambda a: CreateTable(_decode_table_version_2(a[1]))),
    int(OpCode.REPLACE_TABLE): (2, lambda a: ReplaceTable(_decode_table_version_2(a[1]))),
}
_OP_DECODERS_OF_VERSION = {
    FORMAT_VERSION: _OP_DECODERS,
    7: _OP_DECODERS_VERSION_7,
    6: _OP_DECODERS_VERSION_6,
    5: _OP_DECODERS_VERSION_5,
    4: _OP_DECODERS_VERSION_4,
    3: _OP_DECODERS_VERSION_3,
    2: _OP_DECODERS_VERSION_2,
    1: {
        **{
            code: entry
            for code, entry in _OP_DECODERS_VERSION_2.items()
            if code != OpCode.SET_LOCKOUT_POLICY
        },
        int(OpCode.CREATE_USER): (2, lambda a: CreateUser(_decode_user_version_1(a[1]))),
    },
}
assert set(_OP_DECODERS_OF_VERSION) == SUPPORTED_VERSIONS


def supported_op_codes() -> frozenset[OpCode]:
    return frozenset(_OP_CODECS)


def encode_op(op: Op) -> tuple:
    entry = _OP_ENCODERS.get(type(op))
    if entry is None:
        raise CodecError(f"no encoding for operation {type(op).__name__}")
    code, encode = entry
    return (int(code), *encode(op))


def encode_ops(ops: Sequence[Op]) -> bytes:
    """One journal entry: the format version, then the operations in order."""
    if not 0 < len(ops) <= MAX_OPS_PER_BATCH:
        raise CodecError(f"a batch holds 1 to {MAX_OPS_PER_BATCH} operations, not {len(ops)}")
    data = bytes((FORMAT_VERSION,)) + msgpack.packb([encode_op(op) for op in ops])
    if len(data) > MAX_BATCH_BYTES:
        raise CodecError(f"batch of {len(data)} bytes exceeds the limit of {MAX_BATCH_BYTES}")
    return data


def decode_ops(data: bytes) -> list[Op]:
    """The operations of one journal entry; CodecError if the bytes are not a valid batch."""
    if not data:
        raise CodecError("empty batch")
    if len(data) > MAX_BATCH_BYTES:
        raise CodecError(f"batch of {len(data)} bytes exceeds the limit of {MAX_BATCH_BYTES}")
    version = data[0]
    if version not in SUPPORTED_VERSIONS:
        raise CodecError(f"unknown journal format version {version}")
    try:
        items = msgpack.unpackb(memoryview(data)[1:], use_list=False, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        raise CodecError(f"batch is not valid msgpack: {error}") from error
    if type(items) is not tuple or not 0 < len(items) <= MAX_OPS_PER_BATCH:
        raise CodecError(f"batch must be an array of 1 to {MAX_OPS_PER_BATCH} operations")
    ops = []
    decoders = _OP_DECODERS_OF_VERSION[version]
    for position, item in enumerate(items):
        if type(item) is not tuple or not item:
            raise CodecError(f"operation {position} is not an array: {item!r:.200}")
        entry = decoders.get(item[0]) if type(item[0]) is int else None
        if entry is None:
            raise CodecError(f"operation {position} has unknown op code {item[0]!r}")
        length, decode = entry
        if len(item) != length:
            raise CodecError(
                f"operation {position} ({OpCode(item[0]).name}) has {len(item) - 1} fields, "
                f"expected {length - 1}"
            )
        try:
            ops.append(decode(item))
        except CodecError as error:
            raise CodecError(f"operation {position} ({OpCode(item[0]).name}): {error}") from error
        except (TypeError, ValueError, KeyError) as error:
            raise CodecError(
                f"operation {position} ({OpCode(item[0]).name}) is malformed: {error!r}"
            ) from error
    return ops
