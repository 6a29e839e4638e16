"""An answer's rows kept as Arrow for encoders that take a column at a time, read as the Python
rows DuckDB's own fetch would give for everything else."""

from __future__ import annotations

import datetime
import uuid

import pyarrow as pa
import pyarrow.compute as pc

NANOSECONDS_PER_MICROSECOND = 1000
DAYS_PER_MONTH = 30  # DuckDB's own, turning an INTERVAL into a timedelta


def _integer(value):
    return None if value is None else int(value)


def _interval(value):
    if value is None:
        return None
    return datetime.timedelta(
        days=value.months * DAYS_PER_MONTH + value.days,
        microseconds=value.nanoseconds // NANOSECONDS_PER_MICROSECOND,
    )


def _uuid(value):
    return None if value is None else uuid.UUID(str(value))


ROW_OVERHEAD_BYTES = 64  # a row tuple's header
VALUE_BYTES = 40  # a value's slot and a small object (strings and bytes add their length)

# What Arrow makes of a DuckDB type that DuckDB's fetch gives as another Python type.
CONVERSIONS = {"HUGEINT": _integer, "UHUGEINT": _integer, "INTERVAL": _interval, "UUID": _uuid}


# DuckDB types whose Arrow values read as Python (with CONVERSIONS) are the values DuckDB's own
# fetch gives: an answer of only these may be handed on as Arrow (ArrowRows).
COLUMNAR_TYPES = frozenset(
    (
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIMESTAMP",
        "VARCHAR",
        "BLOB",
    )
)


def answers_in_arrow(columns: list[tuple[str, str]]) -> bool:
    """Whether an answer of these columns (name, DuckDB type) may be handed on as Arrow."""
    return all(
        type_name in COLUMNAR_TYPES or type_name.startswith("DECIMAL(") for _, type_name in columns
    )


class ArrowRows:
    """An answer's rows: a head of Python rows (those fetched before the answer was known to be
    big), then the rest kept as Arrow. len() and iteration give what the Python rows would
    (tuples of the values DuckDB's fetch gives); `head` and `table` are for encoders that take a
    column at a time."""

    __slots__ = ("table", "columns", "head", "_conversions")

    def __init__(
        self, table: pa.Table, columns: list[tuple[str, str]], head: list[tuple] | None = None
    ):
        assert table.num_columns == len(columns), "the table has the answer's columns"
        self.table = table
        self.columns = columns
        self.head = head or []
        self._conversions = [CONVERSIONS.get(type_name) for _, type_name in columns]

    def __len__(self) -> int:
        return len(self.head) + self.table.num_rows

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self):
        yield from self.head
        for batch in self.table.to_batches():
            values = []
            for convert, array in zip(self._conversions, batch.columns, strict=True):
                listed = array.to_pylist()
                values.append(listed if convert is None else [convert(value) for value in listed])
            if values:
                yield from zip(*values, strict=True)
            else:
                yield from [()] * batch.num_rows

    def __getitem__(self, index):
        """A slice of rows as a list of Python rows (one row by its position as a tuple)."""
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            assert step == 1, "rows are sliced in order"
            kept = len(self.head)
            rows = self.head[start:stop]
            start, stop = max(start - kept, 0), max(stop - kept, 0)
            return rows + list(ArrowRows(self.table.slice(start, stop - start), self.columns))
        if index < 0:
            index += len(self)
        return self[index : index + 1][0]


def estimated_arrow_bytes(table: pa.Table | pa.RecordBatch) -> int:
    """What estimated_bytes counts for the table's rows as Python objects: a row and a value
    slot each, and the length of every string (in characters) and bytes value."""
    total = table.num_rows * (ROW_OVERHEAD_BYTES + VALUE_BYTES * table.num_columns)
    for values in table.columns:
        type_ = values.type
        if pa.types.is_string(type_) or pa.types.is_large_string(type_):
            total += pc.sum(pc.utf8_length(values)).as_py() or 0
        elif pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
            total += pc.sum(pc.binary_length(values)).as_py() or 0
    return total
