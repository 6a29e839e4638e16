"""An engine's Arrow answer as the Python rows its own fetch would give: what a query run
elsewhere (on a CN) answers with, turned into the rows the FE encodes for MySQL."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable

import pyarrow as pa

from be.engine.errors import MemoryLimitExceeded
from be.engine.executor import Answer, estimated_bytes

NANOSECONDS_PER_MICROSECOND = 1000
DAYS_PER_MONTH = 30  # DuckDB's own, turning an INTERVAL into a timedelta


def _integer(value):
    return None if value is None else int(value)


def _interval(value):
    if value is None:
        return None
    return datetime.timedelta(
        days=value.months * DAYS_PER_MONTH + value.days,
        microseconds=value.nanoseconds // NANOSECONDS_PER_MICROSECOND,
    )


def _uuid(value):
    return None if value is None else uuid.UUID(str(value))


# What Arrow makes of a DuckDB type that DuckDB's fetch gives as another Python type.
CONVERSIONS = {"HUGEINT": _integer, "UHUGEINT": _integer, "INTERVAL": _interval, "UUID": _uuid}


def answer_of(
    columns: list[tuple[str, str]], tables: Iterable[pa.Table], memory_limit_bytes: int
) -> Answer:
    """The rows of tables, in order; MemoryLimitExceeded once they would take more than
    memory_limit_bytes as Python objects (as the engine counts its own answer's rows)."""
    conversions = [CONVERSIONS.get(type_name) for _, type_name in columns]
    rows: list[tuple] = []
    held = 0
    for table in tables:
        assert table.num_columns == len(columns), "a result part has the result's columns"
        values = []
        for convert, chunked in zip(conversions, table.columns, strict=True):
            listed = chunked.to_pylist()
            values.append(listed if convert is None else [convert(value) for value in listed])
        part = list(zip(*values, strict=True)) if values else [()] * table.num_rows
        held += estimated_bytes(part)
        if held > memory_limit_bytes:
            raise MemoryLimitExceeded(memory_limit_bytes)
        rows += part
    return Answer(columns, rows)
