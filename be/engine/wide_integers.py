"""LARGEINT columns handed to DuckDB.

A LARGEINT is a signed 128-bit integer, kept in Arrow as decimal256(39, 0) (decimal128 stops at 38
digits). DuckDB reads no decimal256, but its HUGEINT is exactly LARGEINT's range: such a column is
registered as its decimal text under a hidden name, and the table's own name is a view that casts
the text back to HUGEINT.
"""

from __future__ import annotations

import pyarrow as pa

HIDDEN_PREFIX = "__quire_wide_"


def _is_wide(data_type: pa.DataType) -> bool:
    return pa.types.is_decimal256(data_type) and data_type.scale == 0


def has_wide_integers(table: pa.Table) -> bool:
    return any(_is_wide(field.type) for field in table.schema)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def register_with_wide_integers(connection, name: str, table: pa.Table) -> None:
    """Register table under name on a DuckDB connection, its decimal256 integer columns read as
    HUGEINT (connection-scoped: the view goes with the connection)."""
    wide = [field.name for field in table.schema if _is_wide(field.type)]
    assert wide, "only tables with LARGEINT columns take this way"
    as_text = table
    for field_name in wide:
        position = as_text.schema.get_field_index(field_name)
        as_text = as_text.set_column(
            position, field_name, as_text.column(position).cast(pa.string())
        )
    hidden = HIDDEN_PREFIX + name
    connection.register(hidden, as_text)
    casts = ", ".join(f"CAST({_quoted(n)} AS HUGEINT) AS {_quoted(n)}" for n in wide)
    connection.execute(
        f"CREATE TEMP VIEW {_quoted(name)} AS SELECT * REPLACE ({casts}) FROM {_quoted(hidden)}"
    )
