"""The data plane as the FE sees it: commit a write set, read a table at a timestamp.

`EmbeddedDataPlane` runs a TN and a CN in the FE's process (what `quire up` starts): the TN
publishes each commit straight to the CN."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from be.cn.bounds import ColumnBound
from be.cn.node import ComputeNode
from be.config import Config
from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.table_schema import TableSchema
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline
from be.tn.write_set import WriteSet


class EmbeddedDataPlane:
    def __init__(self, open_log: Callable[[], object], limits: CommitLimits | None = None):
        """open_log: the TN's log, opened when the data plane starts."""
        self._open_log = open_log
        self.limits = limits or CommitLimits()
        self.log = None
        self.cn = ComputeNode()
        self.tn: CommitPipeline | None = None

    def start(self) -> None:
        """Open the log and replay it (the CN gets every commit again), then commit."""
        self.log = self._open_log()
        self.tn = CommitPipeline(self.log, self.limits, publish=self.cn.apply)
        self.tn.start()

    def close(self) -> None:
        if self.tn is not None:
            self.tn.close()
        if self.log is not None:
            self.log.close()

    def commit(self, write_set: WriteSet) -> int:
        """The commit timestamp; raises a CommitError kind when nothing was committed."""
        return self.tn.commit(write_set)

    def take_auto_increment(self, table_id: int, count: int) -> int:
        """The first of count consecutive new values of a table's AUTO_INCREMENT column, unique
        to the caller; raises CommitTooLarge past the TN's limit."""
        return self.tn.take_auto_increment(table_id, count)

    def observe_auto_increment(self, table_id: int, given: int) -> None:
        """A statement writes given into the AUTO_INCREMENT column: later values are above it."""
        self.tn.auto_increments.observe(table_id, given)

    def read_ts(self) -> int:
        """The newest timestamp a read is complete at."""
        return self.cn.watermark

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        row_ids: bool = False,
        bounds: tuple[ColumnBound, ...] = (),
    ) -> pa.Table:
        """The table at ts; bounds may leave out the rows outside them (a narrowing only)."""
        self.cn.wait_for(ts, timeout)
        return self.cn.snapshot(schema, ts, row_ids, bounds)


def open_embedded(config: Config) -> EmbeddedDataPlane:
    """The TN and CN of `quire up`: the TN's log in storage_root (one replica)."""
    log_limits = LogLimits.from_config(config)
    folder = config.path("storage_root")
    limits = CommitLimits(
        max_record_bytes=log_limits.max_record_bytes,
        max_group_bytes=log_limits.max_append_bytes,
        heartbeat_interval_seconds=config["logtail_heartbeat_interval_millisecond"] / 1000,
    )
    return EmbeddedDataPlane(lambda: LogService.open(folder, log_limits), limits)
