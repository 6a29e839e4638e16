"""The README's example pipeline, end to end against a real `quire up`: a CSV loaded with Stream
Load (curl, as Doris users script it), the table read in Spark with format("quire"), aggregated
there, the result written back with format("quire") into a UNIQUE KEY table, read over MySQL.
Run twice with more sales: the totals are replaced by key, not added twice."""

import decimal
import json
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from tests.harness import QuireProcess, run

REPO = Path(__file__).resolve().parent.parent
REGIONS = ("north", "south", "east")


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("pipeline")).start()
    yield node
    node.stop()


def sale(number: int) -> tuple:
    return (
        number,
        REGIONS[number % 3],
        decimal.Decimal(f"{number % 50}.{number % 100:02d}"),
        f"2024-05-{number % 3 + 1:02d}",
    )


def stream_load(quire, path: Path, label: str) -> dict:
    answer = subprocess.run(
        [
            "curl", "-sS", "--location-trusted", "-u", "root:",
            "-H", f"label:{label}", "-H", "column_separator:,", "-T", str(path),
            f"http://127.0.0.1:{quire.http_port}/api/shop/sales/_stream_load",
        ],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(answer.stdout)


def aggregate_in_spark(spark, quire) -> None:
    """Read sales in Spark, total per region and day there, write the totals back."""
    options = {"fe": f"127.0.0.1:{quire.http_port}", "user": "root", "password": ""}
    sales = spark.read.format("quire").options(table="shop.sales", **options).load()
    totals = sales.groupBy("region", "day").agg(
        F.sum("amount").alias("total"), F.count("*").alias("orders")
    )
    totals.write.format("quire").mode("append").options(table="shop.totals", **options).save()


def test_stream_load_spark_aggregate_write_back_read_over_mysql(spark, quire, tmp_path):
    connection = quire.connect()
    run(connection, "CREATE DATABASE shop")
    run(connection, "USE shop")
    run(
        connection,
        "CREATE TABLE sales (id INT NOT NULL, region VARCHAR(16), amount DECIMAL(10,2), "
        "day DATE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3",
    )
    run(
        connection,
        "CREATE TABLE totals (region VARCHAR(16) NOT NULL, day DATE NOT NULL, "
        "total DECIMAL(18,2), orders BIGINT) UNIQUE KEY(region, day) "
        "DISTRIBUTED BY HASH(region) BUCKETS 2",
    )
    sales: list[tuple] = []
    for label, numbers in (("day-one", range(1, 1001)), ("day-two", range(1001, 1501))):
        rows = [sale(n) for n in numbers]
        sales += rows
        csv = tmp_path / f"{label}.csv"
        csv.write_text("".join(",".join(map(str, row)) + "\n" for row in rows))
        answer = stream_load(quire, csv, label)
        assert answer["Status"] == "Success" and answer["NumberLoadedRows"] == len(rows), answer
        aggregate_in_spark(spark, quire)
        expected: dict[tuple, list] = {}
        for _, region, amount, day in sales:
            total = expected.setdefault((region, day), [decimal.Decimal(0), 0])
            total[0] += amount
            total[1] += 1
        got = run(connection, "SELECT region, day, total, orders FROM totals")
        assert sorted((r, d.isoformat(), t, o) for r, d, t, o in got) == sorted(
            (region, day, total, orders) for (region, day), (total, orders) in expected.items()
        )
    connection.close()
