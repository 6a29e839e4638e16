"""Connection ids are unique across the cluster (the high bits name the FE), so KILL of an id works
on any FE: it is sent to the FE that owns the connection. SHOW PROCESSLIST lists the FE's own
connections, as Doris's does. Through PyMySQL and the mariadb CLI."""

import pymysql
import requests

from tests.harness import QuireProcess, add_and_start, error_of, mariadb, run, wait_until


def connection_id(connection) -> int:
    return run(connection, "SELECT CONNECTION_ID()")[0][0]


def is_closed(connection) -> bool:
    try:
        run(connection, "SELECT 1")
    except pymysql.err.OperationalError:
        return True
    return False


def test_kill_on_any_fe_reaches_the_connection_where_it_lives(tmp_path):
    leader = QuireProcess(tmp_path / "leader").start()
    follower = QuireProcess(tmp_path / "follower", command="fe").join_through(leader)
    try:
        add_and_start(leader, follower, "FOLLOWER")
        run_as = leader.connect()
        run(run_as, "CREATE USER alice IDENTIFIED BY 'pw'")
        on_leader = [leader.connect() for _ in range(3)]
        on_follower = [follower.connect() for _ in range(3)]
        leader_ids = {connection_id(c) for c in on_leader}
        follower_ids = {connection_id(c) for c in on_follower}
        assert not leader_ids & follower_ids
        assert all(i >> 24 == 0 for i in leader_ids)
        assert all(i >> 24 == 1 for i in follower_ids)

        listed = {row[0] for row in run(run_as, "SHOW PROCESSLIST")}
        assert leader_ids <= listed and not follower_ids & listed

        victim = on_follower[0]
        run(run_as, f"KILL {connection_id(victim)}")
        wait_until(lambda: is_closed(victim), 30, "the follower's connection to be killed")

        cli_victim = on_follower[1]
        done = mariadb(leader, "--batch", "-e", f"KILL {connection_id(cli_victim)}")
        assert done.returncode == 0, done.stderr
        wait_until(lambda: is_closed(cli_victim), 30, "the CLI's KILL to reach the follower")

        on_leader_victim = on_leader[0]
        run(follower.connect(), f"KILL {connection_id(on_leader_victim)}")
        wait_until(lambda: is_closed(on_leader_victim), 30, "the leader's connection killed")

        unknown = (1 << 24) + 999_999
        assert error_of(run_as, f"KILL {unknown}") == (1094, f"Unknown thread id: {unknown}")
        done = mariadb(leader, "--batch", "-e", f"KILL {unknown}")
        assert f"ERROR 1094 (HY000) at line 1: Unknown thread id: {unknown}" in done.stderr

        alice = leader.connect("alice", "pw")
        survivor = connection_id(on_follower[2])
        assert error_of(alice, f"KILL {survivor}") == (
            1095,
            f"You are not owner of thread {survivor}",
        )
        assert not is_closed(on_follower[2])

        refused = requests.post(
            f"http://127.0.0.1:{follower.http_port}/api/kill",
            json={"connection_id": survivor, "query_only": False, "user": "root", "is_admin": True},
            auth=("root", ""),
            timeout=10,
        )
        assert refused.status_code == 401  # only FEs of the cluster, with its token
        assert not is_closed(on_follower[2])
    finally:
        follower.stop()
        leader.stop()
