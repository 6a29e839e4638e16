"""The bounds a SELECT's WHERE puts on integer columns of its one table (`id = 5`, `id BETWEEN
5 AND 104`, `k >= 3 AND k < 9`), handed to the data plane so that a point or range query reads
the few rows it needs. Only top-level AND terms comparing a column with an integer literal count;
the query still applies its whole WHERE."""

from __future__ import annotations

from sqlglot import exp

from be.cn.bounds import MAX_BOUNDS, ColumnBound
from metadata.records import Table
from metadata.types import INTEGER_BITS

INT64 = range(-(1 << 63), 1 << 63)
FLIPPED = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}


def bounds_of(
    select: exp.Expression, table_node: exp.Table, table: Table
) -> tuple[ColumnBound, ...]:
    """The bounds on table's integer columns, when select reads table_node and no other table."""
    terms = _terms(select, table_node, table)
    return tuple(bound for bound in terms or () if bound is not None)[:MAX_BOUNDS]


def exact_bounds(
    select: exp.Expression, table_node: exp.Table, table: Table
) -> tuple[ColumnBound, ...] | None:
    """The bounds when they are the whole WHERE (no WHERE: none), else None: then the rows within
    them are exactly the rows the WHERE keeps."""
    if not _reads_only(select, table_node):
        return None
    if select.args.get("where") is None:
        return ()
    terms = _terms(select, table_node, table)
    if terms is None or None in terms or len(terms) > MAX_BOUNDS:
        return None
    return tuple(terms)


def _terms(
    select: exp.Expression, table_node: exp.Table, table: Table
) -> list[ColumnBound | None] | None:
    """Per top-level AND term of the WHERE, its bound or None; None if there is nothing to bound."""
    if not _reads_only(select, table_node):
        return None
    where = select.args.get("where")
    if where is None:
        return None
    names = {table_node.alias_or_name, table_node.name}
    terms = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    return [_bound(term, names, table) for term in terms]


def _reads_only(select: exp.Expression, table_node: exp.Table) -> bool:
    """Whether select reads table_node and no other table (no join, no subquery of one)."""
    if not isinstance(select, exp.Select) or select.args.get("joins"):
        return False
    source = select.args.get("from_")
    if source is None or source.this is not table_node:
        return False
    # a subquery reading a table: the same registered rows must serve it whole
    return all(node is table_node for node in select.find_all(exp.Table))


def _bound(term: exp.Expression, names: set[str], table: Table) -> ColumnBound | None:
    if isinstance(term, exp.Paren):
        return _bound(term.this, names, table)
    if isinstance(term, exp.Between):
        column = _integer_column(term.this, names, table)
        low, high = _integer(term.args.get("low")), _integer(term.args.get("high"))
        if column is None or low is None or high is None:
            return None
        return ColumnBound(column, low, high)
    kind = type(term)
    if kind not in FLIPPED:
        return None
    column, value = _integer_column(term.this, names, table), _integer(term.expression)
    if column is None or value is None:
        column, value = _integer_column(term.expression, names, table), _integer(term.this)
        kind = FLIPPED[kind]
    if column is None or value is None:
        return None
    if kind is exp.EQ:
        return ColumnBound(column, value, value)
    if kind is exp.GTE:
        return ColumnBound(column, low=value)
    if kind is exp.GT:
        return ColumnBound(column, low=value + 1) if value + 1 in INT64 else None
    if kind is exp.LTE:
        return ColumnBound(column, high=value)
    return ColumnBound(column, high=value - 1) if value - 1 in INT64 else None


def _integer_column(node: exp.Expression, names: set[str], table: Table) -> str | None:
    if not isinstance(node, exp.Column) or (node.table and node.table not in names):
        return None
    column = table.column(node.name)
    if column is None or column.type.base not in INTEGER_BITS or column.type.base == "LARGEINT":
        return None  # LARGEINT is stored as a decimal
    return column.name


def _integer(node: exp.Expression | None) -> int | None:
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string or not node.this.isdigit():
        return None
    value = -int(node.this) if negative else int(node.this)
    return value if value in INT64 else None
