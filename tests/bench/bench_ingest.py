"""Ingest through the MySQL front: rows per second of batched multi-row INSERTs, Quire beside
MariaDB (InnoDB) taking the same load.

Run by hand from the repository root (needs the Debian package mariadb-server):

    python tests/bench/bench_ingest.py [--connections 4] [--rows-per-statement 1000]
        [--statements 100] [--rounds 3] [--profile FILE]

The benchmark starts a `quire up` process and a MariaDB server (its own temporary datadir, a free
loopback port), creates the same table on each (Quire: DUPLICATE KEY; MariaDB: InnoDB with no
unique key, so neither checks keys), then each connection, in a process of its own, sends its
statements (`INSERT INTO t VALUES (...), (...), ...` with --rows-per-statement rows, written
before the clock starts) one after the other, autocommit. The figure is all rows over the time
from the first statement to the last answer, with the server's CPU time per 1000 rows; the two
servers take turns for --rounds rounds (each into a table of its own) and each figure is the
median of its rounds, so that a neighbour's burst or a slow fsync falls on one round. Each
statement is longer than max_sql_bytes, so Quire parses it off its event loop; the benchmark sets
its max_waiting_long_statements to --connections so that none is refused. The ratio Quire /
MariaDB comes last. With --profile FILE Quire runs under cProfile (see
bench_sysbench.py).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402

from tests.bench.bench_front import MariaDB, cpu_seconds  # noqa: E402
from tests.bench.bench_sysbench import profiled_quire  # noqa: E402
from tests.harness import QuireProcess  # noqa: E402

DATABASE = "bench_ingest"
COLUMNS = (
    "id BIGINT NOT NULL, k INT NOT NULL, c VARCHAR(120) NOT NULL, pad VARCHAR(60), "
    "d DATE, amount DECIMAL(12,2)"
)
QUIRE_TABLE = f"CREATE TABLE t ({COLUMNS}) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 8"
MARIADB_TABLE = f"CREATE TABLE t ({COLUMNS}) ENGINE=InnoDB"
START_LEAD_SECONDS = 1.0  # workers connect and build their statements, then start together


def statements(worker: int, count: int, rows: int) -> list[str]:
    generator = random.Random(worker)
    day = datetime.date(2024, 1, 1)
    written = []
    for number in range(count):
        values = []
        for row in range(rows):
            key = (worker * count + number) * rows + row
            values.append(
                f"({key}, {generator.randrange(1_000_000)}, "
                f"'{generator.randrange(10**11):011d}-{generator.randrange(10**11):011d}', "
                f"'{generator.randrange(10**11):011d}', "
                f"'{day + datetime.timedelta(days=key % 1000)}', {generator.randrange(10**8) / 100})"
            )
        written.append("INSERT INTO t VALUES " + ", ".join(values))
    return written


def worker(port: int, number: int, options: argparse.Namespace, start_at: float, out) -> None:
    connection = pymysql.connect(
        host="127.0.0.1",
        port=port,
        user="root",
        database=DATABASE,
        autocommit=True,
        ssl_disabled=True,
    )
    written = statements(number, options.statements, options.rows_per_statement)
    time.sleep(max(0.0, start_at - time.time()))
    try:
        with connection.cursor() as cursor:
            for statement in written:
                cursor.execute(statement)
    except pymysql.MySQLError as error:
        out.put(f"worker {number}: {error}")
        return
    out.put(time.time())
    connection.close()


def measure(name: str, port: int, pid: int, options: argparse.Namespace) -> tuple[float, float]:
    """Rows per second and the server's CPU milliseconds per 1000 rows."""
    results = multiprocessing.Queue()
    start_at = time.time() + START_LEAD_SECONDS + 0.2 * options.connections
    workers = [
        multiprocessing.Process(target=worker, args=(port, number, options, start_at, results))
        for number in range(options.connections)
    ]
    for process in workers:
        process.start()
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = cpu_seconds(pid)
    ends = [results.get(timeout=3600) for _ in workers]
    cpu = cpu_seconds(pid) - cpu_before
    for process in workers:
        process.join()
    failures = [end for end in ends if isinstance(end, str)]
    if failures:
        raise SystemExit(f"{name} refused the load: {failures[0]}")
    rows = options.connections * options.statements * options.rows_per_statement
    elapsed = max(ends) - start_at
    return rows / elapsed, 1000 * cpu / rows * 1000


def create_table(connect, statement: str) -> None:
    """The table t, in a database of its own (a round's: the previous round's is dropped)."""
    connection = connect()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        cursor.execute(f"CREATE DATABASE {DATABASE}")
        cursor.execute(f"USE {DATABASE}")
        cursor.execute(statement)
    connection.close()


def count(connect) -> int:
    connection = connect()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {DATABASE}.t")
        (rows,) = cursor.fetchone()
    connection.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--rows-per-statement", type=int, default=1000)
    parser.add_argument("--statements", type=int, default=100, help="per connection")
    parser.add_argument("--rounds", type=int, default=3, help="turns of each server")
    parser.add_argument("--profile", type=Path, help="cProfile Quire into this file")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_ingest-") as folder:
        folder = Path(folder)
        # Every connection's statement is long (parsed off the event loop): let them all wait.
        overrides = {"max_waiting_long_statements": options.connections}
        if options.profile:
            quire = profiled_quire(folder / "quire", options.profile.resolve(), overrides).start()
        else:
            quire = QuireProcess(folder / "quire", overrides).start()
        mariadb = MariaDB(folder / "mariadb")
        try:
            mariadb_server = mariadb.start()
            servers = {
                "Quire": (quire.query_port, quire.process.pid, quire.connect, QUIRE_TABLE),
                "MariaDB": (
                    mariadb_server.port,
                    mariadb_server.pid,
                    mariadb.connect,
                    MARIADB_TABLE,
                ),
            }
            rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
            for number in range(options.rounds):
                for name, (port, pid, connect, table) in servers.items():
                    create_table(connect, table)
                    rate, cpu = measure(name, port, pid, options)
                    rounds[name].append((rate, cpu))
                    rows = count(connect)
                    expected = options.connections * options.statements * options.rows_per_statement
                    assert rows == expected, (name, rows, expected)
                    print(
                        f"round {number + 1}  {name:8} {rate:10.0f} rows/s  "
                        f"server CPU {cpu:7.1f} ms per 1000 rows",
                        flush=True,
                    )
            figures = {
                name: tuple(statistics.median(figure) for figure in zip(*taken, strict=True))
                for name, taken in rounds.items()
            }
            for name, (rate, cpu) in figures.items():
                print(
                    f"median   {name:8} {rate:10.0f} rows/s  server CPU {cpu:7.1f} ms per 1000 rows"
                )
            print(
                f"\n{options.connections} connections x {options.statements} statements x "
                f"{options.rows_per_statement} rows, median of {options.rounds} rounds; "
                f"Quire / MariaDB: {figures['Quire'][0] / figures['MariaDB'][0]:.3f}x rows/s"
            )
        finally:
            quire.stop()
            mariadb.stop()


if __name__ == "__main__":
    main()
