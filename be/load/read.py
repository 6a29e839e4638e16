"""A load's body as batches of text columns: CSV through pyarrow's streaming reader (a block
at a time: a large body is never held whole), JSON lines through the json module a line at a
time. Rows with another number of fields than the load's columns, and JSON lines that are not
objects, are counted as filtered and skipped."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from be.load.errors import BadLoadRequest
from be.load.limits import LoadLimits

JSON_BATCH_ROWS = 65_536


class Counts:
    def __init__(self):
        self.malformed = 0  # rows skipped before conversion
        self.first_errors: list[str] = []


def csv_batches(
    body: io.RawIOBase,
    columns: list[str],
    separator: str,
    limits: LoadLimits,
    counts: Counts,
    skip_lines: int = 0,
) -> Iterator[pa.Table]:
    def malformed(row) -> str:
        counts.malformed += 1
        if len(counts.first_errors) < limits.max_error_rows:
            counts.first_errors.append(
                f"Reason: actual column number {row.actual_columns} is not equal to schema "
                f"column number {row.expected_columns}. src line: [{row.text}]"
            )
        return "skip"

    try:
        reader = pacsv.open_csv(
            io.BufferedReader(body, buffer_size=limits.read_block_bytes),
            read_options=pacsv.ReadOptions(
                column_names=columns,
                block_size=limits.read_block_bytes,
                skip_rows=skip_lines,
                use_threads=True,
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=separator,
                quote_char='"',
                double_quote=True,
                newlines_in_values=False,
                invalid_row_handler=malformed,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={name: pa.string() for name in columns},
                null_values=["\\N"],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )
    except StopIteration:
        return
    except pa.ArrowInvalid as error:
        if "Empty CSV file" in str(error):
            return
        raise BadLoadRequest(f"the CSV cannot be read: {error}") from None
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as error:
            raise BadLoadRequest(f"the CSV cannot be read: {error}") from None
        yield pa.Table.from_batches([batch])


def json_line_batches(
    body: io.RawIOBase, columns: list[str], limits: LoadLimits, counts: Counts
) -> Iterator[pa.Table]:
    stream = io.BufferedReader(body, buffer_size=limits.read_block_bytes)
    wanted = {name.lower(): name for name in columns}
    rows: list[dict] = []
    while True:
        line = stream.readline(limits.max_line_bytes + 1)
        if not line:
            break
        if len(line) > limits.max_line_bytes and not line.endswith(b"\n"):
            raise BadLoadRequest(f"a JSON line is longer than {limits.max_line_bytes} bytes")
        text = line.strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            counts.malformed += 1
            if len(counts.first_errors) < limits.max_error_rows:
                counts.first_errors.append(f"Reason: not a JSON object. src line: [{text[:200]!r}]")
            continue
        rows.append({wanted[k.lower()]: _text(v) for k, v in value.items() if k.lower() in wanted})
        if len(rows) >= JSON_BATCH_ROWS:
            yield _table(rows, columns)
            rows = []
    if rows:
        yield _table(rows, columns)


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, separators=(",", ":"))


def _table(rows: list[dict], columns: list[str]) -> pa.Table:
    return pa.Table.from_arrays(
        [pa.array([row.get(name) for row in rows], pa.string()) for name in columns],
        names=columns,
    )
