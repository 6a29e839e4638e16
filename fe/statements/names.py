"""The database and table a statement names, resolved against the catalog with MySQL's errors
(1046 no database selected, 1049 unknown database, 1146 unknown table)."""

from __future__ import annotations

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata.records import Database, Table


def database_name(session, db_name: str | None) -> str:
    """The database a statement names, or the current one."""
    name = db_name or session.database
    if not name:
        raise QueryError(1046, "No database selected")
    return name


def resolve_database(session, db_name: str | None) -> Database:
    name = database_name(session, db_name)
    database = session.catalog.database(name)
    if database is None:
        raise QueryError(1049, f"Unknown database '{name}'")
    return database


def resolve_table(session, name: st.TableName) -> tuple[Database, Table]:
    database = resolve_database(session, name.db)
    table = session.catalog.table(database.id, name.name)
    if table is None:
        raise QueryError(1146, f"Table '{database.name}.{name.name}' doesn't exist")
    return database, table
