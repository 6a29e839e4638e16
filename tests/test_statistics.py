"""Doris's statistics: ANALYZE TABLE t [(columns)] [WITH SYNC] reads every row and keeps each
column's count, distinct values, NULLs, bytes, least and greatest value in the journal; SHOW TABLE
STATS and SHOW COLUMN STATS show them with Doris's columns, DROP STATS forgets them. They outlive
a kill -9 and an image. Through PyMySQL and the mariadb CLI; a user without SELECT is refused."""

import pytest

from tests.harness import error_of, mariadb, run


@pytest.fixture(scope="module")
def db(quire, root):
    run(root, "CREATE DATABASE st")
    run(root, "USE st")
    run(
        root,
        "CREATE TABLE t (id INT, name VARCHAR(20), v DECIMAL(10,2), dt DATETIME, arr ARRAY<INT>) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO t VALUES (1, 'a', 1.5, '2024-01-01 10:00:00', [1]), "
        "(2, 'bb', 2.5, '2024-01-02 11:00:00', NULL), (3, NULL, NULL, NULL, NULL)",
    )
    return root


def column_stats(connection, sql: str = "SHOW COLUMN STATS t") -> dict:
    return {row[0]: row[2:9] for row in run(connection, sql)}


def test_analyze_keeps_each_columns_statistics_as_doris_shows_them(quire, db):
    assert run(db, "SHOW TABLE STATS t") == ()
    assert run(db, "SHOW COLUMN STATS t") == ()
    run(db, "ANALYZE TABLE t WITH SYNC")
    ((updated_rows, _, row_count, _, columns, trigger, *_),) = run(db, "SHOW TABLE STATS t")
    assert (row_count, columns, trigger) == ("3", "[id, name, v, dt]", "MANUAL")
    assert column_stats(db) == {  # count, ndv, num_null, data_size, avg_size_byte, min, max
        "id": ("3.0", "3.0", "0.0", "12.0", "4.0", "1", "3"),
        "name": ("3.0", "2.0", "1.0", "3.0", "1.5", "'a'", "'bb'"),
        "v": ("3.0", "2.0", "1.0", "16.0", "8.0", "1.50", "2.50"),
        "dt": ("3.0", "2.0", "1.0", "16.0", "8.0", "'2024-01-01 10:00:00'", "'2024-01-02 11:00:00'"),
    }  # fmt: skip
    done = mariadb(quire, "st", "--batch", "-N", "-e", "SHOW COLUMN STATS t (name)")
    assert done.stdout.split("\t")[:9] == [
        "name",
        "t",
        "3.0",
        "2.0",
        "1.0",
        "3.0",
        "1.5",
        "'a'",
        "'bb'",
    ]
    run(db, "INSERT INTO t VALUES (4, 'ccc', NULL, NULL, NULL)")
    run(db, "ANALYZE TABLE t (name)")  # the other columns keep what they had
    assert column_stats(db)["name"][:2] == ("4.0", "3.0")
    assert column_stats(db)["id"][:2] == ("3.0", "3.0")


def test_bad_names_and_dropped_statistics(db):
    run(db, "ANALYZE TABLE t")
    assert error_of(db, "ANALYZE TABLE t (nope)") == (1105, "Column: nope not exists")
    assert error_of(db, "ANALYZE TABLE t (arr)")[0] == 1105  # as Doris: not of an ARRAY
    assert error_of(db, "ANALYZE TABLE missing")[0] == 1146
    assert error_of(db, "SHOW COLUMN STATS missing")[0] == 1146
    run(db, "DROP STATS t (name, v)")
    assert sorted(column_stats(db)) == ["dt", "id"]
    run(db, "DROP STATS t")
    assert run(db, "SHOW TABLE STATS t") == ()
    assert run(db, "SHOW COLUMN STATS t") == ()


def test_show_analyze_lists_each_tables_last_analyze(quire, db):
    """Doris's SHOW ANALYZE: an ANALYZE runs to its end when asked, so each table's last one is
    a FINISHED job (its id the table's), with Doris's columns."""
    run(db, "ANALYZE TABLE t (id, name) WITH SYNC")
    with db.cursor() as cursor:
        cursor.execute("SHOW ANALYZE t")
        titles = [d[0] for d in cursor.description]
        (row,) = cursor.fetchall()
    assert titles[:5] == ["job_id", "catalog_name", "db_name", "tbl_name", "col_name"]
    shown = dict(zip(titles, row, strict=True))
    assert (shown["db_name"], shown["tbl_name"], shown["col_name"], shown["state"]) == (
        "st", "t", "[id, name]", "FINISHED",
    )  # fmt: skip
    assert run(db, f"SHOW ANALYZE {shown['job_id']}") == (row,)
    assert run(db, "SHOW ANALYZE WHERE STATE = 'RUNNING'") == ()
    assert row in run(db, "SHOW ANALYZE WHERE STATE = 'FINISHED'")
    assert error_of(db, "SHOW ANALYZE WHERE STATE = 'DONE'")[0] == 1064
    done = mariadb(quire, "st", "--batch", "-N", "-e", "SHOW ANALYZE t")
    assert done.stdout.split("\t")[9] == "FINISHED", done.stderr


def test_a_user_without_select_is_refused(quire, db):
    run(db, "CREATE USER nosy IDENTIFIED BY 'pw'")
    nosy = quire.connect(user="nosy", password="pw")
    try:
        assert error_of(nosy, "ANALYZE TABLE st.t")[0] == 1142
        assert error_of(nosy, "SHOW COLUMN STATS st.t")[0] == 1142
        assert error_of(nosy, "DROP STATS st.t")[0] == 1142
        assert error_of(nosy, "SHOW ANALYZE st.t")[0] == 1142
        assert run(nosy, "SHOW ANALYZE") == ()  # none of the tables it cannot read
    finally:
        nosy.close()


def test_statistics_outlive_an_image_and_kill_9(fresh_quire):
    node = fresh_quire.start()
    connection = node.connect(autocommit=True)
    run(connection, "CREATE DATABASE d")
    run(
        connection,
        "CREATE TABLE d.t (k INT, s STRING) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(connection, "INSERT INTO d.t VALUES (1, 'x'), (2, 'y'), (2, NULL)")
    run(connection, "ANALYZE TABLE d.t")
    run(connection, "ADMIN CHECKPOINT")
    run(connection, "ANALYZE TABLE d.t (s)")  # after the image: from the journal
    connection.close()
    node.kill()
    node.start()
    connection = node.connect(autocommit=True)
    try:
        assert column_stats(connection, "SHOW COLUMN STATS d.t") == {
            "k": ("3.0", "2.0", "0.0", "12.0", "4.0", "1", "2"),
            "s": ("3.0", "2.0", "1.0", "2.0", "1.0", "'x'", "'y'"),
        }
        run(connection, "DROP TABLE d.t FORCE")
        run(
            connection, "CREATE TABLE d.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
        )
        assert run(connection, "SHOW COLUMN STATS d.t") == ()  # a new table: none of the old's
    finally:
        connection.close()
