"""TimePrinter: the leader journals its wall clock every meta_delay_toleration_second / 2; a
non-leader whose newest replayed timestamp is older than meta_delay_toleration_second cannot reach
the leader and refuses reads until it catches up."""

from __future__ import annotations

import threading
import time

from be.config import Config
from fe.cluster.write_path import MetadataWriter, repeat_while_leading
from fe.mysql.errors import QueryError
from metadata import ops
from metadata.catalog import Catalog
from metadata.journal.replicated import ReplicatedJournal

MIN_TIMESTAMP_INTERVAL_SECONDS = 0.5


class Freshness:
    def __init__(self, catalog: Catalog, journal: ReplicatedJournal, config: Config):
        self.catalog = catalog
        self.journal = journal
        self.config = config

    def metadata_lag_seconds(self) -> float | None:
        """Seconds between now and the newest TimePrinter entry replayed; None before the first."""
        if self.catalog.last_timestamp_ms == 0:
            return None
        return max(time.time() - self.catalog.last_timestamp_ms / 1000, 0.0)

    def stale_seconds(self) -> float | None:
        """How far behind the leader this non-leader's metadata is, when more than
        meta_delay_toleration_second; None while it is fresh enough."""
        lag = self.metadata_lag_seconds()
        if (
            lag is None
            or lag <= self.config["meta_delay_toleration_second"]
            or self.journal.is_leader()
        ):
            return None
        return lag

    def check_fresh(self) -> None:
        lag = self.stale_seconds()
        if lag is not None:
            tolerance = self.config["meta_delay_toleration_second"]
            raise QueryError(
                1105,
                f"Metadata on this FE is {lag:.0f} s behind the leader (meta_delay_toleration_second="
                f"{tolerance}): it cannot reach the leader, so it refuses reads until it catches up",
            )


class TimePrinter:
    """The leader's wall clock into the journal, at once and then every
    meta_delay_toleration_second / 2."""

    def __init__(self, writer: MetadataWriter, config: Config, stopping: threading.Event):
        self.writer = writer
        self.config = config
        self.stopping = stopping

    def start(self) -> None:
        repeat_while_leading(
            "time-printer", self.writer, self.stopping, self.interval, self.print_time, at_once=True
        )

    def interval(self) -> float:
        return max(self.config["meta_delay_toleration_second"] / 2, MIN_TIMESTAMP_INTERVAL_SECONDS)

    def print_time(self) -> None:
        self.writer.commit_blocking([ops.Timestamp(int(time.time() * 1000))])
