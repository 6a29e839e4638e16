"""information_schema tables built from the catalog, as Arrow tables for DuckDB to query.

Only what the session's user may see is included, as in MySQL.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

import pyarrow as pa

from fe.security import privileges
from fe.sql.parser import INTERNAL_CATALOG as CATALOG_NAME
from fe.statements import data_sizes, generated_columns, mysql_functions
from metadata.records import Column, Table
from metadata.types import STRING_LENGTH

INFORMATION_SCHEMA = "information_schema"


def column_key(table: Table, column: Column) -> str:
    if column.name in table.key_columns:
        return (
            "UNI"
            if table.key_model == "UNIQUE"
            else "DUP"
            if table.key_model == "DUPLICATE"
            else "AGG"
        )
    return ""


def visible_tables(session) -> list[tuple[str, Table]]:
    catalog = session.catalog
    user = session.user
    result = []
    for db in sorted(list(catalog.dbs.values()), key=lambda d: d.name):
        if not privileges.has_any(user, db.name):
            continue
        for table in catalog.tables_of(db.id):
            if privileges.has_any(user, db.name, table.name):
                result.append((db.name, table))
    return result


def visible_databases(session) -> list[str]:
    names = [
        db.name
        for db in list(session.catalog.dbs.values())
        if privileges.has_any(session.user, db.name)
    ]
    return sorted([INFORMATION_SCHEMA, *names])


class SchemaTables:
    """The information_schema tables queries read, each built with only the columns asked for
    and kept until the catalog changes (its journal id and raft index), at most max_bytes of
    them together (the least recently used go first). An entry is one user's view: a query
    sees only what its user may."""

    def __init__(self, catalog, max_bytes: int):
        assert max_bytes >= 0
        self.catalog = catalog
        self.max_bytes = max_bytes
        self.bytes = 0
        self._version = None
        self._tables: OrderedDict[tuple, BuiltTable] = OrderedDict()
        self._lock = threading.Lock()  # the engine's workers build tables at once

    def table(self, name: str, session, columns: Collection[str] | None) -> BuiltTable | None:
        """The table `name` with the columns named in columns (any case; None: all of them);
        None if information_schema has no such table."""
        return self._table(name, session, columns, build=True)

    def cached(self, name: str, session, columns: Collection[str] | None) -> BuiltTable | None:
        """table(name, session, columns) if it is built already, else None."""
        return self._table(name, session, columns, build=False)

    def _table(self, name: str, session, columns, build: bool) -> BuiltTable | None:
        definition = DEFINITIONS.get(name.lower())
        if definition is None:
            return None
        if definition.volatile:
            return definition.build(session, definition.selected(columns)) if build else None
        user = session.user
        with self.catalog.lock:  # the version and the tables built from it agree
            version = (self.catalog.journal_id, self.catalog.raft_index)
            names = definition.selected(columns)
            key = (user.name, user.host, name.lower(), names)
            with self._lock:
                if version != self._version:
                    self._tables.clear()
                    self.bytes = 0
                    self._version = version
                table = self._tables.get(key)
                if table is not None:
                    self._tables.move_to_end(key)
                    return table
            if not build:
                return None
            counted = not definition.counted.isdisjoint(names)
            if counted:
                items = definition.rows(session)
            else:
                table = definition.build(session, names)
        if counted:  # asked of the data plane outside the lock, never kept
            sizes = data_sizes.table_sizes(session, [item[1] for item in items])
            return definition.build(session, names, items, sizes)
        with self._lock:
            if version == self._version and table.nbytes <= self.max_bytes:
                self._keep(key, table)
        return table

    def _keep(self, key: tuple, table: BuiltTable) -> None:
        old = self._tables.pop(key, None)
        self.bytes -= old.nbytes if old is not None else 0
        self._tables[key] = table
        self.bytes += table.nbytes
        while self.bytes > self.max_bytes:
            _, evicted = self._tables.popitem(last=False)
            self.bytes -= evicted.nbytes


@dataclass(frozen=True)
class SchemaTable:
    """An information_schema table: its rows (one item each, from the session's view of the
    catalog) and, for each column in order, its type and its value for an item."""

    rows: Callable[[object], list]
    columns: dict[str, tuple[pa.DataType, Callable[[object], object]]]
    # Columns the data plane counts (rows and bytes of the table an item's second value is):
    # their values change with every commit, not with the catalog, so they are never kept.
    counted: frozenset[str] = frozenset()
    volatile: bool = False  # its rows change without the catalog (PROCESSLIST): never kept

    def selected(self, names: Collection[str] | None) -> tuple[str, ...]:
        """The table's columns among names, in table order; at least one, which carries the
        row count when a query reads none (SELECT COUNT(1) FROM ...)."""
        if names is None:
            return tuple(self.columns)
        wanted = {name.lower() for name in names}
        chosen = tuple(column for column in self.columns if column.lower() in wanted)
        return chosen or tuple(self.columns)[:1]

    def build(self, session, names: tuple[str, ...], items=None, sizes=None) -> BuiltTable:
        """The table of names; items (the rows' items) and sizes (rows and bytes by table id)
        when a counted column is among names."""
        if items is None:
            items = self.rows(session)
        if sizes is not None:
            items = [(*item, sizes[item[1].id]) for item in items]
        return BuiltTable(
            {name: [self.columns[name][1](item) for item in items] for name in names},
            {name: self.columns[name][0] for name in names},
        )


class BuiltTable:
    """An information_schema table as built for one user: each column's values, and the same
    as Arrow for the engine (made when first asked for)."""

    VALUE_BYTES = 16  # a value's slot in its list and in Arrow (strings add twice their length)

    def __init__(self, values: dict[str, list], types: dict[str, pa.DataType]):
        assert values and values.keys() == types.keys()
        self.values = values
        self.types = types
        self.row_count = len(next(iter(values.values())))
        self.nbytes = sum(
            self.VALUE_BYTES * len(column)
            + sum(2 * len(value) for value in column if isinstance(value, str))
            for column in values.values()
        )
        self._arrow: pa.Table | None = None

    def arrow(self) -> pa.Table:
        if self._arrow is None:  # two workers may both make it: the same table
            self._arrow = pa.table(
                {name: pa.array(column, self.types[name]) for name, column in self.values.items()}
            )
        return self._arrow


def constant(value) -> Callable[[object], object]:
    return lambda item: value


STRING = pa.string()
INT = pa.int64()
TIMESTAMP = pa.timestamp("s")

TABLES = SchemaTable(
    rows=visible_tables,
    columns={
        "TABLE_CATALOG": (STRING, constant(CATALOG_NAME)),
        "TABLE_SCHEMA": (STRING, lambda row: row[0]),
        "TABLE_NAME": (STRING, lambda row: row[1].name),
        "TABLE_TYPE": (STRING, lambda row: "VIEW" if row[1].engine == "view" else "BASE TABLE"),
        "ENGINE": (STRING, lambda row: row[1].engine.upper()),
        "VERSION": (INT, constant(10)),
        "ROW_FORMAT": (STRING, constant("Dynamic")),
        "TABLE_ROWS": (INT, lambda row: _counted(row, row[2][0])),
        "AVG_ROW_LENGTH": (INT, lambda row: _counted(row, row[2][1] // max(row[2][0], 1))),
        "DATA_LENGTH": (INT, lambda row: _counted(row, row[2][1])),
        "MAX_DATA_LENGTH": (INT, constant(0)),
        "INDEX_LENGTH": (INT, constant(0)),
        "DATA_FREE": (INT, constant(0)),
        "AUTO_INCREMENT": (INT, constant(None)),
        "CREATE_TIME": (TIMESTAMP, constant(None)),
        "UPDATE_TIME": (TIMESTAMP, constant(None)),
        "CHECK_TIME": (TIMESTAMP, constant(None)),
        "TABLE_COLLATION": (STRING, constant("utf8mb4_0900_bin")),
        "CHECKSUM": (INT, constant(None)),
        "CREATE_OPTIONS": (STRING, constant("")),
        "TABLE_COMMENT": (STRING, lambda row: row[1].comment),
    },
    counted=frozenset({"TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH"}),
)


def _counted(row, value: int) -> int | None:
    """A count of a table's data (SHOW TABLE STATUS's); NULL for a view, as MySQL's."""
    return None if row[1].engine == "view" else value


def visible_columns(session) -> list[tuple[str, Table, int, Column]]:
    return [
        (db, table, position, column)
        for db, table in visible_tables(session)
        for position, column in enumerate(table.columns, start=1)
    ]


def _octet_length(row) -> int | None:
    length = row[3].type.character_length
    return length * 4 if length and length < STRING_LENGTH else length


def _extra(row) -> str:
    if row[3].auto_increment:
        return "auto_increment"
    return generated_columns.EXTRA if generated_columns.is_generated(row[1], row[3]) else ""


def _character(value: str):
    return lambda row: value if row[3].type.is_character else None


COLUMNS = SchemaTable(
    rows=visible_columns,
    columns={
        "TABLE_CATALOG": (STRING, constant(CATALOG_NAME)),
        "TABLE_SCHEMA": (STRING, lambda row: row[0]),
        "TABLE_NAME": (STRING, lambda row: row[1].name),
        "COLUMN_NAME": (STRING, lambda row: row[3].name),
        "ORDINAL_POSITION": (INT, lambda row: row[2]),
        "COLUMN_DEFAULT": (STRING, lambda row: unquote_default(row[3].default)),
        "IS_NULLABLE": (STRING, lambda row: "YES" if row[3].nullable else "NO"),
        "DATA_TYPE": (STRING, lambda row: row[3].type.data_type),
        "CHARACTER_MAXIMUM_LENGTH": (INT, lambda row: row[3].type.character_length),
        "CHARACTER_OCTET_LENGTH": (INT, _octet_length),
        "NUMERIC_PRECISION": (INT, lambda row: row[3].type.numeric_precision),
        "NUMERIC_SCALE": (INT, lambda row: row[3].type.numeric_scale),
        "DATETIME_PRECISION": (INT, constant(None)),
        "CHARACTER_SET_NAME": (STRING, _character("utf8mb4")),
        "COLLATION_NAME": (STRING, _character("utf8mb4_0900_bin")),
        "COLUMN_TYPE": (STRING, lambda row: row[3].type.mysql),
        "COLUMN_KEY": (STRING, lambda row: column_key(row[1], row[3])),
        "EXTRA": (STRING, _extra),
        "PRIVILEGES": (STRING, constant("select,insert,update,references")),
        "COLUMN_COMMENT": (STRING, lambda row: row[3].comment),
        "GENERATION_EXPRESSION": (
            STRING,
            lambda row: generated_columns.texts(row[1]).get(row[3].name, ""),
        ),
    },
)

SCHEMATA = SchemaTable(
    rows=visible_databases,
    columns={
        "CATALOG_NAME": (STRING, constant(CATALOG_NAME)),
        "SCHEMA_NAME": (STRING, lambda name: name),
        "DEFAULT_CHARACTER_SET_NAME": (STRING, constant("utf8mb4")),
        "DEFAULT_COLLATION_NAME": (STRING, constant("utf8mb4_0900_bin")),
        "SQL_PATH": (STRING, constant(None)),
        "DEFAULT_ENCRYPTION": (STRING, constant("NO")),
    },
)


def unquote_default(default: str | None) -> str | None:
    if default is None or default == "NULL":
        return None
    if default.startswith("'") and default.endswith("'"):
        return default[1:-1].replace("''", "'")
    return default


def fixed(**columns: tuple[pa.DataType, list]) -> SchemaTable:
    """A table whose rows are the same for everyone: each column's type and values."""
    counts = {len(values) for _, values in columns.values()}
    assert len(counts) == 1, counts
    rows = range(counts.pop())
    return SchemaTable(
        rows=lambda session: rows,
        columns={
            name: (data_type, values.__getitem__) for name, (data_type, values) in columns.items()
        },
    )


def empty(*names: str) -> SchemaTable:
    return SchemaTable(
        rows=lambda session: [], columns={name: (STRING, constant(None)) for name in names}
    )


def visible_partitions(session) -> list[tuple]:
    """(database, table, position, partition or None): a table without partitions has one row."""
    rows = []
    for db, table in visible_tables(session):
        if table.engine == "view":
            continue
        if not table.partition_columns:
            rows.append((db, table, None, None))
            continue
        rows.extend((db, table, position, p) for position, p in enumerate(table.partitions, 1))
    return rows


def _partition_description(row) -> str | None:
    """MySQL's: a RANGE partition's upper bound (MAXVALUE), a LIST partition's values; texts
    and dates quoted."""
    partition = row[3]
    if partition is None:
        return None
    if partition.values:
        return ",".join(
            f"({','.join(map(_quoted, value))})" if len(value) > 1 else _quoted(value[0])
            for value in partition.values
        )
    return ",".join(map(_quoted, partition.upper)) if partition.upper else "MAXVALUE"


def _quoted(literal: str) -> str:
    return literal if literal.lstrip("-").replace(".", "", 1).isdigit() else f"'{literal}'"


def _partition_method(row) -> str | None:
    return None if row[3] is None else str(row[1].partition_kind)


PARTITIONS = SchemaTable(
    rows=visible_partitions,
    columns={
        "TABLE_CATALOG": (STRING, constant(CATALOG_NAME)),
        "TABLE_SCHEMA": (STRING, lambda row: row[0]),
        "TABLE_NAME": (STRING, lambda row: row[1].name),
        "PARTITION_NAME": (STRING, lambda row: None if row[3] is None else row[3].name),
        "SUBPARTITION_NAME": (STRING, constant(None)),
        "PARTITION_ORDINAL_POSITION": (INT, lambda row: row[2]),
        "SUBPARTITION_ORDINAL_POSITION": (INT, constant(None)),
        "PARTITION_METHOD": (STRING, _partition_method),
        "SUBPARTITION_METHOD": (STRING, constant(None)),
        "PARTITION_EXPRESSION": (
            STRING,
            lambda row: None if row[3] is None else ",".join(row[1].partition_columns),
        ),
        "SUBPARTITION_EXPRESSION": (STRING, constant(None)),
        "PARTITION_DESCRIPTION": (STRING, _partition_description),
        "PARTITION_COMMENT": (STRING, constant("")),
        "NODEGROUP": (STRING, constant("default")),
        "TABLESPACE_NAME": (STRING, constant(None)),
    },
)


def _processes(session) -> list:
    """The connections SHOW PROCESSLIST lists to this user (all of them to an admin)."""
    is_admin = privileges.is_admin(session.user)
    return [
        process
        for process in session.services.front.processlist()
        if is_admin or process.user == session.user.name
    ]


PROCESSLIST = SchemaTable(
    rows=_processes,
    columns={
        "ID": (INT, lambda process: process.id),
        "USER": (STRING, lambda process: process.user),
        "HOST": (STRING, lambda process: process.host),
        "DB": (STRING, lambda process: process.db),
        "COMMAND": (STRING, lambda process: process.command),
        "TIME": (INT, lambda process: process.time),
        "STATE": (STRING, lambda process: process.state),
        "INFO": (STRING, lambda process: process.info),
    },
    volatile=True,
)


RUNNING_COMMANDS = ("Query", "Execute")  # a connection's command while a statement runs


def _running_statements(session) -> list[tuple]:
    """The statements running now on the connections SHOW PROCESSLIST lists to this user: each
    process, when its statement started (in the session's time zone) and this FE's host."""
    now = time.time()
    zone = mysql_functions.time_zone(str(session.variable("time_zone") or "SYSTEM"))
    host = session.services.frontends.this.host
    return [
        (process, _wall_time(now - process.time, zone), host)
        for process in _processes(session)
        if process.command in RUNNING_COMMANDS
    ]


def _wall_time(seconds: float, zone: datetime.tzinfo) -> str:
    return datetime.datetime.fromtimestamp(int(seconds), zone).strftime("%Y-%m-%d %H:%M:%S")


NO_WORKLOAD_GROUP = -1  # Doris's WORKLOAD_GROUP_ID for a query not in one group (Quire has none)

# Doris's ACTIVE_QUERIES of what SHOW PROCESSLIST knows (its Time is whole seconds); Quire gives
# a statement no query id and queues none.
ACTIVE_QUERIES = SchemaTable(
    rows=_running_statements,
    columns={
        "QUERY_ID": (STRING, constant(None)),
        "QUERY_START_TIME": (STRING, lambda row: row[1]),
        "QUERY_TIME_MS": (INT, lambda row: row[0].time * 1000),
        "WORKLOAD_GROUP_ID": (INT, constant(NO_WORKLOAD_GROUP)),
        "DATABASE": (STRING, lambda row: row[0].db or ""),
        "FRONTEND_INSTANCE": (STRING, lambda row: row[2]),
        "QUEUE_START_TIME": (STRING, constant(None)),
        "QUEUE_END_TIME": (STRING, constant(None)),
        "QUERY_STATUS": (STRING, constant("")),
        "USER": (STRING, lambda row: row[0].user),
        "SQL": (STRING, lambda row: row[0].info),
    },
    volatile=True,
)


def variable_text(value) -> str:
    """A system variable's value as SHOW VARIABLES shows it."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return "" if value is None else str(value)


def variable_rows(store) -> list[tuple[str, str, str]]:
    """Each variable of a store (session or global values): its name, value and default, as
    SHOW VARIABLES shows them, by name."""
    return [
        (name, variable_text(store.get_variable(name)), variable_text(store.schema[name][1]))
        for name in sorted(store.schema)
    ]


def _variables(is_global: bool) -> SchemaTable:
    """Doris's GLOBAL_VARIABLES or SESSION_VARIABLES (the asking session's values)."""

    def rows(session) -> list[tuple[str, str, str]]:
        values = session.variables
        return variable_rows(values.global_variables if is_global else values)

    return SchemaTable(
        rows=rows,
        columns={
            "VARIABLE_NAME": (STRING, lambda row: row[0]),
            "VARIABLE_VALUE": (STRING, lambda row: row[1]),
            "DEFAULT_VALUE": (STRING, lambda row: row[2]),
            "CHANGED": (STRING, lambda row: "0" if row[1] == row[2] else "1"),
        },
        volatile=True,
    )


def _granted(level: str) -> Callable[[object], list]:
    """The session user's privileges at one level ("global", "schema", "table"): (grantee,
    database, table, privilege, grantable) each."""

    def rows(session) -> list:
        user = session.user
        grantee = f"'{user.name}'@'{user.host}'"
        found = []
        for grant in user.grants:
            kind = "global" if grant.db == "*" else "schema" if grant.table == "*" else "table"
            if kind != level:
                continue
            grantable = "YES" if privileges.GRANT in grant.privileges else "NO"
            found += [
                (grantee, grant.db, grant.table, name.capitalize(), grantable)
                for name in sorted(grant.privileges)
            ]
        return found

    return rows


def _privileges_table(level: str, *names: str) -> SchemaTable:
    positions = {"TABLE_SCHEMA": 1, "TABLE_NAME": 2}
    columns = {
        "GRANTEE": (STRING, lambda row: row[0]),
        "TABLE_CATALOG": (STRING, constant(CATALOG_NAME)),
        **{name: (STRING, lambda row, at=positions[name]: row[at]) for name in names},
        "PRIVILEGE_TYPE": (STRING, lambda row: row[3]),
        "IS_GRANTABLE": (STRING, lambda row: row[4]),
    }
    return SchemaTable(rows=_granted(level), columns=columns)


FILES_COLUMNS = (
    "FILE_ID", "FILE_NAME", "FILE_TYPE", "TABLESPACE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA",
    "TABLE_NAME", "LOGFILE_GROUP_NAME", "LOGFILE_GROUP_NUMBER", "ENGINE", "FULLTEXT_KEYS",
    "DELETED_ROWS", "UPDATE_COUNT", "FREE_EXTENTS", "TOTAL_EXTENTS", "EXTENT_SIZE", "INITIAL_SIZE",
    "MAXIMUM_SIZE", "AUTOEXTEND_SIZE", "CREATION_TIME", "LAST_UPDATE_TIME", "LAST_ACCESS_TIME",
    "RECOVER_TIME", "TRANSACTION_COUNTER", "VERSION", "ROW_FORMAT", "TABLE_ROWS",
    "AVG_ROW_LENGTH", "DATA_LENGTH", "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE",
    "CREATE_TIME", "UPDATE_TIME", "CHECK_TIME", "CHECKSUM", "STATUS", "EXTRA",
)  # fmt: skip


DEFINITIONS = {
    "schemata": SCHEMATA,
    "tables": TABLES,
    "columns": COLUMNS,
    "engines": fixed(
        ENGINE=(STRING, ["OLAP"]),
        SUPPORT=(STRING, ["DEFAULT"]),
        COMMENT=(STRING, ["Quire's table engine"]),
        TRANSACTIONS=(STRING, ["YES"]),
        XA=(STRING, ["NO"]),
        SAVEPOINTS=(STRING, ["NO"]),
    ),
    "character_sets": fixed(
        CHARACTER_SET_NAME=(STRING, ["utf8mb4", "utf8mb3", "binary"]),
        DEFAULT_COLLATE_NAME=(STRING, ["utf8mb4_0900_bin", "utf8mb3_general_ci", "binary"]),
        DESCRIPTION=(STRING, ["UTF-8 Unicode", "UTF-8 Unicode", "Binary pseudo charset"]),
        MAXLEN=(INT, [4, 3, 1]),
    ),
    "collations": fixed(
        COLLATION_NAME=(
            STRING,
            ["utf8mb4_0900_bin", "utf8mb4_general_ci", "utf8mb3_general_ci", "binary"],
        ),
        CHARACTER_SET_NAME=(STRING, ["utf8mb4", "utf8mb4", "utf8mb3", "binary"]),
        ID=(INT, [309, 45, 33, 63]),
        IS_DEFAULT=(STRING, ["Yes", "", "Yes", "Yes"]),
        IS_COMPILED=(STRING, ["Yes"] * 4),
        SORTLEN=(INT, [1] * 4),
    ),
    "views": empty(
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "VIEW_DEFINITION",
        "CHECK_OPTION",
        "IS_UPDATABLE",
        "DEFINER",
        "SECURITY_TYPE",
        "CHARACTER_SET_CLIENT",
        "COLLATION_CONNECTION",
    ),
    "statistics": empty(
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "NON_UNIQUE",
        "INDEX_SCHEMA",
        "INDEX_NAME",
        "SEQ_IN_INDEX",
        "COLUMN_NAME",
        "COLLATION",
        "CARDINALITY",
        "SUB_PART",
        "PACKED",
        "NULLABLE",
        "INDEX_TYPE",
        "COMMENT",
        "INDEX_COMMENT",
    ),
    "key_column_usage": empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "COLUMN_NAME",
        "ORDINAL_POSITION",
        "POSITION_IN_UNIQUE_CONSTRAINT",
        "REFERENCED_TABLE_SCHEMA",
        "REFERENCED_TABLE_NAME",
        "REFERENCED_COLUMN_NAME",
    ),
    "table_constraints": empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "CONSTRAINT_TYPE",
    ),
    "referential_constraints": empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "UNIQUE_CONSTRAINT_CATALOG",
        "UNIQUE_CONSTRAINT_SCHEMA",
        "UNIQUE_CONSTRAINT_NAME",
        "MATCH_OPTION",
        "UPDATE_RULE",
        "DELETE_RULE",
        "TABLE_NAME",
        "REFERENCED_TABLE_NAME",
    ),
    "routines": empty(
        "SPECIFIC_NAME",
        "ROUTINE_CATALOG",
        "ROUTINE_SCHEMA",
        "ROUTINE_NAME",
        "ROUTINE_TYPE",
        "DATA_TYPE",
        "ROUTINE_DEFINITION",
    ),
    "triggers": empty(
        "TRIGGER_CATALOG",
        "TRIGGER_SCHEMA",
        "TRIGGER_NAME",
        "EVENT_MANIPULATION",
        "EVENT_OBJECT_SCHEMA",
        "EVENT_OBJECT_TABLE",
        "ACTION_STATEMENT",
    ),
    "partitions": PARTITIONS,
    "processlist": PROCESSLIST,
    "user_privileges": _privileges_table("global"),
    "schema_privileges": _privileges_table("schema", "TABLE_SCHEMA"),
    "table_privileges": _privileges_table("table", "TABLE_SCHEMA", "TABLE_NAME"),
    "parameters": empty(
        "SPECIFIC_CATALOG",
        "SPECIFIC_SCHEMA",
        "SPECIFIC_NAME",
        "ORDINAL_POSITION",
        "PARAMETER_MODE",
        "PARAMETER_NAME",
        "DATA_TYPE",
        "ROUTINE_TYPE",
    ),
    "events": empty("EVENT_CATALOG", "EVENT_SCHEMA", "EVENT_NAME"),
    "global_variables": _variables(is_global=True),
    "session_variables": _variables(is_global=False),
    "active_queries": ACTIVE_QUERIES,
    # Quire keeps no tablespaces and no histograms (Doris's columns, after MySQL's)
    "files": empty(*FILES_COLUMNS),
    "column_statistics": empty("SCHEMA_NAME", "TABLE_NAME", "COLUMN_NAME", "HISTOGRAM"),
}
