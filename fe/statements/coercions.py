"""MySQL's implicit conversions as casts on the sqlglot tree.

A function or operator given a value of another kind than it takes gets it converted as MySQL
converts it where DuckDB would refuse it: a number or a date to a string function (LENGTH(1)), a
string or a date to arithmetic ('3' * '4', DATE '2024-01-02' + 1), a number to a date function
(YEAR(20240102)), values of different kinds where one kind is needed (IFNULL(1, DATE '2024-01-02')).
Kinds come from sqlglot's type annotation, a table's columns from its definition (typed_columns);
a value of unknown type is left as it is.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.scope import traverse_scope

from fe.mysql.errors import ErrorCode, QueryError

Type = exp.DataType.Type

TEXT, NUMBER, INTEGER, TEMPORAL, BOOLEAN = "text", "number", "integer", "temporal", "boolean"

NUMBER_PREFIX = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", re.IGNORECASE)
NUMBER_PREFIX_SQL = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d", "%Y%m%d%H%M%S", "%Y%m%d")  # MySQL's readings
ZERO = exp.Literal.string("0")
NUMBER_FORMATS = {Type.DATE: "%Y%m%d", Type.TIME: "%H%M%S"}  # other temporals: %Y%m%d%H%M%S

_ALL = ("this", "expression", "expressions")
TAKES_TEXT: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Length: ("this",), exp.Upper: ("this",), exp.Lower: ("this",), exp.Trim: ("this",),
    exp.Reverse: ("this",), exp.Ascii: ("this",), exp.MD5: ("this",), exp.SHA: ("this",),
    exp.SHA2: ("this",), exp.ToBase64: ("this",), exp.FromBase64: ("this",),
    exp.Concat: ("expressions",), exp.ConcatWs: ("expressions",), exp.Left: ("this",),
    exp.Right: ("this",), exp.Repeat: ("this",), exp.Substring: ("this",),
    exp.Pad: ("this", "fill_pattern"), exp.Replace: ("this", "expression", "replacement"),
    exp.StrPosition: ("this", "substr"), exp.SubstringIndex: ("this", "delimiter"),
    exp.Like: ("this", "expression"), exp.RegexpLike: ("this", "expression"),
    exp.TimeToStr: ("format",),
}  # fmt: skip
TAKES_TEXT_ANONYMOUS = {"FIND_IN_SET", "STRCMP", "JSON_UNQUOTE"}
TAKES_NUMBER: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Abs: ("this",), exp.Ceil: ("this",), exp.Floor: ("this",), exp.Sign: ("this",),
    exp.Sqrt: ("this",), exp.Exp: ("this",), exp.Ln: ("this",), exp.Log: ("this", "expression"),
    exp.Sin: ("this",), exp.Cos: ("this",), exp.Tan: ("this",), exp.Cot: ("this",),
    exp.Asin: ("this",), exp.Acos: ("this",), exp.Atan: ("this",), exp.Atan2: ("this", "expression"),
    exp.Degrees: ("this",), exp.Radians: ("this",), exp.Pow: ("this", "expression"),
    exp.Round: ("this",), exp.Trunc: ("this",), exp.UnixToTime: ("this",),
    exp.Add: _ALL, exp.Sub: _ALL, exp.Mul: _ALL, exp.Div: _ALL, exp.IntDiv: _ALL, exp.Mod: _ALL,
    exp.Neg: _ALL, exp.Sum: ("this",), exp.Avg: ("this",), exp.Stddev: ("this",),
    exp.StddevPop: ("this",), exp.StddevSamp: ("this",), exp.Variance: ("this",),
    exp.VariancePop: ("this",),
}  # fmt: skip
TAKES_NUMBER_ANONYMOUS = {"SEC_TO_TIME"}
TAKES_INTEGER: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Round: ("decimals",), exp.Trunc: ("decimals",), exp.Space: ("this",),
    exp.Left: ("expression",), exp.Right: ("expression",), exp.Repeat: ("times",),
    exp.Substring: ("start", "length"), exp.Pad: ("expression",), exp.SubstringIndex: ("count",),
    exp.StrPosition: ("position",), exp.BitwiseAnd: _ALL, exp.BitwiseOr: _ALL,
    exp.BitwiseXor: _ALL, exp.BitwiseNot: _ALL, exp.BitwiseLeftShift: _ALL,
    exp.BitwiseRightShift: _ALL,
}  # fmt: skip
TAKES_INTEGER_ANONYMOUS = {"BIN", "PERIOD_DIFF"}
TAKES_DATE: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.TsOrDsToDate: ("this",), exp.TsOrDsToTimestamp: ("this",), exp.Dayname: ("this",),
    exp.Monthname: ("this",), exp.LastDay: ("this",), exp.Hour: ("this",), exp.Minute: ("this",),
    exp.Second: ("this",), exp.Year: ("this",), exp.Month: ("this",), exp.Day: ("this",),
    exp.Quarter: ("this",), exp.DayOfWeek: ("this",), exp.DayOfMonth: ("this",),
    exp.DayOfYear: ("this",), exp.DateDiff: ("this", "expression"), exp.Extract: ("expression",),
    exp.DateAdd: ("this",), exp.DateSub: ("this",), exp.TimeToStr: ("this",),
}  # fmt: skip
TAKES_DATE_ANONYMOUS = {"UNIX_TIMESTAMP", "WEEKDAY"}
COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)
CASE_INSENSITIVE = "NOCASE"  # DuckDB's collation for MySQL's *_ci ones
ONE_KIND: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Coalesce: ("this", "expressions"), exp.Greatest: ("this", "expressions"),
    exp.Least: ("this", "expressions"), exp.If: ("true", "false"), exp.Nullif: ("this", "expression"),
}  # fmt: skip


# A table column's type as far as conversions care (others are left unknown).
COLUMN_TYPES = {
    "CHAR": Type.VARCHAR,
    "VARCHAR": Type.VARCHAR,
    "STRING": Type.VARCHAR,
    "TINYINT": Type.TINYINT,
    "SMALLINT": Type.SMALLINT,
    "MEDIUMINT": Type.INT,
    "INT": Type.INT,
    "BIGINT": Type.BIGINT,
    "LARGEINT": Type.INT128,
    "FLOAT": Type.FLOAT,
    "DOUBLE": Type.DOUBLE,
    "DECIMAL": Type.DECIMAL,
    "DECIMALV2": Type.DECIMAL,
    "DECIMALV3": Type.DECIMAL,
    "DATE": Type.DATE,
    "DATEV1": Type.DATE,
    "DATEV2": Type.DATE,
    "DATETIME": Type.DATETIME,
    "DATETIMEV1": Type.DATETIME,
    "DATETIMEV2": Type.DATETIME,
    "TIMESTAMP": Type.DATETIME,
    "BOOLEAN": Type.BOOLEAN,
    "MAP": Type.MAP,  # m['k'] is its value, not an element of a list
    "VARIANT": Type.VARIANT,  # v['k'] is its member (arrays._item)
}


def typed_columns(tree: exp.Expression, columns_of) -> None:
    """The columns of tree that name a column of a table get its type: columns_of(table) gives
    a table node's column types by lower-case name (metadata ColumnType), None if not a table
    of the catalog (information_schema). A column read from a derived table or a WITH query
    gets the type of the column it selects (`SELECT a * 2 FROM (SELECT c AS a FROM t) q`). A
    column is typed where it names one column of one source of its scope."""
    for scope in traverse_scope(tree):  # inner scopes first: their columns typed already
        sources: dict[str, dict | None] = {}
        for name, (_, source) in scope.selected_sources.items():
            if isinstance(source, exp.Table):
                sources[name] = columns_of(source)
            else:
                sources[name] = _selected_types(source.expression)
        for column in scope.columns:
            columns = _holder(column, sources)
            found = None if columns is None else columns.get(column.name.lower())
            if isinstance(found, exp.DataType):
                column.type = found.copy()
                continue
            data_type = None if found is None else COLUMN_TYPES.get(found.base)
            if data_type is not None:
                column.type = exp.DataType.build(data_type)


def _selected_types(query: exp.Expression) -> dict[str, exp.DataType | None] | None:
    """A derived table's or WITH query's columns by lower-case name: the type of each that
    selects a typed column (None for others); None if its columns are not known by name."""
    if not isinstance(query, exp.Query) or any(isinstance(s, exp.Star) for s in query.selects):
        return None
    types: dict[str, exp.DataType | None] = {}
    for selected in query.selects:
        inner = selected.this if isinstance(selected, exp.Alias) else selected
        known = isinstance(inner, exp.Column) and inner.type is not None
        types[selected.alias_or_name.lower()] = inner.type if known else None
    return types


def _holder(column: exp.Column, sources: dict[str, dict | None]) -> dict | None:
    if column.table:
        return sources.get(column.table)
    if any(columns is None for columns in sources.values()):
        return None
    holders = [columns for columns in sources.values() if column.name.lower() in columns]
    return holders[0] if len(holders) == 1 else None


def kind(node: exp.Expression) -> str | None:
    """The kind of value node gives, if its type is known."""
    data_type = node.type
    if data_type is None or data_type.this in (Type.UNKNOWN, Type.NULL):
        return None
    if data_type.this == Type.BOOLEAN:
        return BOOLEAN
    if data_type.this in exp.DataType.TEXT_TYPES:
        return TEXT
    if data_type.this in exp.DataType.INTEGER_TYPES:
        return INTEGER
    if data_type.this in exp.DataType.NUMERIC_TYPES:
        return NUMBER
    if data_type.this in exp.DataType.TEMPORAL_TYPES:
        return TEMPORAL
    return None


def coerced(tree: exp.Expression) -> exp.Expression:
    """tree with a conversion wherever MySQL converts implicitly and DuckDB would not."""
    try:
        annotate_types(tree, dialect="mysql", overwrite_types=False)
    except SqlglotError:
        return tree
    for node in reversed(list(tree.walk())):
        if isinstance(node, exp.Add) and _is_interval(node.this):
            node = _replace(node, _interval_first(node))
        elif isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
            node = _replace(node, _date_arithmetic(node))
        if isinstance(node, exp.Collate):
            node = _replace(node, _collated(node))
            continue
        if isinstance(node, COMPARISONS):
            _compared(node)
        if isinstance(node, exp.In | exp.Between):
            _compared_with_each(node)
        name = node.name.upper() if isinstance(node, exp.Anonymous) else None
        if type(node) in TAKES_TEXT or name in TAKES_TEXT_ANONYMOUS:
            _convert(node, TAKES_TEXT.get(type(node), ("expressions",)), TEXT, as_text)
        if type(node) in TAKES_NUMBER or name in TAKES_NUMBER_ANONYMOUS:
            _convert(node, TAKES_NUMBER.get(type(node), ("expressions",)), NUMBER, as_number)
        if type(node) in TAKES_INTEGER or name in TAKES_INTEGER_ANONYMOUS:
            bits = isinstance(node, exp.Binary | exp.BitwiseNot | exp.Anonymous)
            to_integer = as_bits if bits else as_integer
            _convert(node, TAKES_INTEGER.get(type(node), ("expressions",)), INTEGER, to_integer)
        if type(node) in TAKES_DATE or name in TAKES_DATE_ANONYMOUS:
            _convert(node, TAKES_DATE.get(type(node), ("expressions",)), TEMPORAL, as_date)
        if isinstance(node, exp.ToBase64) and kind(node.this) and not _is_string(node.this):
            node.set("this", exp.Anonymous(this="ENCODE", expressions=[as_text(node.this)]))
        if type(node) in ONE_KIND or isinstance(node, exp.Case):
            _one_kind(node)
        if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Neg):
            _widened(node)
    return tree


WIDENED = "quire_widened"  # the meta key of arithmetic _widened made BIGINT
NARROW_INTEGERS = {
    Type.TINYINT, Type.UTINYINT, Type.SMALLINT, Type.USMALLINT, Type.MEDIUMINT, Type.UMEDIUMINT,
    Type.INT, Type.UINT,
}  # fmt: skip


def _widened(node: exp.Add | exp.Sub | exp.Mul | exp.Neg) -> None:
    """Integer arithmetic in BIGINT, as MySQL and Doris do it (INT max + 1 is 2147483648):
    DuckDB computes it in the operands' own type, which overflows."""
    keys = ("this",) if isinstance(node, exp.Neg) else ("this", "expression")
    operands = [node.args.get(key) for key in keys]
    if not all(isinstance(value, exp.Expression) and kind(value) == INTEGER for value in operands):
        return
    for key, value in zip(keys, operands, strict=True):
        if value.type.this in NARROW_INTEGERS and not isinstance(value, exp.Literal):
            node.set(key, _typed(exp.cast(value, Type.BIGINT), Type.BIGINT))
    _typed(node, Type.BIGINT).meta[WIDENED] = True


def _results(node: exp.Expression) -> list[exp.Expression]:
    """The values node may give: IFNULL's and COALESCE's arguments, IF's and CASE's results."""
    if isinstance(node, exp.Case):
        values = [branch.args.get("true") for branch in node.args["ifs"]]
        values.append(node.args.get("default"))
    else:
        values = [node.args.get(key) for key in ONE_KIND[type(node)]]
    return [
        value
        for item in values
        for value in (item if isinstance(item, list) else [item])
        if isinstance(value, exp.Expression)
    ]


def _replace(node: exp.Expression, new: exp.Expression) -> exp.Expression:
    if new is not node:
        node.replace(new)
    return new


def _date_arithmetic(node: exp.Add | exp.Sub) -> exp.Expression:
    """`x + INTERVAL n unit` is DATE_ADD(x, INTERVAL n unit), x read as a date."""
    interval = node.expression
    kind_ = exp.DateAdd if isinstance(node, exp.Add) else exp.DateSub
    unit = interval.args.get("unit") or exp.var("DAY")
    return kind_(this=node.this, expression=interval.this, unit=unit)


def _is_interval(node: exp.Expression) -> bool:
    return isinstance(node, exp.Interval) and node.args.get("unit") is not None


def _interval_first(node: exp.Add) -> exp.Expression:
    """`INTERVAL n unit + x` is DATE_ADD(x, INTERVAL n unit), as in MySQL (sqlglot reads a
    string after it as a second interval, with no unit)."""
    interval, value = node.this, node.expression
    if isinstance(value, exp.Interval) and value.args.get("unit") is None:
        value = value.this
    return exp.DateAdd(this=value, expression=interval.this, unit=interval.args["unit"])


def _collated(node: exp.Collate) -> exp.Expression:
    """A string with a collation compares as DuckDB does by default (utf8mb4_bin) or without
    case (*_ci); a number has no collation (MySQL's error), a date is its text."""
    value, collation = node.this, node.expression.name
    if kind(value) in (NUMBER, INTEGER, BOOLEAN):
        raise QueryError(
            ErrorCode.COLLATION_CHARSET_MISMATCH,
            f"COLLATION '{collation}' is not valid for CHARACTER SET 'binary'",
        )
    if kind(value) == TEMPORAL:
        value = as_text(value)
    if not collation.lower().endswith("_ci"):
        return value
    return exp.Collate(this=value, expression=exp.var(CASE_INSENSITIVE))


def _compared(node: exp.Binary) -> None:
    """A number compared with a string or a date compares as numbers, as in MySQL."""
    kinds = {kind(node.this), kind(node.expression)}
    if not kinds & {NUMBER, INTEGER} or not kinds & {TEXT, TEMPORAL}:
        return
    for key in ("this", "expression"):
        if kind(node.args[key]) in (TEXT, TEMPORAL):
            node.set(key, as_number(node.args[key]))


def _compared_with_each(node: exp.In | exp.Between) -> None:
    """`x IN (...)` and `x BETWEEN a AND b` compare as numbers where x is a string or a date and
    the others numbers, or x a number and the others strings, as MySQL's do."""
    others = node.args.get("expressions") or [node.args.get("low"), node.args.get("high")]
    others_kinds = {kind(other) for other in others if isinstance(other, exp.Expression)}
    this_kind = kind(node.this)
    if this_kind in (TEXT, TEMPORAL) and others_kinds and others_kinds <= {NUMBER, INTEGER}:
        node.set("this", as_number(node.this))
    elif this_kind in (NUMBER, INTEGER) and TEXT in others_kinds:
        for key in ("expressions", "low", "high"):
            value = node.args.get(key)
            if isinstance(value, list):
                node.set(key, [_as_number_if_text(item) for item in value])
            elif isinstance(value, exp.Expression):
                node.set(key, _as_number_if_text(value))


def _as_number_if_text(value: exp.Expression) -> exp.Expression:
    return as_number(value) if kind(value) == TEXT else value


def _convert(node: exp.Expression, keys: tuple[str, ...], wanted: str, conversion) -> None:
    for key in keys:
        value = node.args.get(key)
        if isinstance(value, list):
            node.set(key, [_converted(item, wanted, conversion) for item in value])
        elif isinstance(value, exp.Expression):
            node.set(key, _converted(value, wanted, conversion))


def _converted(value: exp.Expression, wanted: str, conversion) -> exp.Expression:
    if isinstance(value, exp.Null):
        return _typed(exp.cast(value, NULL_TYPES[wanted]), NULL_TYPES[wanted])
    have = kind(value)
    if wanted == NUMBER and have == INTEGER:
        return value
    if conversion is as_integer and value.meta.get(WIDENED):  # a count: DuckDB takes an INT
        return conversion(value)
    if have is None or have == wanted or (wanted == TEMPORAL and have == TEXT):
        return value  # a string read as a date is DuckDB's cast, as mysql_functions makes it
    return conversion(value)


ONE_KIND_OF = {INTEGER: NUMBER, BOOLEAN: NUMBER}  # numbers of any kind make one kind


def _one_kind(node: exp.Expression) -> None:
    """Values of different kinds where one is needed are compared and given as strings; so are
    the values of unknown kind (a column's) beside a string (MySQL's IFNULL(d, 'none') is a
    string, where DuckDB would read 'none' as d's type), but for NULLIF, GREATEST and LEAST."""
    values = _results(node)
    kinds = {ONE_KIND_OF.get(kind(value), kind(value)) for value in values} - {None}
    if TEXT in kinds and isinstance(node, exp.Coalesce | exp.If | exp.Case):
        for value in values:
            if kind(value) is None and not isinstance(value, exp.Null):
                value.replace(as_text(value.copy()))
    if len(kinds) < 2:
        return
    for value in values:
        if kind(value) not in (None, TEXT):
            value.replace(as_text(value.copy()))


def _is_string(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


NULL_TYPES = {
    TEXT: Type.VARCHAR, NUMBER: Type.DOUBLE, INTEGER: Type.INT, TEMPORAL: Type.TIMESTAMP,
}  # fmt: skip


def _typed(node: exp.Expression, type_: Type) -> exp.Expression:
    node.type = exp.DataType.build(type_)
    return node


def as_text(value: exp.Expression) -> exp.Expression:
    """value as MySQL writes it as a string (true is '1')."""
    if kind(value) == BOOLEAN:
        value = exp.cast(value, Type.INT)
    return _typed(exp.cast(value, Type.VARCHAR), Type.VARCHAR)


def as_number(value: exp.Expression) -> exp.Expression:
    """value as MySQL reads it as a number: a string by the number it starts with ('a' is 0), a
    date by its digits (DATE '2024-01-02' is 20240102)."""
    if kind(value) == BOOLEAN:
        return _typed(exp.cast(value, Type.INT), Type.INT)
    if kind(value) == TEMPORAL:
        digits = NUMBER_FORMATS.get(value.type.this, "%Y%m%d%H%M%S")
        text = exp.Anonymous(this="STRFTIME", expressions=[value, exp.Literal.string(digits)])
        return _typed(exp.cast(text, Type.BIGINT), Type.BIGINT)
    if _is_string(value):
        prefix = NUMBER_PREFIX.match(value.this)
        return _typed(exp.Literal.number(prefix.group(0).strip() if prefix else 0), Type.DOUBLE)
    prefix = exp.Anonymous(
        this="REGEXP_EXTRACT",
        expressions=[exp.cast(value, Type.VARCHAR), exp.Literal.string(NUMBER_PREFIX_SQL)],
    )
    number = exp.Case(
        ifs=[exp.If(this=exp.EQ(this=prefix, expression=exp.Literal.string("")), true=ZERO)],
        default=prefix.copy(),
    )  # NULL stays NULL
    return _typed(exp.cast(number, Type.DOUBLE), Type.DOUBLE)


def as_integer(value: exp.Expression, type_: Type = Type.INT) -> exp.Expression:
    """value as MySQL reads it as a count or a position: the number it is, rounded."""
    if kind(value) != NUMBER:
        value = as_number(value)
    return _typed(exp.cast(value, type_), type_)


def as_bits(value: exp.Expression) -> exp.Expression:
    """value as MySQL reads it for bit operations: a 64-bit integer."""
    return as_integer(value, Type.BIGINT)


def as_date(value: exp.Expression) -> exp.Expression:
    """value as MySQL reads it as a date: a number by its digits (20240102), NULL if it has none."""
    if kind(value) == BOOLEAN:
        return _typed(exp.null(), Type.DATETIME)
    text = exp.cast(value, Type.VARCHAR)
    formats = exp.Array(expressions=[exp.Literal.string(form) for form in DATE_FORMATS])
    parsed = exp.Anonymous(this="TRY_STRPTIME", expressions=[text, formats])
    return _typed(parsed, Type.DATETIME)
