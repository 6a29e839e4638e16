"""Values written into a column, checked and converted as MySQL's strict mode does: each bad value
is refused with MySQL's error and the row it is on, and nothing of the statement is written."""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import json
import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from be.load.convert import compact_json
from fe.mysql.errors import ErrorCode, QueryError
from fe.sql.literal_insert import LiteralColumn
from metadata.records import Column
from metadata.types import INTEGER_BITS

DATE_TEXT = re.compile(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$")
DATETIME_TEXT = re.compile(
    r"\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6})\d*)?)?)?\s*$"
)
COMPACT_DATE = re.compile(r"\s*(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2}))?\s*$")
LARGEINT_BITS = 128
DECIMAL_CONTEXT = decimal.Context(prec=80, rounding=decimal.ROUND_HALF_UP)


def default_value(text: str | None, now: datetime.datetime):
    """A column's default (its SQL text) as a statement writes it: None for none or NULL, now
    for CURRENT_TIMESTAMP, a quoted string unquoted (a doubled quote one), else the text."""
    if text is None or text.upper() == "NULL":
        return None
    if text.upper().startswith(("CURRENT_TIMESTAMP", "NOW")):
        return now
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].replace(text[0] * 2, text[0])
    return text


def column_array(values: Sequence, column: Column, first_row: int = 1) -> pa.Array:
    """values as column's Arrow array; first_row numbers the first value as MySQL's messages do."""
    if len(values) >= VECTORISED_FROM:
        array = _vectorised(values, column)
        if array is not None:
            return array
    convert = _converter(column)
    converted = []
    for row, value in enumerate(values, first_row):
        if value is None:
            if not column.nullable:
                raise QueryError(ErrorCode.BAD_NULL_ERROR, f"Column '{column.name}' cannot be null")
            converted.append(None)
            continue
        converted.append(convert(value, row))
    return pa.array(converted, column.type.arrow)


def column_value(value, column: Column, row: int = 1):
    """One value as column_array would give it back, in Python when the column keeps what the
    conversion gives as it is (an integer column's int, a text column's str)."""
    if _kept_as_converted(column):
        if value is None:
            if not column.nullable:
                raise QueryError(ErrorCode.BAD_NULL_ERROR, f"Column '{column.name}' cannot be null")
            return None
        return _converter(column)(value, row)
    return column_array([value], column, row).to_pylist()[0]


def _kept_as_converted(column: Column) -> bool:
    base, arrow = column.type.base, column.type.arrow
    if base in INTEGER_BITS and base != "LARGEINT":
        return pa.types.is_signed_integer(arrow)
    if column.type.is_character and base not in ("JSON", "JSONB", "VARIANT"):
        return arrow in (pa.string(), pa.large_string())
    return False


VECTORISED_FROM = 16  # values of a column converted by Arrow at once, when they are plain
LEAST_DATE = datetime.date(1, 1, 1)
INTEGERS = frozenset((int, type(None)))  # exactly: bool is no plain integer here
TEXTS = frozenset((str, type(None)))
DECIMALS = frozenset((int, decimal.Decimal, type(None)))


def _vectorised(values: Sequence, column: Column) -> pa.Array | None:
    """values converted by Arrow in one go when every one is plain and fits (integers for an
    integer column, text that fits for a character one, ISO dates, decimals of the column's
    scale); None when one is not: the value by value conversion then finds the error and its
    row, or converts as MySQL does what Arrow does not read."""
    if None in values and not column.nullable:
        return None
    base = column.type.base
    try:
        if base in INTEGER_BITS and base != "LARGEINT":
            if not INTEGERS.issuperset(map(type, values)):
                return None
            return _in_range(pa.array(values, pa.int64()), column)
        if column.type.is_character and base not in ("JSON", "JSONB", "VARIANT"):
            if not TEXTS.issuperset(map(type, values)):
                return None
            return _fitting(pa.array(values, pa.string()), column)
        if base in ("DATE", "DATEV1", "DATEV2"):
            if not TEXTS.issuperset(map(type, values)):
                return None
            return _iso_dates(pa.array(values, pa.string()))
        if base in DECIMAL_BASES:
            if not DECIMALS.issuperset(map(type, values)):
                return None
            return pa.array(values, column.type.arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    return None


def literal_array(literal: LiteralColumn, column: Column) -> pa.Array | None:
    """A column of literal values read from the text converted by Arrow in one go, when they
    are plain as _vectorised takes them (integers for an integer column, strings that fit for
    a character one, ISO dates, numbers of the column's scale for a decimal); None when not."""
    texts = literal.texts
    if texts.null_count and not column.nullable:
        return None
    base = column.type.base
    try:
        if base in INTEGER_BITS and base != "LARGEINT":
            if not literal.integers:
                return None
            return _in_range(texts.cast(pa.int64()), column)
        if column.type.is_character and base not in ("JSON", "JSONB", "VARIANT"):
            return _fitting(texts, column) if literal.strings else None
        if base in ("DATE", "DATEV1", "DATEV2"):
            return _iso_dates(texts) if literal.strings else None
        if base in DECIMAL_BASES:
            return texts.cast(column.type.arrow) if literal.numbers else None
        if base == "DOUBLE" and literal.numbers:
            return _finite_doubles(texts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    return None


def _finite_doubles(texts: pa.StringArray) -> pa.Array | None:
    """Number literals as doubles, each the nearest to its decimal value as float(Decimal) gives
    it; None for one too large (out of range) or an integer -0 (MySQL's 0, Arrow's -0.0)."""
    if pc.any(pc.match_substring_regex(texts, "^-0+$")).as_py():
        return None
    doubles = texts.cast(pa.float64())
    return None if pc.any(pc.is_inf(doubles)).as_py() else doubles


def _in_range(array: pa.Array, column: Column) -> pa.Array | None:
    bits = INTEGER_BITS[column.type.base]
    if bits == 64 and column.type.arrow == pa.int64():
        return array  # int64 holds every BIGINT
    extremes = pc.min_max(array)
    least, most = extremes["min"], extremes["max"]
    if least.is_valid and not (
        -(1 << (bits - 1)) <= least.as_py() and most.as_py() < (1 << (bits - 1))
    ):
        return None
    return array.cast(column.type.arrow)


def _fitting(array: pa.Array, column: Column) -> pa.Array | None:
    length = column.type.character_length if column.type.name in ("CHAR", "VARCHAR") else None
    if length is not None and (pc.max(pc.utf8_length(array)).as_py() or 0) > length:
        return None
    return array


def _iso_dates(array: pa.Array) -> pa.Array | None:
    dates = array.cast(pa.date32())
    least = pc.min(dates).as_py()
    return dates if least is None or least >= LEAST_DATE else None


DECIMAL_BASES = ("DECIMAL", "DECIMALV2", "DECIMALV3", "DECIMAL32", "DECIMAL64", "DECIMAL128I")


def _converter(column: Column):
    base = column.type.base
    if base in INTEGER_BITS or base == "LARGEINT":
        bits = LARGEINT_BITS if base == "LARGEINT" else INTEGER_BITS[base]
        return lambda value, row: _integer(value, row, column, bits)
    if base == "BOOLEAN":
        return lambda value, row: _integer(value, row, column, 8) != 0
    if base in DECIMAL_BASES:
        precision = column.type.numeric_precision
        scale = column.type.numeric_scale
        return lambda value, row: _decimal(value, row, column, precision, scale)
    if base in ("FLOAT", "DOUBLE"):
        return lambda value, row: _float(value, row, column)
    if base in ("DATE", "DATEV1", "DATEV2"):
        return lambda value, row: _date(value, row, column)
    if base in ("DATETIME", "DATETIMEV1", "DATETIMEV2", "TIMESTAMP"):
        precision = column.type.arguments[0] if column.type.arguments else 0
        return lambda value, row: _datetime(value, row, column, precision)
    if base in ("JSON", "JSONB"):
        return lambda value, row: _json(value, row, column)
    if column.type.is_character or base == "VARIANT":
        length = column.type.character_length if column.type.name in ("CHAR", "VARCHAR") else None
        return lambda value, row: _text(value, row, column, length)
    if base in NESTED:
        return _nested_converter(column)
    if base in ("IPV4", "IPV6"):
        kind = ipaddress.IPv4Address if base == "IPV4" else ipaddress.IPv6Address
        return lambda value, row: _address(value, row, column, kind)
    if base in SET_TYPES:
        return lambda value, row: _set_value(value, row, column)
    if base in STATE_TYPES:
        return lambda value, row: _not_written(column)
    return lambda value, row: value


NESTED = ("ARRAY", "MAP", "STRUCT")
SET_TYPES = ("BITMAP", "HLL")  # written by their functions: TO_BITMAP(x), HLL_HASH(x), ...
STATE_TYPES = ("QUANTILE_STATE",)  # written by its functions, none offered yet
UINT64 = range(1 << 64)


def _set_value(value, row: int, column: Column):
    """A BITMAP's or HLL's value as its functions make it: a list of distinct UBIGINTs."""
    if value is None or (
        type(value) is list and all(type(v) is int and v in UINT64 for v in value)
    ):
        return None if value is None else sorted(set(value))
    raise QueryError(
        ErrorCode.TRUNCATED_WRONG_VALUE_FOR_FIELD,
        f"Incorrect {column.type.base.lower()} value for column '{column.name}' at row {row}: "
        f"write one with {'TO_BITMAP' if column.type.base == 'BITMAP' else 'HLL_HASH'}(...)",
    )


def _not_written(column: Column):
    raise QueryError(
        ErrorCode.NOT_SUPPORTED_YET,
        f"This version of Quire doesn't yet support writing {column.type.base} values "
        f"(column '{column.name}')",
    )


def _nested_converter(column: Column):
    """An ARRAY, MAP or STRUCT value: as the engine gives it, or its text as Doris writes it
    (`[1, 2]`, `{"k": 1}`, `{"a": 1, "b": "x"}`); each element converted as a column of its
    type converts it."""
    column_type = column.type
    if column_type.base == "ARRAY":
        element = _converter(_element_column(column, column_type.elements[0]))
        return lambda value, row: [
            None if item is None else element(item, row)
            for item in _parsed(value, row, column, list)
        ]
    if column_type.base == "MAP":
        key_type, value_type = column_type.elements
        key, item = (
            _converter(_element_column(column, key_type)),
            _converter(_element_column(column, value_type)),
        )

        def as_map(value, row):
            pairs = _parsed(value, row, column, dict).items()
            return [(key(k, row), None if v is None else item(v, row)) for k, v in pairs]

        return as_map
    fields = [
        (name, _converter(_element_column(column, kind))) for name, kind in column_type.fields
    ]

    names = [name.lower() for name, _ in fields]
    positional = [f"col{i}" for i in range(1, len(names) + 1)]

    def as_struct(value, row):
        given = _parsed(value, row, column, dict)
        by_name = {str(name).lower(): item for name, item in given.items()}
        if list(by_name) == positional:  # STRUCT(x, y) names its fields col1, col2: by position
            by_name = dict(zip(names, given.values(), strict=True))
        if len(by_name) != len(given) or not set(by_name) <= set(names):
            raise _incorrect("STRUCT", value, row, column)
        return {
            name.lower(): None
            if by_name.get(name.lower()) is None
            else convert(by_name[name.lower()], row)
            for name, convert in fields
        }

    return as_struct


def _element_column(column: Column, element_type) -> Column:
    return Column(column.name, element_type)


def _parsed(value, row: int, column: Column, wanted: type):
    """value (a list or dict as given, or its JSON text) as wanted, else MySQL's 1366."""
    if isinstance(value, wanted):
        return value
    if isinstance(value, str | bytes):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, wanted):
            return parsed
    raise _incorrect(column.type.base, value, row, column)


def _address(value, row: int, column: Column, kind) -> str:
    """An IPv4 or IPv6 address, kept as its canonical text."""
    try:
        return str(kind(value.strip() if isinstance(value, str) else value))
    except (ValueError, TypeError):
        raise _incorrect(column.type.base, value, row, column) from None


def _incorrect(
    kind: str, value, row: int, column: Column, code=ErrorCode.TRUNCATED_WRONG_VALUE_FOR_FIELD
):
    return QueryError(
        code, f"Incorrect {kind} value: '{_shown(value)}' for column '{column.name}' at row {row}"
    )


def _out_of_range(row: int, column: Column) -> QueryError:
    return QueryError(
        ErrorCode.DATA_OUT_OF_RANGE, f"Out of range value for column '{column.name}' at row {row}"
    )


def _shown(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _number(value, row: int, column: Column, kind: str) -> decimal.Decimal | float:
    if isinstance(value, bool):
        return decimal.Decimal(int(value))
    if isinstance(value, int):
        return decimal.Decimal(value)
    if isinstance(value, decimal.Decimal | float):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            raise _incorrect(kind, value, row, column) from None
    if isinstance(value, datetime.datetime):
        return decimal.Decimal(value.strftime("%Y%m%d%H%M%S"))
    if isinstance(value, datetime.date):
        return decimal.Decimal(value.strftime("%Y%m%d"))
    raise _incorrect(kind, value, row, column)


def _integer(value, row: int, column: Column, bits: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        number = _number(value, row, column, "integer")
        if isinstance(number, float):
            if number != number or number in (float("inf"), float("-inf")):
                raise _out_of_range(row, column)
            number = decimal.Decimal(number)
        if not number.is_finite():
            raise _incorrect("integer", value, row, column)
        number = int(number.to_integral_value(rounding=decimal.ROUND_HALF_UP))
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise _out_of_range(row, column)
    return number


def _decimal(value, row: int, column: Column, precision: int, scale: int) -> decimal.Decimal:
    number = _number(value, row, column, "decimal")
    if isinstance(number, float):
        if number != number or number in (float("inf"), float("-inf")):
            raise _out_of_range(row, column)
        number = decimal.Decimal(repr(number))
    if not number.is_finite():
        raise _incorrect("decimal", value, row, column)
    quantum = decimal.Decimal(1).scaleb(-scale)
    rounded = number.quantize(quantum, context=DECIMAL_CONTEXT)
    if abs(rounded) >= decimal.Decimal(10) ** (precision - scale):
        raise _out_of_range(row, column)
    return rounded


def _float(value, row: int, column: Column) -> float:
    number = _number(value, row, column, "double")
    result = float(number)
    if result in (float("inf"), float("-inf")) or result != result:
        raise _out_of_range(row, column)
    if column.type.base == "FLOAT" and abs(result) > 3.402823466e38:
        raise _out_of_range(row, column)
    return result


def _date(value, row: int, column: Column) -> datetime.date:
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    moment = parse_moment(value)
    if moment is None:
        raise _incorrect("date", value, row, column, ErrorCode.TRUNCATED_WRONG_VALUE)
    return moment.date()


def _datetime(value, row: int, column: Column, precision: int) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        moment = value.replace(tzinfo=None)
    elif isinstance(value, datetime.date):
        moment = datetime.datetime(value.year, value.month, value.day)
    else:
        moment = parse_moment(value)
        if moment is None:
            raise _incorrect("datetime", value, row, column, ErrorCode.TRUNCATED_WRONG_VALUE)
    if precision < 6 and moment.microsecond:
        unit = 10 ** (6 - precision)
        micros = (moment.microsecond + unit // 2) // unit * unit
        moment = moment.replace(microsecond=0) + datetime.timedelta(microseconds=micros)
    return moment


def parse_moment(value) -> datetime.datetime | None:
    """A date or datetime written as text ('2024-01-31', '2024-01-31 10:00:00.5') or as a number
    (20240131, 20240131100000), as MySQL reads them; None if it is none."""
    text = _shown(value) if not isinstance(value, int | decimal.Decimal) else str(value)
    match = DATETIME_TEXT.match(text) or COMPACT_DATE.match(text)
    if match is None:
        return None
    parts = [part for part in match.groups()]
    fraction = parts[6] if len(parts) > 6 else None
    numbers = [int(part) if part else 0 for part in parts[:6]]
    micros = int((fraction or "0").ljust(6, "0")) if fraction else 0
    try:
        return datetime.datetime(*numbers, micros)
    except ValueError:
        return None


def _json(value, row: int, column: Column) -> str:
    """A JSON column's value: JSON text, kept compact as Doris's JSONB gives it back (MySQL's
    3140 for text that is no JSON)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    try:
        return compact_json(value)
    except (ValueError, RecursionError) as error:
        place = getattr(error, "pos", 0)
        raise QueryError(
            ErrorCode.INVALID_JSON_TEXT,
            f'Invalid JSON text: "{getattr(error, "msg", "Invalid value.")}" at position '
            f"{place} in value for column '{column.name}' at row {row}.",
        ) from None


def _text(value, row: int, column: Column, length: int | None) -> str:
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = str(int(value))
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
    else:
        text = str(value)
    if length is not None and len(text) > length:
        raise QueryError(
            ErrorCode.DATA_TOO_LONG, f"Data too long for column '{column.name}' at row {row}"
        )
    return text
