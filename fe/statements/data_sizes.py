"""Rows and bytes of a table's tablets, as the data plane counts them (SHOW DATA, SHOW TABLETS,
SHOW TABLE STATUS and the web console read them here)."""

from __future__ import annotations

from be.table_schema import TableSchema
from metadata.records import Table


def tablet_stats(session, table: Table) -> dict[int, tuple[int, int]]:
    """Rows and bytes per tablet id of the table's base index, as the data plane has them."""
    plane = session.services.data_plane
    if plane is None:
        return {}
    return plane.tablet_stats(TableSchema.of(table))


def table_size(session, table: Table) -> tuple[int, int]:
    """Rows and bytes of the table."""
    stats = tablet_stats(session, table).values()
    return sum(rows for rows, _ in stats), sum(size for _, size in stats)
