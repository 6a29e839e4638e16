"""Raft through pysyncobj: the only module that touches pysyncobj's internals.

pysyncobj 0.3.17, and the one place where Quire corrects it. `RaftNode` is what the replicated
journal drives; nothing outside this module touches pysyncobj's internals. Its corrections:

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
   cost): Quire's connections (`_Connection`, every connection the journal opens or accepts)
   serialise their messages themselves, with the highest protocol; pysyncobj's own pickling is left
   as it is for the rest of the process. Messages hold builtin values only, so they are unpickled
   without any global: even a holder of the cluster password cannot make a message run code. pysyncobj would also unpickle split entries ("transmission"
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
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

import pysyncobj.syncobj
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

from metadata.journal.errors import JournalError, NotLeaderError
from metadata.journal.limits import JournalLimits
from metadata.journal.log import NO_OP_COMMAND, REGULAR_COMMAND, RocksJournal

logger = logging.getLogger(__name__)

KEEPALIVE_MESSAGE = "quire_keepalive"
# An observer's first message, naming the address it is listed as.
OBSERVER_HELLO_MESSAGE = "quire_observer"
# Marks the leader's heartbeats to a node that needs entries the leader no longer has (fact 8).
NEEDS_IMAGE = "quire_needs_image"
PRE_VOTE = "quire_pre_vote"  # fact 12
PRE_VOTE_GRANTED = "quire_pre_vote_granted"

# What a submitter hears once pysyncobj settled its entry: the state machine's result, or why not.
Outcome = Callable[[object, JournalError | None], None]


class RaftHost(Protocol):
    """What a RaftNode replicates for: its settings, and what the journal's thread runs in a tick
    (in the order of the methods here; `before_poll` ends it)."""

    limits: JournalLimits
    self_address: str | None  # None: an observer
    partners: list[str]
    password: str | None
    observer_address: str | None

    def apply_pending_members(self) -> None: ...

    def persist(self) -> None:
        """Flush the log: what was appended reaches the disk before it is counted or acked."""

    def run_truncations(self) -> None: ...

    def run_installs(self) -> None: ...

    def take_submissions(self, is_leader: bool, leader: str | None) -> None:
        """Hand queued payloads to `RaftNode.append` (on the leader), or refuse them."""

    def has_queued_submissions(self) -> bool: ...

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        """Apply a committed entry; the result goes to its submitter."""

    @property
    def catching_up(self) -> bool: ...

    def report_catch_up(self, applied: int, leader_commit: int | None) -> None: ...

    def entries_received(self) -> None: ...

    def needs_image(self, first_index: int) -> None:
        """The leader no longer has the entries from first_index on (fact 8)."""

    def before_poll(self) -> None: ...


class _MessageUnpickler(pickle.Unpickler):
    """Journal messages hold builtin values only (fact 11): no global is ever looked up."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"a journal message may not refer to {module}.{name}")


def dump_message(message: object) -> bytes:
    """A message as a connection sends it, before compression and encryption (fact 11)."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def load_message(data: bytes) -> object:
    """A message a connection received, once decrypted: builtin values only, never code."""
    return _MessageUnpickler(io.BytesIO(data)).load()


def _sync_obj_conf(
    limits: JournalLimits, bind_address: str | None, password: str | None
) -> SyncObjConf:
    return SyncObjConf(
        autoTick=False,  # the journal's thread ticks, so nothing runs before start() is done
        password=password,
        commandsQueueSize=limits.max_pending_submissions,
        appendEntriesUseBatch=True,
        appendEntriesPeriod=limits.append_entries_period,
        appendEntriesBatchSizeBytes=limits.append_entries_batch_bytes,
        raftMinTimeout=limits.raft_min_timeout,
        raftMaxTimeout=limits.raft_max_timeout,
        leaderFallbackTimeout=limits.leader_fallback_timeout,
        connectionTimeout=limits.connection_timeout,
        connectionRetryTime=limits.connection_retry_time,
        bindAddress=bind_address,
        bindRetryTime=0.1,
        maxBindRetries=limits.bind_retries,
        journalFile=None,
        fullDumpFile=None,
        useFork=False,
        dynamicMembershipChange=False,
    )


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


class RaftNode(SyncObj):
    """pysyncobj's SyncObj with Quire's corrections, and the controls the replicated journal uses."""

    def __init__(self, host: RaftHost, journal: RocksJournal):
        self._host = host
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
                    host.self_address,
                    host.partners,
                    _sync_obj_conf(host.limits, host.self_address, host.password),
                    transportClass=_Transport,
                )
        except ImportError as error:  # pysyncobj's message for a password without 'cryptography'
            raise JournalError(
                f"a cluster password needs the 'cryptography' package: {error}"
            ) from error
        except pysyncobj.syncobj.SyncObjException as error:
            raise JournalError(f"cannot listen on {host.self_address}: {error}") from error
        assert self._SyncObj__raftLog is journal
        self._wake_notifier = PipeNotifier(self._poller, self._on_woken)
        self.addOnTickCallback(host.before_poll)

    # Quire's controls.

    @property
    def term(self) -> int:
        return self._SyncObj__raftCurrentTerm

    @property
    def commit_index(self) -> int:
        return self._SyncObj__raftCommitIndex

    @property
    def last_applied(self) -> int:
        return self._SyncObj__raftLastApplied

    @property
    def leader_commit_index(self) -> int | None:
        """The commit index the leader last announced; None until a leader was heard."""
        return self._SyncObj__leaderCommitIndex

    def is_leader(self) -> bool:
        return self._isLeader()

    def has_quorum(self, window: float) -> bool:
        """Whether this node leads and a majority of voters answered it within window seconds."""
        if not self._isLeader():
            return False
        others = list(self._SyncObj__otherNodes)
        answered = dict(self._SyncObj__lastResponseTime)
        deadline = raft_clock() - window
        count = 1 + sum(1 for other in others if answered.get(other, 0) > deadline)
        return count > (len(others) + 1) / 2

    def tick(self, seconds: float) -> None:
        """One round of the journal's thread, waiting at most seconds for the network."""
        self._onTick(seconds)

    def append(self, payload: bytes, on_outcome: Outcome) -> None:
        """On the leader: append payload; on_outcome(result, None) once it is committed and
        applied, or on_outcome(None, error) when pysyncobj gives up on it."""
        self._applyCommand(
            REGULAR_COMMAND + payload, functools.partial(self._on_append_outcome, on_outcome)
        )

    def _on_append_outcome(self, on_outcome: Outcome, result: object, reason: int) -> None:
        if reason == FAIL_REASON.SUCCESS:
            # Committed: on the disks of a majority, this leader's included (it flushes what it
            # appended before it counts its own log). The commit index reaches the disk with the
            # next flush; a restart that finds it behind learns it again before serving.
            on_outcome(result, None)
        elif reason in (FAIL_REASON.DISCARDED, FAIL_REASON.NOT_LEADER, FAIL_REASON.LEADER_CHANGED):
            on_outcome(None, NotLeaderError(self.leader_address(), "leadership changed"))
        else:
            on_outcome(None, JournalError(f"pysyncobj refused the entry (reason {reason})"))

    def allow_observers(self, observers: frozenset[str]) -> None:
        """Accept non-voting connections from exactly these addresses (fact 10)."""
        self.transport.set_allowed_observers(observers)

    def destroy(self) -> None:
        """Close the transport and the journal."""
        self._doDestroy()

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
        if self._host.has_queued_submissions():
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
        self._host.apply_pending_members()
        if self._isLeader():
            # What was submitted while the thread waited joins the log before the flush below,
            # so that this tick commits and applies it (the only voter needs no second tick).
            self._checkCommandsToApply()
        # A leader counts its own log toward commit: what it appended must be on disk first.
        self._host.persist()
        self._host.run_truncations()
        self._host.run_installs()
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
        leader_heard = raft_clock() - self._leader_heard_at < self._host.limits.raft_min_timeout
        if (
            message["term"] > self._SyncObj__raftCurrentTerm
            and up_to_date
            and not self._isLeader()
            and not leader_heard
        ):
            self._SyncObj__transport.send(node, {"type": PRE_VOTE_GRANTED, "term": message["term"]})

    def _checkCommandsToApply(self) -> None:
        last_index = self._journal.last_index
        self._host.take_submissions(self._isLeader(), self.leader_address())
        super()._checkCommandsToApply()
        if self._journal.last_index != last_index and self._isLeader():
            # Replicate now rather than at the next append period (fact 7).
            self._SyncObj__sendAppendEntries()

    def _SyncObj__applyLogEntries(self) -> bool:
        """Apply committed entries in raft order, a bounded amount per tick (fact 8)."""
        commit, applied = self._SyncObj__raftCommitIndex, self._SyncObj__raftLastApplied
        if commit <= applied:
            if self._host.catching_up:
                self._host.report_catch_up(applied, self._SyncObj__leaderCommitIndex)
            return False
        limits = self._host.limits
        deadline = time.monotonic() + limits.apply_budget_seconds
        waiting_commit = self._SyncObj__commandsWaitingCommit
        count = min(commit - applied, limits.max_apply_entries)
        for command, raft_index, term in self._SyncObj__getEntries(applied + 1, count):
            assert raft_index == self._SyncObj__raftLastApplied + 1
            if command[:1] == REGULAR_COMMAND:
                result = self._host.apply_entry(raft_index, command[1:])
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
            self._host.report_catch_up(
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
            self._host.needs_image(message["prevLogIdx"])
        if (
            kind == "append_entries"
            and "entries" in message
            and "prevLogIdx" in message
            and message["term"] >= self._SyncObj__raftCurrentTerm
        ):
            if message["entries"] and self._host.catching_up:
                self._host.entries_received()
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
        self._host.persist()
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
    """pysyncobj's connection, serialising its own messages (fact 11) and reading frames of a
    bounded size (fact 13). pysyncobj's framing: a native int length, then the zlib-compressed
    pickle, encrypted with the cluster password if there is one."""

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

    def send(self, message: object) -> None:
        if self.sendRandKey:
            message = (self.sendRandKey, message)
        data = zlib.compress(dump_message(message), 3)
        if self.encryptor:
            data = self.encryptor.encrypt_at_time(data, int(raft_clock()))
        self._TcpConnection__writeBuffer += self.HEADER.pack(len(data)) + data
        self._TcpConnection__trySendBuffer()

    def _TcpConnection__processParseMessage(self) -> object:
        """The next whole message in the read buffer, None if there is none yet. A message that
        does not decrypt, decompress or parse drops the connection."""
        buffer = self._TcpConnection__readBuffer
        if len(buffer) < self.HEADER.size:
            return None
        (length,) = self.HEADER.unpack_from(buffer)
        end = self.HEADER.size + length
        if len(buffer) < end:
            return None
        data = buffer[self.HEADER.size : end]
        try:
            if self.encryptor:
                timestamp = self.encryptor.extract_timestamp(data)
                if timestamp < self.recvLastTimestamp:
                    raise ValueError("a message older than the previous one")
                self.recvLastTimestamp = timestamp
                data = self.encryptor.decrypt(data)
            message = load_message(zlib.decompress(data))
            if self.recvRandKey:
                key, message = message
                if key != self.recvRandKey:
                    raise ValueError("a message with another connection's key")
        except Exception as error:
            logger.debug("dropped a journal connection from %s: %r", _peer_host(self), error)
            self.disconnect()
            return None
        self._TcpConnection__readBuffer = buffer[end:]
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

    def __init__(self, syncObj: RaftNode, selfNode: TCPNode | None, otherNodes: set[TCPNode]):
        self._allowed_observers: frozenset[str] | None = None  # None: any, as pysyncobj does
        self._unidentified: dict[TcpConnection, float] = {}  # connection -> deadline
        self._observer_addresses: dict[Node, str] = {}
        super().__init__(syncObj, selfNode, otherNodes)

    def _createServer(self) -> None:
        super()._createServer()
        plain, conf = self._server, self._syncObj.conf
        self._server = _Server(
            self._syncObj._host.limits,
            self._syncObj._poller,
            plain._TcpServer__host,
            plain._TcpServer__port,
            onNewConnection=self._onNewIncomingConnection,
            sendBufferSize=conf.sendBufferSize,
            recvBufferSize=conf.recvBufferSize,
            connectionTimeout=conf.connectionTimeout,
        )

    def addNode(self, node: TCPNode) -> None:
        """pysyncobj's, opening a `_Connection` to the node if this node is the one to connect."""
        self._nodes.add(node)
        self._nodeAddrToNode[node.address] = node
        if not self._shouldConnect(node):
            return  # the peer connects to this node
        conf = self._syncObj.conf
        connection = _Connection(
            self._syncObj._host.limits,
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
            address = self._syncObj._host.observer_address
            conn.send({"type": OBSERVER_HELLO_MESSAGE, "address": address})

    # The voter's side.

    def _onNewIncomingConnection(self, conn: TcpConnection) -> None:
        limit = self._syncObj._host.limits.max_unknown_connections
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
        limits = self._syncObj._host.limits
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
