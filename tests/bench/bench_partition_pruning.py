"""A query on one partition of a 10-partition table, pruned and not.

Run by hand from the repository root:  python tests/bench/bench_partition_pruning.py [--rows N]
[--repeat R]

One `quire up` process; a DUPLICATE KEY table partitioned by RANGE(dt) into ten monthly
partitions, rows spread evenly over them, loaded in INSERTs of 5,000 rows and flushed into objects
(flush_rows below the load). The query reads one month:

    SELECT COUNT(*), SUM(v) FROM events WHERE dt >= '2024-03-01' AND dt < '2024-04-01'

Pruned, the CN reads one partition; not pruned, the same WHERE with `OR 1 = 0` (no pruning for an
OR; the engine folds it away, so the filter costs the same) reads all ten. After a warm-up run
of each, they take turns R times, first as they are (the CN keeps the newest snapshot it made of
each), then with a one-row INSERT into another month before each run (the CN makes its snapshot
again from the objects it caches and the rows in memory: a table being written). The medians
are printed, and the ratio of the second kind last.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness import QuireProcess, run, wait_until  # noqa: E402

BATCH = 5_000
PARTITIONS = 10
MONTH = "dt >= '2024-03-01' AND dt < '2024-04-01'"
PRUNED = f"SELECT COUNT(*), SUM(v) FROM events WHERE {MONTH}"
JULY = "2024-07-15"  # rows written between reads land here, outside the month read
NOT_PRUNED = f"SELECT COUNT(*), SUM(v) FROM events WHERE ({MONTH}) OR 1 = 0"


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def create(connection) -> None:
    run(connection, "CREATE DATABASE bench")
    run(connection, "USE bench")
    bounds = ", ".join(
        f"PARTITION p{month} VALUES LESS THAN ('2024-{month + 1:02d}-01')"
        for month in range(1, PARTITIONS + 1)
    )
    run(
        connection,
        "CREATE TABLE events (id BIGINT NOT NULL, dt DATE NOT NULL, v INT) DUPLICATE KEY(id) "
        f"PARTITION BY RANGE(dt) ({bounds}) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )


def load(connection, rows: int) -> None:
    first = datetime.date(2024, 1, 1)
    days = (datetime.date(2024, PARTITIONS + 1, 1) - first).days
    with connection.cursor() as cursor:
        for start in range(0, rows, BATCH):
            values = [
                (n, first + datetime.timedelta(days=n % days), n % 1000)
                for n in range(start, min(start + BATCH, rows))
            ]
            cursor.executemany("INSERT INTO events VALUES (%s, %s, %s)", values)


def timed(
    connection, queries: tuple[str, ...], repeat: int, writes: bool = False
) -> list[tuple[float, tuple]]:
    """Per query, its median time over repeat runs (the queries taking turns, so that a flush or
    a merge meanwhile falls on both) and its answer. writes: a row is written into another month
    before each run (the CN's kept snapshot of the table is made again)."""
    answers = [run(connection, sql) for sql in queries]  # warm-up: the CN reads the objects
    seconds: list[list[float]] = [[] for _ in queries]
    for turn in range(repeat):
        for number, sql in enumerate(queries):
            if writes:
                run(
                    connection, f"INSERT INTO events VALUES ({-1 - turn * 8 - number}, '{JULY}', 1)"
                )
            started = time.perf_counter()
            again = run(connection, sql)
            seconds[number].append(time.perf_counter() - started)
            assert again == answers[number]
    return [(statistics.median(s), a) for s, a in zip(seconds, answers, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        flush = {"flush_rows": max(args.rows // 4, 1000), "flush_interval_second": 2}
        node = QuireProcess(Path(folder), overrides=flush).start()
        try:
            connection = node.connect()
            create(connection)
            started = time.perf_counter()
            load(connection, args.rows)
            report(f"loaded {args.rows} rows in {time.perf_counter() - started:.1f} s")
            objects = Path(folder) / "storage" / "objects"
            wait_until(
                lambda: (
                    run(connection, "SELECT COUNT(*) FROM events") == ((args.rows,),)
                    and list(objects.glob("t*/p*/*/*.data.parquet"))
                ),
                120,
                "the rows flushed",
            )
            explained = [row[0].strip() for row in run(connection, f"EXPLAIN {PRUNED}")]
            report(next(line for line in explained if line.startswith("partitions=")))
            queries = (PRUNED, NOT_PRUNED)
            (pruned, answer), (whole, same) = timed(connection, queries, args.repeat)
            assert answer == same, (answer, same)
            report(f"snapshot kept, pruned:     {pruned * 1000:.2f} ms (median)")
            report(f"snapshot kept, not pruned: {whole * 1000:.2f} ms (median)")
            report(f"snapshot kept, not pruned / pruned: {whole / pruned:.2f}x")
            (pruned, answer), (whole, same) = timed(connection, queries, args.repeat, writes=True)
            assert answer == same, (answer, same)
            report(f"a write before each read, pruned:     {pruned * 1000:.2f} ms (median)")
            report(f"a write before each read, not pruned: {whole * 1000:.2f} ms (median)")
            report(f"not pruned / pruned, a write before each read: {whole / pruned:.2f}x")
            connection.close()
        finally:
            node.stop()


if __name__ == "__main__":
    main()
