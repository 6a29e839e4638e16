"""A load's rows as block objects: each batch gets row ids from the TN, is placed into tablets by
the table's distribution, and waits per tablet until it fills an object (or the buffered rows of
all tablets pass max_buffered_bytes); objects are written in the TN's block format, stamped and
named at the load's transaction timestamp, by threads of their own (Parquet encoding releases
the GIL: it overlaps the parsing of the next rows), at most MAX_WRITES_WAITING behind.
abort() removes every object written."""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc

from be.load.limits import LoadLimits
from be.load.row_ids import RowIdRanges
from be.logtail.entries import COMMIT_TS, ROW_ID
from be.row_adapter import adapted
from be.storage.blocks import ObjectMeta, write_blocks
from be.storage.errors import StorageError
from be.storage.names import MAX_SEQ, Tablet
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn import placement
from be.tn.errors import BadLoad

logger = logging.getLogger(__name__)

MAX_WRITES_WAITING = 2
_HIDDEN = (pa.field(ROW_ID, pa.int64(), False), pa.field(COMMIT_TS, pa.int64(), False))


class LoadWriter:
    def __init__(
        self,
        store: ObjectStore,
        schema: TableSchema,
        txn_id: int,
        reserve_row_ids: Callable[[int], int],
        limits: LoadLimits,
        keep_keys: bool,
        seqs: range = range(MAX_SEQ + 1),
    ):
        """reserve_row_ids(count): the first of count row ids the TN hands this load;
        keep_keys: collect every row's key (a UNIQUE KEY table's commit needs them); seqs: the
        sequence numbers its objects are named with (writers of one load take apart ones)."""
        assert 0 <= seqs.start < seqs.stop <= MAX_SEQ + 1 and seqs.step == 1, seqs
        assert placement.placeable(schema), "a load needs the table's tablets"
        self.store = store
        self.schema = schema
        self.txn_id = txn_id
        self.row_id_ranges = RowIdRanges(reserve_row_ids, limits.row_id_rows)
        self.limits = limits
        self.object_rows = min(limits.object_rows, store.limits.max_object_rows)
        self.keep_keys = keep_keys
        self.seqs = seqs
        self.objects: list[ObjectMeta] = []
        self.row_ids: list[int] = []
        self.keys: list[tuple] = []
        self.sequences: list = []  # with the keys, if the table has a sequence column
        self.deleting: list[int] = []  # the row ids of rows that delete their key
        self._waiting: dict[Tablet, list[pa.Table]] = {}
        self._waiting_rows: dict[Tablet, int] = {}
        self._buffered = 0
        self._seq: dict[Tablet, int] = {}
        self._writes: collections.deque[Future] = collections.deque()
        self._writer = ThreadPoolExecutor(MAX_WRITES_WAITING, thread_name_prefix="load-objects")
        self.rows = 0

    def unplaced(self, rows: pa.Table) -> pa.Array:
        """Per row of a batch (the table's columns), whether no partition takes it."""
        return placement.partition_indexes(self.schema, rows, strict=False).is_null()

    def add(self, rows: pa.Table, deleting: pa.Array | None = None) -> None:
        """A batch in the table's columns, each row placeable; deleting: per row, whether it
        deletes its key rather than holds it (its commit deletes it too)."""
        if not rows.num_rows:
            return
        ids = self.row_id_ranges.take(rows.num_rows)
        if deleting is not None and pc.any(deleting).as_py():
            self.deleting += ids.filter(deleting).to_pylist()
        stamps = pa.repeat(pa.scalar(self.txn_id, pa.int64()), rows.num_rows)
        stored = adapted(rows, self.schema, stored=True)
        full = pa.Table.from_arrays(
            [ids, stamps, *stored.columns], schema=pa.schema([*_HIDDEN, *stored.schema])
        )
        if self.keep_keys:
            self.row_ids += ids.to_pylist()
            columns = [rows.column(name).to_pylist() for name in self.schema.key_columns]
            self.keys += list(zip(*columns, strict=True))
            if self.schema.sequence is not None:
                self.sequences += rows.column(self.schema.sequence).to_pylist()
        self.rows += rows.num_rows
        for tablet, part in placement.by_tablet(self.schema, full).items():
            self._waiting.setdefault(tablet, []).append(part)
            self._waiting_rows[tablet] = self._waiting_rows.get(tablet, 0) + part.num_rows
            self._buffered += part.nbytes
            if self._waiting_rows[tablet] >= self.object_rows:
                self._write(tablet)
        if self._buffered > self.limits.max_buffered_bytes:
            for tablet in list(self._waiting):
                self._write(tablet)

    def finish(self) -> tuple[ObjectMeta, ...]:
        for tablet in list(self._waiting):
            self._write(tablet)
        while self._writes:
            self._collect()
        self._writer.shutdown()
        return tuple(self.objects)

    def abort(self) -> None:
        """Remove what was written (best effort: the TN's start-up sweep takes what stays)."""
        self._waiting.clear()
        while self._writes:
            try:
                self._collect()
            except (StorageError, BadLoad, OSError):
                pass
        self._writer.shutdown()
        for meta in self.objects:
            try:
                self.store.delete(meta.name, missing_ok=True)
            except StorageError as error:
                logger.warning("the aborted load's object %s stays: %s", meta.name, error)
        self.objects.clear()

    def _write(self, tablet: Tablet) -> None:
        parts = self._waiting.pop(tablet, [])
        self._waiting_rows.pop(tablet, None)
        if not parts:
            return
        rows = pa.concat_tables(parts)
        self._buffered -= sum(part.nbytes for part in parts)
        for start in range(0, rows.num_rows, self.object_rows):
            seq = self._seq.get(tablet, self.seqs.start)
            if seq >= self.seqs.stop:
                raise BadLoad(f"a load's writer writes at most {len(self.seqs)} objects per tablet")
            self._seq[tablet] = seq + 1
            while len(self._writes) >= MAX_WRITES_WAITING:
                self._collect()
            self._writes.append(
                self._writer.submit(
                    write_blocks,
                    self.store,
                    tablet,
                    rows.slice(start, self.object_rows),
                    schema_version=self.schema.schema_version,
                    flush_ts=self.txn_id,
                    seq=seq,
                )
            )

    def _collect(self) -> None:
        """The oldest write waited for: its object, or what it raised."""
        self.objects.append(self._writes.popleft().result())
