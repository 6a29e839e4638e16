import pytest

from fe.sql import statements as st
from fe.statement_cache import StatementCache
from fe.statements.statement_kinds import KINDS, kind_of

# sql, writes, forwarded by a non-leader, runs on a non-leader whose catalog is stale
CASES = [
    ("SELECT 1", False, False, False),
    ("SELECT table_name FROM information_schema.tables", False, False, False),
    ("USE information_schema", False, False, False),
    ("DESCRIBE d.t", False, False, False),
    ("SHOW DATABASES", False, False, False),
    ("SHOW PROC '/dbs'", False, False, False),
    ("SHOW FRONTENDS", False, False, True),
    ("SHOW PROC '/frontends'", False, False, True),
    ("SHOW PROC '/journal/'", False, False, True),
    ("SHOW PROC '/images'", False, False, True),
    ("SET SESSION query_timeout = 30", False, False, True),
    ("SET NAMES utf8mb4", False, False, True),
    ("SET GLOBAL wait_timeout = 1234", False, True, True),
    ("SET @@global.wait_timeout = 1234", False, True, True),
    ("SET wait_timeout = 5, GLOBAL interactive_timeout = 6", False, True, True),
    ("BEGIN", False, False, True),
    ("KILL 7", False, False, True),
    ("ADMIN SHOW FRONTEND CONFIG", False, False, True),
    ("ADMIN SET FRONTEND CONFIG ('qe_slow_log_ms' = '10')", False, False, True),
    ("ADMIN CHECKPOINT", False, True, True),
    ("CREATE DATABASE d", True, True, True),
    ("DROP TABLE d.t", True, True, True),
    ("CREATE USER 'u'@'%' IDENTIFIED BY 'p'", True, True, True),
    ("GRANT SELECT_PRIV ON d.* TO 'u'@'%'", True, True, True),
    ("ALTER SYSTEM ADD OBSERVER '127.0.0.1:9010'", True, True, True),
]


@pytest.mark.parametrize(("sql", "writes", "forwarded", "runs_when_stale"), CASES)
def test_each_statement_has_its_kind(sql, writes, forwarded, runs_when_stale):
    statement = StatementCache(16).statement(sql)
    kind = kind_of(statement)
    assert kind.writes == writes
    assert kind.forwarded(statement) == forwarded
    assert kind.runs_when_stale(statement) == runs_when_stale


def test_catalog_changes_are_serialised_but_analyze_which_reads_every_row_first():
    unserialised = [type_ for type_, kind in KINDS.items() if kind.writes and not kind.serialised]
    assert unserialised == [st.Analyze]
    assert KINDS[st.AlterSystem].serialised and KINDS[st.AlterTable].serialised
