"""A table as the data plane knows it: the catalog's table at one schema version, its columns as
Arrow types, its key model. The TN and the CN learn it from the FE with every write and read, and
refuse work against a version older than one they have seen."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import pyarrow as pa

from be.logtail.entries import HIDDEN_PREFIX, ROW_ID
from metadata.records import KeyModel, Table

COLUMN_ID_KEY = b"quire.column_id"  # a stored field's metadata: the id of its column


@dataclass(frozen=True, slots=True)
class ColumnSchema:
    name: str
    type: pa.DataType
    nullable: bool = True
    aggregation: str | None = None  # AGGREGATE KEY value columns: SUM, MAX, MIN, REPLACE, ...
    # The catalog's id of the column, kept by RENAME and MODIFY (0: not known, matched by name);
    # rows keep the ids they were written with, so old rows find their column after a rename.
    id: int = 0
    # What rows written before the column was added read, as SQL text (the catalog's backfill:
    # its default when it was added)
    backfill: str | None = None

    def __post_init__(self):
        assert self.id >= 0, self


@dataclass(frozen=True, slots=True)
class PartitionSchema:
    """Where a partition's rows go: its bounds as the catalog's canonical SQL literals (RANGE:
    lower inclusive, upper exclusive, () unbounded; LIST: its values) and its tablets, one per
    bucket."""

    id: int
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()
    values: tuple[tuple[str, ...], ...] = ()
    tablet_ids: tuple[int, ...] = ()

    def __post_init__(self):
        assert self.id > 0 and self.tablet_ids and min(self.tablet_ids) > 0, self


MAX_KEPT_SCHEMAS = 4096  # TableSchema.of's records kept; past it all are let go
_OF_TABLES: dict[int, tuple[Table, TableSchema]] = {}  # id(record) -> (record, its schema)
_OF_LOCK = threading.Lock()
# id(schema) -> (schema, what was worked out of it by name): every commit logs and publishes its
# table's schema, which never changes once built
_WORKED_OUT: dict[int, tuple[TableSchema, dict[str, object]]] = {}


@dataclass(frozen=True, slots=True)
class TableSchema:
    table_id: int
    schema_version: int
    columns: tuple[ColumnSchema, ...]
    key_model: KeyModel
    key_columns: tuple[str, ...]
    # Placement (be/tn/placement.py): () partition columns means one partition for every row;
    # () distribution columns means DISTRIBUTED BY RANDOM.
    partition_kind: str = "RANGE"
    partition_columns: tuple[str, ...] = ()
    partitions: tuple[PartitionSchema, ...] = ()
    distribution_columns: tuple[str, ...] = ()
    auto_increment: str | None = None  # the AUTO_INCREMENT column, whose values the TN hands out
    # UNIQUE KEY: the column whose larger value keeps a key's row (Doris's sequence column)
    sequence: str | None = None

    def __post_init__(self):
        names = [column.name for column in self.columns]
        assert len(names) == len(set(names)), "column names are unique"
        ids = [column.id for column in self.columns if column.id]
        assert len(ids) == len(set(ids)), "column ids are unique"
        assert all(not name.startswith(HIDDEN_PREFIX) for name in names)
        assert set(self.key_columns) <= set(names)
        assert self.partition_kind in ("RANGE", "LIST"), self.partition_kind
        assert set(self.partition_columns) <= set(names)
        assert set(self.distribution_columns) <= set(names)
        assert self.partition_columns or len(self.partitions) <= 1, "unpartitioned: one partition"
        assert self.auto_increment is None or self.auto_increment in names
        assert self.sequence is None or (self.sequence in names and self.replaces_on_key)

    def same_rows(self, other: TableSchema) -> bool:
        """Whether rows written against one are rows of the other: the two differ in their
        partitions alone (auto partitions made, ALTER TABLE ADD / DROP PARTITION)."""
        return replace(self, schema_version=0, partitions=()) == replace(
            other, schema_version=0, partitions=()
        )

    @classmethod
    def of(cls, table: Table) -> TableSchema:
        """table's schema (kept per catalog record: records never change, a change makes a new
        one, so every statement on a table does not build it again)."""
        kept = _OF_TABLES.get(id(table))
        if kept is not None and kept[0] is table:
            return kept[1]
        schema = cls._of(table)
        with _OF_LOCK:
            if len(_OF_TABLES) >= MAX_KEPT_SCHEMAS:
                _OF_TABLES.clear()
            _OF_TABLES[id(table)] = (table, schema)
        return schema

    @classmethod
    def _of(cls, table: Table) -> TableSchema:
        return cls(
            table.id,
            table.schema_version,
            tuple(
                ColumnSchema(
                    column.name,
                    column.type.arrow,
                    column.nullable,
                    column.aggregation,
                    column.id,
                    column.backfill,
                )
                for column in table.columns
            ),
            table.key_model,
            table.key_columns,
            table.partition_kind.value,
            _named(table, table.partition_columns),
            tuple(
                PartitionSchema(
                    partition.id,
                    partition.lower,
                    partition.upper,
                    partition.values,
                    tuple(partition.tablet_ids),
                )
                for partition in table.partitions
            ),
            _named(table, table.distribution_columns),
            auto_increment=next(
                (column.name for column in table.columns if column.auto_increment), None
            ),
            sequence=table.sequence_column,
        )

    def column(self, name: str) -> ColumnSchema:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def arrow(self) -> pa.Schema:
        return _worked_out(self, "arrow", self._arrow)

    def _arrow(self) -> pa.Schema:
        return pa.schema(
            [pa.field(column.name, column.type, column.nullable) for column in self.columns]
        )

    def after(self, hidden: tuple[pa.Field, ...], stored: bool) -> pa.Schema:
        """The hidden fields, then the columns (as stored: with their ids), kept."""
        columns = self.stored if stored else self.arrow
        return _worked_out(
            self, ("after", hidden, stored), lambda: pa.schema([*hidden, *columns()])
        )

    def deletes(self) -> pa.Schema:
        """A change's deletes: ROW_ID, then the key columns."""
        return _worked_out(self, "deletes", self._deletes)

    def _deletes(self) -> pa.Schema:
        keys = [self.column(name) for name in self.key_columns]
        fields = [pa.field(column.name, column.type, column.nullable) for column in keys]
        return pa.schema([pa.field(ROW_ID, pa.int64(), nullable=False), *fields])

    def with_row_ids(self) -> pa.Schema:
        return self.arrow().insert(0, pa.field(ROW_ID, pa.int64(), nullable=False))

    def stored(self) -> pa.Schema:
        """The columns as rows keep them: each field with its column's id (COLUMN_ID_KEY)."""
        return _worked_out(self, "stored", self._stored)

    def _stored(self) -> pa.Schema:
        return pa.schema(
            [
                pa.field(column.name, column.type, column.nullable, metadata=_id_metadata(column))
                for column in self.columns
            ]
        )

    @property
    def replaces_on_key(self) -> bool:
        """UNIQUE KEY: a row replaces the one with the same key when it is written (merge on
        write, as Doris's unique key tables)."""
        return self.key_model is KeyModel.UNIQUE

    # -- as JSON fields (the TN's log records, checkpoints, the node service) ----------------------

    def fields(self) -> dict:
        """The schema as JSON-able fields (the columns as Arrow's serialised schema)."""
        return dict(_worked_out(self, "fields", self._fields))

    def _fields(self) -> dict:
        columns = pa.schema(
            [
                pa.field(
                    column.name,
                    column.type,
                    column.nullable,
                    metadata=_field_metadata(column) or None,
                )
                for column in self.columns
            ]
        )
        return {
            "id": self.table_id,
            "version": self.schema_version,
            "key_model": self.key_model.value,
            "keys": list(self.key_columns),
            "auto_increment": self.auto_increment,
            "sequence": self.sequence,
            "schema": columns.serialize().to_pybytes().hex(),
            "placement": {
                "kind": self.partition_kind,
                "columns": list(self.partition_columns),
                "partitions": [
                    [
                        p.id,
                        list(p.lower),
                        list(p.upper),
                        [list(v) for v in p.values],
                        list(p.tablet_ids),
                    ]
                    for p in self.partitions
                ],
                "distribution": list(self.distribution_columns),
            },
        }

    @classmethod
    def from_fields(cls, fields: dict) -> TableSchema:
        """What fields() gave (KeyError, ValueError or pyarrow's errors if it is not that)."""
        arrow = pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(fields["schema"])))
        columns = tuple(
            ColumnSchema(
                field.name,
                field.type,
                field.nullable,
                (field.metadata or {}).get(b"aggregation", b"").decode() or None,
                int((field.metadata or {}).get(COLUMN_ID_KEY, b"0")),
                _backfill_of(field.metadata or {}),
            )
            for field in arrow
        )
        placement = fields.get("placement") or {}
        return cls(
            fields["id"],
            fields["version"],
            columns,
            KeyModel(fields["key_model"]),
            tuple(fields["keys"]),
            placement.get("kind", "RANGE"),
            tuple(placement.get("columns", ())),
            tuple(
                PartitionSchema(
                    partition_id,
                    tuple(lower),
                    tuple(upper),
                    tuple(tuple(value) for value in values),
                    tuple(tablets),
                )
                for partition_id, lower, upper, values, tablets in placement.get("partitions", ())
            ),
            tuple(placement.get("distribution", ())),
            fields.get("auto_increment"),
            fields.get("sequence"),
        )


def staying_rows(keys: list[tuple], sequences: list | None, held: Mapping) -> list[int]:
    """Of rows written for their keys to a UNIQUE KEY table, the indexes of those that stay,
    ascending: each key's last row; with a sequence column (sequences: the rows' values of it),
    its row of the largest value (the last of equal ones) unless the row it replaces has a
    larger one (held: by key, the value of each row the write would replace). NULL is the
    smallest value."""
    newest: dict[tuple, int] = {}
    for index, key in enumerate(keys):
        best = newest.get(key)
        if best is None or sequences is None or not _before(sequences[index], sequences[best]):
            newest[key] = index
    if sequences is None:
        return sorted(newest.values())
    return sorted(
        index
        for key, index in newest.items()
        if key not in held or not _before(sequences[index], held[key])
    )


def _before(value, other) -> bool:
    """Whether a sequence value is smaller than another (NULL the smallest)."""
    if value is None:
        return other is not None
    return other is not None and value < other


def _id_metadata(column: ColumnSchema) -> dict[bytes, bytes] | None:
    return {COLUMN_ID_KEY: str(column.id).encode()} if column.id else None


def _field_metadata(column: ColumnSchema) -> dict[bytes, bytes]:
    metadata = dict(_id_metadata(column) or {})
    if column.aggregation:
        metadata[b"aggregation"] = column.aggregation.encode()
    if column.backfill is not None:
        metadata[b"backfill"] = column.backfill.encode()
    return metadata


def _backfill_of(metadata: dict[bytes, bytes]) -> str | None:
    value = metadata.get(b"backfill")
    return None if value is None else value.decode()


def column_id(field: pa.Field) -> int:
    """The column id a stored field carries; 0 for rows written before columns had ids."""
    return int((field.metadata or {}).get(COLUMN_ID_KEY, b"0"))


def _named(table: Table, names: tuple[str, ...]) -> tuple[str, ...]:
    """The columns as the table spells them (the catalog matches names without case)."""
    return tuple(table.column(name).name for name in names)


def _worked_out(schema: TableSchema, name: object, work: Callable[[], object]):
    """What work gives for schema, kept with it (a schema never changes)."""
    kept = _WORKED_OUT.get(id(schema))
    if kept is None or kept[0] is not schema:
        with _OF_LOCK:
            if len(_WORKED_OUT) >= MAX_KEPT_SCHEMAS:
                _WORKED_OUT.clear()
            kept = _WORKED_OUT[id(schema)] = (schema, {})
    value = kept[1].get(name)
    if value is None:
        value = kept[1][name] = work()
    return value
