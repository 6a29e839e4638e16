"""What the TN knows of a table's objects: its data objects and tombstones, and, to file a
delete under the tablet of the row it deletes, the row ids each data object holds (read from the
object the first time they are needed, kept from the flush that wrote it otherwise)."""

from __future__ import annotations

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
    objects: dict[str, ObjectMeta] = field(default_factory=dict)
    tombstones: dict[str, TombstoneMeta] = field(default_factory=dict)
    _row_ids: dict[str, pa.Array] = field(default_factory=dict)

    def apply(self, change: TableChanges) -> None:
        for name in change.objects_removed:
            self.objects.pop(name, None)
            self._row_ids.pop(name, None)
        for meta in change.objects_added:
            self.objects[meta.name] = meta
        for meta in change.tombstones_added:
            self.tombstones[meta.name] = meta

    def remember_row_ids(self, name: str, row_ids: pa.Array) -> None:
        self._row_ids[name] = row_ids

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

    def tablet_totals(self) -> dict[Tablet, tuple[int, int]]:
        """Rows and bytes of each tablet's data objects."""
        totals: dict[Tablet, tuple[int, int]] = {}
        for meta in self.objects.values():
            rows, size = totals.get(meta.tablet, (0, 0))
            totals[meta.tablet] = (rows + meta.rows, size + meta.bytes)
        return totals

    def _held(self, store: ObjectStore, meta: ObjectMeta) -> pa.Array:
        held = self._row_ids.get(meta.name)
        if held is None:
            held = read_blocks(store, meta, columns=[ROW_ID]).column(ROW_ID).combine_chunks()
            self._row_ids[meta.name] = held
        return held
