"""A CN's tables and its watermark: every commit at or below the watermark has been applied, so a
snapshot at a timestamp at or below it is complete. A read above the watermark waits for it, for
a bounded time.

A CN follows only the tables it is read for: one nobody read for unsubscribe_idle_seconds is let
go (its state dropped), and so is one the FE says is gone for good (forget_unreachable). A CN
process follows tables by logtail subscriptions (be/cn/service.py decides, this node keeps the
reads' books). A node inside the TN's process (`quire up`, and the TN's own reads) is handed every
commit and an `image` of any table as the TN holds it at the commit being published (its objects,
tombstones and unflushed rows): it ignores the commits of the tables it let go, and follows one
again, from its image, at the next commit after a read asked for it."""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from be.cn.kept_bytes import KeptBytes
from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.cn.table_state import TableState
from be.logtail.entries import Commit
from be.read_plan import ReadPlan
from be.storage.blocks import ObjectMeta
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta
from be.table_schema import TableSchema

logger = logging.getLogger(__name__)

FORGET_CHECK_SECONDS = 1.0  # how often replaced objects are looked for (a quarter of the
# retention when that is shorter): each is forgotten after half the retention, so that no read
# picks it once the TN may delete its file (at the whole retention); the objects that replaced
# it answer every snapshot that may still be read
HEARTBEAT_ASKED_EVERY_SECONDS = 0.005  # a read waiting on a TN that heartbeats on demand asks again


class WatermarkTimeout(Exception):
    """The CN has not received everything up to the timestamp asked for in time."""


@dataclass(frozen=True, slots=True)
class TableImage:
    """A table as the TN holds it at one commit: its objects and tombstones, and the rows (ROW_ID,
    COMMIT_TS, then the columns) and deletes no flush holds yet, in commit order."""

    objects: tuple[ObjectMeta, ...] = ()
    tombstones: tuple[TombstoneMeta, ...] = ()
    rows: tuple[pa.Table, ...] = ()
    delete_ids: tuple[pa.Array, ...] = ()
    delete_ts: tuple[pa.Array, ...] = ()


class ComputeNode:
    def __init__(
        self,
        store: ObjectStore | None = None,
        limits: ComputeLimits | None = None,
        image: Callable[[int], TableImage] | None = None,
        heartbeat_soon: Callable[[], None] | None = None,
    ):
        """store: where flushed tables' objects are read from; image: a table as the TN holds it,
        called in apply() only (a node inside the TN's process, fed every commit);
        heartbeat_soon: asks that TN for a heartbeat, when a read waits for the next commit (a
        TN that heartbeats only on demand)."""
        self.store = store
        self._heartbeat_soon = heartbeat_soon
        self.limits = limits or ComputeLimits()
        self.cache = ObjectCache(self.limits)
        self.kept = KeptBytes(self.limits)
        self._image = image
        self._tables: dict[int, TableState] = {}
        self._watermark = 0
        self._arrived = threading.Condition()
        # The reads' books, under _reads: reads under way and the last read's time per table;
        # with an image, the tables let go and those a read wants followed again.
        self._reads = threading.Condition()
        self._readers: dict[int, int] = {}
        self._read_at: dict[int, float] = {}
        self._unfollowed: collections.OrderedDict[int, None] = collections.OrderedDict()
        self._wanted: set[int] = set()
        self._idle_check_at = time.monotonic() + self.limits.idle_check_seconds
        self._forget_check_at = time.monotonic() + FORGET_CHECK_SECONDS
        self.let_go_count = 0  # tables let go (idle or gone), since the start
        # (monotonic time, µs from commit to applied here) of the last commits, for the charts
        self._visible: collections.deque[tuple[float, int]] = collections.deque(
            maxlen=VISIBLE_SAMPLES
        )

    @property
    def watermark(self) -> int:
        return self._watermark

    def apply(self, commit: Commit) -> None:
        """A commit's logtail, in commit order (heartbeats only move the watermark)."""
        assert commit.commit_ts > self._watermark, (commit.commit_ts, self._watermark)
        if self._image is not None:
            if self._wanted:
                self._follow_wanted(commit.commit_ts)
            if time.monotonic() >= self._idle_check_at:
                self.let_go_idle()
        self.apply_changes(commit)
        self.advance(commit.commit_ts)
        self._visible.append((time.monotonic(), (time.time_ns() - commit.commit_ts) // 1000))

    def apply_changes(self, commit: Commit) -> None:
        """A commit's changes, the watermark left to the caller: a CN fed by a logtail subscriber
        gets each table's commits in order, but a table's catch-up after other tables' pushes."""
        for change in commit.changes:
            table = self._tables.get(change.table_id)
            if table is None:
                if self._unfollowed and change.table_id in self._unfollowed:
                    continue
                if self._image is not None:  # its image holds this commit too
                    self._follow_from_image(change.table_id, commit.commit_ts)
                    continue
                table = self._tables.setdefault(change.table_id, self._new_table(change.table_id))
            table.apply(change, commit.commit_ts)

    def _new_table(self, table_id: int) -> TableState:
        with self._reads:
            self._read_at.setdefault(table_id, time.monotonic())
        return TableState(
            table_id,
            self.store,
            self.cache,
            self.limits.key_index_max_rows,
            self.kept,
            self.limits.key_index_history_ns,
            newest_readable=lambda: self._watermark,
        )

    def _follow_from_image(self, table_id: int, ts: int) -> None:
        image = self._image(table_id)
        table = self._new_table(table_id)
        table.restore(image.objects, image.tombstones, ts)
        table.restore_memory(list(image.rows), list(image.delete_ids), list(image.delete_ts))
        self._tables[table_id] = table

    def _follow_wanted(self, ts: int) -> None:
        """On the committer's thread, at the commit at ts (which the TN's images hold): the
        tables reads want followed again."""
        with self._reads:
            wanted, self._wanted = self._wanted, set()
            for table_id in wanted:
                if table_id not in self._tables:
                    self._follow_from_image(table_id, ts)
                self._unfollowed.pop(table_id, None)
            self._reads.notify_all()
        logger.info("following tables %s again from the TN's state at %d", sorted(wanted), ts)

    def restore(
        self,
        table_id: int,
        objects: tuple[ObjectMeta, ...],
        tombstones: tuple[TombstoneMeta, ...],
        ts: int,
    ) -> None:
        """A table as the TN's checkpoint at ts holds it (its subscription started below it)."""
        table = self._tables.get(table_id)
        if table is None:
            table = self._tables.setdefault(table_id, self._new_table(table_id))
        table.restore(objects, tombstones, ts)

    def advance(self, ts: int) -> None:
        """Everything up to ts has been applied (the watermark never goes back)."""
        with self._arrived:
            if ts > self._watermark:
                self._watermark = ts
                self._arrived.notify_all()
        if time.monotonic() >= self._forget_check_at:
            self.forget_replaced()

    def forget_replaced(self, now_ns: int | None = None) -> None:
        """Every table forgets the objects and tombstones replaced more than half the time ago
        the TN keeps them (their files are deleted then)."""
        retention = self.limits.replaced_retention_seconds
        self._forget_check_at = time.monotonic() + min(FORGET_CHECK_SECONDS, retention / 4)
        now_ns = time.time_ns() if now_ns is None else now_ns
        cutoff = now_ns - int(retention / 2 * 1_000_000_000)
        for table in list(self._tables.values()):
            table.forget_replaced(cutoff)

    def _waited(self, condition: threading.Condition, done: Callable[[], bool], timeout: float):
        """condition.wait_for(done, timeout), asking the TN for a heartbeat now and then if it
        heartbeats only on demand (done needs the next commit)."""
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._heartbeat_soon is not None:
                self._heartbeat_soon()
                remaining = min(remaining, HEARTBEAT_ASKED_EVERY_SECONDS)
            condition.wait(remaining)
        return True

    def wait_for(self, ts: int, timeout: float) -> None:
        with self._arrived:
            if not self._waited(self._arrived, lambda: self._watermark >= ts, timeout):
                raise WatermarkTimeout(
                    f"this CN has data up to {self._watermark}, not yet up to {ts}"
                )

    # -- reads and the tables followed --------------------------------------------------------

    def reading(self, table_id: int, timeout: float) -> _Reading:
        """A read of table_id under way (a context manager): the table is not let go meanwhile.
        A node with an image follows a table it let go again first (waiting, at most timeout,
        for the next commit)."""
        return _Reading(self, table_id, timeout)

    def _begin_read(self, table_id: int, timeout: float) -> None:
        with self._reads:
            self._readers[table_id] = self._readers.get(table_id, 0) + 1
            self._read_at[table_id] = time.monotonic()
            if self._image is not None and (
                table_id in self._unfollowed or table_id in self._wanted
            ):
                self._wanted.add(table_id)  # until the committer follows it (_follow_wanted)
                if not self._waited(self._reads, lambda: table_id not in self._wanted, timeout):
                    self._end_read(table_id)
                    raise WatermarkTimeout(f"this CN has not followed table {table_id} again yet")

    def _end_read(self, table_id: int) -> None:
        """Under _reads."""
        left = self._readers[table_id] - 1
        if left:
            self._readers[table_id] = left
        else:
            del self._readers[table_id]
        self._read_at[table_id] = time.monotonic()

    def idle_tables(self, among, idle_seconds: float | None = None) -> list[int]:
        """Of the tables among, those no read is under way on and none was for idle_seconds
        (unsubscribe_idle_seconds by default)."""
        if idle_seconds is None:
            idle_seconds = self.limits.unsubscribe_idle_seconds
        oldest = time.monotonic() - idle_seconds
        with self._reads:
            return [
                table_id
                for table_id in among
                if table_id not in self._readers and self._read_at.get(table_id, 0) < oldest
            ]

    def let_go_idle(self) -> list[int]:
        """With an image: let the idle tables go (their later commits are ignored until a read
        wants them again)."""
        assert self._image is not None
        self._idle_check_at = time.monotonic() + self.limits.idle_check_seconds
        oldest = time.monotonic() - self.limits.unsubscribe_idle_seconds
        with self._reads:
            room = self.limits.max_unfollowed_tables - len(self._unfollowed)
            idle = [
                table_id
                for table_id in list(self._tables)
                if table_id not in self._readers and self._read_at.get(table_id, 0) < oldest
            ][: max(room, 0)]
            for table_id in idle:
                self._unfollowed[table_id] = None
            dropped = self._pop(idle)
        self._let_go(dropped)
        if idle:
            logger.info(
                "tables %s not read for %.0f s: let go",
                idle,
                self.limits.unsubscribe_idle_seconds,
            )
        return idle

    def forget_unreachable(self, reachable) -> list[int]:
        """With an image: let go the tables the FE says no read may reach again (not among
        reachable's keys)."""
        assert self._image is not None
        with self._reads:
            gone = [t for t in list(self._tables) if t not in reachable and t not in self._readers]
            for table_id in [t for t in self._unfollowed if t not in reachable]:
                del self._unfollowed[table_id]  # the TN's last commits of it are in
            room = self.limits.max_unfollowed_tables - len(self._unfollowed)
            for table_id in gone[: max(room, 0)]:
                self._unfollowed[table_id] = None
            dropped = self._pop(gone)
        self._let_go(dropped)
        if gone:
            logger.info("tables %s are gone for good: let go", gone)
        return gone

    def drop(self, table_id: int) -> None:
        """Forget a table (no change of it is delivered any more, or they are ignored)."""
        with self._reads:
            dropped = self._pop([table_id])
        self._let_go(dropped)

    def _pop(self, table_ids: list[int]) -> list[TableState]:
        """Under _reads: the tables taken out."""
        dropped = []
        for table_id in table_ids:
            table = self._tables.pop(table_id, None)
            if table is not None:
                dropped.append(table)
            if table_id not in self._readers:
                self._read_at.pop(table_id, None)
        return dropped

    def _let_go(self, dropped: list[TableState]) -> None:
        for table in dropped:
            table.let_go()
        self.let_go_count += len(dropped)

    def followed(self, table_id: int) -> bool:
        return table_id in self._tables and table_id not in self._unfollowed

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool = False,
        bounds: tuple = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        if table is None:
            return (schema.with_row_ids() if row_ids else schema.arrow()).empty_table()
        return table.snapshot(schema, ts, row_ids, bounds, columns, partitions)

    def following_snapshot(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        row_ids: bool = False,
        bounds: tuple = (),
        columns: frozenset[str] | None = None,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table:
        """snapshot() on a node with an image, the table followed again first if it was let go
        (waiting at most timeout). A table let go during the read is read all the same: it holds
        every commit up to the watermark it was let go at, and ts is below that."""
        assert self._image is not None and ts <= self._watermark
        table = self._followed_again(schema.table_id, timeout)
        if table is None:  # no commit of it yet
            return (schema.with_row_ids() if row_ids else schema.arrow()).empty_table()
        return table.snapshot(schema, ts, row_ids, bounds, columns, partitions)

    def _followed_again(self, table_id: int, timeout: float) -> TableState | None:
        """The table, followed again first if it was let go (waiting at most timeout); None if
        it has no commit yet."""
        self._read_at[table_id] = time.monotonic()
        table = self._tables.get(table_id)
        if table is None:
            with self.reading(table_id, timeout):
                table = self._tables.get(table_id)
        return table

    def read_plan(
        self,
        schema: TableSchema,
        ts: int,
        timeout: float,
        columns: frozenset[str] | None = None,
    ) -> ReadPlan:
        """The table's read plan at ts (TableState.read_plan), the table followed again first if
        it was let go, as following_snapshot() does."""
        assert self._image is not None and ts <= self._watermark
        table = self._followed_again(schema.table_id, timeout)
        if table is None:  # no commit of it yet
            return TableState(schema.table_id).read_plan(schema, ts, columns)
        return table.read_plan(schema, ts, columns)

    def indexed_snapshot(
        self,
        schema: TableSchema,
        ts: int,
        row_ids: bool,
        bounds: tuple,
        partitions: frozenset[int] | None = None,
    ) -> pa.Table | None:
        """snapshot() from the table's key index, if it answers at once; else None."""
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        if table is None:
            return None
        self._read_at[schema.table_id] = time.monotonic()
        return table.indexed_snapshot(schema, ts, row_ids, bounds, partitions)

    def values_within(
        self, schema: TableSchema, ts: int, bound, names: tuple[str, ...], limit: int
    ) -> list[tuple] | None:
        """TableState.values_within of the table, if the CN follows it."""
        assert ts <= self._watermark, "never read above the watermark"
        table = self._tables.get(schema.table_id)
        if table is None:
            return None
        self._read_at[schema.table_id] = time.monotonic()
        return table.values_within(schema, ts, bound, names, limit)

    def table(self, table_id: int) -> TableState | None:
        return self._tables.get(table_id)

    def table_stats(self, table_id: int) -> tuple[int, int]:
        """Rows and bytes the CN holds of a table."""
        table = self._tables.get(table_id)
        return (table.row_count, table.nbytes) if table else (0, 0)

    def stats(self) -> dict[str, int]:
        """What the node holds: its tables' rows in memory, the snapshots and key indexes kept
        (within kept_bytes), the decoded objects cached (within cache_bytes)."""
        tables = list(self._tables.values())
        return {
            "tables": len(tables),
            "rows": sum(table.row_count for table in tables),
            "memory_bytes": sum(table.nbytes for table in tables),
            "kept_bytes": self.kept.used_bytes,
            "kept_entries": self.kept.entries,
            "kept_evicted": self.kept.evicted,
            "kept_refused": self.kept.refused,
            "cache_bytes": self.cache.used_bytes,
            "tables_let_go": self.let_go_count,
            "replaced_objects": sum(table.replaced_objects for table in tables),
            **self.visible_percentiles(),
        }

    def visible_percentiles(self) -> dict[str, int]:
        """p50 and p99 of commit-to-visible (the commit timestamp is the TN's wall clock) over
        the commits applied in the last VISIBLE_WINDOW_SECONDS."""
        since = time.monotonic() - VISIBLE_WINDOW_SECONDS
        latencies = sorted(max(us, 0) for at, us in list(self._visible) if at >= since)
        if not latencies:
            return {}
        last = len(latencies) - 1
        return {
            "visible_p50_us": latencies[last // 2],
            "visible_p99_us": latencies[min(last, round(last * 0.99))],
        }


VISIBLE_SAMPLES = 4096
VISIBLE_WINDOW_SECONDS = 30.0


class _Reading:
    __slots__ = ("node", "table_id", "timeout")

    def __init__(self, node: ComputeNode, table_id: int, timeout: float):
        self.node, self.table_id, self.timeout = node, table_id, timeout

    def __enter__(self) -> None:
        self.node._begin_read(self.table_id, self.timeout)

    def __exit__(self, *_) -> None:
        with self.node._reads:
            self.node._end_read(self.table_id)
