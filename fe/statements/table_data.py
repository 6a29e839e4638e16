"""A statement's view of table data: the data plane it reads and writes through, and the
snapshot timestamp it reads at (never older than the session's own last commit)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Iterable

import pyarrow as pa

from be.client import QueryTable
from be.cn.bounds import ColumnBound, within
from be.cn.node import WatermarkTimeout
from be.engine import Answer
from be.service.errors import ServiceError
from be.storage.errors import StorageError
from be.table_schema import TableSchema
from be.tn import placement
from fe.mysql.errors import ErrorCode, QueryError
from fe.security import privileges
from fe.statements import views
from fe.statements.column_values import parse_moment
from fe.statements.mysql_functions import time_zone
from fe.statements.names import resolve_table
from metadata.records import KeyModel, Table

READ_WAIT_SECONDS = 10.0  # a read waits this long for the CN to reach its timestamp
SCHEMA_POLL_SECONDS = 0.005


def data_plane(session):
    plane = session.services.data_plane
    if plane is None:
        raise QueryError(
            ErrorCode.NOT_SUPPORTED_YET,
            "This FE runs without a data plane: table data is read and written through the "
            "all-in-one node (quire up)",
        )
    return plane


class TableReader:
    """Reads of one statement: every table at the same timestamp (the session's read_ts, if it
    set one; a table named `FOR SYSTEM_TIME AS OF` reads at that time instead)."""

    def __init__(self, session):
        self.session = session
        self.read_ts = str(session.variable("read_ts") or "")
        self._ts: int | None = None

    @functools.cached_property
    def transaction(self):
        """The open transaction, opened (autocommit off) when a read first needs it: a query
        that reads no table leaves the snapshot to the first that does, as MySQL does."""
        from fe.statements import transactions

        return transactions.current(self.session)

    @property
    def ts(self) -> int:
        if self._ts is None:
            # read_ts wins over a transaction's snapshot: a client with autocommit off (JDBC,
            # mysql-connector) is always in one
            if self.read_ts:
                self._ts = self.as_of(self.read_ts)
            elif self.transaction is not None:
                self._ts = self.transaction.snapshot_ts
            else:
                self._ts = self.latest
        return self._ts

    async def settled_ts(self) -> int:
        """ts, asked of the data plane as asked_of_plane does."""
        if self._ts is None:
            await asked_of_plane(self.session, lambda: self.ts)
        return self.ts

    @functools.cached_property
    def latest(self) -> int:
        """The newest timestamp readable now (asked of the data plane once per statement)."""
        return max(read_ts(self.session), self.session.last_commit_ts)

    def as_of(self, moment: str) -> int:
        """The commit timestamp a point in time names: a datetime in the session's time zone, or
        a commit timestamp itself; never later than what is readable now."""
        text = moment.strip()
        if text.isdigit() and len(text) > 14:
            ts = int(text)
        else:
            written = parse_moment(text)
            if written is None:
                raise QueryError(
                    ErrorCode.TRUNCATED_WRONG_VALUE, f"Incorrect datetime value: '{moment}'"
                )
            zone = time_zone(str(self.session.variable("time_zone") or "SYSTEM"))
            ts = int(written.replace(tzinfo=zone).timestamp() * 1_000_000) * 1000
        kept = data_plane(self.session).oldest_readable_ts()
        if ts < kept:
            raise QueryError(
                ErrorCode.UNKNOWN_ERROR,
                f"The data as of '{moment}' is no longer kept (the oldest readable timestamp is "
                f"{kept})",
            )
        return min(ts, self.latest)

    def refuse_writes(self) -> None:
        if self.read_ts:
            raise QueryError(
                1792,
                "Cannot execute statement in a READ ONLY transaction: this session reads as of "
                f"read_ts = '{self.read_ts}'; SET read_ts = '' to write",
            )

    def table(self, db: str, name: str, privilege: str = privileges.SELECT) -> Table:
        return readable_table(self.session, db, name, privilege)

    def committed(self, table: Table, bounds: tuple[ColumnBound, ...] = ()) -> pa.Table:
        """The table's committed rows at the snapshot, with row ids, without this transaction's
        own writes (those outside bounds may be left out), read from the data plane (it may
        wait, read objects or be a round trip to a node: never on the event loop)."""
        return self._read(TableSchema.of(table), True, bounds)

    def committed_at_hand(
        self, table: Table, bounds: tuple[ColumnBound, ...] = ()
    ) -> pa.Table | None:
        """committed(), if the key index has the rows at hand (no wait, no object, no round
        trip: what the event loop may ask); else None."""
        plane = data_plane(self.session)
        if not bounds or self.read_ts or not plane.reads_at_hand:
            return None
        schema = TableSchema.of(table)
        with plane_errors():
            rows = _committed_values(plane, schema, self.ts, bounds)
            if rows is None:
                rows = plane.indexed_snapshot(schema, self.ts, True, bounds)
        return rows

    async def committed_rows(self, table: Table, bounds: tuple[ColumnBound, ...]) -> pa.Table:
        """committed(): from the key index at hand, else off the event loop (a read that may
        wait, or read objects)."""
        rows = self.committed_at_hand(table, bounds)
        if rows is None:
            rows = await asyncio.to_thread(self.committed, table, bounds)
        return rows

    def snapshot(
        self,
        table: Table,
        row_ids: bool = False,
        bounds: tuple[ColumnBound, ...] = (),
        ts: int | None = None,
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        """bounds: rows outside them may be left out (the statement filters them anyway); ts: a
        time-travel read of this table (no own writes in it); columns: the lower-case names the
        statement may read columns by, if known (others may be left out); partitions: the ids
        of the partitions whose rows the statement may keep (partition_pruning), None for all."""
        schema = TableSchema.of(table)
        if ts is not None:
            return self._read(schema, row_ids, bounds, ts, partitions=partitions)
        own = self.transaction is not None and table.id in self.transaction.writes
        if own:
            columns = None
        rows = self._read(schema, row_ids or own, bounds, columns=columns, partitions=partitions)
        if not own:
            return rows
        seen = self.transaction.seen(schema, rows, row_ids)  # its own rows of every partition
        return seen if partitions is None else placement.in_partitions(schema, seen, partitions)

    def runs_remotely(self, tables: Iterable[Table]) -> bool:
        """Whether a query of these tables goes whole to the data plane (query()): there are
        CNs to run it, and no table has this transaction's own writes (only the FE has those)."""
        if not data_plane(self.session).runs_queries():
            return False
        writes = self.transaction.writes if self.transaction is not None else {}
        return not any(table.id in writes for table in tables)

    def query(
        self,
        sql: str,
        reads: list[
            tuple[str, Table, bool, tuple[ColumnBound, ...], int | None, frozenset[int] | None]
        ],
        columns: frozenset[str] | None,
        given: dict[str, pa.Table],
        timeout: float,
        memory_limit_bytes: int,
        columnar: bool = False,
    ) -> Answer:
        """The answer of engine SQL run by the data plane over each read (the name the SQL gives
        it, the table, with row ids, bounds, a time-travel timestamp or None, the partitions it
        needs or None) at this statement's snapshot, and the given tables; columns: as
        snapshot()'s; columnar: a big answer's rows may stay Arrow (for the client)."""
        named = None if columns is None else tuple(sorted(columns))
        tables = tuple(
            QueryTable(
                name,
                TableSchema.of(table),
                self.ts if ts is None else ts,
                row_ids,
                bounds,
                named,
                None if partitions is None else tuple(sorted(partitions)),
            )
            for name, table, row_ids, bounds, ts, partitions in reads
        )
        with plane_errors():
            return data_plane(self.session).run_query(
                sql,
                tables,
                tuple(given.items()),
                READ_WAIT_SECONDS,
                timeout,
                memory_limit_bytes,
                self._abandoned(timeout),
                columnar,
            )

    def _abandoned(self, timeout: float):
        """Whether the statement's engine has stopped waiting: its client went away, or its
        time is up (the engine has answered the client with the error)."""
        deadline = time.monotonic() + timeout
        client_gone = self.session.client_gone
        return lambda: client_gone() or time.monotonic() > deadline

    def indexed(
        self, table: Table, bounds: tuple[ColumnBound, ...], row_ids: bool = False
    ) -> pa.Table | None:
        """The rows within bounds (exactly), this transaction's own writes seen, if the data
        plane has them at hand (no wait, no object to read); else None."""
        plane = data_plane(self.session)
        if self.read_ts or not plane.reads_at_hand:
            return None
        schema = TableSchema.of(table)
        own = self.transaction is not None and table.id in self.transaction.writes
        try:
            rows = plane.indexed_snapshot(schema, self.ts, row_ids or own, bounds)
        except ServiceError as error:
            raise unavailable(error) from None
        if rows is None or not own:
            return rows
        return within(self.transaction.seen(schema, rows, row_ids), bounds)

    async def within_bounds(
        self, table: Table, bounds: tuple[ColumnBound, ...], row_ids: bool = False
    ) -> pa.Table | None:
        """indexed(); where the data plane has no reads at hand (each is a round trip to a
        node), the rows within bounds read from it off the event loop (the CN narrows them by
        its key index), or None for an AGGREGATE KEY table (the engine merges its rows)."""
        plane = data_plane(self.session)
        if plane.reads_at_hand or self.read_ts:
            return self.indexed(table, bounds, row_ids)
        if not bounds or table.key_model is KeyModel.AGGREGATE:
            return None
        return await asyncio.to_thread(
            lambda: within(self.snapshot(table, row_ids, bounds), bounds)
        )

    def _read(
        self,
        schema: TableSchema,
        row_ids: bool,
        bounds: tuple[ColumnBound, ...] = (),
        ts: int | None = None,
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        at = self.ts if ts is None else ts
        plane = data_plane(self.session)
        with plane_errors():
            return plane.snapshot(
                schema, at, READ_WAIT_SECONDS, row_ids, bounds, columns, partitions
            )


@contextlib.contextmanager
def plane_errors():
    """The data plane's refusals of a read as the client's errors."""
    try:
        yield
    except WatermarkTimeout as error:
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR, f"Reading table data timed out: {error}"
        ) from None
    except ServiceError as error:
        raise unavailable(error) from None
    except StorageError as error:  # an object gone or damaged under the node
        raise QueryError(
            ErrorCode.UNKNOWN_ERROR, f"Table data could not be read: {error.message}"
        ) from None


async def asked_of_plane(session, work: Callable[[], object]):
    """work() of the data plane: on the event loop where its reads are at hand, else on a
    thread (a round trip to a node: one that does not answer stalls this statement, not the
    FE's other clients)."""
    if data_plane(session).reads_at_hand:
        return work()
    return await asyncio.to_thread(work)


def read_ts(session) -> int:
    """The newest timestamp the data plane has everything up to."""
    try:
        return data_plane(session).read_ts()
    except ServiceError as error:
        raise unavailable(error) from None


class SchemaChanged(QueryError):
    """The TN refused a write made against an older definition of the table than one it has
    seen (another FE altered it, and this one had not replayed that yet)."""

    def __init__(self, table_id: int, version: int):
        super().__init__(
            ErrorCode.TABLE_DEF_CHANGED, "Table definition has changed, please retry transaction"
        )
        self.table_id, self.version = table_id, version


async def wait_for_definition(session, changed: SchemaChanged, deadline: float) -> None:
    """Until this FE's catalog has the table at the version the TN knows (or it was dropped);
    raises changed at the deadline."""
    catalog = session.catalog
    while True:
        table = catalog.tables.get(changed.table_id)
        if table is None or table.schema_version >= changed.version:
            return
        if time.monotonic() >= deadline:
            raise changed
        await asyncio.sleep(SCHEMA_POLL_SECONDS)


def unavailable(error: ServiceError) -> QueryError:
    return QueryError(ErrorCode.UNKNOWN_ERROR, f"The data plane cannot answer: {error}")


MAX_COMMITTED_VALUES = 64  # committed rows a write looks for as Python values, at most


def _committed_values(plane, schema: TableSchema, ts: int, bounds) -> pa.Table | None:
    """The committed rows within the bound on the first key column, from the key index's
    Python values (a one-row write's look for the row it replaces); None if not at hand."""
    if not schema.key_columns:
        return None
    bound = next((bound for bound in bounds if bound.column == schema.key_columns[0]), None)
    if bound is None or bound.low is None or bound.high is None:
        return None
    target = schema.with_row_ids()
    found = plane.values_within(schema, ts, bound, tuple(target.names), MAX_COMMITTED_VALUES)
    if found is None:
        return None
    columns = zip(*found, strict=True) if found else [()] * len(target)
    arrays = [
        pa.array(list(values), field.type) for values, field in zip(columns, target, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=target)


MAX_KEPT_TABLES = 4096  # readable_table's answers kept; past it all are let go
_READABLE: dict[tuple, Table] = {}


def readable_table(session, db: str, name: str, privilege: str | None = privileges.SELECT) -> Table:
    """The table, once the user may use it so (checked before whether it exists, as MySQL; not
    for a table a view reads, privilege None: the view's reader needs SELECT on the view only).
    An answer is kept until the catalog changes (its journal id moves with every change, grants
    and drops included; found under the catalog's lock, so never half an apply)."""
    from fe.sql.statements import TableName

    catalog = session.catalog
    asked = (session.username, session.user_host, session.database, db, name, privilege)
    kept = _READABLE.get((id(catalog), catalog.journal_id, asked))
    if kept is not None:
        return kept
    if not db:
        raise QueryError(ErrorCode.NO_DB_ERROR, "No database selected")
    with catalog.lock:
        if privilege is not None and not privileges.has(session.user, privilege, db, name):
            command = "SELECT" if privilege == privileges.SELECT else "INSERT"
            raise session.table_denied(command, db, name)
        table = resolve_table(session, TableName(db, name))[1]
        if privilege not in (privileges.SELECT, None) and views.is_view(table):
            raise QueryError(
                1471, f"The target table {table.name} is a view, not insertable-into or updatable"
            )
        if len(_READABLE) >= MAX_KEPT_TABLES:
            _READABLE.clear()
        _READABLE[id(catalog), catalog.journal_id, asked] = table
    return table
