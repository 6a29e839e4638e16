"""Several FE processes: a node joins through a helper (`quire fe --helper`) after ALTER SYSTEM
added it, catches up from the helper's image and the journal, and one that cannot join says why."""

import contextlib
import time

import mysql.connector
import pytest

from tests.harness import QuireProcess, add_and_start, execute, start_fails, wait_until


def tables(node, db):
    return {row[0] for row in execute(node, f"SHOW TABLES FROM {db}")}


def joiner(tmp_path, leader, name="observer"):
    return QuireProcess(tmp_path / name, command="fe").join_through(leader)


def test_observer_joins_through_the_helper_and_follows_the_journal(tmp_path, leader):
    observer = joiner(tmp_path, leader)
    try:
        execute(leader, "CREATE DATABASE d1", "CREATE TABLE d1.before_image (k INT)")
        execute(
            leader,
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
            "ADMIN CHECKPOINT",
        )
        execute(leader, "CREATE TABLE d1.after_image (k INT)")
        observer.start()
        wait_until(
            lambda: tables(observer, "d1") == {"before_image", "after_image"},
            30,
            "the observer to catch up",
        )
        execute(leader, "CREATE TABLE d1.while_joined (k INT)")
        wait_until(
            lambda: "while_joined" in tables(observer, "d1"), 30, "a new table on the observer"
        )
        roles = {row[6] for row in execute(leader, "SHOW FRONTENDS")}
        assert roles == {"FOLLOWER", "OBSERVER"}
        assert (observer.meta_dir / "image" / "VERSION").read_text() == (
            leader.meta_dir / "image" / "VERSION"
        ).read_text()
        # An observer's loss changes nothing for the leader.
        observer.kill()
        execute(leader, "CREATE TABLE d1.after_observer_died (k INT)")
        # Restarted without --helper, it recovers its role and state from its own files.
        observer.extra_args = []
        observer.start()
        wait_until(
            lambda: "after_observer_died" in tables(observer, "d1"),
            30,
            "the restarted observer to catch up",
        )
    finally:
        observer.stop()


def test_a_node_that_was_never_added_cannot_join(tmp_path, leader):
    stranger = joiner(tmp_path, leader, "stranger")
    log = start_fails(stranger)
    assert "was not added to the cluster" in log and "ALTER SYSTEM ADD FOLLOWER" in log


def test_a_node_of_another_cluster_cannot_join(tmp_path, leader):
    other = QuireProcess(tmp_path / "other", command="fe").start()
    other.stop()
    execute(leader, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{other.edit_log_port}"')
    other.join_through(leader)
    log = start_fails(other)
    assert "wrong cluster" in log


def test_role_mismatch_and_unreachable_helper(tmp_path, leader):
    node = joiner(tmp_path, leader, "flipper")
    execute(leader, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{node.edit_log_port}"')
    node.start()
    node.stop()
    execute(
        leader,
        f'ALTER SYSTEM DROP OBSERVER "127.0.0.1:{node.edit_log_port}"',
        f'ALTER SYSTEM ADD FOLLOWER "127.0.0.1:{node.edit_log_port}"',
    )
    assert "role mismatch" in start_fails(node)
    lonely = joiner(tmp_path, leader, "lonely")
    lonely.extra_args = ["--helper", "http://127.0.0.1:9"]
    assert "is unreachable" in start_fails(lonely)


def test_writes_on_an_observer_are_forwarded_with_read_your_write(tmp_path, leader):
    observer = joiner(tmp_path, leader)
    try:
        execute(
            leader,
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
            "ADMIN CHECKPOINT",
        )
        execute(
            leader,
            "CREATE USER bob IDENTIFIED BY 'pw'",
            "CREATE DATABASE shared",
            "GRANT SELECT_PRIV ON shared.* TO bob",
        )
        observer.start()
        wait_until(
            lambda: "bob" in str(execute(observer, "SHOW GRANTS FOR bob")),
            30,
            "bob on the observer",
        )
        connection = observer.connect(database="shared")
        with connection.cursor() as cursor:
            for i in range(20):
                cursor.execute(f"CREATE TABLE fw_{i} (k INT) DISTRIBUTED BY HASH(k) BUCKETS 2")
                cursor.execute("SHOW TABLES")  # the same session reads its own write at once
                assert (f"fw_{i}",) in cursor.fetchall()
            cursor.execute("SET GLOBAL wait_timeout = 1234")
            cursor.execute("SELECT @@global.wait_timeout")
            assert cursor.fetchone() == (1234,)
            # A statement of several MB is forwarded whole (a long comment, JSON-escaped).
            comment = '\u00e9"' * 250_000
            cursor.execute(f"CREATE TABLE long_comment (k INT) COMMENT '{comment}'")
            cursor.execute("SELECT table_comment FROM information_schema.tables "
                           "WHERE table_name = 'long_comment'")  # fmt: skip
            assert cursor.fetchone() == (comment,)
        connection.close()
        assert {f"fw_{i}" for i in range(20)} <= tables(leader, "shared")
        # A prepared write is forwarded too, its typed values written out for the leader.
        prepared = mysql.connector.connect(
            host="127.0.0.1", port=observer.query_port, user="root", password="", use_pure=True
        )
        cursor = prepared.cursor(prepared=True)
        cursor.execute("CREATE USER ?@? IDENTIFIED BY ?", ("carol", "%", "it's"))
        cursor.execute("SET GLOBAL wait_timeout = ?", (4321,))
        prepared.close()
        assert "carol" in str(execute(leader, "SHOW GRANTS FOR carol"))
        assert execute(leader, "SELECT @@global.wait_timeout") == ((4321,),)
        observer.connect("carol", "it's").close()
        # A forwarded statement runs with the original user's privileges, no more.
        bob = observer.connect("bob", "pw", database="shared")
        with bob.cursor() as cursor, pytest.raises(Exception) as excinfo:
            cursor.execute("CREATE TABLE not_yours (k INT)")
        assert excinfo.value.args[0] == 1142
        bob.close()
    finally:
        observer.stop()


def test_an_observer_cut_off_from_the_leader_refuses_stale_reads(tmp_path):
    import signal

    leader = QuireProcess(tmp_path / "leader", {"meta_delay_toleration_second": 4}).start()
    observer = joiner(tmp_path, leader)
    observer.overrides["meta_delay_toleration_second"] = 4
    try:
        execute(
            leader,
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
            "ADMIN CHECKPOINT",
        )
        observer.start()
        wait_until(lambda: execute(observer, "SHOW DATABASES"), 30, "the observer to serve")
        leader.process.send_signal(signal.SIGSTOP)
        try:

            def refused():
                try:
                    execute(observer, "SHOW DATABASES")
                    return False
                except Exception as error:
                    return "behind the leader" in str(error)

            wait_until(refused, 30, "the observer to refuse stale reads")
        finally:
            leader.process.send_signal(signal.SIGCONT)
        wait_until(lambda: not refused(), 30, "the observer to serve again after catching up")
    finally:
        observer.stop()
        leader.stop()


def leader_of(nodes):
    for node in nodes:
        if node.process and node.process.poll() is None:
            try:
                rows = execute(node, "SHOW FRONTENDS")
            except Exception:
                continue
            for row in rows:
                if row[16] == "Yes" and row[7] == "true":  # the node itself says it leads
                    return node
    return None


def test_three_followers_replicate_and_survive_the_leader_dying(tmp_path, leader):
    followers = [joiner(tmp_path, leader, f"follower{i}") for i in range(2)]
    try:
        execute(leader, "CREATE DATABASE ha", "CREATE TABLE ha.t0 (k INT)", "ADMIN CHECKPOINT")
        for node in followers:
            add_and_start(leader, node, "FOLLOWER")
            wait_until(lambda node=node: "t0" in tables(node, "ha"), 30, "a follower to catch up")
        execute(followers[0], "CREATE TABLE ha.t1 (k INT)")  # forwarded, committed by a majority
        for node in (leader, *followers):
            wait_until(lambda node=node: "t1" in tables(node, "ha"), 30, "t1 everywhere")
        leader.kill()
        survivors = followers
        # At once, while the survivors still think the dead node leads: the forward finds the new
        # leader within the failover time instead of failing (Doris #67297).
        execute(survivors[1], "CREATE TABLE ha.t2 (k INT)")
        assert leader_of(survivors)
        for node in survivors:
            wait_until(lambda node=node: "t2" in tables(node, "ha"), 30, "t2 on the survivors")
        leader.start()  # the old leader comes back as a follower and catches up
        wait_until(lambda: "t2" in tables(leader, "ha"), 60, "the old leader to catch up")
    finally:
        for node in followers:
            node.stop()


def test_without_a_majority_reads_work_and_writes_are_refused_quickly(tmp_path, leader):
    import signal
    import time

    followers = [joiner(tmp_path, leader, f"follower{i}") for i in range(2)]
    try:
        execute(leader, "CREATE DATABASE q", "ADMIN CHECKPOINT")
        for node in followers:
            add_and_start(leader, node, "FOLLOWER")
        for node in followers:
            node.process.send_signal(signal.SIGSTOP)
        try:

            def refused():
                started = time.monotonic()
                try:
                    execute(leader, "CREATE TABLE q.nope (k INT)")
                except Exception as error:
                    assert time.monotonic() - started < 5, "the write hung instead of failing fast"
                    return "majority" in str(error)
                return False

            wait_until(refused, 30, "writes to be refused")
            assert ("q",) in execute(leader, "SHOW DATABASES")  # reads still served
        finally:
            for node in followers:
                node.process.send_signal(signal.SIGCONT)
        wait_until(lambda: leader_of([leader, *followers]), 30, "a leader with a majority again")

        def accepted():
            try:
                execute(leader_of([leader, *followers]), "CREATE TABLE IF NOT EXISTS q.yes (k INT)")
                return True
            except Exception:
                return False

        wait_until(accepted, 30, "writes to be accepted again")
        for node in (leader, *followers):
            wait_until(lambda node=node: "yes" in tables(node, "q"), 30, "the write everywhere")
    finally:
        for node in followers:
            node.stop()


def test_show_frontends_is_live_on_every_node_and_quick_while_one_is_down(tmp_path, leader):
    import time

    observer = joiner(tmp_path, leader)
    try:
        execute(
            leader,
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
            "ADMIN CHECKPOINT",
        )
        observer.start()

        def view(node):
            return {row[6]: row for row in execute(node, "SHOW FRONTENDS")}

        def all_alive(node):
            rows = view(node)
            return len(rows) == 2 and all(row[10] == "true" and row[3] > 0 for row in rows.values())

        for node in (leader, observer):
            wait_until(lambda node=node: all_alive(node), 30, "every FE alive in SHOW FRONTENDS")
        assert view(observer)["FOLLOWER"][7] == "true"  # the observer knows who leads
        assert view(leader)["OBSERVER"][11] > 0  # and the leader sees what the observer replayed
        observer.kill()
        wait_until(
            lambda: view(leader)["OBSERVER"][10] == "false",
            30,
            "the dead observer shown as not alive",
        )
        started = time.monotonic()
        execute(leader, "SHOW FRONTENDS")
        assert time.monotonic() - started < 1.0, "SHOW FRONTENDS waited on the dead node"
    finally:
        observer.stop()


def test_an_observer_added_before_any_image_restarts_from_its_own_files(tmp_path, leader):
    observer = joiner(tmp_path, leader)
    try:
        execute(
            leader,
            "CREATE DATABASE early",
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
        )
        observer.start()  # the helper has no image yet: it writes one for the joiner
        wait_until(
            lambda: ("early",) in execute(observer, "SHOW DATABASES"),
            30,
            "the observer to catch up",
        )
        observer.stop()
        observer.extra_args = []
        execute(leader, "CREATE DATABASE later")
        observer.start()
        wait_until(
            lambda: ("later",) in execute(observer, "SHOW DATABASES"),
            30,
            "the restarted observer to catch up",
        )
    finally:
        observer.stop()


@contextlib.contextmanager
def checkpointing_cluster(tmp_path, database: str):
    """A leader and two followers that write an image every 20 entries and keep two: the leader's
    journal soon starts after what a stopped follower has. Yields (leader, followers), with
    `database` created and replicated."""
    fast = {"edit_log_roll_num": 20, "checkpoint_interval_second": 1, "image_keep_count": 2}
    leader = QuireProcess(tmp_path / "leader", fast).start()
    followers = [
        QuireProcess(tmp_path / f"follower{i}", fast, command="fe").join_through(leader)
        for i in range(2)
    ]
    try:
        execute(leader, f"CREATE DATABASE {database}")
        for node in followers:
            add_and_start(leader, node, "FOLLOWER")
        for node in followers:
            wait_until(
                lambda node=node: (database,) in execute(node, "SHOW DATABASES"), 30, "followers"
            )
        yield leader, followers
    finally:
        for node in followers:
            node.stop()
        leader.stop()


def test_a_follower_down_while_the_leader_truncated_its_journal_catches_up_from_an_image(tmp_path):
    with checkpointing_cluster(tmp_path, "lag") as (leader, followers):
        late = followers[1]
        last_seen = int(dict(execute(late, "SHOW PROC '/journal'"))["LastIndex"])
        late.stop()
        created = []

        def truncated_past_the_late_follower():
            created.append(f"t{len(created)}")
            execute(leader, f"CREATE TABLE lag.{created[-1]} (k INT)")
            return journal_first_index(leader) > last_seen + 1

        wait_until(truncated_past_the_late_follower, 60, "the leader to truncate past it", 0.02)
        late.extra_args = []
        late.start()
        wait_until(lambda: created[-1] in tables(late, "lag"), 60, "the late follower to catch up")
        assert tables(late, "lag") == tables(leader, "lag")


def test_a_running_follower_left_behind_the_truncation_catches_up_from_an_image(tmp_path):
    import signal

    with checkpointing_cluster(tmp_path, "behind") as (leader, followers):
        late = followers[1]
        late.process.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        created = []

        def create() -> None:
            created.append(f"t{len(created)}")
            execute(leader, f"CREATE TABLE behind.{created[-1]} (k INT)")

        try:
            # Entries sent before the leader gave up on the connection (connection_timeout, 4 s)
            # may still sit in socket buffers: truncate past those too.
            wait_until(lambda: create() or time.monotonic() - stopped_at > 6, 60, "writes", 0.02)
            sent = int(dict(execute(leader, "SHOW PROC '/journal'"))["LastIndex"])
            wait_until(
                lambda: create() or journal_first_index(leader) > sent + 1,
                60,
                "the leader to truncate past it",
                0.02,
            )
        finally:
            late.process.send_signal(signal.SIGCONT)
        pid = late.process.pid
        wait_until(lambda: created[-1] in tables(late, "behind"), 60, "it to catch up")
        assert late.process.pid == pid and late.process.poll() is None  # no restart
        assert tables(late, "behind") == tables(leader, "behind")
        assert "catching up from the leader's image" in late.log_file.read_text()
        execute(leader, "CREATE TABLE behind.after (k INT)")  # and it follows the journal again
        wait_until(lambda: "after" in tables(late, "behind"), 30, "a new table on it")
        late.kill()  # what it installed is on its disk
        late.extra_args = []
        late.start()
        assert tables(late, "behind") == tables(leader, "behind")


def journal_first_index(node) -> int:
    rows = dict(execute(node, "SHOW PROC '/journal'"))
    return int(rows["FirstIndex"])


def test_a_frontend_dropped_and_added_again_on_the_same_address_rejoins(tmp_path, leader):
    observer = joiner(tmp_path, leader)
    try:
        execute(
            leader,
            "CREATE DATABASE again",
            f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"',
        )
        observer.start()
        observer.stop()
        address = f"127.0.0.1:{observer.edit_log_port}"
        execute(leader, f'ALTER SYSTEM DROP OBSERVER "{address}"', "CREATE DATABASE while_dropped")
        execute(leader, f'ALTER SYSTEM ADD OBSERVER "{address}"')
        observer.start()
        wait_until(
            lambda: ("while_dropped",) in execute(observer, "SHOW DATABASES"),
            30,
            "the re-added observer",
        )

        def alive_in_show_frontends():
            rows = {row[6]: row for row in execute(leader, "SHOW FRONTENDS")}
            return "OBSERVER" in rows and rows["OBSERVER"][10] == "true"

        wait_until(alive_in_show_frontends, 30, "the re-added observer alive in SHOW FRONTENDS")
    finally:
        observer.stop()


def test_strangers_cannot_use_the_journal_port_or_the_fe_to_fe_endpoints(tmp_path, leader):
    import requests

    from metadata.catalog import Catalog
    from metadata.journal.replicated import ReplicatedJournal
    from tests.harness import free_port

    execute(leader, "CREATE DATABASE guarded")
    for path in ("/api/forward", "/api/frontend_ports"):
        url = f"http://127.0.0.1:{leader.http_port}{path}"
        assert requests.post(url, json={}, timeout=5).status_code == 401
        assert (
            requests.post(url, json={}, headers={"X-Quire-Token": "guess"}, timeout=5).status_code
            == 401
        )
        admin = requests.post(url, json={}, auth=("root", ""), timeout=5)
        assert admin.status_code == 401, "FE-to-FE endpoints take the cluster token only"
    token = dict(
        line.split("=", 1)
        for line in (leader.meta_dir / "image" / "VERSION").read_text().splitlines()
        if "=" in line
    )["token"]
    for password, listed in (("not-the-token", False), (token, False)):
        catalog = Catalog()
        intruder = ReplicatedJournal(
            journal_dir=str(tmp_path / f"intruder-{listed}-{len(password)}"),
            self_address=None,
            partners=[f"127.0.0.1:{leader.edit_log_port}"],
            state_machine=catalog,
            applied_index=0,
            password=password,
            observer_address=f"127.0.0.1:{free_port()}",
        )
        intruder.start()
        try:
            # An accepted peer would receive and apply the leader's journal at once.
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                assert catalog.journal_id == 0, "a stranger received journal entries"
                time.sleep(0.1)
        finally:
            intruder.close()


def test_helper_bootstrap_through_a_follower_that_is_not_the_leader(tmp_path, leader):
    follower = joiner(tmp_path, leader, "follower")
    observer = QuireProcess(tmp_path / "observer", command="fe")
    try:
        execute(
            leader,
            "CREATE DATABASE via",
            f'ALTER SYSTEM ADD FOLLOWER "127.0.0.1:{follower.edit_log_port}"',
        )
        follower.start()
        execute(leader, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"')
        wait_until(
            lambda: len(execute(follower, "SHOW FRONTENDS")) == 3,
            30,
            "the follower to learn of the observer",
        )
        observer.join_through(follower)
        observer.start()
        execute(leader, "CREATE TABLE via.t (k INT)")
        wait_until(lambda: "t" in tables(observer, "via"), 30, "the observer to follow")
    finally:
        observer.stop()
        follower.stop()


def test_a_normal_join_warns_of_nothing_and_frontends_are_named_alike(tmp_path, leader):
    observer = joiner(tmp_path, leader)
    started_ms = int(time.time() * 1000)
    try:
        add_and_start(leader, observer, "OBSERVER")
        wait_until(lambda: len(execute(observer, "SHOW FRONTENDS")) == 2, 30, "two frontends")
        log = observer.log_file.read_text()
        assert "the journal starts after the image" in log
        assert not [line for line in log.splitlines() if " WARNING " in line], log
        for node in (leader, observer):
            rows = {row[0]: row for row in execute(node, "SHOW FRONTENDS")}
            for name, row in rows.items():
                host, edit_log_port, stamp = name.rsplit("_", 2)
                assert (host, int(edit_log_port)) == (row[1], row[2])
                assert abs(int(stamp) - started_ms) < 600_000, name  # milliseconds, as Doris's
                assert row[5] == 0  # RpcPort: Quire's FEs have no RPC port yet
        first = {row[2]: row[0] for row in execute(leader, "SHOW FRONTENDS")}
        observer.stop()
        address = f'"127.0.0.1:{observer.edit_log_port}"'
        execute(leader, f"ALTER SYSTEM DROP OBSERVER {address}")
        execute(leader, f"ALTER SYSTEM ADD OBSERVER {address}")
        again = {row[2]: row[0] for row in execute(leader, "SHOW FRONTENDS")}
        assert again[observer.edit_log_port] != first[observer.edit_log_port]
        assert again[observer.edit_log_port].startswith(f"127.0.0.1_{observer.edit_log_port}_")
    finally:
        observer.stop()
