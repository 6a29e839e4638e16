"""spark.read.format("quire") beside spark.read.parquet over the same block objects.

Run by hand from the repository root:  python tests/bench/bench_spark_read.py [--rows N]
[--repeat R]

One `quire up` process; a DUPLICATE KEY table of N rows (10 million by default) loaded over MySQL
and flushed into objects (nothing left in memory). One local[2] SparkSession (Python workers over
unix domain sockets) runs the same aggregate over

    format("quire")            the table at one snapshot: plan, blocks, deletes, tail
    parquet                    spark.read.parquet of the plan's objects (the same files)

three ways (quire reading the columns the query uses, option columns, as Spark's Parquet reader
prunes them by itself; and once every column, as Spark 4.3 reads a Python data source without
that option): a full scan; with 1% of the rows deleted (quire drops them, parquet reads the same
files: its answer is the undeleted table's); and with a filter on the key that 90% of the blocks
cannot match (quire prunes them by the plan's min/max; parquet by its row groups' statistics).
Each is the median of R runs, the two taking turns after two warm-ups, its DataFrame loaded
before (as parquet's). The full scan is also run by a Python data source that reads nothing
(tests/bench/spark_floor.py: the same rows made once in memory, in as many partitions): the
ceiling of any Python data source's ratio here; and so is the filtered query, the floor yielding
the matching rows (id, k, v) in as many partitions as quire's and taking the filter as its own,
as quire does (so Spark applies none), against parquet's filtered run. The ratios (parquet
seconds / quire seconds: above 1 means quire is faster) are printed, the full scan's last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.bench import spark_floor  # noqa: E402
from tests.harness import QuireProcess, local_spark, run, wait_until  # noqa: E402

BATCH = 5_000
TABLE = "bench.events"


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def load(connection, rows: int) -> None:
    run(connection, "CREATE DATABASE bench")
    run(connection, "USE bench")
    run(
        connection,
        "CREATE TABLE events (id BIGINT NOT NULL, k INT, v DOUBLE, tag VARCHAR(16)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 4",
    )
    started = time.monotonic()
    with connection.cursor() as cursor:
        for start in range(0, rows, BATCH):
            values = [
                (n, n % 1000, n * 0.5, f"tag{n % 37}")
                for n in range(start, min(start + BATCH, rows))
            ]
            cursor.executemany("INSERT INTO events VALUES (%s, %s, %s, %s)", values)
    report(f"loaded {rows:,} rows in {time.monotonic() - started:.1f} s")


def settled(fe: str, quiet_seconds: float = 5.0):
    """The table's plan once flushes and merges have stopped changing its objects."""
    from be.spark.plans import fetch_plan

    names, since = None, time.monotonic()
    while True:
        plan = fetch_plan(fe, "root", "", TABLE)
        now = {meta.name for meta in plan.objects}
        if now != names or plan.tail.num_rows:
            names, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_seconds:
            return plan
        time.sleep(0.5)


def spark_session():
    return local_spark("bench-spark-read", "2g")


def aggregate(frame, where: str | None):
    from pyspark.sql import functions as F

    if where:
        frame = frame.filter(where)
    return tuple(frame.agg(F.count("*"), F.sum("k"), F.sum("v")).collect()[0])


def in_turns(ours, anchor, repeat: int) -> tuple[float, float, object, object]:
    """Medians of repeat runs of two works taking turns (a flush, a merge or a busy neighbour
    falls on both), after two warm-ups of each; and their answers."""
    answers = [ours(), anchor()]
    ours(), anchor()
    seconds: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for work, times in ((ours, seconds[0]), (anchor, seconds[1])):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
    return statistics.median(seconds[0]), statistics.median(seconds[1]), *answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    rows = arguments.rows
    overrides = {"flush_rows": 1 << 20, "flush_interval_second": 2}
    with tempfile.TemporaryDirectory(prefix="bench-spark-read-") as folder:
        quire = QuireProcess(Path(folder), overrides=overrides).start()
        try:
            connection = quire.connect()
            load(connection, rows)
            fe = f"127.0.0.1:{quire.http_port}"
            from be.spark.plans import fetch_plan

            plan = wait_until(
                lambda: (p := fetch_plan(fe, "root", "", TABLE)).tail.num_rows == 0 and p,
                600,
                "every row flushed",
                interval=0.5,
            )
            plan = settled(fe)
            blocks = sum(len(meta.blocks) for meta in plan.objects)
            report(f"{len(plan.objects)} objects, {blocks} blocks")
            paths = [str(Path(plan.location) / meta.name) for meta in plan.objects]
            spark = spark_session()

            def quire_frame(columns: str | None = "k,v"):
                """A DataFrame per kind of query, loaded before it is timed (as parquet's): the
                runs of one query reuse it (be/spark/source.py: pruning and reused frames). It
                reads the columns the query uses, as Spark's Parquet reader does by itself."""
                options = dict(fe=fe, user="root", password="", table=TABLE, prune_blocks="true")
                if columns:
                    options["columns"] = columns
                return spark.read.format("quire").options(**options).load()

            parquet_frame = spark.read.parquet(*paths)
            pruning = f"id < {rows // 10}"
            results = {}
            kinds = (
                ("full scan, every column", None, None),
                ("full scan", None, "k,v"),
                ("filter pruning 90%", pruning, "id,k,v"),
            )
            for label, where, columns in kinds:
                frame = quire_frame(columns)
                ours, anchor, got, expected = in_turns(
                    lambda w=where, f=frame: aggregate(f, w),
                    lambda w=where: aggregate(parquet_frame, w),
                    arguments.repeat,
                )
                assert got == expected, (label, got, expected)
                results[label] = (ours, anchor)
            run(connection, "DELETE FROM events WHERE id % 100 = 7")
            frame = quire_frame()
            ours, anchor, got, _ = in_turns(
                lambda: aggregate(frame, None),
                lambda: aggregate(parquet_frame, None),
                arguments.repeat,
            )
            assert got[0] == rows - len(range(7, rows, 100)), got
            results["1% deleted"] = (ours, anchor)
            spark_floor.register(spark)
            from be.spark.limits import SparkReadLimits
            from be.spark.source import partitioned

            def floor_frame(rows: int, partitions: int, filtered: bool = False):
                options = dict(rows=str(rows), partitions=str(partitions))
                if filtered:
                    options["filtered"] = "true"
                return spark.read.format("quire_floor").options(**options).load()

            parts = partitioned(plan, {}, SparkReadLimits())
            whole = floor_frame(rows, len(parts))
            floor, anchor, got, expected = in_turns(
                lambda: aggregate(whole, None),
                lambda: aggregate(parquet_frame, None),
                arguments.repeat,
            )
            assert got[0] == expected[0] == rows, (got, expected)
            results["floor: reads nothing"] = (floor, anchor)
            parts = partitioned(plan, {"id": (None, rows // 10 - 1)}, SparkReadLimits())
            pruned = floor_frame(rows // 10, len(parts), filtered=True)
            floor, anchor, got, expected = in_turns(
                lambda: aggregate(pruned, pruning),
                lambda: aggregate(parquet_frame, pruning),
                arguments.repeat,
            )
            assert got[0] == expected[0] == rows // 10, (got, expected)
            results["floor: pruning 90%"] = (floor, anchor)
            for label in (
                "floor: reads nothing",
                "floor: pruning 90%",
                "full scan, every column",
                "filter pruning 90%",
                "1% deleted",
                "full scan",
            ):
                ours, anchor = results[label]
                report(
                    f"{label:<24} quire {ours:7.2f} s   parquet {anchor:7.2f} s   "
                    f"ratio {anchor / ours:.2f}x"
                )
            spark.stop()
            connection.close()
        finally:
            quire.stop()


if __name__ == "__main__":
    main()
