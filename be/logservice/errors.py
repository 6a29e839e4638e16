"""What the logservice raises; `fe` maps these to MySQL errors."""

from __future__ import annotations


class LogServiceError(Exception):
    """The logservice could not do what was asked."""


class LogUnavailable(LogServiceError):
    """No leader, no quorum, a full queue or no answer in time: an append may or may not have
    been appended, and a retry may duplicate it."""


class NotLeader(LogUnavailable):
    def __init__(self, leader: str | None):
        super().__init__(f"this replica does not lead the log (leader: {leader or 'unknown'})")
        self.leader = leader


class LogClosed(LogServiceError):
    pass


class RecordTooLarge(LogServiceError):
    """A record, or the records of one append, over the limits; nothing was appended."""


class BadRequest(LogServiceError):
    """An argument outside what the limits allow (a read's max_bytes, a timestamp count)."""


class LsnTruncated(LogServiceError):
    """The records asked for are no longer kept: read from the truncate point on."""

    def __init__(self, first_lsn: int, first_kept_lsn: int):
        super().__init__(
            f"LSN {first_lsn} is truncated: the log keeps records from LSN {first_kept_lsn} on"
        )
        self.first_lsn = first_lsn
        self.first_kept_lsn = first_kept_lsn


class LogCorrupted(LogServiceError):
    """An entry or the state file that cannot be decoded."""
