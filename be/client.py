"""The data plane as the FE sees it: commit a write set, read a table at a timestamp.

`EmbeddedDataPlane` runs a TN and a CN in the FE's process (what `quire up` starts): the TN
publishes each commit straight to the CN."""

from __future__ import annotations

import pyarrow as pa

from be.cn.node import ComputeNode
from be.table_schema import TableSchema
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline
from be.tn.write_set import WriteSet


class EmbeddedDataPlane:
    def __init__(self, log, limits: CommitLimits | None = None):
        self.log = log
        self.cn = ComputeNode()
        self.tn = CommitPipeline(log, limits or CommitLimits(), publish=self.cn.apply)

    def start(self) -> None:
        self.tn.start()

    def close(self) -> None:
        self.tn.close()
        close = getattr(self.log, "close", None)
        if close is not None:
            close()

    def commit(self, write_set: WriteSet) -> int:
        """The commit timestamp; raises a CommitError kind when nothing was committed."""
        return self.tn.commit(write_set)

    def read_ts(self) -> int:
        """The newest timestamp a read is complete at."""
        return self.cn.watermark

    def snapshot(
        self, schema: TableSchema, ts: int, timeout: float, row_ids: bool = False
    ) -> pa.Table:
        self.cn.wait_for(ts, timeout)
        return self.cn.snapshot(schema, ts, row_ids)


class _MemoryLog:
    """Provisional, until the logservice lands: nothing survives a restart."""

    def __init__(self):
        self.records: list[bytes] = []

    def append(self, records, timeout=None) -> list[int]:
        first = len(self.records) + 1
        self.records.extend(records)
        return list(range(first, first + len(records)))

    def read(self, first_lsn: int, max_bytes: int) -> list[tuple[int, bytes]]:
        return [(lsn, self.records[lsn - 1]) for lsn in range(first_lsn, len(self.records) + 1)]


def open_embedded(config) -> EmbeddedDataPlane:
    return EmbeddedDataPlane(_MemoryLog())
