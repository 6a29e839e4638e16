"""Doris's asynchronous materialized views: CREATE MATERIALIZED VIEW ... BUILD IMMEDIATE |
DEFERRED REFRESH ... ON MANUAL ... AS query is a table of the query's rows; REFRESH MATERIALIZED
VIEW fills it again; no user's INSERT, UPDATE, DELETE or Stream Load writes it; DROP
MATERIALIZED VIEW drops it. Through PyMySQL, the mariadb CLI and curl. (Synchronous views, rollups
of their table: tests/test_schema_change.py.)"""

import subprocess

import pytest

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

CREATE = (
    "CREATE MATERIALIZED VIEW {name} BUILD {build} REFRESH COMPLETE ON MANUAL "
    "DISTRIBUTED BY RANDOM BUCKETS 2 PROPERTIES ('replication_num' = '1') AS {query}"
)
TOTALS = "SELECT k, SUM(v) AS total FROM s GROUP BY k"


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    overrides = {"materialized_view_check_interval_second": 1}
    node = QuireProcess(tmp_path_factory.mktemp("views"), overrides).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE mvs")
    run(root, "USE mvs")
    run(root, "CREATE TABLE s (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "INSERT INTO s VALUES (1, 10), (1, 20), (2, 5)")
    return root


def test_a_view_holds_its_querys_rows_until_refreshed(quire, db):
    run(db, CREATE.format(name="totals", build="IMMEDIATE", query=TOTALS))
    assert run(db, "SELECT k, total FROM totals ORDER BY k") == ((1, 30), (2, 5))
    run(db, "INSERT INTO s VALUES (3, 7), (1, 1)")
    assert run(db, "SELECT k, total FROM totals ORDER BY k") == ((1, 30), (2, 5))
    run(db, "REFRESH MATERIALIZED VIEW totals COMPLETE")
    assert run(db, "SELECT k, total FROM totals ORDER BY k") == ((1, 31), (2, 5), (3, 7))
    other = quire.connect(database="information_schema")
    try:  # the query names its tables with their database: any session refreshes it alike
        run(other, "REFRESH MATERIALIZED VIEW mvs.totals")
    finally:
        other.close()
    assert run(db, "SELECT COUNT(*) FROM totals") == ((3,),)
    shown = run(db, "SHOW CREATE TABLE totals")[0][1]
    assert "quire." not in shown and "DISTRIBUTED BY RANDOM BUCKETS 2" in shown
    assert run(db, "SHOW CREATE MATERIALIZED VIEW totals") == (
        (
            "totals",
            "CREATE MATERIALIZED VIEW `totals` REFRESH AUTO ON MANUAL DISTRIBUTED BY RANDOM "
            "BUCKETS 2 AS SELECT k, SUM(v) AS total FROM mvs.s GROUP BY k",
        ),
    )


def test_build_deferred_is_empty_until_its_first_refresh(quire, db):
    run(db, CREATE.format(name="later", build="DEFERRED", query="SELECT k FROM s"))
    assert run(db, "SELECT COUNT(*) FROM later") == ((0,),)
    done = mariadb(quire, "mvs", "--batch", "-N", "-e",
                   "REFRESH MATERIALIZED VIEW later AUTO; SELECT COUNT(*) FROM later")  # fmt: skip
    assert done.returncode == 0 and done.stdout.split() == ["5"], done.stderr
    run(db, "DROP MATERIALIZED VIEW later")
    assert ("later",) not in run(db, "SHOW TABLES")


def test_a_view_is_written_by_its_refresh_only(quire, db):
    run(db, CREATE.format(name="guarded", build="IMMEDIATE", query="SELECT k, v FROM s"))
    refusal = "Not allowed to perform current operation on async materialized view"
    for sql in (
        "INSERT INTO guarded VALUES (9, 9)",
        "UPDATE guarded SET v = 1 WHERE k = 1",
        "DELETE FROM guarded WHERE k = 1",
    ):
        assert error_of(db, sql) == (1105, refusal), sql
    data = subprocess.run(
        ["curl", "-sS", "--location-trusted", "-u", "root:", "-T", "-", "-H",
         "column_separator:,", f"http://127.0.0.1:{quire.http_port}/api/mvs/guarded/_stream_load"],
        input="9,9\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refusal in data.stdout, data.stdout
    for sql in ("REFRESH MATERIALIZED VIEW s", "DROP MATERIALIZED VIEW s"):
        assert error_of(db, sql) == (1105, "'mvs.s' is not ASYNC_MATERIALIZED_VIEW"), sql
    on_commit = "CREATE MATERIALIZED VIEW eager REFRESH ON COMMIT AS SELECT k FROM s"
    assert error_of(db, on_commit)[0] == 1235
    run(db, "CREATE USER IF NOT EXISTS 'reader'@'%' IDENTIFIED BY 'pw'")
    run(db, "GRANT SELECT_PRIV ON mvs.* TO 'reader'@'%'")
    reader = quire.connect(user="reader", password="pw", database="mvs")
    try:
        assert error_of(reader, "REFRESH MATERIALIZED VIEW guarded")[0] == 1142
        assert run(reader, "SELECT COUNT(*) FROM guarded") == ((5,),)
    finally:
        reader.close()


def test_a_scheduled_view_is_refreshed_by_the_leader_as_its_maker(quire, db):
    """REFRESH ... ON SCHEDULE EVERY n unit: the leader refreshes it every n units, its query
    read with the grants of the user who made it (a refresh that cannot read fails, logged)."""
    run(db, "CREATE USER IF NOT EXISTS 'maker'@'%' IDENTIFIED BY 'pw'")
    run(db, "GRANT SELECT_PRIV, CREATE_PRIV, LOAD_PRIV ON mvs.* TO 'maker'@'%'")
    maker = quire.connect(user="maker", password="pw", database="mvs")
    try:
        run(maker, "CREATE MATERIALIZED VIEW ticking BUILD IMMEDIATE REFRESH AUTO ON SCHEDULE "
            "EVERY 1 SECOND DISTRIBUTED BY RANDOM BUCKETS 1 AS SELECT COUNT(*) AS n FROM s")  # fmt: skip
    finally:
        maker.close()
    before = run(db, "SELECT n FROM ticking")[0][0]
    run(db, "INSERT INTO s VALUES (4, 4)")
    wait_until(lambda: run(db, "SELECT n FROM ticking") == ((before + 1,),), 30, "a refresh")
    run(db, "REVOKE SELECT_PRIV ON mvs.* FROM 'maker'@'%'")
    run(db, "INSERT INTO s VALUES (5, 5)")
    wait_until(lambda: "not refreshed" in quire.tail(200), 30, "a refused refresh, logged")
    assert run(db, "SELECT n FROM ticking") == ((before + 1,),)  # as it was
    run(db, "DROP MATERIALIZED VIEW ticking")


def test_a_user_cannot_forge_a_view_out_of_quires_hidden_table_properties(quire, db):
    """A user who may create tables in their own database only: a table made or altered with
    the properties Quire keeps a view's query and maker in (`quire.` ones) would be refreshed as
    that maker, reading what the user may not. Refused, by CREATE TABLE and ALTER TABLE SET."""
    run(db, "CREATE DATABASE IF NOT EXISTS vault")
    run(db, "CREATE TABLE vault.secrets (v VARCHAR(20)) DISTRIBUTED BY HASH(v) BUCKETS 1")
    run(db, "INSERT INTO vault.secrets VALUES ('the launch code')")
    run(db, "CREATE DATABASE IF NOT EXISTS playground")
    run(db, "CREATE USER IF NOT EXISTS 'mallory'@'%' IDENTIFIED BY 'pw'")
    run(db, "GRANT ALL ON playground.* TO 'mallory'@'%'")
    forged = (
        "'quire.mv_query' = 'SELECT v FROM vault.secrets', 'quire.mv_owner' = 'root@%', "
        "'quire.mv_every' = '1'"
    )
    mallory = quire.connect(user="mallory", password="pw", database="playground")
    try:
        for statement in (
            f"CREATE TABLE loot (v VARCHAR(20)) DISTRIBUTED BY HASH(v) BUCKETS 1 "
            f"PROPERTIES ({forged})",
            "CREATE TABLE loot (v VARCHAR(20)) DISTRIBUTED BY HASH(v) BUCKETS 1 "
            "PROPERTIES ('QUIRE.MV_QUERY' = 'SELECT v FROM vault.secrets')",
        ):
            code, message = error_of(mallory, statement)
            assert code == 1105 and "Unknown properties" in message, message
        run(mallory, "CREATE TABLE loot (v VARCHAR(20)) DISTRIBUTED BY HASH(v) BUCKETS 1")
        code, message = error_of(mallory, f"ALTER TABLE loot SET ({forged})")
        assert code == 1105 and "Unknown properties" in message, message
        code, message = error_of(mallory, "REFRESH MATERIALIZED VIEW loot")
        assert code != 0, message
        assert run(mallory, "SELECT COUNT(*) FROM loot") == ((0,),)
        assert error_of(mallory, "SELECT * FROM vault.secrets")[0] == 1142
        # a copy of a view root made (and scheduled) is a plain table: written, never refreshed
        run(db, "CREATE MATERIALIZED VIEW playground.shown BUILD IMMEDIATE REFRESH AUTO ON "
                "SCHEDULE EVERY 1 SECOND DISTRIBUTED BY RANDOM BUCKETS 1 AS "
                "SELECT COUNT(*) AS n FROM vault.secrets")  # fmt: skip
        run(mallory, "CREATE TABLE copied LIKE shown")
        run(mallory, "INSERT INTO copied VALUES (42)")
        run(db, "INSERT INTO vault.secrets VALUES ('another')")
        wait_until(lambda: run(db, "SELECT n FROM playground.shown") == ((2,),), 30, "a refresh")
        assert run(mallory, "SELECT n FROM copied") == ((42,),)
    finally:
        mallory.close()
    done = mariadb(
        quire, "-u", "mallory", "-ppw", "--batch", "playground", "-e",
        f"ALTER TABLE loot SET ({forged})",
    )  # fmt: skip
    assert "ERROR 1105" in done.stderr and "Unknown properties" in done.stderr, done.stderr
    assert "mv_query" not in run(db, "SHOW CREATE TABLE playground.loot")[0][1]
