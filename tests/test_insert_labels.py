"""Doris's labelled writes: `INSERT INTO t WITH LABEL l ...` and `BEGIN WITH LABEL l ... COMMIT`
are loads of that label; CLEAN LABEL [l] FROM db lets the finished ones' labels be used again. The answer carries Doris's `{'label':..., 'status':'VISIBLE',
'txnId':...}`, a label a load holds is refused (1105, nothing written) until it expires, also after
a restart or kill -9, and SHOW LOAD / SHOW TRANSACTION list the load. Through PyMySQL, the mariadb
CLI and mysql-connector's prepared statements."""

import re
import threading

import mysql.connector
import pymysql
import pytest

from tests.harness import error_of, mariadb, run

INFO = re.compile(
    r"\{'label':'(?P<label>[^']*)', 'status':'(?P<status>\w+)', 'txnId':'(?P<txn>\d*)'\}"
)


@pytest.fixture
def db(quire, root):
    run(root, "DROP DATABASE IF EXISTS lab")
    run(root, "CREATE DATABASE lab")
    run(
        root,
        "CREATE TABLE lab.t (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    connection = quire.connect(database="lab", autocommit=True)
    yield connection
    connection.close()


def info(connection) -> dict:
    found = INFO.search(connection._result.message.decode())  # after its length
    assert found, connection._result.message
    return found.groupdict()


def keys(connection) -> list[int]:
    return [row[0] for row in run(connection, "SELECT k FROM t ORDER BY k")]


def test_a_labelled_insert_answers_its_load_and_holds_its_label(quire, db):
    run(db, "INSERT INTO t WITH LABEL first_load VALUES (1, 'a'), (2, 'b')")
    answered = info(db)
    assert answered["label"] == "first_load" and answered["status"] == "VISIBLE"
    assert db.affected_rows() == 2
    assert error_of(db, "INSERT INTO t WITH LABEL first_load VALUES (3, 'c')") == (
        1105,
        f"Label [first_load] has already been used, relate to txn [{answered['txn']}]",
    )
    assert keys(db) == [1, 2]  # the refused INSERT wrote nothing
    run(db, "INSERT INTO t WITH LABEL `2024-12:x_1` (k, v) SELECT k + 10, v FROM t")
    assert info(db)["label"] == "2024-12:x_1" and keys(db) == [1, 2, 11, 12]
    run(db, "INSERT INTO t WITH LABEL 20241206label WITH c AS (SELECT 5 AS k) SELECT k, 'e' FROM c")
    assert keys(db) == [1, 2, 5, 11, 12]
    run(db, "INSERT OVERWRITE TABLE t WITH LABEL replaced VALUES (7, 'g')")
    assert info(db)["label"] == "replaced" and keys(db) == [7]

    loads = {row[1]: row for row in run(db, "SHOW LOAD WHERE LABEL = 'first_load'")}
    row = loads["first_load"]
    assert (row[0], row[2], row[4]) == (int(answered["txn"]), "FINISHED", "INSERT")
    assert "dpp.norm.ALL=2" in row[5]
    shown = run(db, "SHOW TRANSACTION WHERE label = 'first_load'")
    assert [(r[0], r[3], r[4]) for r in shown] == [
        (int(answered["txn"]), "VISIBLE", "INSERT_STREAMING")
    ]
    assert run(db, "SHOW STREAM LOAD") == ()

    # A label is a database's: another database takes the same one.
    run(db, "CREATE DATABASE IF NOT EXISTS lab2")
    run(db, "CREATE TABLE lab2.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(db, "INSERT INTO lab2.t WITH LABEL first_load VALUES (1)")
    assert run(db, "SELECT count(*) FROM lab2.t") == ((1,),)
    run(db, "DROP DATABASE lab2")

    done = mariadb(quire, "-vvv", "lab", "-e", "INSERT INTO t WITH LABEL from_cli VALUES (8, 'h')")
    assert done.returncode == 0, done.stderr
    assert INFO.search(done.stdout).group("label") == "from_cli", done.stdout
    done = mariadb(quire, "lab", "-e", "INSERT INTO t WITH LABEL from_cli VALUES (9, 'i')")
    assert done.returncode == 1 and "ERROR 1105 (HY000)" in done.stderr, done.stderr
    assert "Label [from_cli] has already been used" in done.stderr


def test_show_last_insert_tells_the_sessions_last_committed_insert(quire, db):
    assert run(db, "SHOW LAST INSERT") == ()
    run(db, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    ((txn, label, database, table, status, loaded, filtered),) = run(db, "SHOW LAST INSERT")
    assert (database, table, status, loaded, filtered) == ("lab", "t", "VISIBLE", 2, 0)
    assert label.startswith("insert_") and txn > 0
    run(db, "SET enable_insert_strict = false")
    run(db, "INSERT INTO t WITH LABEL last_one VALUES (3, 'c'), (4, 'far too long')")
    txn = int(info(db)["txn"])
    shown = run(db, "SHOW LAST INSERT")
    assert shown == ((txn, "last_one", "lab", "t", "VISIBLE", 1, 1),)
    run(db, "BEGIN")
    run(db, "INSERT INTO t VALUES (5, 'e')")
    run(db, "COMMIT")
    assert run(db, "SHOW LAST INSERT") == shown  # one inside a transaction is not its own load
    done = mariadb(quire, "lab", "--batch", "-e", "INSERT INTO t VALUES (6, 'f'); SHOW LAST INSERT")
    assert done.stdout.splitlines()[0].split("\t") == [
        "TransactionId", "Label", "Database", "Table", "TransactionStatus", "LoadedRows",
        "FilteredRows",
    ], done.stderr  # fmt: skip
    assert done.stdout.splitlines()[1].split("\t")[2:] == ["lab", "t", "VISIBLE", "1", "0"]


def test_bad_labels_are_refused(db):
    assert error_of(db, "INSERT INTO t WITH LABEL `a b` VALUES (1, 'a')") == (
        1105,
        "Label format error. regex: ^[-_A-Za-z0-9:]{1,128}$, label: a b",
    )
    assert error_of(db, f"INSERT INTO t WITH LABEL {'x' * 129} VALUES (1, 'a')")[0] == 1105
    assert error_of(db, "INSERT INTO t WITH LABEL 'quoted' VALUES (1, 'a')")[0] == 1064
    assert error_of(db, "INSERT INTO t WITH LABEL VALUES (1, 'a')")[0] == 1064
    assert keys(db) == []


def test_a_labelled_transaction_commits_as_one_load(quire, db):
    run(db, "BEGIN WITH LABEL tx_one")
    assert info(db) == {"label": "tx_one", "status": "PREPARE", "txn": ""}
    run(db, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    run(db, "UPDATE t SET v = 'B' WHERE k = 2")
    assert error_of(db, "INSERT INTO t WITH LABEL inner VALUES (3, 'c')")[0] == 1105
    run(db, "COMMIT")
    committed = info(db)
    assert committed["label"] == "tx_one" and committed["status"] == "VISIBLE"
    assert run(db, "SELECT k, v FROM t ORDER BY k") == ((1, "a"), (2, "B"))
    assert [row[1] for row in run(db, "SHOW LOAD WHERE LABEL = 'tx_one'")] == ["tx_one"]

    run(db, "BEGIN WITH LABEL tx_one")
    run(db, "INSERT INTO t VALUES (4, 'd')")
    assert error_of(db, "COMMIT")[1].startswith("Label [tx_one] has already been used")
    assert keys(db) == [1, 2]  # its transaction is gone with its writes
    run(db, "BEGIN WITH LABEL tx_empty")
    run(db, "COMMIT")  # nothing written: no load, the label stays free
    run(db, "INSERT INTO t WITH LABEL tx_empty VALUES (5, 'e')")
    assert keys(db) == [1, 2, 5]


def test_a_prepared_labelled_insert_takes_its_label_once(quire, db):
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="lab", autocommit=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("INSERT INTO t WITH LABEL prepared_one VALUES (?, ?)", (1, "a"))
        assert cursor.rowcount == 1
        with pytest.raises(mysql.connector.Error) as refused:
            cursor.execute("INSERT INTO t WITH LABEL prepared_one VALUES (?, ?)", (2, "b"))
        assert refused.value.errno == 1105 and "prepared_one" in refused.value.msg
    finally:
        connection.close()
    assert keys(db) == [1]


def test_clients_racing_for_one_label_write_once(quire, db):
    outcomes: list[str] = []

    def insert(k: int):
        connection = quire.connect(database="lab", autocommit=True)
        try:
            run(connection, f"INSERT INTO t WITH LABEL raced VALUES ({k}, 'r')")
            outcomes.append("written")
        except pymysql.MySQLError as error:
            assert error.args[0] == 1105 and "Label [raced]" in error.args[1], error
            outcomes.append("refused")
        finally:
            connection.close()

    racers = [threading.Thread(target=insert, args=(k,)) for k in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["written"]
    assert len(keys(db)) == 1


def test_clean_label_lets_a_label_be_used_again(quire, db):
    run(db, "INSERT INTO t WITH LABEL again VALUES (1, 'a')")
    run(db, "INSERT INTO t WITH LABEL other VALUES (2, 'b')")
    assert error_of(db, "INSERT INTO t WITH LABEL again VALUES (3, 'c')")[0] == 1105
    run(db, "CLEAN LABEL again FROM lab")
    run(db, "INSERT INTO t WITH LABEL again VALUES (3, 'c')")
    assert error_of(db, "INSERT INTO t WITH LABEL other VALUES (4, 'd')")[0] == 1105
    run(db, "CLEAN LABEL FROM lab")  # every finished load's
    assert run(db, "SHOW LOAD FROM lab") == ()
    run(db, "INSERT INTO t WITH LABEL other VALUES (4, 'd')")
    assert keys(db) == [1, 2, 3, 4]
    run(db, "CREATE USER IF NOT EXISTS label_reader IDENTIFIED BY 'pw'")
    run(db, "GRANT SELECT_PRIV ON lab.* TO label_reader")
    reader = quire.connect("label_reader", "pw")
    try:
        assert error_of(reader, "CLEAN LABEL other FROM lab")[0] == 1044
    finally:
        reader.close()
    assert error_of(db, "CLEAN LABEL x FROM no_such_db")[0] == 1049
    done = mariadb(quire, "-e", "CLEAN LABEL other FROM lab")
    assert done.returncode == 0, done.stderr


def test_labels_outlive_a_restart_and_kill_9(fresh_quire):
    node = fresh_quire.start()
    connection = node.connect(autocommit=True)
    run(connection, "CREATE DATABASE d")
    run(connection, "CREATE TABLE d.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(connection, "INSERT INTO d.t WITH LABEL before_restart VALUES (1)")
    connection.close()
    node.restart()
    connection = node.connect(autocommit=True)
    assert error_of(connection, "INSERT INTO d.t WITH LABEL before_restart VALUES (2)")[0] == 1105
    run(connection, "INSERT INTO d.t WITH LABEL before_kill VALUES (3)")
    connection.close()
    node.kill()
    node.start()
    connection = node.connect(autocommit=True)
    try:
        for label in ("before_restart", "before_kill"):
            code, message = error_of(connection, f"INSERT INTO d.t WITH LABEL {label} VALUES (4)")
            assert code == 1105 and f"Label [{label}]" in message
        assert run(connection, "SELECT k FROM d.t ORDER BY k") == ((1,), (3,))
        run(connection, "CLEAN LABEL before_kill FROM d")  # logged: a restart keeps it cleaned
    finally:
        connection.close()
    node.kill()
    node.start()
    connection = node.connect(autocommit=True)
    try:
        run(connection, "INSERT INTO d.t WITH LABEL before_kill VALUES (5)")
        assert (
            error_of(connection, "INSERT INTO d.t WITH LABEL before_restart VALUES (6)")[0] == 1105
        )
    finally:
        connection.close()
