"""`SELECT column, ... FROM t [WHERE <bounds on integer columns>]`: the rows within the bounds are
the answer, so Arrow gives it from the table's snapshot and the query engine is not started (a
point or range read, as sysbench sends them; the rows a DELETE names). Anything more (an
expression, an alias, ORDER BY, DISTINCT, LIMIT, another kind of WHERE term) goes to the engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from be.cn.bounds import MAX_BOUNDS, ColumnBound, within
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


@dataclass(frozen=True, slots=True)
class PreparedRead:
    """A prepared plain read whose bounds are its parameters (`SELECT c FROM t WHERE id = ?`,
    `... WHERE id BETWEEN ? AND ?`): run without binding its values into a tree."""

    db: str  # "" for the session's database
    table: str
    columns: tuple[str, ...]
    terms: tuple[tuple[str, int, int], ...]  # column, parameter giving its low, its high bound

    def bounds(self, values: list) -> tuple[ColumnBound, ...] | None:
        """The bounds the values give; None if one is not an integer (the engine answers)."""
        bounds = []
        for column, low, high in self.terms:
            low_value, high_value = values[low], values[high]
            if type(low_value) is not int or type(high_value) is not int:
                return None
            if low_value not in INT64 or high_value not in INT64:
                return None
            bounds.append(ColumnBound(column, low_value, high_value))
        return tuple(bounds)


INT64 = range(-(1 << 63), 1 << 63)


def prepared_read(template: exp.Expression, parameter: Callable) -> PreparedRead | None:
    """template as a PreparedRead, if it is one; parameter(node) is the number of the parameter
    a node is, else -1."""
    if not isinstance(template, exp.Select) or template.args.get("joins"):
        return None
    source = template.args.get("from_")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        return None
    if table.catalog or table.args.get("version") or table.alias:
        return None
    columns = plain_columns(template, table)
    where = template.args.get("where")
    if not columns or where is None:
        return None
    terms = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    read_terms = [_parameter_term(term, table.name, parameter) for term in terms]
    if not read_terms or None in read_terms or len(read_terms) > MAX_BOUNDS:
        return None
    return PreparedRead(table.db, table.name, tuple(columns), tuple(read_terms))


def _parameter_term(term: exp.Expression, table: str, parameter: Callable):
    def column_name(node: exp.Expression) -> str | None:
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return None
        return node.name if node.table in ("", table) else None

    if isinstance(term, exp.Between):
        column = column_name(term.this)
        low, high = parameter(term.args.get("low")), parameter(term.args.get("high"))
        if column is None or low < 0 or high < 0:
            return None
        return column, low, high
    if isinstance(term, exp.EQ):
        column, value = column_name(term.this), parameter(term.expression)
        if column is None or value < 0:
            column, value = column_name(term.expression), parameter(term.this)
        if column is None or value < 0:
            return None
        return column, value, value
    return None
