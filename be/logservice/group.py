"""Group append: the records of concurrent appends share one journal entry.

Appends that arrive while earlier groups are being committed join the open group; when a group's
commit settles, the open one goes to the journal. With `max_groups_in_flight` groups committing,
the others' records wait in the open group, up to `max_records_per_append` records and
`max_append_bytes` bytes; a call that does not fit starts the next group, and a call that would
start one more than `max_groups_waiting` is refused at once. Every call's records
stay together and in order within its group, so their LSNs are consecutive (see `lsn`).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from be.logservice.entries import encode_append
from be.logservice.errors import LogUnavailable

logger = logging.getLogger(__name__)

Submit = Callable[[bytes, Callable[[object, Exception | None], None]], None]


Appended = Callable[[tuple[int, int] | None, Exception | None], None]


class _Group:
    __slots__ = ("records", "size", "appended")

    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.size = 0
        self.appended: list[tuple[int, Appended]] = []  # per call: its records' position, callback


class GroupAppender:
    def __init__(
        self,
        submit: Submit,
        max_records: int,
        max_bytes: int,
        max_groups_in_flight: int,
        max_groups_waiting: int,
    ):
        assert max_records > 0 and max_bytes > 0
        assert max_groups_in_flight > 0 and max_groups_waiting > 0
        self._submit = submit
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._max_in_flight = max_groups_in_flight
        self._max_waiting = max_groups_waiting
        self._lock = threading.Lock()
        self._in_flight = 0
        self._waiting: deque[_Group] = deque()  # full or open groups, oldest first

    def append(self, records: list[bytes], timeout: float) -> tuple[int, int] | None:
        """Add records to a group and wait for its commit: (first LSN of the group, position of
        these records in it). None if it did not settle in time. Raises the group's error."""
        settled = threading.Event()
        outcome: list = []

        def appended(result: tuple[int, int] | None, error: Exception | None) -> None:
            outcome.append((result, error))
            settled.set()

        self.append_then(records, appended)
        if not settled.wait(timeout):
            return None
        result, error = outcome[0]
        if error is not None:
            raise error
        return result

    def append_then(self, records: list[bytes], appended: Appended) -> None:
        """Add records to a group; appended((first LSN of the group, position of these records
        in it), None) once it is committed, or appended(None, error), in the journal's thread
        (or the caller's, if the journal refuses the group at once). Raises LogUnavailable
        when too many groups wait (appended is not called then)."""
        size = sum(len(record) for record in records)
        assert 0 < len(records) <= self._max_records and size <= self._max_bytes
        with self._lock:
            group = self._waiting[-1] if self._waiting else None
            if (
                group is None
                or len(group.records) + len(records) > self._max_records
                or group.size + size > self._max_bytes
            ):
                if len(self._waiting) >= self._max_waiting:
                    raise LogUnavailable(
                        f"{len(self._waiting)} full groups of appends are waiting; retry later"
                    )
                group = _Group()
                self._waiting.append(group)
            group.appended.append((len(group.records), appended))
            group.records.extend(records)
            group.size += size
            ready = self._take_ready()
        for taken in ready:
            self._send(taken)

    def _take_ready(self) -> list[_Group]:
        """Under the lock: the groups to submit now, counted as in flight."""
        ready = []
        while self._waiting and self._in_flight < self._max_in_flight:
            ready.append(self._waiting.popleft())
            self._in_flight += 1
        return ready

    def _send(self, group: _Group) -> None:
        def settled(result: object, error: Exception | None) -> None:
            if error is None and isinstance(result, Exception):
                error = result
            if error is None:
                assert isinstance(result, int), result
            with self._lock:
                self._in_flight -= 1
                ready = self._take_ready()
            for taken in ready:
                self._send(taken)
            for position, appended in group.appended:
                try:
                    appended(None if error is not None else (result, position), error)
                except Exception:
                    logger.exception("an appender's callback failed")

        self._submit(encode_append(group.records), settled)
