"""Transactions through the MySQL front: BEGIN / COMMIT / ROLLBACK and autocommit off, with
snapshot isolation (a transaction reads its snapshot plus its own writes) and first committer
wins (the second of two transactions writing the same row fails at COMMIT)."""

import pymysql
import pytest

from tests.harness import check_snapshot_starts_at_first_table_read, error_of, mariadb, run


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE tx")
    run(root, "USE tx")
    run(
        root,
        "CREATE TABLE acct (id INT, balance INT) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "CREATE TABLE log (n INT, note VARCHAR(20)) DUPLICATE KEY(n) DISTRIBUTED BY HASH(n) BUCKETS 2",
    )
    return root


def connect(quire):
    return pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="tx", autocommit=True
    )


def test_commit_makes_all_writes_visible_at_once_and_rollback_none(quire, db):
    writer, other = connect(quire), connect(quire)
    try:
        run(writer, "BEGIN")
        run(writer, "INSERT INTO log VALUES (1, 'a'), (2, 'b')")
        run(writer, "UPDATE log SET note = 'B' WHERE n = 2")
        run(writer, "DELETE FROM log WHERE n = 1")
        run(writer, "INSERT INTO log VALUES (3, 'c')")
        assert run(writer, "SELECT n, note FROM log ORDER BY n") == ((2, "B"), (3, "c"))
        assert run(other, "SELECT COUNT(*) FROM log") == ((0,),)
        run(writer, "COMMIT")
        assert run(other, "SELECT n, note FROM log ORDER BY n") == ((2, "B"), (3, "c"))
        run(writer, "START TRANSACTION")
        run(writer, "DELETE FROM log")
        assert run(writer, "SELECT COUNT(*) FROM log") == ((0,),)
        run(writer, "ROLLBACK")
        assert run(other, "SELECT COUNT(*) FROM log") == ((2,),)
    finally:
        writer.close()
        other.close()


def test_a_transaction_reads_its_snapshot(quire, db):
    reader, writer = connect(quire), connect(quire)
    try:
        run(writer, "INSERT INTO acct VALUES (10, 100)")
        run(reader, "BEGIN")
        assert run(reader, "SELECT balance FROM acct WHERE id = 10") == ((100,),)
        run(writer, "UPDATE acct SET balance = 50 WHERE id = 10")
        assert run(reader, "SELECT balance FROM acct WHERE id = 10") == ((100,),)
        run(reader, "COMMIT")
        assert run(reader, "SELECT balance FROM acct WHERE id = 10") == ((50,),)
    finally:
        reader.close()
        writer.close()


def test_the_second_of_two_writers_of_a_row_fails_at_commit(quire, db):
    first, second = connect(quire), connect(quire)
    try:
        run(first, "INSERT INTO acct VALUES (20, 100)")
        run(first, "BEGIN")
        run(second, "BEGIN")
        run(first, "UPDATE acct SET balance = balance - 30 WHERE id = 20")
        run(second, "UPDATE acct SET balance = balance - 50 WHERE id = 20")
        run(first, "COMMIT")
        code, message = error_of(second, "COMMIT")
        assert code == 1213 and "Write conflict" in message, message
        assert run(second, "SELECT balance FROM acct WHERE id = 20") == ((70,),)  # no lost update
    finally:
        first.close()
        second.close()


def test_autocommit_off_keeps_writes_until_commit(quire, db):
    connection = pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="tx", autocommit=False
    )
    other = connect(quire)
    try:
        run(connection, "INSERT INTO log VALUES (100, 'x')")
        assert run(other, "SELECT COUNT(*) FROM log WHERE n = 100") == ((0,),)
        connection.commit()
        assert run(other, "SELECT COUNT(*) FROM log WHERE n = 100") == ((1,),)
        run(connection, "INSERT INTO log VALUES (101, 'y')")
        connection.rollback()
        assert run(other, "SELECT COUNT(*) FROM log WHERE n = 101") == ((0,),)
    finally:
        connection.close()
        other.close()


def test_a_catalog_change_commits_the_open_transaction(quire, db):
    connection, other = connect(quire), connect(quire)
    try:
        run(connection, "BEGIN")
        run(connection, "INSERT INTO log VALUES (200, 'ddl')")
        run(
            connection,
            "CREATE TABLE after_ddl (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
        )
        assert run(other, "SELECT COUNT(*) FROM log WHERE n = 200") == ((1,),)
    finally:
        connection.close()
        other.close()


def test_a_transaction_over_a_changed_table_fails_at_commit_with_1412(quire, db):
    writer, other = connect(quire), connect(quire)
    try:
        run(
            other,
            "CREATE TABLE changing (k INT, v VARCHAR(10)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 1",
        )
        run(writer, "BEGIN")
        run(writer, "INSERT INTO changing (k, v) VALUES (1, 'old')")
        run(other, "ALTER TABLE changing ADD COLUMN c INT DEFAULT '7'")
        run(other, "INSERT INTO changing (k, v) VALUES (2, 'new')")  # the TN sees the new version
        code, message = error_of(writer, "COMMIT")
        assert code == 1412 and "Table definition has changed" in message
        assert writer.get_server_info()  # the session goes on
        run(writer, "INSERT INTO changing (k, v) VALUES (3, 'again')")  # autocommit: new version
        assert run(other, "SELECT k, v, c FROM changing ORDER BY k") == (
            (2, "new", 7),
            (3, "again", 7),
        )
    finally:
        writer.close()
        other.close()


def test_transactions_through_the_cli(quire, db):
    script = "BEGIN; INSERT INTO log VALUES (300, 'cli'); SELECT COUNT(*) FROM log WHERE n = 300; ROLLBACK; SELECT COUNT(*) FROM log WHERE n = 300;"
    done = mariadb(quire, "tx", "--batch", "-N", "-e", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0"]


def test_a_snapshot_too_old_refuses_deletes_but_never_plain_appends():
    """Past max_transaction_seconds the TN forgets who deleted what: a transaction that old may
    not delete (it could not be checked), but appending rows needs no check."""
    import pyarrow as pa

    from be.logtail.entries import ROW_ID
    from be.table_schema import ColumnSchema, TableSchema
    from be.tn.errors import SnapshotTooOld
    from be.tn.state import WriteState
    from be.tn.write_set import TableWrite, WriteSet
    from metadata.records import KeyModel

    schema = TableSchema(1, 1, (ColumnSchema("k", pa.int32()),), KeyModel.DUPLICATE, ("k",))
    state = WriteState()
    rows = pa.table({"k": pa.array([1, 2], pa.int32())})
    state.apply(state.prepare(WriteSet(0, (TableWrite(schema, rows),)), 100, 10))
    state.forget_before(150)
    later = state.prepare(WriteSet(0, (TableWrite(schema, rows),)), 200, 10)
    assert later.changes[0].inserts.num_rows == 2
    deletes = pa.table({ROW_ID: pa.array([1], pa.int64()), "k": pa.array([1], pa.int32())})
    with pytest.raises(SnapshotTooOld):
        state.prepare(WriteSet(0, (TableWrite(schema, deletes=deletes),)), 200, 10)


def test_an_autocommit_off_snapshot_starts_at_the_first_read_of_a_table(quire, db):
    run(db, "CREATE TABLE firsts (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    check_snapshot_starts_at_first_table_read(quire, "tx.firsts")
