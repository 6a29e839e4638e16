"""Doris's lambda array functions (ARRAY_MAP, ARRAY_FILTER, ARRAY_EXISTS, ARRAY_COUNT,
ARRAY_SORTBY, ARRAY_FIRST, ARRAY_LAST, ARRAY_FIRST_INDEX, ARRAY_LAST_INDEX) and analytic
aggregates (CORR, COVAR, COVAR_SAMP, TOPN, HISTOGRAM, RETENTION, WINDOW_FUNNEL), which Quire
answered with ERROR 1305 before, answered as Doris's documentation and regression tests show
them, through PyMySQL and the mariadb CLI, of constants and of a table's columns."""

import pytest

from tests.harness import assert_unknown_function, cli_answers, error_of, mariadb, run

ANSWERS = [
    ("ARRAY_MAP(x -> x + 1, [1, 2, 3])", "[2, 3, 4]"),
    ("ARRAY_MAP((x, y) -> x + y, [1, 2], [10, 20])", "[11, 22]"),
    ("ARRAY_MAP((x, y, z) -> concat(x, y, z), ['a', 'b'], ['c', 'd'], ['e', NULL])",
     '["ace", null]'),
    ("ARRAY_MAP(x -> x IS NULL, [1, NULL])", "[0, 1]"),
    ("ARRAY_MAP(x -> ARRAY_MAP(y -> x * y, [1, 2]), [3, 4])", "[[3, 6], [4, 8]]"),
    ("ARRAY_MAP(x -> x, [])", "[]"),
    ("ARRAY_MAP(x -> x + 1, NULL)", None),
    ("ARRAY_FILTER(x -> x > 1, [1, 2, 3, NULL])", "[2, 3]"),
    ("ARRAY_FILTER((x, y) -> y > 0, ['a', 'b', 'c'], [1, 0, 2])", '["a", "c"]'),
    ("ARRAY_FILTER([1, 2, 3], [true, false, true])", "[1, 3]"),
    ("ARRAY_FILTER(x -> x > 0, NULL)", None),
    ("ARRAY_EXISTS(x -> x > 1, [1, 2, NULL])", "[0, 1, null]"),
    ("ARRAY_EXISTS([1, 0, NULL])", "[1, 0, null]"),
    ("ARRAY_COUNT(x -> x > 1, [1, 2, 3])", 2),
    ("ARRAY_COUNT([1, 0, 2, NULL])", 2),
    ("ARRAY_COUNT(x -> x > 5, [])", 0),
    ("ARRAY_FIRST(x -> x > 2, [1, 2, 3, 0])", 3),
    ("ARRAY_FIRST(x -> x > 4, [1, 2, 3, 0])", None),
    ("ARRAY_LAST(x -> x > 1, [1, 2, 3, 0])", 3),
    ("ARRAY_LAST(x -> x = 'b', ['a', 'c'])", None),
    ("ARRAY_FIRST_INDEX(x -> x + 1 > 3, [2, 3, 4])", 2),
    ("ARRAY_FIRST_INDEX(x -> x IS NULL, [NULL, 1, 2])", 1),
    ("ARRAY_FIRST_INDEX(x -> x > 9, [1, 2])", 0),
    ("ARRAY_LAST_INDEX(x -> x IS NULL, [NULL, NULL, 1, 2])", 2),
    ("ARRAY_LAST_INDEX(x -> x = 's', ['a', 's', 's', 's', 'b'])", 4),
    ("ARRAY_LAST_INDEX(x -> x > 9, [1, 2])", 0),
    ("ARRAY_SORTBY(['a', 'b', 'c'], [3, 2, 1])", '["c", "b", "a"]'),
    ("ARRAY_SORTBY(['a', 'b', 'c'], [3, NULL, 1])", '["b", "c", "a"]'),
    ("ARRAY_SORTBY(['a', 'b'], NULL)", '["a", "b"]'),
    ("ARRAY_SORTBY(NULL, [1, 2])", None),
    ("ARRAY_SORTBY(x -> -x, [1, 3, 2])", "[3, 2, 1]"),
    ("ARRAY_SORTBY((x, y) -> y, ['a', 'b', 'c'], [2, 3, 1])", '["c", "a", "b"]'),
    # aggregates of constants: one row
    ("CORR(1, 2)", 0.0),
    ("COVAR(1, 2)", 0.0),
    ("COVAR_POP(1, 2)", 0.0),
    ("COVAR_SAMP(1, 2)", 0.0),
    ("CORR(NULL, 1)", None),
    ("TOPN('a', 2)", '{"a":1}'),
    ("TOPN(NULL, 2)", None),
    ("HISTOGRAM('a')",
     '{"num_buckets":1,"buckets":[{"lower":"a","upper":"a","ndv":1,"count":1,"pre_sum":0}]}'),
    ("RETENTION(1 = 1, 1 = 0)", "[1, 0]"),
    ("WINDOW_FUNNEL(10, 'default', '2022-01-01 00:00:00', 1 = 1, 1 = 0)", 1),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "answer"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_function_answers(root, expression, answer):
    assert run(root, f"SELECT {expression}") == ((answer,),)


def test_answers_through_the_mariadb_cli(quire):
    expressions = [expression for expression, _ in ANSWERS]
    assert cli_answers(quire, expressions) == [_text(answer) for _, answer in ANSWERS]


def _text(answer) -> str:
    if answer is None:
        return "NULL"
    return str(int(answer)) if isinstance(answer, float) and answer.is_integer() else str(answer)


WRONG_COUNTS = [
    "ARRAY_MAP(x -> x)",
    "ARRAY_MAP((x, y) -> x, [1])",
    "ARRAY_FILTER([1])",
    "ARRAY_FIRST(x -> x, [1], [2])",
    "ARRAY_SORTBY([1])",
    "ARRAY_COUNT()",
    "ARRAY_MAP()",
    "CORR(1)",
    "COVAR_SAMP(1, 2, 3)",
    "TOPN(1)",
    "HISTOGRAM()",
    "RETENTION()",
    "WINDOW_FUNNEL(10, 'default', '2022-01-01')",
]


@pytest.mark.parametrize("call", WRONG_COUNTS)
def test_a_wrong_count_of_arguments_is_an_unknown_function(quire, root, call):
    assert_unknown_function(quire, root, call)


def test_refusals_say_why(root):
    _, message = error_of(root, "SELECT ARRAY_MAP((x, y) -> x + y, [1], [1, 2])")
    assert "lambda argument must have same length" in message
    code, message = error_of(root, "SELECT WINDOW_FUNNEL(10, 'fixed', '2022-01-01', 1 = 1)")
    assert code == 1235 and "'default'" in message


@pytest.fixture(scope="module")
def events(root):
    run(root, "CREATE DATABASE IF NOT EXISTS analytic")
    run(
        root,
        "CREATE TABLE analytic.events (uid INT, ts DATETIME, ev STRING, x DOUBLE, y DOUBLE, "
        "a ARRAY<INT>, b ARRAY<INT>) DUPLICATE KEY(uid) DISTRIBUTED BY HASH(uid) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO analytic.events VALUES "
        "(1, '2022-01-01 10:00:00', 'view', 1, 2, [1, 2, 3], [3, 2, 1]), "
        "(1, '2022-01-01 10:01:00', 'cart', 2, 4.5, [], []), "
        "(1, '2022-01-01 10:02:00', 'buy', 3, 5, NULL, [1]), "
        "(1, '2022-01-01 10:05:00', 'view', 4, 9, [5], [NULL]), "
        "(2, '2022-01-01 10:00:00', 'view', 1, 1, NULL, NULL), "
        "(2, '2022-01-02 10:00:00', 'buy', 1, 1, NULL, NULL), "
        "(3, '2022-01-01 10:00:00', 'cart', NULL, 3, NULL, NULL)",
    )
    return "analytic.events"


def _both(quire, root, query, rows):
    assert [list(row) for row in run(root, query)] == [list(row) for row in rows]
    done = mariadb(quire, "--batch", "--raw", "--skip-column-names", "-e", query)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["\t".join(map(_text, row)) for row in rows]


def test_lambda_functions_of_a_tables_columns(quire, root, events):
    query = (
        f"SELECT ev, ARRAY_MAP(v -> v * x, a), ARRAY_MAP((v, w) -> v + w, a, a), "
        "ARRAY_FILTER(v -> v >= x, a), ARRAY_COUNT(v -> v > 1, a), ARRAY_SORTBY(a, a), "
        f"ARRAY_FIRST_INDEX(v -> v IS NULL, b) FROM {events} WHERE uid = 1 ORDER BY ts"
    )
    rows = [
        ("view", "[1, 2, 3]", "[2, 4, 6]", "[1, 2, 3]", 2, "[1, 2, 3]", 0),
        ("cart", "[]", "[]", "[]", 0, "[]", 0),
        ("buy", None, None, None, None, None, 0),
        ("view", "[20]", "[10]", "[5]", 1, "[5]", 1),
    ]
    _both(quire, root, query, rows)


def test_aggregates_of_a_tables_columns_by_user(quire, root, events):
    """Each user's chain view, cart, buy: all three within 5 minutes, two within a minute;
    RETENTION's later events need not follow the first."""
    query = (
        "SELECT uid, CORR(x, y), COVAR(x, y), COVAR_SAMP(x, y), TOPN(ev, 2), "
        "RETENTION(ev = 'view', ev = 'cart', ev = 'buy'), "
        "WINDOW_FUNNEL(300, 'default', ts, ev = 'view', ev = 'cart', ev = 'buy'), "
        "WINDOW_FUNNEL(60, 'default', ts, ev = 'view', ev = 'cart', ev = 'buy') "
        f"FROM {events} GROUP BY uid ORDER BY uid"
    )
    rows = [
        (1, 0.9579237266113428, 2.6875, 3.5833333333333335, '{"view":2,"cart":1}', "[1, 1, 1]",
         3, 2),
        (2, 0.0, 0.0, 0.0, '{"view":1,"buy":1}', "[1, 0, 1]", 1, 1),
        (3, None, None, None, '{"cart":1}', "[0, 0, 0]", 0, 0),
    ]  # fmt: skip
    _both(quire, root, query, rows)


def test_histogram_and_topn_of_the_whole_table(quire, root, events):
    """Doris's equal-height buckets: ceil(6 / 2) rows a bucket, a value's rows in one bucket;
    TOPN's counts, the greater value first among equal counts."""
    query = f"SELECT HISTOGRAM(x, 2), HIST(ev), TOPN(x, 2, 10), TOPN(ev, 3) FROM {events}"
    rows = [
        (
            '{"num_buckets":2,"buckets":[{"lower":"1","upper":"1","ndv":1,"count":3,"pre_sum":0},'
            '{"lower":"2","upper":"4","ndv":3,"count":3,"pre_sum":3}]}',
            '{"num_buckets":3,"buckets":[{"lower":"buy","upper":"buy","ndv":1,"count":2,'
            '"pre_sum":0},{"lower":"cart","upper":"cart","ndv":1,"count":2,"pre_sum":2},'
            '{"lower":"view","upper":"view","ndv":1,"count":3,"pre_sum":4}]}',
            '{"1":3,"4":1}',
            '{"view":3,"cart":2,"buy":2}',
        )
    ]
    _both(quire, root, query, rows)
