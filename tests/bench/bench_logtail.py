"""Logtail push over loopback: commit-to-delivered latency and throughput.

Run by hand from the repository root:  python tests/bench/bench_logtail.py [--seconds S] [--cns N]

Latency: a TN thread publishes 1-row commits at about 1000 per second, with a heartbeat every
logtail_heartbeat_interval_millisecond between them, to N subscribed CNs (subscribers in this
process, each with its own thread and connection); the latency of a commit is from just before
`publish` (which encodes it) to its delivery to a CN's callback. The anchor is the same 1-row
commit's bytes sent as a length-prefixed frame over a loopback socket to a thread that reads it:
the floor any stream over TCP in Python pays. Idle: the CPU that heartbeats alone cost. Throughput: 1000-row commits (row id, an int and a
20-character string) published as fast as the server takes them, until the CNs' watermarks reach
the last one.
"""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa  # noqa: E402

from be.config import BE_KEYS, Config  # noqa: E402
from be.logtail.entries import ROW_ID, Commit, TableChanges  # noqa: E402
from be.logtail.format import encode_commit  # noqa: E402
from be.logtail.limits import LogtailLimits  # noqa: E402
from be.logtail.push import LogtailPushServer  # noqa: E402
from be.logtail.stream import FRAME_HEADER  # noqa: E402
from be.logtail.subscriber import LogtailSubscriber  # noqa: E402
from be.logtail.table import LogtailTable  # noqa: E402

TOKEN = "bench-token"


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def changes(first_row_id: int, count: int) -> TableChanges:
    return TableChanges(
        1,
        1,
        pa.table(
            {
                ROW_ID: pa.array(range(first_row_id, first_row_id + count), pa.int64()),
                "n": pa.array(range(count), pa.int32()),
                "s": pa.array([f"{i:020d}" for i in range(count)], pa.string()),
            }
        ),
    )


def percentiles(samples_ns: list[int]) -> str:
    ordered = sorted(samples_ns)

    def at(fraction: float) -> float:
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1e6

    return (
        f"p50 {at(0.5):.2f} ms  p99 {at(0.99):.2f} ms  max {ordered[-1] / 1e6:.2f} ms  "
        f"mean {statistics.fmean(ordered) / 1e6:.2f} ms  ({len(ordered)} deliveries)"
    )


class Cluster:
    def __init__(self, limits: LogtailLimits, cns: int):
        self.server = LogtailPushServer(LogtailTable(limits), TOKEN, "127.0.0.1", 0, limits)
        self.server.start()
        self.sent_ns: dict[int, int] = {}
        self.latencies: list[int] = []
        self.rows = 0
        self.lock = threading.Lock()
        self.subscribers = []
        for number in range(cns):
            subscriber = LogtailSubscriber(
                "127.0.0.1", self.server.port, TOKEN, self.delivered, limits=limits,
                name=f"cn-{number}",
            )  # fmt: skip
            subscriber.start()
            subscriber.subscribe(1)
            assert subscriber.wait_active(1, 10)
            self.subscribers.append(subscriber)
        self.ts = self.server.last_pushed_ts

    def delivered(self, commit: Commit) -> None:
        now = time.perf_counter_ns()
        sent = self.sent_ns.get(commit.commit_ts)
        with self.lock:
            if sent is not None:
                self.latencies.append(now - sent)
            self.rows += commit.changes[0].row_count

    def publish(self, commit_changes: tuple[TableChanges, ...], timed: bool) -> None:
        self.ts += 1
        if timed:
            self.sent_ns[self.ts] = time.perf_counter_ns()
        self.server.publish(Commit(self.ts, commit_changes))

    def wait_all(self, timeout: float = 120) -> None:
        for subscriber in self.subscribers:
            assert subscriber.wait_for_watermark(self.ts, timeout), "the CNs fell behind"

    def close(self) -> None:
        for subscriber in self.subscribers:
            subscriber.close()
        self.server.close()


def latency(limits: LogtailLimits, cns: int, seconds: float, rate: int) -> None:
    cluster = Cluster(limits, cns)
    try:
        period = 1 / rate
        heartbeat = limits.heartbeat_interval
        start = time.perf_counter()
        next_commit = next_heartbeat = start
        row_id = 0
        while (now := time.perf_counter()) - start < seconds:
            if now >= next_commit:
                row_id += 1
                cluster.publish((changes(row_id, 1),), timed=True)
                next_commit += period
                next_heartbeat = now + heartbeat
            elif now >= next_heartbeat:
                cluster.publish((), timed=False)
                next_heartbeat = now + heartbeat
            else:
                time.sleep(max(0.0, min(next_commit, next_heartbeat) - time.perf_counter()))
        cluster.wait_all()
        elapsed = time.perf_counter() - start
        report(
            f"logtail push, 1-row commits at {row_id / elapsed:.0f}/s, heartbeat "
            f"{heartbeat * 1000:g} ms, {cns} CN(s): {percentiles(cluster.latencies)}"
        )
    finally:
        cluster.close()


def idle_cost(limits: LogtailLimits, cns: int, seconds: float) -> None:
    """The CPU heartbeats alone cost (TN and CNs in this process)."""
    cluster = Cluster(limits, cns)
    try:
        start_cpu, start = time.process_time(), time.perf_counter()
        while time.perf_counter() - start < seconds:
            time.sleep(limits.heartbeat_interval)
            cluster.publish((), timed=False)
        cluster.wait_all()
        cpu = (time.process_time() - start_cpu) / (time.perf_counter() - start)
        report(
            f"idle, heartbeats every {limits.heartbeat_interval * 1000:g} ms to {cns} CN(s): "
            f"{cpu * 100:.1f}% of a core"
        )
    finally:
        cluster.close()


def socket_anchor(limits: LogtailLimits, seconds: float, rate: int) -> None:
    payload = encode_commit(Commit(1, (changes(1, 1),)), limits)
    sender, receiver = socket.socketpair()
    sent: list[int] = []
    latencies: list[int] = []

    def read() -> None:
        while True:
            header = receiver.recv(FRAME_HEADER.size, socket.MSG_WAITALL)
            if not header:
                return
            (length,) = FRAME_HEADER.unpack(header)
            receiver.recv(length, socket.MSG_WAITALL)
            latencies.append(time.perf_counter_ns() - sent[len(latencies)])

    reader = threading.Thread(target=read)
    reader.start()
    start = time.perf_counter()
    next_send = start
    while time.perf_counter() - start < seconds:
        time.sleep(max(0.0, next_send - time.perf_counter()))
        sent.append(time.perf_counter_ns())
        sender.sendall(FRAME_HEADER.pack(len(payload)) + payload)
        next_send += 1 / rate
    sender.shutdown(socket.SHUT_WR)
    reader.join()
    sender.close()
    receiver.close()
    report(f"anchor: the same frame over a loopback socket pair: {percentiles(latencies)}")


def throughput(limits: LogtailLimits, cns: int, seconds: float, rows: int) -> None:
    cluster = Cluster(limits, cns)
    try:
        batch = changes(0, rows)
        start = time.perf_counter()
        commits = 0
        while time.perf_counter() - start < seconds:
            cluster.publish((batch,), timed=False)
            commits += 1
        cluster.wait_all()
        elapsed = time.perf_counter() - start
        assert cluster.rows == commits * rows * cns, (cluster.rows, commits * rows * cns)
        report(
            f"logtail push, {rows}-row commits, {cns} CN(s): {commits / elapsed:.0f} commits/s, "
            f"{commits * rows / elapsed:,.0f} rows/s to each CN"
        )
        start = time.perf_counter()
        for _ in range(200):
            encode_commit(Commit(1, (batch,)), limits)
        report(f"  encoding alone: {200 / (time.perf_counter() - start):.0f} {rows}-row commits/s")
    finally:
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--cns", type=int, default=1)
    parser.add_argument("--rate", type=int, default=1000, help="1-row commits per second")
    parser.add_argument("--rows", type=int, default=1000, help="rows per commit for throughput")
    parser.add_argument("--heartbeat-ms", type=int, help="logtail_heartbeat_interval_millisecond")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    overrides = []
    if args.heartbeat_ms is not None:
        overrides.append(f"logtail_heartbeat_interval_millisecond={args.heartbeat_ms}")
    limits = LogtailLimits.from_config(Config.load(BE_KEYS, [], overrides))
    report(f"Python {sys.version.split()[0]}, pyarrow {pa.__version__}")
    idle_cost(limits, args.cns, args.seconds)
    socket_anchor(limits, args.seconds, args.rate)
    latency(limits, args.cns, args.seconds, args.rate)
    throughput(limits, args.cns, args.seconds, args.rows)


if __name__ == "__main__":
    main()
