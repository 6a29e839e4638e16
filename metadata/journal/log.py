"""The raft log of the replicated journal, kept in RocksDB.

pysyncobj reads its log as a Python list of `(command, raft_index, term)` tuples: it indexes by
position (negative positions and slices included) and expects positions to be contiguous raft
indexes. `RocksJournal` gives it that view over RocksDB:

- position 0 is the *base*: the raft index and term of the last entry that an image covers (0 and 0
  in a new journal). Its command is a no-op; its payload is gone.
- positions 1.. are the stored entries base_index + 1 .. last_index.

Writes collect in a WriteBatch and reach RocksDB in `flush()`: one WAL write, and with `sync` on one
fsync, for every entry appended since the previous flush (group commit). The term and vote are the
exception: Raft needs them on disk before any message that reflects them, so `setCurrentTerm`
flushes at once. A torn last WAL record left by a crash is dropped by RocksDB's point-in-time
recovery; nothing that a flush had synced is lost. One kind of tail RocksDB cannot get past is
cut before it opens the journal (`cut_unreadable_wal_tail`).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pysyncobj.journal import Journal
from rocksdict import DBRecoveryMode, Options, Rdict, WriteBatch, WriteOptions

from metadata.journal.errors import JournalError

logger = logging.getLogger(__name__)

Entry = tuple[bytes, int, int]  # (command, raft_index, term), pysyncobj's entry shape

# pysyncobj's command types (pysyncobj.syncobj._COMMAND_TYPE): a command is a type byte and a body.
REGULAR_COMMAND = b"\x00"
NO_OP_COMMAND = b"\x01"

ENTRY_PREFIX = b"e"
KEY_BASE = b"m/base"
KEY_COMMIT_INDEX = b"m/commit_index"
KEY_TERM = b"m/term"

_INDEX = struct.Struct(">Q")  # big-endian, so that RocksDB's key order is raft order
_BASE = struct.Struct(">QQ")
_NO_VOTE = b"\x00"
_VOTE = b"\x01"

# What an entry costs the in-memory cache besides its command: the tuple, the ints, the list slot.
CACHED_ENTRY_OVERHEAD = 128

# pysyncobj slices `log[a:]` only to send a prefix of it, to apply a prefix of it, or to see whether
# a follower holds anything after a given entry: an open-ended slice returns at most this many.
OPEN_SLICE_LIMIT = 4096


# RocksDB's WAL: 32 KiB blocks of records, each with a header (crc32c, length, type) and a payload.
WAL_BLOCK_BYTES = 32768
_WAL_HEADER = struct.Struct("<IHB")
_WAL_RECORD_TYPES = (1, 2, 3, 4)  # full, first, middle, last: what RocksDB writes here

# Opens the journal's RocksDB in a child process: a hang there must not hang the FE. It gets this
# long, plus a second per 5 MB of WAL, before the damaged tail is cut.
WAL_PROBE_SECONDS = 30.0
_PROBE = """
import sys
from rocksdict import DBRecoveryMode, Options, Rdict
options = Options(raw_mode=True)
options.set_wal_recovery_mode(DBRecoveryMode.point_in_time())
Rdict(sys.argv[1], options).close()
"""


def cut_unreadable_wal_tail(path: str) -> int:
    """Cut a damaged end of the newest WAL if RocksDB cannot open the journal; returns bytes cut.

    RocksDB 9.8 loops forever opening a WAL whose damaged tail holds a record header of a
    "recyclable" type, as random bytes left by a crash may read. A WAL whose records run to its end
    is left alone. Otherwise RocksDB tries first, in a child process; only if that does not finish
    is the WAL cut where its well-formed records end. Point-in-time recovery drops everything after
    the first damaged record anyway, so the cut loses nothing RocksDB would have kept.
    """
    logs = [log for log in Path(path).glob("*.log") if log.stem.isdigit()]
    if not logs:
        return 0
    newest = max(logs, key=lambda log: int(log.stem))
    size = newest.stat().st_size
    if size == 0:
        return 0
    with newest.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        end = end_of_wal_records(data)
    if end == size:
        return 0
    timeout = WAL_PROBE_SECONDS + size / 5e6
    logger.warning(
        "%s ends with %d damaged bytes; checking that RocksDB opens it", newest, size - end
    )
    try:
        subprocess.run([sys.executable, "-c", _PROBE, path], timeout=timeout, capture_output=True)
        return 0  # opened, or failed with an error that opening it here will report
    except subprocess.TimeoutExpired:
        pass
    logger.warning("RocksDB hangs opening %s: cutting its last %d bytes", newest, size - end)
    os.truncate(newest, end)
    return size - end


def end_of_wal_records(data: bytes | mmap.mmap) -> int:
    """Where the chain of well-formed records of a RocksDB WAL ends (its size, if undamaged)."""
    position, size = 0, len(data)
    while position + _WAL_HEADER.size <= size:
        room = WAL_BLOCK_BYTES - position % WAL_BLOCK_BYTES
        if room < _WAL_HEADER.size:  # a block's last bytes are padding
            position += room
            continue
        _crc, length, kind = _WAL_HEADER.unpack_from(data, position)
        if kind not in _WAL_RECORD_TYPES or _WAL_HEADER.size + length > room:
            return position
        position += _WAL_HEADER.size + length
    return min(position, size)  # a block's padding may run past the end of the file


def entry_key(raft_index: int) -> bytes:
    return ENTRY_PREFIX + _INDEX.pack(raft_index)


def _encode_entry(command: bytes, term: int) -> bytes:
    return _INDEX.pack(term) + command


def _decode_entry(raft_index: int, value: bytes) -> Entry:
    return (value[_INDEX.size :], raft_index, _INDEX.unpack_from(value)[0])


class RocksJournal(Journal):
    """pysyncobj's `Journal` interface over a RocksDB directory. Used from one thread at a time."""

    def __init__(self, path: str, *, sync: bool = True, max_cached_bytes: int = 64 << 20):
        assert max_cached_bytes > 0
        self.path = path
        self.sync = sync
        self.max_cached_bytes = max_cached_bytes
        self.wal_syncs = 0

        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_wal_recovery_mode(DBRecoveryMode.point_in_time())
        cut_unreadable_wal_tail(path)
        try:
            self._db = Rdict(path, options)
        except Exception as error:  # rocksdict raises Exception itself: a held LOCK, no space, ...
            raise JournalError(f"cannot open the journal {path}: {error}") from None
        self._write_options = WriteOptions()
        self._write_options.sync = False  # flush() syncs the WAL itself
        self._batch = WriteBatch(raw_mode=True)
        self._closed = False

        base = self._db.get(KEY_BASE)
        self.base_index, self.base_term = _BASE.unpack(base) if base is not None else (0, 0)
        commit = self._db.get(KEY_COMMIT_INDEX)
        self.commit_index = _INDEX.unpack(commit)[0] if commit is not None else 0
        self._written_commit_index = self.commit_index
        self._term, self._voted_for = self._read_term()

        self.last_index = self.base_index
        # The newest entries, tail_first .. last_index, and every entry not flushed yet.
        self._tail: list[Entry] = []
        self._tail_bytes = 0
        last = self._read_last_entry()
        if last is not None:
            self.last_index = last[1]
            self._cache(last)
        self._check_contiguous()
        self.durable_last_index = self.last_index
        logger.info(
            "journal %s opened: entries %d..%d, commit index %d, term %d",
            path,
            self.first_index,
            self.last_index,
            self.commit_index,
            self._term,
        )

    # Where the log stands.

    @property
    def first_index(self) -> int:
        """The raft index of the oldest stored entry (last_index + 1 when none is stored)."""
        return self.base_index + 1

    @property
    def entry_count(self) -> int:
        return self.last_index - self.base_index

    @property
    def last_term(self) -> int:
        return self._tail[-1][2] if self._tail else self.base_term

    def term_at(self, raft_index: int) -> int | None:
        """The term of the entry at raft_index (the base included), None if it is not in the log."""
        if raft_index == self.base_index:
            return self.base_term
        if self.base_index < raft_index <= self.last_index:
            return self._entry(raft_index)[2]
        return None

    def entries(self, first: int, last: int) -> Iterator[Entry]:
        """Stored entries first..last (inclusive), streamed in raft order."""
        assert first > self.base_index, (
            f"entry {first} is covered by an image (base {self.base_index})"
        )
        last = min(last, self.last_index)
        tail_first = self._tail_first
        if first < tail_first:
            for key, value in self._db.items(from_key=entry_key(first)):
                if not key.startswith(ENTRY_PREFIX):
                    break
                raft_index = _INDEX.unpack_from(key, 1)[0]
                if raft_index >= min(tail_first, last + 1):
                    break
                yield _decode_entry(raft_index, value)
            first = tail_first
        for raft_index in range(first, last + 1):
            yield self._tail[raft_index - tail_first]

    def payloads(self, first: int, last: int) -> Iterator[tuple[int, bytes | None]]:
        """(raft_index, payload) of the stored entries first..last; payload None for pysyncobj's
        own commands, which carry none."""
        for command, raft_index, _term in self.entries(first, last):
            yield raft_index, command[1:] if command[:1] == REGULAR_COMMAND else None

    # pysyncobj's Journal interface.

    def __len__(self) -> int:
        return self.last_index - self.base_index + 1

    def __getitem__(self, item: int | slice) -> Entry | list[Entry]:
        size = len(self)
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            assert step == 1, "pysyncobj reads the log in order"
            if item.stop is None:
                stop = min(stop, start + OPEN_SLICE_LIMIT)
            if start >= stop:
                return []
            result = [self._base_entry()] if start == 0 else []
            result.extend(self.entries(self.base_index + max(start, 1), self.base_index + stop - 1))
            return result
        position = item + size if item < 0 else item
        if not 0 <= position < size:
            raise IndexError(f"journal position {item} out of range (length {size})")
        if position == 0:
            return self._base_entry()
        return self._entry(self.base_index + position)

    def add(self, command: bytes, idx: int, term: int) -> None:
        assert isinstance(command, bytes) and command, "a command is a type byte and a body"
        assert idx == self.last_index + 1, (
            f"entry {idx} after {self.last_index}: the log has a hole"
        )
        assert term >= self.last_term, f"term {term} after term {self.last_term}"
        self._batch.put(entry_key(idx), _encode_entry(command, term))
        self._cache((command, idx, term))
        self.last_index = idx

    def clear(self) -> None:
        self._delete_range(self.base_index + 1, self.last_index)
        self._set_base(0, 0)
        self._uncache_from(0)
        self.last_index = 0

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        """Drop the entries from position entryFrom on: they conflict with the leader's log."""
        first = self.base_index + entryFrom
        assert entryFrom >= 1, "the base is covered by an image and cannot conflict"
        assert first > self.commit_index, (
            f"refusing to delete committed entries from {first} (commit index {self.commit_index})"
        )
        if first > self.last_index:
            return
        logger.warning("dropping uncommitted entries %d..%d", first, self.last_index)
        self._delete_range(first, self.last_index)
        self._uncache_from(max(first - self._tail_first, 0))
        self.last_index = first - 1
        if not self._tail and self.last_index > self.base_index:
            self._cache(self._read_entry(self.last_index))

    def deleteEntriesTo(self, entryTo: int) -> None:
        """Drop the entries before position entryTo; the entry there becomes the base."""
        if entryTo <= 0:
            return
        self.truncate_through(self.base_index + entryTo)

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        if raftCommitIndex != self.commit_index:
            if raftCommitIndex < self.commit_index:
                logger.warning(
                    "commit index moves back from %d to %d", self.commit_index, raftCommitIndex
                )
            self.commit_index = raftCommitIndex  # written by the next flush

    def getRaftCommitIndex(self) -> int:
        return max(self.commit_index, self.base_index)

    def setCurrentTerm(self, term: int, votedForNodeId: str | None) -> None:
        self._term, self._voted_for = term, votedForNodeId
        vote = _NO_VOTE if votedForNodeId is None else _VOTE + str(votedForNodeId).encode()
        self._batch.put(KEY_TERM, _INDEX.pack(term) + vote)
        self.flush()  # Raft: durable before any message that carries this term or vote

    def getCurrentTerm(self) -> int:
        return self._term

    def getVotedForNodeId(self) -> str | None:
        return self._voted_for

    def _destroy(self) -> None:
        self.close()

    # Quire's operations.

    def flush(self) -> bool:
        """Write what changed since the last flush: one WAL write, and one fsync if sync is on and
        more than the commit index changed. The commit index alone is not fsynced: a restart that
        finds it behind learns it again from the leader."""
        needs_sync = self.sync and bool(self._batch)  # entries, deletions, base, term or vote
        if self.commit_index != self._written_commit_index:
            self._batch.put(KEY_COMMIT_INDEX, _INDEX.pack(self.commit_index))
            self._written_commit_index = self.commit_index
        if not self._batch:
            return False
        assert not self._closed, "journal is closed"
        self._db.write(self._batch, self._write_options)
        self._batch = WriteBatch(raw_mode=True)
        if needs_sync:
            # A synced write() holds the GIL through the fsync; flush_wal releases it, so the
            # MySQL front keeps serving while the journal waits for the disk.
            self._db.flush_wal(True)
            self.wal_syncs += 1
        self.durable_last_index = self.last_index
        if self._tail_bytes > self.max_cached_bytes:
            self._evict_oldest(self.max_cached_bytes // 2)
        return True

    def truncate_through(self, raft_index: int) -> None:
        """Delete the entries up to raft_index, which an image covers; that one becomes the base."""
        if raft_index <= self.base_index:
            return
        assert raft_index <= self.last_index, (
            f"cannot truncate through {raft_index} > {self.last_index}"
        )
        assert raft_index <= self.commit_index, (
            f"cannot truncate uncommitted entries (through {raft_index}, "
            f"commit {self.commit_index})"
        )
        term = self._entry(raft_index)[2]
        self._delete_range(self.base_index + 1, raft_index)
        self._set_base(raft_index, term)
        self._uncache_oldest(max(raft_index + 1 - self._tail_first, 0))
        self.flush()
        logger.info(
            "journal truncated through %d; entries %d..%d remain",
            raft_index,
            self.first_index,
            self.last_index,
        )

    def reset(self, base_index: int, base_term: int) -> None:
        """Drop every entry and restart the log after base_index (an image newer than the log)."""
        assert base_index >= 0 and base_term >= 0
        self._delete_range(self.base_index + 1, self.last_index)
        self._set_base(base_index, base_term)
        self._uncache_from(0)
        self.last_index = base_index
        self.commit_index = base_index
        self.flush()

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._db.close()

    # Internals.

    @property
    def _tail_first(self) -> int:
        return self.last_index - len(self._tail) + 1

    def _cache(self, entry: Entry) -> None:
        self._tail.append(entry)
        self._tail_bytes += len(entry[0]) + CACHED_ENTRY_OVERHEAD

    def _uncache_from(self, position: int) -> None:
        self._tail_bytes -= sum(len(e[0]) + CACHED_ENTRY_OVERHEAD for e in self._tail[position:])
        del self._tail[position:]

    def _uncache_oldest(self, count: int) -> None:
        self._tail_bytes -= sum(len(e[0]) + CACHED_ENTRY_OVERHEAD for e in self._tail[:count])
        del self._tail[:count]

    def _evict_oldest(self, keep_bytes: int) -> None:
        """Forget the oldest flushed entries until about keep_bytes remain (never the newest)."""
        count, remaining = 0, self._tail_bytes
        while remaining > keep_bytes and count < len(self._tail) - 1:
            remaining -= len(self._tail[count][0]) + CACHED_ENTRY_OVERHEAD
            count += 1
        self._uncache_oldest(count)

    def _base_entry(self) -> Entry:
        return (NO_OP_COMMAND, self.base_index, self.base_term)

    def _entry(self, raft_index: int) -> Entry:
        tail_first = self._tail_first
        if raft_index >= tail_first:
            return self._tail[raft_index - tail_first]
        return self._read_entry(raft_index)

    def _read_entry(self, raft_index: int) -> Entry:
        assert self.base_index < raft_index <= self.last_index
        value = self._db.get(entry_key(raft_index))
        assert value is not None, f"journal entry {raft_index} is missing from {self.path}"
        return _decode_entry(raft_index, value)

    def _read_last_entry(self) -> Entry | None:
        iterator = self._db.iter()
        iterator.seek_for_prev(ENTRY_PREFIX + b"\xff" * _INDEX.size)
        if not iterator.valid() or not iterator.key().startswith(ENTRY_PREFIX):
            return None
        return _decode_entry(_INDEX.unpack_from(iterator.key(), 1)[0], iterator.value())

    def _check_contiguous(self) -> None:
        if self.last_index == self.base_index:
            return
        iterator = self._db.iter()
        iterator.seek(ENTRY_PREFIX)
        first = _INDEX.unpack_from(iterator.key(), 1)[0]
        if first != self.base_index + 1:
            raise RuntimeError(
                f"journal {self.path} is damaged: its base is {self.base_index} "
                f"but its first entry is {first}"
            )

    def _read_term(self) -> tuple[int, str | None]:
        value = self._db.get(KEY_TERM)
        if value is None:
            return 0, None
        term = _INDEX.unpack_from(value)[0]
        vote = value[_INDEX.size :]
        return term, (vote[1:].decode() if vote[:1] == _VOTE else None)

    def _set_base(self, raft_index: int, term: int) -> None:
        self.base_index, self.base_term = raft_index, term
        self.last_index = max(self.last_index, raft_index)
        self._batch.put(KEY_BASE, _BASE.pack(raft_index, term))

    def _delete_range(self, first: int, last: int) -> None:
        if first <= last:
            self._batch.delete_range(entry_key(first), entry_key(last + 1))
