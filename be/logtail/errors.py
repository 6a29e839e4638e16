"""What the logtail room raises, as kinds of its own: the TN and CN decide what each means."""

from __future__ import annotations


class LogtailError(Exception):
    pass


class LogtailFormatError(LogtailError):
    """Bytes that are not a valid logtail message of a version this build reads, or a message over
    a limit."""


class ResponseTooLarge(LogtailError):
    """A pull would pass its byte cap: the TN flushes (and checkpoints) and the caller asks again."""

    def __init__(self, table_ids: frozenset[int], from_ts: int, to_ts: int, max_bytes: int):
        super().__init__(
            f"logtail for tables {sorted(table_ids)} in ({from_ts}, {to_ts}] is over {max_bytes} bytes"
        )
        self.table_ids = table_ids
        self.from_ts = from_ts
        self.to_ts = to_ts
        self.max_bytes = max_bytes


class LogtailTableFull(LogtailError):
    """The logtail table keeps as many bytes as it may: a checkpoint must release some first."""


class PublishTimedOut(LogtailError):
    """The push server's queue of commits to send stayed full for the publish timeout."""


class AuthenticationFailed(LogtailError):
    """The other end of a logtail stream did not prove it holds the cluster token."""


class LogtailClosed(LogtailError):
    """The push server or subscriber was closed."""


class CheckpointUnreadable(LogtailError):
    """The checkpoint a subscription starts from could not be read (a newer one replaced it, the
    store failed): the subscriber reconnects and subscribes again."""
