"""Column types: parsed once from their Doris SQL text into a value that knows its MySQL and Arrow views.

`parse_column_type("DECIMAL(10,2)")` is `ColumnType("DECIMAL", (10, 2))`; `.sql` gives the text back
(what the journal and images store), `.mysql` is what DESCRIBE, SHOW CREATE TABLE and
information_schema print, `.arrow` the pyarrow type the data plane stores it as.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

ALIASES = {"INTEGER": "INT", "BOOL": "BOOLEAN", "TEXT": "STRING", "NUMERIC": "DECIMAL"}
SCALAR_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE",
    "DECIMAL", "DECIMALV2", "DECIMALV3", "DATE", "DATEV1", "DATEV2", "DATETIME", "DATETIMEV1",
    "DATETIMEV2", "TIMESTAMP", "TIME", "CHAR", "VARCHAR", "STRING", "JSON", "JSONB", "HLL", "BITMAP",
    "QUANTILE_STATE", "VARIANT", "IPV4", "IPV6",
    "LONGTEXT", "MEDIUMTEXT", "TINYTEXT", "BLOB", "BINARY", "VARBINARY",
})  # fmt: skip
NESTED_TYPES = frozenset({"ARRAY", "MAP", "STRUCT"})
TYPE_NAMES = SCALAR_TYPES | NESTED_TYPES

INTEGER_PRECISIONS = {
    "TINYINT": 3, "SMALLINT": 5, "MEDIUMINT": 7, "INT": 10, "BIGINT": 19, "LARGEINT": 39,
}  # fmt: skip
INTEGER_BITS = {
    "TINYINT": 8,
    "SMALLINT": 16,
    "MEDIUMINT": 24,
    "INT": 32,
    "BIGINT": 64,
    "LARGEINT": 128,
}
LEAST_TIMES = {
    "DATE": "0000-01-01", "DATEV1": "0000-01-01", "DATEV2": "0000-01-01",
    "DATETIME": "0000-01-01 00:00:00", "DATETIMEV1": "0000-01-01 00:00:00",
    "DATETIMEV2": "0000-01-01 00:00:00",
}  # fmt: skip
DECIMAL_TYPES = frozenset({"DECIMAL", "DECIMALV2", "DECIMALV3"})
DEFAULT_DECIMAL = (9, 0)
CHARACTER_TYPES = frozenset({"CHAR", "VARCHAR", "STRING", "TEXT", "JSON", "JSONB"})
STRING_LENGTH = 2147483643  # Doris's STRING maximum
DEFAULT_LENGTHS = {"CHAR": 1, "VARCHAR": 65533}
# Bytes a key column takes in Doris's short key index (its storage width; CHAR: its length).
INDEX_SIZES = {
    "BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "MEDIUMINT": 4, "INT": 4, "BIGINT": 8,
    "LARGEINT": 16, "FLOAT": 4, "DOUBLE": 8, "DATEV1": 3, "DATE": 4, "DATEV2": 4, "DATETIME": 8,
    "DATETIMEV1": 8, "DATETIMEV2": 8, "TIMESTAMP": 8, "TIME": 8, "VARCHAR": 20, "STRING": 20,
    "DECIMALV2": 12, "IPV4": 4, "IPV6": 16,
}  # fmt: skip
MYSQL_NAMES = {
    "STRING": "text", "DECIMALV2": "decimal", "DECIMALV3": "decimal", "DATEV1": "date",
    "DATEV2": "date", "DATETIMEV1": "datetime", "DATETIMEV2": "datetime",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A Doris column type: its upper-case name and the parameters written after it.

    Only the outermost name of a column type is canonical (TEXT is stored as STRING); element types
    keep the name they were written with (ARRAY<TEXT>), as CREATE TABLE has always stored them.
    """

    name: str
    arguments: tuple[int, ...] = ()  # VARCHAR(20): (20,); DECIMAL(10,2): (10, 2); DATETIME(3): (3,)
    elements: tuple[ColumnType, ...] = ()  # ARRAY<T>: (T,); MAP<K,V>: (K, V); STRUCT: field types
    field_names: tuple[str, ...] = ()  # STRUCT<A:INT,B:STRING>: ("A", "B")

    def __post_init__(self) -> None:
        assert self.name in TYPE_NAMES or self.name in ALIASES, self.name
        assert not (self.arguments and self.elements), self
        assert self.name != "STRUCT" or len(self.field_names) == len(self.elements), self
        assert self.name in NESTED_TYPES or not self.elements, self

    @property
    def base(self) -> str:
        """The name with aliases resolved: what the type means."""
        return ALIASES.get(self.name, self.name)

    @property
    def fields(self) -> list[tuple[str, ColumnType]]:
        """A STRUCT's (name, type) pairs."""
        return list(zip(self.field_names, self.elements, strict=True))

    @property
    def sql(self) -> str:
        if self.name == "STRUCT":
            return f"STRUCT<{','.join(f'{n}:{t.sql}' for n, t in self.fields)}>"
        if self.elements:
            return f"{self.name}<{','.join(element.sql for element in self.elements)}>"
        if self.arguments:
            return f"{self.name}({','.join(map(str, self.arguments))})"
        return self.name

    @property
    def mysql(self) -> str:
        """The type as MySQL clients see it: lower case, MySQL's names ("text", "decimal(9,0)")."""
        if self.name in NESTED_TYPES:
            return self.sql.lower()
        if self.name in ("STRING", "LARGEINT"):
            return MYSQL_NAMES.get(self.name, self.name).lower()
        arguments = self.arguments
        if self.name in DECIMAL_TYPES and not arguments:
            arguments = DEFAULT_DECIMAL
        if self.name in DEFAULT_LENGTHS and not arguments:
            arguments = (DEFAULT_LENGTHS[self.name],)
        suffix = f"({','.join(map(str, arguments))})" if arguments else ""
        return MYSQL_NAMES.get(self.name, self.name).lower() + suffix

    @property
    def data_type(self) -> str:
        """information_schema.COLUMNS.DATA_TYPE: the MySQL name without parameters."""
        return self.mysql.split("(")[0].split("<")[0]

    @property
    def is_character(self) -> bool:
        return self.name in CHARACTER_TYPES

    @property
    def character_length(self) -> int | None:
        if self.name in DEFAULT_LENGTHS:
            return self.arguments[0] if self.arguments else DEFAULT_LENGTHS[self.name]
        if self.name in CHARACTER_TYPES:
            return STRING_LENGTH
        return None

    @property
    def numeric_precision(self) -> int | None:
        if self.name in INTEGER_PRECISIONS:
            return INTEGER_PRECISIONS[self.name]
        if self.name in DECIMAL_TYPES:
            return self.arguments[0] if self.arguments else DEFAULT_DECIMAL[0]
        return {"FLOAT": 12, "DOUBLE": 22}.get(self.name)

    @property
    def numeric_scale(self) -> int | None:
        if self.name in INTEGER_PRECISIONS:
            return 0
        if self.name in DECIMAL_TYPES:
            return self.arguments[1] if len(self.arguments) > 1 else DEFAULT_DECIMAL[1]
        return None

    @property
    def least_value(self) -> str:
        """The type's least value as SQL text ("" where it has none): what an unbounded lower
        partition bound stands for."""
        if self.base in INTEGER_BITS:
            return str(-(1 << (INTEGER_BITS[self.base] - 1)))
        return LEAST_TIMES.get(self.base, "")

    @property
    def index_size(self) -> int:
        """Bytes of Doris's short key index this type takes as a key column (DECIMAL as Doris's
        DECIMALV3 of its precision); 0 for the types no key may have."""
        if self.base == "CHAR":
            return self.character_length
        if self.base in ("DECIMAL", "DECIMALV3"):
            precision = self.numeric_precision
            return 4 if precision <= 9 else 8 if precision <= 18 else 16 if precision <= 38 else 32
        return INDEX_SIZES.get(self.base, 0)

    @property
    def is_integer(self) -> bool:
        return self.base in INTEGER_PRECISIONS

    @property
    def arrow(self) -> pa.DataType:
        """The pyarrow type the data plane stores values of this type as (pyarrow is imported here,
        on first use, so that the catalog does not load it)."""
        import pyarrow as pa

        base = self.base
        if base == "ARRAY":
            return pa.list_(self.elements[0].arrow)
        if base == "MAP":
            return pa.map_(self.elements[0].arrow, self.elements[1].arrow)
        if base == "STRUCT":
            # field names are kept upper case, shown lower case (as SHOW CREATE TABLE shows them)
            return pa.struct([pa.field(n.lower(), t.arrow) for n, t in self.fields])
        if base in DECIMAL_TYPES:
            precision, scale = (self.arguments + DEFAULT_DECIMAL[len(self.arguments) :])[:2]
            return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale)
        return _arrow_scalar(base)


@cache
def _arrow_scalar(base: str) -> pa.DataType:
    import pyarrow as pa

    return {
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "MEDIUMINT": pa.int32(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        # LARGEINT is a signed 128-bit integer (39 digits): decimal128 stops at 38, decimal256(39, 0)
        # holds every value and keeps arithmetic and Parquet's DECIMAL logical type.
        "LARGEINT": pa.decimal256(39, 0),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "DATE": pa.date32(),
        "DATEV1": pa.date32(),
        "DATEV2": pa.date32(),
        "DATETIME": pa.timestamp("us"),
        "DATETIMEV1": pa.timestamp("us"),
        "DATETIMEV2": pa.timestamp("us"),
        "TIMESTAMP": pa.timestamp("us"),
        "TIME": pa.time64("us"),
        # Text as utf8, not large_string: a block stays far below 2 GiB of text, and utf8 is what
        # Parquet readers (pyarrow, DuckDB, Spark) hand back, so schemas compare equal after a trip.
        "CHAR": pa.string(),
        "VARCHAR": pa.string(),
        "STRING": pa.string(),
        "TINYTEXT": pa.string(),
        "MEDIUMTEXT": pa.string(),
        "LONGTEXT": pa.string(),
        "JSON": pa.string(),
        "JSONB": pa.string(),
        "VARIANT": pa.string(),
        "IPV4": pa.string(),  # an address's canonical text (what Doris shows of it)
        "IPV6": pa.string(),
        # a sorted list of distinct values (an HLL's: its values' hashes), as the engine's
        # BITMAP and HLL functions make and read them (fe/statements/mysql_functions.py)
        "HLL": pa.list_(pa.uint64()),
        "BITMAP": pa.list_(pa.uint64()),
        "QUANTILE_STATE": pa.binary(),
        "BLOB": pa.binary(),
        "BINARY": pa.binary(),
        "VARBINARY": pa.binary(),
    }[base]


@lru_cache(maxsize=65_536)
def parse_column_type(text: str) -> ColumnType:
    """The type its canonical SQL text names (what `ColumnType.sql` gives); ValueError if none.

    The outermost name may be an alias (INTEGER, TEXT, ...): it is replaced by the type it names.
    """
    parser = _TypeParser(text)
    parsed = parser.type()
    if parser.position != len(text):
        raise ValueError(f"unexpected {text[parser.position :]!r} after column type {parsed.sql}")
    if parsed.name in ALIASES:
        parsed = ColumnType(ALIASES[parsed.name], parsed.arguments)
    return parsed


class _TypeParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def type(self) -> ColumnType:
        name = self.until("(<>,:")
        if not name:
            raise ValueError(f"expected a column type at {self.text[self.position :]!r:.40}")
        if name not in TYPE_NAMES and name not in ALIASES:
            raise ValueError(f"unknown column type {name}")
        if name in NESTED_TYPES:
            return self.nested(name)
        if not self.accept("("):
            return ColumnType(name)
        arguments = [self.integer()]
        while self.accept(","):
            arguments.append(self.integer())
        self.expect(")")
        return ColumnType(name, tuple(arguments))

    def nested(self, name: str) -> ColumnType:
        if not self.accept("<"):
            raise ValueError(f"{name} needs its element type(s): {name}<...>")
        names, elements = [], []
        while True:
            if name == "STRUCT":
                names.append(self.until(":<>,"))
                if not names[-1]:
                    raise ValueError(f"a STRUCT field needs a name in {self.text!r}")
                self.expect(":")
            elements.append(self.type())
            if not self.accept(","):
                break
        self.expect(">")
        wanted = {"ARRAY": 1, "MAP": 2}.get(name, len(elements))
        if len(elements) != wanted:
            raise ValueError(f"{name} takes {wanted} element type(s), not {len(elements)}")
        return ColumnType(name, elements=tuple(elements), field_names=tuple(names))

    def until(self, stops: str) -> str:
        start = self.position
        while self.position < len(self.text) and self.text[self.position] not in stops:
            self.position += 1
        return self.text[start : self.position]

    def integer(self) -> int:
        digits = self.until("(),<>:")
        if not digits.isascii() or not digits.isdigit():
            raise ValueError(f"expected a number in {self.text!r}, not {digits!r}")
        return int(digits)

    def accept(self, character: str) -> bool:
        if self.text.startswith(character, self.position):
            self.position += 1
            return True
        return False

    def expect(self, character: str) -> None:
        if not self.accept(character):
            raise ValueError(f"expected {character!r} at {self.text[self.position :]!r:.40}")
