"""Quire's column types as Spark's, and the Arrow types Spark expects of them.

DECIMAL(p, s) is DecimalType(p, s), DATE DateType, DATETIME TimestampNTZType (a wall-clock time
without a zone, as Doris's DATETIME), CHAR / VARCHAR / STRING StringType; LARGEINT (39 digits,
past DecimalType's 38) is a StringType of its decimal digits, as Doris's Spark connector reads
it; a BITMAP or HLL column a StringType of its values apart by commas, as BITMAP_TO_STRING gives
them. Spark checks that a batch's Arrow schema is exactly its own (nullability, string and not
large_string): `arrow_schema` is that schema, `to_spark_arrow` casts rows to it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as st
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema

from be.table_schema import TableSchema
from metadata.types import parse_column_type

MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType
SET_ARROW_TYPE = parse_column_type("BITMAP").arrow  # a BITMAP's or an HLL's values


def spark_type(arrow: pa.DataType) -> st.DataType:
    if arrow == SET_ARROW_TYPE:  # as Doris's connector reads a bitmap (bitmap-to-string): "1,2,3"
        return st.StringType()
    if pa.types.is_decimal(arrow):
        if arrow.precision > MAX_DECIMAL_PRECISION:
            return st.StringType()
        return st.DecimalType(arrow.precision, arrow.scale)
    if pa.types.is_timestamp(arrow) and arrow.tz is None:
        return st.TimestampNTZType()
    if pa.types.is_large_string(arrow) or pa.types.is_string(arrow):
        return st.StringType()
    return from_arrow_type(arrow)


def spark_schema(schema: TableSchema, columns: tuple[str, ...] | None = None) -> st.StructType:
    """The table's columns (only those named, in that order, when given) as Spark's."""
    chosen = schema.columns
    if columns is not None:
        by_name = {column.name.lower(): column for column in schema.columns}
        chosen = tuple(by_name[name.lower()] for name in columns)
    return st.StructType(
        [st.StructField(column.name, spark_type(column.type), column.nullable) for column in chosen]
    )


def arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema Spark checks a Python data source's batches against."""
    return to_arrow_schema(schema, timezone="UTC")


def to_spark_arrow(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """rows (with at least target's columns, as Quire types them) in target's columns and types."""
    arrays = []
    for field in target:
        column = rows.column(field.name)
        if column.type != field.type:
            if pa.types.is_decimal(column.type) and pa.types.is_string(field.type):
                column = pc.cast(column, pa.string())
            elif column.type == SET_ARROW_TYPE:
                column = pc.binary_join(column.cast(pa.list_(pa.string())), ",")
            else:
                column = column.cast(field.type)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=target)
