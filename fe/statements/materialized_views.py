"""Doris's asynchronous materialized views: `CREATE MATERIALIZED VIEW mv [BUILD IMMEDIATE |
DEFERRED] [REFRESH [COMPLETE | AUTO] ON MANUAL] [table options] AS query` is a table of the
query's rows (made as CREATE TABLE ... AS SELECT makes one, empty with BUILD DEFERRED) that
`REFRESH MATERIALIZED VIEW mv` fills again in one commit (and, `REFRESH ... ON SCHEDULE EVERY n
unit [STARTS 'datetime']`, the leader every n units: fe/cluster/view_refresher.py); no statement
of a user writes it otherwise. The query, its tables named with their databases, is the table's hidden property
MV_QUERY. (Synchronous views, `CREATE MATERIALIZED VIEW mv AS SELECT ... FROM t`, are rollups:
fe/sql/parser.py.)"""

from __future__ import annotations

import dataclasses
import datetime

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import views
from fe.statements.names import database_name, resolve_table
from metadata.records import Table

MV_QUERY = "quire.mv_query"  # the table properties: the view's query,
MV_OWNER = "quire.mv_owner"  # who made it ('user'@'host': a scheduled refresh reads as them),
MV_EVERY = "quire.mv_every"  # ON SCHEDULE EVERY: seconds between refreshes,
MV_STARTS = "quire.mv_starts"  # and STARTS: the epoch second before which none is made
NOT_WRITTEN = "Not allowed to perform current operation on async materialized view"


VIEW_PROPERTIES = frozenset({MV_QUERY, MV_OWNER, MV_EVERY, MV_STARTS})


def without_view(properties: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in properties if key not in VIEW_PROPERTIES)


def query_of(table: Table) -> str | None:
    return dict(table.properties).get(MV_QUERY)


def schedule_of(table: Table) -> tuple[int, float] | None:
    """(seconds between refreshes, the epoch second they start at) of a scheduled view."""
    properties = dict(table.properties)
    if MV_EVERY not in properties:
        return None
    return int(properties[MV_EVERY]), float(properties.get(MV_STARTS, "0"))


def owner_of(table: Table) -> tuple[str, str]:
    name, _, host = dict(table.properties).get(MV_OWNER, "root@%").rpartition("@")
    return name, host


def with_query(session, statement: st.CreateTable, db: str) -> st.CreateTable:
    """A view's CREATE TABLE with its query, its maker and its schedule kept as the table's
    properties."""
    kept = [
        (MV_QUERY, views.qualified_query(statement.query, db)),
        (MV_OWNER, f"{session.username}@{session.user_host}"),
    ]
    if statement.refresh_every:
        kept.append((MV_EVERY, str(statement.refresh_every)))
    if statement.refresh_starts:
        try:
            starts = datetime.datetime.fromisoformat(statement.refresh_starts.strip())
        except ValueError:
            raise QueryError(
                1105, f"STARTS takes a datetime, 'yyyy-MM-dd HH:mm:ss': {statement.refresh_starts}"
            ) from None
        kept.append((MV_STARTS, str(starts.timestamp())))
    return dataclasses.replace(statement, properties=(*statement.properties, *kept))


def refuse_writes(table: Table) -> None:
    """An INSERT, UPDATE, DELETE or load of a view's table is refused (its rows are the query's)."""
    if query_of(table) is not None:
        raise QueryError(1105, NOT_WRITTEN)


def check_dropped(database: str, table: Table) -> None:
    if query_of(table) is None:
        raise QueryError(1105, f"'{database}.{table.name}' is not ASYNC_MATERIALIZED_VIEW")


async def refresh(session, statement: st.RefreshMaterializedView) -> Result:
    """The view's rows replaced by its query's, in one commit (ALTER on the view; the query
    reads its tables as the session's user)."""
    db = database_name(session, statement.view.db)
    session.require(privileges.ALTER, db, statement.view.name)
    database, table = resolve_table(session, statement.view)
    await refilled(session, database.name, table)
    return Result()


async def refilled(session, db: str, table: Table) -> None:
    """The view's rows replaced by its query's (read as the session's user), in one commit."""
    text = query_of(table)
    if text is None:
        raise QueryError(1105, f"'{db}.{table.name}' is not ASYNC_MATERIALIZED_VIEW")
    from fe.statements import dml, transactions

    await transactions.commit(session)  # as any statement that writes the catalog's tables
    await dml.filled(session, db, table.name, text, overwrite=True)
