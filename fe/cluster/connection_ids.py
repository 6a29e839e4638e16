"""Connection ids unique across the cluster: the high bits are the FE's connection prefix (which
the catalog gives it when it is added, and journals), the low bits count its own connections.
KILL of an id another FE owns is sent to that FE."""

from __future__ import annotations

from fe.mysql.errors import QueryError
from metadata.catalog import Catalog
from metadata.records import CONNECTION_PREFIXES, Frontend

COUNTER_BITS = 24
assert CONNECTION_PREFIXES == 1 << (32 - COUNTER_BITS)


def frontend_prefix(catalog: Catalog, name: str) -> int:
    """The high bits of the ids the FE named name gives its connections (0 while it is unknown)."""
    frontend = catalog.frontends.get(name)
    return 0 if frontend is None else max(frontend.connection_prefix, 0)


def owner_of(catalog: Catalog, connection_id: int) -> Frontend | None:
    prefix = connection_id >> COUNTER_BITS
    return next((f for f in catalog.frontends.values() if f.connection_prefix == prefix), None)


def kill_here(front, connection_id: int, query_only: bool, user: str, is_admin: bool) -> None:
    """KILL [QUERY] of a connection of this FE, as user."""
    target = next((p for p in front.processlist() if p.id == connection_id), None)
    if target is None:
        raise QueryError(1094, f"Unknown thread id: {connection_id}")
    if target.user != user and not is_admin:
        raise QueryError(1095, f"You are not owner of thread {connection_id}")
    front.kill(connection_id, query_only)
