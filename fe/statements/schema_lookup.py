"""Simple information_schema SELECTs answered from the FE's built tables, without the engine:
columns of one table, filtered by `column = literal` conditions joined with AND, with an optional
LIMIT (what clients and tools ask at connect time and per table). Anything else goes to the engine,
which gives the same answers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from fe.mysql.results import Result, column
from fe.statements.information_schema import DEFINITIONS, INFORMATION_SCHEMA, SchemaTable

RESULT_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT"}  # as the engine reports them
LITERAL_TYPES = {pa.string(): str, pa.int64(): int}
SIMPLE_PARTS = {"expressions", "from_", "where", "limit"}  # of the SELECT
TABLE_PARTS = {"this", "db", "alias"}  # of its table
COLUMN_PARTS = {"this", "table"}  # of a column it reads


class NotSimple(Exception):
    pass


@dataclass(frozen=True)
class Lookup:
    table: str  # its name in information_schema, lower case
    database: str | None  # as the query names it (None: the session's database)
    outputs: tuple[str, ...]  # the table's columns the query returns, in order
    conditions: tuple[tuple[str, object], ...]  # (column, value) pairs that must all be equal
    limit: int | None
    column_types: tuple[str, ...]

    async def run(self, session, names: tuple[str, ...]) -> Result | None:
        """The answer under the result column names; None if the query is not on
        information_schema after all (the session's database is another). A table not built
        yet is built off the event loop (a big catalog takes a while)."""
        database = self.database or session.database or ""
        if database.lower() != INFORMATION_SCHEMA:
            return None
        needed = {*self.outputs, *(name for name, _ in self.conditions)}
        tables = session.services.information_schema
        built = tables.cached(self.table, session, needed) or await asyncio.to_thread(
            tables.table, self.table, session, needed
        )
        values = built.values
        tests = [(values[name], value) for name, value in self.conditions]
        indexes = [
            index
            for index in range(built.row_count)
            if all(column[index] == value for column, value in tests)
        ]
        if self.limit is not None:
            indexes = indexes[: self.limit]
        columns = [values[name] for name in self.outputs]
        return Result(
            columns=[
                column(name, kind) for name, kind in zip(names, self.column_types, strict=True)
            ],
            rows=[tuple(column[index] for column in columns) for index in indexes],
        )


def lookup_of(select: exp.Expression) -> Lookup | None:
    """The query as a Lookup, if it is one."""
    try:
        return _lookup(select)
    except NotSimple:
        return None


def _lookup(select: exp.Expression) -> Lookup:
    if not isinstance(select, exp.Select) or not _parts(select) <= SIMPLE_PARTS:
        raise NotSimple()
    source = select.args.get("from_")
    table = source.this if source else None
    if not isinstance(table, exp.Table) or not _parts(table) <= TABLE_PARTS:
        raise NotSimple()
    alias = table.args.get("alias")
    definition = DEFINITIONS.get(table.name.lower())
    if definition is None or (table.db and table.db.lower() != INFORMATION_SCHEMA):
        raise NotSimple()
    if alias is not None and alias.columns:
        raise NotSimple()
    qualifiers = {table.alias_or_name.lower()}
    outputs = tuple(
        _column(
            projection.this if isinstance(projection, exp.Alias) else projection,
            definition,
            qualifiers,
        )
        for projection in select.expressions
    )
    types = tuple(RESULT_TYPES.get(definition.columns[name][0]) for name in outputs)
    if None in types:
        raise NotSimple()
    return Lookup(
        table.name.lower(),
        table.db or None,
        outputs,
        _conditions(select.args.get("where"), definition, qualifiers),
        _limit(select.args.get("limit")),
        types,
    )


def _column(node: exp.Expression, definition: SchemaTable, qualifiers: set[str]) -> str:
    """The table's column node names (as the table spells it); NotSimple if it is no plain
    column of the table."""
    if type(node) is not exp.Column or not isinstance(node.this, exp.Identifier):
        raise NotSimple()
    if not _parts(node) <= COLUMN_PARTS or (node.table and node.table.lower() not in qualifiers):
        raise NotSimple()
    wanted = node.name.lower()
    for name in definition.columns:
        if name.lower() == wanted:
            return name
    raise NotSimple()


def _conditions(
    where: exp.Where | None, definition: SchemaTable, qualifiers: set[str]
) -> tuple[tuple[str, object], ...]:
    if where is None:
        return ()
    conditions = []
    for condition in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if not isinstance(condition, exp.EQ):
            raise NotSimple()
        left, right = condition.this, condition.expression
        if type(left) is exp.Literal:
            left, right = right, left
        name = _column(left, definition, qualifiers)
        if type(right) is not exp.Literal:
            raise NotSimple()
        literal_type = LITERAL_TYPES.get(definition.columns[name][0])
        if literal_type is str and right.is_string:
            conditions.append((name, right.this))
        elif literal_type is int and not right.is_string and right.this.isdigit():
            conditions.append((name, int(right.this)))
        else:
            raise NotSimple()
    return tuple(conditions)


def _limit(limit: exp.Limit | None) -> int | None:
    """LIMIT n's n; None without a LIMIT."""
    if limit is None:
        return None
    count = limit.expression
    if not _parts(limit) <= {"expression"} or type(count) is not exp.Literal:
        raise NotSimple()
    if count.is_string or not count.this.isdigit():
        raise NotSimple()
    return int(count.this)


def _parts(node: exp.Expression) -> set[str]:
    """The arguments node has (a value other than None, False or empty)."""
    return {key for key, value in node.args.items() if value}
