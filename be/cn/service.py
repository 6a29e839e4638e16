"""The CN as a process of its own: a logtail subscriber to the TN feeding the CN's tables, and the
service FEs read snapshots from and run queries on.

A table is subscribed the first time an FE reads it. A read at T waits (bounded) until the table's
subscription is answered and the subscriber's watermark reaches T: a CN never answers above its
watermark. When the stream breaks, the subscriber reconnects and resubscribes from its watermark,
so a restarted TN or a dropped connection costs a wait, not a row.

A table no FE read for cn_unsubscribe_idle_second is unsubscribed and its state dropped, and so is
one the FE says no read may reach again (dropped for good); the next read subscribes again, from
the TN's checkpoint as a restarted CN does, and waits for it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator

import pyarrow as pa

from be.cn.limits import ComputeLimits
from be.cn.node import ComputeNode, WatermarkTimeout
from be.config import Config
from be.logtail.errors import CheckpointUnreadable, LogtailClosed
from be.logtail.limits import LogtailLimits
from be.logtail.subscriber import LogtailSubscriber
from be.service.errors import ServiceFormatError
from be.service.format import (
    Accepted,
    Message,
    QueryRequest,
    Reachable,
    ReadTs,
    ReadTsRequest,
    Role,
    Rows,
    SnapshotRequest,
    Status,
    StatusRequest,
)
from be.service.limits import ServiceLimits
from be.service.queries import NodeQueries
from be.service.reads import SnapshotReads
from be.service.server import NodeServer
from be.storage.errors import StorageError
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn import checkpoint
from be.tn.errors import CheckpointCorrupt

logger = logging.getLogger(__name__)

AT_HAND_KEYS = 4096  # a key range read on the service's loop spans fewer keys than this


def tn_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"tn_logtail_address must be host:port, not {text!r}")
    return host, int(port)


class ComputeNodeService:
    def __init__(self, config: Config, token: str | bytes, name: str = "cn"):
        self.name = name
        self.started_ms = int(time.time() * 1000)
        self.limits = ServiceLimits.from_config(config)
        self.logtail_limits = LogtailLimits.from_config(config)
        host, port = tn_address(config["tn_logtail_address"])
        self.node = ComputeNode(ObjectStore.from_config(config), ComputeLimits.from_config(config))
        self.subscriber = LogtailSubscriber(
            host,
            port,
            token,
            self.node.apply_changes,
            on_checkpoint=self._restore,
            limits=self.logtail_limits,
            name=name,
        )
        self.server = NodeServer(
            Role.CN,
            name,
            token,
            self._handle,
            config["bind_host"],
            config["cn_service_port"],
            self.limits,
        )
        self.snapshot_reads = SnapshotReads(self.limits, self.snapshot, Role.CN)
        self.queries = NodeQueries(self.limits, self.snapshot)
        # Subscribing, and letting go, happen under it: a read counted under it (node.reading)
        # keeps its table subscribed until it ends.
        self._lock = threading.Lock()
        self._subscribed: set[int] = set()  # the tables FEs read here (the subscriber bounds it)
        # Tables being unsubscribed: set once the subscriber delivers nothing more of them and
        # their state is dropped; a read of one waits for it before it subscribes again.
        self._leaving: dict[int, threading.Event] = {}
        self._stopping = threading.Event()
        self._idle_checker = threading.Thread(
            target=self._let_go_idle_forever, name=f"{name}-idle", daemon=True
        )

    def start(self) -> None:
        self.subscriber.start()
        try:
            self.server.start()
        except BaseException:
            self.subscriber.close()
            raise
        self._idle_checker.start()
        logger.info(
            "CN %s serving FEs on port %d, following the TN at %s:%d",
            self.name,
            self.server.port,
            self.subscriber.host,
            self.subscriber.port,
        )

    def close(self) -> None:
        self._stopping.set()
        self.server.close()
        self.subscriber.close()
        self.snapshot_reads.close()
        self.queries.close()
        if self._idle_checker.is_alive():
            self._idle_checker.join(timeout=10)

    async def _handle(self, request: Message) -> Message | AsyncIterator[Message]:
        match request:
            case SnapshotRequest():
                rows = self.snapshot_at_hand(request)
                if rows is not None:
                    return Rows(rows)
                return await self.snapshot_reads.answer(request)
            case QueryRequest():
                return self.queries.answer(request)
            case ReadTsRequest():
                return ReadTs(self.subscriber.watermark)
            case Reachable(_, tables):
                reachable = {table for table, _ in tables}
                with self._lock:
                    gone = [table for table in self._subscribed if table not in reachable]
                self.let_go(gone, "gone for good", idle_seconds=0)
                return Accepted()
            case StatusRequest():
                return Status(
                    Role.CN,
                    self.name,
                    self.subscriber.watermark,
                    self.subscribed_tables(),
                    self.started_ms,
                    tuple(self.node.stats().items()),
                )
        raise ServiceFormatError(f"a CN does not answer {type(request).__name__}")

    def _restore(self, table_ids: tuple[int, ...], ts: int) -> None:
        """Tables subscribed below the TN's checkpoint at ts: their objects and tombstones from
        it (metadata only), before the commits after it."""
        started = time.monotonic()
        name = checkpoint.object_name(ts)
        try:
            data = self.node.store.read(name)
            tables = checkpoint.decode_storage(memoryview(data), frozenset(table_ids))
        except (StorageError, CheckpointCorrupt) as error:
            raise CheckpointUnreadable(f"checkpoint {name}: {error}") from None
        for table_id in table_ids:
            found = tables.get(table_id)
            objects, tombstones = (found.objects, found.tombstones) if found else ((), ())
            self.node.restore(table_id, objects, tombstones, ts)
        logger.info(
            "CN %s restored tables %s from checkpoint %s in %.3f s",
            self.name,
            list(table_ids),
            name,
            time.monotonic() - started,
        )

    def subscribed_tables(self) -> tuple[int, ...]:
        with self._lock:
            return tuple(sorted(self._subscribed))

    def snapshot_at_hand(self, request: SnapshotRequest) -> pa.Table | None:
        """A point or short range read the key index of a table followed here answers at once,
        up to the watermark: answered on the service's loop (a read thread's round trip costs
        more than the read); else None."""
        schema, table_id = request.schema, request.schema.table_id
        key = schema.key_columns[0] if schema.key_columns else None
        bound = next((bound for bound in request.bounds if bound.column == key), None)
        if bound is None or bound.low is None or bound.high is None:
            return None
        if bound.high - bound.low >= AT_HAND_KEYS or request.ts > self.subscriber.watermark:
            return None
        with self._lock:
            if table_id not in self._subscribed or table_id in self._leaving:
                return None
        if not self.subscriber.is_active(table_id):
            return None
        self.node.advance(request.ts)
        partitions = None if request.partitions is None else frozenset(request.partitions)
        try:
            with self.node.reading(table_id, 0):
                return self.node.indexed_snapshot(
                    schema, request.ts, request.row_ids, request.bounds, partitions
                )
        except WatermarkTimeout:  # a table let go: read as any other
            return None

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        timeout: float,
        bounds: tuple = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ):
        """The table at ts, once this CN has everything of it up to ts."""
        deadline = time.monotonic() + timeout
        table_id = schema.table_id
        with contextlib.ExitStack() as reading:
            while True:
                with self._lock:
                    leaving = self._leaving.get(table_id)
                    if leaving is None:
                        reading.enter_context(self.node.reading(table_id, 0))
                        first = table_id not in self._subscribed
                        self._subscribed.add(table_id)
                        break
                if not leaving.wait(max(deadline - time.monotonic(), 0)):
                    raise WatermarkTimeout(f"this CN is still unsubscribing table {table_id}")
            if first:
                self.subscriber.subscribe(table_id)
            if not self.subscriber.wait_active(table_id, max(deadline - time.monotonic(), 0)):
                raise WatermarkTimeout(f"this CN has not caught up with table {table_id} yet")
            if not self.subscriber.wait_for_watermark(ts, max(deadline - time.monotonic(), 0)):
                raise WatermarkTimeout(
                    f"this CN has data up to {self.subscriber.watermark}, not yet up to {ts}"
                )
            self.node.advance(ts)
            return self.node.snapshot(schema, ts, row_ids, bounds, columns, partitions)

    def _let_go_idle_forever(self) -> None:
        while not self._stopping.wait(self.node.limits.idle_check_seconds):
            with self._lock:
                subscribed = list(self._subscribed)
            self.let_go(self.node.idle_tables(subscribed), "idle")

    def let_go(
        self, candidates: list[int], why: str, idle_seconds: float | None = None
    ) -> list[int]:
        """Unsubscribe the candidates no read is under way on and none was for idle_seconds
        (node.idle_tables, checked under the lock), then drop their state: the next read
        subscribes again."""
        if not candidates:
            return []
        with self._lock:
            chosen = self.node.idle_tables(
                [t for t in candidates if t in self._subscribed and t not in self._leaving],
                idle_seconds,
            )
            if not chosen:
                return []
            self._subscribed.difference_update(chosen)
            left = threading.Event()
            for table_id in chosen:
                self._leaving[table_id] = left

        def gone() -> None:  # in the subscriber's thread: nothing of them is delivered any more
            for table_id in chosen:
                self.node.drop(table_id)
            with self._lock:
                for table_id in chosen:
                    if self._leaving.get(table_id) is left:
                        del self._leaving[table_id]
            left.set()

        try:
            self.subscriber.unsubscribe_all(chosen, then=gone)
        except LogtailClosed:  # stopped: nothing is delivered any more
            gone()
        logger.info("CN %s unsubscribed tables %s (%s)", self.name, chosen, why)
        return chosen
