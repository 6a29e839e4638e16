"""What a transaction asks the TN to commit: per table, the rows it inserts and the rows (seen in
its snapshot) it deletes."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from be.logtail.entries import ROW_ID
from be.table_schema import TableSchema


@dataclass(frozen=True, slots=True)
class TableWrite:
    schema: TableSchema
    inserts: pa.Table | None = None  # the table's columns, by name, in the schema's order
    deletes: pa.Table | None = None  # ROW_ID, then the key columns of each deleted row

    def __post_init__(self):
        if self.inserts is not None:
            assert tuple(self.inserts.schema.names) == self.schema.names, (
                self.inserts.schema.names,
                self.schema.names,
            )
        if self.deletes is not None:
            assert self.deletes.schema.names[0] == ROW_ID

    @property
    def row_count(self) -> int:
        return sum(t.num_rows for t in (self.inserts, self.deletes) if t is not None)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (self.inserts, self.deletes) if t is not None)


@dataclass(frozen=True, slots=True)
class WriteSet:
    snapshot_ts: int  # what the transaction read at; its deletes name rows visible there
    writes: tuple[TableWrite, ...]
    request_id: str = ""  # a retry with the same id gets the first commit's answer

    def __post_init__(self):
        tables = [write.schema.table_id for write in self.writes]
        assert len(tables) == len(set(tables)), "one TableWrite per table"

    @property
    def row_count(self) -> int:
        return sum(write.row_count for write in self.writes)

    @property
    def nbytes(self) -> int:
        return sum(write.nbytes for write in self.writes)
