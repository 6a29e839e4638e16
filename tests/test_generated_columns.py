"""Generated columns, as Doris has them: `c DOUBLE [GENERATED ALWAYS] AS (abs(a + b))` is worked
out from the row whenever it is written (INSERT with or without a column list, DEFAULT in its
place, INSERT ... SELECT of the other columns, UPDATE of the columns it reads, Stream Load), may
read an earlier generated column, and is never written by a statement (MySQL's 3105, Doris's
words). CREATE TABLE refuses what Doris refuses (1054 for an unknown column, 1105 for the rest);
ALTER TABLE drops no column one reads and adds or modifies none. SHOW CREATE TABLE writes it
back, DESCRIBE and information_schema.COLUMNS say STORED GENERATED; it survives a restart.
Through PyMySQL and the mariadb CLI."""

import pytest
import requests

from tests.harness import error_of, mariadb, run
from tests.test_point_writes import prepared
from tests.test_stream_load import put

NOT_WRITTEN = "The value specified for generated column 'c' in table '{}' is not allowed."


@pytest.fixture(scope="module")
def database(root):
    run(root, "CREATE DATABASE generating")


@pytest.fixture
def db(quire, database):
    connection = quire.connect(database="generating")
    yield connection
    connection.close()


def rows(connection, table: str) -> list[tuple]:
    return [tuple(row) for row in run(connection, f"SELECT * FROM {table} ORDER BY 1, 2")]


def test_generated_columns_are_worked_out_on_every_write(quire, db):
    run(
        db,
        "CREATE TABLE sums (a INT, c DOUBLE GENERATED ALWAYS AS (abs(a + b)) NOT NULL, b INT, "
        "d BIGINT AS (c + 1)) DISTRIBUTED BY HASH(a) BUCKETS 2",
    )
    run(db, "INSERT INTO sums VALUES (1, DEFAULT, -5, DEFAULT)")
    run(db, "INSERT INTO sums (a, b) VALUES (2, 3), (3, 4)")
    run(db, "INSERT INTO sums (b, a, c) VALUES (10, 4, DEFAULT)")
    run(db, "INSERT INTO sums (a, b) SELECT a + 10, b FROM sums WHERE a < 3")
    assert rows(db, "sums") == [
        (1, 4.0, -5, 5), (2, 5.0, 3, 6), (3, 7.0, 4, 8), (4, 14.0, 10, 15),
        (11, 6.0, -5, 7), (12, 15.0, 3, 16),
    ]  # fmt: skip
    for statement in (
        "INSERT INTO sums VALUES (5, 1, 2, DEFAULT)",
        "INSERT INTO sums (a, b, c) VALUES (5, 2, 7)",
        "INSERT INTO sums SELECT 5, 6, 7, 8",
        "UPDATE sums SET c = 100 WHERE a = 1",
    ):
        assert error_of(db, statement) == (3105, NOT_WRITTEN.format("sums")), statement
    assert error_of(db, "INSERT INTO sums (a, b) VALUES (5, NULL)")[0] == 1048  # c is NOT NULL
    assert len(rows(db, "sums")) == 6  # nothing half-written
    done = mariadb(quire, "--batch", "generating", "-e", "INSERT INTO sums VALUES (6, 1, 2, 3)")
    assert "ERROR 3105 (HY000)" in done.stderr, done.stderr
    run(db, "CREATE TABLE sums_like LIKE sums")
    run(db, "BEGIN")
    run(db, "INSERT INTO sums_like (a, b) VALUES (1, 1)")
    run(db, "UPDATE sums_like SET b = 2")
    run(db, "COMMIT")
    assert rows(db, "sums_like") == [(1, 3.0, 2, 4)]


def test_an_update_works_the_generated_columns_out_again(quire, db):
    run(
        db,
        "CREATE TABLE totals (id INT, price DECIMAL(10, 2), qty INT, "
        "total DECIMAL(12, 2) AS (price * qty), label VARCHAR(40) AS (concat(id, ':', total))) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(db, "INSERT INTO totals (id, price, qty) VALUES (1, 2.50, 4), (2, 1.25, 2)")
    run(db, "UPDATE totals SET qty = qty + 1 WHERE id = 1")
    run(db, "UPDATE totals SET price = 3")
    assert [
        (id_, str(price), qty, str(total), label)
        for id_, price, qty, total, label in rows(db, "totals")
    ] == [(1, "3.00", 5, "15.00", "1:15.00"), (2, "3.00", 2, "6.00", "2:6.00")]
    run(db, "INSERT INTO totals (id, price, qty) VALUES (2, 10, 10)")  # replaces id 2
    assert rows(db, "totals")[1][3:] == (100, "2:100.00")
    run(db, "SET enable_unique_key_partial_update = true")  # Doris's partial column update
    run(db, "INSERT INTO totals (id, qty) VALUES (2, 5)")
    run(db, "SET enable_unique_key_partial_update = false")
    assert rows(db, "totals")[1][2:] == (5, 50, "2:50.00")
    connection, cursor = prepared(quire)  # a prepared UPDATE by key, as sysbench's
    try:
        cursor.execute("UPDATE generating.totals SET qty = ? WHERE id = ?", (7, 1))
    finally:
        connection.close()
    assert rows(db, "totals")[0][2:4] == (7, 21)


def test_create_table_refuses_what_doris_refuses(db):
    refused = {
        "c INT AS (abs(d))": (1054, "Unknown column 'd' in 'generated column function'"),
        "c INT AS (sum(a))": (
            1105,
            "Expression of generated column 'c' contains a disallowed function:'sum'",
        ),
        "c INT AS (a + (SELECT 1))": (1105, "Generated column does not support subquery."),
        "c INT AS (a + @v)": (1105, "Generated column expression cannot contain variable."),
        "c INT AS (a + 1) DEFAULT 10": (1105, "Generated columns cannot have default value."),
        "c INT AS (d + 1), d INT AS (a)": (
            1105,
            "Generated column can refer only to generated columns defined prior to it.",
        ),
    }
    for columns, expected in refused.items():
        statement = f"CREATE TABLE refused (a INT, b INT, {columns}) DISTRIBUTED BY HASH(a)"
        assert error_of(db, statement) == expected, columns
    assert error_of(
        db,
        "CREATE TABLE refused (a INT, b INT, c INT SUM AS (a + 1)) AGGREGATE KEY(a, b) "
        "DISTRIBUTED BY HASH(a)",
    ) == (
        1105,
        "The generated columns can be key columns, or value columns of replace and "
        "replace_if_not_null aggregation type.",
    )
    assert (
        error_of(db, "CREATE TABLE refused (a INT, c INT AS (a +)) DISTRIBUTED BY HASH(a)")[0]
        == 1064
    )
    assert error_of(db, "SHOW CREATE TABLE refused")[0] == 1146


def test_alter_table_keeps_the_columns_generated_columns_read(quire, db):
    run(db, "CREATE TABLE kept (a INT, b INT, c INT AS (a + b), d INT AS (c * 2), e INT) "
            "DISTRIBUTED BY HASH(a)")  # fmt: skip
    run(db, "INSERT INTO kept (a, b, e) VALUES (1, 2, 3)")
    for statement, expected in (
        ("ALTER TABLE kept DROP COLUMN b", "Column 'b' has a generated column dependency on :[c]"),
        ("ALTER TABLE kept DROP COLUMN c", "Column 'c' has a generated column dependency on :[d]"),
        ("ALTER TABLE kept RENAME COLUMN a aa", "Column 'a' has a generated column dependency on :[c]"),
        ("ALTER TABLE kept MODIFY COLUMN c BIGINT", "Not supporting alter table modify generated columns."),
    ):  # fmt: skip
        assert error_of(db, statement) == (1105, expected), statement
    code, message = error_of(db, "ALTER TABLE kept ADD COLUMN f INT AS (a + 1)")
    assert code == 1235 and "generated column" in message
    run(db, "ALTER TABLE kept DROP COLUMN d")
    run(db, "ALTER TABLE kept RENAME COLUMN c total")
    run(db, "INSERT INTO kept (a, b, e) VALUES (10, 20, 30)")
    assert rows(db, "kept") == [(1, 2, 3, 3), (10, 20, 30, 30)]


def test_generated_columns_are_shown_and_survive_a_restart(quire, db):
    run(db, "CREATE TABLE shown (a INT, b INT, c BIGINT AS (a * b) NOT NULL) "
            "DISTRIBUTED BY HASH(a) BUCKETS 1")  # fmt: skip
    text = run(db, "SHOW CREATE TABLE shown")[0][1]
    assert "  `c` bigint AS (a * b) NOT NULL" in text, text
    describe = {row[0]: row for row in run(db, "DESCRIBE shown")}
    assert describe["c"][5] == "STORED GENERATED" and describe["a"][5] == ""
    assert run(
        db,
        "SELECT COLUMN_NAME, EXTRA, GENERATION_EXPRESSION FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = 'generating' AND TABLE_NAME = 'shown' ORDER BY ORDINAL_POSITION",
    ) == (("a", "", ""), ("b", "", ""), ("c", "STORED GENERATED", "a * b"))
    run(db, "DROP TABLE shown")
    run(db, text)  # the text written back makes the same table
    quire.restart()
    connection = quire.connect(database="generating")
    try:
        run(connection, "INSERT INTO shown (a, b) VALUES (6, 7)")
        assert rows(connection, "shown") == [(6, 7, 42)]
        assert error_of(connection, "INSERT INTO shown VALUES (1, 2, 3)")[0] == 3105
    finally:
        connection.close()


def test_stream_load_works_the_generated_columns_out(quire, db):
    run(db, "CREATE TABLE loaded (a INT, b INT, c INT AS (a + b), d INT AS (c * 10)) "
            "DISTRIBUTED BY HASH(a) BUCKETS 1")  # fmt: skip

    def load(body: bytes, columns: str | None, label: str) -> dict:
        headers = {"label": label, "column_separator": ","}
        if columns is not None:
            headers["columns"] = columns
        return put(quire, "/api/generating/loaded/_stream_load", body, headers).json()

    answer = load(b"1,2\n3,4\n", "a, b", "gen1")
    assert answer["Status"] == "Success", answer
    answer = load(b"5,6,0,0\n", None, "gen2")  # values given for them are worked out anew
    assert answer["Status"] == "Success", answer
    assert rows(db, "loaded") == [(1, 2, 3, 30), (3, 4, 7, 70), (5, 6, 11, 110)]
    run(db, "ALTER TABLE loaded MODIFY COLUMN b INT DEFAULT '100'")
    answer = load(b"7\n", "a", "gen3")  # b left out: its default is read
    assert answer["Status"] == "Success", answer
    assert rows(db, "loaded")[-1] == (7, 100, 107, 1070)


def test_spark_does_not_write_a_table_with_generated_columns(quire, db):
    run(db, "CREATE TABLE sparked (a INT, b INT AS (a + 1)) DISTRIBUTED BY HASH(a) BUCKETS 1")
    answer = requests.post(
        f"http://127.0.0.1:{quire.http_port}/api/generating/sparked/_spark_write",
        json={"overwrite": False, "label": "spark_generated"},
        auth=("root", ""),
        timeout=30,
    )
    assert answer.status_code == 400 and "generated columns" in answer.text, answer.text
    assert rows(db, "sparked") == []


def test_empty_values_rows_are_rows_of_defaults(quire, db):
    run(db, "CREATE TABLE defaults (a INT DEFAULT 10, c DOUBLE AS (abs(a + b)) NOT NULL, "
            "b INT DEFAULT 100) DISTRIBUTED BY HASH(a) BUCKETS 1")  # fmt: skip
    run(db, "INSERT INTO defaults VALUES (), ()")
    run(db, "INSERT INTO defaults () VALUES ()")
    run(db, "INSERT INTO defaults (c, a) VALUES (DEFAULT, 5)")
    assert rows(db, "defaults") == [(5, 105.0, 100), *[(10, 110.0, 100)] * 3]
    assert error_of(db, "INSERT INTO defaults (a) VALUES ()")[0] == 1136  # MySQL's
