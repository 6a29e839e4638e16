"""Spark's pushed filters as per-column ranges, and the blocks whose min/max may hold a row within
them (be/storage/blocks.prune). A range only narrows what is read: Spark still applies every
filter to the rows, so a block kept by mistake costs time, never a wrong answer."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from be.storage.blocks import ObjectMeta, prune
from be.storage.errors import StorageError
from be.table_schema import TableSchema

logger = logging.getLogger(__name__)

Ranges = dict[str, tuple[object, object]]  # column -> (low, high), inclusive, None: open


def ranges_of(filters: Iterable[Filter], schema: TableSchema, prunable: set[str]) -> Ranges:
    """The ranges the filters (ANDed) put on the table's columns named in prunable."""
    names = {column.name.lower(): column.name for column in schema.columns}
    ranges: Ranges = {}
    for item in filters:
        attribute = getattr(item, "attribute", ())
        if len(attribute) != 1 or attribute[0].lower() not in names:
            continue
        name = names[attribute[0].lower()]
        if name not in prunable:
            continue
        bounds = _bounds(item)
        if bounds is not None:
            ranges[name] = _narrowed(ranges.get(name, (None, None)), bounds)
    return ranges


def _bounds(item: Filter) -> tuple[object, object] | None:
    match item:
        case EqualTo(_, value) | EqualNullSafe(_, value) if value is not None:
            return value, value
        case GreaterThan(_, value) | GreaterThanOrEqual(_, value) if value is not None:
            return value, None
        case LessThan(_, value) | LessThanOrEqual(_, value) if value is not None:
            return None, value
        case In(_, values) if values and None not in values:
            try:
                return min(values), max(values)
            except TypeError:
                return None
    return None


def _narrowed(old: tuple[object, object], new: tuple[object, object]) -> tuple[object, object]:
    try:
        low = new[0] if old[0] is None else old[0] if new[0] is None else max(old[0], new[0])
        high = new[1] if old[1] is None else old[1] if new[1] is None else min(old[1], new[1])
    except TypeError:
        return old
    return low, high


def chosen_blocks(meta: ObjectMeta, ranges: Ranges, schema_version: int) -> list[int]:
    """The blocks of an object that may hold rows within the ranges (all of them when the object
    was written at another schema version: its columns may be others by these names)."""
    every = list(range(len(meta.blocks)))
    usable = {name: bounds for name, bounds in ranges.items() if name in meta.column_names}
    if not usable or meta.schema_version != schema_version:
        return every
    try:
        return prune(meta, usable)
    except StorageError as error:  # a value of another type than the column's statistics
        logger.debug("no pruning of %s: %s", meta.name, error)
        return every
