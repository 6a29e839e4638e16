"""Queries a CN runs for FEs: each table's snapshot built from the CN's own table states (waiting,
bounded, for its watermark as a snapshot read does), then the FE's engine SQL run by a locked-down
engine of the CN's own, the result sent back in parts no larger than a message may be."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Iterator

import pyarrow as pa

from be.engine import Engine
from be.service.format import Message, QueryRequest, ResultEnd, ResultPart
from be.service.limits import ServiceLimits
from be.service.reads import Read

PART_SHARE = 2  # a part's rows take at most 1/PART_SHARE of a message in memory (room for IPC)


class NodeQueries:
    def __init__(self, limits: ServiceLimits, read: Read):
        """read: a snapshot as SnapshotReads gets it (schema, ts, row_ids, timeout, bounds,
        columns, partitions), on the engine's worker."""
        self.limits = limits
        self._read = read
        self.engine = Engine(
            limits.query_workers, limits.query_queue_size, limits.query_engine_threads
        )

    async def answer(self, request: QueryRequest) -> AsyncIterator[Message]:
        def prepare() -> tuple[str, dict[str, pa.Table]]:
            started = time.monotonic()
            wait = min(request.read_wait_ms / 1000, self.limits.max_read_wait)
            tables = dict(request.given)
            for table in request.tables:
                columns = None if table.columns is None else frozenset(table.columns)
                partitions = None if table.partitions is None else frozenset(table.partitions)
                remaining = max(wait - (time.monotonic() - started), 0.0)
                tables[table.name] = self._read(
                    table.schema,
                    table.ts,
                    table.row_ids,
                    remaining,
                    table.bounds,
                    columns,
                    partitions,
                )
            return request.sql, tables

        answer = await self.engine.run(
            prepare,
            timeout_seconds=request.timeout_ms / 1000,
            memory_limit_bytes=min(request.memory_limit_bytes, self.limits.max_query_memory_bytes),
            arrow=True,
        )
        count = 0
        budget = self.limits.max_message_bytes // PART_SHARE
        for part in result_parts(answer.batches, budget, self.limits.max_rows):
            count += part.num_rows
            yield ResultPart(part)
        yield ResultEnd(tuple(answer.columns), count)

    def close(self) -> None:
        self.engine.close()


def result_parts(
    batches: Iterable[pa.RecordBatch], max_bytes: int, max_rows: int
) -> Iterator[pa.Table]:
    """The batches' rows in order, in tables of at most max_bytes (Arrow's count, a single row
    excepted) and max_rows each."""
    assert max_bytes > 0 and max_rows > 0
    pending: list[pa.RecordBatch] = []
    size = rows = 0
    for batch in batches:
        for piece in _pieces(batch, max_bytes, max_rows):
            if pending and (size + piece.nbytes > max_bytes or rows + piece.num_rows > max_rows):
                yield pa.Table.from_batches(pending)
                pending, size, rows = [], 0, 0
            pending.append(piece)
            size += piece.nbytes
            rows += piece.num_rows
    if pending:
        yield pa.Table.from_batches(pending)


def _pieces(batch: pa.RecordBatch, max_bytes: int, max_rows: int) -> Iterator[pa.RecordBatch]:
    if batch.num_rows <= 1 or (batch.nbytes <= max_bytes and batch.num_rows <= max_rows):
        if batch.num_rows:
            yield batch
        return
    half = batch.num_rows // 2
    yield from _pieces(batch.slice(0, half), max_bytes, max_rows)
    yield from _pieces(batch.slice(half), max_bytes, max_rows)
