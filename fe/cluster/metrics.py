"""Prometheus metrics of one FE (its own registry, so several nodes can live in one process)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from metadata.catalog import Catalog


class Metrics:
    def __init__(
        self,
        catalog: Catalog,
        connection_count: Callable[[], int],
        seconds_since_checkpoint: Callable[[], float],
        is_leader: Callable[[], bool],
    ):
        self.registry = CollectorRegistry()
        self._queries = Counter("quire_queries", "Statements received", registry=self.registry)
        self._errors = Counter(
            "quire_query_errors", "Statements that failed", registry=self.registry
        )
        Gauge(
            "quire_journal_id", "Id of the last applied journal operation", registry=self.registry
        ).set_function(lambda: catalog.journal_id)
        Gauge("quire_connections", "Open MySQL connections", registry=self.registry).set_function(
            connection_count
        )
        Gauge(
            "quire_checkpoint_age_seconds",
            "Seconds since the last image was written",
            registry=self.registry,
        ).set_function(seconds_since_checkpoint)
        Gauge("quire_tables", "Tables in the catalog", registry=self.registry).set_function(
            lambda: len(catalog.tables)
        )
        Gauge("quire_is_leader", "1 on the leader", registry=self.registry).set_function(
            lambda: 1 if is_leader() else 0
        )

    def query_started(self) -> None:
        self._queries.inc()

    def query_failed(self) -> None:
        self._errors.inc()

    def queries_total(self) -> int:
        return int(self._queries._value.get())

    def render(self) -> bytes:
        return generate_latest(self.registry)
