"""Stream Load's entry on the FE, as Doris's: the FE checks the account (HTTP basic auth, a MySQL
user) holds LOAD (INSERT) on the table, then answers 307 to the backend that serves loads, with a
short-lived token it signs with the cluster token (who, which table, its schema, the WHERE
filter as the engine's text). `curl --location-trusted` sends the body and headers on.

Answered before the body is read (also to Expect: 100-continue), so a large file goes once, to
the backend. Any FE redirects: the load never goes through the leader."""

from __future__ import annotations

import asyncio
import functools
import logging
import urllib.parse
from collections.abc import Callable

import pyarrow as pa
import sqlglot
from aiohttp import web
from sqlglot.errors import SqlglotError

from be import engine
from be.load import token
from be.table_schema import TableSchema
from fe.cluster import load_headers
from fe.cluster.http_logins import basic_auth_login
from fe.cluster.load_columns import load_columns, load_defaults
from fe.security import privileges
from fe.security.lockout import LoginTracker
from fe.statements import auto_partitions, materialized_views, views
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

STREAM_LOAD_PATH = "/api/{db}/{table}/_stream_load"
TWO_PHASE_PATHS = ("/api/{db}/_stream_load_2pc", "/api/{db}/{table}/_stream_load_2pc")


class StreamLoadFront:
    def __init__(
        self,
        catalog: Catalog,
        login_tracker: LoginTracker,
        key: Callable[[], str],
        data_plane,
        this_host: str,
        token_ttl_seconds: float,
        writer=None,
        config=None,
    ):
        self.writer = writer  # with config: an auto partition table's partitions are made
        self.config = config
        self.catalog = catalog
        self.login_tracker = login_tracker
        self.key = key
        self.data_plane = data_plane
        self.this_host = this_host
        self.token_ttl_seconds = token_ttl_seconds

    def serve(self, host: str, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Open the embedded backend's HTTP port (quire up), if the data plane has one; its
        loads ask this FE (on loop) for the auto partitions their rows need."""
        serve_loads = getattr(self.data_plane, "serve_loads", None)
        if serve_loads is None:
            return
        grow = None
        if loop is not None and self.writer is not None and self.config is not None:
            grow = functools.partial(self._grow, loop)
        serve_loads(self.key(), host, grow)

    def _grow(self, loop, table_id: int, rows: pa.Table) -> TableSchema | None:
        """On a load's thread: the schema of the table once it has partitions for rows (made on
        the FE's loop), None if it cannot have them (the rows are filtered)."""
        table = self.catalog.tables.get(table_id)
        if table is None or auto_partitions.rule_of(table) is None:
            return None
        limit = self.config["max_auto_partition_num"]
        made = auto_partitions.grown(self.writer, self.catalog, limit, table, rows)
        try:
            larger = asyncio.run_coroutine_threadsafe(made, loop).result(
                self.config["journal_commit_timeout_second"]
            )
        except Exception as error:  # noqa: BLE001 - a refusal filters the rows, said in the log
            logger.warning("no auto partitions for a load into %s: %s", table.name, error)
            return None
        return TableSchema.of(larger)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.put(STREAM_LOAD_PATH, self.stream_load, expect_handler=self.stream_load),
            *(
                web.put(path, self.two_phase, expect_handler=self.two_phase)
                for path in TWO_PHASE_PATHS
            ),
        ]

    async def stream_load(self, request: web.Request) -> web.Response:
        db_name, table_name = request.match_info["db"], request.match_info["table"]
        user, refusal = self._login(request)
        if refusal is not None:
            return refusal
        database = self.catalog.database(db_name)
        table = self.catalog.table(database.id, table_name) if database is not None else None
        if not (privileges.has(user, privileges.LOAD, db_name, table_name)):
            return _failure(
                f"LOAD command denied to user '{user.name}'@'{user.host}' for table "
                f"'{db_name}.{table_name}'",
                403,
            )
        if database is None:
            return _failure(f"errCode = 2, detailMessage = Unknown database '{db_name}'", 404)
        if table is None:
            return _failure(
                f"errCode = 2, detailMessage = Unknown table '{table_name}' in {db_name}", 404
            )
        if views.is_view(table):
            return _failure(f"errCode = 2, detailMessage = '{db_name}.{table_name}' is a view", 400)
        if materialized_views.query_of(table) is not None:
            return _failure(f"errCode = 2, detailMessage = {materialized_views.NOT_WRITTEN}", 400)
        try:
            where = _where(request.headers.get("where", ""))
        except ValueError as error:
            return _failure(f"the where header: {error}", 400)
        max_text_bytes = self.config["max_allowed_packet"] if self.config else 1 << 26
        try:
            columns = load_columns(request.headers.get("columns", ""), table, max_text_bytes)
        except ValueError as error:
            return _failure(f"the columns header: {error}", 400)
        unkept = load_headers.unkept_header(request.headers, table)
        if unkept is not None:
            return _failure(unkept, 400)
        try:
            merge, sources = load_headers.merge_of(request.headers, table, columns.sources, _where)
        except ValueError as error:
            return _failure(f"errCode = 2, detailMessage = {error}", 400)
        claims = {
            "kind": token.LOAD,
            "user": user.name,
            "db": db_name,
            "table": table_name,
            "schema": TableSchema.of(table).fields(),
            "columns": list(sources),
            "mappings": [list(mapping) for mapping in columns.mappings],
            "where": where,
            "merge": merge,
            "lengths": {  # CHAR(n) and VARCHAR(n): characters, checked as an INSERT does
                column.name: column.type.character_length
                for column in table.columns
                if column.type.name in ("CHAR", "VARCHAR") and column.type.character_length
            },
            "json_columns": [c.name for c in table.columns if c.type.base in ("JSON", "JSONB")],
            "defaults": load_defaults(table),
        }
        if auto_partitions.rule_of(table) is not None:  # the backend asks this FE for them
            port = request.transport.get_extra_info("sockname")[1] if request.transport else 0
            claims["grow"] = f"http://{self.this_host}:{port}"
        path = f"/api/{_quoted(db_name)}/{_quoted(table_name)}/_stream_load"
        return self._redirect(path, claims)

    async def two_phase(self, request: web.Request) -> web.Response:
        db_name = request.match_info["db"]
        user, refusal = self._login(request)
        if refusal is not None:
            return refusal
        if self.catalog.database(db_name) is None:
            return _failure(f"errCode = 2, detailMessage = Unknown database '{db_name}'", 404)
        if not privileges.has_any(user, db_name):  # the backend checks it is the user's load
            return _failure(f"LOAD command denied to user '{user.name}' on '{db_name}'", 403)
        claims = {
            "kind": token.TWO_PHASE,
            "user": user.name,
            "db": db_name,
            "admin": privileges.is_admin(user),
        }
        return self._redirect(f"/api/{_quoted(db_name)}/_stream_load_2pc", claims)

    def _login(self, request: web.Request):
        login = basic_auth_login(self.catalog, self.login_tracker, request)
        if login is None:
            return None, _failure("no valid Authorization header: use -u user:password", 401)
        if login.blocked is not None:
            return None, _failure(login.blocked, 401)
        if login.user is None:
            return None, _failure(login.access_denied(), 401)
        return login.user, None

    def _redirect(self, path: str, claims: dict) -> web.Response:
        address = self.data_plane.load_address() if self.data_plane is not None else None
        if address is None:
            return _failure("no backend serves Stream Load (no TN, or no webserver_port)", 503)
        host, port = address
        signed = token.sign(claims, self.key(), self.token_ttl_seconds)
        query = urllib.parse.urlencode({token.TOKEN_PARAMETER: signed})
        location = f"http://{host or self.this_host}:{port}{path}?{query}"
        return web.Response(status=307, headers={"Location": location})


def is_stream_load(path: str) -> bool:
    return path.startswith("/api/") and path.endswith(("/_stream_load", "/_stream_load_2pc"))


def _where(text: str) -> str:
    """The WHERE filter as the engine's SQL, checked against its allow-list ('' for none)."""
    if not text.strip():
        return ""
    try:
        expression = sqlglot.parse_one(text, read="mysql")
    except SqlglotError as error:
        raise ValueError(str(error).splitlines()[0]) from None
    if isinstance(expression, sqlglot.exp.Query):
        raise ValueError("a condition, not a query")
    try:
        engine.check(expression)
    except engine.EngineError as error:
        raise ValueError(str(error)) from None
    return expression.sql(dialect="duckdb")


def _quoted(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _failure(message: str, status: int) -> web.Response:
    return web.json_response({"Status": "Fail", "Message": message}, status=status)
