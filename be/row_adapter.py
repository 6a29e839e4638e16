"""Rows written at one schema version, read at another: each column of the reading schema is
found by its column id (by name in rows written before columns had ids, or when the reading
schema has none), cast to its type if a
MODIFY changed it, or filled with the column's backfill (its default when it was added) if it
was added after the rows were written; columns dropped since are left out. A dropped column added again has a new id, so its
old values stay gone."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from be.table_schema import ColumnSchema, TableSchema, column_id

_STRING_QUOTES = ("'", '"')


def adapted(
    rows: pa.Table, schema: TableSchema, hidden: Sequence[pa.Field] = (), stored: bool = False
) -> pa.Table:
    """rows as the hidden fields (kept by name) then schema's columns; with stored, each field
    carries its column id (what a flush writes), else plain fields (what a snapshot answers).
    How rows of one layout become schema's is worked out once (a commit's rows come the same
    way every time)."""
    hidden = tuple(hidden)
    key = (id(schema), hidden, stored)
    kept = _PLANS.get(key)
    if kept is None or kept[0] is not schema or not rows.schema.equals(kept[1], True):
        kept = (schema, rows.schema, *_plan(rows.schema, schema, hidden, stored))
        if len(_PLANS) >= MAX_KEPT_PLANS:
            _PLANS.clear()
        _PLANS[key] = kept
    _, _, picked, result = kept
    if picked is _MAPPED:
        rows = _mapped(rows, schema, schema.after(hidden, stored=True), len(hidden))
    elif picked is not None:
        rows = pa.Table.from_arrays([rows.column(index) for index in picked], schema=result)
    elif result is not None:
        rows = pa.Table.from_arrays(rows.columns, schema=result)
    if stored or picked is not _MAPPED:
        return rows
    return pa.Table.from_arrays(rows.columns, schema=schema.after(hidden, stored=False))


MAX_KEPT_PLANS = 4096  # (schema, hidden fields) pairs whose plan is kept; past it all go
_PLANS: dict[tuple, tuple] = {}
_MAPPED = object()  # a plan that maps and casts columns (rows of another schema version)


def _plan(written: pa.Schema, schema: TableSchema, hidden: tuple, stored: bool) -> tuple:
    """How rows of the written layout become schema's: (None, None) as they are; (None, result)
    their columns as they are under result's fields; (indexes, result) the columns at indexes;
    (_MAPPED, None) by _mapped."""
    target = schema.after(hidden, stored=True)
    result = target if stored else schema.after(hidden, stored=False)
    if written.equals(target, check_metadata=True):
        return None, None if stored else result
    if _written_as(written, target):
        return None, result
    picked = _picked(written, target)
    return (_MAPPED, None) if picked is None else (picked, result)


def _picked(written: pa.Schema, target: pa.Schema) -> list[int] | None:
    """The indexes of target's columns taken by name, if rows hold each as it is, its column id
    included (the rows of this schema version with other hidden columns besides: a commit's,
    on a CN)."""
    names = written.names
    if len(names) <= len(target) or not set(target.names).issubset(names):
        return None
    picked = [names.index(name) for name in target.names]
    fields = pa.schema([written.field(index) for index in picked])
    return picked if fields.equals(target, check_metadata=True) else None


def _written_as(written: pa.Schema, target: pa.Schema) -> bool:
    """Whether rows of the written schema are target's columns as they are: the same fields in
    the same order, none carrying a column id (what a statement's rows are before the TN stores
    them)."""
    return written.equals(target, check_metadata=False) and not any(
        field.metadata for field in written
    )


def _mapped(rows: pa.Table, schema: TableSchema, target: pa.Schema, hidden: int) -> pa.Table:
    by_id, by_name, without_id = {}, {}, {}
    for index, field in enumerate(rows.schema):
        found = column_id(field)
        by_name[field.name] = index
        if found:
            by_id[found] = index
        else:
            without_id[field.name] = index
    arrays = []
    for field in list(target)[:hidden]:
        arrays.append(_cast(rows.column(field.name), field.type))
    for field, column in zip(list(target)[hidden:], schema.columns, strict=True):
        if column.id:  # rows written before columns had ids hold it under its name
            index = by_id.get(column.id, without_id.get(column.name))
        else:  # a schema built without the catalog's ids: by name
            index = by_name.get(column.name)
        if index is None:
            arrays.append(backfill_values(column, rows.num_rows))
        else:
            arrays.append(_cast(rows.column(index), field.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _cast(column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.ChunkedArray:
    if column.type == arrow_type:
        return column
    try:
        return column.cast(arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a narrowing MODIFY: as MySQL, cut
        return column.cast(arrow_type, safe=False)


def backfill_values(column: ColumnSchema, count: int) -> pa.Array:
    """count copies of the column's backfill: NULL if it has none (or not a constant, such as
    CURRENT_TIMESTAMP), or, for a NOT NULL column, the type's implicit default as MySQL's (0,
    '', the epoch)."""
    value = backfill_value(column)
    if value is None and not column.nullable:
        value = _implicit_default(column.type)
    if value is None:
        return pa.nulls(count, column.type)
    return pa.repeat(value, count)


def _implicit_default(arrow_type: pa.DataType) -> pa.Scalar | None:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pa.scalar("", arrow_type)
    if pa.types.is_boolean(arrow_type):
        return pa.scalar(False)
    try:
        return pa.scalar("0" if pa.types.is_decimal(arrow_type) else 0).cast(arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    if pa.types.is_date(arrow_type):
        return pa.scalar("1970-01-01").cast(arrow_type)
    return None


def backfill_value(column: ColumnSchema) -> pa.Scalar | None:
    text = column.backfill
    if text is None or text.upper() == "NULL":
        return None
    if len(text) >= 2 and text[0] in _STRING_QUOTES and text[-1] == text[0]:
        text = text[1:-1].replace(text[0] * 2, text[0])
    elif not _constant(text):
        return None
    try:
        return pa.scalar(text).cast(column.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _constant(text: str) -> bool:
    """Whether an unquoted default is a number (not a function such as CURRENT_TIMESTAMP)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
