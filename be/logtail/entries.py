"""A commit's changes as the TN produces them and a CN applies them.

Inserted rows carry their row id (a table-wide int64 the TN hands out, never reused) and every
column of the table at its schema version; deleted rows carry the row id and the table's key
columns. The commit timestamp belongs to the whole commit. A commit with no changes is a heartbeat:
it only consumes a timestamp, and tells every CN that nothing else committed up to it.

A flush (or a merge) is a commit too: its changes name the objects it added (whose rows a CN then
drops from memory: those committed at or before the object's flush timestamp), the tombstones it
added (whose deletes a CN drops from memory likewise) and the objects it replaced; a tombstone
compaction is one too, its removed names covering the tombstones whose deletes it applied.

An overwrite (a bulk load that replaces the table's rows, `overwrites`) is one commit too: the
load's objects added, every object and tombstone of the table's partitions removed, and every row
of them still in memory deleted, all at its timestamp; snapshots before it still read the removed
objects, as they read a merge's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from be.storage.blocks import ObjectMeta
    from be.storage.tombstones import TombstoneMeta

ROW_ID = "__QUIRE_ROW_ID"  # int64, first column of inserts and deletes
COMMIT_TS = "__QUIRE_COMMIT_TS"  # int64, added by a CN to rows it keeps in memory
# int64, after ROW_ID in inserts the TN placed: the partition each row went to when it was
# written, so that the rows of a truncated, replaced or dropped partition are no longer read (a
# partition keeps its id and tablets until then; TRUNCATE and REPLACE make new ones).
PARTITION_ID = "__QUIRE_PARTITION_ID"
HIDDEN_PREFIX = "__QUIRE_"  # no user column may start with it


@dataclass(frozen=True, slots=True)
class TableChanges:
    table_id: int
    schema_version: int
    # ROW_ID, PARTITION_ID (if placed), then the table's columns by name, each
    # field with its column id (TableSchema.stored)
    inserts: pa.Table | None = None
    deletes: pa.Table | None = None  # ROW_ID, then the table's key columns
    objects_added: tuple[ObjectMeta, ...] = ()
    tombstones_added: tuple[TombstoneMeta, ...] = ()
    # names of the objects a merge or a tombstone compaction replaced, and of the tombstones a
    # compaction applied for good (be/tn/compaction.py)
    objects_removed: tuple[str, ...] = ()
    # A flush: every row and delete of the table committed at or before it is now in objects.
    flushed_ts: int = 0
    # A load that replaces the table's rows: objects_removed are all its objects and tombstones,
    # deletes all its rows in memory, and every row committed before is gone from this commit on.
    overwrites: bool = False

    def __post_init__(self):
        assert self.table_id > 0 and self.schema_version > 0
        assert not (self.overwrites and self.flushed_ts), "an overwrite is no flush"
        assert all(meta.table_id == self.table_id for meta in self.objects_added)
        assert all(meta.table_id == self.table_id for meta in self.tombstones_added)
        for batch in (self.inserts, self.deletes):
            assert batch is None or (batch.num_columns and batch.schema.names[0] == ROW_ID), (
                "row ids come first"
            )

    @property
    def row_count(self) -> int:
        return sum(batch.num_rows for batch in (self.inserts, self.deletes) if batch is not None)

    @property
    def loads_objects(self) -> bool:
        """A bulk load's commit: objects written elsewhere, their rows never in memory, visible
        from this commit on (neither a flush's nor a merge's)."""
        return (
            bool(self.objects_added)
            and not self.flushed_ts
            and (self.overwrites or not self.objects_removed)
        )

    @property
    def changes_storage(self) -> bool:
        return bool(
            self.flushed_ts
            or self.objects_added
            or self.tombstones_added
            or self.objects_removed
            or self.overwrites
        )


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
