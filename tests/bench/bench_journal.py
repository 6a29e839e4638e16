"""Fsynced journal commits per second: Quire's journal against raw pysyncobj.

Run by hand from the repository root:  python tests/bench/bench_journal.py [--count N] [--seconds S]

Each run commits ~200-byte payloads on a one-node cluster from 1 and from 16 threads, each thread
waiting for every commit before the next. Quire's journal runs with sync on (RocksDB, grouped
fsyncs). The anchor is raw pysyncobj with its own file journal (journalFile set, which never
fsyncs) and a trivial @replicated counter, doing the same commands from the same threads.
A run stops after N commands or after the time limit, whichever comes first.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pysyncobj import SyncObj, SyncObjConf, replicated  # noqa: E402

from metadata.journal.replicated import ReplicatedJournal  # noqa: E402
from tests.harness import free_address  # noqa: E402

PAYLOAD = b"p" * 200


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Counter:
    """Quire's side of the trivial state machine."""

    def __init__(self):
        self.value = 0

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        self.value += 1
        return self.value


class RawCounter(SyncObj):
    def __init__(self, address: str, journal_file: str):
        super().__init__(address, [], SyncObjConf(journalFile=journal_file))
        self.value = 0

    @replicated
    def add(self, payload: bytes) -> int:
        self.value += 1
        return self.value


def drive(
    commit_one: Callable[[], object], threads: int, count: int, seconds: float
) -> tuple[int, float, float]:
    """Commit from threads until count commands or seconds; returns (commits, elapsed, p50)."""
    per_thread = count // threads
    stop_at = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(threads)]

    def run(number: int) -> None:
        mine = latencies[number]
        for _ in range(per_thread):
            began = time.perf_counter()
            commit_one()
            mine.append(time.perf_counter() - began)
            if time.monotonic() > stop_at:
                return

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - began
    flat = [latency for mine in latencies for latency in mine]
    return len(flat), elapsed, statistics.median(flat)


def bench_quire(directory: Path, threads: int, count: int, seconds: float) -> float:
    journal = ReplicatedJournal(
        journal_dir=str(directory / f"quire-{threads}"),
        self_address=free_address(),
        partners=[],
        state_machine=Counter(),
        applied_index=0,
        sync=True,
    )
    journal.start()
    try:
        assert journal.wait_leader(5)
        syncs = journal.status().wal_syncs
        commits, elapsed, p50 = drive(
            lambda: journal.commit(PAYLOAD, timeout=30), threads, count, seconds
        )
        syncs = journal.status().wal_syncs - syncs
    finally:
        journal.close()
    rate = commits / elapsed
    report(
        f"quire journal     {threads:2d} thread(s): {rate:8.0f} commits/s  "
        f"({commits} in {elapsed:.1f}s, p50 {p50 * 1000:.2f} ms, {syncs} fsyncs)"
    )
    return rate


def bench_raw_pysyncobj(directory: Path, threads: int, count: int, seconds: float) -> float:
    counter = RawCounter(free_address(), str(directory / f"raw-{threads}.journal"))
    try:
        deadline = time.monotonic() + 10
        while not counter._isLeader():
            assert time.monotonic() < deadline, "raw pysyncobj did not elect itself"
            time.sleep(0.01)
        commits, elapsed, p50 = drive(
            lambda: counter.add(PAYLOAD, sync=True, timeout=30), threads, count, seconds
        )
    finally:
        counter.destroy_synchronous()
    rate = commits / elapsed
    report(
        f"raw pysyncobj     {threads:2d} thread(s): {rate:8.0f} commits/s  "
        f"({commits} in {elapsed:.1f}s, p50 {p50 * 1000:.2f} ms, no fsync)"
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="commands per run")
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit per run")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    quire, raw = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as directory:
        for threads in (1, 16):
            quire[threads] = bench_quire(
                Path(directory), threads, arguments.count, arguments.seconds
            )
            raw[threads] = bench_raw_pysyncobj(
                Path(directory), threads, arguments.count, arguments.seconds
            )
    report(f"ratio (Quire / raw pysyncobj), 1 thread: {quire[1] / raw[1]:.1f}x")
    report(f"ratio (Quire / raw pysyncobj), 16 threads: {quire[16] / raw[16]:.1f}x")


if __name__ == "__main__":
    main()
