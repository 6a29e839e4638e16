"""Simple statements per second through Quire's MySQL front, against a MariaDB server.

Run by hand from the repository root (needs the Debian packages mariadb-server and sysbench):

    python tests/bench/bench_front.py [--seconds 3] [--connections 1,16] [--clients pymysql,sysbench]

The benchmark starts a `quire up` process and a MariaDB server (/usr/sbin/mariadbd, its own
temporary datadir, a free loopback port), each with a database of a few tables, then sends each
of SELECT 1, SELECT @@version_comment, SHOW TABLES and an information_schema query (Quire's runs in
its query engine) from 1 and from 16 connections to each server in turn with the same client code:

- pymysql: one PyMySQL connection per worker process (so the client is not GIL-bound), each
  looping execute + fetchall for a fixed time window shared by all workers;
- sysbench: a small lua script that repeats the one statement (libmariadb, written in C).

Besides queries per second it shows each server's CPU time per query (its process tree's user +
system time during the run), which depends less on what else runs on the machine. With --repeat N
each case runs N times, interleaved, and the best run counts, which helps on a shared machine.
The ratios Quire / MariaDB come last.
"""

from __future__ import annotations

import argparse
import functools
import logging
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402

from tests.harness import QuireProcess, free_port, wait_until  # noqa: E402

logger = logging.getLogger("bench_front")

DATABASE = "bench_front"
STATEMENTS = (
    "SELECT 1",
    "SELECT @@version_comment",
    "SHOW TABLES",
    f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{DATABASE}'",
)
TABLES = 10
MAX_CONNECTIONS = 64
CONNECT_LEAD_SECONDS = 1.5  # workers connect within this, then all start at once
MARIADB_START_TIMEOUT = 60.0
MARIADBD = "/usr/sbin/mariadbd"

REPEAT_LUA = """
sysbench.cmdline.options = {
    statement = {"the statement to repeat", "SELECT 1"}
}
function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
end
function event()
    con:query(sysbench.opt.statement)
end
function thread_done()
    con:disconnect()
end
"""


@dataclass(frozen=True)
class Server:
    name: str
    port: int
    pid: int


@dataclass(frozen=True)
class Figure:
    queries_per_second: float
    cpu_micros_per_query: float


# Process CPU accounting (Linux /proc).


def process_tree(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = [pid], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def cpu_seconds(pid: int) -> float:
    """User + system time of a process and its descendants (threads included)."""
    ticks = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


# The servers.


def start_quire(folder: Path) -> tuple[QuireProcess, Server]:
    quire = QuireProcess(folder / "quire").start()
    connection = quire.connect(ssl_disabled=True)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
        for number in range(TABLES):
            cursor.execute(
                f"CREATE TABLE {DATABASE}.t_{number} (k INT, v VARCHAR(20)) "
                "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 8"
            )
    connection.close()
    return quire, Server("Quire", quire.query_port, quire.process.pid)


class MariaDB:
    """A throw-away mariadbd on a free loopback port, its datadir under folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.datadir = folder / "data"
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> Server:
        self.folder.mkdir(parents=True, exist_ok=True)
        install = subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--user=root",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=MARIADB_START_TIMEOUT,
        )
        assert install.returncode == 0, install.stdout + install.stderr
        self.output = open(self.folder / "mariadbd.out", "ab")
        self.process = subprocess.Popen(
            [
                MARIADBD,
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.folder / 'mariadbd.sock'}",
                f"--pid-file={self.folder / 'mariadbd.pid'}",
                f"--log-error={self.folder / 'mariadbd.err'}",
                "--user=root",
                "--skip-log-bin",
                f"--max-connections={MAX_CONNECTIONS + 16}",
            ],
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        wait_until(self._accepts, MARIADB_START_TIMEOUT, "mariadbd to accept connections")
        connection = self.connect()
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE}")
            for number in range(TABLES):
                cursor.execute(f"CREATE TABLE {DATABASE}.t_{number} (k INT, v VARCHAR(20))")
        connection.close()
        return Server("MariaDB", self.port, self.process.pid)

    def _accepts(self) -> bool:
        if self.process.poll() is not None:
            log = self.folder / "mariadbd.err"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise AssertionError(f"mariadbd exited with {self.process.returncode}:\n{tail}")
        try:
            self.connect().close()
            return True
        except pymysql.err.OperationalError:
            return False

    def connect(self):
        return pymysql.connect(
            ssl_disabled=True,  # the anchors serve no TLS
            host="127.0.0.1",
            port=self.port,
            user="root",
            password="",
            autocommit=True,
        )

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process:
            self.output.close()


# The clients.


def client_worker(tasks, results, niceness: int) -> None:
    """A PyMySQL client process: takes (port, statement, start_at, stop_at) tasks until None."""
    os.nice(niceness)
    while (task := tasks.get()) is not None:
        port, statement, start_at, stop_at = task
        queries, on_time, error = 0, False, None
        try:
            connection = pymysql.connect(
                ssl_disabled=True,  # the anchors serve no TLS
                host="127.0.0.1",
                port=port,
                user="root",
                password="",
                database=DATABASE,
                autocommit=True,
            )
            try:
                cursor = connection.cursor()
                on_time = time.monotonic() < start_at
                time.sleep(max(start_at - time.monotonic(), 0))
                while time.monotonic() < stop_at:
                    cursor.execute(statement)
                    cursor.fetchall()
                    queries += 1
            finally:
                connection.close()
        except Exception as failure:  # reported to the parent, which fails the run
            error = repr(failure)
        results.put((queries, on_time, error))


class ClientPool:
    """Worker processes that stay up across runs; a run gives a task to `connections` of them."""

    def __init__(self, size: int, niceness: int):
        assert 0 < size <= MAX_CONNECTIONS
        context = multiprocessing.get_context("spawn")
        self.tasks = context.Queue(maxsize=size)
        self.results = context.Queue(maxsize=size)
        self.workers = [
            context.Process(
                target=client_worker, args=(self.tasks, self.results, niceness), daemon=True
            )
            for _ in range(size)
        ]
        for worker in self.workers:
            worker.start()

    def run(self, server: Server, statement: str, connections: int, seconds: float) -> float:
        assert 0 < connections <= len(self.workers)
        start_at = time.monotonic() + CONNECT_LEAD_SECONDS
        stop_at = start_at + seconds
        for _ in range(connections):
            self.tasks.put((server.port, statement, start_at, stop_at))
        outcomes = [
            self.results.get(timeout=CONNECT_LEAD_SECONDS + seconds + 60)
            for _ in range(connections)
        ]
        errors = [error for _, _, error in outcomes if error]
        assert not errors, f"{server.name}, {statement}: {errors[0]}"
        late = sum(1 for _, on_time, _ in outcomes if not on_time)
        assert not late, f"{late} client(s) connected after the start: raise CONNECT_LEAD_SECONDS"
        return sum(queries for queries, _, _ in outcomes) / seconds

    def close(self) -> None:
        for _ in self.workers:
            self.tasks.put(None)
        for worker in self.workers:
            worker.join(timeout=10)


def run_sysbench(
    script: Path, server: Server, statement: str, connections: int, seconds: int, niceness: int
) -> float:
    done = subprocess.run(
        [
            "nice",
            f"-n{niceness}",
            "sysbench",
            str(script),
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={server.port}",
            "--mysql-user=root",
            "--mysql-password=",
            f"--mysql-db={DATABASE}",
            f"--threads={connections}",
            f"--time={seconds}",
            f"--statement={statement}",
            "run",
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    assert done.returncode == 0, f"{server.name}, {statement}: {done.stdout}{done.stderr}"
    match = re.search(r"queries:\s+\d+\s+\((\d+(?:\.\d+)?) per sec\.\)", done.stdout)
    assert match, done.stdout
    return float(match.group(1))


def measure(server: Server, run) -> Figure:
    """Run once, with the server's CPU time around it."""
    cpu_before = cpu_seconds(server.pid)
    began = time.monotonic()
    queries_per_second = run()
    elapsed = time.monotonic() - began
    cpu = cpu_seconds(server.pid) - cpu_before
    queries = max(queries_per_second * elapsed, 1)
    return Figure(queries_per_second, cpu / queries * 1e6)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="length of each run")
    parser.add_argument("--connections", default="1,16", help="comma-separated")
    parser.add_argument("--clients", default="pymysql,sysbench", help="pymysql and/or sysbench")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each case; the best one counts"
    )
    parser.add_argument(
        "--client-nice",
        type=int,
        default=0,
        help="niceness of the client processes (say 10, so that on a busy machine the servers "
        "are not starved by their own clients)",
    )
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    connection_counts = [int(text) for text in arguments.connections.split(",")]
    clients = arguments.clients.split(",")
    assert connection_counts and all(0 < n <= MAX_CONNECTIONS for n in connection_counts)
    assert clients and set(clients) <= {"pymysql", "sysbench"}, "clients: pymysql, sysbench"
    assert arguments.seconds > 0 and arguments.repeat > 0 and 0 <= arguments.client_nice <= 19
    assert Path(MARIADBD).exists(), "MariaDB is needed (Debian package mariadb-server)"
    if "sysbench" in clients and not shutil.which("sysbench"):
        logger.warning("sysbench is not installed (Debian package sysbench): pymysql only")
        clients.remove("sysbench")
    logger.info("load average before: %.2f %.2f %.2f", *os.getloadavg())

    results: dict[tuple[str, str, int, str], Figure] = {}
    with tempfile.TemporaryDirectory(prefix="bench-front-") as directory:
        folder = Path(directory)
        script = folder / "repeat.lua"
        script.write_text(REPEAT_LUA)
        pool = (
            ClientPool(max(connection_counts), arguments.client_nice)
            if "pymysql" in clients
            else None
        )
        mariadb = MariaDB(folder / "mariadb")
        quire = None
        try:
            quire, quire_server = start_quire(folder)
            mariadb_server = mariadb.start()
            cases = [
                (client, statement, connections, server)
                for client in clients
                for statement in STATEMENTS
                for connections in connection_counts
                for server in (quire_server, mariadb_server)
            ]
            for _ in range(arguments.repeat):
                for client, statement, connections, server in cases:
                    if client == "pymysql":
                        run = functools.partial(
                            pool.run, server, statement, connections, arguments.seconds
                        )
                    else:
                        run = functools.partial(
                            run_sysbench,
                            script,
                            server,
                            statement,
                            connections,
                            arguments.seconds,
                            arguments.client_nice,
                        )
                    key = (client, statement, connections, server.name)
                    figure = measure(server, run)
                    best = results.get(key)
                    if best is None or figure.queries_per_second > best.queries_per_second:
                        results[key] = figure
        finally:
            if pool:
                pool.close()
            mariadb.stop()
            if quire:
                quire.stop()

    logger.info("load average after:  %.2f %.2f %.2f", *os.getloadavg())
    width = max(len(statement) for statement in STATEMENTS)
    logger.info(
        "%-8s %-*s %5s %12s %12s %11s %11s %7s",
        "client",
        width,
        "statement",
        "conns",
        "Quire q/s",
        "MariaDB q/s",
        "Quire us/q",
        "MariaDB us/q",
        "ratio",
    )
    ratios, cpu_ratios = [], []
    for client in clients:
        for statement in STATEMENTS:
            for connections in connection_counts:
                quire_figure = results[(client, statement, connections, "Quire")]
                mariadb_figure = results[(client, statement, connections, "MariaDB")]
                ratio = quire_figure.queries_per_second / mariadb_figure.queries_per_second
                ratios.append(ratio)
                if quire_figure.cpu_micros_per_query and mariadb_figure.cpu_micros_per_query:
                    cpu_ratios.append(
                        mariadb_figure.cpu_micros_per_query / quire_figure.cpu_micros_per_query
                    )
                logger.info(
                    "%-8s %-*s %5d %12.0f %12.0f %11.0f %11.0f %6.2fx",
                    client,
                    width,
                    statement,
                    connections,
                    quire_figure.queries_per_second,
                    mariadb_figure.queries_per_second,
                    quire_figure.cpu_micros_per_query,
                    mariadb_figure.cpu_micros_per_query,
                    ratio,
                )
    logger.info("(us/q: the server's CPU microseconds per query; ratio: Quire q/s / MariaDB q/s)")
    if cpu_ratios:
        logger.info(
            "ratio of server CPU per query, MariaDB / Quire, geometric mean: %.2fx",
            geometric_mean(cpu_ratios),
        )
    logger.info(
        "ratio Quire / MariaDB queries per second, geometric mean of %d runs: %.2fx (target 0.5x)",
        len(ratios),
        geometric_mean(ratios),
    )


if __name__ == "__main__":
    main()
