"""The TN's log: appends/s of 1 KB records from 16 threads, and timestamps/s from the oracle.

Run by hand from the repository root:

    python tests/bench/bench_logservice.py [--threads 16] [--seconds 10] [--batch 1 --batch 64]
                                           [--replicas 1]

Each thread appends --batch records of 1 KB per call, for --seconds, on one replica (RocksDB,
fsync, in a temporary folder) or on the leader of three replicas in this process. Then one
thread per --threads takes timestamps from the oracle for as long.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from be.logservice.service import LogService  # noqa: E402
from be.logservice.tso import TimestampOracle  # noqa: E402
from tests.harness import free_address  # noqa: E402

RECORD = b"r" * 1024


def open_replicas(folder: Path, replicas: int) -> tuple[LogService, list[LogService]]:
    if replicas == 1:
        log = LogService.open(folder / "single")
        return log, [log]
    addresses = [free_address() for _ in range(replicas)]
    opened = [
        LogService.open(folder / f"r{n}", self_address=a, peers=addresses, token=b"bench")
        for n, a in enumerate(addresses)
    ]
    for replica in opened:
        replica.wait_ready(30)
    deadline = time.monotonic() + 30
    while not any(replica.is_leader() for replica in opened):
        assert time.monotonic() < deadline, "no leader"
        time.sleep(0.05)
    return next(replica for replica in opened if replica.is_leader()), opened


def run_threads(threads: int, seconds: float, work) -> list[int]:
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def worker(number: int) -> None:
        while time.monotonic() < stop:
            counts[number] += work()

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, action="append")
    parser.add_argument("--replicas", type=int, choices=(1, 3), default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        leader, replicas = open_replicas(Path(folder), args.replicas)
        try:
            for batch in args.batch or [1, 64]:
                records = [RECORD] * batch
                started = time.monotonic()
                counts = run_threads(
                    args.threads, args.seconds, lambda r=records: len(leader.append(r))
                )
                elapsed = time.monotonic() - started
                total = sum(counts)
                print(
                    f"{args.replicas} replica(s), {args.threads} threads, {batch} x 1 KB per "
                    f"append: {total / batch / elapsed:,.0f} appends/s, "
                    f"{total / elapsed:,.0f} records/s ({total * 1024 / elapsed / 1e6:.1f} MB/s)"
                )
            oracle = TimestampOracle(leader)
            started = time.monotonic()
            counts = run_threads(args.threads, args.seconds, lambda: oracle.next() and 1)
            elapsed = time.monotonic() - started
            print(f"oracle, {args.threads} threads: {sum(counts) / elapsed:,.0f} timestamps/s")
        finally:
            for replica in replicas:
                replica.close()


if __name__ == "__main__":
    main()
