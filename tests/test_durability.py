"""Faults against a real `quire up`: kill -9 under concurrent DDL, checkpoints with journal
truncation, corrupt images, a damaged journal tail. Nothing acknowledged may be lost and nothing
unacknowledged may be half-applied."""

import threading
import time

import pymysql

from tests.harness import QuireProcess, wait_until

CLIENTS = 6


def create_tables_until_killed(
    node: QuireProcess, client: int, acknowledged: list, attempted: list, stop: threading.Event
):
    connection = node.connect(database="durable")
    index = 0
    try:
        with connection.cursor() as cursor:
            while not stop.is_set():
                name = f"t_{client}_{index}"
                attempted.append(name)
                cursor.execute(
                    f"CREATE TABLE {name} (k INT, v VARCHAR(20), c{index % 7} BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
                )
                acknowledged.append(name)
                index += 1
    except pymysql.MySQLError:
        pass  # the server was killed under us
    finally:
        try:
            connection.close()
        except Exception:
            pass


def run_ddl_and_kill(node: QuireProcess, seconds: float) -> tuple[list, list]:
    acknowledged: list = []
    attempted: list = []
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=create_tables_until_killed, args=(node, i, acknowledged, attempted, stop)
        )
        for i in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(acknowledged) >= 50, 60, "some acknowledged DDL")
    time.sleep(seconds)  # let the DDL stream run for a while before the kill
    node.kill()
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    return acknowledged, attempted


def check_catalog(node: QuireProcess, acknowledged: list, attempted: list) -> None:
    connection = node.connect(database="durable")
    with connection.cursor() as cursor:
        cursor.execute("SHOW TABLES")
        present = {row[0] for row in cursor.fetchall()}
        missing = set(acknowledged) - present
        assert not missing, f"acknowledged tables lost: {sorted(missing)[:10]}"
        assert present <= set(attempted), "tables that were never created appeared"
        for name in present:
            cursor.execute(f"DESC {name}")
            columns = [row[0] for row in cursor.fetchall()]
            index = int(name.rsplit("_", 1)[1])
            assert columns == ["k", "v", f"c{index % 7}"], f"{name} is half-applied: {columns}"
            cursor.execute(f"SHOW TABLETS FROM {name}")
            assert len(cursor.fetchall()) == 3
    connection.close()


def journal_facts(node: QuireProcess) -> dict:
    connection = node.connect()
    with connection.cursor() as cursor:
        cursor.execute("SHOW PROC '/journal'")
        facts = {name: int(value) for name, value in cursor.fetchall() if value.isdigit()}
    connection.close()
    return facts


def test_kill_9_under_concurrent_ddl_loses_nothing_acknowledged(fresh_quire):
    node = fresh_quire.start()
    node.connect().cursor().execute("CREATE DATABASE durable")
    acknowledged, attempted = run_ddl_and_kill(node, seconds=1.0)
    node.start()
    check_catalog(node, acknowledged, attempted)
    # The node keeps working after recovery, and journal ids stay continuous across the restart.
    before = journal_facts(node)["JournalId"]
    node.connect().cursor().execute("CREATE TABLE durable.after_restart (k INT)")
    assert journal_facts(node)["JournalId"] == before + 1


def test_kill_9_after_checkpoints_and_journal_truncation(tmp_path):
    node = QuireProcess(
        tmp_path / "node", {"edit_log_roll_num": 100, "checkpoint_interval_second": 1}
    )
    try:
        node.start()
        node.connect().cursor().execute("CREATE DATABASE durable")
        acknowledged, attempted = run_ddl_and_kill(node, seconds=4.0)
        images = sorted((node.meta_dir / "image").glob("image.[0-9]*"))
        assert images, "no checkpoint was written"
        node.start()
        check_catalog(node, acknowledged, attempted)
        assert journal_facts(node)["FirstIndex"] > 1, (
            "the journal was never truncated after an image"
        )
    finally:
        node.stop()


def make_tables(node: QuireProcess, names: list[str]) -> None:
    connection = node.connect()
    with connection.cursor() as cursor:
        cursor.execute("CREATE DATABASE IF NOT EXISTS durable")
        for name in names:
            cursor.execute(f"CREATE TABLE durable.{name} (k INT) DISTRIBUTED BY HASH(k) BUCKETS 2")
    connection.close()


def checkpoint(node: QuireProcess) -> None:
    connection = node.connect()
    connection.cursor().execute("ADMIN CHECKPOINT")
    connection.close()


def test_corrupt_newest_image_falls_back_to_an_older_one(fresh_quire):
    node = fresh_quire.start()
    make_tables(node, ["a1", "a2"])
    checkpoint(node)
    make_tables(node, ["b1", "b2"])
    checkpoint(node)
    make_tables(node, ["c1"])
    node.stop()
    newest = max(
        (node.meta_dir / "image").glob("image.[0-9]*"), key=lambda p: int(p.name.split(".")[1])
    )
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    node.start()
    connection = node.connect(database="durable")
    with connection.cursor() as cursor:
        cursor.execute("SHOW TABLES")
        assert {row[0] for row in cursor.fetchall()} == {"a1", "a2", "b1", "b2", "c1"}
    connection.close()
    log = node.log_file.read_text()
    assert newest.name in log and "is unusable" in log and "falling back" in log


def test_every_image_corrupt_refuses_to_start_with_a_clear_message(fresh_quire):
    node = fresh_quire.start()
    make_tables(node, ["a1"])
    checkpoint(node)
    node.stop()
    for image in (node.meta_dir / "image").glob("image.[0-9]*"):
        image.write_bytes(image.read_bytes()[:100])
    node.start(wait=False)
    assert node.process.wait(timeout=60) != 0
    log = node.log_file.read_text()
    assert "cannot start" in log and "image" in log


def test_damaged_journal_tail_is_handled(fresh_quire):
    node = fresh_quire.start()
    node.connect().cursor().execute("CREATE DATABASE durable")
    acknowledged, attempted = run_ddl_and_kill(node, seconds=0.5)
    wal_files = sorted((node.meta_dir / "journal").glob("*.log"), key=lambda p: p.stat().st_mtime)
    assert wal_files, "RocksDB keeps no write-ahead log"
    tail = wal_files[-1]
    size = tail.stat().st_size
    with open(tail, "r+b") as file:
        file.truncate(max(size - 37, 0))
    node.start()
    connection = node.connect(database="durable")
    with connection.cursor() as cursor:
        cursor.execute("SHOW TABLES")
        present = {row[0] for row in cursor.fetchall()}
    connection.close()
    assert present <= set(attempted)
    # What survives is a prefix of the acknowledged history per client: no holes.
    for client in range(CLIENTS):
        mine = [name for name in acknowledged if name.startswith(f"t_{client}_")]
        kept = [name in present for name in mine]
        assert kept == sorted(kept, reverse=True), f"client {client} lost a table in the middle"
    check_catalog(node, [name for name in acknowledged if name in present], attempted)
