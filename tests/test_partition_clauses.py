"""A statement that names partitions reads and writes only those: `t PARTITION (p1, p2)`,
Doris's `t PARTITION p1` and `t PARTITIONS (p1, p2)` in SELECT, DELETE and UPDATE, INSERT INTO
t PARTITION (...) (MySQL's 1748 for a row of another partition), and Doris's INSERT OVERWRITE,
which replaces the table's or the named partitions' rows in one commit; 1735 for a partition the
table does not have. Through PyMySQL, prepared statements and the mariadb CLI."""

import mysql.connector
import pytest

from tests.harness import error_of, mariadb, run

ROWS = [("2024-01-05", 1), ("2024-01-06", 3), ("2024-02-07", 4), ("2024-02-09", 5)]


@pytest.fixture
def parted(quire, root):
    run(root, "DROP DATABASE IF EXISTS pc")
    run(root, "CREATE DATABASE pc")
    for name, key_model in (("e", "DUPLICATE"), ("u", "UNIQUE")):
        run(
            root,
            f"CREATE TABLE pc.{name} (dt DATE, k INT, n INT) {key_model} KEY(dt, k) "
            "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
            "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2",
        )
        values = ", ".join(f"('{day}', {k}, {k})" for day, k in ROWS)
        run(root, f"INSERT INTO pc.{name} VALUES {values}")
    connection = quire.connect(database="pc", autocommit=True)
    yield connection
    connection.close()


def keys(connection, sql: str) -> list[int]:
    return [row[0] for row in run(connection, sql)]


def test_reads_name_partitions_in_mysqls_and_doriss_forms(quire, parted):
    assert keys(parted, "SELECT k FROM e PARTITION (p2) ORDER BY k") == [4, 5]
    assert keys(parted, "SELECT k FROM e PARTITION p1 ORDER BY k") == [1, 3]
    assert keys(parted, "SELECT k FROM e PARTITIONS (p1, p2) WHERE k > 2 ORDER BY k") == [3, 4, 5]
    assert keys(parted, "SELECT t.k FROM e PARTITION p2 AS t WHERE t.n = 4") == [4]
    assert keys(parted, "SELECT count(*) FROM e PARTITION (p1) JOIN u PARTITION (p2) ON 1 = 1") == [
        4
    ]
    explained = [row[0] for row in run(parted, "EXPLAIN SELECT * FROM e PARTITION (p2)")]
    assert any("partitions=1/2 (p2)" in line for line in explained), explained
    assert error_of(parted, "SELECT * FROM e PARTITION (nope)") == (
        1735,
        "Unknown partition 'nope' in table 'e'",
    )
    done = mariadb(quire, "--batch", "-N", "pc", "-e", "SELECT k FROM e PARTITION p2 ORDER BY k")
    assert done.returncode == 0 and done.stdout.split() == ["4", "5"], done.stderr


def test_deletes_and_updates_touch_only_the_named_partitions(parted):
    run(parted, "DELETE FROM e PARTITION (p2) WHERE k = 3")  # k = 3 is in p1
    assert keys(parted, "SELECT count(*) FROM e") == [4]
    run(parted, "DELETE FROM e PARTITION p1 WHERE k IN (3, 4)")
    assert keys(parted, "SELECT k FROM e ORDER BY k") == [1, 4, 5]
    run(parted, "UPDATE e PARTITIONS (p2) SET n = 99 WHERE k IN (1, 5)")
    assert run(parted, "SELECT k, n FROM e ORDER BY k") == ((1, 1), (4, 4), (5, 99))
    assert error_of(parted, "DELETE FROM e PARTITION (nope) WHERE k = 1")[0] == 1735


def test_reads_and_writes_by_the_first_key_keep_to_the_named_partitions(quire, parted):
    """A read bounded on the first key column is answered from the rows within the bounds (no
    engine): of every partition, unless the statement names some."""
    run(
        parted,
        "CREATE TABLE byk (k INT, dt DATE, n INT) DUPLICATE KEY(k, dt) PARTITION BY RANGE(dt) "
        "(PARTITION p1 VALUES LESS THAN ('2024-02-01'), PARTITION p2 VALUES LESS THAN "
        "('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    values = ", ".join(f"({k}, '{day}', {k})" for day, k in ROWS)
    run(parted, f"INSERT INTO byk VALUES {values}")
    assert keys(parted, "SELECT k FROM byk PARTITION (p2) WHERE k = 3") == []
    run(parted, "DELETE FROM byk PARTITION (p2) WHERE k = 3")  # k = 3 is in p1
    run(parted, "UPDATE byk PARTITION (p2) SET n = 0 WHERE k = 1")
    assert run(parted, "SELECT k, n FROM byk ORDER BY k") == ((1, 1), (3, 3), (4, 4), (5, 5))
    assert prepared_by_key_in_p1(quire, "byk") == ([], [(4, 4), (5, 5)])
    assert run(parted, "SELECT k, n FROM byk ORDER BY k") == ((1, 1), (3, 3), (4, 4), (5, 5))
    run(parted, "BEGIN")
    run(parted, "INSERT INTO byk VALUES (7, '2024-01-10', 7)")  # of p1, in the transaction
    assert keys(parted, "SELECT k FROM byk PARTITION (p2) ORDER BY k") == [4, 5]
    assert keys(parted, "SELECT k FROM byk PARTITION (p1) WHERE k >= 3 ORDER BY k") == [3, 7]
    run(parted, "ROLLBACK")


def prepared_by_key_in_p1(quire, table: str) -> tuple[list, list]:
    """Prepared statements by key naming p1, of the rows k = 4 and 5 of p2: what a read by key
    finds, and p2's rows after a DELETE and an UPDATE by key (untouched)."""
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="pc", autocommit=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute(f"SELECT k FROM {table} PARTITION (p1) WHERE k = ?", (5,))
        found = cursor.fetchall()
        cursor.execute(f"DELETE FROM {table} PARTITION (p1) WHERE k = ?", (5,))
        cursor.execute(f"UPDATE {table} PARTITION p1 SET n = 0 WHERE k = ?", (4,))
        cursor.execute(f"SELECT k, n FROM {table} PARTITION (p2) WHERE k >= ? ORDER BY k", (4,))
        return found, cursor.fetchall()
    finally:
        connection.close()


def test_prepared_reads_and_writes_by_key_keep_to_the_named_partitions(quire, parted):
    assert prepared_by_key_in_p1(quire, "e") == ([], [(4, 4), (5, 5)])


def test_an_insert_into_named_partitions_refuses_a_row_of_another(parted):
    run(parted, "INSERT INTO e PARTITION (p1) VALUES ('2024-01-20', 12, 12)")
    assert keys(parted, "SELECT k FROM e PARTITION p1 ORDER BY k") == [1, 3, 12]
    assert error_of(parted, "INSERT INTO e PARTITION (p1) VALUES ('2024-02-20', 7, 7)") == (
        1748,
        "Found a row not matching the given partition set",
    )
    assert error_of(parted, "INSERT INTO e PARTITION p1 SELECT '2024-02-21', 8, 8")[0] == 1748
    assert error_of(parted, "INSERT INTO e PARTITION (nope) VALUES ('2024-01-20', 9, 9)")[0] == 1735
    assert keys(parted, "SELECT count(*) FROM e") == [5]  # nothing of the refused rows


@pytest.mark.parametrize("table", ["e", "u"])
def test_insert_overwrite_replaces_the_tables_or_the_partitions_rows(parted, table):
    run(parted, f"INSERT OVERWRITE TABLE {table} PARTITION (p2) SELECT '2024-02-10', 6, 6")
    assert keys(parted, f"SELECT k FROM {table} ORDER BY k") == [1, 3, 6]
    run(parted, f"INSERT OVERWRITE TABLE {table} SELECT * FROM {table} WHERE k < 6")
    assert keys(parted, f"SELECT k FROM {table} ORDER BY k") == [1, 3]
    run(
        parted,
        f"INSERT OVERWRITE TABLE {table} VALUES ('2024-01-01', 10, 10), ('2024-02-01', 11, 11)",
    )
    assert keys(parted, f"SELECT k FROM {table} ORDER BY k") == [10, 11]
    run(parted, f"INSERT OVERWRITE TABLE {table} PARTITION (p1) SELECT * FROM {table} WHERE 1 = 0")
    assert keys(parted, f"SELECT k FROM {table} ORDER BY k") == [11]
    code, _ = error_of(
        parted, f"INSERT OVERWRITE TABLE {table} PARTITION (p1) VALUES ('2024-02-02', 13, 13)"
    )
    assert code == 1748 and keys(parted, f"SELECT k FROM {table}") == [11]
