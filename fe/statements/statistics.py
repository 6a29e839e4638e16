"""Doris's table statistics: ANALYZE TABLE works them out over every row of the table (as
Doris's FULL method) and journals them; SHOW TABLE STATS and SHOW COLUMN STATS show them as
Doris does; DROP STATS forgets them. Quire plans no query by them: they are for the user."""

from __future__ import annotations

import datetime
import decimal
import time

from sqlglot import exp

from fe.mysql.errors import QueryError
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import queries, row_policies, views
from fe.statements.names import resolve_table
from fe.statements.show import text_result
from metadata import ops
from metadata.records import ColumnStats, Table, TableStats

NOT_ANALYZED_TYPES = frozenset({"ARRAY", "MAP", "STRUCT", "JSON", "JSONB", "VARIANT", "HLL",
                                "BITMAP", "QUANTILE_STATE", "AGG_STATE"})  # fmt: skip
TEXT_TYPES = frozenset({"CHAR", "VARCHAR", "STRING", "TEXT"})
WIDTHS = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "LARGEINT": 16,
    "FLOAT": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "DATEV2": 4,
    "DATETIME": 8,
    "DATETIMEV2": 8,
    "IPV4": 4,
    "IPV6": 16,
}  # fmt: skip  bytes a value of the type takes; DECIMAL's by its precision
TABLE_TITLES = [
    "updated_rows", "query_times", "row_count", "updated_time", "columns", "trigger",
    "new_partition", "user_inject",
]  # fmt: skip
COLUMN_TITLES = [
    "column_name", "index_name", "count", "ndv", "num_null", "data_size", "avg_size_byte", "min",
    "max", "method", "type", "trigger", "query_times", "updated_time", "update_rows",
    "last_analyze_row_count",
]  # fmt: skip


async def analyze(session, statement: st.Analyze) -> list:
    """The statistics of the named columns (every column Doris analyzes, by default), as one
    operation."""
    database, table = _table(session, statement.table, privileges.SELECT)
    columns = _columns(table, statement.columns)
    query = queries.plan_select(_query(database.name, table, columns))
    (row,) = [tuple(row) for row in (await queries.run_select(session, query)).rows]
    row_count = row[0]
    stats = []
    for index, column in enumerate(columns):
        count, ndv, data_size, least, most = row[1 + 5 * index : 6 + 5 * index]
        size = data_size if column.type.base in TEXT_TYPES else count * _width(column)
        stats.append(
            ColumnStats(
                column.name, row_count, ndv, row_count - count, int(size or 0),
                _sql_text(least), _sql_text(most),
            )
        )  # fmt: skip
    now_ms = int(time.time() * 1000)
    return [ops.SetTableStats(TableStats(table.id, row_count, now_ms, tuple(stats)))]


def drop_stats(session, statement: st.DropStats) -> list:
    _, table = _table(session, statement.table, privileges.ALTER)
    columns = tuple(column.name for column in _columns(table, statement.columns, every=True))
    if table.id not in session.catalog.table_stats:
        return []
    return [ops.DropTableStats(table.id, () if not statement.columns else columns)]


async def show_stats(session, statement: st.ShowStats):
    _, table = _table(session, statement.table, privileges.SELECT)
    stats = session.catalog.table_stats.get(table.id)
    if statement.kind == "TABLE":
        return text_result(TABLE_TITLES, [] if stats is None else [_table_row(stats)])
    wanted = {c.name.lower() for c in _columns(table, statement.columns, every=True)}
    found = {c.column.lower(): c for c in stats.columns} if stats is not None else {}
    # least and greatest values are the table's: not shown to a reader a row policy limits
    limited = row_policies.binds_any(session, table)
    rows = [
        _column_row(table, stats, found[column.name.lower()], limited)
        for column in table.columns
        if column.name.lower() in wanted and column.name.lower() in found
    ]
    return text_result(COLUMN_TITLES, rows)


ANALYZE_TITLES = [
    "job_id", "catalog_name", "db_name", "tbl_name", "col_name", "job_type", "analysis_type",
    "message", "last_exec_time_in_ms", "state", "progress", "schedule_type", "start_time",
    "end_time", "priority", "enable_partition",
]  # fmt: skip


async def show_analyze(session, statement: st.ShowAnalyze):
    """Doris's SHOW ANALYZE: each table's last ANALYZE (run to its end when it was asked: a job
    FINISHED, its id the table's), of the tables the user may read."""
    only = None
    if statement.table is not None:
        only = _table(session, statement.table, privileges.SELECT)[1].id
    rows = []
    for table_id, stats in sorted(session.catalog.table_stats.items()):
        table = session.catalog.tables.get(table_id)
        database = session.catalog.dbs.get(table.db_id) if table is not None else None
        if database is None or (only is not None and table_id != only):
            continue
        if statement.job_id is not None and table_id != statement.job_id:
            continue
        if statement.state not in (None, "FINISHED"):
            continue
        if not privileges.has(session.user, privileges.SELECT, database.name, table.name):
            continue
        names = ", ".join(c.column for c in stats.columns)
        done = _time(stats.updated_ms)
        count = len(stats.columns)
        rows.append((
            str(table_id), "internal", database.name, table.name, f"[{names}]", "MANUAL",
            "FUNDAMENTALS", "", done, "FINISHED",
            f"{count} Finished/0 Failed/0 In Progress/{count} Total", "ONCE", done, done,
            "HIGH", "false",
        ))  # fmt: skip
    return text_result(ANALYZE_TITLES, rows)


def _table(session, name: st.TableName, privilege: str) -> tuple:
    database, table = resolve_table(session, name)
    session.require(privilege, database.name, table.name)
    if views.is_view(table):
        raise QueryError(1105, f"{table.name} is a view: views have no statistics")
    return database, table


def _columns(table: Table, names: tuple[str, ...], every: bool = False) -> list:
    """The columns named (1105 for one the table lacks, as Doris), or every column analyzed."""
    if not names:
        return [c for c in table.columns if every or c.type.base not in NOT_ANALYZED_TYPES]
    columns = []
    for name in names:
        column = table.column(name)
        if column is None:
            raise QueryError(1105, f"Column: {name} not exists")
        if not every and column.type.base in NOT_ANALYZED_TYPES:
            raise QueryError(
                1105, f"Column {column.name} of type {column.type.sql} is not analyzed"
            )
        columns.append(column)
    return columns


def _query(db: str, table: Table, columns: list) -> exp.Select:
    """One pass over the rows: the row count, then per column its values, distinct values,
    text bytes, least and greatest value."""
    projections: list[exp.Expression] = [exp.Count(this=exp.Star())]
    for column in columns:
        value = exp.column(column.name, quoted=True)
        size = (
            exp.Sum(this=exp.Anonymous(this="OCTET_LENGTH", expressions=[value.copy()]))
            if column.type.base in TEXT_TYPES
            else exp.Literal.number(0)
        )
        projections += [
            exp.Count(this=value.copy()),
            exp.Count(this=exp.Distinct(expressions=[value.copy()])),
            size,
            exp.Min(this=value.copy()),
            exp.Max(this=value.copy()),
        ]
    source = exp.table_(table.name, db=db, quoted=True)
    return exp.select(*projections).from_(source)


def _width(column) -> int:
    base = column.type.base
    if base in ("DECIMAL", "DECIMALV3", "DECIMALV2"):
        return column.type.index_size
    return WIDTHS.get(base, 8)


def _sql_text(value) -> str | None:
    """A least or greatest value as Doris writes it: a number as it is, anything else quoted."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
    elif isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    else:
        text = str(value)
    return "'" + text.replace("'", "''") + "'"


def _table_row(stats: TableStats) -> tuple:
    names = ", ".join(c.column for c in stats.columns)
    return ("0", "0", str(stats.row_count), _time(stats.updated_ms), f"[{names}]", "MANUAL",
            "false", "false")  # fmt: skip


def _column_row(
    table: Table, stats: TableStats, column: ColumnStats, limited: bool = False
) -> tuple:
    present = column.count - column.nulls
    average = column.data_size / present if present else 0.0
    least = "N/A" if column.min is None or limited else column.min
    greatest = "N/A" if column.max is None or limited else column.max
    return (
        column.column, table.name, _double(column.count), _double(column.ndv),
        _double(column.nulls), _double(column.data_size), _double(average), least, greatest,
        "FULL", "FUNDAMENTALS", "MANUAL", "0", _time(stats.updated_ms), "0",
        str(stats.row_count),
    )  # fmt: skip


def _double(value: float) -> str:
    """A count as Doris shows it: Java's text of a double (6001215.0, 4.800972E7)."""
    value = float(value)
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    mantissa, exponent = f"{value:.15E}".split("E")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


def _time(millis: int) -> str:
    return datetime.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S")
