"""Runtime membership of the replicated journal: voters and observers named by set_members."""

from __future__ import annotations

import logging

import pytest

from metadata.journal.errors import JournalError
from metadata.journal.replicated import ReplicatedJournal
from tests.harness import RecordingStateMachine, agreed_leader, free_address, wait_until


class Nodes:
    """Journal nodes in this process, each named by its directory; all closed at the end."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.running: dict[str, ReplicatedJournal] = {}
        self.machines: dict[str, RecordingStateMachine] = {}
        self.started: list[ReplicatedJournal] = []

    def start(self, name, address, partners, followers=None, observers=(), **options):
        machine = RecordingStateMachine()
        node = ReplicatedJournal(
            journal_dir=str(self.tmp_path / name),
            self_address=address,
            partners=partners,
            state_machine=machine,
            applied_index=0,
            **options,
        )
        if followers is not None:  # what the node's catalog says once it is loaded
            node.set_members(followers, observers)
        node.start()
        self.running[name], self.machines[name] = node, machine
        self.started.append(node)
        return node

    def stop(self, name):
        self.running.pop(name).close()

    def leader(self, timeout=10.0) -> ReplicatedJournal:
        voters = [node for node in self.running.values() if node.self_address is not None]
        return agreed_leader(voters, timeout)

    def set_members(self, followers, observers=()):
        for node in self.running.values():
            node.set_members(followers, observers)

    def wait_applied(self, index, names=None):
        names = names or list(self.running)
        wait_until(
            lambda: all(self.running[n].status().last_applied >= index for n in names),
            10,
            "the named nodes to apply the entry",
        )

    def payloads(self, name):
        return [payload for _index, payload in self.machines[name].applied]

    def close(self):
        for node in self.started:
            node.close()


@pytest.fixture
def nodes(tmp_path):
    made = Nodes(tmp_path)
    yield made
    made.close()


def grow_to_three(nodes) -> list[str]:
    """Start one voter, then add a second and a third one at a time, committing at each stage."""
    a, b, c = (free_address() for _ in range(3))
    nodes.start("a", a, [])
    assert nodes.leader().commit(b"one voter", timeout=5) > 0

    nodes.set_members([a, b])
    nodes.start("b", b, [a], followers=[a, b])
    index = nodes.leader().commit(b"two voters", timeout=10)
    nodes.wait_applied(index)

    nodes.set_members([a, b, c])
    nodes.start("c", c, [a, b], followers=[a, b, c])
    index = nodes.leader().commit(b"three voters", timeout=10)
    nodes.wait_applied(index)
    return [a, b, c]


def test_voters_join_one_at_a_time_and_every_node_holds_every_entry(nodes):
    addresses = grow_to_three(nodes)
    expected = [b"one voter", b"two voters", b"three voters"]
    assert all(nodes.payloads(name) == expected for name in "abc")
    assert all(nodes.machines[name].applied == nodes.machines["a"].applied for name in "bc")
    assert all(node.status().voters == tuple(sorted(addresses)) for node in nodes.running.values())


def test_a_grown_cluster_elects_a_new_leader_and_the_old_one_catches_up(nodes):
    addresses = grow_to_three(nodes)
    old_leader = nodes.leader()
    old_name = next(name for name, node in nodes.running.items() if node is old_leader)
    old_address = old_leader.self_address
    term = old_leader.status().term
    nodes.stop(old_name)

    new_leader = nodes.leader(timeout=10)
    assert new_leader.status().term > term
    index = new_leader.commit(b"after failover", timeout=10)
    nodes.wait_applied(index)

    partners = [address for address in addresses if address != old_address]
    nodes.start(old_name, old_address, partners, followers=addresses)
    nodes.wait_applied(index)
    expected = [b"one voter", b"two voters", b"three voters", b"after failover"]
    assert all(nodes.payloads(name) == expected for name in "abc")


def test_a_dropped_follower_gets_nothing_more_and_its_vote_stops_counting(nodes):
    addresses = [free_address() for _ in range(3)]
    for name, address in zip("abc", addresses, strict=True):
        nodes.start(name, address, addresses)
    leader = nodes.leader()
    names = {node.self_address: name for name, node in nodes.running.items()}
    kept, dropped = [a for a in addresses if a != leader.self_address]
    index = leader.commit(b"three voters", timeout=5)
    nodes.wait_applied(index)

    remaining = [leader.self_address, kept]
    nodes.set_members(remaining)
    survivors = [leader, nodes.running[names[kept]]]
    wait_until(
        lambda: all(node.status().voters == tuple(sorted(remaining)) for node in survivors),
        10,
        "the survivors to see the new voters",
    )
    nodes.stop(names[dropped])
    index = leader.commit(b"two voters", timeout=5)
    nodes.wait_applied(index)
    assert nodes.payloads(names[kept]) == [b"three voters", b"two voters"]

    # The dropped voter runs again but is not sent anything, nor counted: without the other
    # follower the leader has no majority of two.
    nodes.start(names[dropped] + "-again", dropped, addresses)
    nodes.stop(names[kept])
    with pytest.raises(JournalError):
        leader.commit(b"no majority", timeout=2)
    assert nodes.payloads(names[dropped] + "-again") == []


def test_the_leader_refuses_to_drop_itself(nodes):
    a, b = free_address(), free_address()
    leader = nodes.start("a", a, [])
    assert leader.wait_leader(5)
    with pytest.raises(JournalError, match="cannot drop itself"):
        leader.set_members([b], [])
    assert leader.commit(b"still leading", timeout=5) > 0
    assert leader.status().voters == (a,)


def test_an_observer_applies_every_entry_but_never_makes_a_majority(nodes):
    a, b, watcher = free_address(), free_address(), free_address()
    for name, address in (("a", a), ("b", b)):
        nodes.start(name, address, [a, b], followers=[a, b], observers=[watcher])
    nodes.start("observer", None, [a, b], observer_address=watcher)
    leader = nodes.leader()
    for n in range(5):
        index = leader.commit(b"entry %d" % n, timeout=5)
    nodes.wait_applied(index)
    assert nodes.payloads("observer") == [b"entry %d" % n for n in range(5)]
    assert not nodes.running["observer"].status().is_leader

    follower = next(name for name in "ab" if nodes.running[name] is not leader)
    nodes.stop(follower)
    with pytest.raises(JournalError):
        leader.commit(b"no majority", timeout=2)
    assert nodes.machines["observer"].applied[-1][1] == b"entry 4"


def test_only_listed_observers_are_served(nodes, caplog):
    a, listed, unlisted = free_address(), free_address(), free_address()
    leader = nodes.start("a", a, [], followers=[a], observers=[listed])
    with caplog.at_level(logging.WARNING, logger="metadata.journal.raft"):
        nodes.start("listed", None, [a], observer_address=listed)
        nodes.start("unlisted", None, [a], observer_address=unlisted)
        nodes.start("anonymous", None, [a])
        index = leader.commit(b"for listed observers", timeout=5)
        nodes.wait_applied(index, ["a", "listed"])
        wait_until(
            lambda: sum("not a listed observer" in r.getMessage() for r in caplog.records) >= 2,
            10,
            "two refusals of the unlisted observer in the log",
        )
    assert nodes.payloads("listed") == [b"for listed observers"]
    assert nodes.payloads("unlisted") == nodes.payloads("anonymous") == []

    def refusals():
        return sum("not a listed observer" in r.getMessage() for r in caplog.records)

    # Dropping the observer disconnects it, and it is refused when it reconnects.
    with caplog.at_level(logging.WARNING, logger="metadata.journal.raft"):
        before = refusals()
        leader.set_members([a], [])
        wait_until(lambda: refusals() > before, 10, "another refusal")
    leader.commit(b"after the drop", timeout=5)
    assert nodes.payloads("listed") == [b"for listed observers"]


def test_a_listed_observer_of_an_encrypted_cluster_needs_the_password(nodes):
    pytest.importorskip("cryptography")
    a, listed = free_address(), free_address()
    leader = nodes.start("a", a, [], followers=[a], observers=[listed], password="secret")
    nodes.start("right", None, [a], observer_address=listed, password="secret")
    nodes.start("wrong", None, [a], observer_address=listed, password="wrong")
    index = leader.commit(b"encrypted", timeout=5)
    nodes.wait_applied(index, ["a", "right"])
    assert nodes.payloads("right") == [b"encrypted"]
    assert nodes.payloads("wrong") == []


def test_a_new_observer_times_its_catch_up_from_the_first_entry_received(nodes, caplog):
    leader_address, watcher = free_address(), free_address()
    leader = nodes.start("a", leader_address, [], followers=[leader_address], observers=[watcher])
    assert nodes.leader() is leader
    entries = leader.limits.catch_up_report_entries * 2
    done = []
    for n in range(entries):
        leader.submit(b"entry %d" % n, lambda result, error: done.append(error))
    wait_until(lambda: len(done) == entries, 60, "the leader to commit its entries")
    assert done == [None] * entries
    with caplog.at_level(logging.INFO, logger="metadata.journal.replicated"):
        nodes.start("observer", None, [leader_address], observer_address=watcher)
        last = leader.status().last_index
        nodes.wait_applied(last)
        wait_until(
            lambda: any("caught up with the leader" in r.getMessage() for r in caplog.records),
            30,
            "the observer to report its catch-up",
        )
    messages = [r.getMessage() for r in caplog.records]
    first = next(m for m in messages if "first entries from the leader" in m)
    caught_up = next(m for m in messages if "caught up with the leader" in m)
    assert "s after the journal started" in first
    assert f"at raft index {last}: {last} entries in" in caught_up  # the leader's no-op too
    assert "from the first received" in caught_up
    assert messages.index(first) < messages.index(caught_up)
