"""The TN's commit pipeline: write sets queue up, the committer thread checks a group of them in
order (first committer wins), gives each its commit timestamp and row ids, appends the group to
the log with one append, then publishes each commit, in order, to the logtail subscribers.

An idle TN publishes a heartbeat (an empty commit that consumes a timestamp) every
heartbeat_interval, so a CN knows it has everything up to that timestamp. The log is handed in
(anything with `append(records, timeout) -> lsns` and `read(first_lsn, max_bytes)`), and so is the
place commits are published to: the pipeline owns no socket and no file.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import pyarrow.compute as pc

from be.logtail.entries import Commit
from be.table_schema import TableSchema
from be.tn import wal_records
from be.tn.auto_increment import AutoIncrements
from be.tn.errors import (
    CommitError,
    CommitOutcomeUnknown,
    CommitOverloaded,
    CommitTooLarge,
    TransactionNodeClosed,
)
from be.tn.limits import CommitLimits
from be.tn.state import WriteState
from be.tn.write_set import WriteSet

logger = logging.getLogger(__name__)

NANOS = 1_000_000_000


@dataclass(eq=False)
class _Request:
    write_set: WriteSet
    future: Future


class CommitPipeline:
    def __init__(self, log, limits: CommitLimits, publish: Callable[[Commit], None]):
        self.log = log
        self.limits = limits
        self.publish = publish
        self.state = WriteState()
        self.schemas: dict[int, TableSchema] = {}  # the newest version seen of each table
        self.auto_increments = AutoIncrements(limits.max_commit_rows)  # survives a resync
        self._queue: queue.Queue[_Request | None] = queue.Queue(limits.max_queued_commits)
        self._requests: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self.committed = 0  # commits published, heartbeats excluded
        self.published_ts = 0  # the newest commit or heartbeat published

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Replay the log, then commit."""
        self._replay()
        self._thread = threading.Thread(target=self._run, name="tn-committer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass
            self._thread.join()
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is not None:
                request.future.set_exception(TransactionNodeClosed("the TN is stopping"))

    @property
    def last_ts(self) -> int:
        return self.state.last_ts

    # -- commit -------------------------------------------------------------------------------

    def submit(self, write_set: WriteSet) -> Future:
        """A future of write_set's commit timestamp (or its CommitError)."""
        if self._closed.is_set():
            raise TransactionNodeClosed("the TN is stopping")
        if write_set.nbytes > self.limits.max_commit_bytes:
            raise CommitTooLarge(
                f"a commit may write at most {self.limits.max_commit_bytes} bytes, this one "
                f"writes {write_set.nbytes}"
            )
        if len(write_set.request_id.encode()) > self.limits.max_request_id_bytes:
            raise CommitTooLarge("the request id is too long")
        request = _Request(write_set, Future())
        try:
            self._queue.put_nowait(request)
        except queue.Full:
            raise CommitOverloaded(
                f"the TN has {self.limits.max_queued_commits} commits waiting; try again"
            ) from None
        return request.future

    def commit(self, write_set: WriteSet) -> int:
        future = self.submit(write_set)
        try:
            return future.result(self.limits.commit_timeout_seconds)
        except FutureTimeout:
            raise CommitOutcomeUnknown(
                "the commit was not confirmed in time: it may or may not have taken effect"
            ) from None

    # -- the committer ------------------------------------------------------------------------

    def _run(self) -> None:
        interval = self.limits.heartbeat_interval_seconds
        while not self._closed.is_set():
            try:
                first = self._queue.get(timeout=interval)
            except queue.Empty:
                self._heartbeat()
                continue
            if first is None:
                break
            group = [first]
            size = first.write_set.nbytes
            while len(group) < self.limits.max_group_commits and size < self.limits.max_group_bytes:
                try:
                    request = self._queue.get_nowait()
                except queue.Empty:
                    break
                if request is None:
                    self._closed.set()
                    break
                group.append(request)
                size += request.write_set.nbytes
            try:
                self._commit_group(group)
            except Exception:  # a bug: fail the group rather than the thread
                logger.exception("committing a group of %d write sets failed", len(group))
                for request in group:
                    if not request.future.done():
                        request.future.set_exception(
                            CommitOutcomeUnknown("the TN failed while committing; see its log")
                        )
                self._resync()

    def _commit_group(self, group: list[_Request]) -> None:
        """Check, stamp and log each write set in order; one log append per max_group_bytes."""
        batch: list[tuple[_Request, Commit]] = []
        records: list[bytes] = []
        size = 0
        for request in group:
            write_set = request.write_set
            if write_set.request_id and write_set.request_id in self._requests:
                request.future.set_result(self._requests[write_set.request_id])
                continue
            schemas = {write.schema.table_id: write.schema for write in write_set.writes}
            try:
                commit = self.state.prepare(write_set, self._next_ts(), self.limits.max_commit_rows)
                record = wal_records.encode(commit, write_set.request_id, schemas)
                if len(record) > self.limits.max_record_bytes:
                    raise CommitTooLarge(
                        f"the statement writes {len(record)} bytes at once; the log takes at most "
                        f"{self.limits.max_record_bytes} (logservice_max_record_bytes)"
                    )
            except CommitError as error:
                request.future.set_exception(error)
                continue
            if records and size + len(record) > self.limits.max_group_bytes:
                if not self._log_and_publish(batch, records):
                    self._refuse_unanswered(group)
                    return
                batch, records, size = [], [], 0
            self._apply(commit, schemas)
            batch.append((request, commit))
            records.append(record)
            size += len(record)
            if write_set.request_id:
                self._remember(write_set.request_id, commit.commit_ts)
        if records:
            self._log_and_publish(batch, records)

    def _apply(self, commit: Commit, schemas: dict[int, TableSchema]) -> None:
        self.state.apply(commit, schemas)
        self.schemas.update(schemas)
        for change in commit.changes:
            column = schemas[change.table_id].auto_increment
            if column is not None and change.inserts is not None:
                largest = pc.max(change.inserts.column(column)).as_py()
                if largest is not None:
                    self.auto_increments.observe(change.table_id, largest)

    def take_auto_increment(self, table_id: int, count: int) -> int:
        """The first of count new values of the table's AUTO_INCREMENT column."""
        return self.auto_increments.take(table_id, count)

    def _refuse_unanswered(self, group: list[_Request]) -> None:
        for request in group:
            if not request.future.done():
                request.future.set_exception(
                    CommitOverloaded("the log refused an earlier commit; try again")
                )

    def _log_and_publish(self, batch: list[tuple[_Request, Commit]], records: list[bytes]) -> bool:
        """False if the log did not take them: their outcome is unknown, the state is read back
        from the log, and the rest of the group is refused."""
        try:
            self.log.append(records, timeout=self.limits.commit_timeout_seconds)
        except Exception as error:
            logger.warning("the log refused %d commits: %s", len(records), error)
            for request, _ in batch:
                request.future.set_exception(
                    CommitOutcomeUnknown(
                        f"the log did not confirm the commit ({error}): it may or may not have "
                        "taken effect"
                    )
                )
            self._resync()
            return False
        for request, commit in batch:
            self._publish(commit)
            self.committed += 1
            request.future.set_result(commit.commit_ts)
        return True

    def _heartbeat(self) -> None:
        heartbeat = Commit(self._next_ts())
        self.state.apply(heartbeat)
        self._publish(heartbeat)

    def _publish(self, commit: Commit) -> None:
        assert commit.commit_ts > self.published_ts, "published in commit order"
        self.publish(commit)
        self.published_ts = commit.commit_ts

    def _next_ts(self) -> int:
        return max(self.state.last_ts + 1, time.time_ns())

    def _remember(self, request_id: str, ts: int) -> None:
        self._requests[request_id] = ts
        while len(self._requests) > self.limits.max_remembered_requests:
            self._requests.popitem(last=False)

    # -- the log ------------------------------------------------------------------------------

    def _replay(self) -> None:
        """The state the logged commits give, each published again in order."""
        started = time.monotonic()
        count = 0
        lsn = 1
        while True:
            entries = self.log.read(lsn, self.limits.log_read_bytes)
            if not entries:
                break
            for entry_lsn, record in entries:
                commit, request_id, schemas = wal_records.decode(record)
                self._apply(commit, schemas)
                if request_id:
                    self._remember(request_id, commit.commit_ts)
                if commit.commit_ts > self.published_ts:
                    self._publish(commit)
                count += 1
                lsn = entry_lsn + 1
        logger.info(
            "TN replayed %d commits from its log in %.2f s (last commit ts %d)",
            count,
            time.monotonic() - started,
            self.state.last_ts,
        )

    def _resync(self) -> None:
        """After a failed append the log may or may not hold the group: start again from what it
        holds; what it holds and was not published yet is published now."""
        self.state = WriteState()
        self._requests.clear()
        self._replay()
        self.state.last_ts = max(self.state.last_ts, self.published_ts)
