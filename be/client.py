"""The data plane as the FE sees it: commit a write set, read a table at a timestamp.

`EmbeddedDataPlane` runs a TN and a CN in the FE's process (what `quire up` starts): the TN
publishes each commit straight to the CN. `RemoteDataPlane` is the same API over the network, to
the nodes added with ALTER SYSTEM ADD BACKEND: commits go to the TN, reads to a CN chosen per table
(rendezvous hashing over the live CNs, so each table is followed by one CN and the tables spread
across them), the next CN and then the TN itself when one cannot answer. A query goes whole to the
CN that follows its first table (the next when one cannot answer), which runs it and sends its
result back in parts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import requests

from be import engine, read_plan
from be.cn.bounds import ColumnBound
from be.cn.limits import ComputeLimits
from be.cn.node import ComputeNode, WatermarkTimeout
from be.config import Config, tn_log_folder
from be.load.limits import LoadLimits
from be.load.server import LoadServer
from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.service.client import NodeClient
from be.service.errors import (
    CallAbandoned,
    NodeBusy,
    NodeUnavailable,
    NodeUnreachable,
    NoNode,
    ServiceError,
    ServiceFormatError,
)
from be.service.format import (
    AbortLoad,
    BeginLoad,
    CommitLoad,
    CommitRequest,
    CompactRequest,
    ObserveAutoIncrement,
    QueryRequest,
    QueryTable,
    Reachable,
    ReadPlanReply,
    ReadPlanRequest,
    ReadTsRequest,
    ReserveRowIds,
    ResultEnd,
    ResultPart,
    Role,
    SnapshotRequest,
    Status,
    StatusRequest,
    TabletStats,
    TabletStatsRequest,
    TakeAutoIncrement,
)
from be.service.limits import ServiceLimits
from be.storage.blocks import ObjectMeta
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn.errors import (
    CommitError,
    CommitOutcomeUnknown,
    CommitOverloaded,
    TransactionNodeClosed,
)
from be.tn.limits import CommitLimits
from be.tn.loads import LoadClaim, LoadRecord
from be.tn.pipeline import CommitPipeline, bulk_commit
from be.tn.service import commit_limits
from be.tn.write_set import WriteSet

logger = logging.getLogger(__name__)

TabletTotals = dict[int, tuple[int, int, int]]  # tablet id -> (rows, bytes, objects)


class EmbeddedDataPlane:
    reads_at_hand = True  # its CN is in this process: a read up to its watermark never waits

    def __init__(
        self,
        open_log: Callable[[], object],
        limits: CommitLimits | None = None,
        store: ObjectStore | None = None,
        cn_limits: ComputeLimits | None = None,
        load_port: int | None = None,
        load_limits: LoadLimits | None = None,
    ):
        """open_log: the TN's log, opened when the data plane starts; store: where flushes put
        objects (None: table data stays in memory and in the log); load_port: the backend HTTP
        port Stream Load is served on (None: none)."""
        self._open_log = open_log
        self._load_port = load_port
        self._load_limits = load_limits
        self.load_server: LoadServer | None = None
        self.limits = limits or CommitLimits()
        self.store = store
        self.log = None
        self.cn = ComputeNode(
            store,
            cn_limits,
            image=lambda table_id: self.tn.flusher.image(table_id),
            heartbeat_soon=lambda: self.tn.heartbeat_soon() if self.tn is not None else None,
        )
        self.tn: CommitPipeline | None = None

    def start(self) -> None:
        """Open the log and replay it (the CN gets every commit again), then commit."""
        self.log = self._open_log()
        self.tn = CommitPipeline(
            self.log,
            self.limits,
            publish=self.cn.apply,
            store=self.store,
            heartbeats_on_demand=True,  # its one CN is this process's, and asks when it waits
        )
        self.tn.start()

    def close(self) -> None:
        if self.load_server is not None:
            self.load_server.close()
        if self.tn is not None:
            self.tn.close()
        if self.log is not None:
            self.log.close()

    def serve_loads(self, token: str | bytes, host: str, grow=None) -> None:
        """Start the backend HTTP port Stream Load is redirected to (once the cluster token is
        known); nothing without object storage or a port. grow(table id, rows): the table's
        schema once it has partitions for rows (an auto partition table's), or None."""
        if self._load_port is None or self.store is None or self.load_server is not None:
            return
        server = LoadServer(
            host, self._load_port, token, lambda: self.tn, self.store, self._load_limits, grow
        )
        server.start()
        self.load_server = server

    def load_address(self) -> tuple[str | None, int] | None:
        """Where Stream Load is served: (None: this host, port), or None if nowhere."""
        return None if self.load_server is None else (None, self.load_server.port)

    def load_records(self, db: str | None) -> list[LoadRecord]:
        """The loads the TN knows (running, waiting for their two-phase commit, finished)."""
        return self.tn.load_records(db) if self.tn is not None else []

    def clean_labels(self, db: str, label: str | None) -> int:
        """CLEAN LABEL: the finished loads' labels of db (label's alone) let go; how many."""
        return self.tn.clean_labels(db, label) if self.tn is not None else 0

    # A bulk load of objects written elsewhere (Spark tasks): begin, reserve row ids for the
    # rows of each object (written in the block format, named and stamped at the load's
    # transaction id, placed by the table's distribution), commit them at once or abort.

    def begin_load(self, schema: TableSchema, claim: LoadClaim | None = None) -> int:
        """The load's transaction id; with a claim, the TN keeps the load's record under its
        label (LabelTaken if a load not aborted holds it)."""
        return self.tn.begin_load(schema, claim)

    def reserve_row_ids(self, txn_id: int, count: int) -> int:
        """The first of count row ids handed to this load alone."""
        return self.tn.reserve_row_ids(txn_id, count)

    def commit_load(
        self,
        txn_id: int,
        schema: TableSchema,
        objects: tuple[ObjectMeta, ...],
        overwrite: bool = False,
    ) -> int:
        """Every row of the objects visible at once (with overwrite, in place of every row the
        table held): the commit timestamp."""
        return self.tn.commit_load(bulk_commit(self.store, txn_id, schema, objects, overwrite))

    def abort_load(self, txn_id: int, names: tuple[str, ...] = ()) -> None:
        """The load ends uncommitted; the TN removes the named objects it wrote."""
        self.tn.abort_load(txn_id, names)

    @property
    def available(self) -> bool:
        """Whether there is a TN to commit to."""
        return True

    def submit(self, write_set: WriteSet) -> concurrent.futures.Future:
        """A future of the commit timestamp (or its CommitError kind)."""
        try:  # the commit goes on this event loop's turn: no thread between it and its caller
            run_soon = asyncio.get_running_loop().call_soon_threadsafe
        except RuntimeError:
            run_soon = None
        return self.tn.submit(write_set, run_soon)

    def commit(self, write_set: WriteSet) -> int:
        """The commit timestamp; raises a CommitError kind when nothing was committed."""
        return self.tn.commit(write_set)

    def oldest_readable_ts(self) -> int:
        """Reads as of an older timestamp may miss deletes: the TN forgot them."""
        return self.tn.state.horizon_ts if self.tn is not None else 0

    def take_auto_increment(self, table_id: int, count: int) -> int:
        """The first of count consecutive new values of a table's AUTO_INCREMENT column, unique
        to the caller; raises CommitTooLarge past the TN's limit."""
        return self.tn.take_auto_increment(table_id, count)

    def observe_auto_increment(self, table_id: int, given: int) -> None:
        """A statement writes given into the AUTO_INCREMENT column: later values are above it."""
        self.tn.auto_increments.observe(table_id, given)

    def read_ts(self) -> int:
        """The newest timestamp a read is complete at."""
        return self.cn.watermark

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        row_ids: bool = False,
        bounds: tuple[ColumnBound, ...] = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        """The table at ts; bounds may leave out the rows outside them (a narrowing only),
        columns (lower-case names, when given) the columns not among them, and partitions (ids,
        when given) the rows of the schema's other partitions (a partition pruning)."""
        deadline = time.monotonic() + timeout
        self.cn.wait_for(ts, timeout)
        remaining = max(deadline - time.monotonic(), 0)
        return self.cn.following_snapshot(
            schema, ts, remaining, row_ids, bounds, columns, partitions
        )

    def read_plan(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        columns: frozenset[str] | None = None,
    ) -> read_plan.ReadPlan:
        """The table's read plan at ts (be/read_plan): what Spark reads it by, straight from the
        object store; columns (lower-case names, when given) the columns it reads."""
        deadline = time.monotonic() + timeout
        self.cn.wait_for(ts, timeout)
        remaining = max(deadline - time.monotonic(), 0)
        plan = self.cn.read_plan(schema, ts, remaining, columns)
        return replace(plan, location=self.store.location if self.store is not None else "")

    def runs_queries(self) -> bool:
        """Whether run_query() sends queries elsewhere: no, the FE's engine reads snapshot()."""
        return False

    def indexed_snapshot(
        self, schema: TableSchema, ts: int, row_ids: bool, bounds: tuple[ColumnBound, ...]
    ) -> pa.Table | None:
        """snapshot() if the CN has it at once (no wait, no object to read); else None."""
        if ts > self.cn.watermark:
            return None
        return self.cn.indexed_snapshot(schema, ts, row_ids, bounds)

    def values_within(
        self,
        schema: TableSchema,
        ts: int,
        bound: ColumnBound,
        names: tuple[str, ...],
        limit: int,
    ) -> list[tuple] | None:
        """The values of names in the rows within bound (on the first key column), at ts, if
        the CN has them at once as Python values (a point or short range read); else None."""
        if ts > self.cn.watermark:
            return None
        return self.cn.values_within(schema, ts, bound, names, limit)

    def tablet_stats(self, schemas: Sequence[TableSchema]) -> dict[int, TabletTotals]:
        """Per table id, rows, bytes and objects per tablet id (objects, and the unflushed rows
        placed where a flush would put them); tablets without data are left out."""
        if self.tn is None:
            return {}
        return {schema.table_id: self.tn.tablet_stats(schema) for schema in schemas}

    def forget_unreachable(self, as_of_ts: int, reachable: dict[int, frozenset[int]]) -> None:
        """Of what was committed at or before as_of_ts, only these tables' partitions may be
        read again: the TN frees the objects of the rest, and the CN lets the rest go."""
        self.tn.forget_unreachable(as_of_ts, reachable)
        self.cn.forget_unreachable(reachable)

    def compact(self, table_id: int, partition_ids: frozenset[int] = frozenset()) -> None:
        """ADMIN COMPACT TABLE: the TN flushes the table and merges its tablets' objects (of the
        partitions named; none: all), in the background."""
        self.tn.request_compaction(table_id, partition_ids)

    def cn_stats(self) -> dict[str, int]:
        """What the CN holds (be/cn/node.py's stats)."""
        return self.cn.stats()

    def cn_visible_percentiles(self) -> dict[str, int]:
        """The CN's commit-to-visible p50 and p99 alone (no walk over its tables)."""
        return self.cn.visible_percentiles()


def open_embedded(config: Config) -> EmbeddedDataPlane:
    """The TN and CN of `quire up`: the TN's log in tn_log_folder (one replica)."""
    log_limits = LogLimits.from_config(config)
    folder = tn_log_folder(config)
    return EmbeddedDataPlane(
        lambda: LogService.open(folder, log_limits),
        commit_limits(config, log_limits),
        ObjectStore.from_config(config),
        ComputeLimits.from_config(config),
        config["webserver_port"],
        LoadLimits.from_config(config),
    )


@dataclass(frozen=True, slots=True)
class DataNode:
    """A backend as the FE knows it: added to the catalog, alive by the FE's last heartbeat."""

    id: int
    host: str
    port: int
    role: Role
    alive: bool = True


ANSWER_MARGIN_SECONDS = 5.0  # a reply may come this much after the wait it was given
READ_TS_TIMEOUT = 5.0  # a node's newest timestamp needs no waiting


def rendezvous_order(table_id: int, nodes: list[DataNode]) -> list[DataNode]:
    """The nodes in the order a table prefers them: the same on every FE, and a node's going
    moves only its own tables."""

    def weight(node: DataNode) -> bytes:
        return hashlib.blake2b(f"{table_id}/{node.id}".encode(), digest_size=8).digest()

    return sorted(nodes, key=weight, reverse=True)


class RemoteDataPlane:
    reads_at_hand = False  # every read is a round trip to a node: none on the event loop

    def __init__(
        self,
        token: str | bytes,
        nodes: Callable[[], list[DataNode]],
        limits: ServiceLimits | None = None,
        name: str = "fe",
    ):
        self.limits = limits or ServiceLimits()
        self.name = name
        self._token = token
        self._nodes = nodes
        self._clients: dict[tuple[str, int], NodeClient] = {}
        self._lock = threading.Lock()
        self._in_flight = threading.BoundedSemaphore(self.limits.max_in_flight)
        self._committers = concurrent.futures.ThreadPoolExecutor(
            self.limits.max_in_flight, thread_name_prefix="dp-commit"
        )
        self._commits_waiting = threading.BoundedSemaphore(self.limits.max_in_flight)

    def start(self) -> None:
        pass

    def close(self) -> None:
        self._committers.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def client(self, host: str, port: int) -> NodeClient:
        with self._lock:
            client = self._clients.get((host, port))
            if client is None:
                client = NodeClient(
                    host, port, self._token, self.limits, self.name, self._in_flight
                )
                self._clients[(host, port)] = client
            return client

    def forget(self, host: str, port: int) -> None:
        with self._lock:
            client = self._clients.pop((host, port), None)
        if client is not None:
            client.close()

    def status(self, host: str, port: int, timeout: float) -> Status:
        """What the node says it is (role, name, watermark, tables), proven with the token."""
        reply = self.client(host, port).call(StatusRequest(), timeout)
        assert type(reply) is Status
        return reply

    # The API the FE uses, as EmbeddedDataPlane's.

    def take_auto_increment(self, table_id: int, count: int) -> int:
        return self._ask_tn(TakeAutoIncrement(table_id, count)).first

    def observe_auto_increment(self, table_id: int, given: int) -> None:
        self._ask_tn(ObserveAutoIncrement(table_id, given))

    def oldest_readable_ts(self) -> int:
        """CNs keep every version they were sent: any timestamp reads exactly (the TN refuses a
        transaction too old to check at its commit)."""
        return 0

    @property
    def available(self) -> bool:
        return any(node.role is Role.TN for node in self._nodes())

    def submit(self, write_set: WriteSet) -> concurrent.futures.Future:
        if not self._commits_waiting.acquire(blocking=False):
            raise CommitOverloaded(
                f"this FE has {self.limits.max_in_flight} commits in flight; try again"
            )
        try:
            future = self._committers.submit(self.commit, write_set)
        except RuntimeError:
            self._commits_waiting.release()
            raise TransactionNodeClosed("this FE is stopping") from None
        future.add_done_callback(lambda _: self._commits_waiting.release())
        return future

    def commit(self, write_set: WriteSet) -> int:
        return self._ask_tn(CommitRequest(write_set)).commit_ts

    def _ask_tn(self, request):
        """The TN's reply, its failures as the TN's error kinds."""
        tn = self._tn()
        try:
            return self.client(tn.host, tn.port).call(request)
        except NodeUnreachable as error:
            raise TransactionNodeClosed(f"the TN cannot be reached: {error}") from None
        except NodeUnavailable as error:
            raise CommitOutcomeUnknown(
                f"the TN did not answer ({error}): the commit may or may not have taken effect"
            ) from None
        except (NodeBusy, ServiceError) as error:
            raise CommitOverloaded(f"the request was not sent: {error}") from None

    def load_address(self) -> tuple[str | None, int] | None:
        """The TN's host and backend HTTP port (its status says which), None without a TN."""
        tns = [node for node in self._nodes() if node.role is Role.TN]
        if not tns:
            return None
        try:
            status = self.status(tns[0].host, tns[0].port, READ_TS_TIMEOUT)
        except ServiceError:
            return None
        port = dict(status.stats).get("webserver_port")
        return (tns[0].host, port) if port else None

    def begin_load(self, schema: TableSchema, claim: LoadClaim | None = None) -> int:
        return self._ask_tn(BeginLoad(schema, claim)).value

    def reserve_row_ids(self, txn_id: int, count: int) -> int:
        return self._ask_tn(ReserveRowIds(txn_id, count)).value

    def commit_load(
        self,
        txn_id: int,
        schema: TableSchema,
        objects: tuple[ObjectMeta, ...],
        overwrite: bool = False,
    ) -> int:
        return self._ask_tn(CommitLoad(txn_id, schema, tuple(objects), overwrite)).commit_ts

    def abort_load(self, txn_id: int, names: tuple[str, ...] = ()) -> None:
        self._ask_tn(AbortLoad(txn_id, tuple(names)))

    def load_records(self, db: str | None) -> list[LoadRecord]:
        """The loads the TN knows, asked on its HTTP port with the cluster token."""
        found = self._ask_load_port(
            "get", "_load_records", {"db": db} if db else {}, "list its loads"
        )
        try:
            return [LoadRecord.from_fields(fields) for fields in found or ()]
        except (ValueError, TypeError) as error:
            raise NodeUnavailable(f"the TN did not list its loads: {error}") from None

    def clean_labels(self, db: str, label: str | None) -> int:
        """CLEAN LABEL, asked of the TN on its HTTP port with the cluster token."""
        params = {"db": db, **({"label": label} if label else {})}
        answer = self._ask_load_port("post", "_clean_labels", params, "clean the labels")
        if answer is None:
            return 0
        if not isinstance(answer, dict) or type(answer.get("cleaned")) is not int:
            raise NodeUnavailable(f"the TN answered CLEAN LABEL with {answer!r:.100}")
        return answer["cleaned"]

    def _ask_load_port(self, method: str, path: str, params: dict, what: str):
        """The JSON answer of the TN's HTTP port at /api/path (None if it serves none)."""
        address = self.load_address()
        if address is None:
            return None
        host, port = address
        token = self._token if isinstance(self._token, str) else self._token.decode()
        try:
            reply = requests.request(
                method,
                f"http://{host}:{port}/api/{path}",
                params=params,
                headers={"X-Quire-Token": token},
                timeout=READ_TS_TIMEOUT,
            )
            reply.raise_for_status()
            return reply.json()
        except (requests.RequestException, ValueError) as error:
            raise NodeUnavailable(f"the TN did not {what}: {error}") from None

    def read_ts(self) -> int:
        """The TN's newest timestamp; while the TN cannot answer, the lowest watermark of the
        live CNs (every one of them has everything up to it): reads go on without the TN."""
        tn = self._tn()
        try:
            return self.client(tn.host, tn.port).call(ReadTsRequest(), READ_TS_TIMEOUT).ts
        except (NodeUnavailable, NodeBusy) as error:
            unavailable = error
        watermarks = []
        for node in self._nodes():
            if node.role is Role.CN and node.alive:
                try:
                    watermarks.append(
                        self.client(node.host, node.port).call(ReadTsRequest(), READ_TS_TIMEOUT).ts
                    )
                except (NodeUnavailable, NodeBusy):
                    continue
        if not watermarks:
            raise unavailable
        return min(watermarks)

    def tablet_stats(self, schemas: Sequence[TableSchema]) -> dict[int, TabletTotals]:
        """Per table id, rows, bytes and objects per tablet id, as the TN counts them: one request
        per max_stats_tables tables; {} while the TN cannot answer (SHOW TABLETS and SHOW DATA
        still list the tablets)."""
        most = self.limits.max_stats_tables
        totals: dict[int, TabletTotals] = {}
        try:
            for first in range(0, len(schemas), most):
                reply = self._ask_tn(TabletStatsRequest(tuple(schemas[first : first + most])))
                if type(reply) is not TabletStats:
                    raise ServiceFormatError(f"{type(reply).__name__} as tablet statistics")
                for table_id, tablets in reply.tables:
                    totals[table_id] = {tablet: tuple(figures) for tablet, *figures in tablets}
        except (CommitError, NoNode):
            return {}
        return totals

    def compact(self, table_id: int, partition_ids: frozenset[int] = frozenset()) -> None:
        self._ask_tn(CompactRequest(table_id, tuple(sorted(partition_ids))))

    def forget_unreachable(self, as_of_ts: int, reachable: dict[int, frozenset[int]]) -> None:
        tables = tuple((table, tuple(sorted(ids))) for table, ids in sorted(reachable.items()))
        self._ask_tn(Reachable(as_of_ts, tables))
        for node in self._nodes():  # and the CNs let the rest go
            if node.role is Role.CN and node.alive:
                try:
                    self.client(node.host, node.port).call(Reachable(as_of_ts, tables))
                except ServiceError as error:
                    logger.info(
                        "CN %s:%d was not told what may be read: %s", node.host, node.port, error
                    )

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        row_ids: bool = False,
        bounds: tuple[ColumnBound, ...] = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        """The table at ts from the CN that follows it, else the next, else the TN."""
        nodes = self._nodes()
        cns = rendezvous_order(schema.table_id, [n for n in nodes if n.role is Role.CN and n.alive])
        candidates = cns + [n for n in nodes if n.role is Role.TN]
        if not candidates:
            raise NoNode("no CN or TN has been added (ALTER SYSTEM ADD BACKEND)")
        named = None if columns is None else tuple(sorted(columns))
        chosen = None if partitions is None else tuple(sorted(partitions))
        request = SnapshotRequest(schema, ts, row_ids, int(timeout * 1000), bounds, named, chosen)
        last_error: Exception | None = None
        for node in candidates:
            try:
                reply = self.client(node.host, node.port).call(
                    request, timeout + ANSWER_MARGIN_SECONDS
                )
            except (NodeUnavailable, NodeBusy, WatermarkTimeout) as error:
                last_error = error
                continue
            return reply.table
        assert last_error is not None
        raise last_error

    def read_plan(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        columns: frozenset[str] | None = None,
    ) -> read_plan.ReadPlan:
        """The table's read plan at ts, from the TN (it knows every object and reads as a CN)."""
        tn = self._tn()
        named = None if columns is None else tuple(sorted(columns))
        request = ReadPlanRequest(schema, ts, int(timeout * 1000), named)
        reply = self.client(tn.host, tn.port).call(request, timeout + ANSWER_MARGIN_SECONDS)
        if type(reply) is not ReadPlanReply:
            raise ServiceFormatError(f"{type(reply).__name__} as the answer to a read plan")
        return read_plan.decode(reply.plan, self.limits.max_message_bytes)

    def runs_queries(self) -> bool:
        """Whether a live CN may run a query (else the FE's engine reads snapshot())."""
        return any(node.role is Role.CN and node.alive for node in self._nodes())

    def run_query(
        self,
        sql: str,
        tables: tuple[QueryTable, ...],
        given: tuple[tuple[str, pa.Table], ...],
        read_wait: float,
        timeout: float,
        memory_limit_bytes: int,
        abandoned: Callable[[], bool] = lambda: False,
        columnar: bool = False,
    ) -> engine.Answer:
        """The answer of engine SQL over the tables' snapshots (and the given tables), run on the
        CN that follows the first table, else the next live CN; the engine's error kinds raised
        as the CN raised them; QueryAbandoned once abandoned() (the CN's query is stopped);
        columnar: a big answer's rows may stay Arrow (ArrowRows)."""
        assert tables, "a query without table data runs on the FE"
        cns = [node for node in self._nodes() if node.role is Role.CN and node.alive]
        if not cns:
            raise NoNode("no live CN to run the query")
        request = QueryRequest(
            sql,
            tables,
            given,
            int(read_wait * 1000),
            max(int(timeout * 1000), 1),
            memory_limit_bytes,
        )
        deadline = time.monotonic() + timeout + ANSWER_MARGIN_SECONDS
        last_error: Exception | None = None
        for node in rendezvous_order(tables[0].schema.table_id, cns):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                return self._answer(
                    node, request, remaining, memory_limit_bytes, abandoned, columnar
                )
            except CallAbandoned:
                raise engine.QueryAbandoned() from None
            except (NodeUnavailable, NodeBusy, WatermarkTimeout, engine.EngineBusy) as error:
                last_error = error
        raise last_error or NodeUnavailable("no CN answered the query in time")

    def _answer(
        self,
        node: DataNode,
        request: QueryRequest,
        timeout: float,
        memory_limit_bytes: int,
        abandoned: Callable[[], bool],
        columnar: bool,
    ) -> engine.Answer:
        parts: list[pa.Table] = []
        for reply in self.client(node.host, node.port).stream(request, timeout, abandoned):
            match reply:
                case ResultPart(rows):
                    parts.append(rows)
                case ResultEnd(columns, row_count):
                    if row_count != sum(part.num_rows for part in parts) or any(
                        part.num_columns != len(columns) for part in parts
                    ):
                        raise ServiceFormatError(f"{node.host}:{node.port} sent a broken result")
                    return engine.answer_of(list(columns), parts, memory_limit_bytes, columnar)
                case _:
                    raise ServiceFormatError(f"{type(reply).__name__} in a query's result")
        raise NodeUnavailable(f"{node.host}:{node.port} ended a query's result without its end")

    def _tn(self) -> DataNode:
        tns = [node for node in self._nodes() if node.role is Role.TN]
        if not tns:
            raise NoNode('no TN has been added (ALTER SYSTEM ADD BACKEND "host:tn_service_port")')
        return tns[0]
