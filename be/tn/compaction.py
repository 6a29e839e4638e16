"""Tombstone compaction in the background of the committer: a tablet whose tombstones the policy
(be/storage/compaction) picks gets the objects they delete rows of rewritten without those rows,
swapped in by one commit that also removes the tombstones (objects_added; objects_removed names
the replaced objects and the tombstones). A CN serves the replaced objects and the removed
tombstones to snapshots before that commit; the TN deletes their files once
merged_object_retention_seconds have passed, as it does a merge's.

Only deletes at or before the oldest readable snapshot (the TN's horizon) are compacted, so
every snapshot that may still be read, from the new objects alone as a CN restarted from a later
checkpoint reads them, leaves those rows out: the answer at any readable time stays the same."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from be.logtail.entries import TableChanges
from be.logtail.format import MAX_OBJECTS_PER_CHANGE
from be.storage.blocks import ObjectMeta
from be.storage.compaction import compact_tablet, tombstones_to_compact
from be.storage.errors import StorageError
from be.storage.limits import MAX_COMPACTION_OBJECTS
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta
from be.tn.objects import TableObjects

logger = logging.getLogger(__name__)

assert MAX_COMPACTION_OBJECTS <= MAX_OBJECTS_PER_CHANGE


def prepare(
    store: ObjectStore,
    table_id: int,
    schema_version: int,
    known: TableObjects,
    cutoff: int,
    every: bool = False,
    partition_ids: frozenset[int] = frozenset(),
) -> Callable[[int], TableChanges | None] | None:
    """The compaction of one of the table's tablets, as a job another thread runs with the
    commit timestamp it is named at (it takes the objects it reads now); None if no tablet
    needs one (every: none has a tombstone old enough, as ADMIN COMPACT TABLE asks; of
    partition_ids' tablets only, if any are named). Chosen from metadata alone: the committer's
    thread calls it."""
    if cutoff <= 0 or not known.tombstones:
        return None
    tombstones_by_tablet: dict[int, list[TombstoneMeta]] = {}
    for meta in known.tombstones.values():
        if not partition_ids or meta.partition_id in partition_ids:
            tombstones_by_tablet.setdefault(meta.tablet_id, []).append(meta)
    objects_by_tablet: dict[int, list[ObjectMeta]] = {}
    for meta in known.objects.values():
        objects_by_tablet.setdefault(meta.tablet_id, []).append(meta)
    for tablet_id in sorted(tombstones_by_tablet):
        objects = objects_by_tablet.get(tablet_id, [])
        chosen = tombstones_to_compact(
            objects, tombstones_by_tablet[tablet_id], cutoff, store.limits, every
        )
        if not chosen:
            continue
        version = max([schema_version, *(meta.schema_version for meta in objects)])
        return functools.partial(_compacted, store, table_id, version, known, objects, chosen)
    return None


def _compacted(
    store: ObjectStore,
    table_id: int,
    schema_version: int,
    known: TableObjects,
    objects: list[ObjectMeta],
    tombstones: tuple[TombstoneMeta, ...],
    at_ts: int,
) -> TableChanges | None:
    try:
        done = compact_tablet(
            store, objects, tombstones, at_ts, lambda meta: known.row_ids_of(store, meta)
        )
    except StorageError as error:  # tried again at the next check
        logger.warning(
            "compacting tombstones of tablet %d failed: %s", tombstones[0].tablet_id, error
        )
        return None
    if done is None:
        return None
    return TableChanges(
        table_id,
        schema_version,
        objects_added=done.written,
        objects_removed=done.removed_names,
    )
