"""A load's body as batches of text columns: CSV through pyarrow's streaming reader (a block
at a time: a large body is never held whole), JSON lines through the json module a line at a
time (or a body of one JSON value, read whole). Rows with another number of fields than the
load's columns, and JSON values that are not objects, are counted as filtered and skipped."""

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


DOCUMENT = "__quire_json"  # with jsonpaths: the column of each object's JSON text


def json_batches(
    body: io.RawIOBase,
    columns: list[str],
    limits: LoadLimits,
    counts: Counts,
    by_line: bool,
    strip_outer_array: bool,
    by_paths: bool = False,
) -> Iterator[pa.Table]:
    """Doris's JSON: a value a line (by_line), else one value for the whole body (at most
    max_json_bytes, read whole); a value is an object, or with strip_outer_array an array of
    objects, each a row. by_paths: a row is its object's JSON text (the DOCUMENT column), for the
    load's jsonpaths to read; else each of columns is its object's member of that name."""
    wanted = {name.lower(): name for name in columns}
    names = [DOCUMENT] if by_paths else columns
    rows: list[dict] = []
    values = _json_lines(body, limits) if by_line else _json_document(body, limits)
    for text, value in values:
        for item in _objects(text, value, strip_outer_array, by_line, limits, counts):
            if by_paths:
                rows.append({DOCUMENT: json.dumps(item, separators=(",", ":"))})
            else:
                rows.append(
                    {wanted[k.lower()]: _text(v) for k, v in item.items() if k.lower() in wanted}
                )
            if len(rows) >= JSON_BATCH_ROWS:
                yield _table(rows, names)
                rows = []
    if rows:
        yield _table(rows, names)


def _json_lines(body: io.RawIOBase, limits: LoadLimits):
    stream = io.BufferedReader(body, buffer_size=limits.read_block_bytes)
    while True:
        line = stream.readline(limits.max_line_bytes + 1)
        if not line:
            return
        if len(line) > limits.max_line_bytes and not line.endswith(b"\n"):
            raise BadLoadRequest(f"a JSON line is longer than {limits.max_line_bytes} bytes")
        text = line.strip()
        if text:
            yield text, _parsed(text)


def _json_document(body: io.RawIOBase, limits: LoadLimits):
    stream = io.BufferedReader(body, buffer_size=limits.read_block_bytes)
    text = stream.read(limits.max_json_bytes + 1)
    if len(text) > limits.max_json_bytes:
        raise BadLoadRequest(
            f"the JSON body is larger than {limits.max_json_bytes >> 20} MB "
            "(streaming_load_json_max_mb): split it, or send a value a line with "
            "read_json_by_line: true"
        )
    text = text.strip()
    if text:
        yield text, _parsed(text)


NOT_JSON = object()


def _parsed(text: bytes):
    try:
        return json.loads(text)
    except ValueError:
        return NOT_JSON


def _objects(
    text: bytes, value, strip_outer_array: bool, by_line: bool, limits: LoadLimits, counts: Counts
):
    """The rows' objects of one JSON value; what is none is counted as filtered (a body that is
    one array without strip_outer_array fails the load)."""
    if isinstance(value, list) and strip_outer_array:
        for item in value:
            if isinstance(item, dict):
                yield item
            else:
                _malformed(counts, limits, "an array's element is not a JSON object", item)
        return
    if isinstance(value, dict):
        yield value
        return
    if isinstance(value, list):
        if not by_line:
            raise BadLoadRequest("JSON data is an array of objects: strip_outer_array must be true")
        _malformed(counts, limits, "an array of objects: strip_outer_array must be true", value)
    elif value is NOT_JSON:
        why = "not JSON" if by_line else "not one JSON value (a value a line: read_json_by_line)"
        _malformed(counts, limits, why, text)
    else:
        _malformed(counts, limits, "not a JSON object", value)


def _malformed(counts: Counts, limits: LoadLimits, why: str, what) -> None:
    counts.malformed += 1
    if len(counts.first_errors) < limits.max_error_rows:
        counts.first_errors.append(f"Reason: {why}. src line: [{str(what)[:200]!r}]")


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
