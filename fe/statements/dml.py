"""INSERT, UPDATE and DELETE: the rows are worked out at the statement's snapshot (by the query
engine where they come from a query) and committed by the TN as one write set, so a statement
writes all of its rows or none.

DUPLICATE KEY tables keep every row; UNIQUE KEY tables replace the row with the same key (the TN
does it as it commits, as Doris's merge on write); AGGREGATE KEY tables keep rows as written and
are merged by their keys when read."""

from __future__ import annotations

import asyncio
import datetime
import decimal

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from be.logtail.entries import ROW_ID
from be.service.errors import ServiceError
from be.table_schema import TableSchema
from be.tn import errors as commit_errors
from be.tn import placement
from be.tn.loads import LoadClaim
from be.tn.state import deletes_table as deletes_of
from be.tn.write_set import TableWrite, WriteSet
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.sql.literal_insert import LiteralColumn
from fe.sql.parser import INTERNAL_CATALOG, parse_with_sqlglot, tokenize
from fe.statements import (
    auto_partitions,
    generated_columns,
    materialized_views,
    partition_pruning,
    queries,
    transactions,
    values_expressions,
)
from fe.statements.column_values import (
    column_array,
    column_value,
    default_value,
    literal_array,
)
from fe.statements.table_data import SchemaChanged, TableReader, data_plane, unavailable
from metadata import ops
from metadata.records import Column, KeyModel, Table

COMMIT_WAIT_SECONDS = 60.0
NOT_LITERAL = object()


# -- INSERT -------------------------------------------------------------------------------------


def _check_on_duplicate_key(conflict: exp.Expression | None, table: Table, named) -> None:
    """ON DUPLICATE KEY UPDATE where it means what an INSERT does here: on a DUPLICATE KEY table
    (no unique key: it never updates, as in MySQL), or on a UNIQUE KEY table when the INSERT
    writes every column and the update sets each other column to VALUES(itself) (the upsert of
    loading tools), which replaces the row. Any other is refused, never quietly ignored."""
    if conflict is None:
        return
    if table.key_model is KeyModel.DUPLICATE:
        return
    names = {column.name.lower() for column in named}
    keys = {column.name.lower() for column in table.columns if column.is_key}
    assigned = {}
    for assignment in conflict.expressions:
        if not isinstance(assignment, exp.EQ):
            continue
        target, value = assignment.this, assignment.expression
        if isinstance(value, exp.Anonymous) and value.name.upper() == "VALUES":
            value = value.expressions[0] if len(value.expressions) == 1 else None
            if isinstance(target, exp.Column) and isinstance(value, exp.Identifier | exp.Column):
                assigned[target.name.lower()] = value.name.lower()
    every_column = names == {column.name.lower() for column in table.columns}
    upsert = table.key_model is KeyModel.UNIQUE and every_column
    if upsert and all(assigned.get(name) == name for name in names - keys):
        return
    raise QueryError(
        ErrorCode.NOT_SUPPORTED_YET,
        "This version of Quire doesn't yet support 'INSERT ... ON DUPLICATE KEY UPDATE' other "
        "than on a UNIQUE KEY table with every column written and set to VALUES(column)",
    )


async def insert(session, statement: st.Insert) -> Result:
    expression = statement.expression
    target = expression.this
    table_node = target.this if isinstance(target, exp.Schema) else target
    reader = TableReader(session)
    privilege = None if statement.fills_created else privileges.LOAD
    table = _target_table(session, reader, table_node, privilege)
    named = _named_columns(table, target.expressions if isinstance(target, exp.Schema) else None)
    _check_on_duplicate_key(expression.args.get("conflict"), table, named)
    if statement.replaces and table.key_model is KeyModel.AGGREGATE:
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET,
            "This version of Quire doesn't yet support 'REPLACE' into an AGGREGATE KEY table "
            "(its rows of one key are merged)",
        )
    claim = _claim(session, statement.label, table_node, table, expression)
    source = expression.expression
    literals = statement.literals
    partial = _partial_update(session, table, named)
    generated = generated_columns.has_any(table)
    if (
        literals is not None
        and not partial
        and not generated
        and not any(column.auto_increment for column in table.columns)
    ):
        if len(literals.columns) != len(named):
            raise _count_mismatch(1)
        inserts = kept_rows(session, table, named, literals.row_count, literals.columns)
        commit_ts = await _commit_inserts(session, reader, table, table_node, inserts, expression)
        _remember_insert(session, table, None, commit_ts, literals.row_count, inserts.num_rows)
        return _inserted(session, literals.row_count, inserts.num_rows)
    if literals is not None:
        rows = _literal_rows(literals.rows(), len(named))
    elif statement.rows is not None:
        rows = _literal_rows(statement.rows, len(named))
    elif isinstance(source, exp.Values):
        listed = isinstance(target, exp.Schema) and bool(target.expressions)
        rows = await _values_rows(session, source, named, listed)
    elif isinstance(source, exp.Select | exp.SetOperation | exp.Subquery):
        query = source.this if isinstance(source, exp.Subquery) else source
        answer = await queries.run_select(session, queries.plan_select(query.copy()))
        rows = [tuple(row) for row in answer.rows]
        if len(answer.columns) != len(named):
            raise _count_mismatch(1)
    else:
        raise QueryError(ErrorCode.PARSE_ERROR, "You have an error in your SQL syntax")
    if generated:
        named, rows = _without_generated(table, named, rows)
    if not rows and not expression.args.get("overwrite"):
        return Result(affected_rows=0)
    named, rows, first_generated, last_given = _with_generated_ids(session, table, named, rows)
    as_given = (
        expression.args.get("overwrite")
        or table_node.args.get("partition") is not None
        or claim is not None
        or not _insert_strict(session)
    )
    commit_ts = 0
    kept = len(rows)
    if partial:
        inserts = await _partially_updated(session, reader, table, named, rows)
        inserts = await generated_columns.filled(session, table, inserts)
        kept = inserts.num_rows
        commit_ts = await _commit_inserts(
            session, reader, table, table_node, inserts, expression, claim
        )
    elif (
        as_given
        or generated
        or not (len(rows) == 1 and _inserted_as_tuple(session, reader, table, named, rows[0]))
    ):
        inserts = kept_rows(session, table, named, len(rows), _by_position(rows, len(named)))
        inserts = await generated_columns.filled(session, table, inserts)
        kept = inserts.num_rows
        commit_ts = await _commit_inserts(
            session, reader, table, table_node, inserts, expression, claim
        )
    result = _inserted(session, len(rows), kept)
    _remember_insert(session, table, claim, commit_ts, len(rows), kept)
    if claim is not None and commit_ts:
        result.info = transactions.load_info(claim.label, commit_ts)
    if first_generated:
        session.last_insert_id = first_generated
    result.last_insert_id = first_generated or last_given
    return result


def _remember_insert(
    session, table: Table, claim: LoadClaim | None, commit_ts: int, given: int, kept: int
) -> None:
    """What SHOW LAST INSERT tells of an INSERT that committed on its own (commit_ts)."""
    if not commit_ts:
        return
    label = claim.label if claim is not None else f"insert_{commit_ts:x}"
    database = session.catalog.dbs.get(table.db_id)
    db = database.name if database is not None else ""
    session.last_insert = (commit_ts, label, db, table.name, "VISIBLE", kept, given - kept)


def _inserted(session, given: int, kept: int) -> Result:
    """An INSERT's answer: its rows, and those filtered (enable_insert_strict off) as warnings."""
    filtered = given - kept
    info = f"Records: {given}  Duplicates: 0  Warnings: {filtered}" if given > 1 else ""
    return Result(affected_rows=kept, info=info, warnings=filtered)


# MySQL's errors of a value that does not fit its column: what a non-strict INSERT filters
DATA_ERRORS = frozenset({
    ErrorCode.TRUNCATED_WRONG_VALUE_FOR_FIELD, ErrorCode.DATA_TOO_LONG, ErrorCode.BAD_NULL_ERROR,
    ErrorCode.DATA_OUT_OF_RANGE, ErrorCode.TRUNCATED_WRONG_VALUE, ErrorCode.INVALID_JSON_TEXT,
})  # fmt: skip
MAX_WARNINGS = 64  # MySQL's max_error_count


def _insert_strict(session) -> bool:
    return str(session.variable("enable_insert_strict")).lower() != "false"


def _partial_update(session, table: Table, named: list[Column]) -> bool:
    """Whether the INSERT is Doris's partial column update: enable_unique_key_partial_update on,
    a UNIQUE KEY table, some of its columns named (each key column among them)."""
    if table.key_model is not KeyModel.UNIQUE or len(named) == len(table.columns):
        return False
    if str(session.variable("enable_unique_key_partial_update")).lower() not in ("1", "true"):
        return False
    given = {column.name for column in named}
    missing = [name for name in table.key_columns if name not in given]
    if missing:
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR,
            f"Partial update should include all key columns, missing: {', '.join(missing)}",
        )
    return True


async def _partially_updated(
    session, reader: TableReader, table: Table, named: list[Column], rows: list[tuple]
) -> pa.Table:
    """The rows of a partial column update whole: the named columns' values, and each other
    column's value in the row of the same key as the statement reads it (its default for a
    new key). The TN's replacement by key refuses the commit if another wrote a key since."""
    schema = TableSchema.of(table)
    given = _by_position(rows, len(named))
    arrays = {
        column.name: column_array(_with_defaults(session, column, values), column)
        for column, values in zip(named, given, strict=True)
    }
    keys = pa.table({name: arrays[name] for name in table.key_columns})
    existing = await reader.committed_rows(table, transactions.key_bounds(keys, table.key_columns))
    transaction = transactions.current(session)
    if transaction is not None:
        existing = transaction.seen(schema, existing, row_ids=True)
    held = {key: at for at, key in enumerate(_keys_of(existing, table.key_columns))}
    found = [held.get(key) for key in _keys_of(keys, table.key_columns)]
    for column in table.columns:
        if column.name in arrays:
            continue
        if generated_columns.is_generated(table, column):  # worked out once all are in
            arrays[column.name] = pa.nulls(len(found), schema.arrow().field(column.name).type)
            continue
        old = existing.column(column.name).to_pylist()
        default = _default(session, column) if None in found else None  # 1364 for a new key
        values = [default if at is None else old[at] for at in found]
        arrays[column.name] = column_array(values, column)
    return pa.Table.from_arrays([arrays[c.name] for c in table.columns], schema=schema.arrow())


def _keys_of(rows: pa.Table, key_columns: tuple[str, ...]) -> list[tuple]:
    return list(zip(*(rows.column(name).to_pylist() for name in key_columns), strict=True))


def kept_rows(session, table: Table, named: list[Column], row_count: int, given: list) -> pa.Table:
    """rows_table of the rows; with Doris's enable_insert_strict off, of those that convert and
    have a partition, the others filtered (a warning each), at most insert_max_filter_ratio of
    them."""
    schema = TableSchema.of(table)
    if _insert_strict(session):
        return rows_table(session, table, named, row_count, given, schema)
    refusals: list[QueryError] = []
    try:
        rows = rows_table(session, table, named, row_count, given, schema)
    except QueryError as error:
        if error.code not in DATA_ERRORS:
            raise
        values = [v.values() if isinstance(v, LiteralColumn) else list(v) for v in given]
        bad = _refused_rows(session, named, values)
        refusals = [bad[row] for row in sorted(bad)]
        kept = [[v[row] for row in range(row_count) if row not in bad] for v in values]
        rows = rows_table(session, table, named, row_count - len(bad), kept, schema)
    if placement.placeable(schema) and rows.num_rows and not auto_partitions.rule_of(table):
        placed = pc.is_valid(placement.partition_indexes(schema, rows, strict=False))
        unplaced = len(rows) - pc.sum(placed).as_py()
        if unplaced:
            rows = rows.filter(placed)
            refusals += [QueryError(1105, "no partition for this tuple")] * unplaced
    _check_filtered(session, len(refusals), row_count)
    session.warnings = [("Warning", e.code, e.message) for e in refusals[:MAX_WARNINGS]]
    return rows


def _refused_rows(session, named: list[Column], values: list[list]) -> dict[int, QueryError]:
    """The rows (by index) a value of does not fit its column, and why: each column converted
    whole, value by value only where that fails."""
    bad: dict[int, QueryError] = {}
    for column, written in zip(named, values, strict=True):
        written = _with_defaults(session, column, written)
        try:
            column_array(written, column)
            continue
        except QueryError as error:
            if error.code not in DATA_ERRORS:
                raise
        for row, value in enumerate(written):
            if row in bad:
                continue
            try:
                column_array([value], column, row + 1)
            except QueryError as refusal:
                if refusal.code not in DATA_ERRORS:
                    raise
                bad[row] = refusal
    return bad


def _check_filtered(session, filtered: int, total: int) -> None:
    ratio = float(session.variable("insert_max_filter_ratio"))
    if total and filtered / total > ratio:
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR,
            f"Insert has too many filtered data {filtered}/{total} insert_max_filter_ratio is "
            f"{ratio:f}",
        )


async def _commit_inserts(
    session,
    reader: TableReader,
    table: Table,
    node: exp.Table,
    inserts: pa.Table,
    insert,
    claim: LoadClaim | None = None,
) -> int:
    """INSERT [OVERWRITE] INTO t [PARTITION (p, ...)]: the rows, each of a partition named if
    some are (MySQL's 1748 otherwise); OVERWRITE replaces every row of the table, or of the
    partitions named, in the same commit (Doris's), also with no rows. The commit timestamp
    when committed at once (0 if not: into the open transaction, or nothing to write)."""
    schema = TableSchema.of(table)
    if node.args.get("partition") is not None:
        _in_named_partitions(node, table, schema, inserts)
    deletes = None
    if insert.args.get("overwrite"):
        replaced = await _deleted_rows(session, reader, table, node)
        deletes = deletes_table(table, replaced) if replaced else None
    if not inserts.num_rows and deletes is None:
        return 0
    return await commit(session, reader, table, TableWrite(schema, inserts, deletes), claim=claim)


def _claim(session, label: str, node: exp.Table, table: Table, insert) -> LoadClaim | None:
    """A labelled INSERT's claim on its label (Doris's: the INSERT is a load of that label); it
    commits on its own, so not inside a transaction (BEGIN WITH LABEL labels one)."""
    if not label:
        return None
    if transactions.current(session) is not None:
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR,
            "An INSERT WITH LABEL commits on its own and cannot run in a transaction; label the "
            "transaction with BEGIN WITH LABEL",
        )
    db = node.db or session.database or ""
    overwrite = bool(insert.args.get("overwrite"))
    return transactions.label_claim(session, label, db, table.name, overwrite)


def _in_named_partitions(node: exp.Table, table: Table, schema: TableSchema, rows: pa.Table):
    named = frozenset(partition.id for partition in partition_pruning.named_partitions(node, table))
    if not placement.placeable(schema):
        return
    if placement.in_partitions(schema, rows, named).num_rows < rows.num_rows:
        raise QueryError(
            ErrorCode.ROW_DOES_NOT_MATCH_GIVEN_PARTITION_SET,
            "Found a row not matching the given partition set",
        )


def _inserted_as_tuple(session, reader: TableReader, table: Table, named, values: tuple) -> bool:
    """Whether the one row was added to the open transaction as a tuple (OpenTransaction.
    add_rows): when it replaces no row of the snapshot, or only one the transaction deleted
    (sysbench's DELETE then INSERT of a key). Its values are converted as rows_table does."""
    transaction = transactions.current(session)
    if transaction is None:
        return False
    schema = TableSchema.of(table)
    position = {column.name: index for index, column in enumerate(named)}

    def value_of(column: Column):
        index = position.get(column.name)
        value = DEFAULT if index is None else values[index]
        return column_value(_default(session, column) if value is DEFAULT else value, column)

    if schema.replaces_on_key:
        pending = transaction.writes.get(table.id)
        if not transaction.takes_rows(schema) or pending is None or not pending.deleted_keys:
            return False
        if not pending.deleted_every_key([(value_of(table.column(schema.key_columns[0])),)]):
            return False
    row = tuple(value_of(column) for column in table.columns)
    reader.refuse_writes()
    transaction.add_rows(table, schema, [], [row])
    return True


def _target_table(
    session, reader: TableReader, node: exp.Table, privilege=privileges.LOAD
) -> Table:
    """The table a DML statement writes (an asynchronous materialized view's only when it is
    filled: privilege None)."""
    if not isinstance(node, exp.Table):
        raise QueryError(ErrorCode.PARSE_ERROR, "You have an error in your SQL syntax")
    if node.catalog and node.catalog.lower() != INTERNAL_CATALOG:
        raise QueryError(ErrorCode.UNKNOWN_CATALOG, f"Unknown catalog '{node.catalog}'")
    table = reader.table(node.db or session.database or "", node.name, privilege)
    if privilege is not None:
        materialized_views.refuse_writes(table)
    return table


async def fill_created_table(session, statement: st.CreateTable) -> Result:
    """CREATE TABLE ... AS SELECT, once the table is made: the query's rows into it in one commit
    (autocommit or not, as MySQL's implicit commit); if they cannot be written, the table is
    dropped again and the statement fails, as Doris's."""
    if statement.query is None or statement.deferred:
        return Result()
    db = statement.table.db or session.database or ""
    created = session.catalog.table(session.catalog.database(db).id, statement.table.name)
    try:
        return await filled(session, db, created.name, statement.query)
    except BaseException:
        session.transaction = None
        await session.services.writer.commit([ops.DropTable(created.id)])
        raise


async def filled(session, db: str, table: str, query: str, overwrite: bool = False) -> Result:
    """The query's rows written into the table (replacing its rows: overwrite) in one commit of
    their own, by its maker (a CREATE TABLE ... AS SELECT's, a materialized view's refresh)."""
    target = exp.Table(this=exp.to_identifier(table), db=exp.to_identifier(db))
    source = parse_with_sqlglot(tokenize(query), query)
    fill = st.Insert(
        exp.Insert(this=target, expression=source, overwrite=overwrite), fills_created=True
    )
    result = await insert(session, fill)
    await transactions.commit(session)
    return result


def _without_generated(
    table: Table, named: list[Column], rows: list[tuple]
) -> tuple[list[Column], list[tuple]]:
    """The columns and rows but the generated columns', each of which may only be DEFAULT
    (3105)."""
    generated = generated_columns.texts(table)
    places = [place for place, column in enumerate(named) if column.name in generated]
    if not places:
        return named, rows
    for place in places:
        if any(row[place] is not DEFAULT for row in rows):
            raise generated_columns.written_refused(table, named[place])
    kept = [place for place in range(len(named)) if place not in places]
    return [named[place] for place in kept], [tuple(row[p] for p in kept) for row in rows]


def _named_columns(table: Table, written: list | None) -> list[Column]:
    if not written:
        return list(table.columns)
    named = []
    for node in written:
        name = node.name
        column = table.column(name)
        if column is None:
            raise QueryError(ErrorCode.BAD_FIELD_ERROR, f"Unknown column '{name}' in 'field list'")
        if column in named:
            raise QueryError(1110, f"Column '{column.name}' specified twice")
        named.append(column)
    return named


async def _values_rows(
    session, values: exp.Values, named: list[Column], listed: bool
) -> list[tuple]:
    """The rows of `VALUES (...), ...`: plain literals as they are, and the other expressions of
    all the rows worked out together (values_expressions); `()` with no columns listed is a row
    of defaults (MySQL's)."""
    rows = []
    places: list[tuple[int, int]] = []  # (row, position) of each expression
    expressions: list[exp.Expression] = []
    for number, row in enumerate(values.expressions, 1):
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        if not items and not listed:
            items = [exp.Var(this="DEFAULT")] * len(named)
        if len(items) != len(named):
            raise _count_mismatch(number)
        literal = [_literal(item) for item in items]
        for position, value in enumerate(literal):
            if value is NOT_LITERAL:
                places.append((number - 1, position))
                expressions.append(items[position])
        rows.append(literal)
    if expressions:
        evaluated = await values_expressions.evaluated(session, expressions)
        for (row, position), value in zip(places, evaluated, strict=True):
            rows[row][position] = value
    return [tuple(row) for row in rows]


def _with_generated_ids(
    session, table: Table, named: list[Column], rows: list[tuple]
) -> tuple[list[Column], list[tuple], int, int]:
    """MySQL's AUTO_INCREMENT: a row that leaves the column out or gives it NULL, DEFAULT or 0
    (unless sql_mode has NO_AUTO_VALUE_ON_ZERO) gets the next value the TN hands out; a row that
    gives a value moves the counter past it, for the rows after it too. The columns and rows
    with the values written in, the first value generated and the last one given (0: none)."""
    column = next((column for column in table.columns if column.auto_increment), None)
    if column is None:
        return named, rows, 0, 0
    plane = data_plane(session)
    if column not in named:
        first = _take_auto_increment(plane, table, len(rows))
        return [*named, column], [(*row, first + n) for n, row in enumerate(rows)], first, 0
    index = named.index(column)
    zero_generates = "NO_AUTO_VALUE_ON_ZERO" not in str(session.variable("sql_mode")).upper()
    rows = list(rows)
    waiting: list[int] = []  # rows that get the next values, in order
    first_generated = last_given = 0
    largest_given = 0  # told the TN before it hands out values, and once at the end

    def tell_given() -> None:
        nonlocal largest_given
        if largest_given:
            plane.observe_auto_increment(table.id, largest_given)
            largest_given = 0

    def generate() -> None:
        nonlocal first_generated
        if waiting:
            tell_given()
            first = _take_auto_increment(plane, table, len(waiting))
            first_generated = first_generated or first
            for offset, number in enumerate(waiting):
                row = rows[number]
                rows[number] = (*row[:index], first + offset, *row[index + 1 :])
            waiting.clear()

    for number, row in enumerate(rows):
        value = row[index]
        if value is None or value is DEFAULT or (zero_generates and value == 0):
            waiting.append(number)
            continue
        given = _as_integer(value)
        if given is not None and given > 0:
            generate()
            largest_given = max(largest_given, given)
            last_given = given
    generate()
    tell_given()
    return named, rows, first_generated, last_given


def _as_integer(value) -> int | None:
    try:
        return int(decimal.Decimal(str(value).strip()))
    except (decimal.InvalidOperation, ValueError):
        return None  # not a number: the column's conversion refuses it


def _take_auto_increment(plane, table: Table, count: int) -> int:
    try:
        return plane.take_auto_increment(table.id, count)
    except commit_errors.CommitError as error:
        raise QueryError(ErrorCode.UNKNOWN_ERROR, f"The insert was refused: {error}") from None


def _literal_rows(rows: tuple[tuple, ...], width: int) -> list[tuple]:
    for number, row in enumerate(rows, 1):
        if len(row) != width:
            raise _count_mismatch(number)
    return list(rows)


def _count_mismatch(row: int) -> QueryError:
    return QueryError(
        ErrorCode.WRONG_VALUE_COUNT_ON_ROW, f"Column count doesn't match value count at row {row}"
    )


DEFAULT = st.DEFAULT


def _literal(node: exp.Expression):
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else _number(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_number(node.this.this)
    if isinstance(node, exp.Var) and node.name.upper() == "DEFAULT":
        return DEFAULT
    if isinstance(node, exp.Column) and node.name.upper() == "DEFAULT" and not node.table:
        return DEFAULT
    return NOT_LITERAL


def _number(text: str):
    if text.isdigit():
        return int(text)
    if "e" in text.lower():
        return float(text)
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise QueryError(ErrorCode.PARSE_ERROR, f"Bad number {text!r}") from None


def _by_position(rows: list[tuple], width: int) -> list[list]:
    return [[row[index] for row in rows] for index in range(width)]


def rows_table(
    session,
    table: Table,
    named: list[Column],
    row_count: int,
    given: list,
    schema: TableSchema | None = None,
) -> pa.Table:
    """The table's columns of the rows: given[i] holds named[i]'s values (a list, or a
    LiteralColumn of texts that Arrow converts when it can)."""
    position = {column.name: index for index, column in enumerate(named)}
    arrow = (schema or TableSchema.of(table)).arrow()
    arrays = []
    for column in table.columns:
        index = position.get(column.name)
        if index is None:
            if generated_columns.is_generated(table, column):  # worked out once all are in
                arrays.append(pa.nulls(row_count, arrow.field(column.name).type))
                continue
            arrays.append(column_array([_default(session, column)] * row_count, column))
            continue
        values = given[index]
        if isinstance(values, LiteralColumn):
            array = literal_array(values, column)
            if array is not None:
                arrays.append(array)
                continue
            values = values.values()
        arrays.append(column_array(_with_defaults(session, column, values), column))
    return pa.Table.from_arrays(arrays, schema=arrow)


def _with_defaults(session, column: Column, values: list) -> list:
    """values with DEFAULT written as the column's default."""
    if not any(value is DEFAULT for value in values):
        return values
    default = _default(session, column)
    return [default if value is DEFAULT else value for value in values]


def _default(session, column: Column):
    if column.default is None and not column.nullable:
        raise QueryError(1364, f"Field '{column.name}' doesn't have a default value")
    return default_value(column.default, datetime.datetime.now())


# -- DELETE and UPDATE --------------------------------------------------------------------------


async def delete(session, statement: st.Delete) -> Result:
    expression = statement.expression
    reader = TableReader(session)
    node, joins = _target_and_joins(expression)
    table = _target_table(session, reader, node)
    rows = await _deleted_rows(session, reader, table, node, expression, joins)
    if not rows:
        return Result(affected_rows=0)
    deletes = deletes_table(table, rows)
    await commit(session, reader, table, TableWrite(TableSchema.of(table), deletes=deletes))
    return Result(affected_rows=len(rows))


async def _deleted_rows(
    session, reader: TableReader, table: Table, node: exp.Table, statement=None, joins=()
) -> list[tuple]:
    """(row id, *key values) of the rows of table (read as node) a DELETE's clauses keep, or,
    without a statement, of all of them (every named partition's: an INSERT OVERWRITE's)."""
    alias = node.alias_or_name
    select = exp.select(
        exp.column(ROW_ID, table=alias), *[exp.column(k, table=alias) for k in table.key_columns]
    ).from_(_written(node))
    if statement is not None:
        select = _with_clauses(select, statement, joins)
    answer = await queries.run_in_engine(session, queries.plan_select(select), reader, alias)
    return _once_each(answer.rows, joins)


async def update(session, statement: st.Update) -> Result:
    expression = statement.expression
    reader = TableReader(session)
    node, joins = _target_and_joins(expression)
    table = _target_table(session, reader, node)
    if table.key_model is KeyModel.AGGREGATE:
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET, "Only unique table or duplicate table could be updated."
        )
    alias = node.alias_or_name
    changes = {}
    for assignment in expression.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise QueryError(ErrorCode.PARSE_ERROR, "You have an error in your SQL syntax")
        if assignment.this.table not in ("", alias):
            raise QueryError(
                ErrorCode.NOT_SUPPORTED_YET,
                "This version of Quire doesn't yet support an UPDATE of more than one table",
            )
        column = table.column(assignment.this.name)
        if column is None:
            raise QueryError(
                ErrorCode.BAD_FIELD_ERROR,
                f"Unknown column '{assignment.this.name}' in 'field list'",
            )
        if table.key_model is KeyModel.UNIQUE and column.is_key:
            raise QueryError(
                ErrorCode.NOT_SUPPORTED_YET, "Only value columns of unique table could be updated"
            )
        changes[column.name] = assignment.expression
    generated_columns.check_not_written(table, [table.column(name) for name in changes])
    old = [exp.column(c.name, table=alias) for c in table.columns]
    width = len(table.columns)
    constants = None if generated_columns.has_any(table) else _constant_assignments(table, changes)
    if constants is not None:  # the old rows are all the engine is needed for, if at all
        select = exp.select(exp.column(ROW_ID, table=alias), *old).from_(_written(node))
        select = _with_clauses(select, expression, joins)
        answer = await queries.run_in_engine(session, queries.plan_select(select), reader, alias)
        rows = _once_each(answer.rows, joins)
        values = _converted(table, constants) if rows else {}  # no row: nothing to refuse
        matched = [(*row, *_assigned(row[1:], values)) for row in rows]
    else:
        by_name = {
            c.name: changes[c.name].copy() if c.name in changes else exp.column(c.name, table=alias)
            for c in table.columns
        }
        by_name.update(generated_columns.updated(table, by_name))
        new = [by_name[c.name] for c in table.columns]
        select = exp.select(exp.column(ROW_ID, table=alias), *old, *new).from_(_written(node))
        select = _with_clauses(select, expression, joins)
        answer = await queries.run_in_engine(session, queries.plan_select(select), reader, alias)
        matched = _once_each(answer.rows, joins)
    changed = [row for row in matched if tuple(row[1 : 1 + width]) != tuple(row[1 + width :])]
    if changed:
        deletes = deletes_table(
            table,
            [
                (row[0], *[row[1 + _position(table, k)] for k in table.key_columns])
                for row in changed
            ],
        )
        new_rows = [row[1 + width :] for row in changed]
        inserts = rows_table(
            session, table, list(table.columns), len(new_rows), _by_position(new_rows, width)
        )
        write = TableWrite(TableSchema.of(table), inserts=inserts, deletes=deletes)
        await commit(session, reader, table, write, replaces_only_deleted=True)
    return Result(
        affected_rows=len(changed),
        info=f"Rows matched: {len(matched)}  Changed: {len(changed)}  Warnings: 0",
    )


def _constant_assignments(table: Table, changes: dict) -> dict[str, object] | None:
    """SET column = <literal>, ...: each column's value; None if one is no plain literal."""
    constants = {}
    for name, value in changes.items():
        literal = _literal(value)
        if literal is NOT_LITERAL or literal is DEFAULT:
            return None
        constants[name] = literal
    return constants


def _converted(table: Table, constants: dict[str, object]) -> dict[int, object]:
    """Per column position, the value as the column holds it (what MySQL compares with the old
    value to count a row changed)."""
    return {
        _position(table, name): column_array([value], table.column(name)).to_pylist()[0]
        for name, value in constants.items()
    }


def _assigned(old: tuple, constants: dict[int, object]) -> tuple:
    return tuple(constants.get(position, value) for position, value in enumerate(old))


def _position(table: Table, name: str) -> int:
    return [column.name for column in table.columns].index(name)


def _written(node: exp.Table) -> exp.Table:
    """The target of a DELETE or an UPDATE, read for the rows it writes (LOAD on it suffices)."""
    target = node.copy()
    target.meta[queries.WRITTEN] = True
    return target


def _with_clauses(select: exp.Select, statement: exp.Expression, joins=()) -> exp.Select:
    for clause in ("where", "order", "limit"):
        value = statement.args.get(clause)
        if value is not None:
            select.set(clause, value.copy())
    if joins:
        select.set("joins", [join.copy() for join in joins])
    return select


def _target_and_joins(statement: exp.Update | exp.Delete) -> tuple[exp.Table, list[exp.Join]]:
    """The table an UPDATE or DELETE writes (its node, without joins) and the joins its rows
    are matched through: MySQL's `UPDATE t JOIN u ON ... SET`, `DELETE t FROM t JOIN u ...`
    and `DELETE FROM t USING t JOIN u ...`; Doris's `UPDATE t SET ... FROM u WHERE ...` and
    `DELETE FROM t USING u WHERE ...` (u beside t)."""
    node = statement.this
    targets = statement.args.get("tables") or []
    using = statement.args.get("using") or []
    beside = []  # Doris's FROM u / USING u: u joined to the target
    if isinstance(statement, exp.Update) and statement.args.get("from_") is not None:
        beside = [statement.args["from_"].this]
    if using:
        names = {table.alias_or_name for source in using for table in _tables_of(source)}
        if node.alias_or_name in names:  # MySQL's: the target among the sources
            node, *rest = using
            beside = rest
        else:
            beside = list(using)
    if not isinstance(node, exp.Table):
        raise QueryError(ErrorCode.PARSE_ERROR, "You have an error in your SQL syntax")
    if len(targets) > 1 or (targets and targets[0].alias_or_name != node.alias_or_name):
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET,
            "This version of Quire doesn't yet support a DELETE of more than one table, or of "
            "a table not first among its sources",
        )
    joins = list(node.args.get("joins") or [])
    for source in beside:
        joins.append(exp.Join(this=_without_joins(source)))
        joins.extend(source.args.get("joins") or [])
    return _without_joins(node), joins


def _tables_of(source: exp.Expression) -> list[exp.Table]:
    return [source, *(join.this for join in source.args.get("joins") or [])]


def _without_joins(node: exp.Expression) -> exp.Expression:
    if not node.args.get("joins"):
        return node
    bare = node.copy()
    bare.set("joins", None)
    return bare


def _once_each(rows, joins) -> list[tuple]:
    """Rows by their row id (first), each once, when joins may have made one several: a row
    joined to several rows is written once."""
    if not joins:
        return list(rows)
    seen: dict = {}
    for row in rows:
        seen.setdefault(row[0], row)
    return list(seen.values())


def deletes_table(table: Table, rows: list) -> pa.Table:
    """The deletes of rows given as (row id, *key values)."""
    return deletes_of(
        TableSchema.of(table), [row[0] for row in rows], [tuple(row[1:]) for row in rows]
    )


# -- commit -------------------------------------------------------------------------------------


async def commit(
    session,
    reader: TableReader,
    table: Table,
    write: TableWrite,
    replaces_only_deleted=False,
    claim: LoadClaim | None = None,
) -> int:
    """The statement's write: into the open transaction (0), else committed at once (its commit
    timestamp; claim: the label it is a load of). replaces_only_deleted: write's inserts replace
    no row but those its deletes name (an UPDATE of value columns), so the transaction need not
    look for the rows they replace."""
    reader.refuse_writes()
    if write.inserts is not None and auto_partitions.rule_of(table):  # an INSERT's, an UPDATE's
        grown = await auto_partitions.ensured(session, table, write.inserts)
        if grown is not table:
            table = grown
            write = TableWrite(TableSchema.of(grown), write.inserts, write.deletes)
    transaction = transactions.current(session)
    if transaction is not None:
        committed = None
        if not replaces_only_deleted and transaction.looks_up(table, write):
            bounds = transactions.key_bounds(write.inserts, write.schema.key_columns)
            committed = await reader.committed_rows(table, bounds)
        transaction.add(table, write, committed)
        return 0
    return await commit_writes(session, await reader.settled_ts(), (write,), claim)


async def commit_writes(
    session, snapshot_ts: int, writes: tuple[TableWrite, ...], claim: LoadClaim | None = None
) -> int:
    plane = data_plane(session)
    write_set = WriteSet(snapshot_ts, writes, request_id=session.request_id or "", claim=claim)
    try:
        future = plane.submit(write_set)
        ts = await asyncio.wait_for(asyncio.wrap_future(future), COMMIT_WAIT_SECONDS)
    except TimeoutError:
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR,
            f"The commit was not confirmed within {COMMIT_WAIT_SECONDS:g} s; the statement may or "
            "may not have taken effect",
        ) from None
    except commit_errors.WriteConflict as error:
        raise QueryError(
            ErrorCode.LOCK_DEADLOCK, f"Write conflict: {error}; try restarting transaction"
        ) from None
    except commit_errors.LabelTaken as error:
        raise QueryError(ErrorCode.UNKNOWN_ERROR, str(error)) from None
    except commit_errors.StaleSchema as error:
        raise SchemaChanged(error.table_id, error.known) from None
    except commit_errors.CommitOutcomeUnknown as error:
        raise QueryError(ErrorCode.UNKNOWN_ERROR, str(error)) from None
    except commit_errors.CommitError as error:
        raise QueryError(ErrorCode.UNKNOWN_ERROR, f"The commit was refused: {error}") from None
    except ServiceError as error:
        raise unavailable(error) from None
    session.last_commit_ts = max(session.last_commit_ts, ts)
    return ts
