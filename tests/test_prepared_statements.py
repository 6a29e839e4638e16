"""Prepared statements against a real `quire up`: typed parameters are bound into the query parsed
at prepare time, so a huge parameter is never written into SQL text and tokenized again."""

import re
import subprocess
import threading
from decimal import Decimal

import mysql.connector
import pytest
from pymysql.converters import escape_item

from tests.harness import run, wait_until

HUGE_DIGITS = 4_000_000  # a DECIMAL parameter of 4 MB, within max_allowed_packet (16 MB)
OTHER_QUERIES = 20


def connector(quire):
    return mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", password="", use_pure=True
    )


def test_huge_decimal_and_string_parameters_answer_without_holding_up_others(quire, root):
    huge = Decimal("9" * HUGE_DIGITS + ".5")  # beyond 65 digits: MySQL's largest DECIMAL
    text = "é" * HUGE_DIGITS
    answers = []
    failures = []

    def execute_huge():
        connection = connector(quire)
        try:
            cursor = connection.cursor(prepared=True)
            cursor.execute("SELECT ?", (huge,))
            answers.append(cursor.fetchall())
            cursor.execute("SELECT CHAR_LENGTH(?), ?", (text, text))
            answers.append(cursor.fetchall())
        except Exception as error:  # reported by the assertions below
            failures.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=execute_huge)
    worker.start()
    for _ in range(OTHER_QUERIES):
        assert run(root, "SELECT 1") == ((1,),)
    wait_until(lambda: not worker.is_alive(), 120, "the huge prepared statements to finish")
    assert not failures, failures
    assert answers == [[(Decimal("9" * 65),)], [(HUGE_DIGITS, text)]]


def test_decimal_parameter_of_a_hundred_million_digits_is_the_largest_decimal(quire):
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT ?", (Decimal("1E+100000000"),))
        assert cursor.fetchall() == [(Decimal("9" * 65),)]
    finally:
        connection.close()


def test_prepared_queries_bind_every_parameter_type(quire):
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT ? - ?, ?, ?, ? IS NULL", (5, -3, -1.5, "it's", None))
        assert cursor.fetchall() == [(8, -1.5, "it's", 1)]
        cursor.execute("SELECT ? IN (?, ?, ?)", (2, 1, 2, 3))
        assert cursor.fetchall() == [(1,)]
    finally:
        connection.close()


# Steps run on one connection, and what the last one answers: its rows, or (errno, SQLSTATE);
# "{client}" in a text, value or answer is the client's own name, for objects of its own. Through
# mysql-connector each statement is prepared (COM_STMT_PREPARE) and executed with typed values;
# through the mariadb CLI the same steps, their values written into the text, answer alike.
CASES = {
    "query": ([("SELECT ? AS n, ?, ? + 1", ("a", None, 41))], [("a", None, 42)]),
    "set a variable": (
        [("SET wait_timeout = ?", (4242,)), ("SELECT @@wait_timeout + ?", (1,))],
        [(4243,)],
    ),
    "set variables": (
        [("SET @v = ?, time_zone = ?", (1, "+08:00")), ("SELECT @@time_zone", ())],
        [("+08:00",)],
    ),
    "show like": (
        [("SHOW DATABASES LIKE ?", ("information_schema",))],
        [("information_schema",)],
    ),
    "ddl without parameters": (
        [("CREATE DATABASE db_{client}", ()), ("SHOW DATABASES LIKE ?", ("db_{client}",))],
        [("db_{client}",)],
    ),
    "user and password": (
        [
            ("CREATE USER ?@? IDENTIFIED BY ?", ("u_{client}", "%", "it's")),
            ("CREATE USER ?", ("u_{client}",)),
        ],
        (1396, "HY000"),
    ),
    "kill a number": ([("KILL ?", (987_654,))], (1094, "HY000")),
    "a name cannot be a parameter": ([("CREATE DATABASE ?", ("x",))], (1064, "42000")),
    "a table cannot be a parameter": ([("DROP TABLE ?", ("x",))], (1064, "42000")),
    "a number where a string goes": ([("SHOW TABLES LIKE ?", (5,))], (1064, "42000")),
    "unknown statement": ([("FROB ?", (1,))], (1064, "42000")),
}


def named(value, client: str):
    if isinstance(value, str):
        return value.replace("{client}", client)
    if isinstance(value, list | tuple):
        return type(value)(named(item, client) for item in value)
    return value


def answer_prepared(quire, steps) -> list | tuple[int, str]:
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        rows = []
        for sql, values in steps:
            cursor.execute(sql, values)
            rows = [tuple(row) for row in cursor.fetchall()] if cursor.with_rows else []
        return rows
    except mysql.connector.Error as error:
        return error.errno, error.sqlstate
    finally:
        connection.close()


def answer_as_text(quire, steps) -> list | tuple[int, str]:
    script = ";\n".join(
        sql.replace("?", "{}").format(*(escape_item(value, "utf8") for value in values))
        for sql, values in steps
    )
    command = ["mariadb", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "root"]
    done = subprocess.run(
        [*command, "--batch", "--skip-column-names", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode:
        code, state = re.search(r"ERROR (\d+) \((\w+)\)", done.stderr).groups()
        return int(code), state
    return [tuple(done.stdout.rstrip("\n").split("\t"))] if done.stdout else []


def as_text(answer):
    if isinstance(answer, tuple):
        return answer
    return [tuple("NULL" if value is None else str(value) for value in row) for row in answer]


@pytest.mark.parametrize("steps, expected", CASES.values(), ids=CASES.keys())
def test_every_statement_is_prepared_with_typed_parameters_and_answers_as_its_text(
    quire, steps, expected
):
    assert answer_prepared(quire, named(steps, "prepared")) == named(expected, "prepared")
    assert answer_as_text(quire, named(steps, "text")) == as_text(named(expected, "text"))


@pytest.mark.parametrize(
    "sql, parameters",
    [("SELECT ?", 1), ("SET @v = ?", 1), ("SHOW TABLES LIKE ?", 1), ("CREATE DATABASE p", 0)],
)
def test_a_statement_is_prepared_with_its_parameters(quire, sql, parameters):
    connection = connector(quire)
    try:
        prepared = connection.cmd_stmt_prepare(sql.encode())
        assert len(prepared["parameters"]) == parameters
        connection.cmd_stmt_close(prepared["statement_id"])
    finally:
        connection.close()


@pytest.mark.parametrize("sql", ["CREATE DATABASE ?", "GRANT SELECT_PRIV ON ?.* TO root", "FROB ?"])
def test_a_parameter_where_the_grammar_takes_none_is_refused_at_prepare(quire, sql):
    connection = connector(quire)
    try:
        with pytest.raises(mysql.connector.Error) as refused:
            connection.cmd_stmt_prepare(sql.encode())
        assert (refused.value.errno, refused.value.sqlstate) == (1064, "42000")
        assert connection.cmd_query("SELECT 1") and connection.get_rows()[0] == [(1,)]
    finally:
        connection.close()


def test_a_huge_parameter_of_a_grammar_statement_is_bound_not_written_out(quire, root):
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SHOW DATABASES LIKE ?", ("x" * HUGE_DIGITS,))
        assert cursor.fetchall() == []
        cursor.execute("SHOW DATABASES LIKE ?", ("information_schema",))
        assert cursor.fetchall() == [("information_schema",)]
    finally:
        connection.close()
    assert run(root, "SELECT 1") == ((1,),)
