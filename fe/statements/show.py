"""SHOW and DESCRIBE statements, SHOW CREATE TABLE included (its output creates the same table)."""

from __future__ import annotations

import asyncio
import json
import time

from be.service.errors import ServiceError
from be.tn.errors import CommitError
from be.tn.loads import INSERT as INSERT_LOAD
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result, column
from fe.security import privileges
from fe.sql import statements as st
from fe.sql.parser import INTERNAL_CATALOG
from fe.statements import (
    accounts,
    auto_partitions,
    cluster_keys,
    data_sizes,
    ddl,
    dynamic_partitions,
    generated_columns,
    indexes,
    materialized_views,
    row_policies,
    views,
)
from fe.statements.information_schema import (
    DEFINITIONS,
    INFORMATION_SCHEMA,
    column_key,
    unquote_default,
    variable_rows,
    visible_databases,
)
from fe.statements.names import database_name, resolve_database, resolve_table
from fe.statements.partitioning import PartitionColumns
from metadata.records import HIDDEN_PROPERTY_PREFIX, KeyModel, PartitionKind, Rollup, Table


def load_time(ms: int) -> str:
    """A load's time (milliseconds since the epoch) as SHOW LOAD shows it; N/A when unknown."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "N/A"


def title_index(titles, name: str) -> int:
    """Where a SHOW's column of that title (any case) is; Doris's error for none."""
    for index, title in enumerate(titles):
        if title.lower() == name.lower():
            return index
    raise QueryError(1105, f"Title name[{name}] does not exist")


def like_matcher(pattern: str | None, case_sensitive: bool = True):
    """MySQL's LIKE (`%` any run, `_` any one character, `\\` escapes), in time linear in the
    pattern: the runs between `%`s are matched leftmost, one after the other, never backtracking."""
    if pattern is None:
        return lambda value: True
    fold = (lambda text: text) if case_sensitive else str.casefold
    segments = _like_segments(fold(pattern))
    return lambda value: _like(segments, fold(value))


def _like_segments(pattern: str) -> list[tuple[str | None, ...]]:
    """The pattern split at each `%`, empty runs between two `%`s dropped; None stands for `_`."""
    segments: list[list[str | None]] = [[]]
    characters = iter(pattern)
    for character in characters:
        if character == "%":
            if len(segments) == 1 or segments[-1]:
                segments.append([])
        elif character == "_":
            segments[-1].append(None)
        elif character == "\\":
            segments[-1].append(next(characters, "\\"))
        else:
            segments[-1].append(character)
    return [tuple(segment) for segment in segments]


def _like(segments: list[tuple[str | None, ...]], value: str) -> bool:
    first, last = segments[0], segments[-1]
    if len(segments) == 1:
        return len(value) == len(first) and _matches_at(first, value, 0)
    end = len(value) - len(last)
    if end < len(first) or not _matches_at(first, value, 0) or not _matches_at(last, value, end):
        return False
    position = len(first)
    for segment in segments[1:-1]:
        position = next(
            (
                at
                for at in range(position, end - len(segment) + 1)
                if _matches_at(segment, value, at)
            ),
            -1,
        )
        if position < 0:
            return False
        position += len(segment)
    return True


def _matches_at(segment: tuple[str | None, ...], value: str, at: int) -> bool:
    return all(
        expected is None or expected == value[at + offset]
        for offset, expected in enumerate(segment)
    )


def text_result(names: list[str], rows: list[tuple]) -> Result:
    types = []
    for index, _ in enumerate(names):
        sample = next((row[index] for row in rows if row[index] is not None), None)
        types.append(
            "BIGINT" if isinstance(sample, int) and not isinstance(sample, bool) else "VARCHAR"
        )
    return Result(
        columns=[column(name, type_) for name, type_ in zip(names, types, strict=True)], rows=rows
    )


async def show(session, statement: st.Show) -> Result:
    handler = SHOW_HANDLERS.get(statement.what)
    if handler is None:
        raise QueryError(1235, f"SHOW {statement.what} is not supported")
    return handler(session, statement)


def _databases(session, statement: st.Show) -> Result:
    match = like_matcher(statement.like)
    return text_result(
        ["Database"], [(name,) for name in visible_databases(session) if match(name)]
    )


def visible_database(session, db_name: str | None):
    """The database a SHOW names: denied whether or not it exists when the user may not see it."""
    name = database_name(session, db_name)
    if name.lower() != INFORMATION_SCHEMA and not privileges.has_any(session.user, name):
        raise session.database_denied(name)
    return resolve_database(session, name)


def _tables(session, statement: st.Show) -> Result:
    if (statement.db or session.database or "").lower() == INFORMATION_SCHEMA:
        return _schema_tables(statement)
    database = visible_database(session, statement.db)
    match = like_matcher(statement.like)
    user = session.user
    tables = [
        table
        for table in session.catalog.tables_of(database.id)
        if match(table.name) and privileges.has_any(user, database.name, table.name)
    ]
    header = f"Tables_in_{database.name}"
    if statement.full:
        rows = [(table.name, table_type(table)) for table in tables]
        return text_result([header, "Table_type"], rows)
    return text_result([header], [(table.name,) for table in tables])


def _schema_tables(statement: st.Show) -> Result:
    """SHOW [FULL] TABLES FROM information_schema: its tables, as MySQL names them (LIKE with no
    regard to case, as MySQL compares their names)."""
    match = like_matcher(statement.like, case_sensitive=False)
    names = sorted(name.upper() for name in DEFINITIONS if match(name.upper()))
    header = f"Tables_in_{INFORMATION_SCHEMA}"
    if statement.full:
        return text_result([header, "Table_type"], [(name, "SYSTEM VIEW") for name in names])
    return text_result([header], [(name,) for name in names])


DYNAMIC_PARTITION_TITLES = [
    "TableName", "Enable", "TimeUnit", "Start", "End", "Prefix", "Buckets", "ReplicationNum",
    "ReplicaAllocation", "StartOf", "LastUpdateTime", "LastSchedulerTime", "State",
    "LastCreatePartitionMsg", "LastDropPartitionMsg", "ReservedHistoryPeriods",
]  # fmt: skip


def _dynamic_partition_tables(session, statement: st.Show) -> Result:
    """Doris's SHOW DYNAMIC PARTITION TABLES: each table of the database with dynamic partition
    rules, and what this FE's scheduler last did of it (NULL on an FE that did not lead)."""
    database = visible_database(session, statement.db)
    user = session.user
    scheduler = session.services.dynamic_partitions
    rows = []
    for table in session.catalog.tables_of(database.id):
        if not privileges.has_any(user, database.name, table.name):
            continue
        try:
            rules = dynamic_partitions.rules_of(table)
        except QueryError:
            continue
        if rules is None:
            continue
        run = scheduler.runs.get(table.id) if scheduler is not None else None
        properties = {k.lower(): v for k, v in table.properties}
        replicas = properties.get("dynamic_partition.replication_num") or properties.get(
            "replication_num", "3"
        )
        rows.append((
            table.name, str(rules.enabled).lower(), rules.unit, str(rules.start), str(rules.end),
            rules.prefix, str(rules.buckets or table.buckets), replicas,
            f"tag.location.default: {replicas}", rules.start_of,
            load_time(int(run.updated_at * 1000)) if run and run.updated_at else "NULL",
            load_time(int(run.scheduled_at * 1000)) if run and run.scheduled_at else "NULL",
            run.state if run else "NORMAL", (run.create_message if run else "") or "NULL",
            (run.drop_message if run else "") or "NULL",
            properties.get("dynamic_partition.reserved_history_periods", "NULL"),
        ))  # fmt: skip
    return text_result(DYNAMIC_PARTITION_TITLES, rows)


def table_type(table: Table) -> str:
    return "VIEW" if views.is_view(table) else "BASE TABLE"


def readable_table(session, name: st.TableName, command: str) -> tuple:
    """The table a SHOW or DESC names: denied whether or not it exists when the user may not
    see it, as MySQL checks privileges first."""
    db = database_name(session, name.db)
    if db.lower() == INFORMATION_SCHEMA:
        raise QueryError(1235, "Describing information_schema tables is not supported; query them")
    if not privileges.has_any(session.user, db, name.name):
        raise session.table_denied(command, db, name.name)
    return resolve_table(session, name)


def _columns(session, statement: st.Show) -> Result:
    _, table = readable_table(session, statement.table, "SELECT")
    match = like_matcher(statement.like, case_sensitive=False)
    rows = []
    generated = generated_columns.texts(table)
    for col in table.columns:
        if not match(col.name):
            continue
        extra = "auto_increment" if col.auto_increment else (col.aggregation or "")
        if col.name in generated:
            extra = " ".join(filter(None, (extra, generated_columns.EXTRA)))
        if statement.full:
            rows.append((col.name, col.type.mysql, None, "YES" if col.nullable else "NO",
                         column_key(table, col), unquote_default(col.default), extra,
                         "select,insert,update,references", col.comment))  # fmt: skip
        else:
            rows.append((col.name, col.type.mysql, "YES" if col.nullable else "NO",
                         column_key(table, col), unquote_default(col.default), extra))  # fmt: skip
    if statement.full:
        names = [
            "Field",
            "Type",
            "Collation",
            "Null",
            "Key",
            "Default",
            "Extra",
            "Privileges",
            "Comment",
        ]
    else:
        names = ["Field", "Type", "Null", "Key", "Default", "Extra"]
    return text_result(names, rows)


async def describe(session, statement: st.Describe) -> Result:
    """Doris answers DESCRIBE of a missing table with 1051, which its SQLAlchemy dialect's
    has_table() expects (MySQL says 1146)."""
    try:
        return _columns(session, st.Show("COLUMNS", table=statement.table))
    except QueryError as error:
        if error.code != ErrorCode.NO_SUCH_TABLE:
            raise
        raise QueryError(
            ErrorCode.BAD_TABLE_ERROR, f"Unknown table '{statement.table.name}'"
        ) from None


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bound(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(quote_string(v) for v in values) + ")"


def _range_partitions(table: Table) -> list[str]:
    """One form for the whole table: VALUES LESS THAN when the ranges follow one another from the
    least value (as they were written), else VALUES [lower, upper) for every partition."""
    partitions = sorted(table.partitions, key=lambda p: p.upper == ())  # MAXVALUE last, stable
    contiguous = all(
        p.lower == (partitions[i - 1].upper if i else ()) for i, p in enumerate(partitions)
    )
    if contiguous:
        return [
            f"PARTITION {quote(p.name)} VALUES LESS THAN "
            + (_bound(p.upper) if p.upper else "MAXVALUE")
            for p in partitions
        ]
    least = tuple(table.column(name).type.least_value for name in table.partition_columns)
    return [
        f"PARTITION {quote(p.name)} VALUES [{_bound(p.lower or least)}, "
        + (f"{_bound(p.upper)})" if p.upper else "(MAXVALUE))")
        for p in partitions
    ]


def _list_partitions(table: Table) -> list[str]:
    def value_text(value: tuple[str, ...]) -> str:
        quoted = ",".join(quote_string(v) for v in value)
        return quoted if len(value) == 1 else f"({quoted})"

    return [
        f"PARTITION {quote(p.name)} VALUES IN ({','.join(value_text(v) for v in p.values)})"
        for p in table.partitions
    ]


def create_table_sql(table: Table) -> str:
    lines = []
    generated = generated_columns.texts(table)
    for col in table.columns:
        parts = [quote(col.name), col.type.mysql]
        if col.aggregation:
            parts.append(col.aggregation)
        if col.name in generated:
            parts.append(f"AS ({generated[col.name]})")
        parts.append("NULL" if col.nullable else "NOT NULL")
        if col.auto_increment:
            parts.append("AUTO_INCREMENT")
        if col.default is not None:
            parts.append(f"DEFAULT {col.default}")
        if col.comment:
            parts.append(f"COMMENT {quote_string(col.comment)}")
        lines.append("  " + " ".join(parts))
    lines += ["  " + indexes.index_sql(index) for index in indexes.indexes_of(table)]
    text = (
        f"CREATE TABLE {quote(table.name)} (\n"
        + ",\n".join(lines)
        + f"\n) ENGINE={table.engine.upper()}\n"
    )
    text += f"{table.key_model} KEY({', '.join(quote(c) for c in table.key_columns)})\n"
    clustered = cluster_keys.shown(table, quote)
    if clustered is not None:
        text += clustered + "\n"
    if table.comment:
        text += f"COMMENT {quote_string(table.comment)}\n"
    if table.partition_columns:
        columns = ", ".join(quote(c) for c in table.partition_columns)
        auto = auto_partitions.shown(table)
        text += (auto or f"PARTITION BY {table.partition_kind}({columns})") + "\n("
        if table.partition_kind == PartitionKind.LIST:
            text += ",\n".join(_list_partitions(table)) + ")\n"
        else:
            text += ",\n".join(_range_partitions(table)) + ")\n"
    if table.distribution_columns:
        text += f"DISTRIBUTED BY HASH({', '.join(quote(c) for c in table.distribution_columns)}) BUCKETS {table.buckets}"
    else:
        text += f"DISTRIBUTED BY RANDOM BUCKETS {table.buckets}"
    if table.rollups:
        text += "\nROLLUP (\n" + ",\n".join(_rollup_sql(table, r) for r in table.rollups) + "\n)"
    properties = [(k, v) for k, v in table.properties if not k.startswith(HIDDEN_PROPERTY_PREFIX)]
    if properties:
        text += (
            "\nPROPERTIES (\n"
            + ",\n".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in properties)
            + "\n)"
        )
    return text + ";"


def _rollup_sql(table: Table, rollup: Rollup) -> str:
    text = f"{quote(rollup.name)} ({', '.join(map(quote, rollup.columns))})"
    if table.key_model != KeyModel.DUPLICATE:
        return text
    return text + f" DUPLICATE KEY({', '.join(map(quote, rollup.key_columns))})"


def _create_table(session, statement: st.Show) -> Result:
    _, table = readable_table(session, statement.table, "SHOW")
    if views.is_view(table):
        return _create_view_result(table)
    return text_result(["Table", "Create Table"], [(table.name, create_table_sql(table))])


def _create_view(session, statement: st.Show) -> Result:
    database, table = readable_table(session, statement.table, "SHOW")
    if not views.is_view(table):
        raise QueryError(1347, f"'{database.name}.{table.name}' is not VIEW")
    return _create_view_result(table)


def _create_materialized_view(session, statement: st.Show) -> Result:
    """Doris's SHOW CREATE MATERIALIZED VIEW of an asynchronous view: its statement."""
    database, table = readable_table(session, statement.table, "SHOW")
    query = materialized_views.query_of(table)
    if query is None:
        raise QueryError(1105, f"'{database.name}.{table.name}' is not ASYNC_MATERIALIZED_VIEW")
    schedule = materialized_views.schedule_of(table)
    refresh = "ON MANUAL" if schedule is None else f"ON SCHEDULE EVERY {schedule[0]} SECOND"
    if table.distribution_columns:
        columns = ", ".join(quote(c) for c in table.distribution_columns)
        distribution = f"DISTRIBUTED BY HASH({columns}) BUCKETS {table.buckets}"
    else:
        distribution = f"DISTRIBUTED BY RANDOM BUCKETS {table.buckets}"
    text = (
        f"CREATE MATERIALIZED VIEW {quote(table.name)} REFRESH AUTO {refresh} {distribution} "
        f"AS {query}"
    )
    return text_result(["Materialized View", "Create Materialized View"], [(table.name, text)])


def _create_view_result(view: Table) -> Result:
    """Doris's SHOW CREATE VIEW: the view's statement, and the client's character set."""
    names = ", ".join(quote(column.name) for column in view.columns)
    comment = f" COMMENT {quote_string(view.comment)}" if view.comment else ""
    text = f"CREATE VIEW {quote(view.name)} ({names}){comment} AS {views.definition(view)}"
    columns = ["View", "Create View", "character_set_client", "collation_connection"]
    return text_result(columns, [(view.name, text, "utf8mb4", "utf8mb4_0900_bin")])


def _create_database(session, statement: st.Show) -> Result:
    database = visible_database(session, statement.db)
    text = f"CREATE DATABASE {quote(database.name)}"
    if database.properties:
        text += (
            " PROPERTIES ("
            + ", ".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in database.properties)
            + ")"
        )
    return text_result(["Database", "Create Database"], [(database.name, text)])


def _grants(session, statement: st.Show) -> Result:
    rows = accounts.show_grants_rows(session, statement.user)
    target = statement.user or st.UserName(session.user.name, session.user.host)
    return text_result([f"Grants for {target.name}@{target.host}"], rows)


def _roles(session, statement: st.Show) -> Result:
    return text_result(SHOW_ROLES_COLUMNS, accounts.show_roles_rows(session))


# What Doris's SHOW ROLES and SHOW ALL GRANTS tell of privileges, by level
PRIVILEGE_LEVEL_COLUMNS = ["GlobalPrivs", "CatalogPrivs", "DatabasePrivs", "TablePrivs"]
OTHER_PRIVILEGE_COLUMNS = ["ResourcePrivs", "WorkloadGroupPrivs"]
SHOW_ROLES_COLUMNS = [
    "Name",
    "Comment",
    "Users",
    *PRIVILEGE_LEVEL_COLUMNS,
    *OTHER_PRIVILEGE_COLUMNS,
]


def _all_grants(session, statement: st.Show) -> Result:
    return text_result(SHOW_ALL_GRANTS_COLUMNS, accounts.show_all_grants_rows(session))


SHOW_ALL_GRANTS_COLUMNS = [
    *("UserIdentity", "Comment", "Password", "Roles"),
    *PRIVILEGE_LEVEL_COLUMNS,
    "ColPrivs",
    *OTHER_PRIVILEGE_COLUMNS,
]


async def show_property(session, statement: st.ShowProperty) -> Result:
    match = like_matcher(statement.like, case_sensitive=False)
    rows = [row for row in accounts.show_property_rows(session, statement) if match(row[0])]
    return text_result(["Key", "Value"], rows)


def _create_user(session, statement: st.Show) -> Result:
    text = accounts.show_create_user(session, statement.user)
    return text_result([f"CREATE USER for {statement.user.name}@{statement.user.host}"], [(text,)])


def _variables(session, statement: st.Show) -> Result:
    match = like_matcher(statement.like, case_sensitive=False)
    store = session.variables.global_variables if statement.is_global else session.variables
    rows = [(name, value) for name, value, _ in variable_rows(store) if match(name)]
    return text_result(["Variable_name", "Value"], rows)


def _status(session, statement: st.Show) -> Result:
    match = like_matcher(statement.like, case_sensitive=False)
    values = {
        "Threads_connected": session.services.front.connection_count,
        "Uptime": int(session.services.uptime()),
        "Questions": session.services.metrics.queries_total(),
    }
    return text_result(
        ["Variable_name", "Value"], [(k, str(v)) for k, v in values.items() if match(k)]
    )


def _processlist(session, statement: st.Show) -> Result:
    is_admin = privileges.is_admin(session.user)
    rows = []
    for process in session.services.front.processlist():
        if not is_admin and process.user != session.user.name:
            continue
        info = process.info
        if not statement.full:
            info = (info or "")[:100]
        rows.append(
            (
                process.id,
                process.user,
                process.host,
                process.db,
                process.command,
                process.time,
                process.state,
                info,
            )
        )
    return text_result(["Id", "User", "Host", "db", "Command", "Time", "State", "Info"], rows)


PARTITION_COLUMNS = (
    "PartitionId", "PartitionName", "VisibleVersion", "VisibleVersionTime", "State",
    "PartitionKey", "Range", "DistributionKey", "Buckets", "ReplicationNum", "StorageMedium",
    "CooldownTime", "RemoteStoragePolicy", "LastConsistencyCheckTime", "DataSize", "IsInMemory",
    "ReplicaAllocation", "IsMutable", "SyncWithBaseTables", "UnsyncTables", "CommittedVersion",
    "RowCount",
)  # fmt: skip
NEVER = "9999-12-31 23:59:59"  # Doris's CooldownTime of a partition that never cools down


def _partitions(session, statement: st.Show) -> Result:
    """SHOW [TEMPORARY] PARTITIONS FROM t: Doris's columns, DataSize and RowCount those of the
    partition's base index as the data plane counts them (SHOW TABLETS')."""
    _, table = readable_table(session, statement.table, "SHOW")
    temporary = statement.what == "TEMPORARY PARTITIONS"
    columns = PartitionColumns.of(table) if table.partition_columns else None
    stats = data_sizes.tablet_stats(session, table)
    rows = []
    for partition in table.temporary_partitions if temporary else table.partitions:
        if columns is None:
            range_text = ""
        elif table.partition_kind == PartitionKind.LIST:
            range_text = columns.list_text(partition.values)
        else:
            range_text = columns.range_text(partition.lower, partition.upper)
        properties = {**dict(table.properties), **dict(partition.properties)}
        replicas = int(properties.get("replication_num", ddl.DEFAULT_REPLICATION_NUM))
        row_count, size = data_sizes.total(
            {i: stats.get(i, data_sizes.NO_FIGURES) for i in partition.tablet_ids}
        )
        rows.append((
            partition.id, partition.name, 1, None, "NORMAL", ", ".join(table.partition_columns),
            range_text, ", ".join(table.distribution_columns) or "RANDOM", partition.buckets,
            replicas, properties.get("storage_medium", "HDD").upper(),
            properties.get("storage_cooldown_time", NEVER), properties.get("storage_policy", ""),
            None, data_sizes.readable_size(size), properties.get("in_memory", "false"),
            properties.get("replication_allocation", f"tag.location.default: {replicas}"),
            properties.get("mutable", "true"), "true", "", 1, row_count,
        ))  # fmt: skip
    rows = _shown_rows(rows, PARTITION_COLUMNS, statement)
    return text_result(list(PARTITION_COLUMNS), rows)


def sorted_rows(rows: list[tuple], titles: tuple[str, ...], order_by) -> list[tuple]:
    """Rows sorted by their values (not their text), as Doris compares them."""
    for order in reversed([(title_index(titles, o.column), o.descending) for o in order_by]):
        index, descending = order
        rows = sorted(rows, key=lambda row: (row[index] is None, row[index]), reverse=descending)
    return rows


def _shown_rows(rows: list[tuple], titles: tuple[str, ...], statement: st.Show) -> list[tuple]:
    """A SHOW's rows kept by its WHERE (`=` compares a value's text, LIKE a text's), in its
    ORDER BY, within its LIMIT and OFFSET."""
    for name, operator, value in statement.where:
        index = title_index(titles, name)
        if operator == "LIKE":
            match = like_matcher(str(value), case_sensitive=False)
            rows = [row for row in rows if match(str(row[index]))]
        else:
            rows = [row for row in rows if str(row[index]) == str(value)]
    rows = sorted_rows(rows, titles, statement.order_by)
    end = None if statement.limit is None else statement.offset + statement.limit
    return rows[statement.offset : end]


def _index(session, statement: st.Show) -> Result:
    _, table = readable_table(session, statement.table, "SELECT")
    return text_result(
        ["Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality",
         "Sub_part", "Packed", "Null", "Index_type", "Comment", "Properties"],
        indexes.show_rows(table),
    )  # fmt: skip


async def row_policies_shown(session, statement: st.ShowRowPolicy) -> Result:
    return text_result(row_policies.TITLES, row_policies.shown(session, statement))


def _table_status(session, statement: st.Show) -> Result:
    """SHOW TABLE STATUS: Rows and Data_length as the data plane counts them (SHOW DATA's)."""
    database = visible_database(session, statement.db)
    match = like_matcher(statement.like)
    tables = [
        table
        for table in session.catalog.tables_of(database.id)
        if match(table.name) and privileges.has_any(session.user, database.name, table.name)
    ]
    sizes = data_sizes.table_sizes(session, tables)
    rows = []
    for table in tables:
        count, size = sizes[table.id]
        rows.append((
            table.name, table.engine.upper(), 10, "Dynamic", count,
            size // count if count else 0, size, 0, 0, 0, None, None, None, None,
            "utf8mb4_0900_bin", None, "", table.comment,
        ))  # fmt: skip
    return text_result(
        ["Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
         "Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time",
         "Update_time", "Check_time", "Collation", "Checksum", "Create_options", "Comment"],
        rows,
    )  # fmt: skip


def _engines(session, statement: st.Show) -> Result:
    return text_result(
        ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"],
        [("OLAP", "DEFAULT", "Quire's table engine", "YES", "NO", "NO")],
    )


def _charset(session, statement: st.Show) -> Result:
    match = like_matcher(statement.like, case_sensitive=False)
    rows = [
        ("utf8mb4", "UTF-8 Unicode", "utf8mb4_0900_bin", 4),
        ("utf8mb3", "UTF-8 Unicode", "utf8mb3_general_ci", 3),
        ("binary", "Binary pseudo charset", "binary", 1),
    ]
    return text_result(
        ["Charset", "Description", "Default collation", "Maxlen"], [r for r in rows if match(r[0])]
    )


def _collation(session, statement: st.Show) -> Result:
    match = like_matcher(statement.like, case_sensitive=False)
    rows = [
        ("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1),
        ("utf8mb4_general_ci", "utf8mb4", 45, "", "Yes", 1),
        ("binary", "binary", 63, "Yes", "Yes", 1),
    ]
    return text_result(
        ["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"],
        [r for r in rows if match(r[0])],
    )


def _warnings(session, statement: st.Show) -> Result:
    return text_result(["Level", "Code", "Message"], list(session.warnings))


LAST_INSERT_TITLES = [
    "TransactionId", "Label", "Database", "Table", "TransactionStatus", "LoadedRows",
    "FilteredRows",
]  # fmt: skip


def _last_insert(session, statement: st.Show) -> Result:
    """Doris's SHOW LAST INSERT: the session's last INSERT that committed, if any."""
    last = session.last_insert
    return text_result(LAST_INSERT_TITLES, [] if last is None else [last])


async def lock_tables(session, statement: st.LockTables) -> Result:
    """LOCK TABLES: each table exists and the user may read it (MySQL's 1146, 1142); nothing is
    locked (a read is a snapshot), as in Doris."""
    for name in statement.tables:
        database, table = resolve_table(session, name)
        session.require(privileges.SELECT, database.name, table.name)
    return Result()


async def flush(session, statement: st.Flush) -> Result:
    session.require_admin()
    return Result()


async def show_table_id(session, statement: st.ShowTableId) -> Result:
    """Doris's SHOW TABLE <id>: DbName, TableName, DbId of the table of that id."""
    session.require_admin()
    table = session.catalog.tables.get(statement.table_id)
    database = session.catalog.dbs.get(table.db_id) if table is not None else None
    rows = [] if database is None else [(database.name, table.name, str(database.id))]
    return text_result(["DbName", "TableName", "DbId"], rows)


async def show_partition_id(session, statement: st.ShowPartitionId) -> Result:
    """Doris's SHOW PARTITION <id>: DbName, TableName, PartitionName, DbId, TableId of the
    partition of that id (a temporary one too)."""
    session.require_admin()
    rows = []
    for table in list(session.catalog.tables.values()):
        for partition in (*table.partitions, *table.temporary_partitions):
            if partition.id == statement.partition_id:
                database = session.catalog.dbs.get(table.db_id)
                name = database.name if database is not None else ""
                rows.append((name, table.name, partition.name, str(table.db_id), str(table.id)))
    titles = ["DbName", "TableName", "PartitionName", "DbId", "TableId"]
    return text_result(titles, rows[:1])


def _empty(*names: str):
    return lambda session, statement: text_result(list(names), [])


def _frontends(session, statement: st.Show) -> Result:
    session.require_admin_or_node()
    names, rows = session.services.frontends.table()
    return text_result(names, rows)


def _backends(session, statement: st.Show) -> Result:
    session.require_admin_or_node()
    from fe.cluster.backends import COLUMNS, BackendMonitor

    monitor: BackendMonitor | None = session.services.backends
    if monitor is None:  # quire up: its TN and CN are in this process, none is added
        return text_result(COLUMNS, [])
    return text_result(COLUMNS, monitor.rows())


def _proc(session, statement: st.Show) -> Result:
    from fe.statements.proc import NODE_PATHS, show_proc

    if statement.path.strip().rstrip("/") in NODE_PATHS:
        session.require_admin_or_node()
    else:
        session.require_admin()

    names, rows = show_proc(session, statement.path)
    return text_result(names, rows)


def _catalogs(session, statement: st.Show) -> Result:
    """Doris's columns; Quire's one catalog is Doris's internal one."""
    names = ["CatalogId", "CatalogName", "Type", "IsCurrent", "CreateTime", "LastUpdateTime",
             "Comment"]  # fmt: skip
    row = (0, INTERNAL_CATALOG, "internal", "yes", "UNRECORDED", None, "Doris internal catalog")
    return text_result(names, [row] if like_matcher(statement.like)(INTERNAL_CATALOG) else [])


LOAD_TITLES = [
    "JobId", "Label", "State", "Progress", "Type", "EtlInfo", "TaskInfo", "ErrorMsg",
    "CreateTime", "EtlStartTime", "EtlFinishTime", "LoadStartTime", "LoadFinishTime", "URL",
    "JobDetails", "TransactionId", "ErrorTablets", "User", "Comment",
]  # fmt: skip
STREAM_LOAD_TITLES = [
    "Label", "Db", "Table", "ClientIp", "Status", "Message", "Url", "TotalRows", "LoadedRows",
    "FilteredRows", "UnselectedRows", "LoadBytes", "StartTime", "FinishTime", "User", "Comment",
]  # fmt: skip
LOAD_STATES = {"PREPARE": "LOADING", "PRECOMMITTED": "COMMITTED", "VISIBLE": "FINISHED",
               "ABORTED": "CANCELLED"}  # fmt: skip


def _load_records(session, db: str, what: str) -> list:
    """The loads the TN keeps of the database; 1105 if it cannot be asked."""
    plane = session.services.data_plane
    try:
        return plane.load_records(db) if plane is not None else []
    except ServiceError as error:  # the TN could not be asked
        raise QueryError(1105, f"the {what} could not be listed: {error}") from None


def _loads(session, statement: st.Show) -> Result:
    """SHOW LOAD / SHOW STREAM LOAD: the loads the TN keeps of the database (its labels)."""
    database = visible_database(session, statement.db)
    records = _load_records(session, database.name, "loads")
    match = like_matcher(statement.like)
    user = session.user
    shown = [
        r for r in records
        if match(r.label) and privileges.has_any(user, database.name, r.table)
    ]  # fmt: skip
    shown.sort(key=lambda r: r.started_ms)

    if statement.what == "STREAM LOAD":
        shown = [r for r in shown if r.source != INSERT_LOAD]
        rows = [
            (r.label, r.db, r.table, r.client_ip,
             "Fail" if r.state == "ABORTED" else "Success", r.message or "OK", "N/A",
             r.total_rows, r.loaded_rows, r.filtered_rows, r.unselected_rows, r.load_bytes,
             load_time(r.started_ms), load_time(r.finished_ms), r.user, "")
            for r in shown
        ]  # fmt: skip
        return text_result(STREAM_LOAD_TITLES, rows)
    jobs = {job.label: job for job in session.services.broker_loads.known(session, database.name)}
    # a load job not finished is shown as it runs: its label's record says VISIBLE a moment
    # before its commit is readable, which the job waits for
    running = {label for label, job in jobs.items() if not job.finished}
    shown = [r for r in shown if r.label not in running]
    rows = []
    for r in shown:
        job = jobs.get(r.label)
        load_type = "BROKER" if job is not None else LOAD_TYPES.get(r.source, "STREAM_LOAD")
        filtered = r.filtered_rows if job is None else job.warnings  # its INSERTs filtered
        etl = (f"unselected.rows={r.unselected_rows}; dpp.abnorm.ALL={filtered}; "
               f"dpp.norm.ALL={r.loaded_rows}")  # fmt: skip
        details = json.dumps({"LoadBytes": r.load_bytes, "TotalRows": r.total_rows,
                              "TwoPhaseCommit": r.two_phase, "Table": r.table,
                              "Source": r.source, "Overwrite": r.overwrite},
                             separators=(",", ":"))  # fmt: skip
        rows.append((
            r.txn_id, r.label, LOAD_STATES[r.state],
            "100.00% (1/1)" if r.finished else "0.00% (0/1)", load_type, etl,
            _task_info(job),
            _load_error(r.message) if r.state == "ABORTED" else "NULL",
            *[load_time(r.started_ms)] * 4, load_time(r.finished_ms), "NULL", details, r.txn_id, "{}", r.user, "",
        ))  # fmt: skip
    recorded = {r.label for r in records} - running
    for job in jobs.values():
        if job.label not in recorded and match(job.label) and _may_see_load(user, database, job):
            rows.append(_broker_load_row(job))
    return text_result(LOAD_TITLES, rows)


def _may_see_load(user, database, job) -> bool:
    return all(privileges.has_any(user, database.name, table) for table in job.tables)


def _task_info(job) -> str:
    """SHOW LOAD's TaskInfo: an S3 load's timeout and max_filter_ratio, N/A for others."""
    if job is None:
        return "cluster:N/A; timeout(s):N/A; max_filter_ratio:N/A"
    ratio = job.details.get("max_filter_ratio", 0.0)
    return f"cluster:N/A; timeout(s):{job.timeout_seconds}; max_filter_ratio:{ratio}"


def _load_error(message: str) -> str:
    """SHOW LOAD's ErrorMsg, Doris's `type:...; msg:...` (LOAD_RUN_FAIL unless it names one)."""
    return message if message.startswith("type:") else f"type:LOAD_RUN_FAIL; msg:{message}"


def _broker_load_row(job) -> tuple:
    """SHOW LOAD's row of an S3 load the TN has no record of: not committed (yet)."""
    error = _load_error(job.message) if job.message else "NULL"
    started = load_time(job.started_ms) if job.started_ms else "N/A"
    details = json.dumps({"Tables": list(job.tables)}, separators=(",", ":"))
    return (
        job.job_id, job.label, job.state, "0.00% (0/1)", "BROKER", "NULL",
        _task_info(job), error,
        load_time(job.created_ms), started, started, started,
        load_time(job.finished_ms) if job.finished_ms else "N/A", "NULL", details, -1, "{}",
        job.user, "",
    )  # fmt: skip


async def clean_label(session, statement: st.CleanLabel) -> Result:
    """Doris's CLEAN LABEL [label] FROM db: the labels of the database's finished loads (INSERT
    WITH LABEL, Stream Load, Spark writes) may be used again; LOAD on the database needed."""
    database = resolve_database(session, statement.db)
    session.require(privileges.LOAD, database.name)
    plane = session.services.data_plane
    if plane is None:
        return Result()
    try:
        await asyncio.to_thread(plane.clean_labels, database.name, statement.label or None)
    except (ServiceError, CommitError) as error:
        raise QueryError(1105, f"the labels could not be cleaned: {error}") from None
    return Result()


TRANSACTION_TITLES = [
    "TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
    "PrepareTime", "PreCommitTime", "CommitTime", "PublishTime", "FinishTime", "Reason",
    "ErrorReplicasCount", "ListenerId", "TimeoutMs", "ErrMsg",
]  # fmt: skip
TRANSACTION_STATES = ("PREPARE", "PRECOMMITTED", "COMMITTED", "VISIBLE", "ABORTED")
LOAD_SOURCE_TYPES = {
    "stream_load": "BACKEND_STREAMING", "spark": "BATCH_LOAD_JOB", INSERT_LOAD: "INSERT_STREAMING"
}  # fmt: skip
LOAD_TYPES = {INSERT_LOAD: "INSERT"}  # SHOW LOAD's Type, STREAM_LOAD for others
TRANSACTION_WHERE_HINT = (
    "Where clause should looks like one of them: id = 123 or label = 'label' or status = "
    "'prepare/precommitted/committed/visible/aborted'"
)


async def show_transaction(session, statement: st.ShowTransaction) -> Result:
    """Doris's SHOW TRANSACTION: a load's transaction by its id or label, or the loads in a
    state, of the loads the TN keeps of the database; each needs LOAD on its table."""
    database = visible_database(session, statement.db)
    if statement.where is None:
        raise QueryError(1105, "Missing transaction id")
    name, value = statement.where
    key = name.lower()
    if (key, type(value)) not in (("id", int), ("label", str), ("status", str)):
        raise QueryError(1105, TRANSACTION_WHERE_HINT)
    if key == "status" and value.upper() not in TRANSACTION_STATES:
        raise QueryError(1105, "status should be prepare/precommitted/committed/visible/aborted")
    records = _load_records(session, database.name, "transactions")
    plane = session.services.data_plane
    try:
        address = plane.load_address() if records else None
    except ServiceError as error:  # the TN could not be asked
        raise QueryError(1105, f"the transactions could not be listed: {error}") from None
    if key == "status":
        chosen = [r for r in records if r.state == value.upper()]
    else:
        chosen = [r for r in records if (r.txn_id if key == "id" else r.label) == value]
        if not chosen:
            raise QueryError(1105, f"transaction with {key} {value} does not exist")
    for record in chosen:
        if not privileges.has(session.user, privileges.LOAD, database.name, record.table):
            raise accounts.access_denied("LOAD")
    coordinator = f"BE: {(address and address[0]) or '127.0.0.1'}"
    rows = [_transaction_row(r, coordinator) for r in sorted(chosen, key=lambda r: r.txn_id)]
    return text_result(TRANSACTION_TITLES, rows)


def _transaction_row(record, coordinator: str) -> tuple:
    def when(ms: int, *states: str) -> str | None:
        return load_time(ms) if ms and record.state in states else None

    finished = when(record.finished_ms, "VISIBLE", "ABORTED")
    return (
        record.txn_id, record.label, coordinator, record.state,
        LOAD_SOURCE_TYPES.get(record.source, "BACKEND_STREAMING"), load_time(record.started_ms),
        when(record.finished_ms, "PRECOMMITTED"), when(record.finished_ms, "VISIBLE"),
        when(record.finished_ms, "VISIBLE"), finished,
        record.message if record.state == "ABORTED" else "", 0, -1, None, "",
    )  # fmt: skip


TRIGGER_TITLES = (
    "Trigger", "Event", "Table", "Statement", "Timing", "Created", "sql_mode", "Definer",
    "character_set_client", "collation_connection", "Database Collation",
)  # fmt: skip
EVENT_TITLES = (
    "Db", "Name", "Definer", "Time zone", "Type", "Execute at", "Interval value", "Interval field",
    "Starts", "Ends", "Status", "Originator", "character_set_client", "collation_connection",
    "Database Collation",
)  # fmt: skip


SHOW_HANDLERS = {
    "LOAD": _loads,
    "STREAM LOAD": _loads,
    "CATALOGS": _catalogs,
    "DATABASES": _databases,
    "TABLES": _tables,
    "COLUMNS": _columns,
    "CREATE TABLE": _create_table,
    "CREATE VIEW": _create_view,
    "CREATE MATERIALIZED VIEW": _create_materialized_view,
    "CREATE DATABASE": _create_database,
    "CREATE USER": _create_user,
    "GRANTS": _grants,
    "ROLES": _roles,
    "DYNAMIC PARTITION TABLES": _dynamic_partition_tables,
    "ALL GRANTS": _all_grants,
    "VARIABLES": _variables,
    "STATUS": _status,
    "PROCESSLIST": _processlist,
    "PARTITIONS": _partitions,
    "TEMPORARY PARTITIONS": _partitions,
    "INDEX": _index,
    "TABLE STATUS": _table_status,
    "ENGINES": _engines,
    "CHARSET": _charset,
    "COLLATION": _collation,
    "WARNINGS": _warnings,
    "LAST INSERT": _last_insert,
    "ERRORS": _empty("Level", "Code", "Message"),
    **{
        f"{kind} STATUS": _empty(  # MySQL's: Quire has no stored routines
            "Db",
            "Name",
            "Type",
            "Definer",
            "Modified",
            "Created",
            "Security_type",
            "Comment",
            "character_set_client",
            "collation_connection",
            "Database Collation",
        )  # fmt: skip
        for kind in ("PROCEDURE", "FUNCTION")
    },
    # Doris's: Quire has no triggers, events, or tables held open between statements
    "TRIGGERS": _empty(*TRIGGER_TITLES),
    "EVENTS": _empty(*EVENT_TITLES),
    "OPEN TABLES": _empty("Database", "Table", "In_use", "Name_locked"),
    "PLUGINS": _empty("Name", "Status", "Type", "Library", "License"),
    "PRIVILEGES": _empty("Privilege", "Context", "Comment"),
    "FRONTENDS": _frontends,
    "BACKENDS": _backends,
    "PROC": _proc,
}
