"""Merging in the background of the committer: after a table's flush, one of its tablets whose
small objects pass the merge policy (be/storage/merge) gets them merged into one object, swapped
in by one commit (objects_added, objects_removed). The replaced objects serve snapshots older than
the merge until merged_object_retention_seconds have passed; then they are deleted."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable

from be.logtail.entries import TableChanges
from be.storage.errors import StorageError
from be.storage.merge import merge_objects, objects_to_merge
from be.storage.objects import ObjectStore
from be.tn.limits import CommitLimits
from be.tn.objects import TableObjects

logger = logging.getLogger(__name__)

NANOS = 1_000_000_000


class Merger:
    def __init__(self, store: ObjectStore, limits: CommitLimits):
        self.store = store
        self.limits = limits
        # (merge timestamp, name) of replaced objects, oldest first
        self.pending: collections.deque[tuple[int, str]] = collections.deque()

    def merge(
        self,
        table_id: int,
        schema_version: int,
        known: TableObjects,
        at_ts: int,
        deleted_by: int | None = None,
    ) -> TableChanges | None:
        """The change that merges one tablet's small objects, written, less the rows deleted at
        or before deleted_by (at_ts by default); None if none needs it."""
        job = self.prepare(table_id, schema_version, known, at_ts, deleted_by)
        return job() if job is not None else None

    def prepare(
        self,
        table_id: int,
        schema_version: int,
        known: TableObjects,
        at_ts: int,
        deleted_by: int | None = None,
        every: bool = False,
        partition_ids: frozenset[int] = frozenset(),
    ) -> Callable[[], TableChanges | None] | None:
        """What `merge` does, as a job another thread may run (it takes what it merges now);
        None if no tablet needs a merge (every: if no tablet has two objects to merge, as
        objects_to_merge chooses them for ADMIN COMPACT TABLE; of partition_ids' tablets
        only, if any are named)."""
        by_tablet: dict[int, list] = {}
        for meta in known.objects.values():
            if not partition_ids or meta.partition_id in partition_ids:
                by_tablet.setdefault(meta.tablet_id, []).append(meta)
        for tablet_id in sorted(by_tablet):
            chosen = objects_to_merge(by_tablet[tablet_id], self.store.limits, every)
            if not chosen:
                continue
            tombstones = [meta for meta in known.tombstones.values() if meta.tablet_id == tablet_id]
            version = max(schema_version, chosen[0].schema_version)
            return lambda: self._merged(table_id, version, chosen, tombstones, at_ts, deleted_by)
        return None

    def _merged(
        self, table_id, schema_version, chosen, tombstones, at_ts, deleted_by
    ) -> TableChanges | None:
        try:
            merged = merge_objects(self.store, chosen, tombstones, at_ts, deleted_by=deleted_by)
        except StorageError as error:
            logger.warning("merging objects of tablet %d failed: %s", chosen[0].tablet_id, error)
            return None
        return TableChanges(
            table_id,
            schema_version,
            objects_added=(merged,) if merged is not None else (),
            objects_removed=tuple(meta.name for meta in chosen),
        )

    def replaced(self, names: tuple[str, ...], merge_ts: int) -> None:
        for name in names:
            self.pending.append((merge_ts, name))
        while len(self.pending) > self.limits.max_pending_deletions:
            _, name = self.pending.popleft()
            logger.warning("object %s is left behind: too many objects wait to be deleted", name)

    def delete_expired(self) -> int:
        """Delete the replaced objects no snapshot may read any more; how many were."""
        horizon = time.time_ns() - int(self.limits.merged_object_retention_seconds * NANOS)
        deleted = 0
        while self.pending and self.pending[0][0] < horizon:
            _, name = self.pending[0]
            try:
                self.store.delete(name, missing_ok=True)
            except StorageError as error:
                logger.warning("deleting the replaced object %s failed: %s", name, error)
                return deleted
            self.pending.popleft()
            deleted += 1
        return deleted
