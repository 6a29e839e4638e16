"""Doris's SELECT ... INTO OUTFILE "s3://bucket/prefix" [FORMAT AS CSV | CSV_WITH_NAMES |
PARQUET] PROPERTIES ("s3.endpoint" = ..., "s3.access_key" = ..., "s3.secret_key" = ...,
["column_separator" = ","]): the query's rows written as one object `<prefix><id>_0.<ext>` of an
S3-compatible store (admins only, as the s3(...) table function: the FE reaches any endpoint
from its host), answered as Doris answers: FileNumber, TotalRows, FileSize, URL. A file on the
FE's host is refused (1235), as Doris refuses it unless told to allow it."""

from __future__ import annotations

import asyncio
import io
import secrets

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from be.storage.errors import ObjectStoreError
from fe.mysql.errors import QueryError
from fe.mysql.results import Result, column
from fe.sql import statements as st
from fe.statements import queries
from fe.statements.table_functions import column_separator, s3_place

EXTENSIONS = {"csv": "csv", "csv_with_names": "csv", "parquet": "parquet"}


async def run(session, statement: st.SelectIntoOutfile) -> Result:
    session.require_admin()  # it reaches any endpoint from the FE's host
    if not statement.target.startswith("s3://"):
        raise QueryError(1235, "This version of Quire doesn't yet support 'SELECT ... INTO OUTFILE' "
                         "to a file on the FE's host (s3://bucket/prefix is written)")  # fmt: skip
    properties = dict(statement.properties)
    prefix, options = s3_place(statement.target, properties, "OUTFILE")
    separator = column_separator(properties, "OUTFILE")
    answer = await queries.run_select(session, statement.query)
    rows = [tuple(row) for row in answer.rows]
    table = _table([column.name for column in answer.columns], rows)
    path = f"{prefix}{secrets.token_hex(8)}_"
    name = f"{path}0.{EXTENSIONS[statement.format]}"
    if statement.format == "parquet":
        data = _parquet(table)
    else:  # each value's text as the MySQL protocol gives it (the column's text encoding)
        data = _csv(table.column_names, answer.columns, rows, statement.format, separator)
    try:
        await asyncio.to_thread(_put, options, name, data)
    except (OSError, pa.ArrowException, ObjectStoreError) as error:
        raise QueryError(1105, f"OUTFILE cannot write s3://{name}: {error}") from None
    return Result(
        columns=_columns(),
        rows=[(1, table.num_rows, len(data), f"s3://{path}")],
    )


def _columns():
    return [
        column("FileNumber", "INT"),
        column("TotalRows", "BIGINT"),
        column("FileSize", "BIGINT"),
        column("URL", "VARCHAR"),
    ]


def _table(names: list[str], rows: list[tuple]) -> pa.Table:
    arrays = []
    for position in range(len(names)):
        values = [row[position] for row in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds: their text
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    unique = [f"{name}_{n}" if names.count(name) > 1 else name for n, name in enumerate(names)]
    return pa.Table.from_arrays(arrays, names=unique)


def _parquet(table: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _csv(names: list[str], columns, rows: list[tuple], kind: str, separator: str) -> bytes:
    texts = [
        pa.array(
            [None if row[at] is None else column.text(row[at]).decode() for row in rows],
            pa.string(),
        )
        for at, column in enumerate(columns)
    ]
    out = io.BytesIO()
    options = pacsv.WriteOptions(
        include_header=kind == "csv_with_names", delimiter=separator, quoting_style="needed"
    )
    pacsv.write_csv(pa.Table.from_arrays(texts, names=names), out, options)
    return out.getvalue()


def _put(options, name: str, data: bytes) -> None:
    filesystem = options.filesystem()
    with filesystem.open_output_stream(name) as stream:
        stream.write(data)
