"""Generated columns, as Doris has them (MySQL's stored ones): `c DOUBLE [GENERATED ALWAYS] AS
(abs(a + b))`, a column whose value is its expression over the row's other columns. The engine
works it out whenever rows are written (INSERT, UPDATE, Stream Load); no statement writes it
(MySQL's 3105), a VALUES list gives it DEFAULT. Kept as a hidden table property: each generated
column's expression as written, in the table's column order."""

from __future__ import annotations

import dataclasses
import functools
import json

import pyarrow as pa
from sqlglot import exp

from fe.mysql.errors import ErrorCode, QueryError
from fe.sql.parser import ParseError, parse_with_sqlglot, syntax_error, tokenize
from fe.statements import coercions, in_lists
from fe.statements.column_values import column_array
from metadata.records import HIDDEN_PROPERTY_PREFIX, Column, KeyModel, Table

PROPERTY = HIDDEN_PROPERTY_PREFIX + "generated_columns"
ROWS_TABLE = "quire_generated_rows"  # the rows written, as the engine sees them
ORDINAL = "quire_generated_ordinal"
AGGREGATIONS_ALLOWED = (None, "REPLACE", "REPLACE_IF_NOT_NULL")
NOT_WRITTEN = 3105  # MySQL's ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN
EXTRA = "STORED GENERATED"  # what DESCRIBE and information_schema.COLUMNS say of one


def texts(table: Table) -> dict[str, str]:
    """Each generated column's expression as written, in column order."""
    text = dict(table.properties).get(PROPERTY)
    return dict(_read(text)) if text else {}


@functools.lru_cache(maxsize=1024)
def _read(text: str) -> tuple[tuple[str, str], ...]:
    """The property's pairs (read once per text: INSERTs and information_schema ask often)."""
    return tuple((name, expression) for name, expression in json.loads(text))


def has_any(table: Table) -> bool:
    return any(key == PROPERTY for key, _ in table.properties)


def is_generated(table: Table, column: Column) -> bool:
    return has_any(table) and column.name in texts(table)


def written_refused(table: Table, column: Column) -> QueryError:
    return QueryError(
        NOT_WRITTEN,
        f"The value specified for generated column '{column.name}' in table '{table.name}' is "
        "not allowed.",
    )


def check_not_written(table: Table, columns) -> None:
    """3105 if one of columns (those a statement gives values) is generated."""
    generated = texts(table)
    for column in columns:
        if column.name in generated:
            raise written_refused(table, column)


def with_generated(table: Table, generated: tuple[tuple[str, str], ...]) -> Table:
    """The table with its generated columns' expressions, each checked as Doris checks it."""
    if not generated:
        return table
    order = {column.name.lower(): place for place, column in enumerate(table.columns)}
    named = {name.lower() for name, _ in generated}
    for name, text in generated:
        column = table.column(name)
        assert column is not None, name
        if column.auto_increment:
            raise QueryError(1105, "Generated columns cannot be auto_increment.")
        if column.default is not None:
            raise QueryError(1105, "Generated columns cannot have default value.")
        if table.key_model is KeyModel.AGGREGATE and column.aggregation not in AGGREGATIONS_ALLOWED:
            raise QueryError(
                1105,
                "The generated columns can be key columns, or value columns of replace and "
                "replace_if_not_null aggregation type.",
            )
        expression = _parsed(text)
        _check_expression(column.name, expression)
        for reference in expression.find_all(exp.Column):
            read = table.column(reference.name)
            if read is None or reference.table:
                raise QueryError(
                    ErrorCode.BAD_FIELD_ERROR,
                    f"Unknown column '{reference.name}' in 'generated column function'",
                )
            if read.name.lower() in named and order[read.name.lower()] >= order[name.lower()]:
                raise QueryError(
                    1105,
                    "Generated column can refer only to generated columns defined prior to it.",
                )
            if read.auto_increment:
                raise QueryError(
                    1105, f"Generated column '{column.name}' cannot refer to auto-increment column."
                )
    given = dict(generated)
    return _with_texts(table, {c.name: given[c.name] for c in table.columns if c.name in given})


def _with_texts(table: Table, generated: dict[str, str]) -> Table:
    return table.with_property(PROPERTY, json.dumps(list(generated.items())) if generated else None)


def _check_expression(name: str, expression: exp.Expression) -> None:
    from fe.statements import queries  # which reads information_schema, which reads this

    if expression.find(exp.Subquery, exp.Select):
        raise QueryError(1105, "Generated column does not support subquery.")
    if expression.find(exp.Lambda):
        raise QueryError(1105, "Generated column does not support lambda.")
    if expression.find(exp.Parameter, exp.SessionParameter, exp.Placeholder):
        raise QueryError(1105, "Generated column expression cannot contain variable.")
    for node in expression.find_all(exp.AggFunc, exp.Window, exp.Grouping):
        function = node.this if isinstance(node, exp.Window) else node
        raise QueryError(
            1105,
            f"Expression of generated column '{name}' contains a disallowed function:"
            f"'{queries.function_name(function).lower()}'",
        )


@functools.lru_cache(maxsize=1024)
def _parsed_text(text: str) -> exp.Expression:
    sql = f"SELECT {text}"
    try:
        select = parse_with_sqlglot(tokenize(sql), sql)
    except ParseError as error:
        raise QueryError(ErrorCode.PARSE_ERROR, str(error)) from None
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        raise QueryError(ErrorCode.PARSE_ERROR, str(syntax_error(text, 1)))
    return select.expressions[0]


def _parsed(text: str) -> exp.Expression:
    return _parsed_text(text).copy()


def over_base_columns(table: Table) -> dict[str, exp.Expression]:
    """Each generated column's expression with the generated columns it reads replaced by
    theirs: over the other columns only, in column order."""
    done: dict[str, exp.Expression] = {}
    for name, text in texts(table).items():
        expression = _parsed(text)
        for reference in list(expression.find_all(exp.Column)):
            column = table.column(reference.name)
            if column.name in done:  # the value it holds: of its own type
                reference.replace(_as_held(done[column.name].copy(), column))
            else:
                reference.replace(exp.column(column.name, quoted=True))
        done[name] = expression
    return done


def _as_held(expression: exp.Expression, column: Column) -> exp.Expression:
    kind = coercions.COLUMN_TYPES.get(column.type.base)
    if kind is None:
        return exp.paren(expression)
    if kind is exp.DataType.Type.DECIMAL:
        precision, scale = column.type.numeric_precision, column.type.numeric_scale
        return exp.cast(expression, exp.DataType.build(f"DECIMAL({precision}, {scale})"))
    return exp.cast(expression, exp.DataType.build(kind))


def readers_of(table: Table, name: str) -> list[str]:
    """The generated columns whose expressions read column name."""
    return [
        generated
        for generated, text in texts(table).items()
        if any(ref.name.lower() == name.lower() for ref in _parsed(text).find_all(exp.Column))
    ]


def check_unread(table: Table, name: str) -> None:
    """Doris's refusal to drop (or, here, rename) a column a generated column reads."""
    readers = readers_of(table, name)
    if readers:
        raise QueryError(
            1105,
            f"Column '{name}' has a generated column dependency on :[{', '.join(readers)}]",
        )


def renamed(table: Table, old: str, new: str) -> Table:
    """The table with generated column old named new."""
    generated = texts(table)
    if old not in generated:
        return table
    return _with_texts(
        table, {new if name == old else name: text for name, text in generated.items()}
    )


def without(table: Table, name: str) -> Table:
    """The table without column name among its generated ones (it is dropped)."""
    generated = texts(table)
    if name not in generated:
        return table
    del generated[name]
    return _with_texts(table, generated)


def updated(table: Table, new: dict[str, exp.Expression]) -> dict[str, exp.Expression]:
    """An UPDATE's expression of each generated column, given each other column's (new: name
    -> its expression over the old row): the generated columns follow the columns set."""
    worked_out = {}
    for name, expression in over_base_columns(table).items():
        for reference in list(expression.find_all(exp.Column)):
            reference.replace(exp.paren(new[reference.name].copy()))
        worked_out[name] = expression
    return worked_out


async def filled(session, table: Table, rows: pa.Table) -> pa.Table:
    """rows (every column of the table, the generated ones' values aside) with the generated
    columns worked out by the engine, converted as a column takes a value (1048, 1264, ...)."""
    from fe.statements import queries  # which reads information_schema, which reads this

    generated = over_base_columns(table)
    if not generated or not rows.num_rows:
        return rows
    read = {
        reference.name
        for expression in generated.values()
        for reference in expression.find_all(exp.Column)
    }
    columns = {name: rows.column(name) for name in rows.column_names if name in read}
    columns[ORDINAL] = pa.array(range(rows.num_rows), pa.int64())
    source = exp.to_table(ROWS_TABLE)
    source.meta[in_lists.LIST_TABLE] = True
    names = [f"_{place}" for place in range(len(generated))]
    select = exp.select(
        *(expression.copy() for expression in generated.values())
    ).from_(source).order_by(exp.column(ORDINAL))  # fmt: skip
    plan = queries.plan_select(select, names)
    plan = dataclasses.replace(plan, lists=(*plan.lists, (ROWS_TABLE, pa.table(columns))))
    answer = await queries.run_select(session, plan)
    values = list(answer.rows)
    assert len(values) == rows.num_rows
    for place, name in enumerate(generated):
        column = table.column(name)
        array = column_array([row[place] for row in values], column)
        index = rows.schema.get_field_index(name)
        rows = rows.set_column(index, rows.schema.field(index), array)
    return rows
