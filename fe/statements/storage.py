"""Where a table's data lives, as Doris shows it: SHOW DATA, SHOW TABLETS and SHOW TABLET.

Titles and row shapes are Doris's. Sizes and row counts of the base index's tablets come from the
data plane (objects, and unflushed rows counted where a flush would put them); rollups show 0;
replica and tablet counts come from the catalog. Tablets have no replicas on backends yet, so each
shows as Doris shows a tablet without replicas: one row, -1 where a replica's value would be.
"""

from __future__ import annotations

from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import ddl
from fe.statements.data_sizes import readable_size, table_size, table_sizes, tablet_stats
from fe.statements.names import resolve_database
from fe.statements.show import readable_table, sorted_rows, text_result, title_index
from metadata.records import Partition, Table

TABLE_DATA_TITLES = ("TableName", "Size", "ReplicaCount", "RemoteSize")
INDEX_DATA_TITLES = ("TableName", "IndexName", "Size", "ReplicaCount", "RowCount", "RemoteSize")
DATABASE_DATA_TITLES = ("DbId", "DbName", "Size", "RemoteSize", "RecycleSize", "RecycleRemoteSize")
TABLET_TITLES = (
    "TabletId", "ReplicaId", "BackendId", "SchemaHash", "Version", "LstSuccessVersion",
    "LstFailedVersion", "LstFailedTime", "LocalDataSize", "RemoteDataSize", "RowCount", "State",
    "LstConsistencyCheckTime", "CheckVersion", "VisibleVersionCount", "VersionCount", "QueryHits",
    "WindowAccessCount", "LastAccessTime", "PathHash", "Path", "MetaUrl", "CompactionStatus",
    "CooldownReplicaId", "CooldownMetaId",
)  # fmt: skip
TABLET_TITLES_WHERE = {"version": int, "backendid": int, "indexname": str, "state": str}
REPLICA_STATES = ("NORMAL", "ROLLUP", "SCHEMA_CHANGE", "CLONE", "ALTER", "DECOMMISSION")
WHERE_HINT = (
    'Where clause should looks like: Version = "version", or state = '
    '"NORMAL|ROLLUP|CLONE|DECOMMISSION", or BackendId = 10000, indexname="rollup_name" '
    "or compound predicate with operator AND"
)


def replication_num(table: Table) -> int:
    """Replicas per tablet: the table's replication_num, or the sum of its
    replication_allocation's tags ("tag.location.default: 3")."""
    properties = {key.lower(): value for key, value in table.properties}
    if properties.get("replication_num", "").isdigit():
        return int(properties["replication_num"])
    counts = [
        tag.partition(":")[2].strip()
        for tag in properties.get("replication_allocation", "").split(",")
    ]
    if all(count.isdigit() for count in counts):
        return sum(int(count) for count in counts)
    return ddl.DEFAULT_REPLICATION_NUM


def index_tablets(table: Table, partition: Partition) -> list[tuple[str, int, range]]:
    """(index name, index id, tablet ids) of each index of the partition: the base index (named
    and numbered as its table), then the rollups that have tablets there."""
    rollups = {rollup.id: rollup for rollup in table.rollups}
    return [(table.name, table.id, partition.tablet_ids)] + [
        (rollups[rollup_id].name, rollup_id, range(first, first + partition.buckets))
        for rollup_id, first in partition.rollup_tablets
        if rollup_id in rollups
    ]


def replica_count(table: Table, index_name: str | None = None) -> int:
    """Replicas of the table's tablets, of every index or of the one named."""
    tablets = sum(
        len(tablet_ids)
        for partition in table.partitions
        for name, _, tablet_ids in index_tablets(table, partition)
        if index_name is None or name == index_name
    )
    return tablets * replication_num(table)


def as_text(rows: list[tuple]) -> list[tuple]:
    return [tuple(None if value is None else str(value) for value in row) for row in rows]


# SHOW DATA.


async def show_data(session, statement: st.ShowData) -> Result:
    if statement.table is not None:
        return _index_data(session, statement)
    if not session.database:
        return _database_data(session)
    return _table_data(session, statement)


def _table_data(session, statement: st.ShowData) -> Result:
    database = resolve_database(session, None)
    tables = sorted(
        (
            table
            for table in session.catalog.tables_of(database.id)
            if privileges.has_any(session.user, database.name, table.name)
        ),
        key=lambda table: table.name,
    )
    sizes = table_sizes(session, tables)
    rows = [(table.name, sizes[table.id][1], replica_count(table), 0) for table in tables]
    rows = sorted_rows(rows, TABLE_DATA_TITLES, statement.order_by)
    text = [(name, readable_size(size), str(replicas), readable_size(remote))
            for name, size, replicas, remote in rows]  # fmt: skip
    total_size, total_replicas = sum(row[1] for row in rows), sum(row[2] for row in rows)
    data_quota = session.services.config["default_db_data_quota_bytes"]
    replica_quota = session.services.config["default_db_replica_quota_size"]
    text += [
        ("Total", readable_size(total_size), str(total_replicas), readable_size(0)),
        ("Quota", readable_size(data_quota), str(replica_quota), ""),
        (
            "Left",
            readable_size(max(0, data_quota - total_size)),
            str(max(0, replica_quota - total_replicas)),
            "",
        ),
    ]
    return text_result(list(TABLE_DATA_TITLES), text)


def _index_data(session, statement: st.ShowData) -> Result:
    _, table = readable_table(session, statement.table, "SHOW")
    names = [table.name, *(rollup.name for rollup in table.rollups)]
    count, size = table_size(session, table)
    rows = [
        (table.name, name, size if name == table.name else 0, replica_count(table, name),
         count if name == table.name else 0, 0)
        for name in names
    ]  # fmt: skip
    rows = sorted_rows(rows, INDEX_DATA_TITLES, statement.order_by)
    text = [
        (table.name if position == 0 else "", index, readable_size(size), str(replicas),
         str(row_count), readable_size(remote))
        for position, (_, index, size, replicas, row_count, remote) in enumerate(rows)
    ]  # fmt: skip
    total = ("", "Total", readable_size(sum(row[2] for row in rows)),
             str(sum(row[3] for row in rows)), "", readable_size(0))  # fmt: skip
    return text_result(list(INDEX_DATA_TITLES), [*text, total])


def _database_data(session) -> Result:
    """No current database: every database's sizes, for an administrator (as Doris)."""
    session.require_admin()
    databases = sorted(session.catalog.dbs.values(), key=lambda database: database.name)
    tables = {database.id: list(session.catalog.tables_of(database.id)) for database in databases}
    table_bytes = table_sizes(session, [table for listed in tables.values() for table in listed])
    sizes = {
        database.id: sum(table_bytes[table.id][1] for table in tables[database.id])
        for database in databases
    }
    rows = [
        (str(database.id), database.name, str(sizes[database.id]), "0", "0", "0")
        for database in databases
    ]
    total = ("Total", "NULL", str(sum(sizes.values())), "0", "0", "0")
    return text_result(list(DATABASE_DATA_TITLES), [*rows, total])


# SHOW TABLETS and SHOW TABLET.


async def show_tablets(session, statement: st.ShowTablets) -> Result:
    session.require_admin()
    _, table = readable_table(session, statement.table, "SHOW")
    conditions = _tablet_conditions(statement.where)
    order = [(title_index(TABLET_TITLES, o.column), o.descending) for o in statement.order_by]
    index_name = conditions.pop("indexname", None)
    stats = tablet_stats(session, table)
    rows = [
        _tablet_row(tablet_id, *stats.get(tablet_id, (0, 0)) if name == table.name else (0, 0))
        for partition in _chosen_partitions(table, statement.partitions)
        for name, _, tablet_ids in index_tablets(table, partition)
        if index_name is None or name == index_name
        for tablet_id in tablet_ids
    ]
    for title, value in conditions.items():
        index = title_index(TABLET_TITLES, title)
        rows = [row for row in rows if row[index] == value]
    rows = sorted_rows(rows, TABLET_TITLES, [st.OrderBy(TABLET_TITLES[i], d) for i, d in order])
    end = None if statement.limit is None else statement.offset + statement.limit
    return text_result(list(TABLET_TITLES), as_text(rows[statement.offset : end]))


def _tablet_conditions(where: tuple[tuple[str, object], ...]) -> dict[str, object]:
    """Doris's WHERE of SHOW TABLETS: Version, BackendId, IndexName and State, each once."""
    conditions: dict[str, object] = {}
    for name, value in where:
        key = name.lower()
        kind = TABLET_TITLES_WHERE.get(key)
        if kind is None or not isinstance(value, kind) or key in conditions:
            raise QueryError(1105, WHERE_HINT)
        if key == "state":
            value = value.upper()
            if value not in REPLICA_STATES:
                raise QueryError(1105, WHERE_HINT)
        conditions[key] = value
    return conditions


def _chosen_partitions(table: Table, names: tuple[str, ...]) -> list[Partition]:
    if not names:
        return list(table.partitions)
    by_name = {partition.name.lower(): partition for partition in table.partitions}
    chosen = []
    for name in names:
        partition = by_name.get(name.lower())
        if partition is None:
            raise QueryError(
                ErrorCode.UNKNOWN_PARTITION, f"Unknown partition '{name}' in table '{table.name}'"
            )
        if partition not in chosen:
            chosen.append(partition)
    return chosen


def _tablet_row(tablet_id: int, row_count: int, size: int) -> tuple:
    """A tablet without replicas, as Doris shows one, with its rows and bytes."""
    return (tablet_id, -1, -1, -1, -1, -1, -1, None, size, 0, row_count, None, None, -1, -1, -1,
            0, 0, 0, -1, None, None, None, -1, "")  # fmt: skip


async def show_tablet(session, statement: st.ShowTablet) -> Result:
    session.require_admin()
    found = session.catalog.tablet(statement.tablet_id)
    if found is None:
        raise QueryError(1105, f"Tablet {statement.tablet_id} does not exist")
    table, partition, bucket = found
    database = session.catalog.dbs.get(table.db_id)
    index_name, index_id = next(
        (name, index_id)
        for name, index_id, tablet_ids in index_tablets(table, partition)
        if statement.tablet_id in tablet_ids
    )
    detail = f"SHOW PROC '/dbs/{table.db_id}/{table.id}/partitions/{partition.id}/{index_id}';"
    row = (database.name if database else "", table.name, partition.name, index_name,
           table.db_id, table.id, partition.id, index_id, "true", bucket, detail)  # fmt: skip
    titles = ["DbName", "TableName", "PartitionName", "IndexName", "DbId", "TableId",
              "PartitionId", "IndexId", "IsSync", "Order", "DetailCmd"]  # fmt: skip
    return text_result(titles, as_text([row]))
