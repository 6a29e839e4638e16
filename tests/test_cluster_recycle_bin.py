"""The recycle bin across FEs: a DROP on the leader is in the bin on every node, RECOVER through a
follower is forwarded and restores the object everywhere, and the leader's erase of an expired
entry replicates, through PyMySQL and the mariadb CLI. ADMIN SET ALL FRONTENDS CONFIG sets every FE's
value (whichever leads erases), and only FEs of the cluster may ask another FE to."""

import requests

from tests.harness import QuireProcess, add_and_start, cluster_token, execute, mariadb, wait_until

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


def expiry(node) -> str:
    return execute(node, "ADMIN SHOW FRONTEND CONFIG LIKE 'catalog_trash_expire_second'")[0][1]


def test_the_recycle_bin_replicates_and_recover_is_forwarded(tmp_path):
    every_second = {"catalog_trash_check_interval_second": 1}  # any of them may come to lead
    leader = QuireProcess(tmp_path / "leader", every_second).start()
    follower = QuireProcess(tmp_path / "follower", every_second, command="fe").join_through(leader)
    observer = QuireProcess(tmp_path / "observer", every_second, command="fe").join_through(leader)
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
        assert (
            cli(follower, "ADMIN SET ALL FRONTENDS CONFIG ('catalog_trash_expire_second' = '1')")
            == ""
        )
        for node in nodes:
            assert expiry(node) == "1"
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


def test_set_all_frontends_config_reaches_every_fe_and_refuses_strangers(tmp_path):
    leader = QuireProcess(tmp_path / "leader").start()
    follower = QuireProcess(tmp_path / "follower", command="fe").join_through(leader)
    try:
        add_and_start(leader, follower, "FOLLOWER")
        execute(follower, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '7')")
        assert (expiry(leader), expiry(follower)) == ("86400", "7")  # this FE only
        execute(follower, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '8') ALL")
        assert (expiry(leader), expiry(follower)) == ("8", "8")

        done = mariadb(leader, "-e", "ADMIN SET ALL FRONTENDS CONFIG ('no_such_key' = '1')")
        assert done.returncode == 1 and "ERROR 1105 (HY000)" in done.stderr, done.stderr
        assert "unknown configuration key" in done.stderr
        execute(leader, "CREATE USER plain IDENTIFIED BY 'pw'")
        plain = mariadb(
            leader,
            "-uplain",
            "-ppw",
            "-e",
            "ADMIN SET ALL FRONTENDS CONFIG ('catalog_trash_expire_second' = '1')",
        )
        assert plain.returncode == 1 and "ERROR 1227 (42000)" in plain.stderr, plain.stderr

        url = f"http://127.0.0.1:{follower.http_port}/api/set_config"
        body = {"version": 1, "settings": {"catalog_trash_expire_second": "1"}}
        assert requests.post(url, json=body, timeout=10).status_code == 401
        stranger = {"X-Quire-Token": "not-the-token"}
        assert requests.post(url, json=body, headers=stranger, timeout=10).status_code == 401
        token = {"X-Quire-Token": cluster_token(leader)}
        bad = {"version": 1, "settings": {"catalog_trash_expire_second": "soon"}}
        answer = requests.post(url, json=bad, headers=token, timeout=10).json()
        assert answer["code"] == 1105
        assert (expiry(leader), expiry(follower)) == ("8", "8")
    finally:
        follower.stop()
        leader.stop()
