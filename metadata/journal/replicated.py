"""The replicated journal: payloads in, committed through Raft, applied to a state machine.

A payload submitted on the leader becomes a raft entry; once a majority of voters (the leader
included) holds it on disk it is committed, the state machine applies it and the submitter's
callback gets the result. Every node applies the same entries in the same order; after a restart,
`start()` replays the committed entries that the state machine's image does not cover. The commit
index reaches the disk with the next write, without an fsync of its own: a restarted node may find
it behind what it had acknowledged, so `wait_caught_up` waits until the leader's commit (or, on a
node that leads, its whole journal) is applied before the node serves.

Threads: `submit`, `commit`, `truncate_through`, `status` and `close` may be called from any
thread. Everything else runs in the journal's thread, which drives pysyncobj's tick: appending,
replicating, fsyncing, applying and calling the submitters' callbacks (so those must be quick).
The state machine is called by the thread that calls `start()` while it replays, then only by the
journal's thread.
Raft is `RaftNode`'s (metadata/journal/raft.py, pysyncobj with Quire's corrections); the log is
`RocksJournal`'s (metadata/journal/log.py). The facts the docstrings cite are raft.py's.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from metadata.journal.errors import (
    JournalClosedError,
    JournalError,
    JournalFullError,
    JournalTimeoutError,
    NotLeaderError,
    PayloadTooLargeError,
)
from metadata.journal.limits import JournalLimits
from metadata.journal.log import RocksJournal
from metadata.journal.raft import RaftNode

logger = logging.getLogger(__name__)

Callback = Callable[[object, Exception | None], None]


class StateMachine(Protocol):
    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        """Apply one committed entry: from one thread at a time, in raft order, once per entry.

        Deterministic. The return value, or the exception raised, goes to the submitter.
        """


class NamesMembers(Protocol):
    """A state machine whose entries name the journal's members (optional)."""

    def members(self) -> tuple[Sequence[str], Sequence[str]] | None:
        """The (followers, observers) the applied entries name, or None if they name none. Read
        after every entry applied: return the same object while they are unchanged (cheap)."""


CATCH_UP_REPORT_SECONDS = 3.0
CATCH_UP_POLL_SECONDS = 0.005


@dataclass
class _CatchUp:
    started: float
    applied: int  # raft index applied when this node found itself behind
    reported: float
    first_entry_at: float | None = None  # when the first entry from the leader arrived


@dataclass(frozen=True)
class JournalStatus:
    is_leader: bool
    leader: str | None
    term: int
    commit_index: int
    last_applied: int
    first_index: int
    last_index: int
    entries_in_journal: int
    wal_syncs: int
    voters: tuple[str, ...] = ()  # this node's view, itself included when it votes
    observers: tuple[str, ...] | None = None  # the listed observers; None until set_members


@dataclass(frozen=True)
class _Members:
    followers: frozenset[str]
    observers: frozenset[str]


class _Submission:
    __slots__ = ("payload", "callback", "deadline", "done")

    def __init__(self, payload: bytes, callback: Callback, deadline: float):
        self.payload = payload
        self.callback = callback
        self.deadline = deadline
        self.done = False


class _Truncation:
    def __init__(self, raft_index: int):
        self.raft_index = raft_index
        self.error: Exception | None = None
        self.finished = threading.Event()


class _Install(_Truncation):
    def __init__(self, raft_index: int, raft_term: int, load: Callable[[], None]):
        super().__init__(raft_index)
        self.raft_term = raft_term
        self.load = load
        self.installed = False


class ReplicatedJournal:
    def __init__(
        self,
        *,
        journal_dir: str,
        self_address: str | None,
        partners: Sequence[str],
        state_machine: StateMachine,
        applied_index: int,
        applied_term: int = 0,
        sync: bool = True,
        password: str | None = None,
        observer_address: str | None = None,
        **limits_and_timeouts: float | int,
    ):
        """A journal node; self_address None makes an observer, which follows but never votes.

        applied_index (and applied_term) name the last entry the state machine already contains,
        from an image; 0 if none. observer_address is the "host:port" an observer is listed as in
        the voters' observer lists (see set_members). When the leader no longer has the entries
        this node lacks, wait_image_needed says from which raft index on: find an image covering
        at least that one and call install_image (fact 8). A state machine that also has
        `members()` (NamesMembers) sets the members once its entries name them.
        """
        assert applied_index >= 0 and applied_term >= 0
        if self_address is None and not partners:
            raise ValueError("an observer needs partners to follow")
        if self_address is not None and observer_address is not None:
            raise ValueError("observer_address is for observers, which have no self_address")
        if observer_address is not None:
            _check_address(observer_address)
        self.limits = JournalLimits(**limits_and_timeouts)
        self.journal_dir = journal_dir
        self.self_address = self_address
        self.partners = [p for p in partners if p != self_address]
        self.state_machine = state_machine
        self._members_named: Callable[[], object] | None = getattr(state_machine, "members", None)
        self.applied_index = applied_index
        self.applied_term = applied_term
        self.sync = sync
        self.password = password
        self.observer_address = observer_address

        self._journal: RocksJournal | None = None
        self._node: RaftNode | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self._last_applied_to_state_machine = applied_index

        self._lock = threading.Lock()  # guards _queue, _outstanding* and _truncations
        self._queue: deque[_Submission] = deque()
        self._outstanding = 0  # submissions queued or waiting; at most max_pending_submissions
        self._outstanding_bytes = 0  # their payloads; at most max_pending_bytes
        self._truncations: deque[_Truncation] = deque()
        self._installs: deque[_Install] = deque()
        # Owned by the journal's thread:
        self._waiting: dict[int, _Submission] = {}  # id -> submission, in submission order
        self._known_leader: object = None
        self._last_keepalive = 0.0
        self._leader_changed = threading.Condition()
        self._pending_members: _Members | None = None  # guarded by _lock
        self._voters: tuple[str, ...] = tuple(
            sorted({*self.partners, *([self_address] if self_address else [])})
        )
        self._observers: tuple[str, ...] | None = None
        self._catch_up: _CatchUp | None = None  # owned by the journal's thread
        self._applied_members: object = None  # the state machine's members() last taken
        self._image_needed = threading.Condition()
        self._image_needed_after: int | None = None  # guarded by _image_needed

    # Life cycle.

    def start(self) -> None:
        assert self._journal is None, "start() is called once"
        journal = RocksJournal(
            self.journal_dir, sync=self.sync, max_cached_bytes=self.limits.max_cached_bytes
        )
        try:
            self._align_with_image(journal)
            replayed_through = self._replay(journal)
            node = RaftNode(self, journal)
        except BaseException:
            journal.close()
            raise
        node.restart_applying_at(replayed_through)
        if self.partners:  # measured from now: how fast this node gets what it missed
            started = time.monotonic()
            self._catch_up = _CatchUp(started, replayed_through, started)
        if self.self_address is not None and not self.partners:
            node.elect_self_now()
        self._journal, self._node = journal, node
        self._thread = threading.Thread(target=self._run, name="quire-journal", daemon=True)
        self._thread.start()
        logger.info(
            "journal started at %s with %d partner(s), applied through %d",
            self.self_address or "an observer",
            len(self.partners),
            replayed_through,
        )

    def close(self) -> None:
        """Stop; what is still waiting gets JournalClosedError. Not from the journal's thread."""
        assert self._thread is not threading.current_thread(), "close() from a journal callback"
        with self._lock:
            if self._closing:
                return
            self._closing = True
        with self._image_needed:
            self._image_needed.notify_all()
        node, thread = self._node, self._thread
        if node is None:
            return
        node.wake()
        if thread is not None:
            thread.join()
        self.persist()
        node.destroy()
        with self._lock:  # submit() and truncate_through() wake the node under this lock
            node.close_wake_pipe()
            queued, self._queue = list(self._queue), deque()
            truncations, self._truncations = list(self._truncations), deque()
            truncations += self._installs
            self._installs = deque()
        for submission in [*queued, *self._waiting.values()]:
            self._complete(submission, None, JournalClosedError("the journal is closed"))
        for truncation in truncations:
            truncation.error = JournalClosedError("the journal is closed")
            truncation.finished.set()
        with self._leader_changed:
            self._leader_changed.notify_all()
        logger.info("journal at %s closed", self.self_address or "an observer")

    # Writing.

    def submit(self, payload: bytes, callback: Callback) -> None:
        """Commit payload; callback(result, None) once it is committed, on disk and applied, or
        callback(None, error) with a JournalError. The callback runs in the journal's thread (or,
        for an immediate refusal, in the caller's) and must be quick."""
        payload = bytes(payload)
        error = self._refusal(payload)
        if error is None:
            deadline = time.monotonic() + self.limits.submit_timeout
            with self._lock:
                if self._closing:
                    error = JournalClosedError("the journal is closed")
                elif (
                    self._outstanding >= self.limits.max_pending_submissions
                    or self._outstanding_bytes + len(payload) > self.limits.max_pending_bytes
                ):
                    error = JournalFullError(
                        f"{self._outstanding} submissions of {self._outstanding_bytes} bytes are "
                        f"waiting (limits {self.limits.max_pending_submissions} and "
                        f"{self.limits.max_pending_bytes} bytes)"
                    )
                else:
                    self._outstanding += 1
                    self._outstanding_bytes += len(payload)
                    self._queue.append(_Submission(payload, callback, deadline))
                    self._node.wake()
        if error is not None:
            callback(None, error)

    def _refusal(self, payload: bytes) -> JournalError | None:
        if len(payload) > self.limits.max_payload_bytes:
            return PayloadTooLargeError(
                f"payload of {len(payload)} bytes exceeds {self.limits.max_payload_bytes}"
            )
        node = self._node
        if node is None or self._closing:
            return JournalClosedError("the journal is not running")
        if not node.is_leader():
            return NotLeaderError(node.leader_address())
        return None

    def commit(self, payload: bytes, timeout: float) -> object:
        """Submit and wait. Returns the state machine's result, which is the exception it raised if
        it raised one; raises JournalError when the entry was not committed in time or at all."""
        finished = threading.Event()
        outcome: list[tuple[object, Exception | None]] = []

        def on_done(result: object, error: Exception | None) -> None:
            outcome.append((result, error))
            finished.set()

        self.submit(payload, on_done)
        if not finished.wait(timeout):
            raise JournalTimeoutError(
                f"no commit within {timeout:.3f}s; the entry may commit later"
            )
        result, error = outcome[0]
        if error is not None:
            raise error
        return result

    def truncate_through(self, raft_index: int) -> None:
        """Delete the entries up to raft_index, which an image covers. Blocks until done."""
        if self._thread is threading.current_thread():
            self._truncate(raft_index)
            return
        truncation = _Truncation(raft_index)
        with self._lock:
            if self._closing or self._node is None:
                raise JournalClosedError("the journal is not running")
            self._truncations.append(truncation)
            self._node.wake()
        if not truncation.finished.wait(self.limits.submit_timeout):
            raise JournalTimeoutError(f"truncation through {raft_index} did not finish in time")
        if truncation.error is not None:
            raise truncation.error

    def install_image(self, raft_index: int, raft_term: int, load: Callable[[], None]) -> bool:
        """Restart this node's journal after an image of the committed state through raft_index,
        for a node that lacks entries the leader no longer has (fact 8). In the journal's thread,
        between two entries: load() must put the image into the state machine; then every entry
        is dropped and applying resumes after raft_index. Blocks until done. False (and load() is
        not called) when the node has entries through raft_index by then."""
        install = _Install(raft_index, raft_term, load)
        with self._lock:
            if self._closing or self._node is None:
                raise JournalClosedError("the journal is not running")
            self._installs.append(install)
            self._node.wake()
        if not install.finished.wait(self.limits.submit_timeout):
            raise JournalTimeoutError(
                f"installing the image at {raft_index} did not finish in time"
            )
        if install.error is not None:
            raise install.error
        return install.installed

    def run_installs(self) -> None:
        with self._lock:
            installs, self._installs = list(self._installs), deque()
        for install in installs:
            try:
                install.installed = self._install(install)
                with self._image_needed:
                    if (self._image_needed_after or 0) <= install.raft_index:
                        self._image_needed_after = None
            except Exception as error:
                logger.exception("installing the image at %d failed", install.raft_index)
                install.error = error
            install.finished.set()

    def _install(self, install: _Install) -> bool:
        node, journal = self._node, self._journal
        if journal.last_index >= install.raft_index:
            return False
        # Every entry this node holds is older than the image, which covers only committed ones:
        # dropping them loses nothing the cluster counted on.
        if node.is_leader():
            raise JournalError("the leader does not install images")
        install.load()
        journal.reset(install.raft_index, install.raft_term)
        node.restart_applying_at(install.raft_index)
        self._last_applied_to_state_machine = install.raft_index
        self._follow_state_machine_members()
        logger.info(
            "journal restarted after the image at raft index %d (term %d)",
            install.raft_index,
            install.raft_term,
        )
        return True

    def needs_image(self, first_index: int) -> None:
        with self._image_needed:
            if self._image_needed_after != first_index:
                self._image_needed_after = first_index
                self._image_needed.notify_all()

    def wait_image_needed(self, timeout: float) -> int | None:
        """The raft index an image must cover for this node to follow the leader again, once the
        leader no longer has the entries it lacks; None if none is needed within timeout."""
        with self._image_needed:
            self._image_needed.wait_for(
                lambda: self._image_needed_after is not None or self._closing, timeout
            )
            return self._image_needed_after

    # Membership (fact 9).

    def set_members(self, followers: Sequence[str], observers: Sequence[str]) -> None:
        """Make the voters `followers` ("host:port"; this node's own address is ignored) and allow
        the non-voting nodes listed in `observers`, from the next tick on. Idempotent; may be
        called from any thread and before start(). Change one voter at a time, each committed
        before the next. Once the state machine names members, its `members()` take over.
        """
        followers_set = frozenset(_check_address(address) for address in followers)
        observers_set = frozenset(_check_address(address) for address in observers)
        if len(followers_set) + len(observers_set) > self.limits.max_members:
            raise ValueError(
                f"{len(followers_set)} followers and {len(observers_set)} observers exceed "
                f"max_members {self.limits.max_members}"
            )
        if followers_set & observers_set:
            raise ValueError(
                f"{', '.join(sorted(followers_set & observers_set))} cannot be both a follower "
                "and an observer"
            )
        if self.self_address is None and not followers_set:
            raise ValueError("an observer needs followers to follow")
        node = self._node
        if (
            self.self_address is not None
            and self.self_address not in followers_set
            and node is not None
            and node.is_leader()
        ):
            raise JournalError(
                f"{self.self_address} leads the journal and cannot drop itself from the "
                "followers: transfer leadership first"
            )
        with self._lock:
            self._pending_members = _Members(followers_set, observers_set)
            if node is not None and not self._closing:
                node.wake()

    def apply_pending_members(self) -> None:
        """In the journal's thread, at the start of a tick."""
        with self._lock:
            members, self._pending_members = self._pending_members, None
        if members is None:
            return
        node = self._node
        if self.self_address is not None and self.self_address not in members.followers:
            if node.is_leader():
                logger.error(
                    "ignoring a member set without %s, which leads the journal", self.self_address
                )
                return
            logger.warning("%s is no longer among the journal's voters", self.self_address)
        node.change_voters(members.followers)
        node.allow_observers(members.observers)
        voters = set(members.followers)
        if self.self_address is not None:
            voters.add(self.self_address)  # a dropped node still counts itself while it runs
        self._voters = tuple(sorted(voters))
        self._observers = tuple(sorted(members.observers))

    # Reading.

    def wait_leader(self, timeout: float) -> bool:
        """Wait until this node knows a leader (itself included); False on timeout."""
        if self._node is None:
            raise JournalClosedError("the journal is not started")
        with self._leader_changed:
            return (
                self._leader_changed.wait_for(
                    lambda: self._closing or self._node.leader_address() is not None, timeout
                )
                and not self._closing
            )

    def wait_caught_up(self, timeout: float) -> bool:
        """After wait_leader: wait until this node has applied what it knows to be committed: its
        whole journal if it leads (a restart may find its commit index behind what it had
        acknowledged), else the leader's commit index. False on timeout."""
        node, journal = self._node, self._journal
        if node is None:
            raise JournalClosedError("the journal is not started")
        target = journal.last_index if node.is_leader() else node.leader_commit_index
        deadline = time.monotonic() + timeout
        while node.last_applied < (target or 0):
            if self._closing or time.monotonic() > deadline:
                return False
            time.sleep(CATCH_UP_POLL_SECONDS)
        return True

    def term_at(self, raft_index: int) -> int | None:
        """The term of a committed entry still in the journal (thread-safe: reads RocksDB)."""
        journal = self._journal
        assert journal is not None, "start() first"
        if raft_index == journal.base_index:
            return journal.base_term
        if (
            not journal.base_index
            < raft_index
            <= min(journal.commit_index, journal.durable_last_index)
        ):
            return None
        return journal._read_entry(raft_index)[2]

    def is_leader(self) -> bool:
        """pysyncobj's leader flag (cheap: asked for every statement). Route writes by has_quorum."""
        node = self._node
        assert node is not None, "start() first"
        return node.is_leader()

    def has_quorum(self) -> bool:
        """Whether this node leads and a majority of voters answered it within half of
        leader_fallback_timeout: writes are routed by this, not by pysyncobj's leader flag, which a
        leader cut off from the majority keeps for leader_fallback_timeout."""
        node = self._node
        assert node is not None, "start() first"
        return node.has_quorum(self.limits.leader_fallback_timeout / 2)

    def status(self) -> JournalStatus:
        node, journal = self._node, self._journal
        assert node is not None and journal is not None, "start() first"
        return JournalStatus(
            is_leader=node.is_leader(),
            leader=node.leader_address(),
            term=node.term,
            commit_index=node.commit_index,
            last_applied=node.last_applied,
            first_index=journal.first_index,
            last_index=journal.last_index,
            entries_in_journal=journal.entry_count,
            wal_syncs=journal.wal_syncs,
            voters=self._voters,
            observers=self._observers,
        )

    # Start-up.

    def _align_with_image(self, journal: RocksJournal) -> None:
        applied = self.applied_index
        if applied > journal.last_index:
            if journal.entry_count:  # entries the image skips past: lost, or an older journal
                logger.warning(
                    "the image at %d is newer than the journal (last entry %d): restarting after it",
                    applied,
                    journal.last_index,
                )
            else:  # a node that joined, or whose journal the image covers: as expected
                logger.info("the journal starts after the image at %d", applied)
            journal.reset(applied, self.applied_term)
        elif applied < journal.base_index:
            raise JournalError(
                f"the journal starts at entry {journal.first_index} but the image covers only "
                f"{applied}: load a newer image"
            )
        elif applied > journal.commit_index:
            journal.setRaftCommitIndex(applied)  # the image only covers committed entries
            journal.flush()
        if journal.commit_index > journal.last_index:
            raise JournalError(
                f"journal {self.journal_dir} is damaged: commit index {journal.commit_index} "
                f"is past its last entry {journal.last_index}"
            )

    def _replay(self, journal: RocksJournal) -> int:
        first, last = self.applied_index + 1, journal.commit_index
        total = last - first + 1
        if total <= 0:
            return self.applied_index
        logger.info("replaying journal entries %d..%d into the state machine", first, last)
        started = reported = time.monotonic()
        step = max(total // 10, 1)
        for done, (raft_index, payload) in enumerate(journal.payloads(first, last), start=1):
            if payload is not None:
                self.apply_entry(raft_index, payload)
            now = time.monotonic()
            if done < total and (done % step == 0 or now - reported > 3.0):
                logger.info("replayed %d/%d entries", done, total)
                reported = now
        assert self._last_applied_to_state_machine <= last
        logger.info("replayed %d/%d entries in %.2fs", total, total, time.monotonic() - started)
        return last

    # The journal's thread. The methods RaftNode calls, here and above, are raft.RaftHost's.

    def _run(self) -> None:
        node, period = self._node, self.limits.tick_period
        while not self._closing:
            # Committed entries left to apply (applying is bounded per tick): do not wait for I/O.
            behind = node.commit_index > node.last_applied
            try:
                node.tick(0.0 if behind else period)
            except Exception:
                logger.exception("journal tick failed")
                time.sleep(period)

    @property
    def catching_up(self) -> bool:
        return self._catch_up is not None

    def report_catch_up(self, applied: int, leader_commit: int | None) -> None:
        """Log a node's progress while it is far behind the leader, and its rate once it is not."""
        if leader_commit is None:
            return  # no leader heard from yet
        behind = leader_commit - applied
        now = time.monotonic()
        if self._catch_up is None:
            if behind >= self.limits.catch_up_report_entries:
                self._catch_up = _CatchUp(now, applied, now, first_entry_at=now)
                logger.info("catching up with the leader: %d entries behind", behind)
            return
        if behind > 0:
            if now - self._catch_up.reported >= CATCH_UP_REPORT_SECONDS:
                self._catch_up.reported = now
                logger.info(
                    "catching up: %d entries applied, %d to go",
                    applied - self._catch_up.applied,
                    behind,
                )
            return
        catch_up, self._catch_up = self._catch_up, None
        count = applied - catch_up.applied
        if count == 0:
            logger.info("in step with the leader at raft index %d", applied)
            return
        elapsed = now - (catch_up.first_entry_at or catch_up.started)
        logger.info(
            "caught up with the leader at raft index %d: %d entries in %.2f s from the first "
            "received (%.0f entries/s)",
            applied,
            count,
            elapsed,
            count / max(elapsed, 1e-6),
        )

    def entries_received(self) -> None:
        """The leader sent entries: a catch-up's rate is measured from the first."""
        catch_up = self._catch_up
        if catch_up is not None and catch_up.first_entry_at is None:
            catch_up.first_entry_at = time.monotonic()
            logger.info(
                "first entries from the leader %.2f s after the journal started",
                catch_up.first_entry_at - catch_up.started,
            )

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        assert raft_index > self._last_applied_to_state_machine, (
            f"entry {raft_index} applied after {self._last_applied_to_state_machine}"
        )
        self._last_applied_to_state_machine = raft_index
        try:
            result = self.state_machine.apply_entry(raft_index, payload)
        except Exception as error:  # deterministic refusals (say, a table that exists) are results
            logger.debug("entry %d was refused by the state machine: %s", raft_index, error)
            result = error
        self._follow_state_machine_members()
        return result

    def _follow_state_machine_members(self) -> None:
        if self._members_named is None:
            return
        members = self._members_named()
        if members is None or members is self._applied_members:
            return
        self._applied_members = members
        try:
            self.set_members(*members)
        except (ValueError, JournalError) as error:  # the change is journaled; keep the set
            logger.error("journal members not changed to %s: %s", members, error)

    def has_queued_submissions(self) -> bool:
        return bool(self._queue)

    def take_submissions(self, is_leader: bool, leader: str | None) -> None:
        """Hand queued submissions to the raft node (leader), or refuse them."""
        with self._lock:
            if not self._queue:
                return
            count = (
                min(len(self._queue), self.limits.max_batch_entries)
                if is_leader
                else len(self._queue)
            )
            batch = [self._queue.popleft() for _ in range(count)]
        for submission in batch:
            if not is_leader:
                self._complete(submission, None, NotLeaderError(leader))
                continue
            self._waiting[id(submission)] = submission
            self._node.append(submission.payload, functools.partial(self._complete, submission))
        if len(self._queue) > 0:
            self._node.wake()

    def persist(self) -> None:
        """Flush the journal: one fsync for all that was appended."""
        self._journal.flush()

    def _complete(self, submission: _Submission, result: object, error: Exception | None) -> None:
        if submission.done:
            return
        submission.done = True
        self._waiting.pop(id(submission), None)
        with self._lock:
            self._outstanding -= 1
            self._outstanding_bytes -= len(submission.payload)
            assert self._outstanding >= 0 and self._outstanding_bytes >= 0
        try:
            submission.callback(result, error)
        except Exception:
            logger.exception("a journal submitter's callback failed")

    def _expire_submissions(self) -> None:
        now = time.monotonic()
        while self._waiting:
            submission = next(iter(self._waiting.values()))
            if submission.deadline > now:
                break
            self._complete(
                submission, None, JournalTimeoutError("the entry was not committed in time")
            )

    def run_truncations(self) -> None:
        while True:
            with self._lock:
                if not self._truncations:
                    return
                truncation = self._truncations.popleft()
            try:
                self._truncate(truncation.raft_index)
            except Exception as error:
                truncation.error = error
            truncation.finished.set()

    def _truncate(self, raft_index: int) -> None:
        applied = self._node.last_applied
        if raft_index > applied:
            raise JournalError(f"cannot truncate through {raft_index}: only {applied} is applied")
        self._journal.truncate_through(raft_index)

    def before_poll(self) -> None:
        """Runs at the end of every tick, before the journal's thread waits for the network."""
        self.persist()
        self._expire_submissions()
        node = self._node
        now = time.monotonic()
        if now - self._last_keepalive >= self.limits.keepalive_period:
            self._last_keepalive = now
            node.send_keepalives()
        leader = node.leader_address()
        if leader != self._known_leader:
            self._known_leader = leader
            logger.info("journal leader: %s (term %d)", leader, node.term)
            with self._leader_changed:
                self._leader_changed.notify_all()
        if node.has_work_for_next_tick():
            node.wake()


def _check_address(address: str) -> str:
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not a host:port address")
    return address
