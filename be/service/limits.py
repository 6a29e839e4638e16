"""Every bound and timeout of the node service, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceLimits:
    max_message_bytes: int = 256 << 20  # one request or reply (a write set, a snapshot)
    max_unauthenticated_message_bytes: int = 4 << 10  # before the token is proven
    max_columns: int = 4096
    max_rows: int = 1 << 24  # rows of one table in a message
    max_connections: int = 256  # accepted by a node at once
    max_pool_connections: int = 16  # a client's idle connections kept per node
    max_in_flight: int = 64  # a client's requests in flight at once, all nodes together
    handshake_timeout: float = 5.0
    connect_timeout: float = 2.0
    request_timeout: float = 60.0  # a reply not come by then: the connection is dropped
    max_read_wait: float = 30.0  # a snapshot waits at most this long for the CN's watermark
    read_threads: int = 8  # snapshots a node builds at once
    query_workers: int = 4  # queries a CN runs at once
    query_queue_size: int = 64  # queries waiting for one of those beyond which a CN refuses more
    query_engine_threads: int = 1  # DuckDB threads one query may use
    max_query_memory_bytes: int = 2 << 30  # one query's, its result's included (below the FE's)
    max_query_chars: int = 16 << 20  # a query's SQL text
    max_query_tables: int = 256  # tables one query reads (and as many the FE gives)
    max_stats_tables: int = 256  # tables one tablet statistics request asks about

    def __post_init__(self) -> None:
        rules = {
            "0 < max_unauthenticated_message_bytes <= max_message_bytes": (
                0 < self.max_unauthenticated_message_bytes <= self.max_message_bytes
            ),
            "max_columns > 1": self.max_columns > 1,
            "max_rows > 0": self.max_rows > 0,
            "max_connections > 0": self.max_connections > 0,
            "0 < max_pool_connections <= max_in_flight": (
                0 < self.max_pool_connections <= self.max_in_flight
            ),
            "0 < handshake_timeout": self.handshake_timeout > 0,
            "0 < connect_timeout": self.connect_timeout > 0,
            "0 < max_read_wait < request_timeout": 0 < self.max_read_wait < self.request_timeout,
            "read_threads > 0": self.read_threads > 0,
            "query_workers > 0": self.query_workers > 0,
            "query_queue_size >= 0": self.query_queue_size >= 0,
            "query_engine_threads > 0": self.query_engine_threads > 0,
            "max_query_memory_bytes > 0": self.max_query_memory_bytes > 0,
            "max_query_chars > 0": self.max_query_chars > 0,
            "max_query_tables > 0": self.max_query_tables > 0,
            "max_stats_tables > 0": self.max_stats_tables > 0,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"service limits must satisfy: {', '.join(broken)}")

    @classmethod
    def from_config(cls, config) -> ServiceLimits:
        return cls(
            max_message_bytes=config["node_max_message_bytes"],
            max_connections=config["node_max_connections"],
            max_read_wait=config["cn_max_read_wait_ms"] / 1000,
            query_workers=config["cn_query_workers"],
            query_queue_size=config["cn_query_queue_size"],
            query_engine_threads=config["cn_query_engine_threads"],
            max_query_memory_bytes=config["cn_query_max_memory_bytes"],
            max_query_chars=min(16 << 20, config["node_max_message_bytes"] // 2),
        )
