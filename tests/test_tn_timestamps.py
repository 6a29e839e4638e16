"""The TN's commit timestamps come from its log's timestamp oracle: a restarted TN stamps above
everything it handed out before (heartbeats too, which its log does not hold) even when the wall
clock went back meanwhile; a log that reserves no timestamps refuses commits cleanly and the TN
goes on once it does again."""

import threading
import time

import pyarrow as pa
import pytest

from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.logtail.entries import Commit
from be.tn.errors import TimestampsUnavailable
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline
from be.tn.write_set import TableWrite, WriteSet
from tests.harness import wait_until
from tests.test_overwrite_commit import SCHEMA

HOUR_NS = 3600 * 10**9


class Published:
    """What the TN published, in order (the CN's side of it)."""

    def __init__(self):
        self.commits: list[Commit] = []
        self.lock = threading.Lock()

    def __call__(self, commit: Commit) -> None:
        with self.lock:
            self.commits.append(commit)

    def newest(self) -> int:
        with self.lock:
            return self.commits[-1].commit_ts if self.commits else 0

    def timestamps(self) -> list[int]:
        with self.lock:
            return [commit.commit_ts for commit in self.commits]


def started(folder, clock=time.time_ns, log_limits: LogLimits | None = None):
    log = LogService.open(folder, log_limits or LogLimits())
    published = Published()
    pipeline = CommitPipeline(log, CommitLimits(), publish=published, clock=clock)
    pipeline.start()
    return log, pipeline, published


def insert(pipeline: CommitPipeline, keys: list[int]) -> int:
    rows = pa.table({"k": pa.array(keys, pa.int32()), "v": [f"v{k}" for k in keys]})
    return pipeline.commit(WriteSet(pipeline.published_ts, (TableWrite(SCHEMA, inserts=rows),)))


def test_a_restart_with_the_clock_an_hour_back_stamps_above_every_published_heartbeat(tmp_path):
    log, pipeline, published = started(tmp_path)
    try:
        committed = [insert(pipeline, [n]) for n in range(5)]
        last_commit = committed[-1]
        wait_until(lambda: published.newest() > last_commit, 10, "a heartbeat after the commits")
    finally:
        pipeline.close()
        log.close()
    before = published.timestamps()
    assert before == sorted(before) and max(before) > last_commit

    behind = lambda: time.time_ns() - HOUR_NS  # noqa: E731
    log, pipeline, again = started(tmp_path, clock=behind)
    try:
        first = insert(pipeline, [100])
        assert first > max(before)  # above the heartbeats the log never held
        wait_until(lambda: again.newest() > first, 10, "a heartbeat after the restart")
        after = [ts for ts in again.timestamps() if ts > last_commit]  # not the replay's
        assert after == sorted(after) and len(set(after)) == len(after)
        assert min(after) > max(before)
    finally:
        pipeline.close()
        log.close()


def test_a_log_that_reserves_no_timestamps_refuses_commits_and_the_tn_survives(tmp_path):
    limits = LogLimits(tso_window_ns=1_000_000, tso_max_count=1000)  # one per millisecond
    log, pipeline, published = started(tmp_path, log_limits=limits)
    try:
        insert(pipeline, [1])
        reserved = log.reserved_timestamp()
        log.close()  # the log goes away under the TN
        wait_until(lambda: time.time_ns() > reserved, 10, "the clock past the reservation")
        with pytest.raises(TimestampsUnavailable, match="reserves no timestamps"):
            insert(pipeline, [2])
        assert pipeline._thread.is_alive()
    finally:
        pipeline.close()
    log, pipeline, published = started(tmp_path)
    try:
        assert insert(pipeline, [3]) > 0
        keys = [
            key
            for commit in published.commits
            for change in commit.changes
            for key in (change.inserts.column("k").to_pylist() if change.inserts else [])
        ]
        assert sorted(keys) == [1, 3]  # the refused commit left nothing
    finally:
        pipeline.close()
        log.close()
