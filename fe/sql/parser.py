"""Statement parser: sqlglot's tokenizer for every statement, sqlglot's parser for queries and
SET, and a small grammar over the same tokens for the Doris DDL and administration statements
that sqlglot's MySQL/Doris dialects do not accept (AGGREGATE KEY value columns, VALUES LESS THAN
MAXVALUE, users and grants, SHOW PROC, ADMIN, ALTER SYSTEM, ...).

sqlglot's compiled parser cannot be subclassed from Python, so the grammar lives here instead.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import threading

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from be.load.options import LABEL as LABEL_NAME
from fe.sql import statements as st
from metadata.records import LOCKED_UNTIL_UNLOCK, Column, KeyModel, PartitionKind
from metadata.types import ALIASES, TYPE_NAMES, ColumnType, parse_column_type

DIALECT = MySQL()
# sqlglot spells one isolation level "UNCOMITTED", so JDBC's SET SESSION TRANSACTION ISOLATION
# LEVEL READ UNCOMMITTED (Spark's writes send it) would not parse.
MySQL.Parser.TRANSACTION_CHARACTERISTICS = {
    **MySQL.Parser.TRANSACTION_CHARACTERISTICS,
    "ISOLATION": (
        *MySQL.Parser.TRANSACTION_CHARACTERISTICS["ISOLATION"],
        ("LEVEL", "READ", "UNCOMMITTED"),
    ),
}


def _days_or_interval(build_with_interval, days_function: str):
    def build(arguments: list) -> exp.Expression | None:
        if len(arguments) == 2 and not isinstance(arguments[1], exp.Interval):
            return exp.Anonymous(this=days_function, expressions=arguments)
        return build_with_interval(arguments)

    return build


def _anonymous(name: str, arguments: list) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=arguments)


# Doris's DATE_TRUNC(datetime, 'unit') (and 'unit' first, as newer Dorises take it too): sqlglot's
# MySQL reading takes the first argument for the unit, a column's name made a string.
MySQL.Parser.FUNCTIONS = {
    **MySQL.Parser.FUNCTIONS,
    "DATE_TRUNC": lambda arguments: exp.Anonymous(this="DATE_TRUNC", expressions=arguments),
    # sqlglot reads TO_DAYS as a day count from DuckDB's 0000-01-01, one day more than MySQL's
    "TO_DAYS": lambda arguments: exp.Anonymous(this="TO_DAYS", expressions=arguments),
    # Doris's DATE_ADD(d, n) and DATE_SUB(d, n) add days, as ADDDATE(d, n) does
    "DATE_ADD": _days_or_interval(MySQL.Parser.FUNCTIONS["DATE_ADD"], "ADDDATE"),
    "DATE_SUB": _days_or_interval(MySQL.Parser.FUNCTIONS["DATE_SUB"], "SUBDATE"),
    "JSONB_EXTRACT": MySQL.Parser.FUNCTIONS["JSON_EXTRACT"],  # Doris's name of it
    # Doris's MAP(k1, v1, k2, v2, ...): any even count of arguments (sqlglot's reading, two)
    "MAP": lambda arguments: exp.Anonymous(this="MAP", expressions=arguments),
    # Doris's functions sqlglot reads as others of fewer arguments (ARRAY_LAST(x -> f, a)), or
    # that Quire answers as Doris does (CORR of a constant is 0): by their names
    **{
        name: functools.partial(_anonymous, name)
        for name in ("ARRAY_FILTER", "ARRAY_FIRST", "ARRAY_LAST", "CORR", "COVAR_POP", "COVAR_SAMP")
    },
}


class _Tokenizer(MySQL.Tokenizer):
    """MySQL's, but for REPLACE at a statement's start (MySQL's REPLACE INTO) and LOCK TABLES /
    UNLOCK TABLES: tokens as any statement's (sqlglot takes them for a command and the rest for
    one string)."""

    COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.REPLACE}
    KEYWORDS = {
        word: kind
        for word, kind in MySQL.Tokenizer.KEYWORDS.items()
        if word not in ("LOCK TABLES", "UNLOCK TABLES")
    }


_per_thread = threading.local()  # a sqlglot tokenizer is reusable, but not across threads

MYSQL_INDEX_KINDS = frozenset({"BTREE", "HASH", "RTREE"})  # CREATE INDEX ... USING: not Doris's

WORD_TOKENS_EXCLUDED = {
    TokenType.STRING,
    TokenType.NUMBER,
    TokenType.L_PAREN,
    TokenType.R_PAREN,
    TokenType.COMMA,
    TokenType.DOT,
    TokenType.EQ,
    TokenType.SEMICOLON,
    TokenType.STAR,
    TokenType.PARAMETER,
    TokenType.LT,
    TokenType.GT,
    TokenType.DASH,
    TokenType.PLUS,
}
AGGREGATIONS = {
    "SUM", "MAX", "MIN", "REPLACE", "REPLACE_IF_NOT_NULL", "HLL_UNION", "BITMAP_UNION",
    "QUANTILE_UNION",
}  # fmt: skip
PRIVILEGES = {
    "ALL", "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX", "GRANT",
    "SHOW", "USAGE", "RELOAD", "PROCESS", "SUPER", "REFERENCES", "EXECUTE", "EVENT", "TRIGGER",
    "NODE_PRIV", "ADMIN_PRIV", "GRANT_PRIV", "SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV",
    "CREATE_PRIV", "DROP_PRIV", "USAGE_PRIV", "SHOW_VIEW_PRIV",
}  # fmt: skip
LOCK_TIME_UNITS = {"DAY": 86_400, "HOUR": 3_600, "SECOND": 1}
MAX_ROLE_NAME = 64  # Doris's and MySQL's bound on a role's name
MAX_LOCKOUT_NUMBER = 32_767  # MySQL's bound on FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME
# Words that end a column's definition in ALTER TABLE (its position, its rollup, its properties).
COLUMN_DEF_ENDS = ("AFTER", "FIRST", "TO", "IN", "FROM", "PROPERTIES")
ALTER_CLAUSE_WORDS = {"ADD", "DROP", "MODIFY", "RENAME", "SET", "ORDER BY", "ORDER"}
INTERNAL_CATALOG = "internal"  # Doris's catalog of its own tables: Quire's only one


def without_catalog(database: str) -> str:
    """A database's name as COM_INIT_DB may send it, `internal.db`, without the catalog."""
    catalog, dot, name = database.partition(".")
    if not dot:
        return database
    check_catalog(catalog)
    return name


def check_catalog(catalog: str) -> None:
    if catalog.lower() != INTERNAL_CATALOG:
        raise UnknownCatalog(catalog)


QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN, TokenType.VALUES}
EXPLAIN_LEVELS = {
    "VERBOSE", "GRAPH", "TREE", "DUMP", "PARSED", "ANALYZED", "REWRITTEN", "LOGICAL",
    "OPTIMIZED", "PHYSICAL", "SHAPE", "MEMO", "DISTRIBUTED", "ALL",
}  # fmt: skip


class ParseError(Exception):
    """Malformed SQL: reported to the client as 1064."""

    code = 1064


class BadLabel(ParseError):
    """A load's label Doris would not take (its FE answers 1105)."""

    code = 1105


class KeyOrderRefused(ParseError):
    """Doris's refusal of a cluster key order it does not keep (1105)."""

    code = 1105


class NotSupported(ParseError):
    """MySQL's syntax Quire does not take: reported as 1235 (MySQL's "doesn't yet support")."""

    code = 1235

    def __init__(self, what: str):
        super().__init__(f"This version of Quire doesn't yet support '{what}'")


class UnknownCatalog(ParseError):
    """A name under a catalog other than Doris's internal one, Quire's only catalog."""

    def __init__(self, catalog: str):
        super().__init__(f"Unknown catalog '{catalog}'")


class EmptyQuery(ParseError):
    code = 1065


MYSQL_VERSION_ID = 50799  # the version the FE reports (5.7.99): its executable comments run
_EXECUTABLE = re.compile(r"!(\d{5,6})?")


def with_executable_comments(sql: str) -> str:
    """MySQL's executable comments run as SQL (`/*!40101 SET NAMES utf8 */`, as mysqldump writes
    them): `/*! ... */` always, `/*!NNNNN ... */` when NNNNN is at most MYSQL_VERSION_ID; one of
    a later version, and MariaDB's own `/*M!...*/`, are comments. Quoted text and other comments
    are left as they are."""
    if "/*!" not in sql and "/*M!" not in sql:
        return sql
    out: list[str] = []
    position, end = 0, len(sql)
    quote = None
    while position < end:
        character = sql[position]
        if quote is not None:
            if character == "\\" and quote != "`" and position + 1 < end:
                out.append(sql[position : position + 2])
                position += 2
                continue
            out.append(character)
            position += 1
            if character == quote:
                if position < end and sql[position] == quote:  # a doubled quote
                    out.append(character)
                    position += 1
                else:
                    quote = None
            continue
        if character in "'\"`":
            quote = character
        elif sql.startswith("/*", position):
            close = sql.find("*/", position + 2)
            if close < 0:
                out.append(sql[position:])
                break
            body = sql[position + 2 : close]
            executable = _EXECUTABLE.match(body)
            if executable is None:
                out.append(sql[position : close + 2])
            else:
                version = executable.group(1)
                runs = version is None or int(version) <= MYSQL_VERSION_ID
                out.append(f" {body[executable.end() :]} " if runs else " ")
            position = close + 2
            continue
        elif sql.startswith("-- ", position) or character == "#":
            line_end = sql.find("\n", position)
            line_end = end if line_end < 0 else line_end
            out.append(sql[position:line_end])
            position = line_end
            continue
        out.append(character)
        position += 1
    return "".join(out)


def tokenize(sql: str) -> list[Token]:
    """sqlglot's tokens of one statement (trailing semicolons dropped); ParseError if malformed."""
    tokenizer = getattr(_per_thread, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _per_thread.tokenizer = _Tokenizer(dialect=DIALECT)
    try:
        tokens = tokenizer.tokenize(sql)
    except TokenError as error:
        raise ParseError(f"You have an error in your SQL syntax: {error}") from None
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if not tokens:
        raise EmptyQuery("Query was empty")
    if ";" in sql and any(token.token_type == TokenType.SEMICOLON for token in tokens):
        raise ParseError("Multiple statements in one query are not supported")
    return tokens


def parse_tokens(tokens: list[Token], sql: str) -> object:
    """A statement other than a query (those are sqlglot's: parse_with_sqlglot) as its record."""
    assert tokens[0].token_type not in QUERY_STARTS, "a query goes to parse_with_sqlglot"
    return Grammar(tokens, sql).statement()


NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)


def with_partition_lists(tokens: list[Token]) -> list[Token]:
    """Doris's partition clauses of a table read as MySQL's `t PARTITION (p, ...)`, the one
    sqlglot reads: `t PARTITION p` and `t PARTITIONS (p, ...)`."""
    if not any(
        t.token_type == TokenType.PARTITION or t.text.upper() == "PARTITIONS" for t in tokens
    ):
        return tokens
    read: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        index += 1
        if not read or read[-1].token_type not in NAME_TOKENS or after is None:
            read.append(token)
            continue
        if token.text.upper() == "PARTITIONS" and after.token_type == TokenType.L_PAREN:
            token = Token(TokenType.PARTITION, "PARTITION", token.line, token.col, token.start,
                          token.end)  # fmt: skip
        read.append(token)
        if token.token_type == TokenType.PARTITION and after.token_type in NAME_TOKENS:
            line, col = after.line, after.col
            read.append(Token(TokenType.L_PAREN, "(", line, col, after.start, after.start))
            read.append(after)
            read.append(Token(TokenType.R_PAREN, ")", line, col, after.end, after.end))
            index += 1
    return read


def _label_part(token: Token) -> bool:
    """A word of an unquoted label: a name, a number (`2024label` is both) or a keyword."""
    return token.token_type not in NOT_LABEL_WORDS and bool(LABEL_WORD.fullmatch(token.text))


NOT_LABEL_WORDS = (
    TokenType.STRING, TokenType.IDENTIFIER, TokenType.VALUES, TokenType.SELECT, TokenType.WITH
)  # fmt: skip


LABEL_WORD = re.compile(r"\w+", re.ASCII)


def without_label(tokens: list[Token]) -> tuple[list[Token], str | None]:
    """Doris's `WITH LABEL l` taken out of the tokens, and l (None if there is none): a name,
    backquoted or not, of the characters a load's label may hold."""
    for index, token in enumerate(tokens[:-2]):
        if token.token_type != TokenType.WITH or tokens[index + 1].text.upper() != "LABEL":
            continue
        end = index + 3
        first = tokens[index + 2]
        if _label_part(first):
            while (
                end < len(tokens)
                and _label_part(tokens[end])
                and tokens[end].start == tokens[end - 1].end + 1
            ):
                end += 1
        elif first.token_type != TokenType.IDENTIFIER:
            raise ParseError("You have an error in your SQL syntax; WITH LABEL takes a name")
        label = "".join(t.text for t in tokens[index + 2 : end])
        if not LABEL_NAME.fullmatch(label):
            raise BadLabel(f"Label format error. regex: ^{LABEL_NAME.pattern}$, label: {label}")
        return tokens[:index] + tokens[end:], label
    return tokens, None


# Doris's type names a CAST may give, as the types sqlglot reads
DORIS_CAST_TYPES = {
    "DATETIMEV2": (TokenType.DATETIME, "DATETIME"),
    "DATETIMEV1": (TokenType.DATETIME, "DATETIME"),
    "DATEV2": (TokenType.DATE, "DATE"),
    "DATEV1": (TokenType.DATE, "DATE"),
    "DECIMALV2": (TokenType.DECIMAL, "DECIMAL"),
    "DECIMALV3": (TokenType.DECIMAL, "DECIMAL"),
    "LARGEINT": (TokenType.INT128, "INT128"),
}
CAST_WORDS = ("CAST", "TRY_CAST")


def with_doris_cast_types(tokens: list[Token]) -> list[Token]:
    """`CAST(x AS DATETIMEV2)` and Doris's other type names read as the types they are."""
    read: list[Token] = []
    casts: list[int] = []  # the paren depth of each CAST( open
    depth = 0
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if index and tokens[index - 1].text.upper() in CAST_WORDS:
                casts.append(depth)
        elif token.token_type == TokenType.R_PAREN:
            if casts and casts[-1] == depth:
                casts.pop()
            depth -= 1
        named = DORIS_CAST_TYPES.get(token.text.upper())
        if (
            named
            and casts
            and casts[-1] == depth
            and read
            and read[-1].token_type == TokenType.ALIAS
        ):
            token = Token(named[0], named[1], token.line, token.col, token.start, token.end)
        read.append(token)
    return read


TIMESTAMP_TOKENS = (TokenType.TIMESTAMP, TokenType.TIMESTAMPTZ, TokenType.DATETIME)


def with_system_time(tokens: list[Token]) -> list[Token]:
    """`t AS OF TIMESTAMP '...'` (TiDB's) read as MariaDB's `t FOR SYSTEM_TIME AS OF TIMESTAMP
    '...'`, the time travel sqlglot reads; `AS OF TIMESTAMP <expression>` as `AS OF <expression>`
    (sqlglot reads TIMESTAMP before a string only)."""
    read: list[Token] = []
    for index, token in enumerate(tokens):
        if (
            token.token_type == TokenType.ALIAS
            and read
            and read[-1].token_type in NAME_TOKENS
            and read[-1].text.upper() != "SYSTEM_TIME"  # MariaDB's form already
            and index + 2 < len(tokens)
            and tokens[index + 1].text.upper() == "OF"
            and tokens[index + 2].token_type in TIMESTAMP_TOKENS
        ):
            line, col, start = token.line, token.col, token.start
            read.append(Token(TokenType.FOR, "FOR", line, col, start, start))
            read.append(Token(TokenType.VAR, "SYSTEM_TIME", line, col, start, start))
        if (
            token.token_type in TIMESTAMP_TOKENS
            and len(read) >= 2
            and read[-1].text.upper() == "OF"
            and read[-2].token_type == TokenType.ALIAS
            and index + 1 < len(tokens)
            and tokens[index + 1].token_type != TokenType.STRING
        ):
            continue  # AS OF TIMESTAMP <an expression>: the expression is the moment
        read.append(token)
    return read


SET_OPERATION_STARTS = (TokenType.SELECT, TokenType.L_PAREN, TokenType.ALL, TokenType.DISTINCT)


def with_minus_as_except(tokens: list[Token]) -> list[Token]:
    """Doris's `query MINUS query`, MySQL's EXCEPT."""
    read = list(tokens)
    for index in range(1, len(tokens) - 1):
        token = tokens[index]
        if token.text.upper() == "MINUS" and tokens[index + 1].token_type in SET_OPERATION_STARTS:
            read[index] = Token(TokenType.EXCEPT, "EXCEPT", token.line, token.col, token.start,
                                token.end)  # fmt: skip
    return read


MATCH_OPERATORS = frozenset(
    ("MATCH_ANY", "MATCH_ALL", "MATCH_PHRASE", "MATCH_PHRASE_PREFIX", "MATCH_REGEXP")
)
_OPERAND_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)


def with_match_functions(tokens: list[Token]) -> list[Token]:
    """Doris's full-text predicates `c MATCH_ANY 'words'` (MATCH_ALL, MATCH_PHRASE, ...) as
    functions of the column and the text, `MATCH_ANY(c, 'words')`, which sqlglot reads."""
    read: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        right = tokens[index + 1] if index + 1 < len(tokens) else None
        index += 1
        is_match = token.text.upper() in MATCH_OPERATORS and token.token_type == TokenType.VAR
        start = _column_start(read) if is_match else None
        if start is None or right is None or right.token_type not in _TEXT_OPERANDS:
            read.append(token)
            continue
        column = read[start:]
        del read[start:]
        read += [_made(token, TokenType.VAR, token.text.upper()), _made(token, TokenType.L_PAREN)]
        read += [*column, _made(token, TokenType.COMMA), right, _made(token, TokenType.R_PAREN)]
        index += 1  # the text, read
    return read


def _made(at: Token, kind: TokenType, text: str = "") -> Token:
    """A token the rewrite adds, where `at` stands (as errors tell it)."""
    text = text or {TokenType.L_PAREN: "(", TokenType.R_PAREN: ")", TokenType.COMMA: ","}[kind]
    return Token(kind, text, at.line, at.col, at.start, at.end)


def _column_start(read: list[Token]) -> int | None:
    """Where the column name at the end of read (`c`, `t.c`, `db.t.c`) starts, if one is."""
    start = len(read)
    while start > 0 and read[start - 1].token_type in _OPERAND_TOKENS:
        start -= 1
        if start > 1 and read[start - 1].token_type == TokenType.DOT:
            start -= 1
        else:
            break
    return None if start == len(read) else start


_TEXT_OPERANDS = (TokenType.STRING, TokenType.PARAMETER, TokenType.PLACEHOLDER)


def parse_with_sqlglot(tokens: list[Token], sql: str) -> exp.Expression:
    tokens = with_partition_lists(tokens)
    if any(token.text.upper() in MATCH_OPERATORS for token in tokens):
        tokens = with_match_functions(tokens)
    if any(token.text.upper() == "MINUS" for token in tokens):
        tokens = with_minus_as_except(tokens)
    if any(token.text.upper() == "OF" for token in tokens):
        tokens = with_system_time(tokens)
    if any(token.text.upper() in DORIS_CAST_TYPES for token in tokens):
        tokens = with_doris_cast_types(tokens)
    try:
        expressions = DIALECT.parser().parse(tokens, sql)
    except SqlglotParseError as error:
        _check_supported(tokens)
        if not error.errors:  # raised by a function's builder, which says not where
            raise syntax_error("", tokens[-1].line) from None
        where = error.errors[0]
        raise syntax_error(where["highlight"] + where["end_context"], where["line"]) from None
    except (IndexError, TypeError, ValueError, AttributeError, KeyError):
        raise syntax_error("", tokens[-1].line) from None  # sqlglot fell off the tokens' end
    if len(expressions) != 1 or expressions[0] is None:
        raise ParseError("You have an error in your SQL syntax")
    return expressions[0]


UNSUPPORTED_INTO = ("OUTFILE", "DUMPFILE")  # SELECT ... INTO OUTFILE: files on the server
OUTFILE_FORMATS = ("CSV", "CSV_WITH_NAMES", "PARQUET")


def outfile_at(tokens: list[Token]) -> int | None:
    """Where a query's `INTO OUTFILE` starts, outside parentheses; None if it has none."""
    depth = 0
    for index, token in enumerate(tokens[:-1]):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if (
            depth == 0
            and token.token_type == TokenType.INTO
            and tokens[index + 1].text.upper() == "OUTFILE"
        ):
            return index
    return None


def outfile_clause(tokens: list[Token], sql: str) -> tuple[str, str, tuple]:
    """INTO OUTFILE "target" [FORMAT AS kind] [PROPERTIES (...)]: (target, kind, properties)."""
    grammar = Grammar(tokens, sql)
    grammar.expect("INTO")
    grammar.expect("OUTFILE")
    target = grammar.string()
    kind = "CSV"
    if grammar.accept("FORMAT"):
        grammar.expect("AS")
        kind = grammar.identifier().upper()
        if kind not in OUTFILE_FORMATS:
            grammar.fail(f"expected FORMAT AS {' | '.join(OUTFILE_FORMATS)}")
    properties = grammar.properties() if grammar.accept("PROPERTIES") else ()
    grammar.accept_type(TokenType.SEMICOLON)
    if grammar.position != len(tokens):
        grammar.fail("unexpected input after INTO OUTFILE")
    return target, kind.lower(), properties


def _check_supported(tokens: list[Token]) -> None:
    """NotSupported for a query sqlglot could not read because it writes a file on the server."""
    for into, target in itertools.pairwise(tokens):
        if into.token_type == TokenType.INTO and target.text.upper() in UNSUPPORTED_INTO:
            raise NotSupported(f"SELECT ... INTO {target.text.upper()}")


SCHEDULE_UNITS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800}
MATERIALIZED_AGGREGATES = (exp.Sum, exp.Min, exp.Max, exp.Count)
MATERIALIZED_ANONYMOUS = ("BITMAP_UNION", "HLL_UNION")


def materialized_view_columns(sql: str) -> tuple[st.TableName, tuple[str, ...], tuple[str, ...]]:
    """A synchronous materialized view's query as its rollup: the table, the columns it keeps
    (group or order keys first) and its keys (GROUP BY's, else ORDER BY's)."""
    query = parse_with_sqlglot(tokenize(sql), sql)
    source = query.args.get("from_") if isinstance(query, exp.Select) else None
    if source is None or not isinstance(source.this, exp.Table) or query.args.get("joins"):
        raise ParseError("A materialized view reads one table: SELECT ... FROM t")
    table = source.this
    columns: list[str] = []
    for item in query.expressions:
        item = item.this if isinstance(item, exp.Alias) else item
        inner = item
        if isinstance(item, MATERIALIZED_AGGREGATES) or (
            isinstance(item, exp.Anonymous) and item.name.upper() in MATERIALIZED_ANONYMOUS
        ):
            inner = item.expressions[0] if isinstance(item, exp.Anonymous) else item.this
        if not isinstance(inner, exp.Column):
            raise ParseError(
                "A materialized view's items are columns and SUM / MIN / MAX / COUNT / "
                f"BITMAP_UNION / HLL_UNION of a column, not {item.sql('mysql')}"
            )
        if inner.name not in columns:
            columns.append(inner.name)
    keys: list[str] = []
    for clause, items in (("group", "expressions"), ("order", "expressions")):
        node = query.args.get(clause)
        if node is not None and not keys:
            for key in node.args.get(items) or []:
                key = key.this if isinstance(key, exp.Ordered) else key
                if not isinstance(key, exp.Column) or key.name not in columns:
                    raise ParseError(
                        "GROUP BY and ORDER BY of a materialized view name its columns"
                    )
                keys.append(key.name)
    ordered = (*keys, *(name for name in columns if name not in keys))
    return st.TableName(table.db or None, table.name), ordered, tuple(keys)


def syntax_error(near: str, line: int) -> ParseError:
    """MySQL's 1064 message: where the parser stopped, never the parser's own words."""
    return ParseError(
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
        f"server version for the right syntax to use near '{near[:80]}' at line {line}"
    )


class Grammar:
    def __init__(self, tokens: list[Token], sql: str):
        self.tokens = tokens
        self.sql = sql
        self.position = 0
        # Each token's keyword words, upper case; None for quoted strings and identifiers.
        self.words: list[tuple[str, ...] | None] = [
            None
            if token.token_type in (TokenType.STRING, TokenType.IDENTIFIER)
            else tuple(token.text.upper().split())
            for token in tokens
        ]

    # -- token helpers -------------------------------------------------------------------------

    def _word(self, offset: int = 0) -> str | None:
        index = self.position + offset
        if index >= len(self.tokens) or self.words[index] is None:
            return None
        return " ".join(self.words[index])

    def _match(self, words: tuple[str, ...]) -> int:
        """Tokens spanned by `words` at the current position (0 if no match); sqlglot makes
        one token of some word pairs ("PARTITION BY", "PRIMARY KEY")."""
        offset = 0
        matched = 0
        while matched < len(words):
            index = self.position + offset
            if index >= len(self.words):
                return 0
            parts = self.words[index]
            if parts is None or parts != words[matched : matched + len(parts)]:
                return 0
            matched += len(parts)
            offset += 1
        return offset

    def at(self, *words: str) -> bool:
        return self._match(words) > 0

    def accept(self, *words: str) -> bool:
        spanned = self._match(words)
        self.position += spanned
        return spanned > 0

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def fail(self, what: str):
        if self.position < len(self.tokens):
            near = self.sql[self.tokens[self.position].start :][:40]
            raise ParseError(f"You have an error in your SQL syntax; {what} near '{near}'")
        raise ParseError(
            f"You have an error in your SQL syntax; {what} at the end of the statement"
        )

    def peek_type(self) -> TokenType | None:
        if self.position < len(self.tokens):
            return self.tokens[self.position].token_type
        return None

    def next(self) -> Token:
        if self.position >= len(self.tokens):
            self.fail("unexpected end")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def accept_type(self, token_type: TokenType) -> bool:
        if self.peek_type() == token_type:
            self.position += 1
            return True
        return False

    def expect_type(self, token_type: TokenType, what: str) -> Token:
        if self.peek_type() != token_type:
            self.fail(f"expected {what}")
        return self.next()

    def done(self) -> None:
        if self.position != len(self.tokens):
            self.fail("unexpected input")

    def identifier(self) -> str:
        token_type = self.peek_type()
        if token_type is None or token_type in WORD_TOKENS_EXCLUDED:
            self.fail("expected a name")
        return self.next().text

    def database_name(self) -> str:
        """A database's name, as Doris also takes it: under its catalog, `internal.db`."""
        name = self.identifier()
        if self.accept_type(TokenType.DOT):
            check_catalog(name)
            return self.identifier()
        return name

    def name_or_string(self) -> str:
        if self.peek_type() == TokenType.STRING:
            return self.next().text
        return self.identifier()

    def string(self) -> str:
        return self.expect_type(TokenType.STRING, "a quoted string").text

    def integer(self) -> int:
        token = self.expect_type(TokenType.NUMBER, "a number")
        try:
            return int(token.text)
        except ValueError:
            self.fail("expected an integer")

    def table_name(self) -> st.TableName:
        """`t`, `db.t` or, as Doris also takes it, `internal.db.t`."""
        parts = [self.identifier()]
        while len(parts) < 3 and self.accept_type(TokenType.DOT):
            parts.append(self.identifier())
        if len(parts) == 3:
            check_catalog(parts.pop(0))
        return st.TableName(parts[0], parts[1]) if len(parts) == 2 else st.TableName(None, parts[0])

    def name_list(self) -> tuple[str, ...]:
        self.expect_type(TokenType.L_PAREN, "(")
        names = [self.identifier()]
        while self.accept_type(TokenType.COMMA):
            names.append(self.identifier())
        self.expect_type(TokenType.R_PAREN, ")")
        return tuple(names)

    def if_not_exists(self) -> bool:
        return self.accept("IF", "NOT", "EXISTS")

    def if_exists(self) -> bool:
        return self.accept("IF", "EXISTS")

    def like(self) -> str | None:
        if self.accept("LIKE"):
            return self.string()
        return None

    def properties(self) -> tuple[tuple[str, str], ...]:
        self.expect_type(TokenType.L_PAREN, "(")
        pairs = []
        if not self.accept_type(TokenType.R_PAREN):
            while True:
                key = self.name_or_string()
                self.expect_type(TokenType.EQ, "=")
                pairs.append((key, self.literal_text()))
                if self.accept_type(TokenType.R_PAREN):
                    break
                self.expect_type(TokenType.COMMA, ", or )")
        return tuple(pairs)

    def literal_text(self) -> str:
        negative = self.accept_type(TokenType.DASH)
        token = self.next()
        if token.token_type not in (TokenType.STRING, TokenType.NUMBER) and negative:
            self.fail("expected a number")
        if token.token_type in WORD_TOKENS_EXCLUDED - {TokenType.STRING, TokenType.NUMBER}:
            self.position -= 1
            self.fail("expected a value")
        return ("-" if negative else "") + token.text

    def user_name(self) -> st.UserName:
        name = self.name_or_string()
        if self.accept_type(TokenType.PARAMETER):
            return st.UserName(name, self.name_or_string())
        if self.peek_type() == TokenType.VAR and self.tokens[self.position].text.startswith("@"):
            return st.UserName(name, self.next().text[1:].strip("'\"`"))
        return st.UserName(name)

    # -- statements ----------------------------------------------------------------------------

    def statement(self):
        handler = STATEMENT_HANDLERS.get(self._word() or "")
        if handler is None:
            self.fail("unknown statement")
        result = handler(self)
        self.done()
        return result

    def _set(self):
        self.expect("SET")
        if self.accept("PROPERTY"):
            name = self.name_or_string() if self.accept("FOR") else None
            properties = [self.property_pair()]
            while self.accept_type(TokenType.COMMA):
                properties.append(self.property_pair())
            return st.SetProperty(name, tuple(properties))
        if self.accept("PASSWORD"):
            user = None
            if self.accept("FOR"):
                user = self.user_name()
            self.expect_type(TokenType.EQ, "=")
            if self.accept("PASSWORD"):
                self.expect_type(TokenType.L_PAREN, "(")
                password = self.string()
                self.expect_type(TokenType.R_PAREN, ")")
                return st.SetPassword(user, password=password)
            return st.SetPassword(user, password_hash=self.string())
        expression = parse_with_sqlglot(self.tokens, self.sql)
        if not isinstance(expression, exp.Set):
            expression = self._set_items_one_by_one()
        self.position = len(self.tokens)
        return st.SetStatement(expression)

    def property_pair(self) -> tuple[str, str]:
        key = self.string()
        self.expect_type(TokenType.EQ, "=")
        return key, self.string()

    def _set_items_one_by_one(self) -> exp.Set:
        """`SET @a = (SELECT ...), @b = 2`, which sqlglot reads as one item only when the
        subquery is last: each item read as a SET of its own."""
        items, depth, start = [], 0, 1
        for index, token in enumerate(self.tokens[1:] + [None], 1):
            kind = token.token_type if token is not None else TokenType.COMMA
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            if kind != TokenType.COMMA or depth:
                continue
            one = parse_with_sqlglot([self.tokens[0], *self.tokens[start:index]], self.sql)
            if not isinstance(one, exp.Set) or len(one.expressions) != 1:
                self.position = start
                self.fail("unsupported SET")
            items.extend(one.expressions)
            start = index + 1
        return exp.Set(expressions=items)

    def _use(self):
        self.expect("USE")
        return st.Use(self.database_name())

    def _lock(self):
        """LOCK TABLE[S] t [[AS] alias] READ [LOCAL] | [LOW_PRIORITY] WRITE, ..."""
        self.expect("LOCK")
        if not (self.accept("TABLES") or self.accept("TABLE")):
            self.fail("expected TABLES")
        tables = []
        while True:
            tables.append(self.table_name())
            if self.accept("AS") or not any(map(self.at, ("READ", "WRITE", "LOW_PRIORITY"))):
                self.identifier()
            if self.accept("READ"):
                self.accept("LOCAL")
            else:
                self.accept("LOW_PRIORITY")
                self.expect("WRITE")
            if not self.accept_type(TokenType.COMMA):
                return st.LockTables(tuple(tables))

    def _unlock(self):
        self.expect("UNLOCK")
        if not (self.accept("TABLES") or self.accept("TABLE")):
            self.fail("expected TABLES")
        return st.LockTables()

    def _flush(self):
        self.expect("FLUSH")
        self.position = len(self.tokens)  # whatever it names: nothing to flush
        return st.Flush()

    def _refresh(self):
        self.expect("REFRESH")
        self.expect("MATERIALIZED")
        self.expect("VIEW")
        view = self.table_name()
        self.accept("COMPLETE") or self.accept("AUTO")
        return st.RefreshMaterializedView(view)

    def _build(self):
        self.expect("BUILD")
        self.expect("INDEX")
        name = self.identifier()
        self.expect("ON")
        table = self.table_name()
        if self.accept("PARTITION"):
            self.name_list()
        return st.BuildIndex(name, table)

    def _switch(self):
        self.expect("SWITCH")
        return st.Switch(self.identifier())

    def _desc(self):
        self.next()
        after = self.tokens[self.position + 1] if self.position + 1 < len(self.tokens) else None
        leveled = (
            self._word() in EXPLAIN_LEVELS
            and after is not None
            and (after.token_type in QUERY_STARTS or after.text.upper() == "PLAN")
        )  # (`DESC verbose` is a table's description)
        if leveled or self.peek_type() in QUERY_STARTS:
            return self._explained()  # DESC [VERBOSE] query: Doris's EXPLAIN
        table = self.table_name()
        if self.accept("ALL"):
            return st.DescribeAll(table)
        return st.Describe(table)

    def _explain(self):
        """EXPLAIN [level [PLAN]] query: Doris's levels (VERBOSE, GRAPH, PHYSICAL PLAN, ...) are
        accepted; each shows the one plan Quire has."""
        self.expect("EXPLAIN")
        return self._explained()

    def _explained(self):
        if self._word() in EXPLAIN_LEVELS:
            self.next()
        self.accept("PLAN")
        if self.peek_type() not in QUERY_STARTS:
            self.fail("EXPLAIN takes a query")
        query = parse_with_sqlglot(self.tokens[self.position :], self.sql)
        self.position = len(self.tokens)
        return st.Explain(query)

    def _begin(self):
        """BEGIN [WORK] | BEGIN WITH LABEL l (Doris's: the transaction's commit is a load of that
        label)."""
        self.expect("BEGIN")
        tokens, label = without_label(self.tokens[self.position :])
        self.position = len(self.tokens)
        if label is not None and tokens:
            self.fail("BEGIN WITH LABEL takes a label only")
        return st.Transaction("BEGIN", label or "")

    def _start(self):
        self.expect("START", "TRANSACTION")
        self.position = len(self.tokens)
        return st.Transaction("BEGIN")

    def _commit(self):
        self.position = len(self.tokens)
        return st.Transaction("COMMIT")

    def _rollback(self):
        self.position = len(self.tokens)
        return st.Transaction("ROLLBACK")

    def _insert(self):
        """INSERT ..., with Doris's WITH LABEL l after the table (and its partitions); MySQL's
        REPLACE [INTO] ..., an INSERT that replaces the rows of the same unique key."""
        tokens, label = without_label(self.tokens[self.position :])
        first = tokens[0]
        replaces = first.token_type == TokenType.REPLACE
        if replaces:
            insert = Token(
                TokenType.INSERT, "INSERT", first.line, first.col, first.start, first.end
            )
            tokens = [insert, *tokens[1:]]
        expression = parse_with_sqlglot(tokens, self.sql)
        self.position = len(self.tokens)
        if not isinstance(expression, exp.Insert):
            self.fail("expected INSERT")
        return st.Insert(expression, label=label or "", replaces=replaces)

    def _update(self):
        return st.Update(self._whole_with_sqlglot(exp.Update))

    def _delete(self):
        return st.Delete(self._whole_with_sqlglot(exp.Delete))

    def _whole_with_sqlglot(self, kind: type):
        expression = parse_with_sqlglot(self.tokens[self.position :], self.sql)
        self.position = len(self.tokens)
        if not isinstance(expression, kind):
            self.fail(f"expected {kind.__name__.upper()}")
        return expression

    def _kill(self):
        self.expect("KILL")
        query_only = self.accept("QUERY")
        if not query_only:
            self.accept("CONNECTION")
        return st.Kill(self.integer(), query_only)

    def _create(self):
        self.expect("CREATE")
        if self.accept("OR", "REPLACE"):
            self.expect("VIEW")
            return self.create_view(or_replace=True)
        if self.accept("VIEW"):
            return self.create_view()
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            if_not_exists = self.if_not_exists()
            name = self.database_name()
            properties = self.properties() if self.accept("PROPERTIES") else ()
            return st.CreateDatabase(name, if_not_exists, properties)
        if self.accept("USER"):
            return self.create_user()
        if self.accept("ROLE"):
            if_not_exists = self.if_not_exists()
            names = self.role_names()
            comment = self.string() if self.accept("COMMENT") else ""
            return st.CreateRole(names, if_not_exists, comment)
        if self.accept("INDEX"):
            return self.create_index()
        if self.accept("ROW", "POLICY"):
            return self.create_row_policy()
        if self.accept("MATERIALIZED", "VIEW"):
            return self.create_materialized_view()
        self.accept("EXTERNAL")
        if self.accept("TABLE"):
            return self.create_table()
        self.fail("unsupported CREATE")

    def create_view(self, or_replace: bool = False, alter: bool = False):
        """[IF NOT EXISTS] name [(column [COMMENT '...'], ...)] [COMMENT '...'] AS query"""
        if_not_exists = False if alter else self.if_not_exists()
        view = self.table_name()
        names: list[str] = []
        if self.accept_type(TokenType.L_PAREN):
            while True:
                names.append(self.identifier())
                if self.accept("COMMENT"):
                    self.string()
                if not self.accept_type(TokenType.COMMA):
                    break
            self.expect_type(TokenType.R_PAREN, ")")
        comment = self.string() if self.accept("COMMENT") else ""
        self.expect("AS")
        if not self._at_query():
            self.fail("expected a query after AS")
        query = self.sql[self.tokens[self.position].start :]
        self.position = len(self.tokens)
        return st.CreateView(view, query, tuple(names), if_not_exists, or_replace, alter, comment)

    def create_materialized_view(self):
        """Doris's synchronous materialized view, a rollup of its table: [IF NOT EXISTS] name
        AS SELECT columns and aggregates of columns FROM t [GROUP BY ...] [ORDER BY ...]; or,
        with BUILD, REFRESH or table options before AS, an asynchronous one."""
        if_not_exists = self.if_not_exists()
        if not (self.position + 1 < len(self.tokens) and self.words[self.position + 1] == ("AS",)):
            return self.create_async_materialized_view(if_not_exists)
        name = self.identifier()
        self.expect("AS")
        if not self._at_query():
            self.fail("expected a query after AS")
        start = self.tokens[self.position].start
        end = len(self.sql)
        while self.position < len(self.tokens) and not self.at("PROPERTIES"):
            self.next()
        if self.position < len(self.tokens):
            end = self.tokens[self.position].start
            self.expect("PROPERTIES")
            self.properties()
        table, columns, keys = materialized_view_columns(self.sql[start:end])
        rollup = st.AddRollup(name, columns, keys)
        return st.AlterTable(table, (rollup,), if_not_exists=if_not_exists)

    def create_async_materialized_view(self, if_not_exists: bool):
        """name [(column, ...)] [BUILD IMMEDIATE | DEFERRED] [REFRESH [COMPLETE | AUTO]
        [ON MANUAL]] [table options] AS query."""
        table = self.table_name()
        options: dict = {"properties": (), "comment": "", "engine": "olap"}
        if self._at_name_list():
            options["column_names"] = self.name_list()
        deferred = False
        every, starts = 0, ""
        while not self.accept("AS"):
            if self.position >= len(self.tokens):
                self.fail("expected AS and a query")
            if self.accept("BUILD"):
                deferred = self.accept("DEFERRED")
                if not deferred:
                    self.expect("IMMEDIATE")
            elif self.accept("REFRESH"):
                self.accept("COMPLETE") or self.accept("AUTO")
                if self.accept("ON") and not self.accept("MANUAL"):
                    if self.accept("COMMIT"):
                        raise NotSupported("a materialized view refreshed ON COMMIT")
                    self.expect("SCHEDULE")
                    self.expect("EVERY")
                    count = self.integer()
                    unit = (self.identifier() or "").upper()
                    if unit not in SCHEDULE_UNITS or count <= 0:
                        self.fail("expected EVERY n SECOND | MINUTE | HOUR | DAY | WEEK")
                    every = count * SCHEDULE_UNITS[unit]
                    if self.accept("STARTS"):
                        starts = self.string()
            else:
                self.table_option(options)
        if not self._at_query():
            self.fail("expected a query after AS")
        options["query"] = self.sql[self.tokens[self.position].start :]
        self.position = len(self.tokens)
        return st.CreateTable(
            table=table,
            columns=(),
            if_not_exists=if_not_exists,
            materialized=True,
            deferred=deferred,
            refresh_every=every,
            refresh_starts=starts,
            **options,
        )

    def create_index(self):
        """CREATE INDEX [IF NOT EXISTS] name [USING kind] ON t (column [(length)] [ASC|DESC], ...)
        [USING kind] [PROPERTIES (...)] [COMMENT '...'] [MySQL's ALGORITHM, LOCK, ...]"""
        if_not_exists = self.if_not_exists()
        name = self.identifier()
        kind = self.identifier().upper() if self.accept("USING") else None
        self.expect("ON")
        table = self.table_name()
        columns, plain = self.index_columns()
        index = self.index_options(name, columns, plain, kind)
        self.position = len(self.tokens)  # MySQL's ALGORITHM, LOCK, ...: nothing to keep
        return st.CreateIndex(name, table, columns, index, if_not_exists)

    def create_row_policy(self) -> st.CreateRowPolicy:
        """[IF NOT EXISTS] p ON t AS RESTRICTIVE | PERMISSIVE TO user | ROLE r USING (predicate)"""
        if_not_exists = self.if_not_exists()
        name = self.identifier()
        self.expect("ON")
        table = self.table_name()
        self.expect("AS")
        filter_type = self.identifier().upper()
        self.expect("TO")
        user, role = self.policy_holder()
        self.expect("USING")
        if self.peek_type() != TokenType.L_PAREN:
            self.fail("expected ( after USING")
        start = self.tokens[self.position].start
        self.skip_parenthesised()
        predicate = self.sql[start : self.tokens[self.position - 1].end + 1].strip()[1:-1]
        return st.CreateRowPolicy(
            name, table, filter_type, user, role, predicate.strip(), self.sql.strip(), if_not_exists
        )

    def policy_holder(self) -> tuple[st.UserName | None, str | None]:
        """`user` or `ROLE r`, as a row policy names whom it binds."""
        if self.accept("ROLE"):
            return None, self.role_name()
        return self.user_name(), None

    def skip_parenthesised(self) -> None:
        depth = 0
        while self.position < len(self.tokens):
            token_type = self.next().token_type
            if token_type == TokenType.L_PAREN:
                depth += 1
            elif token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    return
        self.fail("expected )")

    def index_columns(self) -> tuple[tuple[str, ...], bool]:
        """`(column [(length)] [ASC|DESC], ...)`: the names, and whether none had more."""
        self.expect_type(TokenType.L_PAREN, "(")
        columns, plain = [], True
        while True:
            columns.append(self.identifier())
            before = self.position
            self.skip_index_definition()
            plain = plain and self.position == before
            if not self.accept_type(TokenType.COMMA):
                break
        self.expect_type(TokenType.R_PAREN, ")")
        return tuple(columns), plain

    def index_options(
        self, name: str, columns: tuple[str, ...], plain: bool, kind: str | None
    ) -> st.IndexDef | None:
        """[USING kind] [PROPERTIES (...)] [COMMENT '...'] after an index's columns: Doris's
        index, or None for a MySQL one Doris has no kind of (BTREE, HASH; several columns or a
        prefix length with no kind named)."""
        if self.accept("USING"):
            kind = self.identifier().upper()
        properties = self.properties() if self.accept("PROPERTIES") else ()
        comment = self.string() if self.accept("COMMENT") else ""
        if kind in MYSQL_INDEX_KINDS or (kind is None and (len(columns) > 1 or not plain)):
            return None
        return st.IndexDef(name, columns, kind or "INVERTED", properties, comment)

    def table_index(self) -> st.IndexDef | None:
        """CREATE TABLE's `INDEX name (columns) ...` (None: a MySQL index, skipped)."""
        self.expect("INDEX")
        if self.peek_type() == TokenType.L_PAREN:  # MySQL's unnamed index
            self.skip_index_definition()
            return None
        name = self.identifier()
        kind = self.identifier().upper() if self.accept("USING") else None
        columns, plain = self.index_columns()
        index = self.index_options(name, columns, plain, kind)
        self.skip_index_definition()  # MySQL's KEY_BLOCK_SIZE, ...
        return index

    def _drop(self):
        self.expect("DROP")
        if self.accept("ROW", "POLICY"):
            if_exists = self.if_exists()
            name = self.identifier()
            self.expect("ON")
            table = self.table_name()
            user = role = None
            if self.accept("FOR"):
                user, role = self.policy_holder()
            return st.DropRowPolicy(name, table, user, role, if_exists)
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            if_exists = self.if_exists()
            name = self.database_name()
            return st.DropDatabase(name, if_exists, force=self.accept("FORCE"))
        if self.accept("TABLE"):
            return self.drop_tables()
        if self.accept("STATS"):
            table = self.table_name()
            columns = self.name_list() if self.peek_type() == TokenType.L_PAREN else ()
            return st.DropStats(table, columns)
        if self.accept("VIEW"):
            if_exists = self.if_exists()
            names = [self.table_name()]
            while self.accept_type(TokenType.COMMA):
                names.append(self.table_name())
            return st.DropView(tuple(names), if_exists)
        if self.accept("USER"):
            if_exists = self.if_exists()
            return st.DropUser(self.user_name(), if_exists)
        if self.accept("ROLE"):
            if_exists = self.if_exists()
            return st.DropRole(self.role_names(), if_exists)
        if self.accept("INDEX"):
            if_exists = self.if_exists()
            name = self.identifier()
            self.expect("ON")
            table = self.table_name()
            self.position = len(self.tokens)  # MySQL's ALGORITHM, LOCK: nothing to keep
            return st.DropIndex(name, table, if_exists)
        if self.accept("MATERIALIZED", "VIEW"):
            if_exists = self.if_exists()
            name = self.table_name()
            if not self.accept("ON"):  # an asynchronous view: a table of its own
                return st.DropTable(name, if_exists, materialized=True)
            table = self.table_name()
            return st.AlterTable(table, (st.DropRollup(name.name, if_exists=if_exists),))
        self.fail("unsupported DROP")

    def drop_tables(self):
        if_exists = self.if_exists()
        tables = [self.table_name()]
        while self.accept_type(TokenType.COMMA):
            tables.append(self.table_name())
        force = self.accept("FORCE")
        return st.DropTable(tables[0], if_exists, force, tuple(tables[1:]))

    def _truncate(self):
        self.expect("TRUNCATE")
        self.accept("TABLE")
        table = self.table_name()
        partitions: tuple[str, ...] = ()
        if self.accept("PARTITION") or self.accept("PARTITIONS"):
            if self.peek_type() == TokenType.L_PAREN:
                partitions = self.name_list()
            else:
                partitions = (self.identifier(),)
        return st.TruncateTable(table, partitions)

    def _recover(self):
        self.expect("RECOVER")
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            return st.RecoverDatabase(self.identifier(), self.recovered_as())
        if self.accept("TABLE"):
            return st.RecoverTable(self.table_name(), self.recovered_as())
        if self.accept("PARTITION"):
            name = self.identifier()
            self.expect("FROM")
            table = self.table_name()
            return st.RecoverPartition(name, table, self.recovered_as())
        self.fail("expected RECOVER DATABASE, TABLE or PARTITION")

    def recovered_as(self) -> str | None:
        return self.identifier() if self.accept("AS") else None

    def show_recycle_bin(self):
        self.expect("RECYCLE", "BIN")
        if not self.accept("WHERE"):
            return st.ShowRecycleBin()
        self.expect("NAME")
        like = self.accept("LIKE")
        if not like:
            self.expect_type(TokenType.EQ, "=")
        return st.ShowRecycleBin(self.string(), like)

    def create_user(self):
        if_not_exists = self.if_not_exists()
        user = self.user_name()
        password = self.identified(user)
        role = self.role_name() if self.accept("DEFAULT", "ROLE") else None
        lockout = self.lockout_options(may_unlock=False)
        if password is None:
            password = st.SetPassword(user)
        return st.CreateUser(
            user, password.password, password.password_hash, if_not_exists, lockout, role
        )

    def identified(self, user: st.UserName) -> st.SetPassword | None:
        """IDENTIFIED BY 'p' | BY PASSWORD 'hash' | WITH plugin [BY 'p' | AS 'hash'], if there."""
        if self.accept("IDENTIFIED", "BY"):
            if self.accept("PASSWORD"):
                return st.SetPassword(user, password_hash=self.string())
            return st.SetPassword(user, password=self.string())
        if self.accept("IDENTIFIED", "WITH"):
            self.identifier()
            if self.accept("BY"):
                return st.SetPassword(user, password=self.string())
            if self.accept("AS"):
                return st.SetPassword(user, password_hash=self.string())
            return st.SetPassword(user)
        return None

    def lockout_options(self, may_unlock: bool) -> st.LockoutOptions:
        """MySQL's and Doris's FAILED_LOGIN_ATTEMPTS n and PASSWORD_LOCK_TIME {n | UNBOUNDED}
        (n days; Doris: n DAY|HOUR|SECOND), and ACCOUNT UNLOCK (Doris: ACCOUNT_UNLOCK)."""
        attempts = lock_seconds = None
        unlock = False
        while self.position < len(self.tokens):
            if self.accept("FAILED_LOGIN_ATTEMPTS"):
                attempts = self.bounded_integer("FAILED_LOGIN_ATTEMPTS", MAX_LOCKOUT_NUMBER)
            elif self.accept("PASSWORD_LOCK_TIME"):
                if self.accept("UNBOUNDED"):
                    lock_seconds = LOCKED_UNTIL_UNLOCK
                else:
                    count = self.bounded_integer("PASSWORD_LOCK_TIME", MAX_LOCKOUT_NUMBER)
                    unit = next((u for u in LOCK_TIME_UNITS if self.accept(u)), "DAY")
                    lock_seconds = count * LOCK_TIME_UNITS[unit]
            elif may_unlock and (self.accept("ACCOUNT", "UNLOCK") or self.accept("ACCOUNT_UNLOCK")):
                unlock = True
            else:
                self.fail("unexpected input")
        return st.LockoutOptions(attempts, lock_seconds, unlock)

    def bounded_integer(self, what: str, maximum: int) -> int:
        value = self.integer()
        if not 0 <= value <= maximum:
            self.position -= 1
            self.fail(f"{what} must be 0 to {maximum}")
        return value

    def _grant(self):
        return self.grant(revoke=False)

    def _revoke(self):
        return self.grant(revoke=True)

    def grant(self, revoke: bool):
        self.next()
        if not self._names_an_object():  # GRANT 'r1', 'r2' TO user
            roles = self.role_names()
            self.expect("FROM" if revoke else "TO")
            return st.GrantRoles(roles, self.user_name(), revoke)
        privileges = []
        while True:
            word = self._word()
            if word is None:
                self.fail("expected a privilege")
            self.next()
            if word == "ALL":
                self.accept("PRIVILEGES")
            if word not in PRIVILEGES:
                self.position -= 1
                self.fail(f"unknown privilege {word}")
            privileges.append(word)
            if not self.accept_type(TokenType.COMMA):
                break
        self.expect("ON")
        self.accept("TABLE")
        db, table = self.grant_object()
        self.expect("FROM" if revoke else "TO")
        if self.accept("ROLE"):
            return st.GrantStatement(tuple(privileges), db, table, None, revoke, self.role_name())
        user = self.user_name()
        return st.GrantStatement(tuple(privileges), db, table, user, revoke)

    def _names_an_object(self) -> bool:
        """Whether a GRANT or REVOKE grants privileges ON an object (not roles to a user)."""
        return any(words == ("ON",) for words in self.words[self.position :])

    def role_name(self) -> str:
        name = self.name_or_string()
        if not name or len(name) > MAX_ROLE_NAME:
            self.position -= 1
            self.fail(f"a role's name is 1 to {MAX_ROLE_NAME} characters")
        return name

    def role_names(self) -> tuple[str, ...]:
        names = [self.role_name()]
        while self.accept_type(TokenType.COMMA):
            names.append(self.role_name())
        return tuple(names)

    def grant_object(self) -> tuple[str, str]:
        """`*.*`, `db.*`, `db.t`, or under Doris's catalog: `internal.db.t`, `*.*.*`, ..."""
        parts = [self.grant_part()]
        while len(parts) < 3 and self.accept_type(TokenType.DOT):
            parts.append(self.grant_part())
        if len(parts) == 3:
            catalog = parts.pop(0)
            if catalog != "*":
                check_catalog(catalog)
        if len(parts) == 1:
            # MySQL would read "db" as a table of the current db; Doris as a db
            return ("*", "*") if parts[0] == "*" else (parts[0], "*")
        db, table = parts
        if db == "*" and table != "*":
            self.fail("expected *.* or db.*")
        return db, table

    def grant_part(self) -> str:
        return "*" if self.accept_type(TokenType.STAR) else self.identifier()

    def _alter(self):
        self.expect("ALTER")
        if self.accept("VIEW"):
            return self.create_view(alter=True)
        if self.accept("USER"):
            if_exists = self.if_exists()
            user = self.user_name()
            password = self.identified(user)
            lockout = self.lockout_options(may_unlock=True)
            if password is None and lockout == st.LockoutOptions():
                self.fail(
                    "expected IDENTIFIED BY, FAILED_LOGIN_ATTEMPTS, PASSWORD_LOCK_TIME or ACCOUNT UNLOCK"
                )
            return st.AlterUser(user, if_exists, password, lockout)
        if self.accept("SYSTEM"):
            action = self.next().text.upper()
            role = self.next().text.upper()
            if action not in ("ADD", "DROP") or role not in ("FOLLOWER", "OBSERVER", "BACKEND"):
                self.fail("expected ADD|DROP FOLLOWER|OBSERVER|BACKEND")
            return st.AlterSystem(action, role, self.string())
        self.expect("TABLE")
        table = self.table_name()
        actions = [*self.alter_actions()]
        while self.accept_type(TokenType.COMMA):
            if type(actions[-1]) in (st.AddRollup, st.DropRollup) and not self.at_alter_clause():
                actions.append(self.more_rollups(actions[-1]))  # ADD ROLLUP r1 (...), r2 (...)
            else:
                actions.extend(self.alter_actions())
        return st.AlterTable(table, tuple(actions))

    def at_alter_clause(self) -> bool:
        return self._word() in ALTER_CLAUSE_WORDS

    def alter_actions(self) -> list:
        """One ALTER TABLE clause; ADD COLUMN (c1 ..., c2 ...) is one action per column."""
        if self.accept("ADD", "COLUMN", "(") or self.accept("ADD", "("):
            self.position -= 1
            return self.add_columns()
        return [self.alter_action()]

    def add_columns(self) -> list:
        self.expect_type(TokenType.L_PAREN, "(")
        columns = [self.column_def()]
        while self.accept_type(TokenType.COMMA):
            columns.append(self.column_def())
        self.expect_type(TokenType.R_PAREN, ")")
        rollup = self.rollup_target("TO", "IN")
        self.alter_clause_properties()
        return [st.AddColumn(column, rollup=rollup) for column in columns]

    def rollup_target(self, *words: str) -> str | None:
        if any(self.accept(word) for word in words):
            return self.identifier()
        return None

    def alter_clause_properties(self) -> tuple[tuple[str, str], ...]:
        return self.properties() if self.accept("PROPERTIES") else ()

    def more_rollups(self, previous):
        if type(previous) is st.AddRollup:
            return self.rollup_def()
        return st.DropRollup(self.identifier(), self.alter_clause_properties())

    def rollup_def(self) -> st.AddRollup:
        """r (k1, v1) [DUPLICATE KEY (k1)] [FROM base] [PROPERTIES (...)], as ADD ROLLUP and
        CREATE TABLE's ROLLUP (...) write it."""
        name = self.identifier()
        columns = self.name_list()
        duplicate_keys: tuple[str, ...] = ()
        if self.accept("DUPLICATE", "KEY"):
            duplicate_keys = self.name_list()
        base = self.rollup_target("FROM")
        return st.AddRollup(name, columns, duplicate_keys, base, self.alter_clause_properties())

    def alter_action(self):
        if self.accept("ADD"):
            temporary = self.accept("TEMPORARY")
            if self.accept("PARTITION"):
                if_not_exists = self.if_not_exists()
                partition = self.partition_def()
                buckets = distribution = None
                if self.accept("DISTRIBUTED", "BY"):
                    distribution = self.distribution()
                    buckets = self._last_buckets
                return st.AddPartition(partition, buckets, distribution, temporary, if_not_exists)
            if temporary:
                self.fail("expected PARTITION")
            if self.accept("ROLLUP"):
                return self.rollup_def()
            if self.accept("INDEX"):
                if_not_exists = self.if_not_exists()
                name = self.identifier()
                columns, plain = self.index_columns()
                index = self.index_options(name, columns, plain, None)
                if index is None:  # a MySQL index: its name kept
                    return st.AddMysqlKey(name, columns, if_not_exists)
                return st.AddIndex(index, if_not_exists)
            self.accept("COLUMN")
            column = self.column_def()
            after, first = self.column_position()
            rollup = self.rollup_target("TO", "IN")
            self.alter_clause_properties()
            return st.AddColumn(column, after, first, rollup)
        if self.accept("DROP"):
            temporary = self.accept("TEMPORARY")
            if self.accept("PARTITION"):
                if_exists = self.if_exists()
                name = self.identifier()
                force = self.accept("FORCE")
                return st.DropPartition(name, if_exists, force, temporary)
            if temporary:
                self.fail("expected PARTITION")
            if self.accept("ROLLUP"):
                return st.DropRollup(self.identifier(), self.alter_clause_properties())
            if self.accept("INDEX"):
                if_exists = self.if_exists()
                return st.DropIndexClause(self.identifier(), if_exists)
            self.accept("COLUMN")
            name = self.identifier()
            rollup = self.rollup_target("FROM")
            self.alter_clause_properties()
            return st.DropColumn(name, rollup)
        if self.accept("MODIFY"):
            if self.accept("PARTITION"):
                return self.modify_partition()
            if self.accept("COMMENT"):
                return st.ModifyTableComment(self.string())
            self.accept("COLUMN")
            column = self.column_def()
            after, first = self.column_position()
            rollup = self.rollup_target("FROM")
            self.alter_clause_properties()
            return st.ModifyColumn(column, after, first, rollup)
        if self.accept("ORDER", "BY"):
            columns = self.name_list()
            rollup = self.rollup_target("FROM")
            self.alter_clause_properties()
            return st.ReorderColumns(columns, rollup)
        if self.accept("RENAME"):
            if self.accept("COLUMN"):
                old = self.identifier()
                self.accept("TO")
                return st.RenameColumn(old, self.identifier())
            if self.accept("PARTITION"):
                old = self.identifier()
                return st.RenamePartition(old, self.identifier())
            if self.accept("ROLLUP"):
                old = self.identifier()
                return st.RenameRollup(old, self.identifier())
            self.accept("TO") or self.accept("AS")
            return st.RenameTable(self.identifier())
        if self.accept("SET"):
            return st.SetTableProperties(self.properties())
        if self.accept("DISABLE", "KEYS") or self.accept("ENABLE", "KEYS"):
            return st.ToggleKeys()
        if self.accept("ENABLE", "FEATURE"):
            name = self.string().upper()
            properties = self.properties() if self.accept("WITH", "PROPERTIES") else ()
            return st.EnableFeature(name, properties)
        if self.accept("REPLACE"):
            if self.accept("WITH", "TABLE"):
                table = self.identifier()
                properties = self.properties() if self.accept("PROPERTIES") else ()
                return st.ReplaceWithTable(table, properties)
            self.expect("PARTITION")
            partitions = self.name_list()
            self.expect("WITH", "TEMPORARY", "PARTITION")
            temporary = self.name_list()
            properties = self.properties() if self.accept("PROPERTIES") else ()
            return st.ReplacePartition(partitions, temporary, properties)
        self.fail("unsupported ALTER TABLE action")

    def modify_partition(self) -> st.ModifyPartition:
        """MODIFY PARTITION p | (p1, p2) | (*) SET (...)."""
        if self.accept_type(TokenType.L_PAREN):
            if self.accept_type(TokenType.STAR):
                names: tuple[str, ...] = ()
                self.expect_type(TokenType.R_PAREN, ")")
            else:
                self.position -= 1
                names = self.name_list()
        else:
            names = (self.identifier(),)
        self.expect("SET")
        return st.ModifyPartition(names, self.properties())

    def column_position(self) -> tuple[str | None, bool]:
        if self.accept("AFTER"):
            return self.identifier(), False
        return None, self.accept("FIRST")

    # -- CREATE TABLE --------------------------------------------------------------------------

    def create_table(self):
        if_not_exists = self.if_not_exists()
        table = self.table_name()
        if self.accept("LIKE"):
            return st.CreateTableLike(table, self.table_name(), if_not_exists)
        columns: list[Column] = []
        indexes: list[st.IndexDef] = []
        primary_key: tuple[str, ...] = ()
        options: dict = {"properties": (), "comment": "", "engine": "olap"}
        if self._at_name_list():  # CREATE TABLE t (a, b) ... AS SELECT: the query's new names
            options["column_names"] = self.name_list()
        elif self.peek_type() == TokenType.L_PAREN or not self._at_query(skip_options=True):
            self.expect_type(TokenType.L_PAREN, "(")
            mysql_keys: list[str] = []
            generated: dict[str, str] = {}
            primary_key = self.column_definitions(columns, indexes, mysql_keys, generated)
            options["indexes"] = tuple(indexes)
            options["mysql_keys"] = tuple(mysql_keys)
            options["generated_columns"] = tuple(generated.items())
        if primary_key:
            options["key_model"] = KeyModel.UNIQUE
            options["key_columns"] = primary_key
        while self.position < len(self.tokens):
            if self.accept("AS"):
                if not self._at_query():
                    self.fail("expected a query after AS")
                options["query"] = self.sql[self.tokens[self.position].start :]
                self.position = len(self.tokens)
                break
            self.table_option(options)
        if options.get("column_names") and "query" not in options:
            self.fail("expected AS and a query after a list of column names")
        return st.CreateTable(
            table=table, columns=tuple(columns), if_not_exists=if_not_exists, **options
        )

    def cluster_keys(self, word: str) -> st.ClusterKeys:
        """(c1 [ASC] [NULLS FIRST], ...) after CLUSTER BY or ORDER BY: Doris's keys take no
        other order."""
        self.expect_type(TokenType.L_PAREN, "(")
        names = []
        while True:
            names.append(self.identifier())
            if self.accept("DESC"):
                raise KeyOrderRefused(f"{word.title()} keys only support ASC in OLAP table")
            self.accept("ASC")
            if self.accept("NULLS", "LAST"):
                raise KeyOrderRefused(f"{word.title()} keys only support NULLS FIRST in OLAP table")
            self.accept("NULLS", "FIRST")
            if self.accept_type(TokenType.R_PAREN):
                return st.ClusterKeys(word, tuple(names))
            self.expect_type(TokenType.COMMA, ", or )")

    def _at_name_list(self) -> bool:
        """At `(a, b, ...)`: names alone, which only CREATE TABLE ... AS SELECT takes."""
        if self.peek_type() != TokenType.L_PAREN or self.position + 2 >= len(self.tokens):
            return False
        return self.tokens[self.position + 2].token_type in (TokenType.COMMA, TokenType.R_PAREN)

    def _at_query(self, skip_options: bool = False) -> bool:
        """At a query (or, with skip_options, at table options then AS and a query)."""
        if skip_options:
            return any(
                self.words[index] == ("AS",)
                and index + 1 < len(self.tokens)
                and self.tokens[index + 1].token_type in QUERY_STARTS
                for index in range(self.position, len(self.tokens))
            )
        return self.peek_type() in QUERY_STARTS

    def column_definitions(
        self, columns: list[Column], indexes: list, mysql_keys: list, generated: dict[str, str]
    ) -> tuple[str, ...]:
        """The column and index definitions of CREATE TABLE up to its `)`, into `columns`,
        (Doris's) `indexes`, the names of MySQL's (`mysql_keys`) and the expressions of the
        generated columns (`generated`); the PRIMARY KEY they name."""
        primary_key: tuple[str, ...] = ()
        while True:
            if self.accept("PRIMARY", "KEY"):
                primary_key = self.name_list()
            elif self.at("INDEX"):
                start = self.position
                index = self.table_index()
                if index is not None:
                    indexes.append(index)
                elif (name := self.mysql_key_name(start, mysql_keys)) is not None:
                    mysql_keys.append(name)
            elif self.at("KEY") or self.at("UNIQUE") or self.at("CONSTRAINT"):
                start = self.position
                self.skip_index_definition()
                name = self.mysql_key_name(start, mysql_keys)
                if name is not None:
                    mysql_keys.append(name)
            else:
                column = self.column_def(generated)
                if column.is_key and not primary_key:
                    primary_key = (column.name,)
                columns.append(column)
            if self.accept_type(TokenType.R_PAREN):
                return primary_key
            self.expect_type(TokenType.COMMA, ", or )")

    def mysql_key_name(self, start: int, taken: list[str]) -> str | None:
        """The name MySQL gives the index defined from token `start` on (`[CONSTRAINT [c]]
        [UNIQUE] [KEY | INDEX] [name] [USING x] (column, ...)`): its own, else the constraint's,
        else its first column's (name_2, name_3, ... past those taken); None for a constraint
        that makes no index (FOREIGN KEY, CHECK)."""
        end, self.position = self.position, start
        try:
            constraint = None
            if self.accept("CONSTRAINT") and not (self.at("UNIQUE") or self.at("CHECK")):
                constraint = self.identifier()
            unique = self.accept("UNIQUE")
            if not (self.accept("KEY") or self.accept("INDEX")) and not unique:
                return None
            name = None
            if self.peek_type() != TokenType.L_PAREN and not self.at("USING"):
                name = self.identifier()
            if self.accept("USING"):
                self.identifier()
            if name or constraint:
                return name or constraint
            self.expect_type(TokenType.L_PAREN, "(")
            if self.peek_type() == TokenType.L_PAREN:  # MySQL 8's index of an expression
                return _unique_name("functional_index", taken)
            return _unique_name(self.identifier(), taken)
        finally:
            self.position = end

    def skip_index_definition(self) -> None:
        depth = 0
        while self.position < len(self.tokens):
            token_type = self.peek_type()
            if depth == 0 and token_type in (TokenType.COMMA, TokenType.R_PAREN):
                return
            if token_type == TokenType.L_PAREN:
                depth += 1
            elif token_type == TokenType.R_PAREN:
                depth -= 1
            self.next()

    def table_option(self, options: dict) -> None:
        if self.accept("ENGINE"):
            self.accept_type(TokenType.EQ)
            engine = self.identifier().lower()
            options["engine"] = "olap" if engine in ("innodb", "myisam", "memory") else engine
        elif self.at("DUPLICATE", "KEY") or self.at("UNIQUE", "KEY") or self.at("AGGREGATE", "KEY"):
            options["key_model"] = KeyModel(self.next().text.upper())
            self.next()
            options["key_columns"] = self.name_list()
        elif self.accept("COMMENT"):
            self.accept_type(TokenType.EQ)
            options["comment"] = self.string()
        elif self.at("PARTITION", "BY") or self.at("AUTO", "PARTITION", "BY"):
            auto = self.accept("AUTO")
            self.expect("PARTITION", "BY")
            kind = next((k for k in PartitionKind if self.accept(k.value)), None)
            if kind is None:
                self.fail("expected RANGE or LIST")
            options["partition_kind"] = kind
            if auto and kind == PartitionKind.RANGE:
                options["partition_columns"], options["auto_partition"] = self.date_trunc_call()
            else:
                options["partition_columns"] = self.name_list()
                if auto:
                    options["auto_partition"] = "list"
            self.expect_type(TokenType.L_PAREN, "(")
            partitions = []
            if not self.accept_type(TokenType.R_PAREN):
                while True:
                    if self.accept("FROM"):
                        partitions.append(self.batch_partition_def())
                    else:
                        self.expect("PARTITION")
                        partitions.append(self.partition_def())
                    if self.accept_type(TokenType.R_PAREN):
                        break
                    self.expect_type(TokenType.COMMA, ", or )")
            options["partitions"] = tuple(partitions)
        elif self.accept("DISTRIBUTED", "BY"):
            options["distribution_columns"] = self.distribution()
            options["buckets"] = self._last_buckets
        elif self.accept("CLUSTER", "BY"):
            options["cluster_keys"] = self.cluster_keys("CLUSTER")
        elif self.accept("ORDER", "BY"):
            options["cluster_keys"] = self.cluster_keys("ORDER")
        elif self.accept("PROPERTIES"):
            options["properties"] = self.properties()
        elif self.accept("ROLLUP"):
            self.expect_type(TokenType.L_PAREN, "(")
            rollups = [self.rollup_def()]
            while self.accept_type(TokenType.COMMA):
                rollups.append(self.rollup_def())
            self.expect_type(TokenType.R_PAREN, ")")
            options["rollups"] = tuple(rollups)
        elif (
            self.at("DEFAULT")
            or self.at("CHARSET")
            or self.at("CHARACTER")
            or self.at("COLLATE")
            or self.at("AUTO_INCREMENT")
            or self.at("ROW_FORMAT")
        ):
            self.accept("DEFAULT")
            self.next()
            self.accept("SET")
            self.accept_type(TokenType.EQ)
            self.next()
        elif self.accept_type(TokenType.COMMA):
            pass
        else:
            self.fail("unsupported table option")

    def date_trunc_call(self) -> tuple[tuple[str, ...], str]:
        """AUTO PARTITION BY RANGE's (date_trunc(c, 'unit')): the column, the unit."""
        self.expect_type(TokenType.L_PAREN, "(")
        if (self.identifier() or "").lower() != "date_trunc":
            self.fail("AUTO PARTITION BY RANGE takes date_trunc(column, 'unit')")
        self.expect_type(TokenType.L_PAREN, "(")
        column = self.identifier()
        self.expect_type(TokenType.COMMA, ",")
        unit = self.string().lower()
        self.expect_type(TokenType.R_PAREN, ")")
        self.expect_type(TokenType.R_PAREN, ")")
        return (column,), unit

    def distribution(self) -> tuple[str, ...]:
        columns: tuple[str, ...] = ()
        if self.accept("HASH"):
            columns = self.name_list()
        else:
            self.expect("RANDOM")
        self._last_buckets = None
        if self.accept("BUCKETS"):
            if not self.accept("AUTO"):
                self._last_buckets = self.integer()
                if not 1 <= self._last_buckets <= 1024:
                    self.fail("BUCKETS must be between 1 and 1024")
        return columns

    def partition_def(self) -> st.PartitionDef:
        self.if_not_exists()
        name = self.identifier()
        self.expect("VALUES")
        if self.accept("LESS", "THAN"):
            upper = () if self.accept("MAXVALUE") else self.value_tuple()
            definition = st.PartitionDef(name, upper=upper)
        elif self.accept_type(TokenType.L_BRACKET):
            lower = self.value_tuple()
            self.expect_type(TokenType.COMMA, ",")
            upper = self.value_tuple()
            self.expect_type(TokenType.R_PAREN, ")")
            definition = st.PartitionDef(name, lower=lower, upper=upper)
        elif self.accept("IN"):
            definition = st.PartitionDef(name, values=self.list_values())
        else:
            self.fail("expected VALUES LESS THAN, VALUES [...) or VALUES IN (...)")
        if self.peek_type() == TokenType.L_PAREN:
            definition = dataclasses.replace(definition, properties=self.properties())
        return definition

    def list_values(self) -> tuple[tuple[str, ...], ...]:
        """VALUES IN ("a", "b") or, for several columns, (("1", "a"), ("2", "b"))."""
        self.expect_type(TokenType.L_PAREN, "(")
        values = []
        while True:
            if self.peek_type() == TokenType.L_PAREN:
                values.append(self.value_tuple())
            else:
                values.append((self.literal_text(),))
            if self.accept_type(TokenType.R_PAREN):
                return tuple(values)
            self.expect_type(TokenType.COMMA, ", or )")

    def batch_partition_def(self) -> st.BatchPartitionDef:
        start = self.value_tuple()
        self.expect("TO")
        end = self.value_tuple()
        self.expect("INTERVAL")
        interval = self.integer()
        unit = None
        if self.peek_type() not in WORD_TOKENS_EXCLUDED | {TokenType.R_PAREN, None}:
            unit = self.next().text.upper()
        properties = self.properties() if self.peek_type() == TokenType.L_PAREN else ()
        return st.BatchPartitionDef(start, end, interval, unit, properties)

    def value_tuple(self) -> tuple[str, ...]:
        self.expect_type(TokenType.L_PAREN, "(")
        if self.accept("MAXVALUE"):
            self.expect_type(TokenType.R_PAREN, ")")
            return ()
        values = [self.literal_text()]
        while self.accept_type(TokenType.COMMA):
            values.append(self.literal_text())
        self.expect_type(TokenType.R_PAREN, ")")
        return tuple(values)

    def column_def(self, generated: dict[str, str] | None = None) -> Column:
        """A column's definition; the expression of a generated one (`[GENERATED ALWAYS] AS
        (expression) [STORED | VIRTUAL]`, always stored, as Doris's) goes into generated, which
        only CREATE TABLE gives."""
        name = self.identifier()
        column_type = self.column_type()
        nullable = True
        default = None
        comment = ""
        is_key = False
        aggregation = None
        auto_increment = False
        while (
            self.position < len(self.tokens)
            and self.peek_type() not in (TokenType.COMMA, TokenType.R_PAREN)
            and not any(self.at(word) for word in COLUMN_DEF_ENDS)
        ):
            word = self._word()
            if word in AGGREGATIONS:
                aggregation = word
                self.next()
            elif self.accept("NOT", "NULL"):
                nullable = False
            elif self.accept("NULL"):
                nullable = True
            elif self.accept("DEFAULT"):
                default = self.default_value()
            elif self.accept("COMMENT"):
                comment = self.string()
            elif self.accept("PRIMARY", "KEY") or self.accept("KEY"):
                is_key = True
            elif self.accept("AUTO_INCREMENT"):
                auto_increment = True
                if self.accept_type(TokenType.L_PAREN):
                    self.integer()
                    self.expect_type(TokenType.R_PAREN, ")")
            elif self.accept("UNSIGNED") or self.accept("ZEROFILL"):
                pass
            elif (
                self.accept("CHARACTER", "SET") or self.accept("CHARSET") or self.accept("COLLATE")
            ):
                self.name_or_string()
            elif self.accept("ON", "UPDATE"):
                self.default_value()
            elif self.accept("GENERATED", "ALWAYS", "AS") or self.accept("AS"):
                if generated is None:
                    raise NotSupported("ALTER TABLE of a generated column")
                self.expect_type(TokenType.L_PAREN, "(")
                generated[name] = self.expression_text()
                self.expect_type(TokenType.R_PAREN, ")")
                _ = self.accept("STORED") or self.accept("VIRTUAL") or self.accept("PERSISTENT")
            else:
                self.fail("unsupported column option")
        if is_key:
            nullable = False
        return Column(
            name=name,
            type=column_type,
            nullable=nullable,
            default=default,
            comment=comment,
            is_key=is_key,
            aggregation=aggregation,
            auto_increment=auto_increment,
        )

    def column_type(self) -> ColumnType:
        word = self._word()
        if word is None:
            self.fail("expected a column type")
        start = self.position
        self.next()
        if word not in TYPE_NAMES and word not in ALIASES:
            self.position -= 1
            self.fail(f"unknown column type {word}")
        text = word
        if self.peek_type() == TokenType.L_PAREN:
            self.next()
            arguments = [str(self.integer())]
            while self.accept_type(TokenType.COMMA):
                arguments.append(str(self.integer()))
            self.expect_type(TokenType.R_PAREN, ")")
            text += f"({','.join(arguments)})"
        elif self.peek_type() == TokenType.LT:
            depth = 0
            parts = []
            while True:
                token = self.next()
                if token.token_type == TokenType.LT:
                    depth += 1
                elif token.token_type == TokenType.GT:
                    depth -= 1
                parts.append(token.text.upper() if token.token_type != TokenType.COMMA else ",")
                if depth == 0:
                    break
            text += "".join(parts)
        try:
            return parse_column_type(text)
        except ValueError as error:
            self.position = start
            self.fail(str(error))

    def default_value(self) -> str:
        if self.accept("NULL"):
            return "NULL"
        if self.peek_type() == TokenType.STRING:
            return "'" + self.next().text.replace("'", "''") + "'"
        if self.at("CURRENT_TIMESTAMP") or self.at("NOW"):
            self.next()
            if self.accept_type(TokenType.L_PAREN):
                self.accept_type(TokenType.NUMBER)
                self.expect_type(TokenType.R_PAREN, ")")
            return "CURRENT_TIMESTAMP"
        return self.literal_text()

    # -- SHOW and ADMIN ------------------------------------------------------------------------

    def _show(self):
        self.expect("SHOW")
        if self.accept("ALL", "GRANTS"):
            return st.Show("ALL GRANTS")
        full = self.accept("FULL")
        is_global = self.accept("GLOBAL")
        self.accept("SESSION") or self.accept("LOCAL")
        word = self._word()
        if word is None:
            self.fail("unsupported SHOW")
        self.next()
        if word in ("DATABASES", "SCHEMAS"):
            return st.Show("DATABASES", like=self.like())
        if word == "TABLES":
            db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
            return st.Show("TABLES", db=db, like=self.like(), full=full)
        if word == "CATALOGS":
            return st.Show("CATALOGS", like=self.like())
        if word == "ROW" and self.accept("POLICY"):
            user = role = None
            if self.accept("FOR"):
                user, role = self.policy_holder()
            return st.ShowRowPolicy(user, role)
        if word == "FRONTEND" and self.accept("CONFIG"):  # Doris 3's ADMIN SHOW FRONTEND CONFIG
            return st.AdminShowConfig(self.like())
        if word in ("COLUMNS", "FIELDS"):
            self.accept("FROM") or self.accept("IN")
            table = self.table_name()
            if self.accept("FROM") or self.accept("IN"):
                table = st.TableName(self.database_name(), table.name)
            return st.Show("COLUMNS", table=table, like=self.like(), full=full)
        if word == "CREATE":
            if self.accept("DATABASE") or self.accept("SCHEMA"):
                return st.Show("CREATE DATABASE", db=self.database_name())
            if self.accept("USER"):
                return st.Show("CREATE USER", user=self.user_name())
            if self.accept("VIEW"):
                return st.Show("CREATE VIEW", table=self.table_name())
            if self.accept("MATERIALIZED", "VIEW"):
                return st.Show("CREATE MATERIALIZED VIEW", table=self.table_name())
            self.expect("TABLE")
            return st.Show("CREATE TABLE", table=self.table_name())
        if word == "GRANTS":
            user = self.user_name() if self.accept("FOR") else None
            return st.Show("GRANTS", user=user)
        if word == "ROLES":
            return st.Show("ROLES")
        if word == "DYNAMIC":
            self.expect("PARTITION", "TABLES")
            db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
            return st.Show("DYNAMIC PARTITION TABLES", db=db)
        if word == "LAST":
            self.expect("INSERT")
            return st.Show("LAST INSERT")
        if word == "PROPERTY":
            name = self.name_or_string() if self.accept("FOR") else None
            return st.ShowProperty(name, self.like())
        if word in ("VARIABLES", "STATUS"):
            if self.accept("WHERE"):
                self.fail("SHOW ... WHERE is not supported; use LIKE")
            return st.Show(word, like=self.like(), is_global=is_global)
        if word == "PROC":
            return st.Show("PROC", path=self.string())
        if word == "PARTITIONS" or (word == "TEMPORARY" and self.accept("PARTITIONS")):
            self.expect("FROM")
            table = self.table_name()
            where = self.show_conditions() if self.accept("WHERE") else ()
            order_by = self.order_by()
            limit, offset = self.limit_offset()
            what = "PARTITIONS" if word == "PARTITIONS" else "TEMPORARY PARTITIONS"
            return st.Show(
                what, table=table, where=where, order_by=order_by, limit=limit, offset=offset
            )
        if word == "DATA" and self.accept("SKEW"):
            self.expect("FROM")
            return st.ShowDataSkew(self.table_name(), self.partition_names())
        if word == "REPLICA":
            return self.show_replica()
        if word == "DATA":
            table = self.table_name() if self.accept("FROM") else None
            return st.ShowData(table, self.order_by())
        if word in ("TABLETS", "TABLET") and self.accept("FROM"):
            return self.show_tablets()
        if word == "EXPORT":
            return self.show_export()
        if word == "LOAD" or (word == "STREAM" and self.accept("LOAD")):
            return self.show_load("LOAD" if word == "LOAD" else "STREAM LOAD")
        if word == "TRANSACTION":
            db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
            return st.ShowTransaction(db, self.equality() if self.accept("WHERE") else None)
        if word == "CATALOG" and self.at("RECYCLE"):
            return self.show_recycle_bin()
        if word == "TABLET":
            return st.ShowTablet(self.integer())
        if word in ("INDEX", "INDEXES", "KEYS"):
            self.accept("FROM") or self.accept("IN")
            table = self.table_name()
            if self.accept("FROM") or self.accept("IN"):
                table = st.TableName(self.database_name(), table.name)
            return st.Show("INDEX", table=table)
        if word == "ALTER":
            return self.show_alter()
        if word == "TABLE" and self.peek_type() == TokenType.NUMBER:
            return st.ShowTableId(self.integer())
        if word == "PARTITION" and self.peek_type() == TokenType.NUMBER:
            return st.ShowPartitionId(self.integer())
        if word in ("PROCEDURE", "FUNCTION") and self.accept("STATUS"):
            self.position = len(self.tokens)  # LIKE or WHERE: there are none to show
            return st.Show(f"{word} STATUS")
        if word == "TABLE" and self.accept("STATS"):
            return st.ShowStats("TABLE", self.table_name())
        if word == "ANALYZE":
            return self.show_analyze()
        if word == "COLUMN":
            self.accept("CACHED")
            self.expect("STATS")
            table = self.table_name()
            columns = self.name_list() if self.peek_type() == TokenType.L_PAREN else ()
            return st.ShowStats("COLUMN", table, columns)
        if word == "TABLE" and self.accept("STATUS"):
            db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
            return st.Show("TABLE STATUS", db=db, like=self.like())
        if word in ("CHARACTER", "CHARSET"):
            self.accept("SET")
            return st.Show("CHARSET", like=self.like())
        if word in ("TRIGGERS", "EVENTS") or (word == "OPEN" and self.accept("TABLES")):
            return self.show_in_database("OPEN TABLES" if word == "OPEN" else word, full)
        if word in (
            "PROCESSLIST",
            "FRONTENDS",
            "BACKENDS",
            "ENGINES",
            "COLLATION",
            "WARNINGS",
            "ERRORS",
            "PLUGINS",
            "PRIVILEGES",
        ):
            return st.Show(word, like=self.like(), full=full)
        self.fail("unsupported SHOW")

    def show_in_database(self, what: str, full: bool) -> st.Show:
        """SHOW TRIGGERS, EVENTS or OPEN TABLES [FROM | IN db] [LIKE 'p' | WHERE ...]."""
        db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
        like = self.like()
        where = self.show_conditions() if like is None and self.accept("WHERE") else ()
        return st.Show(what, db=db, like=like, full=full, where=where)

    def show_analyze(self) -> st.ShowAnalyze:
        """SHOW ANALYZE [table | job id] [WHERE STATE = 'PENDING|RUNNING|FINISHED|FAILED']."""
        table, job_id, state = None, None, None
        if self.peek_type() == TokenType.NUMBER:
            job_id = self.integer()
        elif self.position < len(self.tokens) and not self.at("WHERE"):
            table = self.table_name()
        if self.accept("WHERE"):
            self.expect("STATE")
            self.expect_type(TokenType.EQ, "=")
            state = self.string().upper()
            if state not in ("PENDING", "RUNNING", "FINISHED", "FAILED"):
                self.fail('Where clause should be STATE = "PENDING|RUNNING|FINISHED|FAILED"')
        return st.ShowAnalyze(table, job_id, state)

    def show_load(self, what: str) -> st.Show:
        """SHOW [STREAM] LOAD [FROM db] [WHERE LABEL = 'l' | WHERE LABEL LIKE 'p']: the label
        kept as a LIKE pattern."""
        db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
        like = None
        if self.accept("WHERE"):
            if self.identifier().upper() != "LABEL":
                self.fail(f"SHOW {what} ... WHERE filters by LABEL only")
            if self.accept("LIKE"):
                like = self.string()
            else:
                self.expect_type(TokenType.EQ, "=")
                like = re.sub(r"([%_\\])", r"\\\1", self.string())
        return st.Show(what, db=db, like=like)

    def show_tablets(self) -> st.ShowTablets:
        table = self.table_name()
        partitions = self.partition_names()
        where = []
        if self.accept("WHERE"):
            where.append(self.equality())
            while self.accept("AND"):
                where.append(self.equality())
        order_by = self.order_by()
        return st.ShowTablets(table, partitions, tuple(where), order_by, *self.limit_offset())

    def partition_names(self) -> tuple[str, ...]:
        """A table's [PARTITION p | PARTITION (p, ...) | PARTITIONS (p, ...)]: () for none."""
        if self.accept("PARTITIONS"):
            return self.name_list()
        if not self.accept("PARTITION"):
            return ()
        if self.peek_type() == TokenType.L_PAREN:
            return self.name_list()
        return (self.identifier(),)

    def show_replica(self) -> st.ShowReplicaStatus | st.ShowReplicaDistribution:
        """[ADMIN] SHOW REPLICA STATUS FROM t [PARTITION ...] [WHERE STATUS = | != 's'] and
        [ADMIN] SHOW REPLICA DISTRIBUTION FROM t [PARTITION ...], after REPLICA."""
        if self.accept("DISTRIBUTION"):
            self.expect("FROM")
            return st.ShowReplicaDistribution(self.table_name(), self.partition_names())
        self.expect("STATUS")
        self.expect("FROM")
        table, partitions = self.table_name(), self.partition_names()
        where = None
        if self.accept("WHERE"):
            column = self.identifier()
            if self.accept_type(TokenType.NEQ):
                operator = "!="
            else:
                self.expect_type(TokenType.EQ, "=, != or <>")
                operator = "="
            where = (column, operator, self._shown_value())
        return st.ShowReplicaStatus(table, partitions, where)

    def limit_offset(self) -> tuple[int | None, int]:
        """[LIMIT n [OFFSET m]] or [LIMIT m, n] of a SHOW: (n, m), None for no limit."""
        if not self.accept("LIMIT"):
            return None, 0
        limit = self.integer()
        if self.accept_type(TokenType.COMMA):
            return self.integer(), limit
        return limit, self.integer() if self.accept("OFFSET") else 0

    def show_conditions(self) -> tuple[tuple[str, str, object], ...]:
        """A SHOW's `c = v [AND c LIKE 'p' ...]`: (column, "=" or "LIKE", value) each."""
        conditions = []
        while True:
            name = self.identifier()
            if self.accept("LIKE"):
                conditions.append((name, "LIKE", self.string()))
            else:
                self.expect_type(TokenType.EQ, "=")
                conditions.append((name, "=", self._shown_value()))
            if not self.accept("AND"):
                return tuple(conditions)

    def equality(self) -> tuple[str, object]:
        """`name = value` in a SHOW's WHERE: the value an int or a string."""
        name = self.identifier()
        self.expect_type(TokenType.EQ, "=")
        return name, self._shown_value()

    def _shown_value(self) -> object:
        if self.peek_type() == TokenType.STRING:
            return self.string()
        negative = self.accept_type(TokenType.DASH)
        value = self.integer()
        return -value if negative else value

    def order_by(self) -> tuple[st.OrderBy, ...]:
        if not self.accept("ORDER", "BY"):
            return ()
        columns = []
        while True:
            name = self.identifier()
            descending = self.accept("DESC")
            if not descending:
                self.accept("ASC")
            columns.append(st.OrderBy(name, descending))
            if not self.accept_type(TokenType.COMMA):
                return tuple(columns)

    def show_alter(self):
        self.expect("TABLE")
        kind = self.alter_job_kind()
        db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
        where = []
        if self.accept("WHERE"):
            while True:
                column = self.identifier()
                self.expect_type(TokenType.EQ, "=")
                where.append((column, self.literal_text()))
                if not self.accept("AND"):
                    break
        return st.ShowAlter(kind, db, tuple(where), self.order_by(), *self.limit_offset())

    def alter_job_kind(self) -> str:
        if self.accept("COLUMN"):
            return "COLUMN"
        if self.accept("ROLLUP") or self.accept("MATERIALIZED", "VIEW"):
            return "ROLLUP"
        self.fail("expected COLUMN or ROLLUP")

    def _load(self):
        self.expect("LOAD", "LABEL")
        db = None
        label = self.name_or_string()
        if self.accept_type(TokenType.DOT):
            db, label = without_catalog(label), self.name_or_string()
        self.expect_type(TokenType.L_PAREN, "(")
        data = [self.load_data()]
        while self.accept_type(TokenType.COMMA):
            data.append(self.load_data())
        self.expect_type(TokenType.R_PAREN, ")")
        self.expect("WITH")
        if not self.accept("S3"):
            raise NotSupported("LOAD ... WITH BROKER or HDFS (WITH S3 is taken)")
        source = self.properties()
        properties = self.properties() if self.accept("PROPERTIES") else ()
        return st.BrokerLoad(db, label, tuple(data), source, properties)

    def load_data(self) -> st.LoadData:
        """DATA INFILE ("path", ...) [NEGATIVE] INTO TABLE t [PARTITION (p, ...)] [COLUMNS
        TERMINATED BY "x"] [FORMAT AS "f"] [(c, ...)] [SET (c = expr, ...)] [WHERE expr]."""
        self.expect("DATA", "INFILE")
        self.expect_type(TokenType.L_PAREN, "(")
        paths = [self.string()]
        while self.accept_type(TokenType.COMMA):
            paths.append(self.string())
        self.expect_type(TokenType.R_PAREN, ")")
        if self.at("NEGATIVE"):
            raise NotSupported("LOAD ... NEGATIVE")
        self.expect("INTO", "TABLE")
        table = self.identifier()
        partitions = self.name_list() if self.accept("PARTITION") else ()
        separator = file_format = None
        if self.accept("COLUMNS", "TERMINATED", "BY"):
            separator = self.string()
        if self.accept("FORMAT", "AS"):
            file_format = self.name_or_string().lower()
        columns = self.name_list() if self.peek_type() == TokenType.L_PAREN else ()
        settings = []
        if self.accept("SET"):
            self.expect_type(TokenType.L_PAREN, "(")
            while True:
                name = self.identifier()
                self.expect_type(TokenType.EQ, "=")
                settings.append((name, self.expression_text()))
                if self.accept_type(TokenType.R_PAREN):
                    break
                self.expect_type(TokenType.COMMA, ", or )")
        where = self.expression_text() if self.accept("WHERE") else None
        return st.LoadData(
            tuple(paths), table, partitions, separator, file_format, columns, tuple(settings), where
        )

    def expression_text(self, *until: str) -> str:
        """The text of an expression as written, up to a comma or closing parenthesis outside
        it, or one of the words until."""
        start, depth = self.position, 0
        while self.position < len(self.tokens):
            kind = self.peek_type()
            if depth == 0 and (kind in (TokenType.COMMA, TokenType.R_PAREN) or self.at(*until)):
                break
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            self.position += 1
        if self.position == start:
            self.fail("expected an expression")
        first, last = self.tokens[start], self.tokens[self.position - 1]
        return self.sql[first.start : last.end + 1]

    def _export(self):
        self.expect("EXPORT", "TABLE")
        table = self.table_name()
        partitions = self.name_list() if self.accept("PARTITION") else ()
        where = self.expression_text("TO") if self.accept("WHERE") else None
        self.expect("TO")
        path = self.string()
        properties = self.properties() if self.accept("PROPERTIES") else ()
        self.expect("WITH")
        if not self.accept("S3"):
            raise NotSupported("EXPORT ... WITH BROKER or HDFS (WITH S3 is taken)")
        return st.Export(table, partitions, where, path, properties, self.properties())

    def show_export(self) -> st.ShowExport:
        db = self.database_name() if (self.accept("FROM") or self.accept("IN")) else None
        return st.ShowExport(db, self.equality() if self.accept("WHERE") else None)

    def _cancel(self):
        for word, job in (("EXPORT", st.CancelExport), ("LOAD", st.CancelLoad)):
            if self.accept("CANCEL", word):  # [FROM db] WHERE LABEL = 'label'
                db = self.database_name() if self.accept("FROM") else None
                self.expect("WHERE", "LABEL")
                self.expect_type(TokenType.EQ, "=")
                return job(db, self.string())
        self.expect("CANCEL", "ALTER", "TABLE")
        kind = self.alter_job_kind()
        self.expect("FROM")
        table = self.table_name()
        job_ids: tuple[int, ...] = ()
        if self.accept_type(TokenType.L_PAREN):
            ids = [self.integer()]
            while self.accept_type(TokenType.COMMA):
                ids.append(self.integer())
            self.expect_type(TokenType.R_PAREN, ")")
            job_ids = tuple(ids)
        return st.CancelAlter(kind, table, job_ids)

    def _analyze(self):
        """Doris's ANALYZE TABLE t [(columns)] [WITH SYNC | WITH SAMPLE PERCENT n | ROWS n ...]:
        every row is read whatever the WITH clauses ask."""
        self.expect("ANALYZE")
        self.accept("TABLE")
        table = self.table_name()
        columns = self.name_list() if self.peek_type() == TokenType.L_PAREN else ()
        while self.accept("WITH"):
            if self.accept("SAMPLE"):
                if not (self.accept("PERCENT") or self.accept("ROWS")):
                    self.fail("expected PERCENT or ROWS")
                self.integer()
            elif not (self.accept("SYNC") or self.accept("FULL") or self.accept("INCREMENTAL")):
                self.fail("unsupported ANALYZE option")
        return st.Analyze(table, columns)

    def _clean(self):
        """Doris's CLEAN LABEL [label] FROM db."""
        self.expect("CLEAN", "LABEL")
        label = "" if self.at("FROM") or self.at("IN") else self.identifier()
        if not (self.accept("FROM") or self.accept("IN")):
            self.fail("expected FROM")
        db = self.database_name()
        self.done()
        return st.CleanLabel(db, label)

    def _admin(self):
        self.expect("ADMIN")
        if self.accept("SHOW", "FRONTEND", "CONFIG"):
            return st.AdminShowConfig(self.like())
        if self.accept("SET", "FRONTEND", "CONFIG"):
            settings = self.properties()
            return st.AdminSetConfig(settings, all_frontends=self.accept("ALL"))
        if self.accept("SET", "ALL", "FRONTENDS", "CONFIG"):
            return st.AdminSetConfig(self.properties(), all_frontends=True)
        if self.accept("CHECKPOINT"):
            return st.AdminCheckpoint()
        if self.accept("COMPACT", "TABLE"):
            table, partitions = self.table_name(), self.partition_names()
            where = None
            if self.accept("WHERE"):
                column = self.identifier()
                self.expect_type(TokenType.EQ, "=")
                where = (column, self._shown_value())
            return st.AdminCompact(table, partitions, where)
        if self.accept("SHOW", "REPLICA"):
            return self.show_replica()
        self.fail("unsupported ADMIN statement")

    def _sync(self):
        self.expect("SYNC")
        return st.Sync()


def _unique_name(name: str, taken: list[str]) -> str:
    """name, or as MySQL names a second index of the same first column: name_2, name_3, ..."""
    lowered = {other.lower() for other in taken}
    suffix = 2
    chosen = name
    while chosen.lower() in lowered:
        chosen = f"{name}_{suffix}"
        suffix += 1
    return chosen


STATEMENT_HANDLERS = {
    "SET": Grammar._set,
    "USE": Grammar._use,
    "DESC": Grammar._desc,
    "DESCRIBE": Grammar._desc,
    "EXPLAIN": Grammar._explain,
    "BEGIN": Grammar._begin,
    "START": Grammar._start,
    "COMMIT": Grammar._commit,
    "ROLLBACK": Grammar._rollback,
    "INSERT": Grammar._insert,
    "REPLACE": Grammar._insert,
    "UPDATE": Grammar._update,
    "DELETE": Grammar._delete,
    "KILL": Grammar._kill,
    "CREATE": Grammar._create,
    "DROP": Grammar._drop,
    "GRANT": Grammar._grant,
    "REVOKE": Grammar._revoke,
    "ALTER": Grammar._alter,
    "SHOW": Grammar._show,
    "ADMIN": Grammar._admin,
    "SYNC": Grammar._sync,
    "TRUNCATE": Grammar._truncate,
    "RECOVER": Grammar._recover,
    "SWITCH": Grammar._switch,
    "CANCEL": Grammar._cancel,
    "CLEAN": Grammar._clean,
    "ANALYZE": Grammar._analyze,
    "LOCK": Grammar._lock,
    "UNLOCK": Grammar._unlock,
    "FLUSH": Grammar._flush,
    "BUILD": Grammar._build,
    "REFRESH": Grammar._refresh,
    "LOAD": Grammar._load,
    "EXPORT": Grammar._export,
}  # a statement's first word -> its rule; any other first word is a syntax error (1064)
