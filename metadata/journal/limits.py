"""Every bound and timeout of the replicated journal, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


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
