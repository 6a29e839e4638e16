"""sysbench oltp_point_select and oltp_read_write transactions per second, Quire beside MariaDB.

Run by hand from the repository root (needs the Debian packages mariadb-server and sysbench):

    python tests/bench/bench_sysbench.py [--seconds 10] [--threads 2] [--tables 2]
        [--table-size 10000] [--rounds 3] [--profile FILE] [--prepare-option=--auto_inc=off ...]
        [--workload oltp_point_select ...] [--quire-only] [--floor] [--cluster CNS]

The benchmark starts a `quire up` process and a MariaDB server (InnoDB, its own temporary datadir,
a free loopback port), runs `sysbench oltp_common prepare` against each (the same tables, rows
and secondary index), then each workload against each server in turn with the same options, for
--rounds rounds: each figure is the median of its rounds, so that a slow spell of the machine
falls on one round of one server, not on the ratio. sysbench is the real client: libmariadb,
prepared statements over the binary protocol, BEGIN / COMMIT around each read-write transaction. Errors sysbench ignores (1213: a write conflict here,
a deadlock there) are shown beside the figures. With --profile FILE Quire runs under cProfile on
every thread and the profile is written to FILE when it stops (`python -m pstats FILE`). With
--floor, once Quire has stopped, each workload runs against a Quire whose front answers every
execution of a prepared statement with the answer of its first (tests/bench/front_floor_quire.py):
what the MySQL front alone allows, its ratio to MariaDB shown too. With --cluster CNS, Quire is
`quire cluster up --followers 1 --cns CNS` instead (an FE, a TN and CNS CNs, each a process of its
own; the server CPU is theirs together). The ratios Quire / MariaDB come last.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402

from tests.bench.bench_front import MariaDB, cpu_seconds  # noqa: E402
from tests.harness import REPO, QuireProcess  # noqa: E402

DATABASE = "sbtest"
WORKLOADS = ("oltp_point_select", "oltp_read_write")
SYSBENCH_TIMEOUT_SECONDS = 900
PROFILED_QUIRE = Path(__file__).resolve().parent / "profiled_quire.py"
FRONT_FLOOR_QUIRE = Path(__file__).resolve().parent / "front_floor_quire.py"


@dataclass(frozen=True)
class Figure:
    transactions_per_second: float
    queries_per_second: float
    ignored_errors: int
    cpu_millis_per_transaction: float


class QuireUnder(QuireProcess):
    """`quire up` started by a script of tests/bench (its own arguments first) that changes one
    thing before it runs the CLI: profiled_quire.py, front_floor_quire.py."""

    def __init__(self, workdir: Path, script: Path, script_args=(), overrides: dict | None = None):
        super().__init__(workdir, overrides)
        self.script, self.script_args = script, tuple(script_args)

    def args(self) -> list[str]:
        plain = super().args()  # python -m fe.cli up ...
        return [sys.executable, str(self.script), *self.script_args, *plain[3:]]


class LocalCluster:
    """`quire cluster up --followers 1 --cns CNS` in folder: the FE's query port, every node's
    process id."""

    def __init__(self, folder: Path, cns: int):
        self.folder, self.cns = folder, cns
        self.query_port, self.pids = 0, ()

    def _cluster(self, *args: str) -> None:
        command = [sys.executable, "-m", "fe.cli", "cluster", *args, "--dir", str(self.folder)]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(f"quire cluster {args[0]} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> LocalCluster:
        self._cluster("up", "--followers", "1", "--cns", str(self.cns))
        nodes = json.loads((self.folder / "cluster.json").read_text())["nodes"]
        self.query_port = next(node for node in nodes if node["role"] == "FOLLOWER")["query_port"]
        self.pids = tuple(node["pid"] for node in nodes)
        return self

    def connect(self):
        return pymysql.connect(host="127.0.0.1", port=self.query_port, user="root", autocommit=True)

    def stop(self) -> None:
        if self.pids:
            self._cluster("down")
            self.pids = ()


def profiled_quire(workdir: Path, profile_file: Path, overrides: dict | None = None) -> QuireUnder:
    """`quire up` under cProfile: the profile goes to profile_file when it stops."""
    return QuireUnder(workdir, PROFILED_QUIRE, [str(profile_file)], overrides)


def sysbench(port: int, workload: str, command: str, options: argparse.Namespace, *extra: str):
    done = subprocess.run(
        [
            "sysbench",
            workload,
            "--mysql-host=127.0.0.1",
            f"--mysql-port={port}",
            "--mysql-user=root",
            f"--mysql-db={DATABASE}",
            f"--tables={options.tables}",
            f"--table-size={options.table_size}",
            *extra,
            command,
        ],
        capture_output=True,
        text=True,
        timeout=SYSBENCH_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise SystemExit(f"sysbench {workload} {command} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def measure(port: int, pids: tuple[int, ...], workload: str, options) -> Figure:
    before = sum(cpu_seconds(pid) for pid in pids)
    output = sysbench(
        port, workload, "run", options, f"--threads={options.threads}", f"--time={options.seconds}"
    )
    used = sum(cpu_seconds(pid) for pid in pids) - before

    def number(label: str) -> float:
        return float(re.search(rf"{label}:\s+(\d+)\s+\(([\d.]+) per sec", output).group(2))

    transactions = int(re.search(r"transactions:\s+(\d+)", output).group(1))
    ignored = int(re.search(r"ignored errors:\s+(\d+)", output).group(1))
    return Figure(
        number("transactions"),
        number("queries"),
        ignored,
        1000 * used / max(transactions, 1),
    )


def median(figures: list[Figure]) -> Figure:
    """The figure of the median transactions per second (the lower of the middle two)."""
    ordered = sorted(figures, key=lambda figure: figure.transactions_per_second)
    return ordered[(len(ordered) - 1) // 2]


def shown(figure: Figure) -> str:
    return (
        f"{figure.transactions_per_second:9.1f} tps {figure.queries_per_second:9.1f} qps  "
        f"ignored errors {figure.ignored_errors:4d}  server CPU "
        f"{figure.cpu_millis_per_transaction:7.2f} ms/txn"
    )


def prepare(connect, port: int, options: argparse.Namespace) -> None:
    connection = connect()
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    connection.close()
    sysbench(port, "oltp_read_write", "prepare", options, *options.prepare_option)


def front_floor(workdir: Path, workload: str, options: argparse.Namespace) -> Figure:
    floor = QuireUnder(workdir, FRONT_FLOOR_QUIRE).start()
    try:
        prepare(floor.connect, floor.query_port, options)
        figure = measure(floor.query_port, (floor.process.pid,), workload, options)
    finally:
        floor.stop()
    print(f"front    {workload:18} {'Floor':8} {shown(figure)}", flush=True)
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tables", type=int, default=2)
    parser.add_argument("--table-size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="turns of each server")
    parser.add_argument("--profile", type=Path, help="cProfile Quire into this file")
    parser.add_argument(
        "--prepare-option",
        action="append",
        default=[],
        help="a sysbench option for prepare, e.g. --prepare-option=--auto_inc=off (repeatable)",
    )
    parser.add_argument(
        "--workload",
        action="append",
        choices=WORKLOADS,
        help="run only this workload (repeatable; default: both)",
    )
    parser.add_argument(
        "--quire-only", action="store_true", help="no MariaDB beside it (no ratios)"
    )
    parser.add_argument(
        "--floor", action="store_true", help="also each workload against the front alone"
    )
    parser.add_argument(
        "--cluster", type=int, metavar="CNS", help="Quire as an FE, a TN and CNS CNs"
    )
    options = parser.parse_args()
    workloads = tuple(options.workload or WORKLOADS)
    with tempfile.TemporaryDirectory(prefix="bench_sysbench-") as folder:
        folder = Path(folder)
        if options.cluster:
            quire = LocalCluster(folder / "cluster", options.cluster).start()
        elif options.profile:
            quire = profiled_quire(folder / "quire", options.profile.resolve()).start()
        else:
            quire = QuireProcess(folder / "quire").start()
        pids = quire.pids if options.cluster else (quire.process.pid,)
        mariadb = MariaDB(folder / "mariadb")
        try:
            servers = {"Quire": (quire.query_port, pids, quire.connect)}
            if not options.quire_only:
                mariadb_server = mariadb.start()
                servers["MariaDB"] = (mariadb_server.port, (mariadb_server.pid,), mariadb.connect)
            for name, (port, _, connect) in servers.items():
                prepare(connect, port, options)
                print(f"{name}: prepared {options.tables} x {options.table_size} rows", flush=True)
            rounds: dict[tuple[str, str], list[Figure]] = {}
            for number in range(options.rounds):
                for workload in workloads:
                    for name, (port, server_pids, _) in servers.items():
                        figure = measure(port, server_pids, workload, options)
                        rounds.setdefault((workload, name), []).append(figure)
                        print(
                            f"round {number + 1}  {workload:18} {name:8} {shown(figure)}",
                            flush=True,
                        )
            figures = {key: median(taken) for key, taken in rounds.items()}
            for (workload, name), figure in figures.items():
                print(f"median   {workload:18} {name:8} {shown(figure)}")
            if options.floor:
                quire.stop()  # an idle Quire still heartbeats: not beside the floor
                for workload in workloads:
                    figures[workload, "Floor"] = front_floor(folder / workload, workload, options)
            if options.quire_only:
                return
            print(
                f"\n{options.threads} threads, {options.seconds} s each, median of "
                f"{options.rounds} rounds; Quire / MariaDB:"
            )
            for workload in workloads:
                quire_figure, mariadb_figure = (
                    figures[workload, "Quire"],
                    figures[workload, "MariaDB"],
                )
                ratio = (
                    quire_figure.transactions_per_second / mariadb_figure.transactions_per_second
                )
                print(f"  {workload:18} {ratio:6.3f}x transactions/s")
            for workload in workloads:
                if (workload, "Floor") in figures:
                    ratio = (
                        figures[workload, "Floor"].transactions_per_second
                        / figures[workload, "MariaDB"].transactions_per_second
                    )
                    print(f"  {workload:18} {ratio:6.3f}x transactions/s, the front alone")
        finally:
            quire.stop()
            mariadb.stop()


if __name__ == "__main__":
    main()
