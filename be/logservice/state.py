"""The logservice's replicated state machine, and the state file that lets a replica drop entries.

The state is small: the truncate point the TN recorded, the timestamps the oracle reserved, the LSN
of the newest record, and the raft index of the last entry applied. The records themselves stay in
the journal (the seed's split: the TN keeps its own state, the logservice only metadata).

The state file holds the state at some applied raft index; a replica writes it (fsync, rename)
before it drops entries up to that index, and a restart loads it and replays the entries after it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from be.logservice.entries import EntryKind, kind_and_count
from be.logservice.errors import LogCorrupted
from be.logservice.lsn import lsn_of

logger = logging.getLogger(__name__)

STATE_FILE_VERSION = 1


@dataclass(frozen=True)
class LogState:
    applied_index: int = 0  # raft index of the last entry of the logservice applied
    applied_term: int = 0  # its term (filled in when the state is written to its file)
    truncated_lsn: int = 0  # the TN's truncate point; 0: none
    reserved_timestamp: int = 0  # the oracle may hand out timestamps up to this one
    last_lsn: int = 0  # the newest record's LSN; 0: none

    def __post_init__(self) -> None:
        assert self.applied_index >= 0 and self.applied_term >= 0, self
        assert self.truncated_lsn >= 0 and self.reserved_timestamp >= 0 and self.last_lsn >= 0


class LogStateMachine:
    """Applies the log's entries (journal thread); `state()` is a consistent copy (any thread)."""

    def __init__(self, state: LogState):
        self._lock = threading.Lock()
        self._state = state

    def state(self) -> LogState:
        with self._lock:
            return self._state

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        """APPEND: the first LSN of its records; TRUNCATE: the truncate point after it;
        RESERVE_TIMESTAMPS: the reservation before it. Deterministic."""
        kind, value = kind_and_count(payload)
        with self._lock:
            state = self._state
            assert raft_index > state.applied_index, (raft_index, state.applied_index)
            if kind is EntryKind.APPEND:
                result = lsn_of(raft_index, 0)
                state = replace(state, last_lsn=lsn_of(raft_index, value - 1))
            elif kind is EntryKind.TRUNCATE:
                state = replace(state, truncated_lsn=max(state.truncated_lsn, value.lsn))
                result = state.truncated_lsn
            else:
                result = state.reserved_timestamp
                state = replace(
                    state, reserved_timestamp=max(state.reserved_timestamp, value.until)
                )
            self._state = replace(state, applied_index=raft_index)
        return result


def read_state_file(path: Path) -> LogState | None:
    """The state a replica saved, None if it never saved one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        fields = json.loads(text)
        if fields.pop("version") != STATE_FILE_VERSION:
            raise ValueError("unknown version")
        state = LogState(**fields)
        if not all(isinstance(value, int) for value in asdict(state).values()):
            raise ValueError("a field is not an integer")
    except (ValueError, TypeError, KeyError, AttributeError, AssertionError) as error:
        raise LogCorrupted(f"the log's state file {path.name} is damaged: {error}") from None
    return state


def write_state_file(path: Path, state: LogState) -> None:
    """Atomically: a crash leaves the previous file or this one, never a mix."""
    temporary = path.with_name(path.name + ".tmp")
    data = json.dumps({"version": STATE_FILE_VERSION, **asdict(state)}, sort_keys=True)
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
