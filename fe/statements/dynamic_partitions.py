"""Doris's dynamic partitions: a table partitioned by RANGE on one DATE or DATETIME column whose
properties say `dynamic_partition.enable` = true gets a partition per time unit (HOUR, DAY, WEEK,
MONTH, YEAR) from `start` units before now (only with `create_history_partition`) to `end` units
after, named `prefix` and the period (p20240105, p2024_01 for a week: its ISO week, p202401,
p2024, p2024010512), and loses those wholly before `start` units back. CREATE TABLE makes the first
ones; the leader keeps them up to date (fe/cluster/dynamic_partition_scheduler.py).

A period that overlaps a partition the table has, or whose name it has, is left out (the message
is the table's LastCreatePartitionMsg), as Doris does.
"""

from __future__ import annotations

import datetime
import zoneinfo
from dataclasses import dataclass, replace

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata.records import Partition, PartitionKind, Table

PREFIX = "dynamic_partition."
UNITS = ("HOUR", "DAY", "WEEK", "MONTH", "YEAR")
NO_START = -2147483648  # Doris's default start: history is never dropped
MAX_PERIODS = 500  # Doris's max_dynamic_partition_num
KEYS = (
    "enable", "time_unit", "start", "end", "prefix", "buckets", "replication_num",
    "replication_allocation", "create_history_partition", "history_partition_num",
    "start_day_of_week", "start_day_of_month", "time_zone", "hot_partition_num",
    "reserved_history_periods", "storage_medium",
)  # fmt: skip
DAY_NAMES = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")


@dataclass(frozen=True)
class Rules:
    enabled: bool
    unit: str
    start: int
    end: int
    prefix: str
    buckets: int | None
    create_history: bool
    history_count: int  # -1: as many as start says
    week_start: int  # 1 (Monday) .. 7
    month_start: int  # 1 .. 28
    zone: datetime.tzinfo | None

    @property
    def start_of(self) -> str:
        if self.unit == "WEEK":
            return DAY_NAMES[self.week_start - 1]
        if self.unit == "MONTH":
            return f"{self.month_start}rd"
        return "NULL"


def has_rules(table: Table) -> bool:
    return any(key.lower().startswith(PREFIX) for key, _ in table.properties)


def rules_of(table: Table) -> Rules | None:
    """The table's dynamic partition rules, None if it has none; QueryError (Doris's 1105) when
    they are not ones Doris takes."""
    given = {
        k.lower()[len(PREFIX) :]: v for k, v in table.properties if k.lower().startswith(PREFIX)
    }
    if not given:
        return None
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise _error(f"Unknown dynamic partition property: {PREFIX}{unknown[0]}")
    if table.partition_kind != PartitionKind.RANGE or len(table.partition_columns) != 1:
        raise _error("Dynamic partition only support single-column range partition")
    column_type = table.column(table.partition_columns[0]).type
    if column_type.base not in ("DATE", "DATEV2", "DATETIME", "DATETIMEV2"):
        raise _error(
            f"Dynamic partition only support DATE or DATETIME partition column, not "
            f"{column_type.base.lower()}"
        )
    for required in ("time_unit", "end", "prefix"):
        if required not in given:
            raise _error(f"Must assign {PREFIX}{required} properties")
    unit = given["time_unit"].upper()
    if unit not in UNITS:
        raise _error(
            f"Unsupported time unit {given['time_unit']}. Expect HOUR/DAY/WEEK/MONTH/YEAR."
        )
    if unit == "HOUR" and column_type.base.startswith("DATE") and "TIME" not in column_type.base:
        raise _error("Time unit is HOUR but the partition column is DATE: use DATETIME")
    start = _integer(given, "start", NO_START)
    end = _integer(given, "end", 0)
    if start >= 0:
        raise _error("Dynamic partition start must less than 0")
    if end <= 0:
        raise _error("Dynamic partition end must greater than 0")
    if end > MAX_PERIODS:
        raise _error(f"Too many dynamic partitions: {end}. Limit: {MAX_PERIODS}")
    prefix = given["prefix"]
    if (
        not prefix
        or not (prefix[0].isalpha() or prefix[0] == "_")
        or not all(c.isalnum() or c == "_" for c in prefix)
    ):
        raise _error(f"Invalid dynamic partition prefix: {prefix}")
    buckets = _integer(given, "buckets", 0) or None
    if buckets is not None and buckets <= 0:
        raise _error("Dynamic partition buckets must greater than 0")
    week_start = _integer(given, "start_day_of_week", 1)
    month_start = _integer(given, "start_day_of_month", 1)
    if not 1 <= week_start <= 7:
        raise _error("Invalid dynamic partition start_day_of_week: should be 1 ~ 7")
    if not 1 <= month_start <= 28:
        raise _error("Invalid dynamic partition start_day_of_month: should be 1 ~ 28")
    zone = None
    if given.get("time_zone"):
        try:
            zone = zoneinfo.ZoneInfo(given["time_zone"])
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise _error(f"Unknown or incorrect time zone: '{given['time_zone']}'") from None
    return Rules(
        _boolean(given, "enable", True),
        unit,
        start,
        end,
        prefix,
        buckets,
        _boolean(given, "create_history_partition", False),
        _integer(given, "history_partition_num", -1),
        week_start,
        month_start,
        zone,
    )


def _error(message: str) -> QueryError:
    return QueryError(1105, message)


def _integer(given: dict, key: str, default: int) -> int:
    text = given.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise _error(f"Invalid {PREFIX}{key}: {text}. Expect an integer") from None


def _boolean(given: dict, key: str, default: bool) -> bool:
    text = given.get(key)
    if text is None:
        return default
    if text.lower() not in ("true", "false"):
        raise _error(f"Invalid {PREFIX}{key}: {text}. Expected true or false")
    return text.lower() == "true"


# -- the periods -------------------------------------------------------------------------------


def period_start(rules: Rules, now: datetime.datetime, offset: int) -> datetime.datetime:
    """The start of the period offset units from the one now is in."""
    if rules.unit == "HOUR":
        return now.replace(minute=0, second=0, microsecond=0) + datetime.timedelta(hours=offset)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if rules.unit == "DAY":
        return day + datetime.timedelta(days=offset)
    if rules.unit == "WEEK":
        back = (day.isoweekday() - rules.week_start) % 7
        return day - datetime.timedelta(days=back) + datetime.timedelta(weeks=offset)
    if rules.unit == "MONTH":
        month = day.replace(day=rules.month_start)
        if day.day < rules.month_start:
            month = _months_later(month, -1)
        return _months_later(month, offset)
    return day.replace(month=1, day=1, year=day.year + offset)


def _months_later(moment: datetime.datetime, months: int) -> datetime.datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1)


def period_name(rules: Rules, start: datetime.datetime) -> str:
    if rules.unit == "HOUR":
        return f"{rules.prefix}{start:%Y%m%d%H}"
    if rules.unit == "DAY":
        return f"{rules.prefix}{start:%Y%m%d}"
    if rules.unit == "WEEK":
        year, week, _ = start.isocalendar()
        return f"{rules.prefix}{year}_{week:02d}"
    if rules.unit == "MONTH":
        return f"{rules.prefix}{start:%Y%m}"
    return f"{rules.prefix}{start:%Y}"


def local_now(rules: Rules) -> datetime.datetime:
    return datetime.datetime.now(rules.zone).replace(tzinfo=None)


def wanted(table: Table, rules: Rules, now: datetime.datetime) -> list[st.PartitionDef]:
    """The partitions the rules want at now, each [period start, next period start)."""
    first = 0
    if rules.create_history:
        first = rules.start
        if rules.history_count >= 0:
            first = max(first, -rules.history_count)
        first = max(first, -MAX_PERIODS)
    is_date = _is_date(table)
    definitions = []
    for offset in range(first, rules.end + 1):
        lower, upper = period_start(rules, now, offset), period_start(rules, now, offset + 1)
        definitions.append(
            st.PartitionDef(
                period_name(rules, lower), (_literal(lower, is_date),), (_literal(upper, is_date),)
            )
        )
    return definitions


def _is_date(table: Table) -> bool:
    """Whether the partition column is a DATE (not a DATETIME)."""
    return "TIME" not in table.column(table.partition_columns[0]).type.base


def _literal(moment: datetime.datetime, is_date: bool) -> str:
    return f"{moment:%Y-%m-%d}" if is_date else f"{moment:%Y-%m-%d %H:%M:%S}"


def expired(table: Table, rules: Rules, now: datetime.datetime) -> list[Partition]:
    """The partitions wholly before start periods back (none when start is Doris's default)."""
    if rules.start == NO_START:
        return []
    limit = _literal(period_start(rules, now, rules.start), _is_date(table))
    return [p for p in table.partitions if p.upper and p.upper[0] <= limit]  # canonical literals


@dataclass(frozen=True)
class Scheduled:
    """A table after a run of its rules: the partitions added and dropped, and why some periods
    were left out."""

    table: Table
    added: tuple[str, ...]  # partition names
    dropped: tuple[str, ...]
    create_message: str = ""


def scheduled(table: Table, allocate_ids, now: datetime.datetime | None = None) -> Scheduled | None:
    """The table with the partitions its rules want now (or at now) added and the expired ones
    dropped; None if it has no rules, they are off, or nothing is to change; QueryError if its
    rules are not Doris's. allocate_ids(n): the first of n new ids."""
    from fe.statements.ddl import checked_partitions, with_ids  # ddl makes tables with these

    rules = rules_of(table)
    if rules is None or not rules.enabled:
        return None
    now = now or local_now(rules)
    dropped = tuple(expired(table, rules, now))
    gone = {p.id for p in dropped}
    current = replace(table, partitions=tuple(p for p in table.partitions if p.id not in gone))
    planned: list[Partition] = []
    messages = []
    names = {p.name.lower() for p in (*current.partitions, *current.temporary_partitions)}
    for definition in wanted(current, rules, now):
        if definition.name.lower() in names:
            continue  # made by an earlier run
        so_far = replace(current, partitions=(*current.partitions, *planned))
        try:
            planned.extend(checked_partitions(so_far, [definition]))
        except QueryError as error:
            messages.append(f"{definition.name}: {error.message}")
    if not planned and not dropped:
        return None
    buckets = rules.buckets or table.buckets
    added = ()
    if planned:
        added = with_ids(planned, allocate_ids(len(planned) * (1 + buckets)), buckets)
    in_order = sorted((*current.partitions, *added), key=lambda p: p.lower)
    return Scheduled(
        replace(current, partitions=tuple(in_order)),
        tuple(p.name for p in added),
        tuple(p.name for p in dropped),
        "; ".join(messages)[:1024],
    )
