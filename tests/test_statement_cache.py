"""The statement cache: repeated statements and query shapes skip the parser, and binding a
cached shape gives the same answer as a fresh parse."""

import pytest

from fe.sql.parser import ParseError
from fe.statement_cache import StatementCache


def names_and_tree(plan):
    return plan.names, plan.expression.sql(dialect="mysql")


def test_same_text_is_parsed_once():
    cache = StatementCache(16)
    first = cache.statement("SHOW TABLES")
    assert cache.statement("SHOW TABLES") is first


@pytest.mark.parametrize(
    "template",
    [
        "SELECT {0} + {1}, '{2}' AS s",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = '{2}' LIMIT {0}",
        "SELECT {0} LIMIT {1}",
    ],
)
def test_a_shape_is_bound_like_a_fresh_parse(template):
    cache = StatementCache(16)
    cache.statement(template.format(1, 2, "a"))
    assert cache.shape_hits == 0
    for values in ((7, 0, "x'y"), (3, 10, "")):
        sql = template.format(*values).replace("x'y", "x''y")
        bound = cache.statement(sql)
        fresh = StatementCache(16).statement(sql)
        assert names_and_tree(bound) == names_and_tree(fresh)
    assert cache.shape_hits == 2


def test_limits_are_explicit_and_errors_are_not_cached():
    cache = StatementCache(2)
    for i in range(5):
        cache.statement(f"SELECT {i} AS c{i}")
    assert len(cache.by_text) == 2 and len(cache.by_shape) == 2
    with pytest.raises(ParseError):
        cache.statement("SELEC 1")
    with pytest.raises(ParseError):
        cache.statement("SELEC 1")


def test_long_statements_are_parsed_but_not_kept():
    cache = StatementCache(16, max_sql_bytes=100)
    comment = "x" * 200
    statement = cache.statement(f"CREATE TABLE t (k INT) COMMENT '{comment}'")
    assert statement.comment == comment
    assert len(cache.by_text) == 0
    cache.statement("SELECT 1")
    assert len(cache.by_text) == 1


def test_the_tables_a_plan_holds_count_toward_the_caches_bytes():
    """A numbers(...) query's plan holds its table (8 MB for a million rows): the cache counts
    it, so distinct such queries stay within its bytes (each kept one held 80 MB before)."""
    cache = StatementCache(1000, max_bytes=64 << 20)
    for n in range(12):
        cache.statement(f"SELECT COUNT(*) FROM numbers('number' = '1000000') WHERE number = {n}")
    assert cache.by_text.bytes <= 32 << 20 and len(cache.by_text) == 4  # 8 MB and a little
