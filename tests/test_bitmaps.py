"""Doris's BITMAP and HLL: the functions that make, combine and count them (TO_BITMAP,
BITMAP_UNION, BITMAP_COUNT, HLL_HASH, HLL_UNION_AGG, ...), and AGGREGATE KEY tables whose BITMAP
BITMAP_UNION and HLL HLL_UNION columns merge rows of one key by uniting their sets, in memory,
flushed into objects and after a restart. A bitmap or HLL value itself is answered as NULL, as
Doris answers it. Through PyMySQL and the mariadb CLI."""

import pytest

from tests.harness import QuireProcess, error_of, mariadb, run

TINY_FLUSH = {"flush_rows": 4, "flush_interval_second": 1}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    quire = QuireProcess(tmp_path_factory.mktemp("bitmaps"), overrides=TINY_FLUSH).start()
    connection = quire.connect()
    run(connection, "CREATE DATABASE b")
    run(connection, "USE b")
    run(
        connection,
        "CREATE TABLE events (dt DATE, page VARCHAR(10), uid BIGINT) DUPLICATE KEY(dt) "
        "DISTRIBUTED BY HASH(uid) BUCKETS 2",
    )
    run(
        connection,
        "INSERT INTO events VALUES ('2024-01-01', 'home', 1), ('2024-01-01', 'home', 2), "
        "('2024-01-01', 'cart', 1), ('2024-01-02', 'home', 1), ('2024-01-02', 'home', 3), "
        "('2024-01-02', 'home', 3), ('2024-01-02', 'cart', NULL)",
    )
    connection.close()
    yield quire
    quire.stop()


@pytest.fixture
def db(node):
    connection = node.connect(database="b")
    yield connection
    connection.close()


def test_bitmap_functions_answer_as_dorises(db):
    assert run(
        db,
        "SELECT BITMAP_COUNT(TO_BITMAP(5)), BITMAP_TO_STRING(BITMAP_OR(TO_BITMAP(3), "
        "TO_BITMAP(1))), TO_BITMAP(-1) IS NULL, TO_BITMAP(NULL) IS NULL, "
        "BITMAP_TO_STRING(BITMAP_FROM_STRING('3,1,2,3')), BITMAP_FROM_STRING('1,x') IS NULL, "
        "BITMAP_TO_STRING(BITMAP_EMPTY()), BITMAP_COUNT(NULL)",
    ) == ((1, "1,3", 1, 1, "1,2,3", 1, "", 0),)
    a, b = "BITMAP_FROM_STRING('1,2,3')", "BITMAP_FROM_STRING('2,3,4')"
    assert run(
        db,
        f"SELECT BITMAP_TO_STRING(BITMAP_AND({a}, {b})), BITMAP_TO_STRING(BITMAP_XOR({a}, {b})), "
        f"BITMAP_TO_STRING(BITMAP_NOT({a}, {b})), BITMAP_AND_COUNT({a}, {b}), "
        f"BITMAP_OR_COUNT({a}, {b}), BITMAP_CONTAINS({a}, 2), BITMAP_HAS_ANY({a}, {b}), "
        f"BITMAP_HAS_ALL({a}, {b}), BITMAP_MIN({b}), BITMAP_MAX({b}), "
        f"BITMAP_TO_STRING(BITMAP_SUBSET_IN_RANGE({b}, 2, 4)), "
        f"BITMAP_TO_STRING(SUB_BITMAP({b}, 1, 5)), BITMAP_TO_ARRAY({a})",
    ) == (("2,3", "1,4", "1", 2, 4, 1, 1, 0, 2, 4, "2,3", "3,4", "[1, 2, 3]"),)
    assert run(db, "SELECT TO_BITMAP(7), BITMAP_TO_STRING(BITMAP_HASH('abc'))") == (
        (None, "3409700625"),  # a bitmap itself is NULL to a client; the hash is Doris's murmur
    )


def test_aggregates_count_distinct_users(db):
    assert run(
        db,
        "SELECT page, BITMAP_UNION_COUNT(TO_BITMAP(uid)), "
        "BITMAP_TO_STRING(BITMAP_UNION(TO_BITMAP(uid))), BITMAP_UNION_INT(uid), "
        "HLL_UNION_AGG(HLL_HASH(uid)), BITMAP_TO_STRING(BITMAP_INTERSECT(TO_BITMAP(uid))) "
        "FROM events GROUP BY page ORDER BY page",
    ) == (("cart", 1, "1", 1, 1, "1"), ("home", 3, "1,2,3", 3, 3, ""))


def test_an_aggregate_key_table_unites_the_sets_of_a_key(node, db):
    run(
        db,
        "CREATE TABLE uv (dt DATE, page VARCHAR(10), users BITMAP BITMAP_UNION, "
        "visitors HLL HLL_UNION, hits BIGINT SUM) AGGREGATE KEY(dt, page) "
        "DISTRIBUTED BY HASH(dt) BUCKETS 2",
    )
    run(db, "INSERT INTO uv SELECT dt, page, TO_BITMAP(uid), HLL_HASH(uid), 1 FROM events")
    run(db, "INSERT INTO uv VALUES ('2024-01-01', 'home', TO_BITMAP(9), HLL_HASH(9), 1)")
    run(db, "INSERT INTO uv VALUES ('2024-01-03', 'home', BITMAP_EMPTY(), HLL_EMPTY(), 0)")
    counted = (
        "SELECT dt, page, BITMAP_TO_STRING(users), BITMAP_COUNT(users), "
        "HLL_CARDINALITY(visitors), hits FROM uv ORDER BY dt, page"
    )
    expected = (
        ("2024-01-01", "cart", "1", 1, 1, 1),
        ("2024-01-01", "home", "1,2,9", 3, 3, 3),
        ("2024-01-02", "cart", None, 0, 0, 1),
        ("2024-01-02", "home", "1,3", 2, 2, 3),
        ("2024-01-03", "home", "", 0, 0, 0),
    )
    assert [(str(r[0]), *r[1:]) for r in run(db, counted)] == list(expected)
    assert run(
        db, "SELECT page, BITMAP_UNION_COUNT(users), HLL_UNION_AGG(visitors) FROM uv "
        "GROUP BY page ORDER BY page",
    ) == (("cart", 1, 1), ("home", 4, 4))  # fmt: skip
    assert run(db, "SELECT users, visitors FROM uv WHERE page = 'cart' LIMIT 1") == ((None, None),)
    done = mariadb(node, "b", "--batch", "-N", "-e", counted.replace("dt, page, ", "page, ", 1))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == "home\t1,2,9\t3\t3\t3"
    node.restart()  # the sets were flushed into objects (4 rows an object) and read back
    again = node.connect(database="b")
    try:
        assert [(str(r[0]), *r[1:]) for r in run(again, counted)] == list(expected)
    finally:
        again.close()


def test_set_columns_take_only_their_functions_values(db):
    assert error_of(
        db, "CREATE TABLE bad (k INT, b BITMAP SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k)"
    ) == (1105, "Aggregate type SUM is not compatible with primitive type BITMAP")
    assert error_of(
        db, "CREATE TABLE bad (k INT, b INT BITMAP_UNION) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k)"
    ) == (1105, "Aggregate type BITMAP_UNION is not compatible with primitive type INT")
    assert error_of(
        db, "CREATE TABLE bad (k INT, s VARCHAR(9) SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k)"
    ) == (1105, "Aggregate type SUM is not compatible with primitive type VARCHAR(9)")
    run(db, "CREATE TABLE sets (k INT, b BITMAP BITMAP_UNION) AGGREGATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
    assert error_of(db, "INSERT INTO sets VALUES (1, 5)") == (
        1366,
        "Incorrect bitmap value for column 'b' at row 1: write one with TO_BITMAP(...)",
    )
    assert run(db, "SELECT COUNT(*) FROM sets") == ((0,),)
