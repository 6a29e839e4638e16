"""`LogService`: the TN's write-ahead log on the replicated journal the FE uses.

One replica by default (`folder/wal` is its RocksDB, `folder/wal.state` its saved state), three
when configured, each with its own folder and port and a shared token. Appends go to the leader;
a replica that does not lead refuses them with `NotLeader`, naming the leader, and the caller
sends them there (there is no forwarding: the TN talks to the leader, as it does in MatrixOne).

An append is one journal entry: committed on a majority of replicas' disks and applied before it
returns. Its records' LSNs are described in `lsn`. Reads serve what is applied on this replica,
straight from the journal's RocksDB.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from be.logservice.entries import decode_records, encode_reserve_timestamps, encode_truncate
from be.logservice.errors import (
    BadRequest,
    LogClosed,
    LogCorrupted,
    LogServiceError,
    LogUnavailable,
    LsnTruncated,
    NotLeader,
    RecordTooLarge,
)
from be.logservice.group import GroupAppender
from be.logservice.limits import LogLimits
from be.logservice.lsn import lsn_of, position_of, raft_index_of
from be.logservice.state import LogState, LogStateMachine, read_state_file, write_state_file
from be.logservice.stored import durable_last_index, first_stored_index, stored_payloads
from be.logservice.truncation import TruncationWorker
from metadata.journal.errors import (
    JournalClosedError,
    JournalError,
    JournalTimeoutError,
    NotLeaderError,
    PayloadTooLargeError,
)
from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)

WAL_FOLDER = "wal"
STATE_FILE = "wal.state"
# A single replica talks to no one: its journal listens on a port the kernel picks, and a random
# token it never shares refuses whoever connects to it.
SINGLE_REPLICA_ADDRESS = "127.0.0.1:0"


class LogService:
    def __init__(
        self,
        folder: Path,
        limits: LogLimits,
        journal: ReplicatedJournal,
        state_machine: LogStateMachine,
        saved: LogState,
    ):
        self.folder = folder
        self.limits = limits
        self.self_address = journal.self_address
        self._journal = journal
        self._state_machine = state_machine
        self._saved = saved  # what the state file holds
        self._maintenance = threading.Lock()  # one physical truncation at a time
        self._readers = 0
        self._closed = False
        self._lifecycle = threading.Condition()  # guards _readers and _closed
        self._groups = GroupAppender(
            journal.submit,
            limits.max_records_per_append,
            limits.max_append_bytes,
            limits.max_groups_in_flight,
            limits.max_groups_waiting,
        )
        self._worker = TruncationWorker(
            self.truncate_physically, limits.truncate_interval, "quire-log-truncation"
        )

    @classmethod
    def open(
        cls,
        folder: Path,
        limits: LogLimits | None = None,
        *,
        self_address: str | None = None,
        peers: Sequence[str] = (),
        token: bytes | None = None,
    ) -> LogService:
        """Open (or create) a replica in folder. One replica: no address, no peers. Three: this
        replica's "host:port" and every replica's (this one's may be among them), and a token.
        A single replica is ready when this returns; a replicated one once `wait_ready` is."""
        limits = limits or LogLimits()
        folder = Path(folder)
        voters = sorted({*peers, *([self_address] if self_address else [])})
        if peers and self_address is None:
            raise BadRequest("a replica with peers needs its own address")
        if peers and not token:
            raise BadRequest("replicas share a token: strangers without it are refused")
        if token is not None and not token:
            raise BadRequest("an empty token")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        saved = read_state_file(folder / STATE_FILE) or LogState()
        state_machine = LogStateMachine(saved)
        journal = ReplicatedJournal(
            journal_dir=str(folder / WAL_FOLDER),
            self_address=self_address or SINGLE_REPLICA_ADDRESS,
            partners=voters,
            state_machine=state_machine,
            applied_index=saved.applied_index,
            applied_term=saved.applied_term,
            password=(token or secrets.token_bytes(32)).hex(),
            **limits.journal_options(),
        )
        if voters:
            journal.set_members(voters, [])  # and no observers: a non-voting peer is refused
        try:
            journal.start()
        except JournalError as error:
            missing = "" if (folder / STATE_FILE).exists() else f" ({STATE_FILE} is missing)"
            raise LogUnavailable(f"cannot open the log in {folder}: {error}{missing}") from None
        except RuntimeError as error:  # RocksJournal finds its entries damaged
            raise LogCorrupted(f"cannot open the log in {folder}: {error}") from None
        service = cls(folder, limits, journal, state_machine, saved)
        if not voters and not service.wait_ready(limits.append_timeout):
            service.close()
            raise LogUnavailable(f"the log in {folder} did not start in time")
        service._worker.start()
        logger.info(
            "log opened in %s: %d replica(s), LSNs up to %d, truncate point %d",
            folder,
            max(len(voters), 1),
            service.last_lsn(),
            service.truncated_lsn(),
        )
        return service

    def wait_ready(self, timeout: float) -> bool:
        """Wait until a leader is known and this replica applied what it knows to be committed."""
        try:
            return self._journal.wait_leader(timeout) and self._journal.wait_caught_up(timeout)
        except JournalClosedError:
            raise LogClosed("the log is closed") from None

    def close(self) -> None:
        with self._lifecycle:
            if self._closed:
                return
            self._closed = True
            self._lifecycle.wait_for(lambda: self._readers == 0)
        self._worker.stop()
        self._journal.close()
        logger.info("log in %s closed", self.folder)

    # Writing.

    def append(self, records: Sequence[bytes], timeout: float | None = None) -> list[int]:
        """Append records as one group; their LSNs, once they are on a majority's disks.
        LogUnavailable (NotLeader included) when that is not known: they may or may not be."""
        records = self._checked(records)
        timeout = self.limits.append_timeout if timeout is None else timeout
        try:
            outcome = self._groups.append(records, timeout)
        except (JournalError, LogServiceError) as error:
            raise _log_error(error) from None
        if outcome is None:
            raise LogUnavailable(f"no commit within {timeout:.3f}s: it may or may not be appended")
        return _lsns(outcome, len(records))

    def append_then(
        self,
        records: Sequence[bytes],
        appended: Callable[[list[int] | None, LogServiceError | None], None],
    ) -> None:
        """append without waiting: appended(their LSNs, None) once they are on a majority's
        disks, or appended(None, LogUnavailable) when that is not known (within the journal's
        own deadline), in the log's thread. Raises what append would at once (appended is not
        called then)."""
        records = self._checked(records)

        def settled(outcome: tuple[int, int] | None, error: Exception | None) -> None:
            if error is not None:
                appended(None, _log_error(error))
            else:
                appended(_lsns(outcome, len(records)), None)

        try:
            self._groups.append_then(records, settled)
        except (JournalError, LogServiceError) as error:
            raise _log_error(error) from None

    def _checked(self, records: Sequence[bytes]) -> list[bytes]:
        limits = self.limits
        if not 0 < len(records) <= limits.max_records_per_append:
            raise RecordTooLarge(
                f"an append takes 1 to {limits.max_records_per_append} records, not {len(records)}"
            )
        records = [bytes(record) for record in records]
        largest = max(len(record) for record in records)
        total = sum(len(record) for record in records)
        if largest > limits.max_record_bytes or total > limits.max_append_bytes:
            raise RecordTooLarge(
                f"records of up to {largest} bytes, {total} in all, exceed the limits "
                f"({limits.max_record_bytes} bytes a record, {limits.max_append_bytes} an append)"
            )
        self._check_open()
        return records

    def truncate(self, lsn: int, timeout: float | None = None) -> None:
        """Record that records below lsn may be dropped (the TN checkpointed them)."""
        last = self.last_lsn()
        if not 0 < lsn <= last + 1:
            raise BadRequest(f"cannot truncate at LSN {lsn}: the last record's LSN is {last}")
        self._commit(encode_truncate(lsn), timeout)

    def reserve_timestamps(self, until: int, timeout: float | None = None) -> int:
        """Record that timestamps up to until may be handed out; the reservation before it."""
        assert until > 0, until
        return self._commit(encode_reserve_timestamps(until), timeout)

    def _commit(self, payload: bytes, timeout: float | None) -> int:
        self._check_open()
        timeout = self.limits.append_timeout if timeout is None else timeout
        try:
            result = self._journal.commit(payload, timeout)
        except JournalError as error:
            raise _log_error(error) from None
        if isinstance(result, LogServiceError):
            raise _log_error(result)
        assert isinstance(result, int), result
        return result

    # Reading.

    def read(self, first_lsn: int, max_bytes: int) -> list[tuple[int, bytes]]:
        """(LSN, record) of the records from first_lsn on, in order: at least one if there is
        one, however large; otherwise no more than max_bytes of records."""
        if not 0 < max_bytes <= self.limits.max_read_bytes:
            raise BadRequest(f"a read's max_bytes is 1 to {self.limits.max_read_bytes}")
        if first_lsn < 0:
            raise BadRequest(f"LSN {first_lsn} is negative")
        with self._reading():
            return self._read(first_lsn, max_bytes)

    def _read(self, first_lsn: int, max_bytes: int) -> list[tuple[int, bytes]]:
        journal = self._journal
        first_raft_index = max(raft_index_of(first_lsn), 1)
        self._check_kept(first_lsn)
        last = min(self._state_machine.state().applied_index, durable_last_index(journal))
        found: list[tuple[int, bytes]] = []
        size = 0
        expected = first_raft_index
        for raft_index, payload in stored_payloads(journal, first_raft_index, last):
            if raft_index != expected:  # dropped while this read began
                self._check_kept(first_lsn)
                raise LogCorrupted(f"the log lacks entries {expected}..{raft_index - 1}")
            expected = raft_index + 1
            records = decode_records(payload) if payload is not None else None
            for position, record in enumerate(records or ()):
                lsn = lsn_of(raft_index, position)
                if lsn < first_lsn:
                    continue
                if found and size + len(record) > max_bytes:
                    return found
                found.append((lsn, record))
                size += len(record)
        return found

    def _check_kept(self, first_lsn: int) -> None:
        first_kept = first_stored_index(self._journal)
        if first_kept > 1 and first_lsn < lsn_of(first_kept):
            raise LsnTruncated(first_lsn, lsn_of(first_kept))

    def truncated_lsn(self) -> int:
        """The truncate point the TN recorded (0: none); records from it on are kept."""
        return self._state_machine.state().truncated_lsn

    def last_lsn(self) -> int:
        """The newest record's LSN applied on this replica (0: none)."""
        return self._state_machine.state().last_lsn

    def reserved_timestamp(self) -> int:
        return self._state_machine.state().reserved_timestamp

    def first_kept_lsn(self) -> int:
        """The smallest LSN a read may still ask for."""
        with self._reading():
            first_kept = first_stored_index(self._journal)
        return 0 if first_kept == 1 else lsn_of(first_kept)

    # Leadership.

    def is_leader(self) -> bool:
        self._check_open()
        return self._journal.is_leader()

    def leader(self) -> str | None:
        self._check_open()
        return self._journal.status().leader

    def leader_term(self) -> int:
        """The raft term this replica leads in; NotLeader if it does not lead."""
        self._check_open()
        status = self._journal.status()
        if not status.is_leader:
            raise NotLeader(status.leader)
        return status.term

    # Physical truncation.

    def truncate_physically(self) -> int:
        """Save the state, then drop the entries the truncate point allows (see `truncation`);
        the raft index of the first entry kept. The worker calls this; tests may too."""
        with self._maintenance, self._reading():
            journal = self._journal
            state = self._state_machine.state()
            if state.applied_index > self._saved.applied_index:
                term = journal.term_at(state.applied_index)
                if term is not None:  # else not on disk yet: next time
                    saved = replace(state, applied_term=term)
                    try:
                        write_state_file(self.folder / STATE_FILE, saved)
                    except OSError as error:
                        raise LogUnavailable(f"cannot save the log's state: {error}") from None
                    self._saved = saved
            status = journal.status()
            target = min(
                self._saved.applied_index,
                raft_index_of(state.truncated_lsn) - 1,
                status.last_applied - self.limits.truncate_keep_entries,
            )
            if target >= first_stored_index(journal):
                journal.truncate_through(target)
                logger.info(
                    "log entries through %d dropped (truncate point LSN %d)",
                    target,
                    state.truncated_lsn,
                )
            return first_stored_index(journal)

    # Internals.

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosed("the log is closed")

    def _reading(self) -> _Reading:
        return _Reading(self)


def _lsns(outcome: tuple[int, int], count: int) -> list[int]:
    first, position = outcome
    assert position_of(first) == 0, first
    return [first + position + offset for offset in range(count)]


def _log_error(error: JournalError | LogServiceError) -> LogServiceError:
    """The logservice's error for a journal's, new for each caller (a group's callers share one)."""
    if isinstance(error, NotLeaderError):
        return NotLeader(error.leader)
    if isinstance(error, PayloadTooLargeError):
        return RecordTooLarge(str(error))
    if isinstance(error, JournalClosedError):
        return LogClosed("the log is closed")
    if isinstance(error, JournalTimeoutError):
        return LogUnavailable(f"{error}: it may or may not be appended")
    if isinstance(error, JournalError):
        return LogUnavailable(str(error))
    return error  # the state machine refused the entry (LogCorrupted)


class _Reading:
    """Keeps close() from closing the journal's RocksDB under a reader."""

    def __init__(self, service: LogService):
        self._service = service

    def __enter__(self) -> None:
        service = self._service
        with service._lifecycle:
            if service._closed:
                raise LogClosed("the log is closed")
            service._readers += 1

    def __exit__(self, *exc_info: object) -> None:
        service = self._service
        with service._lifecycle:
            service._readers -= 1
            service._lifecycle.notify_all()
