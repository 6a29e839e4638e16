"""Text protocol rows encoded a column at a time (fe/mysql/text_batches.py) give the bytes the row
encoders give: on random values of every type DuckDB answers with, on long cells and rows, on
sequence ids that wrap, and through a running Quire read by libmariadb's CLI."""

from __future__ import annotations

import random
import struct
from decimal import Decimal

import duckdb
import mysql.connector
import pyarrow as pa
import pytest

from be.engine.arrow_rows import answer_of
from be.engine.columnar_rows import ArrowRows, answers_in_arrow, estimated_arrow_bytes
from be.engine.errors import MemoryLimitExceeded
from be.engine.executor import estimated_bytes
from fe.mysql.connection import MAX_PAYLOAD, PacketStream
from fe.mysql.results import column, float_text
from fe.mysql.text_batches import arrow_fractional_digits, text_packets
from fe.statements.queries import DUCKDB_TYPES, _fractional_digits
from tests.harness import QuireProcess, mariadb, run

ROWS = 3000
SEED = 20261124
HOLD_BYTES = 8 * 1024 * 1024  # answers bigger than this stream in parts


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("quire"), overrides={"query_stream_hold_bytes": HOLD_BYTES}
    ).start()
    yield node
    node.stop()


def row_encoded(rows: list[tuple], columns, seq: int) -> bytes:
    """The packets the row at a time encoder writes."""
    stream = PacketStream.__new__(PacketStream)
    stream.buffer = bytearray()
    stream.seq = seq
    stream.write_text_rows(rows, columns)
    return bytes(stream.buffer)


def column_encoded(table: pa.Table, columns, seq: int) -> bytes:
    stream = PacketStream.__new__(PacketStream)
    stream.buffer = bytearray()
    stream.seq = seq
    stream.write_text_columns(table.columns, columns)
    return bytes(stream.buffer)


def sql_type_of(duck_type: str) -> str:
    base = duck_type.split("(")[0]
    return DUCKDB_TYPES.get(base, duck_type if base == "DECIMAL" else "VARCHAR")


def special_doubles() -> list[float]:
    values = [0.0, -0.0, 1.0, -1.0, 100.0, 0.5, 1e15, 1e16, -1e15, 999999999999999.9, 1e-4]
    values += [9.999e-5, -1e-4, 1.5e-7, 5e-324, 1.7976931348623157e308, 2.5e-300, 1e22, 0.1]
    values += [123456789012345.0, 1234567.125, float("inf"), float("-inf"), float("nan")]
    return values


def random_values(rng: random.Random) -> dict[str, list]:
    doubles = special_doubles()
    doubles += [rng.choice((-1, 1)) * 10 ** rng.uniform(-40, 40) for _ in range(ROWS)]
    doubles += [float(rng.randint(-(10**17), 10**17)) for _ in range(ROWS // 4)]
    doubles += [rng.randint(-(10**6), 10**6) / 8 for _ in range(ROWS // 4)]
    text = "aé€😀'\"\\\n\t"
    strings = ["", "x" * 250, "y" * 251, "z" * 65535, "w" * 65536]
    strings += ["".join(rng.choice(text) for _ in range(rng.randint(0, 40))) for _ in range(ROWS)]
    return {"DOUBLE": doubles, "VARCHAR": strings}


def values_table(rng: random.Random) -> tuple[str, pa.Table]:
    """A DuckDB query of columns of every type (NULLs among them), and its Arrow input."""
    values = random_values(rng)
    count = max(len(v) for v in values.values())
    columns = {
        name: [listed[i % len(listed)] if rng.random() > 0.1 else None for i in range(count)]
        for name, listed in values.items()
    }
    ints = [rng.randint(-(2**63), 2**63 - 1) if rng.random() > 0.1 else None for _ in range(count)]
    micros = [
        rng.choice((0, rng.randint(0, 999) * 1000, rng.randint(0, 999_999)))
        + rng.randint(-(62135596800 - 86400), 253402300799 - 86400) * 10**6
        for _ in range(count)
    ]
    table = pa.table(
        {
            "n": pa.array(range(count), pa.int64()),
            "d": pa.array(columns["DOUBLE"], pa.float64()),
            "s": pa.array(columns["VARCHAR"], pa.string()),
            "i": pa.array(ints, pa.int64()),
            "us": pa.array(micros, pa.int64()),
        }
    )
    query = """
        SELECT
            i % 2 = 0 AS boolean_,
            (i % 128)::TINYINT AS tinyint_, (i % 32768)::SMALLINT AS smallint_,
            (i % 2147483648)::INTEGER AS integer_, i AS bigint_,
            i::HUGEINT * 1000000000000 AS hugeint_,
            (abs(i) % 256)::UTINYINT AS utinyint_, (abs(i) % 65536)::USMALLINT AS usmallint_,
            (abs(i) % 4294967296)::UINTEGER AS uinteger_, abs(i)::UBIGINT * 2 AS ubigint_,
            d AS double_, CASE WHEN abs(d) < 3e38 THEN d END::FLOAT AS float_,
            ((i % 100000000)::DECIMAL(18, 0) / 100)::DECIMAL(18, 2) AS decimal_18_2,
            ((i % 100000)::DECIMAL(10, 0) / 1000)::DECIMAL(10, 5) AS decimal_10_5,
            (i::HUGEINT * 99991)::DECIMAL(38, 10) AS decimal_38_10,
            ((i % 100)::DECIMAL(4, 0) / 1000)::DECIMAL(4, 3) AS decimal_4_3,
            make_timestamp(us) AS timestamp_,
            make_timestamp(us)::DATE AS date_,
            s AS varchar_, encode(s) AS blob_
        FROM input ORDER BY n
    """
    return query, table


def test_every_type_encodes_as_the_row_encoders_do_on_random_values():
    rng = random.Random(SEED)
    query, table = values_table(rng)
    database = duckdb.connect()
    database.register("input", table)
    result = database.execute(query)
    described = [(entry[0], str(entry[1])) for entry in result.description]
    fetched = result.fetchall()
    assert answers_in_arrow(described), described
    arrow = database.sql(query).to_arrow_table()
    assert repr(list(ArrowRows(arrow, described))) == repr(fetched)  # Arrow reads as the fetch
    checked = 0
    for position, (name, duck_type) in enumerate(described):
        sql_types = [sql_type_of(duck_type)]
        if duck_type == "TIMESTAMP":
            sql_types = ["DATETIME", "DATETIME(3)", "DATETIME(6)"]
            digits = arrow_fractional_digits(arrow.column(position))
            assert digits == _fractional_digits(fetched, position)
        for sql_type in sql_types:
            columns = [column(name, sql_type)]
            rows = [(row[position],) for row in fetched]
            expected = row_encoded(rows, columns, seq=7)
            assert column_encoded(arrow.select([position]), columns, seq=7) == expected, (
                name,
                sql_type,
            )
            checked += 1
    assert checked == len(described) + 2
    columns = [column(name, sql_type_of(duck_type)) for name, duck_type in described]
    assert column_encoded(arrow, columns, 3) == row_encoded(fetched, columns, 3)  # whole rows


def test_sequence_ids_wrap_and_empty_batches_write_nothing():
    table = pa.table({"a": pa.array(range(600)), "b": pa.array([None, "x"] * 300)})
    columns = [column("a", "BIGINT"), column("b", "VARCHAR")]
    rows = list(zip(*(c.to_pylist() for c in table.columns), strict=True))
    assert column_encoded(table, columns, 250) == row_encoded(rows, columns, 250)
    assert text_packets(table.slice(0, 0).columns, columns, 9) == (b"", 0)


def test_a_row_as_long_as_a_packet_splits_as_mysql_splits_it():
    big = "q" * (MAX_PAYLOAD + 10)
    table = pa.table({"a": pa.array([1, 2, 3]), "s": pa.array(["x", big, None])})
    columns = [column("a", "BIGINT"), column("s", "LONGTEXT")]
    rows = [(1, "x"), (2, big), (3, None)]
    encoded = column_encoded(table, columns, 0)
    assert encoded == row_encoded(rows, columns, 0)
    (first,) = struct.unpack_from("<I", encoded, 0)
    length = first & MAX_PAYLOAD
    (second,) = struct.unpack_from("<I", encoded, 4 + length)
    assert (second & MAX_PAYLOAD, second >> 24) == (MAX_PAYLOAD, 1)  # the long row's first part


def test_a_value_of_a_type_not_known_column_wise_is_encoded_one_by_one():
    table = pa.table({"t": pa.array([1, None, 3], pa.time64("us"))})
    columns = [column("t", "TIME(6)")]
    rows = [(v,) for v in table.column(0).to_pylist()]
    assert column_encoded(table, columns, 0) == row_encoded(rows, columns, 0)


EVERY_TYPE = """CREATE TABLE db.every (
    id INT, b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, li LARGEINT,
    f FLOAT, d DOUBLE, dc DECIMAL(10, 2), dw DECIMAL(38, 9), dt DATE, ts DATETIME,
    ts3 DATETIME(3), ts6 DATETIME(6), c CHAR(4), vc VARCHAR(40), st STRING
) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2"""


def every_type_row(i: int, rng: random.Random) -> str:
    if i % 7 == 3:
        return f"({i}" + ", NULL" * 17 + ")"
    values = [
        str(i),
        rng.choice(("TRUE", "FALSE")),
        str(rng.randint(-128, 127)),
        str(rng.randint(-32768, 32767)),
        str(rng.randint(-(2**31), 2**31 - 1)),
        str(rng.randint(-(2**63), 2**63 - 1)),
        str(rng.randint(-(10**30), 10**30)),
        repr(rng.uniform(-1e6, 1e6)),
        repr(rng.choice(special_doubles()[:-3] + [rng.uniform(-1e20, 1e20)])),
        f"{rng.randint(-(10**8), 10**8) / 100:.2f}",
        f"{rng.randint(-(10**15), 10**15)}.{rng.randint(0, 10**9 - 1):09d}",
        f"'{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'",
        f"'2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 0{rng.randint(0, 9)}:15:59'",
        f"'2026-01-01 10:00:00.{rng.choice((5, 120, 999)):03d}'",  # 3 digits in every part
        f"'1999-12-31 23:59:59.{rng.choice((1, 120001, 123456)):06d}'",
        f"'{rng.choice(('ab', 'é', ''))}'",
        f"'v{rng.randint(0, 10**9)}'",
        f"'{'s' * rng.randint(0, 300)}'",
    ]
    return f"({', '.join(values)})"


def test_libmariadb_reads_every_type_alike_a_column_and_a_row_at_a_time(quire, root):
    rng = random.Random(SEED)
    run(root, "CREATE DATABASE IF NOT EXISTS db")
    run(root, EVERY_TYPE)
    rows = 2600  # past the head of rows the engine fetches as Python rows
    run(
        root,
        f"INSERT INTO db.every VALUES {', '.join(every_type_row(i, rng) for i in range(rows))}",
    )
    whole = mariadb(quire, "--batch", "-e", "SELECT * FROM db.every ORDER BY id")
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.splitlines()
    assert len(lines) == rows + 1
    for start in range(0, rows, 1000):  # answers too small for Arrow: encoded a row at a time
        sql = f"SELECT * FROM db.every ORDER BY id LIMIT 1000 OFFSET {start}"
        part = mariadb(quire, "--batch", "-e", sql)
        assert part.returncode == 0, part.stderr
        assert part.stdout.splitlines() == [lines[0], *lines[start + 1 : start + 1001]]


def test_a_streamed_answer_reads_whole_through_libmariadb(quire, root):
    rows = 60_000  # well over HOLD_BYTES
    run(root, "CREATE DATABASE IF NOT EXISTS db")
    run(
        root,
        "CREATE TABLE db.many (id BIGINT, v DOUBLE, s VARCHAR(20), t DATETIME) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 4",
    )
    for start in range(0, rows, 5000):
        values = ", ".join(
            f"({i}, {i / 4}, 'r{i}', '2026-01-01 00:00:00')" for i in range(start, start + 5000)
        )
        run(root, f"INSERT INTO db.many VALUES {values}")
    sql = "SELECT * FROM db.many ORDER BY id"
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
    assert done.returncode == 0, done.stderr
    # A streamed answer's DATETIME shows microseconds (a held one as many digits as it needs).
    expected = [f"{i}\t{float_text(i / 4)}\tr{i}\t2026-01-01 00:00:00.000000" for i in range(rows)]
    assert done.stdout.splitlines() == expected


def test_arrow_rows_read_as_their_head_then_their_table():
    table = pa.table({"a": pa.array([3, 4, 5]), "b": pa.array(["c", None, "e"])})
    rows = ArrowRows(table, [("a", "BIGINT"), ("b", "VARCHAR")], head=[(1, "a"), (2, "b")])
    expected = [(1, "a"), (2, "b"), (3, "c"), (4, None), (5, "e")]
    assert len(rows) == 5 and list(rows) == expected
    assert rows[1:4] == expected[1:4] and rows[3:] == expected[3:] and rows[-1] == (5, "e")


def test_a_cn_s_answer_stays_arrow_and_counts_against_the_memory_limit_alike():
    columns = [("k", "BIGINT"), ("v", "VARCHAR"), ("b", "BLOB"), ("h", "HUGEINT")]
    parts = [
        pa.table(
            {
                "k": pa.array(range(start, start + 1100), pa.int64()),
                "v": pa.array([None if i % 5 else f"é{i}" for i in range(1100)], pa.string()),
                "b": pa.array([bytes(i % 7) for i in range(1100)], pa.binary()),
                "h": pa.array([Decimal(i) * 10**20 for i in range(1100)], pa.decimal128(38, 0)),
            }
        )
        for start in (0, 1100)
    ]
    rows = answer_of(columns, parts, 1 << 30).rows
    kept = answer_of(columns, parts, 1 << 30, columnar=True).rows
    assert isinstance(kept, ArrowRows) and not isinstance(rows, ArrowRows)
    assert list(kept) == rows
    assert estimated_arrow_bytes(kept.table) == estimated_bytes(rows)
    for columnar in (False, True):
        with pytest.raises(MemoryLimitExceeded):
            answer_of(columns, parts, estimated_bytes(rows) - 1, columnar=columnar)
        answer_of(columns, parts, estimated_bytes(rows), columnar=columnar)
    few = answer_of(columns, [parts[0].slice(0, 10)], 1 << 30, columnar=True).rows
    assert isinstance(few, list) and len(few) == 10  # too few rows to be worth Arrow


def test_prepared_statements_read_an_arrow_answer_as_binary_rows(quire, root):
    """COM_STMT_EXECUTE's binary rows of an answer kept as Arrow read as the text rows do."""
    run(root, "CREATE DATABASE IF NOT EXISTS db")
    run(
        root,
        "CREATE TABLE db.binary (id BIGINT, v DOUBLE, s VARCHAR(20), d DATE) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    values = ", ".join(
        f"({i}, {i / 8}, {'NULL' if i % 9 == 0 else repr(f's{i}')}, '2026-01-{1 + i % 28:02d}')"
        for i in range(5000)
    )
    run(root, f"INSERT INTO db.binary VALUES {values}")
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", use_pure=True, ssl_disabled=True
    )
    try:
        sql = "SELECT * FROM db.binary WHERE id >= %s ORDER BY id"
        prepared = connection.cursor(prepared=True)
        prepared.execute(sql, (0,))
        binary_rows = prepared.fetchall()
        text = connection.cursor()
        text.execute(sql % 0)
        assert binary_rows == text.fetchall()
        assert len(binary_rows) == 5000
    finally:
        connection.close()
