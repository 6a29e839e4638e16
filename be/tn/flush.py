"""Flush: the TN writes a table's unflushed rows as one object per tablet, and its unflushed
deletes as tombstones filed under the tablet of the row each deletes, once they pass flush_rows or
flush_bytes or are older than flush_interval.

`write` only writes objects; the flush takes effect as a commit (TableChanges with the objects,
the tombstones and flushed_ts) that the pipeline logs and publishes, and `apply` then drops from
memory what the objects hold, on the TN as on every CN. Replaying the log applies the same
commits, so a restarted TN knows every object and keeps in memory only what no flush holds.

Rows go to the partition the TN placed them in when they were committed, split into its buckets
by the flush's schema, their columns as that schema has them (by column id); the rows of a
partition the schema no longer lists (dropped, maybe recovered later) go to one object filed
under the partition's id as tablet."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from be.cn.node import TableImage
from be.logtail.entries import COMMIT_TS, PARTITION_ID, ROW_ID, Commit, TableChanges
from be.row_adapter import adapted
from be.storage.blocks import write_blocks
from be.storage.names import Tablet
from be.storage.objects import ObjectStore
from be.storage.tombstones import write_tombstones
from be.table_schema import TableSchema
from be.tn import placement
from be.tn.errors import FlushFailed
from be.tn.limits import CommitLimits
from be.tn.memory import TableMemory
from be.tn.objects import TableObjects
from be.tn.write_set import WriteSet

logger = logging.getLogger(__name__)


class Flusher:
    def __init__(self, store: ObjectStore | None, limits: CommitLimits):
        self.store = store  # None: nothing is flushed (a TN without object storage)
        self.limits = limits
        self.memory: dict[int, TableMemory] = {}
        self.objects: dict[int, TableObjects] = {}
        self.refusals: dict[int, str] = {}  # table -> why its last flush failed
        self._retry_at: dict[int, float] = {}
        self._lock = threading.Lock()  # apply (the committer) against tablet_totals (readers)

    def apply(self, commit: Commit) -> None:
        """A logged commit: its rows and deletes wait for a flush; a flush's objects replace what
        they hold."""
        with self._lock:
            self._apply(commit)

    def _apply(self, commit: Commit) -> None:
        for change in commit.changes:
            if change.changes_storage:
                self.table_objects(change.table_id).apply(change)
                if change.flushed_ts and change.table_id in self.memory:
                    self.memory[change.table_id].drop_until(change.flushed_ts)
                    self.refusals.pop(change.table_id, None)
            if change.inserts is not None or change.deletes is not None:
                self.memory.setdefault(change.table_id, TableMemory()).add(change, commit.commit_ts)

    def table_objects(self, table_id: int) -> TableObjects:
        known = self.objects.get(table_id)
        if known is None:
            known = self.objects[table_id] = TableObjects(self.limits.max_cached_row_ids)
        return known

    def due(self, schemas: dict[int, TableSchema]) -> list[int]:
        """Tables to flush now: past a size or an age, placeable, not waiting to retry."""
        if self.store is None:
            return []
        now = time.monotonic()
        found = []
        for table_id, memory in self.memory.items():
            if memory.empty or now < self._retry_at.get(table_id, 0.0):
                continue
            schema = schemas.get(table_id)
            if schema is None or not placement.placeable(schema):
                continue
            old = (
                memory.since is not None
                and now - memory.since >= self.limits.flush_interval_seconds
            )
            if old or self._full(memory):
                found.append(table_id)
        return found

    def check(self, write_set: WriteSet) -> None:
        """FlushFailed if the write set adds rows to a table that needs a flush the store refused."""
        for write in write_set.writes:
            table_id = write.schema.table_id
            memory = self.memory.get(table_id)
            if table_id in self.refusals and memory is not None and self._full(memory):
                raise FlushFailed(
                    f"table {table_id} holds {memory.row_count} unflushed rows and the object "
                    f"store refused its flush: {self.refusals[table_id]}"
                )

    def failed(self, table_id: int, error: Exception) -> None:
        logger.warning("flushing table %d failed: %s", table_id, error)
        self.refusals[table_id] = str(error)
        self._retry_at[table_id] = time.monotonic() + self.limits.flush_retry_seconds

    def write(self, schema: TableSchema, flush_ts: int) -> TableChanges:
        """Write the table's rows and deletes committed at or before flush_ts as objects; their
        metadata, as the change a flush commit makes. StorageError if the store refuses."""
        return self.prepare(schema, flush_ts)()

    def prepare(self, schema: TableSchema, flush_ts: int) -> Callable[[], TableChanges]:
        """What `write` does, as a job another thread may run: it takes what the flush writes
        now (on the committer) and touches nothing the committer changes."""
        assert self.store is not None and placement.placeable(schema)
        memory = self.memory[schema.table_id]
        known = self.table_objects(schema.table_id)
        pieces = [piece for piece in memory.rows_until(flush_ts) if piece.num_rows]
        ids, stamps = memory.deletes_until(flush_ts)
        metas = list(known.objects.values())
        store = self.store

        def job() -> TableChanges:
            return _write(store, schema, flush_ts, pieces, ids, stamps, known, metas)

        return job

    def tablet_totals(self, schema: TableSchema) -> dict[int, tuple[int, int, int]]:
        """Rows and bytes per tablet id of the partitions schema lists (its objects', and its
        share of the unflushed rows), and how many objects it has."""
        with self._lock:
            known = self.objects.get(schema.table_id, TableObjects()).tablet_totals()
            memory = self.memory.get(schema.table_id)
            pieces = list(memory.rows) if memory is not None else []
        listed = {partition.id for partition in schema.partitions}
        totals = {
            tablet.tablet_id: value
            for tablet, value in known.items()
            if not listed or tablet.partition_id in listed
        }
        if pieces and placement.placeable(schema):
            for tablet, part in _placed(schema, pieces).items():
                if tablet.partition_id not in listed:
                    continue
                count, size, objects = totals.get(tablet.tablet_id, (0, 0, 0))
                totals[tablet.tablet_id] = (count + part.num_rows, size + part.nbytes, objects)
        return totals

    def image(self, table_id: int) -> TableImage:
        """The table as the TN holds it now (a CN in this process follows it from here): its
        objects, its tombstones, what no flush holds yet."""
        with self._lock:
            known = self.objects.get(table_id)
            memory = self.memory.get(table_id)
            return TableImage(
                tuple(known.objects.values()) if known is not None else (),
                tuple(known.tombstones.values()) if known is not None else (),
                tuple(memory.rows) if memory is not None else (),
                tuple(memory.delete_ids) if memory is not None else (),
                tuple(memory.delete_ts) if memory is not None else (),
            )

    def full(self, table_id: int) -> bool:
        """Whether the table's unflushed rows and deletes pass flush_rows or flush_bytes."""
        memory = self.memory.get(table_id)
        return self.store is not None and memory is not None and self._full(memory)

    def _full(self, memory: TableMemory) -> bool:
        return (
            memory.row_count >= self.limits.flush_rows or memory.nbytes >= self.limits.flush_bytes
        )


def _write(
    store: ObjectStore,
    schema: TableSchema,
    flush_ts: int,
    pieces: list[pa.Table],
    delete_ids: pa.Array,
    delete_stamps: pa.Array,
    known: TableObjects,
    metas: list,
) -> TableChanges:
    table_id = schema.table_id
    placed: dict[Tablet, pa.Table] = {}
    if pieces:
        placed = _placed(schema, pieces)
        unplaced = sum(piece.num_rows for piece in pieces) - sum(
            part.num_rows for part in placed.values()
        )
        if unplaced:
            logger.warning(
                "table %d: %d rows of dropped partitions are not flushed", table_id, unplaced
            )
    objects = []
    most = store.limits.max_object_rows
    for tablet, part in sorted(placed.items(), key=lambda item: item[0].tablet_id):
        for start in range(0, part.num_rows, most):
            chunk = part.slice(start, most)
            meta = write_blocks(
                store,
                tablet,
                chunk,
                schema_version=schema.schema_version,
                flush_ts=flush_ts,
                seq=start // most,
            )
            known.remember_row_ids(meta.name, chunk.column(ROW_ID).combine_chunks())
            objects.append(meta)
    tombstones = [
        write_tombstones(store, tablet, ids, stamps, name_ts=flush_ts)
        for tablet, (ids, stamps) in _deletes_by_tablet(
            store, delete_ids, delete_stamps, known, metas, placed
        ).items()
    ]
    logger.info(
        "flushed table %d at %d: %d objects (%d rows), %d tombstone objects",
        table_id,
        flush_ts,
        len(objects),
        sum(meta.rows for meta in objects),
        len(tombstones),
    )
    return TableChanges(
        table_id,
        schema.schema_version,
        objects_added=tuple(objects),
        tombstones_added=tuple(tombstones),
        flushed_ts=flush_ts,
    )


def _deletes_by_tablet(
    store: ObjectStore,
    ids: pa.Array,
    stamps: pa.Array,
    known: TableObjects,
    metas: list,
    placed: dict[Tablet, pa.Table],
) -> dict[Tablet, tuple[pa.Array, pa.Array]]:
    """The deletes, by the tablet of the row each deletes: a row of this flush, or of an object."""
    found: dict[Tablet, tuple[pa.Array, pa.Array]] = {}
    if not len(ids):
        return found
    remaining = pa.array([True] * len(ids))
    for tablet, part in placed.items():
        mine = pc.is_in(ids, value_set=part.column(ROW_ID).combine_chunks())
        if pc.any(mine).as_py():
            found[tablet] = (ids.filter(mine), stamps.filter(mine))
            remaining = pc.and_(remaining, pc.invert(mine))
    ids, stamps = ids.filter(remaining), stamps.filter(remaining)
    for tablet, held in known.tablets_of(store, ids, metas).items():
        mine = pc.is_in(ids, value_set=held)
        more_ids, more_stamps = ids.filter(mine), stamps.filter(mine)
        if tablet in found:
            more_ids = pa.concat_arrays([found[tablet][0], more_ids])
            more_stamps = pa.concat_arrays([found[tablet][1], more_stamps])
        found[tablet] = (more_ids, more_stamps)
    return found


_ROW_FIELDS = (pa.field(ROW_ID, pa.int64(), False), pa.field(COMMIT_TS, pa.int64(), False))
_PARTITION_ID_FIELD = pa.field(PARTITION_ID, pa.int64(), False)


def _placed(schema: TableSchema, pieces: list[pa.Table]) -> dict[Tablet, pa.Table]:
    """The pieces' rows in schema's columns (by column id: rows written before a schema change
    read as the schema now says), by tablet, in the partition each row was placed in when it was
    written (by schema's placement for rows logged before rows carried it)."""
    placed_rows = [piece for piece in pieces if PARTITION_ID in piece.schema.names]
    older = [piece for piece in pieces if PARTITION_ID not in piece.schema.names]
    placed: dict[Tablet, pa.Table] = {}
    if placed_rows:
        hidden = (*_ROW_FIELDS, _PARTITION_ID_FIELD)
        rows = pa.concat_tables(
            [adapted(piece, schema, hidden, stored=True) for piece in placed_rows]
        )
        placed = placement.by_placed_partition(schema, rows)
    if older:
        rows = pa.concat_tables(
            [adapted(piece, schema, _ROW_FIELDS, stored=True) for piece in older]
        )
        for tablet, part in placement.by_tablet(schema, rows).items():
            if tablet in placed:
                part = pa.concat_tables([placed[tablet], part]).sort_by(ROW_ID)
            placed[tablet] = part
    return placed
