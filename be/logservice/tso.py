"""`TimestampOracle`: int64 timestamps, strictly increasing, never going back.

A hybrid clock: each timestamp is max(previous + 1, wall-clock nanoseconds), so timestamps follow
the wall clock when it moves forward and still increase when it does not. The oracle hands out
only timestamps the log has reserved: before it passes the reservation it commits a new one a
window ahead (`tso_window_ns`), one log write per window rather than per timestamp (PD's scheme).
The reservation is replicated state: a restarted or newly elected leader first commits a
reservation of its own, learns from it every reservation committed before, and starts above them.
An old leader that has not yet noticed its successor may still hand out timestamps from its own
committed window: they are distinct from the new leader's, which start above that window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from be.logservice.errors import BadRequest
from be.logservice.service import LogService


class TimestampOracle:
    def __init__(self, log: LogService, clock: Callable[[], int] = time.time_ns):
        """clock: the wall clock in nanoseconds (a test hands in one that goes back)."""
        self._log = log
        self._clock = clock
        self._window = log.limits.tso_window_ns
        self._max_count = log.limits.tso_max_count
        self._lock = threading.Lock()
        self._last = 0  # the last timestamp handed out
        self._reserved = 0  # this leader's committed reservation; 0: none in this term
        self._term = -1

    def start_above(self, ts: int) -> None:
        """Hand out only timestamps above ts (the newest a replayed log holds, which a log
        written before any reservation may hold above them)."""
        with self._lock:
            self._last = max(self._last, ts)

    def next(self, count: int = 1, may_reserve: bool = True) -> int:
        """The first of count consecutive timestamps, all above every one handed out before.
        NotLeader on a replica that does not lead; LogUnavailable if no reservation commits;
        ReservationDue, not waiting for the log, if the reservation must grow and may_reserve
        is False."""
        if not 0 < count <= self._max_count:
            raise BadRequest(f"timestamps are taken 1 to {self._max_count} at a time")
        with self._lock:
            self._follow_term()
            while True:
                first = max(self._last + 1, self._clock())
                last = first + count - 1
                if last <= self._reserved:
                    self._last = last
                    return first
                if not may_reserve:
                    raise ReservationDue("the timestamps reserved are used up")
                self._reserve(last + self._window)

    def reserve_ahead(self) -> None:
        """Grow the reservation now if it covers less than half a window ahead of the clock (so
        that next(may_reserve=False) finds room)."""
        with self._lock:
            self._follow_term()
            first = max(self._last + 1, self._clock())
            if first + self._window // 2 > self._reserved:
                self._reserve(first + self._window)

    def _follow_term(self) -> None:
        """Under the lock: another leader may have reserved since this one did: reserve again."""
        term = self._log.leader_term()
        if term != self._term:
            self._term, self._reserved = term, 0

    def _reserve(self, until: int) -> None:
        """Under the lock: commit a reservation up to until, learning every one before it (one
        this leader did not make may have handed out timestamps up to its end; its own, only
        up to _last)."""
        previous = self._log.reserve_timestamps(until)
        if previous > self._reserved:
            self._last = max(self._last, previous)
        self._reserved = max(previous, until)


class ReservationDue(Exception):
    """next() would have to wait for the log to reserve more timestamps."""
