"""Partitions as Doris reads them: bounds and values typed by the partition columns, LESS THAN
bounds padded and chained, ranges and lists checked for overlap, batch ranges expanded, and the
text Doris shows for partition keys.

Bounds are kept as tuples of canonical SQL literals, one per partition column; an upper bound of
() is MAXVALUE and a lower bound of () the columns' least values.
"""

from __future__ import annotations

import calendar
import datetime
import re
from dataclasses import dataclass

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata.records import Partition, PartitionKind, Table
from metadata.types import INTEGER_BITS, ColumnType

DATE_TYPES = frozenset({"DATE", "DATEV2"})
DATETIME_TYPES = frozenset({"DATETIME", "DATETIMEV2"})
RANGE_TYPES = frozenset(INTEGER_BITS) | DATE_TYPES | DATETIME_TYPES
LIST_TYPES = RANGE_TYPES | {"CHAR", "VARCHAR", "STRING", "BOOLEAN"}
DORIS_TYPE_NAMES = {"DATE": "DATEV2", "DATETIME": "DATETIMEV2", "INTEGER": "INT", "TEXT": "STRING"}
DATE_TIME = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2}))?")
BATCH_UNITS = ("HOUR", "DAY", "WEEK", "MONTH", "YEAR")
BATCH_INPUT_FORMATS = {  # the forms a batch's FROM and TO take, by unit and by length
    "HOUR": {10: "%Y%m%d%H", 13: "%Y-%m-%d %H", 19: "%Y-%m-%d %H:%M:%S"},
    "DAY": {8: "%Y%m%d", 10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S"},
    "WEEK": {8: "%Y%m%d", 10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S"},
    "MONTH": {6: "%Y%m", 7: "%Y-%m", 10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S"},
    "YEAR": {4: "%Y", 8: "%Y%m%d", 10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S"},
}
BATCH_NAME_FORMATS = {"HOUR": "%Y%m%d%H", "DAY": "%Y%m%d", "MONTH": "%Y%m", "YEAR": "%Y"}
BATCH_PREFIX = "p_"


def partition_error(message: str) -> QueryError:
    return QueryError(1105, message)


@dataclass(frozen=True)
class PartitionColumns:
    """A table's partition columns: their names, types and kind."""

    names: tuple[str, ...]
    types: tuple[ColumnType, ...]
    kind: PartitionKind

    @classmethod
    def of(cls, table: Table) -> PartitionColumns:
        types = tuple(table.column(name).type for name in table.partition_columns)
        return cls(table.partition_columns, types, table.partition_kind)

    def check_types(self) -> None:
        allowed = RANGE_TYPES if self.kind == PartitionKind.RANGE else LIST_TYPES
        for name, column_type in zip(self.names, self.types, strict=True):
            if column_type.base not in allowed:
                raise partition_error(
                    f"Column[{name}] type[{doris_type(column_type)}] cannot be a "
                    f"{self.kind.lower()} partition key."
                )

    def canonical(self, values: tuple[str, ...], partition: str) -> tuple[str, ...]:
        """The values typed by the columns, as canonical literals; Doris's errors if they are not."""
        if len(values) > len(self.names):
            raise partition_error(
                f"Partition values number is more than partition column number: {partition}"
            )
        kind = self.kind.lower()
        try:
            return tuple(
                typed_literal(value, column_type)
                for value, column_type in zip(values, self.types, strict=False)
            )
        except ValueError as error:
            raise partition_error(f"Invalid {kind} value format: {error}") from None

    def padded(self, values: tuple[str, ...]) -> tuple[str, ...]:
        """A bound with fewer values than columns, the rest the columns' least values (Doris)."""
        return values + tuple(t.least_value for t in self.types[len(values) :])

    def key(self, values: tuple[str, ...], maximum: bool = False) -> tuple:
        """A sortable key of a bound: () is the least key, or MAXVALUE if `maximum`."""
        if not values:
            return ((2 if maximum else 0, 0),) * len(self.names)
        return tuple(
            (1, int(value) if column_type.base in INTEGER_BITS else value)
            for value, column_type in zip(values, self.types, strict=True)
        )

    def key_text(self, values: tuple[str, ...], maximum: bool = False) -> str:
        """A bound as Doris's PartitionKey prints it: `types: [INT]; keys: [10]; `."""
        types = ", ".join(doris_type(t) for t in self.types)
        if not values:
            values = ("MAXVALUE",) * len(self.types) if maximum else self.padded(())
        return f"types: [{types}]; keys: [{', '.join(values)}]; "

    def range_text(self, lower: tuple[str, ...], upper: tuple[str, ...]) -> str:
        return f"[{self.key_text(lower)}..{self.key_text(upper, maximum=True)})"

    def list_text(self, values: tuple[tuple[str, ...], ...]) -> str:
        return "[" + ", ".join(self.key_text(value) for value in values) + "]"


def doris_type(column_type: ColumnType) -> str:
    return DORIS_TYPE_NAMES.get(column_type.name, column_type.base)


def typed_literal(value: str, column_type: ColumnType) -> str:
    """`value` as a literal of the type, canonical (ValueError with Doris's words if it is not)."""
    base = column_type.base
    if base in INTEGER_BITS:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError(f"Invalid number format: {value}") from None
        bits = INTEGER_BITS[base]
        if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
            raise ValueError(f"Number out of range[{value}]. type: {base}")
        return str(number)
    if base in DATE_TYPES | DATETIME_TYPES:
        moment = _date_time(value.strip())
        if moment is None:
            raise ValueError(f"date literal [{value}] is invalid")
        date, time = moment
        return date if base in DATE_TYPES else f"{date} {time}"
    if base == "BOOLEAN":
        lowered = value.strip().lower()
        if lowered in ("true", "1"):
            return "true"
        if lowered in ("false", "0"):
            return "false"
        raise ValueError(f"Invalid BOOLEAN literal: {value}")
    length = column_type.character_length
    if length is not None and len(value.encode()) > length:
        raise ValueError(f"Partition value [{value}] is longer than {column_type.sql}")
    return value


def _date_time(text: str) -> tuple[str, str] | None:
    """("YYYY-MM-DD", "hh:mm:ss") of a date or date-time literal (year 0 too, Doris's least
    date, which Python's datetime lacks); None if it is not one."""
    match = DATE_TIME.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part or 0) for part in match.groups())
    if not 1 <= month <= 12 or hour > 23 or minute > 59 or second > 59:
        return None
    if not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}", f"{hour:02d}:{minute:02d}:{second:02d}"


# RANGE partitions.


@dataclass(frozen=True)
class Bounds:
    name: str
    lower: tuple[str, ...] | None  # None: VALUES LESS THAN, the lower bound follows from the others
    upper: tuple[str, ...]
    is_new: bool = True


def checked_ranges(
    columns: PartitionColumns, existing: list[Partition], new: list[st.PartitionDef]
) -> list[Bounds]:
    """The bounds of the new RANGE partitions, typed, padded and chained after the existing ones
    (whose bounds stand); Doris's error if two ranges would intersect."""
    pending = [Bounds(p.name, p.lower, p.upper, is_new=False) for p in existing]
    for definition in new:
        lower = definition.lower
        if lower is not None:
            lower = columns.padded(columns.canonical(lower, definition.name))
        upper = definition.upper
        if upper:
            upper = columns.padded(columns.canonical(upper, definition.name))
        pending.append(Bounds(definition.name, lower, upper))

    def upper_key(bounds: Bounds) -> tuple:
        return columns.key(bounds.upper, maximum=True)

    ordered = sorted(pending, key=upper_key)  # then only neighbours can intersect
    resolved: list[Bounds] = []
    for bounds in ordered:
        previous = resolved[-1] if resolved else None
        lower = bounds.lower
        if lower is None:
            lower = previous.upper if previous is not None and previous.upper else ()
        if bounds.lower is not None and columns.key(lower) >= upper_key(bounds):
            raise partition_error(f"The lower values must smaller than upper values: {bounds.name}")
        current = Bounds(bounds.name, lower, bounds.upper, bounds.is_new)
        follows = bounds.lower is None and columns.key(lower) >= upper_key(bounds)
        if previous is not None and (follows or columns.key(lower) < upper_key(previous)):
            new, other = (current, previous) if current.is_new else (previous, current)
            raise partition_error(
                f"Range {columns.range_text(new.lower, new.upper)} is intersected with "
                f"range: {columns.range_text(other.lower, other.upper)}"
            )
        resolved.append(current)
    return [bounds for bounds in resolved if bounds.is_new]


def ranges_cover_alike(
    columns: PartitionColumns, first: list[Partition], second: list[Partition]
) -> bool:
    """Whether two sets of ranges cover the same keys: {[0, 10), [10, 20)} as {[0, 20)}."""

    def merged(partitions: list[Partition]) -> list[tuple]:
        spans = sorted(
            (columns.key(p.lower), columns.key(p.upper, maximum=True)) for p in partitions
        )
        result: list[list] = []
        for low, high in spans:
            if result and low <= result[-1][1]:
                result[-1][1] = max(result[-1][1], high)
            else:
                result.append([low, high])
        return [tuple(span) for span in result]

    return merged(first) == merged(second)


# LIST partitions.


def checked_values(
    columns: PartitionColumns, existing: list[Partition], definition: st.PartitionDef
) -> tuple[tuple[str, ...], ...]:
    """A LIST partition's values, typed; Doris's errors for a value given twice or already in
    one of the existing partitions."""
    if not definition.values:
        raise partition_error(f"partition {definition.name} has no values: use VALUES IN (...)")
    values = []
    for value in definition.values:
        if len(value) != len(columns.names):
            raise partition_error(
                f"partition key desc list size[{len(value)}] is not equal to partition column "
                f"size[{len(columns.names)}]"
            )
        values.append(columns.canonical(value, definition.name))
    for index, value in enumerate(values):
        if value in values[:index]:
            raise partition_error(
                f"The partition key[{_key_sql(value)}] has duplicate item [{_key_sql(value)}]."
            )
    for partition in existing:
        for value in values:
            if value in partition.values:
                raise partition_error(
                    f"The partition key[{_key_sql(value)}] in partition item"
                    f"[{_item_sql(values)}] is conflict with current partitionKeys"
                    f"[{_values_sql(partition.values)}]"
                )
    return tuple(values)


def _key_sql(value: tuple[str, ...]) -> str:
    return "(" + ", ".join(f'"{v}"' for v in value) + ")"


def _item_sql(values: list[tuple[str, ...]]) -> str:
    if all(len(value) == 1 for value in values):
        return "(" + ",".join(f"'{value[0]}'" for value in values) + ")"
    return "(" + ",".join("(" + ",".join(f"'{v}'" for v in value) + ")" for value in values) + ")"


def _values_sql(values: tuple[tuple[str, ...], ...]) -> str:
    if len(values) == 1:
        return _key_sql(values[0])
    return "(" + ",".join(_key_sql(value) for value in values) + ")"


def lists_alike(first: list[Partition], second: list[Partition]) -> bool:
    return {v for p in first for v in p.values} == {v for p in second for v in p.values}


# Batch RANGE partitions: FROM (...) TO (...) INTERVAL n [unit].


def expanded(batch: st.BatchPartitionDef, limit: int) -> list[st.PartitionDef]:
    """The partitions a batch stands for, named as Doris names them; at most `limit`."""
    if len(batch.start) != 1 or len(batch.end) != 1:
        raise partition_error(
            "partition column number in multi partition clause must be one but START column "
            f"size is {len(batch.start)}, END column size is {len(batch.end)}."
        )
    if batch.interval <= 0:
        raise partition_error("Multi partition time interval mush be larger than zero.")
    if batch.unit is None:
        return _integer_batch(batch, limit)
    if batch.unit not in BATCH_UNITS:
        raise partition_error(
            f"Multi build partition does not support time interval type: {batch.unit}"
        )
    start, end = (_batch_time(batch.unit, value[0]) for value in (batch.start, batch.end))
    if start >= end:
        raise partition_error("Multi build partition start time should less than end time.")
    value_format = "%Y-%m-%d %H:%M:%S" if batch.unit == "HOUR" else "%Y-%m-%d"
    result = []
    while start < end:
        lower = start
        name = BATCH_PREFIX + _batch_name(batch.unit, start)
        start = _next_batch_start(batch.unit, start, batch.interval)
        if batch.unit != "DAY" and start > end:
            start = end
        result.append(
            st.PartitionDef(
                name,
                lower=(lower.strftime(value_format),),
                upper=(start.strftime(value_format),),
                properties=batch.properties,
            )
        )
        if len(result) > limit:
            raise partition_error(
                f"The number of Multi partitions too much, should not exceed:{limit}"
            )
    return result


def _integer_batch(batch: st.BatchPartitionDef, limit: int) -> list[st.PartitionDef]:
    try:
        begin, end = int(batch.start[0]), int(batch.end[0])
    except ValueError:
        raise partition_error("Unknown time interval type for Multi build partition.") from None
    if begin >= end:
        raise partition_error("Multi build partition start number should less than end number.")
    result = []
    while begin < end:
        upper = min(begin + batch.interval, end)
        result.append(
            st.PartitionDef(
                f"{BATCH_PREFIX}{begin}_{upper}",
                lower=(str(begin),),
                upper=(str(upper),),
                properties=batch.properties,
            )
        )
        begin = upper
        if len(result) > limit:
            raise partition_error(
                f"The number of Multi partitions too much, should not exceed:{limit}"
            )
    return result


def _batch_time(unit: str, value: str) -> datetime.datetime:
    form = BATCH_INPUT_FORMATS[unit].get(len(value))
    try:
        if form is None:
            raise ValueError(value)
        return datetime.datetime.strptime(value, form)
    except ValueError:
        raise partition_error("Multi build partition START or END time style is illegal.") from None


def _batch_name(unit: str, moment: datetime.datetime) -> str:
    if unit == "WEEK":  # weeks start on Monday; week 1 holds January 1st
        first_monday = datetime.date(moment.year, 1, 1)
        first_monday -= datetime.timedelta(days=first_monday.weekday())
        week = (moment.date() - first_monday).days // 7 + 1
        return f"{moment.year:04d}_{week:02d}"
    return moment.strftime(BATCH_NAME_FORMATS[unit])


def _next_batch_start(unit: str, moment: datetime.datetime, interval: int) -> datetime.datetime:
    if unit == "HOUR":
        return moment + datetime.timedelta(hours=interval)
    if unit == "DAY":
        return moment + datetime.timedelta(days=interval)
    if unit == "WEEK":
        monday = moment - datetime.timedelta(days=moment.weekday())
        return monday + datetime.timedelta(weeks=interval)
    if unit == "MONTH":
        months = moment.year * 12 + moment.month - 1 + interval
        return moment.replace(year=months // 12, month=months % 12 + 1, day=1)
    return moment.replace(year=moment.year + interval, month=1, day=1)
