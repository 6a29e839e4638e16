"""The leader keeps dynamic partition tables' partitions (fe/statements/dynamic_partitions.py)
up to date: every dynamic_partition_check_interval_seconds it adds the periods each table's rules
want now and drops the expired ones, one ReplaceTable entry a table changed. What it did last is
kept for SHOW DYNAMIC PARTITION TABLES on this node (a follower shows its own runs: none)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from be.config import Config
from fe.cluster.write_path import MetadataWriter, repeat_while_leading
from fe.mysql.errors import QueryError
from fe.statements import dynamic_partitions
from metadata import ops
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

MIN_CHECK_INTERVAL_SECONDS = 0.2
MAX_TABLES_A_RUN = 10_000


@dataclass
class TableRun:
    """SHOW DYNAMIC PARTITION TABLES' LastUpdateTime, LastSchedulerTime, State and messages."""

    scheduled_at: float = 0.0
    updated_at: float = 0.0
    state: str = "NORMAL"
    create_message: str = ""
    drop_message: str = ""


class DynamicPartitionScheduler:
    def __init__(
        self, catalog: Catalog, writer: MetadataWriter, config: Config, stopping: threading.Event
    ):
        self.catalog = catalog
        self.writer = writer
        self.config = config
        self.stopping = stopping
        self.runs: dict[int, TableRun] = {}

    def start(self) -> None:
        repeat_while_leading(
            "dynamic-partitions", self.writer, self.stopping, self.interval, self.run, at_once=True
        )

    def interval(self) -> float:
        return max(
            self.config["dynamic_partition_check_interval_seconds"], MIN_CHECK_INTERVAL_SECONDS
        )

    def run(self) -> int:
        """Schedule every dynamic partition table once: how many changed."""
        if not self.config["dynamic_partition_enable"]:
            return 0
        with self.catalog.lock:
            ids = [t.id for t in self.catalog.tables.values() if dynamic_partitions.has_rules(t)][
                :MAX_TABLES_A_RUN
            ]
        changed = sum(self._schedule(table_id) for table_id in ids)
        live = set(ids)
        for gone in [table_id for table_id in self.runs if table_id not in live]:
            del self.runs[gone]
        return changed

    def _schedule(self, table_id: int) -> bool:
        run = self.runs.setdefault(table_id, TableRun())
        run.scheduled_at = time.time()
        planned = []

        def build() -> list[ops.Op]:  # from the newest record, just before it is journaled
            with self.catalog.lock:
                table = self.catalog.tables.get(table_id)
                busy = table is None or self.catalog.table_state(table_id) != "NORMAL"
            if busy:
                return []
            done = dynamic_partitions.scheduled(table, self.writer.allocate_ids)
            if done is None:
                return []
            planned.append((table, done))
            return [ops.ReplaceTable(done.table)]

        try:
            self.writer.commit_built_blocking(build)
        except QueryError as error:
            run.state, run.create_message = "ERROR", error.message
            return False
        if not planned:
            run.state = "NORMAL"
            return False
        table, done = planned[0]
        run.updated_at = time.time()
        run.state = "NORMAL"
        run.create_message = done.create_message
        if done.dropped:
            run.drop_message = "dropped " + ", ".join(done.dropped)
        logger.info(
            "dynamic partitions of table %s: added %s, dropped %s",
            table.name,
            ", ".join(done.added) or "none",
            ", ".join(done.dropped) or "none",
        )
        return True
