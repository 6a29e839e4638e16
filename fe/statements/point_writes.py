"""A prepared UPDATE or DELETE of the rows with one value of a table's first key column
(`UPDATE t SET k = k + 1 WHERE id = ?`, `DELETE FROM t WHERE id = ?`: sysbench's writes), done
with the rows the CN's key index gives as Python values: no tree bound, no engine, no snapshot.
It writes what dml.update and dml.delete would; anything it does not know, or rows not at hand,
takes their path."""

from __future__ import annotations

import asyncio
import decimal
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from be.cn.bounds import ColumnBound, within
from be.logtail.entries import ROW_ID
from be.table_schema import TableSchema
from be.tn.write_set import TableWrite
from fe.security import privileges
from fe.statements import dml, generated_columns, row_policies, transactions
from fe.statements.column_values import column_value
from fe.statements.plain_reads import INT64
from fe.statements.table_data import TableReader, readable_table
from metadata.records import KeyModel, Table

MAX_MATCHED_ROWS = 64  # more rows with the key: the general path
MAX_OWN_ROWS = 4096  # a transaction that wrote more of the table: the general path
SMALL_INTEGERS = ("TINYINT", "SMALLINT", "MEDIUMINT", "INT")  # k + n fits 64 bits, as MySQL's
KEY_INTEGERS = (*SMALL_INTEGERS, "BIGINT")
PLAIN_VALUES = (int, str, decimal.Decimal, type(None))  # parameters bound as the general path does


@dataclass(frozen=True)
class Value:
    """What an assignment sets: a parameter, a literal, or a column plus or minus either."""

    parameter: int = -1
    literal: object = None
    column: str = ""  # the column added to (then parameter or literal is the amount)
    sign: int = 1


@dataclass(frozen=True)
class PreparedWrite:
    db: str
    table: str
    key: str  # the column of `WHERE key = ?`
    key_parameter: int
    assignments: tuple[tuple[str, Value], ...] | None  # None: a DELETE

    def value(self, value: Value, row: dict, values: list):
        given = values[value.parameter] if value.parameter >= 0 else value.literal
        if not value.column:
            return given
        old = row[value.column]
        if old is None or given is None:
            return None
        return old + value.sign * given


def prepared_write(template: exp.Expression, parameter: Callable) -> PreparedWrite | None:
    """template (a marked UPDATE or DELETE) as a PreparedWrite, if it is one; parameter(node) is
    the number of the parameter a node is, else -1."""
    if not isinstance(template, exp.Update | exp.Delete):
        return None
    if any(template.args.get(arg) for arg in template.args if arg not in KNOWN_ARGS):
        return None
    table = template.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        return None
    if (
        table.catalog
        or table.alias
        or any(table.args.get(a) for a in ("version", "partition", "joins"))
    ):
        return None
    where = template.args.get("where")
    term = where.this if where is not None else None
    if not isinstance(term, exp.EQ):
        return None
    key = _column_of(term.this, table.name)
    key_parameter = parameter(term.expression)
    if key is None or key_parameter < 0:
        return None
    if isinstance(template, exp.Delete):
        return PreparedWrite(table.db, table.name, key, key_parameter, None)
    assignments = []
    for assignment in template.expressions:
        if not isinstance(assignment, exp.EQ):
            return None
        column = _column_of(assignment.this, table.name)
        value = _value(assignment.expression, table.name, parameter)
        if column is None or value is None:
            return None
        assignments.append((column, value))
    return PreparedWrite(table.db, table.name, key, key_parameter, tuple(assignments))


KNOWN_ARGS = ("this", "expressions", "where", "hint", "cluster")  # a USING or FROM: the engine's


def _column_of(node: exp.Expression, table: str) -> str | None:
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    return node.name if node.table in ("", table) else None


def _value(node: exp.Expression, table: str, parameter: Callable) -> Value | None:
    if parameter(node) >= 0:
        return Value(parameter=parameter(node))
    literal = _number(node)
    if literal is not None:
        return Value(literal=literal)
    if isinstance(node, exp.Add | exp.Sub):
        column = _column_of(node.this, table)
        sign = 1 if isinstance(node, exp.Add) else -1
        amount = node.expression
        if column is None:
            return None
        if parameter(amount) >= 0:
            return Value(parameter=parameter(amount), column=column, sign=sign)
        literal = _number(amount)
        if type(literal) is int:
            return Value(literal=literal, column=column, sign=sign)
    return None


def _number(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    return None


async def run(session, write: PreparedWrite, values: list):
    """The write done, as dml would; None if it takes the general path."""
    key_value = values[write.key_parameter]
    if type(key_value) is not int or key_value not in INT64:
        return None
    if any(type(value) not in PLAIN_VALUES for value in values):
        return None
    plane = session.services.data_plane
    if plane is None or not session.reads_now(lambda zone: True):
        return None
    db = write.db or session.database or ""
    if db.lower() == "information_schema":
        return None
    reader = TableReader(session)
    table = readable_table(session, db, write.table, privileges.LOAD)
    plan = None if row_policies.binds_any(session, table) else _plan(write, table)
    if plan is None:
        return None
    schema, names = plan
    transaction = reader.transaction
    pending = transaction.writes.get(table.id) if transaction is not None else None
    if pending is not None and pending.rows > MAX_OWN_ROWS:
        return None
    bound = ColumnBound(write.key, key_value, key_value)
    rows = await _committed_rows(plane, reader, table, schema, bound, names)
    if rows is None:
        return None
    if pending is not None:
        rows = _as_transaction_sees(rows, pending, write.key, key_value, names)
    if write.assignments is None:
        return await _delete(session, reader, table, schema, rows)
    return await _update(session, reader, table, schema, write, rows, values)


async def _committed_rows(
    plane, reader: TableReader, table: Table, schema: TableSchema, bound: ColumnBound, names
) -> list[dict] | None:
    """The committed rows with the key at the snapshot, by name: from the key index at hand,
    else read off the event loop (every read a round trip to a node); None if they are not
    at hand, or more than MAX_MATCHED_ROWS."""
    if plane.reads_at_hand:
        found = plane.values_within(schema, reader.ts, bound, names, MAX_MATCHED_ROWS)
        return None if found is None else [dict(zip(names, row, strict=True)) for row in found]
    read = await asyncio.to_thread(reader.committed, table, (bound,))
    read = within(read, (bound,))
    if read.num_rows > MAX_MATCHED_ROWS:
        return None
    return read.select(list(names)).to_pylist()


def _plan(write: PreparedWrite, table: Table) -> tuple[TableSchema, tuple[str, ...]] | None:
    if table.key_model is KeyModel.AGGREGATE or not table.key_columns:
        return None
    if write.assignments is not None and generated_columns.has_any(table):
        return None  # the engine works the generated columns out
    key = table.column(write.key)
    if key is None or key.name != table.key_columns[0] or key.type.base not in KEY_INTEGERS:
        return None
    for name, value in write.assignments or ():
        column = table.column(name)
        if column is None or (table.key_model is KeyModel.UNIQUE and column.is_key):
            return None  # refused by the general path, with its error
        if value.column:
            added = table.column(value.column)
            if column.type.base not in SMALL_INTEGERS or added is None:
                return None
            if added.type.base not in SMALL_INTEGERS:
                return None
    return TableSchema.of(table), (ROW_ID, *[column.name for column in table.columns])


def _as_transaction_sees(rows: list[dict], pending, key: str, value: int, names) -> list[dict]:
    """rows (committed at the snapshot) as the transaction sees them: those it deleted gone, its
    own rows with the key added."""
    deleted = pending.deleted_ids
    rows = [row for row in rows if row[ROW_ID] not in deleted]
    own_ids = pending.own_rows_with(value)
    if not own_ids:
        return rows
    inserts = pending.inserts
    own = inserts.filter(pc.is_in(inserts.column(ROW_ID), pa.array(own_ids, pa.int64())))
    if pending.schema.replaces_on_key:
        rows = []
    return rows + own.select(list(names)).to_pylist()


async def _delete(session, reader: TableReader, table: Table, schema: TableSchema, rows):
    if not rows:
        return dml.Result(affected_rows=0)
    await _commit(session, reader, table, schema, [_row_id_and_keys(table, row) for row in rows])
    return dml.Result(affected_rows=len(rows))


async def _update(session, reader, table: Table, schema, write: PreparedWrite, rows, values):
    changed = []
    for row in rows:
        new = dict(row)
        for name, value in write.assignments:
            new[name] = _as_stored(table, name, write.value(value, row, values))
        if new != row:
            changed.append((row, new))
    if changed:
        deletes = [_row_id_and_keys(table, old) for old, _ in changed]
        await _commit(session, reader, table, schema, deletes, [new for _, new in changed])
    return dml.Result(
        affected_rows=len(changed),
        info=f"Rows matched: {len(rows)}  Changed: {len(changed)}  Warnings: 0",
    )


async def _commit(session, reader, table: Table, schema, deletes: list[tuple], inserts=()):
    """The write of deletes (row id, *key values) and inserts (rows as dicts, replacing no row
    but those deleted), as dml.commit does it: into the open transaction (as tuples, where its
    own rows are found by one key column), else committed at once."""
    reader.refuse_writes()
    transaction = transactions.current(session)
    if transaction is not None and transaction.takes_rows(schema):
        names = schema.names
        rows = [tuple(row[name] for name in names) for row in inserts]
        transaction.add_rows(table, schema, deletes, rows)
        return
    write = TableWrite(
        schema,
        inserts=_stored_rows(schema, inserts) if inserts else None,
        deletes=dml.deletes_table(table, deletes),
    )
    if transaction is not None:
        transaction.add(table, write, None)  # the inserts replace only the rows deleted
    else:
        await dml.commit_writes(session, reader.ts, (write,))


def _stored_rows(schema: TableSchema, rows: list[dict]) -> pa.Table:
    """rows (values as the table keeps them: read from it, or converted) as the table's columns."""
    arrow = schema.arrow()
    arrays = [pa.array([row[field.name] for row in rows], field.type) for field in arrow]
    return pa.Table.from_arrays(arrays, schema=arrow)


def _as_stored(table: Table, name: str, value):
    """value as the column keeps it (refused as the column refuses it)."""
    return column_value(value, table.column(name))


def _row_id_and_keys(table: Table, row: dict) -> tuple:
    return (row[ROW_ID], *[row[key] for key in table.key_columns])
