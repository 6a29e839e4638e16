"""The CN's end of a logtail stream: subscriptions, commits delivered in order, a watermark, and
reconnection that resumes where it stopped.

The subscriber keeps one stream to the TN in a thread of its own. Each subscribed table is pending
until the TN's answer (a pull) arrives, then active: pushes carry its later changes. `watermark` is
the highest timestamp up to which the subscriber has delivered every change of every table it
subscribed to. When the stream breaks (or stays silent for the idle timeout) it reconnects with
backoff and resubscribes its active tables from the watermark, so every change is delivered once:
changes of a pending table that arrive in pushes before its answer are left out, the answer holds
them. Commits are delivered to `on_commit` in the subscriber's thread, in timestamp order, except
that a table subscribed while others are active has its catch-up delivered when its answer
arrives. When a subscription starts below the TN's checkpoint, `on_checkpoint(table_ids, ts)` is
called first: the CN reads the checkpoint, and the commits after it follow.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable

import uvloop

from be.logtail.entries import Commit
from be.logtail.errors import AuthenticationFailed, LogtailClosed, LogtailError, LogtailFormatError
from be.logtail.format import (
    Auth,
    Challenge,
    RefusalCode,
    Refused,
    Subscribe,
    Subscribed,
    Unsubscribe,
    Welcome,
)
from be.logtail.limits import LogtailLimits
from be.logtail.stream import (
    client_proof,
    new_nonce,
    proofs_match,
    read_message,
    server_proof,
    write_message,
)

logger = logging.getLogger(__name__)


class LogtailSubscriber:
    def __init__(
        self,
        host: str,
        port: int,
        token: str | bytes,
        on_commit: Callable[[Commit], None],
        on_checkpoint: Callable[[tuple[int, ...], int], None] | None = None,
        limits: LogtailLimits | None = None,
        name: str = "cn",
    ):
        self.host = host
        self.port = port
        self.name = name
        self.limits = limits or LogtailLimits()
        self._token = token
        self._on_commit = on_commit
        self._on_checkpoint = on_checkpoint
        self._pending: dict[int, int] = {}  # table id -> the from_ts its subscription asked
        # On this connection, per table id: subscriptions asked and not answered yet (the TN
        # answers each, in order), and how many of those were given up (unsubscribed while
        # pending): their answers are not the answer to a later subscription.
        self._asked: collections.Counter[int] = collections.Counter()
        self._stale_answers: collections.Counter[int] = collections.Counter()
        self._active: set[int] = set()
        self._stream_ts = 0  # every active table is delivered up to it
        self._connection_ts = 0  # the newest timestamp heard on the current connection
        self._watermark = 0  # min(_stream_ts, the pending subscriptions' from_ts), for readers
        self._writer: asyncio.StreamWriter | None = None
        self._last_heard = 0.0
        self._progress = threading.Condition()
        self._closing = False
        self.connected = False
        self.connects = 0
        self.last_error: Exception | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._task: concurrent.futures.Future | None = None

    # Life cycle and the CN's API; every method is called from the CN's threads.

    def start(self) -> None:
        assert self._loop is None, "started once"
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"logtail-{self.name}", daemon=True
        )
        self._thread.start()
        self._task = asyncio.run_coroutine_threadsafe(self._keep_connected(), self._loop)

    def close(self) -> None:
        if self._loop is None or self._loop.is_closed():
            return
        self._closing = True
        self._loop.call_soon_threadsafe(self._abort)
        try:
            self._task.result(timeout=10)
        except (Exception, asyncio.CancelledError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        with self._progress:
            self._progress.notify_all()

    def subscribe(self, table_id: int, from_ts: int = 0) -> None:
        """Ask for table_id's changes after from_ts (0: all that the TN keeps or checkpointed)."""
        assert table_id > 0 and from_ts >= 0
        if len(self._active) + len(self._pending) >= self.limits.max_subscribed_tables:
            raise LogtailError(f"more than {self.limits.max_subscribed_tables} subscribed tables")
        self._call(self._subscribe, table_id, from_ts)

    def unsubscribe(self, table_id: int, timeout: float | None = None) -> None:
        self.unsubscribe_all((table_id,), timeout)

    def unsubscribe_all(
        self,
        table_ids,
        timeout: float | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Stop these tables' changes. then() is called in the subscriber's thread once none is
        delivered any more; with a timeout, this waits until then (LogtailClosed if the
        subscriber stops first or does not get to it in time)."""
        table_ids = tuple(table_ids)
        done = threading.Event()

        def unsubscribe() -> None:
            self._unsubscribe(table_ids)
            if then is not None:
                then()
            done.set()

        self._call(unsubscribe)
        if timeout is not None and not done.wait(timeout):
            raise LogtailClosed(f"the subscriber did not unsubscribe {list(table_ids)} in time")

    @property
    def watermark(self) -> int:
        """Every change of every subscribed table up to this timestamp was delivered. It goes back
        when a table is subscribed from an older timestamp, until that table's answer arrives."""
        return self._watermark

    def is_active(self, table_id: int) -> bool:
        return table_id in self._active

    def wait_for_watermark(self, ts: int, timeout: float) -> bool:
        """Wait, at most timeout seconds, until the watermark reaches ts."""
        return self._wait(lambda: self.watermark >= ts, timeout)

    def wait_active(self, table_id: int, timeout: float) -> bool:
        return self._wait(lambda: table_id in self._active, timeout)

    def _wait(self, condition: Callable[[], bool], timeout: float) -> bool:
        with self._progress:
            return self._progress.wait_for(lambda: self._closing or condition(), timeout) and (
                condition()
            )

    def _call(self, function, *args) -> None:
        if self._loop is None or self._closing:
            raise LogtailClosed("the subscriber is not running")
        self._loop.call_soon_threadsafe(function, *args)

    # In the subscriber's loop from here on.

    def _progressed(self) -> None:
        self._watermark = min([self._stream_ts, *self._pending.values()])
        with self._progress:
            self._progress.notify_all()

    def _abort(self) -> None:
        if self._writer is not None:
            self._writer.transport.abort()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()

    def _send(self, message) -> None:
        if self._writer is not None:
            write_message(self._writer, message, self.limits)

    def _subscribe(self, table_id: int, from_ts: int) -> None:
        if table_id in self._active or table_id in self._pending:
            return
        self._pending[table_id] = from_ts
        self._ask((table_id,), from_ts)
        self._progressed()

    def _unsubscribe(self, table_ids: tuple[int, ...]) -> None:
        for table_id in table_ids:
            self._active.discard(table_id)
            self._pending.pop(table_id, None)
            if self._asked[table_id]:
                self._stale_answers[table_id] = self._asked[table_id]
            else:
                self._asked.pop(table_id, None)
        step = self.limits.max_tables_per_request
        for start in range(0, len(table_ids), step):
            self._send(Unsubscribe(table_ids[start : start + step]))
        self._progressed()

    def _ask(self, table_ids: tuple[int, ...], from_ts: int) -> None:
        if self._writer is not None:
            self._send(Subscribe(table_ids, from_ts))
            self._asked.update(table_ids)

    def _resubscribe_all(self) -> None:
        """After a reconnect: every table is pending again, the active ones from the watermark."""
        for table_id in self._active:
            self._pending[table_id] = self._stream_ts
        self._active.clear()
        self._asked.clear()
        self._stale_answers.clear()
        by_from: dict[int, list[int]] = collections.defaultdict(list)
        for table_id, from_ts in self._pending.items():
            by_from[from_ts].append(table_id)
        for from_ts, table_ids in sorted(by_from.items()):
            step = self.limits.max_tables_per_request
            for start in range(0, len(table_ids), step):
                self._ask(tuple(table_ids[start : start + step]), from_ts)
        self._progressed()

    async def _keep_connected(self) -> None:
        delay = self.limits.reconnect_min_delay
        while not self._closing:
            connects = self.connects
            try:
                await self._connect_and_follow()
            except asyncio.CancelledError:
                if self._closing:
                    return
            except AuthenticationFailed as error:
                self.last_error = error
                logger.warning("logtail stream to %s:%d: %s", self.host, self.port, error)
                delay = self.limits.reconnect_max_delay
            except (LogtailError, OSError, EOFError, TimeoutError) as error:
                self.last_error = error
                logger.info(
                    "logtail stream to %s:%d broke: %s",
                    self.host,
                    self.port,
                    error or type(error).__name__,
                )
            except Exception as error:
                if not self._closing:  # else the CN's callback failed, and that was logged
                    logger.exception("logtail subscriber %s stopped", self.name)
                    self.last_error = error
                self._closing = True
                self._progressed()
                raise
            finally:
                self.connected = False
                if self._writer is not None:
                    self._writer.transport.abort()
                    self._writer = None
            if self._closing:
                return
            if self.connects > connects:  # it was following: try again at once
                delay = self.limits.reconnect_min_delay
            await asyncio.sleep(delay)
            delay = min(2 * delay, self.limits.reconnect_max_delay)

    async def _connect_and_follow(self) -> None:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 16),
            self.limits.handshake_timeout,
        )
        self._writer = None
        try:
            await asyncio.wait_for(self._handshake(reader, writer), self.limits.handshake_timeout)
        except BaseException:
            writer.transport.abort()
            raise
        self._writer = writer
        self._connection_ts = 0
        self.connected = True
        self.connects += 1
        self._resubscribe_all()
        self._last_heard = time.monotonic()
        watchdog = asyncio.ensure_future(self._watch_idle(writer))
        try:
            while True:
                message = await read_message(reader, self.limits, authenticated=True)
                self._last_heard = time.monotonic()
                self._receive(message)
        except asyncio.IncompleteReadError as error:
            raise EOFError("the TN closed the stream") from error
        finally:
            watchdog.cancel()

    async def _handshake(self, reader, writer) -> None:
        try:
            challenge = await read_message(reader, self.limits, authenticated=False)
        except asyncio.IncompleteReadError:
            raise AuthenticationFailed("the TN closed the stream before its challenge") from None
        if type(challenge) is not Challenge:
            raise AuthenticationFailed(f"expected a challenge, got {type(challenge).__name__}")
        nonce = new_nonce()
        proof = client_proof(self._token, challenge.nonce, nonce)
        write_message(writer, Auth(self.name, nonce, proof), self.limits)
        try:
            welcome = await read_message(reader, self.limits, authenticated=False)
        except asyncio.IncompleteReadError:
            raise AuthenticationFailed("the TN refused this node's token") from None
        if type(welcome) is not Welcome or not proofs_match(
            server_proof(self._token, challenge.nonce, nonce), welcome.proof
        ):
            raise AuthenticationFailed("the TN did not prove it holds the cluster token")

    async def _watch_idle(self, writer: asyncio.StreamWriter) -> None:
        period = self.limits.idle_timeout / 4
        while True:
            await asyncio.sleep(period)
            if time.monotonic() - self._last_heard > self.limits.idle_timeout:
                logger.warning("logtail stream silent for %.1f s: reconnecting", period * 4)
                writer.transport.abort()
                return

    def _receive(self, message) -> None:
        match message:
            case Commit():
                self._receive_push(message)
            case Subscribed():
                self._receive_answer(message)
            case Refused(code, table_ids, text):
                logger.info("the TN refused subscribing %s for now: %s", list(table_ids), text)
                table_ids = tuple(t for t in table_ids if not self._stale(t))
                if code is RefusalCode.RESPONSE_TOO_LARGE and table_ids:
                    writer = self._writer
                    self._loop.call_later(
                        self.limits.reconnect_max_delay, self._ask_again, writer, table_ids
                    )
            case _:
                raise LogtailFormatError(f"the TN sent {type(message).__name__} on a stream")

    def _receive_push(self, commit: Commit) -> None:
        if commit.commit_ts <= self._stream_ts:
            raise LogtailFormatError(
                f"push at {commit.commit_ts} is not after the stream's {self._stream_ts}"
            )
        kept = tuple(change for change in commit.changes if change.table_id in self._active)
        if kept:
            if len(kept) < len(commit.changes):
                commit = Commit(commit.commit_ts, kept)
            self._deliver(commit)
        self._stream_ts = self._connection_ts = commit.commit_ts
        self._progressed()

    def _receive_answer(self, answer: Subscribed) -> None:
        fresh = [t for t in answer.table_ids if not self._stale(t)]
        tables = frozenset(t for t in fresh if t in self._pending)
        if answer.to_ts < self._connection_ts:
            # Every push before an answer on one connection was sent before its pull was taken.
            # (A restarted TN may answer below the watermark: it lost no commit, only heartbeats.)
            raise LogtailFormatError(
                f"an answer up to {answer.to_ts} after a push at {self._connection_ts}"
            )
        if tables:
            if answer.checkpoint_ts and self._on_checkpoint is not None:
                self._on_checkpoint(tuple(sorted(tables)), answer.checkpoint_ts)
            for commit in answer.commits:
                kept = tuple(change for change in commit.changes if change.table_id in tables)
                if len(kept) < len(commit.changes):
                    commit = Commit(commit.commit_ts, kept)
                if kept:
                    self._deliver(commit)
            for table_id in tables:
                del self._pending[table_id]
            self._active.update(tables)
        self._stream_ts = max(self._stream_ts, answer.to_ts)
        self._connection_ts = max(self._connection_ts, answer.to_ts)
        self._progressed()

    def _stale(self, table_id: int) -> bool:
        """Whether the TN's answer (or refusal) for table_id that arrived is one to a
        subscription given up since; either way it is counted off."""
        _count_off(self._asked, table_id)
        return _count_off(self._stale_answers, table_id)

    def _ask_again(self, writer, table_ids: tuple[int, ...]) -> None:
        still = tuple(t for t in table_ids if t in self._pending)
        if writer is self._writer and writer is not None and still:
            by_from: dict[int, list[int]] = collections.defaultdict(list)
            for table_id in still:
                by_from[self._pending[table_id]].append(table_id)
            for from_ts, ids in by_from.items():
                self._ask(tuple(ids), from_ts)

    def _deliver(self, commit: Commit) -> None:
        try:
            self._on_commit(commit)
        except Exception as error:
            logger.exception("the CN failed to apply commit %d: stopping", commit.commit_ts)
            self.last_error = error
            self._closing = True
            self._progressed()
            raise


def _count_off(counter: collections.Counter, key: int) -> bool:
    """One off counter[key]; False if there was none."""
    left = counter.get(key, 0)
    if left <= 1:
        counter.pop(key, None)
    else:
        counter[key] = left - 1
    return left > 0
