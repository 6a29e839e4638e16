"""MySQL's functions that DuckDB lacks or means otherwise, as DuckDB expressions on the sqlglot tree.

The clock is read once per statement (StatementTime) in the session's time_zone: NOW() and its
kind become literals. DuckDB is run without ICU, so it knows no time zones: a conversion between
zones is arithmetic on the zones' UTC offsets, taken at the converted value when that is a constant
and at the statement's time otherwise.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import build_formatted_time
from sqlglot.dialects.mysql import MySQL

from be.engine import ciphers, hashes
from be.engine.allow_list import (
    BITMAP_ANONYMOUS,
    DORIS_DATE_ADD_UNITS,
    DORIS_DIFF_UNITS,
    DORIS_JSON_GETTERS,
)
from fe.mysql.errors import ErrorCode, QueryError
from fe.statements import arrays

UTC = datetime.UTC
WEEK_MODES = 8  # MySQL's week modes: 0 to 7
MAX_FRACTIONAL_DIGITS = 6
MAX_DECIMAL_DIGITS = 38  # DuckDB's widest DECIMAL
UNSIGNED_64 = 2**64
ENGINE_BATCH_ROWS = 2048  # DuckDB's vector: the rows whose values an expression makes at once


class UnknownTimeZone(ValueError):
    pass


def time_zone(name: str) -> datetime.tzinfo:
    """MySQL's time_zone value as a tzinfo: SYSTEM, an offset such as '+08:00', or a named zone."""
    text = name.strip()
    if text.upper() == "SYSTEM":
        return datetime.datetime.now().astimezone().tzinfo
    if text[:1] in ("+", "-"):
        hours, _, minutes = text[1:].partition(":")
        if not (hours.isdigit() and minutes.isdigit() and len(minutes) == 2):
            raise UnknownTimeZone(name)
        offset = datetime.timedelta(hours=int(hours), minutes=int(minutes))
        if offset > datetime.timedelta(hours=14) or int(minutes) >= 60:
            raise UnknownTimeZone(name)
        return datetime.timezone(-offset if text[0] == "-" else offset)
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise UnknownTimeZone(name) from None


@dataclass(frozen=True)
class StatementTime:
    """The statement's clock reading in the session's zone, and what else its functions read of
    the session: the longest text they may make (max_allowed_packet, as in MySQL) and WEEK's mode
    when none is given (default_week_format)."""

    now: datetime.datetime  # aware
    max_text_bytes: int  # fe.conf's max_allowed_packet
    week_format: int = 0
    max_row_text_bytes: int = 0  # a text made a row: a batch of rows of them within the memory
    encryption_mode: str = ciphers.DEFAULT_MODE  # block_encryption_mode, as Doris names it

    def __post_init__(self) -> None:
        if not self.max_row_text_bytes:
            object.__setattr__(self, "max_row_text_bytes", self.max_text_bytes)
        assert 0 < self.max_row_text_bytes <= self.max_text_bytes

    @classmethod
    def of(cls, session) -> StatementTime:
        zone = time_zone(str(session.variable("time_zone") or "SYSTEM"))
        limit = session.services.config["max_allowed_packet"]
        week_format = int(session.variable("default_week_format") or 0) % WEEK_MODES
        memory = int(session.variable("exec_mem_limit") or 0)
        row_limit = max(min(limit, memory // ENGINE_BATCH_ROWS), 1)
        mode = ciphers.mode_name(str(session.variable("block_encryption_mode") or ""))
        return cls(
            datetime.datetime.now(UTC).astimezone(zone),
            limit,
            week_format,
            row_limit,
            mode or ciphers.DEFAULT_MODE,
        )

    @property
    def zone(self) -> datetime.tzinfo:
        return self.now.tzinfo

    def offset_seconds(self, zone: datetime.tzinfo, local: datetime.datetime | None) -> int:
        """zone's UTC offset at the wall time `local` (at the statement's time if not known)."""
        at = self.now.astimezone(zone) if local is None else local.replace(tzinfo=zone)
        return int(at.utcoffset().total_seconds())


def clock_value(node: exp.Expression, time: StatementTime) -> exp.Expression | None:
    """The literal a clock function (NOW(), CURDATE(), UTC_TIME(), ...) stands for, else None."""
    reading = CLOCKS.get(_name(node))
    if reading is None:
        return None
    arguments = _arguments(node)
    if len(arguments) > 1 or (arguments and not _is_integer(arguments[0])):
        return None
    digits = int(arguments[0].this) if arguments else 0
    if digits > MAX_FRACTIONAL_DIGITS:
        return None
    value = reading(time)
    if isinstance(value, int):
        return exp.Literal.number(value)
    drop = 10 ** (MAX_FRACTIONAL_DIGITS - digits)
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.DATE)
    value = value.replace(microsecond=value.microsecond // drop * drop)
    if isinstance(value, datetime.time):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.Type.TIME)
    return exp.cast(exp.Literal.string(value.isoformat(" ")), exp.DataType.Type.DATETIME)


def _local_now(time: StatementTime) -> datetime.datetime:
    return time.now.replace(tzinfo=None)


def _utc_now(time: StatementTime) -> datetime.datetime:
    return time.now.astimezone(UTC).replace(tzinfo=None)


CLOCKS: dict[str, Callable[[StatementTime], object]] = {
    "NOW": _local_now,
    "SYSDATE": _local_now,
    "CURRENT_TIMESTAMP": _local_now,
    "LOCALTIME": _local_now,
    "LOCALTIMESTAMP": _local_now,
    "CURDATE": lambda time: time.now.date(),
    "CURRENT_DATE": lambda time: time.now.date(),
    "CURTIME": lambda time: _local_now(time).time(),
    "CURRENT_TIME": lambda time: _local_now(time).time(),
    "UTC_TIMESTAMP": _utc_now,
    "UTC_DATE": lambda time: _utc_now(time).date(),
    "UTC_TIME": lambda time: _utc_now(time).time(),
}


def _chained_hash(name: str) -> Callable:
    """Doris's hash of texts: each text's hash the seed of the next's."""
    engine_name, seed = hashes.ENGINE_NAMES[name], hashes.FIRST_SEEDS[name]

    def rewrite(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
        if not node.expressions:
            return node
        hashed: exp.Expression = exp.Literal.number(seed)
        for text in node.expressions:
            text = exp.cast(text, exp.DataType.Type.VARCHAR)
            hashed = _function(engine_name, text, exp.cast(hashed, exp.DataType.Type.BIGINT))
        return hashed

    return rewrite


def _aes(engine_name: str) -> Callable:
    """AES_ENCRYPT / AES_DECRYPT(text, key[, vector[, mode]]): the engine's function of their
    bytes (a text's in UTF-8), in the mode named or else the session's block_encryption_mode."""

    def rewrite(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
        arguments = _arguments(node)
        if not 2 <= len(arguments) <= 4:
            raise QueryError(
                ErrorCode.WRONG_PARAMCOUNT_TO_NATIVE_FCT,
                f"Incorrect parameter count in the call to native function '{_name(node).lower()}'",
            )
        text, key, *rest = arguments
        vector = rest[0] if rest else exp.null()
        mode = rest[1] if len(rest) == 2 else exp.Literal.string(time.encryption_mode)
        if isinstance(mode, exp.Literal) and ciphers.mode_name(mode.name) is None:
            raise QueryError(
                ErrorCode.WRONG_ARGUMENTS,
                f"Incorrect arguments to {_name(node).lower()}: no encryption mode {mode.name!r}",
            )
        return _function(
            engine_name,
            _bytes(text),
            _bytes(key),
            _bytes(vector),
            exp.cast(mode, exp.DataType.Type.VARCHAR),
        )

    return rewrite


def _bytes(node: exp.Expression) -> exp.Expression:
    """A value's bytes: a BLOB's own, another's text in UTF-8."""
    return _filled(_TEMPLATE_TREES["BYTES"], node)


REWRITE_GROWTH = 64  # rewrites add at most this many nodes a node of the query, ...
REWRITE_SLACK = 100_000  # ... and this many more


def rewritten(tree: exp.Expression, time: StatementTime) -> exp.Expression:
    """tree with MySQL's functions and operators turned into DuckDB's, innermost first. The
    nodes the rewrites add are counted: past REWRITE_GROWTH a node of the query (a rewrite
    copying an argument into two places, nested: 2^depth) the query is refused, not made."""
    nodes = list(tree.walk())
    budget = REWRITE_GROWTH * len(nodes) + REWRITE_SLACK
    for node in reversed(nodes):
        if isinstance(node, exp.Func):
            rewrite = REWRITES.get(_name(node))
        else:
            rewrite = OPERATOR_REWRITES.get(type(node))
        if rewrite is None:
            continue
        before = sum(1 for _ in node.walk())
        new = rewrite(node, time)
        if new is node:
            continue
        budget -= sum(1 for _ in new.walk()) - before  # what the rewrite added
        if budget < 0:
            raise QueryError(
                ErrorCode.PARSE_ERROR,
                "You have an error in your SQL syntax: the statement's functions nest too deeply",
            )
        if node is tree:
            tree = new
        else:
            node.replace(new)
    return tree


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    return node.sql_name().upper() if isinstance(node, exp.Func) else ""


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [value for value in node.args.values() if isinstance(value, exp.Expression)]


def _is_integer(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def _function(name: str, *arguments: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(arguments))


def _timestamp(node: exp.Expression) -> exp.Expression:
    """A string literal read as a DATETIME (DuckDB will not guess a string's type)."""
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.cast(node, exp.DataType.Type.DATETIME)
    if isinstance(node, exp.TsOrDsToDate | exp.TsOrDsToTimestamp) and _is_string(node.this):
        return exp.cast(node.this, exp.DataType.Type.DATETIME)
    return node


def _is_string(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _constant_datetime(node: exp.Expression) -> datetime.datetime | None:
    if isinstance(node, exp.Cast) and _is_string(node.this):
        node = node.this
    if not _is_string(node):
        return None
    try:
        return datetime.datetime.fromisoformat(node.this)
    except ValueError:
        return None


def _seconds(value: int) -> exp.Expression:
    return exp.Interval(this=exp.Literal.string(str(value)), unit=exp.var("SECOND"))


def _unix_timestamp(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    arguments = node.expressions
    if not arguments:
        return exp.Literal.number(int(time.now.timestamp()))
    if len(arguments) == 2:  # Doris's UNIX_TIMESTAMP(text, format)
        form = _doris_format(arguments[1], strftime=False)
        parsed = build_formatted_time(exp.StrToTime, "mysql")([arguments[0], form], MYSQL)
        arguments = [_str_to_date(parsed, time)]  # NULL for a text the format does not read
    if len(arguments) != 1:
        return node
    value = _timestamp(arguments[0])
    offset = time.offset_seconds(time.zone, _constant_datetime(value))
    seconds = _function("EPOCH", exp.cast(value, exp.DataType.Type.DATETIME))
    return exp.Sub(
        this=exp.cast(seconds, exp.DataType.Type.BIGINT), expression=exp.Literal.number(offset)
    )


def _from_unixtime(node: exp.UnixToTime, time: StatementTime) -> exp.Expression:
    seconds = node.this
    if isinstance(seconds, exp.Literal) and not seconds.is_string:
        local = datetime.datetime.fromtimestamp(float(seconds.this), time.zone)
        offset = int(local.utcoffset().total_seconds())
    else:
        offset = time.offset_seconds(time.zone, None)
    micros = exp.cast(
        exp.Mul(
            this=exp.cast(
                exp.Add(this=seconds, expression=exp.Literal.number(offset)),
                exp.DataType.Type.DOUBLE,
            ),
            expression=exp.Literal.number(1_000_000),
        ),
        exp.DataType.Type.BIGINT,
    )
    stamp = _function("MAKE_TIMESTAMP", micros)
    form = node.args.get("format")
    if form is None:
        return stamp
    return _date_format(exp.TimeToStr(this=stamp, format=_doris_format(form)), time)


# The formats Doris's DATE_FORMAT, FROM_UNIXTIME and UNIX_TIMESTAMP take written Java's way
# too, as MySQL's
JAVA_FORMATS = {
    "yyyyMMdd": "%Y%m%d",
    "yyyy-MM-dd": "%Y-%m-%d",
    "yyyy-MM-dd HH:mm:ss": "%Y-%m-%d %H:%i:%s",
}


def _doris_format(form: exp.Expression, strftime: bool = True) -> exp.Expression:
    """A Java-style format as MySQL's (strftime's, as sqlglot has made the rest, by default)."""
    if not (_is_string(form) and form.this in JAVA_FORMATS):
        return form
    mysql = exp.Literal.string(JAVA_FORMATS[form.this])
    return MYSQL.format_time(mysql) if strftime else mysql


def _date_format(node: exp.TimeToStr, time: StatementTime) -> exp.Expression:
    """DATE_FORMAT(x, f), f also one of Doris's Java-style formats; MySQL's specifiers strftime
    has none of (%D, %U's kin %u, %V, %v, %X) worked out beside it."""
    form = node.args.get("format")
    if form is not None and _doris_format(form) is not form:
        node.set("format", _doris_format(form))
        form = node.args["format"]
    if not _is_string(form):
        return node
    pieces = [piece for piece in _SPECIFIERS.split(form.this) if piece]
    if not any(piece in DATE_FORMAT_SPECIFIERS for piece in pieces):
        return node
    parts, text = [], ""
    for piece in pieces:
        if piece not in DATE_FORMAT_SPECIFIERS:
            text += piece
            continue
        if text:
            parts.append(exp.TimeToStr(this=node.this.copy(), format=exp.Literal.string(text)))
            text = ""
        stamp = exp.cast(node.this.copy(), exp.DataType.Type.TIMESTAMP)
        parts.append(_filled(_TEMPLATE_TREES[f"DATE_FORMAT{piece}"], stamp))
    if text:
        parts.append(exp.TimeToStr(this=node.this.copy(), format=exp.Literal.string(text)))
    return exp.Concat(expressions=parts) if len(parts) > 1 else parts[0]


_SPECIFIERS = re.compile(r"(%.)", re.DOTALL)


def _convert_tz(node: exp.ConvertTimezone, time: StatementTime) -> exp.Expression:
    value = _timestamp(node.args["timestamp"])
    source, target = node.args.get("source_tz"), node.args.get("target_tz")
    if not (_is_string(source) and _is_string(target)):
        return exp.null()
    try:
        zones = time_zone(source.this), time_zone(target.this)
    except UnknownTimeZone:
        return exp.null()  # as MySQL
    local = _constant_datetime(value)
    from_offset = time.offset_seconds(zones[0], local)
    at = None if local is None else local - datetime.timedelta(seconds=from_offset)
    at_target = None if at is None else at.replace(tzinfo=UTC).astimezone(zones[1])
    to_offset = time.offset_seconds(
        zones[1], None if at_target is None else at_target.replace(tzinfo=None)
    )
    return exp.Add(
        this=exp.cast(value, exp.DataType.Type.DATETIME),
        expression=_seconds(to_offset - from_offset),
    )


def _add_days(subtract: bool, unit: str = "DAY") -> Callable:
    """ADDDATE and SUBDATE (days, or an interval); Doris's DAYS_ADD, MONTHS_SUB, ... (unit)."""

    def rewrite(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
        if len(node.expressions) != 2:
            return node
        value, amount = node.expressions
        if not isinstance(amount, exp.Interval):
            amount = exp.Interval(this=amount, unit=exp.var(unit))
        kind = exp.DateSub if subtract else exp.DateAdd
        added = kind(this=value, expression=amount.this, unit=amount.args.get("unit"))
        return _date_arithmetic(added, time)

    return rewrite


DATE_UNITS = {"DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}
TRUNCATION_UNITS = {"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"}


def _timestamp_add(node: exp.TimestampAdd, time: StatementTime) -> exp.Expression:
    """TIMESTAMPADD(unit, n, x): DATE_ADD(x, INTERVAL n unit)."""
    added = exp.DateAdd(this=node.this, expression=node.expression, unit=node.args.get("unit"))
    return _date_arithmetic(added, time)


def _date_trunc(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's DATE_TRUNC(x, 'unit'), or DATE_TRUNC('unit', x): x cut to the unit's start."""
    if len(node.expressions) != 2:
        return node
    first, second = node.expressions
    if _is_unit(first) and not _is_unit(second):
        first, second = second, first
    if not _is_unit(second):
        return node
    unit = exp.Literal.string(second.this.lower())
    return _function("DATE_TRUNC", unit, exp.cast(_timestamp(first), exp.DataType.Type.TIMESTAMP))


def _is_unit(node: exp.Expression) -> bool:
    return _is_string(node) and node.this.upper() in TRUNCATION_UNITS


def _makedate(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """MAKEDATE(year, day of the year): NULL for a day below 1, as in MySQL."""
    if len(node.expressions) != 2:
        return node
    year, day = node.expressions
    one = exp.Literal.number(1)
    first = _function("MAKE_DATE", exp.cast(year, exp.DataType.Type.BIGINT), one, one.copy())
    later = exp.Add(
        this=first,
        expression=exp.cast(
            exp.Sub(this=day, expression=exp.Literal.number(1)), exp.DataType.Type.INT
        ),
    )
    return exp.Case(
        ifs=[exp.If(this=exp.GT(this=day.copy(), expression=exp.Literal.number(0)), true=later)]
    )


def _diff(unit: str):
    """Doris's YEARS_DIFF(end, start), DAYS_DIFF, ...: TIMESTAMPDIFF(unit, start, end)."""

    def rewrite(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
        if len(node.expressions) != 2:
            return node
        end, start = node.expressions
        diff = exp.TimestampDiff(this=end, expression=start, unit=exp.var(unit))
        return _timestamp_diff(diff, time)

    return rewrite


def _most_elements(time: StatementTime) -> exp.Expression:
    """The elements an array made from a row's values may have: its share of the memory."""
    return exp.Literal.number(time.max_row_text_bytes // arrays.ELEMENT_BYTES)


def _split(text: exp.Expression, separator: exp.Expression, time: StatementTime):
    text, separator = (exp.cast(value, exp.DataType.Type.VARCHAR) for value in (text, separator))
    limit = _most_elements(time)
    return _filled(_TEMPLATE_TREES["SPLIT_WITHIN_LIMIT"], text, d=separator, n=limit)


def _numbers(count: exp.Expression, time: StatementTime) -> exp.Expression:
    return _filled(_TEMPLATE_TREES["NUMBERS_WITHIN_LIMIT"], count, n=_most_elements(time))


def _table_function(make: Callable, count: int, outer: bool):
    """Doris's EXPLODE_SPLIT[_OUTER](text, separator), EXPLODE_NUMBERS[_OUTER](n): EXPLODE of
    the array they make, for the LATERAL VIEW around them (arrays._lateral_views)."""

    def rewrite(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
        if len(node.expressions) != count:
            return node
        return arrays.exploded(make(*node.expressions, time), outer)

    return rewrite


TABLE_FUNCTIONS = {
    "EXPLODE_SPLIT": _table_function(_split, 2, outer=False),
    "EXPLODE_SPLIT_OUTER": _table_function(_split, 2, outer=True),
    "EXPLODE_NUMBERS": _table_function(_numbers, 1, outer=False),
    "EXPLODE_NUMBERS_OUTER": _table_function(_numbers, 1, outer=True),
}


def _split_by_string(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """SPLIT_BY_STRING(text, separator) (sqlglot's STRING_TO_ARRAY), within the memory."""
    arguments = _arguments(node)
    return _split(*arguments, time) if len(arguments) == 2 else node


def _timestamp_of(node: exp.Timestamp, time: StatementTime) -> exp.Expression:
    """MySQL's TIMESTAMP(x[, t]): x as a DATETIME, the time t added."""
    value = exp.cast(node.this, exp.DataType.Type.TIMESTAMP)
    added = node.args.get("zone")  # sqlglot's name of the second argument
    if added is None:
        return value
    return exp.Add(this=value, expression=exp.cast(added, exp.DataType.Type.INTERVAL))


def _md5sum(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's MD5SUM(s, ...): the MD5 of its arguments one after another (NULL if one is)."""
    if not node.expressions:
        return node
    texts = [exp.cast(argument, exp.DataType.Type.VARCHAR) for argument in node.expressions]
    return exp.MD5(this=exp.Concat(expressions=texts))


def _not_null_or_empty(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's NOT_NULL_OR_EMPTY(s): s IS NOT NULL AND s <> ''."""
    either = _null_or_empty(node, time)
    return node if either is node else exp.Not(this=either)


def _null_or_empty(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's NULL_OR_EMPTY(s): s IS NULL OR s = ''."""
    if len(node.expressions) != 1:
        return node
    value = node.expressions[0]
    empty = exp.EQ(this=value.copy(), expression=exp.Literal.string(""))
    return exp.paren(exp.Or(this=exp.Is(this=value, expression=exp.null()), expression=empty))


def _regexp_extract(node: exp.RegexpExtract, time: StatementTime) -> exp.Expression:
    """Doris's REGEXP_EXTRACT(s, pattern, group): the group's text of the first match."""
    group = node.args.get("position")  # where sqlglot's MySQL reading puts the third argument
    if group is None:
        return node
    return _function("REGEXP_EXTRACT", node.this, node.expression, group)


def _date_arithmetic(node: exp.DateAdd | exp.DateSub, time: StatementTime) -> exp.Expression:
    """A date written as a string stays a date when whole days are added, as in MySQL; a
    string of another kind (a column's, say) is read as a DATETIME, NULL if it is none."""
    value = node.this.unnest()
    if not isinstance(value, exp.Literal) and value.is_type(*exp.DataType.TEXT_TYPES):
        value = exp.TryCast(this=value, to=exp.DataType.build("DATETIME"))
    number = (isinstance(value, exp.Literal) and not value.is_string) or value.is_type(
        *exp.DataType.NUMERIC_TYPES
    )
    if number:  # MySQL reads a number as a date YYYYMMDD (NULL if it is none)
        text = exp.cast(value, exp.DataType.Type.VARCHAR)
        value = exp.cast(
            _function("try_strptime", text, exp.Literal.string("%Y%m%d")), exp.DataType.Type.DATE
        )
    unit = (node.args.get("unit") or exp.var("DAY")).name.upper()
    is_date = value.is_type(exp.DataType.Type.DATE) or (
        _is_string(value) and _is_date_text(value.this)
    )
    if not (is_date and unit in DATE_UNITS):
        node.set("this", _timestamp(value))  # the amount stays as written
        return node
    node.set("this", exp.cast(value, exp.DataType.Type.DATE))
    return exp.cast(node, exp.DataType.Type.DATE)


def _is_date_text(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == len("2000-01-01")


def _date_part(part: str, shift: int = 0) -> Callable:
    def rewrite(node: exp.Expression, time: StatementTime) -> exp.Expression:
        arguments = _arguments(node)
        if len(arguments) != 1:
            return node
        value = _function(part, _timestamp(arguments[0]))
        return exp.Paren(this=exp.Add(this=value, expression=exp.Literal.number(shift)))

    return rewrite


def _with_timestamps(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """DuckDB's date functions refuse an untyped string: read string literals as DATETIME."""
    for key in ("this", "expression"):
        value = node.args.get(key)
        if value is not None:
            node.set(key, _timestamp(value))
    return node


def _timestamp_diff(node: exp.TimestampDiff, time: StatementTime) -> exp.Expression:
    """MySQL counts whole units between the two (DuckDB's date_sub), not boundaries crossed."""
    unit = (node.args.get("unit") or exp.var("SECOND")).name.lower()
    return _function(
        "DATE_SUB",
        exp.Literal.string(unit),
        _timestamp(node.args["expression"]),
        _timestamp(node.this),
    )


def _mid(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    if len(node.expressions) not in (2, 3):
        return node
    value, start, *length = node.expressions
    return exp.Substring(this=value, start=start, length=length[0] if length else None)


def _field(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    if len(node.expressions) < 2:
        return node
    value, *choices = node.expressions
    case = exp.Case()
    for position, choice in enumerate(choices, 1):
        case = case.when(exp.EQ(this=value.copy(), expression=choice), exp.Literal.number(position))
    return case.else_(exp.Literal.number(0))


def _find_in_set(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    if len(node.expressions) != 2:
        return node
    value, members = node.expressions
    found = _function(
        "LIST_POSITION", _function("STRING_SPLIT", members, exp.Literal.string(",")), value
    )
    either_null = exp.or_(
        exp.Is(this=value.copy(), expression=exp.null()),
        exp.Is(this=members.copy(), expression=exp.null()),
    )
    return (
        exp.Case()
        .when(either_null, exp.null())
        .else_(exp.Coalesce(this=found, expressions=[exp.Literal.number(0)]))
    )


def _strcmp(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    if len(node.expressions) != 2:
        return node
    left, right = node.expressions
    return (
        exp.Case()
        .when(exp.LT(this=left, expression=right), exp.Literal.number(-1))
        .when(exp.GT(this=left.copy(), expression=right.copy()), exp.Literal.number(1))
        .when(exp.EQ(this=left.copy(), expression=right.copy()), exp.Literal.number(0))
    )


def _elt(node: exp.Elt, time: StatementTime) -> exp.Expression:
    strings = [exp.cast(value, exp.DataType.Type.VARCHAR) for value in node.expressions]
    return _function("LIST_EXTRACT", _function("LIST_VALUE", *strings), node.this)


def _to_days(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """MySQL's TO_DAYS(x): day 1 is the year 0's January 1st, 366 days before 0001-01-01."""
    arguments = _arguments(node)
    if len(arguments) != 1:
        return node
    days = _function("DATE_DIFF", exp.Literal.string("day"), _DAY_ONE.copy(), _date(arguments[0]))
    return exp.paren(exp.Add(this=days, expression=exp.Literal.number(FIRST_DAY_NUMBER)))


def _from_days(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """MySQL's FROM_DAYS(n), TO_DAYS's inverse; NULL outside the years 1 to 9999 (MySQL's
    zero date)."""
    arguments = _arguments(node)
    if len(arguments) != 1:
        return node
    number = arguments[0]
    offset = exp.Sub(this=number.copy(), expression=exp.Literal.number(FIRST_DAY_NUMBER))
    day = exp.Add(this=_DAY_ONE.copy(), expression=exp.cast(offset, exp.DataType.Type.INT))
    valid = exp.Between(
        this=number,
        low=exp.Literal.number(FIRST_DAY_NUMBER),
        high=exp.Literal.number(LAST_DAY_NUMBER),
    )
    return exp.Case(ifs=[exp.If(this=valid, true=day)])


def _week(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """MySQL's WEEK(x[, mode]) and YEARWEEK(x[, mode]) in each of the eight modes (DuckDB's WEEK
    is ISO's week, MySQL's mode 3); a mode that is no integer constant is refused."""
    arguments = _arguments(node)
    if not 1 <= len(arguments) <= 2:
        return node
    value, *mode = arguments
    if mode and not (_is_integer(mode[0]) and int(mode[0].this) < WEEK_MODES):
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET, f"{_name(node)}'s mode must be an integer from 0 to 7"
        )
    with_year = _name(node) == "YEARWEEK"
    default = 0 if with_year else time.week_format  # YEARWEEK's is 0 whatever the session says
    template = _week_tree(int(mode[0].this) if mode else default, with_year)
    return _filled(template, _date(value))


@functools.cache
def _week_tree(mode: int, with_year: bool) -> exp.Expression:
    """MySQL's week of x in mode (its week_format bits: Monday first, 1 to 53, four days) as a
    DuckDB expression of the column x."""
    monday_first = bool(mode & 1)
    four_days = monday_first != bool(mode & 4)  # else week 1 starts on the year's first start day
    one_to_53 = with_year or bool(mode & 2)

    def weekday(day: str) -> str:  # days since the week's start
        return f"(isodow({day}) - 1)" if monday_first else f"dayofweek({day})"

    def first_week(year_start: str) -> str:
        gone = weekday(year_start)
        if four_days:  # the week holding January 1st if four of its days are in the year
            shift = f"CASE WHEN {gone} <= 3 THEN -{gone} ELSE 7 - {gone} END"
        else:
            shift = f"(7 - {gone}) % 7"
        return f"(CAST({year_start} AS DATE) + CAST({shift} AS INTEGER))"

    def weeks_since(start: str) -> str:
        return f"(date_diff('day', {start}, x) // 7 + 1)"

    year_start = "date_trunc('year', x)"
    this_year = first_week(year_start)
    last_year = first_week(f"({year_start} - INTERVAL 1 YEAR)")
    next_year = first_week(f"({year_start} + INTERVAL 1 YEAR)")
    if not one_to_53:
        text = f"CASE WHEN x < {this_year} THEN 0 ELSE {weeks_since(this_year)} END"
    elif not with_year:
        text = (
            f"CASE WHEN x < {this_year} THEN {weeks_since(last_year)} "
            f"WHEN x >= {next_year} THEN 1 ELSE {weeks_since(this_year)} END"
        )
    else:
        text = (
            f"CASE WHEN x < {this_year} THEN (year(x) - 1) * 100 + {weeks_since(last_year)} "
            f"WHEN x >= {next_year} THEN (year(x) + 1) * 100 + 1 "
            f"ELSE year(x) * 100 + {weeks_since(this_year)} END"
        )
    return sqlglot.parse_one(text, read="duckdb")


DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _conv(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """MySQL's CONV(n, from_base, to_base): n's digits in from_base (read up to the first that is
    none) written in to_base, as 64-bit unsigned, or signed if to_base is negative; NULL for a
    base outside 2 to 36. Bases must be integer constants."""
    arguments = _arguments(node)
    if len(arguments) != 3:
        return node
    value, *bases = arguments
    numbers = [_signed_integer(base) for base in bases]
    if None in numbers:
        raise QueryError(ErrorCode.NOT_SUPPORTED_YET, "CONV's bases must be integer constants")
    source, target = numbers
    if not (2 <= abs(source) <= 36 and 2 <= abs(target) <= 36):
        return exp.null()
    return _filled(_conv_tree(abs(source), target), value)


@functools.cache
def _conv_tree(source: int, target: int) -> exp.Expression:
    """CONV from base source to base target as a DuckDB expression of the column x."""
    return sqlglot.parse_one(_conv_sql(source, target), read="duckdb")


def _conv_sql(source: int, target: int) -> str:
    text = "upper(ltrim(CAST(x AS VARCHAR)))"
    digits = f"regexp_extract({text}, '^-?([{DIGITS[:source]}]*)', 1)"
    read = (
        f"list_reduce(list_transform(string_split({digits}, ''), "
        f"lambda d: CAST(greatest(instr('{DIGITS}', d) - 1, 0) AS HUGEINT)), "
        f"lambda a, d: least(a * {source} + d, {UNSIGNED_64 - 1}), CAST(0 AS HUGEINT))"
    )
    signed = f"CASE WHEN starts_with({text}, '-') THEN -{read} ELSE {read} END"
    powers = []
    power = 1
    while power < UNSIGNED_64:
        powers.append(str(power))
        power *= abs(target)

    def written(number: str) -> str:  # its digits, most significant first, no leading zeros
        digits = (
            f"list_transform([{', '.join(powers)}], lambda p: substr('{DIGITS}', "
            f"CAST(({number}) // p % {abs(target)} AS INTEGER) + 1, 1))"
        )
        return f"coalesce(nullif(ltrim(array_to_string(list_reverse({digits}), ''), '0'), ''), '0')"

    if target > 0:  # a negative number as its 64-bit two's complement
        return f"CASE WHEN x IS NOT NULL THEN {written(f'(({signed}) + {UNSIGNED_64}) % {UNSIGNED_64}')} END"
    sign = f"CASE WHEN ({signed}) < 0 THEN '-' ELSE '' END"
    return f"CASE WHEN x IS NOT NULL THEN {sign} || {written(f'abs({signed})')} END"


def _signed_integer(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Neg) and _is_integer(node.this):
        return -int(node.this.this)
    return int(node.this) if _is_integer(node) else None


def _time(node: exp.Time, time: StatementTime) -> exp.Expression:
    """MySQL's TIME(x): the time of day of a DATETIME or of its text, NULL if x is none."""
    arguments = _arguments(node)
    if len(arguments) != 1:
        return node
    return exp.TryCast(this=arguments[0], to=exp.DataType.build("TIME"))


def _made_text_within_limit(length: Callable[[exp.Expression], exp.Expression], told: str):
    """REPEAT, SPACE, LPAD, RPAD and REPLACE make a text as long as they are told: NULL where it
    would be longer than max_allowed_packet, as MySQL answers (DuckDB would make it, outside its
    memory limit). A text made from a row's values is made for a batch of rows at once: it is
    NULL past the share of the query's memory (exec_mem_limit) one row of a batch has. The
    argument that tells the length (told) is made NULL, which makes the function's value NULL:
    DuckDB works a constant out before the query, whatever a CASE around it would choose."""

    def rewrite(node: exp.Expression, time: StatementTime) -> exp.Expression:
        limit = time.max_text_bytes if _made_once(node) else time.max_row_text_bytes
        if _within_as_written(node, limit):
            return node
        within, bound = _arguments_by_name(node)  # each read twice: worked out once
        made = exp.cast(length(within), exp.DataType.Type.DOUBLE)
        too_long = exp.GT(this=made, expression=exp.Literal.number(limit))
        size = within.args[told].copy()
        within.set(told, exp.Case(ifs=[exp.If(this=too_long, true=exp.null())], default=size))
        return _worked_out_once(bound, within) if bound else within

    return rewrite


def _arguments_by_name(node: exp.Expression) -> tuple[exp.Expression, list]:
    """A copy of node with each argument that is more than a name or a constant read as a
    column, and those arguments by the columns' names (for _worked_out_once): taken out of
    node, not copied (node is replaced by what they go into)."""
    bound = []
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression) and not _cheap(value):
            name = f"a_{key}"
            value.replace(exp.column(name))
            bound.append((name, value))
    return node.copy(), bound


def _within_as_written(node: exp.Expression, limit: int) -> bool:
    """Whether node's text is within limit whatever its rows hold, as written: LPAD and RPAD to
    a constant length within it, REPLACE of a constant by a constant no longer (its text is never
    longer than the text it is given)."""
    if isinstance(node, exp.Pad):
        told = node.expression
        return _is_integer(told) and int(told.this) <= limit
    if isinstance(node, exp.Replace):
        found, put = node.expression, node.args.get("replacement")
        if _is_string(found) and _is_string(put):
            return len(put.this.encode()) <= len(found.this.encode())
    return False


def _made_once(node: exp.Expression) -> bool:
    """Whether node's value is the same for every row (DuckDB makes it once): no column in it
    but a lambda's parameter (a value worked out once, _worked_out_once)."""
    parameters = {
        identifier.name
        for lambda_ in node.find_all(exp.Lambda)
        for identifier in lambda_.expressions
    }
    return not any(
        isinstance(part, ROW_VALUES)
        and not (isinstance(part, exp.Column) and (part.table or part.name) in parameters)
        for part in node.walk()
    )


ROW_VALUES = (exp.Column, exp.Rand, exp.Uuid, exp.Query, exp.Subquery, exp.Placeholder)


def _repeated_length(node: exp.Repeat) -> exp.Expression:
    text = exp.cast(node.this.copy(), exp.DataType.Type.VARCHAR)
    return exp.Mul(this=_function("STRLEN", text), expression=node.args["times"].copy())


def _replaced_length(node: exp.Replace) -> exp.Expression:
    """REPLACE(s, from, to)'s length: s's, and to's less from's for each time from is in s (found
    by taking each out, which only shortens s)."""
    text, found, put = (
        exp.cast(node.args[key].copy(), exp.DataType.Type.VARCHAR)
        for key in ("this", "expression", "replacement")
    )
    without = _function("REPLACE", text.copy(), found.copy(), exp.Literal.string(""))
    taken = exp.Sub(this=_function("STRLEN", text.copy()), expression=_function("STRLEN", without))
    times = exp.IntDiv(this=exp.paren(taken), expression=_function("STRLEN", found.copy()))
    grown = exp.Sub(this=_function("STRLEN", put), expression=_function("STRLEN", found))
    return exp.Add(
        this=_function("STRLEN", text), expression=exp.Mul(this=times, expression=exp.paren(grown))
    )


def _date(node: exp.Expression) -> exp.Expression:
    return exp.cast(_timestamp(node), exp.DataType.Type.DATE)


FIRST_DAY_NUMBER = 366  # TO_DAYS('0001-01-01')
LAST_DAY_NUMBER = 3_652_424  # TO_DAYS('9999-12-31')
_DAY_ONE = exp.cast(exp.Literal.string("0001-01-01"), exp.DataType.Type.DATE)


UNSIGNED_64_TEXT = str(2**64)
# MySQL's functions of one argument that DuckDB lacks or answers otherwise, as DuckDB
# expressions of the column `x`, which stands for the argument.
ONE_ARGUMENT_FUNCTIONS = {
    "ORD": (
        "CASE WHEN CAST(x AS VARCHAR) = '' THEN 0 "
        "ELSE CAST('0x' || hex(encode(left(CAST(x AS VARCHAR), 1))) AS BIGINT) END"
    ),
    "OCT": f"printf('%o', ((CAST(x AS HUGEINT) % {UNSIGNED_64_TEXT}) + {UNSIGNED_64_TEXT}) "
    f"% {UNSIGNED_64_TEXT})",
    "QUOTE": (
        "CASE WHEN x IS NULL THEN 'NULL' ELSE chr(39) || replace(replace(replace(replace("
        "CAST(x AS VARCHAR), chr(92), chr(92) || chr(92)), chr(39), chr(92) || chr(39)), "
        "chr(0), chr(92) || '0'), chr(26), chr(92) || 'Z') || chr(39) END"
    ),
    # a.b.c.d; a shorter a.b.c or a.b or a gives its last part the low bytes left over.
    "INET_ATON": (
        "CASE WHEN regexp_full_match(CAST(x AS VARCHAR), '[0-9]{1,3}([.][0-9]{1,3}){0,3}') "
        "THEN list_reduce(list_transform(string_split(CAST(x AS VARCHAR), '.'), "
        "(p, i) -> CAST(TRY_CAST(p AS UTINYINT) AS BIGINT) * CASE WHEN i = "
        "len(string_split(CAST(x AS VARCHAR), '.')) THEN 1 ELSE CAST(pow(256, 4 - i) AS BIGINT) "
        "END), (a, b) -> a + b) END"
    ),
    # CRC-32 (zlib's) of the text's UTF-8 bytes, a bit at a time
    "CRC32": (
        "xor(list_reduce(list_transform(range(0, strlen(hex(encode(CAST(x AS VARCHAR)))), 2), "
        "lambda i: CAST('0x' || substr(hex(encode(CAST(x AS VARCHAR))), i + 1, 2) AS BIGINT)), "
        "lambda crc, b: list_reduce(range(8), lambda c, k: xor(c >> 1, "
        "CASE WHEN c & 1 = 1 THEN 3988292384 ELSE 0 END), xor(crc, b)), 4294967295), 4294967295)"
    ),
    "OCTET_LENGTH": "strlen(CAST(x AS VARCHAR))",
    "BIT_LENGTH": "strlen(CAST(x AS VARCHAR)) * 8",
    "JSON_UNQUOTE": (
        "CASE WHEN CAST(x AS VARCHAR) LIKE '\"%\"' AND json_valid(CAST(x AS VARCHAR)) "
        "THEN json_extract_string(CAST(x AS VARCHAR), '$') ELSE CAST(x AS VARCHAR) END"
    ),
    "JSON_VALID": "json_valid(CAST(x AS VARCHAR))",
    "JSON_QUOTE": "CAST(to_json(CAST(x AS VARCHAR)) AS VARCHAR)",
    # an object's keys (an array, answered as its text: MySQL's ["a", "b"]); NULL for others
    "JSON_KEYS": (
        "CASE WHEN json_type(CAST(x AS VARCHAR)) = 'OBJECT' THEN json_keys(CAST(x AS VARCHAR)) END"
    ),
    "INET_NTOA": (
        "CASE WHEN x BETWEEN 0 AND 4294967295 THEN concat_ws('.', CAST(x AS BIGINT) // 16777216, "
        "CAST(x AS BIGINT) // 65536 % 256, CAST(x AS BIGINT) // 256 % 256, CAST(x AS BIGINT) % 256) END"
    ),
}


def _filled(
    template: exp.Expression,
    x: exp.Expression | None = None,
    *,
    per_row: bool = True,
    **more: exp.Expression,
) -> exp.Expression:
    """A copy of a DuckDB expression of the columns x (and those named in more) with the values
    given in their places; a value the template reads more than once that is more than a name
    or a constant is worked out once (_worked_out_once), not copied into each place. An
    aggregate's template (per_row False) has each value copied: bound outside the aggregate, a
    row's value would be read once for the whole group."""
    values = dict(more) if x is None else {"x": x, **more}
    filled = template.copy()
    uses: dict[str, list[exp.Column]] = {}
    for column in filled.find_all(exp.Column):
        if column.name in values and not column.table:
            uses.setdefault(column.name, []).append(column)
    bound = []
    for name, columns in uses.items():
        value = values[name]
        if per_row and len(columns) > 1 and not _cheap(value):
            for column in columns:
                column.replace(exp.column(name))
            bound.append((name, value))
        else:
            for column in columns:
                column.replace(value.copy())
    return _worked_out_once(bound, filled) if bound else filled


# list_transform(...)[1], its index said to be DuckDB's own (offset 1): sqlglot would move it
# to 0-based and back, logging each move
_BOUND = exp.Bracket(
    this=sqlglot.parse_one("list_transform([v], LAMBDA p : b)", read="duckdb"),
    expressions=[exp.Literal.number(1)],
    offset=1,
)


CHEAP_NODES = 16  # a constant of no more nodes is copied into each place it is read


def _cheap(value: exp.Expression) -> bool:
    """Whether a copy of value in each place it is read costs little: a name, or a small
    constant (DuckDB works it out before the query; some of its functions take only those)."""
    if isinstance(value, exp.Column | exp.Literal | exp.Null | exp.Boolean | exp.Placeholder):
        return True
    nodes = list(itertools.islice(value.walk(), CHEAP_NODES + 1))
    return len(nodes) <= CHEAP_NODES and not any(isinstance(n, ROW_VALUES) for n in nodes)


def _worked_out_once(values: list[tuple[str, exp.Expression]], body: exp.Expression):
    """body, which reads each value as a column of its name, with the values worked out once:
    the fields of a struct a DuckDB lambda takes. A function that reads its argument twice
    would otherwise copy it twice at each depth of nesting: a tree, and work, of 2^depth."""
    names = {name for name, _ in values}
    depth = sum(1 for _ in body.find_all(exp.Lambda))
    depth += sum(1 for _, value in values for _ in value.find_all(exp.Lambda))
    parameter = f"quire_bound_{depth}"  # not the name of a lambda around or within it
    for column in body.find_all(exp.Column):
        if column.name in names and not column.table:
            column.set("table", exp.to_identifier(parameter))
    fields = [
        exp.PropertyEQ(this=exp.to_identifier(name), expression=value) for name, value in values
    ]
    bound = _BOUND.copy()
    lambda_ = bound.find(exp.Lambda)
    lambda_.set("expressions", [exp.to_identifier(parameter)])
    next(c for c in bound.find_all(exp.Column) if c.name == "v").replace(
        exp.Struct(expressions=fields)
    )
    lambda_.this.replace(body)
    return bound


def _text_within_limit(longest: Callable[[list[exp.Expression]], exp.Expression], then=None):
    """HEX, TO_BASE64, QUOTE, CONCAT and CONCAT_WS make a text longer than what they are given:
    NULL where it would be longer than max_allowed_packet (a text made from a row's values: its
    share of exec_mem_limit, as REPEAT's), told by their arguments' lengths before it is made
    (longest: the greatest length from theirs). Each argument is worked out once, so nesting
    them grows neither the query nor the text past the limit. then: the function's own rewrite."""

    def rewrite(node: exp.Expression, time: StatementTime) -> exp.Expression:
        arguments = _text_arguments(node)
        if not arguments:
            return node
        limit = time.max_text_bytes if _made_once(node) else time.max_row_text_bytes
        bound, read = [], []
        for index, argument in enumerate(arguments):
            if _cheap(argument):
                read.append(argument.copy())
                continue
            name = f"a{index}"
            argument.replace(exp.column(name))  # taken out of node: moved, not copied
            bound.append((name, argument))
            read.append(exp.column(name))
        made = node.copy()  # its arguments names and constants now
        if then is not None:
            made = then(made, time)
        lengths = [
            exp.Coalesce(
                this=_function("STRLEN", exp.cast(value, exp.DataType.Type.VARCHAR)),
                expressions=[exp.Literal.number(0)],
            )
            for value in read
        ]
        too_long = exp.GT(this=longest(lengths), expression=exp.Literal.number(limit))
        guarded = exp.Case(ifs=[exp.If(this=too_long, true=exp.null())], default=made)
        if not bound:
            return guarded
        # a text, said so: a function of it need not ask its type (LENGTH would: x thrice)
        return exp.cast(_worked_out_once(bound, guarded), exp.DataType.Type.VARCHAR, copy=False)

    return rewrite


def _arguments_once(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """A function sqlglot writes for DuckDB reading an argument more than once (LENGTH of a
    value of unknown type: CASE TYPEOF(x) ... x ... x; INITCAP, REGEXP_INSTR, MONTHS_BETWEEN):
    its arguments worked out once, not copied, and so not 3^depth times nested."""
    copy, bound = _arguments_by_name(node)
    return _worked_out_once(bound, copy) if bound else node


ARGUMENTS_READ_AGAIN = ("LENGTH", "INITCAP", "REGEXP_INSTR", "MONTHS_BETWEEN")


def _length(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """LENGTH(x): its bytes (CHAR_LENGTH, the same node but not binary, its characters)."""
    if isinstance(node, exp.Length) and node.args.get("binary"):
        return _filled(_TEMPLATE_TREES["BYTE_LENGTH"], node.this)
    return _arguments_once(node, time)


def _text_arguments(node: exp.Expression) -> list[exp.Expression]:
    """The texts a function joins or converts: its list of arguments (CONCAT's), or its one."""
    if node.expressions:
        return list(node.expressions)
    return [node.this] if isinstance(node.this, exp.Expression) else []


def _sum(lengths: list[exp.Expression]) -> exp.Expression:
    total = lengths[0]
    for length in lengths[1:]:
        total = exp.Add(this=total, expression=length)
    return total


def _times(factor: int, plus: int = 0):
    return lambda lengths: exp.Add(
        this=exp.Mul(this=exp.paren(_sum(lengths)), expression=exp.Literal.number(factor)),
        expression=exp.Literal.number(plus),
    )


def _separated(lengths: list[exp.Expression]) -> exp.Expression:
    """CONCAT_WS(separator, a, b, ...): the separator between each two, the texts."""
    separators = exp.Mul(this=lengths[0], expression=exp.Literal.number(max(len(lengths) - 2, 0)))
    return exp.Add(
        this=separators, expression=_sum(lengths[1:]) if len(lengths) > 1 else lengths[0]
    )


MAX_TIME_SECONDS = 838 * 3600 + 59 * 60 + 59  # MySQL's TIME goes to 838:59:59
TIME_TEXT = r"-?[0-9]+:[0-9]{1,2}(:[0-9]{1,2}(\.[0-9]+)?)?"  # MySQL's TIME: past 24 h, negative


def _time_seconds(x: str) -> str:
    """The seconds of x read as MySQL reads a TIME: `[-]h:mm[:ss[.f]]` (any hours; DuckDB's
    TIME stops at 24), else the time of a datetime; NULL for neither."""
    text = f"trim(CAST({x} AS VARCHAR))"
    part = lambda n: f"split_part({text}, ':', {n})"  # noqa: E731
    return (
        f"CASE WHEN regexp_full_match({text}, '{TIME_TEXT}') THEN "
        f"(CASE WHEN starts_with({text}, '-') THEN -1 ELSE 1 END) * "
        f"(abs(CAST({part(1)} AS BIGINT)) * 3600 + CAST({part(2)} AS BIGINT) * 60 "
        f"+ coalesce(TRY_CAST({part(3)} AS DOUBLE), 0)) "
        f"ELSE epoch(TRY_CAST({text} AS TIME)) END"
    )


TEMPLATES = {
    # a value's bytes: a BLOB's own, another's text in UTF-8 (AES_ENCRYPT's and AES_DECRYPT's)
    "BYTES": "CASE typeof(x) WHEN 'BLOB' THEN CAST(x AS BLOB) ELSE encode(CAST(x AS VARCHAR)) END",
    # a text split at d, refused past n elements (a row's share of the query's memory)
    "SPLIT_WITHIN_LIMIT": (
        "CASE WHEN CASE WHEN d = '' THEN length(x) ELSE (strlen(x) - strlen(replace(x, d, ''))) "
        "// strlen(d) + 1 END > n THEN error('split_by_string makes at most ' || n || "
        "' parts of a row (exec_mem_limit / 2048 / 16)') ELSE string_split(x, d) END"
    ),
    "NUMBERS_WITHIN_LIMIT": (
        "CASE WHEN x > n THEN error('explode_numbers makes at most ' || n || "
        "' numbers a row (exec_mem_limit / 2048 / 16)') ELSE range(x) END"
    ),
    # the members of an array or object, 1 for another value (x: JSON text or a JSON value)
    "JSON_LENGTH": (
        "CASE json_type(x) WHEN 'ARRAY' THEN json_array_length(x) WHEN 'OBJECT' THEN "
        "len(json_keys(x)) ELSE CASE WHEN x IS NULL THEN NULL ELSE 1 END END"
    ),
    # MySQL's and Doris's LENGTH: bytes (sqlglot's DuckDB LENGTH of a text counts characters)
    "BYTE_LENGTH": (
        "CASE typeof(x) WHEN 'BLOB' THEN octet_length(CAST(x AS BLOB)) "
        "ELSE strlen(CAST(x AS VARCHAR)) END"
    ),
    "SUBSTRING_INDEX": (
        "CASE WHEN x IS NULL OR d IS NULL OR n IS NULL THEN NULL WHEN n = 0 OR d = '' THEN '' "
        "WHEN n > 0 THEN array_to_string(list_slice(string_split(x, d), 1, n), d) "
        "ELSE array_to_string(list_slice(string_split(x, d), n, -1), d) END"
    ),
    # x seconds as a duration (an INTERVAL, answered as MySQL's TIME) within MySQL's TIME range
    "SEC_TO_TIME": (
        "to_microseconds(CAST(round(CASE WHEN x < 0 THEN -1 ELSE 1 END * CASE WHEN "
        f"abs(CAST(x AS DOUBLE)) > {MAX_TIME_SECONDS} THEN {MAX_TIME_SECONDS} "
        "ELSE abs(CAST(x AS DOUBLE)) END * 1000000) AS BIGINT))"
    ),
    "TIME_TO_SEC": f"CAST(trunc({_time_seconds('x')}) AS BIGINT)",
    "DURATION_TO_SEC": "CAST(trunc(epoch(x)) AS BIGINT)",
    "TIMEDIFF_SECONDS": (
        "coalesce(epoch(TRY_CAST(CAST(x AS VARCHAR) AS TIMESTAMP)) "
        "- epoch(TRY_CAST(CAST(y AS VARCHAR) AS TIMESTAMP)), "
        f"{_time_seconds('x')} - {_time_seconds('y')})"
    ),
    # a period YYMM or YYYYMM as a count of months (YY below 70 is 20YY, as in MySQL)
    "PERIOD_MONTHS": (
        "(CASE WHEN x // 100 < 70 THEN x // 100 + 2000 WHEN x // 100 < 100 THEN x // 100 + 1900 "
        "ELSE x // 100 END) * 12 + x % 100"
    ),
    "GET_JSON_STRING": "CASE WHEN json_valid(x) THEN json_extract_string(x, p) END",
    # a time of day (or the time of a datetime) on a day, for DATE_FORMAT's specifiers
    "TIME_OF_DAY": "DATE '2000-01-01' + TRY_CAST(CAST(x AS VARCHAR) AS TIME)",
}
MYSQL = MySQL()  # the dialect a format of MySQL's specifiers is read with
MONTHS_OF_PERIOD = f"({TEMPLATES['PERIOD_MONTHS']}) - 1 + n"  # months since year 0, n added
# PERIOD_ADD(x, n): the period YYYYMM n months after x
TEMPLATES["PERIOD_ADD"] = f"({MONTHS_OF_PERIOD}) // 12 * 100 + ({MONTHS_OF_PERIOD}) % 12 + 1"
INTEGER_JSON = ("BIGINT", "UBIGINT")
JSON_NUMBERS = {  # Doris's getter: the type it answers, the JSON value types it reads
    "GET_JSON_INT": ("INTEGER", INTEGER_JSON),
    "GET_JSON_BIGINT": ("BIGINT", INTEGER_JSON),
    "GET_JSON_DOUBLE": ("DOUBLE", (*INTEGER_JSON, "DOUBLE")),
}
# DATE_FORMAT's specifiers strftime has none of, as sqlglot leaves them (MySQL's %u made %W):
# each its DuckDB expression of the datetime x
_SUNDAY_WEEK = "CAST(strftime(x, '%U') AS INTEGER)"  # MySQL's week mode 0 (0..53)
_SUNDAY_WEEK_BEFORE = "CAST(strftime(x - INTERVAL (dayofyear(x)) DAY, '%U') AS INTEGER)"
_JANUARY_FIRST_DAY = "(isodow(date_trunc('year', x)) - 1)"  # Monday 0 .. Sunday 6
DATE_FORMAT_SPECIFIERS = {
    "%D": "CAST(day(x) AS VARCHAR) || CASE WHEN day(x) IN (11, 12, 13) THEN 'th' "
    "WHEN day(x) % 10 = 1 THEN 'st' WHEN day(x) % 10 = 2 THEN 'nd' WHEN day(x) % 10 = 3 "
    "THEN 'rd' ELSE 'th' END",
    "%v": "strftime(x, '%V')",  # ISO's week (mode 3); sqlglot leaves MySQL's %v as it is
    # Sunday-first weeks 1..53 (mode 2): the days before the first Sunday are the last week
    # of the year before, whose year %X is
    "%V": f"lpad(CAST(CASE WHEN {_SUNDAY_WEEK} = 0 THEN {_SUNDAY_WEEK_BEFORE} "
    f"ELSE {_SUNDAY_WEEK} END AS VARCHAR), 2, '0')",
    "%X": f"CAST(CASE WHEN {_SUNDAY_WEEK} = 0 THEN year(x) - 1 ELSE year(x) END AS VARCHAR)",
    # MySQL's %u: Monday-first weeks 0..53, week 1 the first with 4 days of the year (mode 1)
    "%W": f"lpad(CAST((dayofyear(x) - 1 + {_JANUARY_FIRST_DAY}) // 7 + CASE WHEN "
    f"{_JANUARY_FIRST_DAY} <= 3 THEN 1 ELSE 0 END AS VARCHAR), 2, '0')",
}
TEMPLATES.update({f"DATE_FORMAT{key}": value for key, value in DATE_FORMAT_SPECIFIERS.items()})
TEMPLATES.update(
    {
        getter: f"CASE WHEN json_valid(x) AND json_type(x, p) IN ({', '.join(map(repr, read))}) "
        f"THEN TRY_CAST(json_extract_string(x, p) AS {answered}) END"
        for getter, (answered, read) in JSON_NUMBERS.items()
    }
)
_TEMPLATE_TREES = {
    name: sqlglot.parse_one(text, read="duckdb")
    for name, text in {**ONE_ARGUMENT_FUNCTIONS, **TEMPLATES}.items()
}
# the distinct elements of the list x, in the order they first come (DuckDB's list_distinct
# keeps no order and drops NULL)
_FIRST_OF_EACH = "list_filter(x, lambda e, i: list_position(x, e) = i)"
# the words of a text as Doris's english and unicode parsers make them: lower case letters and
# digits, split at anything else
_WORDS = "list_filter(string_split_regex(lower({}), '[^\\pL\\pN]+'), lambda w: w <> '')"
_PHRASE = "' ' || array_to_string({}, ' ') || ' '"
# Doris's BITMAP and HLL values are the engine's sorted lists of distinct UBIGINTs (an HLL's
# are its values' hashes: its cardinality is exact, where Doris's is an estimate)
_SET = "list_sort(list_distinct({}))"
_UNION = _SET.format("flatten(list(x))")
_MINUS = "list_filter({}, lambda v: NOT list_contains({}, v))"
_AND, _OR = "list_sort(list_intersect(x, y))", _SET.format("list_concat(x, y)")
_XOR = f"list_sort(list_concat({_MINUS.format('x', 'y')}, {_MINUS.format('y', 'x')}))"
_EMPTY = "CAST([] AS UBIGINT[])"
BITMAP_FUNCTIONS: dict[str, dict[int, str]] = {
    "TO_BITMAP": {
        1: "CASE WHEN TRY_CAST(x AS UBIGINT) IS NOT NULL THEN [TRY_CAST(x AS UBIGINT)] END"
    },
    "BITMAP_HASH": {  # MURMUR_HASH3_32 of the text, unsigned
        1: "CASE WHEN x IS NOT NULL THEN [CAST((CAST(quire_murmur_hash3_32(CAST(x AS VARCHAR), "
        f"{hashes.MURMUR3_32_SEED}) AS BIGINT) + 4294967296) % 4294967296 AS UBIGINT)] END"
    },
    "BITMAP_FROM_STRING": {
        1: "CASE WHEN list_bool_and(list_transform(string_split(x, ','), "
        "lambda t: TRY_CAST(trim(t) AS UBIGINT) IS NOT NULL)) OR trim(x) = '' THEN "
        + _SET.format(
            "list_transform(list_filter(string_split(x, ','), lambda t: trim(t) <> ''), "
            "lambda t: CAST(trim(t) AS UBIGINT))"
        )
        + " END"
    },
    "BITMAP_FROM_ARRAY": {
        1: _SET.format(
            "list_transform(list_filter(x, lambda v: v IS NOT NULL), lambda v: CAST(v AS UBIGINT))"
        )
    },
    "BITMAP_TO_STRING": {1: "array_to_string(x, ',')"},
    "BITMAP_TO_ARRAY": {1: "CAST(x AS BIGINT[])"},
    "BITMAP_COUNT": {1: "coalesce(len(x), 0)"},
    "BITMAP_EMPTY": {0: _EMPTY},
    "BITMAP_MIN": {1: "list_min(x)"},
    "BITMAP_MAX": {1: "list_max(x)"},
    "BITMAP_CONTAINS": {2: "list_contains(x, TRY_CAST(y AS UBIGINT))"},
    "BITMAP_HAS_ANY": {2: "list_has_any(x, y)"},
    "BITMAP_HAS_ALL": {2: "list_has_all(x, y)"},
    "BITMAP_AND": {2: _AND, 3: f"list_sort(list_intersect({_AND}, z))"},
    "BITMAP_OR": {2: _OR, 3: _SET.format("list_concat(list_concat(x, y), z)")},
    "BITMAP_XOR": {2: _XOR},
    "BITMAP_NOT": {2: _MINUS.format("x", "y")},
    "BITMAP_AND_NOT": {2: _MINUS.format("x", "y")},
    "BITMAP_AND_COUNT": {2: f"coalesce(len({_AND}), 0)"},
    "BITMAP_OR_COUNT": {2: f"coalesce(len({_OR}), 0)"},
    "BITMAP_XOR_COUNT": {2: f"coalesce(len({_XOR}), 0)"},
    "BITMAP_AND_NOT_COUNT": {2: f"coalesce(len({_MINUS.format('x', 'y')}), 0)"},
    "BITMAP_SUBSET_IN_RANGE": {3: "list_filter(x, lambda v: v >= y AND v < z)"},
    "BITMAP_SUBSET_LIMIT": {3: "list_slice(list_filter(x, lambda v: v >= y), 1, z)"},
    "SUB_BITMAP": {
        3: "CASE WHEN y >= 0 THEN list_slice(x, y + 1, y + z) "
        "ELSE list_slice(x, len(x) + y + 1, len(x) + y + z) END"
    },
    # aggregates
    "BITMAP_UNION": {1: _UNION},
    "BITMAP_UNION_COUNT": {1: "len(list_distinct(flatten(list(x))))"},
    "BITMAP_UNION_INT": {1: "count(DISTINCT x)"},
    "BITMAP_INTERSECT": {  # x aggregated once (a lambda may not read it): NULL for no set
        1: "list_extract(list_transform([list_filter(list(x), lambda b: b IS NOT NULL)], "
        "lambda s: CASE WHEN len(s) > 0 THEN "
        "list_sort(list_reduce(s, lambda a, b: list_intersect(a, b))) END), 1)"
    },
    "HLL_HASH": {1: "CASE WHEN x IS NOT NULL THEN [hash(CAST(x AS VARCHAR))] END"},
    "HLL_EMPTY": {0: _EMPTY},
    "HLL_CARDINALITY": {1: "coalesce(len(x), 0)"},
    "HLL_UNION": {1: _UNION},
    "HLL_RAW_AGG": {1: _UNION},
    "HLL_UNION_AGG": {1: "len(list_distinct(flatten(list(x))))"},
}

# every BITMAP and HLL function passes the engine's allow-list (BITMAP_COUNT: sqlglot's own)
assert set(BITMAP_FUNCTIONS) - {"BITMAP_COUNT"} == set(BITMAP_ANONYMOUS), "allow_list drifted"


NULL_MAP_KEY = "MAP keys can not be NULL"


def _let(name: str, value: str, body: str) -> str:
    """body, which reads value as the lambda parameter name: value worked out once."""
    return f"list_extract(list_transform([{value}], lambda {name}: {body}), 1)"


def _masked(text: str) -> str:
    """Doris's MASK: upper case letters X, lower case x, digits n (ASCII ones only)."""
    return (
        f"regexp_replace(regexp_replace(regexp_replace({text}, '[A-Z]', 'X', 'g'), '[a-z]', 'x', "
        "'g'), '[0-9]', 'n', 'g')"
    )


# MASK_FIRST_N(s, n) and MASK_LAST_N(s, n) mask n bytes of s: MASK keeps each byte where it is,
# so the bytes of the masked text and of the text are spliced, as hex digits
_TEXT_HEX = "hex(encode(CAST(x AS VARCHAR)))"
_MASKED_HEX = f"hex(encode({_masked('CAST(x AS VARCHAR)')}))"
_HEX_DIGITS = "CAST(y AS BIGINT) * 2"


def _mask_part(function: str, spliced: str) -> str:
    """The spliced hex digits as text; a negative count of bytes refused, as Doris does."""
    refused = (
        f"error('function {function} only accept non-negative input for 2nd argument but got ' "
        "|| y)"
    )
    return f"CASE WHEN y < 0 THEN {refused} ELSE decode(unhex({spliced})) END"


def _unique_map(keys: str, values: str) -> str:
    """A map of the keys and values, a key given twice keeping its last value, where it last
    comes (Doris's); a NULL key is refused (DuckDB's maps have none)."""
    last = (
        "NOT list_contains(list_slice(map_keys, i + 1, len(map_keys)), list_extract(map_keys, i))"
    )
    made = (
        "map(list_transform(kept, lambda i: list_extract(map_keys, i)), "
        "list_transform(kept, lambda i: list_extract(map_values, i)))"
    )
    kept = _let("kept", f"list_filter(range(1, len(map_keys) + 1), lambda i: {last})", made)
    checked = (
        "CASE WHEN list_count(map_keys) < len(map_keys) "
        f"THEN error('{NULL_MAP_KEY}') ELSE {kept} END"
    )
    return _let("map_keys", keys, _let("map_values", values, checked))


def _str_to_map(pairs: str, between: str) -> str:
    """Doris's STR_TO_MAP(x, pairs, between): x split at each pairs (one that ends x makes no
    empty pair; an empty one splits between characters), each pair at its first between: the
    key and the value, NULL where there is no between."""
    split = f"CASE WHEN x = '' THEN [''] ELSE string_split(x, {pairs}) END"
    pieces = (
        "list_slice(parts, 1, len(parts) - CASE WHEN len(parts) > 1 AND "
        "list_extract(parts, -1) = '' THEN 1 ELSE 0 END)"
    )
    at = f"strpos(piece, {between})"
    keys = (
        f"list_transform(pieces, lambda piece: CASE WHEN {between} = '' THEN left(piece, 1) "
        f"WHEN {at} = 0 THEN piece ELSE left(piece, {at} - 1) END)"
    )
    values = (
        f"list_transform(pieces, lambda piece: CASE WHEN piece = '' THEN NULL "
        f"WHEN {between} = '' THEN substr(piece, 2) WHEN {at} = 0 THEN NULL "
        f"ELSE substr(piece, {at} + length({between})) END)"
    )
    made = _let("pieces", _let("parts", split, pieces), _unique_map(keys, values))
    return f"CASE WHEN x IS NULL OR {pairs} IS NULL OR {between} IS NULL THEN NULL ELSE {made} END"


# Doris's REGEXP_EXTRACT_ALL(s, pattern): the first group of each match that is not empty, as
# the text ['a','b'] ('' for none)
_EXTRACTED_ALL = _let(
    "whole",
    "regexp_extract_all(CAST(x AS VARCHAR), y, 0)",
    _let(
        "found",
        "list_filter(regexp_extract_all(CAST(x AS VARCHAR), y, 1), "
        "lambda s, i: list_extract(whole, i) <> '')",
        "CASE WHEN len(found) = 0 THEN '' ELSE '[''' || "
        "array_to_string(list_transform(found, lambda s: coalesce(s, '')), ''',''') || ''']' END",
    ),
)

# 64-bit arithmetic for MURMUR_HASH3_64, on UHUGEINTs below 2^64; shifts are multiplications
# and divisions (sqlglot writes a | b >> c unbracketed, which DuckDB reads as (a | b) >> c)
_BIT_64 = 2**64


def _unsigned(value: int) -> str:
    return f"CAST({value} AS UHUGEINT)"


def _times_64(a: str, factor: int) -> str:
    return f"({a}) * {_unsigned(factor)} % {_unsigned(_BIT_64)}"


def _rotated(a: str, bits: int) -> str:
    return (
        f"(({a}) * {_unsigned(2**bits)} % {_unsigned(_BIT_64)} "
        f"+ ({a}) // {_unsigned(2 ** (64 - bits))})"
    )


def _xor_shifted(a: str) -> str:
    return f"xor({a}, {a} // {_unsigned(2**33)})"


def _mixed(block: str) -> str:
    scrambled = _times_64(_rotated("k1", 31), 0x4CF5AD432745937F)
    return _let("k1", _times_64(block, 0x87C37B91114253D5), scrambled)


def _little_endian(hex_digits: str) -> str:
    pairs = f"list_reverse(regexp_extract_all({hex_digits}, '..'))"
    return f"CAST('0x0' || array_to_string({pairs}, '') AS UHUGEINT)"


def _final_mix(h: str) -> str:
    last = _let("f3", _times_64(_xor_shifted("f2"), 0xC4CEB9FE1A85EC53), _xor_shifted("f3"))
    return _let("f1", h, _let("f2", _times_64(_xor_shifted("f1"), 0xFF51AFD7ED558CCD), last))


def _murmur_hash3_64_sql() -> str:
    """Doris's murmur_hash3_x64_64 (MurmurHash3's x64 mixing on 8-byte blocks, not the 128-bit
    one's first half) of the text x's bytes with the seed y, unsigned."""
    block = _little_endian("substr(hex_digits, i * 16 + 1, 16)")
    step = _let(
        "g", "xor(h, k)", f"({_times_64(_rotated('g', 27), 5)} + 1390208809) % {_unsigned(_BIT_64)}"
    )
    body = (
        f"list_reduce(list_transform(range(strlen(hex_digits) // 16), lambda i: {_mixed(block)}), "
        f"lambda h, k: {step}, CAST(y AS UHUGEINT))"
    )
    tail = "substr(hex_digits, strlen(hex_digits) // 16 * 16 + 1)"
    with_tail = _let(
        "b", body, f"CASE WHEN {tail} = '' THEN b ELSE xor(b, {_mixed(_little_endian(tail))}) END"
    )
    with_length = f"xor({with_tail}, CAST(strlen(hex_digits) // 2 AS UHUGEINT))"
    return _let("hex_digits", "hex(encode(x))", _final_mix(with_length))


# BIT_SHIFT_LEFT and BIT_SHIFT_RIGHT shift x's 64 bits as unsigned, 0 past them
_BITS_OF_X = f"(CAST(CAST(x AS BIGINT) AS HUGEINT) + {_BIT_64}) % {_BIT_64}"


def _signed_64(unsigned: str) -> str:
    wrapped = f"CAST(v - CASE WHEN v >= {2**63} THEN {_BIT_64} ELSE 0 END AS BIGINT)"
    return _let("v", unsigned, wrapped)


def _shifted(operator: str) -> str:
    """x's bits times (left) or divided by (right) 2^y."""
    shifted = _signed_64(f"{_BITS_OF_X} {operator} CAST(pow(2, y) AS HUGEINT) % {_BIT_64}")
    return f"CASE WHEN y < 0 OR y >= 64 THEN CASE WHEN x IS NOT NULL THEN 0 END ELSE {shifted} END"


# UUID_NUMERIC(): a random LARGEINT (128 bits of a new UUID a row)
_RANDOM_128 = _let(
    "h",
    "replace(CAST(uuid() AS VARCHAR), '-', '')",
    f"(CAST(CAST('0x' || left(h, 16) AS UBIGINT) AS HUGEINT) - {2**63}) * {_BIT_64} "
    "+ CAST('0x' || right(h, 16) AS UBIGINT)",
)

# Doris's functions as DuckDB expressions of their arguments x, y, z, by how many they take
DORIS_FUNCTIONS: dict[str, dict[int, str]] = {
    # full-text predicates, `c MATCH_ANY 'words'` (fe/sql/parser.py: with_match_functions)
    "MATCH_ANY": {2: f"list_has_any({_WORDS.format('x')}, {_WORDS.format('y')})"},
    "MATCH_ALL": {2: f"list_has_all({_WORDS.format('x')}, {_WORDS.format('y')})"},
    "MATCH_PHRASE": {
        2: f"contains({_PHRASE.format(_WORDS.format('x'))}, {_PHRASE.format(_WORDS.format('y'))})"
    },
    "MATCH_PHRASE_PREFIX": {
        2: f"contains({_PHRASE.format(_WORDS.format('x'))}, "
        f"' ' || array_to_string({_WORDS.format('y')}, ' '))"
    },
    "MATCH_REGEXP": {
        2: f"len(list_filter({_WORDS.format('x')}, lambda w: regexp_matches(w, y))) > 0"
    },
    "PMOD": {2: "((x % y) + y) % y"},
    "MASK": {1: _masked("x")},
    "MASK_FIRST_N": {
        1: _masked("CAST(x AS VARCHAR)"),
        2: _mask_part(
            "mask_first_n",
            f"left({_MASKED_HEX}, {_HEX_DIGITS}) || substr({_TEXT_HEX}, {_HEX_DIGITS} + 1)",
        ),
    },
    "MASK_LAST_N": {
        1: _masked("CAST(x AS VARCHAR)"),
        2: _mask_part(
            "mask_last_n",
            f"left({_TEXT_HEX}, greatest(strlen({_TEXT_HEX}) - {_HEX_DIGITS}, 0)) "
            f"|| right({_MASKED_HEX}, {_HEX_DIGITS})",
        ),
    },
    # Java's URLEncoder and URLDecoder (Doris's): a space is +, * is kept, ~ is encoded
    "URL_ENCODE": {
        1: "replace(replace(replace(url_encode(CAST(x AS VARCHAR)), '%2A', '*'), '~', '%7E'), "
        "'%20', '+')"
    },
    "URL_DECODE": {
        1: "CASE WHEN contains(regexp_replace(CAST(x AS VARCHAR), '%[0-9A-Fa-f]{2}', '', 'g'), '%') "
        "THEN error('URLDecoder: Illegal hex characters in escape (%) pattern: ' || x) "
        "ELSE url_decode(replace(CAST(x AS VARCHAR), '+', ' ')) END"
    },
    "STR_TO_MAP": {
        1: _str_to_map("','", "':'"),
        2: _str_to_map("y", "':'"),
        3: _str_to_map("y", "z"),
    },
    "BITAND": {2: "(x) & (y)"},
    "BITOR": {2: "(x) | (y)"},
    "BITXOR": {2: "xor(x, y)"},
    "BITNOT": {1: "~(x)"},
    "BIT_SHIFT_LEFT": {2: _shifted("*")},
    "BIT_SHIFT_RIGHT": {2: _shifted("//")},
    "UUID_NUMERIC": {0: _RANDOM_128},
    "TO_MONDAY": {1: "CAST(date_trunc('week', CAST(x AS TIMESTAMP)) AS DATE)"},
    "GROUP_BIT_OR": {1: "bit_or(x)"},
    "GROUP_BIT_AND": {1: "bit_and(x)"},
    "GROUP_BIT_XOR": {1: "bit_xor(x)"},
    "ARRAY_POSITION": {
        2: "CASE WHEN x IS NULL THEN NULL ELSE coalesce(list_position(x, y), 0) END"
    },
    "ARRAY_REMOVE": {2: "list_filter(x, lambda e: e IS DISTINCT FROM y)"},
    "ARRAY_SLICE": {
        2: "list_slice(x, y, len(x))",
        3: "list_slice(x, y, CASE WHEN y > 0 THEN y + z - 1 ELSE len(x) + y + z END)",
    },
    "ARRAY_DISTINCT": {1: _FIRST_OF_EACH},
    "ARRAY_UNION": {
        2: "CASE WHEN x IS NULL OR y IS NULL THEN NULL ELSE "
        f"{_FIRST_OF_EACH.replace('x', 'list_concat(x, y)')} END"
    },
    "ARRAY_CONCAT": {2: "CASE WHEN x IS NULL OR y IS NULL THEN NULL ELSE list_concat(x, y) END"},
    "ARRAY_INTERSECT": {2: f"list_filter({_FIRST_OF_EACH}, lambda e: list_position(y, e) > 0)"},
    "ARRAY_EXCEPT": {2: f"list_filter({_FIRST_OF_EACH}, lambda e: list_position(y, e) IS NULL)"},
    "ARRAYS_OVERLAP": {2: "list_has_any(x, y)"},
    # Doris's: an element equal to the one before it is left out
    "ARRAY_COMPACT": {1: "list_filter(x, lambda e, i: i = 1 OR e IS DISTINCT FROM x[i - 1])"},
    "ARRAY_PRODUCT": {1: "list_product(x)"},
    # JSON at a path of JSON text x (NULL where x is no JSON or the path finds nothing)
    "JSON_EXISTS_PATH": {2: "CASE WHEN json_valid(x) THEN json_exists(x, y) END"},
    "JSON_EXTRACT_STRING": {2: "CASE WHEN json_valid(x) THEN json_extract_string(x, y) END"},
    "JSON_EXTRACT_ISNULL": {
        2: "CASE WHEN json_valid(x) AND json_exists(x, y) THEN json_type(x, y) = 'NULL' END"
    },
    "JSON_EXTRACT_BOOL": {
        2: "CASE WHEN json_valid(x) AND json_type(x, y) = 'BOOLEAN' "
        "THEN CAST(json_extract_string(x, y) AS BOOLEAN) END"
    },
    **{
        f"JSON_EXTRACT_{name}": {
            2: f"CASE WHEN json_valid(x) AND json_type(x, y) IN ({', '.join(map(repr, read))}) "
            f"THEN TRY_CAST(json_extract_string(x, y) AS {answered}) END"
        }
        for name, answered, read in (
            ("INT", "INTEGER", INTEGER_JSON),
            ("BIGINT", "BIGINT", INTEGER_JSON),
            ("DOUBLE", "DOUBLE", (*INTEGER_JSON, "DOUBLE")),
        )
    },
    # Doris's names of the JSON types: int and bigint by the value's size
    "JSON_TYPE": {
        2: "CASE WHEN json_valid(x) THEN CASE json_type(x, y) WHEN 'OBJECT' THEN 'object' "
        "WHEN 'ARRAY' THEN 'array' WHEN 'NULL' THEN 'null' WHEN 'BOOLEAN' THEN 'bool' "
        "WHEN 'VARCHAR' THEN 'string' WHEN 'DOUBLE' THEN 'double' ELSE CASE "
        "WHEN abs(TRY_CAST(json_extract_string(x, y) AS HUGEINT)) <= 2147483647 THEN 'int' "
        "WHEN abs(TRY_CAST(json_extract_string(x, y) AS HUGEINT)) <= 9223372036854775807 "
        "THEN 'bigint' ELSE 'largeint' END END END"
    },
    "ARRAY_REVERSE_SORT": {1: "list_reverse_sort(x)"},
    **BITMAP_FUNCTIONS,
}
_DORIS_TREES = {
    (name, count): sqlglot.parse_one(text, read="duckdb")
    for name, forms in DORIS_FUNCTIONS.items()
    for count, text in forms.items()
}


def _doris_function(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """A function of DORIS_FUNCTIONS, its arguments in their places (as written, if it takes
    other counts of them)."""
    arguments = list(node.expressions) if isinstance(node, exp.Anonymous) else []
    if not isinstance(node, exp.Anonymous):
        for value in node.args.values():
            if isinstance(value, exp.Expression):
                arguments.append(value)
            elif isinstance(value, list):
                arguments.extend(v for v in value if isinstance(v, exp.Expression))
    tree = _DORIS_TREES.get((_name(node), len(arguments)))
    if tree is None:
        if isinstance(node, exp.Anonymous):
            raise _no_such_function(node)
        return node
    if not arguments:
        return tree.copy()
    more = dict(zip(("y", "z"), arguments[1:], strict=False))
    return _filled(tree, arguments[0], **more)


def _no_such_function(node: exp.Expression) -> QueryError:
    """A Doris function given a count of arguments it does not take: unknown, as to DuckDB."""
    return QueryError(ErrorCode.SP_DOES_NOT_EXIST, f"FUNCTION {_name(node).lower()} does not exist")


_EXTRACTED_ALL_TREE = sqlglot.parse_one(_EXTRACTED_ALL, read="duckdb")
_NOTHING_EXTRACTED_TREE = sqlglot.parse_one("CASE WHEN x IS NOT NULL THEN '' END", read="duckdb")


def _regexp_extract_all(node: exp.RegexpExtractAll, time: StatementTime) -> exp.Expression:
    """Doris's REGEXP_EXTRACT_ALL(s, pattern): '' for a pattern of no group."""
    if any(node.args.get(key) for key in ("group", "parameters", "position", "occurrence")):
        raise _no_such_function(node)
    pattern = node.expression
    if _is_string(pattern) and not _has_group(pattern.this):
        return _filled(_NOTHING_EXTRACTED_TREE, node.this)
    return _filled(_EXTRACTED_ALL_TREE, node.this, y=pattern)


def _has_group(pattern: str) -> bool:
    """Whether an RE2 pattern has a capturing group: a ( neither escaped nor in a character
    class, not (?...) unless it names the group, (?P<name>...) or (?<name>...)."""
    in_class = False
    at = 0
    while at < len(pattern):
        if pattern[at] == "\\":
            at += 2
            continue
        rest = pattern[at:]
        if in_class:
            if rest.startswith("[:") and ":]" in rest:
                at += rest.index(":]") + 1
            elif rest[0] == "]":
                in_class = False
        elif rest[0] == "[":
            in_class = True
            opening = 2 if rest.startswith("[^") else 1
            at += opening + rest[opening:].startswith("]")  # a ] first is in the class
            continue
        elif rest[0] == "(":
            named = rest.startswith(("(?P<", "(?<")) and not rest.startswith(("(?<=", "(?<!"))
            if not rest.startswith("(?") or named:
                return True
        at += 1
    return False


_UNIQUE_MAP_TREE = sqlglot.parse_one(_unique_map("x", "y"), read="duckdb")


def _map(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """Doris's MAP(k1, v1, k2, v2, ...): keys of one type and values of one type, texts if one
    is (DuckDB would read a text as a number); a key given twice keeps its last value. DuckDB's
    maps take no NULL key, Doris's do: a NULL key is refused."""
    arguments = _arguments(node)
    if len(arguments) % 2:
        raise _no_such_function(node)
    if not arguments:
        return _function("MAP")
    keys, values = arguments[0::2], arguments[1::2]
    if any(isinstance(key, exp.Null) for key in keys):
        raise QueryError(ErrorCode.NOT_SUPPORTED_YET, NULL_MAP_KEY)
    return _filled(_UNIQUE_MAP_TREE, _list_of_one_kind(keys), y=_list_of_one_kind(values))


def _list_of_one_kind(values: list[exp.Expression]) -> exp.Expression:
    if any(_is_string(value) or value.is_type(*exp.DataType.TEXT_TYPES) for value in values):
        values = [exp.cast(value, exp.DataType.Type.VARCHAR) for value in values]
    return exp.Array(expressions=values)


_MURMUR_HASH3_64_TREE = sqlglot.parse_one(_murmur_hash3_64_sql(), read="duckdb")
_SIGNED_64_TREE = sqlglot.parse_one(_signed_64("CAST(x AS HUGEINT)"), read="duckdb")


def _murmur_hash3_64(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """Doris's MURMUR_HASH3_64(s, ...): each text hashed with the hash of those before it as
    its seed (0 for the first), as a BIGINT; NULL if one is NULL."""
    texts = _arguments(node)
    if not texts:
        raise _no_such_function(node)
    hashed: exp.Expression = exp.Literal.number(0)
    for text in texts:
        text = exp.cast(text, exp.DataType.Type.VARCHAR)
        hashed = _filled(_MURMUR_HASH3_64_TREE, text, y=hashed)
    return _filled(_SIGNED_64_TREE, hashed)


def _typed_map(rewrite: Callable) -> Callable:
    """rewrite, its value said to be a map: m['k'] and ELEMENT_AT(m, 'k') read a key's value."""

    def typed(node: exp.Expression, time: StatementTime) -> exp.Expression:
        made = rewrite(node, time)
        made.type = exp.DataType.build(exp.DataType.Type.MAP)
        return made

    return typed


def _template(name: str) -> Callable[[exp.Expression], exp.Expression]:
    """The template's expression of one value x (a copy, x in its places)."""
    return lambda x: _filled(_TEMPLATE_TREES[name], x)


def _substring_index(node: exp.SubstringIndex, time: StatementTime) -> exp.Expression:
    """MySQL's SUBSTRING_INDEX(s, d, n): s up to its n-th d, or after its n-th d from the end
    for a negative n (DuckDB has none)."""
    count = node.args.get("count")
    delimiter = node.args.get("delimiter")
    if count is None or delimiter is None:
        return node
    return _filled(_TEMPLATE_TREES["SUBSTRING_INDEX"], node.this, d=delimiter, n=count)


def _with_arguments(count: int, build: Callable[..., exp.Expression]):
    """A rewrite of a function of count arguments (others are left to fail as DuckDB's)."""

    def rewrite(node: exp.Expression, time: StatementTime) -> exp.Expression:
        arguments = _arguments(node)
        return build(*arguments) if len(arguments) == count else node

    return rewrite


DURATION = "quire_duration"  # meta of the rewritten SEC_TO_TIME and TIMEDIFF: an INTERVAL


def _duration(seconds: exp.Expression) -> exp.Expression:
    duration = _filled(_TEMPLATE_TREES["SEC_TO_TIME"], seconds)
    duration.meta[DURATION] = True
    return duration


def _timediff(first: exp.Expression, second: exp.Expression) -> exp.Expression:
    """MySQL's TIMEDIFF of two DATETIMEs or two TIMEs, a duration as SEC_TO_TIME's."""
    return _duration(_filled(_TEMPLATE_TREES["TIMEDIFF_SECONDS"], first, y=second))


def _time_to_sec(value: exp.Expression) -> exp.Expression:
    """The seconds of a TIME, of a DATETIME's time, or of a duration SEC_TO_TIME or TIMEDIFF
    made (a TIME past 24 hours is a duration: DuckDB's TIME stops there)."""
    name = "DURATION_TO_SEC" if value.meta.get(DURATION) else "TIME_TO_SEC"
    return _filled(_TEMPLATE_TREES[name], value)


def _json_at(arguments: list[exp.Expression]) -> exp.Expression:
    """JSON_LENGTH's and JSON_CONTAINS's (json[, path]): the JSON, or its value at path."""
    text = exp.cast(arguments[0], exp.DataType.Type.VARCHAR)
    return text if len(arguments) == 1 else _function("json_extract", text, arguments[1])


def _json_length(node: exp.Expression, time: StatementTime) -> exp.Expression:
    arguments = _arguments(node)
    if len(arguments) not in (1, 2):
        return node
    return _filled(_TEMPLATE_TREES["JSON_LENGTH"], _json_at(arguments))


def _json_contains(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """JSON_CONTAINS(target, candidate[, path]): whether candidate is in target (at path)."""
    arguments = _arguments(node)
    if len(arguments) not in (2, 3):
        return node
    target = _json_at([arguments[0], *arguments[2:]])
    candidate = exp.cast(arguments[1], exp.DataType.Type.VARCHAR)
    return _function("json_contains", target, candidate)


# MySQL's JSON text of a value x, as its JSON_ARRAYAGG and JSON_OBJECTAGG print it: a space
# after each comma and colon of an array or object, a DECIMAL's digits as they are, a DATETIME's
# or TIME's six fractional digits; a text is a JSON string (JSON columns are texts to the engine)
_NEWLINE = "chr(10)"
_SPACED_JSON = (
    f"regexp_replace(regexp_replace(json_pretty(to_json(x)), ',' || {_NEWLINE} || ' *', ', ', "
    f"'g'), {_NEWLINE} || ' *', '', 'g')"
)
_SIX_DIGITS = (
    "CASE WHEN contains(CAST(x AS VARCHAR), '.') THEN repeat('0', 6 - length(CAST(x AS VARCHAR)) "
    "+ strpos(CAST(x AS VARCHAR), '.')) ELSE '.000000' END"
)
_JSON_TEXT = (
    "CASE WHEN x IS NULL THEN 'null' "
    "WHEN typeof(x) LIKE 'DECIMAL%' THEN CAST(x AS VARCHAR) "
    "WHEN typeof(x) LIKE 'TIMESTAMP%' OR typeof(x) = 'TIME' "
    f"THEN '\"' || CAST(x AS VARCHAR) || {_SIX_DIGITS} || '\"' "
    f"WHEN left(CAST(to_json(x) AS VARCHAR), 1) IN ('[', '{{') THEN {_SPACED_JSON} "
    "ELSE CAST(to_json(x) AS VARCHAR) END"
)
NULL_MEMBER_NAME = "JSON documents may not contain NULL member names."
ER_JSON_DOCUMENT_NULL_KEY = 3158
# MySQL's object: each key once (its last value), the keys by length in bytes, then by bytes
_MEMBERS = (
    "list_sort(list_transform(pairs, lambda p, i: {'n': strlen(p.k), 'k': p.k, 'at': -i, "
    "'v': p.v}))"
)
_LAST_OF_EACH_KEY = "list_filter(members, lambda m, i: i = 1 OR m.k <> members[i - 1].k)"
_OBJECT_TEXT = _let(
    "members",
    _MEMBERS,
    "'{' || array_to_string(list_transform("
    f"{_LAST_OF_EACH_KEY}, lambda m: CAST(to_json(m.k) AS VARCHAR) || ': ' || m.v), ', ') || '}}'",
)
_JSON_TEXT_TREE = sqlglot.parse_one(_JSON_TEXT, read="duckdb")
_JSON_ARRAYAGG_TREE = sqlglot.parse_one("'[' || string_agg(x, ', ') || ']'", read="duckdb")
_JSON_OBJECTAGG_TREE = sqlglot.parse_one(
    _let(
        "pairs",
        "list({'k': CAST(x AS VARCHAR), 'v': y})",
        "CASE WHEN list_count(list_transform(pairs, lambda p: p.k)) < len(pairs) "
        f"THEN error('{NULL_MEMBER_NAME}') ELSE {_OBJECT_TEXT} END",
    ),
    read="duckdb",
)


def _json_arrayagg(node: exp.Expression, time: StatementTime) -> exp.Expression:
    """MySQL's JSON_ARRAYAGG(x): the group's values (NULL ones as null) as a JSON array's text;
    NULL for no rows."""
    arguments = _json_aggregated(node, 1)
    return _filled(_JSON_ARRAYAGG_TREE, _filled(_JSON_TEXT_TREE, arguments[0]))


def _json_objectagg(node: exp.JSONObjectAgg, time: StatementTime) -> exp.Expression:
    """MySQL's JSON_OBJECTAGG(key, value): the group's pairs as a JSON object's text, a key
    given twice keeping its last value; a NULL key is refused; NULL for no rows."""
    pairs = node.expressions
    if len(pairs) != 1 or not isinstance(pairs[0], exp.JSONKeyValue):
        raise _json_aggregate_syntax(node, 2)
    key, value = _json_aggregated(node, 2, [pairs[0].this, pairs[0].expression])
    if isinstance(key, exp.Null):
        raise QueryError(ER_JSON_DOCUMENT_NULL_KEY, NULL_MEMBER_NAME)
    return _filled(_JSON_OBJECTAGG_TREE, key, y=_filled(_JSON_TEXT_TREE, value))


def _json_aggregated(node: exp.Expression, count: int, arguments=None) -> list[exp.Expression]:
    """The values a JSON aggregate takes: as many as MySQL's grammar has (no DISTINCT, no ORDER
    BY); not over a window (MySQL's are window functions too, Quire's not yet)."""
    arguments = _arguments(node) if arguments is None else arguments
    if len(arguments) != count or any(isinstance(a, exp.Distinct | exp.Order) for a in arguments):
        raise _json_aggregate_syntax(node, count)
    if isinstance(node.parent, exp.Window):
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET,
            f"This version of Quire doesn't yet support '{_json_aggregate_name(node)} ... OVER'",
        )
    return arguments


def _json_aggregate_syntax(node: exp.Expression, count: int) -> QueryError:
    values = "a key and a value" if count == 2 else "one value"
    return QueryError(
        ErrorCode.PARSE_ERROR,
        f"You have an error in your SQL syntax; {_json_aggregate_name(node)} takes {values} "
        "(no DISTINCT, no ORDER BY)",
    )


def _json_aggregate_name(node: exp.Expression) -> str:
    return "JSON_OBJECTAGG" if isinstance(node, exp.JSONObjectAgg) else "JSON_ARRAYAGG"


def _period_add(period: exp.Expression, months: exp.Expression) -> exp.Expression:
    return _filled(_TEMPLATE_TREES["PERIOD_ADD"], period, n=months)


def _time_format(value: exp.Expression, form: exp.Expression) -> exp.Expression:
    """MySQL's TIME_FORMAT(t, f): DATE_FORMAT's specifiers of hours, minutes and seconds, of a
    time (within a day) or of a datetime's time."""
    of_day = _filled(_TEMPLATE_TREES["TIME_OF_DAY"], value)
    return build_formatted_time(exp.TimeToStr, "mysql")([of_day, form], MYSQL)


def _period_diff(first: exp.Expression, second: exp.Expression) -> exp.Expression:
    months = _TEMPLATE_TREES["PERIOD_MONTHS"]
    return exp.Sub(
        this=exp.paren(_filled(months, first)), expression=exp.paren(_filled(months, second))
    )


def _json_value(name: str):
    """Doris's GET_JSON_STRING / _INT / _BIGINT / _DOUBLE(json, path): NULL where the text is no
    JSON, the path finds nothing or a value of another kind."""
    return lambda value, path: _filled(_TEMPLATE_TREES[name], exp.cast(value, "VARCHAR"), p=path)


def _str_to_date(node: exp.StrToDate | exp.StrToTime, time: StatementTime) -> exp.Expression:
    """NULL where the value does not fit the format, as MySQL answers; a format computed by an
    expression is handed to DuckDB as it is (sqlglot translates only a literal one). A format
    with times in it (sqlglot's StrToTime) makes a DATETIME, one without a DATE."""
    format_ = node.args.get("format")
    if format_ is None:
        raise QueryError(
            ErrorCode.WRONG_PARAMCOUNT_TO_NATIVE_FCT,
            "Incorrect parameter count in the call to native function 'STR_TO_DATE'",
        )
    if isinstance(format_, exp.Literal) and format_.is_string:
        node.set("safe", True)
        return node
    text = exp.DataType.Type.VARCHAR
    parsed = _function("TRY_STRPTIME", exp.cast(node.this, text), exp.cast(format_, text))
    made = exp.DataType.Type.DATETIME if isinstance(node, exp.StrToTime) else exp.DataType.Type.DATE
    return exp.cast(parsed, made)


def _xor(node: exp.Xor, time: StatementTime) -> exp.Expression:
    if node.expressions or node.expression is None:
        return node
    left, right = (
        exp.NEQ(this=side, expression=exp.Literal.number(0))
        for side in node.args.values()
        if isinstance(side, exp.Expression)
    )
    return exp.paren(exp.NEQ(this=exp.paren(left), expression=exp.paren(right)))


def _unhex(node: exp.Unhex, time: StatementTime) -> exp.Expression:
    if isinstance(node.this, exp.Literal) and node.this.is_string:
        return node
    node.set("this", exp.cast(node.this, exp.DataType.Type.VARCHAR))
    return node


def _json_object(node: exp.JSONObject, time: StatementTime) -> exp.Expression:
    for pair in node.expressions:
        key = pair.this
        if isinstance(pair, exp.JSONKeyValue) and not (
            isinstance(key, exp.Literal) and key.is_string
        ):
            pair.set("this", exp.cast(key, exp.DataType.Type.VARCHAR))
    return node


def _cast(node: exp.Cast, time: StatementTime) -> exp.Expression:
    """A text that is no number, date or time cast to one is NULL, as Doris's CAST gives it
    (DuckDB's refuses the query); MySQL's DECIMAL takes 65 digits, DuckDB's 38: the scale is
    kept, the integer digits give. CONVERT(x USING charset) is x's text (every text is UTF-8)."""
    to = node.to
    if to.this == exp.DataType.Type.CHARACTER_SET:  # CONVERT(x USING utf8mb4): x's text
        return exp.cast(node.this, exp.DataType.Type.VARCHAR)
    if (
        type(node) is exp.Cast
        and (_is_string(node.this) or node.this.is_type(*exp.DataType.TEXT_TYPES))
        and to.this in FROM_TEXT_MAY_FAIL
    ):
        node = exp.TryCast(this=node.this, to=to)
    if to.this != exp.DataType.Type.DECIMAL or len(to.expressions) < 1:
        return node
    precision, *scale = (int(size.name) for size in to.expressions)
    if precision <= MAX_DECIMAL_DIGITS:
        return node
    kept = min(scale[0] if scale else 0, MAX_DECIMAL_DIGITS)
    node.set("to", exp.DataType.build(f"DECIMAL({MAX_DECIMAL_DIGITS}, {kept})"))
    return node


FROM_TEXT_MAY_FAIL = exp.DataType.NUMERIC_TYPES | exp.DataType.TEMPORAL_TYPES


def _to_date(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's TO_DATE(x): the date of a DATETIME or of its text."""
    arguments = _arguments(node)
    if len(arguments) != 1:
        return node
    return exp.cast(arguments[0], exp.DataType.Type.DATE)


def _ndv(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's NDV(x): the approximate count of distinct values."""
    arguments = _arguments(node)
    return exp.ApproxDistinct(this=arguments[0]) if len(arguments) == 1 else node


def _percentile(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's PERCENTILE(x, p) and PERCENTILE_APPROX(x, p[, compression]): the p-th quantile,
    interpolated between values, as a DOUBLE (answered exactly)."""
    arguments = _arguments(node)
    if len(arguments) not in (2, 3) or (len(arguments) == 3 and _name(node) == "PERCENTILE"):
        return node
    value = exp.cast(arguments[0], exp.DataType.Type.DOUBLE)
    return exp.cast(_function("QUANTILE_CONT", value, arguments[1]), exp.DataType.Type.DOUBLE)


def _uuid(node: exp.Uuid, time: StatementTime) -> exp.Expression:
    """A new UUID a row, as MySQL's text of 36 characters (DuckDB's is a UUID value)."""
    return exp.cast(exp.Uuid(), exp.DataType.Type.VARCHAR)


def _bitwise_not(node: exp.BitwiseNot, time: StatementTime) -> exp.Expression:
    """MySQL's ~ works on 64-bit unsigned integers: ~0 is 18446744073709551615."""
    inverted = exp.BitwiseNot(this=exp.cast(node.this, exp.DataType.Type.BIGINT))
    wrapped = exp.Add(
        this=exp.cast(inverted, exp.DataType.Type.INT128),
        expression=exp.Literal.number(UNSIGNED_64),
    )
    return exp.paren(exp.Mod(this=exp.paren(wrapped), expression=exp.Literal.number(UNSIGNED_64)))


# Doris's functions that are another's (STRLEFT is LEFT, ...), and Doris's array functions that
# are DuckDB's list functions: the other's of the same arguments
DORIS_ALIASES = {
    "STRLEFT": _with_arguments(2, lambda s, n: exp.Left(this=s, expression=n)),
    "STRRIGHT": _with_arguments(2, lambda s, n: exp.Right(this=s, expression=n)),
    "MONEY_FORMAT": _with_arguments(
        1, lambda x: exp.NumberToStr(this=x, format=exp.Literal.number(2))
    ),
    # DuckDB's regexp_replace replaces the first match only, without the 'g' option
    "REGEXP_REPLACE_ONE": _with_arguments(3, functools.partial(_function, "regexp_replace")),
    "E": _with_arguments(0, lambda: exp.Exp(this=exp.Literal.number(1))),
    **{
        name: _with_arguments(count, functools.partial(_function, duckdb_name))
        for name, (duckdb_name, count) in arrays.LIST_FUNCTIONS.items()
    },
}

REWRITES: dict[str, Callable[[exp.Expression, StatementTime], exp.Expression]] = {
    "UNIX_TIMESTAMP": _unix_timestamp,
    "UNIX_TO_TIME": _from_unixtime,
    "TIME_TO_STR": _date_format,
    "CONVERT_TIMEZONE": _convert_tz,
    "DATE_ADD": _date_arithmetic,
    "DATE_SUB": _date_arithmetic,
    "ADDDATE": _add_days(subtract=False),
    "SUBDATE": _add_days(subtract=True),
    "DAY_OF_WEEK": _date_part("DAYOFWEEK", 1),
    "WEEKDAY": _date_part("ISODOW", -1),
    "TIMESTAMPDIFF": _timestamp_diff,
    "LAST_DAY": _with_timestamps,
    "YEAR": _with_timestamps,
    "MONTH": _with_timestamps,
    "DAY": _with_timestamps,
    "DAY_OF_MONTH": _with_timestamps,
    "DAY_OF_YEAR": _with_timestamps,
    "HOUR": _with_timestamps,
    "MINUTE": _with_timestamps,
    "SECOND": _with_timestamps,
    "QUARTER": _with_timestamps,
    "DAYNAME": _with_timestamps,
    "MID": _mid,
    "FIELD": _field,
    "FIND_IN_SET": _find_in_set,
    "STRCMP": _strcmp,
    "ELT": _elt,
    "STR_TO_DATE": _str_to_date,
    "STR_TO_TIME": _str_to_date,
    "SUBSTRING_INDEX": _substring_index,
    "SEC_TO_TIME": _with_arguments(1, _duration),
    "TIME_TO_SEC": _with_arguments(1, _time_to_sec),
    "TIMEDIFF": _with_arguments(2, _timediff),
    "PERIOD_DIFF": _with_arguments(2, _period_diff),
    "PERIOD_ADD": _with_arguments(2, _period_add),
    "TIME_FORMAT": _with_arguments(2, _time_format),
    **{name: _with_arguments(2, _json_value(name)) for name in DORIS_JSON_GETTERS},
    "XOR": _xor,
    "UNHEX": _unhex,
    "J_S_O_N_OBJECT": _json_object,  # sqlglot's name of JSON_OBJECT
    "CAST": _cast,
    "UUID": _uuid,
    "TIMESTAMP_ADD": _timestamp_add,
    "DATE_TRUNC": _date_trunc,
    "MAKEDATE": _makedate,
    "NULL_OR_EMPTY": _null_or_empty,
    "NOT_NULL_OR_EMPTY": _not_null_or_empty,
    "MD5SUM": _md5sum,
    "TIMESTAMP": _timestamp_of,
    **TABLE_FUNCTIONS,
    "STRING_TO_ARRAY": _split_by_string,
    **DORIS_ALIASES,
    **{f"{unit}S_DIFF": _diff(unit) for unit in DORIS_DIFF_UNITS},
    "REGEXP_EXTRACT": _regexp_extract,
    "REGEXP_EXTRACT_ALL": _regexp_extract_all,
    "MAP": _typed_map(_map),
    "MURMUR_HASH3_64": _murmur_hash3_64,
    **{f"{unit}S_ADD": _add_days(subtract=False, unit=unit) for unit in DORIS_DATE_ADD_UNITS},
    **{f"{unit}S_SUB": _add_days(subtract=True, unit=unit) for unit in DORIS_DATE_ADD_UNITS},
    "TO_DATE": _to_date,
    "TO_DAYS": _to_days,
    "FROM_DAYS": _from_days,
    "WEEK": _week,
    "YEARWEEK": _week,
    "TIME": _time,
    "CONV": _conv,
    "REPEAT": _made_text_within_limit(_repeated_length, "times"),
    "SPACE": _made_text_within_limit(lambda node: node.this.copy(), "this"),
    "PAD": _made_text_within_limit(lambda node: node.expression.copy(), "expression"),
    "REPLACE": _made_text_within_limit(_replaced_length, "replacement"),
    **{name: _arguments_once for name in ARGUMENTS_READ_AGAIN},
    "LENGTH": _length,
    "HEX": _text_within_limit(_times(2)),
    "TO_BASE64": _text_within_limit(_times(2, 4)),
    "CONCAT": _text_within_limit(_sum),
    "CONCAT_WS": _text_within_limit(_separated),
    "NDV": _ndv,
    "JSON_LENGTH": _json_length,
    "JSON_CONTAINS": _json_contains,
    "JSON_ARRAYAGG": _json_arrayagg,
    exp.JSONObjectAgg.sql_name().upper(): _json_objectagg,
    "PERCENTILE": _percentile,
    "PERCENTILE_APPROX": _percentile,
    **{name: _with_arguments(1, _template(name)) for name in ONE_ARGUMENT_FUNCTIONS},
    "QUOTE": _text_within_limit(_times(2, 2), then=_with_arguments(1, _template("QUOTE"))),
    **arrays.REWRITES,
    **{name: _chained_hash(name) for name in hashes.ENGINE_NAMES},
    "AES_ENCRYPT": _aes(ciphers.ENCRYPT),
    "AES_DECRYPT": _aes(ciphers.DECRYPT),
    **{name: _doris_function for name in DORIS_FUNCTIONS},
    "STR_TO_MAP": _typed_map(_doris_function),
}


def _with_rollup(node: exp.Group, time: StatementTime) -> exp.Expression:
    """MySQL's GROUP BY a, b WITH ROLLUP: GROUP BY ROLLUP (a, b), which DuckDB reads."""
    rollups = node.args.get("rollup") or []
    if not (node.expressions and any(not rollup.expressions for rollup in rollups)):
        return node
    return exp.Group(expressions=[exp.Rollup(expressions=list(node.expressions))])


OPERATOR_REWRITES: dict[type, Callable[[exp.Expression, StatementTime], exp.Expression]] = {
    exp.BitwiseNot: _bitwise_not,
    exp.Group: _with_rollup,
    **arrays.OPERATOR_REWRITES,
}


# Doris's statistical and analytic aggregates, as DuckDB expressions of their arguments x, y, z
# (each read where the template reads it: an aggregate's argument cannot be worked out once)
# a value's text as Doris writes it in JSON: a whole DOUBLE without its ".0"
_VALUE_TEXT = (
    "CASE WHEN typeof({0}) IN ('DOUBLE', 'FLOAT') THEN regexp_replace(CAST({0} AS VARCHAR), "
    "'[.]0$', '') ELSE CAST({0} AS VARCHAR) END"
)
_BUCKET = "STRUCT(lower VARCHAR, upper VARCHAR, ndv BIGINT, count BIGINT, pre_sum BIGINT)"
_JOINED = (  # the next distinct value, of c rows, joins the last bucket: it has fewer than per
    "list_concat(list_slice(b, 1, len(b) - 1), [{'lower': struct_extract(list_extract(b, -1), 'lower'), "
    f"'upper': {_VALUE_TEXT.format('e.key')}, 'ndv': struct_extract(list_extract(b, -1), 'ndv') + 1, "
    "'count': struct_extract(list_extract(b, -1), 'count') + CAST(e.value AS BIGINT), 'pre_sum': struct_extract(list_extract(b, -1), 'pre_sum')}])"
)
_NEW_BUCKET = (
    f"list_append(b, {{'lower': {_VALUE_TEXT.format('e.key')}, "
    f"'upper': {_VALUE_TEXT.format('e.key')}, "
    "'ndv': CAST(1 AS BIGINT), 'count': CAST(e.value AS BIGINT), 'pre_sum': CASE WHEN len(b) = 0 "
    "THEN CAST(0 AS BIGINT) ELSE struct_extract(list_extract(b, -1), 'pre_sum') + struct_extract(list_extract(b, -1), 'count') END})"
)
_BUCKETS = (
    "list_reduce(h.values, lambda b, e: CASE WHEN len(b) > 0 AND struct_extract(list_extract(b, -1), 'count') < h.per "
    f"THEN {_JOINED} ELSE {_NEW_BUCKET} END, CAST([] AS {_BUCKET}[]))"
)
_BUCKET_TEXT = (
    "'{\"lower\":' || CAST(to_json(u.lower) AS VARCHAR) || ',\"upper\":' || "
    "CAST(to_json(u.upper) AS VARCHAR) || ',\"ndv\":' || u.ndv || ',\"count\":' || u.count || "
    "',\"pre_sum\":' || u.pre_sum || '}'"
)
# Doris's equal-height histogram: the values in order, ceil(rows / y) rows a bucket, a value's
# rows all in one bucket
_HISTOGRAM = _let(
    "buckets",
    f"list_extract(list_transform([{{'values': list_sort(map_entries(histogram(x))), "
    f"'per': CAST(ceil(count(x) / y) AS BIGINT)}}], lambda h: {_BUCKETS}), 1)",
    "'{\"num_buckets\":' || len(buckets) || ',\"buckets\":[' || "
    f"array_to_string(list_transform(buckets, lambda u: {_BUCKET_TEXT}), ',') || ']}}'",
)
HISTOGRAM_BUCKETS = 128  # Doris's default
# Doris's TOPN: the y most frequent values with their counts, the most frequent first (of as
# many, the greater value first), as JSON text; NULL for no value
_TOPN = (
    "CASE WHEN count(x) > 0 THEN '{' || array_to_string(list_transform(list_slice(list_sort("
    "list_transform(map_entries(histogram(x)), lambda e: {'c': e.value, 'v': e.key}), 'DESC'), "
    f"1, y), lambda p: CAST(to_json({_VALUE_TEXT.format('p.v')}) AS VARCHAR) || ':' || p.c), ',') "
    "|| '}' END"
)
ANALYTIC_AGGREGATES: dict[str, dict[int, str]] = {
    # 0 where x or y is a constant, as Doris's (DuckDB's: NaN)
    "CORR": {2: "CASE WHEN regr_sxx(y, x) = 0 OR regr_syy(y, x) = 0 THEN 0 ELSE corr(x, y) END"},
    "COVAR": {2: "covar_pop(x, y)"},
    "COVAR_POP": {2: "covar_pop(x, y)"},
    "COVAR_SAMP": {2: "CASE WHEN regr_count(y, x) = 1 THEN 0 ELSE covar_samp(x, y) END"},
    "TOPN": {2: _TOPN, 3: _TOPN},  # the third, the space saving's counters: all are counted
    "HISTOGRAM": {1: _HISTOGRAM.replace(" y)", f" {HISTOGRAM_BUCKETS})"), 2: _HISTOGRAM},
}
ANALYTIC_AGGREGATES["HIST"] = ANALYTIC_AGGREGATES["HISTOGRAM"]
_ANALYTIC_TREES = {
    (name, count): sqlglot.parse_one(text, read="duckdb")
    for name, forms in ANALYTIC_AGGREGATES.items()
    for count, text in forms.items()
}


def _analytic_aggregate(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    arguments = _arguments(node)
    tree = _ANALYTIC_TREES.get((_name(node), len(arguments)))
    if tree is None:
        raise _no_such_function(node)
    return _filled(tree, per_row=False, **dict(zip(("x", "y", "z"), arguments, strict=False)))


MOST_CONDITIONS = 32  # Doris's RETENTION and WINDOW_FUNNEL take at most 32 conditions


def _conditions(node: exp.Anonymous, before: int) -> list[exp.Expression]:
    conditions = node.expressions[before:]
    if not 1 <= len(conditions) <= MOST_CONDITIONS:
        raise _no_such_function(node)
    return [exp.cast(condition, exp.DataType.Type.BOOLEAN) for condition in conditions]


def _retention(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's RETENTION(c1, ..., cn): [whether c1 held in a row, then for each later ci
    whether c1 and ci each held in some row], as 1 and 0."""
    first, *later = (_function("bool_or", c) for c in _conditions(node, 0))
    met = [first, *(exp.and_(first.copy(), c) for c in later)]
    false = exp.false()
    return _function("list_value", *(exp.Coalesce(this=m, expressions=[false.copy()]) for m in met))


@functools.cache
def _funnel_tree(steps: int) -> exp.Expression:
    """The longest chain c1, c2, ... of conditions met in time order within w microseconds of
    its c1 (ClickHouse's and Doris's 'default' mode) over the group's rows {t, c: [c1, ...]}: the
    chains' starts, each step's, kept as the events come."""
    step = (
        f"list_transform(range(1, {steps + 1}), lambda j: CASE WHEN j <> e.i THEN s[j] "
        "WHEN j = 1 THEN e.t WHEN s[j - 1] IS NOT NULL AND e.t - s[j - 1] <= w THEN s[j - 1] "
        "ELSE s[j] END)"
    )
    events = (
        "list_sort(flatten(list_transform(list_filter(r, lambda row: row.t IS NOT NULL), "
        f"lambda row: list_transform(list_filter(range(1, {steps + 1}), lambda i: row.c[i]), "
        "lambda i: {'t': row.t, 'i': i}))))"
    )
    none = f"CAST([{', '.join(['NULL'] * steps)}] AS BIGINT[])"
    starts = f"list_reduce({events}, lambda s, e: {step}, {none})"
    reached = _let(
        "starts",
        starts,
        "coalesce(list_max(list_transform(range(1, len(starts) + 1), "
        "lambda j: CASE WHEN starts[j] IS NOT NULL THEN j ELSE 0 END)), 0)",
    )
    return sqlglot.parse_one(_let("r", "list({'t': t, 'c': c})", reached), read="duckdb")


def _window_funnel(node: exp.Anonymous, time: StatementTime) -> exp.Expression:
    """Doris's WINDOW_FUNNEL(window seconds, 'default', timestamp, c1, ..., cn)."""
    if len(node.expressions) < 4:
        raise _no_such_function(node)
    window, mode, stamp = node.expressions[:3]
    conditions = _conditions(node, 3)
    if not (_is_string(mode) and mode.this.lower() == "default"):
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET, "window_funnel's mode must be 'default' in Quire"
        )
    micros = exp.Mul(
        this=exp.cast(window, exp.DataType.Type.BIGINT), expression=exp.Literal.number(1_000_000)
    )
    return _filled(
        _funnel_tree(len(conditions)),
        per_row=False,
        t=_function("epoch_us", exp.cast(_timestamp(stamp), exp.DataType.Type.TIMESTAMP)),
        c=exp.Array(expressions=conditions),
        w=exp.paren(micros),
    )


REWRITES.update(
    {
        **{name: _analytic_aggregate for name in ANALYTIC_AGGREGATES},
        "RETENTION": _retention,
        "WINDOW_FUNNEL": _window_funnel,
    }
)
