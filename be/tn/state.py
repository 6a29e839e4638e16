"""What the TN knows to commit: per table its schema version, the next row id, the rows deleted
lately (for first-committer-wins) and, for UNIQUE KEY tables, which row holds each key.

`prepare` checks a write set against it and builds the commit without changing anything; `apply`
changes it. Replaying the log is `apply` of every logged commit, so the TN restarts with the state
it had."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from be.logtail.entries import PARTITION_ID, ROW_ID, Commit, TableChanges
from be.row_adapter import adapted
from be.table_schema import TableSchema, staying_rows
from be.tn import placement
from be.tn.errors import CommitTooLarge, SnapshotTooOld, StaleSchema, WriteConflict
from be.tn.write_set import TableWrite, WriteSet


@dataclass
class TableWriteState:
    schema_version: int = 0
    key_columns: tuple[str, ...] = ()
    replaces_on_key: bool = False
    next_row_id: int = 1
    deleted: dict[int, int] = field(default_factory=dict)  # row id -> commit ts of its delete
    keys: dict[tuple, tuple[int, int]] = field(default_factory=dict)  # key -> (row id, ts)
    # A table with a sequence column: the column, and each key's holder's value of it
    sequence: str | None = None
    sequences: dict[tuple, object] = field(default_factory=dict)
    # The last overwrite: every row a snapshot before it sees was deleted by it.
    overwritten_ts: int = 0

    def held_sequences(self, keys, deleting: set[int] | frozenset = frozenset()) -> dict:
        """By key, the sequence column's value of the row holding it (none for a key whose row
        the write deletes)."""
        return {
            key: self.sequences.get(key)
            for key in keys
            if (holder := self.keys.get(key)) is not None and holder[0] not in deleting
        }


@dataclass(frozen=True, slots=True)
class _TablePlan:
    write: TableWrite
    deleted_ids: list[int]
    deleted_keys: list[tuple]  # per deleted row, () where the table keeps no key index
    inserted_keys: list[tuple]
    kept_rows: list[int] | None  # insert rows to keep (a key written twice: the last), None: all
    partitions: pa.Array | None = None  # per insert row, its index in the schema's partitions


class WriteState:
    def __init__(self):
        self.tables: dict[int, TableWriteState] = {}
        self.last_ts = 0
        self.horizon_ts = 0  # conflict information is complete for snapshots at or above it
        self._deletes_by_age: collections.deque[tuple[int, int, list[int]]] = collections.deque()

    def table(self, table_id: int) -> TableWriteState:
        state = self.tables.get(table_id)
        if state is None:
            state = self.tables[table_id] = TableWriteState()
        return state

    # -- checking -----------------------------------------------------------------------------

    def prepare(self, write_set: WriteSet, commit_ts: int, max_rows: int) -> Commit:
        """The commit of write_set at commit_ts, checked; nothing is changed."""
        assert commit_ts > self.last_ts
        if write_set.row_count > max_rows:
            raise CommitTooLarge(
                f"a commit may write at most {max_rows} rows, this one writes {write_set.row_count}"
            )
        if write_set.snapshot_ts < self.horizon_ts and _checks_conflicts(write_set):
            raise SnapshotTooOld(
                f"the transaction's snapshot ({write_set.snapshot_ts}) is older than the TN keeps "
                f"conflict information for ({self.horizon_ts})"
            )
        plans = [self._plan(write, write_set.snapshot_ts) for write in write_set.writes]
        return Commit(commit_ts, tuple(self._changes(plan) for plan in plans))

    def _plan(self, write: TableWrite, snapshot_ts: int) -> _TablePlan:
        schema = write.schema
        state = self.tables.get(schema.table_id) or TableWriteState()
        if schema.schema_version < state.schema_version:
            raise StaleSchema(schema.table_id, schema.schema_version, state.schema_version)
        partitions = None
        if placement.placeable(schema) and write.inserts is not None and write.inserts.num_rows:
            # NoPartitionForRow: nothing written
            partitions = placement.partition_indexes(schema, write.inserts)
        deleted_ids: list[int] = []
        deleted_keys: list[tuple] = []
        if write.deletes is not None and write.deletes.num_rows:
            if snapshot_ts < state.overwritten_ts:
                raise WriteConflict(
                    f"table {schema.table_id} was overwritten by a load that committed after "
                    "this transaction started"
                )
            deleted_ids = write.deletes.column(ROW_ID).to_pylist()
            if len(set(deleted_ids)) != len(deleted_ids):
                raise WriteConflict("a row is deleted twice by one statement")
            for row_id in deleted_ids:
                if row_id in state.deleted:
                    raise WriteConflict(_conflict_message(schema))
            deleted_keys = _keys(write.deletes, schema.key_columns) if schema.key_columns else []
        if not deleted_keys:
            deleted_keys = [()] * len(deleted_ids)
        inserted_keys: list[tuple] = []
        kept_rows = None
        if schema.replaces_on_key and write.inserts is not None and write.inserts.num_rows:
            inserted_keys = _keys(write.inserts, schema.key_columns)
            deleting = set(deleted_ids)
            sequences, held = None, {}
            if schema.sequence is not None:
                sequences = write.inserts.column(schema.sequence).to_pylist()
                held = state.held_sequences(inserted_keys, deleting)
            chosen = staying_rows(inserted_keys, sequences, held)
            if len(chosen) != len(inserted_keys):
                kept_rows = chosen
                inserted_keys = [inserted_keys[index] for index in kept_rows]
            for key in inserted_keys:
                holder = state.keys.get(key)
                if holder is None:
                    continue
                row_id, written_ts = holder
                if written_ts > snapshot_ts:
                    raise WriteConflict(_conflict_message(schema))
                if row_id not in deleting:
                    deleting.add(row_id)
                    deleted_ids.append(row_id)
                    deleted_keys.append(key)
        return _TablePlan(write, deleted_ids, deleted_keys, inserted_keys, kept_rows, partitions)

    def _changes(self, plan: _TablePlan) -> TableChanges:
        schema = plan.write.schema
        state = self.tables.get(schema.table_id) or TableWriteState()
        inserts, partitions = plan.write.inserts, plan.partitions
        if inserts is not None and plan.kept_rows is not None:
            kept = pa.array(plan.kept_rows, pa.int64())
            inserts = inserts.take(kept)
            partitions = None if partitions is None else partitions.take(kept)
        if inserts is not None and inserts.num_rows:
            first = state.next_row_id
            row_ids = pa.array(np.arange(first, first + inserts.num_rows, dtype=np.int64))
            inserts = _stored(schema, inserts.add_column(0, _ROW_ID_FIELD, row_ids), partitions)
        else:
            inserts = None
        deletes = None
        if plan.deleted_ids:
            deletes = deletes_table(schema, plan.deleted_ids, plan.deleted_keys)
        return TableChanges(schema.table_id, schema.schema_version, inserts, deletes)

    # -- changing -----------------------------------------------------------------------------

    def apply(self, commit: Commit, schemas: dict[int, TableSchema] | None = None) -> None:
        """commit's changes: from a checked write set, or a logged commit replayed."""
        assert commit.commit_ts > self.last_ts, (commit.commit_ts, self.last_ts)
        ts = commit.commit_ts
        for change in commit.changes:
            state = self.table(change.table_id)
            schema = (schemas or {}).get(change.table_id)
            if schema is not None:
                state.key_columns = schema.key_columns
                state.replaces_on_key = schema.replaces_on_key
                state.sequence = schema.sequence
            state.schema_version = max(state.schema_version, change.schema_version)
            if change.overwrites:  # its own rows' keys are registered after (register_keys)
                state.overwritten_ts = ts
                state.keys.clear()
                state.sequences.clear()
            if change.deletes is not None:
                row_ids = change.deletes.column(ROW_ID).to_pylist()
                for row_id in row_ids:
                    state.deleted[row_id] = ts
                self._deletes_by_age.append((ts, change.table_id, row_ids))
                if state.replaces_on_key and not change.overwrites:
                    for row_id, key in zip(
                        row_ids, _keys(change.deletes, state.key_columns), strict=True
                    ):
                        holder = state.keys.get(key)
                        if holder is not None and holder[0] == row_id:
                            del state.keys[key]
                            state.sequences.pop(key, None)
            for meta in change.objects_added:  # a bulk load's rows took reserved row ids
                state.next_row_id = max(state.next_row_id, meta.max_row_id + 1)
            if change.inserts is not None:
                row_ids = change.inserts.column(ROW_ID)
                state.next_row_id = max(state.next_row_id, row_ids[-1].as_py() + 1)
                if state.replaces_on_key:
                    keys = _keys(change.inserts, state.key_columns)
                    for row_id, key in zip(row_ids.to_pylist(), keys, strict=True):
                        state.keys[key] = (row_id, ts)
                    if state.sequence is not None:
                        values = change.inserts.column(state.sequence).to_pylist()
                        state.sequences.update(zip(keys, values, strict=True))
        self.last_ts = ts

    def register_keys(
        self, table_id: int, row_ids: list[int], keys: list[tuple], ts: int, sequences=None
    ) -> None:
        """A bulk load's rows of a UNIQUE KEY table hold their keys from ts (in row id order: the
        last row of a key holds it; the commit deleted the others), with their values of the
        table's sequence column if it has one."""
        state = self.table(table_id)
        for row_id, key in zip(row_ids, keys, strict=True):
            state.keys[key] = (row_id, ts)
        if sequences is not None:
            state.sequences.update(zip(keys, sequences, strict=True))

    def remember_deletes(self, ts: int, table_id: int, row_ids: list[int]) -> None:
        """Deletes restored from a checkpoint, oldest first, so that forget_before drops them."""
        assert not self._deletes_by_age or self._deletes_by_age[-1][0] <= ts
        self._deletes_by_age.append((ts, table_id, row_ids))

    def forget_before(self, horizon_ts: int) -> None:
        """Drop conflict information of deletes older than horizon_ts: snapshots older than it
        are refused from now on."""
        if horizon_ts <= self.horizon_ts:
            return
        self.horizon_ts = horizon_ts
        while self._deletes_by_age and self._deletes_by_age[0][0] < horizon_ts:
            _, table_id, row_ids = self._deletes_by_age.popleft()
            deleted = self.tables[table_id].deleted
            for row_id in row_ids:
                deleted.pop(row_id, None)


_ROW_ID_FIELD = pa.field(ROW_ID, pa.int64(), False)
_PARTITION_ID_FIELD = pa.field(PARTITION_ID, pa.int64(), False)
_ROW_IDS_ONLY = pa.schema([_ROW_ID_FIELD])
FEW_ROWS = 16  # rows placed in Python, not by an Arrow take


def _stored(schema: TableSchema, rows: pa.Table, partitions: pa.Array | None) -> pa.Table:
    """Inserted rows as the TN logs and publishes them: each with the id of the partition it is
    placed in (if the schema names them), each column with its column id."""
    hidden = [_ROW_ID_FIELD]
    if partitions is not None:
        ids = [partition.id for partition in schema.partitions]
        if len(partitions) <= FEW_ROWS:  # a take costs more than this for a row or a few
            placed = pa.array([ids[index] for index in partitions.to_pylist()], pa.int64())
        else:
            placed = pa.array(ids, pa.int64()).take(partitions)
        rows = rows.add_column(1, _PARTITION_ID_FIELD, placed)
        hidden.append(_PARTITION_ID_FIELD)
    return adapted(rows, schema, hidden, stored=True)


def _keys(table: pa.Table, key_columns: tuple[str, ...]) -> list[tuple]:
    columns = [table.column(name).to_pylist() for name in key_columns]
    return list(zip(*columns, strict=True))


def deletes_table(schema: TableSchema, row_ids: list[int], keys: list[tuple]) -> pa.Table:
    """The deletes of a change: row ids, then (when every key is known) the key columns."""
    ids = pa.array(row_ids, pa.int64())
    if not schema.key_columns or not all(keys):
        return pa.Table.from_arrays([ids], schema=_ROW_IDS_ONLY)
    target = schema.deletes()
    arrays = [ids]
    for position, key_field in enumerate(list(target)[1:]):
        arrays.append(pa.array([key[position] for key in keys], key_field.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _conflict_message(schema: TableSchema) -> str:
    return (
        f"a row of table {schema.table_id} was changed by another transaction that committed "
        "after this one started"
    )


def _checks_conflicts(write_set: WriteSet) -> bool:
    """Whether committing write_set looks at what others wrote after its snapshot: its deletes
    do, and so do inserts into a UNIQUE KEY table; plain appends never conflict."""
    return any(
        (write.deletes is not None and write.deletes.num_rows)
        or (write.schema.replaces_on_key and write.inserts is not None and write.inserts.num_rows)
        for write in write_set.writes
    )
