"""The core's and the data plane's error kinds as the MySQL errors a client sees.

The catalog, the journal and the engine never speak MySQL: each raises kinds of its own, and
this is the one place that gives them a code, a SQLSTATE (from the code) and the client's message.
"""

from __future__ import annotations

from be import engine
from fe.mysql.errors import ErrorCode, QueryError
from metadata import catalog
from metadata.ops import (
    CreateDatabase,
    CreateUser,
    DropDatabase,
    DropRole,
    DropTable,
    DropUser,
    RevokeFromRole,
    SetUserProperties,
)


def catalog_error(error: catalog.ApplyError) -> QueryError:
    """The catalog's rejection of an operation. The code depends on the statement as in MySQL,
    hence on the operation: a missing database is 1008 to DROP DATABASE and 1049 to a table."""
    op = error.op
    match error:
        case catalog.DatabaseExists():
            assert isinstance(op, CreateDatabase), op
            return QueryError(
                ErrorCode.DB_CREATE_EXISTS,
                f"Can't create database '{op.database.name}'; database exists",
            )
        case catalog.UnknownDatabase() if isinstance(op, DropDatabase):
            return QueryError(
                ErrorCode.DB_DROP_EXISTS,
                f"Can't drop database with id {op.db_id}; database doesn't exist",
            )
        case catalog.UnknownDatabase():
            return QueryError(ErrorCode.BAD_DB_ERROR, f"Unknown database id {op.table.db_id}")
        case catalog.TableExists():
            return QueryError(
                ErrorCode.TABLE_EXISTS_ERROR, f"Table '{op.table.name}' already exists"
            )
        case catalog.UnknownTable():
            table_id = op.table_id if isinstance(op, DropTable) else op.table.id
            return QueryError(ErrorCode.BAD_TABLE_ERROR, f"Unknown table with id {table_id}")
        case catalog.UserExists():
            assert isinstance(op, CreateUser), op
            return QueryError(
                ErrorCode.CANNOT_USER, f"Operation CREATE USER failed for {op.user.identity}"
            )
        case catalog.UnknownUser() if isinstance(op, DropUser):
            return QueryError(
                ErrorCode.CANNOT_USER, f"Operation DROP USER failed for '{op.name}'@'{op.host}'"
            )
        case catalog.UnknownUser() if isinstance(op, SetUserProperties):
            return QueryError(ErrorCode.UNKNOWN_ERROR, f"Unknown user '{op.name}'")
        case catalog.UnknownUser():
            return QueryError(
                ErrorCode.PASSWORD_NO_MATCH,
                f"Can't find any matching row in the user table for '{op.name}'@'{op.host}'",
            )
        case catalog.RoleExists():
            return QueryError(
                ErrorCode.CANNOT_USER, f"Operation CREATE ROLE failed for '{op.role.name}'@'%'"
            )
        case catalog.UnknownRole():
            name = op.name if isinstance(op, DropRole) else op.role
            return QueryError(ErrorCode.UNKNOWN_AUTHID, f"Unknown authorization ID `{name}`@`%`")
        case catalog.NoSuchGrant() if isinstance(op, RevokeFromRole):
            return QueryError(
                ErrorCode.NONEXISTING_GRANT, f"There is no such grant defined for role '{op.role}'"
            )
        case catalog.NoSuchGrant():
            return QueryError(
                ErrorCode.NONEXISTING_GRANT,
                f"There is no such grant defined for user '{op.name}' on host '{op.host}'",
            )
    assert type(error) is catalog.ApplyError, f"no client error for {type(error).__name__}"
    return QueryError(ErrorCode.UNKNOWN_ERROR, error.message)


def journal_error(error: BaseException) -> QueryError:
    """The journal could not take or commit an entry (a JournalError: not the leader, full,
    closed, ...)."""
    return QueryError(ErrorCode.UNKNOWN_ERROR, f"Journal write failed: {error}")


def apply_failure(error: BaseException) -> QueryError:
    """Applying a committed entry raised instead of giving results (an entry that does not
    decode is passed over on every node)."""
    return QueryError(ErrorCode.UNKNOWN_ERROR, f"Journal apply failed: {error}")


def engine_error(error: engine.EngineError, grouped: bool = False) -> QueryError:
    """The engine's error as the MySQL error a client expects; never DuckDB's internals."""
    match error:
        case engine.UnknownFunction():
            return QueryError(ErrorCode.SP_DOES_NOT_EXIST, error.message)
        case engine.OrderTermOutOfRange():
            return QueryError(ErrorCode.BAD_FIELD_ERROR, error.message)
        case engine.WrongColumnCount():
            return QueryError(ErrorCode.OPERAND_COLUMNS, error.message)
        case engine.NotGrouped(column=column) if grouped:
            return QueryError(
                ErrorCode.WRONG_FIELD_WITH_GROUP,
                f"Expression of SELECT list is not in GROUP BY clause and contains nonaggregated "
                f"column '{column}' which is not functionally dependent on columns in GROUP BY "
                "clause; this is incompatible with sql_mode=only_full_group_by",
            )
        case engine.NotGrouped(column=column):
            return QueryError(
                ErrorCode.MIX_OF_GROUP_FUNC_AND_FIELDS,
                f"In aggregated query without GROUP BY, expression of SELECT list contains "
                f"nonaggregated column '{column}'; this is incompatible with "
                "sql_mode=only_full_group_by",
            )
        case engine.NoTables():
            return QueryError(ErrorCode.NO_TABLES_USED, error.message)
        case engine.UnknownColumn():
            return QueryError(ErrorCode.BAD_FIELD_ERROR, f"{error.message} in 'field list'")
        case engine.SourceNotAllowed() | engine.InvalidQuery():
            return QueryError(
                ErrorCode.PARSE_ERROR, f"You have an error in your SQL syntax: {error.message}"
            )
        case engine.ArithmeticOverflow():
            return QueryError(ErrorCode.VALUE_OUT_OF_RANGE, error.message)
        case engine.InvalidValue():
            return QueryError(ErrorCode.TRUNCATED_WRONG_VALUE, f"Incorrect value: {error.message}")
        case engine.QueryInterrupted():
            return QueryError(ErrorCode.QUERY_INTERRUPTED, "Query execution was interrupted")
        case engine.QueryTimedOut(seconds=seconds):
            return QueryError(
                ErrorCode.QUERY_TIMEOUT,
                "Query execution was interrupted, maximum statement execution time exceeded "
                f"(query_timeout = {seconds:g} s)",
            )
        case engine.MemoryLimitExceeded(limit_bytes=limit_bytes):
            return QueryError(
                ErrorCode.CAPACITY_EXCEEDED,
                f"Memory capacity of {limit_bytes} bytes for 'exec_mem_limit' exceeded; "
                "raise it with SET exec_mem_limit = <bytes>",
            )
        case engine.EngineBusy(running=running, waiting=waiting):
            return QueryError(
                ErrorCode.UNKNOWN_ERROR,
                f"Too many queries on this FE ({running} running, {waiting} waiting); "
                "try again later",
            )
    return QueryError(ErrorCode.UNKNOWN_ERROR, f"Cannot run this query: {error.message}")
