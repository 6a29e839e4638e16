"""Views (made by CREATE VIEW, in ddl), and a query's views read as the subqueries they stand for.

A view is a catalog table of engine VIEW (as Doris's View is a Table): its columns are its query's
(named and typed as CREATE TABLE ... AS SELECT types them), its query is kept as SQL text with its
tables named with their database, so that it reads the same tables from any session. A query
reading a view reads its query in its place; its reader needs SELECT on the view alone (as in
Doris), its creator needed SELECT on what the view reads.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.scope import traverse_scope

from fe.mysql.errors import QueryError
from fe.sql import parser
from metadata.records import Table

VIEW = "view"  # the engine of a view's table record
DEFINITION = "view_definition"  # the property holding its query's text
MAX_VIEW_DEPTH = 16  # views within views a query may read through
READ_BY_VIEW = "quire_read_by_view"  # meta of a table a view's query reads: (db or "", view)


def is_view(table: Table) -> bool:
    return table.engine == VIEW


def definition(table: Table) -> str:
    return dict(table.properties)[DEFINITION]


def check_base_table(db: str, table: Table) -> None:
    """A statement that writes a table's rows or changes it is refused on a view."""
    if is_view(table):
        raise QueryError(1347, f"'{db}.{table.name}' is not BASE TABLE")


def qualified_query(text: str, db: str) -> str:
    """The query as SQL text, each table it reads named with its database (db where it names
    none), so that it reads the same tables whichever database the reader uses."""
    query = parser.parse_with_sqlglot(parser.tokenize(text), text)
    if not isinstance(query, exp.Query):
        raise QueryError(
            1064, "You have an error in your SQL syntax: AS must be followed by a query"
        )
    for table in catalog_tables(query):
        if not table.db:
            table.set("db", exp.to_identifier(db))
    return query.sql(dialect="mysql")


def catalog_tables(query: exp.Expression) -> list[exp.Table]:
    """The tables query reads from the catalog (not the names of its WITH queries)."""
    try:
        scopes = traverse_scope(query)
    except OptimizeError as error:
        raise QueryError(1064, f"You have an error in your SQL syntax: {error}") from None
    common = {
        id(table)
        for scope in scopes
        for table in scope.tables
        if not table.db and table.name in scope.cte_sources
    }
    return [table for table in query.find_all(exp.Table) if id(table) not in common]


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> exp.Query:
    return parser.parse_with_sqlglot(parser.tokenize(text), text)


def expanded(expression: exp.Expression, view_of) -> exp.Expression:
    """expression with each view it reads replaced by its query, as a subquery under the name
    the view is read by, with the view's column names; view_of(table node) gives the view's
    record, None for a table that is not a view. The tables a view's query reads are marked
    READ_BY_VIEW: their reader needs no privilege on them (as in Doris and MySQL's default SQL
    SECURITY DEFINER, whose creator needed SELECT on them)."""
    for _ in range(MAX_VIEW_DEPTH + 1):
        found = [
            (table, view)
            for table in catalog_tables(expression)
            if (view := view_of(table)) is not None
        ]
        if not found:
            return expression
        for table, view in found:
            alias = exp.TableAlias(
                this=exp.to_identifier(table.alias_or_name),
                columns=[exp.to_identifier(column.name) for column in view.columns],
            )
            query = _parsed(definition(view)).copy()
            outermost = table.meta.get(READ_BY_VIEW) or (table.db, view.name)  # MySQL names it
            for read in query.find_all(exp.Table):
                read.meta[READ_BY_VIEW] = outermost
            table.replace(exp.Subquery(this=query, alias=alias))
    raise QueryError(1462, f"View '{found[0][1].name}' reads views more than {MAX_VIEW_DEPTH} deep")


def invalid(db: str, view: str) -> QueryError:
    """A view whose query reads a table or database that is gone (MySQL's answer)."""
    return QueryError(
        1356,
        f"View '{db}.{view}' references invalid table(s) or column(s) or function(s) or "
        "definer/invoker of view lack rights to use them",
    )
