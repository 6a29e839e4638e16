"""Tables hold rows: INSERT, UPDATE, DELETE and SELECT through the MySQL front of `quire up`,
checked with PyMySQL and the mariadb CLI, for every key model; bad values get MySQL's errors and
nothing of the statement is written."""

import datetime
import decimal

import mysql.connector
import pymysql
import pytest

from tests.harness import assert_mysql_error, error_of, mariadb, run


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE dml")
    run(root, "USE dml")
    return root


def test_insert_then_select_through_pymysql_and_the_cli(quire, db):
    run(
        db,
        "CREATE TABLE t (k INT, v VARCHAR(10), d DATE, amount DECIMAL(10,2)) DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 4",
    )
    with db.cursor() as cursor:
        cursor.execute(
            "INSERT INTO t VALUES (1, 'a', '2024-01-31', 1.5), (2, 'b', NULL, -2.25), (3, NULL, '2024-02-29', 0)"
        )
        assert cursor.rowcount == 3
    assert run(db, "SELECT k, v, d, amount FROM t ORDER BY k") == (
        (1, "a", datetime.date(2024, 1, 31), decimal.Decimal("1.50")),
        (2, "b", None, decimal.Decimal("-2.25")),
        (3, None, datetime.date(2024, 2, 29), decimal.Decimal("0.00")),
    )
    done = mariadb(quire, "dml", "--batch", "-e", "SELECT k, v, amount FROM t ORDER BY k")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "k\tv\tamount",
        "1\ta\t1.50",
        "2\tb\t-2.25",
        "3\tNULL\t0.00",
    ]
    done = mariadb(quire, "dml", "-e", "INSERT INTO t (k, v) VALUES (4, 'd'), (5, 'e')")
    assert done.returncode == 0, done.stderr
    assert run(db, "SELECT COUNT(*), SUM(k) FROM t") == ((5, decimal.Decimal(15)),)


def test_insert_select_and_aggregates(db):
    run(
        db,
        "CREATE TABLE src (k INT, g VARCHAR(5), n BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(
        db,
        "INSERT INTO src VALUES " + ", ".join(f"({i}, 'g{i % 3}', {i * 10})" for i in range(100)),
    )
    run(
        db,
        "CREATE TABLE dst (g VARCHAR(5), total BIGINT) DUPLICATE KEY(g) DISTRIBUTED BY HASH(g) BUCKETS 2",
    )
    with db.cursor() as cursor:
        cursor.execute("INSERT INTO dst SELECT g, SUM(n) FROM src GROUP BY g")
        assert cursor.rowcount == 3
    assert run(db, "SELECT g, total FROM dst ORDER BY g") == (
        ("g0", 16830),
        ("g1", 16170),
        ("g2", 16500),
    )
    assert run(
        db,
        "SELECT s.g, COUNT(*) FROM src s JOIN dst d ON s.g = d.g WHERE s.k < 10 GROUP BY s.g ORDER BY 1",
    ) == (("g0", 4), ("g1", 3), ("g2", 3))


def test_unique_key_replaces_the_row_with_the_same_key(db):
    run(
        db,
        "CREATE TABLE u (id INT, name VARCHAR(20), score INT) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(db, "INSERT INTO u VALUES (1, 'ann', 10), (2, 'bob', 20)")
    run(db, "INSERT INTO u VALUES (1, 'ann2', 11), (3, 'cid', 30), (3, 'cid2', 31)")
    assert run(db, "SELECT id, name, score FROM u ORDER BY id") == (
        (1, "ann2", 11),
        (2, "bob", 20),
        (3, "cid2", 31),
    )
    with db.cursor() as cursor:
        cursor.execute("UPDATE u SET score = score + 1 WHERE id >= 2")
        assert cursor.rowcount == 2
    assert run(db, "SELECT id, score FROM u ORDER BY id") == ((1, 11), (2, 21), (3, 32))
    code, message = error_of(db, "UPDATE u SET id = 9 WHERE id = 1")
    assert code == 1235, message


def test_aggregate_key_merges_rows_by_their_keys(db):
    run(
        db,
        "CREATE TABLE a (d DATE, shop INT, amount BIGINT SUM, top INT MAX, last_note VARCHAR(10) REPLACE) "
        "AGGREGATE KEY(d, shop) DISTRIBUTED BY HASH(shop) BUCKETS 2",
    )
    run(db, "INSERT INTO a VALUES ('2024-01-01', 1, 5, 3, 'x'), ('2024-01-01', 1, 7, 9, 'y')")
    run(db, "INSERT INTO a VALUES ('2024-01-01', 2, 1, 1, 'z'), ('2024-01-01', 1, 1, 2, 'w')")
    assert run(db, "SELECT shop, amount, top, last_note FROM a ORDER BY shop") == (
        (1, 13, 9, "w"),
        (2, 1, 1, "z"),
    )


def test_delete_and_update_with_where(db):
    run(db, "CREATE TABLE dup (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    run(db, "INSERT INTO dup VALUES (1, 1), (2, 2), (3, 3), (4, 4), (4, 5)")
    with db.cursor() as cursor:
        cursor.execute("DELETE FROM dup WHERE k = 4")
        assert cursor.rowcount == 2
        cursor.execute("UPDATE dup SET v = v * 10 WHERE k IN (1, 3)")
        assert cursor.rowcount == 2
        cursor.execute("UPDATE dup SET v = 2 WHERE k = 2")
        assert cursor.rowcount == 0  # matched, not changed: MySQL counts changed rows
        cursor.execute("DELETE FROM dup WHERE k > 100")
        assert cursor.rowcount == 0
    assert run(db, "SELECT k, v FROM dup ORDER BY k") == ((1, 10), (2, 2), (3, 30))
    done = mariadb(quire_of(db), "dml", "-e", "DELETE FROM dup WHERE k = 1")
    assert done.returncode == 0, done.stderr
    assert run(db, "SELECT k FROM dup ORDER BY k") == ((2,), (3,))


def quire_of(connection):
    return connection.quire


@pytest.fixture(autouse=True)
def _remember_quire(quire, root):
    root.quire = quire


BAD_VALUES = [
    ("INSERT INTO strict_t VALUES (NULL, 'a', 1)", 1048, "Column 'k' cannot be null"),
    ("INSERT INTO strict_t VALUES (1, 'abcdef', 1)", 1406, "Data too long for column 'v' at row 1"),
    (
        "INSERT INTO strict_t VALUES (1, 'a', 1), (2, 'b', 300)",
        1264,
        "Out of range value for column 't' at row 2",
    ),
    (
        "INSERT INTO strict_t VALUES (1, 'a', 'x')",
        1366,
        "Incorrect integer value: 'x' for column 't' at row 1",
    ),
    (
        "INSERT INTO strict_t VALUES (1, 'a')",
        1136,
        "Column count doesn't match value count at row 1",
    ),
    ("INSERT INTO strict_t (k, nope) VALUES (1, 2)", 1054, "Unknown column 'nope' in 'field list'"),
    ("INSERT INTO strict_t (v) VALUES ('a')", 1364, "Field 'k' doesn't have a default value"),
    ("INSERT INTO no_such VALUES (1)", 1146, "Table 'dml.no_such' doesn't exist"),
]


@pytest.mark.parametrize("sql, code, message", BAD_VALUES)
def test_bad_values_get_mysqls_errors_and_write_nothing(quire, db, sql, code, message):
    run(
        db,
        "CREATE TABLE IF NOT EXISTS strict_t (k INT NOT NULL, v VARCHAR(5), t TINYINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    got_code, got_message = error_of(db, sql)
    assert_mysql_error(got_code, got_message, sql)
    assert (got_code, got_message) == (code, message)
    done = mariadb(quire, "dml", "-e", sql)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert run(db, "SELECT COUNT(*) FROM strict_t") == ((0,),)


def test_writes_need_load_priv_and_reads_select_priv(quire, db):
    run(db, "CREATE TABLE guarded (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(db, "CREATE USER reader IDENTIFIED BY 'pw'")
    run(db, "GRANT SELECT_PRIV ON dml.* TO reader")
    connection = quire.connect("reader", "pw", database="dml")
    try:
        assert run(connection, "SELECT * FROM guarded") == ()
        for sql in (
            "INSERT INTO guarded VALUES (1)",
            "DELETE FROM guarded",
            "UPDATE guarded SET k = 2",
        ):
            code, message = error_of(connection, sql)
            assert code == 1142, (sql, message)
    finally:
        connection.close()
    assert run(db, "SELECT COUNT(*) FROM guarded") == ((0,),)


def test_deletes_and_updates_need_load_priv_on_their_table_alone(quire, db):
    """As in Doris: LOAD on the table a DELETE or an UPDATE writes, whatever its WHERE reads of
    it; SELECT on any other table it reads (USING, a subquery), as any query needs."""
    run(
        db,
        "CREATE TABLE loaded_only (k INT, v VARCHAR(4)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(db, "CREATE TABLE other_t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(db, "INSERT INTO loaded_only VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    run(db, "INSERT INTO other_t VALUES (3)")
    run(db, "CREATE USER loader IDENTIFIED BY 'pw'")
    run(db, "GRANT LOAD_PRIV ON dml.loaded_only TO loader")
    connection = quire.connect("loader", "pw", database="dml", autocommit=True)
    try:
        run(connection, "DELETE FROM loaded_only WHERE k = 1")
        run(connection, "UPDATE loaded_only SET v = CONCAT(v, '!') WHERE v > 'b'")
        for sql in (
            "SELECT * FROM loaded_only",
            "DELETE FROM loaded_only USING other_t WHERE loaded_only.k = other_t.k",
            "DELETE FROM loaded_only WHERE k IN (SELECT k FROM loaded_only)",
        ):
            assert error_of(connection, sql)[0] == 1142, sql
    finally:
        connection.close()
    sql = "DELETE FROM loaded_only WHERE v = 'd!'"
    done = mariadb(quire, "dml", "-e", sql, user="loader", password="pw")
    assert done.returncode == 0, done.stderr
    assert run(db, "SELECT k, v FROM loaded_only ORDER BY k") == ((2, "b"), (3, "c!"))


def test_prepared_inserts_with_typed_parameters(quire, db):
    run(
        db,
        "CREATE TABLE prepared_t (k BIGINT, v VARCHAR(20), f DOUBLE, ts DATETIME) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    connection = pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="dml"
    )
    try:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO prepared_t VALUES (%s, %s, %s, %s)",
                [(i, f"v{i}", i / 2, datetime.datetime(2024, 1, 1, 0, 0, i)) for i in range(50)],
            )
        assert run(connection, "SELECT COUNT(*), MAX(ts) FROM prepared_t") == (
            (50, datetime.datetime(2024, 1, 1, 0, 0, 49)),
        )
    finally:
        connection.close()


def test_fractional_seconds_survive_the_trip(quire, db):
    run(
        db,
        "CREATE TABLE moments (k INT, at DATETIME(3)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(
        db, "INSERT INTO moments VALUES (1, '2024-01-01 10:00:00.1234'), (2, '2024-01-01 10:00:01')"
    )
    assert run(db, "SELECT at FROM moments ORDER BY k") == (
        (datetime.datetime(2024, 1, 1, 10, 0, 0, 123000),),
        (datetime.datetime(2024, 1, 1, 10, 0, 1),),
    )
    done = mariadb(quire, "dml", "--batch", "-N", "-e", "SELECT at FROM moments ORDER BY k")
    assert done.stdout.split("\n")[:2] == ["2024-01-01 10:00:00.123", "2024-01-01 10:00:01.000"]


def test_on_duplicate_key_update_is_an_upsert_or_refused(quire, db):
    """The loading tools' upsert (every column, each set to VALUES(itself)) replaces the row of a
    UNIQUE KEY table; on a DUPLICATE KEY table it inserts (no unique key: MySQL never updates);
    any other ON DUPLICATE KEY UPDATE is refused, not quietly run as a plain INSERT."""
    run(
        db,
        "CREATE TABLE odku_u (id INT, name VARCHAR(8), n INT) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(db, "INSERT INTO odku_u VALUES (1, 'a', 1)")
    upsert = (
        "INSERT INTO odku_u (id, name, n) VALUES (1, 'b', 2), (2, 'c', 3) "
        "ON DUPLICATE KEY UPDATE name = VALUES(name), n = VALUES(n)"
    )
    run(db, upsert)
    assert run(db, "SELECT id, name, n FROM odku_u ORDER BY id") == ((1, "b", 2), (2, "c", 3))
    for refused in (
        "INSERT INTO odku_u VALUES (1, 'x', 9) ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT INTO odku_u (id, name) VALUES (1, 'x') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO odku_u VALUES (1, 'x', 9) ON DUPLICATE KEY UPDATE name = VALUES(name)",
    ):
        code, message = error_of(db, refused)
        assert code == 1235 and "ON DUPLICATE KEY UPDATE" in message, (refused, message)
        shown = mariadb(quire, "-e", f"USE dml; {refused}").stderr
        assert "ERROR 1235 (42000)" in shown, shown
    assert run(db, "SELECT id, name, n FROM odku_u ORDER BY id") == ((1, "b", 2), (2, "c", 3))
    run(
        db,
        "CREATE TABLE odku_d (id INT, n INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(db, "INSERT INTO odku_d VALUES (1, 1) ON DUPLICATE KEY UPDATE n = n + 1")
    run(db, "INSERT INTO odku_d VALUES (1, 1) ON DUPLICATE KEY UPDATE n = n + 1")
    assert run(db, "SELECT id, n FROM odku_d") == ((1, 1), (1, 1))


# Each statement, then what `SELECT ROW_COUNT()` or `SELECT FOUND_ROWS()` after it answers in
# MariaDB 10/11 (checked there): affected rows after DML and DDL, -1 after rows or an error;
# the rows of the last answer with rows, or with SQL_CALC_FOUND_ROWS those without its LIMIT.
ROW_COUNTS = [
    (
        "CREATE TABLE {t} (id INT, v INT) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
        "ROW_COUNT",
        0,
    ),
    ("INSERT INTO {t} VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)", "ROW_COUNT", 5),
    ("SELECT 1", "ROW_COUNT", -1),
    ("UPDATE {t} SET v = v + 1 WHERE id > 2", "ROW_COUNT", 3),
    ("DELETE FROM {t} WHERE id = 5", "ROW_COUNT", 1),
    ("SET @a = 1", "ROW_COUNT", 0),
    ("SELECT * FROM {t}", "FOUND_ROWS", 4),
    ("SELECT * FROM {t} ORDER BY id LIMIT 2", "FOUND_ROWS", 2),
    ("SELECT SQL_CALC_FOUND_ROWS * FROM {t} ORDER BY id LIMIT 2", "FOUND_ROWS", 4),
    ("SELECT SQL_CALC_FOUND_ROWS id FROM {t} WHERE id > 1 ORDER BY id LIMIT 1, 1", "FOUND_ROWS", 3),
    ("SELECT SQL_CALC_FOUND_ROWS id FROM {t} LIMIT 0", "FOUND_ROWS", 4),
    ("SELECT SQL_CALC_FOUND_ROWS v, COUNT(*) FROM {t} GROUP BY v LIMIT 1", "FOUND_ROWS", 4),
    ("SELECT SQL_CALC_FOUND_ROWS 7", "FOUND_ROWS", 1),
    ("SELECT SQL_NO_CACHE HIGH_PRIORITY id FROM {t} WHERE id = 2", "FOUND_ROWS", 1),
    ("INSERT INTO {t} VALUES (9, 9)", "FOUND_ROWS", 1),
    ("SELECT * FROM {t} WHERE id = 100", "FOUND_ROWS", 0),
    ("SELECT * FROM no_such_table", "ROW_COUNT", -1),
]


def test_row_count_and_found_rows_answer_as_mysqls_do(quire, db):
    script = "".join(
        f"{sql.format(t='by_cli')};\nSELECT 'after', {function}();\n"
        for sql, function, _ in ROW_COUNTS
    )
    done = mariadb(quire, "dml", "--batch", "--skip-column-names", "--force", stdin=script)
    assert "ERROR 1146 (42S02)" in done.stderr, done.stderr
    answers = [line for line in done.stdout.splitlines() if line.startswith("after\t")]
    assert answers == [f"after\t{expected}" for _, _, expected in ROW_COUNTS]
    for sql, function, expected in ROW_COUNTS:
        sql = sql.format(t="counted")
        if "no_such_table" in sql:
            assert error_of(db, sql)[0] == 1146
        else:
            run(db, sql)
        assert run(db, f"SELECT {function}()") == ((expected,),), sql
    assert run(db, "SELECT ROW_COUNT()") == ((-1,),)  # after the SELECT just answered

    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="dml", use_pure=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT SQL_CALC_FOUND_ROWS id FROM counted ORDER BY id LIMIT ?", (1,))
        assert cursor.fetchall() == [(1,)]
        cursor.execute("SELECT FOUND_ROWS(), ROW_COUNT()")
        assert cursor.fetchall() == [(5, -1)]
        cursor.execute("UPDATE counted SET v = ? WHERE id < ?", (0, 3))
        cursor.execute("SELECT ROW_COUNT(), FOUND_ROWS()")
        assert cursor.fetchall() == [(2, 1)]
    finally:
        connection.close()


def test_sql_calc_found_rows_only_in_the_first_select(quire, db):
    run(db, "CREATE TABLE calc (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    run(db, "INSERT INTO calc VALUES (1), (2), (3), (4), (9)")
    nested = "SELECT 1 FROM calc WHERE id = (SELECT SQL_CALC_FOUND_ROWS 1)"
    code, message = error_of(db, nested)
    assert (code, message) == (1234, "Incorrect usage/placement of 'SQL_CALC_FOUND_ROWS'")
    done = mariadb(quire, "dml", "-e", nested)
    assert "ERROR 1234 (42000)" in done.stderr, done.stderr
    run(db, "SELECT SQL_CALC_FOUND_ROWS id FROM calc UNION SELECT 100 LIMIT 1")
    assert run(db, "SELECT FOUND_ROWS()") == ((6,),)


def test_updates_and_deletes_matched_through_other_tables(quire, db):
    """MySQL's multiple-table forms and Doris's UPDATE ... FROM and DELETE ... USING: the target's
    rows that the join keeps, each written once however many rows it joins ("Referenced table
    not found" before); the other tables need SELECT only."""
    run(db, "CREATE TABLE joined_t (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    run(
        db,
        "CREATE TABLE joined_src (k INT, w INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(db, "INSERT INTO joined_t VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
    run(db, "INSERT INTO joined_src VALUES (1, 100), (3, 300), (3, 300), (4, 400)")

    def table() -> tuple:
        return run(db, "SELECT k, v FROM joined_t ORDER BY k")

    with db.cursor() as cursor:
        cursor.execute(
            "UPDATE joined_t SET v = joined_src.w FROM joined_src WHERE joined_t.k = joined_src.k AND joined_src.w < 400"
        )
        assert cursor.rowcount == 2  # k = 3 joins two rows of joined_src: updated once
    assert table() == ((1, 100), (2, 20), (3, 300), (4, 40))
    run(
        db,
        "UPDATE joined_t JOIN joined_src ON joined_t.k = joined_src.k SET joined_t.v = joined_src.w + 1 WHERE joined_src.k = 1",
    )
    assert table() == ((1, 101), (2, 20), (3, 300), (4, 40))
    run(
        db,
        "DELETE FROM joined_t USING joined_t JOIN joined_src ON joined_t.k = joined_src.k WHERE joined_src.w = 300",
    )
    run(db, "DELETE joined_t FROM joined_t JOIN joined_src s ON joined_t.k = s.k WHERE s.w = 400")
    assert table() == ((1, 101), (2, 20))
    run(db, "DELETE FROM joined_t USING joined_src WHERE joined_t.k = joined_src.k")
    assert table() == ((2, 20),)
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="dml", autocommit=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        run(db, "INSERT INTO joined_t VALUES (1, 1), (5, 5)")
        cursor.execute(
            "UPDATE joined_t JOIN joined_src ON joined_t.k = joined_src.k SET joined_t.v = ? WHERE joined_t.k = ?",
            (7, 1),
        )
        cursor.execute(
            "DELETE FROM joined_t USING joined_src WHERE joined_t.k = joined_src.k AND joined_t.k = ?",
            (5,),
        )
        cursor.execute(
            "UPDATE joined_t JOIN joined_src ON joined_t.k = joined_src.k SET joined_t.v = ? WHERE joined_t.k = ?",
            (9, 2),
        )
    finally:
        connection.close()
    assert table() == ((1, 7), (2, 20), (5, 5))  # 5 and 2 join no row of joined_src
    assert (
        error_of(
            db, "UPDATE joined_t JOIN joined_src ON joined_t.k = joined_src.k SET joined_src.w = 1"
        )[0]
        == 1235
    )
    assert (
        error_of(
            db,
            "DELETE joined_t, joined_src FROM joined_t JOIN joined_src ON joined_t.k = joined_src.k",
        )[0]
        == 1235
    )
    done = mariadb(
        quire,
        "dml",
        "-e",
        "UPDATE joined_t SET v = joined_src.w FROM joined_src WHERE joined_t.k = joined_src.k; SELECT v FROM joined_t WHERE k = 1",
    )
    assert done.returncode == 0 and done.stdout.split()[-1] == "100", done.stderr


def test_replace_into_is_an_insert_that_replaces_by_key(quire, db):
    """MySQL's REPLACE [INTO]: a UNIQUE KEY table's row of the same key is replaced (what its
    INSERT does too), a DUPLICATE KEY table (no unique key) takes every row; an AGGREGATE KEY
    table, whose rows of one key merge, refuses it (1235). Prepared too (JDBC's way)."""
    run(
        db,
        "CREATE TABLE replaced (k INT, v VARCHAR(4)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(db, "CREATE TABLE replaced_dup (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(
        db,
        "CREATE TABLE replaced_agg (k INT, n INT SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(db, "REPLACE INTO replaced (k, v) VALUES (1, 'a'), (2, 'b')")
    run(db, "REPLACE replaced VALUES (1, 'z')")
    run(db, "REPLACE INTO replaced SELECT k + 10, v FROM replaced")
    run(db, "REPLACE INTO replaced_dup VALUES (1), (1)")
    assert run(db, "SELECT k, v FROM replaced ORDER BY k") == (
        (1, "z"), (2, "b"), (11, "z"), (12, "b"),
    )  # fmt: skip
    assert run(db, "SELECT count(*) FROM replaced_dup") == ((2,),)
    assert error_of(db, "REPLACE INTO replaced_agg VALUES (1, 2)")[0] == 1235
    assert run(db, "SELECT REPLACE('abc', 'b', 'x')") == (("axc",),)  # the function stays one
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="dml", autocommit=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        for v in ("p", "q"):
            cursor.execute("REPLACE INTO replaced (k, v) VALUES (?, ?)", (5, v))
        cursor.execute("SELECT v FROM replaced WHERE k = ?", (5,))
        assert cursor.fetchall() == [("q",)]
    finally:
        connection.close()
    done = mariadb(quire, "dml", "-e", "REPLACE INTO replaced VALUES (2, 'cli')")
    assert done.returncode == 0, done.stderr
    assert run(db, "SELECT v FROM replaced WHERE k = 2") == (("cli",),)


def test_a_non_strict_insert_filters_the_rows_that_do_not_fit(quire, db):
    """Doris's enable_insert_strict = false: the rows whose values do not fit their columns (or
    that have no partition) are left out, each a warning, the rest written; more of them than
    insert_max_filter_ratio of the rows fails the INSERT whole."""
    run(
        db,
        "CREATE TABLE lenient (k INT, v VARCHAR(3), n INT NOT NULL) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(
        db,
        "CREATE TABLE lenient_p (k INT, d DATE) DUPLICATE KEY(k) PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ('2024-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    connection = quire.connect(database="dml", autocommit=True)
    try:
        run(connection, "SET enable_insert_strict = false")
        sql = "INSERT INTO lenient VALUES (1, 'a', 1), (2, 'long', 2), (3, 'c', NULL), (4, 'd', 'x'), (5, 'e', 5)"
        with connection.cursor() as cursor:
            assert cursor.execute(sql) == 2
            assert connection._result.warning_count == 3
            cursor.execute("SHOW WARNINGS")
            assert [row[1] for row in cursor.fetchall()] == [1406, 1048, 1366]
        run(
            connection,
            "INSERT INTO lenient SELECT k + 10, v, n FROM lenient UNION ALL SELECT 20, 'way too long', 1",
        )
        run(connection, "INSERT INTO lenient_p VALUES (1, '2023-05-01'), (2, '2025-05-01')")
        run(connection, "SET insert_max_filter_ratio = 0.1")
        code, message = error_of(
            connection, "INSERT INTO lenient VALUES (6, 'f', 6), (7, 'long', 7)"
        )
        assert (code, message) == (
            1105,
            "Insert has too many filtered data 1/2 insert_max_filter_ratio is 0.100000",
        )
        run(connection, "SET enable_insert_strict = true")
        assert error_of(connection, "INSERT INTO lenient VALUES (8, 'long', 8)")[0] == 1406
    finally:
        connection.close()
    assert run(db, "SELECT k FROM lenient ORDER BY k") == ((1,), (5,), (11,), (15,))
    assert run(db, "SELECT k FROM lenient_p") == ((1,),)
    done = mariadb(
        quire,
        "dml",
        "-vvv",
        "-e",
        "SET enable_insert_strict = false; INSERT INTO lenient VALUES (30, 'long', 1), (31, 'z', 1)",
    )
    assert done.returncode == 0 and "1 row affected, 1 warning" in done.stdout, done.stdout


def test_a_partial_column_update_keeps_the_columns_it_does_not_name(quire, db):
    """Doris's enable_unique_key_partial_update: an INSERT naming some columns of a UNIQUE KEY
    table keeps the other columns of an existing key's row; a new key takes their defaults."""
    run(db, "CREATE TABLE profile (id INT NOT NULL, name VARCHAR(9) NOT NULL, score INT, "
        "city VARCHAR(9) DEFAULT 'nowhere') UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    run(db, "INSERT INTO profile VALUES (1, 'ann', 10, 'Oslo'), (2, 'bob', NULL, 'Rome')")
    run(db, "SET enable_unique_key_partial_update = true")
    run(db, "INSERT INTO profile (id, score) VALUES (1, 11), (2, 22)")
    assert run(db, "SELECT * FROM profile ORDER BY id") == (
        (1, "ann", 11, "Oslo"), (2, "bob", 22, "Rome"),
    )  # fmt: skip
    assert error_of(db, "INSERT INTO profile (id, score) VALUES (3, 33)") == (
        1364, "Field 'name' doesn't have a default value",
    )  # a new key takes the defaults: name has none  # fmt: skip
    run(db, "INSERT INTO profile (id, name) VALUES (3, 'cy')")
    assert run(db, "SELECT * FROM profile WHERE id = 3") == ((3, "cy", None, "nowhere"),)
    run(db, "BEGIN")
    run(db, "INSERT INTO profile (id, city) VALUES (1, 'Bergen')")
    run(db, "INSERT INTO profile (id, score) VALUES (1, 12)")  # over its own write
    run(db, "COMMIT")
    assert run(db, "SELECT * FROM profile WHERE id = 1") == ((1, "ann", 12, "Bergen"),)
    assert error_of(db, "INSERT INTO profile (score) VALUES (5)") == (
        1105, "Partial update should include all key columns, missing: id",
    )  # fmt: skip
    run(db, "SET enable_unique_key_partial_update = false")
    run(db, "INSERT INTO profile (id, name) VALUES (2, 'bo')")  # a whole row again
    assert run(db, "SELECT * FROM profile WHERE id = 2") == ((2, "bo", None, "nowhere"),)
    done = mariadb(
        quire, "dml", "--batch", "-N", "-e",
        "SET enable_unique_key_partial_update = true; "
        "INSERT INTO profile (id, score) VALUES (2, 7); SELECT * FROM profile WHERE id = 2",
    )  # fmt: skip
    assert done.stdout.split() == ["2", "bo", "7", "nowhere"], done.stderr


def test_integer_arithmetic_is_bigint_as_in_mysql_and_doris(quire, db):
    """INT max + 1 is 2147483648, not an overflow (MySQL and Doris compute integer arithmetic in
    BIGINT; the engine would in the columns' own type), its column a BIGINT; an UPDATE storing it
    into the INT column is MySQL's 1264, through PyMySQL and the CLI, the first statement on the
    table as a later one; past BIGINT it is MySQL's 1690."""
    run(
        db,
        "CREATE TABLE wide (id INT, k INT, s SMALLINT, n TINYINT, b BIGINT) UNIQUE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(db, "INSERT INTO wide VALUES (1, 2147483647, 32767, -128, 9223372036854775807)")
    for _ in range(2):
        with pytest.raises(pymysql.err.MySQLError) as refused:
            run(db, "UPDATE wide SET k = k + 1 WHERE id = 1")
        assert refused.value.args[0] == 1264
    done = mariadb(quire, "dml", "-e", "UPDATE wide SET k = k + 1 WHERE id = 1")
    assert (
        "ERROR 1264 (22003)" in done.stderr and "Out of range value for column 'k'" in done.stderr
    )
    sql = "SELECT k + 1, s + 1, k * 2, -k - 2, k + k, -n, k - 1 FROM wide"
    with db.cursor() as cursor:
        cursor.execute(sql)
        assert cursor.fetchall() == (
            (2147483648, 32768, 4294967294, -2147483649, 4294967294, 128, 2147483646),
        )
        assert {column[1] for column in cursor.description} == {
            pymysql.constants.FIELD_TYPE.LONGLONG
        }
    done = mariadb(quire, "dml", "--batch", "--skip-column-names", "-e", sql)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "2147483648", "32768", "4294967294", "-2147483649", "4294967294", "128", "2147483646"
    ]  # fmt: skip
    assert run(db, "SELECT k FROM wide") == ((2147483647,),)  # nothing was written
    past = "SELECT b + 1 FROM wide"
    message = "BIGINT value is out of range in '(9223372036854775807 + 1)'"
    assert error_of(db, past) == (1690, message)
    done = mariadb(quire, "dml", "-e", past)
    assert done.stderr.strip().endswith(f"ERROR 1690 (22003) at line 1: {message}"), done.stderr
