"""A statement's view of table data: the data plane it reads and writes through, and the
snapshot timestamp it reads at (never older than the session's own last commit)."""

from __future__ import annotations

import pyarrow as pa

from be.cn.bounds import ColumnBound
from be.cn.node import WatermarkTimeout
from be.table_schema import TableSchema
from fe.mysql.errors import ErrorCode, QueryError
from fe.security import privileges
from metadata.records import Table

READ_WAIT_SECONDS = 10.0  # a read waits this long for the CN to reach its timestamp


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
    """Reads of one statement: every table at the same timestamp."""

    def __init__(self, session):
        from fe.statements import transactions

        self.session = session
        self.transaction = transactions.current(session)
        self._ts = self.transaction.snapshot_ts if self.transaction is not None else None

    @property
    def ts(self) -> int:
        if self._ts is None:
            self._ts = max(data_plane(self.session).read_ts(), self.session.last_commit_ts)
        return self._ts

    def table(self, db: str, name: str, privilege: str = privileges.SELECT) -> Table:
        return readable_table(self.session, db, name, privilege)

    def committed(self, table: Table, bounds: tuple[ColumnBound, ...] = ()) -> pa.Table:
        """The table's committed rows at the snapshot, with row ids, without this transaction's
        own writes (those outside bounds may be left out)."""
        return self._read(TableSchema.of(table), True, bounds)

    def snapshot(
        self, table: Table, row_ids: bool = False, bounds: tuple[ColumnBound, ...] = ()
    ) -> pa.Table:
        """bounds: rows outside them may be left out (the statement filters them anyway)."""
        schema = TableSchema.of(table)
        own = self.transaction is not None and table.id in self.transaction.writes
        rows = self._read(schema, row_ids or own, bounds)
        return self.transaction.seen(schema, rows, row_ids) if own else rows

    def _read(
        self, schema: TableSchema, row_ids: bool, bounds: tuple[ColumnBound, ...] = ()
    ) -> pa.Table:
        try:
            return data_plane(self.session).snapshot(
                schema, self.ts, READ_WAIT_SECONDS, row_ids, bounds
            )
        except WatermarkTimeout as error:
            raise QueryError(
                ErrorCode.UNKNOWN_ERROR, f"Reading table data timed out: {error}"
            ) from None


def readable_table(session, db: str, name: str, privilege: str = privileges.SELECT) -> Table:
    """The table, once the user may use it so (checked before whether it exists, as MySQL)."""
    from fe.sql.statements import TableName
    from fe.statements.ddl import resolve_table

    if not db:
        raise QueryError(ErrorCode.NO_DB_ERROR, "No database selected")
    if not privileges.has(session.user, privilege, db, name):
        command = "SELECT" if privilege == privileges.SELECT else "INSERT"
        raise session.table_denied(command, db, name)
    return resolve_table(session, TableName(db, name))[1]
