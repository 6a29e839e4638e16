"""What a client sees when the catalog or the engine refuses: the same code, SQLSTATE and message
as when the core spoke MySQL itself."""

import pytest

from be import engine
from fe.client_errors import apply_failure, catalog_error, engine_error, journal_error
from metadata.catalog import ApplyError, Catalog
from metadata.codec import CodecError
from metadata.journal.errors import JournalFullError, NotLeaderError
from metadata.ops import (
    AddFrontend,
    CreateDatabase,
    CreateTable,
    CreateUser,
    DropDatabase,
    DropTable,
    DropUser,
    GrantPrivileges,
    ReplaceTable,
    RevokePrivileges,
    SetLockoutPolicy,
    SetPassword,
)
from metadata.records import Database, Frontend, Grant, User
from tests.test_catalog import make_table

SELECT_ON_DB9 = Grant("db9", "*", frozenset({"SELECT"}))

CATALOG_CASES = [
    (
        CreateDatabase(Database(5, "db1")),
        (1007, "HY000", "Can't create database 'db1'; database exists"),
    ),
    (
        CreateDatabase(Database(1, "db5")),
        (1105, "HY000", "database id 1 is already in use"),
    ),
    (
        DropDatabase(42),
        (1008, "HY000", "Can't drop database with id 42; database doesn't exist"),
    ),
    (CreateTable(make_table(11, 42, "u", 2000)), (1049, "42000", "Unknown database id 42")),
    (ReplaceTable(make_table(10, 42, "t", 1000)), (1049, "42000", "Unknown database id 42")),
    (CreateTable(make_table(11, 1, "t", 2000)), (1050, "42S01", "Table 't' already exists")),
    (ReplaceTable(make_table(12, 1, "t", 3000)), (1051, "42S02", "Unknown table with id 12")),
    (DropTable(99), (1051, "42S02", "Unknown table with id 99")),
    (
        CreateUser(User("alice", "%")),
        (1396, "HY000", "Operation CREATE USER failed for 'alice'@'%'"),
    ),
    (DropUser("bob", "%"), (1396, "HY000", "Operation DROP USER failed for 'bob'@'%'")),
    *(
        (
            op,
            (1133, "42000", "Can't find any matching row in the user table for 'bob'@'%'"),
        )
        for op in (
            SetPassword("bob", "%", "*ABC"),
            SetLockoutPolicy("bob", "%", 3, 60, 20_000),
            GrantPrivileges("bob", "%", SELECT_ON_DB9),
            RevokePrivileges("bob", "%", SELECT_ON_DB9),
        )
    ),
    (
        RevokePrivileges("alice", "%", SELECT_ON_DB9),
        (1141, "42000", "There is no such grant defined for user 'alice' on host '%'"),
    ),
    (
        AddFrontend(Frontend("fe1", "127.0.0.2", 9010)),
        (1105, "HY000", "frontend 'fe1' already exists"),
    ),
]


@pytest.mark.parametrize(("op", "expected"), CATALOG_CASES)
def test_each_catalog_rejection_reaches_the_client_as_before(op, expected):
    catalog = Catalog()
    catalog.apply(CreateDatabase(Database(1, "db1")))
    catalog.apply(CreateTable(make_table(10, 1, "t", 1000)))
    catalog.apply(CreateUser(User("alice", "%")))
    catalog.apply(AddFrontend(Frontend("fe1", "127.0.0.1", 9010)))
    with pytest.raises(ApplyError) as caught:
        catalog.apply(op)
    error = catalog_error(caught.value)
    assert (error.code, error.sqlstate, error.message) == expected


ENGINE_CASES = [
    (engine.UnknownFunction("nope"), (1305, "42000", "FUNCTION nope does not exist")),
    (engine.UnknownColumn("c"), (1054, "42S22", "Unknown column 'c' in 'field list'")),
    (
        engine.SourceNotAllowed("a table function"),
        (1064, "42000", "You have an error in your SQL syntax: a table function"),
    ),
    (
        engine.InvalidQuery("near x"),
        (1064, "42000", "You have an error in your SQL syntax: near x"),
    ),
    (engine.InvalidValue("'a' is no INT"), (1292, "22007", "Incorrect value: 'a' is no INT")),
    (engine.QueryInterrupted(), (1317, "70100", "Query execution was interrupted")),
    (engine.QueryAbandoned(), (1317, "70100", "Query execution was interrupted")),
    (
        engine.QueryTimedOut(2.5),
        (
            3024,
            "HY000",
            "Query execution was interrupted, maximum statement execution time exceeded "
            "(query_timeout = 2.5 s)",
        ),
    ),
    (
        engine.MemoryLimitExceeded(1024),
        (
            3170,
            "HY000",
            "Memory capacity of 1024 bytes for 'exec_mem_limit' exceeded; "
            "raise it with SET exec_mem_limit = <bytes>",
        ),
    ),
    (
        engine.EngineBusy(4, 16),
        (1105, "HY000", "Too many queries on this FE (4 running, 16 waiting); try again later"),
    ),
    (engine.QueryFailed("division"), (1105, "HY000", "Cannot run this query: division")),
]


@pytest.mark.parametrize(("error", "expected"), ENGINE_CASES)
def test_each_engine_error_reaches_the_client_as_before(error, expected):
    mapped = engine_error(error)
    assert (mapped.code, mapped.sqlstate, mapped.message) == expected


JOURNAL_CASES = [
    (
        journal_error(NotLeaderError("127.0.0.1:9010")),
        "Journal write failed: this node is not the journal leader (leader: 127.0.0.1:9010)",
    ),
    (journal_error(JournalFullError("full")), "Journal write failed: full"),
    (apply_failure(CodecError("bad batch")), "Journal apply failed: bad batch"),
]


@pytest.mark.parametrize(("mapped", "message"), JOURNAL_CASES)
def test_each_journal_failure_reaches_the_client_as_before(mapped, message):
    assert (mapped.code, mapped.sqlstate, mapped.message) == (1105, "HY000", message)
