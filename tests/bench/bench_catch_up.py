"""A new observer catching up through the journal, against raw pysyncobj.

Run by hand from the repository root:

    python tests/bench/bench_catch_up.py [--entries 200000] [--rounds 3] [--profile]
                                         [--fe-entries 100000] [--no-anchor]
                                         [--workload databases|tables]

A one-voter leader (a ReplicatedJournal over a catalog, in its own process) holds --entries small
entries (CREATE DATABASE, each second one followed by a Timestamp entry, encoded as the FE
journals them) and no image covering them. A new observer process then starts with an empty
journal and a new catalog, and is timed: from its process start to the first entry received, and
from the first entry received until it has applied the leader's last entry. The anchor is raw
pysyncobj (in-memory journal, a trivial @replicated method taking the same payloads): a read-only
node joining a leader that holds as many entries (log compaction off, so that it gets entries,
not a snapshot), timed the same way. --profile runs the Quire
observer's journal thread under cProfile and prints its top functions.

Then the same through whole FEs (--fe-entries, 0 to skip): a one-follower Quire cluster
(edit_log_roll_num=1000000, so no image covers the entries) gets that many CREATE DATABASEs from
client processes, then a new observer joins with --helper, without ADMIN CHECKPOINT, so it loads the
image written at the cluster's start and takes every entry through the journal. Its own log says
when the first entry arrived and how fast it caught up from there.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import logging
import multiprocessing
import pstats
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402
from pysyncobj import SyncObj, SyncObjConf, replicated  # noqa: E402

from fe.cluster import launcher  # noqa: E402
from metadata import ops  # noqa: E402
from metadata.catalog import Catalog  # noqa: E402
from metadata.codec import encode_ops  # noqa: E402
from metadata.journal.replicated import ReplicatedJournal  # noqa: E402
from metadata.records import Column, Database, Partition, Table  # noqa: E402
from tests.harness import free_address, wait_until  # noqa: E402

logger = logging.getLogger("bench_catch_up")

TARGET = 50_000.0
FILL_TIMEOUT = 600.0
CATCH_UP_TIMEOUT = 600.0
POLL_SECONDS = 0.002
MAX_PENDING = 5_000
PROFILE_LINES = 30
FE_CLIENTS = 8
FE_OVERRIDES = ["edit_log_roll_num=1000000"]
JOURNAL_STARTED = re.compile(r"^(\S+ \S+) .*journal started at", re.MULTILINE)
FIRST_ENTRY = re.compile(r"^(\S+ \S+) .*first entries from the leader", re.MULTILINE)
CAUGHT_UP = re.compile(
    r"^(\S+ \S+) .*caught up with the leader at raft index (\d+): .*\(([\d.]+) entries/s\)",
    re.MULTILINE,
)


def payloads(count: int, workload: str) -> list[bytes]:
    """Entries as the FE journals them: CREATE DATABASE ("databases") or CREATE TABLE of a table
    of 8 columns in 4 range partitions of 8 buckets ("tables", a database per 100 tables), and a
    Timestamp after every second one."""
    made: list[bytes] = []
    number = 0
    while len(made) < count:
        number += 1
        if workload == "databases" or number % 100 == 1:
            made.append(encode_ops([ops.CreateDatabase(Database(100 * number, f"db_{number}"))]))
        else:
            made.append(
                encode_ops(
                    [ops.CreateTable(table(100 * number, 100 * (100 * ((number - 1) // 100) + 1)))]
                )
            )
        if number % 2 == 0 and len(made) < count:
            made.append(encode_ops([ops.Timestamp(1_700_000_000_000 + number)]))
    return made


def table(table_id: int, db_id: int) -> Table:
    columns = (
        Column("id", "BIGINT", nullable=False, is_key=True),
        Column("day", "DATE", nullable=False, is_key=True),
        *(Column(f"v{n}", "VARCHAR(64)" if n % 2 else "DECIMAL(18,2)") for n in range(6)),
    )
    bounds = ["'2026-01-01'", "'2026-04-01'", "'2026-07-01'", "'2026-10-01'", "'2027-01-01'"]
    partitions = tuple(
        Partition(
            table_id + 1 + n, f"p{n}", (bounds[n],), (bounds[n + 1],), table_id + 5 + 8 * n, 8
        )
        for n in range(4)
    )
    return Table(
        table_id,
        db_id,
        f"t_{table_id}",
        columns,
        key_columns=("id", "day"),
        distribution_columns=("id",),
        buckets=8,
        partition_columns=("day",),
        partitions=partitions,
        properties=(("replication_num", "1"),),
    )


def wait_for(condition, timeout: float, what: str) -> float:
    """Poll condition until true; returns time.time() when it was seen true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} took over {timeout} s")
        time.sleep(POLL_SECONDS)
    return time.time()


# Quire: a leader process and an observer process, each one ReplicatedJournal.


def quire_leader(directory, address, observer, count, workload, commands, results) -> None:
    journal = ReplicatedJournal(
        journal_dir=directory,
        self_address=address,
        partners=[],
        state_machine=Catalog(),
        applied_index=0,
        sync=True,
    )
    journal.start()
    try:
        assert journal.wait_leader(30), "the leader did not elect itself"
        journal.set_members([address], [observer])
        done: list[int] = []
        began = time.perf_counter()
        for number, payload in enumerate(payloads(count, workload), start=1):
            while number - len(done) > MAX_PENDING:
                time.sleep(POLL_SECONDS)
            journal.submit(payload, lambda result, error: done.append(1))
        wait_for(lambda: len(done) == count, FILL_TIMEOUT, "filling the leader")
        target = journal.status().last_index
        results.put((target, time.perf_counter() - began))
        commands.get()
    finally:
        journal.close()


def quire_observer(directory, leader, address, target, profile, results) -> None:
    started = time.time()
    logging.basicConfig(level=logging.WARNING)
    journal = ReplicatedJournal(
        journal_dir=directory,
        self_address=None,
        partners=[leader],
        state_machine=Catalog(),
        applied_index=0,
        sync=True,
        observer_address=address,
    )
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        run = journal._run

        def profiled_run() -> None:
            profiler.runcall(run)

        journal._run = profiled_run
    journal.start()
    try:
        first = wait_for(lambda: journal.status().last_index > 0, CATCH_UP_TIMEOUT, "a first entry")
        caught_up = wait_for(
            lambda: journal.status().last_applied >= target, CATCH_UP_TIMEOUT, "catching up"
        )
    finally:
        journal.close()
    report = ""
    if profiler is not None:
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(PROFILE_LINES)
        report = stream.getvalue()
    results.put((started, first, caught_up, report))


def bench_quire(
    directory: Path, count: int, workload: str, rounds: int, profile: bool
) -> list[tuple]:
    context = multiprocessing.get_context("spawn")
    leader_address, observer_address = free_address(), free_address()
    commands, results = context.Queue(), context.Queue()
    leader = context.Process(
        target=quire_leader,
        args=(
            str(directory / "leader"),
            leader_address,
            observer_address,
            count,
            workload,
            commands,
            results,
        ),
    )
    leader.start()
    figures = []
    try:
        target, fill_seconds = results.get(timeout=FILL_TIMEOUT)
        logger.info("Quire leader filled with %d entries in %.1f s", target, fill_seconds)
        for round_number in range(rounds):
            spawned = time.time()
            observer = context.Process(
                target=quire_observer,
                args=(
                    str(directory / f"observer{round_number}"),
                    leader_address,
                    observer_address,
                    target,
                    profile and round_number == 0,
                    results,
                ),
            )
            observer.start()
            started, first, caught_up, report = results.get(timeout=CATCH_UP_TIMEOUT)
            observer.join(timeout=60)
            figures.append(describe("Quire observer", target, spawned, started, first, caught_up))
            if report:
                logger.info("profile of the observer's journal thread:\n%s", report)
    finally:
        commands.put("stop")
        leader.join(timeout=60)
        if leader.is_alive():
            leader.kill()
    return figures


# The anchor: raw pysyncobj, a leader with an in-memory journal and a read-only node joining it.


class RawDatabases(SyncObj):
    def __init__(self, address: str | None, partners: list[str]):
        conf = SyncObjConf(
            commandsQueueSize=2 * MAX_PENDING,
            logCompactionMinEntries=10**9,  # entries, not a snapshot, reach the new node
            logCompactionMinTime=10**9,
        )
        super().__init__(address, partners, conf)
        self.applied = 0

    @replicated
    def create(self, payload: bytes) -> int:
        self.applied += 1
        return self.applied


def raw_leader(address, count, workload, commands, results) -> None:
    raw = RawDatabases(address, [])
    try:
        wait_for(raw._isLeader, 30, "raw pysyncobj to elect itself")
        done: list[int] = []
        began = time.perf_counter()
        for number, payload in enumerate(payloads(count, workload), start=1):
            while number - len(done) > MAX_PENDING:
                time.sleep(POLL_SECONDS)
            raw.create(payload, callback=lambda result, error: done.append(1))
        wait_for(lambda: len(done) == count, FILL_TIMEOUT, "filling raw pysyncobj")
        results.put((raw.raftLastApplied, time.perf_counter() - began))
        commands.get()
    finally:
        raw.destroy_synchronous()


def raw_observer(leader, target, results) -> None:
    started = time.time()
    raw = RawDatabases(None, [leader])
    try:
        first = wait_for(lambda: len(raw._SyncObj__raftLog) > 1, CATCH_UP_TIMEOUT, "a first entry")
        caught_up = wait_for(lambda: raw.raftLastApplied >= target, CATCH_UP_TIMEOUT, "catch-up")
    finally:
        raw.destroy_synchronous()
    results.put((started, first, caught_up, ""))


def bench_raw(count: int, workload: str) -> tuple:
    context = multiprocessing.get_context("spawn")
    leader_address = free_address()
    commands, results = context.Queue(), context.Queue()
    leader = context.Process(
        target=raw_leader, args=(leader_address, count, workload, commands, results)
    )
    leader.start()
    try:
        target, fill_seconds = results.get(timeout=FILL_TIMEOUT)
        logger.info("raw pysyncobj leader filled with %d entries in %.1f s", target, fill_seconds)
        spawned = time.time()
        observer = context.Process(target=raw_observer, args=(leader_address, target, results))
        observer.start()
        started, first, caught_up, _ = results.get(timeout=CATCH_UP_TIMEOUT)
        observer.join(timeout=60)
        return describe("raw pysyncobj read-only node", target, spawned, started, first, caught_up)
    finally:
        commands.put("stop")
        leader.join(timeout=60)
        if leader.is_alive():
            leader.kill()


# Whole FEs: a one-follower cluster, filled through the MySQL front, and a new observer.


def fe_client(port: int, first: int, count: int) -> None:
    connection = pymysql.connect(
        host="127.0.0.1", port=port, user="root", password="", autocommit=True
    )
    try:
        with connection.cursor() as cursor:
            for number in range(first, first + count):
                cursor.execute(f"CREATE DATABASE fill_{number}")
    finally:
        connection.close()


def log_time(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def bench_fe(directory: Path, count: int) -> tuple[float, float]:
    cluster = launcher.up(directory, 1, 0, overrides=FE_OVERRIDES)
    try:
        leader = cluster.nodes[0]
        fe_client_statement(leader.query_port, "ADMIN CHECKPOINT")  # the image the observer loads
        context = multiprocessing.get_context("spawn")
        each = -(-count // FE_CLIENTS)
        began = time.perf_counter()
        clients = [
            context.Process(target=fe_client, args=(leader.query_port, n * each, each))
            for n in range(FE_CLIENTS)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join(FILL_TIMEOUT)
        assert all(client.exitcode == 0 for client in clients), "a client failed"
        logger.info(
            "Quire FE leader filled with %d CREATE DATABASEs in %.1f s",
            each * FE_CLIENTS,
            time.perf_counter() - began,
        )
        observer = launcher.ClusterNode("observer", "OBSERVER", *launcher.free_ports(3))
        fe_client_statement(
            leader.query_port, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"'
        )
        spawned = time.time()
        launcher.start_process(cluster, observer, helper=f"http://127.0.0.1:{leader.http_port}")
        cluster.nodes.append(observer)
        cluster.save()
        log = observer.folder(directory) / "log" / "fe.log"

        def caught_up():
            if not launcher.process_alive(observer.pid):
                raise RuntimeError(f"the observer exited; see {log}")
            text = log.read_text() if log.exists() else ""
            first, done = FIRST_ENTRY.search(text), CAUGHT_UP.search(text)
            started = JOURNAL_STARTED.search(text)
            return (first or started, done) if done else None

        first, done = wait_until(caught_up, CATCH_UP_TIMEOUT, "the FE observer to catch up")
        first_at = log_time(first.group(1))
        entries = int(done.group(2))
        rate = float(done.group(3))
        logger.info(
            "Quire FE observer: process start to first entry %.2f s; caught up at raft index %d: "
            "%.0f entries/s from the first entry, %.2fx the %.0f/s target",
            first_at - spawned,
            entries,
            rate,
            rate / TARGET,
            TARGET,
        )
        return first_at - spawned, rate
    finally:
        launcher.stop(cluster)


def fe_client_statement(port: int, statement: str) -> None:
    connection = pymysql.connect(
        host="127.0.0.1", port=port, user="root", password="", autocommit=True
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
    finally:
        connection.close()


def describe(label, target, spawned, started, first, caught_up) -> tuple[float, float]:
    rate = target / max(caught_up - first, 1e-6)
    logger.info(
        "%s: process start to first entry %.2f s (interpreter up %.2f s); %d entries in %.2f s "
        "from the first entry: %.0f entries/s, %.2fx the %.0f/s target",
        label,
        first - spawned,
        started - spawned,
        target,
        caught_up - first,
        rate,
        rate / TARGET,
        TARGET,
    )
    return first - spawned, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3, help="Quire observers, one after another")
    parser.add_argument("--profile", action="store_true", help="cProfile the first observer")
    parser.add_argument("--no-anchor", action="store_true", help="skip raw pysyncobj")
    parser.add_argument("--fe-entries", type=int, default=100_000, help="0: no FE phase")
    parser.add_argument("--workload", choices=("databases", "tables"), default="databases")
    args = parser.parse_args()
    assert 0 <= args.entries <= 10_000_000 and 0 < args.rounds <= 20
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="bench_catch_up_") as directory:
        quire = (
            bench_quire(Path(directory), args.entries, args.workload, args.rounds, args.profile)
            if args.entries
            else []
        )
        fe = bench_fe(Path(directory) / "fe", args.fe_entries) if args.fe_entries else None
    anchor = None if args.no_anchor else bench_raw(args.entries, args.workload)
    rates = [rate for _, rate in quire] or [0.0]
    logger.info("--- summary ---")
    logger.info(
        "Quire observer, process start to first entry: %s s",
        ", ".join(f"{start:.2f}" for start, _ in quire),
    )
    logger.info(
        "Quire observer from the first entry: median %.0f entries/s (min %.0f, max %.0f), "
        "%.2fx the %.0f/s target",
        statistics.median(rates),
        min(rates),
        max(rates),
        statistics.median(rates) / TARGET,
        TARGET,
    )
    if anchor is not None:
        logger.info(
            "anchor raw pysyncobj: %.0f entries/s; Quire / raw pysyncobj: %.2fx",
            anchor[1],
            statistics.median(rates) / anchor[1],
        )
    if fe is not None:
        logger.info(
            "Quire FE observer: process start to first entry %.2f s; %.0f entries/s from the "
            "first entry, %.2fx the %.0f/s target",
            fe[0],
            fe[1],
            fe[1] / TARGET,
            TARGET,
        )


if __name__ == "__main__":
    main()
