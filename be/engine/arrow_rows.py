"""An engine's Arrow answer as the Python rows its own fetch would give: what a query run
elsewhere (on a CN) answers with, turned into the rows the FE encodes for MySQL."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from be.engine.columnar_rows import (
    CONVERSIONS,
    ArrowRows,
    answers_in_arrow,
    estimated_arrow_bytes,
)
from be.engine.errors import MemoryLimitExceeded
from be.engine.executor import COLUMNAR_HEAD_ROWS, Answer, estimated_bytes


def answer_of(
    columns: list[tuple[str, str]],
    tables: Iterable[pa.Table],
    memory_limit_bytes: int,
    columnar: bool = False,
) -> Answer:
    """The rows of tables, in order; MemoryLimitExceeded once they would take more than
    memory_limit_bytes as Python objects (as the engine counts its own answer's rows);
    columnar: a big answer's rows stay Arrow (ArrowRows) when they read alike from it."""
    tables = list(tables)
    if columnar and answers_in_arrow(columns):
        held = _arrow_rows(columns, tables)
        if held is not None:
            if estimated_arrow_bytes(held.table) > memory_limit_bytes:
                raise MemoryLimitExceeded(memory_limit_bytes)
            return Answer(columns, held)
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


def _arrow_rows(columns: list[tuple[str, str]], tables: list[pa.Table]) -> ArrowRows | None:
    """The tables' rows as ArrowRows, if they are many enough to be worth it and alike."""
    if sum(table.num_rows for table in tables) < COLUMNAR_HEAD_ROWS:
        return None
    if any(not table.schema.equals(tables[0].schema) for table in tables):
        return None
    return ArrowRows(pa.concat_tables(tables), columns)
