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


def client(node, name: str, acknowledged: list, stop: threading.Event) -> None:
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
                    except pymysql.err.OperationalError as error:
                        if error.args[0] not in (1105,):
                            break  # connection lost: reconnect
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
        for round_ in range(ROUNDS):
            stop = threading.Event()
            workers = [
                threading.Thread(target=client, args=(node, f"r{round_}_n{i}", acknowledged, stop))
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
        dumps = {dump(node) for node in nodes}
        assert len(dumps) == 1, "the nodes' catalogs differ at the same journal id"
    finally:
        for node in nodes:
            node.stop()
