"""Where Quire was stricter than Doris, Doris's rules with Doris's messages (1105, as Doris sends
its AnalysisException and DdlException): CreateTableInfo.validate / validateKeyColumns for CREATE
TABLE, SchemaChangeHandler for ADD COLUMN and DROP COLUMN."""

import pytest

from tests.harness import error_of, mariadb, run, wait_until


@pytest.fixture(scope="module")
def kr(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS kr")
    connection = quire.connect(database="kr")
    yield connection
    connection.close()


def keys_of(connection, table):
    return [row[0] for row in run(connection, f"DESC {table}") if row[3]]  # Key: AGG, DUP or UNI


def test_aggregated_columns_without_a_key_clause_make_an_aggregate_key_table(quire, kr):
    run(
        kr,
        "CREATE TABLE agg (k1 INT, k2 VARCHAR(10), v BIGINT SUM, w INT MAX) DISTRIBUTED BY HASH(k1) BUCKETS 1",
    )
    created = run(kr, "SHOW CREATE TABLE agg")[0][1]
    assert "AGGREGATE KEY(`k1`, `k2`)" in created and "`v` bigint SUM" in created
    assert keys_of(kr, "agg") == ["k1", "k2"]
    done = mariadb(
        quire, "--batch", "-N", "-e", "CREATE TABLE kr.agg2 (k INT, v INT REPLACE); DESC kr.agg2"
    )
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[3] for line in done.stdout.splitlines()] == ["AGG", ""]


@pytest.mark.parametrize(
    "sql, message",
    [
        (
            "CREATE TABLE e1 (v INT SUM, k INT)",
            "The olap table first column could not be float, double, string or array, struct, "
            "map, please use decimal or varchar instead.",
        ),
        (
            "CREATE TABLE e2 (k INT, v INT SUM) DUPLICATE KEY(k)",
            "DUP_KEYS table should not specify aggregate type for non-key column[v]",
        ),
        (
            "CREATE TABLE e3 (k INT, v INT MAX) UNIQUE KEY(k)",
            "UNIQUE_KEYS table should not specify aggregate type for non-key column[v]",
        ),
        (
            "CREATE TABLE e4 (k INT, v INT) AGGREGATE KEY(k)",
            "AGG_KEYS table should specify aggregate type for non-key column[v]",
        ),
        (
            "CREATE TABLE e5 (k INT SUM, v INT SUM) AGGREGATE KEY(k)",
            "Key column[k] should not specify aggregate type.",
        ),
    ],
)
def test_create_table_refuses_what_doris_refuses_in_doris_words(quire, kr, sql, message):
    assert error_of(kr, sql) == (1105, message)
    line = mariadb(quire, "--batch", "kr", "-e", sql).stderr.strip().splitlines()[-1]
    assert line == f"ERROR 1105 (HY000) at line 1: {message}"


def test_add_column_as_doris_does(quire, kr):
    run(
        kr,
        "CREATE TABLE a_agg (k INT, v INT SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(kr, "ALTER TABLE a_agg ADD COLUMN k2 INT")  # a key column: a schema-change job
    wait_until(lambda: keys_of(kr, "a_agg") == ["k", "k2"], 60, "the schema change to finish")
    assert [row[0] for row in run(kr, "DESC a_agg")] == ["k", "k2", "v"]
    assert error_of(kr, "ALTER TABLE a_agg ADD COLUMN k3 INT KEY SUM") == (
        1105,
        "Can not assign aggregation method on key column: k3",
    )
    run(kr, "CREATE TABLE a_dup (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(kr, "CREATE TABLE a_uni (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    for table, model in (("a_dup", "Duplicate"), ("a_uni", "Unique")):
        sql = f"ALTER TABLE {table} ADD COLUMN s INT SUM"
        message = f"Can not assign aggregation method on column in {model} data model table: s"
        assert error_of(kr, sql) == (1105, message)
        line = mariadb(quire, "--batch", "kr", "-e", sql).stderr.strip().splitlines()[-1]
        assert line == f"ERROR 1105 (HY000) at line 1: {message}"


def test_drop_a_key_column_of_a_duplicate_key_table(quire, kr):
    run(
        kr,
        "CREATE TABLE d (k1 INT, k2 INT, v INT) DUPLICATE KEY(k1, k2) DISTRIBUTED BY HASH(v) BUCKETS 1",
    )
    run(kr, "ALTER TABLE d DROP COLUMN k1")  # a key column: a schema-change job
    wait_until(lambda: keys_of(kr, "d") == ["k2"], 60, "the schema change to finish")
    assert error_of(kr, "ALTER TABLE d DROP COLUMN k2") == (1105, "No key column left. index[d]")
    done = mariadb(quire, "--batch", "kr", "-e", "ALTER TABLE d DROP COLUMN k2")
    assert (
        done.stderr.strip().splitlines()[-1]
        == "ERROR 1105 (HY000) at line 1: No key column left. index[d]"
    )
    assert [row[0] for row in run(kr, "DESC d")] == ["k2", "v"]
