"""The statements this FE ran last, from every client (MySQL connections, the web console), for
the console's Sessions page: who, which connection, how long, and how it ended. A ring of
statement_history_size entries; the text is kept as it came and redacted when shown."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from fe.mysql.redact import without_secrets

MAX_SHOWN_CHARS = 500


@dataclass(frozen=True, slots=True)
class Ran:
    started: float  # wall clock
    seconds: float
    user: str
    connection_id: int
    database: str
    text: object  # the statement's SQL, or the prepared statement it executed
    error: int  # 0, or the MySQL error code it ended with

    @property
    def sql(self) -> str:
        text = self.text if isinstance(self.text, str) else getattr(self.text, "sql", "?")
        text = without_secrets(text[: MAX_SHOWN_CHARS * 4])
        return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


class StatementHistory:
    def __init__(self, size: int):
        assert size > 0
        self._ran: deque[tuple] = deque(maxlen=size)  # Ran's fields: a tuple is made faster

    def add(self, session, text, started: float, seconds: float, error: int) -> None:
        self._ran.append((
            started, seconds, session.username or "", session.connection_id,
            session.database or "", text, error,
        ))  # fmt: skip

    def seen_by(self, user: str | None) -> list[Ran]:
        """The newest first; only user's own unless user is None (an admin sees all)."""
        return [Ran(*ran) for ran in reversed(list(self._ran)) if user is None or ran[2] == user]


def wall_clock() -> float:
    return time.time()
