"""Reading committed entries of a running journal from any thread, straight from RocksDB.

`RocksJournal`'s own readers serve pysyncobj from the journal's thread and share its in-memory
tail; the logservice's readers run in the TN's threads. They read RocksDB through an iterator,
which sees one consistent snapshot, and only entries the journal has flushed (committed entries
always are on the leader; a follower's are within a tick). The journal exposes no public reader
of this kind yet, so this module is the one place that reaches into it.
"""

from __future__ import annotations

from collections.abc import Iterator

from metadata.journal.log import ENTRY_PREFIX, REGULAR_COMMAND, RocksJournal, entry_key
from metadata.journal.replicated import ReplicatedJournal

_TERM_BYTES = 8  # an entry's value: its term (big-endian), then pysyncobj's command


def rocks_journal(journal: ReplicatedJournal) -> RocksJournal:
    rocks = journal._journal
    assert rocks is not None, "the journal is not started"
    return rocks


def first_stored_index(journal: ReplicatedJournal) -> int:
    """The raft index of the oldest entry still on disk."""
    return rocks_journal(journal).first_index


def durable_last_index(journal: ReplicatedJournal) -> int:
    return rocks_journal(journal).durable_last_index


def stored_payloads(
    journal: ReplicatedJournal, first: int, last: int
) -> Iterator[tuple[int, bytes | None]]:
    """(raft_index, payload) of the entries first..last on disk, in raft order; payload None for
    raft's own commands. Starts past first if entries from first on were dropped meanwhile."""
    assert 0 < first, first
    iterator = rocks_journal(journal)._db.iter()
    iterator.seek(entry_key(first))
    while iterator.valid():
        key = iterator.key()
        if not key.startswith(ENTRY_PREFIX):
            return
        raft_index = int.from_bytes(key[len(ENTRY_PREFIX) :], "big")
        if raft_index > last:
            return
        command = iterator.value()[_TERM_BYTES:]
        yield raft_index, command[1:] if command[:1] == REGULAR_COMMAND else None
        iterator.next()
