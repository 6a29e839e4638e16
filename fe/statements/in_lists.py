"""Long IN lists of plain literals (`id IN (1, 2, ..., 5000)`): each reaches the engine as a table,
`IN (SELECT value FROM <table>)`, since sqlglot and DuckDB take time quadratic or worse in a
list's length as SQL text. A list read against a column of another kind (date strings against a
DATE column, number strings against a DECIMAL one) has its values cast to the column's type, as
the engine does for the literals of a short list."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from be.table_schema import TableSchema

LONG_IN_LIST = 64  # longer IN lists of plain literals reach the engine as a table, not as SQL text
LIST_TABLE = "quire_list"  # such a table's Table node carries this in its meta
INT64 = range(-(1 << 63), 1 << 63)


def as_tables(expression: exp.Expression) -> tuple[tuple[str, pa.Table], ...]:
    """Each long IN list of integers or of strings made `IN (SELECT value FROM <table>)`, in
    place; the tables by name."""
    lists = []
    for node in list(expression.find_all(exp.In)):
        values = _list_values(node.expressions)
        if values is None:
            continue
        name = f"{LIST_TABLE}_{len(lists)}"
        lists.append((name, pa.table({"value": values})))
        table = exp.to_table(name)
        table.meta[LIST_TABLE] = True
        node.set("expressions", [])
        node.set("query", exp.select("value").from_(table).subquery())
    return tuple(lists)


def _list_values(items: list[exp.Expression]) -> list | None:
    if len(items) <= LONG_IN_LIST or not all(isinstance(item, exp.Literal) for item in items):
        return None
    if all(item.is_string for item in items):
        return [item.this for item in items]
    if any(item.is_string or not item.this.isdigit() for item in items):
        return None
    values = [int(item.this) for item in items]
    return values if all(value in INT64 for value in values) else None


def typed(expression: exp.Expression, lists: tuple[tuple[str, pa.Table], ...], resolved) -> None:
    """Each list of strings read against a column that holds no strings selects its values cast
    to the column's type, and each list of integers read against a string column casts the
    column to a number (in place). resolved: (table node, database, record or None) of the
    tables the query reads."""
    if not lists:
        return
    kinds = {  # other tables of literals (an INSERT's VALUES) read no IN list
        name: table.schema.field("value").type
        for name, table in lists
        if isinstance(table, pa.Table) and "value" in table.schema.names
    }
    records = {}
    for table, _, record in resolved:
        if record is not None:
            records.setdefault(table.alias_or_name.lower(), []).append(record)
    for node in expression.find_all(exp.In):
        select = node.args.get("query")
        select = select.this if isinstance(select, exp.Subquery) else select
        source = select.args.get("from_") if isinstance(select, exp.Select) else None
        table = source.this if source is not None else None
        if not isinstance(table, exp.Table) or not table.meta.get(LIST_TABLE):
            continue
        column_type = _column_type(node.this, records)
        if column_type is None:
            continue
        if pa.types.is_string(kinds[table.name]) and not _holds_strings(column_type):
            engine_type = _engine_type(column_type)
            if engine_type is not None:
                select.set("expressions", [exp.cast(exp.column("value"), engine_type)])
        elif pa.types.is_integer(kinds[table.name]) and _holds_strings(column_type):
            node.set("this", exp.cast(node.this.copy(), "DOUBLE"))


def _column_type(node: exp.Expression, records: dict) -> pa.DataType | None:
    """The Arrow type of the table column node is, if it is one of a table read (and the only
    one of that name, when it names no table)."""
    if not isinstance(node, exp.Column):
        return None
    name = node.name.lower()
    if node.table:
        candidates = records.get(node.table.lower(), [])
    else:
        candidates = [record for found in records.values() for record in found]
    types = [
        column.type
        for record in candidates
        for column in TableSchema.of(record).columns
        if column.name.lower() == name
    ]
    return types[0] if len(types) == 1 else None


def _holds_strings(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _engine_type(kind: pa.DataType) -> str | None:
    if pa.types.is_date(kind):
        return "DATE"
    if pa.types.is_timestamp(kind):
        return "TIMESTAMP"
    if pa.types.is_time(kind):
        return "TIME"
    if pa.types.is_decimal(kind):
        return f"DECIMAL({kind.precision}, {kind.scale})"
    if pa.types.is_integer(kind):
        return "HUGEINT"
    if pa.types.is_floating(kind):
        return "DOUBLE"
    if pa.types.is_boolean(kind):
        return "BOOLEAN"
    return None
