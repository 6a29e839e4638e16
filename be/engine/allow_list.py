"""The functions and FROM items a query may use, checked on its sqlglot tree before it is
transpiled for DuckDB.

An allow-list, not a block-list: DuckDB has far more functions than MySQL (read_text, glob,
query, getenv, ...) and grows new ones with each release; only MySQL's functions that Quire means to
offer get through, whatever DuckDB would do with the others.
"""

from __future__ import annotations

from sqlglot import exp

from be.engine.errors import SourceNotAllowed, UnknownFunction

STRING_FUNCTIONS = (
    exp.Ascii, exp.BitLength, exp.Chr, exp.Concat, exp.ConcatWs, exp.Elt, exp.EndsWith, exp.FromBase64, exp.GroupConcat,
    exp.Hex, exp.Left, exp.Length, exp.Lower, exp.MD5, exp.NumberToStr, exp.Pad, exp.RegexpLike,
    exp.RegexpExtract, exp.RegexpReplace, exp.Repeat, exp.Replace, exp.Reverse, exp.Right, exp.SHA, exp.SHA2,
    exp.Space, exp.SplitPart, exp.StartsWith, exp.StrPosition, exp.Stuff, exp.Substring,
    exp.SubstringIndex, exp.ToBase64, exp.Trim, exp.Unhex, exp.Upper, exp.Initcap,
    exp.RegexpExtractAll, exp.StrToMap,
)  # fmt: skip
MATH_FUNCTIONS = (
    exp.Abs, exp.Acos, exp.Asin, exp.Atan, exp.Atan2, exp.Ceil, exp.Cos, exp.Cot, exp.Degrees,
    exp.Exp, exp.Floor, exp.Greatest, exp.Least, exp.Ln, exp.Log, exp.Pi, exp.Pow, exp.Radians,
    exp.Rand, exp.Round, exp.Sign, exp.BitwiseCount, exp.Sin, exp.Sqrt, exp.Tan, exp.Trunc,
)  # fmt: skip
DATE_FUNCTIONS = (
    exp.ConvertTimezone, exp.CurrentDate, exp.CurrentTime, exp.DateAdd, exp.DateDiff, exp.DateSub, exp.Day,
    exp.DayOfMonth, exp.DayOfWeek, exp.DayOfYear, exp.Dayname, exp.Extract, exp.Hour,
    exp.LastDay, exp.Minute, exp.Month, exp.MonthsBetween, exp.Quarter, exp.Second, exp.StrToDate,
    exp.StrToTime, exp.TimestampDiff,
    exp.TimeToStr, exp.TimestampAdd, exp.TsOrDsToDate, exp.TsOrDsToTimestamp, exp.UnixToTime,
    exp.Time, exp.TimeFromParts, exp.Timestamp, exp.Week, exp.WeekOfYear, exp.Year,
)  # fmt: skip
AGGREGATE_FUNCTIONS = (
    exp.AnyValue, exp.ApproxDistinct, exp.Avg, exp.BitwiseAndAgg, exp.BitwiseOrAgg, exp.BitwiseXorAgg, exp.Count,
    exp.ArgMax, exp.ArgMin, exp.CountIf, exp.Grouping, exp.GroupingId, exp.Max, exp.Min, exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Sum, exp.Variance,
    exp.VariancePop,
)  # fmt: skip
WINDOW_FUNCTIONS = (
    exp.CumeDist, exp.DenseRank, exp.FirstValue, exp.Lag, exp.LastValue, exp.Lead, exp.NthValue,
    exp.Ntile, exp.PercentRank, exp.Rank, exp.RowNumber,
)  # fmt: skip
CONDITIONAL_FUNCTIONS = (exp.Case, exp.Coalesce, exp.If, exp.Nullif)
OPERATORS = (exp.And, exp.Collate, exp.Exists, exp.Or, exp.Xor)  # sqlglot models these as functions
CAST_FUNCTIONS = (exp.Cast, exp.TryCast)
JSON_FUNCTIONS = (
    exp.JSONExtract, exp.JSONExtractScalar, exp.JSONObject, exp.JSONKeys, exp.JSONType,
    exp.ParseJSON, exp.JSONObjectAgg,
)  # fmt: skip
OTHER_FUNCTIONS = (exp.Uuid, exp.BitmapCount)
ARRAY_FUNCTIONS = (
    exp.Array, exp.ArrayAgg, exp.ArrayContains, exp.ArrayMax, exp.ArrayMin, exp.ArraySize,
    exp.ArraySort, exp.ArraySum, exp.ArrayToString, exp.StringToArray, exp.MapKeys, exp.MapSize,
    exp.MapContainsKey, exp.Struct, exp.ArrayPosition, exp.ArrayRemove, exp.ArraySlice,
    exp.ArrayDistinct, exp.ArrayIntersect, exp.ArrayExcept, exp.ArrayCompact, exp.ArrayConcat,
)  # fmt: skip
# Doris's array, map and struct functions sqlglot does not model, rewritten by the FE
# (fe/statements/arrays.py)
ARRAY_ANONYMOUS = ("COLLECT_LIST", "GROUP_ARRAY", "COLLECT_SET", "GROUP_UNIQ_ARRAY", "SIZE",
                   "CARDINALITY", "ELEMENT_AT", "ARRAY_AVG", "MAP_VALUES",
                   "STRUCT_ELEMENT", "NAMED_STRUCT", "ARRAY_MAP", "ARRAY_FILTER", "ARRAY_EXISTS",
                   "ARRAY_COUNT", "ARRAY_FIRST", "ARRAY_LAST", "ARRAY_FIRST_INDEX",
                   "ARRAY_LAST_INDEX", "ARRAY_SORTBY")  # fmt: skip
# Doris's BITMAP and HLL functions (fe/statements/mysql_functions.py: BITMAP_FUNCTIONS)
BITMAP_ANONYMOUS = (
    "TO_BITMAP", "BITMAP_HASH", "BITMAP_FROM_STRING", "BITMAP_FROM_ARRAY", "BITMAP_TO_STRING",
    "BITMAP_TO_ARRAY", "BITMAP_EMPTY", "BITMAP_MIN", "BITMAP_MAX", "BITMAP_CONTAINS",
    "BITMAP_HAS_ANY", "BITMAP_HAS_ALL", "BITMAP_AND", "BITMAP_OR", "BITMAP_XOR", "BITMAP_NOT",
    "BITMAP_AND_NOT", "BITMAP_AND_COUNT", "BITMAP_OR_COUNT", "BITMAP_XOR_COUNT",
    "BITMAP_AND_NOT_COUNT", "BITMAP_SUBSET_IN_RANGE", "BITMAP_SUBSET_LIMIT", "SUB_BITMAP",
    "BITMAP_UNION", "BITMAP_UNION_COUNT", "BITMAP_UNION_INT", "BITMAP_INTERSECT", "HLL_HASH",
    "HLL_EMPTY", "HLL_CARDINALITY", "HLL_UNION", "HLL_RAW_AGG", "HLL_UNION_AGG",
)  # fmt: skip
# Doris's table functions, in a LATERAL VIEW only
TABLE_FUNCTIONS = (exp.Explode, exp.ExplodeOuter)
TABLE_ANONYMOUS = (
    "EXPLODE_SPLIT",
    "EXPLODE_SPLIT_OUTER",
    "EXPLODE_NUMBERS",
    "EXPLODE_NUMBERS_OUTER",
)

ALLOWED_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    STRING_FUNCTIONS
    + MATH_FUNCTIONS
    + DATE_FUNCTIONS
    + AGGREGATE_FUNCTIONS
    + WINDOW_FUNCTIONS
    + CONDITIONAL_FUNCTIONS
    + CAST_FUNCTIONS
    + JSON_FUNCTIONS
    + OTHER_FUNCTIONS
    + ARRAY_FUNCTIONS
    + OPERATORS
)
DORIS_DATE_ADD_UNITS = ("YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND")  # DAYS_ADD, ...
DORIS_DIFF_UNITS = (*DORIS_DATE_ADD_UNITS, "MICROSECOND")  # DAYS_DIFF, ...
DORIS_JSON_GETTERS = ("GET_JSON_STRING", "GET_JSON_INT", "GET_JSON_BIGINT", "GET_JSON_DOUBLE")
# MySQL's and Doris's functions sqlglot does not model: DuckDB's with their meaning, or
# rewritten by the FE.
ALLOWED_ANONYMOUS = frozenset(
    {"ADDDATE", "BIN", "CONV", "CRC32", "DATE_TRUNC", "FIELD", "FIND_IN_SET", "FROM_DAYS",
     "INET_ATON", "JSON_ARRAY", "MAKEDATE", "MID", "NDV", "NULL_OR_EMPTY", "OCT", "OCTET_LENGTH",
     "ORD", "PERCENTILE", "PERCENTILE_APPROX", "QUOTE", "STRCMP", "SUBDATE", "TO_DATE", "TO_DAYS",
     "UNIX_TIMESTAMP", "WEEKDAY", "YEARWEEK", "SEC_TO_TIME", "TIME_TO_SEC", "TIMEDIFF",
     "PERIOD_DIFF", "JSON_UNQUOTE", "JSON_LENGTH", "JSON_CONTAINS", "JSON_VALID", "JSON_QUOTE",
     "INET_NTOA", "NOT_NULL_OR_EMPTY", "STRLEFT", "STRRIGHT", "MONEY_FORMAT", "REGEXP_REPLACE_ONE",
     "E", "PERIOD_ADD", "TIME_FORMAT", "MD5SUM", "AES_ENCRYPT", "AES_DECRYPT", "MURMUR_HASH3_32", "XXHASH_32", "XXHASH_64", "PMOD", "MASK",
     "TO_MONDAY", "GROUP_BIT_OR", "GROUP_BIT_AND", "GROUP_BIT_XOR", "ARRAY_UNION",
     "ARRAYS_OVERLAP", "ARRAY_PRODUCT", "ARRAY_REVERSE_SORT", "JSON_EXISTS_PATH",
     "JSON_EXTRACT_STRING", "JSON_EXTRACT_ISNULL", "JSON_EXTRACT_BOOL", "JSON_EXTRACT_INT",
     "JSON_EXTRACT_BIGINT", "JSON_EXTRACT_DOUBLE", "MATCH_ANY", "MATCH_ALL", "MATCH_PHRASE",
     "MATCH_PHRASE_PREFIX", "MATCH_REGEXP", "BITAND", "BITOR", "BITXOR", "BITNOT",
     "BIT_SHIFT_LEFT", "BIT_SHIFT_RIGHT", "MASK_FIRST_N", "MASK_LAST_N", "URL_ENCODE",
     "URL_DECODE", "UUID_NUMERIC", "MURMUR_HASH3_64", "MAP", "JSON_ARRAYAGG", "CORR", "COVAR",
     "COVAR_POP", "COVAR_SAMP", "TOPN", "HISTOGRAM", "HIST", "RETENTION", "WINDOW_FUNNEL"}
    | set(BITMAP_ANONYMOUS)
    | {f"{unit}S_{way}" for unit in DORIS_DATE_ADD_UNITS for way in ("ADD", "SUB")}
    | set(DORIS_JSON_GETTERS)
    | {f"{unit}S_DIFF" for unit in DORIS_DIFF_UNITS}
    | set(ARRAY_ANONYMOUS)
)  # fmt: skip


def check(expression: exp.Expression) -> None:
    """Raise UnknownFunction or SourceNotAllowed for anything outside what Quire offers; a
    function is named before the FROM item it sits in."""
    for node in expression.find_all(exp.Func):
        if _is_table_function(node):
            if not (isinstance(node.parent, exp.Lateral) and node.parent.args.get("view")):
                raise UnknownFunction(_function_name(node))  # Doris's: in a LATERAL VIEW only
        elif isinstance(node, exp.Anonymous):
            if node.name.upper() not in ALLOWED_ANONYMOUS:
                raise UnknownFunction(_function_name(node))
        elif type(node) not in ALLOWED_FUNCTIONS:
            raise UnknownFunction(_function_name(node))
    for node in expression.walk():
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier):
            raise SourceNotAllowed("only table names can be read, not table functions")
        if isinstance(node, exp.Lateral) and not (
            isinstance(node.this, exp.Subquery)
            or (node.args.get("view") and _is_table_function(node.this))
        ):
            raise SourceNotAllowed("LATERAL takes a subquery, LATERAL VIEW a table function")
        if isinstance(node, exp.Unnest | exp.Values | exp.Pivot | exp.Into):
            raise SourceNotAllowed(f"{node.key.upper()} is not supported")


def _is_table_function(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return node.name.upper() in TABLE_ANONYMOUS
    return isinstance(node, TABLE_FUNCTIONS)


def _function_name(node: exp.Func) -> str:
    return node.name if isinstance(node, exp.Anonymous) else node.sql_name().lower()
