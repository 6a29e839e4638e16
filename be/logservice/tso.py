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

    def next(self, count: int = 1) -> int:
        """The first of count consecutive timestamps, all above every one handed out before.
        NotLeader on a replica that does not lead; LogUnavailable if no reservation commits."""
        if not 0 < count <= self._max_count:
            raise BadRequest(f"timestamps are taken 1 to {self._max_count} at a time")
        with self._lock:
            term = self._log.leader_term()
            if term != self._term:  # another leader may have reserved since: reserve again
                self._term, self._reserved = term, 0
            while True:
                first = max(self._last + 1, self._clock())
                last = first + count - 1
                if last <= self._reserved:
                    self._last = last
                    return first
                until = last + self._window
                previous = self._log.reserve_timestamps(until)
                self._last = max(self._last, previous)
                self._reserved = max(previous, until)
