"""What MySQL clients, BI tools and Doris users ask of the catalog at connect time and in their
server panels, answered as Doris answers it (as MySQL 8 where Doris is silent), from what Quire
knows: information_schema's variables, running statements, files and histograms; SHOW STATUS,
OPEN TABLES, TRIGGERS and EVENTS; and MySQL's JSON_ARRAYAGG and JSON_OBJECTAGG."""

import threading

import pytest

from tests.harness import error_of, mariadb, run, wait_until

USER, PASSWORD = "cq_nobody", "pw"  # an account with no grants


@pytest.fixture(scope="module")
def root(quire, root):
    run(root, "CREATE DATABASE cq_db")
    run(
        root,
        "CREATE TABLE cq_db.t (k INT, g VARCHAR(10), v VARCHAR(10), d DECIMAL(10, 2), "
        "dt DATETIME, f DOUBLE, b BOOLEAN) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(
        root,
        "INSERT INTO cq_db.t VALUES (1, 'a', 'x', 1.50, '2024-01-02 03:04:05', 1.0, true), "
        "(2, 'a', NULL, NULL, NULL, NULL, NULL), "
        "(3, 'b', 'y\"z', -2.00, '2024-01-01 00:00:00', 0.5, false)",
    )
    run(root, f"CREATE USER {USER} IDENTIFIED BY '{PASSWORD}'")
    return root


def titles(connection, sql) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        cursor.fetchall()
        return [column[0] for column in cursor.description]


def cli(quire, sql, user="root", password=""):
    """The rows the mariadb CLI prints (tab-separated, no titles, values as they are)."""
    done = mariadb(quire, "--batch", "--raw", "-N", "-e", sql, user=user, password=password)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def test_variables_tables_show_what_show_variables_shows(quire, root):
    """GLOBAL_VARIABLES and SESSION_VARIABLES: Doris's columns, the values SHOW [GLOBAL]
    VARIABLES shows (the asking session's own), each variable's default and whether it differs."""
    assert titles(root, "SELECT * FROM information_schema.global_variables") == [
        "VARIABLE_NAME", "VARIABLE_VALUE", "DEFAULT_VALUE", "CHANGED",
    ]  # fmt: skip
    shown = run(root, "SHOW GLOBAL VARIABLES")
    listed = run(
        root, "SELECT variable_name, variable_value FROM information_schema.GLOBAL_VARIABLES"
    )
    assert sorted(listed) == sorted(shown) and len(shown) > 50
    mine = quire.connect()
    try:
        run(mine, "SET time_zone = '+08:00'")
        by_session = (
            "SELECT variable_value, default_value, changed "
            "FROM information_schema.session_variables WHERE variable_name = 'time_zone'"
        )
        ((value, default, changed),) = run(mine, by_session)
        assert (value, changed) == ("+08:00", "1")
        assert sorted(run(mine, "SHOW VARIABLES")) == sorted(
            run(
                mine,
                "SELECT variable_name, variable_value FROM information_schema.session_variables",
            )
        )
        assert run(root, by_session) == ((default, default, "0"),)  # another session's own
    finally:
        mine.close()
    run(root, "SET GLOBAL query_timeout = 901")
    try:
        assert run(
            root,
            "SELECT variable_value, default_value, changed "
            "FROM information_schema.global_variables WHERE variable_name = 'query_timeout'",
        ) == (("901", "900", "1"),)
    finally:
        run(root, "SET GLOBAL query_timeout = 900")
    autocommit = (
        "SET autocommit = 0; SELECT variable_value, changed "
        "FROM information_schema.SESSION_VARIABLES WHERE variable_name = 'autocommit'"
    )
    assert cli(quire, autocommit) == "OFF\t1\n"  # the CLI's session's own value
    version = run(root, "SHOW GLOBAL VARIABLES LIKE 'version'")[0][1]
    assert (
        cli(
            quire,
            "SELECT variable_value FROM information_schema.global_variables "
            "WHERE variable_name = 'version'",
            user=USER,
            password=PASSWORD,
        )
        == f"{version}\n"
    )


SLEEP = "SELECT SLEEP(3)"
ACTIVE = f"SELECT user, sql FROM information_schema.active_queries WHERE sql = '{SLEEP}'"


def test_active_queries_are_the_statements_running_now(quire, root):
    """ACTIVE_QUERIES: Doris's columns, a row a statement running now, of the connections SHOW
    PROCESSLIST lists to the user (an admin: all of them)."""
    assert titles(root, "SELECT * FROM information_schema.active_queries") == [
        "QUERY_ID", "QUERY_START_TIME", "QUERY_TIME_MS", "WORKLOAD_GROUP_ID", "DATABASE",
        "FRONTEND_INSTANCE", "QUEUE_START_TIME", "QUEUE_END_TIME", "QUERY_STATUS", "USER", "SQL",
    ]  # fmt: skip
    asking = (
        "SELECT user, query_time_ms >= 0, workload_group_id, sql "
        "FROM information_schema.active_queries"
    )
    assert run(root, asking) == (("root", 1, -1, asking),)
    sleeper = quire.connect()
    sleeping = threading.Thread(target=run, args=(sleeper, SLEEP))
    sleeping.start()
    try:
        wait_until(lambda: run(root, ACTIVE), 10, "the SLEEP to be running")
        assert run(root, ACTIVE) == (("root", SLEEP),)
        started, database = run(
            root,
            "SELECT query_start_time, database FROM information_schema.active_queries "
            f"WHERE sql = '{SLEEP}'",
        )[0]
        assert len(started) == len("2024-01-01 00:00:00") and database == ""
        nobody = quire.connect(USER, PASSWORD)
        try:
            assert run(nobody, ACTIVE) == ()  # root's statement is not theirs
            assert run(nobody, "SELECT DISTINCT user FROM information_schema.active_queries") == (
                (USER,),
            )
        finally:
            nobody.close()
        assert cli(quire, f"SELECT COUNT(*) FROM ({ACTIVE}) s", USER, PASSWORD) == "0\n"
        assert cli(quire, ACTIVE) == f"root\t{SLEEP}\n"
    finally:
        sleeping.join()
        sleeper.close()
    assert run(root, ACTIVE) == ()


def test_files_and_column_statistics_are_empty(quire, root):
    """Quire keeps no tablespaces and no histograms: FILES and COLUMN_STATISTICS have their
    columns and no rows."""
    files = titles(root, "SELECT * FROM information_schema.files")
    assert files[:4] == ["FILE_ID", "FILE_NAME", "FILE_TYPE", "TABLESPACE_NAME"]
    assert len(files) == 38 and files[-2:] == ["STATUS", "EXTRA"]
    assert titles(root, "SELECT * FROM information_schema.COLUMN_STATISTICS") == [
        "SCHEMA_NAME", "TABLE_NAME", "COLUMN_NAME", "HISTOGRAM",
    ]  # fmt: skip
    assert run(root, "SELECT COUNT(*) FROM information_schema.files") == ((0,),)
    assert (
        cli(quire, "SELECT COUNT(*) FROM information_schema.column_statistics", USER, PASSWORD)
        == "0\n"
    )
    shown = {row[0] for row in run(root, "SHOW TABLES FROM information_schema")}
    assert {"GLOBAL_VARIABLES", "SESSION_VARIABLES", "ACTIVE_QUERIES", "FILES"} <= shown


def test_show_status_open_tables_triggers_and_events(quire, root):
    """SHOW [GLOBAL | SESSION | LOCAL] STATUS [LIKE]; Doris's SHOW OPEN TABLES, [FULL] TRIGGERS
    and EVENTS [FROM db] [LIKE | WHERE]: their columns, no rows (Quire has none of them)."""
    for scope in ("GLOBAL ", "SESSION ", "LOCAL ", ""):
        status = dict(run(root, f"SHOW {scope}STATUS"))
        assert {"Uptime", "Threads_connected", "Questions"} <= set(status)
        assert run(root, f"SHOW {scope}STATUS LIKE 'uptime'")[0][0] == "Uptime"
    assert "Uptime\t" in cli(quire, "SHOW GLOBAL STATUS", USER, PASSWORD)
    for sql in (
        "SHOW OPEN TABLES",
        "SHOW OPEN TABLES FROM cq_db LIKE 't%'",
        "SHOW OPEN TABLES IN cq_db",
    ):
        assert titles(root, sql) == ["Database", "Table", "In_use", "Name_locked"]
        assert run(root, sql) == ()
    for sql in (
        "SHOW TRIGGERS",
        "SHOW FULL TRIGGERS FROM cq_db",
        "SHOW TRIGGERS IN cq_db LIKE 't'",
    ):
        assert titles(root, sql)[:3] == ["Trigger", "Event", "Table"]
        assert len(titles(root, sql)) == 11 and run(root, sql) == ()
    for sql in ("SHOW EVENTS", "SHOW EVENTS FROM cq_db", "SHOW EVENTS WHERE Db = 'cq_db'"):
        assert titles(root, sql)[:4] == ["Db", "Name", "Definer", "Time zone"]
        assert len(titles(root, sql)) == 15 and run(root, sql) == ()
    for sql in ("SHOW OPEN TABLES FROM cq_db", "SHOW TRIGGERS", "SHOW EVENTS FROM cq_db"):
        assert cli(quire, sql, USER, PASSWORD) == ""


@pytest.mark.parametrize(
    "sql",
    [
        "SHOW MASTER STATUS",
        "SHOW SLAVE STATUS",
        "SHOW REPLICA STATUS",
        "SHOW OPEN TABLE",
        "SHOW EVENTS FROM",
        "SHOW TRIGGERS LIKE",
        "SHOW GLOBAL STATUS LIKE",
    ],
)
def test_what_doris_does_not_parse_is_a_syntax_error(root, sql):
    """Doris has no binlog and no replication statements: they are syntax errors, as there."""
    assert error_of(root, sql)[0] == 1064


@pytest.mark.parametrize("table", ["backends", "rowsets", "workload_groups"])
def test_tables_without_facts_behind_them_are_unknown(root, table):
    """BACKENDS left Doris's information_schema (the backends() table function took it over);
    Quire has no rowsets and no workload groups to show."""
    assert error_of(root, f"SELECT * FROM information_schema.{table}")[0] == 1109


def test_json_aggregates_print_as_mysql(quire, root):
    """JSON_ARRAYAGG and JSON_OBJECTAGG as MySQL prints them: a space after each comma and colon,
    NULL values as null, a DECIMAL's digits, a DATETIME with six fractional digits, an object's
    keys by length then bytes (a key given twice: its last value); NULL for no rows."""
    assert run(
        root,
        "SELECT JSON_ARRAYAGG(k), JSON_ARRAYAGG(v), JSON_ARRAYAGG(d), JSON_ARRAYAGG(dt), "
        "JSON_ARRAYAGG(f), JSON_ARRAYAGG(b) FROM (SELECT * FROM cq_db.t ORDER BY k) s",
    ) == ((
        "[1, 2, 3]", '["x", null, "y\\"z"]', "[1.50, null, -2.00]",
        '["2024-01-02 03:04:05.000000", null, "2024-01-01 00:00:00.000000"]',
        "[1.0, null, 0.5]", "[true, null, false]",
    ),)  # fmt: skip
    a, b = run(
        root, "SELECT g, JSON_ARRAYAGG(k), JSON_OBJECTAGG(k, v) FROM cq_db.t GROUP BY g ORDER BY g"
    )
    assert a in (("a", "[1, 2]", '{"1": "x", "2": null}'), ("a", "[2, 1]", '{"1": "x", "2": null}'))
    assert b == ("b", "[3]", '{"3": "y\\"z"}')
    keys = (
        "SELECT JSON_OBJECTAGG(w, n) FROM (SELECT 'bb' AS w, 1 AS n UNION ALL SELECT 'a', 2 "
        "UNION ALL SELECT 'c', 3 UNION ALL SELECT 'ab', 4) s"
    )
    assert run(root, keys) == (('{"a": 2, "c": 3, "ab": 4, "bb": 1}',),)
    assert run(root, "SELECT JSON_OBJECTAGG('k', n) FROM (SELECT 7 AS n) s") == (('{"k": 7}',),)
    assert run(root, "SELECT JSON_ARRAYAGG(JSON_OBJECT('k', k)) FROM cq_db.t WHERE k = 1") == (
        ('[{"k": 1}]',),
    )
    assert run(root, "SELECT JSON_ARRAYAGG(k), JSON_OBJECTAGG(v, k) FROM cq_db.t WHERE k > 10") == (
        (None, None),
    )
    assert cli(quire, "SELECT JSON_OBJECTAGG(v, k) FROM cq_db.t WHERE k = 3") == '{"y\\"z": 3}\n'
    assert (
        cli(quire, "SELECT g, JSON_ARRAYAGG(d) FROM cq_db.t WHERE k <> 2 GROUP BY g ORDER BY g")
        == "a\t[1.50]\nb\t[-2.00]\n"
    )


def test_json_aggregates_refuse_what_mysql_refuses(root):
    """A NULL key (MySQL's 3158; one found while the query runs: the engine's error with its
    message), DISTINCT or a second value (syntax errors in MySQL); no window yet."""
    assert error_of(root, "SELECT JSON_OBJECTAGG(NULL, k) FROM cq_db.t") == (
        3158,
        "JSON documents may not contain NULL member names.",
    )
    code, message = error_of(root, "SELECT JSON_OBJECTAGG(v, k) FROM cq_db.t")  # v NULL at k = 2
    assert "JSON documents may not contain NULL member names." in message, (code, message)
    assert error_of(root, "SELECT JSON_ARRAYAGG(DISTINCT k) FROM cq_db.t")[0] == 1064
    assert error_of(root, "SELECT JSON_ARRAYAGG(k, v) FROM cq_db.t")[0] == 1064
    assert error_of(root, "SELECT JSON_ARRAYAGG(k) OVER () FROM cq_db.t")[0] == 1235
    assert error_of(root, "SELECT JSON_ARRAYAGG(k FROM cq_db.t")[0] == 1064
