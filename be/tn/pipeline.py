"""The TN's commit pipeline: write sets queue up, the committer thread checks a group of them in
order (first committer wins), gives each its commit timestamp and row ids, appends the group to
the log with one append, then publishes each commit, in order, to the logtail subscribers.

A small write set whose caller names its thread (`submit(..., run_soon)`: the FE's event loop in
`quire up`) skips the hand-over to the committer thread and back: whoever holds the turn does the
above, and the caller takes it when it is free (callers' turn, its group's log append answered on
that thread). Threads handing work to each other across the GIL cost more than the work.

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
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from be.logservice.errors import LogServiceError
from be.logservice.tso import ReservationDue, TimestampOracle
from be.logtail.entries import PARTITION_ID, ROW_ID, Commit, TableChanges
from be.logtail.format import MAX_OBJECTS_PER_CHANGE
from be.storage.blocks import read_blocks
from be.storage.errors import StorageError
from be.storage.names import ObjectName
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema, staying_rows
from be.tn import checkpoint, compaction, loads, placement, wal_records
from be.tn.auto_increment import AutoIncrements
from be.tn.errors import (
    BadLoad,
    CheckpointCorrupt,
    CommitError,
    CommitOutcomeUnknown,
    CommitOverloaded,
    CommitTooLarge,
    LabelTaken,
    StaleSchema,
    TimestampsUnavailable,
    TransactionNodeClosed,
)
from be.tn.flush import Flusher
from be.tn.limits import CommitLimits
from be.tn.merge import Merger
from be.tn.objects import TableObjects
from be.tn.state import TableWriteState, WriteState, deletes_table
from be.tn.write_set import WriteSet

logger = logging.getLogger(__name__)

NANOS = 1_000_000_000
FORGET_EVERY_SECONDS = (
    1.0  # how often conflict information older than a transaction may be is dropped
)
EXPIRE_LOADS_EVERY_SECONDS = 1.0  # how often loads open past load_timeout_seconds are aborted
RESYNC_EVERY_SECONDS = 0.5  # how often an idle TN tries again to read back a log it could not
TURN_CHECK_SECONDS = 0.1  # how often the committer waiting for the turn looks for a lost append
MAX_REMOVED_PER_CHANGE = 4096  # objects one removal commit names
assert MAX_REMOVED_PER_CHANGE <= MAX_OBJECTS_PER_CHANGE


@dataclass(eq=False)
class _StorageJob:
    table_id: int
    ts: int  # the flush timestamp, or the merge's
    future: Future  # of the TableChanges to commit (None: nothing to)
    asked: _CompactionAsked | None = None  # the ADMIN COMPACT TABLE it is a step of


@dataclass(eq=False)
class _CompactionAsked:
    """One ADMIN COMPACT TABLE's ask: a newer one of the same table replaces it, never is
    dropped in its place."""

    partition_ids: frozenset[int]  # none: every partition


RunSoon = Callable[[Callable[[], None]], None]


@dataclass(eq=False)
class _Request:
    write_set: WriteSet | None
    future: Future
    control: Callable[[], object] | None = None  # run on the committer, between commits
    bulk: loads.BulkCommit | None = None
    run_soon: RunSoon | None = None  # its caller's thread takes callers' turn (see submit)

    @property
    def nbytes(self) -> int:
        return self.write_set.nbytes if self.write_set is not None else 0


@dataclass(eq=False)
class _InFlight:
    """A group committed on callers' turn, its log append under way."""

    batch: list[tuple[_Request, Commit]]
    records: list[bytes]
    deadline: float  # monotonic: no answer from the log by then, its outcome is unknown
    caller_waits: bool = False
    answered: threading.Event = field(default_factory=threading.Event)
    error: Exception | None = None

    @property
    def run_soon(self) -> RunSoon:
        """Where the log's answer is taken up when the caller waits no more: its first's."""
        return self.batch[0][0].run_soon


_IDLE = _Request(None, Future())  # the committer's queue stayed empty for an interval


@dataclass(eq=False)
class _Staged:
    request: _Request
    commit: Commit
    record: bytes
    schemas: dict[int, TableSchema]
    labelled: loads.LoadRecord | None


FEW_VALUES = 16  # a column of at most this many values is looked at in Python (Arrow costs more)


def _largest(values: pa.ChunkedArray) -> int | None:
    if len(values) > FEW_VALUES:
        return pc.max(values).as_py()
    return max((value for value in values.to_pylist() if value is not None), default=None)


class CommitPipeline:
    def __init__(
        self,
        log,
        limits: CommitLimits,
        publish: Callable[[Commit], None],
        store: ObjectStore | None = None,
        on_checkpoint: Callable[[int], None] | None = None,
        clock: Callable[[], int] = time.time_ns,
        heartbeats_on_demand: bool = False,
    ):
        """store: where flushes write objects (None: rows stay in memory and the log);
        on_checkpoint(ts): a checkpoint holds everything up to ts (written or loaded), so the
        logtail at or below it may be dropped; clock: the wall clock the timestamp oracle
        follows (nanoseconds); heartbeats_on_demand: an idle TN heartbeats every
        idle_check_seconds and when heartbeat_soon() asks (its one CN is in this process, and
        asks when a read waits), not every heartbeat_interval (which a CN elsewhere needs)."""
        self.log = log
        self.oracle = TimestampOracle(log, clock)
        self.heartbeats_on_demand = heartbeats_on_demand
        self._heartbeat_asked = False
        self.limits = limits
        self.publish = publish
        self.store = store
        self.on_checkpoint = on_checkpoint
        self.state = WriteState()
        self.flusher = Flusher(store, limits)
        self.merger = Merger(store, limits) if store is not None else None
        self._checkpoint_at = time.monotonic() + limits.checkpoint_interval_seconds
        self._checkpoint_ts = 0
        self._checkpoint_name = ""
        self._changes_since_checkpoint = 0
        # One flush or merge at a time is written by the storage worker, beside the committer.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tn-storage")
        self._job: _StorageJob | None = None
        self._merge_candidates: set[int] = set()  # tables flushed since their last merge check
        # Tables to flush and merge whole now (ADMIN COMPACT TABLE), asked on callers' threads
        self._compactions_asked: dict[int, _CompactionAsked] = {}
        self._compactions_lock = threading.Lock()
        self._compaction_check_at = 0.0  # monotonic time of the next look for tombstones to compact
        self.schemas: dict[int, TableSchema] = {}  # the newest version seen of each table
        self.auto_increments = AutoIncrements(limits.max_commit_rows)  # survives a resync
        self._queue: queue.Queue[_Request | None] = queue.Queue(limits.max_queued_commits)
        self._requests: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        # The FE's newest word on what may still be read: (as_of_ts, table id -> partition ids).
        self._reachable: tuple[int, dict[int, frozenset[int]]] | None = None
        self.open_loads = loads.OpenLoads(limits.max_open_loads, limits.load_timeout_seconds)
        self.labels = loads.Labels(limits.max_labels, limits.label_keep_seconds)
        self.committed = 0  # commits published, heartbeats excluded
        self.published_ts = 0  # the newest commit or heartbeat published
        self._unreadable: Exception | None = None  # why the log could not be read back
        self._resync_tried_at = 0.0
        self._resync_due = False  # an append on callers' turn failed: read the log back first
        # Whoever holds the turn stamps, logs and publishes: the committer thread, or callers
        # (see submit). A caller that finds the turn free stages its commit and hands it to the
        # log; the log's answer, taken up on the caller's thread, publishes it and stages the
        # commits that waited meanwhile, until none wait. The committer asks for the turn for
        # its own work, and hands it back to the callers waiting when it is done.
        self._turn = threading.Lock()
        self._turn_wanted = False  # the committer waits for the turn: callers hand it over
        self._callers = threading.Lock()  # guards the three below
        self._callers_turn = False  # the turn is held by callers' commits
        self._in_flight: _InFlight | None = None
        self._waiting: collections.deque[_Request] = collections.deque()

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Replay the log, clear away what a crash left in the store, then commit."""
        self._replay()
        self.oracle.start_above(self.state.last_ts)
        try:
            self._reserve_ahead()
        except TimestampsUnavailable as error:  # the committer reserves them when it can
            logger.warning("no timestamps reserved yet: %s", error)
        self._sweep()
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
        self._worker.shutdown(wait=True, cancel_futures=True)
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is not None:
                request.future.set_exception(TransactionNodeClosed("the TN is stopping"))

    def tablet_stats(self, schema: TableSchema) -> dict[int, tuple[int, int, int]]:
        """Rows, bytes and objects per tablet id. Read on the caller's thread: a moment's
        view."""
        return self.flusher.tablet_totals(schema)

    def request_compaction(
        self, table_id: int, partition_ids: frozenset[int] = frozenset()
    ) -> None:
        """Flush the table's rows and merge each of its tablets' objects (of the partitions
        named; none: all) into one, as far as the merge limits allow, at the committer's next
        chances (ADMIN COMPACT TABLE)."""
        with self._compactions_lock:
            self._compactions_asked[table_id] = _CompactionAsked(partition_ids)
        self._wake()

    def _compaction_done(self, table_id: int, asked: _CompactionAsked | None) -> None:
        """asked is over (done, or failed: asked again, it starts over), unless a newer ask of
        the table came meanwhile."""
        with self._compactions_lock:
            if asked is not None and self._compactions_asked.get(table_id) is asked:
                del self._compactions_asked[table_id]

    def request_checkpoint(self) -> None:
        """Checkpoint at the committer's next chance (the logtail table grew too large, or a
        CN's subscription asked for more than a pull may carry)."""
        self._checkpoint_at = 0.0

    def forget_unreachable(self, as_of_ts: int, reachable: dict[int, frozenset[int]]) -> None:
        """The FE's word that of what was committed at or before as_of_ts, only these tables'
        partitions (table id -> partition ids: live or in the recycle bin) may be read again:
        the objects of every other partition and table flushed by then are removed at the
        committer's next chance, and deleted once merged_object_retention_seconds passed."""
        self._reachable = (as_of_ts, dict(reachable))

    @property
    def checkpoint_ts(self) -> int:
        """The timestamp of the newest checkpoint (0: none): a restart replays the log after it."""
        return self._checkpoint_ts

    @property
    def last_ts(self) -> int:
        return self.state.last_ts

    # -- commit -------------------------------------------------------------------------------

    def submit(self, write_set: WriteSet, run_soon: RunSoon | None = None) -> Future:
        """A future of write_set's commit timestamp (or its CommitError). run_soon(fn): fn runs
        soon on the caller's thread (an event loop's call_soon_threadsafe); given, the commit
        goes on callers' turn: staged on that thread, and published there once logged."""
        if self._closed.is_set():
            raise TransactionNodeClosed("the TN is stopping")
        if write_set.nbytes > self.limits.max_commit_bytes:
            raise CommitTooLarge(
                f"a commit may write at most {self.limits.max_commit_bytes} bytes, this one "
                f"writes {write_set.nbytes}"
            )
        if len(write_set.request_id.encode()) > self.limits.max_request_id_bytes:
            raise CommitTooLarge("the request id is too long")
        request = _Request(write_set, Future(), run_soon=run_soon)
        if (
            run_soon is not None
            and write_set.nbytes <= self.limits.max_caller_commit_bytes
            and self._on_callers_turn(request)
        ):
            return request.future
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

    def heartbeat_soon(self) -> None:
        """A heartbeat at the committer's next chance, if none is asked for yet (a read waits
        for the watermark); nothing if the queue is full (its commits move the watermark)."""
        if self._heartbeat_asked or self._closed.is_set():
            return
        self._heartbeat_asked = True
        try:
            self._queue.put_nowait(_Request(None, Future(), control=self._asked_heartbeat))
        except queue.Full:
            self._heartbeat_asked = False

    def _asked_heartbeat(self) -> int:
        self._heartbeat_asked = False
        return self._heartbeat()

    def _run(self) -> None:
        if self.heartbeats_on_demand:
            interval = self.limits.idle_check_seconds
        else:
            interval = self.limits.heartbeat_interval_seconds
        forgotten_at = expired_at = time.monotonic()
        while not self._closed.is_set():
            try:
                first = self._queue.get(timeout=interval)
            except queue.Empty:
                first = _IDLE
            if first is None:
                break
            self._take_turn()
            try:
                if time.monotonic() - forgotten_at > FORGET_EVERY_SECONDS:
                    forgotten_at = time.monotonic()
                    keep = int(self.limits.max_transaction_seconds * NANOS)
                    self.state.forget_before(self.state.last_ts - keep)
                if time.monotonic() - expired_at > EXPIRE_LOADS_EVERY_SECONDS:
                    expired_at = time.monotonic()
                    self._expire_loads()
                if first is _IDLE:
                    self._idle_work()
                else:
                    self._commit_queued(first)
                    self._idle_work(heartbeat=False)
            finally:
                self._let_go_of_turn()

    def _commit_queued(self, first: _Request) -> None:
        group = self._group(first, self._next_queued)
        try:
            self._commit_group(group)
        except Exception:  # a bug: fail the group rather than the thread
            logger.exception("committing a group of %d write sets failed", len(group))
            self._unanswered(group, "the TN failed while committing; see its log")
            self._resync()

    def _next_queued(self) -> _Request | None:
        """The next request queued for the committer; None if none is, or it is closing."""
        try:
            request = self._queue.get_nowait()
        except queue.Empty:
            return None
        if request is None:
            self._closed.set()
        return request

    def _group(self, first: _Request, more: Callable[[], _Request | None]) -> list[_Request]:
        """first and the requests more() gives after it (None: no more), up to max_group_commits
        and max_group_bytes."""
        group, size = [first], first.nbytes
        while len(group) < self.limits.max_group_commits and size < self.limits.max_group_bytes:
            request = more()
            if request is None:
                break
            group.append(request)
            size += request.nbytes
        return group

    # -- callers' turn -------------------------------------------------------------------------

    def _on_callers_turn(self, request: _Request) -> bool:
        """Whether the request is committed on callers' turn: now, on this thread, if the turn
        is free; after the group whose append is under way; or once the committer hands the
        turn over. False: the committer takes it."""
        with self._callers:
            if not self._may_chain(ignore_wanted=True):
                return False
            if (
                self._callers_turn
                or self._turn_wanted  # the committer goes first, then hands the turn over
                or not self._turn.acquire(blocking=False)
            ):
                if len(self._waiting) >= self.limits.max_queued_commits:
                    raise CommitOverloaded(
                        f"the TN has {self.limits.max_queued_commits} commits waiting; try again"
                    )
                self._waiting.append(request)
                return True
            self._callers_turn = True
        self._chain([request])
        return True

    def _may_chain(self, ignore_wanted: bool = False) -> bool:
        return not (
            (self._turn_wanted and not ignore_wanted)
            or self._resync_due
            or self._unreadable is not None
            or self._closed.is_set()
        )

    def _chain(self, group: list[_Request]) -> None:
        """On callers' turn: stage each group and hand it to the log, until none waits (the
        turn is let go) or the log's answer is slow (it goes on with the next group)."""
        while group:
            try:
                flight = self._staged_flight(group)
            except Exception:  # a bug: fail the group, read the log back
                logger.exception("committing a group of %d write sets failed", len(group))
                self._unanswered(group, "the TN failed while committing; see its log")
                self._resync_due = True
                flight = None
            if flight is not None and not self._logged_here(flight):
                return
            group = self._next_group()

    def _logged_here(self, flight: _InFlight) -> bool:
        """Hand the group to the log and wait for its answer up to log_wait_on_caller_seconds
        (the thread stays with its commit rather than give the log's thread its work to do
        meanwhile): True if it came and was taken up; False: it will be, with run_soon."""
        with self._callers:
            self._in_flight = flight
            flight.caller_waits = True
        try:
            self.log.append_then(flight.records, lambda _, error: self._logged(flight, error))
        except Exception as error:  # refused at once: the log may or may not hold it
            flight.error = error
            flight.answered.set()
        answered = flight.answered.wait(self.limits.log_wait_on_caller_seconds)
        with self._callers:
            flight.caller_waits = False
            if not (answered or flight.answered.is_set()):
                return False
        return self._taken_up(flight)

    def _staged_flight(self, group: list[_Request]) -> _InFlight | None:
        """The group staged and taken into the TN's state, as one log append (what does not
        fit waits for the next); None if none of it is to be logged."""
        batch: list[tuple[_Request, Commit]] = []
        records: list[bytes] = []
        size = 0
        for index, request in enumerate(group):
            try:
                staged = self._staged(request, may_reserve=False)
            except ReservationDue:  # the committer reserves more, and commits these
                self._hand_to_committer(group[index:])
                break
            if staged is None:
                continue
            if records and size + len(staged.record) > self.limits.max_group_bytes:
                with self._callers:
                    self._waiting.extendleft(reversed(group[index:]))
                break
            self._take(staged)
            batch.append((request, staged.commit))
            records.append(staged.record)
            size += len(staged.record)
        if not records:
            return None
        deadline = time.monotonic() + self.limits.commit_timeout_seconds
        return _InFlight(batch, records, deadline)

    def _logged(self, flight: _InFlight, error: Exception | None) -> None:
        """The log's answer, in its thread: to the caller waiting for it, or taken up on the
        caller's thread."""
        with self._callers:
            flight.error = error
            if flight.caller_waits:
                flight.answered.set()
                return
        try:
            flight.run_soon(lambda: self._after_logged(flight))
        except RuntimeError:  # that thread's loop is closed: the committer gives up on it
            logger.warning("a commit's caller stopped before its log answered")

    def _after_logged(self, flight: _InFlight) -> None:
        if self._taken_up(flight):
            self._chain(self._next_group())

    def _taken_up(self, flight: _InFlight) -> bool:
        """The group published, or refused by the log; False if the committer gave up waiting
        for it (the turn is its own now)."""
        with self._callers:
            if self._in_flight is not flight:
                return False
            self._in_flight = None
        try:
            if flight.error is None:
                self._published(flight.batch)
                if any(
                    self.flusher.full(change.table_id)
                    for _, commit in flight.batch
                    for change in commit.changes
                ):
                    self._wake()  # the committer flushes now, as it would after its own commits
            else:
                logger.warning("the log refused %d commits: %s", len(flight.batch), flight.error)
                self._unconfirmed(flight.batch, flight.error)
                self._resync_due = True
        except Exception:  # a bug: fail what is unanswered, read the log back
            logger.exception("publishing a group of %d commits failed", len(flight.batch))
            self._unanswered([request for request, _ in flight.batch], "see the TN's log")
            self._resync_due = True
        return True

    def _next_group(self) -> list[_Request]:
        """Callers' next group; none: the turn is let go (and the committer takes what waits,
        when it asked for the turn or commits may not go on callers' turn)."""
        waiting = self._waiting
        with self._callers:
            if waiting and self._may_chain():
                return self._group(
                    waiting.popleft(), lambda: waiting.popleft() if waiting else None
                )
            left = self._end_callers_turn()
        self._hand_to_committer(left)
        return []

    def _end_callers_turn(self, release: bool = True) -> list[_Request]:
        """Under _callers: the callers' turn ended, the turn let go (or kept, by the committer);
        the requests that waited for it (the committer's now)."""
        left = list(self._waiting)
        self._waiting.clear()
        self._callers_turn = False
        if release:
            self._turn.release()
        return left

    def _let_go_of_turn(self) -> None:
        """The committer's turn ends: handed to the callers waiting for it, if any."""
        with self._callers:
            if not self._waiting:
                self._turn.release()
                return
            self._callers_turn = True
            run_soon = self._waiting[0].run_soon
        try:
            run_soon(lambda: self._chain(self._next_group()))
        except RuntimeError:  # that thread's loop is closed: the committer takes them
            with self._callers:
                left = self._end_callers_turn()
            self._hand_to_committer(left)

    def _take_turn(self) -> None:
        """The committer's wait for the turn (callers hand it over); a group of callers' turn
        whose append the log has not answered within commit_timeout is given up."""
        self._turn_wanted = True
        try:
            while not self._turn.acquire(timeout=TURN_CHECK_SECONDS):
                if self._gave_up_in_flight():
                    return  # the turn passes to the committer as it is
        finally:
            self._turn_wanted = False

    def _gave_up_in_flight(self) -> bool:
        with self._callers:
            flight = self._in_flight
            if flight is None or time.monotonic() < flight.deadline:
                return False
            self._in_flight = None
            left = self._end_callers_turn(release=False)
        logger.error("the log did not answer an append of %d commits in time", len(flight.batch))
        self._unconfirmed(flight.batch, "no answer from the log in time")
        self._resync_due = True
        self._hand_to_committer(left)
        return True

    def _hand_to_committer(self, requests: list[_Request]) -> None:
        for request in requests:
            if self._closed.is_set():
                request.future.set_exception(TransactionNodeClosed("the TN is stopping"))
                continue
            try:
                self._queue.put_nowait(request)
            except queue.Full:
                request.future.set_exception(
                    CommitOverloaded(f"the TN has {self.limits.max_queued_commits} commits waiting")
                )

    @staticmethod
    def _unanswered(group: list[_Request], why: str) -> None:
        for request in group:
            if not request.future.done():
                request.future.set_exception(CommitOutcomeUnknown(why))

    def _idle_work(self, heartbeat: bool = True) -> None:
        """A heartbeat (unless commits just consumed timestamps) and the storage work due; both
        wait while the log reserves no timestamps, and while it cannot be read back (tried again
        every RESYNC_EVERY_SECONDS: the CNs' watermarks move again without waiting for a commit)."""
        if self._resync_due:
            self._resync()
        if self._unreadable is not None:
            if time.monotonic() - self._resync_tried_at < RESYNC_EVERY_SECONDS:
                return
            if not self._resync():
                return
            logger.info("the TN reads its log again: commits are taken")
        try:
            if heartbeat:
                self._heartbeat()
            self._reserve_ahead()
            self._storage_work()
        except TimestampsUnavailable as error:
            logger.warning("no heartbeat, flush or merge for now: %s", error)

    def _commit_group(self, group: list[_Request]) -> None:
        """Check, stamp and log each write set in order; one log append per max_group_bytes."""
        if (self._resync_due or self._unreadable is not None) and not self._resync():
            error = TransactionNodeClosed(f"the TN cannot read its log: {self._unreadable}")
            for request in group:
                if not request.future.done():
                    request.future.set_exception(error)
            return
        batch: list[tuple[_Request, Commit]] = []
        records: list[bytes] = []
        size = 0
        for request in group:
            if request.control is not None:  # after what came before it, published
                if records and not self._log_and_publish(batch, records):
                    self._refuse_unanswered(group)
                    return
                batch, records, size = [], [], 0
                try:
                    request.future.set_result(request.control())
                except CommitError as error:
                    request.future.set_exception(error)
                continue
            if request.bulk is not None and request.bulk.overwrite and records:
                # what it replaces is in the flusher first: what came before it, published
                if not self._log_and_publish(batch, records):
                    self._refuse_unanswered(group)
                    return
                batch, records, size = [], [], 0
            staged = self._staged(request)
            if staged is None:
                continue
            if records and size + len(staged.record) > self.limits.max_group_bytes:
                if not self._log_and_publish(batch, records):
                    self._refuse_unanswered(group)
                    return
                batch, records, size = [], [], 0
            self._take(staged)
            batch.append((request, staged.commit))
            records.append(staged.record)
            size += len(staged.record)
        if records:
            self._log_and_publish(batch, records)

    def _staged(self, request: _Request, may_reserve: bool = True) -> _Staged | None:
        """The request checked, stamped and encoded, the TN's state not changed yet; None once
        its future is answered (refused, or its request id committed before). ReservationDue
        unless may_reserve (the timestamps reserved are used up)."""
        write_set = request.write_set or WriteSet(0, ())
        if write_set.request_id and write_set.request_id in self._requests:
            request.future.set_result(self._requests[write_set.request_id])
            return None
        if request.bulk is not None:
            schemas = {request.bulk.schema.table_id: request.bulk.schema}
        else:
            schemas = {write.schema.table_id: write.schema for write in write_set.writes}
        labelled = None
        try:
            if request.bulk is not None:
                commit, record = self._prepare_bulk(request.bulk)
            else:
                self.flusher.check(write_set)
                self._check_label(write_set.claim)
                commit = self.state.prepare(
                    write_set, self._next_ts(may_reserve), self.limits.max_commit_rows
                )
                labelled = _labelled(write_set, commit)
                record = wal_records.encode(
                    commit,
                    write_set.request_id,
                    schemas,
                    load=None if labelled is None else labelled.fields(),
                )
            if len(record) > self.limits.max_record_bytes:
                raise CommitTooLarge(
                    f"the statement writes {len(record)} bytes at once; the log takes at most "
                    f"{self.limits.max_record_bytes} (logservice_max_record_bytes)"
                )
        except CommitError as error:
            request.future.set_exception(error)
            return None
        return _Staged(request, commit, record, schemas, labelled)

    def _take(self, staged: _Staged) -> None:
        """A staged commit applied to the TN's state (before the log holds it: the commits
        staged after it are checked against it)."""
        request = staged.request
        self._apply(staged.commit, staged.schemas)
        if request.bulk is not None:
            self._apply_bulk(request.bulk, staged.commit)
        elif staged.labelled is not None:
            self.labels.put(staged.labelled)
        if request.write_set is not None and request.write_set.request_id:
            self._remember(request.write_set.request_id, staged.commit.commit_ts)

    def _check_label(self, claim: loads.LoadClaim | None) -> None:
        held = None if claim is None else self.labels.get(claim.db, claim.label)
        if held is not None and held.state != loads.ABORTED:
            raise LabelTaken(held.label, held.txn_id, held.state)

    def _apply(self, commit: Commit, schemas: dict[int, TableSchema]) -> None:
        self.state.apply(commit, schemas)
        self.schemas.update(schemas)
        self._observe_auto_increments(commit, schemas)

    def _observe_auto_increments(self, commit: Commit, schemas: dict[int, TableSchema]) -> None:
        """Values written into AUTO_INCREMENT columns: later ones are handed out above them."""
        for change in commit.changes:
            column = schemas[change.table_id].auto_increment
            if column is not None and change.inserts is not None:
                largest = _largest(change.inserts.column(column))
                if largest is not None:
                    self.auto_increments.observe(change.table_id, largest)

    def take_auto_increment(self, table_id: int, count: int) -> int:
        """The first of count new values of the table's AUTO_INCREMENT column."""
        return self.auto_increments.take(table_id, count)

    # -- bulk loads (be/tn/loads.py) -----------------------------------------------------------

    def begin_load(self, schema: TableSchema, claim: loads.LoadClaim | None = None) -> int:
        """A new load of the table: its transaction id, a timestamp consumed for it (its objects
        are named and stamped at it). With a claim, the TN keeps the load's record under the
        claim's label (LabelTaken if a load not aborted holds it)."""

        def begin() -> int:
            known = self.state.tables.get(schema.table_id)
            if known is not None and schema.schema_version < known.schema_version:
                raise StaleSchema(schema.table_id, schema.schema_version, known.schema_version)
            txn_id = self._heartbeat()
            record = None if claim is None else claim.record(txn_id, schema.table_id)
            self.open_loads.begin(txn_id, schema.table_id, record)
            if record is not None:
                try:
                    held = self.labels.claim(record)
                except CommitError:
                    self.open_loads.end(txn_id)
                    raise
                if held is not None:
                    self.open_loads.end(txn_id)
                    raise LabelTaken(held.label, held.txn_id, held.state)
            if known is None:  # row ids are handed out from the table's own counter
                known = self.state.table(schema.table_id)
                known.schema_version = schema.schema_version
                known.key_columns = schema.key_columns
                known.replaces_on_key = schema.replaces_on_key
                self.schemas.setdefault(schema.table_id, schema)
            return txn_id

        return self._control(begin)

    def reserve_row_ids(self, txn_id: int, count: int) -> int:
        """The first of count row ids of the load's table, handed to this load alone."""
        if not 0 < count <= self.limits.max_commit_rows:
            raise CommitTooLarge(f"at most {self.limits.max_commit_rows} row ids at once")

        def reserve() -> int:
            state = self.state.tables[self.open_loads.get(txn_id).table_id]
            first = state.next_row_id
            state.next_row_id = first + count
            self.open_loads.add_range(txn_id, first, first + count)
            return first

        return self._control(reserve)

    def commit_load(self, bulk: loads.BulkCommit) -> int:
        """Commit a load's objects at once: the commit timestamp (a CommitError kind if not).
        A load whose record the TN keeps registers its objects' rows and bytes in it."""
        if len(bulk.row_ids) > self.limits.max_commit_rows:
            raise CommitTooLarge(
                f"a UNIQUE KEY table takes at most {self.limits.max_commit_rows} rows per load"
            )
        kept = self.open_loads.record_of(bulk.txn_id)
        if bulk.record is None and kept is not None:
            rows = sum(meta.rows for meta in bulk.objects)
            size = sum(meta.bytes for meta in bulk.objects)
            bulk = replace(
                bulk,
                record=replace(kept, total_rows=rows, loaded_rows=rows, load_bytes=size),
            )
        request = _Request(None, Future(), bulk=bulk)
        return self._wait(self._enqueue(request))

    def abort_load(self, txn_id: int, names: tuple[str, ...] = ()) -> None:
        """The load's objects may not be committed any more; of names, those the load wrote
        (named at its timestamp) and no commit holds are removed."""
        ended = self.open_loads.end(txn_id)
        if ended is not None and ended.record is not None:
            self._aborted(ended.record, "the load was aborted: a task or the job failed")
        if self.store is None:
            return
        if ended is not None and not self._closed.is_set():  # and those a cancelled task wrote
            self._worker.submit(self._remove_load_objects, ended.table_id, txn_id)
        for name in names:
            try:
                parsed = ObjectName.parse(name)
            except ValueError:
                continue
            known = self.flusher.objects.get(parsed.table_id)
            if parsed.ts != txn_id or (known is not None and name in known.objects):
                continue
            try:
                self.store.delete(name, missing_ok=True)
            except StorageError as error:
                logger.warning("the aborted load's object %s stays: %s", name, error)

    def clean_labels(self, db: str, label: str | None = None) -> int:
        """CLEAN LABEL: the finished loads' labels of db (label's alone, if given) may be used
        again; logged first, so that a restart lets them go too. How many were let go."""

        def clean() -> int:
            note = wal_records.encode_labels_cleaned(db, label)
            try:
                self.log.append([note], timeout=self.limits.commit_timeout_seconds)
            except LogServiceError as error:
                raise CommitOutcomeUnknown(f"the log did not confirm it: {error}") from None
            return self.labels.clean(db, label)

        return self._control(clean)

    def _aborted(self, record: loads.LoadRecord, why: str) -> None:
        held = self.labels.get(record.db, record.label)
        if held is not None and held.txn_id == record.txn_id:
            self.labels.put(loads.finished(record, loads.ABORTED, message=why))

    def _expire_loads(self, everything: bool = False) -> None:
        """Abort the loads whose record the TN keeps that stayed open too long (their writer
        died), or every one of them when the TN forgets its open loads."""
        for load in self.open_loads.expired(everything):
            why = (
                "the TN forgot its open loads (its log was read again)"
                if everything
                else f"the load timed out: not committed within {self.limits.load_timeout_seconds:g} s"
            )
            logger.warning("load %s (txn %d) aborted: %s", load.record.label, load.txn_id, why)
            self._aborted(load.record, why)
            if self.store is not None and not self._closed.is_set():
                self._worker.submit(self._remove_load_objects, load.table_id, load.txn_id)

    def _remove_load_objects(self, table_id: int, txn_id: int) -> None:
        """On the storage worker: the objects an aborted or expired load's writers left (named
        at its transaction id, which no commit names: its commits are refused from then on)."""
        try:
            names = self.store.list(f"t{table_id}/")
        except StorageError as error:
            logger.warning("the ended load %d's objects were not listed: %s", txn_id, error)
            return
        for name in names:
            try:
                if ObjectName.parse(name).ts != txn_id:
                    continue
                self.store.delete(name, missing_ok=True)
            except ValueError:
                continue
            except StorageError as error:
                logger.warning("the ended load's object %s stays: %s", name, error)

    def _control(self, action: Callable[[], object]):
        return self._wait(self._enqueue(_Request(None, Future(), control=action)))

    def _enqueue(self, request: _Request) -> Future:
        if self._closed.is_set():
            raise TransactionNodeClosed("the TN is stopping")
        try:
            self._queue.put_nowait(request)
        except queue.Full:
            raise CommitOverloaded(
                f"the TN has {self.limits.max_queued_commits} commits waiting; try again"
            ) from None
        return request.future

    def _wait(self, future: Future):
        try:
            return future.result(self.limits.commit_timeout_seconds)
        except FutureTimeout:
            raise CommitOutcomeUnknown(
                "the commit was not confirmed in time: it may or may not have taken effect"
            ) from None

    def _prepare_bulk(self, bulk: loads.BulkCommit) -> tuple[Commit, bytes]:
        """The load's commit, checked, and its log record (the load's record in it)."""
        schema = bulk.schema
        table_id = schema.table_id
        known = self.state.tables.get(table_id)
        if known is not None and schema.schema_version < known.schema_version:
            raise StaleSchema(table_id, schema.schema_version, known.schema_version)
        self.open_loads.check(bulk, self.flusher.table_objects(table_id).objects)
        ids: list[int] = []
        keys: list[tuple] = []
        if schema.replaces_on_key and bulk.keys:
            ids, keys = self._replaced(table_id, bulk)
        removed: tuple[str, ...] = ()
        if bulk.overwrite:
            removed, in_memory = self._overwritten(schema)
            ids += in_memory
            keys += [()] * len(in_memory)
        change = TableChanges(
            table_id,
            schema.schema_version,
            deletes=deletes_table(schema, ids, keys) if ids else None,
            objects_added=bulk.objects,
            objects_removed=removed,
            overwrites=bulk.overwrite,
        )
        commit = Commit(self._next_ts(), (change,))
        record = None
        if bulk.record is not None:
            record = loads.finished(bulk.record, loads.VISIBLE, commit_ts=commit.commit_ts)
        encoded = wal_records.encode(
            commit, "", {table_id: schema}, load=None if record is None else record.fields()
        )
        if len(encoded) > self.limits.max_record_bytes:
            raise CommitTooLarge(
                f"the load's commit is {len(encoded)} bytes; the log takes at most "
                f"{self.limits.max_record_bytes} (logservice_max_record_bytes)"
            )
        return commit, encoded

    def _replaced(self, table_id: int, bulk: loads.BulkCommit) -> tuple[list[int], list[tuple]]:
        """The rows a UNIQUE KEY load replaces (row ids, keys): earlier holders of its keys (none
        for an overwrite, which replaces them all), and its own rows whose key a later row of it
        holds (the last row of a key wins, as in Doris); with a sequence column, the row of the
        largest value wins, an earlier holder's included (the load's row is then deleted). A
        winning row that deletes its key (merge_type DELETE or MERGE) is deleted with the
        holder."""
        state = TableWriteState() if bulk.overwrite else self.state.table(table_id)
        sequences, held = None, {}
        if bulk.schema.sequence is not None:
            sequences, held = list(bulk.sequences), state.held_sequences(bulk.keys)
        chosen = set(staying_rows(list(bulk.keys), sequences, held))
        ids: list[int] = []
        keys: list[tuple] = []
        for index, (row_id, key) in enumerate(zip(bulk.row_ids, bulk.keys, strict=True)):
            if index not in chosen or row_id in bulk.deleting:  # the row itself holds no key
                ids.append(row_id)
                keys.append(key)
            if index not in chosen:
                continue
            holder = state.keys.get(key)
            if holder is not None:
                ids.append(holder[0])
                keys.append(key)
        return ids, keys

    def _overwritten(self, schema: TableSchema) -> tuple[tuple[str, ...], list[int]]:
        """What an overwrite replaces, of the partitions schema lists: the names of the table's
        objects and tombstones, and the row ids of its rows in memory not deleted yet."""
        table_id = schema.table_id
        listed = frozenset(partition.id for partition in schema.partitions)
        known = self.flusher.table_objects(table_id)
        names = [
            meta.name
            for meta in (*known.objects.values(), *known.tombstones.values())
            if not listed or meta.partition_id in listed
        ]
        if len(names) > MAX_OBJECTS_PER_CHANGE:
            raise CommitTooLarge(
                f"table {table_id} has {len(names)} objects; an overwrite replaces at most "
                f"{MAX_OBJECTS_PER_CHANGE}: wait for its merges, or TRUNCATE it and append"
            )
        memory = self.flusher.memory.get(table_id)
        if memory is None or not memory.rows:
            return tuple(names), []
        value_set = pa.array(sorted(listed), pa.int64())
        pieces = []
        for piece in memory.rows:
            row_ids = piece.column(ROW_ID)
            if listed and PARTITION_ID in piece.schema.names:
                row_ids = row_ids.filter(pc.is_in(piece.column(PARTITION_ID), value_set=value_set))
            pieces.append(row_ids)
        live = pa.chunked_array(pieces, pa.int64())
        if memory.delete_ids:
            gone = pa.concat_arrays(memory.delete_ids)
            live = live.filter(pc.invert(pc.is_in(live, value_set=gone)))
        if len(live) > self.limits.max_commit_rows:
            raise CommitTooLarge(
                f"table {table_id} holds {len(live)} unflushed rows; an overwrite deletes at most "
                f"{self.limits.max_commit_rows} at once: try again after its flush"
            )
        return tuple(names), live.to_pylist()

    def _apply_bulk(self, bulk: loads.BulkCommit, commit: Commit) -> None:
        table_id = bulk.schema.table_id
        if bulk.schema.replaces_on_key and bulk.keys:
            self._register_loaded(commit, bulk.schema, bulk.row_ids, bulk.keys, bulk.sequences)
        self.open_loads.end(bulk.txn_id)
        (change,) = commit.changes
        if change.objects_removed and self.merger is not None:  # an overwrite's, kept a while
            self.merger.replaced(change.objects_removed, commit.commit_ts)
        if bulk.record is not None:
            self.labels.put(loads.finished(bulk.record, loads.VISIBLE, commit_ts=commit.commit_ts))
        self._merge_candidates.add(table_id)

    def _replayed_load(self, record: bytes, commit: Commit, schemas) -> None:
        """A logged load's record, and the keys its rows hold in a UNIQUE KEY table."""
        fields = wal_records.decode_load(record)
        if fields is not None:
            try:
                self.labels.put(loads.LoadRecord.from_fields(fields))
            except (TypeError, AssertionError) as error:
                logger.warning("a logged load record is damaged, its label is let go: %s", error)
        for change in commit.changes:
            schema = schemas.get(change.table_id)
            if not change.loads_objects or schema is None or not schema.replaces_on_key:
                continue
            if self.store is None:
                continue
            try:
                row_ids, keys, sequences = loaded_keys(self.store, schema, change.objects_added)
            except StorageError as error:  # merged away and deleted since: a later load of
                logger.warning(  # one of these keys may then keep both rows
                    "the keys of table %d's load at %d are not known again: %s",
                    change.table_id,
                    commit.commit_ts,
                    error,
                )
                continue
            self._register_loaded(commit, schema, row_ids, keys, sequences)

    def _register_loaded(self, commit: Commit, schema: TableSchema, row_ids, keys, sequences):
        """The keys a load's rows hold once it committed: those of its rows its commit did not
        delete (a later row of the same key, or a row of a larger sequence value, won)."""
        change = next(c for c in commit.changes if c.table_id == schema.table_id)
        gone = set() if change.deletes is None else set(change.deletes.column(ROW_ID).to_pylist())
        held = [index for index, row_id in enumerate(row_ids) if row_id not in gone]
        self.state.register_keys(
            schema.table_id,
            [row_ids[index] for index in held],
            [keys[index] for index in held],
            commit.commit_ts,
            None if schema.sequence is None else [sequences[index] for index in held],
        )

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
            self._unconfirmed(batch, error)
            self._resync()
            return False
        self._published(batch)
        return True

    @staticmethod
    def _unconfirmed(batch: list[tuple[_Request, Commit]], error: object) -> None:
        for request, _ in batch:
            request.future.set_exception(
                CommitOutcomeUnknown(
                    f"the log did not confirm the commit ({error}): it may or may not have "
                    "taken effect"
                )
            )

    def _published(self, batch: list[tuple[_Request, Commit]]) -> None:
        """The logged commits published in order, each request answered."""
        self._changes_since_checkpoint += len(batch)
        for request, commit in batch:
            self.flusher.apply(commit)
            self._publish(commit)
            self.committed += 1
            request.future.set_result(commit.commit_ts)

    def load_records(self, db: str | None) -> list[loads.LoadRecord]:
        """The loads' records as their readers may be told: a load whose commit is logged and
        published is VISIBLE; one stamped but not yet (its label is taken a moment before)
        shows as still loading."""
        published = self.published_ts
        return [
            replace(record, state=loads.PREPARE)
            if record.state == loads.VISIBLE and record.commit_ts > published
            else record
            for record in self.labels.records(db)
        ]

    # -- storage work: flushes and merges, written beside the committer ------------------------

    def _storage_work(self) -> None:
        """Take the flush or merge the storage worker finished, if it did, as a commit; start
        the next one due; now and then, with the worker idle, a checkpoint."""
        if self._job is not None:
            if not self._job.future.done():
                return
            job, self._job = self._job, None
            if not self._finish(job):
                return
        if self._closed.is_set():
            return
        if self._reachable is not None:
            (as_of_ts, reachable), self._reachable = self._reachable, None
            if not self._remove_unreachable(as_of_ts, reachable):
                return
        if time.monotonic() >= self._checkpoint_at:
            self._checkpoint()
        else:
            self._start_job()
        if self.merger is not None:
            self.merger.delete_expired()

    def _start_job(self) -> None:
        for table_id in self.flusher.due(self.schemas):
            flush_ts = self._heartbeat()  # the flush takes what was committed up to it
            job = self.flusher.prepare(self.schemas[table_id], flush_ts)
            self._job = self._started(table_id, flush_ts, self._worker.submit(job))
            return
        with self._compactions_lock:
            asked_now = list(self._compactions_asked.items())
        for table_id, asked in asked_now:
            job = self._asked_compaction(table_id, asked)
            if job is not None:
                self._job = job
                return
            self._compaction_done(table_id, asked)
        while self._merge_candidates and self.merger is not None:
            table_id = self._merge_candidates.pop()
            known = self.flusher.objects.get(table_id)
            if known is None:
                continue
            merge_ts = self._heartbeat()
            schema = self.schemas[table_id]
            job = self.merger.prepare(
                table_id, schema.schema_version, known, merge_ts, self.state.horizon_ts
            )
            if job is not None:
                self._job = self._started(table_id, merge_ts, self._worker.submit(job))
                return
        if self.store is not None and time.monotonic() >= self._compaction_check_at:
            self._start_compaction()

    def _asked_compaction(self, table_id: int, asked: _CompactionAsked) -> _StorageJob | None:
        """The next step of compacting the table as asked: a flush of its rows, else a merge of
        one tablet's objects, else one tablet's tombstones that no snapshot needs applied to its
        objects; None once none is left."""
        schema = self.schemas.get(table_id)
        if schema is None or self.merger is None or not placement.placeable(schema):
            return None
        memory = self.flusher.memory.get(table_id)
        if memory is not None and not memory.empty:
            flush_ts = self._heartbeat()
            job = self.flusher.prepare(schema, flush_ts)
            return self._started(table_id, flush_ts, self._worker.submit(job), asked)
        known = self.flusher.objects.get(table_id)
        if known is None:
            return None
        merge_ts = self._heartbeat()
        job = self.merger.prepare(
            table_id,
            schema.schema_version,
            known,
            merge_ts,
            self.state.horizon_ts,
            every=True,
            partition_ids=asked.partition_ids,
        )
        if job is not None:
            return self._started(table_id, merge_ts, self._worker.submit(job), asked)
        compacting = compaction.prepare(
            self.store,
            table_id,
            schema.schema_version,
            known,
            self.state.horizon_ts,
            every=True,
            partition_ids=asked.partition_ids,
        )
        return None if compacting is None else self._compacting(table_id, compacting, asked)

    def _start_compaction(self) -> None:
        """Start compacting the tombstones of one table's tablet, if one needs it (checked
        every compaction_check_interval_seconds)."""
        self._compaction_check_at = time.monotonic() + self.limits.compaction_check_interval_seconds
        for table_id, known in sorted(self.flusher.objects.items()):
            if table_id not in self.schemas:
                continue
            version = self.schemas[table_id].schema_version
            job = compaction.prepare(self.store, table_id, version, known, self.state.horizon_ts)
            if job is not None:
                self._job = self._compacting(table_id, job)
                return

    def _compacting(self, table_id: int, job, asked: _CompactionAsked | None = None) -> _StorageJob:
        """A compaction job under way, named at a heartbeat's timestamp."""
        compaction_ts = self._heartbeat()
        return self._started(
            table_id, compaction_ts, self._worker.submit(job, compaction_ts), asked
        )

    def _started(
        self, table_id: int, ts: int, future: Future, asked: _CompactionAsked | None = None
    ) -> _StorageJob:
        """A storage job under way; an idle TN that heartbeats on demand is woken when it ends
        (it would look only every idle_check_seconds)."""
        if self.heartbeats_on_demand:
            future.add_done_callback(lambda _: self._wake())
        return _StorageJob(table_id, ts, future, asked)

    def _wake(self) -> None:
        """The committer's queue.get returns: its idle work runs once more."""
        try:
            self._queue.put_nowait(_Request(None, Future(), control=lambda: None))
        except queue.Full:
            pass  # busy: it looks after the commits queued

    def _finish(self, job: _StorageJob) -> bool:
        """False if the log refused the change (the state was read back from the log)."""
        try:
            change = job.future.result()
        except StorageError as error:
            self.flusher.failed(job.table_id, error)
            self._compaction_done(job.table_id, job.asked)
            return True
        except Exception as error:  # a bug: this flush is tried again later
            logger.exception("storage work on table %d failed", job.table_id)
            self.flusher.failed(job.table_id, error)
            self._compaction_done(job.table_id, job.asked)
            return True
        if change is None:  # a merge the store refused
            self._compaction_done(job.table_id, job.asked)
        if change is not None and self._replaced_meanwhile(change):
            return True
        return change is None or self._log_storage_change(change)

    def _replaced_meanwhile(self, change: TableChanges) -> bool:
        """Whether an overwrite removed what a merge or compaction rewrote while it ran: then
        its objects are dropped (they hold the rows it replaced)."""
        known = self.flusher.table_objects(change.table_id)
        if all(
            name in known.objects or name in known.tombstones for name in change.objects_removed
        ):
            return False
        written = [meta.name for meta in (*change.objects_added, *change.tombstones_added)]
        logger.info(
            "table %d was overwritten while a merge ran: its %d objects dropped",
            change.table_id,
            len(written),
        )
        if self.store is not None:
            for name in written:
                try:
                    self.store.delete(name, missing_ok=True)
                except StorageError as error:
                    logger.warning("the object %s stays (the sweep removes it): %s", name, error)
        return True

    def _flush(self, table_id: int) -> bool:
        """Flush a table on the committer's thread (a checkpoint's flushes); False if the log
        refused it."""
        flush_ts = self._heartbeat()
        try:
            change = self.flusher.write(self.schemas[table_id], flush_ts)
        except StorageError as error:
            self.flusher.failed(table_id, error)
            return True
        return self._log_storage_change(change)

    def _log_storage_change(self, change: TableChanges) -> bool:
        """A flush's or merge's change, committed: logged, applied, published."""
        table_id = change.table_id
        schema = self.schemas[table_id]
        try:
            commit = Commit(self._next_ts(), (change,))
            record = wal_records.encode(commit, "", {table_id: schema})
            self.log.append([record], timeout=self.limits.commit_timeout_seconds)
        except Exception as error:
            logger.warning("the log refused a flush or merge of table %d: %s", table_id, error)
            self._resync()
            return False
        self.state.apply(commit, {table_id: schema})
        self.flusher.apply(commit)
        self._publish(commit)
        if change.objects_removed and self.merger is not None:
            self.merger.replaced(change.objects_removed, commit.commit_ts)
        if change.objects_added:
            self._merge_candidates.add(table_id)
        return True

    def _remove_unreachable(self, as_of_ts: int, reachable: dict[int, frozenset[int]]) -> bool:
        """Commit the removal of the objects no read may reach (forget_unreachable); False if
        the log refused it."""
        removed = 0
        for table_id, known in list(self.flusher.objects.items()):
            partitions = reachable.get(table_id, frozenset())
            names = sorted(
                meta.name
                for meta in known.objects.values()
                if meta.flush_ts <= as_of_ts and meta.partition_id not in partitions
            )
            if not names or table_id not in self.schemas:
                continue
            version = self.schemas[table_id].schema_version
            for start in range(0, len(names), MAX_REMOVED_PER_CHANGE):
                part = tuple(names[start : start + MAX_REMOVED_PER_CHANGE])
                if not self._log_storage_change(
                    TableChanges(table_id, version, objects_removed=part)
                ):
                    return False
            removed += len(names)
        if removed:
            logger.info("%d objects of dropped tables and partitions removed", removed)
        return True

    def _sweep(self) -> None:
        """Before any flush: remove the unfinished writes a crash left, the objects no commit
        names (a flush or merge written, then never committed: a crash, a refused log) and the
        checkpoints older than the newest."""
        if self.store is None:
            return
        try:
            self.store.remove_temporaries()
            names = self.store.list()
        except StorageError as error:
            logger.warning("no sweep of the object store: %s", error)
            return
        known = {name for _, name in self.merger.pending} if self.merger is not None else set()
        for table in self.flusher.objects.values():
            known.update(table.objects)
            known.update(table.tombstones)
        # Every object this TN wrote is named at a timestamp it consumed, heartbeats included
        # (which the log does not hold): before now.
        newest = max(self.state.last_ts, time.time_ns())
        orphans = []
        for name in names:
            if name.startswith(f"{checkpoint.FOLDER}/"):
                if self._checkpoint_name and name < self._checkpoint_name:
                    orphans.append(name)
                continue
            try:
                written_at = ObjectName.parse(name).ts
            except ValueError:
                continue  # not an object this TN writes
            if name not in known and written_at <= newest:
                orphans.append(name)
        for name in orphans:
            try:
                self.store.delete(name, missing_ok=True)
            except StorageError as error:
                logger.warning("the orphan object %s stays: %s", name, error)
        if orphans:
            logger.warning("removed %d objects no commit names: %s", len(orphans), orphans[:5])

    # -- checkpoints --------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        """Flush every table, write what the TN knows as one object, log its name and truncate
        the log behind that record: a restart loads it and replays only what follows."""
        self._checkpoint_at = time.monotonic() + self.limits.checkpoint_interval_seconds
        if self.store is None or self._changes_since_checkpoint == 0:
            return  # nothing was committed since the last one
        for table_id, memory in list(self.flusher.memory.items()):
            if not memory.empty and not self._flush(table_id):
                return
        unflushed = [table for table, memory in self.flusher.memory.items() if not memory.empty]
        if unflushed:
            logger.warning("no checkpoint: tables %s could not be flushed", unflushed)
            return
        started = time.monotonic()
        ts = self.state.last_ts
        taken = checkpoint.Checkpoint(
            ts,
            self.state.horizon_ts,
            {
                table_id: checkpoint.TableCheckpoint(
                    self.schemas[table_id],
                    state,
                    list(self.flusher.objects.get(table_id, TableObjects()).objects.values()),
                    list(self.flusher.objects.get(table_id, TableObjects()).tombstones.values()),
                )
                for table_id, state in self.state.tables.items()
            },
            list(self._requests.items()),
            list(self.merger.pending) if self.merger is not None else [],
            self.auto_increments.counters(),
            [record.fields() for record in self.labels.committed()],
        )
        name = checkpoint.object_name(ts)
        try:
            self.store.put(name, checkpoint.encode(taken))
            note = wal_records.encode_checkpoint_note(name, ts)
            (lsn,) = self.log.append([note], timeout=self.limits.commit_timeout_seconds)
            self.log.truncate(lsn, timeout=self.limits.commit_timeout_seconds)
        except Exception as error:  # the store or the log: try again next time
            logger.warning("checkpoint at %d failed: %s", ts, error)
            return
        previous = self._checkpoint_name
        self._checkpoint_ts, self._checkpoint_name = ts, name
        self._changes_since_checkpoint = 0
        if self.on_checkpoint is not None:
            self.on_checkpoint(ts)
        if previous:
            try:
                self.store.delete(previous, missing_ok=True)
            except StorageError as error:
                logger.warning("the old checkpoint %s stays: %s", previous, error)
        logger.info(
            "checkpoint %s: %d tables, log truncated at LSN %d, in %.2f s",
            name,
            len(taken.tables),
            lsn,
            time.monotonic() - started,
        )

    def _load_checkpoint(self, name: str) -> None:
        if self.store is None:
            raise CheckpointCorrupt(f"the log starts at checkpoint {name}, and no store is given")
        started = time.monotonic()
        loaded = checkpoint.decode(self.store.read(name).to_pybytes())
        checkpoint.restore(self.state, loaded)
        for table_id, table in loaded.tables.items():
            self.schemas[table_id] = table.schema
        for request_id, ts in loaded.requests:
            self._remember(request_id, ts)
        for fields in loaded.loads:
            try:
                self.labels.put(loads.LoadRecord.from_fields(fields))
            except (TypeError, AssertionError) as error:
                logger.warning(
                    "a checkpoint's load record is damaged, its label is let go: %s", error
                )
        for table_id, next_value in loaded.auto_increments:
            self.auto_increments.observe(table_id, next_value - 1)
        if self.merger is not None:
            self.merger.pending.extend(loaded.pending_deletions)
        changes = tuple(
            TableChanges(
                table_id,
                table.schema.schema_version,
                objects_added=tuple(table.objects),
                tombstones_added=tuple(table.tombstones),
                flushed_ts=loaded.ts,
            )
            for table_id, table in sorted(loaded.tables.items())
            if table.objects or table.tombstones
        )
        restored = Commit(loaded.ts, changes)
        self.flusher.apply(restored)
        if restored.commit_ts > self.published_ts:
            self._publish(restored)
        self._checkpoint_ts, self._checkpoint_name = loaded.ts, name
        if self.on_checkpoint is not None:
            self.on_checkpoint(loaded.ts)
        logger.info(
            "TN loaded checkpoint %s (%d tables) in %.2f s",
            name,
            len(loaded.tables),
            time.monotonic() - started,
        )

    def _heartbeat(self) -> int:
        """Consume a timestamp: every commit at or before it is published."""
        heartbeat = Commit(self._next_ts())
        self.state.apply(heartbeat)
        self._publish(heartbeat)
        return heartbeat.commit_ts

    def _publish(self, commit: Commit) -> None:
        assert commit.commit_ts > self.published_ts, "published in commit order"
        self.publish(commit)
        self.published_ts = commit.commit_ts

    def _next_ts(self, may_reserve: bool = True) -> int:
        """A timestamp from the log's oracle: above every one consumed before, heartbeats'
        included, whatever the wall clock does across restarts and leader changes."""
        try:
            ts = self.oracle.next(may_reserve=may_reserve)
        except LogServiceError as error:
            raise TimestampsUnavailable(f"the TN's log reserves no timestamps: {error}") from None
        assert ts > self.state.last_ts, (ts, self.state.last_ts)
        return ts

    def _reserve_ahead(self) -> None:
        """Timestamps reserved ahead, so that callers' turn finds them (they never wait for the
        log to reserve more)."""
        try:
            self.oracle.reserve_ahead()
        except LogServiceError as error:
            raise TimestampsUnavailable(f"the TN's log reserves no timestamps: {error}") from None

    def _remember(self, request_id: str, ts: int) -> None:
        self._requests[request_id] = ts
        while len(self._requests) > self.limits.max_remembered_requests:
            self._requests.popitem(last=False)

    # -- the log ------------------------------------------------------------------------------

    def _replay(self) -> None:
        """The state the logged commits give, each published again in order."""
        started = time.monotonic()
        count = 0
        lsn = max(self.log.truncated_lsn(), 1)
        first = True
        while True:
            entries = self.log.read(lsn, self.limits.log_read_bytes)
            if not entries:
                break
            for entry_lsn, record in entries:
                lsn = entry_lsn + 1
                named = wal_records.checkpoint_named(record)
                if named is not None:
                    if first:  # the log was truncated behind it: start from it
                        self._load_checkpoint(named)
                    first = False
                    continue
                first = False
                cleaned = wal_records.labels_cleaned(record)
                if cleaned is not None:
                    self.labels.clean(*cleaned)
                    continue
                commit, request_id, schemas = wal_records.decode(record)
                self.state.apply(commit, schemas)
                self.flusher.apply(commit)
                self.schemas.update(schemas)
                if self.merger is not None:
                    for change in commit.changes:
                        self.merger.replaced(change.objects_removed, commit.commit_ts)
                self._observe_auto_increments(commit, schemas)
                self._replayed_load(record, commit, schemas)
                if request_id:
                    self._remember(request_id, commit.commit_ts)
                if commit.commit_ts > self.published_ts:
                    self._publish(commit)
                count += 1
                self._changes_since_checkpoint += 1
        logger.info(
            "TN replayed %d commits from its log in %.2f s (last commit ts %d)",
            count,
            time.monotonic() - started,
            self.state.last_ts,
        )

    def _resync(self) -> bool:
        """After a failed append the log may or may not hold the group: start again from what it
        holds; what it holds and was not published yet is published now. False if the log could
        not be read: commits are refused until it can (the next one tries again)."""
        self._resync_due = False
        self.state = WriteState()
        self.flusher = Flusher(self.store, self.limits)
        if self.merger is not None:
            self.merger.pending.clear()
        self.schemas.clear()
        self._requests.clear()
        self.labels.forget_committed()  # a label whose commit the log refused is free again
        try:
            self._replay()
        except Exception as error:
            self._resync_tried_at = time.monotonic()
            if self._unreadable is None:
                logger.error("the TN cannot read its log back (%s): commits are refused", error)
            self._unreadable = error
            return False
        self._unreadable = None
        self.state.last_ts = max(self.state.last_ts, self.published_ts)
        # The row ids handed to open loads are forgotten with them: their commits are refused.
        self._expire_loads(everything=True)
        self.open_loads = loads.OpenLoads(
            self.limits.max_open_loads, self.limits.load_timeout_seconds
        )
        return True


def loaded_keys(
    store: ObjectStore, schema: TableSchema, objects: tuple
) -> tuple[list[int], list[tuple], list]:
    """The row ids, keys and sequence column values (if the table has one) of a load's rows,
    row ids ascending (read from its objects)."""
    sequence = () if schema.sequence is None else (schema.sequence,)
    columns = list(dict.fromkeys([ROW_ID, *schema.key_columns, *sequence]))
    parts = [read_blocks(store, meta, columns) for meta in objects]
    if not parts:
        return [], [], []
    rows = pa.concat_tables(parts).sort_by(ROW_ID)
    values = [rows.column(name).to_pylist() for name in schema.key_columns]
    sequences = rows.column(schema.sequence).to_pylist() if sequence else []
    return rows.column(ROW_ID).to_pylist(), list(zip(*values, strict=True)), sequences


def bulk_commit(
    store: ObjectStore | None,
    txn_id: int,
    schema: TableSchema,
    objects: tuple,
    overwrite: bool = False,
) -> loads.BulkCommit:
    """The commit of a load's objects written elsewhere (a UNIQUE KEY table's keys read from
    them), replacing the table's rows if overwrite; BadLoad if the objects cannot be read."""
    row_ids: list[int] = []
    keys: list[tuple] = []
    sequences: list = []
    if schema.replaces_on_key and objects:
        if store is None:
            raise BadLoad("a TN without object storage takes no loads")
        try:
            row_ids, keys, sequences = loaded_keys(store, schema, objects)
        except StorageError as error:
            raise BadLoad(f"the load's objects cannot be read: {error}") from None
    return loads.BulkCommit(
        txn_id,
        schema,
        tuple(objects),
        None,
        tuple(row_ids),
        tuple(keys),
        overwrite,
        tuple(sequences),
    )


def _labelled(write_set: WriteSet, commit: Commit) -> loads.LoadRecord | None:
    """The record of a write set given a label: a load of its rows, its transaction id its
    commit timestamp."""
    if write_set.claim is None:
        return None
    rows = sum(write.inserts.num_rows for write in write_set.writes if write.inserts is not None)
    table_id = write_set.writes[0].schema.table_id if write_set.writes else 0
    record = replace(
        write_set.claim.record(commit.commit_ts, table_id),
        total_rows=rows,
        loaded_rows=rows,
        load_bytes=write_set.nbytes,
    )
    return loads.finished(record, loads.VISIBLE, commit_ts=commit.commit_ts)
