"""3 followers + 1 observer under concurrent DDL from clients on every node while the leader is
killed with kill -9, several rounds: afterwards every acknowledged statement is on every node, every
node has the same journal id and the same catalog."""

import threading

import pymysql
import requests

from tests.harness import QuireProcess, add_and_start, execute, wait_until
from tests.test_cluster import leader_of, tables

ROUNDS = 3


def dump(node) -> str:
    response = requests.get(
        f"http://127.0.0.1:{node.http_port}/dump", auth=("root", ""), timeout=10
    )
    response.raise_for_status()
    return response.text


def client(
    node, name: str, acknowledged: list, stop: threading.Event, failed: list | None = None
) -> None:
    """CREATE TABLEs of names of its own until stopped: acknowledged gets those that succeeded,
    failed (code, message, table) for those that did not."""
    index = 0
    while not stop.is_set():
        try:
            connection = node.connect(database="fo", connect_timeout=2, read_timeout=40)
        except pymysql.MySQLError:
            stop.wait(0.05)
            continue
        try:
            with connection.cursor() as cursor:
                while not stop.is_set():
                    table = f"{name}_{index}"
                    index += 1
                    try:
                        cursor.execute(f"CREATE TABLE {table} (k INT)")
                        acknowledged.append(table)
                    except pymysql.err.MySQLError as error:
                        code = error.args[0] if error.args else 0
                        if code < 2000 and failed is not None:
                            failed.append((code, str(error.args[-1]), table))
                        if code != 1105:
                            break  # connection lost (or an unexpected answer): reconnect
        except pymysql.MySQLError:
            pass
        finally:
            try:
                connection.close()
            except Exception:
                pass


def test_leader_killed_under_concurrent_ddl_loses_nothing_acknowledged(tmp_path):
    first = QuireProcess(tmp_path / "fe1", command="fe").start()
    others = [
        QuireProcess(tmp_path / f"fe{i}", command="fe").join_through(first) for i in (2, 3, 4)
    ]
    nodes = [first, *others]
    try:
        execute(first, "CREATE DATABASE fo", "ADMIN CHECKPOINT")
        for node, role in zip(others, ("FOLLOWER", "FOLLOWER", "OBSERVER"), strict=True):
            add_and_start(first, node, role)
        for node in others:
            node.extra_args = []
        acknowledged: list = []
        failed: list = []
        for round_ in range(ROUNDS):
            stop = threading.Event()
            workers = [
                threading.Thread(
                    target=client,
                    args=(node, f"r{round_}_n{i}", acknowledged, stop, failed),
                )
                for i, node in enumerate(nodes)
            ]
            for worker in workers:
                worker.start()
            count = len(acknowledged)
            wait_until(lambda count=count: len(acknowledged) >= count + 20, 60, "DDL to flow")
            leader = wait_until(lambda: leader_of(nodes[:3]), 30, "a leader")
            leader.kill()
            count = len(acknowledged)
            wait_until(
                lambda count=count: len(acknowledged) >= count + 20,
                60,
                "DDL to flow after the kill",
            )
            leader.start()
            stop.set()
            for worker in workers:
                worker.join(timeout=60)
        wait_until(lambda: leader_of(nodes[:3]), 30, "a leader at the end")
        execute(leader_of(nodes[:3]), "CREATE TABLE fo.last_one (k INT)")

        def converged():
            ids = [dict(execute(node, "SHOW PROC '/journal'"))["JournalId"] for node in nodes]
            return len(set(ids)) == 1 and all("last_one" in tables(node, "fo") for node in nodes)

        wait_until(converged, 60, "every node at the same journal id")
        present = tables(first, "fo")
        assert not set(acknowledged) - present, "acknowledged tables lost"
        # A forwarded statement retried after the leader died takes effect once: no client is told
        # that its own new table exists, and one told the leader was not reached made nothing.
        assert [f for f in failed if f[0] != 1105] == [], "a statement was applied twice"
        unreached = {table for _, message, table in failed if "Could not reach" in message}
        assert not unreached & present, "a statement said not to have reached the leader did"
        dumps = {dump(node) for node in nodes}
        assert len(dumps) == 1, "the nodes' catalogs differ at the same journal id"
    finally:
        for node in nodes:
            node.stop()
