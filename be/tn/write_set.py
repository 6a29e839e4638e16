"""What a transaction asks the TN to commit: per table, the rows it inserts and the rows (seen in
its snapshot) it deletes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from be.logtail.entries import ROW_ID
from be.table_schema import TableSchema
from be.tn.loads import LoadClaim

SMALL_TABLE_BYTES = 1 << 16  # below this, a table's buffers are counted whole (a slice's too)


def table_bytes(table: pa.Table) -> int:
    """About the bytes of table's data: its buffers' sizes when they are small (cheap, and at
    least what it holds), else what it references (Arrow's count, costly per call)."""
    whole = table.get_total_buffer_size()
    return whole if whole <= SMALL_TABLE_BYTES else table.nbytes


@dataclass(frozen=True, slots=True)
class TableWrite:
    schema: TableSchema
    inserts: pa.Table | None = None  # the table's columns, by name, in the schema's order
    deletes: pa.Table | None = None  # ROW_ID, then the key columns of each deleted row
    _nbytes: int = field(default=-1, init=False, repr=False, compare=False)  # counted once

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
        if self._nbytes < 0:
            size = sum(table_bytes(t) for t in (self.inserts, self.deletes) if t is not None)
            object.__setattr__(self, "_nbytes", size)
        return self._nbytes


@dataclass(frozen=True, slots=True)
class WriteSet:
    snapshot_ts: int  # what the transaction read at; its deletes name rows visible there
    writes: tuple[TableWrite, ...]
    request_id: str = ""  # a retry with the same id gets the first commit's answer
    claim: LoadClaim | None = None  # a label: refused if a load not aborted holds it

    def __post_init__(self):
        tables = [write.schema.table_id for write in self.writes]
        assert len(tables) == len(set(tables)), "one TableWrite per table"

    @property
    def row_count(self) -> int:
        return sum(write.row_count for write in self.writes)

    @property
    def nbytes(self) -> int:
        return sum(write.nbytes for write in self.writes)
