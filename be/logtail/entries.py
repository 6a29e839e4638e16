"""A commit's changes as the TN produces them and a CN applies them.

Inserted rows carry their row id (a table-wide int64 the TN hands out, never reused) and every
column of the table at its schema version; deleted rows carry the row id and the table's key
columns. The commit timestamp belongs to the whole commit. A commit with no changes is a heartbeat:
it only consumes a timestamp, and tells every CN that nothing else committed up to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

ROW_ID = "__QUIRE_ROW_ID"  # int64, first column of inserts and deletes
COMMIT_TS = "__QUIRE_COMMIT_TS"  # int64, added by a CN to rows it keeps in memory
HIDDEN_PREFIX = "__QUIRE_"  # no user column may start with it


@dataclass(frozen=True, slots=True)
class TableChanges:
    table_id: int
    schema_version: int
    inserts: pa.Table | None = None  # ROW_ID, then the table's columns by name
    deletes: pa.Table | None = None  # ROW_ID, then the table's key columns

    def __post_init__(self):
        assert self.table_id > 0 and self.schema_version > 0
        for batch in (self.inserts, self.deletes):
            assert batch is None or (batch.num_columns and batch.schema.names[0] == ROW_ID), (
                "row ids come first"
            )

    @property
    def row_count(self) -> int:
        return sum(batch.num_rows for batch in (self.inserts, self.deletes) if batch is not None)


@dataclass(frozen=True, slots=True)
class Commit:
    commit_ts: int
    changes: tuple[TableChanges, ...] = ()

    def __post_init__(self):
        assert self.commit_ts > 0
        tables = [change.table_id for change in self.changes]
        assert len(tables) == len(set(tables)), "one TableChanges per table"

    @property
    def is_heartbeat(self) -> bool:
        return not self.changes

    def tables(self) -> frozenset[int]:
        return frozenset(change.table_id for change in self.changes)
