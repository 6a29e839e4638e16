"""A prepared read bounded on a table's first key column (`SELECT c FROM t WHERE id = ?`,
`... WHERE id BETWEEN ? AND ?`, with SUM, DISTINCT or ORDER BY: sysbench's reads) answered from
the CN's key index as Python values: no tree, no Arrow call, no engine. Anything else, a
transaction's read of a table it wrote, or a session reading as of a time, takes the general
path (queries.run_prepared_read)."""

from __future__ import annotations

from be.cn.bounds import ColumnBound
from be.engine import Answer
from be.table_schema import TableSchema
from fe.statements import mysql_functions, row_policies, transactions
from fe.statements.plain_reads import (
    INT64,
    MAX_ROWS,
    TOTAL_TYPE,
    PreparedRead,
    rows_shaped,
    shape_description,
    shaped_rows,
)
from fe.statements.table_data import readable_table
from metadata.records import Table

UNSIGNED_OR_LARGE = ("LARGEINT",)
VALUE_TYPES = frozenset(  # the engine's types whose values need no look at the rows to describe
    ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "VARCHAR", "DATE")
)


def answer(session, read: PreparedRead, values: list) -> Answer | None:
    """read's answer from the key index, if it is bounded on the table's first key column only
    and the CN has the rows at hand; else None."""
    if len(read.terms) != 1:
        return None
    column, low, high = read.terms[0]
    low, high = values[low], values[high]
    if type(low) is not int or type(high) is not int or low not in INT64 or high not in INT64:
        return None
    plane = session.services.data_plane
    if plane is None or not plane.reads_at_hand:
        return None
    if not session.reads_now(_known_zone):
        return None
    db = read.db or session.database or ""
    if db.lower() == "information_schema":
        return None
    asked = (session.catalog.journal_id, db, session.username, session.user_host)
    kept_reads = session.point_read_tables
    kept = kept_reads.get(id(read))
    if kept is not None and kept[0] is read and kept[1] == asked:
        table, plan = kept[2], kept[3]
    else:  # the grants and the table are as they were until the catalog moves
        table = readable_table(session, db, read.table)
        plan = None if row_policies.binds_any(session, table) else _plan(read, table)
        if len(kept_reads) >= MAX_KEPT_READS:
            kept_reads.clear()
        kept_reads[id(read)] = (read, asked, table, plan)
    if plan is None:
        return None
    schema, types, described = plan
    if low > high:
        return Answer(described, shaped_rows([[] for _ in described], read.shape, types))
    transaction = transactions.current(session)
    if transaction is None:
        ts = max(plane.read_ts(), session.last_commit_ts)
    elif table.id in transaction.writes:
        return None  # its own writes are seen through the general path
    else:
        ts = transaction.snapshot_ts
    bound = ColumnBound(column, low, high)
    rows = plane.values_within(schema, ts, bound, read.shape.columns, MAX_ROWS)
    if rows is None:
        return None
    found = rows_shaped(rows, read.shape, types)
    return None if found is None else Answer(described, found)


MAX_KEPT_READS = 64  # per session: the tables and plans of its last prepared reads
MAX_KNOWN_ZONES = 256
_KNOWN_ZONES: set[str] = set()


def _known_zone(zone: str) -> bool:
    """Whether the session's time zone is one MySQL knows (an unknown one is refused by the
    general path, with its error)."""
    if zone in _KNOWN_ZONES:
        return True
    try:
        mysql_functions.time_zone(zone)
    except mysql_functions.UnknownTimeZone:
        return False
    if len(_KNOWN_ZONES) >= MAX_KNOWN_ZONES:
        _KNOWN_ZONES.clear()
    _KNOWN_ZONES.add(zone)
    return True


MAX_KEPT_PLANS = 4096
_PLANS: dict[tuple[int, int], tuple[PreparedRead, Table, tuple | None]] = {}


def _plan(read: PreparedRead, table: Table) -> tuple[TableSchema, dict, list] | None:
    """(schema, Arrow types of read's columns, the engine's description of its answer) if the
    index answers read on table; kept per read and table record (neither ever changes)."""
    kept = _PLANS.get((id(read), id(table)))
    if kept is not None and kept[0] is read and kept[1] is table:
        return kept[2]
    plan = _planned(read, table)
    if len(_PLANS) >= MAX_KEPT_PLANS:
        _PLANS.clear()
    _PLANS[id(read), id(table)] = (read, table, plan)
    return plan


def _planned(read: PreparedRead, table: Table) -> tuple[TableSchema, dict, list] | None:
    column = read.terms[0][0]
    if not table.key_columns or table.key_columns[0] != column:
        return None
    if table.column(column).type.base in UNSIGNED_OR_LARGE:
        return None
    schema = TableSchema.of(table)
    types = {item.name: item.type for item in schema.columns}
    types = {name: types[name] for name in read.shape.columns if name in types}
    described = shape_description(types, read.shape)
    if described is None or any(
        engine_type not in VALUE_TYPES and not engine_type.startswith(("DECIMAL", TOTAL_TYPE))
        for _, engine_type in described
    ):
        return None
    return schema, types, described
