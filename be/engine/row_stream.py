"""A query's answer handed from its engine worker to the event loop a part at a time.

An answer that grows past what the engine may hold at once is not gathered: the worker keeps its
DuckDB result open and passes parts of rows through at most `max_parts` parts in flight, waiting
while the reader (the client's connection) is behind. Either side may stop: the reader's close
interrupts the worker; a worker's error reaches the reader in place of the next part.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from be.engine.columnar_rows import ArrowRows
from be.engine.errors import QueryInterrupted, QueryTimedOut

CREDIT_WAIT_SECONDS = 0.25  # how often a worker waiting for the reader checks for a stop
_END = object()


@dataclass(frozen=True)
class StreamLimits:
    """hold_bytes: an answer up to this size (as Python rows) is gathered whole; beyond, it
    streams in parts of rows, at most max_parts of them between the worker and the reader."""

    hold_bytes: int
    max_parts: int

    def __post_init__(self) -> None:
        assert self.hold_bytes > 0
        assert 1 <= self.max_parts <= 1024


class RowStream:
    """The worker's side: start (the columns and the rows held so far), put, finish or fail;
    the reader's side: started (awaitable), parts() and close()."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limits: StreamLimits):
        self.limits = limits
        self._loop = loop
        self._credits = threading.Semaphore(limits.max_parts)
        self._parts: asyncio.Queue = asyncio.Queue()
        self._closed = threading.Event()
        self.started: asyncio.Future = loop.create_future()
        self.started_at = time.monotonic()
        self.on_close = lambda: None  # set by the query: interrupts DuckDB

    # -- worker thread ---------------------------------------------------------------------------

    def start(self, columns: list[tuple[str, str]], rows: list[tuple] | ArrowRows) -> None:
        self._loop.call_soon_threadsafe(_resolve, self.started, (columns, rows))

    def put(self, rows: list[tuple] | ArrowRows) -> None:
        """Pass a part on, waiting while max_parts are in flight; QueryInterrupted once the
        reader has gone."""
        assert rows
        while not self._credits.acquire(timeout=CREDIT_WAIT_SECONDS):
            if self._closed.is_set():
                raise QueryInterrupted()
        if self._closed.is_set():
            raise QueryInterrupted()
        self._loop.call_soon_threadsafe(self._parts.put_nowait, rows)

    def finish(self) -> None:
        self._loop.call_soon_threadsafe(self._parts.put_nowait, _END)

    def fail(self, error: BaseException) -> None:
        self._loop.call_soon_threadsafe(self._parts.put_nowait, error)

    # -- event loop ------------------------------------------------------------------------------

    async def parts(self, timeout_seconds: float | None) -> AsyncIterator[list[tuple]]:
        """The parts after the rows `started` gave, until the worker finishes; QueryTimedOut
        once the query has run timeout_seconds since it started."""
        try:
            while True:
                remaining = None
                if timeout_seconds is not None:
                    remaining = self.started_at + timeout_seconds - time.monotonic()
                    if remaining <= 0:
                        raise QueryTimedOut(timeout_seconds)
                try:
                    part = await asyncio.wait_for(self._parts.get(), remaining)
                except TimeoutError:
                    raise QueryTimedOut(timeout_seconds) from None
                if part is _END:
                    return
                if isinstance(part, BaseException):
                    raise part
                self._credits.release()
                yield part
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.on_close()


def _resolve(future: asyncio.Future, value) -> None:
    if not future.done():
        future.set_result(value)


@dataclass(frozen=True)
class StreamedAnswer:
    """An answer too big to hold: its columns, the rows gathered before it grew too big, and
    the stream that gives the rest."""

    columns: list[tuple[str, str]]
    first_rows: list[tuple] | ArrowRows
    stream: RowStream
    timeout_seconds: float | None

    async def parts(self) -> AsyncIterator[list[tuple]]:
        """All its rows, a part at a time."""
        if self.first_rows:
            yield self.first_rows
        async for part in self.stream.parts(self.timeout_seconds):
            yield part
