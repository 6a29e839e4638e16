"""The truncation worker: one thread per replica that drops entries below the truncate point.

A truncate request only records the truncate point in the replicated state (the seed's scheme).
Each replica's worker then, every `truncate_interval`, saves the state (so that a restart replays
from it instead of from the first entry) and drops the entries that are below the truncate point,
covered by the saved state and at least `truncate_keep_entries` behind the applied index. A
replica never drops an entry the TN may still read from its last truncate point.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from be.logservice.errors import LogServiceError
from metadata.journal.errors import JournalError

logger = logging.getLogger(__name__)


class TruncationWorker:
    def __init__(self, run_once: Callable[[], object], interval: float, name: str):
        assert interval > 0
        self._run_once = run_once
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._run_once()
            except (LogServiceError, JournalError, OSError) as error:
                logger.warning("log truncation postponed: %s", error)
