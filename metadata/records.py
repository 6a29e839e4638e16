"""The catalog's objects.

Every record is immutable. `apply` replaces a record instead of changing it, so a shallow copy
of the catalog's top-level dicts is a consistent snapshot (what the image writer uses) that costs
one pointer per object, not a second catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from metadata.types import ColumnType, parse_column_type


class KeyModel(StrEnum):
    DUPLICATE = "DUPLICATE"
    UNIQUE = "UNIQUE"
    AGGREGATE = "AGGREGATE"


class PartitionKind(StrEnum):
    RANGE = "RANGE"
    LIST = "LIST"


class FrontendRole(StrEnum):
    FOLLOWER = "FOLLOWER"
    OBSERVER = "OBSERVER"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: ColumnType  # may be given as its SQL text ("VARCHAR(20)"): it is parsed then
    nullable: bool = True
    default: str | None = None  # the default as SQL text ("0", "'abc'", "CURRENT_TIMESTAMP")
    comment: str = ""
    is_key: bool = False
    aggregation: str | None = None  # SUM, MAX, MIN, REPLACE, ... for AGGREGATE KEY tables
    auto_increment: bool = False
    # Unique within its table and never reused there; kept by RENAME and MODIFY, so that rows
    # written before follow the column. 0 until the table it joins assigns one (Table).
    id: int = field(default=0, compare=False)
    # What rows written before the column was added read: its default then (the default may
    # change later; those rows keep this value, as if the ADD had written it into them).
    backfill: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        assert self.id >= 0, self
        if isinstance(self.type, str):
            object.__setattr__(self, "type", parse_column_type(self.type))
        assert isinstance(self.type, ColumnType), self.type


@dataclass(frozen=True, slots=True)
class Partition:
    id: int
    name: str
    # RANGE partition bounds as SQL literal tuples; () for an unbounded side.
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()  # exclusive ("VALUES LESS THAN"); () means MAXVALUE
    tablet_start: int = 0  # tablets are ids tablet_start .. tablet_start + buckets - 1
    buckets: int = 1
    # LIST partition values: one tuple of SQL literals (one per partition column) per value.
    values: tuple[tuple[str, ...], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()  # its own, e.g. replication_num
    # The tablets of each rollup in this partition: (rollup id, its first tablet id), `buckets`
    # tablets each, like the base index's.
    rollup_tablets: tuple[tuple[int, int], ...] = ()

    @property
    def tablet_ids(self) -> range:
        return range(self.tablet_start, self.tablet_start + self.buckets)


@dataclass(frozen=True, slots=True)
class Rollup:
    """A materialized index of a table: some of its columns, in their own key order."""

    id: int
    name: str
    columns: tuple[str, ...]  # key columns first
    key_columns: tuple[str, ...]
    schema_version: int = 1

    def __post_init__(self) -> None:
        assert self.columns[: len(self.key_columns)] == self.key_columns, self


@dataclass(frozen=True, slots=True)
class Table:
    id: int
    db_id: int
    name: str
    columns: tuple[Column, ...]
    key_model: KeyModel = KeyModel.DUPLICATE
    key_columns: tuple[str, ...] = ()
    distribution_columns: tuple[str, ...] = ()  # () means DISTRIBUTED BY RANDOM
    buckets: int = 1
    partition_columns: tuple[
        str, ...
    ] = ()  # () means not partitioned (one partition, named as the table)
    partitions: tuple[Partition, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    comment: str = ""
    engine: str = "olap"
    # 1 at CREATE TABLE; the catalog's apply adds 1 whenever the columns or the keys change.
    schema_version: int = 1
    partition_kind: PartitionKind = PartitionKind.RANGE  # of partition_columns, if any
    temporary_partitions: tuple[Partition, ...] = ()  # ADD TEMPORARY PARTITION, not yet swapped in
    rollups: tuple[Rollup, ...] = ()

    def __post_init__(self) -> None:
        if any(not column.id for column in self.columns):
            object.__setattr__(self, "columns", _with_column_ids(self.columns, self.schema_version))

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        for column in self.columns:
            if column.name.lower() == lowered:
                return column
        return None

    def with_property(self, key: str, value: str | None) -> Table:
        """The table with property key last and set to value (None: without it), the others
        as they are."""
        properties = tuple(item for item in self.properties if item[0] != key)
        if value is not None:
            properties = (*properties, (key, value))
        return replace(self, properties=properties)

    @property
    def sequence_column(self) -> str | None:
        """UNIQUE KEY: the column whose larger value keeps a key's row (Doris's sequence_col)."""
        return next((v for k, v in self.properties if k == SEQUENCE_COLUMN_PROPERTY), None)


SEQUENCE_COLUMN_PROPERTY = "function_column.sequence_col"
# Quire's own properties of a table (auto partitions, a view's query and maker): never shown,
# never given by a user.
HIDDEN_PROPERTY_PREFIX = "quire."
COLUMN_POSITIONS = (
    1 << 16
)  # a column id: (a generation, its position) as generation << 16 | position


def _with_column_ids(columns: tuple[Column, ...], schema_version: int) -> tuple[Column, ...]:
    """Columns without an id get one from their position and a generation: 1 for a table's first
    columns (a new table's, or every column of a table an older catalog wrote), else the schema
    version the table had before the change added them, plus 1. Every change of columns raises
    the version, so ids are never reused: a column dropped and added again is another. Their
    backfill is their default now, unless the change fixed one (a time for CURRENT_TIMESTAMP)."""
    assert len(columns) < COLUMN_POSITIONS
    generation = schema_version + 1 if any(column.id for column in columns) else 1
    first = generation * COLUMN_POSITIONS
    columns = tuple(
        column
        if column.id
        else replace(
            column,
            id=first + position,
            backfill=column.default if column.backfill is None else column.backfill,
        )
        for position, column in enumerate(columns)
    )
    ids = [column.id for column in columns]
    assert len(ids) == len(set(ids)), ids
    return columns


@dataclass(frozen=True, slots=True)
class Database:
    id: int
    name: str
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Grant:
    """Privileges on one object: db "*" and table "*" is global, table "*" is a whole database."""

    db: str
    table: str
    privileges: frozenset[str]


LOCKED_UNTIL_UNLOCK = -1  # PASSWORD_LOCK_TIME UNBOUNDED


@dataclass(frozen=True, slots=True)
class User:
    name: str
    host: str = "%"
    password_hash: str = (
        ""  # mysql_native_password hash: "*" + hex(SHA1(SHA1(password))), "" = none
    )
    grants: tuple[Grant, ...] = ()
    # The lock-out policy (FAILED_LOGIN_ATTEMPTS, PASSWORD_LOCK_TIME); 0 in either turns it off.
    failed_login_attempts: int = 0
    password_lock_seconds: int = 0  # LOCKED_UNTIL_UNLOCK: UNBOUNDED
    # An id the leader draws whenever the account's failed-login count and lock must start
    # afresh (creation, a new policy, ACCOUNT UNLOCK): each FE's login tracker compares it.
    lockout_epoch: int = 0
    roles: tuple[str, ...] = ()  # granted to it, sorted: their privileges are its own too
    # Doris's user properties (SET PROPERTY), by key, sorted: kept alike on every account of
    # the name, as Doris keeps them for the user name
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def identity(self) -> str:
        return f"'{self.name}'@'{self.host}'"

    @property
    def tracks_failed_logins(self) -> bool:
        return self.failed_login_attempts > 0 and self.password_lock_seconds != 0


@dataclass(frozen=True, slots=True)
class Role:
    """Privileges held under a name and granted to users as one (Doris's and MySQL's roles)."""

    name: str
    comment: str = ""
    grants: tuple[Grant, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """What became of a statement another FE forwarded under request_id, kept so that a retry of
    it (after the leader died before answering) is answered from here instead of run again."""

    request_id: str
    journal_id: int  # the journal id its entry reached
    refusal: str = ""  # the ApplyError class that refused one of its operations; "" if none
    message: str = ""  # the refusal's message
    refused_op: bytes = b""  # that operation, as the codec encodes a batch of one


# A frontend's connection ids carry its connection prefix in their high bits (one byte).
CONNECTION_PREFIXES = 256
NO_CONNECTION_PREFIX = -1  # not given yet: the catalog gives the lowest free one when it adds it


@dataclass(frozen=True, slots=True)
class Frontend:
    name: str
    host: str
    edit_log_port: int
    http_port: int = 0
    query_port: int = 0
    role: FrontendRole = FrontendRole.FOLLOWER
    connection_prefix: int = NO_CONNECTION_PREFIX

    def __post_init__(self) -> None:
        assert NO_CONNECTION_PREFIX <= self.connection_prefix < CONNECTION_PREFIXES, self


@dataclass(frozen=True, slots=True)
class Backend:
    id: int
    host: str
    heartbeat_port: int
    properties: tuple[tuple[str, str], ...] = field(default=())


class RecycledKind(StrEnum):
    DATABASE = "Database"
    TABLE = "Table"
    PARTITION = "Partition"


@dataclass(frozen=True, slots=True)
class RecycledObject:
    """A dropped database, table or partition, kept in the recycle bin for RECOVER until the
    leader erases it (catalog_trash_expire_second after drop_time_ms, the leader's clock).

    A database keeps its tables with it; a table is `tables[0]`; a partition keeps the ids of
    the table it was dropped from."""

    kind: RecycledKind
    drop_time_ms: int
    db_id: int
    table_id: int = -1
    database: Database | None = None  # DATABASE
    tables: tuple[Table, ...] = ()  # DATABASE: its tables at the drop; TABLE: the table
    partition: Partition | None = None  # PARTITION

    def __post_init__(self) -> None:
        match self.kind:
            case RecycledKind.DATABASE:
                assert self.database is not None and self.database.id == self.db_id
                assert all(table.db_id == self.db_id for table in self.tables)
            case RecycledKind.TABLE:
                assert len(self.tables) == 1 and self.tables[0].id == self.table_id
            case RecycledKind.PARTITION:
                assert self.partition is not None and self.table_id >= 0

    @property
    def id(self) -> int:
        """The id the bin keys it by: the database's, table's or partition's (ids are unique)."""
        match self.kind:
            case RecycledKind.DATABASE:
                return self.db_id
            case RecycledKind.TABLE:
                return self.table_id
        assert self.partition is not None
        return self.partition.id

    @property
    def name(self) -> str:
        match self.kind:
            case RecycledKind.DATABASE:
                assert self.database is not None
                return self.database.name
            case RecycledKind.TABLE:
                return self.tables[0].name
        assert self.partition is not None
        return self.partition.name


class AlterJobType(StrEnum):
    SCHEMA_CHANGE = "SCHEMA_CHANGE"  # SHOW ALTER TABLE COLUMN
    ROLLUP = "ROLLUP"  # SHOW ALTER TABLE ROLLUP


class AlterJobState(StrEnum):
    """Doris's AlterJobV2 states, in the order a job passes them; CANCELLED from any unfinished."""

    PENDING = "PENDING"
    WAITING_TXN = "WAITING_TXN"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELLED = "CANCELLED"

    @property
    def done(self) -> bool:
        return self in (AlterJobState.FINISHED, AlterJobState.CANCELLED)


@dataclass(frozen=True, slots=True)
class AlterJob:
    """A schema change or a rollup being built, as Doris's AlterJobV2: the table keeps its
    definition until the job is FINISHED, then takes the job's."""

    id: int
    job_type: AlterJobType
    db_id: int
    table_id: int
    table_name: str
    index_name: str  # SCHEMA_CHANGE: the base index (named as the table); ROLLUP: the rollup
    index_id: int  # the new index's id
    origin_index_name: str  # SCHEMA_CHANGE: the index changed; ROLLUP: the index it is built from
    origin_index_id: int
    create_time_ms: int
    timeout_ms: int
    state: AlterJobState = AlterJobState.PENDING
    finish_time_ms: int = -1  # when FINISHED or CANCELLED; -1 until then
    message: str = ""
    schema_version: int = 1  # of the changed index once done
    # SCHEMA_CHANGE: the table's columns, keys and rollups once done.
    table: Table | None = None
    # ROLLUP: the rollup, and its first tablet in each partition: (partition id, tablet id).
    rollup: Rollup | None = None
    rollup_tablets: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.job_type == AlterJobType.SCHEMA_CHANGE:
            assert self.table is not None and self.rollup is None, self.id
        else:
            assert self.rollup is not None and self.table is None, self.id
        assert self.state.done == (self.finish_time_ms >= 0), self


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What ANALYZE TABLE found of a column: its values counted, told apart and measured."""

    column: str
    count: int  # rows
    ndv: int  # distinct values, NULL not one
    nulls: int
    data_size: int  # bytes of its values
    min: str | None  # the least value as SQL text; None when every value is NULL
    max: str | None


@dataclass(frozen=True, slots=True)
class LabelledJobRecord:
    """A job an FE ran for a statement that answered at once (S3 Load, EXPORT), as its FE last
    journaled it: what SHOW LOAD and SHOW EXPORT show on every FE, and after its FE is gone."""

    kind: str  # LOAD | EXPORT
    db: str
    label: str
    job_id: int
    user: str
    tables: tuple[str, ...]
    timeout_seconds: int
    created_ms: int
    state: str
    started_ms: int = 0
    finished_ms: int = 0
    message: str = ""
    runner: str = ""  # the journal address (host:port) of the FE that runs it
    details: tuple[tuple[str, str], ...] = ()  # what its kind shows of it, sorted by key

    def __post_init__(self) -> None:
        assert self.kind in LABELLED_JOB_KINDS and self.label and self.job_id > 0, self


LABELLED_JOB_KINDS = ("LOAD", "EXPORT")


@dataclass(frozen=True, slots=True)
class TableStats:
    """A table's statistics as its last ANALYZE left them (SHOW TABLE / COLUMN STATS)."""

    table_id: int
    row_count: int
    updated_ms: int
    columns: tuple[ColumnStats, ...]
