"""`INSERT INTO t [(columns)] VALUES (...), (...)` whose values are all plain literals, read
straight from its tokens: a bulk load of a thousand rows skips sqlglot's parser (which builds a
tree node per value) and hands the rows on as Python values. Any other INSERT is None here and
goes to the parser.

Plainer still (literal_columns): every value a string with no quote or backslash in it, a
decimal number or NULL. Such rows are read from the text without tokens and handed on by position
as Arrow arrays of text, for the INSERT to convert a column at a time. Rows written as clients
write them, `(1, 'a'), (2, 'b')` or `(1,'a'),(2,'b')`, are split at their separators by Arrow and
every value checked by Arrow's regular expressions (which leave the GIL to the rest of the
process); others, and strings holding a separator, by one Python regular expression."""

from __future__ import annotations

import decimal
import functools
import itertools
import math
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from fe.sql import statements as st
from fe.sql.parser import ParseError, tokenize

NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", re.IGNORECASE)  # as MySQL reads a number
NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
CONSTANTS = {TokenType.NULL: None, TokenType.TRUE: True, TokenType.FALSE: False}


def literal_insert(tokens: list[Token]) -> st.Insert | None:
    reader = _Reader(tokens)
    target = _target(reader)
    if target is None or not reader.take(TokenType.VALUES):
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


def _target(reader: _Reader) -> exp.Expression | None:
    """`INSERT [INTO] t [(columns)]`: the table, or the table with its columns."""
    if not reader.take(TokenType.INSERT):
        return None
    reader.take(TokenType.INTO)
    table = reader.table()
    if table is None:
        return None
    if not reader.peek(TokenType.L_PAREN):
        return table
    columns = reader.names()
    return None if columns is None else exp.Schema(this=table, expressions=columns)


VALUES_START = re.compile(r"\bVALUES\s*(?=\()", re.IGNORECASE)
PLAIN_VALUE = r"'[^'\\]*'|-?\d+(?:\.\d+)?|(?i:null)"  # a string, a decimal number, NULL
FIRST_ROW = re.compile(rf"\(\s*(?:{PLAIN_VALUE})(?:\s*,\s*(?:{PLAIN_VALUE}))*\s*\)")
VALUE = re.compile(PLAIN_VALUE)
MAX_HEAD_CHARACTERS = 4096  # where VALUES is looked for
MAX_LITERAL_COLUMNS = 4096  # wider rows go by tokens
ROW_PATTERNS_KEPT = 64
ARROW_PLAIN_VALUE = r"^(?:'[^']*'|-?[0-9]+(?:\.[0-9]+)?|(?i:null))$"  # PLAIN_VALUE, for RE2


@dataclass(frozen=True)
class LiteralColumn:
    """The values at one position of every row: their texts (a string's without its quotes,
    NULL null), which were quoted strings, and what all the values other than NULL are."""

    texts: pa.StringArray
    quoted: pa.BooleanArray
    strings: bool  # every value a quoted string
    integers: bool  # every value a number without a point
    numbers: bool  # every value a number

    def values(self) -> list:
        """The values as literal_insert reads them."""
        return [
            text if quoted or text is None else _number_value(text)
            for text, quoted in zip(self.texts.to_pylist(), self.quoted.to_pylist(), strict=True)
        ]


@dataclass(frozen=True)
class LiteralColumns:
    row_count: int
    columns: tuple[LiteralColumn, ...]

    def rows(self) -> tuple[tuple, ...]:
        return tuple(zip(*(column.values() for column in self.columns), strict=True))


def literal_columns(sql: str) -> tuple[st.Insert, int] | None:
    """An INSERT of plain literal rows read from its text, and how many tokens it has; None for
    any other statement (it goes by tokens)."""
    if sql[:32].lstrip()[:6].upper() != "INSERT":
        return None
    start = VALUES_START.search(sql, 0, MAX_HEAD_CHARACTERS)
    if start is None:
        return None
    try:
        head = tokenize(sql[: start.start()])
    except ParseError:
        return None
    reader = _Reader(head)
    target = _target(reader)
    if target is None or not reader.at_end():
        return None
    body = sql[start.end() :].rstrip()
    found = _written_by_split(body) or _written_by_pattern(body)
    if found is None:
        return None
    written, width = found
    row_count = len(written) // width
    columns = _columns(written, width, row_count)
    negatives = pc.sum(pc.starts_with(written, "-")).as_py() or 0
    token_count = len(head) + 1 + row_count * (2 * width + 2) - 1 + negatives
    insert = st.Insert(
        exp.Insert(this=target, expression=exp.Values()),
        literals=LiteralColumns(row_count, columns),
    )
    return insert, token_count


def _written_by_split(body: str) -> tuple[pa.StringArray, int] | None:
    """Every value as written (a string with its quotes), column after column, and how many
    columns; None unless the rows are `(v, v, ...)` or `(v,v,...)` separated alike (`, ` or `,`),
    all as wide as the first, and every value plain. Arrow splits the text at the separators; a
    separator inside a string splits it into values that are not plain: such rows are left to
    the pattern."""
    if "\\" in body or body[:1] != "(" or body[-1:] != ")":
        return None
    first_row_end = body.find(")")
    between_rows = "), (" if body.startswith("), (", first_row_end) else "),("
    between_values = ", " if ", " in body[:first_row_end] else ","
    try:
        rows = pc.split_pattern(pa.array([body[1:-1]], pa.string()), between_rows).values
    except (pa.ArrowException, UnicodeEncodeError):
        return None
    row_values = pc.split_pattern(rows, between_values)
    widths = pc.min_max(pc.list_value_length(row_values)).as_py()
    width = widths["min"]
    if width != widths["max"] or width > MAX_LITERAL_COLUMNS:
        return None
    by_row = row_values.values
    if not pc.all(pc.match_substring_regex(by_row, ARROW_PLAIN_VALUE)).as_py():
        return None
    by_column = np.arange(len(by_row)).reshape(len(rows), width).T.ravel()
    return by_row.take(pa.array(by_column)), width


def _written_by_pattern(body: str) -> tuple[pa.StringArray, int] | None:
    first = FIRST_ROW.match(body)
    if first is None or body.endswith(","):
        return None
    width = len(VALUE.findall(first.group()))
    if width > MAX_LITERAL_COLUMNS:
        return None
    rows = _rows_pattern(width).findall(body)
    by_position = list(zip(*rows, strict=True))  # each value, then the last: text not a row
    if any(by_position[-1]):
        return None
    values = itertools.chain.from_iterable(by_position[:width])
    try:
        return pa.array(values, pa.string(), size=len(rows) * width), width
    except (pa.ArrowException, UnicodeEncodeError):
        return None


@functools.lru_cache(maxsize=ROW_PATTERNS_KEPT)
def _rows_pattern(width: int) -> re.Pattern:
    """A row of `width` plain values then a comma or the end, each value a group; or else any
    one character, in the last group."""
    value = rf"({PLAIN_VALUE})"
    row = rf"\(\s*{value}" + rf"\s*,\s*{value}" * (width - 1) + r"\s*\)"
    return re.compile(rf"\s*{row}\s*(?:,|\Z)|([\s\S])")


def _columns(written: pa.StringArray, width: int, row_count: int) -> tuple[LiteralColumn, ...]:
    """The columns of values written column after column: a few calls into Arrow for all of
    them, not a few for each."""
    nulls = pc.match_like(written, "null", ignore_case=True)
    quoted = pc.starts_with(written, "'")
    texts = pc.if_else(
        nulls,
        pa.scalar(None, pa.string()),
        pc.if_else(quoted, pc.utf8_slice_codeunits(written, 1, -1), written),
    )
    pointed = pc.and_not(pc.match_substring(written, "."), quoted)
    flags = [flag.to_numpy(zero_copy_only=False) for flag in (quoted, nulls, pointed)]
    quoted_counts, null_counts, pointed_counts = (
        np.stack(flags).reshape(3, width, row_count).sum(axis=2).tolist()
    )
    columns = []
    for index in range(width):
        start = index * row_count
        columns.append(
            LiteralColumn(
                texts.slice(start, row_count),
                quoted.slice(start, row_count),
                strings=quoted_counts[index] + null_counts[index] == row_count,
                integers=quoted_counts[index] == 0 and pointed_counts[index] == 0,
                numbers=quoted_counts[index] == 0,
            )
        )
    return tuple(columns)


def _number_value(text: str):
    return -number(text[1:]) if text[0] == "-" else number(text)


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
