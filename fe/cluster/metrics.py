"""Prometheus metrics of one FE (its own registry, so several nodes can live in one process)."""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from metadata.catalog import Catalog


class Metrics:
    def __init__(
        self,
        catalog: Catalog,
        connection_count: Callable[[], int],
        seconds_since_checkpoint: Callable[[], float],
        is_leader: Callable[[], bool],
        cn_stats: Callable[[], dict[str, int]] | None = None,
    ):
        """cn_stats: the figures of a CN in this process (`quire up`), as quire_cn_* gauges."""
        self.registry = CollectorRegistry()
        self.queries = 0  # plain counts (each statement counts: a Counter's lock costs too much)
        self.query_errors = 0
        self.rows_answered = 0  # rows of clients' SELECT answers
        self.registry.register(StatementCounts(self))
        if cn_stats is not None:
            self.registry.register(ComputeNodeFigures(cn_stats))
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
        self.queries += 1

    def query_failed(self) -> None:
        self.query_errors += 1

    def queries_total(self) -> int:
        return self.queries

    def render(self) -> bytes:
        return generate_latest(self.registry)


class StatementCounts:
    """The statement counters of a Metrics, as Prometheus Counters show them."""

    def __init__(self, metrics: Metrics):
        self.metrics = metrics
        self.created = time.time()

    def collect(self):
        created = self.created
        metrics = self.metrics
        yield CounterMetricFamily(
            "quire_queries", "Statements received", value=metrics.queries, created=created
        )
        yield CounterMetricFamily(
            "quire_query_errors",
            "Statements that failed",
            value=metrics.query_errors,
            created=created,
        )
        yield CounterMetricFamily(
            "quire_query_rows",
            "Rows of SELECT answers sent to clients",
            value=metrics.rows_answered,
            created=created,
        )


class ComputeNodeFigures:
    """A CN's own figures (be/cn/node.py's stats: tables followed, bytes kept and cached, ...)."""

    def __init__(self, stats: Callable[[], dict[str, int]]):
        self.stats = stats

    def collect(self):
        for name, value in sorted(self.stats().items()):
            yield GaugeMetricFamily(f"quire_cn_{name}", f"The CN's {name}", value=value)
