"""Journal operations: one record per catalog change, each with a stable code.

Codes never change meaning once released; a new field gets a new encoding version, not a new code.
The leader turns a statement into operations (allocating ids itself), the journal carries them,
and `Catalog.apply` replays them on every node in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from metadata.records import (
    AlterJob,
    AlterJobState,
    Backend,
    Database,
    Frontend,
    Grant,
    LabelledJobRecord,
    Partition,
    Role,
    Table,
    TableStats,
    User,
)


class OpCode(IntEnum):
    CREATE_DATABASE = 1
    DROP_DATABASE = 2
    CREATE_TABLE = 10
    DROP_TABLE = 11
    REPLACE_TABLE = 12  # ALTER TABLE and RENAME: the table's new definition, same id
    CREATE_USER = 20
    DROP_USER = 21
    SET_PASSWORD = 22
    GRANT = 23
    REVOKE = 24
    SET_LOCKOUT_POLICY = 25  # FAILED_LOGIN_ATTEMPTS, PASSWORD_LOCK_TIME, ACCOUNT UNLOCK
    CREATE_ROLE = 26
    DROP_ROLE = 27  # its users lose it too
    GRANT_TO_ROLE = 28
    REVOKE_FROM_ROLE = 29
    GRANT_ROLE = 35  # a role to a user
    REVOKE_ROLE = 36
    SET_USER_PROPERTIES = 37  # every account of the name
    ADD_FRONTEND = 30
    DROP_FRONTEND = 31
    UPDATE_FRONTEND = 34  # a joined FE reports its HTTP and query ports
    ADD_BACKEND = 32
    DROP_BACKEND = 33
    TIMESTAMP = 40  # TimePrinter
    NEXT_ID = 41
    SET_GLOBAL_VARIABLE = 42
    CLIENT_REQUEST = 43  # first in an entry: the forwarded statement's request id
    # The recycle bin: DROP without FORCE, RECOVER, and the leader's erase of expired objects.
    RECYCLE_DATABASE = 50
    RECYCLE_TABLE = 51
    RECYCLE_PARTITION = 52
    RECOVER_DATABASE = 53
    RECOVER_TABLE = 54
    RECOVER_PARTITION = 55
    ERASE_RECYCLED = 56
    TRUNCATE_TABLE = 57  # the named partitions replaced by empty ones with new ids and tablets
    SWAP_TABLES = 60  # ALTER TABLE t1 REPLACE WITH TABLE t2: the two tables trade names
    # ALTER jobs (schema changes and rollups): created by ALTER TABLE, advanced by the leader.
    CREATE_ALTER_JOB = 70
    UPDATE_ALTER_JOB = 71
    REMOVE_ALTER_JOBS = 72
    # Statistics: ANALYZE TABLE and DROP STATS.
    SET_TABLE_STATS = 80  # the columns it names replace theirs; the others are kept
    DROP_TABLE_STATS = 81  # of the columns it names, or of all when it names none
    # Jobs of S3 Load and EXPORT: each state an FE runs one through.
    SET_LABELLED_JOB = 90  # replaces the job of its kind, database and label


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    CODE = OpCode.CREATE_DATABASE
    database: Database


@dataclass(frozen=True, slots=True)
class DropDatabase:
    CODE = OpCode.DROP_DATABASE
    db_id: int


@dataclass(frozen=True, slots=True)
class CreateTable:
    CODE = OpCode.CREATE_TABLE
    table: Table


@dataclass(frozen=True, slots=True)
class DropTable:
    CODE = OpCode.DROP_TABLE
    table_id: int


@dataclass(frozen=True, slots=True)
class ReplaceTable:
    CODE = OpCode.REPLACE_TABLE
    table: Table


@dataclass(frozen=True, slots=True)
class CreateUser:
    CODE = OpCode.CREATE_USER
    user: User


@dataclass(frozen=True, slots=True)
class DropUser:
    CODE = OpCode.DROP_USER
    name: str
    host: str


@dataclass(frozen=True, slots=True)
class SetPassword:
    CODE = OpCode.SET_PASSWORD
    name: str
    host: str
    password_hash: str


@dataclass(frozen=True, slots=True)
class GrantPrivileges:
    CODE = OpCode.GRANT
    name: str
    host: str
    grant: Grant


@dataclass(frozen=True, slots=True)
class RevokePrivileges:
    CODE = OpCode.REVOKE
    name: str
    host: str
    grant: Grant


@dataclass(frozen=True, slots=True)
class SetLockoutPolicy:
    """The account's lock-out policy; a new `lockout_epoch` unlocks it and resets its count."""

    CODE = OpCode.SET_LOCKOUT_POLICY
    name: str
    host: str
    failed_login_attempts: int
    password_lock_seconds: int
    lockout_epoch: int


@dataclass(frozen=True, slots=True)
class CreateRole:
    CODE = OpCode.CREATE_ROLE
    role: Role


@dataclass(frozen=True, slots=True)
class DropRole:
    CODE = OpCode.DROP_ROLE
    name: str


@dataclass(frozen=True, slots=True)
class GrantToRole:
    CODE = OpCode.GRANT_TO_ROLE
    role: str
    grant: Grant


@dataclass(frozen=True, slots=True)
class RevokeFromRole:
    CODE = OpCode.REVOKE_FROM_ROLE
    role: str
    grant: Grant


@dataclass(frozen=True, slots=True)
class GrantRole:
    CODE = OpCode.GRANT_ROLE
    name: str
    host: str
    role: str


@dataclass(frozen=True, slots=True)
class RevokeRole:
    CODE = OpCode.REVOKE_ROLE
    name: str
    host: str
    role: str


@dataclass(frozen=True, slots=True)
class SetUserProperties:
    """Doris's SET PROPERTY FOR 'name': the properties of every account of the name (merged
    into theirs, by key)."""

    CODE = OpCode.SET_USER_PROPERTIES
    name: str
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """The entry carries the statement another FE forwarded with this id: a second entry with the
    same id (a retry) changes nothing and gets the first one's outcome."""

    CODE = OpCode.CLIENT_REQUEST
    request_id: str


@dataclass(frozen=True, slots=True)
class AddFrontend:
    CODE = OpCode.ADD_FRONTEND
    frontend: Frontend


@dataclass(frozen=True, slots=True)
class DropFrontend:
    CODE = OpCode.DROP_FRONTEND
    name: str


@dataclass(frozen=True, slots=True)
class UpdateFrontend:
    CODE = OpCode.UPDATE_FRONTEND
    frontend: Frontend


@dataclass(frozen=True, slots=True)
class AddBackend:
    CODE = OpCode.ADD_BACKEND
    backend: Backend


@dataclass(frozen=True, slots=True)
class DropBackend:
    CODE = OpCode.DROP_BACKEND
    backend_id: int


@dataclass(frozen=True, slots=True)
class Timestamp:
    CODE = OpCode.TIMESTAMP
    millis: int


@dataclass(frozen=True, slots=True)
class NextId:
    """Raises the catalog's next-id counter to at least `next_id` (ids reserved by the leader)."""

    CODE = OpCode.NEXT_ID
    next_id: int


@dataclass(frozen=True, slots=True)
class SetGlobalVariable:
    CODE = OpCode.SET_GLOBAL_VARIABLE
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class RecycleDatabase:
    """DROP DATABASE without FORCE: the database and its tables move to the recycle bin."""

    CODE = OpCode.RECYCLE_DATABASE
    db_id: int
    drop_time_ms: int  # the leader's clock: when the bin's entry expires follows from it


@dataclass(frozen=True, slots=True)
class RecycleTable:
    CODE = OpCode.RECYCLE_TABLE
    table_id: int
    drop_time_ms: int


@dataclass(frozen=True, slots=True)
class RecyclePartition:
    CODE = OpCode.RECYCLE_PARTITION
    table_id: int
    partition_id: int
    drop_time_ms: int


@dataclass(frozen=True, slots=True)
class RecoverDatabase:
    """The recycled database back under `name` (its own or RECOVER ... AS's), with its tables."""

    CODE = OpCode.RECOVER_DATABASE
    db_id: int
    name: str


@dataclass(frozen=True, slots=True)
class RecoverTable:
    """The recycled table back into its database under `name`."""

    CODE = OpCode.RECOVER_TABLE
    table_id: int
    name: str


@dataclass(frozen=True, slots=True)
class RecoverPartition:
    """The recycled partition back into the table it was dropped from, under `name`."""

    CODE = OpCode.RECOVER_PARTITION
    partition_id: int
    name: str


@dataclass(frozen=True, slots=True)
class EraseRecycled:
    """The leader's erase of expired entries, each named by (id, drop_time_ms): an entry
    recovered, or recovered and dropped again, since the leader looked is left alone."""

    CODE = OpCode.ERASE_RECYCLED
    entries: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class TruncateTable:
    """TRUNCATE TABLE: each of `partitions` replaces the table's partition of the same name
    (same bounds, new id and tablets), so a data plane drops the old tablets' rows."""

    CODE = OpCode.TRUNCATE_TABLE
    table_id: int
    partitions: tuple[Partition, ...]


@dataclass(frozen=True, slots=True)
class SwapTables:
    """Two tables of one database trade names (an unpartitioned table's partition is named as
    its table, so it is renamed with it)."""

    CODE = OpCode.SWAP_TABLES
    table_id: int
    other_table_id: int


@dataclass(frozen=True, slots=True)
class CreateAlterJob:
    CODE = OpCode.CREATE_ALTER_JOB
    job: AlterJob


@dataclass(frozen=True, slots=True)
class UpdateAlterJob:
    """The job moves to `state` (the next one, or CANCELLED) at the leader's `time_ms`; on
    FINISHED its table takes the job's definition."""

    CODE = OpCode.UPDATE_ALTER_JOB
    job_id: int
    state: AlterJobState
    time_ms: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class SetTableStats:
    CODE = OpCode.SET_TABLE_STATS
    stats: TableStats


@dataclass(frozen=True, slots=True)
class SetLabelledJob:
    CODE = OpCode.SET_LABELLED_JOB
    job: LabelledJobRecord


@dataclass(frozen=True, slots=True)
class DropTableStats:
    CODE = OpCode.DROP_TABLE_STATS
    table_id: int
    columns: tuple[str, ...]  # () for all


@dataclass(frozen=True, slots=True)
class RemoveAlterJobs:
    """The leader forgets done jobs kept longer than history_job_keep_max_second."""

    CODE = OpCode.REMOVE_ALTER_JOBS
    job_ids: tuple[int, ...]


Op = (
    CreateDatabase
    | DropDatabase
    | CreateTable
    | DropTable
    | ReplaceTable
    | CreateUser
    | DropUser
    | SetPassword
    | GrantPrivileges
    | RevokePrivileges
    | SetLockoutPolicy
    | CreateRole
    | DropRole
    | GrantToRole
    | RevokeFromRole
    | GrantRole
    | RevokeRole
    | SetUserProperties
    | AddFrontend
    | DropFrontend
    | UpdateFrontend
    | AddBackend
    | DropBackend
    | Timestamp
    | NextId
    | SetGlobalVariable
    | ClientRequest
    | RecycleDatabase
    | RecycleTable
    | RecyclePartition
    | RecoverDatabase
    | RecoverTable
    | RecoverPartition
    | EraseRecycled
    | TruncateTable
    | SwapTables
    | CreateAlterJob
    | UpdateAlterJob
    | RemoveAlterJobs
    | SetTableStats
    | DropTableStats
    | SetLabelledJob
)
