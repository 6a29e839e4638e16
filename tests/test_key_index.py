"""The CN's key index (be/cn/key_index.py) answers point and range reads as the whole snapshot
does: at the newest and at older timestamps, across inserts, UNIQUE KEY replaces, deletes,
flushes (rows moved into objects, deletes into tombstones), merges and folds of its tail; a CN
that makes it after flushes reads the objects. Through the front: sysbench's read shapes
answered without the engine give the engine's answers and result types."""

import random
import re
import subprocess
import time
from dataclasses import replace

import mysql.connector
import pyarrow as pa
import pymysql
import pytest

from be.client import open_embedded
from be.cn import key_index
from be.cn.bounds import ColumnBound, within
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.logtail.entries import ROW_ID
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import QuireProcess, error_of, run, wait_until

KEYS = 400


def table_schema(model: KeyModel) -> TableSchema:
    columns = (ColumnSchema("k", pa.int32(), False), ColumnSchema("v", pa.string()))
    partitions = (PartitionSchema(10, tablet_ids=(11, 12)),)
    return TableSchema(1, 1, columns, model, ("k",), "RANGE", (), partitions, ("k",))


def plane_of(tmp_path, *settings: str):
    """An embedded data plane whose key indexes keep an hour of history (reads of older
    snapshots are read by the index however slow the run), unless the test says otherwise."""
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [
            f"storage_root={tmp_path}",
            "flush_interval_second=3600",
            "cn_key_index_history_second=3600",
            *settings,
        ],
    )
    plane = open_embedded(config)
    plane.start()
    return plane


def whole(plane, schema, ts, bounds) -> list[tuple]:
    """The rows within bounds at ts by the snapshot's own path (no index)."""
    rows = within(plane.cn.table(schema.table_id)._snapshot(schema, ts, False), bounds)
    return sorted(zip(*(rows.column(name).to_pylist() for name in ("k", "v")), strict=True))


def indexed(plane, schema, ts, bounds) -> list[tuple]:
    rows = within(plane.snapshot(schema, ts, 10, bounds=bounds), bounds)
    return sorted(zip(*(rows.column(name).to_pylist() for name in ("k", "v")), strict=True))


def random_commits(plane, schema, generator: random.Random, count: int) -> list[int]:
    """count commits of inserts, replaces and deletes; the timestamp after each."""
    stamps = []
    for number in range(count):
        keys = generator.sample(range(KEYS), generator.randint(1, 12))
        inserts = pa.table(
            {"k": pa.array(keys, pa.int32()), "v": [f"v{key}.{number}" for key in keys]},
            schema=schema.arrow(),
        )
        deletes = None
        if generator.random() < 0.4:
            low = generator.randrange(KEYS)
            bound = (ColumnBound("k", low, low + 5),)
            gone = within(plane.snapshot(schema, plane.read_ts(), 10, row_ids=True), bound)
            if gone.num_rows:
                deletes = gone.select([ROW_ID, "k"])
                inserts = None
        write = TableWrite(schema, inserts=inserts, deletes=deletes)
        stamps.append(plane.commit(WriteSet(plane.read_ts(), (write,))))
    wait_until(lambda: plane.read_ts() >= stamps[-1], 10, "the CN has every commit")
    return stamps


def random_bounds(generator: random.Random) -> tuple[ColumnBound, ...]:
    low = generator.randrange(-5, KEYS)
    kind = generator.randrange(4)
    if kind == 0:
        return (ColumnBound("k", low, low),)
    if kind == 1:
        return (ColumnBound("k", low, low + generator.randrange(60)),)
    if kind == 2:
        return (ColumnBound("k", low=low),)
    return (ColumnBound("k", high=low),)


def check(plane, schema, stamps, generator, reads=60) -> int:
    """Random reads through the index equal the snapshot's own; so do bounded reads as Python
    values (values_within), whenever the index answers them at once."""
    points = 0
    for _ in range(reads):
        ts = generator.choice(stamps)
        bounds = random_bounds(generator)
        expected = whole(plane, schema, ts, bounds)
        assert indexed(plane, schema, ts, bounds) == expected, (ts, bounds)
        bound = bounds[0]
        if bound.low is not None and bound.high is not None:
            found = plane.values_within(schema, ts, bound, ("k", "v"), 10_000)
            if found is not None:
                points += 1
                assert sorted(found) == expected, (ts, bounds)
                alone = plane.values_within(schema, ts, bound, ("v",), 10_000)
                assert alone is None or sorted(alone) == sorted((v,) for _, v in expected)
            missing = plane.values_within(schema, ts, bound, ("k", "nothing"), 10_000)
            assert missing is None or not expected
            assert plane.values_within(schema, ts, bound, ("k", "v"), len(expected) - 1) is None
    return points


@pytest.mark.parametrize(
    ("model", "kept_values"),
    [
        (KeyModel.UNIQUE, key_index.MAX_KEPT_VALUES),
        (KeyModel.DUPLICATE, key_index.MAX_KEPT_VALUES),
        # past MAX_KEPT_VALUES the rows kept longest are let go, a share at a time
        (KeyModel.UNIQUE, 24),
    ],
    ids=["unique", "duplicate", "unique-few-kept-values"],
)
def test_index_reads_equal_whole_snapshots_across_flushes_merges_and_folds(
    tmp_path, monkeypatch, model, kept_values
):
    monkeypatch.setattr(key_index, "MIN_TAIL_ROWS", 16)  # many folds
    monkeypatch.setattr(key_index, "MAX_KEPT_VALUES", kept_values)
    plane = plane_of(tmp_path, "flush_rows=60", "merge_min_objects=3", "block_rows=16")
    try:
        schema = table_schema(model)
        generator = random.Random(7)
        stamps = random_commits(plane, schema, generator, 10)
        check(plane, schema, stamps, generator)  # the index is made by the first read
        state = plane.cn.table(1)
        assert state._index is not None and state._index.ready
        points = 0
        for _ in range(6):
            stamps += random_commits(plane, schema, generator, 15)
            points += check(plane, schema, stamps[-20:], generator)
            assert len(state._index._values) <= kept_values
        assert points > 10, "point reads were answered as Python values"
        assert state.objects(), "flushes happened"
        assert state._index.ready and not state._index.broken
        at = plane.read_ts()
        point = (ColumnBound("k", 5, 5),)
        found = state.indexed_snapshot(schema, at, False, point)
        assert found is not None, "at hand once made"
        assert sorted(found.column("k").to_pylist()) == [
            k for k, _ in whole(plane, schema, at, point)
        ]
    finally:
        plane.close()


def test_an_index_made_after_flushes_reads_objects_and_tombstones(tmp_path):
    plane = plane_of(tmp_path, "flush_rows=40", "block_rows=16")
    try:
        schema = table_schema(KeyModel.UNIQUE)
        generator = random.Random(11)
        stamps = random_commits(plane, schema, generator, 40)
        state = plane.cn.table(1)
        wait_until(lambda: state.objects(), 10, "a flush")
        assert state._index is None
        check(plane, schema, stamps[-10:], generator)
        assert state._index is not None and state._index.ready
        stamps += random_commits(plane, schema, generator, 20)
        check(plane, schema, stamps[-10:], generator)
    finally:
        plane.close()


def test_what_the_index_does_not_answer(tmp_path):
    plane = plane_of(tmp_path)
    try:
        schema = table_schema(KeyModel.UNIQUE)
        random_commits(plane, schema, random.Random(3), 3)
        state = plane.cn.table(1)
        at = plane.read_ts()
        by_value = (ColumnBound("k", 1, 1),)
        assert state.indexed_snapshot(schema, at, False, by_value) is None, "not made yet"
        plane.snapshot(schema, at, 10, bounds=by_value)
        assert state.indexed_snapshot(schema, at, False, by_value) is not None
        aggregate = replace(schema, key_model=KeyModel.AGGREGATE)
        assert state.indexed_snapshot(aggregate, at, False, by_value) is None
        other = replace(schema, key_columns=("v",))
        assert state.indexed_snapshot(other, at, False, by_value) is None, "not the key"
        assert state.indexed_snapshot(schema, at, False, ()) is None, "no bound"
        state._index.max_rows = 1  # the table outgrows what the index may hold
        stamps = random_commits(plane, schema, random.Random(4), 2)
        assert state._index.broken
        assert state.indexed_snapshot(schema, stamps[-1], False, by_value) is None
        bounds = (ColumnBound("k", 0, KEYS),)
        assert indexed(plane, schema, stamps[-1], bounds) == whole(
            plane, schema, stamps[-1], bounds
        )
    finally:
        plane.close()


# -- through the front ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("key_index")).start()
    connection = node.connect()
    run(connection, "CREATE DATABASE s")
    run(
        connection,
        "CREATE TABLE s.t (id INT NOT NULL, k INT NOT NULL, c CHAR(20), small TINYINT) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    values = ", ".join(
        f"({i}, {i % 7}, {'NULL' if i % 11 == 0 else repr(f'c{(i * 37) % 50}')}, {i % 120})"
        for i in range(1, 301)
    )
    run(connection, f"INSERT INTO s.t VALUES {values}")
    yield connection
    connection.close()
    node.stop()


SHAPES = [
    "SELECT c FROM s.t WHERE id = {a}",
    "SELECT c, k FROM s.t WHERE id BETWEEN {a} AND {b}",
    "SELECT SUM(k) FROM s.t WHERE id BETWEEN {a} AND {b}",
    "SELECT SUM(k), SUM(small) FROM s.t WHERE id BETWEEN {b} AND {a}",
    "SELECT c FROM s.t WHERE id BETWEEN {a} AND {b} ORDER BY c",
    "SELECT c, id FROM s.t WHERE id BETWEEN {a} AND {b} ORDER BY c DESC, id",
    "SELECT DISTINCT c FROM s.t WHERE id BETWEEN {a} AND {b} ORDER BY c",
    "SELECT id, k + 1, small - 3, 2 + k FROM s.t WHERE id BETWEEN {a} AND {b}",
    "SELECT small + 100 FROM s.t WHERE id BETWEEN {a} AND {b}",
]


def outcome(connection, sql) -> tuple:
    """(result types, rows) of sql, or its error."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            types = [(d[0], d[1], d[4], d[5]) for d in cursor.description]
            return types, list(cursor.fetchall())
    except pymysql.MySQLError as error:
        return ("error", error.args)


@pytest.mark.parametrize("shape", SHAPES)
def test_read_shapes_answer_as_the_engine(front, shape):
    """Each shape once bounded on the key (answered from the index) and once with a WHERE term
    the index does not take (the engine answers): the same rows, in the same order where
    ORDER BY fixes it, with the same result types (or the same error)."""
    for a, b in ((5, 40), (1, 300), (290, 320), (77, 77), (50, 10)):
        sql = shape.format(a=a, b=b)
        got = outcome(front, sql)
        expected = outcome(front, sql.replace(" FROM s.t WHERE ", " FROM s.t WHERE 1 = 1 AND "))
        if "ORDER BY" not in sql and got[0] != "error":
            got, expected = (
                (got[0], sorted(got[1], key=repr)),
                (expected[0], sorted(expected[1], key=repr)),
            )
        assert got == expected, sql


def test_arithmetic_past_a_columns_type_is_the_engines_answer(front):
    """At the top of INT and TINYINT, `k + 1` is a BIGINT as the engine computes it (as MySQL
    and Doris do), read by the key or not; an offset past BIGINT is the engine's error either
    way; storing the sum back into the INT column is MySQL's 1264, and nothing is written."""
    run(front, "INSERT INTO s.t VALUES (1000, 2147483647, 'x', 127)")
    for sql in (
        "SELECT k + 1 FROM s.t WHERE id = 1000",
        "SELECT small + 1, 1 + small FROM s.t WHERE id = 1000",
        "SELECT k - 9223372036854775807 FROM s.t WHERE id = 1000",
    ):
        assert outcome(front, sql) == outcome(front, sql.replace("WHERE ", "WHERE 1 = 1 AND "))
    assert run(front, "SELECT k + 1, small + 1 FROM s.t WHERE id = 1000") == ((2147483648, 128),)
    error = error_of(front, "SELECT k + 9223372036854775807 FROM s.t WHERE id = 1000")
    assert error == error_of(
        front, "SELECT k + 9223372036854775807 FROM s.t WHERE 1 = 1 AND id = 1000"
    )
    code, _ = error_of(front, "UPDATE s.t SET k = k + 1 WHERE id = 1000")
    assert code == 1264
    assert run(front, "SELECT k FROM s.t WHERE id = 1000") == ((2147483647,),)


@pytest.mark.parametrize("shape", SHAPES)
def test_prepared_read_shapes_answer_as_the_engine(front, shape):
    """The same through prepared statements (the binary protocol, values as parameters), which
    are answered without binding a tree."""
    node_port = front.port
    connection = mysql.connector.connect(
        host="127.0.0.1", port=node_port, user="root", password="", use_pure=True
    )
    try:
        cursor = connection.cursor(prepared=True)
        for a, b in ((5, 40), (1, 300), (77, 77), (50, 10)):
            sql = shape.format(a=a, b=b)
            expected = outcome(front, sql.replace(" FROM s.t WHERE ", " FROM s.t WHERE 1 = 1 AND "))
            try:
                values = [{"{a}": a, "{b}": b}[name] for name in re.findall(r"\{[ab]\}", shape)]
                cursor.execute(shape.format(a="?", b="?"), values)
                rows = [tuple(row) for row in cursor.fetchall()]
                got = ([d[0] for d in cursor.description], rows)
            except mysql.connector.Error as error:
                got = ("error", error.errno)
            if expected[0] == "error":
                assert got == ("error", expected[1][0]), sql
                continue
            if "ORDER BY" not in sql:
                rows, expected_rows = sorted(got[1], key=repr), sorted(expected[1], key=repr)
            else:
                rows, expected_rows = got[1], expected[1]
            assert got[0] == [name for name, *_ in expected[0]], sql
            assert rows == [tuple(row) for row in expected_rows], sql
    finally:
        connection.close()


def test_prepared_point_reads_keep_privileges_transactions_and_time_travel(front):
    """A prepared point read answered from the index's Python values is still checked against
    the user's grants, sees the session's own writes (committed, and inside a transaction), and
    a session reading as of an older time reads that time."""
    run(front, "CREATE USER IF NOT EXISTS 'nobody'@'%' IDENTIFIED BY 'pw'")
    run(front, "INSERT INTO s.t VALUES (2000, 1, 'first', 1)")
    before = run(front, "SELECT NOW(6)")[0][0]
    wait_until(lambda: run(front, "SELECT NOW(6)")[0][0] > before, 5, "the clock to move")
    run(front, "UPDATE s.t SET c = 'second' WHERE id = 2000")
    point = "SELECT c FROM s.t WHERE id = ?"

    def prepared(user="root", password="", autocommit=True):
        connection = mysql.connector.connect(
            host="127.0.0.1", port=front.port, user=user, password=password, use_pure=True
        )
        connection.autocommit = autocommit
        return connection, connection.cursor(prepared=True)

    connection, cursor = prepared("nobody", "pw")
    try:
        with pytest.raises(mysql.connector.Error) as denied:
            cursor.execute(point, (2000,))
        assert denied.value.errno == 1142
    finally:
        connection.close()
    connection, cursor = prepared()
    try:
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("second",)]
        cursor.execute("UPDATE s.t SET c = 'third' WHERE id = ?", (2000,))
        cursor.execute(point, (2000,))  # its own commit, at once
        assert cursor.fetchall() == [("third",)]
        connection.start_transaction()
        cursor.execute("UPDATE s.t SET c = 'in a transaction' WHERE id = ?", (2000,))
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("in a transaction",)]
        connection.rollback()
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("third",)]
        cursor.execute(f"SET read_ts = '{before}'")
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("first",)]
        cursor.execute("SET read_ts = ''")
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("third",)]
    finally:
        connection.close()
    connection, cursor = prepared()
    try:  # a transaction reads its snapshot: another session's later commit is not seen in it
        connection.start_transaction()
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("third",)]
        run(front, "UPDATE s.t SET c = 'fourth' WHERE id = 2000")
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("third",)]
        cursor.execute("SELECT c FROM s.t WHERE id BETWEEN ? AND ?", (1999, 2000))
        assert cursor.fetchall() == [("third",)]
        connection.commit()
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("fourth",)]
    finally:
        connection.close()
    connection, cursor = prepared(autocommit=False)  # the connector's default: always in one
    try:
        cursor.execute(f"SET read_ts = '{before}'")
        cursor.execute(point, (2000,))
        assert cursor.fetchall() == [("first",)]
    finally:
        connection.close()


def test_text_point_reads_keep_privileges_transactions_and_time_travel(front):
    """A text query of a shape seen before that reads by the key is answered as a prepared read
    of its literals: still checked against the user's grants, seeing the session's own writes,
    reading as of read_ts, and naming its columns as written."""
    run(front, "CREATE USER IF NOT EXISTS 'nobody'@'%' IDENTIFIED BY 'pw'")
    run(front, "INSERT INTO s.t VALUES (3000, 1, 'first', 1)")
    before = run(front, "SELECT NOW(6)")[0][0]
    wait_until(lambda: run(front, "SELECT NOW(6)")[0][0] > before, 5, "the clock to move")
    run(front, "UPDATE s.t SET c = 'second' WHERE id = 3000")
    point = "SELECT c FROM s.t WHERE id = 3000"
    stranger = pymysql.connect(host="127.0.0.1", port=front.port, user="nobody", password="pw")
    try:
        for _ in range(2):  # the shape's first query and a later one
            assert error_of(stranger, point)[0] == 1142
    finally:
        stranger.close()
    connection = pymysql.connect(host="127.0.0.1", port=front.port, user="root", autocommit=True)
    try:
        assert run(connection, point) == (("second",),)
        with connection.cursor() as cursor:
            cursor.execute("SELECT C AS `Named`, id FROM s.t WHERE id = 3000")
            assert [d[0] for d in cursor.description] == ["Named", "id"]
            assert cursor.fetchall() == (("second", 3000),)
        run(connection, "BEGIN")
        run(connection, "UPDATE s.t SET c = 'in a transaction' WHERE id = 3000")
        assert run(connection, point) == (("in a transaction",),)
        run(connection, "ROLLBACK")
        assert run(connection, point) == (("second",),)
        run(connection, f"SET read_ts = '{before}'")
        assert run(connection, point) == (("first",),)
        run(connection, "SET read_ts = ''")
        assert run(connection, "SELECT c FROM s.t WHERE id = '3000'") == (("second",),)
    finally:
        connection.close()
    done = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(front.port), "-u", "root", "--batch", "-e",
         point.replace("3000", "2999") + "; " + point],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.split() == ["c", "second"], done.stderr  # (no row: nothing shown)


def test_a_tail_past_its_fold_point_is_read_while_it_is_folded_beside(tmp_path, monkeypatch):
    """Point writes and reads read values past the tail's fold point (they fell back to the
    engine, which folded): a fold runs on a thread of its own, and the tail ends in the base."""
    monkeypatch.setattr(key_index, "MIN_TAIL_ROWS", 16)
    plane = plane_of(tmp_path)
    try:
        schema = table_schema(KeyModel.UNIQUE)
        generator = random.Random(5)
        stamps = random_commits(plane, schema, generator, 5)
        check(plane, schema, stamps, generator, reads=5)  # the index is made
        index = plane.cn.table(1)._index
        base_rows = index._base.num_rows
        for number in range(40):  # one row a commit, read back as values after each
            key = number % KEYS
            inserts = pa.table(
                {"k": pa.array([key], pa.int32()), "v": [f"late{number}"]}, schema=schema.arrow()
            )
            ts = plane.commit(WriteSet(plane.read_ts(), (TableWrite(schema, inserts=inserts),)))
            wait_until(lambda ts=ts: plane.read_ts() >= ts, 10, "the CN has the commit")
            bound = ColumnBound("k", key, key)
            found = plane.values_within(schema, ts, bound, ("k", "v"), 100)
            assert found == [(key, f"late{number}")], number
        wait_until(lambda: index._base.num_rows > base_rows, 10, "a fold beside the reads")
        assert not index.broken
        stamps.append(plane.read_ts())
        check(plane, schema, stamps[-1:], generator, reads=20)
    finally:
        plane.close()


SHORT_HISTORY_NS = 200_000_000


def short_history_index(plane, seed: int):
    """A UNIQUE KEY table of a few commits, and its index, made with a short history."""
    schema = table_schema(KeyModel.UNIQUE)
    stamps = random_commits(plane, schema, random.Random(seed), 3)
    state = plane.cn.table(1)
    state.key_index_history_ns = SHORT_HISTORY_NS
    check(plane, schema, stamps, random.Random(seed + 1), reads=5)  # the index is made
    return schema, stamps, state._index


def test_a_fold_forgets_versions_deleted_before_its_history(tmp_path, monkeypatch):
    """A hot key replaced on every commit keeps few versions in the index (a read of it steps
    over the versions kept); a snapshot older than the history is read without the index, and
    still as it was."""
    monkeypatch.setattr(key_index, "MIN_TAIL_ROWS", 16)
    monkeypatch.setattr(key_index, "IDLE_FOLD_SECONDS", 3600.0)  # only a long tail folds
    plane = plane_of(tmp_path)
    try:
        schema, stamps, index = short_history_index(plane, 9)
        old = stamps[-1]
        before = whole(plane, schema, old, (ColumnBound("k", 7, 7),))

        def replace_hot_key(number: int) -> int:
            inserts = pa.table(
                {"k": pa.array([7], pa.int32()), "v": [f"hot{number}"]}, schema=schema.arrow()
            )
            return plane.commit(WriteSet(plane.read_ts(), (TableWrite(schema, inserts=inserts),)))

        for number in range(40):
            ts = replace_hot_key(number)
        wait_until(lambda: time.time_ns() > ts + 2 * SHORT_HISTORY_NS, 10, "the history passed")
        for number in range(40, 80):
            ts = replace_hot_key(number)
        wait_until(lambda: plane.read_ts() >= ts, 10, "the CN has every commit")
        bound = ColumnBound("k", 7, 7)
        wait_until(
            lambda: (
                plane.values_within(schema, plane.read_ts(), bound, ("k", "v"), 100)
                == [(7, "hot79")]
                and index.valid_from > old
            ),
            10,
            "a fold that forgot",
        )
        versions = sum(1 for key in index._base_keys if key == 7) + len(index._tail.get(7, ()))
        assert versions < 45, "the versions deleted before the history are forgotten"
        assert plane.values_within(schema, old, bound, ("k", "v"), 100) is None
        assert (
            indexed(plane, schema, old, (bound,)) == before == whole(plane, schema, old, (bound,))
        )
        assert not index.broken and index.rows == index._base.num_rows + index._tail_rows
    finally:
        plane.close()


def test_a_point_read_keeps_its_window_of_rows_while_they_fit(tmp_path):
    """The first point read of a row keeps the values of the rows around it (one slice), so
    that the next reads of them find their values kept; the answers stay the snapshot's."""
    plane = plane_of(tmp_path)
    try:
        schema = table_schema(KeyModel.UNIQUE)
        stamps = random_commits(plane, schema, random.Random(12), 30)
        check(plane, schema, stamps, random.Random(13), reads=3)  # the index is made
        index = plane.cn.table(1)._index
        index._forget_values()
        at = stamps[-1]
        key = whole(plane, schema, at, (ColumnBound("k", 0, KEYS),))[-1][0]
        bound = ColumnBound("k", key, key)
        found = plane.values_within(schema, at, bound, ("k", "v"), 100)
        assert found and sorted(found) == whole(plane, schema, at, (bound,))
        window = key_index.LOAD_WINDOW_ROWS
        assert min(window, index._base.num_rows) <= len(index._values) <= 2 * window
        for key in range(KEYS):
            bound = ColumnBound("k", key, key)
            found = plane.values_within(schema, at, bound, ("k", "v"), 100)
            assert sorted(found) == whole(plane, schema, at, (bound,)), key
    finally:
        plane.close()


def test_a_tail_short_of_its_fold_point_is_folded_once_writes_stop(tmp_path, monkeypatch):
    """Reads after the last write fold the tail and forget the versions deleted before the
    history, though the tail never reached its fold point: reads stop stepping over them."""
    monkeypatch.setattr(key_index, "IDLE_FOLD_SECONDS", 0.2)
    plane = plane_of(tmp_path)
    try:
        schema, stamps, index = short_history_index(plane, 14)
        stamps += random_commits(plane, schema, random.Random(16), 5)  # a short tail
        assert index._tail_pieces or index._pieces or index._deleted_tail
        bound = ColumnBound("k", 0, KEYS)
        at = stamps[-1]
        expected = whole(plane, schema, at, (bound,))

        def newest() -> list | None:  # no write since at: the same rows
            found = plane.values_within(schema, plane.read_ts(), bound, ("k", "v"), 10_000)
            return None if found is None else sorted(found)

        def folded() -> bool:
            assert newest() in (None, expected)
            tail = index._pieces or index._tail_rows or index._deleted_tail
            return not tail and not index._base_deleted

        wait_until(folded, 10, "idle folds that forgot every version deleted")
        assert index._base.num_rows == len(expected), "the versions deleted are forgotten"
        wait_until(lambda: newest() == expected, 10, "the newest rows from the index")
        assert plane.values_within(schema, stamps[0], bound, ("k", "v"), 10_000) is None
        assert indexed(plane, schema, stamps[0], (bound,)) == whole(
            plane, schema, stamps[0], (bound,)
        )
    finally:
        plane.close()


def test_few_rows_are_kept_within_bounds_as_many_are():
    """within() decides a few rows in Python and many with Arrow: the same rows either way
    (NULL within no bound, bounds on columns the rows lack or on strings narrow nothing)."""
    generator = random.Random(7)
    for _ in range(300):
        count = generator.choice([0, 1, 2, 5, 16])
        values = [generator.choice([None, *range(-3, 4)]) for _ in range(count)]
        other = [generator.randint(0, 9) for _ in range(count)]
        rows = pa.table(
            {
                "k": pa.array(values, pa.int32()),
                "o": pa.array(other, pa.int64()),
                "s": pa.array([str(value) for value in other]),
            }
        )
        bounds = []
        for column in generator.sample(["k", "o", "s", "missing"], generator.randint(1, 3)):
            low = generator.choice([None, -2, 0, 3])
            high = generator.choice([None, -1, 0, 2, 8]) if low is not None else 5
            bounds.append(ColumnBound(column, low, high))
        many = pa.concat_tables([rows] * 5)  # past FEW_ROWS: Arrow decides
        expected = [
            (k, o)
            for k, o in zip(values, other, strict=True)
            if all(
                bound.column not in ("k", "o")
                or (
                    (value := k if bound.column == "k" else o) is not None
                    and (bound.low is None or value >= bound.low)
                    and (bound.high is None or value <= bound.high)
                )
                for bound in bounds
            )
        ]
        for table, times in ((rows, 1), (many, 5)):
            kept = within(table, tuple(bounds))
            found = zip(kept.column("k").to_pylist(), kept.column("o").to_pylist(), strict=True)
            assert sorted(found, key=repr) == sorted(expected * times, key=repr), (bounds, values)
