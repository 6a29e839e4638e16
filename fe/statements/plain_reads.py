"""`SELECT column, ... FROM t [WHERE <bounds on integer columns>]`: the rows within the bounds are
the answer, so Arrow gives it from the table's snapshot and the query engine is not started (a
point or range read, as sysbench sends them; the rows a DELETE names). Anything more (an
expression, an alias, ORDER BY, DISTINCT, LIMIT, another kind of WHERE term) goes to the engine."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from be.cn.bounds import ColumnBound, within
from be.engine import Answer

MAX_ROWS = 10_000  # a bigger answer goes to the engine, which holds it to the memory limit
PLAIN_PARTS = frozenset(("expressions", "from_", "where"))
ENGINE_TYPES = {  # the engine's name of each Arrow type, as it describes its answers
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "VARCHAR",
    pa.date32(): "DATE",
    pa.timestamp("us"): "TIMESTAMP",
}


def plain_columns(select: exp.Expression, table_node: exp.Table) -> list[str] | None:
    """The columns a plain read of table_node gives, in order; None if select is no plain read."""
    if not isinstance(select, exp.Select):
        return None
    if any(value for part, value in select.args.items() if part not in PLAIN_PARTS):
        return None
    names = {table_node.alias_or_name, table_node.name}
    columns = []
    for projection in select.expressions:
        if not isinstance(projection, exp.Column) or not isinstance(
            projection.this, exp.Identifier
        ):
            return None
        if projection.table and projection.table not in names:
            return None
        columns.append(projection.name)
    return columns


def answer(rows: pa.Table, columns: list[str], bounds: tuple[ColumnBound, ...]) -> Answer | None:
    """The answer of a plain read of rows (a snapshot that may hold rows outside bounds); None if
    a column or a bound is not plainly one of rows' (the engine answers then)."""
    for bound in bounds:
        if bound.column not in rows.column_names:
            return None
        if not pa.types.is_integer(rows.schema.field(bound.column).type):
            return None
    described = []
    for name in columns:
        if name not in rows.column_names:
            return None
        field = rows.schema.field(name)
        engine_type = _engine_type(field.type)
        if engine_type is None:
            return None
        described.append((name, engine_type))
    rows = within(rows, bounds) if bounds else rows
    if rows.num_rows > MAX_ROWS:
        return None
    values = [rows.column(name).to_pylist() for name in columns]
    return Answer(described, list(zip(*values, strict=True)))


def _engine_type(arrow: pa.DataType) -> str | None:
    if pa.types.is_decimal128(arrow):
        return f"DECIMAL({arrow.precision},{arrow.scale})"
    return ENGINE_TYPES.get(arrow)
