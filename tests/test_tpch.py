"""TPC-H at scale 0.01 through the MySQL front: tpchgen-cli's Parquet loaded with batched INSERTs
into Doris-style tables, the 22 queries in MySQL's dialect through PyMySQL (two also through the
mariadb CLI), each answer equal to DuckDB's over the same Parquet files."""

import datetime

import pymysql
import pytest

from tests import tpch
from tests.harness import mariadb

SCALE = 0.01
DATABASE = "tpch"
QUERIES = tpch.queries(SCALE)
LOAD_CONNECTIONS = 2

# MySQL's column types (PyMySQL's type codes) of a few answers: DECIMAL stays DECIMAL, a DATE a
# DATE, COUNT(*) a BIGINT, a CHAR column a string.
NEWDECIMAL, LONGLONG, DATE, VAR_STRING, LONG = 246, 8, 10, 253, 3


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tpch.generate(tmp_path_factory.mktemp("tpch"), SCALE)


@pytest.fixture(scope="module")
def loaded(quire, data):
    counts = tpch.load(quire.query_port, DATABASE, data, LOAD_CONNECTIONS)
    connection = quire.connect(database=DATABASE)
    yield connection, counts
    connection.close()


@pytest.fixture(scope="module")
def duck(data):
    connection = tpch.duckdb_over_parquet(data, threads=1)
    yield connection
    connection.close()


def answer(connection, sql: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


def test_every_table_holds_the_generated_rows(loaded):
    connection, counts = loaded
    assert counts["lineitem"] > 50_000
    for table, count in counts.items():
        assert answer(connection, f"SELECT COUNT(*) FROM {table}") == [(count,)], table


@pytest.mark.parametrize("number", sorted(QUERIES))
def test_query_answers_as_duckdb_over_the_parquet(loaded, duck, number):
    connection, _ = loaded
    ours = answer(connection, QUERIES[number])
    theirs = duck.execute(QUERIES[number]).fetchall()
    assert theirs, f"Q{number} has no rows at scale {SCALE}: a weak check"
    assert tpch.differences(ours, theirs) == []


def test_result_columns_have_mysql_types(loaded):
    connection, _ = loaded
    with connection.cursor() as cursor:
        cursor.execute(QUERIES[1])
        types = {entry[0]: entry[1] for entry in cursor.description}
        cursor.execute(QUERIES[3])
        types.update({entry[0]: entry[1] for entry in cursor.description})
    assert types["sum_qty"] == NEWDECIMAL
    assert types["sum_charge"] == NEWDECIMAL
    assert types["count_order"] == LONGLONG
    assert types["l_returnflag"] == VAR_STRING
    assert types["o_orderdate"] == DATE
    assert types["o_shippriority"] == LONG
    assert types["revenue"] == NEWDECIMAL


@pytest.mark.parametrize("number", [3, 13])
def test_queries_through_the_mariadb_cli(quire, loaded, duck, number):
    done = mariadb(quire, DATABASE, "--batch", "--skip-column-names", "-e", QUERIES[number])
    assert done.returncode == 0, done.stderr
    expected = [
        "\t".join(str(value) for value in row) for row in duck.execute(QUERIES[number]).fetchall()
    ]
    assert done.stdout.splitlines() == expected


def test_a_bad_query_is_an_error_and_the_connection_survives(loaded):
    connection, _ = loaded
    with pytest.raises(pymysql.MySQLError):
        answer(connection, "select l_nosuchcolumn from lineitem")
    assert answer(connection, "select count(*) from region") == [(5,)]


def test_scans_of_a_few_columns_see_deletes_updates_and_added_columns(loaded):
    """A scan decodes only the columns a query names: rows deleted or updated since, and a
    column added since (NULL in older rows), read as in a whole-table scan."""
    connection, _ = loaded
    for statement in (
        "CREATE TABLE few (k BIGINT NOT NULL, a INT, b VARCHAR(10)) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        "INSERT INTO few VALUES " + ", ".join(f"({k}, {k * 10}, 'b{k}')" for k in range(100)),
        "DELETE FROM few WHERE k < 10",
        "UPDATE few SET a = 0 WHERE k >= 90",
        "ALTER TABLE few ADD COLUMN c INT",
        "INSERT INTO few (k, a, b, c) VALUES (1000, 1, 'new', 7)",
    ):
        with connection.cursor() as cursor:
            cursor.execute(statement)
    expected_a = sum(k * 10 for k in range(10, 90)) + 1
    assert answer(connection, "select sum(a) from few") == [(expected_a,)]
    assert answer(connection, "select count(*) from few") == [(91,)]
    assert answer(connection, "select count(c), sum(c) from few") == [(1, 7)]
    assert answer(
        connection, "select count(*) from few f where exists (select * from few g where g.k = f.k)"
    ) == [(91,)]
    assert answer(connection, "select b from few where k = 1000") == [("new",)]
    assert answer(connection, "select k, a, b, c from few where k in (10, 95) order by k") == [
        (10, 100, "b10", None),
        (95, 0, "b95", None),
    ]


def test_date_arithmetic_with_amounts_written_as_strings(loaded):
    connection, _ = loaded
    with connection.cursor() as cursor:
        cursor.execute(
            "select date '1998-12-01' - interval '90' day, "
            "date_add('2020-01-31', interval '1' month), "
            "cast('2020-01-01 10:00:00' as datetime) + interval '2' hour, "
            "timestamp '2020-01-01 10:00:00' + interval 1 day"
        )
        assert cursor.fetchall() == (
            (
                datetime.date(1998, 9, 2),
                datetime.date(2020, 2, 29),
                datetime.datetime(2020, 1, 1, 12, 0),
                datetime.datetime(2020, 1, 2, 10, 0),
            ),
        )
        assert [entry[1] for entry in cursor.description][:2] == [DATE, DATE]
