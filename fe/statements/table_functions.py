"""Doris's table-valued functions read in FROM: `numbers("number" = "n")`, the numbers 0 to n - 1
as a column `number` (or n times `"const_value" = "v"`), as Doris's tests and data generators use
it (`INSERT INTO t SELECT number, ... FROM numbers("number" = "1000000")`); and `s3(...)`, the
Parquet, CSV or JSON objects of an S3-compatible store (`INSERT INTO t SELECT * FROM s3(...)`:
admins only, as it reaches any endpoint from the FE's host). Each reaches the engine as a table
the FE builds, as a long IN list does (in_lists)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatch

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq
from sqlglot import exp

from be.storage.errors import ObjectStoreError
from be.storage.objects import S3Options
from fe.mysql.errors import QueryError
from fe.statements import in_lists
from metadata.types import ColumnType

MAX_ROWS = [10_000_000]  # rows one numbers() gives at most: fe.conf's table_function_max_rows


def limit_rows(most: int) -> None:
    """fe.conf's table_function_max_rows, set as the FE starts."""
    assert most >= 0, most
    MAX_ROWS[0] = most


PROPERTIES = frozenset({"number", "const_value", "backend_num"})


def as_tables(expression: exp.Expression) -> tuple[tuple[str, pa.Table | ObjectFiles], ...]:
    """Each numbers(...) or s3(...) in a FROM made a table the engine is handed, in place; the
    tables by name (an s3(...) one as ObjectFiles, read when the query runs)."""
    made = []
    for table in list(expression.find_all(exp.Table)):
        function = table.this
        kind = function.name.lower() if isinstance(function, exp.Anonymous) else ""
        if kind == "numbers":
            made_table = _numbers(_properties(function, PROPERTIES, kind))
        elif kind == "s3":
            made_table = object_files(_properties(function, S3_PROPERTIES, kind))
        else:
            continue
        name = f"{in_lists.LIST_TABLE}_{kind}_{len(made)}"
        made.append((name, made_table))
        replacement = exp.to_table(name)
        replacement.meta[in_lists.LIST_TABLE] = True
        table.replace(replacement.as_(table.alias or kind))
    return tuple(made)


def _properties(function: exp.Anonymous, known: frozenset[str], kind: str) -> dict[str, str]:
    properties = {}
    for argument in function.expressions:
        if not (
            isinstance(argument, exp.EQ)
            and isinstance(argument.this, exp.Literal)
            and isinstance(argument.expression, exp.Literal)
        ):
            raise QueryError(1105, f'{kind} takes "name" = "value" properties')
        key = S3_ALIASES.get(argument.this.name.lower(), argument.this.name.lower())
        if key not in known:
            raise QueryError(1105, f"Unknown {kind} property: {argument.this.name}")
        properties[key] = argument.expression.name
    return properties


# -- s3(...): objects of an S3-compatible store ------------------------------------------------

S3_STORE_PROPERTIES = frozenset(  # where the store is and how to reach it
    {"s3.endpoint", "s3.region", "s3.access_key", "s3.secret_key", "use_path_style"}
)
S3_PROPERTIES = S3_STORE_PROPERTIES | {"uri", "format", "column_separator", "read_json_by_line"}
S3_ALIASES = {
    "aws_endpoint": "s3.endpoint",
    "aws_region": "s3.region",
    "aws_access_key": "s3.access_key",
    "aws_secret_key": "s3.secret_key",
}
S3_FORMATS = ("parquet", "csv", "json")
MAX_S3_FILES = 10_000


def object_files(properties: dict[str, str]) -> ObjectFiles:
    """Doris's s3("uri" = "s3://bucket/path[*]", "format" = "parquet" | "csv" | "json", "s3.endpoint"
    = ..., "s3.access_key" = ..., "s3.secret_key" = ...): checked, not read (no I/O at plan time).
    The keys are required: the FE's own credentials never read a user's objects."""
    path, options = s3_place(properties.get("uri", ""), properties, "s3")
    kind = properties.get("format", "").lower()
    if kind not in S3_FORMATS:
        raise QueryError(1105, f"s3's format must be one of {', '.join(S3_FORMATS)}")
    return ObjectFiles(path, kind, column_separator(properties, "s3"), options)


def s3_place(uri: str, properties: dict[str, str], what: str) -> tuple[str, S3Options]:
    """An s3://bucket/path and the store its properties name: (bucket/path, how to reach it).
    The keys are required: the FE's own credentials never reach a user's objects."""
    if not uri.startswith("s3://") or "/" not in uri[len("s3://") :]:
        raise QueryError(1105, f"{what}'s uri must be s3://bucket/path, not '{uri}'")
    properties = {S3_ALIASES.get(k.lower(), k.lower()): v for k, v in properties.items()}
    if not properties.get("s3.access_key") or not properties.get("s3.secret_key"):
        raise QueryError(1105, f"{what} needs its s3.access_key and s3.secret_key properties")
    options = S3Options(
        endpoint=properties.get("s3.endpoint", ""),
        region=properties.get("s3.region", ""),
        access_key=properties["s3.access_key"],
        secret_key=properties["s3.secret_key"],
    )
    return uri[len("s3://") :], options


def column_separator(properties: dict[str, str], what: str) -> str:
    separator = properties.get("column_separator", ",")
    if len(separator) != 1:
        raise QueryError(1105, f"{what}'s column_separator must be one character")
    return separator


class CsvColumns:
    """An s3(...) CSV's columns for typing its reads: c1, c2, ... each text (known without
    reading it), so that MySQL's conversions of text apply (`c3 * 2`)."""

    TEXT = ColumnType("STRING")

    def __contains__(self, name: str) -> bool:
        return re.fullmatch(r"c[1-9][0-9]*", name) is not None

    def get(self, name: str):
        return self.TEXT if name in self else None


def column_types(made: pa.Table | ObjectFiles) -> CsvColumns | None:
    """A table function's columns' types for typing its reads, where known before it is read:
    an s3(...) CSV's (all text)."""
    csv = isinstance(made, ObjectFiles) and made.format == "csv"
    return CsvColumns() if csv else None


@dataclass(frozen=True)
class ObjectFiles:
    """An s3(...) table: the objects a path (with * and ? in its last part) names, read as one
    table when its query runs (on the engine's worker: never on the event loop), at most
    max_bytes of them. A CSV's columns are c1, c2, ... of text, as Doris names them."""

    path: str  # bucket/key
    format: str
    separator: str
    options: S3Options = field(repr=False)

    def read(self, max_bytes: int, max_rows: int) -> pa.Table:
        try:
            filesystem = self.options.filesystem()
            files = self._files(filesystem)
            size = sum(info.size for info in files)
            if size > max_bytes:
                raise QueryError(
                    1105,
                    f"s3 would read {size} bytes; at most {max_bytes} (s3_table_function_max_bytes)",
                )
            tables = [self._read(filesystem, info.path) for info in files]
        except (OSError, pa.ArrowException, ObjectStoreError) as error:
            raise QueryError(1105, f"s3 cannot read s3://{self.path}: {error}") from None
        if not tables:
            raise QueryError(1105, f"s3 finds no object at s3://{self.path}")
        table = pa.concat_tables(tables, promote_options="permissive")
        if table.num_rows > max_rows:
            raise QueryError(
                1105, f"s3 read {table.num_rows} rows; at most {max_rows} (table_function_max_rows)"
            )
        return table

    def _files(self, filesystem) -> list:
        folder, _, name = self.path.rpartition("/")
        if not any(mark in name for mark in "*?["):
            info = filesystem.get_file_info(self.path)
            return [info] if info.type == pafs.FileType.File else []
        found = filesystem.get_file_info(pafs.FileSelector(folder, recursive=False))
        files = sorted(
            (
                info
                for info in found
                if info.type == pafs.FileType.File and fnmatch(info.base_name, name)
            ),
            key=lambda info: info.path,
        )
        if len(files) > MAX_S3_FILES:
            raise QueryError(1105, f"s3 names {len(files)} objects; at most {MAX_S3_FILES}")
        return files

    def _read(self, filesystem, path: str) -> pa.Table:
        if self.format == "parquet":
            return pq.read_table(path, filesystem=filesystem)
        with filesystem.open_input_stream(path) as stream:
            if self.format == "json":
                return pajson.read_json(stream)
            table = pacsv.read_csv(
                stream,
                read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                parse_options=pacsv.ParseOptions(delimiter=self.separator),
                convert_options=pacsv.ConvertOptions(strings_can_be_null=True),
            )
        return pa.table(
            [column.cast(pa.string()) for column in table.columns],
            names=[f"c{n}" for n in range(1, table.num_columns + 1)],
        )


def _numbers(properties: dict[str, str]) -> pa.Table:
    text = properties.get("number")
    if text is None:
        raise QueryError(1105, "numbers needs its number property")
    if not text.isdigit() or int(text) > MAX_ROWS[0]:
        raise QueryError(
            1105,
            f"numbers' number must be a whole number from 0 to {MAX_ROWS[0]} "
            f"(table_function_max_rows), not '{text}'",
        )
    count = int(text)
    constant = properties.get("const_value")
    if constant is None:
        return pa.table({"number": pa.array(np.arange(count, dtype=np.int64))})
    if not constant.lstrip("-").isdigit() or not -(1 << 63) <= int(constant) < 1 << 63:
        raise QueryError(1105, f"numbers' const_value must be a BIGINT, not '{constant}'")
    return pa.table({"number": pa.repeat(pa.scalar(int(constant), pa.int64()), count)})
