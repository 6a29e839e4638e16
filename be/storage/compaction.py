"""Tombstone compaction: a tablet's objects rewritten without the rows its older tombstones
delete, so that those tombstones can go and snapshots stop applying them.

`tombstones_to_compact` is the policy: of a tablet's tombstones, those whose every delete is at
or before the cutoff (the oldest snapshot still readable, so every snapshot that may still be read
leaves those rows out), once there are tombstone_compaction_min_objects of them or they delete
tombstone_compaction_deleted_ratio of the tablet's rows. `compact_tablet` writes the rewritten
objects: for each object holding a row they delete, one with its other rows (row ids, commit
timestamps, schema version and flush timestamp kept), or none if every row of it is deleted. The
caller (the TN) swaps the objects and removes the tombstones in one commit, and deletes the
replaced files once no snapshot reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import ROW_ID
from be.storage.blocks import ObjectMeta, read_blocks, write_blocks
from be.storage.errors import MergeRefused, StorageError
from be.storage.limits import StorageLimits
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta, deleted_row_ids

logger = logging.getLogger(__name__)

RowIds = Callable[[ObjectMeta], pa.Array]  # the row ids an object holds


@dataclass(frozen=True, slots=True)
class Compaction:
    tombstones: tuple[TombstoneMeta, ...]  # every delete of theirs applied: removed
    replaced: tuple[ObjectMeta, ...]  # the objects that held a deleted row
    written: tuple[ObjectMeta, ...]  # their other rows (fewer objects if some held none)

    def __post_init__(self) -> None:
        assert self.tombstones, "a compaction removes tombstones"
        assert len(self.written) <= len(self.replaced)

    @property
    def removed_names(self) -> tuple[str, ...]:
        return tuple(meta.name for meta in (*self.replaced, *self.tombstones))


def tombstones_to_compact(
    objects: Iterable[ObjectMeta],
    tombstones: Iterable[TombstoneMeta],
    cutoff: int,
    limits: StorageLimits,
    every: bool = False,
) -> tuple[TombstoneMeta, ...]:
    """The tombstones of one tablet to compact now, oldest first (empty: none): those with no
    delete after cutoff, when the policy says their tablet needs it (every: whenever there are
    such, as ADMIN COMPACT TABLE asks)."""
    ready = sorted(
        (meta for meta in tombstones if meta.max_delete_ts <= cutoff), key=lambda m: m.name
    )
    if not ready:
        return ()
    rows = sum(meta.rows for meta in objects)
    deleted = sum(meta.rows for meta in ready)
    if (
        not every
        and len(ready) < limits.tombstone_compaction_min_objects
        and deleted < limits.tombstone_compaction_deleted_ratio * rows
    ):
        return ()
    return tuple(ready[: limits.tombstone_compaction_max_objects - 1])


def compact_tablet(
    store: ObjectStore,
    objects: Sequence[ObjectMeta],
    tombstones: Sequence[TombstoneMeta],
    at_ts: int,
    row_ids: RowIds | None = None,
) -> Compaction | None:
    """Rewrite one tablet's objects without the rows the tombstones delete, taking the oldest
    tombstones whose objects to rewrite fit tombstone_compaction_max_objects and merge_max_bytes
    (None if not even the first does). The new objects are named at at_ts; on a failure those
    written are deleted again and the StorageError raised."""
    assert tombstones and all(meta.max_delete_ts <= at_ts for meta in tombstones)
    tablet = tombstones[0].tablet
    if any(meta.tablet != tablet for meta in (*objects, *tombstones)):
        raise MergeRefused("compacted objects and tombstones must be of one tablet")
    held = row_ids or (
        lambda meta: read_blocks(store, meta, [ROW_ID]).column(ROW_ID).combine_chunks()
    )
    limits = store.limits
    taken: list[TombstoneMeta] = []
    affected: dict[str, ObjectMeta] = {}
    deleted: list[pa.Array] = []
    for tombstone in tombstones:
        ids = deleted_row_ids(store, [tombstone], tombstone.max_delete_ts)
        touched = dict(affected)
        for meta in objects:
            if meta.name in touched or not _overlaps(meta, tombstone):
                continue
            if pc.any(pc.is_in(held(meta), value_set=ids)).as_py():
                touched[meta.name] = meta
        if (
            len(touched) + len(taken) + 1 > limits.tombstone_compaction_max_objects
            or sum(meta.bytes for meta in touched.values()) > limits.merge_max_bytes
        ):
            break
        taken.append(tombstone)
        affected = touched
        deleted.append(ids)
    if not taken:
        logger.warning(
            "tombstone %s of tablet %d touches more objects than one compaction takes",
            tombstones[0].name,
            tablet.tablet_id,
        )
        return None
    gone = pc.unique(pa.chunked_array(deleted, pa.int64()).combine_chunks())
    replaced = tuple(sorted(affected.values(), key=lambda meta: meta.name))
    written = _rewritten(store, replaced, gone, at_ts)
    logger.info(
        "compacted %d tombstone objects of tablet %d at %d: %d objects (%d rows) rewritten as %d "
        "(%d rows)",
        len(taken),
        tablet.tablet_id,
        at_ts,
        len(replaced),
        sum(meta.rows for meta in replaced),
        len(written),
        sum(meta.rows for meta in written),
    )
    return Compaction(tuple(taken), replaced, written)


def _rewritten(
    store: ObjectStore, replaced: Sequence[ObjectMeta], gone: pa.Array, at_ts: int
) -> tuple[ObjectMeta, ...]:
    written: list[ObjectMeta] = []
    try:
        for meta in replaced:
            rows = read_blocks(store, meta)
            rows = rows.filter(pc.invert(pc.is_in(rows.column(ROW_ID), value_set=gone)))
            assert rows.num_rows < meta.rows, meta.name
            if not rows.num_rows:
                continue
            written.append(
                write_blocks(
                    store,
                    meta.tablet,
                    rows,
                    schema_version=meta.schema_version,
                    flush_ts=meta.flush_ts,
                    seq=len(written),
                    name_ts=at_ts,
                )
            )
    except StorageError:
        for meta in written:
            try:
                store.delete(meta.name, missing_ok=True)
            except StorageError as error:
                logger.warning("the unfinished compaction's object %s stays: %s", meta.name, error)
        raise
    return tuple(written)


def _overlaps(meta: ObjectMeta, tombstone: TombstoneMeta) -> bool:
    return meta.min_row_id <= tombstone.max_row_id and tombstone.min_row_id <= meta.max_row_id
