"""Doris's SELECT ... INTO OUTFILE "s3://bucket/prefix" [FORMAT AS CSV | CSV_WITH_NAMES |
PARQUET] PROPERTIES ("s3.endpoint" = ..., "s3.access_key" = ..., "s3.secret_key" = ...,
["column_separator" = ","]): the query's rows written as one object `<prefix><id>_0.<ext>` of an
S3-compatible store (admins only, as the s3(...) table function: the FE reaches any endpoint
from its host), answered as Doris answers: FileNumber, TotalRows, FileSize, URL. A file on the
FE's host is refused (1235), as Doris refuses it unless told to allow it."""

from __future__ import annotations

import asyncio
import io
import itertools
import re
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
MIN_FILE_BYTES, MAX_FILE_BYTES = 5 << 20, 2 << 30  # Doris's bounds of max_file_size
DEFAULT_FILE_BYTES = 1 << 30


async def run(session, statement: st.SelectIntoOutfile) -> Result:
    session.require_admin()  # it reaches any endpoint from the FE's host
    if not statement.target.startswith("s3://"):
        raise QueryError(1235, "This version of Quire doesn't yet support 'SELECT ... INTO OUTFILE' "
                         "to a file on the FE's host (s3://bucket/prefix is written)")  # fmt: skip
    properties = dict(statement.properties)
    prefix, options = s3_place(statement.target, properties, "OUTFILE")
    separator = column_separator(properties, "OUTFILE")
    most = _max_file_size(properties.get("max_file_size"))
    answer = await queries.run_select(session, statement.query)
    rows = [tuple(row) for row in answer.rows]
    table = _table([column.name for column in answer.columns], rows)

    def written(start: int, end: int) -> bytes:
        if statement.format == "parquet":
            return _parquet(table.slice(start, end - start))
        # each value's text as the MySQL protocol gives it (the column's text encoding)
        return _csv(
            table.column_names, answer.columns, rows[start:end], statement.format, separator
        )

    files = _files(written, len(rows), most)
    path = f"{prefix}{secrets.token_hex(8)}_"
    extension = EXTENSIONS[statement.format]
    for number, data in enumerate(files):
        name = f"{path}{number}.{extension}"
        try:
            await asyncio.to_thread(_put, options, name, data)
        except (OSError, pa.ArrowException, ObjectStoreError) as error:
            raise QueryError(1105, f"OUTFILE cannot write s3://{name}: {error}") from None
    size = sum(len(data) for data in files)
    return Result(columns=_columns(), rows=[(len(files), table.num_rows, size, f"s3://{path}")])


def _max_file_size(text: str | None) -> int:
    """Doris's max_file_size ("5MB", "1GB", a count of bytes): 5MB to 2GB, 1GB by default."""
    if text is None:
        return DEFAULT_FILE_BYTES
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?b?)?\s*", text, re.IGNORECASE)
    if found is None:
        raise QueryError(1105, f"invalid max_file_size: {text}")
    unit = (found.group(2) or "").upper().rstrip("B")
    size = (
        int(float(found.group(1)) * 1024 ** "KMGT".find(unit) * 1024)
        if unit
        else int(float(found.group(1)))
    )
    if not MIN_FILE_BYTES <= size <= MAX_FILE_BYTES:
        raise QueryError(1105, f"max file size should between 5MB and 2GB. Given: {size}")
    return size


def _files(written, row_count: int, most: int) -> list[bytes]:
    """The rows written as files of at most `most` bytes each (a file of one row may be larger):
    the whole, or as many even parts of its rows as its size asks, each split again if it
    still does not fit."""
    data = written(0, row_count)
    if len(data) <= most or row_count <= 1:
        return [data]
    parts = min(row_count, -(-len(data) // most))
    bounds = [row_count * part // parts for part in range(parts + 1)]
    files = []
    for start, end in itertools.pairwise(bounds):
        part = lambda first, last, start=start: written(start + first, start + last)  # noqa: E731
        files += _files(part, end - start, most)
    return files


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
