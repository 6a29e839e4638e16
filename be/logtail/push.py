"""The TN's push server: one logtail stream per CN, table subscriptions on it, commits pushed in
commit order.

The TN calls `publish(commit)` in commit order once the commit is in its log; the server adds it to
the logtail table and hands it to its event loop, which sends every authenticated CN the part of it
that CN subscribed to (a CN with nothing in it gets the bare timestamp, as a heartbeat: its
watermark advances). A subscription is answered in the loop with a pull from the logtail table up
to the last timestamp pushed, so what the pull holds and what is pushed after it neither overlap nor
leave a gap. Each CN has a bounded send queue: a CN that falls further behind is disconnected, and
resubscribes from its watermark when it reconnects.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Callable

import uvloop

from be.logtail.entries import Commit
from be.logtail.errors import (
    LogtailClosed,
    LogtailError,
    LogtailFormatError,
    PublishTimedOut,
    ResponseTooLarge,
)
from be.logtail.format import (
    Auth,
    Challenge,
    RefusalCode,
    Refused,
    Subscribe,
    Subscribed,
    Unsubscribe,
    Welcome,
    encode,
    encode_commit,
)
from be.logtail.limits import LogtailLimits
from be.logtail.stream import (
    client_proof,
    frame,
    new_nonce,
    proofs_match,
    read_message,
    server_proof,
    write_message,
)
from be.logtail.table import LogtailTable

logger = logging.getLogger(__name__)


class _Peer:
    """One authenticated CN: what it subscribed to and its bounded queue of frames to send."""

    def __init__(self, name: str, address: str, writer: asyncio.StreamWriter, limits):
        self.name = name
        self.address = address
        self.writer = writer
        self.limits: LogtailLimits = limits
        self.subscribed: set[int] = set()
        self.frames: collections.deque[bytes] = collections.deque()
        self.queued_bytes = 0
        self.ready = asyncio.Event()
        self.cut_reason: str | None = None

    def send(self, payload: bytes) -> bool:
        """Queue a message; False (and the connection cut) when the CN is too far behind."""
        if self.cut_reason is not None:
            return False
        if (
            len(self.frames) >= self.limits.send_queue_frames
            or self.queued_bytes + len(payload) > self.limits.send_queue_bytes
        ):
            self.cut(
                f"too slow: {len(self.frames)} messages, {self.queued_bytes} bytes queued",
                logging.WARNING,
            )
            return False
        self.frames.append(payload)
        self.queued_bytes += len(payload)
        self.ready.set()
        return True

    def cut(self, reason: str, level: int = logging.INFO) -> None:
        if self.cut_reason is None:
            self.cut_reason = reason
            logger.log(level, "logtail stream of %s (%s) cut: %s", self.name, self.address, reason)
            self.frames.clear()
            self.queued_bytes = 0
            self.writer.transport.abort()
            self.ready.set()

    async def write_queued(self) -> None:
        try:
            while True:
                await self.ready.wait()
                self.ready.clear()
                if self.cut_reason is not None:
                    return
                pieces = []
                while self.frames:
                    pieces.extend(frame(self.frames.popleft()))
                self.queued_bytes = 0
                self.writer.writelines(pieces)
                await self.writer.drain()
        except (OSError, RuntimeError) as error:  # RuntimeError: writing to a closed transport
            self.cut(f"writing failed: {error}")


class LogtailPushServer:
    def __init__(
        self,
        table: LogtailTable,
        token: str | bytes,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: LogtailLimits | None = None,
        on_response_too_large: Callable[[ResponseTooLarge], None] | None = None,
    ):
        self.table = table
        self.limits = limits or table.limits
        self.host = host
        self.port = port
        self._token = token
        self._on_response_too_large = on_response_too_large
        self._peers: set[_Peer] = set()
        self._connections: set[asyncio.Task] = set()  # accepted, authenticated or not
        self.last_pushed_ts = table.last_ts
        self.stats: collections.Counter[str] = collections.Counter()
        self._pending: collections.deque[tuple[Commit, bytes]] = collections.deque()
        self._room = threading.Condition()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None

    # Life cycle.

    def start(self) -> None:
        """Listen (OSError if the port is taken) and serve in a thread of its own."""
        assert self._loop is None, "started once"
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="logtail-push", daemon=True
        )
        self._thread.start()
        try:
            self._server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(self._serve, self.host, self.port, limit=1 << 16),
                self._loop,
            ).result()
        except BaseException:
            self._stop_loop()
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info("logtail push server listening on %s:%d", self.host, self.port)

    def close(self) -> None:
        with self._room:
            self._closed = True
            self._room.notify_all()
        if self._loop is None or not self._loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self._shut(), self._loop).result(timeout=10)
        self._stop_loop()

    async def _shut(self) -> None:
        self._server.close()
        for peer in list(self._peers):
            peer.cut("the push server is closing")
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    # Publishing.

    def publish(self, commit: Commit, encoded: bytes | None = None) -> None:
        """Hand a committed transaction (or a heartbeat) to the CNs; called in commit order by one
        thread at a time. `encoded` is the commit as the TN logged it, if it has it. Waits at most
        the publish timeout for room, then raises PublishTimedOut."""
        assert self._loop is not None, "publish after start"
        if encoded is None:
            encoded = encode_commit(commit, self.limits)
        with self._room:
            if self._closed:
                raise LogtailClosed("the push server is closed")
            if len(self._pending) >= self.limits.max_pending_publishes:
                has_room = self._room.wait_for(
                    lambda: self._closed or len(self._pending) < self.limits.max_pending_publishes,
                    timeout=self.limits.publish_timeout,
                )
                if self._closed:
                    raise LogtailClosed("the push server is closed")
                if not has_room:
                    raise PublishTimedOut(
                        f"{len(self._pending)} commits waiting to be pushed for "
                        f"{self.limits.publish_timeout} s"
                    )
            self.table.add(commit)
            self._pending.append((commit, encoded))
            wake = len(self._pending) == 1
        if wake:
            self._loop.call_soon_threadsafe(self._push_pending)

    def _push_pending(self) -> None:
        with self._room:
            batch = list(self._pending)
            self._pending.clear()
            self._room.notify_all()
        for commit, encoded in batch:
            self._push(commit, encoded)

    def _push(self, commit: Commit, encoded: bytes) -> None:
        assert commit.commit_ts > self.last_pushed_ts, "pushed in commit order"
        tables = commit.tables()
        heartbeat: bytes | None = encoded if commit.is_heartbeat else None
        filtered: dict[frozenset[int], bytes] = {}
        for peer in list(self._peers):
            if tables <= peer.subscribed:
                payload = encoded
            elif tables.isdisjoint(peer.subscribed):
                if heartbeat is None:
                    heartbeat = encode_commit(Commit(commit.commit_ts), self.limits)
                payload = heartbeat
            else:
                part = frozenset(tables & peer.subscribed)
                payload = filtered.get(part)
                if payload is None:
                    changes = tuple(c for c in commit.changes if c.table_id in part)
                    payload = encode_commit(Commit(commit.commit_ts, changes), self.limits)
                    filtered[part] = payload
            if not peer.send(payload):
                self.stats["slow_disconnects"] += 1
        self.last_pushed_ts = commit.commit_ts
        self.stats["published"] += 1

    # One CN's stream.

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = writer.get_extra_info("peername")[:2]
        address = f"{host}:{port}"
        if len(self._connections) >= self.limits.max_connections:
            logger.warning("logtail connection from %s refused: too many connections", address)
            self.stats["refused"] += 1
            writer.transport.abort()
            return
        self._connections.add(asyncio.current_task())
        peer = None
        writing = None
        try:
            name = await asyncio.wait_for(
                self._authenticate(reader, writer, address), self.limits.handshake_timeout
            )
            if name is None:
                return
            peer = _Peer(name, address, writer, self.limits)
            self._peers.add(peer)
            self.stats["connections"] += 1
            logger.info("logtail stream from %s (%s) open", name, address)
            writing = asyncio.ensure_future(peer.write_queued())
            while peer.cut_reason is None:
                message = await read_message(reader, self.limits, authenticated=True)
                match message:
                    case Subscribe(table_ids, from_ts):
                        self._answer_subscription(peer, table_ids, from_ts)
                    case Unsubscribe(table_ids):
                        peer.subscribed.difference_update(table_ids)
                    case _:
                        raise LogtailFormatError(f"a CN sent {type(message).__name__}")
        except TimeoutError:
            self.stats["refused"] += 1
            logger.warning("logtail connection from %s: no handshake in time", address)
        except (LogtailError, OSError, asyncio.IncompleteReadError) as error:
            if peer is None:
                self.stats["refused"] += 1
            logger.info("logtail stream from %s closed: %s", address, error or type(error).__name__)
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(asyncio.current_task())
            if peer is not None:
                self._peers.discard(peer)
                if peer.cut_reason is None:
                    peer.cut_reason = "closed"
                    logger.info("logtail stream of %s (%s) closed", peer.name, address)
            if writing is not None:
                writing.cancel()
                await asyncio.gather(writing, return_exceptions=True)
            writer.transport.abort()

    async def _authenticate(self, reader, writer, address: str) -> str | None:
        nonce = new_nonce()
        write_message(writer, Challenge(nonce), self.limits)
        message = await read_message(reader, self.limits, authenticated=False)
        if type(message) is not Auth or not proofs_match(
            client_proof(self._token, nonce, message.nonce), message.proof
        ):
            self.stats["refused"] += 1
            logger.warning("logtail connection from %s refused: no proof of the token", address)
            return None
        write_message(writer, Welcome(server_proof(self._token, nonce, message.nonce)), self.limits)
        return message.name

    def _answer_subscription(self, peer: _Peer, table_ids: tuple[int, ...], from_ts: int) -> None:
        if len(peer.subscribed | set(table_ids)) > self.limits.max_subscribed_tables:
            refusal = Refused(RefusalCode.TOO_MANY_TABLES, table_ids, "too many subscribed tables")
            peer.send(encode(refusal, self.limits))
            return
        try:
            pulled = self.table.collect(table_ids, from_ts, self.last_pushed_ts)
            answer = Subscribed(table_ids, pulled.to_ts, pulled.checkpoint_ts, pulled.commits)
            payload = encode(answer, self.limits)
        except (ResponseTooLarge, LogtailFormatError) as error:
            if not isinstance(error, ResponseTooLarge):
                error = ResponseTooLarge(
                    frozenset(table_ids),
                    from_ts,
                    self.last_pushed_ts,
                    self.limits.max_message_bytes,
                )
            self.stats["too_large"] += 1
            logger.info("subscription of %s refused for now: %s", peer.name, error)
            refusal = Refused(RefusalCode.RESPONSE_TOO_LARGE, table_ids, str(error))
            peer.send(encode(refusal, self.limits))
            if self._on_response_too_large is not None:
                self._on_response_too_large(error)
            return
        if peer.send(payload):
            peer.subscribed.update(table_ids)
            self.stats["subscriptions"] += 1

    @property
    def connected_cns(self) -> list[str]:
        return sorted(peer.name for peer in self._peers)
