"""Bounds a read puts on integer columns (`id = 5`, `id BETWEEN 5 AND 104`): a snapshot leaves
out the rows outside them, so a point or range query hands its engine a few rows instead of the
table. Only a narrowing: the query still applies its whole WHERE to what it gets."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

MAX_BOUNDS = 16  # per table and read; past them the rest are not used
FEW_ROWS = 16  # rows checked against bounds in Python, not by Arrow


@dataclass(frozen=True, slots=True)
class ColumnBound:
    column: str
    low: int | None = None  # inclusive; None: unbounded
    high: int | None = None  # inclusive

    def __post_init__(self):
        assert self.low is not None or self.high is not None
        for limit in (self.low, self.high):
            assert limit is None or -(1 << 63) <= limit < (1 << 63), limit


def within(rows: pa.Table, bounds: tuple[ColumnBound, ...]) -> pa.Table:
    """rows whose bounded columns are within every bound (NULL is within none)."""
    if rows.num_rows <= FEW_ROWS:  # a point read's row or few: Arrow's calls cost more
        kept = _inside_few(rows, bounds)
        if kept is None or all(kept):
            return rows
        return rows.filter(pa.array(kept, pa.bool_()))
    keep = inside(rows, bounds)
    return rows if keep is None else rows.filter(keep)


def _inside_few(rows: pa.Table, bounds: tuple[ColumnBound, ...]) -> list[bool] | None:
    """inside(), worked out in Python."""
    keep = None
    for bound in _applying(rows, bounds):
        low, high = bound.low, bound.high
        test = [
            value is not None and (low is None or value >= low) and (high is None or value <= high)
            for value in rows.column(bound.column).to_pylist()
        ]
        keep = test if keep is None else [a and b for a, b in zip(keep, test, strict=True)]
    return keep


def _applying(rows: pa.Table, bounds: tuple[ColumnBound, ...]) -> list[ColumnBound]:
    """The bounds on integer columns rows have (the others narrow nothing here)."""
    names = rows.schema.names
    return [
        bound
        for bound in bounds[:MAX_BOUNDS]
        if bound.column in names and pa.types.is_integer(rows.schema.field(bound.column).type)
    ]


def inside(rows: pa.Table, bounds: tuple[ColumnBound, ...]) -> pa.ChunkedArray | None:
    """Per row, whether it is within every bound; None when no bound applies to rows."""
    keep = None
    for bound in _applying(rows, bounds):
        values = rows.column(bound.column)
        if bound.low is not None and bound.low == bound.high:
            test = pc.equal(values, bound.low)
        else:
            test = None
            if bound.low is not None:
                test = pc.greater_equal(values, bound.low)
            if bound.high is not None:
                upper = pc.less_equal(values, bound.high)
                test = upper if test is None else pc.and_(test, upper)
        keep = test if keep is None else pc.and_(keep, test)
    return None if keep is None else pc.fill_null(keep, False)
