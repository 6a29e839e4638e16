"""Parsed statements, cached so that repeated statements skip sqlglot's parser.

Two levels, both bounded LRUs shared by every session of an FE:
- by exact text: a client's connect-time queries, SELECT 1, SHOW TABLES;
- by shape, for queries: the statement's tokens with its literals taken out. A query whose shape was
  seen before (`... WHERE id = 7` after `... WHERE id = 3`, and every execution of a prepared
  statement, which arrives with its values inlined) is tokenized, and its literals are bound into
  the cached tree instead of parsing again.

Statements longer than max_sql_bytes are neither cached nor parsed on the event loop: one thread
parses them, one at a time, with at most max_waiting_long_statements waiting (more are refused),
so a long statement slows other clients but never stops them. No statement has more than
max_tokens tokens (sqlglot's parser takes about 30 us a token).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from fe import queries
from fe.sql import statements as st
from fe.sql.parser import QUERY_STARTS, ParseError, parse_tokens, parse_with_sqlglot, tokenize

LITERAL_TOKENS = (TokenType.NUMBER, TokenType.STRING)
SENTINEL = "\x00quire-literal-"


class LRU:
    def __init__(self, capacity: int):
        assert capacity >= 0
        self.capacity = capacity
        self._entries: OrderedDict = OrderedDict()

    def get(self, key):
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key, value) -> None:
        if self.capacity == 0:
            return
        self._entries[key] = value
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class LongStatementsBusy(Exception):
    pass


class StatementCache:
    def __init__(
        self,
        capacity: int,
        max_sql_bytes: int = 16384,
        max_tokens: int = 200_000,
        max_waiting_long_statements: int = 4,
    ):
        assert max_tokens > 0 and max_waiting_long_statements >= 0
        self.max_sql_bytes = max_sql_bytes  # longer statements are parsed every time, not kept
        self.max_tokens = max_tokens
        self.max_waiting_long_statements = max_waiting_long_statements
        self.by_text = LRU(capacity)
        self.by_shape = LRU(capacity)
        self.shape_hits = 0
        self._long = ThreadPoolExecutor(1, thread_name_prefix="long-statements")
        self._long_admitted = 0
        self._long_lock = threading.Lock()

    async def parse(self, sql: str):
        """statement(sql), a long statement parsed off the event loop."""
        if len(sql) <= self.max_sql_bytes:
            return self.statement(sql)
        with self._long_lock:
            if self._long_admitted > self.max_waiting_long_statements:
                raise LongStatementsBusy()
            self._long_admitted += 1
        future = self._long.submit(self._uncached, sql)
        future.add_done_callback(self._long_done)  # a parse already running is not cancelled
        return await asyncio.wrap_future(future)

    def _long_done(self, future) -> None:
        with self._long_lock:
            self._long_admitted -= 1

    def statement(self, sql: str):
        """The runnable form of `sql`: a SelectPlan for queries, a statement record otherwise."""
        cached = self.by_text.get(sql)
        if cached is not None:
            return cached
        tokens = self._tokens(sql)
        if tokens[0].token_type in QUERY_STARTS:
            statement = self._query(tokens, sql)
        else:
            statement = _statement(tokens, sql)
        if len(sql) <= self.max_sql_bytes:
            self.by_text.put(sql, statement)
        return statement

    def _uncached(self, sql: str):
        tokens = self._tokens(sql)
        if tokens[0].token_type in QUERY_STARTS:
            return plan(parse_with_sqlglot(tokens, sql))
        return _statement(tokens, sql)

    def _tokens(self, sql: str) -> list[Token]:
        tokens = tokenize(sql)
        if len(tokens) > self.max_tokens:
            raise ParseError(
                f"The statement has {len(tokens)} tokens; the limit is {self.max_tokens} "
                "(max_statement_tokens)"
            )
        return tokens

    def close(self) -> None:
        self._long.shutdown(wait=False, cancel_futures=True)

    def _query(self, tokens: list[Token], sql: str):
        literals = [token for token in tokens if token.token_type in LITERAL_TOKENS]
        if not literals:
            return plan(parse_with_sqlglot(tokens, sql))
        shape = tuple(
            token.token_type if token.token_type in LITERAL_TOKENS else token.text
            for token in tokens
        )
        template = self.by_shape.get(shape)
        if template is None:
            template = _template(tokens, sql)
            if template is None:
                return plan(parse_with_sqlglot(tokens, sql))
            self.by_shape.put(shape, template)
        else:
            self.shape_hits += 1
        return plan(_bound(template, literals))


def _statement(tokens: list[Token], sql: str):
    statement = parse_tokens(tokens, sql)
    return plan(statement.expression) if isinstance(statement, st.Query) else statement


def plan(expression: exp.Expression):
    if not isinstance(expression, exp.Select | exp.Union):
        raise ParseError("Only SELECT queries are supported here")
    return queries.plan_select(expression)


def _template(tokens: list[Token], sql: str) -> exp.Expression | None:
    """The query parsed with each literal replaced by a numbered marker; None if that changes
    how it parses (then the query is not cached by shape)."""
    marked = []
    index = 0
    for token in tokens:
        if token.token_type in LITERAL_TOKENS:
            marked.append(Token.string(f"{SENTINEL}{index}"))
            index += 1
        else:
            marked.append(token)
    try:
        template = parse_with_sqlglot(marked, sql)
    except ParseError:
        return None
    markers = [
        node
        for node in template.find_all(exp.Literal)
        if node.is_string and node.this.startswith(SENTINEL)
    ]
    return template if len(markers) == index else None


def _bound(template: exp.Expression, literals: list[Token]) -> exp.Expression:
    """A copy of the template with each marker set to its literal, in place (sqlglot's transform
    replaces list items one index search each: quadratic in a long IN list)."""
    bound = template.copy()
    for node in list(bound.find_all(exp.Literal)):
        if node.is_string and node.this.startswith(SENTINEL):
            token = literals[int(node.this[len(SENTINEL) :])]
            node.set("this", token.text)
            node.set("is_string", token.token_type != TokenType.NUMBER)
    return bound
