"""What the TN knows of a table's objects: its data objects and tombstones, and, to file a
delete under the tablet of the row it deletes, the row ids each data object holds (read from the
object the first time they are needed, kept from the flush that wrote it otherwise; at most
max_cached_row_ids of them, the least recently used dropped first)."""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import ROW_ID, TableChanges
from be.storage.blocks import ObjectMeta, read_blocks
from be.storage.names import Tablet
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta


@dataclass
class TableObjects:
    max_cached_row_ids: int = 16 << 20  # CommitLimits.max_cached_row_ids
    objects: dict[str, ObjectMeta] = field(default_factory=dict)
    tombstones: dict[str, TombstoneMeta] = field(default_factory=dict)
    # The cache is read and filled by the storage worker, emptied of removed objects by the
    # committer: under its lock.
    _row_ids: collections.OrderedDict[str, pa.Array] = field(
        default_factory=collections.OrderedDict
    )
    _cached: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def apply(self, change: TableChanges) -> None:
        for name in change.objects_removed:  # a merge's or a compaction's (tombstones too)
            self.objects.pop(name, None)
            self.tombstones.pop(name, None)
            self._forget(name)
        for meta in change.objects_added:
            self.objects[meta.name] = meta
        for meta in change.tombstones_added:
            self.tombstones[meta.name] = meta

    def remember_row_ids(self, name: str, row_ids: pa.Array) -> None:
        with self._lock:
            if name in self._row_ids:
                return
            self._row_ids[name] = row_ids
            self._cached += len(row_ids)
            while self._cached > self.max_cached_row_ids and len(self._row_ids) > 1:
                _, dropped = self._row_ids.popitem(last=False)
                self._cached -= len(dropped)
        assert self._cached >= 0

    def _forget(self, name: str) -> None:
        with self._lock:
            dropped = self._row_ids.pop(name, None)
            if dropped is not None:
                self._cached -= len(dropped)

    def tablets_of(
        self, store: ObjectStore, row_ids: pa.Array, metas: list[ObjectMeta] | None = None
    ) -> dict[Tablet, pa.Array]:
        """The flushed row ids among row_ids, by the tablet whose object holds them (of metas,
        by default the table's objects now)."""
        found: dict[Tablet, list[pa.Array]] = {}
        if not len(row_ids):
            return {}
        low, high = pc.min(row_ids).as_py(), pc.max(row_ids).as_py()
        for meta in list(self.objects.values()) if metas is None else metas:
            if meta.max_row_id < low or meta.min_row_id > high:
                continue
            held = self._held(store, meta)
            mine = row_ids.filter(pc.is_in(row_ids, value_set=held))
            if len(mine):
                found.setdefault(meta.tablet, []).append(mine)
        return {tablet: pa.concat_arrays(ids) for tablet, ids in found.items()}

    def tablet_totals(self) -> dict[Tablet, tuple[int, int, int]]:
        """Rows and bytes of each tablet's data objects, and how many objects it has (its
        tombstones too: what a merge or a compaction makes fewer)."""
        totals: dict[Tablet, tuple[int, int, int]] = {}
        for meta in self.objects.values():
            rows, size, count = totals.get(meta.tablet, (0, 0, 0))
            totals[meta.tablet] = (rows + meta.rows, size + meta.bytes, count + 1)
        for tombstone in self.tombstones.values():
            tablet = Tablet(tombstone.table_id, tombstone.partition_id, tombstone.tablet_id)
            rows, size, count = totals.get(tablet, (0, 0, 0))
            totals[tablet] = (rows, size, count + 1)
        return totals

    def row_ids_of(self, store: ObjectStore, meta: ObjectMeta) -> pa.Array:
        """The row ids one of the table's objects holds (read from it once, then kept)."""
        return self._held(store, meta)

    def _held(self, store: ObjectStore, meta: ObjectMeta) -> pa.Array:
        with self._lock:
            held = self._row_ids.get(meta.name)
            if held is not None:
                self._row_ids.move_to_end(meta.name)
                return held
        held = read_blocks(store, meta, columns=[ROW_ID]).column(ROW_ID).combine_chunks()
        self.remember_row_ids(meta.name, held)
        return held
