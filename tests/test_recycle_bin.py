"""Doris's recycle bin, TRUNCATE TABLE, DROP TABLE of several tables and DESC t ALL, against a real
`quire up` through PyMySQL and the mariadb CLI."""

import pytest

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

BIN_COLUMNS = [
    "Type",
    "Name",
    "DbId",
    "TableId",
    "PartitionId",
    "DropTime",
    "DataSize",
    "RemoteDataSize",
]
RANGED = (
    "CREATE TABLE {name} (d INT NOT NULL, v INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
    "(PARTITION p1 VALUES LESS THAN ('10'), PARTITION p2 VALUES LESS THAN ('20'), "
    "PARTITION p3 VALUES LESS THAN ('30')) DISTRIBUTED BY HASH(d) BUCKETS 2"
)
PLAIN = (
    "CREATE TABLE {name} (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
)


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("recycle"), {"catalog_trash_check_interval_second": 1}
    ).start()
    yield node
    node.stop()


def code_of(connection, sql) -> int:
    return error_of(connection, sql)[0]


def bin_rows(connection, name=None):
    where = f" WHERE NAME = '{name}'" if name else ""
    with connection.cursor() as cursor:
        cursor.execute("SHOW CATALOG RECYCLE BIN" + where)
        assert [d[0] for d in cursor.description] == BIN_COLUMNS
        return [row[:5] for row in cursor.fetchall()]


def db_id(connection, db):
    return next(str(row[0]) for row in run(connection, "SHOW PROC '/dbs'") if row[1] == db)


def table_id(connection, db, name):
    tables = run(connection, f"SHOW PROC '/dbs/{db_id(connection, db)}'")
    return next(str(row[0]) for row in tables if row[1] == name)


def partitions(connection, table):
    return {row[1]: row[0] for row in run(connection, f"SHOW PARTITIONS FROM {table}")}


def test_a_dropped_table_waits_in_the_bin_and_recovers_as_it_was(root):
    run(root, "CREATE DATABASE rb1")
    run(root, PLAIN.format(name="rb1.t"))
    dropped_table_id = table_id(root, "rb1", "t")
    tablets = run(root, "SHOW TABLETS FROM rb1.t")
    dropped_id = partitions(root, "rb1.t")["t"]
    run(root, "DROP TABLE rb1.t")
    assert run(root, "SHOW TABLES FROM rb1") == ()
    rows = bin_rows(root, "t")
    assert len(rows) == 1 and rows[0][:3] == ("Table", "t", db_id(root, "rb1"))
    assert rows[0][4] == ""
    run(root, "RECOVER TABLE rb1.t")
    assert run(root, "SHOW TABLETS FROM rb1.t") == tablets
    assert partitions(root, "rb1.t")["t"] == dropped_id
    assert table_id(root, "rb1", "t") == dropped_table_id
    assert bin_rows(root, "t") == []
    assert code_of(root, "RECOVER TABLE rb1.t") == 1050
    assert code_of(root, "RECOVER TABLE rb1.nothing") == 1109


def test_recover_as_a_new_name_when_the_name_was_taken_again(root):
    run(root, "CREATE DATABASE rb2")
    run(root, "USE rb2")
    run(root, PLAIN.format(name="t"))
    old_id = table_id(root, "rb2", "t")
    run(root, "DROP TABLE t")
    run(root, PLAIN.format(name="t"))
    assert error_of(root, "RECOVER TABLE t") == (1050, "Table 't' already exists")
    run(root, "RECOVER TABLE t AS t_old")
    assert run(root, "SHOW TABLES") == (("t",), ("t_old",))
    assert table_id(root, "rb2", "t_old") == old_id


def test_a_dropped_database_takes_its_tables_and_recovers_them(root):
    run(root, "CREATE DATABASE rb3")
    run(root, PLAIN.format(name="rb3.a"))
    run(root, RANGED.format(name="rb3.b"))
    run(root, "DROP DATABASE rb3")
    assert code_of(root, "USE rb3") == 1049
    assert [row[:2] for row in bin_rows(root) if row[1] in ("rb3", "a", "b")] == [
        ("Database", "rb3"),
        ("Table", "a"),
        ("Table", "b"),
    ]
    run(root, "CREATE DATABASE rb3")
    assert error_of(root, "RECOVER DATABASE rb3") == (1105, "Database[rb3] already exist.")
    run(root, "RECOVER DATABASE rb3 AS rb3_old")
    assert run(root, "SHOW TABLES FROM rb3_old") == (("a",), ("b",))
    assert code_of(root, "RECOVER DATABASE nothing_here") == 1049


def test_a_dropped_partition_recovers_into_its_table(root):
    run(root, "CREATE DATABASE rb4")
    run(root, RANGED.format(name="rb4.r"))
    before = partitions(root, "rb4.r")
    run(root, "ALTER TABLE rb4.r DROP PARTITION p2")
    assert set(partitions(root, "rb4.r")) == {"p1", "p3"}
    rows = bin_rows(root, "p2")
    assert rows[0][0] == "Partition" and rows[0][4] == str(before["p2"])
    assert rows[0][3] == table_id(root, "rb4", "r")
    run(root, "RECOVER PARTITION p2 FROM rb4.r")
    assert partitions(root, "rb4.r") == before
    run(root, "ALTER TABLE rb4.r DROP PARTITION p3")
    run(root, "ALTER TABLE rb4.r ADD PARTITION p3 VALUES LESS THAN ('40')")
    assert error_of(root, "RECOVER PARTITION p3 FROM rb4.r")[0] == 1105
    assert error_of(root, "RECOVER PARTITION p3 FROM rb4.r AS p3_old") == (
        1105,
        "Can not recover partition[p3]. Range conflict.",
    )
    assert error_of(root, "RECOVER PARTITION nope FROM rb4.r") == (
        1105,
        "No partition named nope in table r",
    )


def test_force_skips_the_bin(root):
    run(root, "CREATE DATABASE rb5")
    run(root, PLAIN.format(name="rb5.t"))
    run(root, RANGED.format(name="rb5.r"))
    run(root, "ALTER TABLE rb5.r DROP PARTITION p1 FORCE")
    run(root, "DROP TABLE rb5.t FORCE")
    assert bin_rows(root, "t") == [] and bin_rows(root, "p1") == []
    assert code_of(root, "RECOVER TABLE rb5.t") == 1109
    run(root, "DROP DATABASE rb5 FORCE")
    assert bin_rows(root, "rb5") == [] and bin_rows(root, "r") == []


def test_drop_table_of_several_tables_is_all_or_nothing(root):
    run(root, "CREATE DATABASE rb6")
    run(root, "CREATE DATABASE rb6b")
    run(root, "USE rb6")
    for name in ("a", "b", "rb6b.c"):
        run(root, PLAIN.format(name=name))
    assert error_of(root, "DROP TABLE a, nope, rb6b.c, rb6b.gone") == (
        1051,
        "Unknown table 'rb6.nope,rb6b.gone'",
    )
    assert run(root, "SHOW TABLES") == (("a",), ("b",))
    assert code_of(root, "DROP TABLE a, rb6.a") == 1066
    run(root, "DROP TABLE IF EXISTS a, nope, rb6b.c")
    assert run(root, "SHOW TABLES") == (("b",),)
    assert run(root, "SHOW TABLES FROM rb6b") == ()
    run(root, "DROP TABLE b")
    assert {row[1] for row in bin_rows(root)} >= {"a", "b", "c"}


def test_truncate_gives_partitions_new_ids_and_tablets(root):
    run(root, "CREATE DATABASE rb7")
    run(root, RANGED.format(name="rb7.r"))
    run(root, PLAIN.format(name="rb7.t"))
    before = partitions(root, "rb7.r")
    tablets = {row[0] for row in run(root, "SHOW TABLETS FROM rb7.r")}
    run(root, "TRUNCATE TABLE rb7.r PARTITION (p1, p3)")
    after = partitions(root, "rb7.r")
    assert after["p2"] == before["p2"]
    assert after["p1"] not in before.values() and after["p3"] not in before.values()
    new_tablets = {row[0] for row in run(root, "SHOW TABLETS FROM rb7.r")}
    assert len(new_tablets) == 6 and len(new_tablets & tablets) == 2
    plain_before = partitions(root, "rb7.t")
    run(root, "TRUNCATE TABLE rb7.t")
    assert partitions(root, "rb7.t").keys() == plain_before.keys()
    assert partitions(root, "rb7.t")["t"] != plain_before["t"]
    assert error_of(root, "TRUNCATE TABLE rb7.r PARTITION (p9)") == (
        1735,
        "Unknown partition 'p9' in table 'r'",
    )
    assert code_of(root, "TRUNCATE TABLE rb7.nothing") == 1146


def test_desc_all_shows_the_base_index_as_doris_does(root):
    run(root, "CREATE DATABASE rb8")
    run(
        root,
        "CREATE TABLE rb8.agg (k INT NOT NULL, s VARCHAR(10) DEFAULT 'x', n BIGINT SUM DEFAULT '0') "
        "AGGREGATE KEY(k, s) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    with root.cursor() as cursor:
        cursor.execute("DESC rb8.agg ALL")
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    assert names == [
        "IndexName",
        "IndexKeysType",
        "Field",
        "Type",
        "InternalType",
        "Null",
        "Key",
        "Default",
        "Extra",
        "Visible",
        "DefineExpr",
        "WhereClause",
    ]
    assert rows == (
        ("agg", "AGG_KEYS", "k", "INT", "INT", "No", "true", "NULL", "", "true", "", ""),
        ("", "", "s", "VARCHAR(10)", "VARCHAR(10)", "Yes", "true", "x", "", "true", "", ""),
        ("", "", "n", "BIGINT", "BIGINT", "Yes", "false", "0", "SUM", "true", "", ""),
    )


def test_expired_entries_are_erased_by_the_leader(root):
    run(root, "CREATE DATABASE rb9")
    run(root, PLAIN.format(name="rb9.gone"))
    run(root, "DROP TABLE rb9.gone")
    assert bin_rows(root, "gone")
    run(root, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '1')")
    try:
        wait_until(lambda: not bin_rows(root, "gone"), 60, "the expired table to be erased")
    finally:
        run(root, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '86400')")
    assert code_of(root, "RECOVER TABLE rb9.gone") == 1109


def test_privileges_follow_doris(quire, root):
    run(root, "CREATE DATABASE rb10")
    run(root, PLAIN.format(name="rb10.t"))
    run(root, "CREATE USER rb_creator IDENTIFIED BY 'pw'")
    run(root, "GRANT CREATE_PRIV, DROP_PRIV, SELECT_PRIV ON rb10.* TO rb_creator")
    run(root, "CREATE USER rb_reader IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON rb10.* TO rb_reader")
    reader = quire.connect("rb_reader", "pw")
    creator = quire.connect("rb_creator", "pw")
    try:
        assert code_of(reader, "SHOW CATALOG RECYCLE BIN") == 1227
        assert code_of(reader, "DROP TABLE rb10.t") == 1142
        assert code_of(reader, "TRUNCATE TABLE rb10.t") == 1142
        run(creator, "DROP TABLE rb10.t")
        assert code_of(reader, "RECOVER TABLE rb10.t") == 1142
        assert code_of(creator, "SHOW CATALOG RECYCLE BIN") == 1227
        run(creator, "RECOVER TABLE rb10.t")
        assert run(reader, "SHOW TABLES FROM rb10") == (("t",),)
    finally:
        reader.close()
        creator.close()


CLI_CASES = [
    ("DROP TABLE cli_rb.a, cli_rb.b", ""),
    ("SHOW CATALOG RECYCLE BIN WHERE NAME = 'a'", "Table\ta\t"),
    ("RECOVER TABLE cli_rb.a AS a2", ""),
    ("TRUNCATE TABLE cli_rb.a2", ""),
    ("DESC cli_rb.a2 ALL", "a2\tDUP_KEYS\tk\tINT\tINT\tYes\ttrue\tNULL\t\ttrue\t\t"),
    ("ALTER TABLE cli_rb.r DROP PARTITION p1", ""),
    ("RECOVER PARTITION p1 FROM cli_rb.r", ""),
    ("DROP DATABASE cli_rb", ""),
    ("RECOVER DATABASE cli_rb", ""),
    ("RECOVER TABLE cli_rb.b", ""),
]


def test_every_statement_through_the_mariadb_cli(quire, root):
    run(root, "CREATE DATABASE cli_rb")
    run(root, PLAIN.format(name="cli_rb.a"))
    run(root, PLAIN.format(name="cli_rb.b"))
    run(root, RANGED.format(name="cli_rb.r"))
    for sql, expected in CLI_CASES:
        done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
        assert done.returncode == 0, (sql, done.stderr)
        assert expected in done.stdout, (sql, done.stdout)
    done = mariadb(quire, "--batch", "-e", "RECOVER TABLE cli_rb.nothing")
    assert "ERROR 1109 (42S02)" in done.stderr, done.stderr
    done = mariadb(quire, "--batch", "-e", "TRUNCATE TABLE cli_rb.r PARTITION (zz)")
    assert "ERROR 1735 (HY000)" in done.stderr, done.stderr
    assert run(root, "SHOW TABLES FROM cli_rb") == (("a2",), ("b",), ("r",))
