"""What an LSN is: the raft index of the journal entry holding a record, and the record's position
in that entry.

One append is one journal entry, so its records get consecutive LSNs, and LSNs increase with raft
order. Entries that hold no records (truncate points, timestamp reservations, raft's own no-ops)
take raft indexes too, so LSNs are increasing but not contiguous across appends. Reading from an
LSN needs no index: its raft index is the LSN shifted right.
"""

from __future__ import annotations

POSITION_BITS = 16
MAX_RECORDS_PER_ENTRY = 1 << POSITION_BITS
MAX_RAFT_INDEX = (1 << (63 - POSITION_BITS)) - 1  # LSNs stay int64


def lsn_of(raft_index: int, position: int = 0) -> int:
    assert 0 < raft_index <= MAX_RAFT_INDEX, raft_index
    assert 0 <= position < MAX_RECORDS_PER_ENTRY, position
    return (raft_index << POSITION_BITS) | position


def raft_index_of(lsn: int) -> int:
    assert lsn >= 0, lsn
    return lsn >> POSITION_BITS


def position_of(lsn: int) -> int:
    return lsn & (MAX_RECORDS_PER_ENTRY - 1)
