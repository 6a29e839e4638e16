"""Doris's `internal.` catalog prefix wherever a table or database is named, and Doris's error
(5086, SQLSTATE 42000) for any other catalog, through PyMySQL and the mariadb CLI."""

import pytest

from tests.harness import error_of, mariadb, run

UNKNOWN_HIVE = (5086, "Unknown catalog 'hive'")


def test_ddl_and_show_take_internal_db_t(quire, root):
    run(root, "CREATE DATABASE internal.ic")
    run(root, "CREATE TABLE internal.ic.t (k INT, v INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE TABLE internal.ic.copy LIKE internal.ic.t")
    run(root, "ALTER TABLE internal.ic.t ADD COLUMN w INT")
    run(root, "TRUNCATE TABLE internal.ic.t")
    assert [row[0] for row in run(root, "DESC internal.ic.t")] == ["k", "v", "w"]
    assert [row[0] for row in run(root, "SHOW COLUMNS FROM internal.ic.t")] == ["k", "v", "w"]
    assert [row[0] for row in run(root, "SHOW COLUMNS FROM t FROM internal.ic")] == ["k", "v", "w"]
    assert run(root, "SHOW CREATE TABLE internal.ic.t")[0][0] == "t"
    assert run(root, "SHOW CREATE DATABASE internal.ic")[0][0] == "ic"
    assert len(run(root, "SHOW TABLETS FROM internal.ic.t")) == 1
    assert run(root, "SHOW DATA FROM internal.ic.t")[0][:2] == ("t", "t")
    assert [row[0] for row in run(root, "SHOW TABLE STATUS FROM internal.ic")] == ["copy", "t"]
    run(root, "DROP TABLE internal.ic.copy")
    assert run(root, "SHOW TABLES FROM internal.ic") == (("t",),)
    done = mariadb(
        quire, "--batch", "-N", "-e", "DESC internal.ic.t; SHOW CREATE TABLE internal.ic.t"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split("\t")[:2] == ["k", "int"]


def test_select_from_internal_information_schema(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS ic2")
    run(root, "CREATE TABLE IF NOT EXISTS ic2.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    query = "SELECT table_name FROM internal.information_schema.tables WHERE table_schema = 'ic2'"
    assert run(root, query) == (("t",),)
    done = mariadb(quire, "--batch", "-N", "-e", query)
    assert done.returncode == 0 and done.stdout.split() == ["t"], done.stderr
    assert error_of(root, "SELECT * FROM hive.information_schema.tables") == UNKNOWN_HIVE


def test_grant_on_internal_db(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS ic3")
    run(root, "CREATE TABLE IF NOT EXISTS ic3.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE USER IF NOT EXISTS 'ic_user' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON internal.ic3.* TO 'ic_user'")
    run(root, "GRANT ALTER_PRIV ON internal.ic3.t TO 'ic_user'")
    grants = " ".join(row[0] for row in run(root, "SHOW GRANTS FOR 'ic_user'"))
    assert "ON ic3.* TO" in grants and "ON ic3.t TO" in grants
    with quire.connect("ic_user", "pw") as user:
        assert run(user, "SHOW TABLES FROM internal.ic3") == (("t",),)
    run(root, "REVOKE SELECT_PRIV ON internal.ic3.* FROM 'ic_user'")
    assert error_of(root, "GRANT SELECT_PRIV ON hive.ic3.* TO 'ic_user'") == UNKNOWN_HIVE


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE hive.ic.x (k INT)",
        "DROP TABLE hive.ic.t",
        "ALTER TABLE hive.ic.t ADD COLUMN z INT",
        "TRUNCATE TABLE hive.ic.t",
        "DESC hive.ic.t",
        "SHOW CREATE TABLE hive.ic.t",
        "SHOW COLUMNS FROM hive.ic.t",
        "SHOW TABLES FROM hive.ic",
        "USE hive.ic",
        "CREATE DATABASE hive.x",
        "DROP DATABASE hive.ic",
    ],
)
def test_another_catalog_is_unknown(quire, root, sql):
    assert error_of(root, sql) == UNKNOWN_HIVE
    line = mariadb(quire, "--batch", "-e", sql).stderr.strip().splitlines()[-1]
    assert line == "ERROR 5086 (42000) at line 1: Unknown catalog 'hive'"
