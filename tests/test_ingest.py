"""Bulk INSERTs of literal rows (read from the tokens, or from the text when every value is a plain
string, number or NULL; converted by Arrow a column at a time) give what the parser and the value
by value conversion give: the same values, and the same errors naming the same row, with nothing
of the statement written."""

import datetime
import decimal
import random

import pytest

from fe.sql import literal_insert as literal_insert_module
from fe.sql.literal_insert import literal_columns, literal_insert
from fe.sql.parser import tokenize
from tests.harness import error_of, run

ROWS = 100


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE ingest")
    run(root, "USE ingest")
    run(
        root,
        "CREATE TABLE t (id BIGINT NOT NULL, small TINYINT, c VARCHAR(8) NOT NULL, d DATE, "
        "amount DECIMAL(6,2), x DOUBLE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    return root


def rows(count: int = ROWS, plain: bool = False, **changed) -> str:
    """count rows of literals; changed: {row number (from 1): the row's text}. plain: no value
    with an exponent (the rows are read from the text, not the tokens)."""
    written = []
    for number in range(1, count + 1):
        x = f"{number % 5}.25" if plain else f"1e{number % 5}"
        default = f"({number}, {number % 100 - 50}, 'c{number}', '2024-01-{number % 28 + 1:02d}', {number}.5, {x})"
        written.append(changed.get(f"row{number}", default))
    return ", ".join(written)


@pytest.mark.parametrize("plain", [False, True])
def test_literal_rows_read_as_the_parser_reads_them(db, plain):
    assert (literal_columns(f"INSERT INTO t VALUES {rows(plain=plain)}") is None) is not plain
    run(db, f"INSERT INTO t VALUES {rows(plain=plain)}")
    assert run(db, "SELECT COUNT(*), SUM(id), SUM(small), MIN(d), MAX(amount) FROM t") == (
        (100, 5050, -50, datetime.date(2024, 1, 1), decimal.Decimal("100.50")),
    )
    run(
        db,
        "INSERT ingest.`t` (`id`, c, small, d, amount, x) VALUES "
        "(-1, 'it''s', -128, NULL, -0.125, -2.5E-3), (-2, 'a\\\\b\\'', TRUE, DEFAULT, 7, 0), "
        "(-3, '', FALSE, '2024-02-29', 1E2, .5)",
    )
    assert run(db, "SELECT id, small, c, d, amount, x FROM t WHERE id < 0 ORDER BY id DESC") == (
        (-1, -128, "it's", None, decimal.Decimal("-0.13"), -0.0025),
        (-2, 1, "a\\b'", None, decimal.Decimal("7.00"), 0.0),
        (-3, 0, "", datetime.date(2024, 2, 29), decimal.Decimal("100.00"), 0.5),
    )
    run(db, "DELETE FROM t WHERE id > 0 OR id < 0")


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize(
    "row, code, message",
    [
        ("(57, 300, 'c', NULL, 1, 1)", 1264, "Out of range value for column 'small' at row 57"),
        ("(9223372036854775808, 1, 'c', NULL, 1, 1)", 1264, "column 'id' at row 57"),
        (
            "('x', 1, 'c', NULL, 1, 1)",
            1366,
            "Incorrect integer value: 'x' for column 'id' at row 57",
        ),
        ("(57, 1, 'too long!!', NULL, 1, 1)", 1406, "Data too long for column 'c' at row 57"),
        ("(57, 1, NULL, NULL, 1, 1)", 1048, "Column 'c' cannot be null"),
        ("(57, 1, 'c', '2024-02-30', 1, 1)", 1292, "Incorrect date value: '2024-02-30'"),
        ("(57, 1, 'c', '0000-01-01', 1, 1)", 1292, "Incorrect date value: '0000-01-01'"),
        ("(57, 1, 'c', NULL, 12345.678, 1)", 1264, "Out of range value for column 'amount'"),
        ("(57, 1, 'c', NULL, 1)", 1136, "Column count doesn't match value count at row 57"),
        ("(57, 1, 'c', NULL, 1, 1e999)", 1367, "Illegal double '1e999'"),
        ("(57, 1, 'c', NULL, 1, 1e)", 1054, "Unknown column '1e'"),
    ],
)
def test_a_bad_value_in_a_bulk_insert_is_refused_with_its_row(db, row, code, message, plain):
    before = run(db, "SELECT COUNT(*) FROM t")
    error = error_of(db, f"INSERT INTO t VALUES {rows(plain=plain, row57=row)}")
    assert error[0] == code and message in error[1], error
    assert run(db, "SELECT COUNT(*) FROM t") == before


def test_rounding_and_expressions_still_go_value_by_value(db):
    run(
        db,
        f"INSERT INTO t VALUES {rows(row3='(1003, 1 + 1, CONCAT(1, 2), 20240105, 1.005, 1)')}",
    )
    assert run(db, "SELECT small, c, d, amount FROM t WHERE id = 1003") == (
        (2, "12", datetime.date(2024, 1, 5), decimal.Decimal("1.01")),
    )


def test_rows_read_from_the_text_are_the_rows_read_from_the_tokens():
    generator = random.Random(7)
    pieces = ("0", "-0", "007", "-12", "3.25", "-0.50", "NULL", "null", "''", "'a,b)'", "' ( '")
    pieces += ("'NULL'", "'-1'", "'\u00e9t\u00e9'", "'x\ny'", "9223372036854775808", "'a, b'")
    pieces += ("'x), (y'", "'x),(y'", "' '", "'\r'", "'1.5'")
    by_split = 0
    for _ in range(400):
        width = generator.randrange(1, 5)
        between_values = generator.choice((", ", ",", ", ", " , ", ",  "))
        between_rows = generator.choice((", ", ",", ", ", "  ,", ",\n"))
        written = [
            "(" + between_values.join(generator.choice(pieces) for _ in range(width)) + ")"
            for _ in range(generator.randrange(1, 6))
        ]
        sql = f"INSERT INTO db.t VALUES {between_rows.join(written)}"
        by_split += literal_insert_module._written_by_split(sql[24:]) is not None
        tokens = tokenize(sql)
        insert, token_count = literal_columns(sql)
        assert insert.literals.rows() == literal_insert(tokens).rows, sql
        assert token_count == len(tokens), sql
    assert 50 < by_split < 350, by_split  # both ways of reading the rows are taken


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES ('it''s')",
        "INSERT INTO t VALUES ('a\\'b')",
        "INSERT INTO t VALUES (1), (2),",
        "INSERT INTO t VALUES (1),(),(2)",
        "INSERT INTO t VALUES (1,), (2,)",
        "INSERT INTO t VALUES (1) (2)",
        "INSERT INTO t VALUES (1), (2, 3)",
        "INSERT INTO t VALUES (1e3)",
        "INSERT INTO t VALUES (.5)",
        "INSERT INTO t VALUES (- 1)",
        "INSERT INTO t VALUES (DEFAULT)",
        "INSERT INTO t VALUES (1); DROP TABLE t",
        "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1",
        "INSERT INTO t SELECT * FROM (VALUES (1)) v",
        "INSERT IGNORE INTO t VALUES (1)",
        "INSERT INTO t VALUES (1) /* comment */",
        "SELECT 'INSERT INTO t VALUES (1)'",
    ],
)
def test_anything_else_is_left_to_the_tokens(sql):
    assert literal_columns(sql) is None


def test_plain_rows_with_a_column_list_defaults_and_auto_increment(db):
    run(
        db,
        "CREATE TABLE a (id BIGINT NOT NULL AUTO_INCREMENT, c VARCHAR(20) NOT NULL, "
        "n INT DEFAULT '7', d DATE) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(db, "INSERT INTO a (c, d) VALUES ('x), (y', NULL), ('NULL', '2024-03-01')")
    run(db, "INSERT INTO a (d, n, c, id) VALUES ('2024-03-02', -3, '', 10), (NULL, NULL, 'z', 0)")
    assert run(db, "SELECT id, c, n, d FROM a ORDER BY id") == (
        (1, "x), (y", 7, None),
        (2, "NULL", 7, datetime.date(2024, 3, 1)),
        (10, "", -3, datetime.date(2024, 3, 2)),
        (11, "z", None, None),
    )
    error = error_of(db, "INSERT INTO a (c, n) VALUES ('a', 1), ('b', 'two')")
    assert error[0] == 1366 and "at row 2" in error[1], error
    error = error_of(db, "INSERT INTO a (c, n) VALUES ('a', 1, 2)")
    assert error[0] == 1136, error


def test_plain_numbers_in_a_double_column_are_the_nearest_doubles(db):
    run(
        db,
        "CREATE TABLE dbl (id INT NOT NULL, x DOUBLE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    written = ["-0", "-0.0", "0.1", "123456789012345678901234567890", "-2.5", "NULL", "7"] * 5
    rows = ", ".join(f"({number}, {value})" for number, value in enumerate(written))
    assert literal_columns(f"INSERT INTO dbl VALUES {rows}") is not None
    run(db, f"INSERT INTO dbl VALUES {rows}")
    read = [x for _, x in run(db, "SELECT id, x FROM dbl ORDER BY id")]
    expected = [None if value == "NULL" else float(decimal.Decimal(value)) for value in written]
    assert read == expected
    error = error_of(db, f"INSERT INTO dbl VALUES {rows}, (99, 1{'0' * 400})")
    assert error[0] == 1264 and "column 'x' at row 36" in error[1], error


def test_expressions_of_all_the_rows_are_worked_out_together(db):
    """Expressions of one shape are worked out over a table of their literals, checked against
    the first worked out alone: NOW() is one time for every row, as in MySQL, while RAND() is
    drawn for each row; a value refused names its row and nothing is written."""
    run(db, "CREATE TABLE e (id INT NOT NULL, c VARCHAR(8), ts DATETIME, x DOUBLE, d VARCHAR(8)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    values = ", ".join(
        f"({n}, CONCAT('c', {n % 7}), NOW(), RAND(), "
        f"DATE_FORMAT(CONCAT('2024-01-', {n % 9 + 10}), '%d.%m'))"
        for n in range(300)
    )
    run(db, f"INSERT INTO e VALUES {values}")
    assert run(db, "SELECT COUNT(*), COUNT(DISTINCT ts), COUNT(DISTINCT c), MAX(c) FROM e") == (
        (300, 1, 7, "c6"),
    )
    assert run(db, "SELECT COUNT(DISTINCT x), MIN(d), MAX(d) FROM e")[0] == (300, "10.01", "18.01")
    assert run(db, "SELECT c, d FROM e WHERE id = 100") == (("c2", "11.01"),)
    values = ", ".join(
        f"({n}, 'k', NOW(), CAST({n} / 4 AS DECIMAL(6, 2)), NULL)" for n in range(20)
    )
    run(db, f"INSERT INTO e VALUES {values}")  # a type's literals are no values to take apart
    assert run(db, "SELECT SUM(x) FROM e WHERE c = 'k'") == ((47.5,),)
    values = ", ".join(
        f"({n}, CONCAT('c', {'REPEAT(1, 9)' if n == 57 else n}), NOW(), 1, NULL)"
        for n in range(1, 101)
    )
    error = error_of(db, f"INSERT INTO e VALUES {values}")
    assert error[0] == 1406 and "Data too long for column 'c' at row 57" in error[1], error
    values = ", ".join(
        f"({n}, 'a', NOW(), {'1 + nosuch(1)' if n == 57 else f'{n} + 1'}, NULL)"
        for n in range(1, 101)
    )
    assert error_of(db, f"INSERT INTO e VALUES {values}")[0] == 1305
    assert run(db, "SELECT COUNT(*) FROM e") == ((320,),)
