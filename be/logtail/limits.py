"""Every bound and timeout of the logtail room, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogtailLimits:
    # Messages (the format), on the TN's log and on the stream alike.
    max_message_bytes: int = 64 << 20
    max_unauthenticated_message_bytes: int = 4 << 10  # a stream's frames before the token is proven
    max_tables_per_commit: int = 4096
    max_rows_per_batch: int = 1 << 20  # rows of one table's inserts (or deletes) in a commit
    max_columns_per_batch: int = 4096
    max_tables_per_request: int = 4096  # table ids in one subscribe or unsubscribe
    max_commits_per_response: int = 1 << 20
    # The logtail table (pull).
    page_size: int = 256  # commits per page
    max_response_bytes: int = 32 << 20  # a pull past it is refused: the TN flushes first
    soft_kept_bytes: int = 256 << 20  # past it the table asks for a checkpoint
    max_kept_bytes: int = 1 << 30  # past it the table refuses commits until a checkpoint
    # The push stream.
    heartbeat_interval: float = 0.005  # the TN's empty commits; the subscriber's idle check uses it
    send_queue_frames: int = 1024  # per CN; a CN further behind is disconnected
    send_queue_bytes: int = 128 << 20  # per CN
    max_pending_publishes: int = 8192  # commits published but not yet handed to the CN queues
    publish_timeout: float = 5.0  # publish waits this long for room, then raises
    max_connections: int = 256
    max_subscribed_tables: int = 1 << 16  # per CN
    handshake_timeout: float = 5.0
    idle_timeout: float = 5.0  # a subscriber that heard nothing for that long reconnects
    reconnect_min_delay: float = 0.02
    reconnect_max_delay: float = 2.0

    def __post_init__(self) -> None:
        rules = {
            "0 < max_unauthenticated_message_bytes <= max_message_bytes": (
                0 < self.max_unauthenticated_message_bytes <= self.max_message_bytes
            ),
            "max_tables_per_commit > 0": self.max_tables_per_commit > 0,
            "max_rows_per_batch > 0": self.max_rows_per_batch > 0,
            "max_columns_per_batch > 1": self.max_columns_per_batch > 1,
            "max_tables_per_request > 0": self.max_tables_per_request > 0,
            "max_commits_per_response > 0": self.max_commits_per_response > 0,
            "page_size > 0": self.page_size > 0,
            # A response is one message: the cap leaves room for its framing and Arrow's schemas.
            "0 < 2 * max_response_bytes <= max_message_bytes": (
                0 < 2 * self.max_response_bytes <= self.max_message_bytes
            ),
            "0 < soft_kept_bytes <= max_kept_bytes": 0
            < self.soft_kept_bytes
            <= self.max_kept_bytes,
            "heartbeat_interval > 0": self.heartbeat_interval > 0,
            "idle_timeout >= 10 * heartbeat_interval": (
                self.idle_timeout >= 10 * self.heartbeat_interval
            ),
            "send_queue_frames > 0": self.send_queue_frames > 0,
            "send_queue_bytes >= max_message_bytes": self.send_queue_bytes
            >= self.max_message_bytes,
            "max_pending_publishes > 0": self.max_pending_publishes > 0,
            "publish_timeout > 0": self.publish_timeout > 0,
            "max_connections > 0": self.max_connections > 0,
            "max_subscribed_tables >= max_tables_per_request": (
                self.max_subscribed_tables >= self.max_tables_per_request
            ),
            "handshake_timeout > 0": self.handshake_timeout > 0,
            "0 < reconnect_min_delay <= reconnect_max_delay": (
                0 < self.reconnect_min_delay <= self.reconnect_max_delay
            ),
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"logtail limits must satisfy: {', '.join(broken)}")

    @classmethod
    def from_config(cls, config) -> LogtailLimits:
        """The limits an operator sets in conf/be.conf; the others keep their defaults."""
        max_message_bytes = max(cls.max_message_bytes, 2 * config["logtail_max_response_bytes"])
        return cls(
            heartbeat_interval=config["logtail_heartbeat_interval_millisecond"] / 1000,
            page_size=config["logtail_page_size"],
            max_response_bytes=config["logtail_max_response_bytes"],
            max_message_bytes=max_message_bytes,
            send_queue_frames=config["logtail_send_queue_size"],
            send_queue_bytes=max(cls.send_queue_bytes, 2 * max_message_bytes),
        )
