"""Doris's auto partitions: AUTO PARTITION BY RANGE (date_trunc(c, 'unit')) and AUTO PARTITION BY
LIST (c) tables get the partitions their INSERTs need, named as Doris names them, one at a time
under concurrent INSERTs, at most max_auto_partition_num; SHOW CREATE TABLE writes the clause
back. Through PyMySQL and the mariadb CLI."""

import datetime
import threading

import pytest
import requests

from tests.harness import error_of, mariadb, run


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE auto")
    run(root, "USE auto")
    return root


def partitions(connection, table: str) -> list[tuple[str, str]]:
    return sorted((row[1], row[6]) for row in run(connection, f"SHOW PARTITIONS FROM {table}"))


def test_range_auto_partitions_are_made_by_inserts(quire, db):
    run(
        db,
        "CREATE TABLE months (id INT, dt DATETIME NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(dt, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    assert run(db, "SHOW PARTITIONS FROM months") == ()
    run(
        db,
        "INSERT INTO months VALUES (1, '2024-01-05 10:00:00'), (2, '2024-03-01 00:00:00'), "
        "(3, '2024-01-31 23:59:59')",
    )
    run(db, "INSERT INTO months VALUES (4, '2024-03-15 00:00:00')")  # its partition is there
    assert [name for name, _ in partitions(db, "months")] == ["p20240101000000", "p20240301000000"]
    assert "keys: [2024-02-01 00:00:00]" in partitions(db, "months")[0][1]
    assert run(db, "SELECT id FROM months PARTITION (p20240101000000) ORDER BY id") == ((1,), (3,))
    done = mariadb(quire, "auto", "--batch", "-N", "-e", "SHOW CREATE TABLE months")
    assert "AUTO PARTITION BY RANGE (date_trunc(`dt`, 'month'))" in done.stdout, done.stderr
    assert "quire.auto_partition" not in done.stdout
    text = run(db, "SHOW CREATE TABLE months")[0][1].replace("`months`", "`again`", 1)
    run(db, text)  # what SHOW CREATE TABLE writes makes the table again
    run(db, "INSERT INTO again VALUES (5, '2030-07-07 07:07:07')")
    assert "p20300701000000" in [name for name, _ in partitions(db, "again")]


def test_list_auto_partitions_take_doris_names(db):
    run(
        db,
        "CREATE TABLE cities (id INT, city VARCHAR(20) NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY LIST (city) () DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(
        db, "INSERT INTO cities VALUES (1, 'Beijing'), (2, 'Shanghai'), (3, 'Beijing'), (4, '你好')"
    )
    names = [name for name, _ in partitions(db, "cities")]
    assert names == ["p4f60597d2", "pBeijing7", "pShanghai8"]
    assert run(db, "SELECT id FROM cities PARTITION (pBeijing7) ORDER BY id") == ((1,), (3,))


def test_auto_partition_rules_are_checked(db):
    assert error_of(
        db,
        "CREATE TABLE nullable (d DATE) DUPLICATE KEY(d) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'day')) () DISTRIBUTED BY HASH(d) BUCKETS 1",
    ) == (1105, "AUTO RANGE PARTITION doesn't support NULL column")
    code, message = error_of(
        db,
        "CREATE TABLE fortnight (d DATE NOT NULL) DUPLICATE KEY(d) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'fortnight')) () DISTRIBUTED BY HASH(d) BUCKETS 1",
    )
    assert code == 1105 and "year|month|day|hour|minute|second" in message


def test_too_many_auto_partitions_are_refused_with_nothing_written(db):
    run(
        db,
        "CREATE TABLE days (d DATE NOT NULL) DUPLICATE KEY(d) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'day')) () DISTRIBUTED BY HASH(d) BUCKETS 1",
    )
    run(db, "ADMIN SET FRONTEND CONFIG ('max_auto_partition_num' = '3')")
    try:
        code, message = error_of(
            db,
            "INSERT INTO days VALUES ('2024-01-01'), ('2024-01-02'), ('2024-01-03'), ('2024-01-04')",
        )
        assert code == 1105 and "max_auto_partition_num" in message
        assert run(db, "SELECT COUNT(*) FROM days") == ((0,),)
        assert run(db, "SHOW PARTITIONS FROM days") == ()
    finally:
        run(db, "ADMIN SET FRONTEND CONFIG ('max_auto_partition_num' = '2000')")


def test_concurrent_inserts_make_each_partition_once(quire, db):
    run(
        db,
        "CREATE TABLE racing (id INT, d DATE NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    failures = []

    def insert(worker: int) -> None:
        connection = quire.connect(database="auto", autocommit=True)
        try:
            values = ", ".join(f"({worker * 10 + i}, '2024-0{1 + i}-1{worker}')" for i in range(3))
            run(connection, f"INSERT INTO racing VALUES {values}")
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=insert, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures
    assert [name for name, _ in partitions(db, "racing")] == [
        "p20240101000000", "p20240201000000", "p20240301000000",
    ]  # fmt: skip
    assert run(db, "SELECT COUNT(*) FROM racing") == ((12,),)


def test_an_update_moving_rows_makes_their_partitions(db):
    run(
        db,
        "CREATE TABLE moved (id INT, d DATE NOT NULL, v INT) UNIQUE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(db, "INSERT INTO moved VALUES (1, '2024-01-05', 1), (2, '2024-01-06', 2)")
    run(db, "UPDATE moved SET d = '2024-05-05' WHERE id = 1")  # by key
    run(db, "UPDATE moved SET d = '2024-07-07' WHERE v = 2")
    assert run(db, "SELECT id, d FROM moved ORDER BY id") == (
        (1, datetime.date(2024, 5, 5)),
        (2, datetime.date(2024, 7, 7)),
    )
    assert [name for name, _ in partitions(db, "moved")] == [
        "p20240101000000", "p20240501000000", "p20240701000000",
    ]  # fmt: skip


def test_a_transaction_makes_partitions_for_each_of_its_inserts(quire, db):
    run(
        db,
        "CREATE TABLE txn_months (id INT, d DATE NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(db, "BEGIN")
    run(db, "INSERT INTO txn_months VALUES (1, '2024-01-05')")
    run(db, "INSERT INTO txn_months VALUES (2, '2024-02-05')")  # a second new partition
    assert run(db, "SELECT id FROM txn_months ORDER BY id") == ((1,), (2,))  # its own rows
    run(db, "COMMIT")
    run(db, "BEGIN")
    run(db, "INSERT INTO txn_months VALUES (3, '2024-03-05')")
    run(db, "ROLLBACK")  # its partition stays, as Doris keeps it; its row is gone
    done = mariadb(
        quire, "auto", "--batch", "-N", "-e",
        "BEGIN; INSERT INTO txn_months VALUES (4, '2024-04-05'); "
        "INSERT INTO txn_months VALUES (5, '2024-05-05'); COMMIT; "
        "SELECT id FROM txn_months ORDER BY id",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "2", "4", "5"]
    assert len(partitions(db, "txn_months")) == 5


def test_a_stream_load_makes_the_partitions_its_rows_need(quire, db):
    run(
        db,
        "CREATE TABLE loaded (id INT, d DATE NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    answer = requests.put(
        f"http://127.0.0.1:{quire.http_port}/api/auto/loaded/_stream_load",
        data=b"1,2024-01-05\n2,2024-02-06\n3,2024-01-07\n",
        auth=("root", ""),
        timeout=30,
        headers={"label": "months", "column_separator": ","},
    ).json()
    assert (answer["Status"], answer["NumberLoadedRows"]) == ("Success", 3), answer
    assert [name for name, _ in partitions(db, "loaded")] == ["p20240101000000", "p20240201000000"]
    assert run(db, "SELECT id FROM loaded PARTITION (p20240101000000) ORDER BY id") == ((1,), (3,))
