"""A partitioned Spark JDBC read of one table through Quire's MySQL front vs through MariaDB.

Run by hand from the repository root (needs pyspark, Debian mariadb-server and libmariadb-java):

    python tests/bench/bench_spark_jdbc.py [--rows 10000000] [--partitions 4] [--fetchsize 10000]

It starts a `quire up` process and a MariaDB server (bench_front's: its own datadir, a free
loopback port), loads the same rows into a table of each with Spark's own JDBC writer (batched
INSERTs, rewriteBatchedStatements, no transaction around a task), then reads the whole table back
from each with the same Spark settings: MariaDB Connector/J, `jdbc:mysql://` URL,
partitionColumn/lowerBound/upperBound/numPartitions, fetchsize, every row materialised (a noop
write). It shows rows/s of each read (best of --repeat, interleaved), the peak RSS of the Quire
process during its reads (the FE streams big answers), the load times, and the ratio last.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_front import MariaDB, process_tree  # noqa: E402
from tests.harness import QuireProcess, local_spark  # noqa: E402

logger = logging.getLogger("bench_spark_jdbc")

JAR = Path("/usr/share/java/mariadb-java-client.jar")
DRIVER = "org.mariadb.jdbc.Driver"
DATABASE = "bench_jdbc"
QUIRE_TABLE = (
    f"CREATE TABLE {DATABASE}.t (id BIGINT, v DOUBLE, s VARCHAR(40), d DATE) DUPLICATE KEY(id) "
    "DISTRIBUTED BY HASH(id) BUCKETS 8"
)
MARIADB_TABLE = f"CREATE TABLE {DATABASE}.t (id BIGINT, v DOUBLE, s VARCHAR(40), d DATE)"
WRITE_BATCH_ROWS = 10_000
WRITE_PARTITIONS = 8  # tasks of the load; each commits batch by batch
RSS_SAMPLE_SECONDS = 0.1


def rss_bytes(pid: int) -> int:
    """The resident memory of a process and its children."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


class PeakRss:
    """The highest RSS of a process tree while the block runs, sampled on a thread."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()

    def __enter__(self) -> PeakRss:
        self.before = rss_bytes(self.pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(RSS_SAMPLE_SECONDS):
            self.peak = max(self.peak, rss_bytes(self.pid))

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


def spark_session():
    return local_spark("bench-spark-jdbc", "2g")


def url(port: int, **parameters) -> str:
    query = "&".join(f"{k}={v}" for k, v in parameters.items())
    return f"jdbc:mysql://127.0.0.1:{port}/{DATABASE}" + (f"?{query}" if query else "")


def load(spark, port: int, rows: int) -> float:
    frame = spark.range(0, rows, 1, WRITE_PARTITIONS).selectExpr(
        "id",
        "id * 0.5 AS v",
        "concat('row-', id) AS s",
        "date_add(DATE'2026-01-01', CAST(id % 365 AS INT)) AS d",
    )
    started = time.perf_counter()
    (
        frame.write.option("batchsize", WRITE_BATCH_ROWS)
        .option("isolationLevel", "NONE")
        .jdbc(
            url(port, rewriteBatchedStatements="true"),
            "t",
            "append",
            {"user": "root", "password": "", "driver": DRIVER},
        )
    )
    return time.perf_counter() - started


def read(spark, port: int, rows: int, partitions: int, fetchsize: int) -> float:
    frame = (
        spark.read.format("jdbc")
        .options(
            url=url(port),
            driver=DRIVER,
            user="root",
            password="",
            dbtable="t",
            partitionColumn="id",
            lowerBound="0",
            upperBound=str(rows),
            numPartitions=str(partitions),
            fetchsize=str(fetchsize),
        )
        .load()
    )
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def count(connection) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {DATABASE}.t")
        return cursor.fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--fetchsize", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    assert JAR.exists(), "MariaDB Connector/J is not installed (Debian libmariadb-java)"

    with tempfile.TemporaryDirectory(prefix="bench_spark_jdbc_") as folder:
        quire = QuireProcess(Path(folder) / "quire").start()
        mariadb = MariaDB(Path(folder) / "mariadb")
        spark = None
        try:
            mariadb.start()
            servers = {"Quire": (quire.connect(), quire.query_port, QUIRE_TABLE)}
            servers["MariaDB"] = (mariadb.connect(), mariadb.port, MARIADB_TABLE)
            for connection, _, table in servers.values():
                with connection.cursor() as cursor:
                    cursor.execute(f"CREATE DATABASE {DATABASE}")
                    cursor.execute(table)
            spark = spark_session()
            loads = {}
            for name, (connection, port, _) in servers.items():
                loads[name] = load(spark, port, args.rows)
                assert count(connection) == args.rows, f"{name} holds {count(connection)} rows"
                logger.info("%s loaded %d rows in %.1f s", name, args.rows, loads[name])
            best = {name: float("inf") for name in servers}
            peak = 0
            for _ in range(args.repeat):
                for name, (_, port, _) in servers.items():
                    if name == "Quire":
                        with PeakRss(quire.process.pid) as rss:
                            seconds = read(spark, port, args.rows, args.partitions, args.fetchsize)
                        peak = max(peak, rss.peak - rss.before)
                    else:
                        seconds = read(spark, port, args.rows, args.partitions, args.fetchsize)
                    logger.info("%s read %d rows in %.2f s", name, args.rows, seconds)
                    best[name] = min(best[name], seconds)
        finally:
            if spark is not None:
                spark.stop()
            quire.stop()
            mariadb.stop()

    print(f"\nrows {args.rows:,}, partitions {args.partitions}, fetchsize {args.fetchsize}")
    for name in best:
        print(
            f"{name:8} load {args.rows / loads[name]:>12,.0f} rows/s   "
            f"read {args.rows / best[name]:>12,.0f} rows/s ({best[name]:.2f} s)"
        )
    print(f"Quire process RSS during its reads: +{peak / 2**20:.0f} MB over its size before")
    print(f"JDBC read, Quire / MariaDB: {best['MariaDB'] / best['Quire']:.2f}x")


if __name__ == "__main__":
    main()
