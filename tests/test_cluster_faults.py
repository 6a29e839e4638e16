"""FE high availability under faults: an observer cut off from every follower refuses stale reads
and catches up, an observer killed under load changes nothing elsewhere, and concurrent ALTER
SYSTEM statements are serialised on the leader."""

import signal
import threading
import time

import pymysql

from tests.harness import QuireProcess, add_and_start, execute, free_port, wait_until
from tests.test_cluster import joiner, leader_of, tables
from tests.test_failover import dump

TOLERANCE = {"meta_delay_toleration_second": 4}
STALE_MARK = "behind the leader"


def error_of(node, statement: str):
    """The MySQL error (code, message) a statement gets, or None when it succeeds."""
    try:
        execute(node, statement)
    except pymysql.MySQLError as error:
        return error.args[0], str(error.args[1]) if len(error.args) > 1 else ""
    return None


def frontends_by_port(node) -> dict[int, tuple]:
    return {row[2]: row for row in execute(node, "SHOW FRONTENDS")}


def test_an_observer_cut_off_from_every_follower_refuses_stale_reads_then_catches_up(tmp_path):
    leader = QuireProcess(tmp_path / "leader", TOLERANCE).start()
    follower = QuireProcess(tmp_path / "follower", TOLERANCE, command="fe").join_through(leader)
    observer = QuireProcess(tmp_path / "observer", TOLERANCE, command="fe").join_through(leader)
    followers = [leader, follower]
    try:
        execute(
            leader, "CREATE DATABASE cut", "CREATE TABLE cut.before (k INT)", "ADMIN CHECKPOINT"
        )
        add_and_start(leader, follower, "FOLLOWER")
        add_and_start(leader, observer, "OBSERVER")
        for node in (*followers, observer):
            wait_until(lambda node=node: "before" in tables(node, "cut"), 30, "every node serving")

        def all_alive_on_observer():
            rows = frontends_by_port(observer)
            return len(rows) == 3 and all(row[10] == "true" for row in rows.values())

        wait_until(all_alive_on_observer, 30, "every FE alive in the observer's SHOW FRONTENDS")

        for node in followers:
            node.process.send_signal(signal.SIGSTOP)
        try:
            stopped_at = time.monotonic()
            wait_until(
                lambda: error_of(observer, "SHOW DATABASES") is not None,
                20,
                "the observer to refuse SHOW DATABASES",
            )
            # Within the tolerance (4 s) plus one TimePrinter interval (2 s), with some slack.
            assert time.monotonic() - stopped_at < 12
            for statement in (
                "SHOW DATABASES",
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'cut'",
                "SHOW TABLES FROM cut",
                "DESCRIBE cut.before",
                "USE cut",
            ):
                started = time.monotonic()
                code, message = error_of(observer, statement)
                assert time.monotonic() - started < 2, f"{statement} hung instead of failing"
                assert code == 1105, (statement, code, message)
                assert STALE_MARK in message and "meta_delay_toleration_second=4" in message

            # What an operator sees while the observer is cut off (judged after the catch-up
            # below, so that the rest of the test runs whatever SHOW FRONTENDS does).
            def followers_seen_dead():
                try:
                    rows = frontends_by_port(observer)
                except pymysql.MySQLError as error:
                    return ("refused", error.args[0], str(error.args[1]))
                dead = all(rows[node.edit_log_port][10] == "false" for node in followers)
                return ("rows", rows) if dead else None

            try:
                show_frontends_while_cut_off = wait_until(
                    followers_seen_dead, 10, "the stopped followers shown not alive"
                )
            except AssertionError as error:
                show_frontends_while_cut_off = ("timeout", str(error))
        finally:
            for node in followers:
                node.process.send_signal(signal.SIGCONT)

        wait_until(
            lambda: error_of(observer, "SHOW DATABASES") is None,
            30,
            "the observer to serve again after the followers came back",
        )

        def created_after_resume():
            node = leader_of(followers)
            return node is not None and error_of(node, "CREATE TABLE cut.after (k INT)") is None

        wait_until(created_after_resume, 30, "the cluster to accept writes again")
        wait_until(
            lambda: tables(observer, "cut") == {"before", "after"},
            30,
            "the table created after the resume on the observer",
        )
        rows = execute(
            observer,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'cut'",
        )
        assert {row[0] for row in rows} == {"before", "after"}

        kind, *details = show_frontends_while_cut_off
        assert kind == "rows", (
            "SHOW FRONTENDS on the cut-off observer did not show the stopped followers as not "
            f"alive: {show_frontends_while_cut_off}"
        )
        (rows,) = details
        own = rows[observer.edit_log_port]
        assert own[16] == "Yes" and own[10] == "true"
        assert STALE_MARK in own[14], f"the observer's own ErrMsg does not say it is stale: {own}"
    finally:
        for node in followers:
            if node.process and node.process.poll() is None:
                node.process.send_signal(signal.SIGCONT)
        observer.stop()
        follower.stop()
        leader.stop()


class DdlClient(threading.Thread):
    """CREATE TABLE after CREATE TABLE on one node, noting when each was acknowledged and every
    error (it reconnects after a lost connection)."""

    def __init__(self, node, name: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.node, self.prefix, self.halt = node, name, stop
        self.acks: list[tuple[float, str]] = []
        self.errors: list[tuple[float, str]] = []

    def run(self) -> None:
        index = 0
        while not self.halt.is_set():
            try:
                connection = self.node.connect(database="load", connect_timeout=2, read_timeout=20)
            except pymysql.MySQLError as error:
                self.errors.append((time.monotonic(), repr(error)))
                self.halt.wait(0.1)
                continue
            try:
                with connection.cursor() as cursor:
                    while not self.halt.is_set():
                        table = f"{self.prefix}_{index}"
                        index += 1
                        cursor.execute(f"CREATE TABLE {table} (k INT)")
                        self.acks.append((time.monotonic(), table))
            except pymysql.MySQLError as error:
                self.errors.append((time.monotonic(), repr(error)))
                self.halt.wait(0.1)
            finally:
                try:
                    connection.close()
                except Exception:
                    pass

    def largest_gap_around(self, moment: float, before: float = 2.0) -> float:
        """The longest wait between acknowledgements from `before` s ahead of `moment` on."""
        times = [at for at, _ in self.acks]
        earlier = [at for at in times if at < moment - before]
        window = ([earlier[-1]] if earlier else []) + [at for at in times if at >= moment - before]
        return max((b - a for a, b in zip(window, window[1:], strict=False)), default=float("inf"))


def same_dump(a, b) -> bool:
    return dump(a) == dump(b)


def test_an_observer_killed_under_load_changes_nothing_elsewhere(tmp_path):
    leader = QuireProcess(tmp_path / "leader").start()
    joiners = [
        QuireProcess(tmp_path / name, command="fe").join_through(leader)
        for name in ("follower1", "follower2", "observer")
    ]
    *others, observer = joiners
    followers = [leader, *others]
    stop = threading.Event()
    clients: list[DdlClient] = []
    try:
        execute(leader, "CREATE DATABASE load", "ADMIN CHECKPOINT")
        for node, role in zip(joiners, ("FOLLOWER", "FOLLOWER", "OBSERVER"), strict=True):
            add_and_start(leader, node, role)
        for node in joiners:
            wait_until(lambda node=node: ("load",) in execute(node, "SHOW DATABASES"), 30, "join")
        clients = [DdlClient(node, f"f{i}", stop) for i, node in enumerate(followers)]
        on_observer = DdlClient(observer, "obs", stop)
        for client in (*clients, on_observer):
            client.start()
        wait_until(
            lambda: all(len(c.acks) >= 10 for c in (*clients, on_observer)),
            30,
            "DDL to flow on every node",
        )
        killed_at = time.monotonic()
        observer.kill()
        wait_until(
            lambda: all(c.acks and c.acks[-1][0] > killed_at + 4 for c in clients),
            30,
            "DDL to flow on the followers for 4 s after the kill",
        )
        stop.set()
        for client in (*clients, on_observer):
            client.join(timeout=30)
            assert not client.is_alive()

        for client in clients:
            assert not client.errors, f"a client on {client.prefix} got errors: {client.errors}"
            gap = client.largest_gap_around(killed_at)
            assert gap < 3.0, f"the client on {client.prefix} waited {gap:.1f} s for an ack"
        assert on_observer.acks, "nothing was acknowledged on the observer before it died"
        acknowledged = {table for c in (*clients, on_observer) for _, table in c.acks}
        assert leader_of(followers) is leader
        present = tables(leader, "load")
        assert not acknowledged - present, f"acknowledged but lost: {acknowledged - present}"

        observer.extra_args = []
        observer.start()
        wait_until(
            lambda: tables(observer, "load") == present, 30, "the restarted observer to catch up"
        )
        # The same catalog at the same journal id (the dump's first line is the journal id).
        wait_until(lambda: same_dump(observer, leader), 30, "the same /dump as the leader")
        for node in others:
            wait_until(lambda node=node: same_dump(node, leader), 30, "the same /dump everywhere")
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)
        for node in (*joiners, leader):
            node.stop()


def run_together(statements: list[str], node) -> list[tuple[str, object]]:
    """Each statement on its own connection, all released at once; (statement, None or the
    MySQL error (code, message) or the unexpected exception)."""
    barrier = threading.Barrier(len(statements))
    outcomes: dict[int, object] = {}

    def run(index: int, statement: str) -> None:
        connection = node.connect(read_timeout=30)
        try:
            barrier.wait(timeout=30)
            with connection.cursor() as cursor:
                cursor.execute(statement)
            outcomes[index] = None
        except pymysql.MySQLError as error:
            outcomes[index] = (error.args[0], " ".join(map(str, error.args[1:])))
        except Exception as error:  # a traceback, not a MySQL error: the test reports it
            outcomes[index] = error
        finally:
            connection.close()

    threads = [
        threading.Thread(target=run, args=(i, statement)) for i, statement in enumerate(statements)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "an ALTER SYSTEM statement hung"
    return [(statement, outcomes[i]) for i, statement in enumerate(statements)]


def alter_observers_together(leader, verb: str, distinct: list[int], contested: int) -> str:
    """ALTER SYSTEM <verb> OBSERVER for every distinct port and twice for the contested one, all
    at once: every distinct one succeeds, exactly one contested one does. Returns the loser's
    error message."""
    outcomes = run_together(
        [f'ALTER SYSTEM {verb} OBSERVER "127.0.0.1:{port}"' for port in distinct]
        + [f'ALTER SYSTEM {verb} OBSERVER "127.0.0.1:{contested}"'] * 2,
        leader,
    )
    for statement, outcome in outcomes[: len(distinct)]:
        assert outcome is None, f"{statement}: {outcome}"
    contest = [outcome for _, outcome in outcomes[len(distinct) :]]
    assert contest.count(None) == 1, f"{verb} the same address twice: {contest}"
    (refusal,) = [outcome for outcome in contest if outcome is not None]
    assert isinstance(refusal, tuple) and refusal[0] == 1105, refusal
    return refusal[1]


def test_concurrent_alter_system_statements_are_serialised(tmp_path):
    leader = QuireProcess(tmp_path / "leader").start()
    try:
        distinct = [free_port() for _ in range(6)]
        contested = free_port()
        refusal = alter_observers_together(leader, "ADD", distinct, contested)
        # Refused by ALTER SYSTEM's own check, which ran after the winner had committed: not by
        # the journal's apply, as when both checks run before either commit.
        assert f"Frontend 127.0.0.1:{contested} already exists (as OBSERVER)" in refusal

        observers = {*distinct, contested}

        def listed():
            rows = execute(leader, "SHOW FRONTENDS")
            return sorted((row[2], row[6]) for row in rows)

        expected = sorted(
            [(leader.edit_log_port, "FOLLOWER")] + [(port, "OBSERVER") for port in observers]
        )
        assert listed() == expected
        # The journal took every one as an observer (Join), the leader alone votes.
        wait_until(
            lambda: all(row[9] == "true" for row in execute(leader, "SHOW FRONTENDS")),
            10,
            "the journal to know every observer",
        )
        execute(leader, "CREATE DATABASE still_writable", "CREATE TABLE still_writable.t (k INT)")
        assert tables(leader, "still_writable") == {"t"}

        refusal = alter_observers_together(leader, "DROP", distinct, contested)
        assert f"OBSERVER 127.0.0.1:{contested} does not exist" in refusal

        assert listed() == [(leader.edit_log_port, "FOLLOWER")]
        execute(leader, "CREATE TABLE still_writable.after_drops (k INT)")
        assert tables(leader, "still_writable") == {"t", "after_drops"}
    finally:
        leader.stop()


def test_a_follower_paused_past_the_election_timeout_does_not_unseat_the_leader(tmp_path):
    """Without a pre-vote, a follower resuming from SIGSTOP called an election at a higher term
    and the healthy leader stepped down: statements in flight failed."""
    leader = QuireProcess(tmp_path / "leader").start()
    followers = [joiner(tmp_path, leader, f"follower{i}") for i in range(2)]
    try:
        execute(leader, "CREATE DATABASE steady", "ADMIN CHECKPOINT")
        for node in followers:
            add_and_start(leader, node, "FOLLOWER")
        wait_until(
            lambda: all(("steady",) in execute(n, "SHOW DATABASES") for n in followers),
            30,
            "the followers",
        )
        term = dict(execute(leader, "SHOW PROC '/journal'"))["Term"]
        paused = followers[1]
        errors, created = [], []
        # Paused shorter and longer than the leader's connection timeout (4 s): the first time it
        # wakes to the leader's buffered heartbeats, the second time to closed connections.
        for pause in (2, 6):
            paused.process.send_signal(signal.SIGSTOP)
            stopped_at = time.monotonic()
            try:
                while time.monotonic() - stopped_at < pause:
                    created.append(f"t{len(created)}")
                    execute(leader, f"CREATE TABLE steady.{created[-1]} (k INT)")
            finally:
                paused.process.send_signal(signal.SIGCONT)
            resumed_at = time.monotonic()
            while time.monotonic() - resumed_at < 2:  # it reads what it missed, then follows
                created.append(f"t{len(created)}")
                try:
                    execute(leader, f"CREATE TABLE steady.{created[-1]} (k INT)")
                except pymysql.MySQLError as error:
                    errors.append(error)
        assert errors == []
        assert dict(execute(leader, "SHOW PROC '/journal'"))["Term"] == term
        wait_until(lambda: created[-1] in tables(paused, "steady"), 30, "the paused follower")
    finally:
        for node in followers:
            node.stop()
        leader.stop()
