"""Column types are parsed once into a ColumnType that gives back its SQL text, its MySQL view and
its Arrow type; the journal still stores the SQL text, so what older builds wrote still loads."""

import io
import subprocess
import sys

import msgpack
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fe.sql.parser import ParseError, parse_tokens, tokenize
from metadata import codec
from metadata.ops import CreateTable
from metadata.records import Column, Table
from metadata.types import ColumnType, parse_column_type
from tests.harness import REPO, run

# As written in CREATE TABLE -> .sql (stored, and re-parsed to the same value), .mysql (DESCRIBE,
# SHOW CREATE TABLE, information_schema.COLUMNS.COLUMN_TYPE), .arrow.
CASES = [
    ("BOOLEAN", "BOOLEAN", "boolean", pa.bool_()),
    ("bool", "BOOLEAN", "boolean", pa.bool_()),
    ("TINYINT", "TINYINT", "tinyint", pa.int8()),
    ("SMALLINT", "SMALLINT", "smallint", pa.int16()),
    ("MEDIUMINT", "MEDIUMINT", "mediumint", pa.int32()),
    ("int", "INT", "int", pa.int32()),
    ("INTEGER", "INT", "int", pa.int32()),
    ("INT(11)", "INT(11)", "int(11)", pa.int32()),
    ("BIGINT", "BIGINT", "bigint", pa.int64()),
    ("LARGEINT", "LARGEINT", "largeint", pa.decimal256(39, 0)),
    ("FLOAT", "FLOAT", "float", pa.float32()),
    ("DOUBLE", "DOUBLE", "double", pa.float64()),
    ("DECIMAL", "DECIMAL", "decimal(9,0)", pa.decimal128(9, 0)),
    ("decimal(10, 2)", "DECIMAL(10,2)", "decimal(10,2)", pa.decimal128(10, 2)),
    ("NUMERIC(12)", "DECIMAL(12)", "decimal(12)", pa.decimal128(12, 0)),
    ("DECIMALV3(38,9)", "DECIMALV3(38,9)", "decimal(38,9)", pa.decimal128(38, 9)),
    ("DECIMALV3(76,10)", "DECIMALV3(76,10)", "decimal(76,10)", pa.decimal256(76, 10)),
    ("DATE", "DATE", "date", pa.date32()),
    ("DATEV2", "DATEV2", "date", pa.date32()),
    ("DATETIME", "DATETIME", "datetime", pa.timestamp("us")),
    ("DATETIME(3)", "DATETIME(3)", "datetime(3)", pa.timestamp("us")),
    ("DATETIMEV2(6)", "DATETIMEV2(6)", "datetime(6)", pa.timestamp("us")),
    ("CHAR", "CHAR", "char(1)", pa.string()),
    ("CHAR(10)", "CHAR(10)", "char(10)", pa.string()),
    ("VARCHAR(20)", "VARCHAR(20)", "varchar(20)", pa.string()),
    ("STRING", "STRING", "text", pa.string()),
    ("TEXT", "STRING", "text", pa.string()),
    ("JSON", "JSON", "json", pa.string()),
    ("JSONB", "JSONB", "jsonb", pa.string()),
    ("IPV4", "IPV4", "ipv4", pa.string()),  # kept as the address's canonical text
    ("IPV6", "IPV6", "ipv6", pa.string()),
    ("BITMAP", "BITMAP", "bitmap", pa.list_(pa.uint64())),  # its sorted values
    ("ARRAY<INT>", "ARRAY<INT>", "array<int>", pa.list_(pa.int32())),
    (
        "array<array<decimal(10,2)>>",
        "ARRAY<ARRAY<DECIMAL(10,2)>>",
        "array<array<decimal(10,2)>>",
        pa.list_(pa.list_(pa.decimal128(10, 2))),
    ),
    ("ARRAY<TEXT>", "ARRAY<TEXT>", "array<text>", pa.list_(pa.string())),
    (
        "MAP<STRING, ARRAY<INT>>",
        "MAP<STRING,ARRAY<INT>>",
        "map<string,array<int>>",
        pa.map_(pa.string(), pa.list_(pa.int32())),
    ),
    (
        "STRUCT<a:INT, b : varchar(10)>",
        "STRUCT<A:INT,B:VARCHAR(10)>",
        "struct<a:int,b:varchar(10)>",
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
    ),
]


def _column_type(written: str) -> ColumnType:
    sql = f"CREATE TABLE t (c {written}) DISTRIBUTED BY HASH(c) BUCKETS 1"
    statement = parse_tokens(tokenize(sql), sql)
    return statement.columns[0].type


@pytest.mark.parametrize(("written", "sql", "mysql", "arrow"), CASES)
def test_a_type_is_parsed_once_into_its_sql_mysql_and_arrow_views(written, sql, mysql, arrow):
    column_type = _column_type(written)
    assert isinstance(column_type, ColumnType)
    assert (column_type.sql, column_type.mysql, column_type.arrow) == (sql, mysql, arrow)
    assert parse_column_type(column_type.sql) == column_type


@pytest.mark.parametrize(
    ("written", "data_type", "length", "precision", "scale", "character"),
    [
        ("VARCHAR(20)", "varchar", 20, None, None, True),
        ("VARCHAR", "varchar", 65533, None, None, True),
        ("CHAR", "char", 1, None, None, True),
        ("STRING", "text", 2147483643, None, None, True),
        ("JSON", "json", 2147483643, None, None, True),
        ("INT(11)", "int", None, 10, 0, False),
        ("LARGEINT", "largeint", None, 39, 0, False),
        ("DECIMAL", "decimal", None, 9, 0, False),
        ("DECIMAL(10)", "decimal", None, 10, 0, False),
        ("DECIMALV3(20,5)", "decimal", None, 20, 5, False),
        ("FLOAT", "float", None, 12, None, False),
        ("DOUBLE", "double", None, 22, None, False),
        ("DATETIME(3)", "datetime", None, None, None, False),
        ("ARRAY<VARCHAR(3)>", "array", None, None, None, False),
    ],
)
def test_information_schema_facts_come_from_the_typed_value(
    written, data_type, length, precision, scale, character
):
    column_type = _column_type(written)
    assert column_type.data_type == data_type
    assert column_type.character_length == length
    assert (column_type.numeric_precision, column_type.numeric_scale) == (precision, scale)
    assert column_type.is_character is character


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("FOO", "unknown column type FOO"),
        ("ARRAY<FOO>", "unknown column type FOO"),
        ("ARRAY", "ARRAY needs its element type(s)"),
        ("MAP<INT>", "MAP takes 2 element type(s), not 1"),
        ("INT<X>", "unexpected '<X>' after column type INT"),
        ("ARRAY<INT NOT NULL>", "unknown column type INTNOTNULL"),
    ],
)
def test_a_type_that_does_not_parse_is_a_syntax_error(written, message):
    with pytest.raises(ParseError, match="You have an error in your SQL syntax") as raised:
        _column_type(written)
    assert message in str(raised.value)


def test_a_column_given_sql_text_holds_the_parsed_type():
    assert Column("c", "DECIMAL(10,2)").type == ColumnType("DECIMAL", (10, 2))
    assert Column("c", "TEXT").type == ColumnType("STRING")


# CreateTable as the codec of version 2 (before ColumnType) wrote it: a table with one column of
# each shape. Journals and images store a column's type as its SQL text, then and now.
VERSION_2_CREATE_TABLE = bytes.fromhex(
    "0291920a9d0a09a1749798a16ba6424947494e54c2c0a0c3c0c298a164ad444543494d414c283130"
    "2c3229c3a130a0c2c0c298a173ab5641524348415228323029c3c0a0c2c0c298a178a6535452494e"
    "47c3c0a0c2c0c298a161b441525241593c444543494d414c2831302c32293ec3c0a0c2c0c298a16d"
    "b64d41503c535452494e472c41525241593c494e543e3ec3c0a0c2c0c298a172bb5354525543543c"
    "413a494e542c423a56415243484152283130293ec3c0a0c2c0c2a94455504c494341544591a16b91"
    "a16b019091960ba17490900c0190a0a46f6c6170"
)
VERSION_2_TYPES = (
    "BIGINT",
    "DECIMAL(10,2)",
    "VARCHAR(20)",
    "STRING",
    "ARRAY<DECIMAL(10,2)>",
    "MAP<STRING,ARRAY<INT>>",
    "STRUCT<A:INT,B:VARCHAR(10)>",
)


def test_an_entry_and_an_image_record_written_before_typed_columns_decode_identically():
    (op,) = codec.decode_ops(VERSION_2_CREATE_TABLE)
    assert isinstance(op, CreateTable)
    table = op.table
    assert [column.type.sql for column in table.columns] == list(VERSION_2_TYPES)
    assert table.columns[1].type == ColumnType("DECIMAL", (10, 2))
    assert table.schema_version == 1

    record = msgpack.unpackb(VERSION_2_CREATE_TABLE[1:], use_list=False)[0][1]
    assert codec.decode_record(Table, record, version=2) == table
    # The same fields (columns with the ids and backfills given on decoding, partitions with no
    # LIST values, properties or rollup tablets), then the schema version, the partition kind,
    # temporary partitions and rollups.
    columns = tuple(
        (*column, table_column.id, table_column.backfill)
        for column, table_column in zip(record[3], table.columns, strict=True)
    )
    partitions = tuple((*partition, (), (), ()) for partition in record[9])
    expected = (*record[:3], columns, *record[4:9], partitions, *record[10:], 1, "RANGE", (), ())
    assert codec.encode_record(table) == expected
    assert codec.decode_ops(codec.encode_ops([op])) == [op]


def test_a_stored_type_that_does_not_parse_is_a_codec_error():
    record = msgpack.unpackb(VERSION_2_CREATE_TABLE[1:], use_list=False)[0][1]
    column = ("c", "ARRAY<FOO>", True, None, "", False, None, False)
    damaged = (*record[:3], (column,), *record[4:])
    with pytest.raises(codec.CodecError, match="unknown column type FOO"):
        codec.decode_record(Table, damaged, version=2)


def test_arrow_types_survive_a_parquet_round_trip():
    schema = pa.schema(
        [
            pa.field(f"c{position}", _column_type(case[0]).arrow)
            for position, case in enumerate(CASES)
        ]
    )
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer, store_schema=False)
    buffer.seek(0)
    assert pq.read_table(buffer).schema.remove_metadata() == schema


def test_the_catalog_does_not_load_pyarrow():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, metadata.catalog, metadata.codec; assert 'pyarrow' not in sys.modules",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def _index_schema(connection, table: str) -> tuple:
    db_id = next(row[0] for row in run(connection, "SHOW PROC '/dbs'") if row[1] == "typed")
    table_id = next(
        row[0] for row in run(connection, f"SHOW PROC '/dbs/{db_id}'") if row[1] == table
    )
    return run(connection, f"SHOW PROC '/dbs/{db_id}/{table_id}/index_schema'"), (db_id, table_id)


def test_schema_version_shows_in_show_proc_and_rises_with_each_column_change(fresh_quire):
    fresh_quire.start()
    connection = fresh_quire.connect()
    run(connection, "CREATE DATABASE typed")
    run(connection, "CREATE TABLE typed.t (k INT, v VARCHAR(20)) DISTRIBUTED BY HASH(k) BUCKETS 1")
    rows, (db_id, table_id) = _index_schema(connection, "t")
    assert rows == ((table_id, "t", 1, "DUPLICATE"),)
    for alter in (
        "ADD COLUMN added DATE",
        "MODIFY COLUMN v VARCHAR(40)",
        "RENAME COLUMN added created",
        "DROP COLUMN created",
    ):
        run(connection, f"ALTER TABLE typed.t {alter}")
    run(connection, 'ALTER TABLE typed.t SET ("replication_num" = "1")')
    assert _index_schema(connection, "t")[0] == ((table_id, "t", 5, "DUPLICATE"),)
    connection.close()

    fresh_quire.restart()
    connection = fresh_quire.connect()
    assert _index_schema(connection, "t")[0] == ((table_id, "t", 5, "DUPLICATE"),)
    connection.close()
    shown = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(fresh_quire.query_port), "-u", "root", "-B"],
        input=f"SHOW PROC '/dbs/{db_id}/{table_id}/index_schema'",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "IndexId\tIndexName\tSchemaVersion\tKeysType",
        f"{table_id}\tt\t5\tDUPLICATE",
    ]
