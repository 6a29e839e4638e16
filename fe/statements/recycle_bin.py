"""Doris's recycle bin as statements: DROP without FORCE keeps a database, table or partition for
catalog_trash_expire_second; RECOVER brings it back (AS a new name when its own is taken again);
SHOW CATALOG RECYCLE BIN lists it. TRUNCATE TABLE and DESC t ALL live here too: they are the
other Doris DDL that acts on partitions and indexes as a whole.
"""

from __future__ import annotations

import dataclasses
import datetime

from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import ddl, mysql_functions, partitioning, schema_change, show, views
from fe.statements.information_schema import unquote_default
from fe.statements.partitioning import PartitionColumns
from metadata import ops
from metadata.catalog import tablet_holders
from metadata.records import KeyModel, Partition, PartitionKind, RecycledKind, RecycledObject

RECOVER_PRIVILEGES = (privileges.ALTER, privileges.CREATE, privileges.ADMIN)

RECYCLE_BIN_COLUMNS = [
    "Type",
    "Name",
    "DbId",
    "TableId",
    "PartitionId",
    "DropTime",
    "DataSize",
    "RemoteDataSize",
]

DESCRIBE_ALL_COLUMNS = [
    "IndexName",
    "IndexKeysType",
    "Field",
    "Type",
    "InternalType",
    "Null",
    "Key",
    "Default",
    "Extra",
    "Visible",
    "DefineExpr",
    "WhereClause",
]

INDEX_KEYS_TYPES = {
    KeyModel.DUPLICATE: "DUP_KEYS",
    KeyModel.UNIQUE: "UNIQUE_KEYS",
    KeyModel.AGGREGATE: "AGG_KEYS",
}


# TRUNCATE.


def truncate_table(session, statement: st.TruncateTable) -> list[ops.Op]:
    db_name = ddl.database_name(session, statement.table.db)
    session.require(privileges.LOAD, db_name, statement.table.name)
    database, table = ddl.resolve_table(session, statement.table)
    views.check_base_table(database.name, table)
    state = session.catalog.table_state(table.id)
    if state != "NORMAL":
        raise QueryError(1105, f"Table' state is not NORMAL: {state}")
    by_name = {p.name.lower(): p for p in table.partitions}
    chosen: list[Partition] = []
    for name in statement.partitions:
        partition = by_name.get(name.lower())
        if partition is None:
            raise QueryError(
                ErrorCode.UNKNOWN_PARTITION, f"Unknown partition '{name}' in table '{table.name}'"
            )
        if partition not in chosen:
            chosen.append(partition)
    if not statement.partitions:
        chosen = list(table.partitions)
    if not chosen:
        return []
    next_id = session.services.writer.allocate_ids(sum(1 + p.buckets for p in chosen))
    fresh = []
    for partition in chosen:
        fresh.append(Partition(next_id, partition.name, partition.lower, partition.upper,
                               next_id + 1, partition.buckets))  # fmt: skip
        next_id += 1 + partition.buckets
    fresh_table = dataclasses.replace(table, partitions=tuple(fresh))
    fresh_partitions = schema_change.with_rollup_tablets(session, fresh_table).partitions
    return [ops.TruncateTable(table.id, fresh_partitions)]


# RECOVER.


def _require_recover(session, db: str, table: str = "*") -> None:
    """ALTER_PRIV, CREATE_PRIV or ADMIN_PRIV, as Doris asks."""
    if any(privileges.has(session.user, p, db, table) for p in RECOVER_PRIVILEGES):
        return
    if table == "*":
        raise session.database_denied(db)
    raise session.table_denied("RECOVER", db, table)


def recover_database(session, statement: st.RecoverDatabase) -> list[ops.Op]:
    _require_recover(session, statement.name)
    new_name = statement.new_name or statement.name
    if session.catalog.database(new_name) is not None:
        raise QueryError(1105, f"Database[{new_name}] already exist.")
    recycled = session.catalog.recycled(RecycledKind.DATABASE, statement.name)
    if recycled is None:
        raise QueryError(1049, f"Unknown database '{statement.name}'")
    return [ops.RecoverDatabase(recycled.db_id, new_name)]


def recover_table(session, statement: st.RecoverTable) -> list[ops.Op]:
    name = statement.table
    _require_recover(session, ddl.database_name(session, name.db), name.name)
    database = ddl.resolve_database(session, name.db)
    new_name = statement.new_name or name.name
    if session.catalog.table(database.id, new_name) is not None:
        raise QueryError(1050, f"Table '{new_name}' already exists")
    recycled = session.catalog.recycled(RecycledKind.TABLE, name.name, db_id=database.id)
    if recycled is None:
        raise QueryError(1109, f"Unknown table '{name.name}' in {database.name}")
    return [ops.RecoverTable(recycled.table_id, new_name)]


def recover_partition(session, statement: st.RecoverPartition) -> list[ops.Op]:
    name = statement.table
    _require_recover(session, ddl.database_name(session, name.db), name.name)
    _, table = ddl.resolve_table(session, name)
    new_name = statement.new_name or statement.name
    if any(p.name.lower() == new_name.lower() for p in tablet_holders(table)):
        raise QueryError(1105, f"partition[{new_name}] already exist in table[{table.name}]")
    recycled = session.catalog.recycled(RecycledKind.PARTITION, statement.name, table_id=table.id)
    if recycled is None:
        raise QueryError(1105, f"No partition named {statement.name} in table {table.name}")
    partition = recycled.partition
    columns = PartitionColumns.of(table)
    try:
        if columns.kind == PartitionKind.LIST:
            definition = st.PartitionDef(new_name, values=partition.values)
            partitioning.checked_values(columns, list(table.partitions), definition)
        else:
            definition = st.PartitionDef(new_name, partition.lower or (), partition.upper)
            partitioning.checked_ranges(columns, list(table.partitions), [definition])
    except QueryError:
        raise QueryError(
            1105, f"Can not recover partition[{statement.name}]. Range conflict."
        ) from None
    return [ops.RecoverPartition(partition.id, new_name)]


# SHOW CATALOG RECYCLE BIN.


async def show_recycle_bin(session, statement: st.ShowRecycleBin) -> Result:
    session.require_admin()
    zone = mysql_functions.StatementTime.of(session).zone
    if statement.name is None:
        wanted = lambda name: True  # noqa: E731
    elif statement.like:
        wanted = show.like_matcher(statement.name)
    else:
        wanted = statement.name.__eq__
    rows = []
    for recycled in list(session.catalog.recycle_bin.values()):
        dropped = _format_time(recycled.drop_time_ms, zone)
        rows.extend(row + (dropped, "0", "0") for row in _bin_rows(recycled) if wanted(row[1]))
    return show.text_result(RECYCLE_BIN_COLUMNS, rows)


def _bin_rows(recycled: RecycledObject) -> list[tuple[str, ...]]:
    """(Type, Name, DbId, TableId, PartitionId) of the entry; a database's tables each get a row
    of their own, as Doris recycles them one by one."""
    db_id = str(recycled.db_id)
    match recycled.kind:
        case RecycledKind.DATABASE:
            return [("Database", recycled.name, db_id, "", "")] + [
                ("Table", table.name, db_id, str(table.id), "") for table in recycled.tables
            ]
        case RecycledKind.TABLE:
            return [("Table", recycled.name, db_id, str(recycled.table_id), "")]
    return [("Partition", recycled.name, db_id, str(recycled.table_id), str(recycled.id))]


def _format_time(millis: int, zone: datetime.tzinfo) -> str:
    moment = datetime.datetime.fromtimestamp(millis / 1000, zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


# DESC t ALL.


async def describe_all(session, statement: st.DescribeAll) -> Result:
    """Every index of the table, the base index first, a blank row between two, as Doris."""
    _, table = show.readable_table(session, statement.table, "SELECT")
    keys_type = INDEX_KEYS_TYPES[table.key_model]
    indexes = [(table.name, table.columns)] + [
        (rollup.name, _rollup_columns(table, rollup)) for rollup in table.rollups
    ]
    rows: list[tuple[str, ...]] = []
    for name, columns in indexes:
        if rows:
            rows.append(("",) * len(DESCRIBE_ALL_COLUMNS))
        for position, column in enumerate(columns):
            index = (name, keys_type) if position == 0 else ("", "")
            rows.append((*index, column.name, column.type.sql, column.type.sql,
                         "Yes" if column.nullable else "No", str(column.is_key).lower(),
                         _default_text(column.default),
                         column.aggregation or "", "true", "", ""))  # fmt: skip
    return show.text_result(DESCRIBE_ALL_COLUMNS, rows)


def _rollup_columns(table, rollup) -> list:
    keys = set(rollup.key_columns)
    return [dataclasses.replace(table.column(name), is_key=name in keys) for name in rollup.columns]


def _default_text(default: str | None) -> str:
    value = unquote_default(default)
    return "NULL" if value is None else value
