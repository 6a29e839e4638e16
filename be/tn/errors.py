"""What the TN's commit refuses."""

from __future__ import annotations


class CommitError(Exception):
    """A commit that did not happen: nothing of it is visible."""


class WriteConflict(CommitError):
    """Another transaction committed a write to the same row after this one's snapshot."""


class StaleSchema(CommitError):
    """The write names a table at a schema version older than one the TN has seen."""

    FIELDS = ("table_id", "given", "known")  # what a remote node's refusal is made again from

    def __init__(self, table_id: int, given: int, known: int):
        super().__init__(
            f"table {table_id} changed (schema version {known}, the write has {given})"
        )
        self.table_id, self.given, self.known = table_id, given, known


class SnapshotTooOld(CommitError):
    """The transaction's snapshot is older than the TN keeps conflict information for."""


class CommitOverloaded(CommitError):
    """The commit queue is full."""


class CommitTooLarge(CommitError):
    """The write set passes a limit (rows or bytes)."""


class CommitOutcomeUnknown(CommitError):
    """The log did not confirm the commit in time: it may or may not have taken effect."""


class TransactionNodeClosed(CommitError):
    pass


class NoPartitionForRow(CommitError):
    """An inserted row whose partition columns fall in none of the table's partitions (Doris:
    "no partition for this tuple")."""


class FlushFailed(CommitError):
    """The TN must flush before it takes more rows of a table, and the object store refused the
    flush: nothing of the commit happened; what was committed before is kept."""


class CheckpointCorrupt(Exception):
    """A checkpoint the TN cannot read: truncated, damaged or of another version."""


class LoadUnknown(CommitError):
    """A bulk load the TN does not know (never begun, expired, aborted, or begun before the TN
    restarted): its objects are not committed."""


class BadLoad(CommitError):
    """A bulk load's objects do not fit what the TN handed out (row ids, table, names)."""


class TooManyLoads(CommitError):
    """The TN has as many open bulk loads as it keeps."""


class LabelTaken(CommitError):
    """A load begun with a label a load not aborted holds (Doris: "Label Already Exists")."""

    FIELDS = ("label", "txn_id", "state")

    def __init__(self, label: str, txn_id: int, state: str):
        super().__init__(f"Label [{label}] has already been used, relate to txn [{txn_id}]")
        self.label, self.txn_id, self.state = label, txn_id, state


class TimestampsUnavailable(CommitError):
    """The log did not reserve the timestamps a commit needs (it lost its quorum or leader):
    nothing was committed."""
