"""Reading an older snapshot: `FOR SYSTEM_TIME AS OF` (MariaDB's syntax) on a table, or the
session variable read_ts for every read; such a session cannot write."""

import datetime
import time

import pytest

from tests.harness import error_of, mariadb, run


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE tt")
    run(root, "USE tt")
    run(
        root, "CREATE TABLE t (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
    )
    return root


def wall_clock(connection) -> str:
    """NOW(6) as the server sees it in the session's time zone, then a moment for the clock to move."""
    moment = run(connection, "SELECT NOW(6)")[0][0]
    time.sleep(0.01)  # commit timestamps come from the clock: the next commit is strictly later
    return moment.isoformat(sep=" ")


def test_a_table_as_of_an_earlier_time(quire, db):
    run(db, "INSERT INTO t VALUES (1, 'first'), (2, 'two')")
    before = wall_clock(db)
    run(db, "UPDATE t SET v = 'second' WHERE k = 1")
    run(db, "DELETE FROM t WHERE k = 2")
    assert run(db, "SELECT k, v FROM t ORDER BY k") == ((1, "second"),)
    assert run(db, f"SELECT k, v FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{before}' ORDER BY k") == (
        (1, "first"),
        (2, "two"),
    )
    joined = run(
        db,
        f"SELECT old.v, new.v FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{before}' AS old "
        "JOIN t AS new ON old.k = new.k",
    )
    assert joined == (("first", "second"),)
    short = f"SELECT k, v FROM t AS OF TIMESTAMP '{before}' AS old WHERE old.k < 3 ORDER BY k"
    assert run(db, short) == ((1, "first"), (2, "two"))  # TiDB's form, as the issue names it
    done = mariadb(
        quire,
        "tt",
        "--batch",
        "-N",
        "-e",
        f"SELECT v FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{before}' WHERE k = 1",
    )
    assert done.returncode == 0 and done.stdout.strip() == "first", done.stderr


def test_read_ts_reads_every_table_as_of_then_and_refuses_writes(quire, db):
    run(db, "INSERT INTO t VALUES (10, 'a')")
    before = wall_clock(db)
    run(db, "INSERT INTO t VALUES (11, 'b')")
    connection = quire.connect(database="tt")
    try:
        run(connection, f"SET read_ts = '{before}'")
        assert run(connection, "SELECT k FROM t WHERE k >= 10") == ((10,),)
        code, message = error_of(connection, "INSERT INTO t VALUES (12, 'c')")
        assert code == 1792, message
        run(connection, "SET read_ts = ''")
        assert run(connection, "SELECT k FROM t WHERE k >= 10 ORDER BY k") == ((10,), (11,))
    finally:
        connection.close()
    code, message = error_of(db, "SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP 'not a time'")
    assert code == 1292, message


def test_as_of_an_expression_as_mariadb_takes_it(quire, db):
    """MariaDB's AS OF takes any expression giving a time, with or without TIMESTAMP before it;
    it is worked out when the query runs (a prepared query's NOW() moves on)."""
    run(db, "INSERT INTO t VALUES (20, 'x')")
    before = wall_clock(db)
    run(db, "UPDATE t SET v = 'y' WHERE k = 20")
    back = f"TIMESTAMP('{before}') + INTERVAL 0 SECOND"
    for written in (
        f"FOR SYSTEM_TIME AS OF TIMESTAMP {back}",
        f"FOR SYSTEM_TIME AS OF {back}",
        f"AS OF TIMESTAMP {back}",
        f"FOR SYSTEM_TIME AS OF TIMESTAMP DATE_SUB('{before}', INTERVAL 0 MICROSECOND)",
        f"FOR SYSTEM_TIME AS OF CONCAT('{before}')",
    ):
        assert run(db, f"SELECT v FROM t {written} WHERE k = 20") == (("x",),), written
    assert run(db, "SELECT v FROM t FOR SYSTEM_TIME AS OF NOW(6) WHERE k = 20") == (("y",),)
    assert error_of(db, "SELECT v FROM t FOR SYSTEM_TIME AS OF NULL") == (
        1292,
        "Incorrect datetime value: 'NULL'",
    )
    done = mariadb(
        quire, "tt", "--batch", "-N", "-e", f"SELECT v FROM t AS OF TIMESTAMP {back} WHERE k = 20"
    )
    assert done.returncode == 0 and done.stdout.strip() == "x", done.stderr


def test_a_string_plus_an_interval_is_a_time(db):
    """MySQL reads a string beside an INTERVAL as a time: in parentheses and from a column too
    (DuckDB has no string + interval); a string that is no time gives NULL."""
    assert run(db, "SELECT ('2024-01-01 10:00:00') + INTERVAL 1 SECOND")[0][0].isoformat() == (
        "2024-01-01T10:00:01"
    )
    run(db, "CREATE TABLE texts (s VARCHAR(20)) DUPLICATE KEY(s) DISTRIBUTED BY HASH(s) BUCKETS 1")
    run(db, "INSERT INTO texts VALUES ('2024-01-31 12:00:00'), ('no time')")
    assert run(
        db, "SELECT s + INTERVAL 1 DAY, DATE_ADD(s, INTERVAL 1 MONTH) FROM texts ORDER BY s"
    ) == (
        (datetime.datetime(2024, 2, 1, 12), datetime.datetime(2024, 2, 29, 12)),
        (None, None),
    )
