"""Doris's auto partitions: a table made with `AUTO PARTITION BY RANGE (date_trunc(c, 'unit'))`
or `AUTO PARTITION BY LIST (c, ...)` gets the partitions its rows need as an INSERT writes them:
[the unit's start, the next unit's) named p<start as yyyyMMddHHmmss>, or one partition per list
value named as Doris names it (p, each value's letters and digits or its characters' code points
in hex, and its length). The rule is kept as the table property AUTO_PARTITION (hidden)."""

from __future__ import annotations

import dataclasses
import datetime

import pyarrow as pa
import pyarrow.compute as pc

from be.load.auto_partitions import partition_values
from be.table_schema import TableSchema
from be.tn import placement
from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata import ops
from metadata.records import Table

AUTO_PARTITION = "quire.auto_partition"  # the table property: a RANGE unit, or LIST
LIST = "list"
UNITS = ("year", "month", "day", "hour", "minute", "second")
MAX_NAME_CHARACTERS = 50


def rule_of(table: Table) -> str | None:
    return dict(table.properties).get(AUTO_PARTITION)


def shown(table: Table) -> str | None:
    """The AUTO PARTITION BY clause SHOW CREATE TABLE writes, if the table has one."""
    rule = rule_of(table)
    if rule is None:
        return None
    columns = ", ".join(f"`{c}`" for c in table.partition_columns)
    if rule == LIST:
        return f"AUTO PARTITION BY LIST ({columns})"
    return f"AUTO PARTITION BY RANGE (date_trunc({columns}, '{rule}'))"


def checked_rule(statement: st.CreateTable, table: Table) -> None:
    """Doris's checks of an auto partition rule at CREATE TABLE (1105)."""
    rule = statement.auto_partition
    if rule == LIST:
        return
    if rule not in UNITS:
        raise QueryError(
            1105,
            f"auto create partition only support year|month|day|hour|minute|second date_trunc, not '{rule}'",
        )
    column = table.column(table.partition_columns[0])
    if column.type.base not in ("DATE", "DATEV2", "DATETIME", "DATETIMEV2"):
        raise QueryError(
            1105, "auto create partition only support date_trunc function of date/datetime"
        )
    if column.nullable:
        raise QueryError(1105, "AUTO RANGE PARTITION doesn't support NULL column")


async def ensured(session, table: Table, rows: pa.Table) -> Table:
    """The table with a partition for each of rows (those it lacks added and committed first,
    one statement at a time; on a follower, by the master FE); as it was when it is no auto
    partition table."""
    limit = session.services.config["max_auto_partition_num"]
    writer = session.services.writer
    if writer.is_leader() or rule_of(table) is None or not rows.num_rows:
        return await grown(writer, session.catalog, limit, table, rows)
    missing = _unplaced(table, rows)
    if not missing.num_rows:
        return table
    await session.services.forwarder.auto_partitions(
        table.id, partition_values(missing, table.partition_columns)
    )
    return session.catalog.tables.get(table.id) or table


def rows_of_values(table: Table, values: list[list]) -> pa.Table:
    """partition_values' values as the table's partition columns (QueryError 1105 if they are not)."""
    schema = TableSchema.of(table)
    columns = {}
    for position, name in enumerate(table.partition_columns):
        arrow_type = schema.column(name).type
        given = pa.array([value[position] for value in values])
        try:
            columns[name] = given.cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise QueryError(1105, f"auto partition values of {name}: {error}") from None
    return pa.table(columns)


async def grown(writer, catalog, limit: int, table: Table, rows: pa.Table) -> Table:
    """ensured's work, for an INSERT's session or a Stream Load (fe/cluster/stream_load_front)."""
    if rule_of(table) is None or not rows.num_rows or not _unplaced(table, rows).num_rows:
        return table
    if not writer.is_leader():
        raise QueryError(
            1105, f"Table {table.name} needs new auto partitions: insert its rows on the master FE"
        )
    async with writer.catalog_lock:
        current = catalog.tables.get(table.id)
        if current is None:
            raise QueryError(1146, f"Table '{table.name}' doesn't exist")
        missing = _unplaced(current, rows)
        if not missing.num_rows:
            return current
        wanted = _definitions(current, missing)
        if len(current.partitions) + len(wanted) > limit:
            raise QueryError(
                1105,
                f"Partition num of table {current.name} would exceed max_auto_partition_num "
                f"({limit})",
            )
        from fe.statements.ddl import checked_partitions, with_ids

        planned = checked_partitions(current, wanted)
        first = writer.allocate_ids(len(planned) * (1 + current.buckets))
        added = with_ids(planned, first, current.buckets)
        larger = dataclasses.replace(current, partitions=(*current.partitions, *added))
        await writer.commit([ops.ReplaceTable(larger)])
    return catalog.tables.get(table.id) or larger


def _unplaced(table: Table, rows: pa.Table) -> pa.Table:
    indexes = placement.partition_indexes(TableSchema.of(table), rows, strict=False)
    return rows.filter(pc.is_null(indexes))


def _definitions(table: Table, rows: pa.Table) -> list[st.PartitionDef]:
    rule = rule_of(table)
    if rule == LIST:
        columns = [rows.column(name).to_pylist() for name in table.partition_columns]
        values = [v for v in dict.fromkeys(zip(*columns, strict=True)) if None not in v]
        return [_list_partition(value) for value in values]  # NULL has no partition
    column = table.column(table.partition_columns[0])
    starts = sorted({_truncated(v, rule) for v in rows.column(column.name).to_pylist()})
    return [
        _range_partition(start, rule, column.type.base.startswith("DATETIME")) for start in starts
    ]


def _truncated(value, unit: str) -> datetime.datetime:
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if unit == "year":
        return value.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        return value.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return value.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "hour":
        return value.replace(minute=0, second=0, microsecond=0)
    if unit == "minute":
        return value.replace(second=0, microsecond=0)
    return value.replace(microsecond=0)


def _next(start: datetime.datetime, unit: str) -> datetime.datetime:
    if unit == "year":
        return start.replace(year=start.year + 1)
    if unit == "month":
        year, month = divmod(start.month, 12)
        return start.replace(year=start.year + year, month=month + 1)
    step = {"day": 86400, "hour": 3600, "minute": 60, "second": 1}[unit]
    return start + datetime.timedelta(seconds=step)


def _range_partition(start: datetime.datetime, unit: str, with_time: bool) -> st.PartitionDef:
    end = _next(start, unit)

    def text(moment: datetime.datetime) -> str:
        return moment.isoformat(sep=" ") if with_time else moment.date().isoformat()

    name = "p" + start.strftime("%Y%m%d%H%M%S")
    return st.PartitionDef(name, lower=(text(start),), upper=(text(end),))


def _list_partition(value: tuple) -> st.PartitionDef:
    texts = tuple(_value_text(item) for item in value)
    parts = []
    for text in texts:
        encoded = "".join(c if c.isascii() and c.isalnum() else f"{ord(c):x}" for c in text)
        parts.append(f"{encoded}{len(text)}")
    name = "p" + "".join(parts)
    if len(name) > MAX_NAME_CHARACTERS:
        raise QueryError(
            1105,
            f"Partition name's length is over limit of {MAX_NAME_CHARACTERS}. abort to create.",
        )
    return st.PartitionDef(name, values=(texts,))


def _value_text(item) -> str:
    if isinstance(item, datetime.datetime):
        return item.isoformat(sep=" ")
    if isinstance(item, bool):
        return "1" if item else "0"
    return str(item)
