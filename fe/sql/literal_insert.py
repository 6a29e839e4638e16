"""`INSERT INTO t [(columns)] VALUES (...), (...)` whose values are all plain literals, read
straight from its tokens: a bulk load of a thousand rows skips sqlglot's parser (which builds a
tree node per value) and hands the rows on as Python values. Any other INSERT is None here and
goes to the parser."""

from __future__ import annotations

import decimal
import math
import re

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from fe.sql import statements as st

NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", re.IGNORECASE)  # as MySQL reads a number
NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
CONSTANTS = {TokenType.NULL: None, TokenType.TRUE: True, TokenType.FALSE: False}


def literal_insert(tokens: list[Token]) -> st.Insert | None:
    reader = _Reader(tokens)
    if not reader.take(TokenType.INSERT):
        return None
    reader.take(TokenType.INTO)
    table = reader.table()
    if table is None:
        return None
    target: exp.Expression = table
    if reader.peek(TokenType.L_PAREN):
        columns = reader.names()
        if columns is None:
            return None
        target = exp.Schema(this=table, expressions=columns)
    if not reader.take(TokenType.VALUES):
        return None
    rows = []
    while True:
        row = reader.row()
        if row is None:
            return None
        rows.append(row)
        if not reader.take(TokenType.COMMA):
            break
    if not reader.at_end():
        return None
    return st.Insert(exp.Insert(this=target, expression=exp.Values()), tuple(rows))


class _Reader:
    __slots__ = ("tokens", "position")

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.position = 0

    def peek(self, kind: TokenType) -> bool:
        return self.position < len(self.tokens) and self.tokens[self.position].token_type == kind

    def take(self, kind: TokenType) -> bool:
        if self.peek(kind):
            self.position += 1
            return True
        return False

    def at_end(self) -> bool:
        return self.position == len(self.tokens)

    def name(self) -> exp.Identifier | None:
        if self.position < len(self.tokens):
            token = self.tokens[self.position]
            if token.token_type in NAME_TOKENS:
                self.position += 1
                return exp.to_identifier(
                    token.text, quoted=token.token_type == TokenType.IDENTIFIER
                )
        return None

    def table(self) -> exp.Table | None:
        parts = [self.name()]
        while parts[-1] is not None and len(parts) < 3 and self.take(TokenType.DOT):
            parts.append(self.name())
        if parts[-1] is None:
            return None
        parts = [None] * (3 - len(parts)) + parts
        return exp.Table(this=parts[2], db=parts[1], catalog=parts[0])

    def names(self) -> list[exp.Identifier] | None:
        self.take(TokenType.L_PAREN)
        names = []
        while True:
            name = self.name()
            if name is None:
                return None
            names.append(name)
            if not self.take(TokenType.COMMA):
                break
        return names if self.take(TokenType.R_PAREN) else None

    def row(self) -> tuple | None:
        """`(value, ...)`: the hot loop of a bulk load, kept free of calls."""
        tokens, position, end = self.tokens, self.position, len(self.tokens)
        if position >= end or tokens[position].token_type is not TokenType.L_PAREN:
            return None
        position += 1
        values = []
        while position < end:
            token = tokens[position]
            kind = token.token_type
            position += 1
            if kind is TokenType.STRING:
                values.append(token.text)
            elif kind is TokenType.NUMBER:
                text = token.text
                value = int(text) if text.isdigit() else number(text)
                if value is None:
                    return None
                values.append(value)
            elif kind is TokenType.DASH:
                if position >= end or tokens[position].token_type is not TokenType.NUMBER:
                    return None
                value = number(tokens[position].text)
                if value is None:
                    return None
                values.append(-value)
                position += 1
            elif kind in CONSTANTS:
                values.append(CONSTANTS[kind])
            elif kind is TokenType.DEFAULT:
                values.append(st.DEFAULT)
            else:
                return None
            if position >= end:
                return None
            kind = tokens[position].token_type
            position += 1
            if kind is TokenType.R_PAREN:
                self.position = position
                return tuple(values)
            if kind is not TokenType.COMMA:
                return None
        return None


def number(text: str) -> int | float | decimal.Decimal | None:
    """A number literal's value as MySQL reads it: an integer, a DECIMAL, or with an exponent a
    DOUBLE; None for what MySQL reads otherwise (`1e` is a name) or refuses (`1e999`)."""
    if text.isdigit():
        return int(text)
    if not NUMBER.fullmatch(text):
        return None
    if "e" in text or "E" in text:
        value = float(text)
        return None if math.isinf(value) else value
    return decimal.Decimal(text)
