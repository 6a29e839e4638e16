"""Every bound of the TN's commit pipeline, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommitLimits:
    max_queued_commits: int = 4096  # waiting for the committer; past it a commit is refused
    max_group_commits: int = 256  # write sets committed with one log append
    max_group_bytes: int = 4 << 20  # their log records together: one log append
    max_record_bytes: int = 1 << 20  # one commit's log record
    max_commit_rows: int = 1_000_000  # rows inserted plus deleted by one write set
    max_commit_bytes: int = 256 << 20  # Arrow bytes of one write set
    commit_timeout_seconds: float = 30.0  # a commit not logged by then: outcome unknown
    heartbeat_interval_seconds: float = 0.005  # an idle TN consumes a timestamp this often
    # A TN whose only CN shares its process heartbeats this often, and when a read waits for one.
    idle_check_seconds: float = 0.05
    # A write set up to max_caller_commit_bytes may be committed on its caller's thread (the
    # FE's event loop: pipeline.py's callers' turn), which waits log_wait_on_caller_seconds for
    # the log's answer there; a slower one is taken up when it comes.
    max_caller_commit_bytes: int = 64 << 10
    log_wait_on_caller_seconds: float = 0.005
    # Conflict information (deleted rows, key writes) is kept this long; a transaction whose
    # snapshot is older is refused at commit.
    max_transaction_seconds: float = 3600.0
    max_remembered_requests: int = 100_000  # request ids answered again without a second commit
    max_request_id_bytes: int = 64
    log_read_bytes: int = 16 << 20  # one read of the log while replaying
    # Flush: a table's unflushed rows and deletes become objects past any of these.
    flush_rows: int = 1_000_000
    flush_bytes: int = 128 << 20
    flush_interval_seconds: float = 300.0
    flush_retry_seconds: float = 1.0  # after the store refused a flush, the next try waits this
    checkpoint_interval_seconds: float = 600.0  # a checkpoint, then the log truncated behind it
    # Objects a merge replaced are deleted this long after it (snapshots older than the merge
    # read them until then); at least as long as a transaction may last.
    merged_object_retention_seconds: float = 3600.0
    max_pending_deletions: int = 100_000  # replaced objects waiting to be deleted
    # How often the TN looks for a tablet whose tombstones to compact (be/tn/compaction.py).
    compaction_check_interval_seconds: float = 1.0
    # Row ids of a table's objects kept to file deletes under their tablets (8 bytes each).
    max_cached_row_ids: int = 16 << 20
    # Bulk loads (be/tn/loads.py): open at once, how long one may stay open, the load records
    # (labels) kept and for how long after they finish.
    max_open_loads: int = 64
    load_timeout_seconds: float = 3600.0
    max_labels: int = 100_000
    label_keep_seconds: float = 259_200.0

    def __post_init__(self) -> None:
        rules = {
            "0 < max_group_commits <= max_queued_commits": (
                0 < self.max_group_commits <= self.max_queued_commits
            ),
            "0 < max_record_bytes <= max_group_bytes": (
                0 < self.max_record_bytes <= self.max_group_bytes
            ),
            "max_commit_rows > 0": self.max_commit_rows > 0,
            "max_commit_bytes > 0": self.max_commit_bytes > 0,
            "commit_timeout_seconds > 0": self.commit_timeout_seconds > 0,
            "0 < heartbeat_interval_seconds < commit_timeout_seconds": (
                0 < self.heartbeat_interval_seconds < self.commit_timeout_seconds
            ),
            "heartbeat_interval_seconds <= idle_check_seconds < commit_timeout_seconds": (
                self.heartbeat_interval_seconds
                <= self.idle_check_seconds
                < self.commit_timeout_seconds
            ),
            "0 <= max_caller_commit_bytes <= max_commit_bytes": (
                0 <= self.max_caller_commit_bytes <= self.max_commit_bytes
            ),
            "0 <= log_wait_on_caller_seconds < commit_timeout_seconds": (
                0 <= self.log_wait_on_caller_seconds < self.commit_timeout_seconds
            ),
            "max_transaction_seconds > commit_timeout_seconds": (
                self.max_transaction_seconds > self.commit_timeout_seconds
            ),
            "max_remembered_requests > max_queued_commits": (
                self.max_remembered_requests > self.max_queued_commits
            ),
            "max_request_id_bytes > 0": self.max_request_id_bytes > 0,
            "log_read_bytes > 0": self.log_read_bytes > 0,
            "flush_rows > 0 and flush_bytes > 0": self.flush_rows > 0 and self.flush_bytes > 0,
            "flush_interval_seconds > 0": self.flush_interval_seconds > 0,
            "checkpoint_interval_seconds > 0": self.checkpoint_interval_seconds > 0,
            "merged_object_retention_seconds > 0": self.merged_object_retention_seconds > 0,
            "max_pending_deletions > 0": self.max_pending_deletions > 0,
            "0 < compaction_check_interval_seconds <= max_transaction_seconds": (
                0 < self.compaction_check_interval_seconds <= self.max_transaction_seconds
            ),
            "max_cached_row_ids > 0": self.max_cached_row_ids > 0,
            "0 < flush_retry_seconds <= flush_interval_seconds": (
                0 < self.flush_retry_seconds <= self.flush_interval_seconds
            ),
        }
        rules["max_open_loads > 0 and load_timeout_seconds > 0"] = (
            self.max_open_loads > 0 and self.load_timeout_seconds > 0
        )
        rules["max_labels >= max_open_loads and label_keep_seconds > 0"] = (
            self.max_labels >= self.max_open_loads and self.label_keep_seconds > 0
        )
        broken = [rule for rule, holds in rules.items() if not holds]
        assert not broken, f"CommitLimits break: {', '.join(broken)}"
