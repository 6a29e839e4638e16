"""Table data survives restarts and kill -9: every commit acknowledged to a client is readable after
the restart, and nothing that was not attempted appears; the TN's log is the source of truth."""

import signal
import threading
import time

import pymysql

from tests.harness import QuireProcess, run, start_fails, wait_until

WRITERS = 4


def create(node):
    connection = node.connect()
    try:
        run(connection, "CREATE DATABASE d")
        run(
            connection,
            "CREATE TABLE d.t (id INT, writer INT, note VARCHAR(20)) UNIQUE KEY(id) "
            "DISTRIBUTED BY HASH(id) BUCKETS 4",
        )
    finally:
        connection.close()


def test_rows_survive_a_clean_restart(fresh_quire):
    node = fresh_quire.start()
    create(node)
    connection = node.connect()
    run(connection, "INSERT INTO d.t VALUES (1, 0, 'one'), (2, 0, 'two')")
    run(connection, "UPDATE d.t SET note = 'TWO' WHERE id = 2")
    run(connection, "DELETE FROM d.t WHERE id = 1")
    connection.close()
    node.restart()
    connection = node.connect()
    try:
        assert run(connection, "SELECT id, note FROM d.t") == ((2, "TWO"),)
        run(connection, "INSERT INTO d.t VALUES (3, 0, 'three')")
        assert run(connection, "SELECT id FROM d.t ORDER BY id") == ((2,), (3,))
    finally:
        connection.close()


def test_kill_9_during_writes_loses_nothing_acknowledged(fresh_quire):
    writes_stopped_by(fresh_quire, lambda node: node.kill(signal.SIGKILL))


def test_a_clean_stop_during_writes_is_prompt_and_loses_nothing_acknowledged(fresh_quire):
    """Commits under way on the front's own thread (callers' turn) do not hold up a stop."""

    def stop(node):
        started = time.monotonic()
        assert node.stop() == 0
        assert time.monotonic() - started < 15

    writes_stopped_by(fresh_quire, stop)


def writes_stopped_by(fresh_quire, stop_node) -> None:
    """WRITERS clients insert three rows a statement until stop_node(node); after a start, every
    acknowledged row is there, nothing else, and statements commit again."""
    node = fresh_quire.start()
    create(node)
    acknowledged: set[int] = set()
    attempted: set[int] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def write(writer: int):
        connection = node.connect()
        try:
            for number in range(writer, 10**9, WRITERS):
                if stop.is_set():
                    return
                rows = [number * 3 + offset for offset in range(3)]
                with lock:
                    attempted.update(rows)
                values = ", ".join(f"({row}, {writer}, 'w{writer}')" for row in rows)
                run(connection, f"INSERT INTO d.t VALUES {values}")
                with lock:
                    acknowledged.update(rows)
        except pymysql.MySQLError:
            return  # the server went away mid-statement: that statement's outcome is unknown

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(acknowledged) >= 600, 60, "writers to get commits acknowledged")
    stop_node(node)
    stop.set()
    for thread in threads:
        thread.join(30)
    node.start()
    connection = node.connect()
    try:
        found = {row[0] for row in run(connection, "SELECT id FROM d.t")}
        missing = acknowledged - found
        assert not missing, f"{len(missing)} acknowledged rows lost, e.g. {sorted(missing)[:5]}"
        assert found <= attempted, sorted(found - attempted)[:5]
        # each statement wrote three rows: all of them or none
        groups = {}
        for row in found:
            groups.setdefault(row // 3, set()).add(row)
        assert all(len(rows) == 3 for rows in groups.values())
        started = time.monotonic()
        run(connection, "INSERT INTO d.t VALUES (-1, 9, 'after')")
        assert run(connection, "SELECT note FROM d.t WHERE id = -1") == (("after",),)
        assert time.monotonic() - started < 30
    finally:
        connection.close()


def test_a_second_node_on_the_same_storage_root_is_refused_in_one_line(fresh_quire, tmp_path):
    node = fresh_quire.start()
    second = QuireProcess(
        tmp_path / "second", overrides={"storage_root": node.overrides["storage_root"]}
    )
    log = start_fails(second)
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "storage_root" in errors[0] and "in use by" in errors[0], log
    assert "Traceback" not in log
    assert not (tmp_path / "second" / "meta").exists()  # refused before anything was made
    connection = node.connect()  # the first node is untouched
    try:
        assert run(connection, "SELECT 1") == ((1,),)
    finally:
        connection.close()
