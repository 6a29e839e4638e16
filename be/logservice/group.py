"""Group append: the records of concurrent appends share one journal entry.

Appends that arrive while earlier groups are being committed join the open group; when a group's
commit settles, the open one goes to the journal. With `max_groups_in_flight` groups committing,
the others' records wait in the open group, up to `max_records_per_append` records and
`max_append_bytes` bytes; a call that does not fit starts the next group, and a call that would
start one more than `max_groups_waiting` is refused at once. Every call's records
stay together and in order within its group, so their LSNs are consecutive (see `lsn`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from be.logservice.entries import encode_append
from be.logservice.errors import LogUnavailable

Submit = Callable[[bytes, Callable[[object, Exception | None], None]], None]


class _Group:
    __slots__ = ("records", "size", "settled", "first_lsn", "error")

    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.size = 0
        self.settled = threading.Event()
        self.first_lsn: int | None = None
        self.error: Exception | None = None


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
            position = len(group.records)
            group.records.extend(records)
            group.size += size
            ready = self._take_ready()
        for taken in ready:
            self._send(taken)
        if not group.settled.wait(timeout):
            return None
        if group.error is not None:
            raise group.error
        assert group.first_lsn is not None
        return group.first_lsn, position

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
                group.first_lsn = result
            group.error = error
            group.settled.set()
            with self._lock:
                self._in_flight -= 1
                ready = self._take_ready()
            for taken in ready:
                self._send(taken)

        self._submit(encode_append(group.records), settled)
