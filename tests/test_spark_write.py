"""df.write.format("quire") against a real `quire up`: one local[2] SparkSession for the module.
Appends equal what PyMySQL then reads (DECIMAL, DATE, DATETIME, LARGEINT, strings, NULLs); a
UNIQUE KEY table replaces by key; overwrite replaces every row in one commit (readers see the
old rows or the new, AS OF reads the old, a failed overwrite leaves them, a restart keeps the new);
a task failing mid-write (a bad value, a UDF raising) leaves nothing visible and no object behind; a user without LOAD is refused; a
large write streams its rows into objects as they come. A write is a load with a label: SHOW LOAD
lists it (FINISHED with its rows and bytes, CANCELLED when it failed or its driver died), a label
taken is refused with "Label Already Exists", and a restart keeps the committed ones."""

import datetime
import decimal
import json
import subprocess
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pymysql
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from be.load.limits import LoadLimits
from be.load.objects import LoadWriter
from be.spark import write_client, write_protocol
from be.spark.errors import BadOption, WriteRefused
from be.spark.scan import open_store
from be.spark.writer import QuireWriter, WriteOptions
from be.storage.objects import S3Options
from be.tn import loads
from be.tn.errors import LabelTaken
from tests.harness import QuireProcess, run, wait_until

REPO = Path(__file__).resolve().parent.parent
OVERRIDES = {"flush_interval_second": 3600}
TYPED = (
    "CREATE TABLE typed (id INT NOT NULL, name VARCHAR(12), amount DECIMAL(12,3), day DATE, "
    "at DATETIME, big LARGEINT, ok BOOLEAN) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3"
)
TYPED_SCHEMA = T.StructType(
    [
        T.StructField("id", T.IntegerType(), False),
        T.StructField("name", T.StringType()),
        T.StructField("amount", T.DecimalType(12, 3)),
        T.StructField("day", T.DateType()),
        T.StructField("at", T.TimestampNTZType()),
        T.StructField("big", T.StringType()),
        T.StructField("ok", T.BooleanType()),
    ]
)


def typed_row(number: int) -> tuple:
    if number % 7 == 0:
        return (number, None, None, None, None, None, None)
    return (
        number,
        f"n-{number}",
        decimal.Decimal(f"{number}.125"),
        datetime.date(2024, number % 12 + 1, number % 28 + 1),
        datetime.datetime(2024, 3, 4, 5, number % 60, (number * 7) % 60),
        str((-1) ** number * (10**38 + number)),
        number % 2 == 0,
    )


MYSQL_COLUMNS = "id, name, amount, day, at, ok"  # LARGEINT: DuckDB takes no decimal256


def over_mysql(row: tuple) -> tuple:
    """typed_row's values as PyMySQL gives them (all but LARGEINT, read with Spark)."""
    values = list(row[:5]) + [None if row[6] is None else int(row[6])]
    return tuple(values)


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("spark-write"), overrides=OVERRIDES).start()
    connection = node.connect()
    run(connection, "CREATE DATABASE w")
    connection.close()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def typed(quire):
    """The typed table, with 20 rows written over MySQL."""
    connection = quire.connect(database="w")
    run(connection, TYPED)
    rows = [over_mysql(typed_row(n)) for n in range(-20, 0)]
    run(
        connection,
        "INSERT INTO typed ("
        + MYSQL_COLUMNS
        + ") VALUES "
        + ",".join(
            "(" + ",".join("NULL" if v is None else repr(str(v)) for v in row) + ")" for row in rows
        ),
    )
    connection.close()
    return rows


@pytest.fixture
def mysql(quire):
    connection = quire.connect(database="w")
    yield connection
    connection.close()


def id_and_text_table(mysql, name: str) -> T.StructType:
    """A table (id INT, v VARCHAR(10)) in two buckets, and the Spark schema of its rows."""
    run(
        mysql,
        f"CREATE TABLE {name} (id INT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    return T.StructType([T.StructField("id", T.IntegerType()), T.StructField("v", T.StringType())])


def fe(quire) -> str:
    return f"127.0.0.1:{quire.http_port}"


def save(frame, quire, table: str, mode: str = "append", user: str = "root", **options):
    writer = frame.write.format("quire").mode(mode).option("fe", fe(quire))
    writer = writer.option("user", user).option("table", table)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def objects_of(quire, table: str) -> set[Path]:
    return set((quire.workdir / "storage" / "objects").glob("t*/p*/*/*.data.parquet"))


def test_append_equals_what_mysql_reads(spark, quire, mysql, typed):
    first = [typed_row(n) for n in range(1, 301)]
    save(spark.createDataFrame(first, TYPED_SCHEMA).repartition(3), quire, "w.typed")
    assert sorted(run(mysql, f"SELECT {MYSQL_COLUMNS} FROM typed")) == typed + [
        over_mysql(row) for row in first
    ]
    second = [typed_row(n) for n in range(301, 401)]
    save(spark.createDataFrame(second, TYPED_SCHEMA), quire, "w.typed")
    assert sorted(run(mysql, f"SELECT {MYSQL_COLUMNS} FROM typed")) == typed + [
        over_mysql(row) for row in first + second
    ]
    frame = spark.read.format("quire").option("fe", fe(quire)).option("user", "root")
    read = frame.option("table", "w.typed").load().filter("id > 0").select("id", "big").collect()
    assert sorted((row.id, row.big) for row in read) == [(row[0], row[5]) for row in first + second]


def test_columns_by_name_and_defaults(spark, quire, mysql):
    run(
        mysql,
        "CREATE TABLE named (id BIGINT NOT NULL, label VARCHAR(8) DEFAULT 'old', score DOUBLE, "
        "at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(mysql, "ALTER TABLE named MODIFY COLUMN label VARCHAR(8) DEFAULT 'none'")
    frame = spark.createDataFrame([(1.5, 1), (2.5, 2)], "SCORE double, ID long")
    before = datetime.datetime.now().replace(microsecond=0)
    save(frame, quire, "w.named")
    after = datetime.datetime.now() + datetime.timedelta(seconds=1)  # DATETIME rounds
    written = sorted(run(mysql, "SELECT id, label, score, at FROM named"))
    assert [row[:3] for row in written] == [(1, "none", 1.5), (2, "none", 2.5)]
    assert all(before <= row[3] <= after for row in written), written  # the write's time
    with pytest.raises(Exception, match="not a column of the table"):
        save(spark.createDataFrame([(1, 2)], "id long, other long"), quire, "w.named")


def test_tasks_make_the_auto_partitions_their_rows_need(spark, quire, mysql):
    """Tasks writing rows an auto partition table has no partition for have the FE make them
    (each once, whichever task asks first); the driver commits the objects by the grown table."""
    run(
        mysql,
        "CREATE TABLE monthly (id INT NOT NULL, d DATE NOT NULL) DUPLICATE KEY(id) "
        "AUTO PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    days = [(n, datetime.date(2024, 1 + n % 3, 1 + n % 28)) for n in range(60)]
    schema = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("d", T.DateType())])
    save(spark.createDataFrame(days, schema).repartition(3), quire, "w.monthly")
    assert sorted(row[1] for row in run(mysql, "SHOW PARTITIONS FROM monthly")) == [
        "p20240101000000", "p20240201000000", "p20240301000000",
    ]  # fmt: skip
    assert run(mysql, "SELECT COUNT(*), COUNT(DISTINCT MONTH(d)) FROM monthly") == ((60, 3),)
    run(mysql, "CREATE TABLE ranged_ids (id INT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(id) "
        "PARTITION BY RANGE(id) (PARTITION p1 VALUES LESS THAN ('5')) "
        "DISTRIBUTED BY HASH(id) BUCKETS 1")  # fmt: skip
    plain = "id int, v string"
    with pytest.raises(Exception, match="falls in no partition"):  # a table without the rule
        save(spark.createDataFrame([(9, "x")], plain), quire, "w.ranged_ids")
    assert run(mysql, "SELECT COUNT(*) FROM ranged_ids") == ((0,),)


def test_unique_key_table_replaces(spark, quire, mysql):
    run(
        mysql,
        "CREATE TABLE keyed (k INT NOT NULL, v VARCHAR(20)) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(mysql, "INSERT INTO keyed VALUES " + ",".join(f"({k}, 'old-{k}')" for k in range(10)))
    rows = [(k, f"new-{k}") for k in range(5, 15)]
    save(spark.createDataFrame(rows, "k int, v string").coalesce(1), quire, "w.keyed")
    expected = [(k, f"old-{k}") for k in range(5)] + rows
    assert sorted(run(mysql, "SELECT k, v FROM keyed")) == expected


def test_a_sequence_column_keeps_the_newest_row_of_a_key(spark, quire, mysql):
    run(
        mysql,
        "CREATE TABLE versioned (k INT NOT NULL, v VARCHAR(20), ver INT) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('function_column.sequence_col' = 'ver')",
    )
    run(mysql, "INSERT INTO versioned VALUES (1, 'kept', 5), (2, 'replaced', 5)")
    rows = [(1, "older", 4), (2, "newer", 6), (3, "x", 2), (3, "y", 3), (3, "z", 1)]
    save(spark.createDataFrame(rows, "k int, v string, ver int").coalesce(1), quire, "w.versioned")
    assert run(mysql, "SELECT k, v FROM versioned ORDER BY k") == (
        (1, "kept"),
        (2, "newer"),
        (3, "y"),
    )


def test_aggregate_key_table_merges_and_an_empty_write_commits(spark, quire, mysql):
    run(
        mysql,
        "CREATE TABLE summed (k INT NOT NULL, v BIGINT SUM, top INT MAX) AGGREGATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(mysql, "INSERT INTO summed VALUES (1, 10, 4)")
    rows = [(1, 5, 9), (1, 7, 2), (2, 3, 1)]
    save(spark.createDataFrame(rows, "k int, v long, top int"), quire, "w.summed")
    assert sorted(run(mysql, "SELECT k, v, top FROM summed")) == [(1, 22, 9), (2, 3, 1)]
    save(spark.createDataFrame([], "k int, v long, top int"), quire, "w.summed")
    assert sorted(run(mysql, "SELECT k, v, top FROM summed")) == [(1, 22, 9), (2, 3, 1)]


PARTED = (
    "CREATE TABLE parted (id INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(id) "
    "PARTITION BY RANGE(id) (PARTITION p1 VALUES LESS THAN (1000), "
    "PARTITION p2 VALUES LESS THAN (MAXVALUE)) DISTRIBUTED BY HASH(id) BUCKETS 2"
)


def test_overwrite_replaces_every_row_at_one_timestamp(spark, quire, mysql):
    """Rows in objects (a Spark append) and in memory (INSERT, DELETE) of both partitions are
    replaced by one commit: a reader counting all along sees the old count or the new, never
    another; AS OF a moment before reads the old rows."""
    run(mysql, PARTED)
    appended = [(n, f"spark-{n}") for n in range(0, 2000, 2)]
    save(spark.createDataFrame(appended, "id int, v string").coalesce(2), quire, "w.parted")
    run(mysql, "INSERT INTO parted VALUES " + ",".join(f"({n}, 'sql-{n}')" for n in range(1, 60)))
    run(mysql, "DELETE FROM parted WHERE id < 10")
    old = sorted(run(mysql, "SELECT id, v FROM parted"))
    assert len(old) == 1000 + 59 - 14  # ids below 10: five appended, nine inserted
    moment = run(mysql, "SELECT NOW(6)")[0][0]
    new = [(n, f"new-{n}") for n in range(500, 1700, 3)]
    counts: list[int] = []
    stop = threading.Event()

    def count() -> None:
        reader = quire.connect(database="w")
        try:
            while not stop.is_set():
                counts.append(run(reader, "SELECT COUNT(*) FROM parted")[0][0])
        finally:
            reader.close()

    counter = threading.Thread(target=count)
    counter.start()
    try:
        wait_until(lambda: len(counts) >= 3, 30, "the reader's first counts")
        frame = spark.createDataFrame(new, "id int, v string").repartition(3)
        save(frame, quire, "w.parted", mode="overwrite")
        seen = len(counts)
        wait_until(lambda: len(counts) >= seen + 3, 30, "counts after the overwrite")
    finally:
        stop.set()
        counter.join()
    assert set(counts) == {len(old), len(new)}, set(counts)
    assert counts.index(len(new)) > counts.index(len(old))
    assert counts[counts.index(len(new)) :] == [len(new)] * (len(counts) - counts.index(len(new)))
    assert sorted(run(mysql, "SELECT id, v FROM parted")) == new
    as_of = f"SELECT id, v FROM parted FOR SYSTEM_TIME AS OF TIMESTAMP '{moment}'"
    assert sorted(run(mysql, as_of)) == old
    frame = spark.read.format("quire").option("fe", fe(quire)).option("user", "root")
    read = frame.option("table", "w.parted").load().collect()
    assert sorted((row.id, row.v) for row in read) == new


def test_a_failing_overwrite_leaves_the_old_rows(spark, quire, mysql, typed):
    before = sorted(run(mysql, "SELECT id FROM typed"))
    objects = objects_of(quire, "typed")

    @F.udf("string")
    def failing(name, number):
        if number == 3099:
            raise RuntimeError("the UDF fails on purpose")
        return name

    rows = [typed_row(n) for n in range(3000, 3100)]
    frame = spark.createDataFrame(rows, TYPED_SCHEMA).repartition(2)
    with pytest.raises(Exception, match="on purpose"):
        save(frame.withColumn("name", failing("name", "id")), quire, "w.typed", mode="overwrite")
    assert sorted(run(mysql, "SELECT id FROM typed")) == before
    wait_until(lambda: objects_of(quire, "typed") == objects, 30, "the write's objects removed")


def test_overwrite_against_concurrent_writers(quire, mysql):
    """A UNIQUE KEY table: a row inserted between the overwrite's begin and its commit is
    replaced too; a transaction whose snapshot predates the overwrite and deletes a row fails
    with a write conflict; the new rows are the table (the last of a key wins)."""
    run(
        mysql,
        "CREATE TABLE swapped (k INT NOT NULL, v VARCHAR(10)) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(mysql, "INSERT INTO swapped VALUES " + ",".join(f"({k}, 'old')" for k in range(10)))
    schema = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("v", T.StringType())])
    options = WriteOptions.of({"fe": fe(quire), "user": "root", "table": "w.swapped"})
    writer = QuireWriter(options, schema, True)
    keys = [*range(5, 15), 7]
    batch = pa.RecordBatch.from_pydict(
        {"k": pa.array(keys, pa.int32()), "v": ["new"] * 10 + ["last"]}
    )
    message = writer.write(iter([batch]))
    run(mysql, "INSERT INTO swapped VALUES (100, 'between')")
    older = quire.connect(database="w")
    try:
        run(older, "BEGIN")
        assert len(run(older, "SELECT k FROM swapped")) == 11
        writer.commit([message])
        run(older, "DELETE FROM swapped WHERE k = 1")
        with pytest.raises(pymysql.MySQLError) as caught:
            run(older, "COMMIT")
        assert caught.value.args[0] == 1213 and "overwritten" in caught.value.args[1]
    finally:
        older.close()
    expected = [(k, "last" if k == 7 else "new") for k in range(5, 15)]
    assert sorted(run(mysql, "SELECT k, v FROM swapped")) == expected
    run(mysql, "INSERT INTO swapped VALUES (5, 'after'), (200, 'after')")  # keys known again
    assert run(mysql, "SELECT COUNT(*) FROM swapped") == ((11,),)
    assert run(mysql, "SELECT v FROM swapped WHERE k = 5") == (("after",),)


@pytest.mark.parametrize("failure", ["bad value", "udf raises"])
def test_a_task_failing_mid_write_leaves_nothing(spark, quire, mysql, typed, failure):
    before = sorted(run(mysql, "SELECT id FROM typed"))
    objects = objects_of(quire, "typed")
    rows = [typed_row(n) for n in range(2000, 2600)]
    frame = (
        spark.createDataFrame(rows, TYPED_SCHEMA).repartition(3, "id").sortWithinPartitions("id")
    )
    if failure == "bad value":  # too long for VARCHAR(12), in one partition's last rows
        frame = frame.withColumn(
            "name", F.when(F.col("id") == 2599, F.lit("x" * 40)).otherwise(F.col("name"))
        )
        match = "does not fit"
    else:

        @F.udf("string")
        def failing(name, number):
            if number == 2599:
                raise RuntimeError("the UDF fails on purpose")
            return name

        frame = frame.withColumn("name", failing("name", "id"))
        match = "on purpose"
    label = "failing_" + failure.replace(" ", "_")
    with pytest.raises(Exception, match=match):
        save(frame, quire, "w.typed", batch_rows=50, object_rows=50, label=label)
    assert sorted(run(mysql, "SELECT id FROM typed")) == before
    shown = run(mysql, f"SHOW LOAD WHERE LABEL = '{label}'")
    assert [(row[1], row[2]) for row in shown] == [(label, "CANCELLED")]
    assert "aborted" in shown[0][7]  # ErrorMsg
    # a task Spark cancels when another fails may still be writing: its row ids refused once the
    # load is aborted, it removes its own objects
    wait_until(lambda: objects_of(quire, "typed") == objects, 30, "the write's objects removed")


def test_a_user_without_load_is_refused(spark, quire, mysql, typed):
    run(mysql, "CREATE USER 'reader'@'%' IDENTIFIED BY 'pw'")
    run(mysql, "GRANT SELECT_PRIV ON w.* TO 'reader'@'%'")
    frame = spark.createDataFrame([typed_row(5000)], TYPED_SCHEMA)
    with pytest.raises(Exception, match="LOAD command denied"):
        save(frame, quire, "w.typed", user="reader", password="pw")
    with pytest.raises(WriteRefused, match="Unauthorized") as refused:
        write_client.begin(fe(quire), "reader", "wrong", "w.typed", False, 10)
    assert refused.value.status == 401
    assert not run(mysql, "SELECT id FROM typed WHERE id = 5000")


def test_a_large_write_streams(spark, quire, mysql):
    """Rows reach objects as they come: with 1 MB of rows waiting at most per task, each task
    writes many objects per tablet rather than one at its end."""
    run(
        mysql,
        "CREATE TABLE large (id BIGINT NOT NULL, payload VARCHAR(64)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    before = objects_of(quire, "large")
    count = 400_000
    frame = spark.range(count, numPartitions=2).select(
        F.col("id"), F.concat(F.lit("payload-"), F.col("id").cast("string")).alias("payload")
    )
    save(frame, quire, "w.large", max_buffered_bytes=1 << 20)
    assert run(mysql, "SELECT COUNT(*), SUM(id), COUNT(DISTINCT payload) FROM large") == (
        (count, count * (count - 1) // 2, count),
    )
    written = objects_of(quire, "large") - before
    assert len(written) >= 8, len(written)


def test_objects_of_a_task_that_died_are_removed(spark, quire, mysql):
    """A task attempt that wrote objects and died before it reported them: a commit registers
    only the reported ones and removes the rest; an abort removes every one."""
    schema = id_and_text_table(mysql, "swept")
    options = WriteOptions.of({"fe": fe(quire), "user": "root", "table": "w.swept"})
    batch = pa.RecordBatch.from_pydict(
        {"id": pa.array(range(100), pa.int32()), "v": [f"v{i}" for i in range(100)]}
    )
    for outcome in ("commit", "abort"):
        before = objects_of(quire, "swept")
        writer = QuireWriter(options, schema, False)
        message = writer.write(iter([batch]))  # task 0, in this process
        dead = LoadWriter(
            open_store(writer.begun.location, options.s3),
            writer.begun.schema,
            writer.begun.txn_id,
            writer._client().reserve_row_ids,
            LoadLimits(),
            keep_keys=False,
            seqs=options.limits.seqs(1, 0),
        )
        dead.add(pa.table({"id": pa.array(range(100, 150), pa.int32()), "v": ["dead"] * 50}))
        dead_objects = {meta.name for meta in dead.finish()}
        assert dead_objects and len(objects_of(quire, "swept") - before) > len(dead_objects)
        if outcome == "commit":
            writer.commit([message, None])
            assert run(mysql, "SELECT COUNT(*), MAX(id) FROM swept") == ((100, 99),)
            left = {
                path.relative_to(quire.workdir / "storage" / "objects").as_posix()
                for path in objects_of(quire, "swept")
            }
            assert not dead_objects & left
        else:
            writer.abort([message, None])
            assert objects_of(quire, "swept") == before
            assert run(mysql, "SELECT COUNT(*) FROM swept") == ((100,),)


def test_forged_tokens_and_broken_messages_are_refused(quire, mysql):
    run(
        mysql,
        "CREATE TABLE tokens (id INT NOT NULL) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    begun = write_client.begin(fe(quire), "root", "", "w.tokens", False, 10)
    forged = write_client.LoadClient(fe(quire), begun.token[:-4] + "AAAA", 10)
    for call in (
        lambda: forged.reserve_row_ids(10),
        lambda: forged.commit(()),
        lambda: forged.abort(()),
        lambda: forged.auto_partitions([["2024-01-01"]]),
    ):
        with pytest.raises(WriteRefused, match="not signed by this cluster") as refused:
            call()
        assert refused.value.status == 401
    client = write_client.LoadClient(fe(quire), begun.token, 10)
    with pytest.raises(WriteRefused) as refused:
        client._post(write_protocol.COMMIT_PATH, write_protocol.encode_commit(())[:-1] + b"x")
    assert refused.value.status == 400
    with pytest.raises(WriteRefused, match="count") as refused:
        client.reserve_row_ids(0)
    with pytest.raises(WriteRefused, match="makes no auto partitions") as refused:
        client.auto_partitions([[1]])  # the table has no rule to make them by
    assert refused.value.status == 422
    first = client.reserve_row_ids(5)
    store = open_store(begun.location, S3Options())
    schema = begun.schema
    stray = LoadWriter(store, schema, begun.txn_id, lambda n: first + 10_000, LoadLimits(), False)
    stray.add(pa.table({"id": pa.array([1], pa.int32())}))
    objects = stray.finish()  # row ids the TN did not hand this load
    with pytest.raises(WriteRefused, match="did not hand") as refused:
        client.commit(objects)
    assert refused.value.status == 400
    client.abort(tuple(meta.name for meta in objects))
    assert not any(store.exists(meta.name) for meta in objects)
    with pytest.raises(WriteRefused, match="not open") as refused:
        client.commit(())
    assert refused.value.status == 400


def test_a_write_is_a_load_with_a_label(spark, quire, mysql):
    """SHOW LOAD (PyMySQL) and SHOW STREAM LOAD (the mariadb CLI) list a labelled write as a
    Stream Load, FINISHED with its rows and bytes; the label again fails before any task runs
    and writes nothing; an overwrite without a label is named spark_<its transaction id>."""
    run(
        mysql,
        "CREATE TABLE labelled (id INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    frame = spark.createDataFrame([(n, f"v{n}") for n in range(50)], "id int, v string")
    save(frame.coalesce(2), quire, "w.labelled", label="nightly_1")
    (shown,) = run(mysql, "SHOW LOAD WHERE LABEL = 'nightly_1'")
    assert shown[1:5] == ("nightly_1", "FINISHED", "100.00% (1/1)", "STREAM_LOAD")
    assert "dpp.norm.ALL=50" in shown[5] and shown[17] == "root" and shown[0] == shown[15]
    details = json.loads(shown[14])
    assert details["Source"] == "spark" and details["Overwrite"] is False
    assert details["TotalRows"] == 50 and details["LoadBytes"] > 0
    assert details["Table"] == "labelled"
    out = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "root", "--batch",
         "-e", "SHOW STREAM LOAD FROM w WHERE LABEL = 'nightly_1'"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    header, line = out.stdout.splitlines()
    fields = line.split("\t")
    assert fields[:5] == ["nightly_1", "w", "labelled", "127.0.0.1", "Success"]
    assert fields[8] == "50" and int(fields[11]) == details["LoadBytes"]

    objects = objects_of(quire, "labelled")
    with pytest.raises(Exception, match="Label Already Exists"):
        save(frame, quire, "w.labelled", label="nightly_1")
    assert run(mysql, "SELECT COUNT(*) FROM labelled") == ((50,),)
    assert objects_of(quire, "labelled") == objects
    assert len(run(mysql, "SHOW LOAD WHERE LABEL = 'nightly_1'")) == 1

    save(frame.limit(10), quire, "w.labelled", mode="overwrite")
    assert run(mysql, "SELECT COUNT(*) FROM labelled") == ((10,),)
    latest = run(mysql, "SHOW LOAD WHERE LABEL LIKE 'spark_%'")[-1]
    assert latest[1] == f"spark_{latest[0]}" and latest[2] == "FINISHED"
    assert json.loads(latest[14])["Overwrite"] is True
    with pytest.raises(WriteRefused, match="Label format error"):
        write_client.begin(fe(quire), "root", "", "w.labelled", False, 10, "no spaces")


def test_a_load_whose_driver_died_is_aborted_at_its_timeout(tmp_path):
    """On an embedded data plane with load_timeout_second=1: a write begun and never committed
    shows ABORTED and its objects go; its label is free again, a committed one's is taken, also after a restart
    (the log; records written before source and overwrite existed still read); the node service
    carries the claim."""
    from be.client import open_embedded
    from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
    from be.service import format as service_format
    from be.service.limits import ServiceLimits
    from tests.test_overwrite_commit import SCHEMA

    config = Config.load(
        BE_KEYS, [DEFAULT_BE_CONF], [f"storage_root={tmp_path}", "load_timeout_second=1"]
    )
    claim = loads.LoadClaim("died", "w", "t", "root", "10.1.2.3")
    plane = open_embedded(config)
    plane.start()
    try:
        txn_id = plane.begin_load(SCHEMA, claim)
        (record,) = plane.load_records("w")
        assert (record.label, record.state, record.txn_id) == ("died", loads.PREPARE, txn_id)
        writer = LoadWriter(
            plane.store,
            SCHEMA,
            txn_id,
            lambda n: plane.reserve_row_ids(txn_id, n),
            LoadLimits(),
            keep_keys=False,
        )
        writer.add(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
        left = writer.finish()  # a task's objects; its driver dies before the commit
        assert left and all(plane.store.exists(meta.name) for meta in left)
        wait_until(
            lambda: plane.load_records("w")[0].state == loads.ABORTED, 30, "the load's timeout"
        )
        assert "timed out" in plane.load_records("w")[0].message
        wait_until(
            lambda: not any(plane.store.exists(meta.name) for meta in left),
            30,
            "the expired load's objects removed",
        )
        again = plane.begin_load(SCHEMA, claim)
        with pytest.raises(LabelTaken, match=r"Label \[died\] has already been used"):
            plane.begin_load(SCHEMA, claim)
        plane.commit_load(again, SCHEMA, ())
        named = plane.begin_load(SCHEMA, loads.LoadClaim("", "w", "t", "u", "", overwrite=True))
        plane.abort_load(named)
    finally:
        plane.close()
    plane = open_embedded(config)
    plane.start()
    try:
        (record,) = plane.load_records("w")  # the aborted one is kept in memory only
        assert (record.label, record.state, record.source) == ("died", loads.VISIBLE, "spark")
        with pytest.raises(LabelTaken):
            plane.begin_load(SCHEMA, claim)
    finally:
        plane.close()
    older = {k: v for k, v in record.fields().items() if k not in ("source", "overwrite")}
    assert loads.LoadRecord.from_fields(older).source == loads.STREAM_LOAD
    with pytest.raises(TypeError):
        loads.LoadRecord.from_fields({**older, "source": 3})
    limits = ServiceLimits()
    begin = service_format.BeginLoad(SCHEMA, claim)
    assert service_format.decode(service_format.encode(begin, limits), limits) == begin


def test_a_restart_keeps_the_overwritten_rows(quire):
    """The TN replays the overwrites from its log: the same rows, and a key an overwrite wrote
    is still replaced by key; the labels of committed writes are still taken."""
    connection = quire.connect(database="w")
    parted = sorted(run(connection, "SELECT id, v FROM parted"))
    swapped = sorted(run(connection, "SELECT k, v FROM swapped"))
    labelled = run(connection, "SHOW LOAD WHERE LABEL = 'nightly_1'")
    connection.close()
    assert parted and swapped and labelled
    quire.restart()
    connection = quire.connect(database="w")
    try:
        assert run(connection, "SHOW LOAD WHERE LABEL = 'nightly_1'") == labelled
        with pytest.raises(WriteRefused, match="Label Already Exists"):
            write_client.begin(fe(quire), "root", "", "w.labelled", False, 10, "nightly_1")
        assert sorted(run(connection, "SELECT id, v FROM parted")) == parted
        assert sorted(run(connection, "SELECT k, v FROM swapped")) == swapped
        run(connection, "INSERT INTO swapped VALUES (6, 'again')")
        assert run(connection, "SELECT COUNT(*) FROM swapped") == ((len(swapped),),)
    finally:
        connection.close()


def test_vector_crc32_equals_zlib():
    """Placement hashes a batch's texts at once (be/tn/text_crc.py): the same CRC-32 as zlib's,
    or every tablet's rows would move."""
    import random
    import zlib

    from be.tn.text_crc import crc32_each

    chance = random.Random(11)
    texts = [
        "",
        "0",
        "-12",
        "é€😀",
        *(str(chance.randrange(-(10**30), 10**30)) for _ in range(500)),
    ]
    texts += [
        "".join(chance.choice("abé€😀 ,\n") for _ in range(chance.randrange(60)))
        for _ in range(500)
    ]
    values = pa.array(texts, pa.binary())
    assert crc32_each(values.slice(3)).tolist() == [zlib.crc32(t.encode()) for t in texts[3:]]
    assert crc32_each(pa.array(["x" * 300], pa.binary())) is None  # the caller hashes it


def test_row_ids_in_ranges_and_the_compression_option(quire, mysql):
    """A task asks row ids in ranges of row_id_rows (a batch may take the end of one range and
    the start of the next: the TN's commit accepts it); the option compression sets the blocks'
    codec; an unknown codec is refused before anything is written."""
    schema = id_and_text_table(mysql, "ranged")
    base = {"fe": fe(quire), "user": "root", "table": "w.ranged"}
    with pytest.raises(BadOption, match="compression"):
        WriteOptions.of({**base, "compression": "BROTLI"})
    options = WriteOptions.of(
        {**base, "compression": "snappy", "batch_rows": "1000", "row_id_rows": "1500"}
    )
    batches = [
        pa.RecordBatch.from_pydict(
            {
                "id": pa.array(range(start, start + 1000), pa.int32()),
                "v": [f"v{i}" for i in range(start, start + 1000)],
            }
        )
        for start in range(0, 5000, 1000)
    ]
    before = objects_of(quire, "ranged")
    writer = QuireWriter(options, schema, False)
    message = writer.write(iter(batches))
    writer.commit([message])
    assert run(mysql, "SELECT COUNT(*), COUNT(DISTINCT id), SUM(id) FROM ranged") == (
        (5000, 5000, 4999 * 5000 // 2),
    )
    written = objects_of(quire, "ranged") - before
    assert written
    for path in written:
        metadata = pq.read_metadata(path)
        codecs = {
            metadata.row_group(group).column(column).compression
            for group in range(metadata.num_row_groups)
            for column in range(metadata.num_columns)
        }
        assert codecs == {"SNAPPY"}, (path.name, codecs)


def test_a_write_through_a_tn_process_into_s3(spark, moto_endpoint, tmp_path):
    """`quire fe` with a `quire tn` and a `quire cn` keeping objects in an S3-compatible store:
    the tasks write their objects straight into the bucket (the s3_* options), the TN commits them
    over the node service, MySQL reads them on the CN, and Spark reads them back from the bucket."""
    from tests.test_data_processes import fe_with_tn_and_cn

    keys = dict(s3_endpoint=moto_endpoint, s3_region="us-east-1")
    keys.update(s3_access_key="testing", s3_secret_key="testing")
    S3Options(
        moto_endpoint, "us-east-1", "testing", "testing", allow_bucket_creation=True
    ).filesystem().create_dir("quire-written")
    root = "s3://quire-written/cluster"
    tn = {"storage_root": root, "tn_log_dir": tmp_path / "tn" / "log-of-tn", **keys}
    with fe_with_tn_and_cn(tmp_path, tn, {"storage_root": root, **keys}) as (front, _, _):
        connection = front.connect()
        run(connection, "CREATE DATABASE s")
        run(connection, TYPED.replace("typed", "s.typed", 1))
        written = [typed_row(n) for n in range(1, 401)]
        save(spark.createDataFrame(written, TYPED_SCHEMA), front, "s.typed", **keys)
        bucket = open_store(
            f"{root}/objects", S3Options(moto_endpoint, "us-east-1", "testing", "testing")
        )
        assert any(name.endswith(".data.parquet") for name in bucket.list())
        assert not list((tmp_path / "fe").rglob("*.data.parquet"))  # nothing went through the FE
        got = run(connection, f"SELECT {MYSQL_COLUMNS} FROM s.typed ORDER BY id")
        assert list(got) == [over_mysql(row) for row in written]
        frame = spark.read.format("quire").options(
            fe=fe(front), user="root", password="", table="s.typed", **keys
        )
        assert sorted(tuple(row) for row in frame.load().collect()) == sorted(written)
        connection.close()
