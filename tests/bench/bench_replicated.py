"""Replication: a 3-follower Quire cluster beside a 3-member etcd cluster, on this machine.

Run by hand from the repository root (needs the etcd-server and etcd-client packages):

    python tests/bench/bench_replicated.py [--clients 16] [--seconds 15] [--rounds 10]
                                           [--entries 100000] [--no-check-perf]

1. Throughput: 16 client processes send CREATE TABLE (each to its own tables) to the Quire leader
   through PyMySQL, for --seconds; beside them 16 processes put ~200-byte values into etcd through
   its HTTP/JSON gateway (POST /v3/kv/put) on the etcd leader, for as long; then etcd's own
   `etcdctl check perf --load=s` (60 s) against the same cluster. Then Quire's journal alone,
   below the front: three processes, each a ReplicatedJournal voter (RocksDB, fsync), with 16
   threads committing ~200-byte payloads on its leader for --seconds.
2. Failover: kill -9 the leader, then time until a client retrying a write every 20 ms on a
   surviving node (each attempt given at most 1 s) gets its first acknowledgement; the killed
   node is restarted and waited for between rounds. Median and max over --rounds, for Quire and for etcd.
3. Observer catch-up: --entries CREATE TABLEs on the cluster, then a new observer joins with
   --helper and is timed until its journal id reaches the leader's: once joining the usual way
   (ADD OBSERVER + ADMIN CHECKPOINT, so it starts from a full image) and once without a new image
   (the cluster runs with edit_log_roll_num=1000000, so the observer starts from the image written
   when the followers joined and replays the entries through the journal). Both are timed from
   the observer's process start; the journal case also prints the rate the observer logs itself,
   from its journal's start to being in step with the leader.

The Quire cluster runs with edit_log_roll_num=1000000 throughout, so no automatic checkpoint
interferes with any phase. The ratios come last.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402
import requests  # noqa: E402

from fe.cluster import launcher as quire_cluster  # noqa: E402
from tests.harness import wait_until  # noqa: E402

logger = logging.getLogger("bench_replicated")

HOST = "127.0.0.1"
DATABASE = "bench_replicated"
MAX_WORKERS = 64
MAX_ROUNDS = 50
MAX_ENTRIES = 1_000_000
WORKER_START_TIMEOUT = 120.0
REQUEST_TIMEOUT = 30.0
RETRY_SECONDS = 0.02
FAILOVER_TIMEOUT = 60.0
ATTEMPT_TIMEOUT = (
    1.0  # per failover attempt; etcd otherwise holds a put for its 7 s request timeout
)
FILL_SECONDS = 900.0
CATCH_UP_TIMEOUT = 600.0
READY_TIMEOUT = 90.0
VALUE_BYTES = 200
CATCH_UP_TARGET = 50_000.0
CHECK_PERF_TIMEOUT = 180.0
ROLL_OVERRIDE = "edit_log_roll_num=1000000"
CAUGHT_UP = re.compile(r"((?:caught up with|in step with) the leader at raft index .*)")
JOURNAL_RATE = re.compile(r"\(([\d.]+) entries/s\)")


@dataclass(frozen=True)
class Figure:
    operations: int
    elapsed: float
    p50: float
    p99: float

    @classmethod
    def of(cls, elapsed: float, latencies: list[float]) -> Figure:
        assert latencies, "no operation finished"
        ordered = sorted(latencies)
        p99 = ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]
        return cls(len(ordered), elapsed, statistics.median(ordered), p99)

    @property
    def rate(self) -> float:
        return self.operations / self.elapsed

    def describe(self) -> str:
        return (
            f"{self.rate:8.0f}/s  ({self.operations} in {self.elapsed:.1f}s, "
            f"p50 {self.p50 * 1000:.2f} ms, p99 {self.p99 * 1000:.2f} ms)"
        )


# Client processes: each connects, waits at the barrier, then works until its count or deadline.


def quire_connect(port: int, timeout: float = REQUEST_TIMEOUT):
    return pymysql.connect(
        ssl_disabled=True,  # the anchors serve no TLS
        host=HOST,
        port=port,
        user="root",
        password="",
        autocommit=True,
        connect_timeout=timeout,
        read_timeout=timeout,
        write_timeout=timeout,
    )


def create_table_statement(name: str) -> str:
    return (
        f"CREATE TABLE {DATABASE}.{name} (k INT, v VARCHAR(20)) DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 8"
    )


def quire_worker(port, prefix, worker, count, seconds, barrier, results):
    latencies: list[float] = []
    connection = quire_connect(port)
    try:
        with connection.cursor() as cursor:
            barrier.wait(WORKER_START_TIMEOUT)
            deadline = time.perf_counter() + seconds
            for index in range(count):
                if time.perf_counter() > deadline:
                    break
                began = time.perf_counter()
                cursor.execute(create_table_statement(f"{prefix}_{worker}_{index}"))
                latencies.append(time.perf_counter() - began)
    finally:
        connection.close()
        results.put(latencies)


def etcd_worker(url, worker, count, seconds, barrier, results):
    latencies: list[float] = []
    value = base64.b64encode(os.urandom(VALUE_BYTES * 3 // 4)).decode()
    with requests.Session() as session:
        session.post(url, json={"key": base64.b64encode(b"warm").decode(), "value": value})
        try:
            barrier.wait(WORKER_START_TIMEOUT)
            deadline = time.perf_counter() + seconds
            for index in range(count):
                if time.perf_counter() > deadline:
                    break
                key = base64.b64encode(f"bench/{worker}/{index}".encode()).decode()
                began = time.perf_counter()
                answer = session.post(
                    url, json={"key": key, "value": value}, timeout=REQUEST_TIMEOUT
                )
                answer.raise_for_status()
                assert "header" in answer.json(), answer.text
                latencies.append(time.perf_counter() - began)
        finally:
            results.put(latencies)


def run_workers(target, arguments, clients: int, count: int, seconds: float) -> Figure:
    """clients processes running target(*arguments, worker, count_each, seconds, barrier, results)."""
    assert 0 < clients <= MAX_WORKERS
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(clients + 1)
    results = context.Queue()
    each = -(-count // clients)
    processes = [
        context.Process(target=target, args=(*arguments, w, each, seconds, barrier, results))
        for w in range(clients)
    ]
    for process in processes:
        process.start()
    try:
        barrier.wait(WORKER_START_TIMEOUT)
        began = time.perf_counter()
        latencies = []
        for _ in processes:
            latencies.extend(results.get(timeout=seconds + WORKER_START_TIMEOUT + REQUEST_TIMEOUT))
        elapsed = time.perf_counter() - began
    finally:
        for process in processes:
            process.join(timeout=REQUEST_TIMEOUT)
            if process.is_alive():
                process.kill()
    assert all(process.exitcode == 0 for process in processes), "a client process failed"
    return Figure.of(elapsed, latencies)


# Quire's journal alone: three processes, each one ReplicatedJournal voter, no MySQL front.


class _Counter:
    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        return raft_index


def journal_member(directory, address, partners, threads, seconds, commands, results):
    """One voter. Answers "leader?" and, when it leads, "drive" (commits from threads)."""
    from metadata.journal.replicated import ReplicatedJournal

    journal = ReplicatedJournal(
        journal_dir=directory,
        self_address=address,
        partners=partners,
        state_machine=_Counter(),
        applied_index=0,
        sync=True,
    )
    journal.start()
    try:
        while (command := commands.get()) != "stop":
            if command == "leader?":
                results.put((address, journal.status().is_leader))
                continue
            assert command == "drive"
            results.put(drive_journal(journal, threads, seconds))
    finally:
        journal.close()


def drive_journal(journal, threads: int, seconds: float) -> tuple[float, list[float]]:
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    payload = b"v" * VALUE_BYTES

    def run() -> None:
        mine = []
        while time.monotonic() < stop_at:
            began = time.perf_counter()
            journal.commit(payload, timeout=REQUEST_TIMEOUT)
            mine.append(time.perf_counter() - began)
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - began, latencies


def journal_throughput(directory: Path, threads: int, seconds: float) -> Figure:
    """Fsynced commits/s of a 3-voter ReplicatedJournal (3 processes) from threads on its leader."""
    context = multiprocessing.get_context("spawn")
    addresses = [f"{HOST}:{port}" for port in quire_cluster.free_ports(3)]
    members = []
    for number, address in enumerate(addresses):
        commands, results = context.Queue(), context.Queue()
        process = context.Process(
            target=journal_member,
            args=(
                str(directory / f"journal{number}"),
                address,
                [a for a in addresses if a != address],
                threads,
                seconds,
                commands,
                results,
            ),
        )
        process.start()
        members.append((process, commands, results))
    try:

        def leader():
            for _, commands, _ in members:
                commands.put("leader?")
            answers = [results.get(timeout=REQUEST_TIMEOUT) for _, _, results in members]
            leading = [n for n, (_, is_leader) in enumerate(answers) if is_leader]
            return leading[0] + 1 if leading else None

        number = wait_until(leader, READY_TIMEOUT, "the journal's leader") - 1
        _, commands, results = members[number]
        commands.put("drive")
        elapsed, latencies = results.get(timeout=seconds + READY_TIMEOUT)
        return Figure.of(elapsed, latencies)
    finally:
        for _, commands, _ in members:
            commands.put("stop")
        for process, _, _ in members:
            process.join(timeout=REQUEST_TIMEOUT)
            if process.is_alive():
                process.kill()


# Quire.


class QuireBench:
    def __init__(self, directory: Path, overrides: list[str] = ()):
        self.directory = directory
        self.cluster = quire_cluster.up(directory, 3, 0, overrides=[ROLL_OVERRIDE, *overrides])
        self.token = self.cluster.token()
        assert self.token, "no cluster token in fe1's VERSION"
        self.execute(self.leader(), f"CREATE DATABASE IF NOT EXISTS {DATABASE}")

    def leader(self) -> quire_cluster.ClusterNode:
        leader = quire_cluster.wait_leader(self.directory)
        assert leader is not None, "the Quire cluster has no leader"
        return next(node for node in self.cluster.nodes if node.name == leader.name)

    def execute(self, node, *statements: str) -> None:
        connection = quire_connect(node.query_port)
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            connection.close()

    def journal_id(self, node) -> int | None:
        try:
            answer = requests.get(
                f"http://{HOST}:{node.http_port}/journal_id",
                headers={"X-Quire-Token": self.token},
                timeout=1,
            )
            return int(answer.json()["journal_id"]) if answer.ok else None
        except (requests.RequestException, ValueError, KeyError):
            return None

    def throughput(self, clients: int, seconds: float) -> Figure:
        leader = self.leader()
        return run_workers(quire_worker, (leader.query_port, "t"), clients, 10**9, seconds)

    def fill(self, clients: int, entries: int) -> Figure:
        leader = self.leader()
        return run_workers(
            quire_worker, (leader.query_port, "fill"), clients, entries, FILL_SECONDS
        )

    def failover(self, round_number: int) -> float:
        leader = self.leader()
        survivor = next(n for n in self.cluster.nodes if n is not leader and n.role == "FOLLOWER")
        os.kill(leader.pid, signal.SIGKILL)
        killed = time.perf_counter()
        attempt = 0
        connection = None
        while True:
            attempt += 1
            try:
                if connection is None:
                    connection = quire_connect(survivor.query_port, timeout=ATTEMPT_TIMEOUT)
                with connection.cursor() as cursor:
                    cursor.execute(create_table_statement(f"failover_{round_number}_{attempt}"))
                break
            except pymysql.MySQLError:
                if connection is not None and not connection.open:
                    connection = None
                if time.perf_counter() - killed > FAILOVER_TIMEOUT:
                    raise TimeoutError(
                        "no write acknowledged after the Quire leader died"
                    ) from None
                time.sleep(RETRY_SECONDS)
        acknowledged = time.perf_counter() - killed
        if connection is not None:
            connection.close()
        quire_cluster.wait_exit([leader], quire_cluster.KILL_TIMEOUT_SECONDS)
        self.restart(leader)
        return acknowledged

    def restart(self, node) -> None:
        quire_cluster.start_process(self.cluster, node, helper=None)
        self.cluster.save()
        quire_cluster.wait_ready(self.cluster, [node])
        self.wait_caught_up(node)

    def wait_caught_up(self, node) -> None:
        leader = self.leader()
        target = self.journal_id(leader)
        assert target is not None
        wait_until(
            lambda: (self.journal_id(node) or -1) >= target,
            READY_TIMEOUT,
            f"{node.name} to catch up",
        )

    def observer_catch_up(self, name: str, checkpoint: bool) -> tuple[int, int, float, str]:
        """Join a new observer: (leader's journal id, journal id of the image it started from,
        seconds from its start until its journal id reached the leader's, and the observer's own
        log line on how fast its journal caught up)."""
        leader = self.leader()
        ports = quire_cluster.free_ports(3)
        observer = quire_cluster.ClusterNode(name, "OBSERVER", *ports)
        statements = [f'ALTER SYSTEM ADD OBSERVER "{HOST}:{observer.edit_log_port}"']
        if checkpoint:
            statements.append("ADMIN CHECKPOINT")
        self.execute(leader, *statements)
        target = self.journal_id(leader)
        assert target is not None
        began = time.perf_counter()
        quire_cluster.start_process(
            self.cluster, observer, helper=f"http://{HOST}:{leader.http_port}"
        )
        self.cluster.nodes.append(observer)
        self.cluster.save()

        def caught_up() -> bool:
            if not quire_cluster.process_alive(observer.pid):
                raise RuntimeError(f"{name} exited; see {observer.folder(self.directory)}")
            return (self.journal_id(observer) or -1) >= target

        wait_until(caught_up, CATCH_UP_TIMEOUT, f"observer {name} to catch up")
        elapsed = time.perf_counter() - began
        folder = observer.folder(self.directory)
        image_ids = [
            int(p.name.split(".")[1])
            for p in (folder / "meta" / "image").glob("image.*")
            if p.suffix[1:].isdigit()
        ]
        log = folder / "log" / "fe.log"
        caught_up_line = wait_until(
            lambda: next((m.group(1) for m in CAUGHT_UP.finditer(log.read_text()) if m), None),
            READY_TIMEOUT,
            f"observer {name} to log that it caught up",
        )
        return target, min(image_ids, default=0), elapsed, caught_up_line

    def stop(self) -> None:
        quire_cluster.stop(self.cluster)


# etcd.


@dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    process: subprocess.Popen | None = None

    @property
    def client_url(self) -> str:
        return f"http://{HOST}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{HOST}:{self.peer_port}"


class EtcdBench:
    def __init__(self, directory: Path):
        ports = quire_cluster.free_ports(6)
        self.members = [
            EtcdMember(f"etcd{i + 1}", ports[2 * i], ports[2 * i + 1], directory / f"etcd{i + 1}")
            for i in range(3)
        ]
        self.initial_cluster = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        try:
            for member in self.members:
                self.start(member)
            for member in self.members:
                self.wait_healthy(member)
            wait_until(self.leader, READY_TIMEOUT, "an etcd leader")
        except BaseException:
            self.stop()
            raise

    def start(self, member: EtcdMember) -> None:
        member.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            "etcd",
            f"--name={member.name}",
            f"--data-dir={member.data_dir}",
            f"--listen-client-urls={member.client_url}",
            f"--advertise-client-urls={member.client_url}",
            f"--listen-peer-urls={member.peer_url}",
            f"--initial-advertise-peer-urls={member.peer_url}",
            f"--initial-cluster={self.initial_cluster}",
            "--initial-cluster-state=new",
            "--initial-cluster-token=bench-replicated",
            "--logger=zap",
            "--log-level=error",
        ]
        with open(member.data_dir.parent / f"{member.name}.out", "ab") as output:
            member.process = subprocess.Popen(
                args, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def wait_healthy(self, member: EtcdMember) -> None:
        def healthy() -> bool:
            assert member.process.poll() is None, f"{member.name} exited"
            try:
                answer = requests.get(f"{member.client_url}/health", timeout=1)
                return answer.ok and answer.json().get("health") == "true"
            except (requests.RequestException, ValueError):
                return False

        wait_until(healthy, READY_TIMEOUT, f"{member.name} to be healthy")

    def endpoints(self, members=None) -> str:
        return ",".join(m.client_url for m in (members or self.members))

    def leader(self) -> EtcdMember | None:
        """The member that says it leads, from `etcdctl endpoint status -w json`."""
        alive = [m for m in self.members if m.process and m.process.poll() is None]
        answer = subprocess.run(
            ["etcdctl", f"--endpoints={self.endpoints(alive)}", "endpoint", "status", "-w", "json"],
            capture_output=True,
            text=True,
            timeout=REQUEST_TIMEOUT,
        )
        try:
            statuses = json.loads(answer.stdout)
        except ValueError:
            return None
        for entry in statuses:
            status = entry["Status"]
            if status["leader"] and status["header"]["member_id"] == status["leader"]:
                return next(m for m in self.members if m.client_url == entry["Endpoint"])
        return None

    def throughput(self, clients: int, seconds: float) -> Figure:
        url = f"{self.leader().client_url}/v3/kv/put"
        return run_workers(etcd_worker, (url,), clients, 10**9, seconds)

    def check_perf(self) -> tuple[str, float | None]:
        answer = subprocess.run(
            ["etcdctl", f"--endpoints={self.endpoints()}", "check", "perf", "--load=s"],
            capture_output=True,
            text=True,
            timeout=CHECK_PERF_TIMEOUT,
        )
        lines = [
            line.strip()
            for line in (answer.stdout + answer.stderr).replace("\r", "\n").splitlines()
            if line.strip() and ("PASS" in line or "FAIL" in line or "Throughput" in line)
        ]
        found = re.search(r"Throughput is (\d+) writes/s", answer.stdout + answer.stderr)
        return "; ".join(lines), float(found.group(1)) if found else None

    def failover(self, round_number: int) -> float:
        leader = wait_until(self.leader, READY_TIMEOUT, "an etcd leader")
        survivor = next(m for m in self.members if m is not leader)
        url = f"{survivor.client_url}/v3/kv/put"
        value = base64.b64encode(b"v" * VALUE_BYTES).decode()
        leader.process.send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        attempt = 0
        with requests.Session() as session:
            while True:
                attempt += 1
                key = base64.b64encode(f"failover/{round_number}/{attempt}".encode()).decode()
                try:
                    answer = session.post(
                        url, json={"key": key, "value": value}, timeout=ATTEMPT_TIMEOUT
                    )
                    if answer.ok and "header" in answer.json():
                        break
                except (requests.RequestException, ValueError):
                    pass
                if time.perf_counter() - killed > FAILOVER_TIMEOUT:
                    raise TimeoutError("no put acknowledged after the etcd leader died")
                time.sleep(RETRY_SECONDS)
        acknowledged = time.perf_counter() - killed
        leader.process.wait(timeout=REQUEST_TIMEOUT)
        self.start(leader)
        self.wait_healthy(leader)
        wait_until(self.leader, READY_TIMEOUT, "an etcd leader")
        return acknowledged

    def stop(self) -> None:
        for member in self.members:
            if member.process and member.process.poll() is None:
                member.process.terminate()
        for member in self.members:
            if member.process:
                try:
                    member.process.wait(timeout=REQUEST_TIMEOUT)
                except subprocess.TimeoutExpired:
                    member.process.kill()
                    member.process.wait()


def ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator:
        return "n/a"
    return f"{numerator / denominator:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=15.0, help="each throughput run")
    parser.add_argument("--rounds", type=int, default=10, help="failover rounds")
    parser.add_argument(
        "--entries", type=int, default=100_000, help="journal entries before observers join"
    )
    parser.add_argument(
        "--no-check-perf", action="store_true", help="skip `etcdctl check perf` (60 s)"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="conf key for the Quire FEs",
    )
    args = parser.parse_args()
    assert 0 < args.clients <= MAX_WORKERS
    assert 0 < args.rounds <= MAX_ROUNDS
    assert 0 < args.entries <= MAX_ENTRIES
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("quire.cluster").setLevel(logging.WARNING)
    if shutil.which("etcd") is None or shutil.which("etcdctl") is None:
        raise SystemExit("etcd and etcdctl are needed: apt-get install etcd-server etcd-client")

    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench_replicated_") as temporary:
        root = Path(temporary)
        quire = etcd = None
        try:
            began = time.perf_counter()
            quire = QuireBench(root / "quire", args.override)
            etcd = EtcdBench(root / "etcd")
            logger.info("clusters up in %.1f s", time.perf_counter() - began)

            quire_ddl = quire.throughput(args.clients, args.seconds)
            logger.info(
                "Quire replicated CREATE TABLE, %d clients: %s", args.clients, quire_ddl.describe()
            )
            etcd_put = etcd.throughput(args.clients, args.seconds)
            logger.info(
                "etcd put (HTTP gateway), %d clients:     %s", args.clients, etcd_put.describe()
            )
            results["quire_ddl"], results["etcd_put"] = quire_ddl, etcd_put
            journal = journal_throughput(root / "journal", args.clients, args.seconds)
            logger.info(
                "Quire journal alone (3 voters), %d threads: %s", args.clients, journal.describe()
            )
            results["quire_journal"] = journal
            if not args.no_check_perf:
                summary, perf = etcd.check_perf()
                logger.info("etcdctl check perf --load=s: %s", summary or "(no summary)")
                results["check_perf"] = perf

            quire_failovers = []
            for round_number in range(args.rounds):
                quire_failovers.append(quire.failover(round_number))
                logger.info(
                    "Quire failover round %d: %.3f s", round_number + 1, quire_failovers[-1]
                )
            etcd_failovers = []
            for round_number in range(args.rounds):
                etcd_failovers.append(etcd.failover(round_number))
                logger.info("etcd failover round %d: %.3f s", round_number + 1, etcd_failovers[-1])
            results["quire_failovers"], results["etcd_failovers"] = quire_failovers, etcd_failovers
            etcd.stop()
            etcd = None

            fill = quire.fill(args.clients, args.entries)
            logger.info("filled %d CREATE TABLEs: %s", args.entries, fill.describe())
            target, image_id, elapsed, line = quire.observer_catch_up("observer_journal", False)
            results["journal_catch_up"] = (target, image_id, elapsed, line)
            logger.info(
                "observer via journal: leader journal id %d, started from image %d, "
                "caught up in %.2f s from its process start: %.0f entries/s replayed; "
                "its journal: %s",
                target,
                image_id,
                elapsed,
                (target - image_id) / elapsed,
                line,
            )
            target, image_id, elapsed, line = quire.observer_catch_up("observer_image", True)
            results["image_catch_up"] = (target, image_id, elapsed, line)
            logger.info(
                "observer via image: leader journal id %d, started from image %d, "
                "caught up in %.2f s from its process start: %.0f entries/s covered",
                target,
                image_id,
                elapsed,
                target / elapsed,
            )
        finally:
            if etcd is not None:
                etcd.stop()
            if quire is not None:
                quire.stop()
        logger.info("total %.0f s", time.perf_counter() - began)

    report(results)


def report(results: dict) -> None:
    quire_ddl = results.get("quire_ddl")
    etcd_put = results.get("etcd_put")
    logger.info("--- ratios ---")
    if quire_ddl and etcd_put:
        logger.info(
            "Quire DDL/s / etcd puts/s:              %s", ratio(quire_ddl.rate, etcd_put.rate)
        )
        logger.info(
            "Quire DDL/s / etcdctl check perf writes/s: %s",
            ratio(quire_ddl.rate, results.get("check_perf")),
        )
    if results.get("quire_journal"):
        logger.info(
            "Quire journal commits/s / etcdctl check perf writes/s: %s",
            ratio(results["quire_journal"].rate, results.get("check_perf")),
        )
        if etcd_put:
            logger.info(
                "Quire journal commits/s / etcd puts/s:   %s",
                ratio(results["quire_journal"].rate, etcd_put.rate),
            )
    if results.get("quire_failovers") and results.get("etcd_failovers"):
        quire_times, etcd_times = results["quire_failovers"], results["etcd_failovers"]
        logger.info(
            "failover Quire median %.3f s max %.3f s; etcd median %.3f s max %.3f s",
            statistics.median(quire_times),
            max(quire_times),
            statistics.median(etcd_times),
            max(etcd_times),
        )
        logger.info(
            "failover Quire median / etcd median:   %s",
            ratio(statistics.median(quire_times), statistics.median(etcd_times)),
        )
    for key, label, replayed in (
        ("journal_catch_up", "observer catch-up via journal", True),
        ("image_catch_up", "observer catch-up via image", False),
    ):
        if key in results:
            target, image_id, elapsed, line = results[key]
            rate = (target - image_id if replayed else target) / elapsed
            logger.info(
                "%s, from process start: %.0f entries/s / %.0f target: %s",
                label,
                rate,
                CATCH_UP_TARGET,
                ratio(rate, CATCH_UP_TARGET),
            )
            journal_rate = JOURNAL_RATE.search(line)
            if replayed and journal_rate:
                rate = float(journal_rate.group(1))
                logger.info(
                    "%s, from its journal's start: %.0f entries/s / %.0f target: %s",
                    label,
                    rate,
                    CATCH_UP_TARGET,
                    ratio(rate, CATCH_UP_TARGET),
                )


if __name__ == "__main__":
    main()
