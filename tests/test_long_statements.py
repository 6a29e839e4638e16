"""Long and deeply nested statements from a user with no grants: parsed off the event loop, bounded
in tokens, refused with 1064 when they nest too deeply; no one else waits for them."""

import subprocess
import threading
import time

import pymysql
import pytest

from tests.harness import QuireProcess, mariadb, run, wait_until

LIST = 60_000  # an IN list of that many strings: about a second of sqlglot's parser
DEEP = 5000


def slow_select(items: int = LIST) -> str:
    values = ",".join(f"'v{i}'" for i in range(items))
    return f"SELECT COUNT(*) FROM information_schema.collations WHERE COLLATION_NAME IN ({values})"


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("long_statements"),
        overrides={"max_statement_tokens": 300_000, "max_waiting_long_statements": 1},
    ).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def nobody(quire):
    with quire.connect() as root, root.cursor() as cursor:
        cursor.execute("CREATE USER nobody IDENTIFIED BY 'pw'")
    connection = quire.connect(user="nobody", password="pw", read_timeout=300)
    yield connection
    connection.close()


WIDE = 20_000  # a select list of that many variables: 15 s of sqlglot's transform on the loop


@pytest.mark.parametrize(
    "sql, answer",
    [
        (slow_select(), lambda rows: rows == ((0,),)),
        (
            "SELECT CONCAT(@@version_comment, 'x')" + ", @@version" * WIDE,
            lambda rows: len(rows[0]) == WIDE + 1 and rows[0][-1] == rows[0][1],
        ),
    ],
    ids=["in_list", "wide_select"],
)
def test_a_long_statement_is_prepared_while_others_are_served(quire, nobody, sql, answer):
    """Another client's statements are answered while a long one is parsed, none of them kept
    waiting until the long one is done. (sqlglot's compiled tokenizer holds the GIL while it
    reads the long text, so they may wait a part of that time, not all of it.)"""
    timings: dict[str, float] = {}

    def long_statement():
        timings["long_started"] = time.monotonic()
        assert answer(run(nobody, sql))
        timings["long"] = time.monotonic()

    thread = threading.Thread(target=long_statement)
    thread.start()
    waits = []
    try:
        with quire.connect() as root:

            def parsing():
                rows = run(root, "SHOW PROCESSLIST")
                return any(row[1] == "nobody" and row[4] == "Query" for row in rows)

            wait_until(parsing, 60, "the long statement to arrive")
            for statement, expected in (
                ("SELECT 1", ((1,),)),
                ("SELECT 1", ((1,),)),
                ("SELECT COUNT(*) FROM information_schema.collations", ((4,),)),
            ):
                started = time.monotonic()
                assert run(root, statement) == expected
                waits.append(time.monotonic() - started)
    finally:
        thread.join(300)
    assert not thread.is_alive()
    long_took = timings["long"] - timings["long_started"]
    assert max(waits) < long_took, f"a statement waited {max(waits):.3f} s of {long_took:.3f} s"


def test_too_many_tokens_is_a_syntax_error_and_the_connection_goes_on(quire, nobody):
    with pytest.raises(pymysql.err.ProgrammingError) as refused:
        run(nobody, slow_select(150_000))  # 300,000 tokens and more
    assert refused.value.args[0] == 1064
    assert "max_statement_tokens" in refused.value.args[1]
    assert run(nobody, "SELECT 2") == ((2,),)


def test_long_statements_waiting_are_bounded(quire):
    users = [quire.connect(read_timeout=300) for _ in range(4)]
    answers: list[object] = []

    def send(connection):
        try:
            answers.append(run(connection, slow_select()))
        except pymysql.err.MySQLError as error:
            answers.append(error.args)

    threads = [threading.Thread(target=send, args=(c,)) for c in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    for connection in users:
        connection.close()
    busy = [a for a in answers if isinstance(a, tuple) and a and a[0] == 1105]
    done = [a for a in answers if a == ((0,),)]
    assert len(busy) + len(done) == 4 and done, answers
    assert all("long statements" in message for _, message in busy)


def test_redundant_parentheses_at_any_depth_answer_the_value_as_mariadb_does(quire, nobody):
    deep = "SELECT " + "(" * DEEP + "1" + ")" * DEEP
    assert run(nobody, deep) == ((1,),)
    cli = mariadb(quire, "--batch", "-N", "-e", deep, user="nobody", password="pw")
    assert cli.stdout == "1\n", cli.stderr


def test_deep_nesting_is_a_syntax_error_for_pymysql_and_the_mariadb_cli(quire, nobody):
    deep = "SELECT " + "(1 + " * DEEP + "1" + ")" * DEEP
    with pytest.raises(pymysql.err.ProgrammingError) as refused:
        run(nobody, deep)
    assert refused.value.args[0] == 1064
    assert "nests too deeply" in refused.value.args[1]
    cli = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "nobody", "-ppw"],
        input=deep + ";\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "ERROR 1064 (42000)" in cli.stderr
    assert run(nobody, "SELECT 3") == ((3,),)
