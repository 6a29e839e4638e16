"""The recycle bin across FEs: a DROP on the leader is in the bin on every node, RECOVER through a
follower is forwarded and restores the object everywhere, and the leader's erase of an expired
entry replicates, through PyMySQL and the mariadb CLI."""

import requests

from tests.harness import QuireProcess, add_and_start, execute, mariadb, wait_until

TABLE = "CREATE TABLE rb.t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"


def dump(node) -> str:
    response = requests.get(
        f"http://127.0.0.1:{node.http_port}/dump", auth=("root", ""), timeout=10
    )
    response.raise_for_status()
    return response.text


def binned(node, name: str) -> list[tuple]:
    return [row[:2] for row in execute(node, f"SHOW CATALOG RECYCLE BIN WHERE NAME = '{name}'")]


def tables(node) -> set[str]:
    return {row[0] for row in execute(node, "SHOW TABLES FROM rb")}


def cli(node, sql: str) -> str:
    done = mariadb(node, "--batch", "--skip-column-names", "-e", sql)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_recycle_bin_replicates_and_recover_is_forwarded(tmp_path):
    leader = QuireProcess(tmp_path / "leader", {"catalog_trash_check_interval_second": 1}).start()
    follower = QuireProcess(tmp_path / "follower", command="fe").join_through(leader)
    observer = QuireProcess(tmp_path / "observer", command="fe").join_through(leader)
    nodes = (leader, follower, observer)
    try:
        add_and_start(leader, follower, "FOLLOWER")
        add_and_start(leader, observer, "OBSERVER")
        execute(leader, "CREATE DATABASE rb", TABLE, "DROP TABLE rb.t")
        for node in nodes:
            wait_until(lambda node=node: binned(node, "t"), 30, "the dropped table in every bin")
            assert binned(node, "t") == [("Table", "t")]
            assert "t" not in tables(node)
        assert cli(follower, "SHOW CATALOG RECYCLE BIN WHERE NAME = 't'").startswith("Table\tt\t")

        assert cli(follower, "RECOVER TABLE rb.t") == ""  # forwarded to the leader
        for node in nodes:
            wait_until(lambda node=node: "t" in tables(node), 30, "the recovered table everywhere")
            assert binned(node, "t") == []

        execute(observer, "DROP TABLE rb.t")  # forwarded too
        for node in nodes:
            wait_until(lambda node=node: binned(node, "t"), 30, "the table in the bin again")
        execute(leader, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '1')")
        for node in nodes:
            wait_until(lambda node=node: not binned(node, "t"), 60, "the erase on every node")
        assert cli(observer, "SHOW CATALOG RECYCLE BIN WHERE NAME = 't'") == ""
        assert "t" not in tables(observer)

        wait_until(
            lambda: dump(follower) == dump(leader) == dump(observer),
            30,
            "the same /dump everywhere",
        )
    finally:
        for node in (observer, follower, leader):
            node.stop()
