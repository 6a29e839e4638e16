"""POST /api/{db}/{table}/_read_plan: a table's read plan for Spark (be/read_plan), authorised
like a SELECT on the table for the account of HTTP basic auth (not only admins).

The body is optional JSON: {"snapshot": a commit timestamp (default: the newest readable now),
"columns": [names] (default: every column), "schema_only": true (no objects, no tail: what a
reader needs to learn the columns)}. The answer is the plan's bytes
(application/x-quire-read-plan) with its timestamp in X-Quire-Snapshot; a refusal is JSON
{"code", "msg"} with 400, 401, 403, 404 or 503.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import pyarrow as pa
from aiohttp import web

from be import read_plan
from be.cn.node import WatermarkTimeout
from be.read_plan import ReadPlanError
from be.service.errors import ServiceError
from be.storage.errors import StorageError
from be.table_schema import TableSchema
from fe.cluster.http_logins import basic_auth_login
from fe.mysql.errors import QueryError
from fe.security import privileges
from fe.security.lockout import LoginTracker
from fe.session import QuireSession
from fe.statements import row_policies, views
from fe.statements.table_data import data_plane, readable_table
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

READ_PLAN_PATH = "/api/{db}/{table}/_read_plan"
READ_PLAN_SUFFIX = "/_read_plan"
CONTENT_TYPE = "application/x-quire-read-plan"
MAX_BODY_BYTES = 1 << 20  # the request's JSON
MAX_COLUMNS = 4096
PLAN_WAIT_SECONDS = 30.0  # the data plane's wait for the snapshot timestamp
ACCESS_DENIED = 1142  # MySQL's "command denied to user"


def is_read_plan(path: str) -> bool:
    return path.startswith("/api/") and path.endswith(READ_PLAN_SUFFIX)


class ReadPlans:
    def __init__(
        self,
        catalog: Catalog,
        login_tracker: LoginTracker,
        new_session: Callable[[], QuireSession],
    ):
        self.catalog = catalog
        self.login_tracker = login_tracker
        self.new_session = new_session

    async def handle(self, request: web.Request) -> web.Response:
        db, name = request.match_info["db"], request.match_info["table"]
        session = self.new_session()
        user, refusal = self._account(request)
        if user is None:
            return _refused(401, refusal, {"WWW-Authenticate": 'Basic realm="quire"'})
        session.username, session.user_host, session.database = user.name, user.host, db
        try:
            asked = _asked(await request.read())
        except ValueError as error:
            return _refused(400, str(error))
        try:
            table = readable_table(session, db, name, privileges.SELECT)
        except QueryError as error:
            status = 403 if error.code == ACCESS_DENIED else 404
            return _refused(status, error.message)
        if views.is_view(table):
            return _refused(
                400, f"'{db}.{name}' is a view: read it over JDBC, its rows are a query's"
            )
        if row_policies.binds_any(session, table):
            return _refused(
                403, f"A row policy limits what you read of '{db}.{name}': read it over JDBC"
            )
        try:
            plan = await asyncio.to_thread(self._plan, session, TableSchema.of(table), *asked)
            body = await asyncio.to_thread(read_plan.encode, plan)
        except QueryError as error:
            return _refused(400, error.message)
        except (ServiceError, WatermarkTimeout, ReadPlanError, StorageError) as error:
            logger.info("no read plan of %s.%s: %s", db, name, error)
            return _refused(503, f"The data plane cannot make the read plan: {error}")
        return web.Response(
            body=body, content_type=CONTENT_TYPE, headers={"X-Quire-Snapshot": str(plan.ts)}
        )

    def _account(self, request: web.Request):
        """(the account of the request's basic auth, None) or (None, why not)."""
        unauthorized = "Unauthorized: use HTTP basic auth with a user that may SELECT the table"
        login = basic_auth_login(self.catalog, self.login_tracker, request)
        if login is None or login.user is None:
            return None, (login.blocked if login is not None and login.blocked else unauthorized)
        return login.user, None

    def _plan(
        self,
        session: QuireSession,
        schema: TableSchema,
        snapshot: int | None,
        columns: tuple[str, ...] | None,
        schema_only: bool,
    ) -> read_plan.ReadPlan:
        plane = data_plane(session)
        newest = plane.read_ts()
        ts = newest if snapshot is None else snapshot
        if ts > newest:
            raise QueryError(1105, f"Snapshot {ts} is newer than the newest readable ({newest})")
        if ts < plane.oldest_readable_ts():
            raise QueryError(1105, f"Snapshot {ts} is older than the data plane keeps")
        wanted = None
        if columns is not None:
            known = {column.name.lower() for column in schema.columns}
            unknown = [column for column in columns if column.lower() not in known]
            if unknown:
                raise QueryError(1054, f"Unknown column '{unknown[0]}' in the table")
            wanted = frozenset(column.lower() for column in columns)
        if schema_only:
            empty = schema.with_row_ids().empty_table()
            return read_plan.ReadPlan(schema, ts, (), (), pa.array([], pa.int64()), empty)
        return plane.read_plan(schema, ts, PLAN_WAIT_SECONDS, wanted)


def _asked(body: bytes) -> tuple[int | None, tuple[str, ...] | None, bool]:
    """(snapshot, columns, schema_only) of the request's JSON; ValueError if it is not that."""
    if len(body) > MAX_BODY_BYTES:
        raise ValueError(f"a read plan request is at most {MAX_BODY_BYTES} bytes")
    if not body.strip():
        return None, None, False
    try:
        asked = json.loads(body)
    except ValueError:
        raise ValueError("the request body is not JSON") from None
    if type(asked) is not dict or set(asked) - {"snapshot", "columns", "schema_only"}:
        raise ValueError('expected {"snapshot": ts, "columns": [names], "schema_only": bool}')
    snapshot = asked.get("snapshot")
    if snapshot is not None and (type(snapshot) is not int or snapshot <= 0):
        raise ValueError("snapshot is a commit timestamp: a positive integer")
    columns = asked.get("columns")
    if columns is not None:
        if (
            type(columns) is not list
            or not 0 < len(columns) <= MAX_COLUMNS
            or not all(type(column) is str for column in columns)
        ):
            raise ValueError(f"columns is a list of 1 to {MAX_COLUMNS} column names")
        columns = tuple(columns)
    schema_only = asked.get("schema_only", False)
    if type(schema_only) is not bool:
        raise ValueError("schema_only is true or false")
    return snapshot, columns, schema_only


def _refused(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"code": status, "msg": message}, status=status, headers=headers)
