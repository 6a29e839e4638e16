"""Every statement type the front runs: its handler and its kind.

A write's handler returns journal operations that the leader commits; a non-leader forwards writes
and the other statements only the leader runs. A non-leader whose catalog is stale (TimePrinter)
refuses what reads the catalog, except what it knows of the cluster itself (SHOW FRONTENDS, SHOW
PROC '/frontends' ...): that is how an operator finds out why reads are refused. The session, the
forwarder and the HTTP API ask here rather than keeping lists of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.sql import statements as st
from fe.sql.parser import INTERNAL_CATALOG
from fe.statements import (
    accounts,
    admin,
    alter_jobs,
    broker_loads,
    ddl,
    dml,
    exports,
    materialized_views,
    outfile,
    queries,
    recycle_bin,
    row_policies,
    set_statement,
    show,
    statistics,
    storage,
    transactions,
)

Predicate = Callable[[object], bool]

# What this FE itself knows about the cluster: readable while its catalog is stale.
NODE_STATUS_PROC = ("/frontends", "/journal", "/images")


@dataclass(frozen=True)
class StatementKind:
    handler: Callable  # (session, statement) -> journal operations for a write, else a Result
    writes: bool = False
    leader_only: bool | Predicate = False  # a non-leader forwards it (as it forwards every write)
    readable_when_stale: bool | Predicate = True
    serialised: bool = False  # one at a time, each committed before the next is checked
    resets_warnings: bool = False
    # run again, outside a transaction, when the table changed under it (SchemaChanged)
    retried_on_schema_change: bool = False
    touches_data: bool | Predicate = (
        False  # reads or writes table data (autocommit off: opens a transaction)
    )
    # a write's work once its catalog change is committed: (session, statement) -> Result
    after: Callable | None = None

    def __post_init__(self):
        assert not self.serialised or self.writes, "only writes are serialised"

    def forwarded(self, statement) -> bool:
        return self.writes or _holds(self.leader_only, statement)

    def runs_when_stale(self, statement) -> bool:
        return _holds(self.readable_when_stale, statement)

    def touches_data_of(self, statement) -> bool:
        return _holds(self.touches_data, statement)


def _holds(rule: bool | Predicate, statement) -> bool:
    return rule(statement) if callable(rule) else rule


def kind_of(statement) -> StatementKind:
    kind = KINDS.get(type(statement))
    if kind is None:
        raise QueryError(1235, f"{type(statement).__name__} is not supported yet")
    return kind


def shows_node_status(statement: st.Show) -> bool:
    if statement.what == "FRONTENDS":
        return True
    path = (statement.path or "").rstrip("/")
    return statement.what == "PROC" and path in NODE_STATUS_PROC


async def _use(session, statement: st.Use) -> Result:
    await session.use(statement.db)
    return Result()


async def _switch(session, statement: st.Switch) -> Result:
    if statement.catalog.lower() != INTERNAL_CATALOG:
        raise QueryError(ErrorCode.UNKNOWN_CATALOG, f"Unknown catalog '{statement.catalog}'")
    return Result()


def _write(handler: Callable, serialised: bool = True) -> StatementKind:
    """A catalog change. Serialised (the default): built from the catalog as the change before
    it left it, so that two clients' ALTERs of one table do not undo each other."""
    return StatementKind(handler, writes=True, serialised=serialised, resets_warnings=True)


KINDS: dict[type, StatementKind] = {
    queries.SelectPlan: StatementKind(
        queries.run_client_select,
        readable_when_stale=False,
        resets_warnings=True,
        touches_data=queries.reads_tables,
    ),
    st.Use: StatementKind(_use, readable_when_stale=False),
    st.Show: StatementKind(show.show, readable_when_stale=shows_node_status),
    st.ShowData: StatementKind(storage.show_data, readable_when_stale=False),
    st.ShowTablets: StatementKind(storage.show_tablets, readable_when_stale=False),
    st.ShowTablet: StatementKind(storage.show_tablet, readable_when_stale=False),
    st.ShowDataSkew: StatementKind(storage.show_data_skew, readable_when_stale=False),
    st.ShowReplicaStatus: StatementKind(storage.show_replica_status, readable_when_stale=False),
    st.AdminCompact: StatementKind(storage.admin_compact, readable_when_stale=False),
    st.ShowReplicaDistribution: StatementKind(
        storage.show_replica_distribution, readable_when_stale=False
    ),
    st.ShowTransaction: StatementKind(show.show_transaction, readable_when_stale=False),
    st.CleanLabel: StatementKind(show.clean_label),
    st.Describe: StatementKind(show.describe, readable_when_stale=False),
    st.Explain: StatementKind(queries.explain, readable_when_stale=False, resets_warnings=True),
    st.DescribeAll: StatementKind(recycle_bin.describe_all, readable_when_stale=False),
    st.ShowRecycleBin: StatementKind(recycle_bin.show_recycle_bin, readable_when_stale=False),
    st.ShowAlter: StatementKind(alter_jobs.show_alter, readable_when_stale=False),
    st.SetStatement: StatementKind(set_statement.run, leader_only=set_statement.sets_global),
    st.Transaction: StatementKind(transactions.transaction_statement),
    st.Switch: StatementKind(_switch),
    st.LockTables: StatementKind(show.lock_tables),
    st.Flush: StatementKind(show.flush),
    st.ShowTableId: StatementKind(show.show_table_id),
    st.ShowPartitionId: StatementKind(show.show_partition_id),
    st.Insert: StatementKind(
        dml.insert,
        readable_when_stale=False,
        resets_warnings=True,
        retried_on_schema_change=True,
        touches_data=True,
    ),
    st.SelectIntoOutfile: StatementKind(
        outfile.run, readable_when_stale=False, resets_warnings=True, touches_data=True
    ),
    st.RefreshMaterializedView: StatementKind(
        materialized_views.refresh, readable_when_stale=False, resets_warnings=True
    ),
    st.Update: StatementKind(
        dml.update,
        readable_when_stale=False,
        resets_warnings=True,
        retried_on_schema_change=True,
        touches_data=True,
    ),
    st.Delete: StatementKind(
        dml.delete,
        readable_when_stale=False,
        resets_warnings=True,
        retried_on_schema_change=True,
        touches_data=True,
    ),
    st.Kill: StatementKind(admin.kill),
    st.AdminShowConfig: StatementKind(admin.show_config),
    st.AdminSetConfig: StatementKind(admin.set_config),
    st.AdminCheckpoint: StatementKind(admin.checkpoint, leader_only=True),
    st.Sync: StatementKind(admin.sync, leader_only=True),
    st.CreateDatabase: _write(ddl.create_database),
    st.DropDatabase: _write(ddl.drop_database),
    st.CreateTable: StatementKind(
        ddl.create_table,
        writes=True,
        serialised=True,
        resets_warnings=True,
        after=dml.fill_created_table,
    ),
    st.CreateTableLike: _write(ddl.create_table_like),
    st.DropTable: _write(ddl.drop_table),
    st.CreateView: _write(ddl.create_view),
    st.DropView: _write(ddl.drop_view),
    st.AlterTable: _write(ddl.alter_table),
    st.CreateIndex: _write(ddl.create_index),
    st.DropIndex: _write(ddl.drop_index),
    st.BuildIndex: _write(ddl.build_index),
    st.TruncateTable: _write(recycle_bin.truncate_table),
    st.Analyze: _write(statistics.analyze, serialised=False),  # reads every row first
    st.DropStats: _write(statistics.drop_stats),
    st.ShowStats: StatementKind(statistics.show_stats),
    st.ShowAnalyze: StatementKind(statistics.show_analyze),
    st.CancelAlter: _write(alter_jobs.cancel_alter),
    st.BrokerLoad: StatementKind(broker_loads.load, leader_only=True, readable_when_stale=False),
    st.CancelLoad: StatementKind(broker_loads.cancel, leader_only=True),
    st.Export: StatementKind(exports.export, leader_only=True, readable_when_stale=False),
    st.ShowExport: StatementKind(exports.show, leader_only=True),
    st.CreateRowPolicy: _write(row_policies.create),
    st.DropRowPolicy: _write(row_policies.drop),
    st.ShowRowPolicy: StatementKind(show.row_policies_shown),
    st.CancelExport: StatementKind(exports.cancel, leader_only=True),
    st.RecoverDatabase: _write(recycle_bin.recover_database),
    st.RecoverTable: _write(recycle_bin.recover_table),
    st.RecoverPartition: _write(recycle_bin.recover_partition),
    st.CreateUser: _write(accounts.create_user),
    st.DropUser: _write(accounts.drop_user),
    st.SetPassword: _write(accounts.set_password),
    st.AlterUser: _write(accounts.alter_user),
    st.GrantStatement: _write(accounts.grant),
    st.GrantRoles: _write(accounts.grant_roles),
    st.CreateRole: _write(accounts.create_role),
    st.DropRole: _write(accounts.drop_role),
    st.SetProperty: _write(accounts.set_property),
    st.ShowProperty: StatementKind(show.show_property),
    # Raft needs single-server membership changes and pysyncobj does not serialise them.
    st.AlterSystem: _write(admin.alter_system),
}
