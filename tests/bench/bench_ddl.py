"""DDL throughput: fsynced CREATE TABLE per second through Quire's MySQL front, and the journal
appends below it, against raw pysyncobj.

Run by hand from the repository root:

    python tests/bench/bench_ddl.py [--creates N] [--appends N] [--connections 1,16]
                                    [--threads 16] [--seconds S]

1. Front: a `quire up` process (master_sync_policy=SYNC, so every acknowledged statement is
   fsynced) takes `CREATE TABLE db.t_r<run>_<worker>_<i> (k INT, v VARCHAR(20)) DUPLICATE KEY(k)
   DISTRIBUTED BY HASH(k) BUCKETS 8` from 1 and from 16 connections, one PyMySQL client per worker
   process (so the client is not GIL-bound), each worker creating its own tables.
2. Journal: in this process, `ReplicatedJournal` (one node, sync on) with a `Catalog` as its state
   machine commits encoded CreateTable operations from 16 threads, each waiting for its commit.
3. Anchor: raw pysyncobj 0.3.17 with its own file journal (journalFile and fullDumpFile set; that
   journal never fsyncs) and a @replicated method, the same payloads from the same threads.

A run stops after its count or its time limit, whichever comes first. The ratios come last.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402
from pysyncobj import SyncObj, SyncObjConf, replicated  # noqa: E402

from metadata import ops  # noqa: E402
from metadata.catalog import Catalog  # noqa: E402
from metadata.codec import encode_ops  # noqa: E402
from metadata.journal.replicated import ReplicatedJournal  # noqa: E402
from metadata.records import Column, Database, KeyModel, Partition, Table  # noqa: E402
from tests.harness import QuireProcess, free_address  # noqa: E402

logger = logging.getLogger("bench_ddl")

DATABASE = "bench_ddl"
BUCKETS = 8
MAX_WORKERS = 64
WORKER_START_TIMEOUT = 120.0
COMMIT_TIMEOUT = 30.0
RUN_NUMBERS = itertools.count(1)  # table names are t_r<run>_<worker>_<i>


@dataclass(frozen=True)
class Figure:
    """One run: operations finished, in how long, their latency, and the CPU time the server (this
    process, for the in-process journal runs) spent per operation."""

    operations: int
    elapsed: float
    p50: float
    p99: float
    cpu_per_operation: float

    @classmethod
    def of(cls, elapsed: float, latencies: list[float], cpu: float) -> Figure:
        assert latencies, "no operation finished"
        ordered = sorted(latencies)
        p99 = ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]
        return cls(len(ordered), elapsed, statistics.median(ordered), p99, cpu / len(ordered))

    @property
    def rate(self) -> float:
        return self.operations / self.elapsed

    def describe(self) -> str:
        return (
            f"{self.rate:8.0f}/s  ({self.operations} in {self.elapsed:.1f}s, "
            f"p50 {self.p50 * 1000:.2f} ms, p99 {self.p99 * 1000:.2f} ms, "
            f"CPU {self.cpu_per_operation * 1e6:.0f} us each"
        )


def process_cpu_seconds(pid: int) -> float:
    """User + system time of one process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fsync_latency(directory: Path, samples: int = 100) -> tuple[float, float]:
    """p50 and p90 seconds of a small append + fdatasync in directory: what this disk gives now."""
    assert 0 < samples <= 10_000
    path = directory / "fsync-probe"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    latencies = []
    try:
        for _ in range(samples):
            began = time.perf_counter()
            os.write(descriptor, b"p" * 200)
            os.fdatasync(descriptor)
            latencies.append(time.perf_counter() - began)
    finally:
        os.close(descriptor)
        path.unlink()
    latencies.sort()
    return latencies[samples // 2], latencies[samples * 9 // 10]


def log_machine_state(when: str, directory: Path) -> None:
    """Other work on the machine moves these figures: say how busy it was."""
    p50, p90 = fsync_latency(directory)
    logger.info(
        "%s: load average %.2f %.2f %.2f, fdatasync p50 %.2f ms p90 %.2f ms",
        when,
        *os.getloadavg(),
        p50 * 1000,
        p90 * 1000,
    )


# 1. The MySQL front.


def create_tables(
    port: int, run: str, worker: int, count: int, seconds: float, niceness: int, barrier, results
):
    """One client process: connect, wait for the others, then create its own tables."""
    os.nice(niceness)
    latencies: list[float] = []
    error = None
    started = finished = time.monotonic()
    cpu = 0.0
    try:
        connection = pymysql.connect(
            ssl_disabled=True,  # the anchors serve no TLS
            host="127.0.0.1",
            port=port,
            user="root",
            password="",
            autocommit=True,
        )
        try:
            cursor = connection.cursor()
            barrier.wait(WORKER_START_TIMEOUT)
            started, cpu_started = time.monotonic(), time.process_time()
            deadline = started + seconds
            for number in range(count):
                began = time.perf_counter()
                cursor.execute(
                    f"CREATE TABLE {DATABASE}.t_{run}_{worker}_{number} (k INT, v VARCHAR(20)) "
                    f"DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS {BUCKETS}"
                )
                latencies.append(time.perf_counter() - began)
                if time.monotonic() > deadline:
                    break
            finished, cpu = time.monotonic(), time.process_time() - cpu_started
        finally:
            connection.close()
    except Exception as failure:  # reported to the parent, which fails the run
        barrier.abort()  # so that the other workers do not wait for this one
        error = f"worker {worker}: {failure!r}"
    results.put((len(latencies), started, finished, cpu, latencies, error))


def bench_front(
    quire: QuireProcess, connections: int, count: int, seconds: float, niceness: int = 0
) -> Figure:
    assert 0 < connections <= MAX_WORKERS
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(connections)
    results = context.Queue(maxsize=connections)
    per_worker = max(count // connections, 1)
    run = f"r{next(RUN_NUMBERS)}"
    workers = [
        context.Process(
            target=create_tables,
            args=(
                quire.query_port,
                run,
                n,
                per_worker,
                seconds,
                niceness,
                barrier,
                results,
            ),
        )
        for n in range(connections)
    ]
    for worker in workers:
        worker.start()
    server_cpu = process_cpu_seconds(quire.process.pid)
    outcomes = [
        results.get(timeout=WORKER_START_TIMEOUT + seconds + COMMIT_TIMEOUT) for _ in workers
    ]
    server_cpu = process_cpu_seconds(quire.process.pid) - server_cpu  # connecting included
    for worker in workers:
        worker.join(timeout=30)
    errors = [error for *_, error in outcomes if error]
    assert not errors, "\n".join(errors)
    done = sum(outcome[0] for outcome in outcomes)
    elapsed = max(outcome[2] for outcome in outcomes) - min(outcome[1] for outcome in outcomes)
    client_cpu = sum(outcome[3] for outcome in outcomes)
    latencies = [latency for outcome in outcomes for latency in outcome[4]]
    figure = Figure.of(elapsed, latencies, server_cpu)
    logger.info(
        "Quire front, CREATE TABLE, %2d connection(s): %s in the server, %.0f us in the clients)",
        connections,
        figure.describe(),
        client_cpu / done * 1e6,
    )
    return figure


def count_tables(quire: QuireProcess) -> int:
    connection = quire.connect(ssl_disabled=True)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SHOW TABLES FROM {DATABASE}")
            return len(cursor.fetchall())
    finally:
        connection.close()


# 2. and 3. The journal below the front, and raw pysyncobj.


def create_table_payloads(db_id: int, first_id: int, count: int) -> list[bytes]:
    """Encoded CreateTable entries as the front would journal them, with non-overlapping ids."""
    columns = (Column("k", "INT", is_key=True), Column("v", "VARCHAR(20)"))
    ids_per_table = 2 + BUCKETS  # table, its one partition, its tablets
    payloads = []
    for number in range(count):
        table_id = first_id + number * ids_per_table
        name = f"t_{number}"
        partition = Partition(table_id + 1, name, (), (), table_id + 2, BUCKETS)
        table = Table(
            id=table_id,
            db_id=db_id,
            name=name,
            columns=columns,
            key_model=KeyModel.DUPLICATE,
            key_columns=("k",),
            distribution_columns=("k",),
            buckets=BUCKETS,
            partitions=(partition,),
        )
        payloads.append(encode_ops([ops.CreateTable(table)]))
    return payloads


def drive(commit_one, payloads: list[bytes], threads: int, seconds: float) -> Figure:
    """Commit payloads from threads (thread n takes every n-th), each waiting for each commit."""
    stop_at = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(threads)]

    def run(number: int) -> None:
        mine = latencies[number]
        for payload in payloads[number::threads]:
            began = time.perf_counter()
            commit_one(payload)
            mine.append(time.perf_counter() - began)
            if time.monotonic() > stop_at:
                return

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    began, cpu_began = time.perf_counter(), time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    return Figure.of(elapsed, [latency for mine in latencies for latency in mine], cpu)


def bench_quire_journal(directory: Path, threads: int, count: int, seconds: float) -> Figure:
    catalog = Catalog()
    journal = ReplicatedJournal(
        journal_dir=str(directory / "quire-journal"),
        self_address=free_address(),
        partners=[],
        state_machine=catalog,
        applied_index=0,
        sync=True,
    )
    journal.start()
    try:
        assert journal.wait_leader(10), "the journal did not elect itself"
        db_id = catalog.next_id
        journal.commit(encode_ops([ops.CreateDatabase(Database(db_id, DATABASE))]), COMMIT_TIMEOUT)
        payloads = create_table_payloads(db_id, db_id + 1, count)
        tables_before, syncs_before = len(catalog.tables), journal.status().wal_syncs

        def commit_one(payload: bytes) -> None:
            results = journal.commit(payload, COMMIT_TIMEOUT)
            assert isinstance(results[0], Table), results

        figure = drive(commit_one, payloads, threads, seconds)
        syncs = journal.status().wal_syncs - syncs_before
        assert len(catalog.tables) - tables_before == figure.operations
    finally:
        journal.close()
    logger.info(
        "Quire journal, appends,     %2d thread(s):     %s, %d fsyncs)",
        threads,
        figure.describe(),
        syncs,
    )
    return figure


class RawTables(SyncObj):
    def __init__(self, address: str, directory: Path):
        conf = SyncObjConf(
            journalFile=str(directory / "raw.journal"), fullDumpFile=str(directory / "raw.dump")
        )
        super().__init__(address, [], conf)
        self.tables = 0
        self.payload_bytes = 0

    @replicated
    def create_table(self, payload: bytes) -> int:
        self.tables += 1
        self.payload_bytes += len(payload)
        return self.tables


def bench_raw_pysyncobj(directory: Path, threads: int, count: int, seconds: float) -> Figure:
    payloads = create_table_payloads(1, 2, count)
    raw = RawTables(free_address(), directory)
    try:
        deadline = time.monotonic() + 10
        while not raw._isLeader():
            assert time.monotonic() < deadline, "raw pysyncobj did not elect itself"
            time.sleep(0.01)

        def commit_one(payload: bytes) -> None:
            assert raw.create_table(payload, sync=True, timeout=COMMIT_TIMEOUT) > 0

        figure = drive(commit_one, payloads, threads, seconds)
        assert raw.tables == figure.operations
    finally:
        raw.destroy_synchronous()
    logger.info(
        "raw pysyncobj, appends,     %2d thread(s):     %s, no fsync)", threads, figure.describe()
    )
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=10_000, help="CREATE TABLEs per front run")
    parser.add_argument("--appends", type=int, default=20_000, help="commands per journal run")
    parser.add_argument("--connections", default="1,16", help="front runs, comma-separated")
    parser.add_argument("--threads", type=int, default=16, help="submitter threads per journal run")
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit per run")
    parser.add_argument(
        "--client-nice",
        type=int,
        default=0,
        help="niceness of the client processes (say 10, so that on a busy machine the server is "
        "not starved by its own clients)",
    )
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("metadata").setLevel(logging.WARNING)
    connection_counts = [int(text) for text in arguments.connections.split(",")]
    assert all(0 < n <= MAX_WORKERS for n in connection_counts), f"1..{MAX_WORKERS} connections"
    assert connection_counts and arguments.threads > 0 and arguments.creates > 0
    assert 0 <= arguments.client_nice <= 19

    front: dict[int, Figure] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ddl-") as directory:
        folder = Path(directory)
        log_machine_state("before", folder)
        quire = QuireProcess(folder / "fe", {"master_sync_policy": "SYNC"}).start()
        try:
            connection = quire.connect(ssl_disabled=True)
            connection.cursor().execute(f"CREATE DATABASE {DATABASE}")
            connection.close()
            for connections in connection_counts:
                front[connections] = bench_front(
                    quire, connections, arguments.creates, arguments.seconds, arguments.client_nice
                )
            created = count_tables(quire)
            expected = sum(figure.operations for figure in front.values())
            assert created == expected, f"SHOW TABLES lists {created} tables, {expected} created"
        finally:
            quire.stop()
        journal = bench_quire_journal(
            folder, arguments.threads, arguments.appends, arguments.seconds
        )
        raw = bench_raw_pysyncobj(folder, arguments.threads, arguments.appends, arguments.seconds)
        log_machine_state("after", folder)

    widest = max(front)
    target = "met" if front[widest].rate >= 1000 else "NOT met"
    logger.info("target >= 1,000 fsynced CREATE TABLE/s from %d connections: %s", widest, target)
    logger.info(
        "ratio Quire front (%d connections) / raw pysyncobj (%d threads): %.2fx",
        widest,
        arguments.threads,
        front[widest].rate / raw.rate,
    )
    logger.info(
        "ratio Quire journal / raw pysyncobj (%d threads): %.2fx",
        arguments.threads,
        journal.rate / raw.rate,
    )


if __name__ == "__main__":
    main()
