"""The TN's unflushed part of a table: the rows and deletes committed since its last flush, which
a flush writes as objects and tombstones."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import COMMIT_TS, ROW_ID, TableChanges
from be.tn.write_set import table_bytes


@dataclass
class TableMemory:
    rows: list[pa.Table] = field(default_factory=list)  # ROW_ID, COMMIT_TS, then the columns
    delete_ids: list[pa.Array] = field(default_factory=list)
    delete_ts: list[pa.Array] = field(default_factory=list)
    row_count: int = 0  # rows and deletes
    nbytes: int = 0
    since: float | None = None  # monotonic time of its oldest change

    @property
    def empty(self) -> bool:
        return not self.rows and not self.delete_ids

    def add(self, change: TableChanges, commit_ts: int) -> None:
        if change.inserts is not None and change.inserts.num_rows:
            rows = change.inserts
            stamps = pa.repeat(pa.scalar(commit_ts, pa.int64()), rows.num_rows)
            self.rows.append(rows.add_column(1, pa.field(COMMIT_TS, pa.int64(), False), stamps))
            self.row_count += rows.num_rows
            self.nbytes += table_bytes(rows)
        if change.deletes is not None and change.deletes.num_rows:
            ids = change.deletes.column(ROW_ID).combine_chunks()
            self.delete_ids.append(ids)
            self.delete_ts.append(pa.repeat(pa.scalar(commit_ts, pa.int64()), len(ids)))
            self.row_count += len(ids)
            self.nbytes += ids.nbytes * 2
        if self.since is None and not self.empty:
            self.since = time.monotonic()

    def rows_until(self, ts: int) -> list[pa.Table]:
        return [piece.filter(pc.less_equal(piece.column(COMMIT_TS), ts)) for piece in self.rows]

    def deletes_until(self, ts: int) -> tuple[pa.Array, pa.Array]:
        if not self.delete_ids:
            return pa.array([], pa.int64()), pa.array([], pa.int64())
        ids, stamps = pa.concat_arrays(self.delete_ids), pa.concat_arrays(self.delete_ts)
        kept = pc.less_equal(stamps, ts)
        return ids.filter(kept), stamps.filter(kept)

    def drop_until(self, ts: int) -> None:
        """Forget what was committed at or before ts (a flush holds it now)."""
        rows = [piece.filter(pc.greater(piece.column(COMMIT_TS), ts)) for piece in self.rows]
        self.rows = [piece for piece in rows if piece.num_rows]
        if self.delete_ids:
            ids, stamps = pa.concat_arrays(self.delete_ids), pa.concat_arrays(self.delete_ts)
            later = pc.greater(stamps, ts)
            ids, stamps = ids.filter(later), stamps.filter(later)
            self.delete_ids, self.delete_ts = ([ids], [stamps]) if len(ids) else ([], [])
        self.row_count = sum(piece.num_rows for piece in self.rows) + sum(
            len(ids) for ids in self.delete_ids
        )
        self.nbytes = sum(piece.nbytes for piece in self.rows) + sum(
            ids.nbytes * 2 for ids in self.delete_ids
        )
        self.since = None if self.empty else time.monotonic()
