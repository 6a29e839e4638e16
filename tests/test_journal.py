"""The replicated journal on one node: storage, commits, fsyncs, restart, truncation, limits."""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time

import pysyncobj.syncobj
import pytest
from rocksdict import Options, Rdict

from metadata.journal.errors import (
    JournalClosedError,
    JournalError,
    JournalFullError,
    NotLeaderError,
    PayloadTooLargeError,
)
from metadata.journal.log import ENTRY_PREFIX, NO_OP_COMMAND, OPEN_SLICE_LIMIT, RocksJournal
from metadata.journal.replicated import ReplicatedJournal
from tests.harness import RecordingStateMachine, free_address, wait_until


@pytest.fixture
def open_journal(tmp_path):
    """Start one-node journals; every one is closed at the end of the test."""
    started: list[ReplicatedJournal] = []

    def start(name="journal", state_machine=None, applied_index=0, **options) -> ReplicatedJournal:
        journal = ReplicatedJournal(
            journal_dir=str(tmp_path / name),
            self_address=free_address(),
            partners=[],
            state_machine=state_machine or RecordingStateMachine(),
            applied_index=applied_index,
            **options,
        )
        journal.start()
        started.append(journal)
        assert journal.wait_leader(5)
        return journal

    yield start
    for journal in started:
        journal.close()


# The RocksDB journal seen as pysyncobj's list (fact 2).


def test_rocks_journal_reads_like_the_list_pysyncobj_expects(tmp_path):
    journal = RocksJournal(str(tmp_path / "log"), max_cached_bytes=1000)
    model = [(NO_OP_COMMAND, 0, 0)]
    for raft_index in range(1, 41):
        entry = (b"\x00payload-%d" % raft_index, raft_index, 1 + raft_index // 10)
        journal.add(*entry)
        model.append(entry)
        if raft_index % 7 == 0:
            journal.flush()  # old entries leave the cache: reads must come from RocksDB
    journal.setRaftCommitIndex(30)
    journal.flush()

    def assert_reads_like(model):
        assert len(journal) == len(model)
        for position in range(-len(model), len(model)):
            assert journal[position] == model[position]
        for start in range(-3, len(model) + 2):
            for stop in (None, start + 1, start + 5, -1, len(model) + 3):
                assert journal[start:stop] == model[start:stop]
        with pytest.raises(IndexError):
            journal[len(model)]

    assert_reads_like(model)

    journal.truncate_through(12)  # an image covers 1..12: entry 12 becomes the base, payload gone
    model = [(NO_OP_COMMAND, 12, model[12][2]), *model[13:]]
    assert journal[0][1] == 12 and journal.first_index == 13
    assert_reads_like(model)

    journal.deleteEntriesFrom(journal.last_index - 12 + 1 - 3)  # a follower's conflicting tail
    model = model[:-3]
    assert_reads_like(model)
    journal.close()

    reopened = RocksJournal(str(tmp_path / "log"))
    journal = reopened
    assert_reads_like(model)
    assert (reopened.base_index, reopened.commit_index) == (12, 30)
    reopened.close()


def test_open_ended_slices_are_bounded(tmp_path):
    journal = RocksJournal(str(tmp_path / "log"))
    for raft_index in range(1, OPEN_SLICE_LIMIT + 100):
        journal.add(b"\x00x", raft_index, 1)
    assert len(journal[5:]) == OPEN_SLICE_LIMIT
    assert len(journal[5 : OPEN_SLICE_LIMIT + 50]) == OPEN_SLICE_LIMIT + 45
    journal.close()


def test_committed_entries_are_never_deleted(tmp_path):
    journal = RocksJournal(str(tmp_path / "log"))
    for raft_index in range(1, 11):
        journal.add(b"\x00x", raft_index, 1)
    journal.setRaftCommitIndex(8)
    with pytest.raises(AssertionError, match="committed"):
        journal.deleteEntriesFrom(8)
    journal.deleteEntriesFrom(9)
    assert journal.last_index == 8
    journal.close()


def test_term_and_vote_are_synced_when_set(tmp_path):
    journal = RocksJournal(str(tmp_path / "log"))
    syncs = journal.wal_syncs
    journal.setCurrentTerm(7, "127.0.0.1:9010")
    assert journal.wal_syncs == syncs + 1
    journal.close()
    reopened = RocksJournal(str(tmp_path / "log"))
    assert (reopened.getCurrentTerm(), reopened.getVotedForNodeId()) == (7, "127.0.0.1:9010")
    reopened.close()


# One node.


def test_one_node_leads_within_a_second_and_applies_in_raft_order(tmp_path):
    state_machine = RecordingStateMachine()
    journal = ReplicatedJournal(
        journal_dir=str(tmp_path / "journal"),
        self_address=free_address(),
        partners=[],
        state_machine=state_machine,
        applied_index=0,
    )
    began = time.monotonic()
    journal.start()
    try:
        assert journal.wait_leader(1.0)
        assert time.monotonic() - began < 1.0
        results = [journal.commit(b"op-%d" % n, timeout=5) for n in range(20)]
        assert results == [index for index, _ in state_machine.applied]
        assert results == sorted(results) and len(set(results)) == 20
        assert [payload for _, payload in state_machine.applied] == [
            b"op-%d" % n for n in range(20)
        ]
        status = journal.status()
        assert status.is_leader and status.leader == journal.self_address
        assert status.last_applied == status.commit_index == status.last_index == results[-1]
    finally:
        journal.close()


def test_sequential_commits_take_a_few_milliseconds(open_journal):
    journal = open_journal(sync=True)
    latencies = []
    for n in range(100):
        began = time.perf_counter()
        journal.commit(b"x" * 200 + b"%d" % n, timeout=5)
        latencies.append(time.perf_counter() - began)
    assert statistics.median(latencies) < 0.020


def test_concurrent_commits_share_fsyncs(open_journal):
    journal = open_journal(sync=True)
    syncs_before = journal.status().wal_syncs
    submitters, per_submitter = 32, 20
    done = threading.Semaphore(0)
    errors = []

    def on_done(result, error):
        if error is not None:
            errors.append(error)
        done.release()

    def submitter(number):
        for n in range(per_submitter):
            journal.submit(b"%d-%d" % (number, n), on_done)

    threads = [threading.Thread(target=submitter, args=(n,)) for n in range(submitters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = submitters * per_submitter
    for _ in range(total):
        assert done.acquire(timeout=10)
    assert errors == []
    syncs = journal.status().wal_syncs - syncs_before
    assert 0 < syncs < total / 4, f"{syncs} fsyncs for {total} commits"


def test_without_sync_nothing_is_fsynced(open_journal):
    journal = open_journal(sync=False)
    for n in range(10):
        journal.commit(b"%d" % n, timeout=5)
    assert journal.status().wal_syncs == 0


def test_state_machine_errors_reach_the_submitter_as_results(open_journal):
    journal = open_journal()
    result = journal.commit(b"fail:duplicate table", timeout=5)
    assert isinstance(result, ValueError) and "duplicate table" in str(result)
    assert isinstance(journal.commit(b"fine", timeout=5), int)


def test_restart_replays_committed_entries_once_in_order(tmp_path, open_journal):
    first = RecordingStateMachine()
    journal = open_journal(state_machine=first)
    for n in range(50):
        journal.commit(b"entry-%d" % n, timeout=5)
    journal.close()

    second = RecordingStateMachine()
    restarted = open_journal(state_machine=second)
    assert second.applied == first.applied  # replayed during start(), before raft runs
    restarted.commit(b"after-restart", timeout=5)
    indexes = [index for index, _ in second.applied]
    assert indexes == sorted(set(indexes))
    assert second.applied[-1][1] == b"after-restart"


def test_several_journals_in_one_process_keep_their_own_entries(open_journal):
    original_factory = pysyncobj.syncobj.createJournal
    left_machine, right_machine = RecordingStateMachine(), RecordingStateMachine()
    left = open_journal("left", state_machine=left_machine)
    right = open_journal("right", state_machine=right_machine)
    assert pysyncobj.syncobj.createJournal is original_factory
    left.commit(b"left-1", timeout=5)
    right.commit(b"right-1", timeout=5)
    right.commit(b"right-2", timeout=5)
    assert [p for _, p in left_machine.applied] == [b"left-1"]
    assert [p for _, p in right_machine.applied] == [b"right-1", b"right-2"]
    assert left.status().last_index == right.status().last_index - 1


# Truncation after an image, and pysyncobj's own compaction (facts 4 and 8).


def test_truncation_removes_entries_and_restart_applies_only_newer_ones(tmp_path, open_journal):
    journal = open_journal()
    indexes = [journal.commit(b"before-%d" % n, timeout=5) for n in range(30)]
    image_index = indexes[19]
    journal.truncate_through(image_index)
    status = journal.status()
    assert status.first_index == image_index + 1
    assert status.entries_in_journal == status.last_index - image_index
    journal.close()

    db = Rdict(str(tmp_path / "journal"), Options(raw_mode=True))
    stored = [int.from_bytes(key[1:], "big") for key in db.keys() if key.startswith(ENTRY_PREFIX)]
    db.close()
    assert min(stored) == image_index + 1

    state_machine = RecordingStateMachine()
    restarted = open_journal(state_machine=state_machine, applied_index=image_index)
    assert [p for _, p in state_machine.applied] == [b"before-%d" % n for n in range(20, 30)]
    new_index = restarted.commit(b"new", timeout=5)  # applying resumed after the image, not at 1
    assert state_machine.applied[-1] == (new_index, b"new")


def test_truncation_beyond_what_is_applied_is_refused(open_journal):
    journal = open_journal()
    last = journal.commit(b"x", timeout=5)
    with pytest.raises(JournalError, match="applied"):
        journal.truncate_through(last + 5)


def test_a_journal_older_than_the_image_restarts_after_it(open_journal):
    state_machine = RecordingStateMachine()
    journal = open_journal(state_machine=state_machine, applied_index=500)
    index = journal.commit(b"first-after-image", timeout=5)
    assert index > 500 and state_machine.applied == [(index, b"first-after-image")]
    assert journal.status().first_index == 501


def test_an_image_older_than_the_journal_start_is_refused(tmp_path, open_journal):
    journal = open_journal()
    indexes = [journal.commit(b"%d" % n, timeout=5) for n in range(10)]
    journal.truncate_through(indexes[5])
    journal.close()
    stale = ReplicatedJournal(
        journal_dir=str(tmp_path / "journal"),
        self_address=free_address(),
        partners=[],
        state_machine=RecordingStateMachine(),
        applied_index=indexes[2],
    )
    with pytest.raises(JournalError, match="newer image"):
        stale.start()


def test_pysyncobj_compaction_never_runs(tmp_path, open_journal, caplog):
    state_machine = RecordingStateMachine()
    journal = open_journal(state_machine=state_machine)
    for n in range(20):
        journal.commit(b"a-%d" % n, timeout=5)
    with caplog.at_level(logging.WARNING):
        journal._node.forceLogCompaction()  # what pysyncobj does by itself after 5000 entries
        for n in range(20):
            journal.commit(b"b-%d" % n, timeout=5)
        assert journal.status().first_index == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    journal.close()
    replayed = RecordingStateMachine()
    open_journal(state_machine=replayed)
    assert replayed.applied == state_machine.applied


# Limits and errors.


def test_oversized_payloads_are_refused(open_journal):
    journal = open_journal(max_payload_bytes=1000)
    with pytest.raises(PayloadTooLargeError):
        journal.commit(b"x" * 1001, timeout=5)
    assert journal.commit(b"x" * 1000, timeout=5) > 0


def test_a_full_queue_refuses_submissions(open_journal):
    state_machine = RecordingStateMachine()
    journal = open_journal(
        state_machine=state_machine, max_pending_submissions=8, max_batch_entries=4
    )
    state_machine.gate.clear()  # the journal's thread blocks in the first apply
    outcomes = []
    lock = threading.Lock()

    def on_done(result, error):
        with lock:
            outcomes.append(error)

    for n in range(8):
        journal.submit(b"%d" % n, on_done)
    journal.submit(b"one too many", on_done)
    assert len(outcomes) == 1 and isinstance(outcomes[0], JournalFullError)
    state_machine.gate.set()
    wait_until(lambda: len(outcomes) == 9, 10, "every submission to be answered")
    assert outcomes[1:] == [None] * 8


def test_pending_payload_bytes_are_bounded(open_journal):
    state_machine = RecordingStateMachine()
    journal = open_journal(
        state_machine=state_machine, max_payload_bytes=1000, max_pending_bytes=2500
    )
    state_machine.gate.clear()
    outcomes = []
    for _ in range(3):
        journal.submit(b"x" * 1000, lambda result, error: outcomes.append(error))
    assert len(outcomes) == 1 and isinstance(outcomes[0], JournalFullError)
    state_machine.gate.set()
    wait_until(lambda: len(outcomes) == 3, 10, "every submission to be answered")
    assert journal.commit(b"x" * 1000, timeout=5) > 0


def test_appends_are_batched_up_to_the_limit(open_journal):
    state_machine = RecordingStateMachine()
    journal = open_journal(state_machine=state_machine, max_batch_entries=4)
    state_machine.gate.clear()
    done = threading.Semaphore(0)
    journal.submit(b"blocker", lambda result, error: done.release())
    wait_until(
        lambda: journal.status().last_index > journal.status().last_applied,
        10,
        "an entry appended but not applied",
    )
    syncs_before = journal.status().wal_syncs
    for n in range(40):
        journal.submit(b"%d" % n, lambda result, error: done.release())
    state_machine.gate.set()
    for _ in range(41):
        assert done.acquire(timeout=10)
    assert journal.status().wal_syncs - syncs_before >= 40 / 4


def test_unknown_limits_are_rejected(tmp_path):
    with pytest.raises(TypeError):
        ReplicatedJournal(
            journal_dir=str(tmp_path),
            self_address=free_address(),
            partners=[],
            state_machine=RecordingStateMachine(),
            applied_index=0,
            max_paylaod_bytes=5,
        )


def test_closed_journal_refuses_work(open_journal):
    journal = open_journal()
    journal.close()
    with pytest.raises(JournalClosedError):
        journal.commit(b"late", timeout=1)
    with pytest.raises(JournalClosedError):
        journal.truncate_through(1)


def test_pending_submissions_fail_when_the_journal_closes(open_journal):
    state_machine = RecordingStateMachine()
    journal = open_journal(state_machine=state_machine)
    errors = []
    state_machine.gate.clear()
    journal.submit(b"stuck", lambda result, error: errors.append(error))
    for n in range(5):
        journal.submit(b"%d" % n, lambda result, error: errors.append(error))
    wait_until(
        lambda: journal.status().last_index > journal.status().last_applied,
        10,
        "an entry appended but not applied",
    )
    closer = threading.Thread(target=journal.close)
    closer.start()
    state_machine.gate.set()
    closer.join(10)
    assert len(errors) == 6
    assert all(error is None or isinstance(error, JournalClosedError) for error in errors)


def test_password_is_handed_to_pysyncobj(tmp_path):
    journal = ReplicatedJournal(
        journal_dir=str(tmp_path / "journal"),
        self_address=free_address(),
        partners=[],
        state_machine=RecordingStateMachine(),
        applied_index=0,
        password="cluster-secret",
    )
    try:
        import cryptography  # noqa: F401
    except ImportError:
        with pytest.raises(JournalError, match="cryptography"):
            journal.start()
        return
    journal.start()
    try:
        assert journal._node.encryptor is not None
        assert journal.wait_leader(5)
        assert journal.commit(b"secret", timeout=5) > 0
    finally:
        journal.close()


def test_observer_requires_partners(tmp_path):
    with pytest.raises(ValueError):
        ReplicatedJournal(
            journal_dir=str(tmp_path),
            self_address=None,
            partners=[],
            state_machine=RecordingStateMachine(),
            applied_index=0,
        )


def test_not_leader_error_names_the_leader():
    error = NotLeaderError("127.0.0.1:9010")
    assert error.leader == "127.0.0.1:9010" and "127.0.0.1:9010" in str(error)


def test_a_taken_port_is_reported(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        journal = ReplicatedJournal(
            journal_dir=str(tmp_path / "journal"),
            self_address=address,
            partners=[],
            state_machine=RecordingStateMachine(),
            applied_index=0,
        )
        with pytest.raises(JournalError, match="cannot listen"):
            journal.start()
