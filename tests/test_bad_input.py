"""Bad input gets MySQL's answer: no freeze, no unbounded memory, no internal error."""

from __future__ import annotations

import decimal
import threading

import pytest

from tests.harness import assert_mysql_error, error_of, mariadb, mariadb_error, run


def _rss_bytes(node) -> int:
    status = open(f"/proc/{node.process.pid}/status").read()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def test_show_like_that_would_backtrack_answers_at_once(quire, root):
    long_name = "a" * 64
    run(root, f"CREATE DATABASE IF NOT EXISTS {long_name}")
    asking = quire.connect(read_timeout=120)
    other = quire.connect(read_timeout=120)
    pattern = "%a" * 40 + "%b"
    assert run(asking, f"SHOW DATABASES LIKE '{pattern}'") == ()
    assert run(other, "SELECT 1") == ((1,),)
    assert run(asking, f"SHOW DATABASES LIKE '{'%' * 2_000_000}aa%'") == ((long_name,),)
    assert run(root, "SHOW DATABASES LIKE '%form%sch%'") == (("information_schema",),)
    assert run(root, "SHOW DATABASES LIKE 'information\\_schem_'") == (("information_schema",),)
    asking.close()
    other.close()
    run(root, f"DROP DATABASE {long_name}")


@pytest.mark.parametrize(
    ("sql", "code", "sqlstate", "words"),
    [
        ("SELECT 1e", 1054, "42S22", "Unknown column '1e'"),
        ("SET CHARACTER", 1064, "42000", "You have an error in your SQL syntax"),
        ("SELECT DATE_ADD(", 1064, "42000", "You have an error in your SQL syntax"),
        ("SELECT 1 +", 1064, "42000", "near '+' at line 1"),
        ("SET wait_timeout = 1e309", 1367, "22007", "Illegal double '1e309'"),
        ("SELECT 1e309", 1367, "22007", "Illegal double '1e309'"),
        ("SELECT 2 ORDER BY 2", 1054, "42S22", "in 'order clause'"),
        ("SELECT (SELECT 1, 2)", 1241, "21000", "Operand should contain 1 column(s)"),
        ("SELECT *", 1096, "HY000", "No tables used"),
        ("SELECT 1 GROUP BY -1", 1054, "42S22", "Unknown column '-1' in 'group statement'"),
        ("SELECT 1 GROUP BY 2", 1054, "42S22", "Unknown column '2' in 'group statement'"),
        ("SELECT 1 ORDER BY -1", 1054, "42S22", "in 'order clause'"),
        ("SELECT 1 ORDER BY 0", 1054, "42S22", "in 'order clause'"),
        ("SELECT 1 COLLATE utf8mb4_bin", 1253, "42000", "not valid for CHARACTER SET"),
        # found by tests/test_fuzz.py
        ("SELECT STR_TO_DATE('2024-01-31')", 1582, "42000", "native function 'STR_TO_DATE'"),
        ("SELECT CAST(18446744073709551616 AS SIGNED)", 1292, "22007", "DECIMAL(38,0)"),
        ("SELECT * * 1 FROM information_schema.tables", 1064, "42000", "SQL syntax"),
        ("SELECT 1 FROM information_schema.tables LIMIT -1", 1064, "42000", "SQL syntax"),
        # a file written on the server: refused saying so, not as a syntax error
        ("SELECT 1 INTO OUTFILE '/tmp/x'", 1235, "42000", "'SELECT ... INTO OUTFILE'"),
        ("SELECT 1 INTO DUMPFILE '/tmp/x'", 1235, "42000", "'SELECT ... INTO DUMPFILE'"),
    ],
)
def test_bad_statements_get_mysqls_error_not_an_internal_one(
    quire, root, sql, code, sqlstate, words
):
    got_code, message = error_of(root, sql)
    assert got_code == code, message
    assert words in message
    assert "sqlglot" not in message and "<class" not in message
    assert_mysql_error(got_code, message, sql)
    line = mariadb_error(quire, "root", "", sql)
    assert line.startswith(f"ERROR {code} ({sqlstate})"), line
    assert run(root, "SELECT 1") == ((1,),)


def test_many_distinct_statements_keep_the_fe_memory_bounded(tmp_path_factory):
    from tests.harness import QuireProcess

    node = QuireProcess(
        tmp_path_factory.mktemp("bounded_cache"),
        overrides={"statement_cache_max_bytes": 64 * 1024 * 1024},
    ).start()
    try:
        connection = node.connect(read_timeout=300)
        run(connection, "SELECT 1 IN (" + ",".join(map(str, range(2500))) + ")")
        before = _rss_bytes(node)
        for statement in range(150):
            values = ",".join(f"{statement}{value}" for value in range(2500))
            assert run(connection, f"SELECT {statement} IN ({values}, {statement})") == ((1,),)
        grown = _rss_bytes(node) - before
        assert grown < 400 * 1024 * 1024, f"the FE grew by {grown // 2**20} MB"
        cli = mariadb(node, "--batch", "-N", "-e", "SELECT 1")
        assert cli.stdout == "1\n", cli.stderr
        connection.close()
    finally:
        node.stop()


def test_a_long_in_list_answers_and_other_clients_are_served(quire, root):
    numbers = ",".join(map(str, range(20_000)))
    names = ",".join(f"'schema{value}'" for value in range(20_000))
    asking = quire.connect(read_timeout=120)
    answers = {}

    def ask():
        answers["hit"] = run(asking, f"SELECT 1 IN ({numbers})")
        answers["miss"] = run(asking, f"SELECT 20000 IN ({numbers}), 5 NOT IN ({numbers})")
        answers["tables"] = run(
            asking,
            "SELECT schema_name FROM information_schema.schemata"
            f" WHERE schema_name IN ({names}, 'information_schema')",
        )

    thread = threading.Thread(target=ask)
    thread.start()
    other = quire.connect(read_timeout=120)
    while thread.is_alive():
        assert run(other, "SELECT 1") == ((1,),)
    thread.join()
    assert answers == {
        "hit": ((1,),),
        "miss": ((0, 0),),
        "tables": (("information_schema",),),
    }
    cli = mariadb(quire, "--batch", "-N", "-e", f"SELECT 19999 IN ({numbers})")
    assert cli.stdout == "1\n", cli.stderr
    asking.close()
    other.close()


def test_long_in_lists_compare_as_short_ones_against_every_column_kind(quire, root):
    """A list longer than the engine takes as text is read as a table: its strings still compare
    with DATE, DATETIME, DECIMAL and INT columns as a short list's literals do, and its numbers
    with a string column."""
    run(root, "CREATE DATABASE IF NOT EXISTS long_lists")
    run(
        root,
        "CREATE TABLE long_lists.t (id INT, d DATE, dt DATETIME, m DECIMAL(10,2), s VARCHAR(8)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO long_lists.t VALUES (1, '2024-01-02', '2024-01-02 03:04:05', 1.50, '1'), "
        "(2, '2024-02-03', '2024-02-03 00:00:00', 2.00, '02'), (3, NULL, NULL, NULL, NULL)",
    )
    lists = {
        "d": [f"'2024-01-{day:02d}'" for day in range(1, 32)]
        + [f"'2023-05-{day:02d}'" for day in range(1, 32)]
        + ["'2024-02-03'", "'2025-01-01'"],
        "dt": ["'2024-01-02 03:04:05'"] + [f"'2020-01-01 00:00:{s:02d}'" for s in range(60)],
        "m": [f"'{number}.5'" for number in range(80)],
        "id": [f"'{number}'" for number in range(2, 90)],
        "s": [str(number) for number in range(100)],
    }
    for column, items in lists.items():
        for negated in ("", "NOT "):
            chunks = [items[start : start + 50] for start in range(0, len(items), 50)]
            joiner = " AND " if negated else " OR "
            short = joiner.join(f"{column} {negated}IN ({', '.join(c)})" for c in chunks)
            expected = run(root, f"SELECT id FROM long_lists.t WHERE {short} ORDER BY id")
            query = f"SELECT id FROM long_lists.t WHERE {column} {negated}IN ({', '.join(items)})"
            assert run(root, query + " ORDER BY id") == expected, query
    query = f"SELECT id FROM long_lists.t WHERE d IN ({', '.join(lists['d'])}) ORDER BY id"
    cli = mariadb(quire, "--batch", "-N", "-e", query)
    assert cli.stdout == "1\n2\n", cli.stderr


@pytest.mark.parametrize(
    ("sql", "expected", "cli"),
    [
        ("SELECT STR_TO_DATE('a', 1 DIV 1)", None, "NULL"),
        ("SELECT ~'%'", 18446744073709551615, "18446744073709551615"),
        ("SELECT UNHEX(255)", b"\x02U", "\x02U"),
        ("SELECT JSON_OBJECT(1, 2)", '{"1":2}', '{"1":2}'),
        (
            "SELECT CAST(1.5 AS DECIMAL(65,30))",
            decimal.Decimal("1.500000000000000000000000000000"),
            "1.500000000000000000000000000000",
        ),
        ("SELECT 1 + 'a'", 1, "1"),
        ("SELECT 0 OR 1 XOR 1", 0, "0"),
        ("SELECT 1 ORDER BY 'a string'", 1, "1"),
        ("SELECT 1 AS a GROUP BY 1 ORDER BY 'b', 1", 1, "1"),
    ],
)
def test_mysql_functions_answer_as_mysql_does(quire, root, sql, expected, cli):
    assert run(root, sql) == ((expected,),)
    answer = mariadb(quire, "--batch", "-N", "--raw", "-e", sql)
    assert answer.stdout == f"{cli}\n", answer.stderr


@pytest.mark.parametrize(
    ("sql", "code", "words"),
    [
        (
            "SELECT table_schema, COUNT(*) FROM information_schema.tables",
            1140,
            "nonaggregated column 'table_schema'",
        ),
        (
            "SELECT table_schema, table_name FROM information_schema.tables GROUP BY table_schema",
            1055,
            "nonaggregated column 'table_name'",
        ),
    ],
)
def test_nonaggregated_columns_are_refused_as_only_full_group_by_does(
    quire, root, sql, code, words
):
    got_code, message = error_of(root, sql)
    assert (got_code, words in message) == (code, True), message
    assert mariadb_error(quire, "root", "", sql).startswith(f"ERROR {code} (42000)")
