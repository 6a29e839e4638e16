"""The query engine as an attacker and a heavy user meet it: DuckDB's file, SQL and settings
functions are refused, MySQL's functions work, and a query that would run for minutes neither
stalls other clients nor escapes KILL, query_timeout or exec_mem_limit."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from decimal import Decimal

import pymysql
import pytest
import requests

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

PROMPT_SECONDS = 5.0  # what "answers promptly" means while a minutes-long query runs
STOP_SECONDS = 30.0  # generous, for a loaded 2-core machine


def cross_join(ways: int, select: str = "COUNT(*)") -> str:
    """A join of information_schema.collations (4 rows) with itself: 4**ways rows, each building a
    string, so 16 ways take DuckDB many minutes."""
    names = [f"c{i}" for i in range(ways)]
    concat = "CONCAT(" + ", ".join(f"{name}.COLLATION_NAME" for name in names) + ")"
    sources = ", ".join(f"information_schema.collations {name}" for name in names)
    return f"SELECT {select.format(concat=concat)} FROM {sources} WHERE {concat} <> 'x'"


ENDLESS = cross_join(16)
BIG_AGGREGATION = (
    "SELECT COUNT(*) FROM (SELECT {concat} AS k FROM "
    + ", ".join(f"information_schema.collations c{i}" for i in range(10))
    + " GROUP BY k) AS grouped"
).format(concat="CONCAT(" + ", ".join(f"c{i}.COLLATION_NAME" for i in range(10)) + ")")


def refused(connection, sql) -> pymysql.err.MySQLError:
    with pytest.raises(pymysql.err.MySQLError) as caught:
        run(connection, sql)
    return caught.value


CONNECTION_ID_QUERY = "SELECT CONNECTION_ID()"


def connection_id(connection) -> int:
    return run(connection, CONNECTION_ID_QUERY)[0][0]


def wait_running(root, victim_id: int) -> None:
    def running():  # the statement sent, not the connection's last (shown until its loop turns)
        rows = run(root, "SHOW FULL PROCESSLIST")
        return any(
            row[0] == victim_id and row[4] == "Query" and row[7] != CONNECTION_ID_QUERY
            for row in rows
        )

    wait_until(running, STOP_SECONDS, "the query to be running")


class Background:
    """A statement run on its own thread, to be stopped by someone else."""

    def __init__(self, connection, sql: str):
        self.error: pymysql.err.MySQLError | None = None
        self.rows = None
        self.ended_at: float | None = None
        self.thread = threading.Thread(target=self._run, args=(connection, sql), daemon=True)
        self.thread.start()

    def _run(self, connection, sql):
        try:
            self.rows = run(connection, sql)
        except pymysql.err.MySQLError as error:
            self.error = error
        self.ended_at = time.monotonic()

    def join(self) -> None:
        self.thread.join(STOP_SECONDS)
        assert not self.thread.is_alive(), "the statement was not stopped"


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("sandbox"), overrides={"query_executor_threads": 2}
    ).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def root(quire):
    connection = quire.connect(read_timeout=STOP_SECONDS)
    run(connection, "CREATE USER nobody IDENTIFIED BY 'pw'")
    yield connection
    connection.close()


@pytest.fixture(params=["nobody", "root"])
def user(request, quire, root):
    """A user created with no grants at all, and root: neither gets past the sandbox."""
    return request.param, "pw" if request.param == "nobody" else ""


@pytest.fixture
def nobody(quire, root):
    connection = quire.connect("nobody", "pw", read_timeout=STOP_SECONDS * 2)
    yield connection
    connection.close()


# -- DuckDB's functions are not Quire's ------------------------------------------------------


def file_attacks(quire) -> list[tuple[str, str]]:
    version = quire.meta_dir / "image" / "VERSION"
    journal = quire.meta_dir / "journal"
    return [
        (
            "SELECT content FROM information_schema.schemata, "
            "LATERAL read_text('/proc/self/cmdline')",
            "read_text",
        ),
        (f"SELECT content FROM information_schema.schemata, LATERAL read_text('{version}')", "read_text"),
        (f"SELECT * FROM read_text('{version}')", "read_text"),
        (f"SELECT filename FROM information_schema.schemata, LATERAL read_blob('{journal}/*')", "read_blob"),
        (f"SELECT * FROM read_csv('{version}')", "read_csv"),
        (f"SELECT * FROM read_parquet('{journal}/*')", "read_parquet"),
        (f"SELECT * FROM read_json('{version}')", "read_json"),
        ("SELECT * FROM information_schema.schemata, LATERAL query('SELECT 42 AS answer')", "query"),
        ("SELECT * FROM query_table('quire_is_schemata')", "query_table"),
        ("SELECT getenv('HOME')", "getenv"),
        ("SELECT current_setting('memory_limit')", "current_setting"),
        ("SELECT * FROM duckdb_settings()", "duckdb_settings"),
        ("SELECT * FROM information_schema.schemata, LATERAL duckdb_extensions()", "duckdb_extensions"),
        ("SELECT * FROM pragma_database_list()", "pragma_database_list"),
        ("SELECT SCHEMA_NAME FROM information_schema.schemata WHERE getvariable('x') IS NULL", "getvariable"),
    ]  # fmt: skip


def test_duckdb_functions_are_refused_as_unknown_functions(quire, root, user):
    name, password = user
    connection = quire.connect(name, password)
    try:
        for sql, function in file_attacks(quire):
            error = refused(connection, sql)
            assert error.args == (1305, f"FUNCTION {function} does not exist"), sql
            assert error.sqlstate == "42000", sql
    finally:
        connection.close()


def test_file_tables_never_reach_the_engine(quire, root, nobody):
    version = quire.meta_dir / "image" / "VERSION"
    error = refused(nobody, f"SELECT * FROM '{version}'")
    assert error.args[0] in (1046, 1146), error.args  # a table name, like any other
    assert "token" not in str(error.args)
    error = refused(nobody, "SELECT * FROM information_schema.schemata, (VALUES (1)) AS v")
    assert error.args[0] == 1064
    error = refused(nobody, "SELECT * FROM information_schema.schemata, LATERAL glob('/*') AS g")
    assert error.args[0] == 1064  # MySQL's GLOB is an operator: glob('/*') does not parse


def test_the_mariadb_cli_gets_1305_for_read_text(quire, root, user):
    name, password = user
    cmdline = (
        "SELECT content FROM information_schema.schemata, LATERAL read_text('/proc/self/cmdline')"
    )
    done = mariadb(quire, "-e", cmdline, user=name, password=password)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "ERROR 1305 (42000) at line 1: FUNCTION read_text does not exist"
    )
    assert "fe.cli" not in done.stdout


MYSQL_FUNCTIONS = (
    "SELECT CONCAT(LOWER(SCHEMA_NAME), '!'), UPPER(SCHEMA_NAME), IFNULL(NULL, 'x'), "
    "COALESCE(NULL, 2), LENGTH(SCHEMA_NAME), SUBSTRING(SCHEMA_NAME, 1, 4), "
    "CAST(LENGTH(SCHEMA_NAME) AS CHAR), "
    "CASE WHEN SCHEMA_NAME LIKE 'info%' THEN 'is' ELSE 'other' END, "
    "IF(SCHEMA_NAME = 'x', 1, 0), REPLACE(SCHEMA_NAME, '_', '-'), "
    "DATE_FORMAT(NOW(), '%Y') = CAST(YEAR(CURDATE()) AS CHAR), ROUND(2.345, 2), ABS(-3) "
    "FROM information_schema.schemata"
)


def test_mysql_functions_still_work(quire, root, nobody):
    assert run(nobody, MYSQL_FUNCTIONS) == (
        (
            "information_schema!",
            "INFORMATION_SCHEMA",
            "x",
            2,
            18,
            "info",
            "18",
            "is",
            0,
            "information-schema",
            1,
            Decimal("2.35"),
            3,
        ),
    )
    assert run(
        nobody,
        "SELECT COUNT(*), SUM(ID), MIN(ID), MAX(ID), "
        "GROUP_CONCAT(COLLATION_NAME ORDER BY ID SEPARATOR ',') FROM information_schema.collations",
    ) == ((4, 450, 33, 309, "utf8mb3_general_ci,utf8mb4_general_ci,binary,utf8mb4_0900_bin"),)
    assert run(
        nobody,
        "SELECT COLLATION_NAME, ROW_NUMBER() OVER (ORDER BY ID DESC) FROM "
        "information_schema.collations ORDER BY ID LIMIT 2",
    ) == (("utf8mb3_general_ci", 4), ("utf8mb4_general_ci", 3))
    (now,) = run(nobody, "SELECT NOW()")[0]
    assert abs(now.timestamp() - time.time()) < 3600 * 24


def test_mysql_functions_through_the_mariadb_cli(quire, root):
    done = mariadb(quire, "--batch", "-N", "-e", MYSQL_FUNCTIONS, user="nobody", password="pw")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\t")[:4] == ["information_schema!", "INFORMATION_SCHEMA", "x", "2"]


# -- a query that would run for minutes --------------------------------------------------------


def test_a_long_query_stalls_no_one_and_kill_query_stops_it(quire, root, nobody):
    victim_id = connection_id(nobody)
    query = Background(nobody, ENDLESS)
    wait_running(root, victim_id)

    started = time.monotonic()
    assert run(root, "SELECT 1") == ((1,),)
    assert time.monotonic() - started < PROMPT_SECONDS

    started = time.monotonic()
    newcomer = quire.connect("nobody", "pw")
    assert run(newcomer, "SELECT SCHEMA_NAME FROM information_schema.schemata") == (
        ("information_schema",),
    )
    newcomer.close()
    assert time.monotonic() - started < PROMPT_SECONDS

    started = time.monotonic()
    health = requests.get(f"http://127.0.0.1:{quire.http_port}/api/health", timeout=PROMPT_SECONDS)
    assert health.status_code == 200
    assert time.monotonic() - started < PROMPT_SECONDS

    assert query.ended_at is None
    killed_at = time.monotonic()
    run(root, f"KILL QUERY {victim_id}")
    query.join()
    assert query.error.args == (1317, "Query execution was interrupted")
    assert query.ended_at - killed_at < PROMPT_SECONDS
    assert run(nobody, "SELECT COUNT(*) FROM information_schema.collations") == ((4,),)


def test_kill_connection_stops_the_query_and_ends_the_connection(quire, root):
    victim = quire.connect("nobody", "pw", read_timeout=STOP_SECONDS * 2)
    victim_id = connection_id(victim)
    query = Background(victim, ENDLESS)
    wait_running(root, victim_id)
    run(root, f"KILL {victim_id}")
    query.join()
    assert query.error is not None and query.error.args[0] in (1927, 2013)
    wait_until(
        lambda: victim_id not in {row[0] for row in run(root, "SHOW PROCESSLIST")},
        STOP_SECONDS,
        "the killed connection to go",
    )
    # Both workers are free again: two queries run side by side.
    assert run(root, cross_join(6)) == ((4096,),)


def test_kill_query_from_the_mariadb_cli_victim(quire, root):
    victim = subprocess.Popen(
        ["mariadb", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "nobody", "-ppw"]
        + ["-e", ENDLESS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def victim_id():
            rows = run(root, "SHOW FULL PROCESSLIST")
            return next((row[0] for row in rows if row[1] == "nobody" and row[7] == ENDLESS), None)

        target = wait_until(victim_id, STOP_SECONDS, "the CLI's query to be running")
        run(root, f"KILL QUERY {target}")
        _, stderr = victim.communicate(timeout=STOP_SECONDS)
        assert victim.returncode == 1
        assert (
            stderr.splitlines()[-1]
            == "ERROR 1317 (70100) at line 1: Query execution was interrupted"
        )
    finally:
        victim.kill()
        victim.wait()


def test_query_timeout_stops_a_query(quire, root, nobody):
    run(nobody, "SET query_timeout = 1")
    assert run(nobody, "SELECT @@query_timeout") == ((1,),)
    started = time.monotonic()
    error = refused(nobody, ENDLESS)
    assert error.args[0] == 3024 and error.sqlstate == "HY000"
    assert error.args[1].startswith(
        "Query execution was interrupted, maximum statement execution time exceeded"
    )
    assert time.monotonic() - started < STOP_SECONDS
    assert run(nobody, "SELECT COUNT(*) FROM information_schema.collations") == ((4,),)
    assert refused(nobody, "SET query_timeout = 0").args[0] == 1231


def test_query_timeout_through_the_mariadb_cli(quire, root):
    done = mariadb(quire, "-e", f"SET query_timeout = 1; {ENDLESS}", user="nobody", password="pw")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(
        "ERROR 3024 (HY000) at line 1: Query execution was interrupted, "
        "maximum statement execution time exceeded"
    )


def test_exec_mem_limit_fails_a_big_aggregation_cleanly(quire, root, nobody):
    run(nobody, "SET exec_mem_limit = 1048576")
    error = refused(nobody, BIG_AGGREGATION)
    assert error.args[0] == 3170 and error.sqlstate == "HY000"
    assert "exec_mem_limit" in error.args[1]
    assert "DuckDB" not in error.args[1] and "temp_directory" not in error.args[1]
    run(nobody, "SET exec_mem_limit = 2147483648")
    assert run(nobody, BIG_AGGREGATION) == ((4**10,),)
    assert refused(nobody, "SET exec_mem_limit = -1").args[0] == 1231


def test_exec_mem_limit_bounds_the_answer_held_for_the_client(quire, root, nobody):
    # DuckDB streams this answer (its own memory stays small): 4**9 rows of 9 collation names
    # are about 50 MB as Python rows, so the FE counts what it holds against exec_mem_limit.
    wide = cross_join(9, select="{concat}")
    run(nobody, "SET exec_mem_limit = 8388608")
    error = refused(nobody, wide)
    assert error.args[0] == 3170 and "exec_mem_limit" in error.args[1]
    run(nobody, "SET exec_mem_limit = 2147483648")
    assert len(run(nobody, cross_join(5, select="{concat}"))) == 4**5
    assert run(root, "SELECT 1") == ((1,),)


def test_the_server_survived(quire, root):
    assert run(root, "SELECT COUNT(*) FROM information_schema.schemata") == ((1,),)
    assert quire.process.poll() is None


# -- a full pool -----------------------------------------------------------------------------


def test_a_full_query_pool_refuses_at_once_and_never_blocks(fresh_quire):
    fresh_quire.overrides.update({"query_executor_threads": 1, "query_queue_size": 0})
    fresh_quire.start()
    root = fresh_quire.connect(read_timeout=STOP_SECONDS)
    busy = fresh_quire.connect(read_timeout=STOP_SECONDS * 2)
    try:
        busy_id = connection_id(busy)
        query = Background(busy, ENDLESS)
        wait_running(root, busy_id)
        started = time.monotonic()
        error = refused(root, "SELECT COUNT(*) FROM information_schema.collations")
        assert error.args[0] == 1105 and error.args[1].startswith("Too many queries on this FE")
        assert time.monotonic() - started < PROMPT_SECONDS
        assert run(root, "SELECT 1") == ((1,),)
        run(root, f"KILL QUERY {busy_id}")
        query.join()
        assert query.error.args[0] == 1317

        def answered():
            try:
                return run(root, "SELECT COUNT(*) FROM information_schema.collations") == ((4,),)
            except pymysql.err.OperationalError as error:
                assert error.args[0] == 1105
                return False

        wait_until(answered, STOP_SECONDS, "the worker to be free again")
    finally:
        busy.close()
        root.close()


def test_a_query_whose_client_went_away_is_stopped(fresh_quire):
    fresh_quire.overrides.update({"query_executor_threads": 1, "query_queue_size": 0})
    fresh_quire.start()
    client = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pymysql, sys; pymysql.connect(host='127.0.0.1', port=int(sys.argv[1]), "
            "user='root', autocommit=True).cursor().execute(sys.argv[2])",
            str(fresh_quire.query_port),
            ENDLESS,
        ]
    )
    root = fresh_quire.connect(read_timeout=STOP_SECONDS)
    try:

        def running():
            rows = run(root, "SHOW FULL PROCESSLIST")
            return any(row[4] == "Query" and row[7] == ENDLESS for row in rows)

        wait_until(running, STOP_SECONDS, "the query to be running")
        client.kill()  # kill -9: the client is gone without a word; query_timeout is 900 s
        client.wait(STOP_SECONDS)

        def answered():
            try:
                return run(root, "SELECT COUNT(*) FROM information_schema.collations") == ((4,),)
            except pymysql.err.OperationalError as error:
                assert error.args[0] == 1105  # the worker is still busy
                return False

        wait_until(answered, STOP_SECONDS, "the abandoned query to free its worker")
        assert not running()
    finally:
        client.kill()
        root.close()


def test_sleep_waits_without_a_worker_and_stops_when_killed_or_timed_out(quire, root):
    """MySQL's SELECT SLEEP(n) answers 0 after n seconds, waiting on the event loop (no engine
    worker: others run meanwhile); KILL QUERY ends it at once (1317), query_timeout bounds it."""
    started = time.monotonic()
    assert run(root, "SELECT SLEEP(0.3), SLEEP(-1)") == ((0, 0),)
    assert time.monotonic() - started >= 0.3
    victim = quire.connect("nobody", "pw")
    victim_id = connection_id(victim)
    query = Background(victim, "SELECT SLEEP(600)")
    wait_running(root, victim_id)
    assert run(root, "SELECT COUNT(*) FROM information_schema.collations") == ((4,),)
    killed_at = time.monotonic()
    run(root, f"KILL QUERY {victim_id}")
    query.join()
    assert query.error.args == (1317, "Query execution was interrupted")
    assert query.ended_at - killed_at < PROMPT_SECONDS
    run(victim, "SET query_timeout = 1")
    code, message = error_of(victim, "SELECT SLEEP(5)")
    assert code == 3024, message
    victim.close()
