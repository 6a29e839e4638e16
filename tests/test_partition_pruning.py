"""Partition pruning against a real `quire up`: a WHERE on the partition column reads only the
partitions that can hold its rows (RANGE with unbounded ends and fixed ranges, LIST, DATE,
DATETIME and integer columns), and answers the same as a table holding the same rows
unpartitioned, for rows in objects and in memory, NULL partition values, joins, UPDATE and DELETE,
and after ADD and DROP PARTITION; EXPLAIN shows `partitions=k/n (names)` as Doris does."""

import datetime
import random
import re

import pyarrow as pa
import pytest

from be.client import open_embedded
from be.cn.bounds import ColumnBound
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.service.errors import ServiceFormatError
from be.service.format import SnapshotRequest, decode, encode
from be.service.limits import ServiceLimits
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import (
    QuireProcess,
    mariadb,
    run,
    wait_until,
)
from tests.test_data_processes import fe_with_tn_and_cn

SEED = 20240611
FLUSH = {"flush_rows": 300, "flush_interval_second": 3600}
MONTHS = [datetime.date(2024, month, 1) for month in range(1, 13)]
# p1 holds everything before February (NULL too), p9 everything from September on
RANGE_PARTITIONS = ", ".join(
    [f"PARTITION p{n} VALUES LESS THAN ('{MONTHS[n]}')" for n in range(1, 9)]
    + ["PARTITION p9 VALUES LESS THAN (MAXVALUE)"]
)
COLUMNS = "id INT NOT NULL, dt DATE, at DATETIME, k INT, v INT"
FLAT = f"CREATE TABLE {{name}} ({COLUMNS}) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2"
BY_DATE = (
    f"CREATE TABLE by_date ({COLUMNS}) DUPLICATE KEY(id) PARTITION BY RANGE(dt) "
    f"({RANGE_PARTITIONS}) DISTRIBUTED BY HASH(id) BUCKETS 2"
)
BY_TIME = (  # fixed ranges with a gap (March); rows of the gap have no partition
    f"CREATE TABLE by_time ({COLUMNS}) DUPLICATE KEY(id) PARTITION BY RANGE(at) ("
    "PARTITION t1 VALUES [('2024-01-01 00:00:00'), ('2024-02-01 00:00:00')), "
    "PARTITION t2 VALUES [('2024-02-01 00:00:00'), ('2024-03-01 00:00:00')), "
    "PARTITION t4 VALUES [('2024-04-01 00:00:00'), ('2025-01-01 00:00:00'))) "
    "DISTRIBUTED BY HASH(id) BUCKETS 1"
)
BY_LIST = (
    f"CREATE TABLE by_list ({COLUMNS.replace('k INT', 'k INT NOT NULL')}) DUPLICATE KEY(id) "
    "PARTITION BY LIST(k) (PARTITION l0 VALUES IN ('0', '1', '2'), "
    "PARTITION l3 VALUES IN ('3', '4'), PARTITION l5 VALUES IN ('5'), "
    "PARTITION l6 VALUES IN ('6', '7', '8', '9')) DISTRIBUTED BY HASH(id) BUCKETS 1"
)
TABLES = {"by_date": "flat_date", "by_time": "flat_time", "by_list": "flat_list"}
PARTITION_COLUMN = {"by_date": "dt", "by_time": "at", "by_list": "k"}


def rows_for(first_id: int, count: int, picker: random.Random) -> list[tuple]:
    rows = []
    for number in range(first_id, first_id + count):
        day = datetime.date(2023, 12, 20) + datetime.timedelta(days=picker.randrange(300))
        moment = datetime.datetime(2024, 1, 1) + datetime.timedelta(
            minutes=picker.randrange(365 * 24 * 60)
        )
        if moment.month == 3:
            moment += datetime.timedelta(days=31)  # by_time has no March
        dt = None if number % 37 == 0 else day
        rows.append((number, dt, moment, picker.randrange(10), picker.randrange(1000)))
    return rows


def insert(connection, table: str, rows: list[tuple]) -> None:
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)", rows)


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("prune"), overrides=FLUSH).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def db(quire):
    """The partitioned tables and their unpartitioned twins, the same rows in each: 400 rows
    flushed into objects, then 60 more in memory."""
    connection = quire.connect()
    run(connection, "CREATE DATABASE prune")
    run(connection, "USE prune")
    for statement in (BY_DATE, BY_TIME, BY_LIST):
        run(connection, statement)
    for flat in TABLES.values():
        run(connection, FLAT.format(name=flat))
    picker = random.Random(SEED)
    first = rows_for(1, 400, picker)
    for table, flat in TABLES.items():
        run(connection, f"INSERT INTO {table} VALUES " + values_sql(first))
        run(connection, f"INSERT INTO {flat} VALUES " + values_sql(first))
    objects = quire.workdir / "storage" / "objects"
    wait_until(
        lambda: len(list(objects.glob("t*/p*/*/*.data.parquet"))) >= 6 * 2,
        60,
        "a flush of the first rows",
    )
    later = rows_for(401, 60, picker)
    for table, flat in TABLES.items():
        insert(connection, table, later)
        insert(connection, flat, later)
    yield connection
    connection.close()


def values_sql(rows: list[tuple]) -> str:
    def literal(value):
        return (
            "NULL"
            if value is None
            else f"'{value}'"
            if isinstance(value, str | datetime.date)
            else str(value)
        )

    return ", ".join("(" + ", ".join(literal(value) for value in row) + ")" for row in rows)


def explained(connection, sql: str) -> list[str]:
    return [row[0] for row in run(connection, f"EXPLAIN {sql}")]


def partitions_line(connection, sql: str, table: str | None = None) -> str:
    lines = explained(connection, sql)
    found = [
        lines[number + 1].strip()
        for number, line in enumerate(lines)
        if line.strip().startswith("TABLE: ") and (table is None or f".{table}(" in line)
    ]
    assert len(found) >= 1, lines
    return found[0]


def scanned_rows(connection, sql: str) -> int:
    """The rows the engine's scan of a one-table query was given (its plan's last estimate)."""
    estimates = re.findall(r"~(\d+) rows?", "\n".join(explained(connection, sql)))
    return int(estimates[-1])


def same(connection, table: str, where: str) -> tuple:
    """The rows of table and of its twin WHERE where, which must be equal."""
    flat = TABLES[table]
    pruned = run(connection, f"SELECT id, dt, at, k, v FROM {table} WHERE {where} ORDER BY id")
    whole = run(connection, f"SELECT id, dt, at, k, v FROM {flat} WHERE {where} ORDER BY id")
    assert pruned == whole, where
    return pruned


def date_literal(picker: random.Random, column: str) -> str:
    day = datetime.date(2023, 12, 1) + datetime.timedelta(days=picker.randrange(340))
    if column == "at":
        if picker.random() < 0.5:
            return f"'{day} {picker.randrange(24):02d}:{picker.randrange(60):02d}:00'"
        return f"TIMESTAMP '{day} 12:00:00'" if picker.random() < 0.3 else f"'{day}'"
    return f"DATE '{day}'" if picker.random() < 0.2 else f"'{day}'"


def literal_for(picker: random.Random, column: str) -> str:
    if column == "k":
        return (
            str(picker.randrange(-1, 11)) if picker.random() < 0.8 else f"'{picker.randrange(10)}'"
        )
    return date_literal(picker, column)


def predicate(picker: random.Random, column: str, depth: int = 0) -> str:
    shape = picker.randrange(10 if depth < 2 else 7)
    value = literal_for(picker, column)
    if shape == 0:
        return f"{column} = {value}"
    if shape == 1:
        return f"{column} {picker.choice(['<', '<=', '>', '>='])} {value}"
    if shape == 2:
        low, high = sorted([value, literal_for(picker, column)])
        return f"{column} BETWEEN {low} AND {high}"
    if shape == 3:
        items = ", ".join(literal_for(picker, column) for _ in range(picker.randrange(1, 5)))
        return f"{column} IN ({items})"
    if shape == 4:
        return f"{value} {picker.choice(['<', '>=', '='])} {column}"  # the literal first
    if shape == 5:
        return f"{column} IS NULL" if picker.random() < 0.5 else f"v < {picker.randrange(1000)}"
    if shape == 6:
        return f"{column} {picker.choice(['<>', '!='])} {value}"
    if shape == 7:
        left, right = predicate(picker, column, depth + 1), predicate(picker, column, depth + 1)
        return f"({left} AND {right})"
    if shape == 8:
        left, right = predicate(picker, column, depth + 1), predicate(picker, column, depth + 1)
        return f"({left} OR {right})"
    return f"NOT ({predicate(picker, column, depth + 1)})"


def test_random_predicates_answer_as_without_partitions(db):
    picker = random.Random(SEED + 1)
    pruned_some = 0
    for table, column in PARTITION_COLUMN.items():
        for _ in range(40):
            terms = [predicate(picker, column) for _ in range(picker.randrange(1, 4))]
            where = " AND ".join(terms)
            same(db, table, where)
            line = partitions_line(db, f"SELECT * FROM {table} WHERE {where}")
            kept, total = map(int, re.match(r"partitions=(\d+)/(\d+) ", line).groups())
            pruned_some += kept < total
    assert pruned_some >= 30, "most random predicates prune some partitions"


def test_explain_shows_the_partitions_read(db, quire):
    assert partitions_line(db, "SELECT * FROM by_date WHERE dt = '2024-03-05'") == (
        "partitions=1/9 (p3)"
    )
    assert partitions_line(db, "SELECT * FROM by_date WHERE dt >= '2024-08-15'") == (
        "partitions=2/9 (p8,p9)"
    )
    assert partitions_line(
        db, "SELECT * FROM by_date WHERE dt BETWEEN '2024-01-31' AND '2024-02-01'"
    ) == ("partitions=2/9 (p1,p2)")
    assert partitions_line(
        db, "SELECT * FROM by_date WHERE dt < '2024-02-01' AND dt IN ('2024-01-05', '2024-06-01')"
    ) == ("partitions=1/9 (p1)")
    assert partitions_line(db, "SELECT * FROM by_list WHERE k IN (4, 9, 12)") == (
        "partitions=2/4 (l3,l6)"
    )
    assert partitions_line(db, "SELECT * FROM by_list WHERE k > 2 AND k <= 5") == (
        "partitions=2/4 (l3,l5)"
    )
    assert partitions_line(db, "SELECT * FROM by_time WHERE at < '2024-02-01'") == (
        "partitions=1/3 (t1)"
    )
    assert partitions_line(
        db, "SELECT * FROM by_time WHERE at >= TIMESTAMP '2024-02-29 23:59:59'"
    ) == ("partitions=2/3 (t2,t4)")
    assert partitions_line(db, "SELECT * FROM by_date WHERE dt = DATE('2024-03-05')") == (
        "partitions=1/9 (p3)"
    )
    assert partitions_line(db, "SELECT * FROM by_date WHERE dt < '2024-1-9'") == (
        "partitions=1/9 (p1)"
    )
    numbers = f"k IN ({', '.join(['3', '4'] * 40)})"  # a long list: the engine reads a table
    assert partitions_line(db, f"SELECT * FROM by_list WHERE {numbers}") == "partitions=1/4 (l3)"
    assert same(db, "by_list", numbers)
    for unclear in (  # OR, NOT, a function of the column, another column, <>: every partition
        "dt = '2024-03-05' OR dt = '2024-04-05'",
        "NOT dt < '2024-03-01'",
        "YEAR(dt) = 2024",
        "dt + INTERVAL 1 DAY = '2024-03-05'",
        "k = 3",
        "dt <> '2024-03-05'",
        "dt = '2024-03-05 10:00:00'",  # DuckDB reads it as a DATE, MySQL does not: not pruned
    ):
        line = partitions_line(db, f"SELECT * FROM by_date WHERE {unclear}")
        assert line.startswith("partitions=9/9 "), (unclear, line)
    everything = run(db, "SELECT COUNT(*) FROM by_list")[0][0]
    in_l5 = run(db, "SELECT COUNT(*) FROM by_list WHERE k = 5")[0][0]
    assert scanned_rows(db, "SELECT * FROM by_list WHERE k = 5") == in_l5 < everything
    lines = explained(db, "SELECT * FROM by_list WHERE k = 5")
    assert "tablets=1/4" in [line.strip() for line in lines], lines
    done = mariadb(
        quire,
        "--batch",
        "-D",
        "prune",
        "-e",
        "EXPLAIN SELECT * FROM by_date WHERE dt = '2024-03-05'",
    )
    assert done.returncode == 0, done.stderr
    assert "partitions=1/9 (p3)" in done.stdout and "TABLE: prune.by_date(by_date)" in done.stdout


def test_a_read_pruning_every_partition_is_empty(db):
    for where in (
        "dt < '2023-01-01' AND dt > '2025-01-01'",
        "dt = NULL",
        "dt IN (NULL)",
    ):
        assert partitions_line(db, f"SELECT * FROM by_date WHERE {where}").startswith(
            "partitions=0/9 ()"
        ), where
        assert same(db, "by_date", where) == ()
    assert partitions_line(
        db, "SELECT * FROM by_time WHERE at BETWEEN '2024-03-02' AND '2024-03-20'"
    ) == ("partitions=0/3 ()")
    assert run(
        db, "SELECT COUNT(*), SUM(v) FROM by_time WHERE at BETWEEN '2024-03-02' AND '2024-03-20'"
    ) == ((0, None),)


def test_null_partition_values_stay_correct(db):
    nulls = run(db, "SELECT COUNT(*) FROM by_date WHERE dt IS NULL")[0][0]
    assert nulls > 5
    assert same(db, "by_date", "dt IS NULL")
    assert same(db, "by_date", "dt < '2024-01-10'")  # p1 holds the NULLs: none of them match
    assert same(db, "by_date", "dt IS NULL OR dt < '2024-01-10'")
    counts = run(
        db,
        "SELECT COUNT(*) FROM by_date WHERE dt < '2024-02-01' "
        "UNION ALL SELECT COUNT(*) FROM flat_date WHERE dt < '2024-02-01'",
    )
    assert counts[0] == counts[1]


def test_joins_prune_each_table_by_its_own_terms(db):
    query = (
        "SELECT a.id, b.id, a.dt, b.k FROM {a} a JOIN {b} b ON a.id = b.id "
        "WHERE a.dt >= '2024-05-01' AND a.dt < '2024-06-15' AND b.k IN (3, 5) ORDER BY a.id"
    )
    pruned = run(db, query.format(a="by_date", b="by_list"))
    assert pruned == run(db, query.format(a="flat_date", b="flat_list")) and pruned
    assert partitions_line(db, query.format(a="by_date", b="by_list"), "by_date") == (
        "partitions=2/9 (p5,p6)"
    )
    assert partitions_line(db, query.format(a="by_date", b="by_list"), "by_list") == (
        "partitions=2/4 (l3,l5)"
    )
    # unqualified: a column of by_date alone is by_date's; beside a subquery it may not be
    run(
        db,
        "CREATE TABLE kinds (kid INT NOT NULL, name VARCHAR(10)) DUPLICATE KEY(kid) "
        "DISTRIBUTED BY HASH(kid) BUCKETS 1",
    )
    run(db, "INSERT INTO kinds VALUES (1, 'one'), (5, 'five')")
    unqualified = (
        "SELECT a.id, name FROM {a} a LEFT JOIN kinds ON a.k = kid "
        "WHERE dt = '2024-07-04' AND kid IS NOT NULL ORDER BY a.id"
    )
    assert run(db, unqualified.format(a="by_date")) == run(db, unqualified.format(a="flat_date"))
    assert partitions_line(db, unqualified.format(a="by_date"), "by_date") == (
        "partitions=1/9 (p7)"
    )
    beside = "SELECT a.id FROM by_date a JOIN (SELECT 1 AS x) s ON x = 1 WHERE dt = '2024-07-04'"
    assert partitions_line(db, beside, "by_date").startswith("partitions=9/9 ")
    # a self join pruned two ways reads what either side needs
    self_join = (
        "SELECT x.id, y.id FROM {t} x JOIN {t} y ON x.v = y.v "
        "WHERE x.dt = '2024-02-10' AND y.dt > '2024-09-01' ORDER BY x.id, y.id"
    )
    assert run(db, self_join.format(t="by_date")) == run(db, self_join.format(t="flat_date"))
    # a subquery prunes by its own WHERE
    nested = (
        "SELECT COUNT(*) FROM {t} WHERE v IN (SELECT v FROM {t} WHERE dt BETWEEN '2024-04-01' "
        "AND '2024-04-30') AND dt IS NOT NULL"
    )
    assert run(db, nested.format(t="by_date")) == run(db, nested.format(t="flat_date"))


def test_update_and_delete_read_only_the_partitions_they_can_touch(db):
    for table, flat in (("by_date", "flat_date"), ("by_list", "flat_list")):
        column = PARTITION_COLUMN[table]
        where = (
            f"{column} BETWEEN '2024-03-10' AND '2024-04-20'"
            if column == "dt"
            else f"{column} IN (1, 5)"
        )
        for target in (table, flat):
            run(db, f"UPDATE {target} SET v = v + 1000 WHERE {where} AND v < 500")
        same(db, table, "v >= 1000")
        for target in (table, flat):
            run(db, f"DELETE FROM {target} WHERE {where} AND v > 1200")
        same(db, table, "1 = 1")
    db.begin()
    try:  # in a transaction: its own writes are seen by a pruned read
        run(db, "INSERT INTO by_date VALUES (9001, '2024-06-06', '2024-06-06 06:00:00', 1, 1)")
        assert run(db, "SELECT id FROM by_date WHERE dt = '2024-06-06' AND id = 9001") == ((9001,),)
        run(db, "DELETE FROM by_date WHERE dt = '2024-06-06' AND id = 9001")
        assert run(db, "SELECT id FROM by_date WHERE dt = '2024-06-06' AND id = 9001") == ()
    finally:
        db.rollback()


def test_after_add_and_drop_partition(db):
    run(
        db,
        "CREATE TABLE grown (id INT NOT NULL, dt DATE NOT NULL, v INT) DUPLICATE KEY(id) "
        "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
        "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(db, "INSERT INTO grown VALUES (1, '2024-01-15', 1), (2, '2024-02-15', 2)")
    run(db, "ALTER TABLE grown ADD PARTITION p3 VALUES LESS THAN ('2024-04-01')")
    run(db, "INSERT INTO grown VALUES (3, '2024-03-15', 3)")
    assert run(db, "SELECT id FROM grown WHERE dt >= '2024-02-10' ORDER BY id") == ((2,), (3,))
    assert partitions_line(db, "SELECT * FROM grown WHERE dt >= '2024-02-10'") == (
        "partitions=2/3 (p2,p3)"
    )
    run(db, "ALTER TABLE grown DROP PARTITION p2")
    assert partitions_line(db, "SELECT * FROM grown WHERE dt >= '2024-02-10'") == (
        "partitions=1/2 (p3)"
    )
    assert run(db, "SELECT id FROM grown WHERE dt >= '2024-02-10' ORDER BY id") == ((3,),)
    assert run(db, "SELECT id FROM grown WHERE dt < '2024-03-01' ORDER BY id") == ((1,),)
    run(db, "ALTER TABLE grown ADD PARTITION p2 VALUES [('2024-02-01'), ('2024-03-01'))")
    run(db, "INSERT INTO grown VALUES (4, '2024-02-16', 4)")
    assert run(db, "SELECT id FROM grown WHERE dt BETWEEN '2024-02-01' AND '2024-02-28'") == ((4,),)
    assert partitions_line(
        db, "SELECT * FROM grown WHERE dt BETWEEN '2024-02-01' AND '2024-02-28'"
    ) == ("partitions=1/3 (p2)")


# -- the read path below the FE: the CN's snapshot, the node service, processes ------------------

SCHEMA = TableSchema(
    7,
    1,
    (ColumnSchema("k", pa.int32(), id=1), ColumnSchema("v", pa.int32(), id=2)),
    KeyModel.DUPLICATE,
    ("k",),
    "RANGE",
    ("k",),
    (
        PartitionSchema(10, (), ("100",), (), (11,)),
        PartitionSchema(20, ("100",), ("200",), (), (21,)),
        PartitionSchema(30, ("200",), (), (), (31,)),
    ),
    ("k",),
)


def test_a_snapshot_reads_only_the_partitions_asked_for(tmp_path):
    config = Config.load(BE_KEYS, [DEFAULT_BE_CONF], [f"storage_root={tmp_path}", "flush_rows=100"])
    plane = open_embedded(config)
    plane.start()
    try:

        def write(keys):
            keys = pa.array(keys, pa.int32())
            inserts = pa.table({"k": keys, "v": keys})
            plane.commit(WriteSet(plane.read_ts(), (TableWrite(SCHEMA, inserts=inserts),)))

        write(range(0, 300, 2))  # 150 rows: flushed into objects
        wait_until(lambda: plane.cn.table(7).memory_rows() == 0, 30, "the flush")
        write(range(1, 300, 10))  # 30 rows in memory
        ts = plane.read_ts()

        def keys(**asked):
            table = plane.snapshot(SCHEMA, ts, 10, **asked)
            return sorted(table.column("k").to_pylist())

        every = keys()
        assert len(every) == 180
        assert keys(partitions=frozenset({20})) == [k for k in every if 100 <= k < 200]
        assert keys(partitions=frozenset({10, 30})) == [k for k in every if not 100 <= k < 200]
        assert keys(partitions=frozenset()) == []
        with_ids = plane.snapshot(SCHEMA, ts, 10, True, partitions=frozenset())
        assert with_ids.num_rows == 0 and with_ids.column_names[0] == "__QUIRE_ROW_ID"
        # a bounded read with pruning first: the key index it makes still holds every partition
        bounded = keys(bounds=(ColumnBound("k", 150, 250),), partitions=frozenset({20}))
        assert set(bounded) >= {k for k in every if 150 <= k < 200}
        assert keys(bounds=(ColumnBound("k", 150, 250),)) == [k for k in every if 150 <= k <= 250]
        assert keys(partitions=frozenset({30}), columns=frozenset({"k"})) == [
            k for k in every if k >= 200
        ]
    finally:
        plane.close()


def test_the_snapshot_request_carries_the_partitions_strictly():
    limits = ServiceLimits()
    for partitions in (None, (), (20,), (10, 30)):
        request = SnapshotRequest(SCHEMA, 5, False, 1000, (), None, partitions)
        assert decode(encode(request, limits), limits) == request
    for wrong in ((40,), (10, 10), (10, 20, 30, 30), ("10",), (0,), (-10,), (True,)):
        data = encode(SnapshotRequest(SCHEMA, 5, False, 1000, (), None, wrong), limits)
        with pytest.raises(ServiceFormatError):
            decode(data, limits)


def test_pruned_reads_through_a_tn_and_a_cn_process(tmp_path):
    shared = tmp_path / "objects"  # the TN flushes some rows where the CN reads them
    with fe_with_tn_and_cn(tmp_path, {"flush_rows": 50, "storage_root": shared}) as (fe, _, _):
        connection = fe.connect()
        run(connection, "CREATE DATABASE r")
        run(connection, "USE r")
        run(connection, BY_DATE)
        run(connection, FLAT.format(name="flat_date"))
        rows = rows_for(1, 120, random.Random(SEED + 2))
        for table in ("by_date", "flat_date"):
            run(connection, f"INSERT INTO {table} VALUES " + values_sql(rows))
        for where in (
            "dt = '2024-03-05'",
            "dt >= '2024-05-01' AND dt < '2024-07-01'",
            "dt IN ('2024-01-02', '2024-09-30')",
            "dt < '2023-01-01'",
        ):
            pruned = run(connection, f"SELECT * FROM by_date WHERE {where} ORDER BY id")
            assert pruned == run(connection, f"SELECT * FROM flat_date WHERE {where} ORDER BY id")
        early = "SELECT * FROM by_date WHERE dt < '2024-03-01'"
        assert partitions_line(connection, early) == "partitions=2/9 (p1,p2)"
        # the CN sent the rows of p1 (the NULLs too) and p2 alone: the engine scanned those
        sent = sum(1 for row in rows if row[1] is None or row[1] < datetime.date(2024, 3, 1))
        assert scanned_rows(connection, early) == sent < len(rows)
        connection.close()


def test_key_models(db):
    run(
        db,
        "CREATE TABLE summed (dt DATE NOT NULL, k INT NOT NULL, v INT SUM) AGGREGATE KEY(dt, k) "
        "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
        "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(
        db,
        "CREATE TABLE latest (id INT NOT NULL, dt DATE NOT NULL, v INT) UNIQUE KEY(id, dt) "
        "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
        "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    for _ in range(2):
        run(db, "INSERT INTO summed VALUES ('2024-01-03', 1, 5), ('2024-02-03', 1, 7)")
        run(db, "INSERT INTO latest VALUES (1, '2024-01-03', 5), (1, '2024-02-03', 7)")
    run(db, "INSERT INTO latest VALUES (1, '2024-02-03', 8)")
    where = "WHERE dt >= '2024-02-01'"
    assert run(db, f"SELECT dt, k, v FROM summed {where}") == ((datetime.date(2024, 2, 3), 1, 14),)
    assert run(db, f"SELECT id, v FROM latest {where}") == ((1, 8),)
    for table in ("summed", "latest"):
        assert partitions_line(db, f"SELECT * FROM {table} {where}") == "partitions=1/2 (p2)"
