"""TPC-H through the MySQL front: the 22 queries on `quire up`, beside DuckDB reading the same
Parquet directly (the limit for this engine), answers compared.

Run by hand from the repository root:

    python tests/bench/bench_tpch.py [--scale 1] [--connections 4] [--runs 1]
        [--workdir DIR] [--profile FILE]

The data comes from tpchgen-cli (Parquet, kept in <workdir>/data-<scale>). The benchmark starts a
`quire up` over <workdir>/quire-<scale>, creates the eight tables (Doris DDL, DUPLICATE KEY) and
loads them through batched multi-row INSERTs from --connections processes, unless that folder
already holds a loaded copy (then it only restarts Quire over it). Then each query runs on Quire
through PyMySQL and on DuckDB over the Parquet files, --runs times each (the best time counts),
and the answers are compared (rows in order, decimals exactly, floats to 1e-9 relative). The
last line is the total-time ratio DuckDB / Quire. With --profile FILE Quire runs the queries
under cProfile (see bench_sysbench.py); the load is not profiled.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests import tpch  # noqa: E402
from tests.bench.bench_sysbench import ProfiledQuire  # noqa: E402
from tests.harness import QuireProcess  # noqa: E402

DATABASE = "tpch"
LOADED_MARK = "loaded"  # written in Quire's folder once every table is in
EDIT_LOG_PORT = "edit_log_port"  # the journal's members are named by it: a restart keeps it


def best_time(run, runs: int):
    best = None
    answer = None
    for _ in range(runs):
        started = time.perf_counter()
        answer = run()
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best, answer


def start_quire(folder: Path, profile: Path | None = None) -> QuireProcess:
    overrides = {"max_waiting_long_statements": 16}
    kept = folder / EDIT_LOG_PORT
    if kept.exists():
        overrides["edit_log_port"] = int(kept.read_text())
    if profile is not None:
        return ProfiledQuire(folder, profile.resolve(), overrides).start()
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
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--queries", help="comma-separated query numbers (default: all 22)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_tpch_") as scratch:
        workdir = options.workdir or Path(scratch)
        data = tpch.generate(workdir / f"data-{options.scale:g}", options.scale)
        folder = workdir / f"quire-{options.scale:g}"
        load_once(folder, data, options.connections)
        quire = start_quire(folder, options.profile)
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
    duck = tpch.duckdb_over_parquet(data)
    totals = [0.0, 0.0]
    failed = []
    print(f"{'query':>5} {'quire s':>9} {'duckdb s':>9} {'ratio':>7}  answer")
    for number in numbers:
        sql = texts[number]

        def on_quire(sql=sql):
            with connection.cursor() as cursor:
                cursor.execute(sql)
                return list(cursor.fetchall())

        try:
            quire_seconds, ours = best_time(on_quire, options.runs)
        except Exception as error:  # a failed query is reported, the others still run
            print(f"Q{number:<4} failed on Quire: {error}")
            failed.append(number)
            continue
        duck_seconds, theirs = best_time(lambda sql=sql: duck.execute(sql).fetchall(), options.runs)
        found = tpch.differences(ours, theirs)
        if found:
            failed.append(number)
        totals[0] += quire_seconds
        totals[1] += duck_seconds
        print(
            f"Q{number:<4} {quire_seconds:9.3f} {duck_seconds:9.3f} "
            f"{duck_seconds / quire_seconds:7.2f}  {'same' if not found else '; '.join(found)}",
            flush=True,
        )
    connection.close()
    print(f"total {totals[0]:9.3f} {totals[1]:9.3f}")
    print(f"DuckDB / Quire total time: {totals[1] / totals[0]:.2f} (target >= 0.5)")
    if failed:
        print(f"wrong or failed: {', '.join(f'Q{number}' for number in failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
