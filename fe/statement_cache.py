"""Parsed statements, cached so that repeated statements skip sqlglot's parser.

Two levels, both bounded LRUs shared by every session of an FE:
- by exact text: a client's connect-time queries, SELECT 1, SHOW TABLES;
- by shape, for queries: the statement's tokens with its literals taken out. A query whose shape was
  seen before (`... WHERE id = 7` after `... WHERE id = 3`) is tokenized, and its literals are
  bound into the cached tree instead of parsing again.

A prepared statement is tokenized and parsed once, when it is prepared (Prepared). A query, SET,
UPDATE or DELETE keeps each `?` as a marker in its tree, and each execution binds its typed
parameter values into a copy of that tree; another statement of the Doris grammar keeps its
tokens, and each execution hands the grammar those tokens with a typed token for each value in
place of its `?`. Values are never
written into SQL text and tokenized again (a non-leader writes them out only to forward a write).

Statements longer than max_sql_bytes are neither cached nor parsed on the event loop:
long_statement_threads threads parse them, with at most max_waiting_long_statements more waiting
(more are refused), so a long statement slows other clients but never stops them. No statement
has more than max_tokens tokens (sqlglot's parser takes about 30 us a token).
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.prepared import sql_literal, time_text
from fe.sql import statements as st
from fe.sql.literal_insert import NUMBER, literal_columns, literal_insert
from fe.sql.parser import (
    QUERY_STARTS,
    ParseError,
    outfile_at,
    outfile_clause,
    parse_tokens,
    parse_with_sqlglot,
    tokenize,
)
from fe.statements import plain_reads, point_writes, queries

LITERAL_TOKENS = (TokenType.NUMBER, TokenType.STRING)
SENTINEL = "\x00quire-literal-"
PARAMETER = "\x00quire-parameter-"
MAX_PLAIN_NESTING = 64
PARSED_BYTES_PER_TOKEN = 2048  # a tree's nodes and a shape's key, measured with tracemalloc
UNSHAPED = object()  # by_shape's entry for a shape whose literals cannot be markers


class LRU:
    """At most `capacity` entries, together at most `max_bytes` (each entry's size as the caller
    estimates it); the least recently used go first."""

    def __init__(self, capacity: int, max_bytes: int):
        assert capacity >= 0 and max_bytes >= 0
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict = OrderedDict()  # key -> (value, size)

    def get(self, key):
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key, value, size: int) -> None:
        if self.capacity == 0 or size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._entries[key] = (value, size)
        self.bytes += size
        while len(self._entries) > self.capacity or self.bytes > self.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted

    def __len__(self) -> int:
        return len(self._entries)


class LongStatementsBusy(Exception):
    pass


@dataclass(frozen=True)
class _Shape:
    """What by_shape keeps of a query's shape: its tree with a marker for each literal, and its
    read by the table's key columns, if it is one (plain_reads.prepared_read)."""

    template: exp.Expression
    read: plain_reads.PreparedRead | None


@dataclass(frozen=True)
class ShapedRead:
    """A query read by its table's key (`SELECT c FROM t WHERE id = 5`, a shape seen before):
    tried from the data plane's key index as a prepared read with its literals as the values;
    plan() is the query's plan otherwise."""

    read: plain_reads.PreparedRead
    values: list
    names: list[str]
    plan: Callable[[], object]


@dataclass(frozen=True)
class Prepared:
    """A statement parsed when it was prepared. Exactly one of: `statement`, runnable as it is
    (no parameters); `template`, a query, SET, UPDATE or DELETE with each `?` a numbered marker;
    `tokens`, the statement's tokens with its `?` kept, for the grammar to read with values in
    their place (and, for an INSERT of plain rows, `insert`: its rows, which values that read
    as themselves are bound into without the grammar)."""

    sql: str
    markers: tuple[int, ...]  # where each `?` is in sql
    is_query: bool
    statement: object = None
    template: exp.Expression | None = None
    tokens: tuple[Token, ...] = ()
    read: plain_reads.PreparedRead | None = None  # a point or range read by its parameters
    write: point_writes.PreparedWrite | None = None  # an UPDATE or DELETE of one key's rows
    # An INSERT ... VALUES of markers and literals: its target, and per row per value the
    # parameter it is (-1: the literal beside it), for values that read as themselves
    insert: tuple[exp.Insert, tuple[tuple[tuple[int, object], ...], ...]] | None = None
    written: tuple[str, ...] | None = None  # a query's items as written, which name its columns

    @property
    def parameters(self) -> int:
        return len(self.markers)


class StatementCache:
    def __init__(
        self,
        capacity: int,
        max_sql_bytes: int = 16384,
        max_bytes: int = 256 * 1024 * 1024,
        max_tokens: int = 200_000,
        max_waiting_long_statements: int = 4,
        long_statement_threads: int = 1,
    ):
        assert max_tokens > 0 and max_waiting_long_statements >= 0 and long_statement_threads > 0
        self.max_sql_bytes = max_sql_bytes  # longer statements are parsed every time, not kept
        self.max_tokens = max_tokens
        self.max_waiting_long_statements = max_waiting_long_statements
        self.long_statement_threads = long_statement_threads
        self.by_text = LRU(capacity, max_bytes // 2)
        self.by_shape = LRU(capacity, max_bytes // 2)
        self.shape_hits = 0
        self._long = ThreadPoolExecutor(
            long_statement_threads, thread_name_prefix="long-statements"
        )
        self._long_admitted = 0
        self._long_lock = threading.Lock()

    async def parse(self, sql: str, reads: bool = False):
        """statement(sql), a long statement parsed off the event loop; reads: a query of a
        known shape that reads by its table's key may come as a ShapedRead."""
        if len(sql) <= self.max_sql_bytes:
            return self.statement(sql, reads)
        return await self._parse_long(self._uncached, sql)

    async def prepare(self, sql: str) -> Prepared:
        """prepare_statement(sql), a long statement parsed off the event loop."""
        if len(sql) <= self.max_sql_bytes:
            return self.prepare_statement(sql)
        return await self._parse_long(self.prepare_statement, sql)

    async def _parse_long(self, parse: Callable, sql: str):
        with self._long_lock:
            if (
                self._long_admitted
                >= self.long_statement_threads + self.max_waiting_long_statements
            ):
                raise LongStatementsBusy()
            self._long_admitted += 1
        future = self._long.submit(parse, sql)
        future.add_done_callback(self._long_done)  # a parse already running is not cancelled
        return await asyncio.wrap_future(future)

    def _long_done(self, future) -> None:
        with self._long_lock:
            self._long_admitted -= 1

    def cached(self, sql: str):
        """The runnable form of a text seen before, else None (a long text is never kept: it is
        not hashed for the lookup)."""
        return self.by_text.get(sql) if len(sql) <= self.max_sql_bytes else None

    def statement(self, sql: str, reads: bool = False):
        """The runnable form of `sql`: a SelectPlan for queries (or, reads, a ShapedRead), a
        statement record otherwise."""
        cached = self.cached(sql)
        if cached is not None:
            return cached
        return self._literal_insert(sql) or self._parsed(self._tokens(sql), sql, reads)

    def _parsed(self, tokens: list[Token], sql: str, reads: bool = False):
        outfile = outfile_at(tokens) if tokens[0].token_type in QUERY_STARTS else None
        if outfile is not None:  # the query before INTO OUTFILE, and where its rows go
            target, kind, properties = outfile_clause(tokens[outfile:], sql)
            query = self._query(tokens[:outfile], sql[: tokens[outfile].start])
            return st.SelectIntoOutfile(query, target, kind, properties)
        if tokens[0].token_type in QUERY_STARTS:
            statement = self._query(tokens, sql, reads)
            if isinstance(statement, ShapedRead):
                return statement  # its shape is kept; the plan, if made, is not
        else:
            statement = _statement(tokens, sql)
        if len(sql) <= self.max_sql_bytes:
            self.by_text.put(sql, statement, _parsed_bytes(tokens, sql) + _tables_bytes(statement))
        return statement

    def _uncached(self, sql: str):
        return self._literal_insert(sql) or _unshaped(self._tokens(sql), sql)

    def _literal_insert(self, sql: str) -> st.Insert | None:
        """An INSERT of plain literal rows read straight from its text, else None."""
        found = literal_columns(sql)
        if found is None:
            return None
        statement, token_count = found
        self._check_token_count(token_count)
        return statement

    def prepare_statement(self, sql: str) -> Prepared:
        """`sql` tokenized and parsed once, its `?` markers kept; ParseError if it cannot be
        parsed with a value in the place of each (MySQL refuses it at prepare time, too)."""
        tokens = self._tokens(sql)
        markers = tuple(token.start for token in tokens if _is_parameter(token))
        is_query = tokens[0].token_type in QUERY_STARTS
        if not markers:
            kept = len(sql) <= self.max_sql_bytes
            statement = self._parsed(tokens, sql) if kept else _unshaped(tokens, sql)
            return Prepared(sql, markers, is_query, statement=statement)
        if is_query:
            marked = _marked_template(tokens, sql, _is_parameter, PARAMETER)
            if marked is not None and isinstance(marked[0], exp.Select | exp.SetOperation):
                read = plain_reads.prepared_read(
                    marked[0], lambda node: _marker_index(node, PARAMETER), queries.projection_name
                )
                written = queries.written_projections(tokens, sql)
                return Prepared(
                    sql,
                    markers,
                    is_query,
                    template=marked[0],
                    read=read,
                    written=None if written is None else tuple(written),
                )
        prepared = Prepared(sql, markers, is_query, tokens=tuple(tokens))
        try:
            statement = bind(prepared, [f"{PARAMETER}{i}" for i in range(len(markers))])
        except ParseError:
            bind(prepared, [0] * len(markers))  # a number where a string is refused (KILL ?)
            return prepared
        insert = _insert_of_markers(statement, len(markers))
        if insert is not None:
            return Prepared(sql, markers, is_query, tokens=tuple(tokens), insert=insert)
        if isinstance(statement, st.SetStatement | st.Update | st.Delete):
            expression = statement.expression
            if _markers_in(expression, PARAMETER) == len(markers) and not _marks_a_format(
                expression, PARAMETER
            ):  # each execution binds its values into a copy of the tree, parsed once
                write = point_writes.prepared_write(
                    expression, lambda node: _marker_index(node, PARAMETER)
                )
                return Prepared(sql, markers, is_query, template=expression, write=write)
        return prepared

    def _tokens(self, sql: str) -> list[Token]:
        tokens = _read_as_mysql(tokenize(sql))
        self._check_token_count(len(tokens))
        return tokens

    def _check_token_count(self, count: int) -> None:
        if count > self.max_tokens:
            raise ParseError(
                f"The statement has {count} tokens; the limit is {self.max_tokens} "
                "(max_statement_tokens)"
            )

    def close(self) -> None:
        self._long.shutdown(wait=False, cancel_futures=True)

    def _query(self, tokens: list[Token], sql: str, reads: bool = False):
        literals = [token for token in tokens if token.token_type in LITERAL_TOKENS]
        if not literals or len(sql) > self.max_sql_bytes:
            return plan(parse_with_sqlglot(tokens, sql), tokens, sql)
        shape = tuple(
            token.token_type if token.token_type in LITERAL_TOKENS else token.text
            for token in tokens
        )
        kept = self.by_shape.get(shape)
        if kept is None:
            template = _template(tokens, sql)
            kept = UNSHAPED if template is None else _Shape(template, _read_of(template))
            self.by_shape.put(shape, kept, _parsed_bytes(tokens, sql))
            if kept is UNSHAPED:
                return plan(parse_with_sqlglot(tokens, sql), tokens, sql)
        elif kept is UNSHAPED:
            return plan(parse_with_sqlglot(tokens, sql), tokens, sql)
        else:
            self.shape_hits += 1
        template = kept.template
        if reads and kept.read is not None:
            names = queries.written_projections(tokens, sql)
            if names is not None and len(names) == len(template.expressions):
                return ShapedRead(
                    kept.read,
                    [_literal_value(token) for token in literals],
                    [
                        queries.projection_name(projection, name)
                        for projection, name in zip(template.expressions, names, strict=True)
                    ],
                    lambda: plan(_bound(template, literals), tokens, sql),
                )
        return plan(_bound(template, literals), tokens, sql)


def _parsed_bytes(tokens: list[Token], sql: str) -> int:
    """About what a statement's parsed tree and cache key take in memory."""
    return PARSED_BYTES_PER_TOKEN * len(tokens) + 2 * len(sql)


def _tables_bytes(statement) -> int:
    """What the tables a query's plan holds take (a long IN list's values, a numbers(...)
    table's rows: far more than its text)."""
    return sum(getattr(table, "nbytes", 0) for _, table in getattr(statement, "lists", ()))


def _read_as_mysql(tokens: list[Token]) -> list[Token]:
    """The tokens as MySQL reads them where sqlglot's differ: `1e` is a name, not a number;
    `1e309` is refused; deeply nested redundant parentheses, `((((1))))`, are one pair (MySQL
    answers 1 at any depth; sqlglot's parser recurses once a pair)."""
    number = TokenType.NUMBER
    for index, token in enumerate(tokens):
        if token.token_type != number or token.text.isdigit():
            continue
        if not NUMBER.fullmatch(token.text):
            tokens[index] = Token(
                TokenType.VAR, token.text, token.line, token.col, token.start, token.end
            )
        elif math.isinf(float(token.text)):
            raise QueryError(
                ErrorCode.ILLEGAL_VALUE_FOR_TYPE,
                f"Illegal double '{token.text}' value found during parsing",
            )
    return _without_redundant_parentheses(tokens)


def _without_redundant_parentheses(tokens: list[Token]) -> list[Token]:
    """Of each `((x))` with no comma in x, the outer pair dropped, when pairs nest deeper than
    MAX_PLAIN_NESTING (shallower statements keep their text: MySQL names columns by it)."""
    depth = deepest = 0
    opening, closing_type = TokenType.L_PAREN, TokenType.R_PAREN
    for kind in [token.token_type for token in tokens]:  # most nest shallowly: find out first
        if kind is opening:
            depth += 1
            if depth > deepest:
                deepest = depth
        elif kind is closing_type and depth:
            depth -= 1
    if deepest <= MAX_PLAIN_NESTING:
        return tokens
    opened: list[list] = []  # [index, has a comma of its own] of each open parenthesis
    closing: dict[int, tuple[int, bool]] = {}  # open index -> (close index, has a comma)
    deepest = 0
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            opened.append([index, False])
            deepest = max(deepest, len(opened))
        elif token.token_type == TokenType.COMMA and opened:
            opened[-1][1] = True
        elif token.token_type == TokenType.R_PAREN and opened:
            start, has_comma = opened.pop()
            closing[start] = (index, has_comma)
    if deepest <= MAX_PLAIN_NESTING:
        return tokens
    dropped = set()
    for start, (end, _) in closing.items():
        inner = closing.get(start + 1)
        if inner is not None and inner[0] == end - 1 and not inner[1]:
            dropped.update((start, end))
    return [token for index, token in enumerate(tokens) if index not in dropped]


def _unshaped(tokens: list[Token], sql: str):
    if tokens[0].token_type in QUERY_STARTS:
        return plan(parse_with_sqlglot(tokens, sql), tokens, sql)
    return _statement(tokens, sql)


def _statement(tokens: list[Token], sql: str):
    """A statement other than a query; an INSERT of literal rows without sqlglot's parser."""
    if tokens[0].token_type == TokenType.INSERT:
        statement = literal_insert(tokens)
        if statement is not None:
            return statement
    return parse_tokens(tokens, sql)


def plan(expression: exp.Expression, tokens: list[Token] = (), sql: str = "", written=None):
    """The query's plan, its columns named by written (or by its items' text in sql)."""
    if not isinstance(expression, exp.Select | exp.SetOperation):
        raise ParseError("Only SELECT queries are supported here")
    if written is None:
        written = queries.written_projections(tokens, sql)
    return queries.plan_select(expression, written)


def _template(tokens: list[Token], sql: str) -> exp.Expression | None:
    """The query parsed with each literal replaced by a numbered marker; None if that changes
    how it parses (then the query is not cached by shape)."""
    marked = _marked_template(
        tokens, sql, lambda token: token.token_type in LITERAL_TOKENS, SENTINEL
    )
    return None if marked is None else marked[0]


def _read_of(template: exp.Expression) -> plain_reads.PreparedRead | None:
    if not isinstance(template, exp.Select):
        return None
    return plain_reads.prepared_read(
        template, lambda node: _marker_index(node, SENTINEL), queries.projection_name
    )


def _literal_value(token: Token) -> object:
    """A literal's value as a prepared read takes it: an integer's int, else its text (a read
    by other values declines them, and the query's plan answers)."""
    text = token.text
    if token.token_type == TokenType.NUMBER and text.isdigit():
        return int(text)
    return text


def _is_parameter(token: Token) -> bool:
    return token.token_type == TokenType.PLACEHOLDER and token.text == "?"


def _marked_template(
    tokens: list[Token],
    sql: str,
    is_marked: Callable[[Token], bool],
    prefix: str,
) -> tuple[exp.Expression, int] | None:
    """The statement parsed with each token is_marked picks replaced by a string marker
    prefix + its number, and how many there are; None if a marker did not stay a literal or is
    a date format."""
    marked = []
    count = 0
    for token in tokens:
        if is_marked(token):
            token = Token.string(f"{prefix}{count}")
            count += 1
        marked.append(token)
    try:
        template = parse_with_sqlglot(marked, sql)
    except ParseError:
        return None
    if _markers_in(template, prefix) != count or _marks_a_format(template, prefix):
        return None
    return template, count


def _marks_a_format(expression: exp.Expression, prefix: str) -> bool:
    """Whether a marker is a date format, which sqlglot rewrites for DuckDB as it parses."""
    return any(
        _marker_index(node, prefix) >= 0 and node.arg_key == "format"
        for node in expression.find_all(exp.Literal)
    )


def _markers_in(expression: exp.Expression, prefix: str) -> int:
    return sum(1 for node in expression.find_all(exp.Literal) if _marker_index(node, prefix) >= 0)


def _marker_index(node: exp.Expression, prefix: str) -> int:
    """The number of the marker `node` is; -1 if it is none."""
    if isinstance(node, exp.Literal) and node.is_string and node.this.startswith(prefix):
        return int(node.this[len(prefix) :])
    return -1


def _bound(template: exp.Expression, literals: list[Token]) -> exp.Expression:
    """A copy of the template with each marker set to its literal, in place (sqlglot's transform
    replaces list items one index search each: quadratic in a long IN list)."""
    bound = template.copy()
    for node in list(bound.find_all(exp.Literal)):
        index = _marker_index(node, SENTINEL)
        if index >= 0:
            token = literals[index]
            node.set("this", token.text)
            node.set("is_string", token.token_type != TokenType.NUMBER)
    return bound


def bind(prepared: Prepared, values: list):
    """The prepared statement with each parameter's typed value in the place of its `?`."""
    assert len(values) == prepared.parameters, (len(values), prepared.parameters)
    if prepared.statement is not None:
        return prepared.statement
    if prepared.insert is not None and all(type(value) in AS_THEMSELVES for value in values):
        target, rows = prepared.insert
        return st.Insert(
            target,
            tuple(
                tuple(values[index] if index >= 0 else literal for index, literal in row)
                for row in rows
            ),
        )
    if prepared.template is None:
        return _unshaped(_bound_tokens(prepared.tokens, values), prepared.sql)

    def value_of(node: exp.Expression) -> exp.Expression:
        index = _marker_index(node, PARAMETER)
        return node if index < 0 else parameter_expression(values[index])

    bound = queries.substituted(prepared.template.copy(), value_of)
    wrapped = TEMPLATED_STATEMENTS.get(type(bound))
    if wrapped is not None:
        return wrapped(bound)
    return plan(bound, written=None if prepared.written is None else list(prepared.written))


# Parameter values an INSERT's rows read as they are: bound as tokens, literal_insert reads each
# back equal and of its type.
AS_THEMSELVES = (int, str, type(None))


def _insert_of_markers(statement, parameters: int):
    """Prepared.insert of a statement bound with a marker string per parameter, if it is an
    INSERT whose rows hold each marker once, as a whole value."""
    if not isinstance(statement, st.Insert) or statement.rows is None:
        return None
    rows = []
    seen = 0
    for row in statement.rows:
        values = []
        for value in row:
            index = _marker_value_index(value)
            seen += index >= 0
            values.append((index, None if index >= 0 else value))
        rows.append(tuple(values))
    return (statement.expression, tuple(rows)) if seen == parameters else None


def _marker_value_index(value) -> int:
    if type(value) is not str or not value.startswith(PARAMETER):
        return -1
    number = value[len(PARAMETER) :]
    return int(number) if number.isdigit() else -1


# Statements of the grammar whose prepared form is a tree with its parameters as markers.
TEMPLATED_STATEMENTS = {exp.Set: st.SetStatement, exp.Update: st.Update, exp.Delete: st.Delete}


def written(prepared: Prepared, values: list) -> str:
    """The prepared statement's text with its values written in (what a non-leader forwards)."""
    assert len(values) == prepared.parameters, (len(values), prepared.parameters)
    sql = prepared.sql
    parts = []
    begin = 0
    for marker, value in zip(prepared.markers, values, strict=True):
        parts += [sql[begin:marker], sql_literal(value)]
        begin = marker + 1
    return "".join(parts) + sql[begin:]


def _bound_tokens(tokens: tuple[Token, ...], values: list) -> list[Token]:
    bound = []
    index = 0
    for token in tokens:
        if _is_parameter(token):
            bound += parameter_tokens(values[index], token)
            index += 1
        else:
            bound.append(token)
    return bound


def parameter_tokens(value, marker: Token) -> list[Token]:
    """The tokens the MySQL dialect reads from `value` written as a literal, where `marker` was."""

    def token(token_type: TokenType, text: str) -> Token:
        return Token(token_type, text, marker.line, marker.col, marker.start, marker.end)

    expression = parameter_expression(value)
    if isinstance(expression, exp.Neg):
        return [token(TokenType.DASH, "-"), token(TokenType.NUMBER, expression.this.this)]
    if isinstance(expression, exp.Null):
        return [token(TokenType.NULL, "NULL")]
    if isinstance(expression, exp.Boolean):
        return [token(TokenType.TRUE if value else TokenType.FALSE, str(value).upper())]
    if isinstance(expression, exp.HexString):
        return [token(TokenType.HEX_STRING, expression.this)]
    assert isinstance(expression, exp.Literal), expression
    return [token(TokenType.STRING if expression.is_string else TokenType.NUMBER, expression.this)]


def parameter_expression(value) -> exp.Expression:
    """What the MySQL dialect reads from `value` written as a literal (fe.mysql's sql_literal)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, float) and not math.isfinite(value):
        raise QueryError(ErrorCode.WRONG_ARGUMENTS, f"Incorrect float parameter: {value}")
    if isinstance(value, int | float | decimal.Decimal):
        text = format(value, "f") if isinstance(value, decimal.Decimal) else repr(value)
        number = exp.Literal.number(text.removeprefix("-"))
        return exp.Neg(this=number) if text.startswith("-") else number
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, bytes):
        return exp.HexString(this=value.hex())
    if isinstance(value, datetime.datetime):
        return exp.Literal.string(value.isoformat(" "))
    if isinstance(value, datetime.date):
        return exp.Literal.string(value.isoformat())
    if isinstance(value, datetime.timedelta):
        return exp.Literal.string(time_text(value))
    raise AssertionError(f"no SQL value for {type(value).__name__}")
