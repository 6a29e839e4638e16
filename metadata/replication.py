"""The replicated journal: Raft through pysyncobj, entries in RocksDB, applied to a state machine.

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

pysyncobj 0.3.17 is used through `_RaftNode`, the one place where Quire corrects it:

1. `createJournal` cannot be injected: `_journal_injected` swaps it, under a lock, only while one
   node is constructed, so that every node in a process gets its own `RocksJournal`.
2. Its journal is a list by position: `RocksJournal` serves positions, negative positions and
   slices over RocksDB, with the entry an image covers at position 0.
3. Its file journal never fsyncs: `RocksJournal` groups fsyncs, and syncs term and vote at once.
4. Its compaction keeps snapshots in memory only and would drop journal entries: it is disabled;
   images are Quire's and `truncate_through` follows them; applying restarts at the image's index.
5. A late success ack moved the leader's nextIndex back, and followers then deleted entries they
   had applied: nextIndex never moves back on success, and a follower skips the entries it already
   holds and never deletes at or below its commit index (`skip_known_entries`).
6. The first vote after a leader dies went over an idle connection that pysyncobj drops on use:
   every node pings its peers, and reconnects quickly.
7. Batching made a commit wait for the next tick or append period: the journal's thread is woken
   on submit and after appending, and new entries go to followers at once.
8. A pysyncobj snapshot would be serialized in the tick thread: none is ever made. A follower
   whose next entry is older than the leader's first one needs an image: the leader keeps it
   quiet with heartbeats marked `NEEDS_IMAGE`, the follower's `on_needs_image` fetches an image
   over HTTP (the FE, not Raft) and `install_image` restarts the journal after it. Applying is
   bounded per tick in entries and time, so heartbeats keep flowing.
9. Membership comes from Quire's catalog, not from pysyncobj's membership entries (disabled, and
   skipped on replay): every node applies the catalog's AddFrontend/DropFrontend operations and
   calls `set_members`, which takes effect in the journal's thread at the next tick. Voters added
   start at nextIndex = last + 1 and matchIndex 0; removed ones leave the quorum at once. Callers
   must change one voter at a time and commit each change before the next (single-server changes:
   any two majorities of the old and new sets overlap); the leader refuses to drop itself.
10. pysyncobj accepts any incoming non-voting connection as a read-only node. Once `set_members`
   has named the observers, a non-voting peer must announce a listed address, from that address's
   host, as its first message, or is disconnected. With a cluster password, strangers are refused
   earlier by the encryption.
11. Messages were pickled with protocol 2, where every entry's bytes became a latin-1 string
   rebuilt by a function call on arrival (1.3 us per entry each way, most of a new node's catch-up
   cost): connections pickle with the highest protocol (`_MessagePickle`). Messages hold builtin
   values only, so they are unpickled without any global: even a holder of the cluster password
   cannot make a message run code. pysyncobj would also unpickle split entries ("transmission"
   messages) and its membership and code-version commands, none of which Quire makes: they are
   refused.
12. A follower that was paused or cut off (SIGSTOP, a long GC, a partition) called an election
   with a higher term the moment it came back, and the healthy leader stepped down for it: writes
   in flight failed. Elections are preceded by a pre-vote (Raft thesis 9.6): a node whose election
   timeout passed first asks the voters whether they would vote for it, without raising its term;
   a voter says yes only if the candidate's log is up to date and it has not heard from a leader
   for raft_min_timeout (a leader never says yes). Only with a majority of yeses does pysyncobj
   start the election.
13. pysyncobj buffered a frame of any size its length header announced (up to 2 GB), before any
   check, copying the buffer on every read in the journal's thread: a stranger streaming 31 MB
   slowed every commit for seconds. Connections accepted by `_Server` are `_Connection`s, which
   check the header before buffering a frame, and so are the connections this node opens: a frame
   over `max_frame_bytes`, or over `max_unauthenticated_frame_bytes` before a first message
   authenticated the connection, drops it, as does not finishing the handshake (authenticating
   and naming itself) within `handshake_timeout` on an incoming connection.
"""

from __future__ import annotations

import contextlib
import functools
import io
import ipaddress
import logging
import os
import pickle
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import pysyncobj.syncobj
import pysyncobj.tcp_connection
from pysyncobj import SyncObj, SyncObjConf
from pysyncobj.config import FAIL_REASON
from pysyncobj.dns_resolver import globalDnsResolver
from pysyncobj.monotonic import monotonic as raft_clock
from pysyncobj.node import Node, TCPNode
from pysyncobj.pipe_notifier import PipeNotifier
from pysyncobj.poller import POLL_EVENT_TYPE
from pysyncobj.tcp_connection import TcpConnection
from pysyncobj.tcp_server import TcpServer
from pysyncobj.transport import TCPTransport

from metadata.journal import NO_OP_COMMAND, REGULAR_COMMAND, RocksJournal

logger = logging.getLogger(__name__)


class _MessageUnpickler(pickle.Unpickler):
    """Journal messages hold builtin values only (fact 11): no global is ever looked up."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"a journal message may not refer to {module}.{name}")


class _MessagePickle:
    """What pysyncobj's connections serialise messages with (fact 11). Messages are unpickled only
    after the cluster password's encryption has authenticated them, and never run code."""

    dumps = functools.partial(pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def loads(data: bytes) -> object:
        return _MessageUnpickler(io.BytesIO(data)).load()


pysyncobj.tcp_connection.pickle = _MessagePickle

Callback = Callable[[object, Exception | None], None]

KEEPALIVE_MESSAGE = "quire_keepalive"
# An observer's first message, naming the address it is listed as.
OBSERVER_HELLO_MESSAGE = "quire_observer"
# Marks the leader's heartbeats to a node that needs entries the leader no longer has (fact 8).
NEEDS_IMAGE = "quire_needs_image"
PRE_VOTE = "quire_pre_vote"  # fact 12
PRE_VOTE_GRANTED = "quire_pre_vote_granted"


class StateMachine(Protocol):
    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        """Apply one committed entry: from one thread at a time, in raft order, once per entry.

        Deterministic. The return value, or the exception raised, goes to the submitter.
        """


class JournalError(Exception):
    """The journal could not take or commit an entry."""


class NotLeaderError(JournalError):
    def __init__(self, leader: str | None, detail: str = "this node is not the journal leader"):
        super().__init__(f"{detail} (leader: {leader or 'unknown'})")
        self.leader = leader


class JournalFullError(JournalError):
    """Too many submissions are waiting; retry later."""


class PayloadTooLargeError(JournalError):
    pass


class JournalTimeoutError(JournalError):
    """No outcome in time; the entry may still commit later."""


class JournalClosedError(JournalError):
    pass


CATCH_UP_REPORT_SECONDS = 3.0
CATCH_UP_POLL_SECONDS = 0.005


@dataclass
class _CatchUp:
    started: float
    applied: int  # raft index applied when this node found itself behind
    reported: float


@dataclass(frozen=True)
class JournalLimits:
    """Every bound and timeout of the journal; passed to ReplicatedJournal as keyword arguments."""

    max_payload_bytes: int = 1 << 20
    max_pending_submissions: int = 10_000  # queued plus waiting for commit
    max_pending_bytes: int = 64 << 20  # their payloads
    max_batch_entries: int = 1024  # entries the leader appends per tick
    max_apply_entries: int = 4096  # entries applied per tick
    apply_budget_seconds: float = 0.05  # time spent applying per tick
    submit_timeout: float = 30.0
    max_cached_bytes: int = 64 << 20  # newest entries kept in memory besides RocksDB
    tick_period: float = 0.05  # longest sleep of the journal's thread
    append_entries_period: float = 0.1  # heartbeat
    # Election timeouts: generous, since a Python tick thread can be starved of the GIL or CPU for
    # a good fraction of a second on a busy machine. A one-node cluster elects itself at once.
    raft_min_timeout: float = 1.0
    raft_max_timeout: float = 2.0
    leader_fallback_timeout: float = 4.0  # a leader no majority answered for that long steps down
    connection_timeout: float = 4.0
    connection_retry_time: float = 0.5
    keepalive_period: float = 1.0
    bind_retries: int = 3
    catch_up_report_entries: int = 1000  # a node this far behind logs its progress and rate
    max_members: int = 64  # followers plus observers named in set_members
    max_unidentified_observers: int = 16  # non-voting connections waiting for their first message
    # Fact 13: the largest frame a connection reads, and before a first authenticated message.
    max_frame_bytes: int = 32 << 20
    max_unauthenticated_frame_bytes: int = 64 << 10
    handshake_timeout: float = 5.0  # an incoming connection authenticates and names itself by then
    max_unknown_connections: int = 64  # incoming connections that have not named themselves yet

    def __post_init__(self) -> None:
        rules = {
            "max_payload_bytes > 0": self.max_payload_bytes > 0,
            "0 < max_batch_entries <= max_pending_submissions": (
                0 < self.max_batch_entries <= self.max_pending_submissions
            ),
            "max_apply_entries > 0": self.max_apply_entries > 0,
            "apply_budget_seconds > 0": self.apply_budget_seconds > 0,
            "submit_timeout > 0": self.submit_timeout > 0,
            "max_pending_bytes >= max_payload_bytes": (
                self.max_pending_bytes >= self.max_payload_bytes
            ),
            "max_cached_bytes > 0": self.max_cached_bytes > 0,
            "tick_period > 0": self.tick_period > 0,
            "raft_min_timeout > 3 * append_entries_period": (
                self.raft_min_timeout > 3 * self.append_entries_period
            ),
            "raft_max_timeout > raft_min_timeout": self.raft_max_timeout > self.raft_min_timeout,
            "leader_fallback_timeout > append_entries_period": (
                self.leader_fallback_timeout > self.append_entries_period
            ),
            "connection_timeout >= raft_max_timeout": (
                self.connection_timeout >= self.raft_max_timeout
            ),
            "0 < keepalive_period < connection_timeout": (
                0 < self.keepalive_period < self.connection_timeout
            ),
            "bind_retries > 0": self.bind_retries > 0,
            "max_members > 0": self.max_members > 0,
            "max_unidentified_observers > 0": self.max_unidentified_observers > 0,
            # An append_entries message: a batch, the entry that crossed its end, their framing.
            "max_frame_bytes >= 2 * (append_entries_batch_bytes + max_payload_bytes)": (
                self.max_frame_bytes
                >= 2 * (self.append_entries_batch_bytes + self.max_payload_bytes)
            ),
            "0 < max_unauthenticated_frame_bytes <= max_frame_bytes": (
                0 < self.max_unauthenticated_frame_bytes <= self.max_frame_bytes
            ),
            "handshake_timeout > 0": self.handshake_timeout > 0,
            "max_unknown_connections > 0": self.max_unknown_connections > 0,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"journal limits must satisfy: {', '.join(broken)}")

    @property
    def append_entries_batch_bytes(self) -> int:
        # Above the largest entry, so that pysyncobj never splits one ("transmission"), which it
        # does wrongly; a message carries at most about twice this.
        return 2 * self.max_payload_bytes + 1024


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
        on_needs_image: Callable[[int], None] | None = None,
        **limits_and_timeouts: float | int,
    ):
        """A journal node; self_address None makes an observer, which follows but never votes.

        applied_index (and applied_term) name the last entry the state machine already contains,
        from an image; 0 if none. observer_address is the "host:port" an observer is listed as in
        the voters' observer lists (see set_members). on_needs_image(first_index) is called, in
        the journal's thread, when the leader no longer has the entries this node lacks: it should
        find an image covering at least first_index and call install_image (fact 8).
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
        self.applied_index = applied_index
        self.applied_term = applied_term
        self.sync = sync
        self.password = password
        self.observer_address = observer_address
        self.on_needs_image = on_needs_image

        self._journal: RocksJournal | None = None
        self._node: _RaftNode | None = None
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

    # Life cycle.

    def start(self) -> None:
        assert self._journal is None, "start() is called once"
        journal = RocksJournal(
            self.journal_dir, sync=self.sync, max_cached_bytes=self.limits.max_cached_bytes
        )
        try:
            self._align_with_image(journal)
            replayed_through = self._replay(journal)
            node = _RaftNode(self, journal, self._sync_obj_conf())
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
        node, thread = self._node, self._thread
        if node is None:
            return
        node.wake()
        if thread is not None:
            thread.join()
        self._persist()
        node._doDestroy()  # closes the transport and the journal
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
        if not node._isLeader():
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

    def _run_installs(self) -> None:
        with self._lock:
            installs, self._installs = list(self._installs), deque()
        for install in installs:
            try:
                install.installed = self._install(install)
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
        if node._isLeader():
            raise JournalError("the leader does not install images")
        install.load()
        journal.reset(install.raft_index, install.raft_term)
        node.restart_applying_at(install.raft_index)
        self._last_applied_to_state_machine = install.raft_index
        logger.info(
            "journal restarted after the image at raft index %d (term %d)",
            install.raft_index,
            install.raft_term,
        )
        return True

    def _needs_image(self, first_index: int) -> None:
        if self.on_needs_image is not None:
            self.on_needs_image(first_index)

    # Membership (fact 9).

    def set_members(self, followers: Sequence[str], observers: Sequence[str]) -> None:
        """Make the voters `followers` ("host:port"; this node's own address is ignored) and allow
        the non-voting nodes listed in `observers`, from the next tick on. Idempotent; may be
        called from any thread, the journal's own (a state machine's apply_entry) included, and
        before start(). Change one voter at a time, each committed before the next.
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
            and node._isLeader()
        ):
            raise JournalError(
                f"{self.self_address} leads the journal and cannot drop itself from the "
                "followers: transfer leadership first"
            )
        with self._lock:
            self._pending_members = _Members(followers_set, observers_set)
            if node is not None and not self._closing:
                node.wake()

    def _apply_pending_members(self) -> None:
        """In the journal's thread, at the start of a tick."""
        with self._lock:
            members, self._pending_members = self._pending_members, None
        if members is None:
            return
        node = self._node
        if self.self_address is not None and self.self_address not in members.followers:
            if node._isLeader():
                logger.error(
                    "ignoring a member set without %s, which leads the journal", self.self_address
                )
                return
            logger.warning("%s is no longer among the journal's voters", self.self_address)
        node.change_voters(members.followers)
        node.transport.set_allowed_observers(members.observers)
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
        target = journal.last_index if node._isLeader() else node._SyncObj__leaderCommitIndex
        deadline = time.monotonic() + timeout
        while node.raftLastApplied < (target or 0):
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
        return node._isLeader()

    def has_quorum(self) -> bool:
        """Whether this node leads and a majority of voters answered it within half of
        leader_fallback_timeout: writes are routed by this, not by pysyncobj's leader flag, which a
        leader cut off from the majority keeps for leader_fallback_timeout."""
        node = self._node
        assert node is not None, "start() first"
        if not node._isLeader():
            return False
        others = list(node._SyncObj__otherNodes)
        answered = dict(node._SyncObj__lastResponseTime)
        deadline = raft_clock() - self.limits.leader_fallback_timeout / 2
        count = 1 + sum(1 for other in others if answered.get(other, 0) > deadline)
        return count > (len(others) + 1) / 2

    def status(self) -> JournalStatus:
        node, journal = self._node, self._journal
        assert node is not None and journal is not None, "start() first"
        return JournalStatus(
            is_leader=node._isLeader(),
            leader=node.leader_address(),
            term=node.raftCurrentTerm,
            commit_index=node.raftCommitIndex,
            last_applied=node.raftLastApplied,
            first_index=journal.first_index,
            last_index=journal.last_index,
            entries_in_journal=journal.entry_count,
            wal_syncs=journal.wal_syncs,
            voters=self._voters,
            observers=self._observers,
        )

    # Start-up.

    def _sync_obj_conf(self) -> SyncObjConf:
        limits = self.limits
        return SyncObjConf(
            autoTick=False,  # the journal's thread ticks, so nothing runs before start() is done
            password=self.password,
            commandsQueueSize=limits.max_pending_submissions,
            appendEntriesUseBatch=True,
            appendEntriesPeriod=limits.append_entries_period,
            appendEntriesBatchSizeBytes=limits.append_entries_batch_bytes,
            raftMinTimeout=limits.raft_min_timeout,
            raftMaxTimeout=limits.raft_max_timeout,
            leaderFallbackTimeout=limits.leader_fallback_timeout,
            connectionTimeout=limits.connection_timeout,
            connectionRetryTime=limits.connection_retry_time,
            bindAddress=self.self_address,
            bindRetryTime=0.1,
            maxBindRetries=limits.bind_retries,
            journalFile=None,
            fullDumpFile=None,
            useFork=False,
            dynamicMembershipChange=False,
        )

    def _align_with_image(self, journal: RocksJournal) -> None:
        applied = self.applied_index
        if applied > journal.last_index:
            logger.warning(
                "the image at %d is newer than the journal (last entry %d): restarting after it",
                applied,
                journal.last_index,
            )
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
        for done, (command, raft_index, _term) in enumerate(journal.entries(first, last), start=1):
            if command[:1] == REGULAR_COMMAND:
                self._apply_entry(raft_index, command[1:])
            now = time.monotonic()
            if done < total and (done % step == 0 or now - reported > 3.0):
                logger.info("replayed %d/%d entries", done, total)
                reported = now
        assert self._last_applied_to_state_machine <= last
        logger.info("replayed %d/%d entries in %.2fs", total, total, time.monotonic() - started)
        return last

    # The journal's thread.

    def _run(self) -> None:
        node, period = self._node, self.limits.tick_period
        while not self._closing:
            # Committed entries left to apply (applying is bounded per tick): do not wait for I/O.
            behind = node._SyncObj__raftCommitIndex > node._SyncObj__raftLastApplied
            try:
                node._onTick(0.0 if behind else period)
            except Exception:
                logger.exception("journal tick failed")
                time.sleep(period)

    def _report_catch_up(self, applied: int, leader_commit: int | None) -> None:
        """Log a node's progress while it is far behind the leader, and its rate once it is not."""
        if leader_commit is None:
            return  # no leader heard from yet
        behind = leader_commit - applied
        now = time.monotonic()
        if self._catch_up is None:
            if behind >= self.limits.catch_up_report_entries:
                self._catch_up = _CatchUp(now, applied, now)
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
        count, elapsed = applied - self._catch_up.applied, now - self._catch_up.started
        self._catch_up = None
        if count == 0:
            logger.info("in step with the leader at raft index %d", applied)
            return
        logger.info(
            "caught up with the leader at raft index %d: %d entries in %.2f s (%.0f entries/s)",
            applied,
            count,
            elapsed,
            count / max(elapsed, 1e-6),
        )

    def _apply_entry(self, raft_index: int, payload: bytes) -> object:
        assert raft_index > self._last_applied_to_state_machine, (
            f"entry {raft_index} applied after {self._last_applied_to_state_machine}"
        )
        self._last_applied_to_state_machine = raft_index
        try:
            return self.state_machine.apply_entry(raft_index, payload)
        except Exception as error:  # deterministic refusals (say, a table that exists) are results
            logger.debug("entry %d was refused by the state machine: %s", raft_index, error)
            return error

    def _take_submissions(self, is_leader: bool, leader: str | None) -> None:
        """Hand queued submissions to pysyncobj (leader), or refuse them."""
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
            self._node._applyCommand(
                REGULAR_COMMAND + submission.payload,
                functools.partial(self._on_raft_outcome, submission),
            )
        if len(self._queue) > 0:
            self._node.wake()

    def _on_raft_outcome(self, submission: _Submission, result: object, reason: int) -> None:
        if reason == FAIL_REASON.SUCCESS:
            # Committed: on the disks of a majority, this leader's included (it flushes what it
            # appended before it counts its own log). The commit index reaches the disk with the
            # next flush; a restart that finds it behind learns it again before serving.
            self._complete(submission, result, None)
        elif reason in (FAIL_REASON.DISCARDED, FAIL_REASON.NOT_LEADER, FAIL_REASON.LEADER_CHANGED):
            self._complete(
                submission, None, NotLeaderError(self._node.leader_address(), "leadership changed")
            )
        else:
            self._complete(
                submission, None, JournalError(f"pysyncobj refused the entry (reason {reason})")
            )

    def _persist(self) -> None:
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

    def _run_truncations(self) -> None:
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
        applied = self._node.raftLastApplied
        if raft_index > applied:
            raise JournalError(f"cannot truncate through {raft_index}: only {applied} is applied")
        self._journal.truncate_through(raft_index)

    def _before_poll(self) -> None:
        """Runs at the end of every tick, before the journal's thread waits for the network."""
        self._persist()
        self._expire_submissions()
        node = self._node
        now = time.monotonic()
        if now - self._last_keepalive >= self.limits.keepalive_period:
            self._last_keepalive = now
            node.send_keepalives()
        leader = node.leader_address()
        if leader != self._known_leader:
            self._known_leader = leader
            logger.info("journal leader: %s (term %d)", leader, node.raftCurrentTerm)
            with self._leader_changed:
                self._leader_changed.notify_all()
        if node.has_work_for_next_tick():
            node.wake()


def _check_address(address: str) -> str:
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not a host:port address")
    return address


@contextlib.contextmanager
def _journal_injected(journal: RocksJournal) -> Iterator[None]:
    """Make SyncObj's constructor take journal (fact 1), for the duration of one construction."""
    with _journal_injection_lock:
        original = pysyncobj.syncobj.createJournal
        pysyncobj.syncobj.createJournal = lambda journal_file=None: journal
        try:
            yield
        finally:
            pysyncobj.syncobj.createJournal = original


_journal_injection_lock = threading.Lock()


def skip_known_entries(message: dict, journal: RocksJournal, commit_index: int) -> dict | None:
    """An append_entries message without the entries the follower already holds (fact 5).

    pysyncobj deletes everything after the message's prevLogIdx before appending, so a stale or
    repeated message made a follower delete entries it already held, applied ones included. Raft
    deletes only from the first conflicting entry: this drops the leading entries that match the
    follower's log and, when nothing new is left, moves prevLogIdx to the last entry known to be
    in the leader's log: a committed one, or any if the follower's last entry has the leader's term
    (a term has one leader, whose log keeps what it sent). Returns None to drop a message that would
    replace committed entries.
    """
    prev_index, prev_term = message["prevLogIdx"], message["prevLogTerm"]
    if journal.term_at(prev_index) != prev_term:
        return message  # pysyncobj answers with the index to resend from
    entries = message["entries"]
    skipped = 0
    for _command, raft_index, term in entries:
        assert raft_index == prev_index + 1, "append_entries carries consecutive entries"
        if journal.term_at(raft_index) != term:
            break
        prev_index, prev_term = raft_index, term
        skipped += 1
    rest = entries[skipped:]
    if rest and rest[0][1] <= journal.last_index and rest[0][1] <= commit_index:
        logger.critical(
            "the leader of term %d sent entry %d, conflicting with a committed one (commit %d)",
            message["term"],
            rest[0][1],
            commit_index,
        )
        return None
    if not rest and prev_index < journal.last_index:
        known = (
            journal.last_index
            if journal.last_term == message["term"]
            else min(commit_index, journal.last_index)
        )
        if known > prev_index:
            prev_index, prev_term = known, journal.term_at(known)
    if prev_index == message["prevLogIdx"]:
        return message
    return {**message, "prevLogIdx": prev_index, "prevLogTerm": prev_term, "entries": rest}


class _RaftNode(SyncObj):
    """pysyncobj's SyncObj with Quire's corrections; the only code that touches its internals."""

    def __init__(self, owner: ReplicatedJournal, journal: RocksJournal, conf: SyncObjConf):
        self._owner = owner
        self._journal = journal
        self._lagging_warned: set[object] = set()
        self._wake_pending = False
        self._leader_heard_at = 0.0  # raft_clock() of the last append_entries from a leader
        self._pre_vote_term = 0  # the term a pre-vote round asks about; 0: none running
        self._pre_votes: set[object] = set()
        self._election_allowed = False  # a pre-vote round won: pysyncobj may start the election
        try:
            with _journal_injected(journal):
                super().__init__(
                    owner.self_address, owner.partners, conf, transportClass=_Transport
                )
        except ImportError as error:  # pysyncobj's message for a password without 'cryptography'
            raise JournalError(
                f"a cluster password needs the 'cryptography' package: {error}"
            ) from error
        except pysyncobj.syncobj.SyncObjException as error:
            raise JournalError(f"cannot listen on {owner.self_address}: {error}") from error
        assert self._SyncObj__raftLog is journal
        self._wake_notifier = PipeNotifier(self._poller, self._on_woken)
        self.addOnTickCallback(owner._before_poll)

    # Quire's controls.

    def restart_applying_at(self, raft_index: int) -> None:
        """The state machine holds everything up to raft_index; pysyncobj starts at 1 (fact 4)."""
        self._SyncObj__raftLastApplied = raft_index
        self._SyncObj__raftCommitIndex = max(self._journal.getRaftCommitIndex(), raft_index)

    @property
    def transport(self) -> _Transport:
        return self._SyncObj__transport

    def change_voters(self, followers: frozenset[str]) -> None:
        """Replicate to, and count the votes of, exactly these followers (fact 9)."""
        me = self._SyncObj__selfNode
        wanted = {TCPNode(address) for address in followers if me is None or address != me.id}
        others = self._SyncObj__otherNodes
        for node in others - wanted:
            others.discard(node)
            self._SyncObj__raftNextIndex.pop(node, None)
            self._SyncObj__raftMatchIndex.pop(node, None)
            self._SyncObj__lastResponseTime.pop(node, None)
            self.transport.dropNode(node)  # its connection's callbacks no longer find it
            self._SyncObj__connectedNodes.discard(node)
            self._lagging_warned.discard(node)
            logger.info("journal voter %s dropped", node.id)
        for node in wanted - others:
            others.add(node)
            self._SyncObj__raftNextIndex[node] = self._journal.last_index + 1
            self._SyncObj__raftMatchIndex[node] = 0
            if self._isLeader():
                self._SyncObj__lastResponseTime[node] = raft_clock()
            self.transport.addNode(node)
            logger.info("journal voter %s added", node.id)
        assert others == wanted

    def elect_self_now(self) -> None:
        self._SyncObj__raftElectionDeadline = 0.0  # the only voter: no need to wait for a leader

    def leader_address(self) -> str | None:
        leader = self._getLeader()
        return None if leader is None else str(leader.id)

    def wake(self) -> None:
        """Make the journal's thread tick now instead of waiting for the network (thread-safe)."""
        if self._wake_pending:
            return
        self._wake_pending = True
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_notifier.notify()

    def _on_woken(self) -> None:
        self._wake_pending = False

    def close_wake_pipe(self) -> None:
        for attribute in ("_PipeNotifier__pipeR", "_PipeNotifier__pipeW"):
            with contextlib.suppress(OSError):
                os.close(getattr(self._wake_notifier, attribute))

    def has_work_for_next_tick(self) -> bool:
        if self._SyncObj__raftCommitIndex > self._SyncObj__raftLastApplied:
            return True
        if not self._isLeader():
            return False
        if self._owner._queue:
            return True
        # The only voter commits its own entries at the next tick; nothing else will wake it.
        return (
            not self._SyncObj__otherNodes
            and self._journal.last_index > self._SyncObj__raftCommitIndex
        )

    def send_keepalives(self) -> None:
        """pysyncobj drops a connection when it sends on it after connectionTimeout without reading
        anything: the first vote request after a leader died was lost that way (fact 6)."""
        transport = self._SyncObj__transport
        for node in list(self._SyncObj__connectedNodes):
            transport.send(node, {"type": KEEPALIVE_MESSAGE})

    # The tick.

    def _onTick(self, timeToWait: float = 0.0) -> None:
        self._pre_vote_if_due()
        self._owner._apply_pending_members()
        # A leader counts its own log toward commit: what it appended must be on disk first.
        self._owner._persist()
        self._owner._run_truncations()
        self._owner._run_installs()
        super()._onTick(timeToWait)
        if self._election_allowed and self._SyncObj__raftCurrentTerm >= self._pre_vote_term:
            self._election_allowed, self._pre_vote_term = False, 0  # pysyncobj started it

    # Pre-vote (fact 12).

    def _pre_vote_if_due(self) -> None:
        """Before pysyncobj's tick: when the election timeout has passed, hold its election back and
        ask the voters first."""
        if (
            self._SyncObj__selfNode is None
            or self._isLeader()
            or self._election_allowed
            or self._SyncObj__raftElectionDeadline >= raft_clock()
        ):
            return
        self._SyncObj__raftElectionDeadline = raft_clock() + self._SyncObj__generateRaftTimeout()
        self._pre_vote_term = self._SyncObj__raftCurrentTerm + 1
        self._pre_votes = {self._SyncObj__selfNode}
        message = {
            "type": PRE_VOTE,
            "term": self._pre_vote_term,
            "last_log_index": self._journal.last_index,
            "last_log_term": self._journal.last_term,
        }
        for node in self._SyncObj__otherNodes:
            self._SyncObj__transport.send(node, message)
        self._count_pre_votes()

    def _count_pre_votes(self) -> None:
        if len(self._pre_votes) > (len(self._SyncObj__otherNodes) + 1) / 2:
            self._election_allowed = True
            self._SyncObj__raftElectionDeadline = 0.0  # the election starts in this tick

    def _on_pre_vote(self, node: object, message: dict) -> None:
        if self._SyncObj__selfNode is None or node not in self._SyncObj__otherNodes:
            return  # observers do not vote; nor do strangers count
        if message["type"] == PRE_VOTE_GRANTED:
            # A yes that arrives after this node moved to that term (voting for another
            # candidate) is stale: counting it would start a rival election.
            stale = self._SyncObj__raftCurrentTerm >= message["term"]
            if message["term"] == self._pre_vote_term and not stale and not self._isLeader():
                self._pre_votes.add(node)
                self._count_pre_votes()
            return
        up_to_date = (message["last_log_term"], message["last_log_index"]) >= (
            self._journal.last_term,
            self._journal.last_index,
        )
        leader_heard = raft_clock() - self._leader_heard_at < self._owner.limits.raft_min_timeout
        if (
            message["term"] > self._SyncObj__raftCurrentTerm
            and up_to_date
            and not self._isLeader()
            and not leader_heard
        ):
            self._SyncObj__transport.send(node, {"type": PRE_VOTE_GRANTED, "term": message["term"]})

    def _checkCommandsToApply(self) -> None:
        last_index = self._journal.last_index
        self._owner._take_submissions(self._isLeader(), self.leader_address())
        super()._checkCommandsToApply()
        if self._journal.last_index != last_index and self._isLeader():
            # Replicate now rather than at the next append period (fact 7).
            self._SyncObj__sendAppendEntries()

    def _SyncObj__applyLogEntries(self) -> bool:
        """Apply committed entries in raft order, a bounded amount per tick (fact 8)."""
        commit, applied = self._SyncObj__raftCommitIndex, self._SyncObj__raftLastApplied
        if commit <= applied:
            if self._owner._catch_up is not None:
                self._owner._report_catch_up(applied, self._SyncObj__leaderCommitIndex)
            return False
        limits = self._owner.limits
        deadline = time.monotonic() + limits.apply_budget_seconds
        waiting_commit = self._SyncObj__commandsWaitingCommit
        count = min(commit - applied, limits.max_apply_entries)
        for command, raft_index, term in self._SyncObj__getEntries(applied + 1, count):
            assert raft_index == self._SyncObj__raftLastApplied + 1
            if command[:1] == REGULAR_COMMAND:
                result = self._owner._apply_entry(raft_index, command[1:])
            else:
                result = self._apply_pysyncobj_command(command)
            self._SyncObj__raftLastApplied = raft_index
            for waiting_term, callback in waiting_commit.pop(raft_index, ()):
                callback(
                    result, FAIL_REASON.SUCCESS if waiting_term == term else FAIL_REASON.DISCARDED
                )
            if time.monotonic() > deadline:
                break
        if not self._isLeader():
            self._owner._report_catch_up(
                self._SyncObj__raftLastApplied, self._SyncObj__leaderCommitIndex
            )
        return False

    def _apply_pysyncobj_command(self, command: bytes) -> object:
        """pysyncobj's no-op. Its membership and code-version commands, which it would unpickle,
        Quire never makes (facts 9, 11): one found in the journal is skipped."""
        if command[:1] != NO_OP_COMMAND:
            logger.error("skipped a pysyncobj command of type %d: Quire makes none", command[0])
        return None

    # Replication (facts 5, 7, 8).

    def _SyncObj__onMessageReceived(self, node: object, message: dict) -> None:
        if not isinstance(message, dict) or "transmission" in message:
            logger.warning("ignored a journal message Quire never sends: %.100r", message)
            return  # a split entry would be unpickled by pysyncobj (fact 11)
        kind = message.get("type")
        if kind in (KEEPALIVE_MESSAGE, OBSERVER_HELLO_MESSAGE):
            return
        if kind in (PRE_VOTE, PRE_VOTE_GRANTED):
            self._on_pre_vote(node, message)
            return
        if kind == "append_entries" and message["term"] >= self._SyncObj__raftCurrentTerm:
            self._leader_heard_at = raft_clock()
            self._election_allowed, self._pre_vote_term = False, 0
        if (
            message.get(NEEDS_IMAGE)
            and kind == "append_entries"
            and self._journal.last_index < message["prevLogIdx"]
        ):
            self._owner._needs_image(message["prevLogIdx"])
        if (
            kind == "append_entries"
            and "entries" in message
            and "prevLogIdx" in message
            and message["term"] >= self._SyncObj__raftCurrentTerm
        ):
            message = skip_known_entries(message, self._journal, self._SyncObj__raftCommitIndex)
            if message is None:
                return
        if kind == "next_node_idx" and message.get("success") and self._isLeader():
            next_index = self._SyncObj__raftNextIndex
            before = next_index.get(node)
            SyncObj._SyncObj__onMessageReceived(self, node, message)
            if before is not None and node in next_index and next_index[node] < before:
                next_index[node] = before  # an ack for an older batch: those after it are in flight
            return
        SyncObj._SyncObj__onMessageReceived(self, node, message)

    def _SyncObj__sendNextNodeIdx(self, node, reset=False, nextNodeIdx=None, success=False):
        # A follower acknowledges entries only once they are on its disk.
        self._owner._persist()
        SyncObj._SyncObj__sendNextNodeIdx(
            self, node, reset=reset, nextNodeIdx=nextNodeIdx, success=success
        )

    def _SyncObj__sendAppendEntries(self) -> None:
        base = self._journal.base_index
        next_index = self._SyncObj__raftNextIndex
        connected = self._SyncObj__connectedNodes
        lagging = {node for node in connected if next_index.get(node, base + 1) <= base}
        # pysyncobj would send these its own snapshot, which Quire never makes: hide them meanwhile.
        connected.difference_update(lagging)
        try:
            SyncObj._SyncObj__sendAppendEntries(self)
        finally:
            connected.update(lagging)
        self._lagging_warned &= lagging
        for node in lagging:
            self._keep_lagging_follower_quiet(node)

    def _keep_lagging_follower_quiet(self, node: object) -> None:
        if node not in self._lagging_warned:
            self._lagging_warned.add(node)
            logger.warning(
                "%s needs entry %d but the journal starts at %d: it must load an image",
                node,
                self._SyncObj__raftNextIndex.get(node),
                self._journal.first_index,
            )
        self._SyncObj__transport.send(
            node,
            {
                "type": "append_entries",
                "term": self._SyncObj__raftCurrentTerm,
                "commit_index": self._SyncObj__raftCommitIndex,
                "entries": [],
                "prevLogIdx": self._journal.base_index,
                "prevLogTerm": self._journal.base_term,
                NEEDS_IMAGE: True,
            },
        )

    # No pysyncobj snapshots (facts 4, 8): images are Quire's, and so is truncation.

    def _SyncObj__tryLogCompaction(self) -> None:
        return

    def _SyncObj__loadDumpFile(self, clearJournal: bool) -> None:
        logger.error("ignoring a pysyncobj snapshot: Quire nodes load images instead")


class _Connection(TcpConnection):
    """pysyncobj's connection, reading frames of a bounded size (fact 13)."""

    HEADER = struct.Struct("i")  # pysyncobj's length header

    def __init__(self, limits: JournalLimits, **kwargs: object):
        super().__init__(**kwargs)
        self.limits = limits
        self.authenticated = False  # a message parsed: with a password, its encryption checked
        self.handshake_deadline = time.monotonic() + limits.handshake_timeout

    def connect(self, host: str, port: int) -> bool:
        self.authenticated = False  # an outgoing connection authenticates on each connect
        return super().connect(host, port)

    def frame_limit(self) -> int:
        if self.authenticated:
            return self.limits.max_frame_bytes
        return self.limits.max_unauthenticated_frame_bytes

    def _TcpConnection__processRead(self) -> bool:
        buffer, limit = self._TcpConnection__readBuffer, self.frame_limit()
        if len(buffer) >= self.HEADER.size:
            (length,) = self.HEADER.unpack_from(buffer)
            if not 0 <= length <= limit:
                logger.warning(
                    "dropped a journal connection from %s: it announced a frame of %d bytes, "
                    "the limit is %d",
                    _peer_host(self),
                    length,
                    limit,
                )
                self.disconnect()
                return False
        if len(buffer) >= self.HEADER.size + limit:
            return False  # a whole frame is buffered: it is parsed before more is read
        return super()._TcpConnection__processRead()

    def _TcpConnection__processParseMessage(self) -> object:
        message = super()._TcpConnection__processParseMessage()
        if message is not None:
            self.authenticated = True
        return message


class _Server(TcpServer):
    """pysyncobj's server, whose connections are `_Connection`s (fact 13)."""

    def __init__(self, limits: JournalLimits, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)
        self.limits = limits

    def _TcpServer__onNewConnection(self, descr: int, event: int) -> None:
        if not event & POLL_EVENT_TYPE.READ:
            super()._TcpServer__onNewConnection(descr, event)
            return
        try:
            sock, _ = self._TcpServer__socket.accept()
        except BlockingIOError:
            return
        except OSError as error:
            logger.error("the journal port stopped accepting connections: %s", error)
            self.unbind()
            return
        send_size, receive_size = self._TcpServer__sendBufferSize, self._TcpServer__recvBufferSize
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_size)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_size)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        connection = _Connection(
            self.limits,
            poller=self._TcpServer__poller,
            socket=sock,
            timeout=self._TcpServer__connectionTimeout,
            sendBufferSize=send_size,
            recvBufferSize=receive_size,
            keepalive=self._TcpServer__keepalive,
        )
        self._TcpServer__onNewConnectionCallback(connection)


class _Transport(TCPTransport):
    """pysyncobj's TCP transport, where observers say who they are and voters check it (fact 10),
    and incoming connections have bounded frames and a handshake deadline (fact 13)."""

    def __init__(self, syncObj: _RaftNode, selfNode: TCPNode | None, otherNodes: set[TCPNode]):
        self._allowed_observers: frozenset[str] | None = None  # None: any, as pysyncobj does
        self._unidentified: dict[TcpConnection, float] = {}  # connection -> deadline
        self._observer_addresses: dict[Node, str] = {}
        super().__init__(syncObj, selfNode, otherNodes)

    def _createServer(self) -> None:
        super()._createServer()
        plain, conf = self._server, self._syncObj.conf
        self._server = _Server(
            self._syncObj._owner.limits,
            self._syncObj._poller,
            plain._TcpServer__host,
            plain._TcpServer__port,
            onNewConnection=self._onNewIncomingConnection,
            sendBufferSize=conf.sendBufferSize,
            recvBufferSize=conf.recvBufferSize,
            connectionTimeout=conf.connectionTimeout,
        )

    def addNode(self, node: TCPNode) -> None:
        super().addNode(node)
        plain, conf = self._connections.get(node), self._syncObj.conf
        if plain is None or isinstance(plain, _Connection):
            return  # the peer connects to this node
        connection = _Connection(
            self._syncObj._owner.limits,
            poller=self._syncObj._poller,
            timeout=conf.connectionTimeout,
            sendBufferSize=conf.sendBufferSize,
            recvBufferSize=conf.recvBufferSize,
            keepalive=conf.tcp_keepalive,
        )
        connection.encryptor = self._syncObj.encryptor
        connection.setOnConnectedCallback(functools.partial(self._onOutgoingConnected, connection))
        connection.setOnMessageReceivedCallback(functools.partial(self._onMessageReceived, node))
        connection.setOnDisconnectedCallback(functools.partial(self._onDisconnected, connection))
        self._connections[node] = connection

    def set_allowed_observers(self, observers: frozenset[str]) -> None:
        self._allowed_observers = observers
        for node, address in list(self._observer_addresses.items()):
            if address not in observers:
                logger.info("disconnecting observer %s: no longer listed", address)
                connection = self._connections.get(node)
                if connection is not None:
                    connection.disconnect()

    # The observer's side.

    def _sendSelfAddress(self, conn: TcpConnection) -> None:
        super()._sendSelfAddress(conn)
        if self._selfIsReadonlyNode:
            address = self._syncObj._owner.observer_address
            conn.send({"type": OBSERVER_HELLO_MESSAGE, "address": address})

    # The voter's side.

    def _onNewIncomingConnection(self, conn: TcpConnection) -> None:
        limit = self._syncObj._owner.limits.max_unknown_connections
        if len(self._unknownConnections) >= limit:
            logger.warning(
                "dropped a journal connection from %s: %d others have not named themselves yet",
                _peer_host(conn),
                limit,
            )
            conn.disconnect()
            return
        super()._onNewIncomingConnection(conn)

    def _onIncomingMessageReceived(self, conn: TcpConnection, message: object) -> None:
        if self._allowed_observers is None or message != "readonly":
            super()._onIncomingMessageReceived(conn, message)
            return
        limits = self._syncObj._owner.limits
        if len(self._unidentified) >= limits.max_unidentified_observers:
            logger.warning("refusing a non-voting connection: too many are unidentified")
            self._refuse(conn)
            return
        self._unidentified[conn] = time.monotonic() + limits.connection_timeout
        conn.setOnMessageReceivedCallback(functools.partial(self._on_observer_hello, conn))

    def _on_observer_hello(self, conn: TcpConnection, message: object) -> None:
        self._unidentified.pop(conn, None)
        address = None
        if isinstance(message, dict) and message.get("type") == OBSERVER_HELLO_MESSAGE:
            address = message.get("address")
        peer = _peer_host(conn)
        allowed = self._allowed_observers or frozenset()
        if address not in allowed or not _same_host(peer, address):
            logger.warning(
                "refused a non-voting connection from %s announcing %r: not a listed observer",
                peer,
                address,
            )
            self._refuse(conn)
            return
        super()._onIncomingMessageReceived(conn, "readonly")
        node = self._connToNode(conn)
        assert node is not None
        self._observer_addresses[node] = address
        logger.info("observer %s connected", address)

    def _refuse(self, conn: TcpConnection) -> None:
        self._unidentified.pop(conn, None)
        self._unknownConnections.discard(conn)
        conn.disconnect()

    def _onDisconnected(self, conn: TcpConnection) -> None:
        self._unidentified.pop(conn, None)
        node = self._connToNode(conn)
        super()._onDisconnected(conn)
        if node is not None and node not in self._nodes:
            self._connections.pop(node, None)  # pysyncobj keeps a read-only node's forever
            self._observer_addresses.pop(node, None)

    def _onTick(self) -> None:
        super()._onTick()
        now = time.monotonic()
        for conn in list(self._unknownConnections):
            if conn.handshake_deadline < now:
                logger.warning(
                    "dropped a journal connection from %s: no handshake within %.1f s",
                    _peer_host(conn),
                    conn.limits.handshake_timeout,
                )
                self._refuse(conn)
        for conn, deadline in list(self._unidentified.items()):
            if deadline < now:
                logger.warning("refused a non-voting connection: it did not say who it is")
                self._refuse(conn)


def _peer_host(conn: TcpConnection) -> str | None:
    sock = conn._TcpConnection__socket
    try:
        return None if sock is None else sock.getpeername()[0]
    except OSError:
        return None


def _same_host(peer: str | None, address: str) -> bool:
    """Whether a connection from peer can come from the host of "host:port" address."""
    if peer is None:
        return False
    resolved = globalDnsResolver().resolve(address.rpartition(":")[0])
    if resolved is None:
        return False
    try:
        peer_ip, listed_ip = ipaddress.ip_address(peer), ipaddress.ip_address(resolved)
    except ValueError:
        return False
    return peer_ip == listed_ip or (peer_ip.is_loopback and listed_ip.is_loopback)
