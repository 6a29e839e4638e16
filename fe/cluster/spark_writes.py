"""df.write.format("quire") on the FE (be/spark/write_protocol.py says the routes): a begin
checks the account of HTTP basic auth holds LOAD (INSERT) on the table, as Stream Load does,
begins a load on the TN and answers the table's schema, where its objects live and a token the
FE signs with the cluster token naming that load. With the token, Spark tasks ask row ids for
their rows, and the write's driver commits every task's objects in one TN commit, or aborts.

mode("overwrite") (the token says so) commits the same way, and that one commit also removes
every row of the table's partitions (be/tn/loads.py): a reader sees the old rows or the new
ones, never both or neither; a failed write leaves the old rows.

A write is a load with a label (JSON "label", default spark_<its transaction id>) whose record
the TN keeps, as a Stream Load's: SHOW LOAD lists it; a label a load not aborted holds is refused
with Doris's "Label Already Exists" before any task runs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from aiohttp import web

from be.cn.node import WatermarkTimeout
from be.load import token
from be.load.errors import TokenRefused
from be.load.options import LABEL
from be.service.errors import ServiceError
from be.spark import write_protocol as protocol
from be.storage.errors import StorageError
from be.table_schema import TableSchema
from be.tn.errors import BadLoad, CommitError, LabelTaken, LoadUnknown
from be.tn.loads import SPARK, LoadClaim
from fe.cluster import load_columns
from fe.cluster.http_logins import basic_auth_login
from fe.mysql.errors import QueryError
from fe.security import privileges
from fe.security.lockout import LoginTracker
from fe.statements import auto_partitions, generated_columns, views
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 64 << 10
LOCATION_WAIT_SECONDS = 30.0
MAX_ROW_IDS = 1_000_000  # row ids one request asks (the TN's max_commit_rows)


class SparkWrites:
    def __init__(
        self,
        catalog: Catalog,
        login_tracker: LoginTracker,
        key: Callable[[], str],
        data_plane,
        token_ttl_seconds: float,
        new_session: Callable | None = None,
    ):
        self.catalog = catalog
        self.login_tracker = login_tracker
        self.key = key
        self.data_plane = data_plane
        self.token_ttl_seconds = token_ttl_seconds
        self.new_session = new_session  # an auto partition table's partitions are made

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post(protocol.BEGIN_PATH, self.begin),
            web.post(protocol.ROW_IDS_PATH, self.row_ids),
            web.post(protocol.COMMIT_PATH, self.commit),
            web.post(protocol.ABORT_PATH, self.abort),
            web.post(protocol.PARTITIONS_PATH, self.auto_partitions),
        ]

    async def begin(self, request: web.Request) -> web.Response:
        db_name, table_name = request.match_info["db"], request.match_info["table"]
        user, refusal = self._login(request)
        if refusal is not None:
            return refusal
        try:
            asked = json.loads(await request.read() or b"{}")
        except ValueError:
            return _refused(400, "the request body is not JSON")
        if (
            type(asked) is not dict
            or type(asked.get("overwrite", False)) is not bool
            or type(asked.get("label", "")) is not str
        ):
            return _refused(400, 'expected {"overwrite": false, "label": "..."}')
        label = asked.get("label", "")
        if label and not LABEL.fullmatch(label):
            return _refused(
                400, f"Label format error. regex: ^[-_A-Za-z0-9:]{{1,128}}$, label: {label[:200]}"
            )
        if not privileges.has(user, privileges.LOAD, db_name, table_name):
            return _refused(
                403,
                f"LOAD command denied to user '{user.name}'@'{user.host}' for table "
                f"'{db_name}.{table_name}'",
            )
        database = self.catalog.database(db_name)
        table = self.catalog.table(database.id, table_name) if database is not None else None
        if table is None:
            return _refused(404, f"Unknown table '{db_name}.{table_name}'")
        if views.is_view(table):
            return _refused(400, f"'{db_name}.{table_name}' is a view: it takes no rows")
        if generated_columns.has_any(table):
            return _refused(
                400,
                f"'{db_name}.{table_name}' has generated columns, which only INSERT and loads "
                "through the FE work out: it takes no rows from Spark",
            )
        if self.data_plane is None:
            return _refused(503, "this FE runs without a data plane")
        schema = TableSchema.of(table)
        lengths = {
            column.name: column.type.character_length
            for column in table.columns
            if column.type.name in ("CHAR", "VARCHAR") and column.type.character_length
        }
        overwrite = asked.get("overwrite", False)
        claim = LoadClaim(
            label, db_name, table_name, user.name, request.remote or "", SPARK, overwrite
        )
        try:
            location = await asyncio.to_thread(self._location, schema)
            txn_id = await asyncio.to_thread(self.data_plane.begin_load, schema, claim)
        except LabelTaken as error:
            return _refused(409, f"Label Already Exists: errCode = 2, detailMessage = {error}")
        except (CommitError, ServiceError, WatermarkTimeout, StorageError) as error:
            return _refused(503, f"the data plane cannot begin the write: {error}")
        if not location:
            await asyncio.to_thread(self.data_plane.abort_load, txn_id)
            return _refused(503, "the data plane keeps no objects (no storage_root)")
        claims = {
            "kind": token.WRITE,
            "user": user.name,
            "db": db_name,
            "table": table_name,
            "txn_id": txn_id,
            "schema": schema.fields(),
            "overwrite": overwrite,
        }
        signed = token.sign(claims, self.key(), self.token_ttl_seconds)
        label = label or f"{SPARK}_{txn_id}"
        logger.info(
            "spark write %s into %s.%s begun by %s (txn %d%s)",
            label,
            db_name,
            table_name,
            user.name,
            txn_id,
            ", overwrite" if overwrite else "",
        )
        begun = protocol.Begun(
            txn_id, schema, location, signed, lengths, label, load_columns.load_defaults(table)
        )
        return web.Response(body=begun.to_json(), content_type="application/json")

    async def row_ids(self, request: web.Request) -> web.Response:
        try:
            claims = self._claims(request)
            asked = json.loads(await request.read())
        except TokenRefused as error:
            return _refused(401, str(error))
        except ValueError:
            return _refused(400, "the request body is not JSON")
        count = asked.get("count") if type(asked) is dict else None
        if type(count) is not int or not 0 < count <= MAX_ROW_IDS:
            return _refused(400, f'expected {{"count": 1 to {MAX_ROW_IDS}}}')
        try:
            first = await asyncio.to_thread(
                self.data_plane.reserve_row_ids, claims["txn_id"], count
            )
        except (CommitError, ServiceError) as error:
            return _refused(_status(error), f"no row ids: {error}")
        return web.json_response({"first": first})

    async def commit(self, request: web.Request) -> web.Response:
        try:
            claims = self._claims(request)
            objects = protocol.decode_commit(await request.read())
        except TokenRefused as error:
            return _refused(401, str(error))
        except protocol.WriteProtocolError as error:
            return _refused(400, error.message)
        schema = self._newest(TableSchema.from_fields(claims["schema"]))
        if any(meta.table_id != schema.table_id for meta in objects):
            return _refused(400, "the write names objects of another table")
        try:
            commit_ts = await asyncio.to_thread(
                self.data_plane.commit_load,
                claims["txn_id"],
                schema,
                objects,
                claims.get("overwrite") is True,
            )
        except (CommitError, ServiceError, StorageError) as error:
            logger.info("spark write txn %d not committed: %s", claims["txn_id"], error)
            return _refused(_status(error), f"the write was not committed: {error}")
        logger.info(
            "spark write into %s.%s committed at %d: %d objects, %d rows",
            claims["db"],
            claims["table"],
            commit_ts,
            len(objects),
            sum(meta.rows for meta in objects),
        )
        return web.json_response({"commit_ts": commit_ts})

    async def auto_partitions(self, request: web.Request) -> web.Response:
        """A task's rows need auto partitions: made as an INSERT's are (by the leader), answered
        with the table's schema."""
        try:
            claims = self._claims(request)
            values = json.loads(await request.read())["values"]
        except TokenRefused as error:
            return _refused(401, str(error))
        except (ValueError, KeyError, TypeError):
            return _refused(400, 'expected {"values": [[...], ...]}')
        table = self.catalog.tables.get(TableSchema.from_fields(claims["schema"]).table_id)
        if table is None or self.new_session is None or not isinstance(values, list):
            return _refused(404, "the table has no auto partitions to make")
        if auto_partitions.rule_of(table) is None:
            return _refused(422, f"{table.name} makes no auto partitions: it has no AUTO PARTITION")
        try:
            rows = auto_partitions.rows_of_values(table, values)
            grown = await auto_partitions.ensured(self.new_session(), table, rows)
        except QueryError as error:
            return _refused(422, error.message)
        return web.json_response({"schema": TableSchema.of(grown).fields()})

    def _newest(self, schema: TableSchema) -> TableSchema:
        """The table's schema now, if it differs from schema in partitions alone (its tasks
        made auto partitions): what the write's objects are placed by."""
        table = self.catalog.tables.get(schema.table_id)
        if table is None:
            return schema
        newest = TableSchema.of(table)
        if newest.schema_version > schema.schema_version and newest.same_rows(schema):
            return newest
        return schema

    async def abort(self, request: web.Request) -> web.Response:
        try:
            claims = self._claims(request)
            names = protocol.decode_abort(await request.read())
        except TokenRefused as error:
            return _refused(401, str(error))
        except protocol.WriteProtocolError as error:
            return _refused(400, error.message)
        try:
            await asyncio.to_thread(self.data_plane.abort_load, claims["txn_id"], names)
        except (CommitError, ServiceError) as error:
            return _refused(503, f"the write was not aborted: {error}")
        logger.info("spark write txn %d aborted (%d objects named)", claims["txn_id"], len(names))
        return web.json_response({})

    def _claims(self, request: web.Request) -> dict:
        if self.data_plane is None:
            raise TokenRefused("this FE runs without a data plane")
        claims = token.verify(
            request.headers.get(protocol.TOKEN_HEADER, ""), self.key(), MAX_TOKEN_BYTES, token.WRITE
        )
        if type(claims.get("txn_id")) is not int or type(claims.get("schema")) is not dict:
            raise TokenRefused("the write's token names no load")
        return claims

    def _location(self, schema: TableSchema) -> str:
        """Where the data plane keeps objects (a read plan names it)."""
        store = getattr(self.data_plane, "store", None)
        if store is not None:
            return store.location
        plane = self.data_plane
        one = frozenset({schema.columns[0].name.lower()})
        return plane.read_plan(schema, plane.read_ts(), LOCATION_WAIT_SECONDS, one).location

    def _login(self, request: web.Request):
        unauthorized = "Unauthorized: use HTTP basic auth with a user that may LOAD the table"
        login = basic_auth_login(self.catalog, self.login_tracker, request)
        if login is None or login.user is None:
            return None, _refused(401, login.blocked if login and login.blocked else unauthorized)
        return login.user, None


def _status(error: Exception) -> int:
    """400 for a write the TN will never take (objects it did not hand out, a load it does not
    know), 503 for one it may take later."""
    return 400 if isinstance(error, (BadLoad, LoadUnknown)) else 503


def _refused(status: int, message: str) -> web.Response:
    return web.json_response({"code": status, "msg": message}, status=status)
