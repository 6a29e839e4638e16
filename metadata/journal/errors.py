"""What the replicated journal raises when it cannot take or commit an entry."""

from __future__ import annotations


class JournalError(Exception):
    """The journal could not take or commit an entry."""


class NotLeaderError(JournalError):
    def __init__(self, leader: str | None, detail: str = "this node is not the journal leader"):
        super().__init__(f"{detail} (leader: {leader or 'unknown'})")
        self.leader = leader


class JournalFullError(JournalError):
    """Too many submissions are waiting; retry later."""


class PayloadTooLargeError(JournalError):
    pass


class JournalTimeoutError(JournalError):
    """No outcome in time; the entry may still commit later."""


class JournalClosedError(JournalError):
    pass
