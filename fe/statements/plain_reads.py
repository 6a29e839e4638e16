"""`SELECT column, ... FROM t [WHERE <bounds on integer columns>]`: the rows within the bounds are
the answer, so Arrow gives it from the table's snapshot and the query engine is not started (a
point or range read, as sysbench sends them; the rows a DELETE names). Anything more (an
expression, an alias, ORDER BY, DISTINCT, LIMIT, another kind of WHERE term) goes to the engine."""

from __future__ import annotations

import operator
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


SHAPED_PARTS = PLAIN_PARTS | {"distinct", "order"}
TOTAL_TYPE = "HUGEINT"  # the engine's SUM of any integer column


@dataclass(frozen=True, slots=True)
class Shape:
    """A read of plain columns, maybe DISTINCT and ORDER BY some of them, or of SUM(column)s:
    answered from the rows within the bounds without the engine (sysbench's range queries)."""

    columns: tuple[str, ...]
    distinct: bool = False
    order: tuple[tuple[int, bool, bool], ...] = ()  # position in columns, descending, nulls first
    totals: bool = False  # every projection is SUM(column): one row
    # per column, the integer added to it (`k + 1`, `k - 1`: an UPDATE's SET k = k + 1); None:
    # the column as it is
    offsets: tuple[int | None, ...] = ()


def shape_of(select: exp.Expression, table_node: exp.Table) -> Shape | None:
    """select's Shape, if it has one."""
    if not isinstance(select, exp.Select):
        return None
    if any(value for part, value in select.args.items() if part not in SHAPED_PARTS):
        return None
    names = {table_node.alias_or_name, table_node.name}
    columns, totals, offsets = [], [], []
    for projection in select.expressions:
        total = isinstance(projection, exp.Sum)
        node, offset = _offset(projection.this if total else projection)
        if not _is_column(node, names):
            return None
        columns.append(node.name)
        totals.append(total)
        offsets.append(offset)
    distinct = select.args.get("distinct")
    if distinct is not None and (distinct.args.get("on") or distinct.expressions):
        return None
    order = []
    for term in select.args["order"].expressions if select.args.get("order") else ():
        if not isinstance(term, exp.Ordered) or not _is_column(term.this, names):
            return None
        if term.this.name not in columns or term.args.get("with_fill"):
            return None
        order.append((columns.index(term.this.name), bool(term.args.get("desc")),
                      bool(term.args.get("nulls_first"))))  # fmt: skip
    if any(totals) and (not all(totals) or distinct is not None or order):
        return None
    shifted = any(offset is not None for offset in offsets)
    if shifted and (any(totals) or distinct is not None or order):
        return None
    return Shape(tuple(columns), distinct is not None, tuple(order), any(totals), tuple(offsets))


def _offset(node: exp.Expression) -> tuple[exp.Expression, int | None]:
    """(column, n) of `column + n`, `n + column` or `column - n` (n a plain integer); else
    (node, None)."""
    if isinstance(node, exp.Add | exp.Sub):
        left, right = node.this, node.expression
        if isinstance(node, exp.Add) and isinstance(left, exp.Literal):
            left, right = right, left
        if (
            isinstance(left, exp.Column)
            and isinstance(right, exp.Literal)
            and not right.is_string
            and right.this.isdigit()
        ):
            value = int(right.this)
            return left, -value if isinstance(node, exp.Sub) else value
    return node, None


def _is_column(node: exp.Expression, names: set[str]) -> bool:
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return False
    return not node.table or node.table in names


def shaped_answer(rows: pa.Table, shape: Shape) -> Answer | None:
    """The answer of a Shape over rows (exactly the rows within its bounds); None if a column is
    not plainly one of rows' or of a type this does not order, dedupe or total as the engine."""
    types = {
        name: rows.schema.field(name).type for name in shape.columns if name in rows.schema.names
    }
    described = shape_description(types, shape)
    if described is None or rows.num_rows > MAX_ROWS:
        return None
    values = [rows.column(name).to_pylist() for name in shape.columns]
    found = shaped_rows(values, shape, types)
    return None if found is None else Answer(described, found)


def shape_description(types: dict[str, pa.DataType], shape: Shape) -> list[tuple] | None:
    """The engine's (name, type) of each column of a Shape over columns of these Arrow types;
    None if one is missing or of a type this does not order, dedupe or total as the engine."""
    described = []
    for position, name in enumerate(shape.columns):
        arrow = types.get(name)
        if arrow is None:
            return None
        if shape.totals:
            if not pa.types.is_integer(arrow):
                return None
            described.append((name, TOTAL_TYPE))
            continue
        offset = shape.offsets[position] if shape.offsets else None
        if offset is not None and not _shiftable(arrow, offset):
            return None
        ordered = shape.distinct or any(term[0] == position for term in shape.order)
        if ordered and not (pa.types.is_integer(arrow) or pa.types.is_string(arrow)):
            return None
        engine_type = "BIGINT" if offset is not None else _engine_type(arrow)
        if engine_type is None:
            return None
        described.append((name, engine_type))
    return described


def shaped_rows(
    values: list[list], shape: Shape, types: dict[str, pa.DataType]
) -> list[tuple] | None:
    """A Shape's rows from the values of its columns (one list per column, the rows within its
    bounds); None if a shifted value overflows its type (the engine's error then)."""
    if shape.totals:
        present = [[v for v in column if v is not None] for column in values]
        return [tuple(sum(column) if column else None for column in present)]
    for position, offset in enumerate(shape.offsets):
        if offset is not None:
            values[position] = shifted = [
                None if v is None else v + offset for v in values[position]
            ]
            if not _fits(pa.int64(), shifted):
                return None
    return _distinct_and_ordered(list(zip(*values, strict=True)), shape)


def rows_shaped(
    rows: list[tuple], shape: Shape, types: dict[str, pa.DataType]
) -> list[tuple] | None:
    """shaped_rows of rows (tuples of the values of shape's columns) rather than of columns."""
    if shape.totals or any(offset is not None for offset in shape.offsets):
        columns = [list(column) for column in zip(*rows, strict=True)]
        return shaped_rows(columns or [[] for _ in shape.columns], shape, types)
    return _distinct_and_ordered(rows, shape)


def _distinct_and_ordered(found: list[tuple], shape: Shape) -> list[tuple]:
    if shape.distinct:
        found = list(dict.fromkeys(found))
    for position, descending, nulls_first in reversed(shape.order):
        pick = operator.itemgetter(position)
        absent = [row for row in found if row[position] is None]
        present = [row for row in found if row[position] is not None] if absent else found
        present = sorted(present, key=pick, reverse=descending)
        found = absent + present if nulls_first else present + absent
    return found


SIGNED_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def _shiftable(arrow: pa.DataType, offset: int) -> bool:
    """Whether the engine adds offset to a column of this type in BIGINT (an integer column and
    a literal that fits BIGINT: see coercions._widened): then the sum is the same unless it
    overflows BIGINT."""
    return arrow in SIGNED_BITS and _fits(pa.int64(), [abs(offset)])  # the literal as written


def _fits(arrow: pa.DataType, values: list) -> bool:
    bits = SIGNED_BITS[arrow]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return all(value is None or low <= value <= high for value in values)


def answer(rows: pa.Table, columns: list[str], bounds: tuple[ColumnBound, ...]) -> Answer | None:
    """The answer of a plain read of rows (a snapshot that may hold rows outside bounds); None if
    a column or a bound is not plainly one of rows' (the engine answers then)."""
    for bound in bounds:
        if bound.column not in rows.schema.names:
            return None
        if not pa.types.is_integer(rows.schema.field(bound.column).type):
            return None
    described = []
    for name in columns:
        if name not in rows.schema.names:
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
    shape: Shape
    names: tuple[str, ...]  # of the result's columns
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


def prepared_read(
    template: exp.Expression, parameter: Callable, name_of: Callable
) -> PreparedRead | None:
    """template as a PreparedRead, if it is one; parameter(node) is the number of the parameter
    a node is, else -1; name_of(projection) the name of its result column."""
    if not isinstance(template, exp.Select) or template.args.get("joins"):
        return None
    source = template.args.get("from_")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        return None
    if table.catalog or table.args.get("version") or table.alias or table.args.get("partition"):
        return None
    shape = shape_of(template, table)
    where = template.args.get("where")
    if shape is None or where is None:
        return None
    terms = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    read_terms = [_parameter_term(term, table.name, parameter) for term in terms]
    if not read_terms or None in read_terms or len(read_terms) > MAX_BOUNDS:
        return None
    names = tuple(name_of(projection) for projection in template.expressions)
    return PreparedRead(table.db, table.name, shape, names, tuple(read_terms))


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
