"""Text values (as CSV and JSON lines give them) into the table's types, strictly by default: a
value that does not convert exactly (a number out of range, a decimal with more digits than its
scale, a malformed date, an empty string for a number), a text longer than its CHAR(n) or
VARCHAR(n), or a NULL in a NOT NULL column makes its row filtered, as Doris's strict mode and
MySQL's strict SQL mode do. Not strict (strict_mode: false), a value that does not convert is
NULL instead, and only the row's NULL in a NOT NULL column filters it."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from be.row_adapter import backfill_values
from be.table_schema import TableSchema

_CAST_FAILURES = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def typed(
    source: pa.Table,
    schema: TableSchema,
    lengths: dict[str, int] | None = None,
    strict: bool = True,
    json_columns: frozenset[str] = frozenset(),
    defaults: dict[str, str] | None = None,
) -> tuple[pa.Table, pa.Array]:
    """source's columns (text, by the table's column names; a column it lacks takes its default:
    defaults' text, else its backfill) as the table's columns, and per row whether it is bad (to
    be filtered). lengths: the most characters of each CHAR and VARCHAR column; json_columns:
    those that hold JSON text only (kept compact, as Doris's JSONB)."""
    count = source.num_rows
    bad = _falses(count)
    columns = []
    for column in schema.columns:
        if column.name in source.schema.names:
            values, failed = converted(source.column(column.name).combine_chunks(), column.type)
            if column.name in json_columns:
                values, failed = _json_texts(values)
            longest = (lengths or {}).get(column.name)
            if longest is not None and pa.types.is_string(values.type):
                bad = pc.or_(bad, pc.fill_null(pc.greater(pc.utf8_length(values), longest), False))
            if strict:
                bad = pc.or_(bad, failed)
        elif defaults and column.name in defaults:
            text = pa.repeat(pa.scalar(defaults[column.name], pa.string()), count)
            values, failed = converted(text, column.type)
            bad = pc.or_(bad, failed)
        else:
            values = backfill_values(column, count)
        if not column.nullable and values.null_count:
            bad = pc.or_(bad, pc.is_null(values))
        columns.append(values)
    return pa.Table.from_arrays(columns, schema=schema.arrow()), bad


def converted(values: pa.Array, arrow_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    if values.type == arrow_type:
        return values, _falses(len(values))
    try:
        return pc.cast(values, arrow_type, safe=True), _falses(len(values))
    except _CAST_FAILURES:
        pass
    if pa.types.is_nested(arrow_type) and pa.types.is_string(values.type):
        return _nested(values, arrow_type)
    converted, failed = [], []
    for value in values.to_pylist():  # one bad value: find which, one by one
        if value is None:
            converted.append(None)
            failed.append(False)
            continue
        try:
            converted.append(pc.cast(pa.array([value], values.type), arrow_type)[0].as_py())
            failed.append(False)
        except _CAST_FAILURES:
            converted.append(None)
            failed.append(True)
    return pa.array(converted, arrow_type), pa.array(failed)


def _nested(texts: pa.Array, arrow_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """ARRAY, MAP and STRUCT values written as Doris shows them (JSON: `[1, 2]`, `{"k": 1}`),
    each converted strictly to the column's type (a value that does not fit is a failure)."""
    converted, failed = [], []
    is_map = pa.types.is_map(arrow_type)
    for text in texts.to_pylist():
        value = None
        if text is not None:
            try:
                value = json.loads(text)
                if is_map:
                    value = list(value.items())
                pa.array([value], arrow_type)  # raises if a part does not fit
            except (ValueError, AttributeError, TypeError, RecursionError, *_CAST_FAILURES):
                value = None
        converted.append(value)
        failed.append(text is not None and value is None)
    return pa.array(converted, arrow_type), pa.array(failed, pa.bool_())


def _json_texts(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """JSON text made compact; a text that is no JSON is NULL and a failure."""
    kept, failed = [], []
    for text in texts.to_pylist():
        value = None
        if text is not None:
            try:
                value = compact_json(text)
            except (ValueError, RecursionError):
                value = None
        kept.append(value)
        failed.append(text is not None and value is None)
    return pa.array(kept, pa.string()), pa.array(failed, pa.bool_())


def compact_json(text: str) -> str:
    """JSON text as Doris's JSONB gives it back (no spaces); ValueError (or RecursionError) for
    text that is no JSON, NaN and Infinity included."""
    return json.dumps(json.loads(text, parse_constant=_no_constant), separators=(",", ":"),
                      ensure_ascii=False)  # fmt: skip


def _no_constant(name: str):
    raise ValueError(f"{name} is no JSON value")


def _falses(count: int) -> pa.Array:
    return pa.array(np.zeros(count, np.bool_))
