"""Server-side prepared statements: placeholders, parameter decoding, and safe substitution.

A session that offers `prepare_statement(sql)` parses a statement once, when it is prepared (a
SessionPlan), and is handed each execution's typed parameter values (`execute_prepared`). For other
sessions each parameter is rendered as an SQL literal (sqlglot renders strings, so quotes and
backslashes are escaped the way the MySQL dialect reads them back) and the resulting text is handed
to the session like any other query.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from mysql_mimic.types import ColumnType
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from fe.mysql.errors import ErrorCode, QueryError

MAX_PARAMS = 65535  # COM_STMT_PREPARE_OK carries the count in two bytes

CURSOR_TYPE_READ_ONLY = 0x01
PARAMETER_COUNT_AVAILABLE = 0x08
UNSIGNED_PARAM = 0x80

ParamType = tuple[int, bool]  # (ColumnType code, unsigned)


@dataclass(frozen=True)
class SessionPlan:
    """What a session's prepare_statement gives: its parsed statement (handed back to its
    execute_prepared), how many `?` parameters it takes, and its result columns if known."""

    plan: object
    parameters: int
    columns: list = field(default_factory=list)


@dataclass
class PreparedStatement:
    stmt_id: int
    sql: str
    num_params: int
    fragments: list[str] | None = None  # the SQL split around its placeholders, if not planned
    param_types: list[ParamType] | None = None  # as last sent by the client
    long_data: dict[int, bytearray] = field(default_factory=dict)
    cursor: Iterator[bytes] | None = None
    column_names: list[str] = field(default_factory=list)  # from the statement text, at prepare
    plan: object | None = None  # the session's parsed statement, if it prepared one
    answer_shape: object | None = None  # the connection's encoding of its last answer's columns


@dataclass
class Execution:
    stmt: PreparedStatement
    values: list[Any]
    attrs: dict[str, str]
    use_cursor: bool

    @property
    def sql(self) -> str:
        """The statement's text with its values written in."""
        return substitute(self.stmt, self.values)


def prepare(stmt_id: int, sql: str) -> PreparedStatement:
    """Find the statement's `?` placeholders (not those inside strings, identifiers, comments)."""
    if "?" not in sql:
        return PreparedStatement(stmt_id, sql, 0, [sql])
    try:
        tokens = MySQL().tokenize(sql)
    except TokenError as e:
        raise QueryError(
            ErrorCode.PARSE_ERROR, f"You have an error in your SQL syntax: {e}"
        ) from None
    positions = [t.start for t in tokens if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    if len(positions) > MAX_PARAMS:
        raise QueryError(ErrorCode.PARSE_ERROR, "Prepared statement contains too many placeholders")
    fragments = []
    begin = 0
    for position in positions:
        assert sql[position] == "?", (sql, position)
        fragments.append(sql[begin:position])
        begin = position + 1
    fragments.append(sql[begin:])
    return PreparedStatement(stmt_id, sql, len(positions), fragments)


class MalformedPacket(Exception):
    pass


class PacketReader:
    """Reads MySQL protocol fields from a payload; running past its end is a MalformedPacket."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise MalformedPacket(f"needs {n} bytes at {self.pos}, packet has {len(self.data)}")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def unpack(self, fmt: struct.Struct) -> tuple:
        try:
            values = fmt.unpack_from(self.data, self.pos)
        except struct.error as e:
            raise MalformedPacket(str(e)) from e
        self.pos += fmt.size
        return values

    def uint1(self) -> int:
        if self.pos >= len(self.data):
            raise MalformedPacket("packet too short")
        self.pos += 1
        return self.data[self.pos - 1]

    def uint2(self) -> int:
        return self.unpack(_U2)[0]

    def uint4(self) -> int:
        return self.unpack(_U4)[0]

    def lenenc_int(self) -> int:
        first = self.uint1()
        if first < 0xFB:
            return first
        if first == 0xFC:
            return self.uint2()
        if first == 0xFD:
            return int.from_bytes(self.take(3), "little")
        if first == 0xFE:
            return self.unpack(_U8)[0]
        raise MalformedPacket(f"invalid length-encoded integer prefix {first:#x}")

    def lenenc_bytes(self) -> bytes:
        return self.take(self.lenenc_int())

    def null_terminated(self) -> bytes:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise MalformedPacket("unterminated string")
        chunk = self.data[self.pos : end]
        self.pos = end + 1
        return chunk

    def rest(self) -> bytes:
        chunk = self.data[self.pos :]
        self.pos = len(self.data)
        return chunk

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


_U2 = struct.Struct("<H")
_U4 = struct.Struct("<I")
_U8 = struct.Struct("<Q")
_EXECUTE_HEADER = struct.Struct("<IBI")
_NUMBERS = {
    (ColumnType.TINY, False): struct.Struct("<b"),
    (ColumnType.TINY, True): struct.Struct("<B"),
    (ColumnType.BOOL, False): struct.Struct("<B"),
    (ColumnType.BOOL, True): struct.Struct("<B"),
    (ColumnType.SHORT, False): struct.Struct("<h"),
    (ColumnType.SHORT, True): struct.Struct("<H"),
    (ColumnType.YEAR, False): struct.Struct("<H"),
    (ColumnType.YEAR, True): struct.Struct("<H"),
    (ColumnType.LONG, False): struct.Struct("<i"),
    (ColumnType.LONG, True): struct.Struct("<I"),
    (ColumnType.INT24, False): struct.Struct("<i"),
    (ColumnType.INT24, True): struct.Struct("<I"),
    (ColumnType.LONGLONG, False): struct.Struct("<q"),
    (ColumnType.LONGLONG, True): struct.Struct("<Q"),
    (ColumnType.FLOAT, False): struct.Struct("<f"),
    (ColumnType.FLOAT, True): struct.Struct("<f"),
    (ColumnType.DOUBLE, False): struct.Struct("<d"),
    (ColumnType.DOUBLE, True): struct.Struct("<d"),
}
_TEXT_TYPES = {
    ColumnType.VARCHAR,
    ColumnType.VAR_STRING,
    ColumnType.STRING,
    ColumnType.ENUM,
    ColumnType.SET,
    ColumnType.JSON,
}
_BINARY_TYPES = {
    ColumnType.TINY_BLOB,
    ColumnType.MEDIUM_BLOB,
    ColumnType.LONG_BLOB,
    ColumnType.BLOB,
    ColumnType.GEOMETRY,
    ColumnType.BIT,
}
_DECIMAL_TYPES = {ColumnType.DECIMAL, ColumnType.NEWDECIMAL}
_DATE_TYPES = {ColumnType.DATE, ColumnType.DATETIME, ColumnType.TIMESTAMP, ColumnType.NEWDATE}
_KNOWN_TYPES = (
    set(t for t, _ in _NUMBERS) | _TEXT_TYPES | _BINARY_TYPES | _DECIMAL_TYPES | _DATE_TYPES
)
_KNOWN_TYPES |= {ColumnType.TIME, ColumnType.NULL}


def parse_execute(
    data: bytes,
    statements: dict[int, PreparedStatement],
    query_attributes: bool,
    codec: str,
) -> Execution:
    """Decode a COM_STMT_EXECUTE payload (without its command byte): the statement and values."""
    reader = PacketReader(data)
    stmt_id, flags, _iterations = reader.unpack(_EXECUTE_HEADER)
    stmt = statements.get(stmt_id)
    if stmt is None:
        raise QueryError(
            ErrorCode.UNKNOWN_STMT_HANDLER,
            f"Unknown prepared statement handler ({stmt_id}) given to mysqld_stmt_execute",
        )
    count = stmt.num_params
    if query_attributes and (count > 0 or flags & PARAMETER_COUNT_AVAILABLE):
        count = reader.lenenc_int()
        if count < stmt.num_params:
            raise MalformedPacket(f"{count} parameters sent, statement has {stmt.num_params}")
    params = read_params(reader, count, query_attributes, codec, stmt)
    values = [value for _, value in params[: stmt.num_params]]
    attrs = {name: _attribute_text(value) for name, value in params[stmt.num_params :] if name}
    stmt.long_data.clear()
    return Execution(stmt, values, attrs, bool(flags & CURSOR_TYPE_READ_ONLY))


def parse_query_attributes(reader: PacketReader, codec: str) -> dict[str, str]:
    """The query attributes in front of a COM_QUERY's text (CLIENT_QUERY_ATTRIBUTES clients)."""
    count = reader.lenenc_int()
    reader.lenenc_int()  # parameter set count: always 1
    if count == 0:
        return {}
    params = read_params(reader, count, True, codec, None)
    return {name: _attribute_text(value) for name, value in params if name}


def read_params(
    reader: PacketReader,
    count: int,
    named: bool,
    codec: str,
    stmt: PreparedStatement | None,
) -> list[tuple[str, Any]]:
    if count == 0:
        return []
    if count > MAX_PARAMS:
        raise MalformedPacket(f"{count} parameters")
    null_bitmap = reader.take((count + 7) // 8)
    new_params_bound = reader.uint1()
    if new_params_bound:
        types: list[ParamType] = []
        names: list[str] = []
        for _ in range(count):
            code = reader.uint1()
            type_flags = reader.uint1()
            if code not in _KNOWN_TYPES:
                raise QueryError(
                    ErrorCode.UNSUPPORTED_PS, f"Parameter type {code} is not supported"
                )
            types.append((code, bool(type_flags & UNSIGNED_PARAM)))
            names.append(reader.lenenc_bytes().decode(codec, "replace") if named else "")
        if stmt is not None:
            stmt.param_types = types
    else:
        # The client bound no new types: they are those of the previous execution.
        if stmt is None or stmt.param_types is None or len(stmt.param_types) != count:
            raise QueryError(
                ErrorCode.WRONG_ARGUMENTS,
                "Incorrect arguments to mysqld_stmt_execute: parameter types never sent",
            )
        types = stmt.param_types
        names = [""] * count

    long_data = stmt.long_data if stmt is not None else {}
    params = []
    for i, (code, unsigned) in enumerate(types):
        if null_bitmap[i >> 3] & (1 << (i & 7)):
            value = None
        elif i in long_data:
            value = _decode_bytes(code, bytes(long_data[i]), codec)
        else:
            value = _read_value(reader, code, unsigned, codec)
        params.append((names[i], value))
    return params


def _read_value(reader: PacketReader, code: int, unsigned: bool, codec: str) -> Any:
    number = _NUMBERS.get((code, unsigned))
    if number is not None:
        return reader.unpack(number)[0]
    if code in _TEXT_TYPES or code in _BINARY_TYPES:
        return _decode_bytes(code, reader.lenenc_bytes(), codec)
    if code in _DECIMAL_TYPES:
        return _decode_decimal(reader.lenenc_bytes())
    if code in _DATE_TYPES:
        return _read_datetime(reader, code)
    if code == ColumnType.TIME:
        return _read_time(reader)
    assert code == ColumnType.NULL, code
    return None


def _decode_bytes(code: int, raw: bytes, codec: str) -> str | bytes | Decimal:
    if code in _DECIMAL_TYPES:
        return _decode_decimal(raw)
    if code in _BINARY_TYPES:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    try:
        return raw.decode(codec)
    except UnicodeDecodeError:
        raise QueryError(
            ErrorCode.INVALID_CHARACTER_STRING,
            f"Invalid {codec} character string: '{raw[:16].hex().upper()}'",
        ) from None


def _decode_decimal(raw: bytes) -> Decimal:
    try:
        value = Decimal(raw.decode("ascii"))
    except (UnicodeDecodeError, InvalidOperation):
        raise QueryError(
            ErrorCode.WRONG_ARGUMENTS, f"Incorrect decimal parameter: {raw[:32]!r}"
        ) from None
    if not value.is_finite():
        raise QueryError(ErrorCode.WRONG_ARGUMENTS, "Incorrect decimal parameter")
    return _decimal_in_range(value)


MAX_DECIMAL_DIGITS = 65  # MySQL's DECIMAL: at most 65 digits, 30 of them after the point
MAX_DECIMAL_SCALE = 30
_LARGEST_DECIMAL = Decimal(10**MAX_DECIMAL_DIGITS - 1)
_DECIMAL_CONTEXT = Context(prec=MAX_DECIMAL_DIGITS + MAX_DECIMAL_SCALE + 1)


def _decimal_in_range(value: Decimal) -> Decimal:
    """`value` as a MySQL DECIMAL holds it: beyond 65 digits the largest DECIMAL of its sign,
    beyond 30 decimals rounded (1E+1000000 is 65 nines, 1E-1000000 is 0)."""
    if value.adjusted() >= MAX_DECIMAL_DIGITS:
        return _LARGEST_DECIMAL.copy_sign(value)
    if value.as_tuple().exponent < -MAX_DECIMAL_SCALE:
        rounded = value.quantize(Decimal(1).scaleb(-MAX_DECIMAL_SCALE), context=_DECIMAL_CONTEXT)
        return rounded.copy_abs() if rounded.is_zero() else rounded
    return value


MAX_MICROSECONDS = 999_999  # beyond it MySQL reads a zero date or time
LARGEST_TIME = timedelta(hours=838, minutes=59, seconds=59)  # MySQL's TIME range: +-838:59:59


def _read_datetime(reader: PacketReader, code: int) -> date | datetime | str:
    length = reader.uint1()
    if length == 0:
        return "0000-00-00" if code == ColumnType.DATE else "0000-00-00 00:00:00"
    if length not in (4, 7, 11):
        raise MalformedPacket(f"date parameter of length {length}")
    raw = reader.take(length)
    year = int.from_bytes(raw[0:2], "little")
    month, day = raw[2], raw[3]
    hour = minute = second = micro = 0
    if length >= 7:
        hour, minute, second = raw[4], raw[5], raw[6]
    if length == 11:
        micro = int.from_bytes(raw[7:11], "little")
    if micro > MAX_MICROSECONDS:
        return "0000-00-00" if code == ColumnType.DATE else "0000-00-00 00:00:00"
    try:
        if code == ColumnType.DATE:
            return date(year, month, day)
        return datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        # MySQL allows zero parts ('2024-00-00'): pass them on as text for the statement to judge
        text = f"{year:04d}-{month:02d}-{day:02d}"
        if code != ColumnType.DATE:
            text += f" {hour:02d}:{minute:02d}:{second:02d}"
            if micro:
                text += f".{micro:06d}"
        return text


def _read_time(reader: PacketReader) -> timedelta:
    length = reader.uint1()
    if length == 0:
        return timedelta(0)
    if length not in (8, 12):
        raise MalformedPacket(f"time parameter of length {length}")
    raw = reader.take(length)
    negative = raw[0]
    days = int.from_bytes(raw[1:5], "little")
    micro = int.from_bytes(raw[8:12], "little") if length == 12 else 0
    if micro > MAX_MICROSECONDS:
        return timedelta(0)
    days = min(days, LARGEST_TIME.days + 1)
    value = timedelta(days=days, hours=raw[5], minutes=raw[6], seconds=raw[7], microseconds=micro)
    value = min(value, LARGEST_TIME)
    return -value if negative else value


def substitute(stmt: PreparedStatement, values: list[Any]) -> str:
    assert len(values) == stmt.num_params, (len(values), stmt.num_params)
    if not values:
        return stmt.sql
    fragments = stmt.fragments
    assert fragments is not None, "a statement its session planned is never written out"
    parts = [fragments[0]]
    for i, value in enumerate(values):
        parts.append(sql_literal(value))
        parts.append(fragments[i + 1])
    return "".join(parts)


_GENERATOR = MySQL().generator()


def sql_literal(value: Any) -> str:
    """An SQL literal (MySQL dialect) that reads back as exactly `value`."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value) if value >= 0 else f" {value}"  # the space keeps `5-?` from being `5--1`
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QueryError(ErrorCode.WRONG_ARGUMENTS, f"Incorrect float parameter: {value}")
        text = repr(value)
        return text if value >= 0 else f" {text}"
    if isinstance(value, Decimal):
        text = format(value, "f")
        return text if value >= 0 else f" {text}"
    if isinstance(value, str):
        return _GENERATOR.generate(exp.Literal.string(value))
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, datetime):
        return f"'{value.isoformat(' ')}'"
    if isinstance(value, date):
        return f"'{value.isoformat()}'"
    if isinstance(value, timedelta):
        return f"'{time_text(value)}'"
    raise AssertionError(f"no SQL literal for {type(value).__name__}")


def time_text(value: timedelta) -> str:
    """A TIME value as MySQL writes it: [-]HH:MM:SS[.ffffff], hours past 24 allowed."""
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    total = value.days * 86400 + value.seconds
    hours, rest = divmod(total, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{value.microseconds:06d}" if value.microseconds else text


def _attribute_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)
