"""Several journal nodes in one process, talking over loopback TCP."""

from __future__ import annotations

import logging
import threading
import time

import pysyncobj.pickle
import pysyncobj.tcp_connection
import pytest

from metadata.journal import raft
from metadata.journal.errors import JournalError, NotLeaderError
from metadata.journal.log import RocksJournal
from metadata.journal.raft import dump_message, load_message, skip_known_entries
from metadata.journal.replicated import ReplicatedJournal
from tests.harness import RecordingStateMachine, agreed_leader, free_address, wait_until


class Cluster:
    def __init__(
        self, tmp_path, voters: int, node_options: list[dict] | None = None, observers: int = 0
    ):
        self.tmp_path = tmp_path
        self.addresses = [free_address() for _ in range(voters)]
        node_options = node_options or [{}] * voters
        self.machines: list[RecordingStateMachine] = []
        self.nodes: list[ReplicatedJournal] = []
        for number, (address, options) in enumerate(zip(self.addresses, node_options, strict=True)):
            self.add_node(f"voter-{number}", address, self.addresses, **options)
        for number in range(observers):
            self.add_node(f"observer-{number}", None, self.addresses)

    def add_node(self, name, address, partners, state_machine=None, applied_index=0, **options):
        state_machine = state_machine or RecordingStateMachine()
        node = ReplicatedJournal(
            journal_dir=str(self.tmp_path / name),
            self_address=address,
            partners=partners,
            state_machine=state_machine,
            applied_index=applied_index,
            **options,
        )
        node.start()
        self.machines.append(state_machine)
        self.nodes.append(node)
        return node

    def leader(self, among=None, timeout=10.0) -> ReplicatedJournal:
        """The node that leads, once every running voter agrees on it."""
        among = among or [n for n in self.nodes if n.self_address is not None]
        return agreed_leader(among, timeout)

    def close(self):
        for node in self.nodes:
            node.close()


@pytest.fixture
def cluster(tmp_path):
    clusters = []

    def make(voters=3, node_options=None, observers=0) -> Cluster:
        clusters.append(Cluster(tmp_path, voters, node_options, observers))
        return clusters[-1]

    yield make
    for made in clusters:
        made.close()


def test_a_restart_that_finds_its_commit_index_behind_applies_everything_before_serving(tmp_path):
    """The commit index is written without an fsync of its own: after a power cut it can be behind
    entries that were acknowledged. wait_caught_up applies them before the node serves."""
    address = free_address()

    def start(machine):
        node = ReplicatedJournal(
            journal_dir=str(tmp_path / "node"),
            self_address=address,
            partners=[],
            state_machine=machine,
            applied_index=0,
        )
        node.start()
        return node

    first = start(RecordingStateMachine())
    assert first.wait_leader(5)
    acknowledged = [first.commit(b"entry %d" % n, timeout=5) for n in range(10)]
    first.close()
    journal = RocksJournal(str(tmp_path / "node"))  # as if the last commit index write was lost
    journal.setRaftCommitIndex(acknowledged[2])
    journal.flush()
    journal.close()

    machine = RecordingStateMachine()
    node = start(machine)
    try:
        assert [index for index, _ in machine.applied] == acknowledged[:3]  # replayed at start
        assert node.wait_leader(5) and node.wait_caught_up(5)
        assert [payload for _, payload in machine.applied] == [b"entry %d" % n for n in range(10)]
    finally:
        node.close()


def test_three_nodes_apply_the_same_entries_under_pipelined_load(cluster, caplog):
    """A late ack moved pysyncobj's nextIndex back; followers deleted applied entries (fact 5)."""
    three = cluster(3)
    leader = three.leader()
    submitters, per_submitter, window = 16, 150, 32
    errors = []

    def submitter(number):
        slots = threading.Semaphore(window)

        def on_done(result, error):
            if error is not None:
                errors.append(error)
            slots.release()

        for n in range(per_submitter):
            slots.acquire()
            leader.submit(b"%d-%d" % (number, n), on_done)
        for _ in range(window):
            assert slots.acquire(timeout=30)

    with caplog.at_level(logging.WARNING):
        threads = [threading.Thread(target=submitter, args=(n,)) for n in range(submitters)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        commit_index = leader.status().commit_index
        wait_until(
            lambda: all(node.status().last_applied >= commit_index for node in three.nodes),
            15,
            "every node to apply the last commit",
        )

    assert errors == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    expected = three.machines[0].applied
    assert len(expected) == submitters * per_submitter
    assert all(machine.applied == expected for machine in three.machines)
    indexes = [raft_index for raft_index, _ in expected]
    assert indexes == sorted(set(indexes))


def test_followers_refuse_submissions_and_name_the_leader(cluster):
    three = cluster(3)
    leader = three.leader()
    follower = next(node for node in three.nodes if node is not leader)
    with pytest.raises(NotLeaderError) as refused:
        follower.commit(b"not here", timeout=5)
    assert refused.value.leader == leader.self_address
    index = leader.commit(b"here", timeout=5)
    wait_until(
        lambda: all(node.status().last_applied >= index for node in three.nodes),
        15,
        "every node to apply the entry",
    )
    assert all(machine.applied == [(index, b"here")] for machine in three.machines)


def test_a_new_leader_is_elected_quickly_after_the_leader_dies(cluster):
    """The first vote after the leader died went over a connection that pysyncobj dropped for being
    idle, and the election took another round or more (fact 6). Election timeouts do not overlap
    here, so the follower with the shortest one must win the first election after the leader."""
    timeouts = [(0.6, 0.8), (1.8, 2.0), (3.0, 3.2)]
    options = [
        dict(raft_min_timeout=low, raft_max_timeout=high, connection_timeout=3.5)
        for low, high in timeouts
    ]
    three = cluster(3, options)
    leader = three.leader()
    leader.commit(b"before", timeout=5)
    time.sleep(4.0)  # longer than connection_timeout: connections between followers go idle

    term = leader.status().term
    leader.close()
    died = time.monotonic()
    survivors = [node for node in three.nodes if node is not leader]
    new_leader = three.leader(among=survivors, timeout=10)
    elapsed = time.monotonic() - died
    assert elapsed < 3.5, f"a new leader took {elapsed:.2f}s"
    assert new_leader.status().term == term + 1, "the first election after the leader died failed"
    new_leader.commit(b"after", timeout=5)


def test_a_slow_state_machine_does_not_cost_the_leader_its_leadership(cluster):
    """Applying is bounded per tick, so the leader's heartbeats keep flowing while it applies a
    long backlog; a long tick (pysyncobj's serializer did that) let the followers elect (fact 8)."""
    three = cluster(3)
    leader = three.leader()
    three.machines[three.nodes.index(leader)].seconds_per_entry = 0.03
    term = leader.status().term
    done = threading.Semaphore(0)
    for n in range(100):  # one append, then three seconds of applying on the leader
        leader.submit(b"%d" % n, lambda result, error: done.release())
    for _ in range(100):
        assert done.acquire(timeout=20)
    assert {node.status().term for node in three.nodes} == {term}
    assert three.leader() is leader


def test_an_observer_follows_without_voting(cluster):
    one = cluster(1, observers=1)
    leader = one.leader()
    observer = one.nodes[1]
    assert observer.wait_leader(5)
    index = leader.commit(b"seen by the observer", timeout=5)
    wait_until(
        lambda: observer.status().last_applied >= index, 15, "the observer to apply the entry"
    )
    assert one.machines[1].applied == [(index, b"seen by the observer")]
    with pytest.raises(NotLeaderError):
        observer.commit(b"observers never write", timeout=5)
    assert not observer.status().is_leader


def test_a_follower_behind_the_leaders_truncation_is_kept_quiet(cluster, caplog):
    """It needs an image; until it has one, heartbeats stop it from starting elections."""
    three = cluster(3)
    leader = three.leader()
    behind = next(node for node in three.nodes if node is not leader)
    number = three.nodes.index(behind)
    behind.close()
    for n in range(20):
        last = leader.commit(b"%d" % n, timeout=5)
    leader.truncate_through(last)
    term = leader.status().term

    with caplog.at_level(logging.WARNING):
        started = []

        def restart() -> bool:  # its port may linger a moment after close() on a loaded machine
            try:
                started.append(
                    three.add_node(f"voter-{number}", behind.self_address, three.addresses)
                )
            except JournalError as error:
                assert "cannot listen" in str(error), error
                return False
            return True

        wait_until(restart, 30, "the behind node to listen on its address again")
        restarted = started[0]
        wait_until(
            lambda: restarted.status().leader == leader.self_address,
            15,
            "the restarted node to follow the leader",
        )
        time.sleep(2.5)  # longer than the election timeout
    assert leader.status().is_leader and restarted.status().term == term
    assert any("it must load an image" in r.getMessage() for r in caplog.records)
    assert restarted.wait_image_needed(0) == last  # the leader's journal starts after `last`

    # The node installs an image of the state through `last`, then follows the journal again.
    machine = three.machines[-1]
    leader_machine = three.machines[three.nodes.index(leader)]
    image = list(leader_machine.applied)

    def load():
        machine.applied[:] = image

    assert restarted.install_image(last, term, load)
    after = leader.commit(b"after the image", timeout=5)
    wait_until(
        lambda: machine.applied and machine.applied[-1] == (after, b"after the image"),
        15,
        "the restarted node to apply the entry after the image",
    )
    wait_until(lambda: leader_machine.applied[-1][0] == after, 15, "the leader to apply the entry")
    assert machine.applied == leader_machine.applied
    assert restarted.wait_image_needed(0) is None
    assert not restarted.install_image(last, term, load)  # it has those entries now


def test_messages_between_nodes_carry_bytes_as_bytes():
    """Fact 11: protocol 2 rebuilt every entry's bytes from a latin-1 string on arrival."""
    message = {"entries": [(b"\x01\xff\x00", 7, 1)]}
    data = dump_message(message)
    assert b"_codecs" not in data and b"latin" not in data
    assert load_message(data) == message


def test_every_journal_connection_serialises_its_own_messages(cluster):
    """Fact 11 without a process-wide swap: pysyncobj's own pickling stays as it is, and every
    connection a journal opens or accepts (an observer's included) is Quire's."""
    two = cluster(2, observers=1)
    leader = two.leader()
    index = leader.commit(b"over Quire's connections", timeout=5)
    wait_until(
        lambda: all(node.status().last_applied >= index for node in two.nodes),
        15.0,
        "every node to apply the entry",
    )

    assert pysyncobj.tcp_connection.pickle is pysyncobj.pickle
    assert b"_codecs" in pysyncobj.tcp_connection.pickle.dumps(b"\xff")  # protocol 2, untouched
    for node in two.nodes:
        transport = node._node.transport
        connections = [*transport._connections.values(), *transport._unknownConnections]
        assert connections and all(type(c) is raft._Connection for c in connections)


# The follower's side of fact 5, entry by entry.


@pytest.fixture
def follower_log(tmp_path):
    journal = RocksJournal(str(tmp_path / "follower"))
    for raft_index in range(1, 11):
        journal.add(b"\x00entry-%d" % raft_index, raft_index, 1 if raft_index <= 5 else 2)
    yield journal
    journal.close()


def append_entries(prev_index, prev_term, entries, term=2):
    return {
        "type": "append_entries",
        "term": term,
        "commit_index": 0,
        "prevLogIdx": prev_index,
        "prevLogTerm": prev_term,
        "entries": entries,
    }


def test_a_repeated_message_keeps_the_entries_the_follower_holds(follower_log):
    stale = append_entries(3, 1, [(b"\x00entry-4", 4, 1), (b"\x00entry-5", 5, 1)])
    seen = skip_known_entries(stale, follower_log, commit_index=8)
    # The follower's last entry has the leader's term: its whole log is the leader's.
    assert (seen["prevLogIdx"], seen["entries"]) == (10, [])


def test_an_old_term_tail_is_kept_up_to_the_commit_index(follower_log):
    stale = append_entries(2, 1, [], term=3)
    seen = skip_known_entries(stale, follower_log, commit_index=7)
    assert (seen["prevLogIdx"], seen["prevLogTerm"], seen["entries"]) == (7, 2, [])


def test_new_entries_after_matching_ones_are_appended(follower_log):
    message = append_entries(
        8, 2, [(b"\x00entry-9", 9, 2), (b"\x00entry-10", 10, 2), (b"\x00new", 11, 2)]
    )
    seen = skip_known_entries(message, follower_log, commit_index=5)
    assert (seen["prevLogIdx"], seen["entries"]) == (10, [(b"\x00new", 11, 2)])


def test_a_conflicting_uncommitted_entry_is_left_for_pysyncobj_to_replace(follower_log):
    message = append_entries(7, 2, [(b"\x00entry-8", 8, 2), (b"\x00other", 9, 3)], term=3)
    seen = skip_known_entries(message, follower_log, commit_index=7)
    assert (seen["prevLogIdx"], seen["entries"]) == (8, [(b"\x00other", 9, 3)])


def test_a_message_that_would_replace_committed_entries_is_dropped(follower_log):
    message = append_entries(5, 1, [(b"\x00other", 6, 3)], term=3)
    assert skip_known_entries(message, follower_log, commit_index=8) is None


def test_a_message_with_an_unknown_previous_entry_is_left_to_pysyncobj(follower_log):
    message = append_entries(12, 2, [(b"\x00x", 13, 2)])
    assert skip_known_entries(message, follower_log, commit_index=8) is message


def test_an_encrypted_cluster_replicates_and_shuts_out_a_wrong_password(cluster):
    pytest.importorskip("cryptography")
    three = cluster(3, [dict(password="secret"), dict(password="secret"), dict(password="wrong")])
    leader = three.leader(among=three.nodes[:2])
    index = leader.commit(b"encrypted", timeout=5)
    wait_until(
        lambda: all(node.status().last_applied >= index for node in three.nodes[:2]),
        15,
        "both voters to apply the entry",
    )
    assert three.machines[0].applied == three.machines[1].applied == [(index, b"encrypted")]
    time.sleep(0.5)
    assert three.machines[2].applied == []
    assert three.nodes[2].status().leader is None
