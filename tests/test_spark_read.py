"""spark.read.format("quire") against a real `quire up`: one local[2] SparkSession for the module,
rows written over MySQL, flushed into blocks, some deleted or updated, some still in memory. The
DataFrame equals SELECT * at the same snapshot (types included: DECIMAL, DATE, DATETIME, LARGEINT,
strings, booleans, NULLs); a filter prunes blocks; the columns option; a user without SELECT is
refused; a read while writes and merges run returns exactly its snapshot; broken plans, a gone
FE and a truncated object fail with clear errors."""

import datetime
import decimal
import os
import threading
from pathlib import Path

import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNull, LessThan

from be import read_plan  # noqa: E402
from be.read_plan import ReadPlanFormatError  # noqa: E402
from be.spark.errors import PlanRefused  # noqa: E402
from be.spark.plans import fetch_plan  # noqa: E402
from be.spark.source import QuireReader, ReadOptions  # noqa: E402
from tests.harness import QuireProcess, free_port, run, wait_until  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OVERRIDES = {
    "flush_rows": 400,
    "flush_interval_second": 3600,
    "block_rows": 64,  # many blocks, for pruning
    "merge_min_objects": 2,
    "merge_small_object_bytes": 64 << 20,
}
TYPED = (
    "CREATE TABLE typed (id INT NOT NULL, name VARCHAR(30), amount DECIMAL(12,3), day DATE, "
    "at DATETIME, ok BOOLEAN, ratio DOUBLE, tiny TINYINT) DUPLICATE KEY(id) "
    "DISTRIBUTED BY HASH(id) BUCKETS 3"
)


def typed_row(number: int) -> str:
    if number % 17 == 0:
        return f"({number}, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    return (
        f"({number}, 'name-{number}', {number}.125, '2024-{number % 12 + 1:02d}-{number % 28 + 1:02d}', "
        f"'2024-03-04 05:{number % 60:02d}:{(number * 7) % 60:02d}', {number % 2}, "
        f"{number / 8}, {number % 100 - 50})"
    )


def normal(value):
    """A value as both PyMySQL and Spark give it, made comparable."""
    if isinstance(value, bool):
        return int(value)
    if (
        isinstance(value, decimal.Decimal)
        and value == value.to_integral_value()
        and abs(value) > 10**30
    ):
        return str(int(value))
    if isinstance(value, int) and abs(value) > 10**30:
        return str(value)
    return value


def rows_of(rows) -> list[tuple]:
    return sorted((tuple(normal(v) for v in row) for row in rows), key=lambda row: row[0])


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("spark"), overrides=OVERRIDES).start()
    yield node
    node.stop()


def objects_of(node: QuireProcess, table_id_glob: str = "t*") -> list[Path]:
    return list((node.workdir / "storage" / "objects").glob(f"{table_id_glob}/p*/*/*.data.parquet"))


@pytest.fixture(scope="module")
def typed(quire):
    """typed: 1200 rows flushed into objects, then 1 in 10 deleted, some updated, and rows that
    stay in memory."""
    connection = quire.connect()
    run(connection, "CREATE DATABASE sparkdb")
    run(connection, "USE sparkdb")
    run(connection, TYPED)
    for start in range(1, 1201, 300):
        run(
            connection,
            "INSERT INTO typed VALUES " + ",".join(map(typed_row, range(start, start + 300))),
        )
    wait_until(lambda: len(objects_of(quire)) >= 3, 60, "a flush of typed")
    run(connection, "DELETE FROM typed WHERE id % 10 = 3")
    run(connection, "UPDATE typed SET name = 'changed', amount = amount + 1 WHERE id % 50 = 1")
    run(connection, "INSERT INTO typed VALUES " + ",".join(map(typed_row, range(5001, 5041))))
    yield connection
    connection.close()


def fe(quire) -> str:
    return f"127.0.0.1:{quire.http_port}"


def reader(spark, quire, table: str, **options):
    frame = spark.read.format("quire").option("fe", fe(quire)).option("user", "root")
    frame = frame.option("table", table)
    for key, value in options.items():
        frame = frame.option(key, str(value))
    return frame.load()


def select_at(connection, sql: str, ts: int) -> list[tuple]:
    run(connection, f"SET read_ts = '{ts}'")
    try:
        return list(run(connection, sql))
    finally:
        run(connection, "SET read_ts = ''")


def test_dataframe_equals_select_at_the_snapshot(spark, quire, typed):
    plan = fetch_plan(fe(quire), "root", "", "sparkdb.typed")
    assert plan.objects and plan.tail.num_rows and len(plan.deleted) + len(plan.tombstones)
    frame = reader(spark, quire, "sparkdb.typed", snapshot=plan.ts)
    expected = select_at(typed, "SELECT * FROM typed", plan.ts)
    assert rows_of(frame.collect()) == rows_of(expected)
    assert len(expected) == 1200 - 120 + 40


def test_types_map_exactly(spark, quire, typed):
    frame = reader(spark, quire, "sparkdb.typed")
    types = {field.name: (field.dataType.simpleString(), field.nullable) for field in frame.schema}
    assert types == {
        "id": ("int", False),
        "name": ("string", True),
        "amount": ("decimal(12,3)", True),
        "day": ("date", True),
        "at": ("timestamp_ntz", True),
        "ok": ("boolean", True),
        "ratio": ("double", True),
        "tiny": ("tinyint", True),
    }
    row = frame.filter("id = 2").collect()[0]
    assert row.amount == decimal.Decimal("2.125") and row.day == datetime.date(2024, 3, 3)
    assert row.at == datetime.datetime(2024, 3, 4, 5, 2, 14)
    assert row.ok is False and row.tiny == -48
    assert frame.filter("id = 17").collect()[0].name is None
    run(
        typed,
        "CREATE TABLE wide (id INT NOT NULL, big LARGEINT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    values = [(i, (-1) ** i * (10**38 + i) if i % 5 else None) for i in range(1, 40)]
    run(
        typed,
        "INSERT INTO wide VALUES "
        + ",".join(f"({i}, {'NULL' if b is None else b})" for i, b in values),
    )
    wide = reader(spark, quire, "sparkdb.wide")
    assert (
        wide.schema["big"].dataType.simpleString() == "string"
    )  # 39 digits: past DecimalType(38, 0)
    got = sorted((row.id, row.big) for row in wide.collect())
    assert got == [(i, None if b is None else str(b)) for i, b in values]


def test_a_filter_prunes_blocks(spark, quire, typed):
    options = ReadOptions.of(
        {"fe": fe(quire), "user": "root", "table": "sparkdb.typed", "prune_blocks": "true"}
    )
    schema = reader(spark, quire, "sparkdb.typed").schema
    whole = QuireReader(options, schema)
    list(whole.pushFilters([]))
    pruned = QuireReader(options, schema)
    filters = [GreaterThanOrEqual(("id",), 100), LessThan(("id",), 160)]
    assert list(pruned.pushFilters(filters)) == []  # applied to the rows read: not by Spark
    every = sum(len(blocks) for p in whole.partitions() for _, blocks in p.parts.objects)
    chosen = sum(len(blocks) for p in pruned.partitions() for _, blocks in p.parts.objects)
    assert 0 < chosen < every / 3, (chosen, every)
    frame = reader(spark, quire, "sparkdb.typed", prune_blocks="true")
    frame = frame.filter("id >= 100 AND id < 160")
    expected = run(typed, "SELECT * FROM typed WHERE id >= 100 AND id < 160")
    assert rows_of(frame.collect()) == rows_of(expected)


FILTERS = {  # Spark's WHERE: MySQL's (the same rows by SQL's three-valued logic)
    "id = 42": "id = 42",
    "id <=> 42": "id <=> 42",
    "tiny > 40": "tiny > 40",
    "tiny <= -45 AND id >= 300": "tiny <= -45 AND id >= 300",
    "name = 'name-7'": "name = 'name-7'",
    "name < 'name-11'": "name < 'name-11'",
    "name IN ('name-3', 'name-5', NULL)": "name IN ('name-3', 'name-5', NULL)",
    "day >= DATE'2024-12-20'": "day >= '2024-12-20'",
    "ok = true AND id < 60": "ok = true AND id < 60",
    "name IS NULL": "name IS NULL",
    "day IS NOT NULL AND id < 20": "day IS NOT NULL AND id < 20",
    "ratio > 100.0": "ratio > 100.0",
    "amount < 10": "amount < 10",
    "at = TIMESTAMP_NTZ'2024-03-04 05:05:35'": "at = '2024-03-04 05:05:35'",
    "NOT (id > 5)": "NOT (id > 5)",
    "name LIKE 'name-11%'": "name LIKE 'name-11%'",
}


def test_filters_applied_by_the_read_give_sparks_answer(spark, quire, typed):
    """With prune_blocks, the filters the read applies itself (integers, booleans, dates, strings:
    comparisons, IN, IS [NOT] NULL) are not applied again by Spark; the others are. Either way
    the rows are MySQL's."""
    schema = reader(spark, quire, "sparkdb.typed").schema
    options = ReadOptions.of(
        {"fe": fe(quire), "user": "root", "table": "sparkdb.typed", "prune_blocks": "true"}
    )
    pushed = [
        EqualTo(("id",), 1), In(("name",), ("a", None)), IsNull(("day",)),
        LessThan(("ratio",), 2.0), EqualTo(("amount",), decimal.Decimal("1.125")),
        GreaterThan(("at",), datetime.datetime(2024, 1, 1)), GreaterThan(("tiny",), 1000),
    ]  # fmt: skip
    left = list(QuireReader(options, schema).pushFilters(pushed))
    assert left == pushed[3:]  # NaN's order, decimals, datetimes, a value past TINYINT: Spark's
    for where, mysql in FILTERS.items():
        frame = reader(spark, quire, "sparkdb.typed", prune_blocks="true")  # one scan each
        expected = run(typed, f"SELECT * FROM typed WHERE {mysql}")
        assert expected, where
        assert rows_of(frame.filter(where).collect()) == rows_of(expected), where


def test_a_read_keeps_every_task_busy(spark, quire, typed):
    """The blocks are cut into at most a multiple of parallelism partitions (a small table too:
    no core waits while one task reads alone); every row is read once whatever the cut."""
    base = {"fe": fe(quire), "user": "root", "table": "sparkdb.typed"}
    counts = {}
    for parallelism in (1, 3):
        cut = QuireReader(ReadOptions.of({**base, "parallelism": str(parallelism)}), None)
        list(cut.pushFilters([]))
        counts[parallelism] = len([p for p in cut.partitions() if p.parts.objects])
    assert counts[1] == 1 and 1 < counts[3] <= 3, counts
    frame = reader(spark, quire, "sparkdb.typed", parallelism="3")
    assert rows_of(frame.collect()) == rows_of(run(typed, "SELECT * FROM typed"))


def test_a_dataframe_reads_the_snapshot_of_its_load(spark, quire, typed):
    """Every action on one DataFrame reads the same snapshot, filtered or not (without
    prune_blocks, a filtered action leaves nothing behind that a later one would reuse)."""
    frame = reader(spark, quire, "sparkdb.typed")
    count = frame.count()
    assert count == run(typed, "SELECT COUNT(*) FROM typed")[0][0]
    run(typed, "INSERT INTO typed VALUES " + ",".join(map(typed_row, range(7001, 7011))))
    run(typed, "DELETE FROM typed WHERE id = 2")
    assert frame.filter("id < 100").count() == len([row for row in frame.collect() if row.id < 100])
    assert frame.count() == count
    assert frame.filter("id = 2").count() == 1
    assert reader(spark, quire, "sparkdb.typed").count() == count + 10 - 1
    run(typed, "DELETE FROM typed WHERE id > 7000")
    run(typed, "INSERT INTO typed VALUES " + typed_row(2))


def test_the_columns_option(spark, quire, typed):
    frame = reader(spark, quire, "sparkdb.typed", columns="name, id")
    assert frame.columns == ["name", "id"]
    got = sorted((row.id, row.name) for row in frame.collect())
    assert got == sorted((i, n) for n, i in run(typed, "SELECT name, id FROM typed"))
    with pytest.raises(Exception, match="Unknown column"):
        reader(spark, quire, "sparkdb.typed", columns="id, nope").collect()


def test_select_privilege_decides(spark, quire, typed):
    run(typed, "CREATE USER reader IDENTIFIED BY 'pw'")
    with pytest.raises(PlanRefused) as refused:
        fetch_plan(fe(quire), "reader", "pw", "sparkdb.typed")
    assert refused.value.status == 403 and "SELECT" in refused.value.message
    with pytest.raises(PlanRefused) as refused:
        fetch_plan(fe(quire), "reader", "wrong", "sparkdb.typed")
    assert refused.value.status == 401
    frame = spark.read.format("quire").options(
        fe=fe(quire), user="reader", password="pw", table="sparkdb.typed"
    )
    with pytest.raises(Exception, match="403"):
        frame.load()
    run(typed, "GRANT SELECT_PRIV ON sparkdb.typed TO reader")
    assert frame.load().count() == run(typed, "SELECT COUNT(*) FROM typed")[0][0]
    with pytest.raises(PlanRefused) as refused:
        fetch_plan(fe(quire), "reader", "pw", "sparkdb.nothing")
    assert refused.value.status == 403  # as MySQL: no privilege, whether it exists or not


def test_a_read_while_writes_and_merges_run_returns_its_snapshot(spark, quire, typed):
    run(
        typed,
        "CREATE TABLE moving (id INT NOT NULL, v BIGINT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(typed, "INSERT INTO moving VALUES " + ",".join(f"({i}, {i})" for i in range(1, 1001)))
    wait_until(lambda: fetch_plan(fe(quire), "root", "", "sparkdb.moving").objects, 60, "a flush")
    plan = fetch_plan(fe(quire), "root", "", "sparkdb.moving")
    expected = select_at(typed, "SELECT id, v FROM moving", plan.ts)
    stop = threading.Event()
    failures = []

    def write():
        connection = quire.connect(database="sparkdb")
        number = 2000
        try:
            while not stop.is_set():
                values = ",".join(f"({i}, {i})" for i in range(number, number + 200))
                run(connection, f"INSERT INTO moving VALUES {values}")
                run(connection, f"DELETE FROM moving WHERE id % 7 = {number % 7}")
                number += 200
        except Exception as error:  # the test fails with it below
            failures.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        snapshot_objects = {meta.name for meta in plan.objects}
        wait_until(
            lambda: not snapshot_objects <= names_now(quire, "sparkdb.moving"),
            60,
            "a merge that replaced objects of the snapshot",
        )
        got = reader(spark, quire, "sparkdb.moving", snapshot=plan.ts).collect()
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not failures, failures
    assert sorted((row.id, row.v) for row in got) == sorted(expected)


def names_now(quire, table: str) -> set[str]:
    return {meta.name for meta in fetch_plan(fe(quire), "root", "", table).objects}


def test_an_aggregate_key_table_reads_merged(spark, quire, typed):
    run(
        typed,
        "CREATE TABLE summed (k INT NOT NULL, total BIGINT SUM, top INT MAX) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    for round_ in range(3):
        run(
            typed,
            "INSERT INTO summed VALUES "
            + ",".join(f"({i % 50}, {i}, {i + round_})" for i in range(400)),
        )
    frame = reader(spark, quire, "sparkdb.summed")
    assert sorted(tuple(row) for row in frame.collect()) == sorted(
        run(typed, "SELECT * FROM summed")
    )


def test_bitmap_and_hll_columns_read_as_their_values_text(spark, quire, typed):
    run(typed, "CREATE TABLE visits (page VARCHAR(9), users BITMAP BITMAP_UNION, "
        "seen HLL HLL_UNION) AGGREGATE KEY(page) DISTRIBUTED BY HASH(page) BUCKETS 1")  # fmt: skip
    run(typed, "INSERT INTO visits VALUES ('home', TO_BITMAP(3), HLL_HASH(3)), "
        "('home', TO_BITMAP(1), HLL_HASH(1)), ('cart', BITMAP_EMPTY(), HLL_EMPTY())")  # fmt: skip
    frame = reader(spark, quire, "sparkdb.visits")
    assert {field.name: field.dataType.simpleString() for field in frame.schema}["users"] == (
        "string"
    )
    rows = {
        row.page: (row.users, len(row.seen.split(",")) if row.seen else 0)
        for row in frame.collect()
    }
    assert rows == {"home": ("1,3", 2), "cart": ("", 0)}


def test_plans_and_reads_fail_clearly(spark, quire, typed):
    plan = fetch_plan(fe(quire), "root", "", "sparkdb.typed")
    data = bytearray(read_plan.encode(plan))
    data[-3] ^= 0xFF
    with pytest.raises(ReadPlanFormatError, match="checksum"):
        read_plan.decode(bytes(data))
    with pytest.raises(ReadPlanFormatError):
        read_plan.decode(bytes(data[:10]))
    with pytest.raises(PlanRefused, match="did not answer"):
        fetch_plan(f"127.0.0.1:{free_port()}", "root", "", "sparkdb.typed")
    with pytest.raises(PlanRefused) as refused:
        fetch_plan(fe(quire), "root", "", "sparkdb.typed", snapshot=plan.ts * 2)
    assert refused.value.status == 400
    run(
        typed,
        "CREATE TABLE broken (id INT NOT NULL) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(typed, "INSERT INTO broken VALUES " + ",".join(f"({i})" for i in range(500)))
    broken = wait_until(
        lambda: fetch_plan(fe(quire), "root", "", "sparkdb.broken").objects, 60, "a flush"
    )
    path = quire.workdir / "storage" / "objects" / broken[0].name
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception, match="ObjectCorrupt|is .* bytes"):
        reader(spark, quire, "sparkdb.broken").collect()


def test_a_read_plan_from_a_tn_process(spark, tmp_path):
    """`quire fe` with a `quire tn` and a `quire cn`: the FE asks the TN for the plan over the node
    service, and Spark reads the TN's objects and the tail it sent."""
    from tests.test_data_processes import fe_with_tn_and_cn

    shared = tmp_path / "objects"
    tn = {"flush_rows": 100, "storage_root": shared}
    with fe_with_tn_and_cn(tmp_path, tn) as (front, _, _):
        connection = front.connect()
        run(connection, "CREATE DATABASE r")
        run(connection, "USE r")
        run(connection, TYPED)
        run(connection, "INSERT INTO typed VALUES " + ",".join(map(typed_row, range(1, 301))))
        wait_until(
            lambda: fetch_plan(fe(front), "root", "", "r.typed").objects, 60, "a flush on the TN"
        )
        run(connection, "DELETE FROM typed WHERE id % 9 = 0")
        run(connection, "INSERT INTO typed VALUES " + ",".join(map(typed_row, range(301, 331))))
        plan = fetch_plan(fe(front), "root", "", "r.typed")
        assert plan.tail.num_rows and str(shared) in plan.location
        got = reader(spark, front, "r.typed", snapshot=plan.ts).collect()
        assert rows_of(got) == rows_of(select_at(connection, "SELECT * FROM typed", plan.ts))
        connection.close()


def test_objects_of_an_older_schema_version_read_as_select_does(spark, quire, typed):
    run(
        typed,
        "CREATE TABLE grown (id INT NOT NULL, a VARCHAR(10)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(typed, "INSERT INTO grown VALUES " + ",".join(f"({i}, 'a{i}')" for i in range(450)))
    wait_until(lambda: fetch_plan(fe(quire), "root", "", "sparkdb.grown").objects, 60, "a flush")
    run(typed, "ALTER TABLE grown ADD COLUMN b INT DEFAULT '7'")
    wait_until(
        lambda: (
            len(run(typed, "DESC grown")) == 3
            and fetch_plan(fe(quire), "root", "", "sparkdb.grown").schema.names == ("id", "a", "b")
        ),
        60,
        "the new column",
    )
    run(typed, "INSERT INTO grown VALUES (1000, 'new', 8)")
    frame = reader(spark, quire, "sparkdb.grown")
    assert frame.columns == ["id", "a", "b"]
    assert sorted(tuple(row) for row in frame.collect()) == sorted(
        run(typed, "SELECT id, a, b FROM grown")
    )


def test_blocks_in_s3_read_through_the_plans_location(moto_endpoint):
    """A partition reads an s3:// store as the TN writes it (objects and tombstones), with the
    s3_* options' endpoint and keys."""
    import pyarrow as pa

    from be.logtail.entries import COMMIT_TS, ROW_ID
    from be.read_plan import ReadPlan
    from be.spark.scan import PartitionParts, open_store, scan
    from be.storage.blocks import write_blocks
    from be.storage.names import Tablet
    from be.storage.objects import ObjectStore, S3Options
    from be.storage.tombstones import write_tombstones
    from be.table_schema import ColumnSchema, TableSchema
    from metadata.records import KeyModel

    options = S3Options(
        moto_endpoint, "us-east-1", "testing", "testing", allow_bucket_creation=True
    )
    options.filesystem().create_dir("quire-spark")
    store = ObjectStore.open_root("s3://quire-spark/c1", s3=options)
    schema = TableSchema(
        1, 1, (ColumnSchema("id", pa.int64(), False),), KeyModel.DUPLICATE, ("id",)
    )
    tablet = Tablet(1, 2, 3)
    rows = pa.table({ROW_ID: range(100), COMMIT_TS: [5] * 50 + [9] * 50, "id": range(100)})
    meta = write_blocks(
        store,
        tablet,
        rows.cast(
            pa.schema(
                [
                    pa.field(ROW_ID, pa.int64(), False),
                    pa.field(COMMIT_TS, pa.int64(), False),
                    pa.field("id", pa.int64(), False),
                ]
            )
        ),
        schema_version=1,
        flush_ts=9,
    )
    tombstones = write_tombstones(store, tablet, [1, 2, 60], [6, 6, 6])
    empty = schema.with_row_ids().empty_table()
    plan = ReadPlan(
        schema, 8, (meta,), (tombstones,), pa.array([3], pa.int64()), empty, store.location
    )
    parts = PartitionParts(
        plan.location, plan.ts, schema, ((meta, (0,)),), (tombstones,), plan.deleted, None
    )
    reading = open_store(plan.location, S3Options(moto_endpoint, "us-east-1", "testing", "testing"))
    got = sorted(v for table in scan(parts, reading) for v in table.column("id").to_pylist())
    assert got == [0, *range(4, 50)]  # committed at or before 8, not deleted at or before it


def test_read_plan_messages_round_trip_and_are_checked_strictly():
    import pyarrow as pa

    from be.service.errors import ServiceFormatError
    from be.service.format import ReadPlanReply, ReadPlanRequest, decode, encode
    from be.service.limits import ServiceLimits
    from be.table_schema import ColumnSchema, TableSchema
    from metadata.records import KeyModel

    limits = ServiceLimits()
    schema = TableSchema(
        7, 2, (ColumnSchema("id", pa.int64(), False),), KeyModel.DUPLICATE, ("id",)
    )
    for message in (
        ReadPlanRequest(schema, 99, 1500, ("id",)),
        ReadPlanRequest(schema, 99, 1500),
        ReadPlanReply(b"plan bytes"),
    ):
        assert decode(encode(message, limits), limits) == message
    data = bytearray(encode(ReadPlanRequest(schema, 99, 1500), limits))
    data[-2] ^= 0x55
    with pytest.raises(ServiceFormatError):
        decode(bytes(data), limits)
    with pytest.raises(ServiceFormatError):
        decode(encode(ReadPlanRequest(schema, 0, 1500), limits), limits)  # no timestamp 0


def test_bad_options_are_refused_clearly(spark, quire, typed):
    from be.spark.errors import BadOption

    with pytest.raises(BadOption, match="table"):
        ReadOptions.of({"fe": fe(quire), "user": "root"})
    with pytest.raises(BadOption, match='"db.table"'):
        fetch_plan(fe(quire), "root", "", "typed")
    with pytest.raises(BadOption, match="prune_blocks"):
        ReadOptions.of({"fe": "x", "user": "u", "table": "a.b", "prune_blocks": "maybe"})
    with pytest.raises(BadOption, match="batch_rows <= partition_rows"):
        ReadOptions.of(
            {"fe": "x", "user": "u", "table": "a.b", "batch_rows": "10", "partition_rows": "5"}
        )
    with pytest.raises(BadOption, match="parallelism is positive"):
        ReadOptions.of({"fe": "x", "user": "u", "table": "a.b", "parallelism": "0"})
    with pytest.raises(Exception, match="snapshot is an integer"):
        reader(spark, quire, "sparkdb.typed", snapshot="yesterday")


def test_deletes_found_by_binary_search_equal_a_set_lookup():
    """An object's rows without the deleted ids: ascending ids (as written) and shuffled ones
    (searched the other way) give what a set lookup gives."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from be.spark.scan import _present, _within

    class Span:  # an object's least and greatest row ids
        min_row_id, max_row_id = 3_000, 5_999

    generator = np.random.default_rng(7)
    gone = np.unique(generator.integers(1, 9_000, 1_500)).astype(np.int64)
    ascending = np.arange(3_000, 6_000, dtype=np.int64)
    for ids in (ascending, generator.permutation(ascending), ascending[:1]):
        rows = pa.chunked_array([pa.array(ids)])
        expected = pc.invert(pc.is_in(rows, value_set=pa.array(gone))).combine_chunks()
        assert _present(rows, _within(gone, Span)).equals(expected)


def test_nested_columns_read_as_sparks_arrays_maps_and_structs(spark, quire, typed):
    run(
        typed,
        "CREATE TABLE nested (k INT, arr ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<a:INT, b:STRING>) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(
        typed,
        """INSERT INTO nested VALUES (1, [1, NULL], '{"x": 2}', '{"a": 3, "b": "y"}'), (2, NULL, NULL, NULL)""",
    )
    frame = reader(spark, quire, "sparkdb.nested")
    types = {field.name: field.dataType.simpleString() for field in frame.schema}
    assert types == {
        "k": "int",
        "arr": "array<int>",
        "m": "map<string,int>",
        "s": "struct<a:int,b:string>",
    }
    rows = sorted(frame.collect(), key=lambda row: row.k)
    assert [(r.k, r.arr, r.m, None if r.s is None else tuple(r.s)) for r in rows] == [
        (1, [1, None], {"x": 2}, (3, "y")),
        (2, None, None, None),
    ]
