"""The logtail table: the TN's committed transactions in commit-timestamp order, for pulls.

Commits are kept in pages of at most `page_size`; a page's born_ts is its first (smallest)
timestamp. A pull for a time range finds its first page by binary search over the born_ts of the
pages, then its first commit by binary search within that page, and walks forward. Heartbeats only
advance `last_ts`: a pull drops them anyway. A checkpoint covers everything at or below its
timestamp: pages entirely at or below it are dropped, and a pull that starts below it starts at it
and says so (the CN reads the checkpoint first).

Memory is bounded: past `soft_kept_bytes` the table asks for a checkpoint (`needs_checkpoint` and
the `on_needs_checkpoint` callback, once per crossing); at `max_kept_bytes` it refuses commits.
The table is shared by the TN's committing thread and the push server's loop: one lock guards it.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from be.logtail.entries import Commit
from be.logtail.errors import LogtailTableFull, ResponseTooLarge
from be.logtail.limits import LogtailLimits

logger = logging.getLogger(__name__)

COMMIT_OVERHEAD_BYTES = 64  # what a commit costs besides its Arrow buffers, kept or sent


def commit_bytes(commit: Commit) -> int:
    """What a commit costs to keep and to send, about (Arrow buffers plus a fixed overhead)."""
    total = COMMIT_OVERHEAD_BYTES
    for change in commit.changes:
        for batch in (change.inserts, change.deletes):
            if batch is not None:
                total += batch.nbytes + 64 * batch.num_columns
    return total


@dataclass(slots=True)
class Page:
    timestamps: list[int] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    @property
    def born_ts(self) -> int:
        return self.timestamps[0]

    @property
    def last_ts(self) -> int:
        return self.timestamps[-1]


@dataclass(frozen=True, slots=True)
class Pulled:
    """The changes of some tables in (from, to_ts]: from is what was asked, or `checkpoint_ts` when
    the ask started below the checkpoint (then the CN reads the checkpoint first; else it is 0)."""

    to_ts: int
    checkpoint_ts: int
    commits: tuple[Commit, ...]
    bytes: int


class LogtailTable:
    def __init__(
        self,
        limits: LogtailLimits,
        on_needs_checkpoint: Callable[[int], None] | None = None,
    ):
        self.limits = limits
        self._on_needs_checkpoint = on_needs_checkpoint
        self._lock = threading.Lock()
        self._pages: list[Page] = []
        self._born: list[int] = []  # the pages' born_ts, for the first binary search
        self.last_ts = 0  # the newest commit or heartbeat added
        self.checkpoint_ts = 0
        self.kept_bytes = 0
        self.kept_commits = 0
        self.needs_checkpoint = False

    def add(self, commit: Commit) -> None:
        """Keep a committed transaction; commits come in increasing timestamp order."""
        with self._lock:
            assert commit.commit_ts > self.last_ts, "commits are added in timestamp order"
            assert commit.commit_ts > self.checkpoint_ts
            if commit.is_heartbeat:
                self.last_ts = commit.commit_ts
                return
            size = commit_bytes(commit)
            if self.kept_bytes + size > self.limits.max_kept_bytes:
                raise LogtailTableFull(
                    f"the logtail table keeps {self.kept_bytes} bytes; a checkpoint must come first"
                )
            if not self._pages or len(self._pages[-1].timestamps) >= self.limits.page_size:
                self._pages.append(Page())
                self._born.append(commit.commit_ts)
            page = self._pages[-1]
            page.timestamps.append(commit.commit_ts)
            page.commits.append(commit)
            page.sizes.append(size)
            self.last_ts = commit.commit_ts
            self.kept_bytes += size
            self.kept_commits += 1
            crossed = not self.needs_checkpoint and self.kept_bytes > self.limits.soft_kept_bytes
            if crossed:
                self.needs_checkpoint = True
        if crossed:
            logger.info("logtail table keeps %d bytes: asking for a checkpoint", self.kept_bytes)
            if self._on_needs_checkpoint is not None:
                self._on_needs_checkpoint(self.kept_bytes)

    def set_checkpoint(self, checkpoint_ts: int) -> None:
        """Everything at or below checkpoint_ts is in a checkpoint: drop the pages it covers."""
        with self._lock:
            assert checkpoint_ts <= self.last_ts, "a checkpoint covers committed timestamps only"
            if checkpoint_ts <= self.checkpoint_ts:
                return
            self.checkpoint_ts = checkpoint_ts
            covered = 0
            while covered < len(self._pages) and self._pages[covered].last_ts <= checkpoint_ts:
                page = self._pages[covered]
                self.kept_bytes -= sum(page.sizes)
                self.kept_commits -= len(page.commits)
                covered += 1
            del self._pages[:covered]
            del self._born[:covered]
            assert self.kept_bytes >= 0 and self.kept_commits >= 0
            if self.kept_bytes <= self.limits.soft_kept_bytes:
                self.needs_checkpoint = False

    def collect(
        self,
        table_ids: Iterable[int],
        from_ts: int,
        to_ts: int,
        max_bytes: int | None = None,
    ) -> Pulled:
        """The changes of table_ids committed in (from_ts, to_ts], heartbeats and other tables'
        changes left out; ResponseTooLarge past max_bytes (the TN's cap by default)."""
        wanted = frozenset(table_ids)
        max_bytes = self.limits.max_response_bytes if max_bytes is None else max_bytes
        with self._lock:
            assert to_ts <= self.last_ts, "a pull ends at a timestamp the table has seen"
            checkpoint_ts = self.checkpoint_ts if from_ts < self.checkpoint_ts else 0
            start = max(from_ts, self.checkpoint_ts)
            found: list[Commit] = []
            total = 0
            if start < to_ts:
                for commit, size in self._range(start, to_ts):
                    kept = [change for change in commit.changes if change.table_id in wanted]
                    if not kept:
                        continue
                    if len(kept) < len(commit.changes):
                        commit = Commit(commit.commit_ts, tuple(kept))
                        size = commit_bytes(commit)
                    total += size
                    if total > max_bytes or len(found) >= self.limits.max_commits_per_response:
                        raise ResponseTooLarge(wanted, start, to_ts, max_bytes)
                    found.append(commit)
        return Pulled(to_ts, checkpoint_ts, tuple(found), total)

    def _range(self, from_ts: int, to_ts: int):
        """(commit, size) with from_ts < commit_ts <= to_ts, in order; under the lock."""
        page_index = max(bisect.bisect_right(self._born, from_ts) - 1, 0)
        for page in self._pages[page_index:]:
            if page.born_ts > to_ts:
                return
            first = bisect.bisect_right(page.timestamps, from_ts)
            for position in range(first, len(page.timestamps)):
                if page.timestamps[position] > to_ts:
                    return
                yield page.commits[position], page.sizes[position]

    @property
    def page_count(self) -> int:
        return len(self._pages)
