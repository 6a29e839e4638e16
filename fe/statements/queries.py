"""SELECT statements on the FE: constants and variables answered directly, everything else
(expressions, information_schema) executed by DuckDB over tables built from the catalog.

Table data is the data plane's (a later issue); a SELECT on a user table says so.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyarrow as pa
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from be import engine
from be.cn.bounds import ColumnBound
from be.engine.columnar_rows import ArrowRows
from fe.client_errors import engine_error
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import EncodedAnswers, Result, column
from fe.mysql.text_batches import arrow_fractional_digits
from fe.security import privileges
from fe.sql.parser import INTERNAL_CATALOG
from fe.statements import (
    arrays,
    coercions,
    in_lists,
    indexes,
    mysql_functions,
    partition_pruning,
    plain_reads,
    point_reads,
    row_bounds,
    row_policies,
    schema_lookup,
    table_data,
    table_functions,
    views,
)
from fe.statements.information_schema import INFORMATION_SCHEMA
from fe.variables import SCHEMA
from metadata.records import Table
from metadata.types import INTEGER_BITS

SESSION_FUNCTIONS = {
    "DATABASE": lambda session: session.database,
    "SCHEMA": lambda session: session.database,
    "USER": lambda session: f"{session.username}@{session.client_host}",
    "SESSION_USER": lambda session: f"{session.username}@{session.client_host}",
    "SYSTEM_USER": lambda session: f"{session.username}@{session.client_host}",
    "CURRENT_USER": lambda session: session.current_user_identity,
    "VERSION": lambda session: session.variables.get("version"),
    "CURRENT_VERSION": lambda session: session.variables.get("version"),
    "CURRENT_SCHEMA": lambda session: session.database,
    "CONNECTION_ID": lambda session: session.connection_id,
    "LAST_INSERT_ID": lambda session: session.last_insert_id,
    "ROW_COUNT": lambda session: session.row_count,
    "FOUND_ROWS": lambda session: session.found_rows,
}


ARRAY_TYPE = "STRING"  # an array is answered as its text
DUCKDB_TYPES = {
    "BOOLEAN": "BOOLEAN",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "HUGEINT": "DECIMAL(38,0)",
    "UTINYINT": "SMALLINT",
    "USMALLINT": "INT",
    "UINTEGER": "BIGINT",
    "UBIGINT": "DECIMAL(20,0)",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP": "DATETIME",
    "TIMESTAMP_S": "DATETIME",  # CAST(x AS DATETIME(0)), (3), as DuckDB types them
    "TIMESTAMP_MS": "DATETIME",
    "TIME": "TIME",
    "INTERVAL": "TIME",  # MySQL's TIME is a duration too (SEC_TO_TIME, TIMEDIFF)
    "VARCHAR": "VARCHAR",
    "BLOB": "VARBINARY",
    "NULL": "VARCHAR",
}


def python_type(value: object) -> str:
    exact = _EXACT_TYPES.get(
        type(value)
    )  # the common cases first: a constant SELECT asks each time
    if exact is not None:
        return exact
    if type(value) is int and -(2**63) <= value < 2**63:
        return "BIGINT"
    if isinstance(value, bool):
        return "TINYINT"
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return "BIGINT"
        return "BIGINT UNSIGNED" if 0 <= value < 2**64 else "DECIMAL(65,0)"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, decimal.Decimal):
        return "DECIMAL(65,30)"
    if isinstance(value, datetime.datetime):
        return "DATETIME"
    if isinstance(value, datetime.date):
        return "DATE"
    return "VARCHAR"


_EXACT_TYPES = {str: "VARCHAR", type(None): "VARCHAR", float: "DOUBLE", bool: "TINYINT"}


@dataclass(frozen=True)
class SelectPlan:
    """A parsed SELECT ready to run again: the statement cache keeps these."""

    expression: exp.Select
    names: tuple[str, ...]
    constant: tuple[Callable, ...] | None  # per-column evaluators when no engine is needed
    lists: tuple[tuple[str, pa.Table], ...] = ()  # long IN lists, by the table name they read
    lookup: schema_lookup.Lookup | None = None  # an information_schema query without the engine
    no_rows: bool = False  # a constant SELECT with LIMIT 0
    names_a_table: bool = True  # FROM or a subquery names one (a table-less query reads none)
    found_rows: SelectPlan | None = None  # SQL_CALC_FOUND_ROWS: the count of rows without LIMIT
    moments: bool = False  # FOR SYSTEM_TIME AS OF an expression, worked out as the query runs
    sleep: float = 0.0  # a constant SELECT's SLEEP(n): seconds it waits before it answers
    headers: dict = field(default_factory=dict, compare=False, repr=False)  # a constant's columns
    answers: EncodedAnswers = field(default_factory=EncodedAnswers, compare=False, repr=False)


def reads_tables(plan: SelectPlan) -> bool:
    """Whether the query may read table data (not a constant, not information_schema, not one
    that names no table, such as SELECT NOW())."""
    return plan.constant is None and plan.lookup is None and plan.names_a_table


MAX_HEADERS = 4  # result columns a constant SELECT keeps, one list per tuple of its value types


def plan_select(expression: exp.Expression, written: list[str] | None = None) -> SelectPlan:
    """written: each projection's text as the client wrote it, which MySQL names a column by."""
    _without_dual(expression)
    found_rows = _found_rows_plan(expression) if _without_modifiers(expression) else None
    names = ()
    if isinstance(expression, exp.Select):
        if written is None or len(written) != len(expression.expressions):
            written = [None] * len(expression.expressions)
        names = tuple(
            projection_name(projection, text)
            for projection, text in zip(expression.expressions, written, strict=True)
        )
    constant = None
    if isinstance(expression, exp.Select) and _is_bare_select(expression):
        evaluators = [_constant_evaluator(projection) for projection in expression.expressions]
        if all(evaluator is not None for evaluator in evaluators):
            constant = tuple(evaluators)
    lists = table_functions.as_tables(expression) + in_lists.as_tables(expression)
    lookup = None if constant or lists else schema_lookup.lookup_of(expression)
    names_a_table = expression.find(exp.Table) is not None
    return SelectPlan(
        expression,
        names,
        constant,
        lists,
        lookup,
        _limit_zero(expression),
        names_a_table,
        found_rows,
        names_a_table and any(_moment_expressions(expression)),
        sum(_slept(p) or 0 for p in expression.expressions) if constant else 0.0,
    )


def _without_dual(expression: exp.Expression) -> None:
    """MySQL's `FROM DUAL` names no table: each such FROM is left out, in place."""
    for select in expression.find_all(exp.Select):
        source = select.args.get("from_")
        table = source.this if source is not None else None
        if (
            isinstance(table, exp.Table)
            and isinstance(table.this, exp.Identifier)
            and not table.this.quoted
            and not table.db
            and table.name.lower() == "dual"
            and not select.args.get("joins")
        ):
            select.set("from_", None)


def _slept(projection: exp.Expression) -> float | None:
    """MySQL's SLEEP(n) of a constant n: its seconds, else None."""
    node = projection.this if isinstance(projection, exp.Alias) else projection
    if not (isinstance(node, exp.Anonymous) and node.name.upper() == "SLEEP"):
        return None
    number = node.expressions[0] if len(node.expressions) == 1 else None
    negative = isinstance(number, exp.Neg)
    argument = number.this if negative else number
    if not isinstance(argument, exp.Literal) or argument.is_string:
        return None
    if negative:
        return 0.0
    return max(float(argument.this), 0.0)  # MariaDB's SLEEP of less than 0 returns at once


def _moment_expressions(expression: exp.Expression) -> list[exp.Version]:
    """The versions of tables read `FOR SYSTEM_TIME AS OF` something other than a literal."""
    return [
        version
        for version in expression.find_all(exp.Version)
        if not isinstance(_moment(version), exp.Literal)
    ]


def _moment(version: exp.Version) -> exp.Expression:
    moment = version.expression
    return moment.this if isinstance(moment, exp.Cast) else moment


async def _with_moments(session, plan: SelectPlan) -> SelectPlan:
    """plan with each AS OF expression replaced by its value (MariaDB takes any expression
    giving a time: `AS OF NOW() - INTERVAL 1 HOUR`)."""
    from fe.statements.values_expressions import evaluated

    expression = plan.expression.copy()
    versions = _moment_expressions(expression)
    values = await evaluated(session, [version.expression for version in versions])
    for version, value in zip(versions, values, strict=True):
        if value is None:
            raise QueryError(ErrorCode.TRUNCATED_WRONG_VALUE, "Incorrect datetime value: 'NULL'")
        text = value.isoformat(" ") if isinstance(value, datetime.datetime) else str(value)
        version.set("expression", exp.Literal.string(text))
    return replace(plan, expression=expression, moments=False, headers={}, answers=EncodedAnswers())


CALC_FOUND_ROWS = "SQL_CALC_FOUND_ROWS"


def _without_modifiers(expression: exp.Expression) -> bool:
    """The query with its SELECTs' modifiers dropped (MySQL's hints, SQL_NO_CACHE, STRAIGHT_JOIN,
    ...: none changes an answer); whether its first SELECT asked for SQL_CALC_FOUND_ROWS (1234
    anywhere else, as in MySQL)."""
    first = expression
    while isinstance(first, exp.SetOperation):
        first = first.this
    counts = False
    for select in expression.find_all(exp.Select):
        modifiers = select.args.get("operation_modifiers")
        if not modifiers:
            continue
        if any(modifier.name.upper() == CALC_FOUND_ROWS for modifier in modifiers):
            if select is not first:
                raise QueryError(
                    ErrorCode.WRONG_USAGE, f"Incorrect usage/placement of '{CALC_FOUND_ROWS}'"
                )
            counts = True
        select.set("operation_modifiers", None)
    return counts


def _found_rows_plan(expression: exp.Expression) -> SelectPlan:
    """The count of the rows the query finds without its LIMIT (FOUND_ROWS() after it)."""
    every = expression.copy()
    for clause in ("limit", "offset", "order"):
        every.set(clause, None)
    return plan_select(exp.select(exp.Count(this=exp.Star())).from_(every.subquery("found")))


def _limit_zero(expression: exp.Expression) -> bool:
    limit = expression.args.get("limit")
    return limit is not None and limit.expression is not None and limit.expression.this == "0"


def projection_name(projection: exp.Expression, written: str | None = None) -> str:
    if isinstance(projection, exp.Alias):
        return projection.alias
    if isinstance(projection, exp.Column):
        return projection.name
    if isinstance(projection, exp.SessionParameter):
        kind = projection.args.get("kind")
        return f"@@{kind.lower() + '.' if kind else ''}{projection.name}"
    return written or projection.sql(dialect="mysql")


PROJECTION_ENDS = {
    TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING, TokenType.ORDER_BY,
    TokenType.LIMIT, TokenType.UNION, TokenType.INTO, TokenType.WINDOW, TokenType.EXCEPT,
    TokenType.INTERSECT, TokenType.FOR,
}  # fmt: skip


OPENING_TOKENS = (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE)  # [1, 2] is one item
CLOSING_TOKENS = (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE)


def written_projections(tokens: list[Token], sql: str) -> list[str] | None:
    """The text of each item of the query's select list as written, if the query starts with
    SELECT (None otherwise)."""
    if not tokens or tokens[0].token_type != TokenType.SELECT:
        return None
    items: list[str] = []
    depth = 0
    begin = None
    end = None
    for token in tokens[1:]:
        if depth == 0 and token.token_type in PROJECTION_ENDS:
            break
        if depth == 0 and token.token_type == TokenType.COMMA:
            if begin is None:
                return None
            items.append(sql[begin : end + 1])
            begin = None
            continue
        if depth == 0 and begin is None and token.token_type in (TokenType.DISTINCT, TokenType.ALL):
            continue
        depth += token.token_type in OPENING_TOKENS
        depth -= token.token_type in CLOSING_TOKENS
        begin = token.start if begin is None else begin
        end = token.end
    if begin is None:
        return None
    items.append(sql[begin : end + 1])
    return items


def _is_bare_select(select: exp.Select) -> bool:
    keys = {key for key, value in select.args.items() if value}
    return keys <= {"expressions", "limit"} and not select.args.get("from_")


def _constant_evaluator(projection: exp.Expression) -> Callable | None:
    node = projection.this if isinstance(projection, exp.Alias) else projection
    if isinstance(node, exp.Literal):
        value = node.this if node.is_string else _number(node.this)
        return lambda session: value
    if isinstance(node, exp.Null | exp.Placeholder):
        return lambda session: None
    if isinstance(node, exp.Boolean):
        value = 1 if node.this else 0
        return lambda session: value
    if isinstance(node, exp.SessionParameter):
        name = node.name
        scope = (node.args.get("kind") or "").upper()
        return lambda session: session.variable(name, scope)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = -_number(node.this.this)
        return lambda session: value
    if isinstance(node, exp.Func):
        function = _session_function(node)
        if function is not None:
            return function
    if _slept(node) is not None:
        return lambda session: 0  # run_select waits first
    return None


def _session_function(node: exp.Func) -> Callable | None:
    function = SESSION_FUNCTIONS.get(function_name(node))
    if function is None or node.expressions:
        return None
    if not isinstance(node, exp.Anonymous) and node.args.get("this"):
        return None
    return function


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    return node.sql_name().upper()


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        return decimal.Decimal(text) if "e" not in text.lower() else float(text)


async def run_select(session, plan: SelectPlan, stream: bool = False) -> Result:
    """stream: a big answer may come as parts of rows (for the client, not for DML's use)."""
    if plan.sleep:
        await _sleep(session, plan.sleep)
    if plan.constant is not None:
        return constant_answer(session, plan)
    if plan.lookup is not None:
        answer = await plan.lookup.run(session, plan.names)
        if answer is not None:
            return answer
    return await run_in_engine(session, plan, stream=stream)


async def _sleep(session, seconds: float) -> None:
    """A SLEEP's wait, on the event loop (no engine worker held), within query_timeout; a KILL
    QUERY ends it as any statement."""
    timeout = _positive_variable(session, "query_timeout")
    await asyncio.sleep(min(seconds, timeout))
    if seconds > timeout:
        raise engine_error(engine.QueryTimedOut(timeout))


async def run_client_select(session, plan: SelectPlan) -> Result:
    """A client's SELECT: its answer streams once it outgrows what the engine holds."""
    result = await run_select(session, plan, stream=True)
    if plan.found_rows is not None:
        counted = await run_select(session, plan.found_rows)
        result.found_rows = next(iter(counted.rows))[0]
    metrics = session.services.metrics
    if isinstance(result.rows, StreamedRows):
        result.rows.metrics = metrics
    elif isinstance(result.rows, list | tuple | ArrowRows):
        metrics.rows_answered += len(result.rows)
    return result


def constant_answer(session, plan: SelectPlan) -> Result:
    row = tuple([evaluate(session) for evaluate in plan.constant])
    rows = [] if plan.no_rows else [row]
    types = tuple([type(value) for value in row])
    if ANSWER_KEY_TYPES.issuperset(types):  # equal values of these types encode alike
        answer_key = (types, row)
        return Result(
            _constant_columns(plan, row), rows, answers=plan.answers, answer_key=answer_key
        )
    return Result(_constant_columns(plan, row), rows)


ANSWER_KEY_TYPES = frozenset((int, str, type(None)))


def _constant_columns(plan: SelectPlan, row: tuple) -> list:
    """The result columns of a constant SELECT's row, kept in the plan for the next time."""
    types = tuple(map(python_type, row))
    columns = plan.headers.get(types)
    if columns is None:
        columns = [column(n, t) for n, t in zip(plan.names, types, strict=True)]
        if len(plan.headers) < MAX_HEADERS:
            plan.headers[types] = columns
    return columns


EXPLAIN_COLUMN = "Explain String"  # Doris's


async def explain(session, statement) -> Result:
    """EXPLAIN: the plan the engine would run the query with, one line per row, under the names
    the user wrote (information_schema.tables, not the engine's own)."""
    plan = plan_select(statement.query)
    scans: list[list[str]] = []
    answer = await run_in_engine(session, plan, explain=True, scans=scans)
    lines = ["PLAN FRAGMENT 0", f"  OUTPUT EXPRS: {', '.join(plan.names) or '*'}"]
    for row in answer.rows:
        text = str(row[-1]).replace(_REGISTERED_PREFIX, f"{INFORMATION_SCHEMA}.")
        lines.extend("  " + line.rstrip() for line in text.splitlines() if line.strip())
    for number, scan in enumerate(scans):  # Doris's scan nodes: the partitions each reads
        lines.append(f"  {number}:VOlapScanNode")
        lines.extend(f"     {line}" for line in scan)
    return Result(columns=[column(EXPLAIN_COLUMN, "VARCHAR")], rows=[(line,) for line in lines])


async def run_in_engine(
    session,
    plan: SelectPlan,
    read: table_data.TableReader | None = None,
    row_ids_of: str | None = None,
    explain: bool = False,
    scans: list[list[str]] | None = None,
    stream: bool = False,
) -> Result:
    """read: the statement's reads (one snapshot); row_ids_of: the table (by alias) whose rows come
    with their row id (what DELETE and UPDATE name rows by); scans: given, gets the lines EXPLAIN
    shows of each table read (its partitions, the bounds its blocks are pruned by); stream: the
    rows of a big answer may come as an async iterator of parts (StreamedRows)."""
    try:
        time = mysql_functions.StatementTime.of(session)
    except mysql_functions.UnknownTimeZone as error:
        raise QueryError(1298, f"Unknown or incorrect time zone: '{error}'") from None
    read = read or table_data.TableReader(session)
    max_object_bytes = session.services.config["s3_table_function_max_bytes"]
    if any(isinstance(made, table_functions.ObjectFiles) for _, made in plan.lists):
        session.require_admin()  # s3(...) reaches any endpoint from the FE's host
    if plan.moments:
        plan = await _with_moments(session, plan)
    if not explain:
        answered = await _plain_read(session, plan, read, row_ids_of)
        if answered is not None:
            return answered

    def prepare() -> tuple[str, dict[str, pa.Table]] | engine.Answer:
        """On the engine's worker: a long query's copy, checks and SQL take no time of the loop.
        With CNs to run queries, a query of table data is sent whole to one, which answers."""
        expression = substituted(plan.expression.copy(), lambda node: _bind(node, session, time))
        expression = views.expanded(expression, lambda table: _view_of(table, session, read))
        _filter_by_row_policies(expression, session, read)
        engine.check(expression)
        _check_group_positions(expression)
        _drop_constant_order(expression)
        _name_derived_columns(expression)
        resolved = _resolved(expression, session, read)
        records = {id(table): record for table, _, record in resolved}
        indexes.match_by_index(expression, [(t, r) for t, _, r in resolved if r is not None])
        listed = {name: table_functions.column_types(made) for name, made in plan.lists}
        coercions.typed_columns(
            expression,
            lambda table: listed.get(table.name) or _column_types(records.get(id(table))),
        )
        expression = mysql_functions.rewritten(coercions.coerced(expression), time)
        tables: dict[str, str] = {}
        data: dict[str, tuple] = {}
        plain = None
        resolved = _resolved(expression, session, read)  # conversions may have copied some
        prunings = _prunings(resolved, plan.lists)
        in_lists.typed(expression, plan.lists, resolved)
        for table, db, record in resolved:
            if record is None:
                name = table.name.lower()
                registered = f"{_REGISTERED_PREFIX}{name}"
                tables[registered] = name
            else:
                with_row_ids = row_ids_of is not None and row_ids_of == table.alias_or_name
                as_of = _as_of(read, table.args.get("version"))
                pruning = prunings[id(table)]
                partitions = pruning.ids
                registered = (
                    f"{_TABLE_PREFIX}{record.id}{'_r' if with_row_ids else ''}"
                    f"{f'_at{as_of}' if as_of is not None else ''}"
                    f"{_partitions_suffix(partitions)}"
                )
                bounds = row_bounds.bounds_of(expression, table, record)
                if registered in data:  # one table read twice: what either read needs
                    _, _, before, _, read_before = data[registered]
                    if before != bounds:
                        bounds = ()
                    if partitions is None or read_before is None:
                        partitions = None
                    else:
                        partitions |= read_before
                data[registered] = (record, with_row_ids, bounds, as_of, partitions)
                if scans is not None:
                    scans.append(_scan_lines(db, table, pruning, bounds))
                plain = plain_read(expression, table, record)
            alias = table.alias or table.name
            table.replace(
                exp.to_table(registered).as_(alias) if alias else exp.to_table(registered)
            )
        for named in expression.find_all(exp.Column):  # `db.t.c`: t is its table's alias now
            if named.args.get("db") is not None:
                named.set("db", None)
                named.set("catalog", None)
        taken: dict[str, pa.Table] = {}
        if plain is not None and len(data) == 1 and not tables and not plan.lists and not explain:
            (record, with_row_ids, _, as_of, partitions), (columns, exact) = (
                next(iter(data.values())),
                plain,
            )
            if exact or not read.runs_remotely((record,)):  # a whole table: the CN reads it
                rows = read.snapshot(record, with_row_ids, exact, as_of, partitions=partitions)
                answered = plain_reads.answer(rows, columns, exact)
                if answered is not None:
                    return answered
                taken[next(iter(data))] = rows  # too big to answer plainly: the engine's input
        arrow = {
            name: made.read(max_object_bytes, table_functions.MAX_ROWS[0])
            if isinstance(made, table_functions.ObjectFiles)
            else made
            for name, made in plan.lists
        }
        columns = _columns_read(expression, tables.values())
        for registered, name in tables.items():
            built = session.services.information_schema.table(name, session, columns)
            if built is None:
                raise QueryError(1109, f"Unknown table '{name}' in information_schema")
            arrow[registered] = built.arrow()
        data_columns = _columns_read(expression, data, of_table_data=True)
        sql = expression.sql(dialect="duckdb")
        sql = "EXPLAIN " + sql if explain else sql
        if data and read.runs_remotely(record for record, *_ in data.values()):
            reads = [(name, *table_read) for name, table_read in data.items()]
            return read.query(
                sql, reads, data_columns, arrow, timeout, memory_limit, stream and not explain
            )
        for registered, (record, with_row_ids, bounds, as_of, partitions) in data.items():
            if registered in taken:  # every column, rows of the bounds and maybe others
                arrow[registered] = taken[registered]
                continue
            arrow[registered] = read.snapshot(
                record, with_row_ids, bounds, as_of, data_columns, partitions
            )
        return sql, arrow

    timeout = _positive_variable(session, "query_timeout")
    memory_limit = _positive_variable(session, "exec_mem_limit")
    try:
        answer = await session.services.engine.run(
            prepare,
            timeout_seconds=timeout,
            memory_limit_bytes=memory_limit,
            abandoned=session.client_gone,
            stream=stream and not explain,
            columnar=stream and not explain,  # the client's connection encodes it as it is
        )
    except engine.EngineError as error:
        raise engine_error(error, grouped=bool(plan.expression.args.get("group"))) from None
    if isinstance(answer, engine.StreamedAnswer):
        return _streamed_result(_result_names(plan, answer.columns), answer)
    if explain:
        return Result(rows=answer.rows)
    return _answer_result(_result_names(plan, answer.columns), answer, for_client=stream)


def _result_names(plan: SelectPlan, columns: list[tuple[str, str]]) -> list[str]:
    names = [name for name, _ in columns]
    if (
        plan.names
        and len(plan.names) == len(names)
        and not any(isinstance(p, exp.Star) for p in plan.expression.expressions)
    ):
        return list(plan.names)
    return names


def _streamed_result(names: list[str], answer: engine.StreamedAnswer) -> Result:
    """A streaming answer as MySQL's result: its DATETIME columns show microseconds (the rows
    that decide how many digits they need are not all known yet)."""
    columns = []
    arrays_at = set()
    for position, (name, (_, duck_type)) in enumerate(zip(names, answer.columns, strict=True)):
        sql_type = _sql_type(duck_type)
        if sql_type == ARRAY_TYPE:
            arrays_at.add(position)
        columns.append(_result_column(name, "DATETIME(6)" if sql_type == "DATETIME" else sql_type))
    hidden = arrays.hidden_at(duck_type for _, duck_type in answer.columns)
    return Result(columns=columns, rows=StreamedRows(answer, frozenset(arrays_at), hidden))


def _sql_type(duck_type: str) -> str:
    if arrays.is_array(duck_type):
        return ARRAY_TYPE
    return DUCKDB_TYPES.get(duck_type.split("(")[0], _decimal_type(duck_type))


class StreamedRows:
    """The rows of a streaming answer, for the connection: `async for part in rows` gives lists
    of rows; an engine error on the way comes as the client's QueryError; aclose() stops the
    query."""

    def __init__(
        self,
        answer: engine.StreamedAnswer,
        arrays_at: frozenset[int] = frozenset(),
        hidden: frozenset[int] = frozenset(),
    ):
        self._parts = answer.parts()
        self._arrays_at = arrays_at
        self._hidden = hidden
        self.metrics = None  # counts the rows sent, when set

    def __aiter__(self):
        return self

    async def __anext__(self) -> list[tuple]:
        try:
            part = await self._parts.__anext__()
        except engine.EngineError as error:
            raise engine_error(error) from None
        if self.metrics is not None:
            self.metrics.rows_answered += len(part)
        if self._arrays_at:
            return arrays.rows_with_text(part, self._arrays_at, self._hidden)
        return part

    async def aclose(self) -> None:
        await self._parts.aclose()


def _partitions_suffix(partitions: frozenset[int] | None) -> str:
    """What a table's name in the engine adds for a read of some of its partitions (reads of a
    table pruned two ways are two tables; the same suffix for two ways reads what both need)."""
    if partitions is None:
        return ""
    return f"_p{zlib.crc32(','.join(map(str, sorted(partitions))).encode()):08x}"


def _prunings(
    resolved: list[tuple], lists: tuple[tuple[str, pa.Table], ...]
) -> dict[int, partition_pruning.Pruning]:
    """Per table read (by the id of its node), the partitions its query can keep rows of."""
    records = {id(table): record for table, _, record in resolved if record is not None}
    long_lists = dict(lists)

    def columns_of(source: exp.Expression) -> frozenset[str] | None:
        if isinstance(source, exp.Table):
            if source.meta.get(in_lists.LIST_TABLE):
                made = long_lists.get(source.name)
                if isinstance(made, table_functions.ObjectFiles):
                    return None  # its columns are known once it is read
                return frozenset(made.column_names if made is not None else ("value",))
            record = records.get(id(source))
            if record is not None:
                return frozenset(column.name.lower() for column in record.columns)
        return None  # a subquery, a common table, information_schema: not known

    def values_of(query: exp.Expression) -> list | None:
        select = query.this if isinstance(query, exp.Subquery) else query
        source = select.args.get("from_") if isinstance(select, exp.Select) else None
        table = source.this if source is not None else None
        if not isinstance(table, exp.Table) or not table.meta.get(in_lists.LIST_TABLE):
            return None
        if select.args.get("where") or len(select.expressions) != 1:
            return None
        values = long_lists.get(table.name)
        return None if values is None else values.column("value").to_pylist()

    around = partition_pruning.Surroundings(columns_of, values_of)
    return {
        id(table): partition_pruning.pruned(table, record, around)
        for table, _, record in resolved
        if record is not None
    }


def _scan_lines(
    db: str, table: exp.Table, pruning: partition_pruning.Pruning, bounds: tuple[ColumnBound, ...]
) -> list[str]:
    """What EXPLAIN shows of a table read: Doris's TABLE, partitions= and tablets= lines, and the
    bounds its blocks are pruned by (their min/max)."""
    lines = [
        f"TABLE: {db}.{pruning.table.name}({table.alias_or_name})",
        pruning.explained(),
        pruning.tablets_explained(),
    ]
    terms = []
    for bound in bounds:
        if bound.low is not None and bound.low == bound.high:
            terms.append(f"{bound.column} = {bound.low}")
            continue
        if bound.low is not None:
            terms.append(f"{bound.column} >= {bound.low}")
        if bound.high is not None:
            terms.append(f"{bound.column} <= {bound.high}")
    if terms:
        lines.append(f"MIN/MAX PREDICATES: {' AND '.join(terms)}")
    return lines


def _answer_result(names: list[str], answer: engine.Answer, for_client: bool = True) -> Result:
    """The engine's answer as MySQL's result, its columns named names. Columns that need no
    look at the rows are kept: the same names and types give the very same columns object (the
    connection keeps its encoding of them while they stay). BITMAP and HLL values are NULL for
    a client, as Doris answers them, and kept as they are for an INSERT ... SELECT."""
    key = (tuple(names), tuple(answer.columns))
    kept = _ANSWER_COLUMNS.get(key)
    if kept is not None:
        return Result(columns=kept, rows=answer.rows)
    rows = answer.rows
    columns = []
    arrays_at = set()
    for position, (name, (_, duck_type)) in enumerate(zip(names, answer.columns, strict=True)):
        sql_type = _sql_type(duck_type)
        if sql_type == "DATETIME":
            sql_type = f"DATETIME({_fractional_digits(rows, position)})"
        elif sql_type == ARRAY_TYPE:
            arrays_at.add(position)
        columns.append(_result_column(name, sql_type))
    if arrays_at:  # never ArrowRows: DuckDB's lists do not read as Python from Arrow alike
        hidden = arrays.hidden_at(duck_type for _, duck_type in answer.columns)
        if not for_client:
            arrays_at, hidden = set(arrays_at) - hidden, frozenset()
        rows = arrays.rows_with_text(rows, frozenset(arrays_at), hidden)
    elif not any(duck_type.startswith("TIMESTAMP") for _, duck_type in answer.columns):
        if len(_ANSWER_COLUMNS) >= MAX_KEPT_COLUMNS:
            _ANSWER_COLUMNS.clear()
        columns = _ANSWER_COLUMNS[key] = tuple(columns)
    return Result(columns=columns, rows=rows)


MAX_KEPT_COLUMNS = 4096  # result columns kept by name and type; past it all are let go
_COLUMNS: dict[tuple[str, str], object] = {}
_ANSWER_COLUMNS: dict[tuple[tuple, tuple], tuple] = {}  # by names and engine types


def _result_column(name: str, sql_type: str):
    """column(name, sql_type), kept: a point read's columns are the same every time (columns
    never change once made)."""
    kept = _COLUMNS.get((name, sql_type))
    if kept is None:
        if len(_COLUMNS) >= MAX_KEPT_COLUMNS:
            _COLUMNS.clear()
        kept = _COLUMNS[name, sql_type] = column(name, sql_type)
    return kept


async def _plain_read(
    session, plan: SelectPlan, read: table_data.TableReader, row_ids_of: str | None
) -> Result | None:
    """A plain read bounded on the key (`SELECT c FROM t WHERE id = 5`, the rows a DELETE or an
    UPDATE by key names) answered without the engine: on the loop when the data plane has its
    rows at hand, else from the rows within the bounds read off it; None otherwise (the
    engine's worker runs it)."""
    expression = plan.expression
    if plan.lists or not isinstance(expression, exp.Select):
        return None
    source = expression.args.get("from_")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.catalog or table.args.get("version"):
        return None
    if table.args.get("partition"):  # its rows within the bounds are every partition's
        return None
    shape = plain_reads.shape_of(expression, table)
    db = table.db or session.database or ""
    if (
        shape is None
        or db.lower() == INFORMATION_SCHEMA
        or not isinstance(table.this, exp.Identifier)
    ):
        return None
    record = read.table(db, table.name, _privilege_to_read(table))
    if views.is_view(record) or row_policies.binds_any(session, record):
        return None
    exact = row_bounds.exact_bounds(expression, table, record)
    if not exact:
        return None
    with_row_ids = row_ids_of is not None and row_ids_of == table.alias_or_name
    rows = await read.within_bounds(record, exact, with_row_ids)
    if rows is None:
        return None
    answer = plain_reads.shaped_answer(rows, shape)  # rows are within the bounds
    if answer is None:
        return None
    names = list(plan.names) if len(plan.names) == len(shape.columns) else list(shape.columns)
    return _answer_result(names, answer)


def point_read(
    session, read: plain_reads.PreparedRead, values: list, names: list[str] | None = None
) -> Result | None:
    """A prepared read bounded on the table's first key column answered from the data plane's
    key index at hand, its columns named names (the read's own by default); None when it cannot
    be (run_prepared_read is tried next)."""
    point = point_reads.answer(session, read, values)
    return None if point is None else _answer_result(names or read.names, point)


async def run_prepared_read(
    session, read: plain_reads.PreparedRead, values: list, names: list[str] | None = None
):
    """A prepared read bounded on key columns answered from the data plane's key index, on the
    loop (no engine, no tree), its columns named names (the read's own by default); None when it
    cannot be (the statement then runs as any other)."""
    bounds = read.bounds(values)
    if bounds is None:
        return None
    zone = str(session.variable("time_zone") or "SYSTEM")
    try:  # refused as the engine's path refuses it (no clock is read here)
        if zone.upper() != "SYSTEM":
            mysql_functions.time_zone(zone)
    except mysql_functions.UnknownTimeZone as error:
        raise QueryError(1298, f"Unknown or incorrect time zone: '{error}'") from None
    db = read.db or session.database or ""
    if db.lower() == INFORMATION_SCHEMA:
        return None
    reader = table_data.TableReader(session)
    record = reader.table(db, read.table)
    if row_policies.binds_any(session, record):
        return None
    exact = []
    for bound in bounds:
        column = record.column(bound.column)
        if column is None or column.type.base not in INTEGER_BITS or column.type.base == "LARGEINT":
            return None
        exact.append(ColumnBound(column.name, bound.low, bound.high))
    rows = await reader.within_bounds(record, tuple(exact))
    if rows is None:
        return None
    answer = plain_reads.shaped_answer(rows, read.shape)  # rows are within the bounds
    if answer is None:
        return None
    return _answer_result(list(names or read.names), answer)


def _fractional_digits(rows, position: int) -> int:
    """The fractional seconds a DATETIME result shows: DuckDB's TIMESTAMP keeps no precision, so
    as many as its values need (0, 3 or 6)."""
    if isinstance(rows, ArrowRows):
        digits = _fractional_digits(rows.head, position)
        return max(digits, arrow_fractional_digits(rows.table.column(position)))
    digits = 0
    for row in rows:
        value = row[position]
        micros = getattr(value, "microsecond", 0)
        if micros % 1000:
            return 6
        if micros:
            digits = 3
    return digits


def _as_of(read: table_data.TableReader, version: exp.Expression | None) -> int | None:
    """The timestamp of `t FOR SYSTEM_TIME AS OF <time>` (MariaDB's time travel), else None."""
    if version is None:
        return None
    moment = _moment(version)
    if str(version.args.get("kind", "")).upper() != "AS OF" or not isinstance(moment, exp.Literal):
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET,
            "Only FOR SYSTEM_TIME AS OF <a time or a timestamp> is supported",
        )
    return read.as_of(moment.this)


def plain_read(
    expression: exp.Expression, table_node: exp.Table, table
) -> tuple[list[str], tuple] | None:
    """The columns and bounds of a read the engine is not needed for (plain_reads), else None."""
    columns = plain_reads.plain_columns(expression, table_node)
    if columns is None:
        return None
    exact = row_bounds.exact_bounds(expression, table_node, table)
    return None if exact is None else (columns, exact)


def _name_derived_columns(expression: exp.Expression) -> None:
    """A derived table's unnamed expressions get MySQL's names (`count(*)`, not the engine's
    count_star()): what `SELECT * FROM (SELECT count(*) FROM t) q` shows, as Spark's JDBC
    `query` option asks it."""
    for subquery in expression.find_all(exp.Subquery):
        select = subquery.this
        if not isinstance(subquery.parent, exp.From | exp.Join) or not isinstance(
            select, exp.Select
        ):
            continue
        for projection in select.expressions:
            if not isinstance(projection, exp.Alias | exp.Column | exp.Star):
                projection.replace(
                    exp.alias_(projection.copy(), projection_name(projection), quoted=True)
                )


def _check_group_positions(expression: exp.Expression) -> None:
    """GROUP BY <n> names the n-th select item: MySQL's 1054 for any other number."""
    for select in expression.find_all(exp.Select):
        group = select.args.get("group")
        for term in group.expressions if group else ():
            number = term.this if isinstance(term, exp.Neg) else term
            if not (isinstance(number, exp.Literal) and number.this.isdigit()):
                continue
            if isinstance(term, exp.Neg) or not 1 <= int(number.this) <= len(select.expressions):
                raise QueryError(
                    ErrorCode.BAD_FIELD_ERROR,
                    f"Unknown column '{term.sql(dialect='mysql')}' in 'group statement'",
                )


def _drop_constant_order(expression: exp.Expression) -> None:
    """ORDER BY 'a string' orders by a constant: MySQL ignores it."""
    for order in list(expression.find_all(exp.Order)):
        terms = [term for term in order.expressions if not _is_string(term.this)]
        if terms:
            order.set("expressions", terms)
        else:
            order.pop()


def _is_string(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


_REGISTERED_PREFIX = "quire_is_"  # an information_schema table, as the engine knows it
_TABLE_PREFIX = "quire_t_"  # a table's rows at the statement's snapshot, by the table's id


def _columns_read(
    expression: exp.Expression, tables, of_table_data: bool = False
) -> frozenset[str] | None:
    """The names a query may read columns by (a superset); None if it may read every column:
    `*`, NATURAL JOIN, or a table's name used as a value (DuckDB's whole row). of_table_data
    (the tables a CN scans): COUNT(*) and EXISTS (SELECT * ...) read no column, and a name
    given to a derived column is not a table's whole row."""
    if any(join.args.get("method") for join in expression.find_all(exp.Join)):
        return None
    for star in expression.find_all(exp.Star):
        if not (of_table_data and _reads_no_column(star)):
            return None
    names = {identifier.name.lower() for identifier in expression.find_all(exp.Identifier)}
    whole_rows = {table.alias_or_name.lower() for table in expression.find_all(exp.Table)}
    whole_rows.update(tables)
    if of_table_data:  # a name a derived column is given (`n_name AS nation`) is that column
        whole_rows -= {alias.alias.lower() for alias in expression.find_all(exp.Alias)}
    if any(column.name.lower() in whole_rows for column in expression.find_all(exp.Column)):
        return None
    return frozenset(names)


def _reads_no_column(star: exp.Star) -> bool:
    if isinstance(star.parent, exp.Count):
        return True
    select = star.parent
    return isinstance(select, exp.Select) and isinstance(select.parent, exp.Exists)


def _resolved(
    expression: exp.Expression, session, read
) -> list[tuple[exp.Table, str, Table | None]]:
    """The tables expression reads from the catalog, each with its database and record (None
    for information_schema's); WITH names and IN lists made tables are not among them."""
    resolved = []
    for table in views.catalog_tables(expression):
        if table.meta.get(in_lists.LIST_TABLE):
            continue
        if table.catalog and table.catalog.lower() != INTERNAL_CATALOG:
            raise QueryError(ErrorCode.UNKNOWN_CATALOG, f"Unknown catalog '{table.catalog}'")
        db = table.db or session.database or ""
        if db.lower() == INFORMATION_SCHEMA:
            record = None
        else:
            record = _catalog_table(table, db, session, read)
        resolved.append((table, db, record))
    return resolved


def _filter_by_row_policies(expression: exp.Expression, session, read) -> None:
    """Each table of data a row policy binds the user on read through its filter."""
    for table in views.catalog_tables(expression):
        record = _named_record(table, session, read)
        if record is not None and not views.is_view(record):
            row_policies.filter_table(session, table, record)


def _view_of(table: exp.Table, session, read) -> Table | None:
    """The view table names, if it names one (its reader may SELECT from it)."""
    record = _named_record(table, session, read)
    return record if record is not None and views.is_view(record) else None


def _named_record(table: exp.Table, session, read) -> Table | None:
    """The catalog's table or view the node names plainly; None for an IN list's table, another
    catalog's, information_schema's or a name that is no identifier."""
    if (
        table.meta.get(in_lists.LIST_TABLE)
        or table.catalog
        or not isinstance(table.this, exp.Identifier)
    ):
        return None
    db = table.db or session.database or ""
    if db.lower() == INFORMATION_SCHEMA:
        return None
    return _catalog_table(table, db, session, read)


WRITTEN = "quire_written"  # meta of the table node a DELETE's or an UPDATE's rows are read from


def _privilege_to_read(table: exp.Table) -> str:
    """SELECT, or LOAD for the table a DELETE or an UPDATE writes (Doris asks LOAD alone of
    them, whatever their WHERE reads of it)."""
    return privileges.LOAD if table.meta.get(WRITTEN) else privileges.SELECT


def _catalog_table(table: exp.Table, db: str, session, read) -> Table:
    """The record of a table the query reads: the reader needs SELECT on it (LOAD on the one a
    DELETE or an UPDATE writes), nothing on one a view reads; a view's table or database gone
    makes the view invalid (1356, as MySQL)."""
    by_view = table.meta.get(views.READ_BY_VIEW)
    if by_view is None:
        return read.table(db, table.name, _privilege_to_read(table))
    try:
        return read.table(db, table.name, None)
    except QueryError as error:
        if error.code not in (ErrorCode.NO_SUCH_TABLE, ErrorCode.BAD_DB_ERROR):
            raise
        view_db, view = by_view
        raise views.invalid(view_db or session.database or "", view) from None


def _column_types(record: Table | None) -> dict | None:
    return (
        None if record is None else {column.name.lower(): column.type for column in record.columns}
    )


def _positive_variable(session, name: str) -> int:
    value = session.variable(name)
    return value if isinstance(value, int) and value > 0 else SCHEMA[name][1]


def _decimal_type(duck_type) -> str:
    text = str(duck_type)
    return text if text.startswith("DECIMAL") else "VARCHAR"


def substituted(root: exp.Expression, substitute) -> exp.Expression:
    """root with every node for which substitute gives another node replaced by it, in one pass:
    sqlglot's transform and replace search a list for each item they replace (quadratic in a long
    select list)."""
    replaced: dict[int, exp.Expression] = {}
    for node in root.walk():
        new = substitute(node)
        if new is not node:
            replaced[id(node)] = new
    if id(root) in replaced:
        return replaced[id(root)]
    parents: dict[int, exp.Expression] = {}
    for node in root.walk():
        if id(node) in replaced and node.parent is not None:
            parents[id(node.parent)] = node.parent
    for parent in parents.values():
        for key, value in list(parent.args.items()):
            if isinstance(value, list):
                if any(id(item) in replaced for item in value):
                    parent.set(key, [replaced.get(id(item), item) for item in value])
            elif id(value) in replaced:
                parent.set(key, replaced[id(value)])
    return root


def _bind(node: exp.Expression, session, time) -> exp.Expression:
    if isinstance(node, exp.Cast) and _is_timestamp_literal(node):
        return exp.cast(node.this, exp.DataType.Type.DATETIME)
    if isinstance(node, exp.Placeholder):
        return exp.null()  # a prepared statement being described
    if isinstance(node, exp.SessionParameter):
        value = session.variable(node.name, (node.args.get("kind") or "").upper())
        return _literal(value)
    if isinstance(node, exp.Parameter):  # a user variable, NULL until it is set
        return _literal(session.user_variables.get(node.name.lower()))
    if isinstance(node, exp.Func):
        function = _session_function(node)
        if function is not None:
            return _literal(function(session))
        clock = mysql_functions.clock_value(node, time)
        if clock is not None:
            return clock
    return node


def _is_timestamp_literal(cast: exp.Cast) -> bool:
    """MySQL's `TIMESTAMP '2020-01-01 10:00:00'`: a DATETIME value (sqlglot reads it as one with
    a time zone, which MySQL has no literal for)."""
    return cast.to.is_type(exp.DataType.Type.TIMESTAMPTZ) and _is_string(cast.this)


def _literal(value) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, datetime.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(" ")), exp.DataType.Type.DATETIME)
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int | float | decimal.Decimal):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))
