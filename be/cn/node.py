"""A CN's tables and its watermark: every commit at or below the watermark has been applied, so a
snapshot at a timestamp at or below it is complete. A read above the watermark waits for it, for
a bounded time."""

from __future__ import annotations

import threading

import pyarrow as pa

from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.cn.table_state import TableState
from be.logtail.entries import Commit
from be.storage.blocks import ObjectMeta
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta
from be.table_schema import TableSchema


class WatermarkTimeout(Exception):
    """The CN has not received everything up to the timestamp asked for in time."""


class ComputeNode:
    def __init__(self, store: ObjectStore | None = None, limits: ComputeLimits | None = None):
        """store: where flushed tables' objects are read from."""
        self.store = store
        self.limits = limits or ComputeLimits()
        self.cache = ObjectCache(self.limits)
        self._tables: dict[int, TableState] = {}
        self._watermark = 0
        self._arrived = threading.Condition()

    @property
    def watermark(self) -> int:
        return self._watermark

    def apply(self, commit: Commit) -> None:
        """A commit's logtail, in commit order (heartbeats only move the watermark)."""
        assert commit.commit_ts > self._watermark, (commit.commit_ts, self._watermark)
        self.apply_changes(commit)
        self.advance(commit.commit_ts)

    def apply_changes(self, commit: Commit) -> None:
        """A commit's changes, the watermark left to the caller: a CN fed by a logtail subscriber
        gets each table's commits in order, but a table's catch-up after other tables' pushes."""
        for change in commit.changes:
            table = self._tables.get(change.table_id)
            if table is None:
                table = self._tables.setdefault(
                    change.table_id,
                    TableState(
                        change.table_id, self.store, self.cache, self.limits.key_index_max_rows
                    ),
                )
            table.apply(change, commit.commit_ts)

    def restore(
        self,
        table_id: int,
        objects: tuple[ObjectMeta, ...],
        tombstones: tuple[TombstoneMeta, ...],
        ts: int,
    ) -> None:
        """A table as the TN's checkpoint at ts holds it (its subscription started below it)."""
        table = self._tables.get(table_id)
        if table is None:
            table = self._tables.setdefault(table_id, TableState(table_id, self.store, self.cache))
        table.restore(objects, tombstones, ts)

    def advance(self, ts: int) -> None:
        """Everything up to ts has been applied (the watermark never goes back)."""
        with self._arrived:
            if ts > self._watermark:
                self._watermark = ts
                self._arrived.notify_all()

    def wait_for(self, ts: int, timeout: float) -> None:
        with self._arrived:
            if not self._arrived.wait_for(lambda: self._watermark >= ts, timeout):
                raise WatermarkTimeout(
                    f"this CN has data up to {self._watermark}, not yet up to {ts}"
                )

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool = False,
        bounds: tuple = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        if table is None:
            return (schema.with_row_ids() if row_ids else schema.arrow()).empty_table()
        return table.snapshot(schema, ts, row_ids, bounds, columns, partitions)

    def indexed_snapshot(
        self, schema: TableSchema, ts: int, row_ids: bool, bounds: tuple
    ) -> pa.Table | None:
        """snapshot() from the table's key index, if it answers at once; else None."""
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        return None if table is None else table.indexed_snapshot(schema, ts, row_ids, bounds)

    def values_within(
        self, schema: TableSchema, ts: int, bound, names: tuple[str, ...], limit: int
    ) -> list[tuple] | None:
        """TableState.values_within of the table, if the CN follows it."""
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        return None if table is None else table.values_within(schema, ts, bound, names, limit)

    def table(self, table_id: int) -> TableState | None:
        return self._tables.get(table_id)

    def table_stats(self, table_id: int) -> tuple[int, int]:
        """Rows and bytes the CN holds of a table."""
        table = self._tables.get(table_id)
        return (table.row_count, table.nbytes) if table else (0, 0)
