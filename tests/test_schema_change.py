"""Schema change as Doris does it: column lists, key columns, ORDER BY, several clauses in one
ALTER TABLE, rollups, through PyMySQL and the mariadb CLI against a real `quire up`."""

import pytest

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

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
    assert len(tablets) == 9  # the base index's; each rollup has as many again
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
