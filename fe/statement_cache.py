"""Parsed statements, cached so that repeated statements skip sqlglot's parser.

Two levels, both bounded LRUs shared by every session of an FE:
- by exact text: a client's connect-time queries, SELECT 1, SHOW TABLES;
- by shape, for queries: the statement's tokens with its literals taken out. A query whose shape was
  seen before (`... WHERE id = 7` after `... WHERE id = 3`, and every execution of a prepared
  statement, which arrives with its values inlined) is tokenized, and its literals are bound into
  the cached tree instead of parsing again.
"""

from __future__ import annotations

from collections import OrderedDict

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


class StatementCache:
    def __init__(self, capacity: int, max_sql_bytes: int = 16384):
        self.max_sql_bytes = max_sql_bytes  # longer statements are parsed every time, not kept
        self.by_text = LRU(capacity)
        self.by_shape = LRU(capacity)
        self.shape_hits = 0

    def statement(self, sql: str):
        """The runnable form of `sql`: a SelectPlan for queries, a statement record otherwise."""
        cached = self.by_text.get(sql)
        if cached is not None:
            return cached
        tokens = tokenize(sql)
        if tokens[0].token_type in QUERY_STARTS:
            statement = self._query(tokens, sql)
        else:
            statement = parse_tokens(tokens, sql)
            if isinstance(statement, st.Query):
                statement = plan(statement.expression)
        if len(sql) <= self.max_sql_bytes:
            self.by_text.put(sql, statement)
        return statement

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
        return plan(template.transform(lambda node: _bind(node, literals)))


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


def _bind(node: exp.Expression, literals: list[Token]) -> exp.Expression:
    if isinstance(node, exp.Literal) and node.is_string and node.this.startswith(SENTINEL):
        token = literals[int(node.this[len(SENTINEL) :])]
        if token.token_type == TokenType.NUMBER:
            return exp.Literal.number(token.text)
        return exp.Literal.string(token.text)
    return node
