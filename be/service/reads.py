"""Snapshot reads a node (TN or CN) answers for FEs: run on a bounded pool of read threads, at
most max_connections waiting, each waiting no longer than max_read_wait for the node to reach the
read's timestamp."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable

import pyarrow as pa

from be.service.errors import NodeBusy
from be.service.format import Rows, SnapshotRequest
from be.service.limits import ServiceLimits

# (schema, ts, row_ids, timeout seconds, bounds, columns or None, partition ids or None)
# -> the table
Read = Callable[..., pa.Table]


class SnapshotReads:
    def __init__(self, limits: ServiceLimits, read: Read, role: str):
        self.limits = limits
        self.role = role
        self._read = read
        self._threads = concurrent.futures.ThreadPoolExecutor(
            limits.read_threads, thread_name_prefix=f"{role.lower()}-read"
        )
        self._waiting = threading.BoundedSemaphore(limits.max_connections)

    async def answer(self, request: SnapshotRequest) -> Rows:
        if not self._waiting.acquire(blocking=False):
            raise NodeBusy(f"the {self.role} has as many reads waiting as it takes")
        try:
            timeout = min(request.timeout_ms / 1000, self.limits.max_read_wait)
            columns = None if request.columns is None else frozenset(request.columns)
            partitions = None if request.partitions is None else frozenset(request.partitions)
            table = await asyncio.get_running_loop().run_in_executor(
                self._threads,
                self._read,
                request.schema,
                request.ts,
                request.row_ids,
                timeout,
                request.bounds,
                columns,
                partitions,
            )
        finally:
            self._waiting.release()
        return Rows(table)

    async def run(self, work: Callable, *arguments):
        """work(*arguments) on a read thread, as a snapshot is (a read plan)."""
        if not self._waiting.acquire(blocking=False):
            raise NodeBusy(f"the {self.role} has as many reads waiting as it takes")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._threads, work, *arguments)
        finally:
            self._waiting.release()

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
