"""The listening end of a node's service: connections proven with the cluster token, then requests
answered one at a time per connection, in a thread of the server's own (an asyncio loop).

The handshake is the logtail stream's: the node sends a Challenge, the caller answers Auth with an
HMAC of both nonces under the token, the node answers Welcome with its own proof, its role and its
name. Before that no frame over `max_unauthenticated_message_bytes` is read, and a connection that
has not proven itself within `handshake_timeout` is dropped. A handler's error kind travels back as
a Failure with the kind's name and the arguments it is made from; the connection stays open.

A handler may answer with an asynchronous iterator of replies instead of one (a query's result in
parts): they are sent as they come, each waiting for the caller to take the one before (the
connection's buffer is the limit), until one that is not a part (format.STREAMED) or a Failure.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

import uvloop

from be.logtail.stream import (
    FRAME_HEADER,
    client_proof,
    new_nonce,
    proofs_match,
    server_proof,
)
from be.service.errors import ServiceFormatError
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

logger = logging.getLogger(__name__)

Handler = Callable[[Message], Awaitable[Message | AsyncIterator[Message]]]


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes:
    header = await reader.readexactly(FRAME_HEADER.size)
    (length,) = FRAME_HEADER.unpack(header)
    if length > max_bytes:
        raise ServiceFormatError(f"a {length}-byte frame is over the {max_bytes}-byte limit")
    return await reader.readexactly(length)


def write_frame(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.writelines((FRAME_HEADER.pack(len(payload)), payload))


class NodeServer:
    def __init__(
        self,
        role: Role,
        name: str,
        token: str | bytes,
        handle: Handler,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: ServiceLimits | None = None,
    ):
        self.role = role
        self.name = name
        self.host = host
        self.port = port
        self.limits = limits or ServiceLimits()
        self._token = token
        self._handle = handle
        self._connections: set[asyncio.Task] = set()
        self.stats: collections.Counter[str] = collections.Counter()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        """Listen (OSError if the port is taken) and serve in a thread of its own."""
        assert self.loop is None, "started once"
        self.loop = uvloop.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name=f"{self.role.lower()}-service", daemon=True
        )
        self._thread.start()
        try:
            self._server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(self._serve, self.host, self.port, limit=1 << 16), self.loop
            ).result()
        except BaseException:
            self._stop_loop()
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info("%s service listening on %s:%d", self.role, self.host, self.port)

    def close(self) -> None:
        if self.loop is None or not self.loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self._shut(), self.loop).result(timeout=10)
        self._stop_loop()

    async def _shut(self) -> None:
        self._server.close()
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = writer.get_extra_info("peername")[:2]
        address = f"{host}:{port}"
        if len(self._connections) >= self.limits.max_connections:
            logger.warning("connection from %s refused: too many connections", address)
            self.stats["refused"] += 1
            writer.transport.abort()
            return
        self._connections.add(asyncio.current_task())
        try:
            name = await asyncio.wait_for(
                self._authenticate(reader, writer, address), self.limits.handshake_timeout
            )
            if name is None:
                return
            self.stats["connections"] += 1
            while True:
                payload = await read_frame(reader, self.limits.max_message_bytes)
                request = decode(payload, self.limits)
                reply = await self._answer(request)
                if isinstance(reply, AsyncIterator):
                    await self._stream(reader, writer, reply)
                    continue
                write_frame(writer, self._encoded(reply))
                await writer.drain()
        except TimeoutError:
            self.stats["refused"] += 1
            logger.warning("connection from %s: no handshake in time", address)
        except (ServiceFormatError, OSError, asyncio.IncompleteReadError) as error:
            logger.debug("connection from %s closed: %s", address, error or type(error).__name__)
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(asyncio.current_task())
            writer.transport.abort()

    async def _answer(self, request: Message) -> Message | AsyncIterator[Message]:
        try:
            return await self._handle(request)
        except Exception as error:
            if not _is_own_kind(error):
                logger.exception("answering %s failed", type(request).__name__)
            return failure(error)

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        replies: AsyncIterator[Message],
    ) -> None:
        """The replies until the last (not a part), or a Failure in place of the rest. The caller
        sends nothing before the last: its closing the connection meanwhile stops the replies
        (a query whose FE went away is interrupted)."""
        gone = asyncio.ensure_future(reader.read(1))
        try:
            while True:
                try:
                    reply = await _next_reply(replies, gone)
                except (ConnectionResetError, asyncio.CancelledError):
                    raise
                except Exception as error:
                    if not _is_own_kind(error):
                        logger.exception("streaming replies failed")
                    reply = failure(error)
                try:
                    payload = encode(reply, self.limits)
                except ServiceFormatError as error:
                    reply = failure(error)
                    payload = self._encoded(reply)
                last = type(reply) not in STREAMED
                if last:
                    gone.cancel()  # before the last reply: the caller's next request is not its
                write_frame(writer, payload)
                await writer.drain()
                if last:
                    return
        finally:
            gone.cancel()
            await asyncio.gather(gone, return_exceptions=True)
            await replies.aclose()

    def _encoded(self, reply: Message) -> bytes:
        try:
            return encode(reply, self.limits)
        except ServiceFormatError as error:
            return encode(failure(error), self.limits)

    async def _authenticate(self, reader, writer, address: str) -> str | None:
        nonce = new_nonce()
        write_frame(writer, encode(Challenge(nonce), self.limits))
        payload = await read_frame(reader, self.limits.max_unauthenticated_message_bytes)
        message = decode(payload, self.limits)
        if type(message) is not Auth or not proofs_match(
            client_proof(self._token, nonce, message.nonce), message.proof
        ):
            self.stats["refused"] += 1
            logger.warning("connection from %s refused: no proof of the cluster token", address)
            return None
        proof = server_proof(self._token, nonce, message.nonce)
        write_frame(writer, encode(Welcome(proof, self.role, self.name), self.limits))
        return message.name


async def _next_reply(replies: AsyncIterator[Message], gone: asyncio.Future) -> Message:
    following = asyncio.ensure_future(anext(replies))
    await asyncio.wait((following, gone), return_when=asyncio.FIRST_COMPLETED)
    if not following.done():
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
        raise ConnectionResetError("the caller went away before the last reply")
    try:
        return following.result()
    except StopAsyncIteration:
        raise AssertionError("a stream of replies ended without its last") from None


def failure(error: Exception) -> Failure:
    """The error as a reply: its kind's name, its text, and the arguments it is made from."""
    fields = getattr(type(error), "FIELDS", ())
    return Failure(type(error).__name__, str(error), tuple(getattr(error, f) for f in fields))


def _is_own_kind(error: Exception) -> bool:
    """Errors of the data plane's own kinds are answers, not bugs."""
    return type(error).__module__.startswith(("be.", "metadata."))
