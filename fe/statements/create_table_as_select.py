"""CREATE TABLE ... AS SELECT on the catalog: the new table's columns are the query's, typed as
Doris types them (a column read from a table keeps its type and nullability; anything computed
is nullable, its text VARCHAR(65533), an integer literal the narrowest integer that holds it).
Once the table is made, dml.fill_created_table copies the query's rows into it."""

from __future__ import annotations

import dataclasses
import decimal
import re

from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from fe.mysql.errors import QueryError
from fe.security import privileges
from fe.sql import parser
from fe.sql import statements as st
from fe.statements.names import database_name, resolve_table
from fe.statements.queries import projection_name, written_projections
from metadata.records import Column, Table
from metadata.types import parse_column_type

MADE_UP_NAME = re.compile(r"_col_\d+")  # sqlglot's name for an item its query names not
CTAS_BUCKETS = 10  # Doris's, with a HASH of the first column, when the statement names none
MAX_VARCHAR = "VARCHAR(65533)"
INTEGER_RANGES = [("TINYINT", 8), ("SMALLINT", 16), ("INT", 32), ("BIGINT", 64), ("LARGEINT", 128)]
COMPUTED_TYPES = {
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
    exp.DataType.Type.TINYINT: "TINYINT",
    exp.DataType.Type.SMALLINT: "SMALLINT",
    exp.DataType.Type.INT: "INT",
    exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.FLOAT: "FLOAT",
    exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.DATETIME: "DATETIME",
    exp.DataType.Type.TIMESTAMP: "DATETIME",
    exp.DataType.Type.TEXT: MAX_VARCHAR,
    exp.DataType.Type.VARCHAR: MAX_VARCHAR,
    exp.DataType.Type.CHAR: MAX_VARCHAR,
    exp.DataType.Type.JSON: "JSON",
}
# Doris functions whose type sqlglot does not infer.
FUNCTION_TYPES = {
    "NOW": "DATETIME", "SYSDATE": "DATETIME", "LOCALTIME": "DATETIME",
    "LOCALTIMESTAMP": "DATETIME", "CURDATE": "DATE", "UTC_TIMESTAMP": "DATETIME",
}  # fmt: skip


def with_query_columns(
    session, statement: st.CreateTable, unknown_type: str | None = None
) -> st.CreateTable:
    """The statement with the columns (and, if it names none, the distribution) of its query;
    a computed column whose type is not known has unknown_type (if None, it is an error)."""
    assert statement.query is not None
    tokens = parser.tokenize(statement.query)
    query = parser.parse_with_sqlglot(tokens, statement.query)
    if not isinstance(query, exp.Query):
        raise QueryError(
            1064, "You have an error in your SQL syntax: AS must be followed by a query"
        )
    texts = written_projections(tokens, statement.query)
    if texts is None or len(texts) != len(query.selects):
        texts = [None] * len(query.selects)
    written = [
        None if p.is_star else projection_name(p, text)
        for p, text in zip(query.selects, texts, strict=True)
    ]
    qualified, sources = _qualified(session, query)
    by_alias = {}
    for table in qualified.find_all(exp.Table):
        found = sources.get((table.db.lower(), table.name.lower()))
        if found is not None:
            by_alias[table.alias_or_name.lower()] = found
    columns = []
    for position, projection in enumerate(qualified.selects):
        name = written[position] if len(written) == len(qualified.selects) else None
        columns.append(_query_column(projection, name, by_alias, unknown_type))
    if statement.column_names:
        if len(statement.column_names) != len(columns):
            raise QueryError(
                1105, "Number of columns don't equal number of SELECT statement's select list"
            )
        columns = [
            dataclasses.replace(c, name=n)
            for c, n in zip(columns, statement.column_names, strict=True)
        ]
    distribution = statement.distribution_columns
    buckets = statement.buckets
    if not distribution and buckets is None:
        distribution, buckets = (columns[0].name,), CTAS_BUCKETS
    return dataclasses.replace(
        statement, columns=tuple(columns), distribution_columns=distribution, buckets=buckets
    )


def expanded_text(session, text: str) -> str:
    """A query's text with every column named with its table and `*` written out as the
    columns it stands for now (as MySQL keeps a view's query: a column added to a table later is
    not one of the view's)."""
    query = parser.parse_with_sqlglot(parser.tokenize(text), text)
    qualified = _qualified(session, query)[0]
    for alias in list(qualified.find_all(exp.Alias)):
        if MADE_UP_NAME.fullmatch(alias.alias):  # qualify's name for an unnamed item: dropped
            alias.replace(alias.this)
    return qualified.sql(dialect="mysql")


def _qualified(session, query: exp.Query) -> tuple[exp.Query, dict[tuple[str, str], Table]]:
    """A copy of query with its columns named with their tables and typed, and the tables it
    reads (the user needs SELECT on each)."""
    sources = _source_tables(session, query)
    schema: dict = {}
    for (db, name), table in sources.items():
        schema.setdefault(db, {})[name] = {c.name: _sqlglot_type(c) for c in table.columns}
    try:
        qualified = qualify(
            query.copy(), schema=schema, db=session.database, dialect="mysql", identify=False
        )
        annotate_types(qualified, schema=schema, dialect="mysql")
    except OptimizeError as error:
        raise QueryError(1054, str(error).split(". Line:")[0]) from None
    except SqlglotError:
        raise QueryError(1064, "You have an error in your SQL syntax") from None
    return qualified, sources


def _source_tables(session, query: exp.Query) -> dict[tuple[str, str], Table]:

    common_tables = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    sources = {}
    for table in query.find_all(exp.Table):
        if not table.db and table.name.lower() in common_tables:
            continue
        db = database_name(session, table.db or None)
        session.require(privileges.SELECT, db, table.name)
        database, found = resolve_table(session, st.TableName(db, table.name))
        sources[(database.name.lower(), found.name.lower())] = found
    return sources


def _sqlglot_type(column: Column) -> exp.DataType:
    try:
        return exp.DataType.build(column.type.mysql, dialect="mysql")
    except (ParseError, ValueError):
        return exp.DataType.build("UNKNOWN")


def _query_column(
    projection: exp.Expression,
    written: str | None,
    by_alias: dict[str, Table],
    unknown_type: str | None,
) -> Column:
    name = written or projection.alias_or_name
    value = projection.unalias()
    if isinstance(value, exp.Column):
        table = by_alias.get(value.table.lower())
        source = table.column(value.name) if table is not None else None
        if source is not None:
            return Column(name=name, type=source.type, nullable=source.nullable)
    return Column(name=name, type=_computed_type(value, name, unknown_type), nullable=True)


def _computed_type(value: exp.Expression, name: str, unknown_type: str | None) -> str:
    if isinstance(value, exp.Null):
        return "TINYINT"
    if isinstance(value, exp.Literal) and not value.is_string:
        number = decimal.Decimal(value.this)
        if (
            number == number.to_integral_value()
            and "." not in value.this
            and "e" not in value.this.lower()
        ):
            for type_name, bits in INTEGER_RANGES:
                if -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
                    return type_name
        digits = number.as_tuple()
        scale = max(-digits.exponent, 0)
        return f"DECIMAL({max(len(digits.digits), scale, 1)},{scale})"
    if isinstance(value, exp.Anonymous) and value.name.upper() in FUNCTION_TYPES:
        return FUNCTION_TYPES[value.name.upper()]
    data_type = value.type or exp.DataType.build("UNKNOWN")
    if data_type.this in COMPUTED_TYPES:
        return COMPUTED_TYPES[data_type.this]
    if data_type.this == exp.DataType.Type.DECIMAL:
        decimal_type = parse_column_type(data_type.sql(dialect="mysql").replace(" ", ""))
        if isinstance(value, exp.Sum):  # Doris's SUM of a DECIMAL(p, s): DECIMAL(38, s)
            scale = decimal_type.arguments[1] if len(decimal_type.arguments) > 1 else 0
            return f"DECIMAL(38,{scale})"
        return decimal_type.sql
    if unknown_type is not None:
        return unknown_type
    raise QueryError(
        1105, f"Cannot infer the type of column '{name}' of CREATE TABLE ... AS SELECT"
    )
