"""Schema change as Doris does it: column lists, key columns, ORDER BY, several clauses in one
ALTER TABLE, rollups, through PyMySQL and the mariadb CLI against a real `quire up`."""

import pytest

from tests.harness import QuireProcess, add_and_start, error_of, execute, mariadb, run, wait_until

DUPLICATE = (
    "CREATE TABLE {name} (k1 INT, k2 INT, v1 VARCHAR(20), v2 BIGINT) DUPLICATE KEY(k1, k2) "
    'DISTRIBUTED BY HASH(k1) BUCKETS 2 PROPERTIES ("replication_num" = "1")'
)
AGGREGATE = (
    "CREATE TABLE {name} (k1 INT, k2 INT, v1 BIGINT SUM, v2 INT REPLACE) AGGREGATE KEY(k1, k2) "
    'DISTRIBUTED BY HASH(k1) BUCKETS 2 PROPERTIES ("replication_num" = "1")'
)
UNIQUE = (
    "CREATE TABLE {name} (k1 INT, k2 INT, v1 BIGINT, v2 INT) UNIQUE KEY(k1, k2) "
    'DISTRIBUTED BY HASH(k1) BUCKETS 2 PROPERTIES ("replication_num" = "1")'
)
RANGED = (
    "CREATE TABLE {name} (d DATE, k1 INT, v1 INT) DUPLICATE KEY(d, k1) "
    'PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ("2024-01-01"), '
    'PARTITION p2 VALUES LESS THAN ("2025-01-01")) DISTRIBUTED BY HASH(k1) BUCKETS 3'
)


FAST_JOBS = {"alter_scheduler_interval_millisecond": 100}
UNFINISHED = ("PENDING", "WAITING_TXN", "RUNNING")


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("schema_change"), FAST_JOBS).start()
    yield node
    node.stop()


def unfinished_jobs(connection, table, db="sc"):
    return [
        row
        for kind, state_at in (("COLUMN", 9), ("ROLLUP", 8))
        for row in run(connection, f"SHOW ALTER TABLE {kind} FROM {db}")
        if row[1] == table and row[state_at] in UNFINISHED
    ]


def alter(connection, sql, db="sc"):
    """ALTER TABLE, then the wait until its jobs are done (it answers at once, as in Doris)."""
    run(connection, sql)
    table = sql.split()[2].split(".")[-1]
    wait_until(lambda: not unfinished_jobs(connection, table, db), 60, f"{table}'s ALTER jobs")


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE sc")
    run(root, "USE sc")
    return root


def columns(connection, table):
    """(Field, whether a key) of each column, as DESC shows them."""
    return [(row[0], "YES" if row[3] else "NO") for row in run(connection, f"DESC {table}")]


def expect_error(connection, sql, code, text=""):
    error = error_of(connection, sql)
    assert error[0] == code and text in error[1], (sql, error)


def test_add_column_list_and_key_columns(db):
    run(db, DUPLICATE.format(name="added"))
    alter(db, "ALTER TABLE added ADD COLUMN (c1 INT, c2 VARCHAR(10) DEFAULT 'x')")
    alter(db, "ALTER TABLE added ADD COLUMN k3 INT KEY")
    alter(db, "ALTER TABLE added ADD COLUMN k0 INT KEY FIRST, ADD COLUMN v0 INT AFTER v1")
    assert columns(db, "added") == [
        ("k0", "YES"), ("k1", "YES"), ("k2", "YES"), ("k3", "YES"),
        ("v1", "NO"), ("v0", "NO"), ("v2", "NO"), ("c1", "NO"), ("c2", "NO"),
    ]  # fmt: skip
    expect_error(db, "ALTER TABLE added ADD COLUMN k9 INT KEY AFTER v2", 1105, "after value column")
    expect_error(db, "ALTER TABLE added ADD COLUMN (c3 INT, c1 INT)", 1060)
    assert columns(db, "added")[-1] == ("c2", "NO")  # the failed list added nothing


def test_aggregate_table_adds_a_key_without_aggregation(db):
    run(db, AGGREGATE.format(name="agg_add"))
    alter(db, "ALTER TABLE agg_add ADD COLUMN (region INT, total BIGINT SUM)")
    assert columns(db, "agg_add") == [
        ("k1", "YES"), ("k2", "YES"), ("region", "YES"), ("v1", "NO"), ("v2", "NO"),
        ("total", "NO"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("order", "code", "text", "expected"),
    [
        ("(k2, k1, v1, v2)", 0, "", ["k2", "k1", "v1", "v2"]),
        ("(k1, k2, v2, v1)", 0, "", ["k1", "k2", "v2", "v1"]),
        ("(k2, k1, v1)", 1105, "Reorder stmt should contains all columns", None),
        ("(k2, k1, v1, zz)", 1105, "Column[zz] not exists", None),
        ("(k2, k2, v1, v2)", 1105, "Duplicated column[k2]", None),
        ("(v1, k1, k2, v2)", 1105, "key should before all values", None),
    ],
)
def test_order_by_reorders_as_doris(db, order, code, text, expected):
    name = f"reordered_{abs(hash(order)) % 10_000}"
    run(db, DUPLICATE.format(name=name))
    if code:
        expect_error(db, f"ALTER TABLE {name} ORDER BY {order}", code, text)
        return
    alter(db, f"ALTER TABLE {name} ORDER BY {order}")
    assert [field for field, _ in columns(db, name)] == expected
    create = run(db, f"SHOW CREATE TABLE {name}")[0][1]
    keys = ", ".join(f"`{k}`" for k in expected[:2])
    assert f"DUPLICATE KEY({keys})" in create


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        ("ADD COLUMN c INT, RENAME other", "Alter operation RENAME conflicts with operation SCHEMA_CHANGE"),
        ("ADD ROLLUP r (k1), ADD COLUMN c INT", "Alter operation SCHEMA_CHANGE conflicts with operation ADD_ROLLUP"),
        ("ADD COLUMN c INT, SET ('replication_num' = '1')", "MODIFY_TABLE_PROPERTY conflicts with operation SCHEMA_CHANGE"),
        ("DROP ROLLUP r, ADD ROLLUP s (k1)", "ADD_ROLLUP conflicts with operation DROP_ROLLUP"),
    ],
)  # fmt: skip
def test_clauses_doris_does_not_combine(db, clauses, message):
    run(db, DUPLICATE.format(name="mixed"))
    expect_error(db, f"ALTER TABLE mixed {clauses}", 1105, message)
    run(db, "DROP TABLE mixed FORCE")


def test_several_column_clauses_in_one_alter(db):
    run(db, DUPLICATE.format(name="several"))
    alter(db, "ALTER TABLE several ADD COLUMN c INT, DROP COLUMN v2, MODIFY COLUMN v1 VARCHAR(40)")
    assert [row[:2] for row in run(db, "DESC several")] == [
        ("k1", "int"), ("k2", "int"), ("v1", "varchar(40)"), ("c", "int"),
    ]  # fmt: skip


# Rollups.


def indexes(connection, table):
    """{index name: [(field, key)]} from DESC t ALL."""
    found: dict[str, list] = {}
    current = None
    for row in run(connection, f"DESC {table} ALL"):
        if not any(row):
            continue
        current = row[0] or current
        found.setdefault(current, []).append((row[2], row[6]))
    return found


def test_rollups_in_create_table_and_desc_all(db):
    run(
        db,
        "CREATE TABLE with_rollups (k1 INT, k2 INT, v1 VARCHAR(20), v2 DOUBLE) "
        "DUPLICATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2 "
        "ROLLUP (r1 (k1, v1), r2 (k2, k1) DUPLICATE KEY (k2)) "
        'PROPERTIES ("replication_num" = "1")',
    )
    assert run(db, "DESC with_rollups ALL")[0][:2] == ("with_rollups", "DUP_KEYS")
    assert indexes(db, "with_rollups") == {
        "with_rollups": [("k1", "true"), ("k2", "true"), ("v1", "false"), ("v2", "false")],
        "r1": [("k1", "true"), ("v1", "true")],  # a VARCHAR ends the short key
        "r2": [("k2", "true"), ("k1", "false")],
    }
    expect_error(db, "ALTER TABLE with_rollups ADD ROLLUP r3 (v2, k1)", 1105, "float or double")
    run(db, "INSERT INTO with_rollups VALUES (1, 2, 'a', 0.5)")
    run(db, "ALTER TABLE with_rollups RENAME ROLLUP r1 r_one")  # Doris's: same rollup, new name
    assert list(indexes(db, "with_rollups")) == ["with_rollups", "r_one", "r2"]
    expect_error(
        db, "ALTER TABLE with_rollups RENAME ROLLUP r1 r9", 1105, "Rollup index[r1] does not exist"
    )
    expect_error(
        db,
        "ALTER TABLE with_rollups RENAME ROLLUP r2 r_one",
        1105,
        "Rollup name[r_one] is already used",
    )
    assert run(db, "SELECT k1, v1 FROM with_rollups") == ((1, "a"),)


@pytest.mark.parametrize(
    ("create", "rollup", "message"),
    [
        (DUPLICATE, "r (v2) DUPLICATE KEY (k1)", "Duplicate keys should be the prefix of rollup columns"),
        (DUPLICATE, "r (k1) DUPLICATE KEY (k1, k2)", "Num of duplicate keys should less than or equal"),
        (DUPLICATE, "r (k1, zz)", "Column[zz] does not exist in base index"),
        (AGGREGATE, "r (v1, k1)", "Invalid column order. value should be after key"),
        (AGGREGATE, "r (v1)", "No key column is found"),
        (AGGREGATE, "r (k1, v2)", "Rollup should contains all keys if there is a REPLACE value"),
        (UNIQUE, "r (k1, v1)", "Rollup should contains all unique keys in basetable"),
    ],
)  # fmt: skip
def test_rollup_columns_follow_doris_rules(db, create, rollup, message):
    run(db, create.format(name="rules"))
    expect_error(db, f"ALTER TABLE rules ADD ROLLUP {rollup}", 1105, message)
    run(db, "DROP TABLE rules FORCE")


@pytest.mark.parametrize(
    ("create", "rollup", "expected"),
    [
        (AGGREGATE, "r (k2, v1)", [("k2", "true"), ("v1", "false")]),
        (UNIQUE, "r (k2, k1, v2)", [("k2", "true"), ("k1", "true"), ("v2", "false")]),
        (DUPLICATE, "r (v2, k1) DUPLICATE KEY (v2)", [("v2", "true"), ("k1", "false")]),
    ],
)
def test_add_rollup_per_key_model(db, create, rollup, expected):
    run(db, create.format(name="modelled"))
    alter(db, f"ALTER TABLE modelled ADD ROLLUP {rollup}")
    assert indexes(db, "modelled")["r"] == expected
    run(db, "DROP TABLE modelled FORCE")


def test_rollups_get_tablets_in_every_partition(db):
    run(db, RANGED.format(name="ranged"))
    alter(db, "ALTER TABLE ranged ADD ROLLUP r1 (k1, v1), r2 (d, v1)")
    run(db, 'ALTER TABLE ranged ADD PARTITION p3 VALUES LESS THAN ("2026-01-01")')
    tablets = [row[0] for row in run(db, "SHOW TABLETS FROM ranged")]
    assert len(tablets) == 27  # 3 partitions of 3 buckets, in the base index and each rollup
    base = run(db, "SHOW TABLETS FROM ranged WHERE IndexName = 'ranged'")
    r2 = run(db, "SHOW TABLETS FROM ranged PARTITION (p3) WHERE IndexName = 'r2'")
    assert (len(base), len(r2)) == (9, 3)
    create = run(db, "SHOW CREATE TABLE ranged")[0][1]
    assert "ROLLUP (\n`r1` (`k1`, `v1`) DUPLICATE KEY(`k1`, `v1`),\n`r2` (`d`, `v1`)" in create
    copy = create.replace("CREATE TABLE `ranged`", "CREATE TABLE `ranged_copy`", 1)
    run(db, copy)
    assert list(indexes(db, "ranged_copy").values()) == list(indexes(db, "ranged").values())
    expect_error(
        db, "ALTER TABLE ranged ADD ROLLUP r1 (k1)", 1105, "Rollup index[r1] already exists"
    )
    alter(db, "ALTER TABLE ranged DROP ROLLUP r1, r2")
    assert list(indexes(db, "ranged")) == ["ranged"]
    expect_error(db, "ALTER TABLE ranged DROP ROLLUP r1", 1105, "does not exist in table [ranged]")


def test_column_changes_reach_rollups(db):
    run(db, DUPLICATE.format(name="spread"))
    alter(db, "ALTER TABLE spread ADD ROLLUP r (k2, v2, v1) DUPLICATE KEY (k2)")
    alter(db, "ALTER TABLE spread DROP COLUMN v2")
    alter(db, "ALTER TABLE spread ADD COLUMN (c1 INT, c2 INT) TO r")
    alter(db, "ALTER TABLE spread RENAME COLUMN v1 v9")
    alter(db, "ALTER TABLE spread ORDER BY (k2, c2, c1, v9) FROM r")
    assert indexes(db, "spread")["r"] == [
        ("k2", "true"), ("c2", "false"), ("c1", "false"), ("v9", "false"),
    ]  # fmt: skip
    alter(db, "ALTER TABLE spread DROP COLUMN c1 FROM r")
    assert [f for f, _ in indexes(db, "spread")["r"]] == ["k2", "c2", "v9"]
    assert [f for f, _ in indexes(db, "spread")["spread"]] == ["k1", "k2", "v9", "c1", "c2"]
    expect_error(db, "ALTER TABLE spread DROP COLUMN k2", 1105, "last key of rollup r")


def test_through_the_mariadb_cli(quire, db):
    statements = [
        DUPLICATE.format(name="sc.cli"),
        "ALTER TABLE sc.cli ADD COLUMN (c1 INT, c2 INT)",
        "ALTER TABLE sc.cli ORDER BY (k2, k1, v1, v2, c1, c2)",
        "ALTER TABLE sc.cli ADD ROLLUP r1 (k1, v2), r2 (k2)",
        "ALTER TABLE sc.cli DROP ROLLUP r2",
    ]
    for sql in statements:
        done = mariadb(quire, "--batch", "-e", sql)
        assert done.returncode == 0, (sql, done.stderr)
        wait_until(lambda: not unfinished_jobs(db, "cli"), 60, "cli's ALTER jobs")
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", "DESC sc.cli ALL")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("cli\tDUP_KEYS\tk2\t")
    assert "r1\tDUP_KEYS\tk1\t" in done.stdout and "r2" not in done.stdout
    done = mariadb(quire, "--batch", "-e", "ALTER TABLE sc.cli ORDER BY (k1)")
    assert "ERROR 1105 (HY000)" in done.stderr and "Reorder stmt" in done.stderr, done.stderr


# ALTER jobs.

SLOW_JOBS = {"alter_scheduler_interval_millisecond": 600_000}  # a job stays PENDING
NOT_NORMAL = "Table[{t}]'s state(SCHEMA_CHANGE) is not NORMAL. Do not allow doing ALTER ops"


def table_state(connection, db, table):
    db_id = next(row[0] for row in run(connection, "SHOW PROC '/dbs'") if row[1] == db)
    rows = run(connection, f"SHOW PROC '/dbs/{db_id}'")
    return next(row[5] for row in rows if row[1] == table)


def jobs(connection, kind, where=""):
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW ALTER TABLE {kind} FROM jobs {where}")
        titles = [d[0] for d in cursor.description]
        return [dict(zip(titles, row, strict=True)) for row in cursor.fetchall()]


def test_jobs_keep_the_old_schema_until_finished_and_a_restarted_leader_carries_on(tmp_path):
    node = QuireProcess(tmp_path / "node", SLOW_JOBS).start()
    try:
        connection = node.connect()
        run(connection, "CREATE DATABASE jobs")
        run(connection, DUPLICATE.format(name="jobs.t"))
        run(connection, DUPLICATE.format(name="jobs.t2"))
        run(connection, "ALTER TABLE jobs.t ORDER BY (k2, k1, v1, v2)")  # answers at once
        (job,) = jobs(connection, "COLUMN")
        assert list(job) == [
            "JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId",
            "OriginIndexId", "SchemaVersion", "TransactionId", "State", "Msg", "Progress",
            "Timeout",
        ]  # fmt: skip
        assert (job["TableName"], job["IndexName"], job["State"]) == ("t", "t", "PENDING")
        assert (job["FinishTime"], job["Timeout"]) == (None, "86400")
        assert [row[0] for row in run(connection, "DESC jobs.t")] == ["k1", "k2", "v1", "v2"]
        assert table_state(connection, "jobs", "t") == "SCHEMA_CHANGE"
        for sql in ("ALTER TABLE jobs.t ADD COLUMN c INT", "ALTER TABLE jobs.t DROP ROLLUP r"):
            expect_error(connection, sql, 1105, NOT_NORMAL.format(t="t"))
            done = mariadb(node, "--batch", "-e", sql)
            assert f"ERROR 1105 (HY000) at line 1: {NOT_NORMAL.format(t='t')}" in done.stderr
        expect_error(connection, "TRUNCATE TABLE jobs.t", 1105, "state is not NORMAL")

        run(connection, "ALTER TABLE jobs.t2 ADD ROLLUP r1 (k2, v1), r2 (k1)")
        rollups = jobs(connection, "ROLLUP", "WHERE TableName = 't2' ORDER BY RollupIndexName DESC")
        assert [(j["RollupIndexName"], j["BaseIndexName"], j["State"]) for j in rollups] == [
            ("r2", "t2", "PENDING"), ("r1", "t2", "PENDING"),
        ]  # fmt: skip
        assert table_state(connection, "jobs", "t2") == "ROLLUP"
        assert list(indexes(connection, "jobs.t2")) == ["t2"]  # no rollup before FINISHED
        run(connection, f"CANCEL ALTER TABLE ROLLUP FROM jobs.t2 ({rollups[0]['JobId']})")
        states = {j["RollupIndexName"]: (j["State"], j["Msg"]) for j in jobs(connection, "ROLLUP")}
        assert states == {"r2": ("CANCELLED", "user cancelled"), "r1": ("PENDING", "")}
        done = mariadb(node, "--batch", "-e", "CANCEL ALTER TABLE ROLLUP FROM jobs.t2")
        assert done.returncode == 0, done.stderr
        expect_error(
            connection, "CANCEL ALTER TABLE ROLLUP FROM jobs.t2", 1105, "is not under ROLLUP"
        )
        expect_error(
            connection,
            "CANCEL ALTER TABLE COLUMN FROM jobs.t2",
            1105,
            "Table[t2] is not under SCHEMA_CHANGE.",
        )
        assert table_state(connection, "jobs", "t2") == "NORMAL"
        connection.close()

        node.stop()
        node.overrides.update(FAST_JOBS)
        node.restart()  # the job journaled PENDING goes on under the restarted leader
        connection = node.connect()
        wait_until(lambda: jobs(connection, "COLUMN")[0]["State"] == "FINISHED", 60, "the job")
        (job,) = jobs(connection, "COLUMN")
        assert job["FinishTime"] >= job["CreateTime"] and job["SchemaVersion"] == "2:0"
        assert [row[0] for row in run(connection, "DESC jobs.t")] == ["k2", "k1", "v1", "v2"]
        assert table_state(connection, "jobs", "t") == "NORMAL"

        run(connection, "ALTER TABLE jobs.t ADD COLUMN c INT")  # light: at once, a FINISHED job
        assert [row[0] for row in run(connection, "DESC jobs.t")][-1] == "c"
        assert [j["State"] for j in jobs(connection, "COLUMN")] == ["FINISHED", "FINISHED"]
        run(connection, "ADMIN SET FRONTEND CONFIG ('history_job_keep_max_second' = '1')")
        wait_until(lambda: not jobs(connection, "COLUMN"), 60, "the history removed")
        assert jobs(connection, "ROLLUP") == []
        connection.close()
    finally:
        node.stop()


def test_followers_and_a_restart_see_the_same_rollups_and_jobs(tmp_path):
    leader = QuireProcess(tmp_path / "leader", FAST_JOBS).start()
    follower = QuireProcess(tmp_path / "follower", FAST_JOBS, command="fe").join_through(leader)
    try:
        add_and_start(leader, follower, "FOLLOWER")
        execute(leader, "CREATE DATABASE jobs", RANGED.format(name="jobs.r"))
        execute(leader, "ALTER TABLE jobs.r ADD ROLLUP r1 (k1, v1), r2 (d, v1)")
        connection = leader.connect()
        wait_until(lambda: not unfinished_jobs(connection, "r", "jobs"), 60, "the rollups")
        execute(follower, "ALTER TABLE jobs.r ADD COLUMN c INT")  # forwarded, light
        execute(leader, "ALTER TABLE jobs.r ORDER BY (k1, d, v1, c)")
        wait_until(lambda: not unfinished_jobs(connection, "r", "jobs"), 60, "the reorder")
        execute(leader, "ADMIN CHECKPOINT")
        execute(leader, "ALTER TABLE jobs.r DROP ROLLUP r2")

        def seen(node):
            return (
                execute(node, "DESC jobs.r ALL"),
                execute(node, "SHOW ALTER TABLE ROLLUP FROM jobs"),
                execute(node, "SHOW ALTER TABLE COLUMN FROM jobs"),
            )

        expected = seen(leader)
        assert [row[0] for row in expected[0] if row[0]] == ["r", "r1"]
        assert [row[8] for row in expected[1]] == ["FINISHED", "FINISHED"]
        assert [row[9] for row in expected[2]] == ["FINISHED", "FINISHED"]
        wait_until(lambda: seen(follower) == expected, 30, "the follower to agree")
        connection.close()
        leader.restart()  # from its image and the journal after it
        wait_until(lambda: seen(leader) == expected, 60, "the restarted leader")
        follower.restart()
        wait_until(lambda: seen(follower) == expected, 60, "the restarted follower")
    finally:
        follower.stop()
        leader.stop()


def test_synchronous_materialized_views_are_rollups(quire, db):
    """Doris's CREATE MATERIALIZED VIEW mv AS SELECT ... FROM t [GROUP BY ...]: a rollup of
    t, built by an ALTER job as ADD ROLLUP's (SHOW ALTER TABLE MATERIALIZED VIEW), shown by
    DESC t ALL, gone with DROP MATERIALIZED VIEW mv ON t; queries answer as before."""
    run(db, "CREATE TABLE sales (k1 INT, k2 INT, v INT) DUPLICATE KEY(k1) "
        "DISTRIBUTED BY HASH(k1) BUCKETS 1")  # fmt: skip
    run(db, "INSERT INTO sales VALUES (1, 2, 3), (1, 3, 4), (2, 3, 5)")
    run(db, "CREATE MATERIALIZED VIEW by_k2 AS SELECT k2, SUM(v) FROM sales GROUP BY k2")
    wait_until(lambda: not unfinished_jobs(db, "sales"), 60, "the view's rollup job")
    assert [row[5] for row in run(db, "SHOW ALTER TABLE MATERIALIZED VIEW FROM sc")][-1] == "by_k2"
    assert indexes(db, "sales")["by_k2"] == [("k2", "true"), ("v", "false")]
    assert run(db, "SELECT k2, SUM(v) FROM sales GROUP BY k2 ORDER BY k2") == ((2, 3), (3, 9))
    run(db, "CREATE MATERIALIZED VIEW IF NOT EXISTS by_k2 AS SELECT k2 FROM sales")  # kept
    expect_error(db, "CREATE MATERIALIZED VIEW by_k2 AS SELECT k2 FROM sales", 1105,
                 "Rollup index[by_k2] already exists")  # fmt: skip
    expect_error(db, "CREATE MATERIALIZED VIEW e AS SELECT k1 + 1 FROM sales", 1064, "k1 + 1")
    expect_error(db, "CREATE MATERIALIZED VIEW e AS SELECT k1 FROM sales JOIN sc.ranged", 1064,
                 "one table")  # fmt: skip
    done = mariadb(quire, "sc", "-e", "DROP MATERIALIZED VIEW by_k2 ON sales")
    assert done.returncode == 0, done.stderr
    assert "by_k2" not in indexes(db, "sales")
    run(db, "DROP MATERIALIZED VIEW IF EXISTS by_k2 ON sales")
    expect_error(db, "DROP MATERIALIZED VIEW by_k2 ON sales", 1105, "does not exist")
