"""The backend's HTTP port (Doris's webserver_port, 8040): Stream Load as an FE redirects it here.

Served by the TN's process (`quire tn`, and `quire up` in the FE's), on an event loop of its own
in a thread: each load runs on a worker thread reading the body from the loop as it arrives.

  PUT /api/{db}/{table}/_stream_load     a load (the FE's signed token in ?quire_token=)
  PUT /api/{db}/_stream_load_2pc         commit or abort a two-phase load (its own token)
  GET /api/_load_error_log?file=NAME     the rows a load filtered, and why
  GET /api/_load_records?db=NAME         the loads this TN knows (X-Quire-Token: the cluster's)
  POST /api/_clean_labels?db=NAME[&label=L]  CLEAN LABEL: finished loads' labels let go (the same)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import io
import logging
import threading
from collections.abc import Callable

import pyarrow as pa
from aiohttp import web

from be.engine import Engine, EngineError
from be.load import token
from be.load.errors import BadLoadRequest, LoadError, TokenRefused
from be.load.limits import LoadLimits
from be.load.stream_load import StreamLoads
from be.storage.objects import ObjectStore
from be.tn.errors import CommitError

logger = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 30.0
WHERE_TIMEOUT_SECONDS = 60.0
WHERE_MEMORY_BYTES = 1 << 30
READ_TIMEOUT_SECONDS = 300.0  # a client silent this long mid-body: the load fails
MAX_HEADER_LINE_BYTES = 128 << 10  # the redirect's URL carries the token


class LoadServer:
    def __init__(
        self,
        host: str,
        port: int,
        key: str | bytes,
        pipeline: Callable[[], object],
        store: ObjectStore,
        limits: LoadLimits | None = None,
        grow=None,
    ):
        self.host = host
        self.requested_port = port
        self.key = key
        self.limits = limits or LoadLimits()
        self.port = 0
        self.loads = StreamLoads(
            pipeline,
            store,
            self.limits,
            self._evaluated,
            grow,
            key.decode() if isinstance(key, bytes) else key,
        )
        self._pipeline = pipeline
        self._engine = Engine(workers=2, queue_size=self.limits.max_open_loads, threads_per_query=1)
        self._workers = concurrent.futures.ThreadPoolExecutor(
            self.limits.max_open_loads + 2, thread_name_prefix="stream-load"
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Listen; OSError if the port cannot be had (the node does not start)."""
        try:
            self._start()
        except OSError:
            self._loop = self._thread = None
            raise

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        started: concurrent.futures.Future = concurrent.futures.Future()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen())
            except BaseException as error:  # the port is taken, ...: start() raises it
                started.set_exception(error)
                loop.close()
                return
            started.set_result(None)
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="load-server", daemon=True)
        self._thread.start()
        started.result(START_TIMEOUT_SECONDS)
        logger.info("Stream Load served on %s:%d", self.host, self.port)

    async def _listen(self) -> None:
        app = web.Application()
        app.add_routes(
            [
                web.put(
                    "/api/{db}/{table}/_stream_load",
                    self.stream_load,
                    expect_handler=self._expect,
                ),
                web.put("/api/{db}/_stream_load_2pc", self.two_phase),
                web.put("/api/{db}/{table}/_stream_load_2pc", self.two_phase),
                web.get("/api/_load_error_log", self.error_log),
                web.get("/api/_load_records", self.records),
                web.post("/api/_clean_labels", self.clean_labels),
                web.get("/api/health", self.health),
            ]
        )
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=False, max_line_size=MAX_HEADER_LINE_BYTES
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.requested_port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def close(self) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._runner is not None and self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            except (concurrent.futures.TimeoutError, RuntimeError) as error:
                logger.warning("the load server did not stop cleanly: %s", error)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self.loads.abort_all()
        self._workers.shutdown(wait=False, cancel_futures=True)
        self._engine.close()

    # -- handlers -----------------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "OK"})

    async def _expect(self, request: web.Request) -> web.StreamResponse | None:
        """Refuse a bad token before the client sends its body."""
        try:
            self._claims(request)
        except LoadError as error:
            return _refusal(error)
        if request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return None

    async def stream_load(self, request: web.Request) -> web.Response:
        try:
            claims = self._claims(request)
        except LoadError as error:
            return _refusal(error)
        loop = asyncio.get_running_loop()
        body = BodyReader(request, loop, self.limits.max_body_bytes)
        error_url = f"http://{request.host}/api/_load_error_log"
        answer = await loop.run_in_executor(
            self._workers,
            self.loads.load,
            claims,
            request.headers,
            body,
            request.remote or "",
            error_url,
        )
        return web.json_response(answer)

    async def two_phase(self, request: web.Request) -> web.Response:
        db = request.match_info["db"]
        try:
            claims = token.verify(
                request.query.get(token.TOKEN_PARAMETER, ""),
                self.key,
                self.limits.max_token_bytes,
                token.TWO_PHASE,
            )
            if claims.get("db") != db:
                raise TokenRefused("the load token names another database")
            answer = await asyncio.get_running_loop().run_in_executor(
                self._workers,
                self.loads.two_phase,
                db,
                claims["user"],
                bool(claims.get("admin")),
                request.headers,
            )
        except TokenRefused as error:
            return web.json_response({"status": "Fail", "msg": str(error)}, status=401)
        except (LoadError, CommitError) as error:
            return web.json_response({"status": "Fail", "msg": str(error)})
        return web.json_response(answer)

    async def error_log(self, request: web.Request) -> web.Response:
        text = self.loads.error_logs.get(request.query.get("file", ""))
        if text is None:
            return web.Response(status=404, text="no such error log (kept for recent loads)\n")
        return web.Response(text=text)

    def _from_an_fe(self, request: web.Request) -> bool:
        given = request.headers.get("X-Quire-Token", "")
        expected = self.key if isinstance(self.key, str) else self.key.decode()
        return hmac.compare_digest(given, expected)

    async def clean_labels(self, request: web.Request) -> web.Response:
        if not self._from_an_fe(request):
            return web.json_response({"msg": "only FEs of this cluster ask"}, status=401)
        db, label = request.query.get("db", ""), request.query.get("label") or None
        pipeline = self._pipeline()
        if not db or pipeline is None:
            return web.json_response({"msg": "a database, and a TN, are needed"}, status=400)
        try:
            cleaned = await asyncio.get_running_loop().run_in_executor(
                self._workers, pipeline.clean_labels, db, label
            )
        except CommitError as error:
            return web.json_response({"msg": str(error)}, status=503)
        return web.json_response({"cleaned": cleaned})

    async def records(self, request: web.Request) -> web.Response:
        if not self._from_an_fe(request):
            return web.json_response({"msg": "only FEs of this cluster ask"}, status=401)
        db = request.query.get("db") or None
        pipeline = self._pipeline()
        found = [] if pipeline is None else pipeline.load_records(db)
        return web.json_response([record.fields() for record in found])

    def _claims(self, request: web.Request) -> dict:
        claims = token.verify(
            request.query.get(token.TOKEN_PARAMETER, ""),
            self.key,
            self.limits.max_token_bytes,
            token.LOAD,
        )
        if (claims.get("db"), claims.get("table")) != (
            request.match_info["db"],
            request.match_info["table"],
        ):
            raise TokenRefused("the load token names another table")
        return claims

    def _evaluated(self, expressions: list[str], rows: pa.Table) -> list[pa.Array]:
        """Each expression's value (DuckDB text the FE checked) for each of rows; BadLoadRequest
        if the engine refuses them."""
        sql = (
            "SELECT "
            + ", ".join(f"{expression} AS c{n}" for n, expression in enumerate(expressions))
            + " FROM load_rows"
        )
        run = self._engine.run(
            lambda: (sql, {"load_rows": rows}),
            timeout_seconds=WHERE_TIMEOUT_SECONDS,
            memory_limit_bytes=WHERE_MEMORY_BYTES,
            arrow=True,
        )
        try:
            answer = asyncio.run_coroutine_threadsafe(run, self._loop).result()
        except EngineError as error:
            raise BadLoadRequest(str(error)) from None
        table = pa.Table.from_batches(answer.batches) if answer.batches else None
        if table is None or table.num_rows != rows.num_rows:
            raise BadLoadRequest("the engine did not answer for every row")
        return [table.column(n).combine_chunks() for n in range(len(expressions))]


class BodyReader(io.RawIOBase):
    """The request's body as a blocking stream for a worker thread; a body cut short (the client
    went, or sent less than its Content-Length) or too large reads as an end, with `broken`
    saying why."""

    def __init__(self, request: web.Request, loop: asyncio.AbstractEventLoop, max_bytes: int):
        self.request = request
        self.loop = loop
        self.max_bytes = max_bytes
        self.expected = request.content_length
        self.bytes_read = 0
        self.broken: str | None = None
        self._pending = b""
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self._pending:
            if self._ended:
                return 0
            self._pending = self._next()
            if not self._pending:
                self._ended = True
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _next(self) -> bytes:
        try:
            chunk = asyncio.run_coroutine_threadsafe(
                self.request.content.readany(), self.loop
            ).result(READ_TIMEOUT_SECONDS)
        except Exception as error:  # the connection went: aiohttp's kinds, a timeout
            self.broken = f"the body was cut off: {type(error).__name__} {error}"
            return b""
        if not chunk:
            if self.expected is not None and self.bytes_read < self.expected:
                self.broken = f"the body ended after {self.bytes_read} of {self.expected} bytes"
            return b""
        self.bytes_read += len(chunk)
        if self.bytes_read > self.max_bytes:
            self.broken = (
                f"the body is larger than {self.max_bytes >> 20} MB (streaming_load_max_mb)"
            )
            return b""
        return chunk


def _refusal(error: LoadError) -> web.Response:
    status = 401 if isinstance(error, TokenRefused) else 400
    return web.json_response({"Status": "Fail", "Message": str(error)}, status=status)
