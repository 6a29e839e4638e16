"""Doris's arrays in queries: COLLECT_LIST / COLLECT_SET and the functions that make and read
arrays, answered as Doris's MySQL result writer writes an array (`[1, 2]`, `["a", null]`),
through PyMySQL, the mariadb CLI and prepared statements (mysql-connector's binary protocol)."""

import mysql.connector
import pytest

from be.engine.executor import estimated_bytes
from tests.harness import error_of, mariadb, run


@pytest.fixture(scope="module")
def tagged(quire, root):
    run(root, "CREATE DATABASE arr")
    run(
        root,
        "CREATE TABLE arr.visits (k INT, tag VARCHAR(10), amount DECIMAL(10,2), day DATE, "
        "seen BOOLEAN) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO arr.visits VALUES (1, 'a', 1.5, '2024-01-01', true), "
        "(1, NULL, NULL, NULL, NULL), (2, 'b', 2, '2024-01-02', false), "
        "(2, 'b', 2, '2024-01-02', false), (3, NULL, NULL, NULL, NULL)",
    )
    connection = quire.connect(database="arr")
    yield connection
    connection.close()


def test_collected_arrays_leave_nulls_out_and_read_as_doris_writes_them(tagged):
    rows = run(
        tagged,
        "SELECT k, array_sort(collect_list(tag)), collect_set(tag), collect_list(amount), "
        "collect_list(day), collect_list(seen), size(collect_list(k)), collect_list(tag, 1) "
        "FROM visits GROUP BY k ORDER BY k",
    )
    assert rows == (
        (1, '["a"]', '["a"]', "[1.50]", "[2024-01-01]", "[1]", 2, '["a"]'),
        (
            2,
            '["b", "b"]',
            '["b"]',
            "[2.00, 2.00]",
            "[2024-01-02, 2024-01-02]",
            "[0, 0]",
            2,
            '["b"]',
        ),
        (3, "[]", "[]", "[]", "[]", "[]", 1, "[]"),
    )
    assert run(tagged, "SELECT collect_list(k) FROM visits WHERE k > 100") == (("[]",),)
    assert run(tagged, "SELECT k, array_agg(tag) FROM visits WHERE k = 1 GROUP BY k") == (
        (1, '["a", null]'),
    )
    in_window = run(
        tagged,
        "SELECT k, collect_list(tag) OVER (PARTITION BY k), collect_set(tag, 1) OVER "
        "(PARTITION BY k) FROM visits ORDER BY k",
    )  # [] for a frame of no value, as without OVER
    assert in_window[0] == (1, '["a"]', '["a"]') and in_window[-1] == (3, "[]", "[]")
    having = "SELECT k FROM visits GROUP BY k HAVING array_contains(collect_set(tag), 'b')"
    assert run(tagged, having) == ((2,),)


ARRAYS = [
    ("[1, NULL, 3]", "[1, null, 3]"),
    ("array('x', 'y')", '["x", "y"]'),
    ("[[1, 2], [3]]", "[[1, 2], [3]]"),
    ("split_by_string('a,b,,c', ',')", '["a", "b", "", "c"]'),
    ("array_sort([3, NULL, 1])", "[null, 1, 3]"),
    ("element_at([1, 2, 3], -1)", 3),
    ("([10, 20, 30])[1]", 10),
    ("[1, 2][5]", None),
    ("array_contains([1, 2], 2)", 1),
    ("array_join([1, NULL, 3], '-')", "1-3"),
    ("array_size([1, 2])", 2),
    ("cardinality([])", 0),
    ("array_max([3, 9])", 9),
    ("array_avg([1, 2])", 1.5),
    ("split_by_string(NULL, ',')", None),
]


@pytest.mark.parametrize("item, answer", ARRAYS)
def test_array_functions(tagged, item, answer):
    assert run(tagged, f"SELECT {item}") == ((answer,),)


def test_columns_are_named_as_written_and_the_cli_prints_the_text(quire, tagged):
    with tagged.cursor() as cursor:
        cursor.execute("SELECT [1, 2] AS x, ifnull(NULL, 1), array(3, 4)")
        assert [column[0] for column in cursor.description] == [
            "x",
            "ifnull(NULL, 1)",
            "array(3, 4)",
        ]
    done = mariadb(
        quire,
        "--batch",
        "arr",
        "-e",
        "SELECT k, collect_set(tag) FROM visits GROUP BY k ORDER BY k",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["k\tcollect_set(tag)", '1\t["a"]', '2\t["b"]', "3\t[]"]


def test_prepared_statements_answer_arrays_and_name_columns_as_written(quire, tagged):
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="arr"
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute(
            "SELECT k, collect_list(tag), [1, ?], ifnull(k, 0) FROM visits WHERE k < ? "
            "GROUP BY k ORDER BY k",
            (5, 3),
        )
        names = [column[0] for column in cursor.description]
        assert names == ["k", "collect_list(tag)", "[1, ?]", "ifnull(k, 0)"]
        assert cursor.fetchall() == [(1, '["a"]', "[1, 5]", 1), (2, '["b", "b"]', "[1, 5]", 2)]
    finally:
        connection.close()


def test_what_is_not_an_array_function_stays_an_error(tagged):
    assert error_of(tagged, "SELECT array_zip([1], [2])")[0] == 1305
    assert (
        error_of(tagged, "CREATE TABLE arr.copied AS SELECT collect_list(k) AS c FROM visits")[0]
        == 1105
    )


def test_an_answers_arrays_count_against_its_memory_limit():
    one = estimated_bytes([(1, ["x" * 10])])
    many = estimated_bytes([(1, ["x" * 10] * 10_000)])
    nested = estimated_bytes([(1, [["x" * 10] * 100] * 100)])
    assert many > 10_000 * 20 > one and nested > 10_000 * 20


def test_lateral_views_unnest_arrays_and_split_texts(quire, root):
    run(
        root,
        "CREATE TABLE arr.tags (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(root, "INSERT INTO arr.tags VALUES (1, 'a,b'), (2, NULL), (3, 'c'), (4, '')")
    connection = quire.connect(database="arr")
    try:
        split = "SELECT k, t.s FROM tags LATERAL VIEW explode_split(v, ',') t AS s ORDER BY k, s"
        assert run(connection, split) == ((1, "a"), (1, "b"), (3, "c"), (4, ""))
        outer = (
            "SELECT k, s FROM tags LATERAL VIEW explode_split_outer(v, ',') t AS s ORDER BY k, s"
        )
        assert run(connection, outer) == ((1, "a"), (1, "b"), (2, None), (3, "c"), (4, ""))
        numbers = (
            "SELECT k, n FROM tags LATERAL VIEW explode_numbers(2) t AS n WHERE k < 3 ORDER BY k, n"
        )
        assert run(connection, numbers) == ((1, 0), (1, 1), (2, 0), (2, 1))
        two = (
            "SELECT a, b FROM tags LATERAL VIEW explode(split_by_string(v, ',')) t1 AS a "
            "LATERAL VIEW explode_outer([]) t2 AS b WHERE k = 1 ORDER BY a"
        )
        assert run(connection, two) == (("a", None), ("b", None))
        counted = (
            "SELECT s, count(*) FROM tags LATERAL VIEW explode_split(v, ',') t AS s "
            "WHERE s <> '' GROUP BY s ORDER BY s"
        )
        assert run(connection, counted) == (("a", 1), ("b", 1), ("c", 1))
        assert error_of(connection, "SELECT explode([1])")[0] == 1305  # in a LATERAL VIEW only
        assert error_of(connection, "SELECT * FROM tags LATERAL VIEW nope(v) t AS s")[0] == 1305
    finally:
        connection.close()
    done = mariadb(quire, "--batch", "-N", "arr", "-e", split)
    assert done.returncode == 0 and done.stdout.splitlines()[:2] == ["1\ta", "1\tb"], done.stderr


def test_arrays_made_from_a_row_stay_within_the_querys_memory(quire, tagged):
    """explode_numbers(3e9) took the node down (a list of 24 GB); an array made from a row's
    values is refused past its share of exec_mem_limit (as texts are: 1 MB a row by default,
    at 16 bytes an element)."""
    numbers = "SELECT count(*) FROM visits LATERAL VIEW explode_numbers({}) t AS n WHERE k = 3"
    assert run(tagged, numbers.format(65536)) == ((65536,),)
    code, message = error_of(tagged, numbers.format(3_000_000_000))
    assert code == 1292 and "at most 65536" in message, message
    split = "SELECT size(split_by_string(repeat('x,', {}), ','))"
    assert run(tagged, split.format(1000)) == ((1001,),)
    assert "at most 65536" in error_of(tagged, split.format(500_000))[1]
    assert error_of(tagged, "SELECT size(split_by_string(repeat('ab', 40000), ''))")[0] == 1292
    assert run(tagged, "SELECT 1") == ((1,),)
