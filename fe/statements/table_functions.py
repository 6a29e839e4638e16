"""Doris's table-valued functions read in FROM: `numbers("number" = "n")`, the numbers 0 to n - 1
as a column `number` (or n times `"const_value" = "v"`), as Doris's tests and data generators use
it (`INSERT INTO t SELECT number, ... FROM numbers("number" = "1000000")`). Each reaches the
engine as a table the FE builds, as a long IN list does (in_lists)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from fe.mysql.errors import QueryError
from fe.statements import in_lists

MAX_ROWS = [10_000_000]  # rows one numbers() gives at most: fe.conf's table_function_max_rows


def limit_rows(most: int) -> None:
    """fe.conf's table_function_max_rows, set as the FE starts."""
    assert most >= 0, most
    MAX_ROWS[0] = most


PROPERTIES = frozenset({"number", "const_value", "backend_num"})


def as_tables(expression: exp.Expression) -> tuple[tuple[str, pa.Table], ...]:
    """Each numbers(...) in a FROM made a table the engine is handed, in place; the tables by
    name."""
    made = []
    for table in list(expression.find_all(exp.Table)):
        function = table.this
        if not isinstance(function, exp.Anonymous) or function.name.lower() != "numbers":
            continue
        name = f"{in_lists.LIST_TABLE}_numbers_{len(made)}"
        made.append((name, _numbers(_properties(function))))
        replacement = exp.to_table(name)
        replacement.meta[in_lists.LIST_TABLE] = True
        table.replace(replacement.as_(table.alias or "numbers"))
    return tuple(made)


def _properties(function: exp.Anonymous) -> dict[str, str]:
    properties = {}
    for argument in function.expressions:
        if not (
            isinstance(argument, exp.EQ)
            and isinstance(argument.this, exp.Literal)
            and isinstance(argument.expression, exp.Literal)
        ):
            raise QueryError(1105, 'numbers takes "name" = "value" properties')
        key = argument.this.name.lower()
        if key not in PROPERTIES:
            raise QueryError(1105, f"Unknown numbers property: {argument.this.name}")
        properties[key] = argument.expression.name
    return properties


def _numbers(properties: dict[str, str]) -> pa.Table:
    text = properties.get("number")
    if text is None:
        raise QueryError(1105, "numbers needs its number property")
    if not text.isdigit() or int(text) > MAX_ROWS[0]:
        raise QueryError(
            1105,
            f"numbers' number must be a whole number from 0 to {MAX_ROWS[0]} "
            f"(table_function_max_rows), not '{text}'",
        )
    count = int(text)
    constant = properties.get("const_value")
    if constant is None:
        return pa.table({"number": pa.array(np.arange(count, dtype=np.int64))})
    if not constant.lstrip("-").isdigit() or not -(1 << 63) <= int(constant) < 1 << 63:
        raise QueryError(1105, f"numbers' const_value must be a BIGINT, not '{constant}'")
    return pa.table({"number": pa.repeat(pa.scalar(int(constant), pa.int64()), count)})
