"""Prepared UPDATE and DELETE of one key's rows (sysbench's writes) done from the key index's
values: the same rows, counts and errors as the general path, inside and outside transactions,
checked against SQLite with mysql-connector's prepared statements (the binary protocol)."""

from __future__ import annotations

import decimal
import random
import sqlite3

import mysql.connector
import pytest

from tests.harness import QuireProcess, run

KEYS = range(1, 13)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("point_writes")).start()
    connection = node.connect()
    run(connection, "CREATE DATABASE w")
    run(
        connection,
        "CREATE TABLE w.u (id INT NOT NULL, k INT, c VARCHAR(20)) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3",
    )
    run(
        connection,
        "CREATE TABLE w.d (id BIGINT NOT NULL, k SMALLINT, c VARCHAR(20)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    connection.close()
    yield node
    node.stop()


def prepared(node, user="root", password=""):
    connection = mysql.connector.connect(
        host="127.0.0.1", port=node.query_port, user=user, password=password, use_pure=True
    )
    connection.autocommit = True
    return connection, connection.cursor(prepared=True)


def oracle_update(oracle: sqlite3.Connection, table: str, sets: str, params, key) -> int:
    """SQLite's UPDATE, counting the rows whose values changed (as MySQL's affected rows)."""
    before = oracle.execute(f"SELECT * FROM {table} WHERE id = ?", (key,)).fetchall()
    oracle.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*params, key))
    after = oracle.execute(f"SELECT * FROM {table} WHERE id = ?", (key,)).fetchall()
    return sum(1 for old, new in zip(sorted(before), sorted(after), strict=True) if old != new)


def test_random_prepared_writes_match_sqlite(node):
    """Random prepared writes in random transactions (committed or rolled back), and alone:
    after each, both tables equal SQLite's, and every affected-row count matches."""
    oracle = sqlite3.connect(":memory:", isolation_level=None)
    oracle.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, k INTEGER, c TEXT)")
    oracle.execute("CREATE TABLE d (id INTEGER, k INTEGER, c TEXT)")
    generator = random.Random(11)
    connection, cursor = prepared(node)
    try:
        for step in range(80):
            in_transaction = generator.random() < 0.6
            if in_transaction:
                connection.start_transaction()
                oracle.execute("BEGIN")
            for _ in range(generator.randint(1, 6)):
                table = generator.choice("ud")
                key = generator.choice(KEYS)
                choice = generator.random()
                if choice < 0.3:
                    k, c = generator.randint(-50, 50), generator.choice([None, "a", "b", "c"])
                    if table == "u":
                        cursor.execute("INSERT INTO w.u (id, k, c) VALUES (?, ?, ?)", (key, k, c))
                        oracle.execute("INSERT OR REPLACE INTO u VALUES (?, ?, ?)", (key, k, c))
                    else:
                        cursor.execute("INSERT INTO w.d (id, k, c) VALUES (?, ?, ?)", (key, k, c))
                        oracle.execute("INSERT INTO d VALUES (?, ?, ?)", (key, k, c))
                    continue
                if choice < 0.5:
                    cursor.execute(f"UPDATE w.{table} SET k = k + 1 WHERE id = ?", (key,))
                    expected = oracle_update(oracle, table, "k = k + 1", (), key)
                elif choice < 0.65:
                    c = generator.choice(["a", "b", "z"])
                    cursor.execute(f"UPDATE w.{table} SET c = ? WHERE id = ?", (c, key))
                    expected = oracle_update(oracle, table, "c = ?", (c,), key)
                elif choice < 0.8:
                    amount = generator.randint(0, 3)
                    cursor.execute(
                        f"UPDATE w.{table} SET k = k - ?, c = 'm' WHERE id = ?", (amount, key)
                    )
                    expected = oracle_update(oracle, table, "k = k - ?, c = 'm'", (amount,), key)
                else:
                    cursor.execute(f"DELETE FROM w.{table} WHERE id = ?", (key,))
                    expected = oracle.execute(f"DELETE FROM {table} WHERE id = ?", (key,)).rowcount
                assert cursor.rowcount == expected, (step, table, key)
            if in_transaction:
                if generator.random() < 0.25:
                    connection.rollback()
                    oracle.execute("ROLLBACK")
                else:
                    connection.commit()
                    oracle.execute("COMMIT")
            for table in "ud":
                cursor.execute(f"SELECT id, k, c FROM w.{table} ORDER BY id, k, c")
                got = sorted((tuple(row) for row in cursor.fetchall()), key=repr)
                want = sorted(oracle.execute(f"SELECT id, k, c FROM {table}").fetchall(), key=repr)
                assert got == want, (step, table)
    finally:
        connection.close()


def test_prepared_writes_refuse_as_the_general_path(node):
    """An out-of-range result, a value too long, a user without grants and a session reading
    as of a time are refused with MySQL's errors, and nothing is written."""
    admin = node.connect()
    run(admin, "INSERT INTO w.u VALUES (500, 2147483647, 'top'), (501, 1, 'one')")
    run(admin, "CREATE USER IF NOT EXISTS 'nogrants'@'%' IDENTIFIED BY 'pw'")
    connection, cursor = prepared(node)
    try:
        with pytest.raises(mysql.connector.Error) as failed:
            cursor.execute("UPDATE w.u SET k = k + 1 WHERE id = ?", (500,))
        assert failed.value.errno == 1264
        with pytest.raises(mysql.connector.Error) as failed:
            cursor.execute("UPDATE w.u SET c = ? WHERE id = ?", ("x" * 21, 501))
        assert failed.value.errno == 1406
        moment = run(admin, "SELECT NOW(6)")[0][0]
        cursor.execute(f"SET read_ts = '{moment}'")
        with pytest.raises(mysql.connector.Error) as failed:
            cursor.execute("DELETE FROM w.u WHERE id = ?", (501,))
        assert failed.value.errno == 1792
        cursor.execute("SET read_ts = ''")
        cursor.execute("UPDATE w.u SET c = ? WHERE id = ?", ("one", 501))
        assert cursor.rowcount == 0  # matched, not changed
    finally:
        connection.close()
    connection, cursor = prepared(node, "nogrants", "pw")
    try:
        for sql in ("UPDATE w.u SET k = ? WHERE id = ?", "DELETE FROM w.u WHERE id = ? AND 1 = ?"):
            with pytest.raises(mysql.connector.Error) as failed:
                cursor.execute(sql, (1, 501))
            assert failed.value.errno == 1142
    finally:
        connection.close()
    assert run(admin, "SELECT id, k, c FROM w.u WHERE id IN (500, 501) ORDER BY id") == (
        (500, 2147483647, "top"),
        (501, 1, "one"),
    )
    admin.close()


def test_prepared_writes_of_many_rows_with_one_key(node):
    """A DUPLICATE KEY table's rows sharing a key are all updated and deleted, one statement
    each, as MySQL counts them."""
    admin = node.connect()
    run(admin, "INSERT INTO w.d VALUES (900, 1, 'x'), (900, 2, 'y'), (900, 3, 'x'), (901, 1, 'q')")
    connection, cursor = prepared(node)
    try:
        cursor.execute("UPDATE w.d SET c = ? WHERE id = ?", ("x", 900))
        assert cursor.rowcount == 1
        cursor.execute("UPDATE w.d SET k = k + ? WHERE id = ?", (10, 900))
        assert cursor.rowcount == 3
        assert run(admin, "SELECT k, c FROM w.d WHERE id = 900 ORDER BY k") == (
            (11, "x"),
            (12, "x"),
            (13, "x"),
        )
        cursor.execute("DELETE FROM w.d WHERE id = ?", (900,))
        assert cursor.rowcount == 3
    finally:
        connection.close()
    assert run(admin, "SELECT id, k, c FROM w.d WHERE id IN (900, 901)") == ((901, 1, "q"),)
    admin.close()


def test_prepared_inserts_store_what_the_text_statement_stores(node):
    """A prepared INSERT of markers beside literals and DEFAULT, with integer, string and NULL
    parameters (bound straight into its rows) and with others (decimal, float, bytes, date),
    stores what the same INSERT written as text stores; a value the column refuses gets
    MySQL's error and nothing of the statement is written."""
    admin = node.connect()
    run(
        admin,
        "CREATE TABLE w.p (id INT NOT NULL, k INT NOT NULL DEFAULT '7', c VARCHAR(8), "
        "e DECIMAL(6,2)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    connection, cursor = prepared(node)
    try:
        sql = "INSERT INTO w.p (id, k, c, e) VALUES (?, DEFAULT, ?, 1.5), (?, ?, 'lit', ?)"
        cursor.execute(sql, (1, "one", 2, -3, None))
        assert cursor.rowcount == 2
        cursor.execute(sql, (3, None, 4, 40, decimal.Decimal("2.25")))
        cursor.execute(sql, (5, b"bytes", 6, 60.5, 3))
        run(
            admin,
            "INSERT INTO w.p (id, k, c, e) VALUES (11, DEFAULT, 'one', 1.5), (12, -3, 'lit', NULL),"
            " (13, DEFAULT, NULL, 1.5), (14, 40, 'lit', 2.25), (15, DEFAULT, 'bytes', 1.5),"
            " (16, 60.5, 'lit', 3)",
        )
        for bad, errno in (((7, "x" * 9, 8, 1, 1), 1406), ((7, "a", 8, None, 1), 1048)):
            with pytest.raises(mysql.connector.Error) as failed:
                cursor.execute(sql, bad)
            assert failed.value.errno == errno
        cursor.execute("INSERT INTO w.p (id, c) VALUES (?, ?)", (1, "again"))  # replaces id 1
    finally:
        connection.close()
    got = run(admin, "SELECT id, k, c, e FROM w.p ORDER BY id")
    prepared_rows = [row[1:] for row in got if row[0] < 10]
    text_rows = [row[1:] for row in got if row[0] > 10]
    assert [row[0] for row in got if row[0] < 10] == [1, 2, 3, 4, 5, 6]
    assert prepared_rows[1:] == text_rows[1:]
    assert prepared_rows[0] == (7, "again", None)
    admin.close()


def test_point_writes_in_a_transaction_see_each_other(node):
    """In a transaction, prepared UPDATEs and DELETEs by key of tables with one key column and
    with two see the transaction's own earlier writes, a rollback leaves nothing and a commit
    keeps exactly the last values."""
    admin = node.connect()
    run(
        admin,
        "CREATE TABLE w.two (id INT NOT NULL, part INT NOT NULL, k INT, c VARCHAR(10)) "
        "UNIQUE KEY(id, part) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(admin, "INSERT INTO w.two VALUES (1, 1, 10, 'a'), (1, 2, 20, 'b'), (2, 1, 30, 'c')")
    run(admin, "INSERT INTO w.u VALUES (700, 1, 'x'), (701, 2, 'y')")
    connection, cursor = prepared(node)
    try:
        for ending in ("rollback", "commit"):
            connection.start_transaction()
            for table, key in (("two", 1), ("u", 700)):
                cursor.execute(f"UPDATE w.{table} SET k = k + ? WHERE id = ?", (5, key))
                cursor.execute(f"UPDATE w.{table} SET k = k + ?, c = ? WHERE id = ?", (1, "z", key))
                cursor.execute(f"SELECT k, c FROM w.{table} WHERE id = ? ORDER BY k", (key,))
                assert cursor.fetchall() == (
                    [(16, "z"), (26, "z")] if table == "two" else [(7, "z")]
                )
            cursor.execute("DELETE FROM w.two WHERE id = ?", (2,))
            cursor.execute("DELETE FROM w.u WHERE id = ?", (701,))
            assert cursor.rowcount == 1
            cursor.execute("SELECT count(*) FROM w.u WHERE id BETWEEN ? AND ?", (700, 701))
            assert cursor.fetchall() == [(1,)]
            getattr(connection, ending)()
            if ending == "rollback":
                assert run(admin, "SELECT id, part, k, c FROM w.two ORDER BY id, part") == (
                    (1, 1, 10, "a"),
                    (1, 2, 20, "b"),
                    (2, 1, 30, "c"),
                )
                assert run(admin, "SELECT id, k, c FROM w.u WHERE id >= 700 ORDER BY id") == (
                    (700, 1, "x"),
                    (701, 2, "y"),
                )
    finally:
        connection.close()
    assert run(admin, "SELECT id, part, k, c FROM w.two ORDER BY id, part") == (
        (1, 1, 16, "z"),
        (1, 2, 26, "z"),
    )
    assert run(admin, "SELECT id, k, c FROM w.u WHERE id >= 700 ORDER BY id") == ((700, 7, "z"),)
    admin.close()


def test_one_row_inserts_in_a_transaction(node):
    """In a transaction, one-row INSERTs (prepared and as text) fill left-out columns with their
    defaults, a refused value leaves the transaction's other rows as they were, an INSERT of a
    key the transaction deleted takes its place, and one of a key it did not delete replaces
    the committed row; a rollback leaves nothing, a commit keeps exactly these rows."""
    admin = node.connect()
    run(
        admin,
        "CREATE TABLE w.one (id INT NOT NULL, k INT NOT NULL DEFAULT '3', c VARCHAR(4)) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(admin, "INSERT INTO w.one VALUES (1, 10, 'a'), (2, 20, 'b')")
    connection, cursor = prepared(node)
    try:
        for ending in ("rollback", "commit"):
            connection.start_transaction()
            cursor.execute("INSERT INTO w.one (id, c) VALUES (?, ?)", (5, "new"))
            with pytest.raises(mysql.connector.Error) as failed:
                cursor.execute("INSERT INTO w.one (id, c) VALUES (?, ?)", (6, "toolong"))
            assert failed.value.errno == 1406
            cursor.execute("DELETE FROM w.one WHERE id = ?", (1,))
            cursor.execute("INSERT INTO w.one (id, k, c) VALUES (?, ?, ?)", (1, 11, "re"))
            cursor.execute("INSERT INTO w.one VALUES (2, 21, 'rep')")
            cursor.execute("SELECT id, k, c FROM w.one ORDER BY id")
            assert cursor.fetchall() == [(1, 11, "re"), (2, 21, "rep"), (5, 3, "new")]
            getattr(connection, ending)()
            if ending == "rollback":
                assert run(admin, "SELECT id, k, c FROM w.one ORDER BY id") == (
                    (1, 10, "a"),
                    (2, 20, "b"),
                )
    finally:
        connection.close()
    assert run(admin, "SELECT id, k, c FROM w.one ORDER BY id") == (
        (1, 11, "re"),
        (2, 21, "rep"),
        (5, 3, "new"),
    )
    admin.close()
