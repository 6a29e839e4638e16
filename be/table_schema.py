"""A table as the data plane knows it: the catalog's table at one schema version, its columns as
Arrow types, its key model. The TN and the CN learn it from the FE with every write and read, and
refuse work against a version older than one they have seen."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from be.logtail.entries import HIDDEN_PREFIX, ROW_ID
from metadata.records import KeyModel, Table


@dataclass(frozen=True, slots=True)
class ColumnSchema:
    name: str
    type: pa.DataType
    nullable: bool = True
    aggregation: str | None = None  # AGGREGATE KEY value columns: SUM, MAX, MIN, REPLACE, ...


@dataclass(frozen=True, slots=True)
class TableSchema:
    table_id: int
    schema_version: int
    columns: tuple[ColumnSchema, ...]
    key_model: KeyModel
    key_columns: tuple[str, ...]
    auto_increment: str | None = None  # the AUTO_INCREMENT column, whose values the TN hands out

    def __post_init__(self):
        names = [column.name for column in self.columns]
        assert len(names) == len(set(names)), "column names are unique"
        assert all(not name.startswith(HIDDEN_PREFIX) for name in names)
        assert set(self.key_columns) <= set(names)
        assert self.auto_increment is None or self.auto_increment in names

    @classmethod
    def of(cls, table: Table) -> TableSchema:
        return cls(
            table.id,
            table.schema_version,
            tuple(
                ColumnSchema(column.name, column.type.arrow, column.nullable, column.aggregation)
                for column in table.columns
            ),
            table.key_model,
            table.key_columns,
            next((column.name for column in table.columns if column.auto_increment), None),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def arrow(self) -> pa.Schema:
        return pa.schema(
            [pa.field(column.name, column.type, column.nullable) for column in self.columns]
        )

    def with_row_ids(self) -> pa.Schema:
        return self.arrow().insert(0, pa.field(ROW_ID, pa.int64(), nullable=False))

    @property
    def replaces_on_key(self) -> bool:
        """UNIQUE KEY: a row replaces the one with the same key when it is written (merge on
        write, as Doris's unique key tables)."""
        return self.key_model is KeyModel.UNIQUE
