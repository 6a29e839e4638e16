"""The journal survives kill -9: nothing acknowledged is lost, nothing is applied twice.

The test starts this file as a worker process that commits a stream of entries from several
threads and reports each acknowledgement on stdout; the test kills it with SIGKILL, then restarts
the journal on the same directory and checks what the state machine gets.
"""

from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import metadata.journal.log
from metadata.journal.log import RocksJournal, end_of_wal_records
from metadata.journal.replicated import ReplicatedJournal
from tests.harness import RecordingStateMachine, free_address

REPO_ROOT = Path(__file__).resolve().parents[1]


def start_worker(journal_dir: Path, *args: str) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, __file__, str(journal_dir), *args],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
        cwd=REPO_ROOT,
    )


def kill_after_acknowledgements(worker: subprocess.Popen, count: int) -> dict[int, bytes]:
    """Read acknowledgements until count arrived, SIGKILL the worker, return all it acknowledged."""
    acknowledged: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    for line in worker.stdout:
        raft_index, payload = line.split()
        acknowledged[int(raft_index)] = payload.encode()
        if len(acknowledged) >= count:
            break
        assert time.monotonic() < deadline, "the worker acknowledges too slowly"
    worker.send_signal(signal.SIGKILL)
    for line in worker.stdout:  # lines written before the kill were acknowledged too
        if line.endswith("\n"):
            raft_index, payload = line.split()
            acknowledged[int(raft_index)] = payload.encode()
    worker.wait(10)
    assert worker.returncode == -signal.SIGKILL
    return acknowledged


def restart(journal_dir: Path) -> tuple[ReplicatedJournal, RecordingStateMachine]:
    state_machine = RecordingStateMachine()
    journal = ReplicatedJournal(
        journal_dir=str(journal_dir),
        self_address=free_address(),
        partners=[],
        state_machine=state_machine,
        applied_index=0,
    )
    journal.start()
    return journal, state_machine


def assert_replayed_once_in_order(
    replayed: list[tuple[int, bytes]], acknowledged: dict[int, bytes]
):
    indexes = [raft_index for raft_index, _ in replayed]
    assert indexes == sorted(set(indexes)), "replayed out of order or twice"
    payloads = [payload for _, payload in replayed]
    assert len(payloads) == len(set(payloads)), "an entry was applied twice"
    missing = {i: p for i, p in acknowledged.items() if (i, p) not in set(replayed)}
    assert missing == {}, f"{len(missing)} acknowledged entries were lost"


def test_sigkill_during_commits_loses_nothing_acknowledged(tmp_path):
    journal_dir = tmp_path / "journal"
    acknowledged = kill_after_acknowledgements(start_worker(journal_dir, "200"), 400)
    wal = max(journal_dir.glob("*.log"), key=lambda path: int(path.stem)).read_bytes()
    assert end_of_wal_records(wal) == len(wal)  # a kill leaves whole records: nothing to repair

    journal, state_machine = restart(journal_dir)
    try:
        assert_replayed_once_in_order(state_machine.applied, acknowledged)  # replayed by start()
        assert journal.wait_leader(5)
        journal.commit(b"after-crash", timeout=5)
        assert_replayed_once_in_order(state_machine.applied, acknowledged)
        assert state_machine.applied[-1][1] == b"after-crash"
    finally:
        journal.close()


def damaged_tail(kind: str, wal: bytes) -> bytes:
    noise = random.Random(kind).randbytes(3000)
    if kind == "garbage":  # a first header of a type RocksDB rejects cleanly
        return struct.pack("<IHB", 0, 100, 1) + noise
    if kind == "torn-copy":  # the start of a real record, cut short by the crash
        return wal[len(wal) // 2 : len(wal) // 2 + 2500]
    # A header of a recyclable type: RocksDB 9.8 loops forever opening this unless Quire cuts it.
    return struct.pack("<IHB", 0x3915EEA6, 30194, int(kind.removeprefix("recyclable-"))) + noise


@pytest.mark.parametrize("damage", ["garbage", "torn-copy", "recyclable-7"])
def test_a_torn_wal_tail_is_dropped_on_reopen(tmp_path, damage):
    journal_dir = tmp_path / "journal"
    acknowledged = kill_after_acknowledgements(start_worker(journal_dir, "4000"), 150)
    wal = max(journal_dir.glob("*.log"), key=lambda path: int(path.stem))
    data = wal.read_bytes()
    assert end_of_wal_records(data) == len(data)  # Quire reads RocksDB's WAL as RocksDB wrote it
    with wal.open("ab") as tail:
        tail.write(damaged_tail(damage, data))

    # Reopened in a process of its own, so that a hang inside RocksDB fails the test.
    replay = start_worker(journal_dir, "replay")
    try:
        output, _ = replay.communicate(timeout=60)
    finally:
        replay.kill()
        replay.wait()
    assert replay.returncode == 0
    *lines, last = output.splitlines()
    assert last == "committed after repair"
    replayed = [(int(index), payload.encode()) for index, payload in map(str.split, lines)]
    assert_replayed_once_in_order(replayed, acknowledged)


def test_term_and_vote_survive_sigkill(tmp_path):
    journal_dir = tmp_path / "journal"
    worker = start_worker(journal_dir, "vote")
    worker.wait(30)
    assert worker.returncode == -signal.SIGKILL
    journal = RocksJournal(str(journal_dir))
    assert (journal.getCurrentTerm(), journal.getVotedForNodeId()) == (9, "127.0.0.1:9010")
    journal.close()


def _worker(journal_dir: str, mode: str) -> None:
    if mode == "vote":
        journal = RocksJournal(journal_dir)
        journal.setCurrentTerm(9, "127.0.0.1:9010")
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "replay":
        metadata.journal.log.WAL_PROBE_SECONDS = (
            3.0  # RocksDB opens this WAL in well under a second
        )
        journal, state_machine = restart(Path(journal_dir))
        for raft_index, payload in state_machine.applied:
            sys.stdout.write(f"{raft_index} {payload.decode()}\n")
        assert journal.wait_leader(5)
        journal.commit(b"after-repair", timeout=5)
        journal.close()
        sys.stdout.write("committed after repair\n")
        return
    payload_size = int(mode)
    journal = ReplicatedJournal(
        journal_dir=journal_dir,
        self_address=free_address(),
        partners=[],
        state_machine=RecordingStateMachine(),
        applied_index=0,
    )
    journal.start()
    assert journal.wait_leader(5)
    output = threading.Lock()

    def submitter(number: int) -> None:
        for n in range(100_000):
            payload = (b"%d-%d-" % (number, n)).ljust(payload_size, b"p")
            raft_index = journal.commit(payload, timeout=10)
            with output:
                sys.stdout.write(f"{raft_index} {payload.decode()}\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=submitter, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(60)  # the test kills this process long before


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
