"""A Stream Load's `columns` header, as Doris reads it: the file's columns in order, each a
column of the table or a name of the load's own, and mappings `target=expression` that compute a
column of the table from them (`columns: dt, page, uid, users=to_bitmap(uid)`). Parsed and
checked by the FE, which hands the backend the source names and each mapping as the engine's SQL
(the FE's rewrites of Doris's and MySQL's functions applied)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from be import engine
from fe.mysql.errors import QueryError
from fe.statements import coercions, generated_columns, mysql_functions
from fe.statements.column_values import default_value
from metadata.records import Table

MAX_COLUMNS_HEADER_CHARS = 64 * 1024


@dataclass(frozen=True)
class LoadColumns:
    sources: tuple[str, ...]  # the file's columns, in order
    mappings: tuple[tuple[str, str], ...]  # (table column, the engine's SQL over the sources)


def load_columns(text: str, table: Table, max_text_bytes: int) -> LoadColumns:
    """The header's columns (the table's, in order, when it is empty); ValueError if it is not
    Doris's form or names what the table lacks."""
    time = mysql_functions.StatementTime(
        datetime.datetime.now(datetime.UTC).astimezone(mysql_functions.time_zone("SYSTEM")),
        max_text_bytes,
    )
    if not text.strip():
        sources = tuple(column.name for column in table.columns)
        return LoadColumns(sources, _generated_mappings(table, set(), time))
    if len(text) > MAX_COLUMNS_HEADER_CHARS:
        raise ValueError(f"the columns header is longer than {MAX_COLUMNS_HEADER_CHARS} characters")
    try:
        select = sqlglot.parse_one(f"SELECT {text}", read="mysql")
    except SqlglotError as error:
        raise ValueError(str(error).splitlines()[0]) from None
    clauses = [key for key, value in select.args.items() if value and key != "expressions"]
    if not isinstance(select, exp.Select) or clauses:
        raise ValueError("a list of columns and mappings `name=expression`")
    named = {column.name.lower(): column.name for column in table.columns}
    sources: list[str] = []
    written: list[tuple[str, exp.Expression]] = []
    for item in select.expressions:
        if isinstance(item, exp.Column) and not item.table:
            sources.append(named.get(item.name.lower(), item.name))
        elif isinstance(item, exp.EQ) and isinstance(item.this, exp.Column) and not item.this.table:
            target = named.get(item.this.name.lower())
            if target is None:
                raise ValueError(f"Unknown column '{item.this.name}' in table")
            written.append((target, item.expression))
        else:
            raise ValueError(f"not a column or a mapping `name=expression`: {item.sql('mysql')}")
    _check_names(sources, [target for target, _ in written])
    known = {source.lower() for source in sources}
    targets = {name for name, _ in written}
    generated = generated_columns.texts(table)
    mappings = []
    for target, expression in written:
        for column in expression.find_all(exp.Column):
            if column.table or column.name.lower() not in known:
                raise ValueError(
                    f"the mapping of {target} reads '{column.sql('mysql')}', no column of the file"
                )
        sql = _engine_sql(target, expression, table, targets, time)
        if target not in generated:  # a generated column is worked out all the same (Doris's)
            mappings.append((target, sql))
    return LoadColumns(tuple(sources), (*mappings, *_generated_mappings(table, targets, time)))


def load_defaults(table: Table) -> dict[str, str]:
    """Each column's default as text, as an INSERT takes it now (CURRENT_TIMESTAMP: this
    moment), for the columns a load leaves out (Stream Load's file, a Spark write's frame)."""
    now = datetime.datetime.now()
    defaults = {}
    for column in table.columns:
        value = default_value(column.default, now)
        if value is not None:
            defaults[column.name] = value.isoformat(sep=" ") if value is now else value
    return defaults


def _engine_sql(target: str, expression: exp.Expression, table: Table, targets, time) -> str:
    try:
        engine.check(expression)
        typed = _typed(expression.copy(), table, targets)
        return mysql_functions.rewritten(coercions.coerced(typed), time).sql(dialect="duckdb")
    except (engine.EngineError, QueryError, SqlglotError) as error:
        raise ValueError(f"the mapping of {target}: {error}") from None


def _generated_mappings(table: Table, targets, time) -> tuple[tuple[str, str], ...]:
    """A mapping of each generated column: its expression over the table's other columns, as
    the file gives them or their defaults (ValueError if it reads one a mapping writes)."""
    generated = generated_columns.over_base_columns(table)
    if not generated:
        return ()
    mappings = []
    for target, expression in generated.items():
        for column in expression.find_all(exp.Column):
            if column.name in targets:
                raise ValueError(
                    f"generated column {target} reads {column.name}, which a mapping writes"
                )
        mappings.append((target, _engine_sql(target, expression, table, targets, time)))
    return tuple(mappings)


def _typed(expression: exp.Expression, table: Table, targets: set[str]) -> exp.Expression:
    """expression with each field it reads typed as the backend hands it over: a column of the
    table as the column, the load's own (or one a mapping writes) as text, converted where MySQL
    converts text (`n = tmp * 10`)."""
    for column in expression.find_all(exp.Column):
        held = table.column(column.name)
        if held is None or held.name in targets:
            kind = "VARCHAR"
        else:
            kind = coercions.COLUMN_TYPES.get(held.type.base)
        if kind is not None:
            column.type = exp.DataType.build(kind)
    return expression


def _check_names(sources: list[str], targets: list[str]) -> None:
    if not sources:
        raise ValueError("the columns header names no column of the file")
    if len({source.lower() for source in sources}) != len(sources):
        raise ValueError("a column is named twice in columns")
    if len(set(targets)) != len(targets):
        raise ValueError("a column is mapped twice in columns")
