"""Statement results and their encoding: column definitions, text rows and binary rows."""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from mysql_mimic.results import ResultColumn
from mysql_mimic.types import ColumnType

logger = logging.getLogger(__name__)

# Column definition flags (mysql-mimic's ColumnDefinition has NUM_FLAG at PART_KEY_FLAG's bit)
NOT_NULL_FLAG = 1
_BLOB = 16
_UNSIGNED = 32
_ZEROFILL = 64
_BINARY = 128
_ENUM = 256
_SET = 2048
_NUM = 32768

UTF8MB4_GENERAL_CI = 45
BINARY_COLLATION = 63
MAX_COLUMN_LENGTH = 2**32 - 1
NOT_FIXED_DECIMALS = 31  # MySQL's "decimals" for FLOAT/DOUBLE without a declared scale
MAX_CHAR_BYTES = 4  # utf8mb4

TextEncoder = Callable[[Any], bytes]


@dataclass(frozen=True, eq=False)
class ColumnSpec:
    """What the wire needs to know about an SQL type, and how to encode its values."""

    type: ColumnType
    length: int
    decimals: int
    flags: int
    collation: int
    kind: str  # which value encoders apply: int, float, decimal, date, datetime, time, bytes, text
    text: TextEncoder = field(init=False, repr=False)
    binary: TextEncoder = field(init=False, repr=False)
    # The binary protocol's fixed-size integer of the type; None: not an integer type
    int_format: struct.Struct | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        unsigned = bool(self.flags & _UNSIGNED)
        object.__setattr__(self, "int_format", _INT_FORMATS.get((self.type, unsigned)))
        object.__setattr__(self, "text", _text_encoder(self))
        object.__setattr__(self, "binary", _binary_encoder(self))


class Column:
    """A result column with everything a column definition packet carries.

    (mysql-mimic's ResultColumn is compiled with mypyc and cannot be subclassed; sessions may still
    return ResultColumns or bare names, which are turned into Columns.)
    """

    __slots__ = ("name", "spec", "table", "schema", "flags", "text", "binary", "_definition")

    def __init__(
        self,
        name: str,
        spec: ColumnSpec,
        *,
        table: str = "",
        schema: str = "",
        nullable: bool = True,
    ):
        self.name = name
        self.spec = spec
        self.table = table
        self.schema = schema
        self.flags = spec.flags if nullable else spec.flags | NOT_NULL_FLAG
        self.text = spec.text
        self.binary = spec.binary
        self._definition: bytes | None = None

    @property
    def type(self) -> ColumnType:
        return self.spec.type

    @property
    def length(self) -> int:
        return self.spec.length

    @property
    def decimals(self) -> int:
        return self.spec.decimals

    def renamed(self, name: str) -> Column:
        column = Column(name, self.spec, table=self.table, schema=self.schema)
        column.flags = self.flags
        return column

    def definition(self) -> bytes:
        """The ColumnDefinition41 packet payload for a result set header."""
        if self._definition is None:
            short = len(self.name) <= MAX_CACHED_NAME_CHARS  # a long name would pin its bytes
            define = _cached_definition if short else column_definition
            self._definition = define(self.name, self.spec, self.flags, self.table, self.schema)
        return self._definition

    def __repr__(self) -> str:
        return f"Column({self.name!r} {self.spec.type.name}({self.length},{self.decimals}))"


class EncodedAnswers:
    """A statement's answers as the connection last sent them (packets, framed), by what each
    depends on; at most MAX_ENCODED_ANSWERS of them, each at most MAX_ENCODED_ANSWER_BYTES."""

    __slots__ = ("_answers",)

    def __init__(self) -> None:
        self._answers: dict[Hashable, tuple[bytes, int]] = {}

    def get(self, key: Hashable) -> tuple[bytes, int] | None:
        """The answer's bytes and how many packets they are."""
        return self._answers.get(key)

    def put(self, key: Hashable, encoded: bytes, packets: int) -> None:
        if len(encoded) <= MAX_ENCODED_ANSWER_BYTES and len(self._answers) < MAX_ENCODED_ANSWERS:
            self._answers[key] = (encoded, packets)


MAX_ENCODED_ANSWERS = 4
MAX_ENCODED_ANSWER_BYTES = 1024


@dataclass
class Result:
    """What a session returns from handle_query.

    Without columns the client gets an OK packet carrying affected_rows, last_insert_id, warnings
    and info; with columns it gets a result set of rows (each a sequence of Python values: None, str,
    bytes, int, float, Decimal, date, datetime, time, timedelta).

    A session whose answer is the same whenever answer_key is (a constant SELECT's values) may give
    `answers`, where the connection keeps the encoded answer to send again as it is.

    The connection keeps what MySQL's ROW_COUNT() and FOUND_ROWS() answer next on the session
    (`row_count`, `found_rows`): affected_rows after an OK, -1 after rows or an error, and the
    rows sent (or found_rows) after rows.
    """

    columns: Sequence[Column | ResultColumn | str] = ()
    rows: Iterable[Sequence[Any]] = ()
    affected_rows: int = 0
    last_insert_id: int = 0
    info: str = ""
    warnings: int = 0
    answers: EncodedAnswers | None = None
    answer_key: Hashable = None
    found_rows: int | None = (
        None  # FOUND_ROWS() after it, if not the rows sent (SQL_CALC_FOUND_ROWS)
    )


def column(
    name: str,
    sql_type: str = "VARCHAR",
    *,
    nullable: bool = True,
    table: str = "",
    schema: str = "",
) -> Column:
    """A result column of the given SQL type ("BIGINT", "VARCHAR(20)", "DECIMAL(10,2)", ...)."""
    return Column(name, column_spec(sql_type), table=table, schema=schema, nullable=nullable)


def as_column(col: ResultColumn | str) -> Column:
    """Columns of mysql-mimic's own kind (or bare names) as Columns with a full definition."""
    if isinstance(col, Column):
        return col
    if isinstance(col, str):
        return column(col)
    return Column(col.name, _spec_of_mimic_type(col.type))


_TYPE_PATTERN = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([^)]*?)\s*\))?\s*(.*?)\s*$", re.DOTALL
)

_INTEGERS = {
    # name: (type, signed length, unsigned length)
    "TINYINT": (ColumnType.TINY, 4, 3),
    "SMALLINT": (ColumnType.SHORT, 6, 5),
    "MEDIUMINT": (ColumnType.INT24, 9, 8),
    "INT": (ColumnType.LONG, 11, 10),
    "INTEGER": (ColumnType.LONG, 11, 10),
    "BIGINT": (ColumnType.LONGLONG, 20, 20),
}
_DECIMALS = {"DECIMAL", "DEC", "NUMERIC", "DECIMALV2", "DECIMALV3", "DECIMAL32", "DECIMAL64"}
_DECIMALS |= {"DECIMAL128", "DECIMAL128I", "DECIMAL256", "FIXED"}
_TEXTS = {
    "TINYTEXT": 255 * MAX_CHAR_BYTES,
    "TEXT": 65535 * MAX_CHAR_BYTES,
    "MEDIUMTEXT": MAX_COLUMN_LENGTH,
    "LONGTEXT": MAX_COLUMN_LENGTH,
    "STRING": MAX_COLUMN_LENGTH,
}
_BLOBS = {
    "TINYBLOB": 255,
    "BLOB": 65535,
    "MEDIUMBLOB": 16777215,
    "LONGBLOB": MAX_COLUMN_LENGTH,
}
_DATETIMES = {
    "DATETIME": ColumnType.DATETIME,
    "DATETIMEV2": ColumnType.DATETIME,
    "TIMESTAMP": ColumnType.TIMESTAMP,
}
DEFAULT_VARCHAR_CHARS = 255
MAX_CACHED_NAME_CHARS = 256


@lru_cache(maxsize=1024)
def column_spec(sql_type: str) -> ColumnSpec:
    """The wire description of an SQL type; unknown types are sent as VARCHAR."""
    match = _TYPE_PATTERN.match(sql_type)
    if not match:
        logger.debug("unparseable column type %r sent as VARCHAR", sql_type)
        return _string_spec(ColumnType.VAR_STRING, DEFAULT_VARCHAR_CHARS * MAX_CHAR_BYTES)
    name = match.group(1).upper()
    args = [a.strip() for a in (match.group(2) or "").split(",") if a.strip()]
    modifiers = match.group(3).upper().split()
    unsigned = "UNSIGNED" in modifiers
    numbers = [int(a) for a in args if a.isdigit()]
    first = numbers[0] if numbers else None

    if name in ("BOOL", "BOOLEAN") or (name == "TINYINT" and first == 1 and not unsigned):
        return ColumnSpec(ColumnType.TINY, 1, 0, _NUM | _BINARY, BINARY_COLLATION, "int")
    if name in _INTEGERS:
        type_, signed_length, unsigned_length = _INTEGERS[name]
        flags = _NUM | _BINARY | (_UNSIGNED if unsigned else 0)
        length = unsigned_length if unsigned else signed_length
        return ColumnSpec(type_, length, 0, flags, BINARY_COLLATION, "int")
    if name == "LARGEINT":
        return ColumnSpec(ColumnType.NEWDECIMAL, 40, 0, _NUM | _BINARY, BINARY_COLLATION, "int")
    if name in _DECIMALS:
        precision = first if first is not None else 10
        scale = numbers[1] if len(numbers) > 1 else 0
        assert 0 <= scale <= precision, sql_type
        length = precision + (1 if scale else 0) + (0 if unsigned else 1)
        flags = _NUM | _BINARY | (_UNSIGNED if unsigned else 0)
        return ColumnSpec(ColumnType.NEWDECIMAL, length, scale, flags, BINARY_COLLATION, "decimal")
    if name in ("FLOAT", "DOUBLE", "REAL") or name.startswith("DOUBLE"):
        type_ = ColumnType.FLOAT if name == "FLOAT" else ColumnType.DOUBLE
        length = 12 if type_ == ColumnType.FLOAT else 22
        scale = numbers[1] if len(numbers) > 1 else NOT_FIXED_DECIMALS
        flags = _NUM | _BINARY | (_UNSIGNED if unsigned else 0)
        return ColumnSpec(type_, length, scale, flags, BINARY_COLLATION, "float")
    if name in ("DATE", "DATEV2"):
        return ColumnSpec(ColumnType.DATE, 10, 0, _BINARY, BINARY_COLLATION, "date")
    if name in _DATETIMES:
        fsp = min(first or 0, 6)
        length = 19 + (fsp + 1 if fsp else 0)
        return ColumnSpec(_DATETIMES[name], length, fsp, _BINARY, BINARY_COLLATION, "datetime")
    if name == "TIME":
        fsp = min(first or 0, 6)
        length = 10 + (fsp + 1 if fsp else 0)
        return ColumnSpec(ColumnType.TIME, length, fsp, _BINARY, BINARY_COLLATION, "time")
    if name == "YEAR":
        flags = _NUM | _BINARY | _UNSIGNED | _ZEROFILL
        return ColumnSpec(ColumnType.YEAR, 4, 0, flags, BINARY_COLLATION, "int")
    if name == "CHAR":
        return _string_spec(ColumnType.STRING, (first or 1) * MAX_CHAR_BYTES)
    if name in ("VARCHAR", "NVARCHAR"):
        chars = first if first is not None else DEFAULT_VARCHAR_CHARS
        return _string_spec(ColumnType.VAR_STRING, chars * MAX_CHAR_BYTES)
    if name in _TEXTS:
        return ColumnSpec(ColumnType.BLOB, _TEXTS[name], 0, _BLOB, UTF8MB4_GENERAL_CI, "text")
    if name == "BINARY":
        return ColumnSpec(ColumnType.STRING, first or 1, 0, _BINARY, BINARY_COLLATION, "bytes")
    if name == "VARBINARY":
        length = first if first is not None else 65535
        return ColumnSpec(ColumnType.VAR_STRING, length, 0, _BINARY, BINARY_COLLATION, "bytes")
    if name in _BLOBS:
        flags = _BLOB | _BINARY
        return ColumnSpec(ColumnType.BLOB, _BLOBS[name], 0, flags, BINARY_COLLATION, "bytes")
    if name in ("JSON", "JSONB", "VARIANT"):
        return ColumnSpec(ColumnType.JSON, MAX_COLUMN_LENGTH, 0, _BLOB, UTF8MB4_GENERAL_CI, "text")
    if name == "BIT":
        return ColumnSpec(ColumnType.BIT, first or 1, 0, _UNSIGNED, BINARY_COLLATION, "bytes")
    if name == "ENUM":
        return _string_spec(ColumnType.STRING, 255 * MAX_CHAR_BYTES, _ENUM)
    if name == "SET":
        return _string_spec(ColumnType.STRING, 255 * MAX_CHAR_BYTES, _SET)
    if name == "NULL":
        return ColumnSpec(ColumnType.NULL, 0, 0, _BINARY, BINARY_COLLATION, "text")
    logger.debug("column type %r sent as VARCHAR", sql_type)
    return _string_spec(ColumnType.VAR_STRING, 65533 * MAX_CHAR_BYTES)


def _string_spec(type_: ColumnType, length: int, flags: int = 0) -> ColumnSpec:
    return ColumnSpec(type_, min(length, MAX_COLUMN_LENGTH), 0, flags, UTF8MB4_GENERAL_CI, "text")


_MIMIC_TYPE_NAMES = {
    ColumnType.DECIMAL: "DECIMAL(65,30)",
    ColumnType.NEWDECIMAL: "DECIMAL(65,30)",
    ColumnType.TINY: "TINYINT",
    ColumnType.BOOL: "BOOLEAN",
    ColumnType.SHORT: "SMALLINT",
    ColumnType.INT24: "MEDIUMINT",
    ColumnType.LONG: "INT",
    ColumnType.LONGLONG: "BIGINT",
    ColumnType.FLOAT: "FLOAT",
    ColumnType.DOUBLE: "DOUBLE",
    ColumnType.NULL: "NULL",
    ColumnType.DATE: "DATE",
    ColumnType.NEWDATE: "DATE",
    ColumnType.DATETIME: "DATETIME(6)",
    ColumnType.TIMESTAMP: "TIMESTAMP(6)",
    ColumnType.TIME: "TIME(6)",
    ColumnType.YEAR: "YEAR",
    ColumnType.JSON: "JSON",
    ColumnType.BLOB: "LONGBLOB",
    ColumnType.TINY_BLOB: "TINYBLOB",
    ColumnType.MEDIUM_BLOB: "MEDIUMBLOB",
    ColumnType.LONG_BLOB: "LONGBLOB",
    ColumnType.BIT: "BIT(64)",
}


def _spec_of_mimic_type(type_: ColumnType) -> ColumnSpec:
    return column_spec(_MIMIC_TYPE_NAMES.get(type_, "VARCHAR"))


def column_definition(
    name: str,
    spec: ColumnSpec,
    flags: int,
    table: str = "",
    schema: str = "",
    default: bytes | None = None,
) -> bytes:
    """A ColumnDefinition41 payload; `default` is only for COM_FIELD_LIST responses."""
    name_bytes = name.encode()
    table_bytes = table.encode()
    parts = [
        b"\x03def",
        lenenc_bytes(schema.encode()),
        lenenc_bytes(table_bytes),
        lenenc_bytes(table_bytes),
        lenenc_bytes(name_bytes),
        lenenc_bytes(name_bytes),
        _FIXED_FIELDS.pack(0x0C, spec.collation, spec.length, spec.type, flags, spec.decimals, 0),
    ]
    if default is not None:
        parts.append(lenenc_bytes(default))
    return b"".join(parts)


_FIXED_FIELDS = struct.Struct("<BHIBHBH")


@lru_cache(maxsize=4096)
def _cached_definition(name: str, spec: ColumnSpec, flags: int, table: str, schema: str) -> bytes:
    return column_definition(name, spec, flags, table, schema)


def lenenc_int(i: int) -> bytes:
    if i < 251:
        return bytes((i,))
    if i < 2**16:
        return b"\xfc" + i.to_bytes(2, "little")
    if i < 2**24:
        return b"\xfd" + i.to_bytes(3, "little")
    return b"\xfe" + i.to_bytes(8, "little")


def lenenc_bytes(b: bytes) -> bytes:
    n = len(b)
    if n < 251:
        return bytes((n,)) + b
    return lenenc_int(n) + b


# Text protocol: every value as its SQL text.


def _text_plain(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, bool):
        return b"1" if value else b"0"
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat(" ").encode()
    if isinstance(value, timedelta):
        return _time_text(value, 6).encode()
    return str(value).encode()


def _text_int(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return str(int(value)).encode()


def _text_decimal(scale: int) -> TextEncoder:
    spec = f".{scale}f"

    def encode(value: Any) -> bytes:
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, float):
            value = Decimal(repr(value))
        return format(value, spec).encode()

    return encode


def float_text(value: float) -> str:
    """MySQL's and Doris's text of a DOUBLE: the shortest that reads back, 20 not 20.0."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _text_float(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return float_text(float(value)).encode()


def _text_datetime(fsp: int) -> TextEncoder:
    timespec = "seconds" if fsp == 0 else "milliseconds" if fsp <= 3 else "microseconds"

    def encode(value: Any) -> bytes:
        if isinstance(value, datetime):
            return value.replace(tzinfo=None).isoformat(" ", timespec).encode()
        if isinstance(value, date):
            return f"{value.isoformat()} 00:00:00".encode()
        return _text_plain(value)

    return encode


def _text_date(value: Any) -> bytes:
    if isinstance(value, datetime):
        return value.date().isoformat().encode()
    return _text_plain(value)


def _text_time(fsp: int) -> TextEncoder:
    def encode(value: Any) -> bytes:
        if isinstance(value, timedelta):
            return _time_text(value, fsp).encode()
        if isinstance(value, time):
            return value.isoformat("seconds" if fsp == 0 else "microseconds").encode()
        return _text_plain(value)

    return encode


def _time_text(value: timedelta, fsp: int) -> str:
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    seconds, micros = divmod(
        value.days * 86400 * 10**6 + value.seconds * 10**6 + value.microseconds, 10**6
    )
    hours, rest = divmod(seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    if fsp:
        text += f".{micros:06d}"[: fsp + 1]
    return text


def _text_encoder(spec: ColumnSpec) -> TextEncoder:
    if spec.kind == "int":
        return _text_int
    if spec.kind == "decimal":
        return _text_decimal(spec.decimals) if spec.decimals else _text_int_or_plain
    if spec.kind == "float":
        return _text_float
    if spec.kind == "datetime":
        return _text_datetime(spec.decimals)
    if spec.kind == "date":
        return _text_date
    if spec.kind == "time":
        return _text_time(spec.decimals)
    return _text_plain


def _text_int_or_plain(value: Any) -> bytes:
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return format(value, "f" if isinstance(value, Decimal) else "d").encode()
    return _text_plain(value)


# Binary protocol (prepared statements): fixed-size numbers, packed temporals, lenenc the rest.

_INT_FORMATS = {
    (ColumnType.TINY, False): struct.Struct("<b"),
    (ColumnType.TINY, True): struct.Struct("<B"),
    (ColumnType.SHORT, False): struct.Struct("<h"),
    (ColumnType.SHORT, True): struct.Struct("<H"),
    (ColumnType.YEAR, False): struct.Struct("<H"),
    (ColumnType.YEAR, True): struct.Struct("<H"),
    (ColumnType.INT24, False): struct.Struct("<i"),
    (ColumnType.INT24, True): struct.Struct("<I"),
    (ColumnType.LONG, False): struct.Struct("<i"),
    (ColumnType.LONG, True): struct.Struct("<I"),
    (ColumnType.LONGLONG, False): struct.Struct("<q"),
    (ColumnType.LONGLONG, True): struct.Struct("<Q"),
}
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
_DATE = struct.Struct("<BHBB")
_DATETIME = struct.Struct("<BHBBBBB")
_DATETIME_MICROS = struct.Struct("<BHBBBBBI")
_TIME = struct.Struct("<BBIBBB")
_TIME_MICROS = struct.Struct("<BBIBBBI")


def _binary_encoder(spec: ColumnSpec) -> TextEncoder:
    if spec.int_format is not None:
        pack = spec.int_format.pack
        return lambda value: pack(int(value))
    if spec.type == ColumnType.FLOAT:
        return lambda value: _FLOAT.pack(float(value))
    if spec.type == ColumnType.DOUBLE:
        return lambda value: _DOUBLE.pack(float(value))
    if spec.type == ColumnType.DATE:
        return _binary_date
    if spec.type in (ColumnType.DATETIME, ColumnType.TIMESTAMP):
        return _binary_datetime
    if spec.type == ColumnType.TIME:
        return _binary_time
    text = _text_encoder(spec)
    return lambda value: lenenc_bytes(text(value))


def _binary_date(value: Any) -> bytes:
    if isinstance(value, datetime):
        value = value.date()
    elif isinstance(value, str):
        value = date.fromisoformat(value)
    return _DATE.pack(4, value.year, value.month, value.day)


def _binary_datetime(value: Any) -> bytes:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return _DATE.pack(4, value.year, value.month, value.day)
    if value.microsecond:
        return _DATETIME_MICROS.pack(
            11,
            value.year,
            value.month,
            value.day,
            value.hour,
            value.minute,
            value.second,
            value.microsecond,
        )
    return _DATETIME.pack(
        7, value.year, value.month, value.day, value.hour, value.minute, value.second
    )


def _binary_time(value: Any) -> bytes:
    if isinstance(value, time):
        value = timedelta(
            hours=value.hour,
            minutes=value.minute,
            seconds=value.second,
            microseconds=value.microsecond,
        )
    if isinstance(value, str):
        value = _parse_time(value)
    negative = value < timedelta(0)
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if value.microseconds:
        return _TIME_MICROS.pack(
            12, negative, value.days, hours, minutes, seconds, value.microseconds
        )
    if not (value.days or value.seconds):
        return b"\x00"
    return _TIME.pack(8, negative, value.days, hours, minutes, seconds)


_TIME_TEXT = re.compile(r"^(-?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")


def _parse_time(text: str) -> timedelta:
    match = _TIME_TEXT.match(text.strip())
    if not match:
        raise ValueError(f"not a TIME value: {text!r}")
    sign, hours, minutes, seconds, fraction = match.groups()
    value = timedelta(
        hours=int(hours),
        minutes=int(minutes),
        seconds=int(seconds),
        microseconds=int((fraction or "0").ljust(6, "0")),
    )
    return -value if sign else value


def binary_row(row: Sequence[Any], columns: Sequence[Column]) -> bytes:
    """A binary protocol result row: header, NULL bitmap (offset 2), then non-NULL values."""
    count = len(columns)
    assert len(row) == count, (len(row), count)
    bitmap = bytearray((count + 9) // 8)
    values = []
    for i in range(count):
        value = row[i]
        if value is None:
            bit = i + 2
            bitmap[bit >> 3] |= 1 << (bit & 7)
        else:
            values.append(columns[i].binary(value))
    return b"\x00" + bytes(bitmap) + b"".join(values)
