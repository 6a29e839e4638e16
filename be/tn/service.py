"""The TN as a process of its own: the commit pipeline over its log, the logtail push server CNs
subscribe to, and the service FEs call (commit a write set, the newest read timestamp, a snapshot).

Every commit and heartbeat goes, in commit order, to the push server (which keeps the logtail
table for subscriptions' pulls) and to a compute node inside the TN, which answers snapshot reads
when an FE has no CN to ask. The push server listens before the log is replayed: the replay
publishes every logged commit again, so a CN that reconnects catches up from the logtail table.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from be import read_plan
from be.cn.limits import ComputeLimits
from be.cn.node import ComputeNode
from be.config import Config, tn_log_folder
from be.load.limits import LoadLimits
from be.load.server import LoadServer
from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.logtail.entries import Commit
from be.logtail.limits import LogtailLimits
from be.logtail.push import LogtailPushServer
from be.logtail.table import LogtailTable
from be.service.errors import ServiceFormatError
from be.service.format import (
    AbortLoad,
    Accepted,
    AutoIncrement,
    BeginLoad,
    CommitLoad,
    CommitRequest,
    Committed,
    CompactRequest,
    LoadNumber,
    Message,
    ObserveAutoIncrement,
    Reachable,
    ReadPlanReply,
    ReadPlanRequest,
    ReadTs,
    ReadTsRequest,
    ReserveRowIds,
    Role,
    SnapshotRequest,
    Status,
    StatusRequest,
    TabletStats,
    TabletStatsRequest,
    TakeAutoIncrement,
)
from be.service.limits import ServiceLimits
from be.service.reads import SnapshotReads
from be.service.server import NodeServer
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn.errors import CommitOutcomeUnknown
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline, bulk_commit

logger = logging.getLogger(__name__)


def commit_limits(config: Config, log_limits: LogLimits) -> CommitLimits:
    return CommitLimits(
        max_record_bytes=log_limits.max_record_bytes,
        max_group_bytes=log_limits.max_append_bytes,
        heartbeat_interval_seconds=config["logtail_heartbeat_interval_millisecond"] / 1000,
        idle_check_seconds=config["tn_idle_check_interval_millisecond"] / 1000,
        flush_rows=config["flush_rows"],
        flush_bytes=config["flush_bytes"],
        flush_interval_seconds=config["flush_interval_second"],
        checkpoint_interval_seconds=config["tn_checkpoint_interval_second"],
        merged_object_retention_seconds=config["merged_object_retention_second"],
        max_transaction_seconds=config["time_travel_retention_second"],
        commit_timeout_seconds=config["tn_commit_timeout_second"],
        max_caller_commit_bytes=config["tn_commit_on_caller_max_bytes"],
        log_wait_on_caller_seconds=config["tn_commit_on_caller_wait_millisecond"] / 1000,
        max_open_loads=config["max_open_loads"],
        load_timeout_seconds=config["load_timeout_second"],
        label_keep_seconds=config["label_keep_max_second"],
    )


class TransactionNode:
    def __init__(self, config: Config, token: str | bytes, name: str = "tn"):
        self.config = config
        self.name = name
        self.started_ms = int(time.time() * 1000)
        self.log_limits = LogLimits.from_config(config)
        self.logtail_limits = LogtailLimits.from_config(config)
        self.limits = ServiceLimits.from_config(config)
        self.commit_limits = commit_limits(config, self.log_limits)
        host = config["bind_host"]
        self.logtail_table = LogtailTable(
            self.logtail_limits, on_needs_checkpoint=lambda _: self._request_checkpoint()
        )
        self.push = LogtailPushServer(
            self.logtail_table,
            token,
            host,
            config["logtail_port"],
            self.logtail_limits,
            on_response_too_large=lambda _: self._request_checkpoint(),
        )
        self.store = ObjectStore.from_config(config)
        self.reads = ComputeNode(
            self.store,
            ComputeLimits.from_config(config),
            image=lambda table_id: self.pipeline.flusher.image(table_id),
        )
        self.log: LogService | None = None
        self.pipeline: CommitPipeline | None = None
        self.server = NodeServer(
            Role.TN, name, token, self._handle, host, config["tn_service_port"], self.limits
        )
        self.snapshot_reads = SnapshotReads(self.limits, self._snapshot, Role.TN)
        self.load_server = LoadServer(
            host,
            config["webserver_port"],
            token,
            lambda: self.pipeline,
            self.store,
            LoadLimits.from_config(config),
        )

    def start(self) -> None:
        """Listen for CNs, open and replay the log (republishing it), then serve FEs."""
        self.push.start()
        try:
            self.log = LogService.open(tn_log_folder(self.config), self.log_limits)
            self.pipeline = CommitPipeline(
                self.log,
                self.commit_limits,
                publish=self._publish,
                store=self.store,
                on_checkpoint=self.logtail_table.set_checkpoint,
            )
            self.pipeline.start()
            self.load_server.start()
            self.server.start()
        except BaseException:
            self.close()
            raise
        logger.info(
            "TN %s serving FEs on port %d, CNs on logtail port %d",
            self.name,
            self.server.port,
            self.push.port,
        )

    def close(self) -> None:
        self.server.close()
        self.load_server.close()
        if self.pipeline is not None:
            self.pipeline.close()
        self.push.close()
        if self.log is not None:
            self.log.close()
        self.snapshot_reads.close()

    def _request_checkpoint(self) -> None:
        """The logtail table keeps too much, or a subscription asked for more than a pull
        carries: a checkpoint lets the table drop what it covers (CNs read it instead)."""
        if self.pipeline is not None:
            self.pipeline.request_checkpoint()

    def _publish(self, commit: Commit) -> None:
        self.push.publish(commit)
        self.reads.apply(commit)

    async def _handle(self, request: Message) -> Message:
        match request:
            case CommitRequest(write_set):
                future = self.pipeline.submit(write_set)
                try:
                    ts = await asyncio.wait_for(
                        asyncio.wrap_future(future), self.commit_limits.commit_timeout_seconds
                    )
                except TimeoutError:
                    raise CommitOutcomeUnknown(
                        "the commit was not confirmed in time: it may or may not have taken effect"
                    ) from None
                return Committed(ts)
            case ReadTsRequest():
                return ReadTs(self.pipeline.published_ts)
            case BeginLoad(schema, claim):
                return LoadNumber(await asyncio.to_thread(self.pipeline.begin_load, schema, claim))
            case ReserveRowIds(txn_id, count):
                first = await asyncio.to_thread(self.pipeline.reserve_row_ids, txn_id, count)
                return LoadNumber(first)
            case CommitLoad(txn_id, schema, objects, overwrite):
                bulk = await asyncio.to_thread(
                    bulk_commit, self.store, txn_id, schema, objects, overwrite
                )
                return Committed(await asyncio.to_thread(self.pipeline.commit_load, bulk))
            case AbortLoad(txn_id, names):
                await asyncio.to_thread(self.pipeline.abort_load, txn_id, names)
                return Accepted()
            case SnapshotRequest():
                return await self.snapshot_reads.answer(request)
            case ReadPlanRequest():
                return await self.snapshot_reads.run(self._read_plan, request)
            case TakeAutoIncrement(table_id, count):
                return AutoIncrement(self.pipeline.take_auto_increment(table_id, count))
            case ObserveAutoIncrement(table_id, given):
                self.pipeline.auto_increments.observe(table_id, given)
                return AutoIncrement(given)
            case Reachable(as_of_ts, tables):
                self.pipeline.forget_unreachable(
                    as_of_ts, {table: frozenset(ids) for table, ids in tables}
                )
                self.reads.forget_unreachable({table for table, _ in tables})
                return Accepted()
            case CompactRequest(table_id, partition_ids):
                self.pipeline.request_compaction(table_id, frozenset(partition_ids))
                return Accepted()
            case TabletStatsRequest(schemas):
                return await asyncio.to_thread(self._tablet_stats, schemas)
            case StatusRequest():
                return Status(
                    Role.TN,
                    self.name,
                    self.pipeline.published_ts,
                    (),
                    self.started_ms,
                    # its own reads' CN, and where Stream Load is served
                    (*self.reads.stats().items(), ("webserver_port", self.load_server.port)),
                )
        raise ServiceFormatError(f"a TN does not answer {type(request).__name__}")

    def _tablet_stats(self, schemas: tuple[TableSchema, ...]) -> TabletStats:
        answered = []
        for schema in schemas:
            stats = self.pipeline.tablet_stats(schema)
            tablets = tuple((tablet, *stats[tablet]) for tablet in sorted(stats))
            answered.append((schema.table_id, tablets))
        return TabletStats(tuple(answered))

    def _read_plan(self, request: ReadPlanRequest) -> ReadPlanReply:
        timeout = min(request.timeout_ms / 1000, self.limits.max_read_wait)
        deadline = time.monotonic() + timeout
        self.reads.wait_for(request.ts, timeout)
        remaining = max(deadline - time.monotonic(), 0)
        columns = None if request.columns is None else frozenset(request.columns)
        plan = self.reads.read_plan(request.schema, request.ts, remaining, columns)
        plan = replace(plan, location=self.store.location)
        return ReadPlanReply(read_plan.encode(plan, self.limits.max_message_bytes // 2))

    def _snapshot(self, schema, ts, row_ids, timeout, bounds, columns, partitions):
        deadline = time.monotonic() + timeout
        self.reads.wait_for(ts, timeout)
        remaining = max(deadline - time.monotonic(), 0)
        return self.reads.following_snapshot(
            schema, ts, remaining, row_ids, bounds, columns, partitions
        )
