"""Reading an older snapshot: `FOR SYSTEM_TIME AS OF` (MariaDB's syntax) on a table, or the
session variable read_ts for every read; such a session cannot write."""

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
