"""The pushed filters a read applies to its rows itself, exactly as Spark would, so that Spark does
not evaluate them again: comparisons, IN and IS [NOT] NULL on the integer, boolean, date and
string columns it reads. Every other filter (on floating point values, with NaN's ordering;
decimals; datetimes; LARGEINT read as text; NOT, string matching) is left to Spark.

A NULL value never satisfies a comparison or IN (Spark's three-valued logic drops the row);
EqualNullSafe with a value is an equality that a NULL fails."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)

MAX_IN_VALUES = 4096  # a longer IN list is left to Spark

_COMPARED = {
    EqualTo: pc.equal,
    EqualNullSafe: pc.equal,
    GreaterThan: pc.greater,
    GreaterThanOrEqual: pc.greater_equal,
    LessThan: pc.less,
    LessThanOrEqual: pc.less_equal,
}


def split(filters: Iterable[Filter], read: pa.Schema) -> tuple[list[Filter], list[Filter]]:
    """(the filters applied here, those left to Spark) among filters on the columns of read (the
    Arrow schema the rows are read in)."""
    types = {field.name.lower(): field.type for field in read}
    applied, left = [], []
    for item in filters:
        attribute = getattr(item, "attribute", ())
        kind = types.get(attribute[0].lower()) if len(attribute) == 1 else None
        (applied if kind is not None and _exact(item, kind) else left).append(item)
    return applied, left


def kept(rows: pa.Table, filters: Sequence[Filter]) -> pa.Table:
    """The rows that satisfy every filter (each one split() applied)."""
    if not filters or not rows.num_rows:
        return rows
    names = {name.lower(): name for name in rows.schema.names}
    mask = None
    for item in filters:
        column = rows.column(names[item.attribute[0].lower()])
        test = _test(item, column)
        mask = test if mask is None else pc.and_kleene(mask, test)
    return rows.filter(mask, null_selection_behavior="drop")


def _test(item: Filter, column: pa.ChunkedArray) -> pa.ChunkedArray:
    match item:
        case IsNull():
            return pc.is_null(column)
        case IsNotNull():
            return pc.is_valid(column)
        case In(_, values):
            wanted = pa.array([value for value in values if value is not None], column.type)
            return pc.and_kleene(pc.is_in(column, value_set=wanted), pc.is_valid(column))
    return _COMPARED[type(item)](column, pa.scalar(item.value, column.type))


def _exact(item: Filter, kind: pa.DataType) -> bool:
    if type(item) in (IsNull, IsNotNull):
        return True
    if type(item) is In:
        values = [value for value in item.value if value is not None]
        return 0 < len(item.value) <= MAX_IN_VALUES and all(_fits(v, kind) for v in values)
    if type(item) in _COMPARED:
        return item.value is not None and _fits(item.value, kind)
    return False


def _fits(value: object, kind: pa.DataType) -> bool:
    """Whether value is of the column's own kind, so that Arrow compares them as Spark does."""
    if pa.types.is_integer(kind):
        return type(value) is int and _within(value, kind)
    if pa.types.is_boolean(kind):
        return type(value) is bool
    if pa.types.is_date(kind):
        return type(value) is datetime.date
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return type(value) is str
    return False


def _within(value: int, kind: pa.DataType) -> bool:
    bits = kind.bit_width
    if pa.types.is_signed_integer(kind):
        return -(1 << (bits - 1)) <= value < 1 << (bits - 1)
    return 0 <= value < 1 << bits
