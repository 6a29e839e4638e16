"""Doris's asynchronous materialized views: `CREATE MATERIALIZED VIEW mv [BUILD IMMEDIATE |
DEFERRED] [REFRESH [COMPLETE | AUTO] ON MANUAL] [table options] AS query` is a table of the
query's rows (made as CREATE TABLE ... AS SELECT makes one, empty with BUILD DEFERRED) that
`REFRESH MATERIALIZED VIEW mv` fills again in one commit; no statement of a user writes it
otherwise. The query, its tables named with their databases, is the table's hidden property
MV_QUERY. (Synchronous views, `CREATE MATERIALIZED VIEW mv AS SELECT ... FROM t`, are rollups:
fe/sql/parser.py.)"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.sql.parser import parse_with_sqlglot, tokenize
from fe.statements import views
from fe.statements.names import database_name, resolve_table
from metadata.records import Table

MV_QUERY = "quire.mv_query"  # the table property: the view's query
NOT_WRITTEN = "Not allowed to perform current operation on async materialized view"


def query_of(table: Table) -> str | None:
    return dict(table.properties).get(MV_QUERY)


def with_query(statement: st.CreateTable, db: str) -> st.CreateTable:
    """A view's CREATE TABLE with its query kept as the table's property."""
    text = views.qualified_query(statement.query, db)
    return dataclasses.replace(statement, properties=(*statement.properties, (MV_QUERY, text)))


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
    text = query_of(table)
    if text is None:
        raise QueryError(1105, f"'{database.name}.{table.name}' is not ASYNC_MATERIALIZED_VIEW")
    from fe.statements import dml, transactions

    await transactions.commit(session)  # as any statement that writes the catalog's tables
    target = exp.Table(this=exp.to_identifier(table.name), db=exp.to_identifier(database.name))
    query = parse_with_sqlglot(tokenize(text), text)
    fill = st.Insert(exp.Insert(this=target, expression=query, overwrite=True), fills_created=True)
    await dml.insert(session, fill)
    await transactions.commit(session)
    return Result()
