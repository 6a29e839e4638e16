"""The write path: a statement's operations become one journal entry, committed by a majority,
applied to the catalog, and the statement answered with the result (or the catalog's refusal)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from be.config import Config
from fe.client_errors import apply_failure, catalog_error, journal_error
from fe.mysql.errors import QueryError
from metadata import ops
from metadata.catalog import ApplyError, Catalog
from metadata.codec import encode_ops
from metadata.journal.replicated import ReplicatedJournal
from metadata.records import RequestOutcome

logger = logging.getLogger(__name__)

MAX_OPS_PER_STATEMENT = 1024
MAX_IDS_PER_ALLOCATION = 1_000_000
QUORUM_CHECK_SECONDS = 0.25  # how often a waiting write checks that the majority still answers


class MetadataWriter:
    def __init__(self, journal: ReplicatedJournal, catalog: Catalog, config: Config):
        self.journal = journal
        self.catalog = catalog
        self.config = config
        # Catalog changes run one at a time on the master: each is built from the catalog the
        # one before it left (two ALTERs of a table, two membership changes, auto partitions).
        self.catalog_lock = asyncio.Lock()
        self._completions: Completions | None = None
        self._next_free_id = 0
        self._id_lock = threading.Lock()

    def is_leader(self) -> bool:
        return self.journal.is_leader()

    def allocate_ids(self, count: int) -> int:
        assert 0 < count <= MAX_IDS_PER_ALLOCATION, count
        with self._id_lock:
            first = max(self._next_free_id, self.catalog.next_id)
            self._next_free_id = first + count
            return first

    def require_quorum(self) -> None:
        if not self.journal.has_quorum():
            raise QueryError(
                1105,
                "Writes are refused: a majority of the follower FEs is unreachable (reads still work; "
                "writes resume when the majority is back)",
            )

    async def commit(self, operations: list[ops.Op], request_id: str | None = None) -> list[object]:
        """Journal the operations as one entry; returns once committed, fsynced and applied. A
        forwarded statement's entry carries its request id: a retry of it takes effect once."""
        assert 0 < len(operations) <= MAX_OPS_PER_STATEMENT
        if request_id is not None:
            operations = [ops.ClientRequest(request_id), *operations]
        self.require_quorum()
        loop = asyncio.get_running_loop()
        if self._completions is None:
            self._completions = Completions(loop)
        assert self._completions.loop is loop, "commits come from one event loop"
        completions, future = self._completions, loop.create_future()
        self.journal.submit(encode_ops(operations), lambda r, e: completions.put(future, r, e))
        timeout = self.config["journal_commit_timeout_second"]
        deadline = time.monotonic() + timeout
        while True:
            try:
                results = await asyncio.wait_for(asyncio.shield(future), QUORUM_CHECK_SECONDS)
                return _raise_first_error(results)
            except TimeoutError:
                pass
            if not self.journal.has_quorum():
                raise QueryError(
                    1105,
                    "A majority of the follower FEs became unreachable while the statement was being "
                    "committed: it may or may not have taken effect",
                )
            if time.monotonic() > deadline:
                raise QueryError(
                    1105,
                    f"The journal did not commit within {timeout} s; the statement may or may not have taken effect",
                )

    def commit_built_blocking(self, build: Callable[[], list[ops.Op]]) -> None:
        """From a thread other than the event loop's: build's operations, built and committed
        under catalog_lock (on the loop, once it has committed anything), so that they are built
        from the catalog as the statements' changes leave it."""
        loop = None if self._completions is None else self._completions.loop
        if loop is None or loop.is_closed():
            operations = build()
            if operations:
                self.commit_blocking(operations)
            return

        async def built_and_committed() -> None:
            async with self.catalog_lock:
                operations = build()
                if operations:
                    await self.commit(operations)

        timeout = self.config["journal_commit_timeout_second"] + QUORUM_CHECK_SECONDS
        asyncio.run_coroutine_threadsafe(built_and_committed(), loop).result(timeout)

    def commit_blocking(self, operations: list[ops.Op]) -> list[object]:
        """commit() for threads other than the event loop's (start-up, TimePrinter, ports)."""
        assert 0 < len(operations) <= MAX_OPS_PER_STATEMENT
        results = self.journal.commit(
            encode_ops(operations), timeout=self.config["journal_commit_timeout_second"]
        )
        return _raise_first_error(results)


def answer_from_outcome(catalog: Catalog, outcome: RequestOutcome) -> None:
    """A forwarded statement already applied: raise what it raised, if anything."""
    refusal = catalog.refusal_of(outcome)
    if refusal is not None:
        raise catalog_error(refusal)


def repeat_while_leading(
    name: str,
    writer: MetadataWriter,
    stopping: threading.Event,
    interval: Callable[[], float],
    duty: Callable[[], object],
    *,
    at_once: bool = False,
) -> None:
    """A thread of its own that runs duty every interval() seconds while this FE leads, until
    stopping is set; a failed run is logged and the next one tries again."""

    def repeat() -> None:
        wait = 0.0 if at_once else interval()
        while not stopping.wait(wait):
            wait = interval()
            if not writer.is_leader():
                continue
            try:
                duty()
            except Exception as error:
                logger.warning("%s did not run: %s", name, error)

    threading.Thread(target=repeat, name=name, daemon=True).start()


class Completions:
    """Hands journal acknowledgements from the journal's thread to the event loop, many per
    wake-up instead of one loop wake-up per statement."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._pending: list = []

    def put(self, future: asyncio.Future, result, error) -> None:
        with self._lock:
            self._pending.append((future, result, error))
            first = len(self._pending) == 1
        if first:
            self.loop.call_soon_threadsafe(self._settle_all)

    def _settle_all(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for future, result, error in pending:
            _settle(future, result, error)


def _settle(future: asyncio.Future, result, error) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error if isinstance(error, QueryError) else journal_error(error))
    else:
        future.set_result(result)


def _raise_first_error(results) -> list[object]:
    if isinstance(results, BaseException):
        raise apply_failure(results)
    for result in results:
        if isinstance(result, ApplyError):
            raise catalog_error(result)
    return results
