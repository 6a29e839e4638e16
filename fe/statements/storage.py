"""Where a table's data lives, as Doris shows it: SHOW DATA, SHOW TABLETS, SHOW TABLET, SHOW DATA
SKEW and ADMIN SHOW REPLICA STATUS / DISTRIBUTION.

Titles and row shapes are Doris's. Sizes and row counts of the base index's tablets come from the
data plane (objects, and unflushed rows counted where a flush would put them); rollups show 0;
replica and tablet counts come from the catalog. Each tablet has one replica, the rows the TN
commits and flushes for it, whatever replication_num says: it is on the TN added as a backend, or
on the TN inside this process (`quire up`, no backend: BackendId -1). Quire keeps no replica ids,
tablet versions or schema hashes: they show as -1, Doris's value for one unknown.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

from be.service.format import Role
from be.tn.errors import CommitError
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import ddl
from fe.statements.data_sizes import (
    NO_FIGURES,
    TabletFigures,
    readable_size,
    table_size,
    table_sizes,
    tablet_stats,
)
from fe.statements.names import resolve_database, resolve_table
from fe.statements.show import readable_table, sorted_rows, text_result, title_index
from fe.statements.table_data import data_plane
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
REPLICA_STATUS_TITLES = (
    "TabletId", "ReplicaId", "BackendId", "Version", "LastFailedVersion", "LastSuccessVersion",
    "CommittedVersion", "SchemaHash", "VersionNum", "IsBad", "IsUserDrop", "State", "Status",
)  # fmt: skip
REPLICA_DISTRIBUTION_TITLES = (
    "BackendId", "ReplicaNum", "ReplicaSize", "NumGraph", "NumPercent", "SizeGraph",
    "SizePercent", "CloudClusterName", "CloudClusterId",
)  # fmt: skip
DATA_SKEW_TITLES = ("PartitionName", "BucketIdx", "AvgRowCount", "AvgDataSize", "Graph", "Percent")
REPLICA_STATUSES = ("OK", "DEAD", "VERSION_ERROR", "SCHEMA_ERROR", "MISSING", "DROP")
REPLICA_WHERE_HINT = (
    "Where clause should looks like: status =/!= 'OK/DEAD/VERSION_ERROR/SCHEMA_ERROR/MISSING'"
)
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


@dataclass(frozen=True)
class ReplicaHolder:
    """The TN, which holds every tablet's one replica."""

    backend_id: int  # -1: the TN inside this process, no backend of the catalog
    alive: bool


EMBEDDED_TN = ReplicaHolder(-1, True)


def replica_holder(session) -> ReplicaHolder | None:
    """The TN as this FE knows it (alive by its last heartbeat); None while none was added."""
    monitor = session.services.backends
    if monitor is None:  # quire up: the TN runs in this process
        return EMBEDDED_TN
    tn = next((node for node in monitor.nodes() if node.role is Role.TN), None)
    return None if tn is None else ReplicaHolder(tn.id, tn.alive)


def tablet_figures(
    table: Table, stats: dict[int, TabletFigures], index_name: str, tablet_id: int
) -> TabletFigures:
    """Rows, bytes and objects of a tablet of the named index: the data plane's for the base
    index's, none for a rollup's."""
    return stats.get(tablet_id, NO_FIGURES) if index_name == table.name else NO_FIGURES


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
    holder = replica_holder(session)
    backend_id = -1 if holder is None else holder.backend_id
    rows = [
        _tablet_row(tablet_id, backend_id, *tablet_figures(table, stats, name, tablet_id))
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


def _tablet_row(tablet_id: int, backend_id: int, row_count: int, size: int, objects: int) -> tuple:
    """A tablet with its rows and bytes, where its replica is, its objects as its versions
    (VisibleVersionCount and VersionCount: what a merge makes fewer, as Doris's compaction
    makes its rowsets fewer), its replica's unknowns -1."""
    return (tablet_id, -1, backend_id, -1, -1, -1, -1, None, size, 0, row_count, None, None, -1,
            objects, objects, 0, 0, 0, -1, None, None, None, -1, "")  # fmt: skip


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


# SHOW DATA SKEW and ADMIN SHOW REPLICA STATUS / DISTRIBUTION.


def _olap(table: Table) -> Table:
    """The table, refused unless its rows live in tablets (a view's do not)."""
    if table.engine != "olap":
        raise QueryError(1105, f"Table '{table.name}' is not a OLAP table")
    return table


COMPACTION_TYPES = ("BASE", "CUMULATIVE", "FULL")


async def admin_compact(session, statement: st.AdminCompact) -> Result:
    """Doris's ADMIN COMPACT TABLE: the TN flushes the table's rows and merges each tablet's
    objects into one (of the partitions named), in the background, whichever type is asked
    (Quire's objects have no base and cumulative rowsets: every kind merges them all). SHOW
    TABLETS' VersionCount shows it done."""
    session.require_admin()
    where = statement.where
    if where is None or where[0].lower() != "type" or str(where[1]).upper() not in COMPACTION_TYPES:
        raise QueryError(1105, 'Where clause should looks like: type = "BASE|CUMULATIVE|FULL"')
    _, table = resolve_table(session, statement.table)
    table = _olap(table)
    chosen = _chosen_partitions(table, statement.partitions) if statement.partitions else []
    plane = data_plane(session)
    try:
        await asyncio.to_thread(plane.compact, table.id, frozenset(p.id for p in chosen))
    except CommitError as error:
        raise QueryError(1105, f"The compaction was not started: {error}") from None
    return Result()


async def show_data_skew(session, statement: st.ShowDataSkew) -> Result:
    """Each bucket's rows and bytes in each partition (every index's tablet of that bucket
    together), and its share of the partition's bytes."""
    database, table = readable_table(session, statement.table, "SHOW DATA SKEW")
    if not _olap(table).partitions:
        raise QueryError(1105, f"Can not find any partition from {database.name}.{table.name}")
    if statement.partitions:
        partitions = _chosen_partitions(table, statement.partitions)
    else:
        partitions = [*table.partitions, *table.temporary_partitions]
    stats = tablet_stats(session, table)
    rows = []
    for partition in partitions:
        buckets = [(0, 0)] * partition.buckets
        for name, _, tablet_ids in index_tablets(table, partition):
            for bucket, tablet_id in enumerate(tablet_ids):
                row_count, size, _ = tablet_figures(table, stats, name, tablet_id)
                buckets[bucket] = (buckets[bucket][0] + row_count, buckets[bucket][1] + size)
        total = sum(size for _, size in buckets)
        rows += [
            (partition.name, bucket, row_count, size, bar(size, total), share(size, total))
            for bucket, (row_count, size) in enumerate(buckets)
        ]
    return text_result(list(DATA_SKEW_TITLES), as_text(rows))


async def show_replica_status(session, statement: st.ShowReplicaStatus) -> Result:
    """A row for each tablet's replica (every index's, in the partitions named), filtered by its
    status: OK, DEAD while the TN misses heartbeats, MISSING while no TN was added."""
    session.require_admin()
    wanted = _status_filter(statement.where)
    table = _olap(resolve_table(session, statement.table)[1])
    holder = replica_holder(session)
    stats = tablet_stats(session, table)
    rows = [
        _replica_status_row(tablet_id, holder, tablet_figures(table, stats, name, tablet_id)[2])
        for partition in _chosen_partitions(table, statement.partitions)
        for name, _, tablet_ids in index_tablets(table, partition)
        for tablet_id in tablet_ids
    ]
    return text_result(list(REPLICA_STATUS_TITLES), as_text([r for r in rows if wanted(r[-1])]))


def _status_filter(where: tuple[str, str, object] | None):
    """Doris's WHERE STATUS = 's' or STATUS != 's' (any case): which statuses are shown."""
    if where is None:
        return lambda status: True
    column, operator, value = where
    status = value.upper() if isinstance(value, str) else None
    if column.lower() != "status" or status not in REPLICA_STATUSES:
        raise QueryError(1105, REPLICA_WHERE_HINT)
    if operator == "=":
        return lambda shown: shown == status
    return lambda shown: shown != status


def _replica_status_row(tablet_id: int, holder: ReplicaHolder | None, objects: int) -> tuple:
    """A tablet's replica; its VersionNum its objects, as SHOW TABLETS' VersionCount."""
    if holder is None:  # as Doris shows a replica a tablet lacks
        return (tablet_id, -1, -1, -1, -1, -1, -1, -1, None, None, None, None, "MISSING")
    status = "OK" if holder.alive else "DEAD"
    return (tablet_id, -1, holder.backend_id, -1, -1, -1, -1, -1, objects, "false", "false",
            "NORMAL", status)  # fmt: skip


async def show_replica_distribution(session, statement: st.ShowReplicaDistribution) -> Result:
    """For each backend (SHOW BACKENDS' list), the replicas of the table's tablets it holds
    and their bytes, and its shares of both: the TN holds them all."""
    session.require_admin()
    table = _olap(resolve_table(session, statement.table)[1])
    stats = tablet_stats(session, table)
    sizes = [
        tablet_figures(table, stats, name, tablet_id)[1]
        for partition in _chosen_partitions(table, statement.partitions)
        for name, _, tablet_ids in index_tablets(table, partition)
        for tablet_id in tablet_ids
    ]
    holder = replica_holder(session)
    held = {} if holder is None else {holder.backend_id: (len(sizes), sum(sizes))}
    backend_ids = sorted(list(session.catalog.backends))
    figures = [(backend_id, *held.get(backend_id, (0, 0))) for backend_id in backend_ids]
    replicas = sum(count for _, count, _ in figures)
    size = sum(bytes_ for _, _, bytes_ in figures)
    rows = [
        (backend_id, count, bytes_, bar(count, replicas), share(count, replicas),
         bar(bytes_, size), share(bytes_, size), "", "")
        for backend_id, count, bytes_ in figures
    ]  # fmt: skip
    return text_result(list(REPLICA_DISTRIBUTION_TITLES), as_text(rows))


def bar(part: int, whole: int) -> str:
    """Doris's graph of a part of a whole: a '>' per whole percent, 100 of them for all of it."""
    if part == whole:
        return ">" * (100 if whole else 0)
    return ">" * (part * 100 // whole)


def share(part: int, whole: int) -> str:
    """Doris's percentage of a part of a whole: "100.00%" for all of it ("0.00%" of nothing),
    else as Java's DecimalFormat("00.00 %") writes the fraction (half-even, e.g. "05.25 %")."""
    if part == whole:
        return "100.00%" if whole else "0.00%"
    percent = Decimal(part / whole * 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    return f"{percent:05.2f} %"
