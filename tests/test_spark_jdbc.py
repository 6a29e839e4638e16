"""Spark reads and writes Quire over JDBC with MariaDB Connector/J (Debian libmariadb-java), as a
Doris user does: `jdbc:mysql://fe:query_port/db` with the MariaDB driver class. One `quire up` and
one local[2] SparkSession for the module; every answer is checked against PyMySQL's."""

from __future__ import annotations

import datetime
import socket
import time
from decimal import Decimal
from pathlib import Path

import pymysql
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import types as T

from tests.harness import QuireProcess, run, wait_until

JAR = Path("/usr/share/java/mariadb-java-client.jar")
DRIVER = "org.mariadb.jdbc.Driver"
DATABASE = "jdbc_db"
NUMBERS = 20_000  # rows of the table read in partitions; its answer is bigger than the FE holds
HOLD_BYTES = 64 * 1024  # the FE's query_stream_hold_bytes here: bigger answers stream
FIRST_DAY = datetime.date(2026, 1, 1)
WIDEST_LARGEINT = 2**127 - 1  # 39 digits: more than Spark's DECIMAL(38) holds

TYPED_ROWS = (
    "(1, 1.500, '2026-01-02', '2026-01-02 03:04:05', true, 1" + "0" * 37 + ", 'a', 'x'),"
    " (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (3, -2.250, '1999-12-31', '1999-12-31 23:59:59', false, -5, 'ü€', '')"
)


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    if not JAR.exists():
        pytest.fail("MariaDB Connector/J is not installed (Debian libmariadb-java)")
    node = QuireProcess(
        tmp_path_factory.mktemp("jdbc"), {"query_stream_hold_bytes": HOLD_BYTES}
    ).start()
    root = node.connect()
    run(root, f"CREATE DATABASE {DATABASE}")
    run(root, f"USE {DATABASE}")
    run(
        root,
        "CREATE TABLE typed (k INT, d DECIMAL(12,3), dt DATE, ts DATETIME, b BOOLEAN,"
        " big LARGEINT, s VARCHAR(20), st STRING) DUPLICATE KEY(k)"
        " DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(root, f"INSERT INTO typed VALUES {TYPED_ROWS}")
    run(
        root,
        "CREATE TABLE wide (k INT, big LARGEINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(root, f"INSERT INTO wide VALUES (1, {WIDEST_LARGEINT}), (2, {-WIDEST_LARGEINT})")
    run(
        root,
        "CREATE TABLE numbers (id BIGINT, v DOUBLE, s VARCHAR(40), d DATE) DUPLICATE KEY(id)"
        " DISTRIBUTED BY HASH(id) BUCKETS 4",
    )
    for start in range(0, NUMBERS, 2000):
        rows = ", ".join(
            f"({i}, {i * 0.5}, 'row-{i}', '{FIRST_DAY + datetime.timedelta(i % 365)}')"
            for i in range(start, start + 2000)
        )
        run(root, f"INSERT INTO numbers VALUES {rows}")
    run(
        root,
        "CREATE TABLE sink (id BIGINT, name VARCHAR(40), amount DECIMAL(10,2), day DATE)"
        " DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(root, "CREATE USER nosel IDENTIFIED BY 'pw'")
    run(root, f"GRANT LOAD_PRIV ON {DATABASE}.sink TO nosel")  # into the database, not SELECT
    root.close()
    yield node
    node.stop()


def url(quire, **parameters) -> str:
    query = "&".join(f"{k}={v}" for k, v in parameters.items())
    return f"jdbc:mysql://127.0.0.1:{quire.query_port}/{DATABASE}" + (f"?{query}" if query else "")


def jdbc(spark, quire, user: str = "root", password: str = "", **options):
    reader = spark.read.format("jdbc").options(
        url=options.pop("url", url(quire)), driver=DRIVER, user=user, password=password
    )
    return reader.options(**options).load()


def pymysql_rows(quire, sql: str) -> list[tuple]:
    connection = quire.connect(database=DATABASE)
    try:
        return list(run(connection, sql))
    finally:
        connection.close()


def rows_answered(quire) -> float:
    response = requests.get(f"http://127.0.0.1:{quire.http_port}/metrics", timeout=10)
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == "quire_query_rows_total":
                return sample.value
    raise AssertionError("no quire_query_rows in /metrics")


def test_a_whole_table_reads_with_its_types_as_pymysql_reads_it(spark, quire):
    frame = jdbc(spark, quire, dbtable="typed")
    assert [(f.name, f.dataType) for f in frame.schema.fields] == [
        ("k", T.IntegerType()),
        ("d", T.DecimalType(12, 3)),
        ("dt", T.DateType()),
        ("ts", T.TimestampType()),
        ("b", T.BooleanType()),
        ("big", T.DecimalType(38, 0)),
        ("s", T.StringType()),
        ("st", T.StringType()),
    ]
    expected = [
        tuple(bool(v) if i == 4 and v is not None else v for i, v in enumerate(row))
        for row in pymysql_rows(quire, "SELECT * FROM typed ORDER BY k")
    ]
    assert sorted((tuple(r) for r in frame.collect()), key=lambda r: r[0]) == expected
    assert expected[0][1:6] == (
        Decimal("1.500"),
        datetime.date(2026, 1, 2),
        datetime.datetime(2026, 1, 2, 3, 4, 5),
        True,
        Decimal(10**37),
    )
    assert expected[1][1:] == (None,) * 7


def test_a_largeint_beyond_38_digits_reads_as_text_with_a_custom_schema(spark, quire):
    frame = jdbc(spark, quire, dbtable="wide", customSchema="k INT, big STRING")
    assert sorted(tuple(r) for r in frame.collect()) == [
        (1, str(WIDEST_LARGEINT)),
        (2, str(-WIDEST_LARGEINT)),
    ]


def test_a_partitioned_read_splits_the_table_and_loses_no_row(spark, quire):
    frame = jdbc(
        spark,
        quire,
        dbtable="numbers",
        partitionColumn="id",
        lowerBound="0",
        upperBound=str(NUMBERS),
        numPartitions="4",
        fetchsize="1000",
    )
    assert frame.rdd.getNumPartitions() == 4
    got = sorted(tuple(r) for r in frame.collect())
    assert got == sorted(pymysql_rows(quire, "SELECT * FROM numbers"))
    assert len(got) == NUMBERS


def test_the_query_option_runs_the_query(spark, quire):
    sql = "SELECT id, s, v * 2 AS twice FROM numbers WHERE id % 997 = 0"
    frame = jdbc(spark, quire, query=sql)
    assert sorted(tuple(r) for r in frame.collect()) == sorted(pymysql_rows(quire, sql))
    counted = jdbc(spark, quire, query="SELECT count(*), max(id) FROM numbers")
    assert counted.columns == ["COUNT(*)", "MAX(id)"]  # MySQL's names, not the engine's
    assert tuple(counted.collect()[0]) == (NUMBERS, NUMBERS - 1)


def test_a_dataframe_filter_reaches_the_fe_s_where(spark, quire):
    frame = jdbc(spark, quire, dbtable="numbers").filter("id >= 100 AND id < 110 AND s <> 'x'")
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters" in plan and "GreaterThanOrEqual(id,100)" in plan, plan
    before = rows_answered(quire)
    got = sorted(tuple(r) for r in frame.collect())
    sent = rows_answered(quire) - before
    assert got == sorted(pymysql_rows(quire, "SELECT * FROM numbers WHERE id >= 100 AND id < 110"))
    # The FE sent the 10 matching rows (and the driver's few session queries), not 20,000.
    assert 10 <= sent < 100, sent


def test_a_big_answer_streams_past_the_session_s_memory_limit(spark, quire):
    """exec_mem_limit of 1 MB would refuse a held answer of 20,000 rows; the FE streams it."""
    frame = jdbc(
        spark, quire, dbtable="numbers", sessionInitStatement="SET exec_mem_limit = 1048576"
    )
    assert frame.count() == NUMBERS
    assert frame.selectExpr("sum(id)").collect()[0][0] == NUMBERS * (NUMBERS - 1) // 2
    connection = quire.connect(database=DATABASE)
    try:
        run(connection, "SET exec_mem_limit = 1048576")
        assert len(run(connection, "SELECT * FROM numbers")) == NUMBERS
    finally:
        connection.close()


def test_a_user_without_select_gets_the_driver_s_sqlexception_1142(spark, quire):
    jvm = spark.sparkContext._jvm
    login = jvm.java.util.Properties()
    login.setProperty("user", "nosel")
    login.setProperty("password", "pw")
    connection = jvm.org.mariadb.jdbc.Driver().connect(url(quire), login)
    try:
        statement = connection.createStatement()
        with pytest.raises(Exception) as raised:
            statement.executeQuery("SELECT * FROM numbers")
        cause = raised.value.java_exception
        assert cause.getErrorCode() == 1142, str(cause)
        assert cause.getSQLState() == "42000"
    finally:
        connection.close()
    with pytest.raises(Exception, match="SELECT command denied"):
        jdbc(spark, quire, user="nosel", password="pw", dbtable="numbers").collect()


def _sink_frame(spark, first: int, count: int):
    return spark.createDataFrame(
        [
            (i, f"name-{i}", Decimal(i) / 4, datetime.date(2026, 1, 1) + datetime.timedelta(i % 30))
            for i in range(first, first + count)
        ],
        "id long, name string, amount decimal(10,2), day date",
    )


def _write(frame, quire, mode: str, **options) -> None:
    properties = {"user": "root", "password": "", "driver": DRIVER, **options}
    frame.write.jdbc(url(quire, rewriteBatchedStatements="true"), "sink", mode, properties)


def test_appends_are_visible_over_mysql(spark, quire):
    _write(_sink_frame(spark, 0, 3000), quire, "append")
    frame = _sink_frame(spark, 3000, 200)
    frame.write.jdbc(
        url(quire), "sink", "append", {"user": "root", "password": "", "driver": DRIVER}
    )
    expected = sorted(tuple(r) for r in _sink_frame(spark, 0, 3200).collect())
    assert sorted(pymysql_rows(quire, "SELECT * FROM sink")) == expected
    assert sorted(tuple(r) for r in jdbc(spark, quire, dbtable="sink").collect()) == expected


def test_overwrite_with_truncate_keeps_the_table_and_replaces_its_rows(spark, quire):
    created = pymysql_rows(quire, "SHOW CREATE TABLE sink")[0][1]
    _write(_sink_frame(spark, 10_000, 50), quire, "overwrite", truncate="true")
    assert pymysql_rows(quire, "SHOW CREATE TABLE sink")[0][1] == created
    assert sorted(pymysql_rows(quire, "SELECT * FROM sink")) == sorted(
        tuple(r) for r in _sink_frame(spark, 10_000, 50).collect()
    )


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # PyMySQL's
def test_clients_gone_mid_stream_free_the_engine(spark, quire):
    """More streaming reads abandoned half-read than the FE has engine workers: each stops its
    query, so the reads after them are answered."""
    for _ in range(6):
        connection = quire.connect(database=DATABASE, cursorclass=pymysql.cursors.SSCursor)
        cursor = connection.cursor()
        cursor.execute("SELECT * FROM numbers")
        assert len(cursor.fetchmany(100)) == 100
        connection._sock.shutdown(socket.SHUT_RDWR)  # the client goes away without a word
        connection._sock.close()
    started = time.monotonic()
    frame = jdbc(
        spark,
        quire,
        dbtable="numbers",
        partitionColumn="id",
        lowerBound="0",
        upperBound=str(NUMBERS),
        numPartitions="4",
    )
    assert frame.count() == NUMBERS
    assert time.monotonic() - started < 60
    wait_until(lambda: len(pymysql_rows(quire, "SHOW PROCESSLIST")) == 1, 30, "the FE to drop them")
