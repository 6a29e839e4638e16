"""A session's open transaction: BEGIN (or autocommit off) fixes its snapshot; its writes wait in
the session and are seen by its own reads; COMMIT hands them to the TN as one write set, where
the first of two transactions writing the same row wins and the second fails; ROLLBACK drops
them. A statement that changes the catalog commits the open transaction first, as in MySQL.

Rows the transaction inserted have negative row ids until they are committed, so that its own
UPDATE and DELETE can name them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from be.cn.bounds import ColumnBound
from be.cn.table_state import merged
from be.logtail.entries import ROW_ID
from be.table_schema import TableSchema, staying_rows
from be.tn.loads import INSERT as INSERT_LOAD
from be.tn.loads import LoadClaim
from be.tn.write_set import TableWrite
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Result
from fe.sql import statements as st
from metadata.records import KeyModel, Table

MAX_TRANSACTION_ROWS = 1_000_000  # rows a transaction may write before its COMMIT
FEW_KEYS = 16  # rows whose key range Python finds (Arrow's call costs more for so few)


class PendingWrite:
    """A table's writes in a transaction: inserted rows (ROW_ID negative, then the table's
    columns) and deleted rows of the snapshot (ROW_ID, then the key columns). Kept as the pieces
    statements added (Arrow tables, or lists of row tuples from a point write), with the own
    rows dropped since (deleted, or replaced by a newer row with their key) and, per first-key
    value, the own rows that have it; joined when read."""

    def __init__(self, schema: TableSchema, key_columns: tuple[str, ...]):
        self.schema = schema
        self.key_columns = key_columns
        self._inserts_schema = schema.with_row_ids()
        self._deletes_schema = schema.deletes()
        self._inserts: list[pa.Table | list[tuple]] = []  # pieces, each of _inserts_schema
        self._deletes: list[pa.Table | list[tuple]] = []  # pieces, each of _deletes_schema
        self._dropped: set[int] = set()  # own row ids no longer written, still in _inserts
        self._gone: set[int] = set()  # every own row id no longer written
        self.deleted_ids: set[int] = set()  # the snapshot's rows deleted
        self.deleted_keys: set[tuple] = set()  # keys of some of them (of few-row deletes)
        self.own_by_first_key: dict[object, list[int]] = {}  # own row ids, by first key value
        self.written = 0  # rows added (dropped ones too): what the transaction's limit counts

    @property
    def rows(self) -> int:
        return self.written

    @property
    def inserts(self) -> pa.Table:
        if not self._inserts:
            self._inserts = [self._inserts_schema.empty_table()]
        if len(self._inserts) > 1 or self._dropped or type(self._inserts[0]) is list:
            rows = pa.concat_tables(_as_tables(self._inserts, self._inserts_schema))
            if self._dropped:
                dropped = pa.array(self._dropped, pa.int64())
                rows = rows.filter(pc.invert(pc.is_in(rows.column(ROW_ID), dropped)))
            self._inserts, self._dropped = [rows], set()
        return self._inserts[0]

    @property
    def deletes(self) -> pa.Table:
        if not self._deletes:
            self._deletes = [self._deletes_schema.empty_table()]
        if len(self._deletes) > 1 or type(self._deletes[0]) is list:
            self._deletes = [pa.concat_tables(_as_tables(self._deletes, self._deletes_schema))]
        return self._deletes[0]

    def own_rows_with(self, value) -> list[int]:
        """The own row ids still written whose first key column is value."""
        gone = self._gone
        return [row_id for row_id in self.own_by_first_key.get(value, ()) if row_id not in gone]

    def drop_own(self, row_ids) -> None:
        row_ids = set(row_ids)
        self._dropped |= row_ids
        self._gone |= row_ids

    def drop_own_with(self, first_keys) -> None:
        """The own rows whose first key column has one of first_keys dropped (NULL matches
        none)."""
        own = self.own_rows_with
        self.drop_own(row_id for key in first_keys if key is not None for row_id in own(key))

    def add_deletes(self, rows: pa.Table) -> None:
        self._deletes.append(_as_schema(rows, self._deletes_schema))
        self.deleted_ids.update(rows.column(ROW_ID).to_pylist())
        if self.key_columns and rows.num_rows <= FEW_KEYS:
            self.deleted_keys.update(_keys_of(rows, self.key_columns))
        self.written += rows.num_rows

    def add_delete_rows(self, rows: list[tuple]) -> None:
        """add_deletes of rows given as (ROW_ID, *key values) tuples."""
        self._deletes.append(rows)
        self.deleted_ids.update(row[0] for row in rows)
        if self.key_columns:
            self.deleted_keys.update(row[1:] for row in rows)
        self.written += len(rows)

    def add_insert_rows(self, rows: list[tuple]) -> None:
        """add_inserts of rows given as (own ROW_ID, *column values) tuples."""
        self._inserts.append(rows)
        if self.key_columns:
            at = 1 + self.schema.names.index(self.key_columns[0])
            self._note_own([row[0] for row in rows], [row[at] for row in rows])
        self.written += len(rows)

    def deleted_every_key(self, keys) -> bool:
        """Whether the transaction deleted a row of the snapshot with each of keys (a UNIQUE KEY
        table's snapshot has one row a key: rows with these keys replace no other)."""
        return bool(self.deleted_keys) and self.deleted_keys.issuperset(keys)

    def deleted_every_key_of(self, rows: pa.Table) -> bool:
        """deleted_every_key of rows' keys, for a few rows (more are not looked at: False)."""
        if not self.deleted_keys or rows.num_rows > FEW_KEYS:
            return False
        return self.deleted_every_key(_keys_of(rows, self.key_columns))

    def set_deletes(self, rows: pa.Table) -> None:
        self._deletes = [rows]
        self.deleted_ids = set(rows.column(ROW_ID).to_pylist())

    def add_inserts(self, rows: pa.Table) -> None:
        """rows (own row ids) join the inserts; the own rows with their key it replaces must
        be dropped first."""
        self._inserts.append(_as_schema(rows, self._inserts_schema))
        if self.key_columns:
            ids = rows.column(ROW_ID).to_pylist()
            self._note_own(ids, rows.column(self.key_columns[0]).to_pylist())
        self.written += rows.num_rows

    def _note_own(self, row_ids: list[int], first_keys: list) -> None:
        for row_id, first in zip(row_ids, first_keys, strict=True):
            self.own_by_first_key.setdefault(first, []).append(row_id)


def _keys_of(rows: pa.Table, key_columns: tuple[str, ...]) -> list[tuple]:
    return list(zip(*(rows.column(name).to_pylist() for name in key_columns), strict=True))


def _as_tables(pieces: list, schema: pa.Schema) -> list[pa.Table]:
    """The pieces as Arrow tables of schema, in order (a piece of row tuples holds its values as
    the table keeps them; pieces of tuples one after another make one table)."""
    tables: list[pa.Table] = []
    rows: list[tuple] = []
    for piece in pieces:
        if type(piece) is list:
            rows.extend(piece)
            continue
        if rows:
            tables.append(_tuples_table(rows, schema))
            rows = []
        tables.append(piece)
    if rows:
        tables.append(_tuples_table(rows, schema))
    return tables


def _tuples_table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = zip(*rows, strict=True)
    arrays = [pa.array(values, field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _as_schema(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    return rows if rows.schema.equals(schema) else rows.cast(schema)


@dataclass
class OpenTransaction:
    snapshot_ts: int
    writes: dict[int, PendingWrite] = field(default_factory=dict)
    next_row_id: int = -1
    label: str = ""  # BEGIN WITH LABEL: its commit is a load of that label

    @property
    def first_table_id(self) -> int:
        return next(iter(self.writes), 0)

    @property
    def rows(self) -> int:
        return sum(write.rows for write in self.writes.values())

    def add(
        self,
        table: Table,
        write: TableWrite,
        committed: pa.Table | None,
    ) -> None:
        """write joins the transaction; committed: the table's rows at the snapshot (with row
        ids) within key_bounds of write's inserts, where a UNIQUE KEY table's rows they replace
        are found (looks_up says when they are needed); None when write's deletes name every
        row its inserts replace."""
        schema = write.schema
        pending = self._pending(table, schema)
        if write.deletes is not None and write.deletes.num_rows:
            ids = write.deletes.column(ROW_ID).to_pylist()
            own = [row_id for row_id in ids if row_id < 0]
            pending.drop_own(own)
            theirs = write.deletes
            if own:
                theirs = theirs.filter(pc.greater_equal(theirs.column(ROW_ID), 0))
            if theirs.num_rows:
                pending.add_deletes(theirs)
        if write.inserts is not None and write.inserts.num_rows:
            count = write.inserts.num_rows
            ids = pa.array(
                np.arange(self.next_row_id, self.next_row_id - count, -1, dtype=np.int64)
            )
            self.next_row_id -= count
            rows = write.inserts.add_column(0, pa.field(ROW_ID, pa.int64(), False), ids)
            if schema.replaces_on_key:
                if schema.sequence is None:
                    rows = _last_of_each_key(rows, schema.key_columns)
                else:
                    rows = _outranking(rows, pending, committed, schema)
                self._drop_replaced_own(pending, rows, schema.key_columns)
                if committed is not None and not pending.deleted_every_key_of(rows):
                    pending.set_deletes(
                        _with_replaced(pending, rows, committed, schema.key_columns)
                    )
            pending.add_inserts(rows)
        self._check_rows()

    def add_rows(
        self, table: Table, schema: TableSchema, deletes: list[tuple], inserts: list[tuple]
    ) -> None:
        """add of a point write's rows as tuples: deletes (ROW_ID, *key values), inserts (the
        table's columns) that replace no row but deleted ones (an UPDATE of value columns),
        with at most one row a key where the table replaces rows by their key."""
        pending = self._pending(table, schema)
        if deletes:
            pending.drop_own(row[0] for row in deletes if row[0] < 0)
            theirs = [row for row in deletes if row[0] >= 0]
            if theirs:
                pending.add_delete_rows(theirs)
        if inserts:
            first = self.next_row_id
            self.next_row_id -= len(inserts)
            rows = [(first - offset, *row) for offset, row in enumerate(inserts)]
            if schema.replaces_on_key:
                assert self.takes_rows(schema), "one key column: own rows found by it"
                at = 1 + schema.names.index(schema.key_columns[0])
                keys = [row[at] for row in rows]
                assert len(set(keys)) == len(keys), "one row a key"
                pending.drop_own_with(keys)
            pending.add_insert_rows(rows)
        self._check_rows()

    def looks_up(self, table: Table, write: TableWrite) -> bool:
        """Whether add() of write may ask for the committed rows its inserts replace (a UNIQUE
        KEY table's, unless the transaction deleted a row of every key they have)."""
        inserts = write.inserts
        if not write.schema.replaces_on_key or inserts is None or not inserts.num_rows:
            return False
        pending = self.writes.get(table.id)
        return pending is None or not pending.deleted_every_key_of(inserts)

    @staticmethod
    def takes_rows(schema: TableSchema) -> bool:
        """Whether add_rows takes the table's rows: its own rows replaced by a newer row with
        their key are found by one key column."""
        return not schema.replaces_on_key or len(schema.key_columns) == 1

    def _pending(self, table: Table, schema: TableSchema) -> PendingWrite:
        pending = self.writes.get(table.id)
        if pending is None:
            pending = self.writes[table.id] = PendingWrite(schema, table.key_columns)
        elif pending.schema.schema_version != schema.schema_version:
            if pending.schema.same_rows(schema):  # partitions added or dropped meanwhile
                if schema.schema_version > pending.schema.schema_version:
                    pending.schema = schema  # the commit places every row by the newest
                return pending
            raise QueryError(
                ErrorCode.UNKNOWN_ERROR,
                f"Table '{table.name}' changed during the transaction; roll it back and retry",
            )
        return pending

    def _check_rows(self) -> None:
        if self.rows > MAX_TRANSACTION_ROWS:
            raise QueryError(
                ErrorCode.UNKNOWN_ERROR,
                f"A transaction may write at most {MAX_TRANSACTION_ROWS} rows; commit more often",
            )

    @staticmethod
    def _drop_replaced_own(pending: PendingWrite, rows: pa.Table, key_columns) -> None:
        """The own rows with a key one of rows has are dropped (UNIQUE KEY: rows replace them)."""
        if len(key_columns) == 1:
            pending.drop_own_with(rows.column(key_columns[0]).to_pylist())
            return
        before = pending.inserts
        kept = _without_keys(before, rows, key_columns).column(ROW_ID)
        gone = before.filter(pc.invert(pc.is_in(before.column(ROW_ID), kept)))
        pending.drop_own(gone.column(ROW_ID).to_pylist())

    def seen(self, schema: TableSchema, snapshot: pa.Table, row_ids: bool) -> pa.Table:
        """A table's snapshot (with row ids) as this transaction sees it: its own deletes gone,
        its own inserts added."""
        pending = self.writes.get(schema.table_id)
        rows = snapshot
        if pending is not None:
            if pending.deletes.num_rows:
                gone = pending.deletes.column(ROW_ID)
                rows = rows.filter(pc.invert(pc.is_in(rows.column(ROW_ID), gone)))
            if schema.replaces_on_key:
                rows = _without_keys(rows, pending.inserts, schema.key_columns)
            rows = pa.concat_tables([rows, pending.inserts.cast(rows.schema)])
        if schema.key_model is KeyModel.AGGREGATE and not row_ids:
            return merged(_own_rows_last(rows), schema)
        return rows if row_ids else rows.drop_columns([ROW_ID])

    def table_writes(self) -> tuple[TableWrite, ...]:
        writes = []
        for pending in self.writes.values():
            inserts = pending.inserts.drop_columns([ROW_ID]) if pending.inserts.num_rows else None
            deletes = pending.deletes if pending.deletes.num_rows else None
            if inserts is not None or deletes is not None:
                writes.append(TableWrite(pending.schema, inserts, deletes))
        return tuple(writes)


OWN_ROW_IDS_AFTER = 1 << 62  # a merge orders rows by row id: own rows after every committed one


def _own_rows_last(rows: pa.Table) -> pa.Table:
    ids = rows.column(ROW_ID)
    ordered = pc.if_else(pc.less(ids, 0), pc.subtract(OWN_ROW_IDS_AFTER, ids), ids)
    return rows.set_column(0, rows.schema.field(0), ordered)


def key_bounds(rows: pa.Table, key_columns: tuple[str, ...]) -> tuple[ColumnBound, ...]:
    """The range of rows' keys, when the key is one integer column: the committed rows they
    replace are within it."""
    if len(key_columns) != 1 or not pa.types.is_integer(rows.schema.field(key_columns[0]).type):
        return ()
    column = rows.column(key_columns[0])
    if rows.num_rows <= FEW_KEYS:
        keys = [key for key in column.to_pylist() if key is not None]
        low, high = (min(keys), max(keys)) if keys else (None, None)
    else:
        extremes = pc.min_max(column)
        low, high = extremes["min"].as_py(), extremes["max"].as_py()
    return () if low is None else (ColumnBound(key_columns[0], low, high),)


def _last_of_each_key(rows: pa.Table, key_columns: tuple[str, ...]) -> pa.Table:
    """Of rows with equal keys, the one written last (own row ids fall as rows are written)."""
    if rows.num_rows <= 1:  # an UPDATE or INSERT of one row by its key
        return rows
    last = rows.group_by(list(key_columns), use_threads=False).aggregate([(ROW_ID, "min")])
    return rows.filter(pc.is_in(rows.column(ROW_ID), last.column(f"{ROW_ID}_min")))


def _outranking(
    rows: pa.Table, pending: PendingWrite, committed: pa.Table | None, schema: TableSchema
) -> pa.Table:
    """Of rows written to a table with a sequence column, those that stay (staying_rows): the rows
    they would replace are the transaction's own, else the committed ones it has not deleted."""
    keys, sequence = schema.key_columns, schema.sequence
    held: dict[tuple, object] = {}
    if committed is not None and committed.num_rows:
        if pending.deleted_ids:
            gone = pa.array(pending.deleted_ids, pa.int64())
            committed = committed.filter(pc.invert(pc.is_in(committed.column(ROW_ID), gone)))
        held.update(
            zip(_keys_of(committed, keys), committed.column(sequence).to_pylist(), strict=True)
        )
    own = pending.inserts
    held.update(zip(_keys_of(own, keys), own.column(sequence).to_pylist(), strict=True))
    kept = staying_rows(_keys_of(rows, keys), rows.column(sequence).to_pylist(), held)
    return rows if len(kept) == rows.num_rows else rows.take(pa.array(kept, pa.int64()))


def _with_replaced(
    pending: PendingWrite, rows: pa.Table, committed: pa.Table, key_columns: tuple[str, ...]
) -> pa.Table:
    """pending's deletes plus the committed rows that rows replace (the same key), so that the
    replaced row stays gone even if the transaction later deletes its own row."""
    if pending.deletes.num_rows:
        gone = pending.deletes.column(ROW_ID)
        committed = committed.filter(pc.invert(pc.is_in(committed.column(ROW_ID), gone)))
    if not committed.num_rows:  # an INSERT of a new key, or of one the transaction deleted
        return pending.deletes
    if len(key_columns) == 1:
        replaced = committed.filter(_has_key_of(committed, rows, key_columns[0]))
    else:
        kept = _without_keys(committed, rows, key_columns).column(ROW_ID)
        replaced = committed.filter(pc.invert(pc.is_in(committed.column(ROW_ID), kept)))
    if not replaced.num_rows:
        return pending.deletes
    replaced = replaced.select(pending.deletes.schema.names).cast(pending.deletes.schema)
    return pa.concat_tables([pending.deletes, replaced])


def _without_keys(rows: pa.Table, newer: pa.Table, key_columns: tuple[str, ...]) -> pa.Table:
    """rows but those whose key one of newer's rows has (UNIQUE KEY: the newer row replaces)."""
    if not rows.num_rows or not newer.num_rows:
        return rows
    if len(key_columns) == 1:  # the common case, without a join
        return rows.filter(pc.invert(_has_key_of(rows, newer, key_columns[0])))
    marker = "__quire_newer"
    keys = newer.select(list(key_columns)).group_by(list(key_columns)).aggregate([])
    keys = keys.append_column(marker, pa.array([True] * keys.num_rows))
    joined = rows.join(keys, list(key_columns), join_type="left outer", use_threads=False)
    kept = joined.filter(pc.is_null(joined.column(marker))).drop_columns([marker])
    return kept.select(rows.schema.names)


def _has_key_of(rows: pa.Table, newer: pa.Table, key: str) -> pa.ChunkedArray:
    """Per row of rows, whether one of newer's rows has its (one-column) key; NULL matches no
    key, as in the join of several key columns."""
    values = rows.column(key)
    keys = newer.column(key).combine_chunks().cast(values.type)
    return pc.fill_null(pc.is_in(values, value_set=keys, skip_nulls=True), False)


# -- the statements -----------------------------------------------------------------------------


async def transaction_statement(session, statement: st.Transaction) -> Result:
    """BEGIN [WITH LABEL l], COMMIT, ROLLBACK: a labelled transaction's commit is a load of
    that label, answered as Doris answers it."""
    if statement.kind == "BEGIN":
        await commit(session)
        await _opened(session)
        if statement.label:
            session.transaction.label = statement.label
            return Result(info=load_info(statement.label, 0, "PREPARE"))
    elif statement.kind == "COMMIT":
        label = session.transaction.label if session.transaction is not None else ""
        commit_ts = await commit(session)
        if label:
            return Result(info=load_info(label, commit_ts))
    else:
        session.transaction = None
    return Result()


def begin(session) -> OpenTransaction:
    from fe.statements.table_data import data_plane, read_ts

    plane = session.services.data_plane
    if plane is None:
        data_plane(session)  # a transaction needs table data: say why there is none
    ts = max(read_ts(session), session.last_commit_ts)
    session.transaction = OpenTransaction(ts)
    return session.transaction


async def _opened(session) -> None:
    """begin(), its snapshot asked of the data plane as table_data.asked_of_plane does (which
    says why there is none, if none: a transaction needs table data)."""
    from fe.statements.table_data import asked_of_plane

    await asked_of_plane(session, lambda: begin(session))


async def open_implicitly(session) -> None:
    """The transaction current() would open (autocommit off), opened before the statement so
    that its snapshot is asked of a remote data plane off the event loop."""
    plane = session.services.data_plane
    if plane is None or plane.reads_at_hand or session.transaction is not None:
        return
    if not session.autocommits() and plane.available:
        await _opened(session)


def current(session) -> OpenTransaction | None:
    """The open transaction; one is opened when autocommit is off."""
    if session.transaction is None and not session.autocommits():
        plane = session.services.data_plane
        if plane is not None and plane.available:
            begin(session)
    return session.transaction


async def commit(session) -> int:
    """The open transaction committed: its commit timestamp (0 if it wrote nothing)."""
    transaction, session.transaction = session.transaction, None
    if transaction is None:
        return 0
    writes = transaction.table_writes()
    if not writes:
        return 0
    from fe.statements.dml import commit_writes

    return await commit_writes(
        session, transaction.snapshot_ts, writes, _claim(session, transaction)
    )


def _claim(session, transaction: OpenTransaction) -> LoadClaim | None:
    """A labelled transaction's claim, named after the first table it wrote."""
    if not transaction.label:
        return None
    table = session.catalog.tables.get(transaction.first_table_id)
    database = session.catalog.dbs.get(table.db_id) if table is not None else None
    db = database.name if database is not None else session.database or ""
    return label_claim(session, transaction.label, db, table.name if table is not None else "")


def load_info(label: str, txn_id: int, status: str = "VISIBLE") -> str:
    """What Doris answers a load made by an INSERT or a transaction with a label."""
    return f"{{'label':'{label}', 'status':'{status}', 'txnId':'{txn_id or ''}'}}"


def label_claim(session, label: str, db: str, table: str, overwrite: bool = False) -> LoadClaim:
    """The session's claim on a label for a load of rows (an INSERT's or a transaction's)."""
    return LoadClaim(
        label, db, table, session.username or "", session.client_host, INSERT_LOAD, overwrite
    )
