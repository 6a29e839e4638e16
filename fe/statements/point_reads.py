"""A prepared point read by a table's first key column (`SELECT c FROM t WHERE id = ?`, sysbench's
point select) answered from the CN's key index as Python values: no tree, no Arrow call, no
engine. Anything else, or a session in a transaction or reading as of a time, takes the general
path (queries.run_prepared_read)."""

from __future__ import annotations

from be.engine import Answer
from be.table_schema import TableSchema
from fe.statements import mysql_functions, transactions
from fe.statements.plain_reads import INT64, PreparedRead, _engine_type
from fe.statements.table_data import readable_table

UNSIGNED_OR_LARGE = ("LARGEINT",)
VALUE_TYPES = frozenset(  # the engine's types whose values need no look at the rows to describe
    ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "VARCHAR", "DATE")
)


def answer(session, read: PreparedRead, values: list) -> Answer | None:
    """read's answer from the key index, if it is a plain point read on the table's first key
    column and the CN has the rows at hand; else None."""
    shape = read.shape
    if shape.distinct or shape.order or shape.totals or any(o is not None for o in shape.offsets):
        return None
    if len(read.terms) != 1:
        return None
    column, low, high = read.terms[0]
    key = values[low]
    if low != high or type(key) is not int or key not in INT64:
        return None
    plane = session.services.data_plane
    point_rows = getattr(plane, "point_rows", None)
    if point_rows is None or transactions.current(session) is not None:
        return None
    if session.variable("read_ts") or not _known_zone(str(session.variable("time_zone"))):
        return None
    db = read.db or session.database or ""
    if db.lower() == "information_schema":
        return None
    table = readable_table(session, db, read.table)
    if not table.key_columns or table.key_columns[0] != column:
        return None
    if table.column(column).type.base in UNSIGNED_OR_LARGE:
        return None
    schema = TableSchema.of(table)
    described = _described(schema, shape.columns)
    if described is None:
        return None
    ts = max(plane.read_ts(), session.last_commit_ts)
    rows = point_rows(schema, ts, key, shape.columns)
    return None if rows is None else Answer(described, rows)


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


def _described(schema: TableSchema, names: tuple[str, ...]) -> list[tuple[str, str]] | None:
    types = {column.name: column.type for column in schema.columns}
    described = []
    for name in names:
        arrow = types.get(name)
        engine_type = None if arrow is None else _engine_type(arrow)
        if engine_type not in VALUE_TYPES and not (engine_type or "").startswith("DECIMAL"):
            return None
        described.append((name, engine_type))
    return described
