"""Partition pruning: the partitions of a RANGE or LIST partitioned table that can hold the rows a
query's WHERE keeps, from the top-level AND terms on the (first) partition column that compare it
with a literal (=, <, <=, >, >=, BETWEEN, IN), as Doris's partition pruner does. Anything else
(OR, NOT, a function of the column, a literal of another kind) leaves the term out, which only
keeps more partitions: the query still applies its whole WHERE to the rows it reads.

Every term kept is false for a NULL partition value, so the NULL rows Doris places in the lowest
range partition never match and may be pruned with it."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from fe.mysql.errors import ErrorCode, QueryError
from metadata.records import KeyModel, Partition, PartitionKind, Table
from metadata.types import INTEGER_BITS

MAX_LIST_VALUES = 1024  # IN items a term is read with; a longer list leaves the term out
MAX_INTERVALS = 1024  # intervals a conjunction is kept as; past them the column is not pruned
MAX_TERMS = 64  # top-level AND terms looked at; the rest are left out

DATE_TYPES = frozenset({"DATE", "DATEV1", "DATEV2"})
DATETIME_TYPES = frozenset({"DATETIME", "DATETIMEV1", "DATETIMEV2"})
# The texts DuckDB and MySQL read alike as a DATE, a DATETIME
DATE_TEXT = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
DATETIME_TEXT = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?"
)
INTEGER_TEXT = re.compile(r"[+-]?\d+")
INT64 = range(-(1 << 63), 1 << 63)
FLIPPED = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}
DATE_CASTS = frozenset({exp.DataType.Type.DATE})
DATETIME_CASTS = frozenset(
    {exp.DataType.Type.DATETIME, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ}
)

Value = int | datetime.datetime  # a partition column's values, dates as their midnight


@dataclass(frozen=True, slots=True)
class Interval:
    """Values between low and high (None: unbounded), each end inclusive or not."""

    low: Value | None = None
    high: Value | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def is_empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        if self.low == self.high:
            return not (self.low_inclusive and self.high_inclusive)
        return self.low > self.high

    def meet(self, other: Interval) -> Interval:
        low, low_inclusive = self.low, self.low_inclusive
        if other.low is not None and (
            low is None or other.low > low or (other.low == low and not other.low_inclusive)
        ):
            low, low_inclusive = other.low, other.low_inclusive
        high, high_inclusive = self.high, self.high_inclusive
        if other.high is not None and (
            high is None or other.high < high or (other.high == high and not other.high_inclusive)
        ):
            high, high_inclusive = other.high, other.high_inclusive
        return Interval(low, high, low_inclusive, high_inclusive)

    def holds(self, value: Value) -> bool:
        if self.low is not None and (
            value < self.low or (value == self.low and not self.low_inclusive)
        ):
            return False
        return (
            self.high is None or value < self.high or (value == self.high and self.high_inclusive)
        )


EVERYTHING = (Interval(),)


@dataclass(frozen=True, slots=True)
class Pruning:
    """The partitions a read of a table asks for, among all of the table's."""

    table: Table
    kept: tuple[Partition, ...]

    @property
    def ids(self) -> frozenset[int] | None:
        """The partition ids to read; None: every partition (nothing pruned)."""
        if len(self.kept) == len(self.table.partitions):
            return None
        return frozenset(partition.id for partition in self.kept)

    def explained(self) -> str:
        """Doris's line: `partitions=2/10 (p1,p2)` (names in partition id order)."""
        names = ",".join(p.name for p in sorted(self.kept, key=lambda p: p.id))
        return f"partitions={len(self.kept)}/{len(self.table.partitions)} ({names})"

    def tablets_explained(self) -> str:
        kept = sum(partition.buckets for partition in self.kept)
        return f"tablets={kept}/{sum(partition.buckets for partition in self.table.partitions)}"


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What the query around a table tells beyond its tree: a source's columns (lower-case
    names; None if not known: then an unqualified name may be that source's), and the values of
    a long IN list the query reads as a table (None if the query is not one)."""

    columns_of: Callable[[exp.Expression], frozenset[str] | None] = lambda source: None
    values_of: Callable[[exp.Expression], list | None] = lambda query: None


def pruned(table_node: exp.Table, table: Table, around: Surroundings = Surroundings()) -> Pruning:
    """The partitions of table (read as table_node) the WHERE of the SELECT reading it can keep
    rows of; of those it names, if it names some (`t PARTITION (p1, p2)`: it reads no others)."""
    everything = Pruning(table, named_partitions(table_node, table))
    if not table.partition_columns or len(everything.kept) <= 1:
        return everything
    keys = {name.lower() for name in table.key_columns}
    if table.key_model is KeyModel.AGGREGATE and any(
        name.lower() not in keys for name in table.partition_columns
    ):
        return everything  # rows of one key in two partitions merge when read
    column = table.column(table.partition_columns[0])
    kind = _kind(column.type.base) if column is not None else None
    select = _select_reading(table_node)
    if kind is None or select is None or select.args.get("where") is None:
        return everything
    name = column.name.lower()
    unqualified = not _others_have(select, table_node, name, around)
    reading = _Column(name, table_node.alias_or_name, unqualified, kind)
    intervals = EVERYTHING
    for term in _conjuncts(select.args["where"].this):
        allowed = _term_intervals(term, reading, around)
        if allowed is None:
            continue
        intervals = _meet(intervals, allowed)
        if intervals is None:
            return everything
    if intervals == EVERYTHING:
        return everything
    kept = tuple(p for p in everything.kept if _may_hold(table, p, kind, intervals))
    return Pruning(table, kept)


def named_partitions(table_node: exp.Table, table: Table) -> tuple[Partition, ...]:
    """The partitions a read names (`t PARTITION (p1, p2)`), in the table's order; all of them
    if it names none. 1735 for a name the table has no partition of, as MySQL and Doris."""
    clause = table_node.args.get("partition")
    if clause is None:
        return table.partitions
    by_name = {partition.name.lower(): partition for partition in table.partitions}
    named = set()
    for node in clause.expressions:
        partition = by_name.get(node.name.lower()) if isinstance(node, exp.Column) else None
        if partition is None:
            raise QueryError(
                ErrorCode.UNKNOWN_PARTITION,
                f"Unknown partition '{node.name}' in table '{table.name}'",
            )
        named.add(partition.id)
    return tuple(partition for partition in table.partitions if partition.id in named)


@dataclass(frozen=True, slots=True)
class _Column:
    name: str  # lower case
    qualifier: str  # the table's alias, or its name if it has none
    unqualified: bool  # whether a bare name is this table's column
    kind: str  # "integer", "date" or "datetime"

    def named_by(self, node: exp.Expression) -> bool:
        if not isinstance(node, exp.Column) or node.name.lower() != self.name:
            return False
        if node.args.get("db") or node.args.get("catalog"):
            return False
        return node.table == self.qualifier if node.table else self.unqualified


def _kind(base: str) -> str | None:
    if base in INTEGER_BITS and base != "LARGEINT":
        return "integer"
    if base in DATE_TYPES:
        return "date"
    if base in DATETIME_TYPES:
        return "datetime"
    return None


def _select_reading(table_node: exp.Table) -> exp.Select | None:
    """The SELECT whose FROM or JOIN names table_node directly."""
    holder = table_node.parent
    if isinstance(holder, exp.From | exp.Join) and isinstance(holder.parent, exp.Select):
        return holder.parent
    return None


def _others_have(
    select: exp.Select, table_node: exp.Table, name: str, around: Surroundings
) -> bool:
    """Whether another source of select may have a column of this name."""
    sources = [join.this for join in select.args.get("joins") or ()]
    source = select.args.get("from_")
    if source is not None:
        sources.append(source.this)
    for other in sources:
        if other is table_node:
            continue
        names = around.columns_of(other)
        if names is None or name in names:
            return True
    return False


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    """The terms of an AND (of ANDs, in parentheses or not), the first MAX_TERMS of them."""
    terms: list[exp.Expression] = []
    pending = [node]
    while pending and len(terms) < MAX_TERMS:
        node = pending.pop()
        if isinstance(node, exp.Paren):
            pending.append(node.this)
        elif isinstance(node, exp.And):
            pending += [node.expression, node.this]
        else:
            terms.append(node)
    return terms


def _term_intervals(
    term: exp.Expression, column: _Column, around: Surroundings
) -> tuple[Interval, ...] | None:
    """The values of the column the term can be true for; None if it does not say."""
    if isinstance(term, exp.Between):
        if not column.named_by(term.this):
            return None
        low, high = _value(term.args.get("low"), column), _value(term.args.get("high"), column)
        if low is None or high is None:
            return None
        return _nonempty((Interval(low, high),))
    if isinstance(term, exp.In):
        if not column.named_by(term.this) or term.args.get("unnest"):
            return None
        query = term.args.get("query")
        if query is not None:
            return _list_intervals(around.values_of(query), column)
        items = term.expressions
        if not items or len(items) > MAX_LIST_VALUES:
            return None
        values = []
        for item in items:
            if isinstance(item, exp.Null):
                continue  # never equal
            value = _value(item, column)
            if value is None:
                return None
            values.append(value)
        return tuple(Interval(value, value) for value in sorted(set(values)))
    kind = type(term)
    if kind not in FLIPPED:
        return None
    side, literal = term.this, term.expression
    if not column.named_by(side):
        side, literal, kind = literal, side, FLIPPED[kind]
        if not column.named_by(side):
            return None
    if isinstance(literal, exp.Null):
        return ()  # a comparison with NULL is never true
    value = _value(literal, column)
    if value is None:
        return None
    if kind is exp.EQ:
        return (Interval(value, value),)
    if kind is exp.GT:
        return (Interval(low=value, low_inclusive=False),)
    if kind is exp.GTE:
        return (Interval(low=value),)
    if kind is exp.LT:
        return (Interval(high=value, high_inclusive=False),)
    return (Interval(high=value),)


def _list_intervals(values: list | None, column: _Column) -> tuple[Interval, ...] | None:
    """The points of a long IN list's values (ints or strings), if every one is certain."""
    if values is None or len(values) > MAX_LIST_VALUES:
        return None
    points = set()
    for value in values:
        if isinstance(value, int) and column.kind == "integer":
            point = value
        elif isinstance(value, str):
            point = text_value(value, column.kind)
        else:
            return None
        if point is None:
            return None
        points.add(point)
    return tuple(Interval(point, point) for point in sorted(points))


def _nonempty(intervals) -> tuple[Interval, ...]:
    return tuple(interval for interval in intervals if not interval.is_empty())


def _meet(first: tuple[Interval, ...], second: tuple[Interval, ...]) -> tuple[Interval, ...] | None:
    """The values in both; None past MAX_INTERVALS."""
    if len(first) * len(second) > MAX_INTERVALS * 4:
        return None
    met = _nonempty(a.meet(b) for a in first for b in second)
    return met if len(met) <= MAX_INTERVALS else None


def _value(node: exp.Expression | None, column: _Column) -> Value | None:
    """The literal's value as the engine compares it with the column, if that is certain."""
    if node is None:
        return None
    if isinstance(node, exp.Paren):
        return _value(node.this, column)
    if column.kind == "integer":
        negative = isinstance(node, exp.Neg)
        if negative:
            node = node.this
        if not isinstance(node, exp.Literal) or (negative and node.is_string):
            return None
        if node.is_string:
            return text_value(node.this, "integer")
        if not node.this.isdigit():
            return None
        value = -int(node.this) if negative else int(node.this)
        return value if value in INT64 else None
    to = None
    if isinstance(node, exp.Cast):
        to, node = node.to.this, node.this
    elif isinstance(node, exp.TsOrDsToDate) and not node.args.get("format"):
        to, node = exp.DataType.Type.DATE, node.this  # DATE('2024-01-05')
    if not isinstance(node, exp.Literal) or not node.is_string:
        return None
    return text_value(node.this, column.kind, to)


def text_value(text: str, kind: str, to: exp.DataType.Type | None = None) -> Value | None:
    """A string compared with a column of kind (cast to `to` first, if given) as its value."""
    if kind == "integer":
        text = text.strip()
        if to is not None or not INTEGER_TEXT.fullmatch(text):
            return None
        value = int(text)
        return value if value in INT64 else None
    if to in DATE_CASTS or (to is None and kind == "date"):
        # DuckDB reads a longer text as a DATE by its date alone, MySQL does not: left out
        found = DATE_TEXT.fullmatch(text)
    elif to in DATETIME_CASTS or (to is None and kind == "datetime"):
        found = DATETIME_TEXT.fullmatch(text)
    else:
        return None
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction = (found.groups() + (None,) * 4)[:7]
    try:
        return datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
        )
    except ValueError:
        return None


def _bound(text: str, kind: str) -> Value | None:
    """A partition bound's canonical literal as a value; None if it is not one (unbounded)."""
    try:
        return int(text) if kind == "integer" else datetime.datetime.fromisoformat(text)
    except ValueError:
        return None


def _may_hold(
    table: Table, partition: Partition, kind: str, intervals: tuple[Interval, ...]
) -> bool:
    """Whether a row of partition can have a first partition column value in intervals."""
    if table.partition_kind is PartitionKind.LIST:
        for values in partition.values:
            value = _bound(values[0], kind) if values else None
            if value is None or any(interval.holds(value) for interval in intervals):
                return True
        return False
    low = _bound(partition.lower[0], kind) if partition.lower else None
    high = _bound(partition.upper[0], kind) if partition.upper else None
    # one column: [lower, upper); more: the first column's value may equal the upper's
    single = len(table.partition_columns) == 1
    span = Interval(low, high, True, not single or high is None)
    return any(not span.meet(interval).is_empty() for interval in intervals)
