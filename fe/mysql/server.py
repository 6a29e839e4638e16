"""The MySQL front: accepts clients, bounds them, and lists and kills their connections."""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
import struct
import time
from collections.abc import Awaitable, Callable

from mysql_mimic.auth import IdentityProvider
from mysql_mimic.session import BaseSession

from fe.mysql.connection import Connection, KillKind, PacketStream, ProcessInfo
from fe.mysql.errors import ErrorCode, sqlstate_for
from fe.mysql.transport import ClientSocket

logger = logging.getLogger(__name__)

SessionFactory = Callable[[], BaseSession | Awaitable[BaseSession]]

DEFAULT_MAX_PACKET_BYTES = 64 * 1024 * 1024  # MySQL's default max_allowed_packet
DEFAULT_MAX_PREPARED_STATEMENTS = 4096  # per connection
CONNECTION_COUNTER_BITS = 24  # the high 8 bits of an id name the FE that gives it out
MAX_CONNECTION_COUNTER = 2**CONNECTION_COUNTER_BITS - 1
CLOSE_TIMEOUT_SECONDS = 5.0


class MysqlFront:
    """A MySQL protocol server handing each client's statements to a session of its own."""

    def __init__(
        self,
        *,
        session_factory: SessionFactory,
        identity_provider: IdentityProvider,
        host: str = "127.0.0.1",
        port: int = 9030,
        max_connections: int = 1024,
        max_packet_bytes: int = DEFAULT_MAX_PACKET_BYTES,
        server_version: str = "5.7.99",
        handshake_timeout: float = 10.0,
        max_prepared_statements: int = DEFAULT_MAX_PREPARED_STATEMENTS,
        backlog: int = 1024,
        ssl_context: ssl.SSLContext | None = None,
        secure_transport_required: Callable[[], bool] = lambda: False,
        connection_id_prefix: Callable[[], int] = lambda: 0,
    ):
        assert max_connections > 0
        assert 1024 <= max_packet_bytes <= 2**30, max_packet_bytes
        assert max_prepared_statements > 0
        self.session_factory = session_factory
        self.identity_provider = identity_provider
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self.max_packet_bytes = max_packet_bytes
        self.server_version = server_version
        self.handshake_timeout = handshake_timeout
        self.max_prepared_statements = max_prepared_statements
        self.backlog = backlog
        self.ssl_context = ssl_context  # None: no TLS offered
        self.secure_transport_required = secure_transport_required  # asked at each login
        self.connection_id_prefix = connection_id_prefix  # asked at each connection
        self.started_at = time.monotonic()
        self.questions = 0
        self._connections: dict[int, Connection] = {}
        self._tasks: set[asyncio.Task] = set()
        self._next_id = 0
        self._admitted = 0  # connections past the max_connections check, sessions or not
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Listen; when this returns clients can connect, and .port is the bound port."""
        assert self._server is None, "already started"
        self._loop = asyncio.get_running_loop()
        self._server = await self._loop.create_server(
            lambda: ClientSocket(self._connected),
            self.host,
            self.port,
            backlog=self.backlog,
            reuse_address=True,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self.started_at = time.monotonic()
        logger.info("MySQL front listening on %s:%d", self.host, self.port)

    async def close(self) -> None:
        """Stop listening and end every connection (running statements are killed)."""
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections.values()):
            connection.kill(KillKind.CONNECTION)
        tasks = [t for t in self._tasks if not t.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_SECONDS)
            for task in pending:
                task.cancel()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def connections_of(self, user: str) -> int:
        """The connections logged in as that user name."""
        return sum(1 for connection in list(self._connections.values()) if connection.user == user)

    def processlist(self) -> list[ProcessInfo]:
        now = time.monotonic()
        return [c.process_info(now) for c in list(self._connections.values())]

    def kill(self, connection_id: int, query_only: bool) -> bool:
        """KILL [QUERY] connection_id; False if there is no such connection."""
        connection = self._connections.get(connection_id)
        if connection is None:
            return False
        kind = KillKind.QUERY if query_only else KillKind.CONNECTION
        loop = self._loop
        if loop is not None and _running_loop() is not loop:
            loop.call_soon_threadsafe(connection.kill, kind)
        else:
            connection.kill(kind)
        return True

    def _connected(self, socket: ClientSocket) -> None:
        task = self._loop.create_task(self._serve(socket))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, socket: ClientSocket) -> None:
        stream = PacketStream(socket, self.max_packet_bytes)
        peer = socket.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) else "localhost"
        if self._admitted >= self.max_connections:
            logger.warning("refused a connection from %s: %d connections", host, self._admitted)
            await self._refuse(stream, ErrorCode.CON_COUNT_ERROR, "Too many connections")
            return
        self._admitted += 1
        try:
            await self._run_connection(stream, host)
        finally:
            self._admitted -= 1

    async def _run_connection(self, stream: PacketStream, host: str) -> None:
        try:
            session = self.session_factory()
            if inspect.isawaitable(session):
                session = await session
        except Exception:
            logger.exception("could not create a session for a client from %s", host)
            await self._refuse(stream, ErrorCode.UNKNOWN_ERROR, "Internal error creating a session")
            return
        connection_id = self._new_connection_id()
        connection = Connection(self, stream, session, connection_id, host)
        self._connections[connection_id] = connection
        try:
            await connection.run()
        except Exception:
            logger.exception("connection %d failed", connection_id)
        finally:
            del self._connections[connection_id]
            await stream.close()

    async def _refuse(self, stream: PacketStream, code: int, message: str) -> None:
        state = sqlstate_for(code).encode()
        stream.write(struct.pack("<BH", 0xFF, code) + b"#" + state + message.encode())
        try:
            await stream.flush()
        except ConnectionError:
            pass
        await stream.close()

    def _new_connection_id(self) -> int:
        assert len(self._connections) < MAX_CONNECTION_COUNTER
        prefix = self.connection_id_prefix()
        assert 0 <= prefix < 2 ** (32 - CONNECTION_COUNTER_BITS), prefix
        while True:
            self._next_id = self._next_id % MAX_CONNECTION_COUNTER + 1
            connection_id = prefix << CONNECTION_COUNTER_BITS | self._next_id
            if connection_id not in self._connections:
                return connection_id


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
