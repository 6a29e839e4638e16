"""What the front's parser produces: one small record per statement kind.

Queries are sqlglot expressions (planned by fe/statements/queries.py), SET a sqlglot expression
inside `SetStatement`; the Doris and administration statements that sqlglot does not know get
their own records here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from metadata.records import Column, KeyModel, PartitionKind


@dataclass(frozen=True)
class TableName:
    db: str | None
    name: str


@dataclass(frozen=True)
class UserName:
    name: str
    host: str = "%"


@dataclass(frozen=True)
class PartitionDef:
    name: str
    lower: tuple[str, ...] | None = None  # None: VALUES LESS THAN; () the least values
    upper: tuple[str, ...] = ()  # () = MAXVALUE
    values: tuple[tuple[str, ...], ...] = ()  # VALUES IN: one tuple per value
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BatchPartitionDef:
    """FROM (start) TO (end) INTERVAL n [unit]: range partitions of n units each."""

    start: tuple[str, ...]
    end: tuple[str, ...]
    interval: int
    unit: str | None = None  # None: integer steps
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SetStatement:
    expression: exp.Set


@dataclass(frozen=True)
class Use:
    db: str


@dataclass(frozen=True)
class CreateDatabase:
    name: str
    if_not_exists: bool = False
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DropDatabase:
    name: str
    if_exists: bool = False
    force: bool = False  # FORCE: erased at once, not kept in the recycle bin


@dataclass(frozen=True)
class CreateTable:
    table: TableName
    columns: tuple[Column, ...]
    if_not_exists: bool = False
    key_model: KeyModel | None = None
    key_columns: tuple[str, ...] = ()
    distribution_columns: tuple[str, ...] = ()
    buckets: int | None = None
    partition_columns: tuple[str, ...] = ()
    partition_kind: PartitionKind = PartitionKind.RANGE
    partitions: tuple[PartitionDef | BatchPartitionDef, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    comment: str = ""
    indexes: tuple[IndexDef, ...] = ()  # Doris's INDEX clauses
    mysql_keys: tuple[str, ...] = ()  # the names of MySQL's KEY and INDEX clauses (not kept)
    generated_columns: tuple[tuple[str, str], ...] = ()  # (column, its expression as written)
    cluster_keys: ClusterKeys | None = None
    engine: str = "olap"
    rollups: tuple[AddRollup, ...] = ()
    query: str | None = None  # CREATE TABLE ... AS SELECT: the query's text
    column_names: tuple[str, ...] = ()  # CREATE TABLE t (a, b) AS SELECT: its columns' names
    auto_partition: str = ""  # AUTO PARTITION BY RANGE: date_trunc's unit; BY LIST: "list"
    # CREATE MATERIALIZED VIEW ... REFRESH ... AS query (Doris's asynchronous one): a table of
    # the query's rows, filled again by REFRESH MATERIALIZED VIEW; deferred: BUILD DEFERRED
    materialized: bool = False
    deferred: bool = False
    refresh_every: int = 0  # ON SCHEDULE EVERY n unit: its seconds (0: ON MANUAL)
    refresh_starts: str = ""  # STARTS 'datetime': not refreshed before it


@dataclass(frozen=True)
class ClusterKeys:
    """Doris's cluster keys of a merge-on-write UNIQUE KEY table: `CLUSTER BY (...)` (3.0) or
    `ORDER BY (...)` (as later versions write it), the word kept for its messages."""

    word: str  # CLUSTER or ORDER
    columns: tuple[str, ...]


@dataclass(frozen=True)
class CreateTableLike:
    table: TableName
    source: TableName
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateView:
    """CREATE [OR REPLACE] VIEW and ALTER VIEW (alter: the view must exist)."""

    view: TableName
    query: str  # the query's text, as written
    column_names: tuple[str, ...] = ()
    if_not_exists: bool = False
    or_replace: bool = False
    alter: bool = False
    comment: str = ""


@dataclass(frozen=True)
class DropView:
    views: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class DropTable:
    table: TableName
    if_exists: bool = False
    force: bool = False
    more_tables: tuple[TableName, ...] = ()  # DROP TABLE a, b, db.c
    materialized: bool = False  # DROP MATERIALIZED VIEW mv: an asynchronous view's table

    @property
    def tables(self) -> tuple[TableName, ...]:
        return (self.table, *self.more_tables)


@dataclass(frozen=True)
class AddColumn:
    column: Column
    after: str | None = None
    first: bool = False
    rollup: str | None = None  # TO r: the column goes into rollup r too


@dataclass(frozen=True)
class DropColumn:
    name: str
    rollup: str | None = None  # FROM r: from rollup r only


@dataclass(frozen=True)
class ModifyColumn:
    column: Column
    after: str | None = None
    first: bool = False
    rollup: str | None = None


@dataclass(frozen=True)
class ReorderColumns:
    """ORDER BY (k2, k1, v1): every column of the index, keys first."""

    columns: tuple[str, ...]
    rollup: str | None = None


@dataclass(frozen=True)
class AddRollup:
    name: str
    columns: tuple[str, ...]
    duplicate_keys: tuple[str, ...] = ()
    base: str | None = None  # FROM base: the index it is built from
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DropRollup:
    name: str
    properties: tuple[tuple[str, str], ...] = ()
    if_exists: bool = False  # DROP MATERIALIZED VIEW IF EXISTS


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True)
class RenameTable:
    new_name: str


@dataclass(frozen=True)
class AddPartition:
    partition: PartitionDef
    buckets: int | None = None
    distribution_columns: tuple[str, ...] | None = None  # DISTRIBUTED BY HASH(...): () = RANDOM
    temporary: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class RenamePartition:
    """Doris's ALTER TABLE t RENAME PARTITION old new."""

    old: str
    new: str


@dataclass(frozen=True)
class RenameRollup:
    """Doris's ALTER TABLE t RENAME ROLLUP old new."""

    old: str
    new: str


@dataclass(frozen=True)
class DropPartition:
    name: str
    if_exists: bool = False
    force: bool = False
    temporary: bool = False


@dataclass(frozen=True)
class ModifyPartition:
    names: tuple[str, ...]  # () = (*), every partition
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ReplacePartition:
    partitions: tuple[str, ...]
    temporary_partitions: tuple[str, ...]
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ReplaceWithTable:
    table: str
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SetTableProperties:
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ModifyTableComment:
    """Doris's ALTER TABLE t MODIFY COMMENT 'text'."""

    comment: str


@dataclass(frozen=True)
class ToggleKeys:
    """MySQL's ALTER TABLE t DISABLE KEYS / ENABLE KEYS (mysqldump's): a no-op, as InnoDB's."""


@dataclass(frozen=True)
class EnableFeature:
    """Doris's ALTER TABLE t ENABLE FEATURE "name" [WITH PROPERTIES (...)]."""

    name: str
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class IndexDef:
    """Doris's `INDEX name (column) [USING INVERTED | NGRAM_BF | BITMAP] [PROPERTIES (...)]
    [COMMENT '...']`, as CREATE TABLE, CREATE INDEX and ALTER TABLE ADD INDEX write it."""

    name: str
    columns: tuple[str, ...]
    kind: str = "INVERTED"
    properties: tuple[tuple[str, str], ...] = ()
    comment: str = ""


@dataclass(frozen=True)
class AddIndex:
    """ALTER TABLE ... ADD INDEX (and CREATE INDEX)."""

    index: IndexDef
    if_not_exists: bool = False


@dataclass(frozen=True)
class AddMysqlKey:
    """CREATE INDEX of a kind Doris has none of: only its name is kept (for DROP INDEX)."""

    name: str
    columns: tuple[str, ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropIndexClause:
    """ALTER TABLE ... DROP INDEX name (and DROP INDEX name ON t)."""

    name: str
    if_exists: bool = False


AlterAction = (
    EnableFeature
    | AddColumn
    | DropColumn
    | ModifyColumn
    | ReorderColumns
    | AddRollup
    | DropRollup
    | RenameColumn
    | RenameTable
    | AddPartition
    | DropPartition
    | ModifyPartition
    | ReplacePartition
    | ReplaceWithTable
    | SetTableProperties
    | ModifyTableComment
    | RenamePartition
    | RenameRollup
    | ToggleKeys
    | AddIndex
    | AddMysqlKey
    | DropIndexClause
)


@dataclass(frozen=True)
class AlterTable:
    table: TableName
    actions: tuple[AlterAction, ...]
    if_not_exists: bool = False  # CREATE MATERIALIZED VIEW IF NOT EXISTS: a rollup of that name


@dataclass(frozen=True)
class LockoutOptions:
    """FAILED_LOGIN_ATTEMPTS n, PASSWORD_LOCK_TIME (in seconds; -1 UNBOUNDED), ACCOUNT UNLOCK;
    None where the statement does not say."""

    failed_login_attempts: int | None = None
    password_lock_seconds: int | None = None
    unlock: bool = False


@dataclass(frozen=True)
class CreateUser:
    user: UserName
    password: str | None = None  # plain text
    password_hash: str | None = None  # IDENTIFIED BY PASSWORD '*...'
    if_not_exists: bool = False
    lockout: LockoutOptions = LockoutOptions()
    default_role: str | None = None  # Doris's DEFAULT ROLE: the role granted to the new user


@dataclass(frozen=True)
class AlterUser:
    user: UserName
    if_exists: bool = False
    new_password: SetPassword | None = None  # IDENTIFIED BY ...
    lockout: LockoutOptions = LockoutOptions()


@dataclass(frozen=True)
class DropUser:
    user: UserName
    if_exists: bool = False


@dataclass(frozen=True)
class SetPassword:
    user: UserName | None  # None = the current user
    password: str | None = None
    password_hash: str | None = None


@dataclass(frozen=True)
class GrantStatement:
    privileges: tuple[str, ...]
    db: str  # "*" for all
    table: str  # "*" for all
    user: UserName | None  # None: to (from) a role
    revoke: bool = False
    role: str | None = None


@dataclass(frozen=True)
class GrantRoles:
    """GRANT 'r1', 'r2' TO user (REVOKE ... FROM user)."""

    roles: tuple[str, ...]
    user: UserName
    revoke: bool = False


@dataclass(frozen=True)
class SetProperty:
    """Doris's SET PROPERTY [FOR 'name'] 'key' = 'value', ..."""

    name: str | None  # None: the current user
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ShowProperty:
    name: str | None  # None: the current user
    like: str | None = None


@dataclass(frozen=True)
class CreateRole:
    names: tuple[str, ...]
    if_not_exists: bool = False
    comment: str = ""


@dataclass(frozen=True)
class DropRole:
    names: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class Show:
    """SHOW statements: `what` names the kind, the other fields are its arguments."""

    what: str
    db: str | None = None
    table: TableName | None = None
    like: str | None = None
    full: bool = False
    is_global: bool = False
    user: UserName | None = None
    path: str | None = None
    # SHOW PARTITIONS' [WHERE c = v | c LIKE 'p' AND ...] [ORDER BY ...] [LIMIT n [OFFSET m]]
    where: tuple[tuple[str, str, object], ...] = ()  # (column, "=" or "LIKE", value)
    order_by: tuple[OrderBy, ...] = ()
    limit: int | None = None
    offset: int = 0


@dataclass(frozen=True)
class ShowTransaction:
    """Doris's SHOW TRANSACTION [FROM db] WHERE id = n | label = 'l' | status = 's'."""

    db: str | None
    where: tuple[str, object] | None


@dataclass(frozen=True)
class OrderBy:
    column: str  # a title of the SHOW's result, matched without regard to case
    descending: bool = False


@dataclass(frozen=True)
class ShowData:
    """SHOW DATA [FROM [db.]t] [ORDER BY ...]: the current database's tables, a table's
    indexes, or with no current database every database's."""

    table: TableName | None = None
    order_by: tuple[OrderBy, ...] = ()


@dataclass(frozen=True)
class ShowTablets:
    """SHOW TABLETS FROM [db.]t [PARTITION (p, ...)] [WHERE ...] [ORDER BY ...] [LIMIT ...]."""

    table: TableName
    partitions: tuple[str, ...] = ()  # () means every partition
    where: tuple[tuple[str, object], ...] = ()  # (title, value) pairs joined by AND
    order_by: tuple[OrderBy, ...] = ()
    limit: int | None = None
    offset: int = 0


@dataclass(frozen=True)
class ShowTablet:
    tablet_id: int


@dataclass(frozen=True)
class ShowDataSkew:
    """Doris's SHOW DATA SKEW FROM [db.]t [PARTITION (p, ...)]."""

    table: TableName
    partitions: tuple[str, ...] = ()  # () means every partition, temporary ones too


@dataclass(frozen=True)
class ShowReplicaStatus:
    """Doris's [ADMIN] SHOW REPLICA STATUS FROM [db.]t [PARTITION (p, ...)] [WHERE STATUS = 's'
    | STATUS != 's']."""

    table: TableName
    partitions: tuple[str, ...] = ()
    where: tuple[str, str, object] | None = None  # (column, "=" or "!=", value), as written


@dataclass(frozen=True)
class ShowReplicaDistribution:
    """Doris's [ADMIN] SHOW REPLICA DISTRIBUTION FROM [db.]t [PARTITION (p, ...)]."""

    table: TableName
    partitions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Describe:
    table: TableName


@dataclass(frozen=True)
class Switch:
    catalog: str


@dataclass(frozen=True)
class LockTables:
    """MySQL's LOCK TABLES t READ, ... (mysqldump's): checked, and a no-op, as Doris's; UNLOCK
    TABLES names none. Quire's reads are snapshots: no lock is needed to read a table whole."""

    tables: tuple[TableName, ...] = ()


@dataclass(frozen=True)
class ShowAnalyze:
    """Doris's SHOW ANALYZE [table | job id] [WHERE STATE = '...']."""

    table: TableName | None = None
    job_id: int | None = None
    state: str | None = None


@dataclass(frozen=True)
class SelectIntoOutfile:
    """Doris's SELECT ... INTO OUTFILE "s3://bucket/prefix" [FORMAT AS CSV | CSV_WITH_NAMES |
    PARQUET] [PROPERTIES (...)]: the query's rows written as an object of a store."""

    query: object  # the query's plan
    target: str
    format: str = "csv"
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RefreshMaterializedView:
    """Doris's REFRESH MATERIALIZED VIEW mv [COMPLETE | AUTO]: its query's rows, again."""

    view: TableName


@dataclass(frozen=True)
class BuildIndex:
    """Doris's BUILD INDEX name ON t [PARTITION (...)]: an index built for the rows written
    before it was created."""

    name: str
    table: TableName


@dataclass(frozen=True)
class Flush:
    """MySQL's FLUSH PRIVILEGES, TABLES, ...: a no-op here, grants take effect at once."""


@dataclass(frozen=True)
class ShowTableId:
    """Doris's SHOW TABLE <id>: the database and name of the table of that id."""

    table_id: int


@dataclass(frozen=True)
class ShowPartitionId:
    """Doris's SHOW PARTITION <id>: the database, table and name of the partition of that id."""

    partition_id: int


@dataclass(frozen=True)
class Explain:
    query: exp.Expression  # sqlglot's tree of the query explained


@dataclass(frozen=True)
class Kill:
    connection_id: int
    query_only: bool = False


@dataclass(frozen=True)
class AdminShowConfig:
    like: str | None = None


@dataclass(frozen=True)
class AdminSetConfig:
    settings: tuple[tuple[str, str], ...] = field(default=())
    all_frontends: bool = False  # ADMIN SET ALL FRONTENDS CONFIG: every FE of the cluster


@dataclass(frozen=True)
class AdminCheckpoint:
    pass


@dataclass(frozen=True)
class AdminCompact:
    """Doris's ADMIN COMPACT TABLE [db.]t [PARTITION (p, ...)] WHERE type = 'BASE' |
    'CUMULATIVE' | 'FULL'."""

    table: TableName
    partitions: tuple[str, ...] = ()
    where: tuple[str, object] | None = None  # (column, value), as written


@dataclass(frozen=True)
class Sync:
    """Doris's SYNC: answered once this FE has replayed the leader's journal as it was then."""


@dataclass(frozen=True)
class AlterSystem:
    action: str  # ADD / DROP
    role: str  # FOLLOWER / OBSERVER / BACKEND
    address: str


@dataclass(frozen=True)
class Transaction:
    """BEGIN / COMMIT / ROLLBACK: accepted, as metadata statements commit on their own."""

    kind: str
    label: str = ""  # BEGIN WITH LABEL l


@dataclass(frozen=True)
class CreateIndex:
    """CREATE INDEX: Doris's index kept with its table (fe/statements/indexes.py); a MySQL one
    Doris has no kind of (USING BTREE | HASH, several columns, a prefix length, UNIQUE: index is
    None) is checked against the table and otherwise ignored (a scan reads every row anyway)."""

    name: str
    table: TableName
    columns: tuple[str, ...]
    index: IndexDef | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropIndex:
    name: str
    table: TableName
    if_exists: bool = False


class Default:
    """DEFAULT written as a value of INSERT ... VALUES."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = Default()


@dataclass(frozen=True)
class Insert:
    expression: exp.Insert  # sqlglot's tree: INSERT INTO t [(columns)] VALUES ... | SELECT ...
    # The VALUES rows when every value is a plain literal, read from the tokens (the tree's
    # VALUES is then empty): str, int, Decimal, float, bool, None or DEFAULT.
    rows: tuple[tuple, ...] | None = None
    # Or the same rows read straight from the text by position (fe.sql.literal_insert's
    # LiteralColumns), for Arrow to convert a column at a time.
    literals: object = None
    label: str = ""  # Doris's WITH LABEL: the INSERT is a load of that label
    fills_created: bool = False  # a CREATE TABLE ... AS SELECT's rows: its creator may write them
    replaces: bool = False  # MySQL's REPLACE: rows of the same unique key are replaced


@dataclass(frozen=True)
class CleanLabel:
    """Doris's CLEAN LABEL [label] FROM db: finished loads' labels may be used again."""

    db: str
    label: str = ""  # "" for every one of the database


@dataclass(frozen=True)
class Update:
    expression: exp.Update


@dataclass(frozen=True)
class Delete:
    expression: exp.Delete


@dataclass(frozen=True)
class Analyze:
    """Doris's ANALYZE TABLE t [(columns)] [WITH SYNC] [WITH SAMPLE ...]: statistics of its
    columns, worked out over every row."""

    table: TableName
    columns: tuple[str, ...] = ()  # () for every column


@dataclass(frozen=True)
class ShowStats:
    """Doris's SHOW TABLE STATS t and SHOW COLUMN [CACHED] STATS t [(columns)]."""

    kind: str  # "TABLE" or "COLUMN"
    table: TableName
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class DropStats:
    """Doris's DROP STATS t [(columns)]."""

    table: TableName
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class TruncateTable:
    table: TableName
    partitions: tuple[str, ...] = ()  # () means every partition


@dataclass(frozen=True)
class RecoverDatabase:
    name: str
    new_name: str | None = None


@dataclass(frozen=True)
class RecoverTable:
    table: TableName
    new_name: str | None = None


@dataclass(frozen=True)
class RecoverPartition:
    name: str
    table: TableName
    new_name: str | None = None


@dataclass(frozen=True)
class ShowRecycleBin:
    """SHOW CATALOG RECYCLE BIN [WHERE NAME = 'x' | NAME LIKE 'x%']."""

    name: str | None = None
    like: bool = False


@dataclass(frozen=True)
class ShowAlter:
    """SHOW ALTER TABLE COLUMN | ROLLUP [FROM db] [WHERE col = 'v' [AND ...]] [ORDER BY ...]
    [LIMIT [offset,] n]."""

    kind: str  # COLUMN or ROLLUP
    db: str | None = None
    where: tuple[tuple[str, str], ...] = ()  # (column title, value): equal, all of them
    order_by: tuple[OrderBy, ...] = ()
    limit: int | None = None
    offset: int = 0


@dataclass(frozen=True)
class LoadData:
    """One DATA INFILE clause of a LOAD LABEL: the objects, the table their rows go to, how the
    file is read, and the SET expressions and WHERE predicate as written."""

    paths: tuple[str, ...]
    table: str
    partitions: tuple[str, ...] = ()
    separator: str | None = None
    format: str | None = None
    columns: tuple[str, ...] = ()  # the file's columns, in order
    settings: tuple[tuple[str, str], ...] = ()  # SET (column = expression)
    where: str | None = None


@dataclass(frozen=True)
class BrokerLoad:
    """Doris's LOAD LABEL [db.]label (DATA INFILE ...) WITH S3 (...) [PROPERTIES (...)]."""

    db: str | None
    label: str
    data: tuple[LoadData, ...]
    source: tuple[tuple[str, str], ...]  # WITH S3's properties
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CancelLoad:
    """CANCEL LOAD [FROM db] WHERE LABEL = 'label'."""

    db: str | None
    label: str


@dataclass(frozen=True)
class Export:
    """Doris's EXPORT TABLE t [PARTITION (...)] [WHERE ...] TO "s3://..." [PROPERTIES (...)]
    WITH S3 (...)."""

    table: TableName
    partitions: tuple[str, ...]
    where: str | None
    path: str
    properties: tuple[tuple[str, str], ...]
    source: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ShowExport:
    """SHOW EXPORT [FROM db] [WHERE LABEL = 'l' | STATE = 's' | ID = n]."""

    db: str | None
    where: tuple[str, object] | None = None


@dataclass(frozen=True)
class CancelExport:
    """CANCEL EXPORT [FROM db] WHERE LABEL = 'label'."""

    db: str | None
    label: str


@dataclass(frozen=True)
class CancelAlter:
    """CANCEL ALTER TABLE COLUMN | ROLLUP FROM t [(job_id, ...)]."""

    kind: str
    table: TableName
    job_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class DescribeAll:
    """DESC t ALL: every index of the table (the base index until rollups exist)."""

    table: TableName


@dataclass(frozen=True)
class CreateRowPolicy:
    """Doris's CREATE ROW POLICY [IF NOT EXISTS] p ON t AS RESTRICTIVE | PERMISSIVE TO user |
    ROLE r USING (predicate)."""

    name: str
    table: TableName
    filter_type: str
    user: UserName | None
    role: str | None
    predicate: str  # its text
    text: str  # the statement's
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropRowPolicy:
    """DROP ROW POLICY [IF EXISTS] p ON t [FOR user | ROLE r]."""

    name: str
    table: TableName
    user: UserName | None = None
    role: str | None = None
    if_exists: bool = False


@dataclass(frozen=True)
class ShowRowPolicy:
    """SHOW ROW POLICY [FOR user | ROLE r]."""

    user: UserName | None = None
    role: str | None = None
