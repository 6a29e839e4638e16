"""The expressions of an `INSERT ... VALUES` list worked out by the query engine, a statement's
worth at a time rather than a query per row.

Expressions that differ only in their string and integer literals (`CONCAT('a', 1)`,
`CONCAT('b', 2)`, ...) share a shape: the engine works the shape out once over a table of the
literals, a row per expression, which is what a vectorised engine is fast at. Every other
expression, and each shape's first one as a check that the shape gives what its literals give
(the rewrites of MySQL's functions may read a literal otherwise than a column), goes into one
SELECT of the distinct expressions, which also raises a refused expression's error. A shape the
engine refuses or that disagrees with its check is worked out expression by expression there.
NOW() and the like are then one time for the statement, as in MySQL; RAND() and the like are
drawn for each row."""

from __future__ import annotations

import dataclasses
import logging

import pyarrow as pa
from sqlglot import exp

from fe.statements import in_lists, queries

MAX_EXPRESSIONS_PER_QUERY = 4096  # distinct expressions in one SELECT (DuckDB binds each one)
MIN_SHAPE_MEMBERS = 8  # fewer expressions of a shape go into the SELECT of distinct ones
MAX_SHAPES = 64  # shapes worked out over tables in one statement; the rest go one by one
VOLATILE_FUNCTIONS = frozenset({"RAND", "RANDOM", "UUID", "UUID_SHORT", "SYSDATE"})
SHAPE_TABLE = "quire_values"
ORDINAL = "quire_ordinal"
INT64 = range(-(1 << 63), 1 << 63)

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class _Shape:
    volatile: bool
    members: list[int] = dataclasses.field(default_factory=list)  # indexes of the expressions
    literals: list[list] = dataclasses.field(default_factory=list)  # each member's, in order


async def evaluated(session, expressions: list[exp.Expression]) -> list:
    """The value of each expression, in order (QueryError as the engine refuses one)."""
    values: list = [None] * len(expressions)
    shapes: dict[tuple, _Shape] = {}
    for index, expression in enumerate(expressions):
        literals: list = []
        key = _shape(expression, literals)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = _Shape(_volatile(expression))
        shape.members.append(index)
        shape.literals.append(literals)
    by_table = [
        shape
        for shape in shapes.values()
        if len(shape.members) >= MIN_SHAPE_MEMBERS and (shape.literals[0] or shape.volatile)
    ][:MAX_SHAPES]
    one_by_one = set(range(len(expressions)))
    for shape in by_table:
        one_by_one.difference_update(shape.members[1:])
    await _each(session, expressions, sorted(one_by_one), values)
    for shape in by_table:
        first = shape.members[0]
        worked_out = await _over_table(session, expressions[first], shape)
        if worked_out is None or not (shape.volatile or _same(worked_out[0], values[first])):
            logger.debug("expressions like %s worked out one by one", expressions[first].sql())
            await _each(session, expressions, shape.members[1:], values)
            continue
        for index, value in zip(shape.members[1:], worked_out[1:], strict=True):
            values[index] = value
    return values


async def _each(session, expressions: list[exp.Expression], chosen: list[int], values: list):
    """The chosen expressions, each distinct one worked out once (but the volatile ones)."""
    distinct: dict[exp.Expression | int, list[int]] = {}
    for index in chosen:
        expression = expressions[index]
        key = index if _volatile(expression) else expression
        distinct.setdefault(key, []).append(index)
    groups = list(distinct.values())
    for start in range(0, len(groups), MAX_EXPRESSIONS_PER_QUERY):
        part = groups[start : start + MAX_EXPRESSIONS_PER_QUERY]
        select = exp.select(*[expressions[group[0]].copy() for group in part])
        names = [f"_{index}" for index in range(len(part))]  # never shown
        answer = await queries.run_select(session, queries.plan_select(select, names))
        (row,) = list(answer.rows)
        assert len(row) == len(part)
        for group, value in zip(part, row, strict=True):
            for index in group:
                values[index] = value


async def _over_table(session, expression: exp.Expression, shape: _Shape) -> list | None:
    """The shape's value for each member, worked out over a table of their literals; None if
    the engine refuses it."""
    template = expression.copy()
    names = _templated(template)
    columns = {ORDINAL: pa.array(range(len(shape.members)), pa.int64())}
    try:
        for position, name in enumerate(names):
            columns[name] = pa.array([literals[position] for literals in shape.literals])
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    table = exp.to_table(SHAPE_TABLE)
    table.meta[in_lists.LIST_TABLE] = True
    select = exp.select(template).from_(table).order_by(exp.column(ORDINAL))
    plan = queries.plan_select(select, ["_0"])  # long IN lists in it become tables too
    plan = dataclasses.replace(plan, lists=(*plan.lists, (SHAPE_TABLE, pa.table(columns))))
    try:
        answer = await queries.run_select(session, plan)
    except Exception:  # a rewrite or the engine refusing columns for literals: one by one
        logger.debug("expressions like %s refused over a table", expression.sql(), exc_info=True)
        return None
    rows = list(answer.rows)
    assert len(rows) == len(shape.members)
    return [row[0] for row in rows]


def _same(value, expected) -> bool:
    return type(value) is type(expected) and value == expected


def _shape(node: exp.Expression, literals: list):
    """node's tree with its string and integer literals left out (appended to literals); those
    of a type (`DECIMAL(10, 2)`) are its shape."""
    if isinstance(node, exp.DataType):
        return node.sql()
    if isinstance(node, exp.Literal):
        if node.is_string:
            literals.append(node.this)
            return "string"
        if node.this.isdigit() and int(node.this) in INT64:
            literals.append(int(node.this))
            return "integer"
    parts = [type(node).__name__]
    for key, value in node.args.items():
        if isinstance(value, exp.Expression):
            parts.append((key, _shape(value, literals)))
        elif isinstance(value, list):
            parts.append(
                (
                    key,
                    tuple(
                        _shape(item, literals) if isinstance(item, exp.Expression) else item
                        for item in value
                    ),
                )
            )
        else:
            parts.append((key, value))
    return tuple(parts)


def _templated(node: exp.Expression) -> list[str]:
    """The literals _shape leaves out replaced by columns, in place, in the same order; their
    names."""
    names: list[str] = []

    def visit(current: exp.Expression) -> None:
        if isinstance(current, exp.DataType):
            return
        if isinstance(current, exp.Literal) and (
            current.is_string or (current.this.isdigit() and int(current.this) in INT64)
        ):
            name = f"quire_literal_{len(names)}"
            names.append(name)
            current.replace(exp.column(name))
            return
        for value in list(current.args.values()):
            if isinstance(value, exp.Expression):
                visit(value)
            elif isinstance(value, list):
                for item in list(value):
                    if isinstance(item, exp.Expression):
                        visit(item)

    visit(node)
    return names


def _volatile(expression: exp.Expression) -> bool:
    """Whether the expression may give another value each time it is worked out."""
    return any(
        isinstance(node, exp.Rand) or queries.function_name(node) in VOLATILE_FUNCTIONS
        for node in expression.find_all(exp.Func)
    )
