"""The charts' figures: sampled on the event loop every chart_interval_seconds from the counters
/metrics exposes, the last chart_points samples kept (a ring), and who leads (for the cluster
page's last failover)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

from fe.console.limits import ConsoleLimits

logger = logging.getLogger(__name__)


class Charts:
    def __init__(self, limits: ConsoleLimits):
        self.limits = limits
        self._samples: deque[dict] = deque(maxlen=limits.chart_points)
        self._last: tuple[float, int, int] | None = None  # (time, statements, journal id)
        self._task: asyncio.Task | None = None
        self.leader: str | None = None
        self._leader_address: str | None = None
        self.last_failover: str | None = None  # when this FE last saw the leader change

    def start(self, services) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sample_forever(services))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _sample_forever(self, services) -> None:
        while True:
            try:
                self.sample(services)
            except Exception:  # noqa: BLE001 - a chart must not take the FE down
                logger.exception("console: sampling the charts failed")
            await asyncio.sleep(self.limits.chart_interval_seconds)

    def sample(self, services) -> None:
        now = time.time()
        statements = services.metrics.queries_total()
        journal_id = services.catalog.journal_id
        sample: dict = {"time": now, "statements": None, "commits": None}
        if self._last is not None:
            then, statements_then, journal_then = self._last
            elapsed = max(now - then, 1e-3)
            sample["statements"] = round((statements - statements_then) / elapsed, 2)
            sample["commits"] = round(max(journal_id - journal_then, 0) / elapsed, 2)
        self._last = (now, statements, journal_id)
        sample["lag"] = _lags(services, journal_id)
        sample["newest"] = journal_id + sample["lag"][services.this.name]
        sample["visible"] = _visible_p99_ms(services)
        self._note_leader(services)
        self._samples.append(sample)

    def _note_leader(self, services) -> None:
        address = str(services.journal.status().leader or "")
        if not address:
            return
        if self._leader_address is not None and address != self._leader_address:
            self.last_failover = time.strftime("%Y-%m-%d %H:%M:%S")
            logger.info("console: the leader is now %s (was %s)", address, self._leader_address)
        self._leader_address = address
        self.leader = next(
            (f.name for f in list(services.catalog.frontends.values())
             if f"{f.host}:{f.edit_log_port}" == address),
            address,
        )  # fmt: skip

    def seconds_behind(self, journal_id: int) -> float | None:
        """How long ago the cluster's journal first passed journal_id (0 if it has not): how far
        behind in seconds an FE that replayed up to journal_id is; None if beyond the samples."""
        samples = list(self._samples)
        if not samples or samples[-1]["newest"] <= journal_id:
            return 0.0
        for sample in samples:
            if sample["newest"] > journal_id:
                return None if sample is samples[0] else time.time() - sample["time"]
        return 0.0

    def series(self) -> dict:
        """uPlot's shape: one time axis, each series aligned to it (None where unknown)."""
        samples = list(self._samples)
        times = [round(s["time"], 3) for s in samples]

        def keyed(field: str) -> dict[str, list]:
            names = sorted({name for s in samples for name in s[field]})
            return {name: [s[field].get(name) for s in samples] for name in names}

        return {
            "time": times,
            "statements": [s["statements"] for s in samples],
            "commits": [s["commits"] for s in samples],
            "lag": keyed("lag"),
            "visible": keyed("visible"),
        }


def _lags(services, own_journal_id: int) -> dict[str, int]:
    """Entries each other FE's journal is behind the newest one seen (followers, observers)."""
    seen = dict(services.frontends.seen)
    newest = max([own_journal_id, *(s.journal_id for s in seen.values() if s.alive)])
    lags = {services.this.name: newest - own_journal_id}
    for name, s in seen.items():
        if s.alive:
            lags[name] = newest - s.journal_id
    return lags


def _visible_p99_ms(services) -> dict[str, float]:
    """Each CN's commit-to-visible p99 over its last commits, in ms."""
    found = {}
    percentiles = getattr(services.data_plane, "cn_visible_percentiles", None)
    if percentiles is not None:  # sampled every second: not the CN's whole figures
        p99 = percentiles().get("visible_p99_us")
        if p99 is not None:
            found["cn (this process)"] = round(p99 / 1000, 3)
    backends = services.backends
    if backends is not None:
        for backend_id, heard in list(backends.heard.items()):
            p99 = dict(heard.stats).get("visible_p99_us")
            if heard.alive and p99 is not None:
                found[f"cn {backend_id}"] = round(p99 / 1000, 3)
    return found
