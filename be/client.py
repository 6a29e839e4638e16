"""The data plane as the FE sees it: commit a write set, read a table at a timestamp.

`EmbeddedDataPlane` runs a TN and a CN in the FE's process (what `quire up` starts): the TN
publishes each commit straight to the CN."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from be.cn.limits import ComputeLimits
from be.cn.node import ComputeNode
from be.config import Config
from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline
from be.tn.write_set import WriteSet


class EmbeddedDataPlane:
    def __init__(
        self,
        open_log: Callable[[], object],
        limits: CommitLimits | None = None,
        store: ObjectStore | None = None,
        cn_limits: ComputeLimits | None = None,
    ):
        """open_log: the TN's log, opened when the data plane starts; store: where flushes put
        objects (None: table data stays in memory and in the log)."""
        self._open_log = open_log
        self.limits = limits or CommitLimits()
        self.store = store
        self.log = None
        self.cn = ComputeNode(store, cn_limits)
        self.tn: CommitPipeline | None = None

    def start(self) -> None:
        """Open the log and replay it (the CN gets every commit again), then commit."""
        self.log = self._open_log()
        self.tn = CommitPipeline(self.log, self.limits, publish=self.cn.apply, store=self.store)
        self.tn.start()

    def close(self) -> None:
        if self.tn is not None:
            self.tn.close()
        if self.log is not None:
            self.log.close()

    def commit(self, write_set: WriteSet) -> int:
        """The commit timestamp; raises a CommitError kind when nothing was committed."""
        return self.tn.commit(write_set)

    def read_ts(self) -> int:
        """The newest timestamp a read is complete at."""
        return self.cn.watermark

    def snapshot(
        self, schema: TableSchema, ts: int, timeout: float, row_ids: bool = False, ranges=None
    ) -> pa.Table:
        """ranges (column -> (low, high)) skip blocks whose min/max hold no matching row; the
        rows returned then include every matching row, and maybe others."""
        self.cn.wait_for(ts, timeout)
        return self.cn.snapshot(schema, ts, row_ids, ranges)

    def tablet_stats(self, schema: TableSchema) -> dict[int, tuple[int, int]]:
        """Rows and bytes per tablet id (objects, and the unflushed rows placed where a flush
        would put them); tablets without data are left out."""
        return self.tn.tablet_stats(schema)


def open_embedded(config: Config) -> EmbeddedDataPlane:
    """The TN and CN of `quire up`: the TN's log in storage_root (one replica)."""
    log_limits = LogLimits.from_config(config)
    folder = config.path("storage_root")
    limits = CommitLimits(
        max_record_bytes=log_limits.max_record_bytes,
        max_group_bytes=log_limits.max_append_bytes,
        heartbeat_interval_seconds=config["logtail_heartbeat_interval_millisecond"] / 1000,
        flush_rows=config["flush_rows"],
        flush_bytes=config["flush_bytes"],
        flush_interval_seconds=config["flush_interval_second"],
        checkpoint_interval_seconds=config["tn_checkpoint_interval_second"],
        merged_object_retention_seconds=config["merged_object_retention_second"],
    )
    return EmbeddedDataPlane(
        lambda: LogService.open(folder, log_limits),
        limits,
        ObjectStore.from_config(config),
        ComputeLimits.from_config(config),
    )
