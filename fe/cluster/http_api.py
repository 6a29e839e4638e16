"""The FE's HTTP API (aiohttp, on the MySQL front's event loop).

/api/health and /metrics are open; a table's read plan (fe/cluster/read_plans.py) checks the
account's privilege on the table itself; everything else needs HTTP basic auth with a Quire user
that holds ADMIN_PRIV, or the cluster token (header X-Quire-Token) that other FEs present.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable

from aiohttp import web

from be.load.auto_partitions import AUTO_PARTITIONS_PATH
from be.spark.write_protocol import is_spark_write
from be.table_schema import TableSchema
from fe.cluster.checkpoints import Checkpointer
from fe.cluster.connection_ids import kill_here
from fe.cluster.forwarding import FORWARD_PATH
from fe.cluster.frontend_messages import (
    MAX_MESSAGE_BYTES,
    ConfigRequest,
    ForwardAnswer,
    ForwardOutcome,
    ForwardRequest,
    KillRequest,
    MessageError,
    PeerAnswer,
    PortsReport,
)
from fe.cluster.http_logins import basic_auth_login
from fe.cluster.membership import record_ports
from fe.cluster.metrics import Metrics
from fe.cluster.peers import CONFIG_PATH, KILL_PATH
from fe.cluster.read_plans import READ_PLAN_PATH, ReadPlans, is_read_plan
from fe.cluster.spark_writes import SparkWrites
from fe.cluster.startup import ThisFrontend
from fe.cluster.stream_load_front import StreamLoadFront, is_stream_load
from fe.cluster.write_path import MetadataWriter, answer_from_outcome
from fe.console.app import Console, is_console
from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.mysql.server import MysqlFront
from fe.security import privileges
from fe.security.lockout import LoginTracker
from fe.session import QuireSession
from fe.statements import auto_partitions
from fe.statements.admin import set_config_here
from fe.statements.statement_kinds import kind_of
from image.images import ImageStore
from metadata.catalog import Catalog
from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)

IMAGE_CHUNK_BYTES = 1 << 20


class HttpApi:
    def __init__(
        self,
        *,
        this: ThisFrontend,
        catalog: Catalog,
        journal: ReplicatedJournal,
        writer: MetadataWriter,
        images: ImageStore,
        checkpointer: Checkpointer,
        metrics: Metrics,
        login_tracker: LoginTracker,
        new_session: Callable[[], QuireSession],
        is_ready: Callable[[], bool],
        query_port: Callable[[], int],
        front: MysqlFront,
        stream_loads: StreamLoadFront | None = None,
        spark_writes: SparkWrites | None = None,
        console: Console | None = None,
    ):
        self.this = this
        self.catalog = catalog
        self.journal = journal
        self.writer = writer
        self.images = images
        self.checkpointer = checkpointer
        self.metrics_registry = metrics
        self.login_tracker = login_tracker
        self.new_session = new_session
        self.is_ready = is_ready
        self.query_port = query_port
        self.front = front
        self.stream_loads = stream_loads
        self.console = console
        self.read_plans = ReadPlans(catalog, login_tracker, new_session)
        self.app = web.Application(
            middlewares=[self._authenticate, self._refuse_malformed_messages],
            client_max_size=MAX_MESSAGE_BYTES,
        )
        self.app.add_routes(
            [
                web.get("/api/health", self.health),
                web.get("/metrics", self.metrics),
                web.get("/info", self.info),
                web.get("/version", self.version),
                web.get("/role", self.role),
                web.get("/journal_id", self.journal_id),
                web.get("/image", self.image),
                web.get("/dump", self.dump),
                web.post("/api/checkpoint", self.checkpoint),
                web.post(FORWARD_PATH, self.forwarded),
                web.post(AUTO_PARTITIONS_PATH, self.auto_partitions),
                web.post("/api/frontend_ports", self.frontend_ports),
                web.post(KILL_PATH, self.kill),
                web.post(CONFIG_PATH, self.set_config),
                *(stream_loads.routes() if stream_loads is not None else ()),
                web.post(READ_PLAN_PATH, self.read_plans.handle),
                *(spark_writes.routes() if spark_writes is not None else ()),
                *(console.routes() if console is not None else ()),
            ]
        )
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> None:
        if self.stream_loads is not None:  # quire up: its backend's HTTP port opens beside
            loop = asyncio.get_running_loop()
            await asyncio.to_thread(self.stream_loads.serve, host, loop)
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        if self.console is not None:
            self.console.start(self.new_session().services)

    async def close(self) -> None:
        if self.console is not None:
            await self.console.charts.stop()
        if self.runner:
            await self.runner.cleanup()

    @web.middleware
    async def _refuse_malformed_messages(self, request: web.Request, handler):
        try:
            return await handler(request)
        except MessageError as error:
            return web.json_response({"code": 400, "msg": str(error)}, status=400)

    @web.middleware
    async def _authenticate(self, request: web.Request, handler):
        if request.path in ("/api/health", "/metrics"):
            return await handler(request)
        if is_stream_load(request.path) or is_read_plan(request.path):
            return await handler(request)  # each checks the MySQL account and its privilege
        if is_spark_write(request.path):
            return await handler(request)
        if is_console(request.path):
            return await handler(
                request
            )  # the console's own login (a cookie, a CSRF token)  # the account's LOAD, then the token it signed
        token = request.headers.get("X-Quire-Token")
        if token is not None and hmac.compare_digest(token, self.this.token):
            return await handler(request)
        if request.path in (
            FORWARD_PATH,
            AUTO_PARTITIONS_PATH,
            "/api/frontend_ports",
            KILL_PATH,
            CONFIG_PATH,
        ):
            return web.json_response(
                {"code": 401, "msg": "only FEs of this cluster forward statements"}, status=401
            )
        refusal = self._basic_auth_admin(request)
        if refusal is None:
            return await handler(request)
        return web.json_response(
            {"code": 401, "msg": refusal},
            status=401,
            headers={"WWW-Authenticate": 'Basic realm="quire"'},
        )

    def _basic_auth_admin(self, request: web.Request) -> str | None:
        """None if the request's basic auth proves an admin account, else why it is refused; a
        wrong password counts as a failed login of the account, as over MySQL."""
        login = basic_auth_login(self.catalog, self.login_tracker, request)
        if login is not None and login.blocked is not None:
            return login.blocked
        if login is None or login.user is None or not privileges.is_admin(login.user):
            return "Unauthorized: use HTTP basic auth with an admin user"
        return None

    async def health(self, request: web.Request) -> web.Response:
        ok = self.is_ready()
        return web.json_response(
            {"status": "OK" if ok else "STARTING", "journal_id": self.catalog.journal_id},
            status=200 if ok else 503,
        )

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics_registry.render(), content_type="text/plain", charset="utf-8"
        )

    async def info(self, request: web.Request) -> web.Response:
        this, catalog = self.this, self.catalog
        return web.json_response(
            {
                "name": this.name,
                "host": this.host,
                "query_port": self.query_port(),
                "http_port": self.port,
                "edit_log_port": this.edit_log_port,
                "cluster_id": this.cluster_id,
                "is_leader": self.journal.status().is_leader,
                "journal_id": catalog.journal_id,
                "databases": len(catalog.dbs),
                "tables": len(catalog.tables),
                "tablets": catalog.tablet_count(),
            }
        )

    async def version(self, request: web.Request) -> web.Response:
        from fe.variables import VERSION, VERSION_COMMENT

        return web.json_response(
            {"version": "0.1.0", "mysql_version": VERSION, "comment": VERSION_COMMENT}
        )

    async def role(self, request: web.Request) -> web.Response:
        """This node's role; with ?host=&port=, the role a joining node was added with, plus what it
        needs to join (cluster id, followers). Never the token: the joiner already holds it."""
        this = self.this
        host, port = request.query.get("host"), request.query.get("port")
        if host is None:
            return web.json_response(
                {"role": this.role, "name": this.name, "cluster_id": this.cluster_id}
            )
        frontends = list(self.catalog.frontends.values())
        frontend = next(
            (f for f in frontends if f.host == host and str(f.edit_log_port) == port), None
        )
        if frontend is None:
            return web.json_response(
                {"code": 404, "msg": f"frontend {host}:{port} was not added with ALTER SYSTEM"},
                status=404,
            )
        return web.json_response(
            {
                "role": str(frontend.role),
                "name": frontend.name,
                "cluster_id": this.cluster_id,
                "followers": [
                    f"{f.host}:{f.edit_log_port}" for f in frontends if f.role == "FOLLOWER"
                ],
            }
        )

    async def journal_id(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"journal_id": self.catalog.journal_id},
            headers={"X-Quire-Journal-Id": str(self.catalog.journal_id)},
        )

    async def image(self, request: web.Request) -> web.StreamResponse:
        images = self.images.images()
        wanted = request.query.get("version")
        if wanted is None and images:
            info = images[0]
        else:
            info = next((i for i in images if str(i.journal_id) == wanted), None)
        if info is None:
            return web.json_response(
                {"code": 404, "msg": f"no image with version {wanted}"}, status=404
            )
        response = web.StreamResponse(
            headers={"X-Image-Version": str(info.journal_id), "Content-Length": str(info.size)}
        )
        response.content_type = "application/octet-stream"
        await response.prepare(request)
        try:
            with self.images.stream(info.journal_id) as file:
                while chunk := await asyncio.to_thread(file.read, IMAGE_CHUNK_BYTES):
                    await response.write(chunk)
            await response.write_eof()
        except ConnectionError:
            logger.debug("image %d: the client stopped reading", info.journal_id)  # it had this one
        return response

    async def auto_partitions(self, request: web.Request) -> web.Response:
        """A follower's INSERT or a backend's Stream Load needs auto partitions: made as an
        INSERT's are (fe/statements/auto_partitions.py: by the leader, this FE waiting until it
        has them); answered with the journal id to wait for and the table's schema."""
        try:
            asked = await request.json()
            table_id, values = int(asked["table_id"]), list(asked["values"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"code": 1105, "msg": "malformed request"}, status=400)
        table = self.catalog.tables.get(table_id)
        if table is None:
            return web.json_response({"code": 1146, "msg": f"no table {table_id}"}, status=404)
        try:
            rows = auto_partitions.rows_of_values(table, values)
            grown = await auto_partitions.ensured(self.new_session(), table, rows)
        except QueryError as error:
            return web.json_response({"code": error.code, "msg": error.message}, status=422)
        return web.json_response(
            {"journal_id": self.catalog.journal_id, "schema": TableSchema.of(grown).fields()}
        )

    async def forwarded(self, request: web.Request) -> web.Response:
        """A statement another FE forwarded: run it as its user, answer with the journal id."""
        forward = ForwardRequest.from_bytes(await request.read())
        if not self.writer.is_leader():
            answer = ForwardAnswer(
                ForwardOutcome.NOT_LEADER, message="This FE is no longer the leader"
            )
            return web.json_response(answer.to_json())
        session = self.new_session()
        session.username, session.user_host = forward.user, forward.user_host
        session.database = forward.database
        session.request_id = forward.request_id
        try:
            session.apply_variables(forward.variables)
            result = await self._run_once(session, forward.sql, forward.request_id)
        except QueryError as error:
            answer = ForwardAnswer(
                ForwardOutcome.REFUSED,
                code=error.code,
                message=error.message,
                sqlstate=error.sqlstate,
            )
            return web.json_response(answer.to_json())
        answer = ForwardAnswer(
            ForwardOutcome.DONE,
            journal_id=self.catalog.journal_id,
            affected_rows=result.affected_rows,
            info=result.info,
        )
        return web.json_response(answer.to_json())

    async def _run_once(self, session: QuireSession, sql: str, request_id: str) -> Result:
        """Run a forwarded statement, or, if a try of it already reached the journal (the FE
        retries after a failover), answer as that try was answered."""
        outcome = self.catalog.request_outcome(request_id)
        if outcome is None:
            statement = await session.parse(sql)
            if not kind_of(statement).forwarded(statement):
                raise QueryError(1105, "Only statements that need the leader are forwarded")
            try:
                return await session.execute(statement)
            except QueryError:
                outcome = self.catalog.request_outcome(request_id)  # applied meanwhile?
                if outcome is None:
                    raise
        logger.info(
            "forwarded request %s was applied before: answered from its outcome", request_id
        )
        answer_from_outcome(self.catalog, outcome)
        return Result()

    async def kill(self, request: web.Request) -> web.Response:
        """KILL of a connection of this FE that a client asked another FE for."""
        kill = KillRequest.from_bytes(await request.read())
        try:
            kill_here(self.front, kill.connection_id, kill.query_only, kill.user, kill.is_admin)
        except QueryError as error:
            return web.json_response(PeerAnswer(error.code, error.message).to_json())
        return web.json_response(PeerAnswer().to_json())

    async def set_config(self, request: web.Request) -> web.Response:
        """Another FE's ADMIN SET ALL FRONTENDS CONFIG, for this FE."""
        change = ConfigRequest.from_bytes(await request.read())
        settings = tuple((name, str(value)) for name, value in change.settings.items())
        try:
            set_config_here(self.new_session().services, settings)
        except QueryError as error:
            return web.json_response(PeerAnswer(error.code, error.message).to_json())
        return web.json_response(PeerAnswer().to_json())

    async def frontend_ports(self, request: web.Request) -> web.Response:
        report = PortsReport.from_bytes(await request.read())
        try:
            await asyncio.to_thread(
                record_ports,
                self.catalog,
                self.writer,
                report.name,
                report.http_port,
                report.query_port,
            )
        except QueryError as error:
            return web.json_response({"code": error.code, "msg": error.message}, status=409)
        return web.json_response({"ok": True})

    async def dump(self, request: web.Request) -> web.Response:
        """The whole catalog as canonical text (for comparing nodes and replays)."""
        text = await asyncio.to_thread(self.catalog.canonical_dump)
        return web.Response(text=text, headers={"X-Quire-Journal-Id": str(self.catalog.journal_id)})

    async def checkpoint(self, request: web.Request) -> web.Response:
        info = await self.checkpointer.checkpoint_now()
        return web.json_response({"image": info.path.name, "journal_id": info.journal_id})
