"""The FE's end of a node's service: blocking calls over a bounded pool of authenticated
connections, the node's error kinds raised again as this build's own.

A call takes an idle connection (or opens one and proves the cluster token on it), sends one
request and reads one reply within its timeout; a stream reads replies until the last (a query's
result parts, then its end), all within its timeout. A connection that broke or timed out is dropped,
never reused: a late reply cannot answer the next request.
"""

from __future__ import annotations

import collections
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import NoReturn

from be import engine
from be.cn.node import WatermarkTimeout
from be.logtail.stream import FRAME_HEADER, client_proof, new_nonce, proofs_match, server_proof
from be.service.errors import (
    CallAbandoned,
    NodeBusy,
    NodeUnavailable,
    NodeUnreachable,
    NotAuthenticated,
    RemoteFailure,
    ServiceError,
    ServiceFormatError,
)
from be.service.format import (
    STREAMED,
    Auth,
    Challenge,
    Failure,
    Message,
    Role,
    Welcome,
    decode,
    encode,
)
from be.service.limits import ServiceLimits
from be.tn import errors as commit_errors

ABANDON_CHECK_SECONDS = 0.5  # how soon a stream whose caller went away is left

ERROR_KINDS: dict[str, type[Exception]] = {
    kind.__name__: kind
    for kind in (
        commit_errors.CommitError,
        commit_errors.WriteConflict,
        commit_errors.StaleSchema,
        commit_errors.SnapshotTooOld,
        commit_errors.CommitOverloaded,
        commit_errors.CommitTooLarge,
        commit_errors.CommitOutcomeUnknown,
        commit_errors.TransactionNodeClosed,
        commit_errors.TimestampsUnavailable,
        commit_errors.LoadUnknown,
        commit_errors.BadLoad,
        commit_errors.TooManyLoads,
        commit_errors.LabelTaken,
        WatermarkTimeout,
        NodeBusy,
        ServiceFormatError,
        engine.EngineError,
        engine.UnknownFunction,
        engine.SourceNotAllowed,
        engine.UnknownColumn,
        engine.WrongColumnCount,
        engine.OrderTermOutOfRange,
        engine.NotGrouped,
        engine.NoTables,
        engine.InvalidQuery,
        engine.ArithmeticOverflow,
        engine.InvalidValue,
        engine.QueryFailed,
        engine.QueryInterrupted,
        engine.QueryAbandoned,
        engine.QueryTimedOut,
        engine.MemoryLimitExceeded,
        engine.EngineBusy,
    )
}


def raised_again(failure: Failure) -> Exception:
    kind = ERROR_KINDS.get(failure.kind)
    if kind is None:
        return RemoteFailure(failure.kind, failure.message)
    fields = getattr(kind, "FIELDS", None)
    if fields is not None and len(fields) == len(failure.arguments):
        try:
            return kind(*failure.arguments)
        except (TypeError, ValueError):
            pass
    error = kind.__new__(kind)
    Exception.__init__(error, failure.message)
    return error


class _Connection:
    def __init__(self, sock: socket.socket, limits: ServiceLimits):
        self.sock = sock
        self.limits = limits

    def send(self, message: Message) -> None:
        payload = encode(message, self.limits)
        self.sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)

    def receive(self, max_bytes: int) -> Message:
        (length,) = FRAME_HEADER.unpack(self._exactly(FRAME_HEADER.size))
        if length > max_bytes:
            raise ServiceFormatError(f"a {length}-byte frame is over the {max_bytes}-byte limit")
        return decode(self._exactly(length), self.limits)

    def _exactly(self, count: int) -> bytes:
        buffer = bytearray(count)
        view = memoryview(buffer)
        got = 0
        while got < count:
            received = self.sock.recv_into(view[got:])
            if not received:
                raise NodeUnavailable("the node closed the connection")
            got += received
        return bytes(buffer)

    def readable(self, timeout: float) -> bool:
        """Whether bytes (or the end of the stream) arrive within timeout seconds."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        return bool(poller.poll(max(int(timeout * 1000), 0)))

    def still_open(self) -> bool:
        """No end of stream, reset or stray bytes waiting: an idle connection reads nothing."""
        poller = select.poll()
        try:
            poller.register(self.sock, select.POLLIN)
            ready = poller.poll(0)
        except (OSError, ValueError):
            return False
        return not ready  # readable: the end of the stream, or bytes no request asked for

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class NodeClient:
    def __init__(
        self,
        host: str,
        port: int,
        token: str | bytes,
        limits: ServiceLimits | None = None,
        name: str = "fe",
        in_flight: threading.BoundedSemaphore | None = None,
    ):
        self.host = host
        self.port = port
        self.name = name
        self.limits = limits or ServiceLimits()
        self._token = token
        self._idle: collections.deque[_Connection] = collections.deque()
        self._lock = threading.Lock()
        self._in_flight = in_flight or threading.BoundedSemaphore(self.limits.max_in_flight)
        self.role: Role | None = None  # what the node said it is, at its last handshake
        self.node_name: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def call(self, request: Message, timeout: float | None = None) -> Message:
        """The node's reply; its error kinds raised; NodeUnavailable when it could not answer."""
        timeout = self.limits.request_timeout if timeout is None else timeout
        if not self._in_flight.acquire(timeout=timeout):
            raise NodeBusy(f"{self.limits.max_in_flight} requests in flight to the data plane")
        try:
            connection = self._take()  # NodeUnreachable: nothing was sent
            try:
                connection.sock.settimeout(timeout)
                connection.send(request)
                reply = connection.receive(self.limits.max_message_bytes)
            except (OSError, ServiceError) as error:
                connection.close()
                if isinstance(error, ServiceError) and not isinstance(error, NodeUnavailable):
                    raise
                raise NodeUnavailable(f"{self.address}: {error or type(error).__name__}") from None
            self._give_back(connection)
        finally:
            self._in_flight.release()
        if type(reply) is Failure:
            raise raised_again(reply)
        return reply

    def stream(
        self,
        request: Message,
        timeout: float | None = None,
        abandoned: Callable[[], bool] = lambda: False,
    ) -> Iterator[Message]:
        """The node's replies up to its last (format.STREAMED ones before it), all within the
        timeout; its error kinds raised; NodeUnavailable when it could not answer; CallAbandoned
        once abandoned() says the caller no longer waits (asked every ABANDON_CHECK_SECONDS). A
        connection left before the last reply is closed (the node then stops), never reused."""
        timeout = self.limits.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if not self._in_flight.acquire(timeout=timeout):
            raise NodeBusy(f"{self.limits.max_in_flight} requests in flight to the data plane")
        try:
            connection = self._take()  # NodeUnreachable: nothing was sent
            ended = False
            try:
                self._send(connection, request, timeout)
                while not ended:
                    reply = self._receive(connection, deadline, abandoned)
                    ended = type(reply) not in STREAMED
                    if type(reply) is Failure:
                        raise raised_again(reply)
                    yield reply
            finally:
                if ended:
                    self._give_back(connection)
                else:
                    connection.close()
        finally:
            self._in_flight.release()

    def _send(self, connection: _Connection, request: Message, timeout: float) -> None:
        try:
            connection.sock.settimeout(timeout)
            connection.send(request)
        except (OSError, ServiceError) as error:
            self._lost(error)

    def _receive(
        self, connection: _Connection, deadline: float, abandoned: Callable[[], bool]
    ) -> Message:
        try:
            while not connection.readable(min(deadline - time.monotonic(), ABANDON_CHECK_SECONDS)):
                if abandoned():
                    raise CallAbandoned(f"{self.address}: the caller no longer waits")
                if time.monotonic() >= deadline:
                    raise TimeoutError("no reply in time")
            connection.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            return connection.receive(self.limits.max_message_bytes)
        except (OSError, ServiceError) as error:
            self._lost(error)

    def _lost(self, error: Exception) -> NoReturn:
        if isinstance(error, ServiceError) and not isinstance(error, NodeUnavailable):
            raise error  # CallAbandoned, a format error: the connection is closed all the same
        raise NodeUnavailable(f"{self.address}: {error or type(error).__name__}") from None

    def close(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle), collections.deque()
        for connection in idle:
            connection.close()

    def _take(self) -> _Connection:
        """An idle connection the node has not closed meanwhile (a restarted node closed them
        all: a request is never sent on one), else a new one."""
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._connect()
            if connection.still_open():
                return connection
            connection.close()

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.limits.max_pool_connections:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self) -> _Connection:
        try:
            sock = socket.create_connection((self.host, self.port), self.limits.connect_timeout)
        except OSError as error:
            raise NodeUnreachable(f"{self.address}: {error}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = _Connection(sock, self.limits)
        try:
            sock.settimeout(self.limits.handshake_timeout)
            self._handshake(connection)
        except (OSError, ServiceError) as error:
            connection.close()
            if isinstance(error, NotAuthenticated):
                raise
            raise NodeUnreachable(f"{self.address}: {error or type(error).__name__}") from None
        return connection

    def _handshake(self, connection: _Connection) -> None:
        small = self.limits.max_unauthenticated_message_bytes
        challenge = connection.receive(small)
        if type(challenge) is not Challenge:
            raise NotAuthenticated(f"{self.address} sent no challenge")
        nonce = new_nonce()
        connection.send(Auth(self.name, nonce, client_proof(self._token, challenge.nonce, nonce)))
        try:
            welcome = connection.receive(small)
        except NodeUnavailable:
            raise NotAuthenticated(f"{self.address} refused this cluster's token") from None
        if type(welcome) is not Welcome or not proofs_match(
            server_proof(self._token, challenge.nonce, nonce), welcome.proof
        ):
            raise NotAuthenticated(f"{self.address} did not prove it holds the cluster token")
        self.role, self.node_name = welcome.role, welcome.name
