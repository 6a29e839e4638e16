"""Rows, bytes and objects of tables' tablets, as the data plane counts them (SHOW DATA, SHOW
TABLETS, SHOW PARTITIONS, SHOW TABLE STATUS and the web console read them here), and Doris's text
of a size. A statement asks about all its tables at once: with a remote TN that is one request (per
ServiceLimits.max_stats_tables tables), not one per table."""

from __future__ import annotations

from collections.abc import Iterable

from be.table_schema import TableSchema
from metadata.records import Table

SIZE_UNITS = (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("KB", 1024))


TabletFigures = tuple[int, int, int]  # rows, bytes, objects (data and tombstones)
NO_FIGURES: TabletFigures = (0, 0, 0)


def tables_stats(session, tables: Iterable[Table]) -> dict[int, dict[int, TabletFigures]]:
    """Per table id, rows, bytes and objects per tablet id of the table's base index, as the
    data plane has them (tables it has no figures of are left out)."""
    plane = session.services.data_plane
    schemas = [TableSchema.of(table) for table in tables if table.partitions]
    if plane is None or not schemas:
        return {}
    return plane.tablet_stats(schemas)


def tablet_stats(session, table: Table) -> dict[int, TabletFigures]:
    """Rows, bytes and objects per tablet id of the table's base index."""
    return tables_stats(session, [table]).get(table.id, {})


def table_sizes(session, tables: Iterable[Table]) -> dict[int, tuple[int, int]]:
    """Rows and bytes per table id, of every table given (0, 0 for those without data)."""
    tables = list(tables)
    stats = tables_stats(session, tables)
    return {table.id: total(stats.get(table.id, {})) for table in tables}


def table_size(session, table: Table) -> tuple[int, int]:
    """Rows and bytes of the table."""
    return table_sizes(session, [table])[table.id]


def total(figures: dict[int, tuple[int, ...]]) -> tuple[int, int]:
    """Rows and bytes together of figures that begin with them (tablets', or tables' sizes)."""
    return sum(f[0] for f in figures.values()), sum(f[1] for f in figures.values())


def readable_size(size: int) -> str:
    """Doris's size text: three decimals (no leading zero) and a binary unit, none for 0."""
    unit, value = ("", 0.0) if size == 0 else ("B", float(size))
    for name, factor in SIZE_UNITS:
        if size > factor:
            unit, value = name, size / factor
            break
    number = f"{value:.3f}"
    return f"{number.removeprefix('0')} {unit}"
