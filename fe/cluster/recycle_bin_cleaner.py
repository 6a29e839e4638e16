"""The leader erases what has been in the recycle bin longer than catalog_trash_expire_second.

Expiry is the leader's decision, taken on its own clock against each entry's drop time and
journaled as one EraseRecycled entry, so every node erases the same entries at the same journal
id (apply never reads a clock)."""

from __future__ import annotations

import logging
import threading
import time

from be.config import Config
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
    ):
        self.catalog = catalog
        self.writer = writer
        self.config = config
        self.stopping = stopping

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
        return len(expired)
