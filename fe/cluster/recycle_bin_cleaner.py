"""The leader erases what has been in the recycle bin longer than catalog_trash_expire_second,
and tells the TN which tables and partitions may still be read, so that it frees the objects of
the rest (erased from the bin, dropped with FORCE, truncated away).

Expiry is the leader's decision, taken on its own clock against each entry's drop time and
journaled as one EraseRecycled entry, so every node erases the same entries at the same journal
id (apply never reads a clock). What may be read is what the catalog holds, live or in the bin;
a partition is given up only when two checks in a row by this leader found it in neither (a new
leader may not have applied every entry yet), and only for what the TN committed before the
check read its timestamp (later rows belong to partitions the catalog already had)."""

from __future__ import annotations

import logging
import threading
import time

from be.config import Config
from be.service.errors import ServiceError
from be.tn.errors import CommitError
from fe.cluster.write_path import MetadataWriter, repeat_while_leading
from metadata import ops
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

MAX_ERASED_PER_ENTRY = 4096
MIN_CHECK_INTERVAL_SECONDS = 0.2


def expired_entries(catalog: Catalog, now_ms: int, expire_seconds: int) -> list[tuple[int, int]]:
    """(id, drop_time_ms) of every bin entry older than expire_seconds at now_ms, oldest first."""
    deadline = now_ms - expire_seconds * 1000
    with catalog.lock:
        return [
            (recycled.id, recycled.drop_time_ms)
            for recycled in catalog.recycle_bin.values()
            if recycled.drop_time_ms <= deadline
        ]


class RecycleBinCleaner:
    def __init__(
        self,
        catalog: Catalog,
        writer: MetadataWriter,
        config: Config,
        stopping: threading.Event,
        data_plane=None,
    ):
        self.catalog = catalog
        self.writer = writer
        self.config = config
        self.stopping = stopping
        self.data_plane = data_plane
        self._reachable_before: dict[int, frozenset[int]] | None = None
        self._checked_at = 0.0

    def start(self) -> None:
        repeat_while_leading(
            "recycle-bin-cleaner", self.writer, self.stopping, self.interval, self.erase_expired
        )

    def interval(self) -> float:
        return max(self.config["catalog_trash_check_interval_second"], MIN_CHECK_INTERVAL_SECONDS)

    def erase_expired(self) -> int:
        expired = expired_entries(
            self.catalog, int(time.time() * 1000), self.config["catalog_trash_expire_second"]
        )
        for start in range(0, len(expired), MAX_ERASED_PER_ENTRY):
            batch = tuple(expired[start : start + MAX_ERASED_PER_ENTRY])
            self.writer.commit_blocking([ops.EraseRecycled(batch)])
        if expired:
            logger.info("erased %d expired recycle bin entries", len(expired))
        if self.data_plane is not None:
            try:
                self.free_unreachable()
            except (ServiceError, CommitError) as error:  # no TN yet, or it is away
                logger.debug("the TN was not told what may still be read: %s", error)
        return len(expired)

    def free_unreachable(self) -> None:
        now = time.monotonic()
        if now - self._checked_at > 3 * self.interval():  # not leading in between: start over
            self._reachable_before = None
        self._checked_at = now
        as_of_ts = self.data_plane.read_ts()  # before the catalog is read
        reachable = reachable_partitions(self.catalog)
        before, self._reachable_before = self._reachable_before, reachable
        if before is None:
            return
        either = dict(reachable)
        for table_id, partitions in before.items():
            either[table_id] = either.get(table_id, frozenset()) | partitions
        self.data_plane.forget_unreachable(as_of_ts, either)


def reachable_partitions(catalog: Catalog) -> dict[int, frozenset[int]]:
    """table id -> the ids of its partitions a read may reach again: live tables' partitions
    (temporary ones too), and what the recycle bin holds for RECOVER."""
    found: dict[int, set[int]] = {}

    def add(table) -> None:
        ids = found.setdefault(table.id, set())
        ids.update(p.id for p in (*table.partitions, *table.temporary_partitions))

    with catalog.lock:
        for table in catalog.tables.values():
            add(table)
        for recycled in catalog.recycle_bin.values():
            for table in recycled.tables:
                add(table)
            if recycled.partition is not None:
                found.setdefault(recycled.table_id, set()).add(recycled.partition.id)
    return {table_id: frozenset(ids) for table_id, ids in found.items()}
