"""TPC-H through the MySQL front: the 22 queries on `quire up`, beside DuckDB reading the same
Parquet directly (the limit for this engine), answers compared.

Run by hand from the repository root:

    python tests/bench/bench_tpch.py [--scale 1] [--connections 4] [--runs 3]
        [--workdir DIR] [--profile FILE] [--cn-cache-bytes N]

The data comes from tpchgen-cli (Parquet, kept in <workdir>/data-<scale>). The benchmark starts a
`quire up` over <workdir>/quire-<scale>, creates the eight tables (Doris DDL, DUPLICATE KEY) and
loads them through batched multi-row INSERTs from --connections processes, unless that folder
already holds a loaded copy (then it only restarts Quire over it). Then each query runs on Quire
through PyMySQL and on DuckDB over the Parquet files, --runs times each (the first run, which
builds Quire's snapshots of the tables it reads, and the best are shown), and the answers are
compared (rows in order, decimals exactly, floats to 1e-9 relative). The last lines are the
total-time ratios DuckDB / Quire. The column "cpu 1st" is the CPU time Quire's process spent on
the first run (user + system, from /proc), which other loads on the machine change less than the
wall clock ("duck cpu": DuckDB direct's, in this process). With --profile FILE Quire runs the queries under cProfile
(see bench_sysbench.py); the load is not profiled. Both sides run a query on as many DuckDB
threads as the machine has cores (Quire's query_engine_threads). Quire's CN keeps up to
--cn-cache-bytes (cn_cache_bytes, 4 GiB here) of decoded columns between queries, as a Doris BE
keeps its page cache; DuckDB direct decodes the Parquet on every run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests import tpch  # noqa: E402
from tests.bench.bench_sysbench import profiled_quire  # noqa: E402
from tests.harness import QuireProcess  # noqa: E402

DATABASE = "tpch"
LOADED_MARK = "loaded"  # written in Quire's folder once every table is in
THREADS = os.cpu_count() or 1  # DuckDB threads of a query, on both sides
DEFAULT_CN_CACHE_BYTES = 4 << 30  # SF1's decoded columns fit: first runs decode, later ones reuse
EDIT_LOG_PORT = "edit_log_port"  # the journal's members are named by it: a restart keeps it


def timed(run, runs: int) -> tuple[float, float, list]:
    """The first run's time, the best of all runs' and the answer."""
    times = []
    answer = None
    for _ in range(runs):
        started = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - started)
    return times[0], min(times), answer


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_quire(
    folder: Path, profile: Path | None = None, cache_bytes: int = DEFAULT_CN_CACHE_BYTES
) -> QuireProcess:
    overrides = {
        "max_waiting_long_statements": 16,
        "query_engine_threads": THREADS,
        "cn_cache_bytes": cache_bytes,  # decoded columns kept, as a Doris BE's page cache
    }
    kept = folder / EDIT_LOG_PORT
    if kept.exists():
        overrides["edit_log_port"] = int(kept.read_text())
    if profile is not None:
        return profiled_quire(folder, profile.resolve(), overrides).start()
    return QuireProcess(folder, overrides).start()


def load_once(folder: Path, data: Path, connections: int) -> None:
    if (folder / LOADED_MARK).exists():
        return
    quire = start_quire(folder)
    (folder / EDIT_LOG_PORT).write_text(f"{quire.overrides['edit_log_port']}\n")
    try:
        last = [0.0]

        def progress(table: str, done: int, total: int, seconds: float) -> None:
            if done == total or seconds - last[0] > 5:
                last[0] = seconds
                print(f"  load {table}: {done}/{total} rows, {seconds:.0f} s", flush=True)

        started = time.monotonic()
        counts = tpch.load(quire.query_port, DATABASE, data, connections, progress)
        seconds = time.monotonic() - started
        rows = sum(counts.values())
        print(f"loaded {rows} rows in {seconds:.1f} s ({rows / seconds:,.0f} rows/s)")
        connection = quire.connect(database=DATABASE)
        with connection.cursor() as cursor:
            for table, count in counts.items():
                cursor.execute(f"SELECT COUNT(*) FROM {table}")
                assert cursor.fetchone()[0] == count, table
        connection.close()
        (folder / LOADED_MARK).write_text("yes\n")
    finally:
        quire.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument(
        "--cn-cache-bytes", type=int, default=DEFAULT_CN_CACHE_BYTES, help="Quire's cn_cache_bytes"
    )
    parser.add_argument("--queries", help="comma-separated query numbers (default: all 22)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_tpch_") as scratch:
        workdir = options.workdir or Path(scratch)
        data = tpch.generate(workdir / f"data-{options.scale:g}", options.scale)
        folder = workdir / f"quire-{options.scale:g}"
        load_once(folder, data, options.connections)
        quire = start_quire(folder, options.profile, options.cn_cache_bytes)
        try:
            return compare(quire, data, options)
        finally:
            quire.stop()


def compare(quire: QuireProcess, data: Path, options: argparse.Namespace) -> int:
    texts = tpch.queries(options.scale)
    numbers = sorted(texts)
    if options.queries:
        numbers = [int(number) for number in options.queries.split(",")]
    connection = quire.connect(database=DATABASE, read_timeout=3600)
    duck = tpch.duckdb_over_parquet(data, THREADS)
    totals = [0.0, 0.0, 0.0, 0.0]  # Quire first, Quire best, DuckDB first, DuckDB best
    cpu_totals = [0.0, 0.0]  # Quire's process and DuckDB direct's, first runs
    failed = []
    print(
        f"{'query':>5} {'quire 1st':>9} {'quire':>9} {'duck 1st':>9} {'duckdb':>9} {'ratio':>6}"
        f" {'cpu 1st':>7} {'duck cpu':>8}"
    )
    for number in numbers:
        sql = texts[number]
        cpu = []

        def on_quire(sql=sql, cpu=cpu):
            before = process_cpu_seconds(quire.process.pid)
            with connection.cursor() as cursor:
                cursor.execute(sql)
                rows = list(cursor.fetchall())
            cpu.append(process_cpu_seconds(quire.process.pid) - before)
            return rows

        try:
            *quire_times, ours = timed(on_quire, options.runs)
        except Exception as error:  # a failed query is reported, the others still run
            print(f"Q{number:<4} failed on Quire: {error}")
            failed.append(number)
            continue
        duck_cpu = []

        def on_duckdb(sql=sql, duck_cpu=duck_cpu):
            before = time.process_time()
            rows = duck.execute(sql).fetchall()
            duck_cpu.append(time.process_time() - before)
            return rows

        *duck_times, theirs = timed(on_duckdb, options.runs)
        found = tpch.differences(ours, theirs)
        if found:
            failed.append(number)
        times = [*quire_times, *duck_times]
        totals = [total + spent for total, spent in zip(totals, times, strict=True)]
        cpu_totals = [cpu_totals[0] + cpu[0], cpu_totals[1] + duck_cpu[0]]
        print(
            f"Q{number:<4} {times[0]:9.3f} {times[1]:9.3f} {times[2]:9.3f} {times[3]:9.3f} "
            f"{times[3] / times[1]:6.2f} {cpu[0]:7.3f} {duck_cpu[0]:8.3f}  {'same' if not found else '; '.join(found)}",
            flush=True,
        )
    connection.close()
    print(
        f"total {totals[0]:9.3f} {totals[1]:9.3f} {totals[2]:9.3f} {totals[3]:9.3f}"
        f" {'':6} {cpu_totals[0]:7.3f} {cpu_totals[1]:8.3f}"
    )
    print(f"DuckDB / Quire total time, best of {options.runs}: {totals[3] / totals[1]:.2f}")
    print(f"DuckDB / Quire total time, first runs: {totals[2] / totals[0]:.2f} (target >= 0.5)")
    print(f"DuckDB / Quire CPU time, first runs: {cpu_totals[1] / cpu_totals[0]:.2f}")
    if failed:
        print(f"wrong or failed: {', '.join(f'Q{number}' for number in failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
