"""df.write.format("quire") beside df.write.parquet to the same disk.

Run by hand from the repository root:  python tests/bench/bench_spark_write.py [--rows N]
[--repeat R] [--partitions P] [--compression ZSTD|SNAPPY|LZ4|NONE] [--arrow-batch-rows B]

One `quire up` process whose storage_root is on the same disk as the Parquet output; one
local[2] SparkSession (Python workers over unix domain sockets). The same DataFrame of N rows
(10 million by default; id BIGINT, k INT, v DOUBLE, tag STRING, made by spark.range in P
partitions) is written

    format("quire")   appended to a DUPLICATE KEY table of 4 buckets: rows converted to the
                      table's types, given row ids by the FE, placed into tablets, written as
                      block objects, committed in one TN commit
    parquet           df.write.mode("overwrite").parquet(a folder beside it)

Both sides compress with the same codec (--compression: ZSTD by default, the BE's
block_compression default; Spark's own Parquet default is SNAPPY), so the ratio compares the
same work. --arrow-batch-rows sets spark.sql.execution.arrow.maxRecordsPerBatch (the rows of
each Arrow batch the JVM hands the Python writer; Spark's default 10000).
The same DataFrame is also written to a Python data source that drops its batches
(tests/bench/spark_floor.py): the ceiling of any Python data source writer's ratio here.
R times each, taking turns after a warm-up of each; each figure is the median. Quire's writes
are checked by a COUNT over MySQL. The rows/s and the ratio (quire rows/s / parquet rows/s)
are printed, the ratio last.
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
from tests.harness import QuireProcess, local_spark, run  # noqa: E402

TABLE = "bench.written"


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def spark_session(arrow_batch_rows: int):
    return local_spark(
        "bench-spark-write",
        "2g",
        **{"spark.sql.execution.arrow.maxRecordsPerBatch": str(arrow_batch_rows)},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="ZSTD", choices=("ZSTD", "SNAPPY", "LZ4", "NONE"))
    parser.add_argument("--arrow-batch-rows", type=int, default=10_000)
    arguments = parser.parse_args()
    rows = arguments.rows
    with tempfile.TemporaryDirectory(prefix="bench-spark-write-") as folder:
        quire = QuireProcess(Path(folder) / "quire").start()
        try:
            connection = quire.connect()
            run(connection, "CREATE DATABASE bench")
            run(
                connection,
                "CREATE TABLE bench.written (id BIGINT NOT NULL, k INT, v DOUBLE, "
                "tag VARCHAR(16)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 4",
            )
            fe = f"127.0.0.1:{quire.http_port}"
            spark = spark_session(arguments.arrow_batch_rows)
            codec = arguments.compression
            from pyspark.sql import functions as F

            frame = spark.range(rows, numPartitions=arguments.partitions).select(
                F.col("id"),
                (F.col("id") % 1000).cast("int").alias("k"),
                (F.col("id") * 0.5).alias("v"),
                F.concat(F.lit("tag"), (F.col("id") % 37).cast("string")).alias("tag"),
            )
            parquet_folder = str(Path(folder) / "parquet")
            written = [0]

            def to_quire() -> None:
                frame.write.format("quire").mode("append").options(
                    fe=fe, user="root", password="", table=TABLE, compression=codec
                ).save()
                written[0] += rows

            def to_parquet() -> None:
                spark_codec = "lz4_raw" if codec == "LZ4" else codec.lower()
                frame.write.mode("overwrite").option("compression", spark_codec).parquet(
                    parquet_folder
                )

            spark_floor.register(spark)

            def to_floor() -> None:
                frame.write.format("quire_floor").mode("append").save()

            works = (to_quire, to_parquet, to_floor)
            for work in works:
                work()
            seconds: tuple[list[float], ...] = ([], [], [])
            for _ in range(arguments.repeat):
                for work, times in zip(works, seconds, strict=True):
                    started = time.perf_counter()
                    work()
                    times.append(time.perf_counter() - started)
            counted = run(connection, f"SELECT COUNT(*) FROM {TABLE}")[0][0]
            assert counted == written[0], (counted, written[0])
            ours, anchor, floor = (statistics.median(times) for times in seconds)
            report(
                f"rows {rows:,} in {arguments.partitions} partitions, median of {arguments.repeat}, "
                f"{codec} both sides, Arrow batches of {arguments.arrow_batch_rows} rows"
            )
            report(f"format('quire')  {ours:7.2f} s   {rows / ours:12,.0f} rows/s")
            report(f"parquet          {anchor:7.2f} s   {rows / anchor:12,.0f} rows/s")
            report(
                f"floor (drops)    {floor:7.2f} s   {rows / floor:12,.0f} rows/s   "
                f"ratio {anchor / floor:.2f}x: the most a Python data source writer reaches"
            )
            report(f"ratio (quire rows/s / parquet rows/s) {anchor / ours:.2f}x")
            spark.stop()
            connection.close()
        finally:
            quire.stop()


if __name__ == "__main__":
    main()
