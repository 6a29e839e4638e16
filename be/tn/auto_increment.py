"""AUTO_INCREMENT values, handed out by the TN: per table the next value, never handed out twice.

A value is taken when a statement asks (as MySQL does, before its transaction commits), so two
sessions never get the same one. The counter is not logged on its own: every committed row holds
its value in the log, and replaying the log observes the largest one (a checkpoint keeps the
counters, as the log behind it is gone), so after a restart the counter starts above every value
a committed row holds (values taken by statements that never
committed may come again, as in MySQL before 8.0)."""

from __future__ import annotations

import threading

from be.tn.errors import CommitTooLarge


class AutoIncrements:
    def __init__(self, max_values_at_once: int):
        assert max_values_at_once > 0
        self.max_values_at_once = max_values_at_once
        self._next: dict[int, int] = {}  # table id -> the next value to hand out
        self._lock = threading.Lock()

    def take(self, table_id: int, count: int) -> int:
        """The first of count consecutive values for table_id's AUTO_INCREMENT column."""
        assert table_id > 0 and count > 0
        if count > self.max_values_at_once:
            raise CommitTooLarge(
                f"a statement may take at most {self.max_values_at_once} AUTO_INCREMENT values"
            )
        with self._lock:
            first = self._next.get(table_id, 1)
            self._next[table_id] = first + count
        return first

    def counters(self) -> list[tuple[int, int]]:
        """(table id, next value) of every table (what a checkpoint keeps)."""
        with self._lock:
            return sorted(self._next.items())

    def observe(self, table_id: int, largest: int) -> None:
        """A committed row holds largest: the counter moves past it (an explicit value, or one
        replayed from the log)."""
        with self._lock:
            if largest >= self._next.get(table_id, 1):
                self._next[table_id] = largest + 1
