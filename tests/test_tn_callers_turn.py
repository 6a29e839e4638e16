"""Commits on callers' turn: write sets submitted from an event loop (the FE's, in `quire up`)
are staged, logged and published on that loop's thread when the TN's thread has nothing of its
own to do, with the TN's thread asking for the turn between them (heartbeats). Every commit is
published in timestamp order before it is answered, whether the log answers while the loop
waits or later; a log that refuses an append or never answers it leaves those commits' outcome
unknown, loses nothing acknowledged, and commits go on once it is read back."""

import asyncio
import threading
import time

import pyarrow as pa
import pytest
import uvloop

from be.logservice.service import LogService
from be.tn.errors import CommitOutcomeUnknown
from be.tn.limits import CommitLimits
from be.tn.pipeline import CommitPipeline
from be.tn.write_set import TableWrite, WriteSet
from tests.harness import wait_until
from tests.test_overwrite_commit import SCHEMA
from tests.test_tn_concurrent_commits import failing_while, keys_of
from tests.test_tn_timestamps import Published

CLIENTS = 8
COMMITS_PER_CLIENT = 60


class PublishedWhere(Published):
    """What the TN published, and on which threads."""

    def __init__(self):
        super().__init__()
        self.threads: set[str] = set()

    def __call__(self, commit) -> None:
        super().__call__(commit)
        self.threads.add(threading.current_thread().name)


def started(folder, limits: CommitLimits):
    log = LogService.open(folder)
    published = PublishedWhere()
    pipeline = CommitPipeline(log, limits, publish=published, heartbeats_on_demand=True)
    pipeline.start()
    return log, pipeline, published


def write_set(pipeline: CommitPipeline, key: int) -> WriteSet:
    rows = pa.table({"k": pa.array([key], pa.int32()), "v": [f"v{key}"]})
    return WriteSet(pipeline.published_ts, (TableWrite(SCHEMA, inserts=rows),))


async def commit(pipeline: CommitPipeline, key: int) -> int:
    run_soon = asyncio.get_running_loop().call_soon_threadsafe
    return await asyncio.wrap_future(pipeline.submit(write_set(pipeline, key), run_soon))


def commit_from_loop(pipeline: CommitPipeline, keys: list[int]) -> dict[int, int | Exception]:
    """Each key's commit, CLIENTS at a time, from one event loop: key -> timestamp or error."""

    async def clients() -> dict[int, int | Exception]:
        answers: dict[int, int | Exception] = {}

        async def client(mine: list[int]) -> None:
            for key in mine:
                try:
                    answers[key] = await commit(pipeline, key)
                except Exception as error:
                    answers[key] = error

        await asyncio.gather(*(client(keys[n::CLIENTS]) for n in range(CLIENTS)))
        return answers

    return uvloop.run(clients())


def heartbeats_meanwhile(pipeline: CommitPipeline, stop: threading.Event) -> threading.Thread:
    """The TN's thread asks for the turn again and again (as a CN's read waiting does)."""

    def ask() -> None:
        while not stop.is_set():
            pipeline.heartbeat_soon()
            time.sleep(0.001)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("wait", [0.005, 0.0], ids=["answered-while-waiting", "answered-later"])
def test_commits_from_a_loop_are_published_in_order_on_its_thread_and_survive_a_restart(
    tmp_path, wait
):
    limits = CommitLimits(log_wait_on_caller_seconds=wait)
    log, pipeline, published = started(tmp_path, limits)
    stop = threading.Event()
    asker = heartbeats_meanwhile(pipeline, stop)
    keys = list(range(CLIENTS * COMMITS_PER_CLIENT))
    try:
        answers = commit_from_loop(pipeline, keys)
    finally:
        stop.set()
        asker.join()
        pipeline.close()
        log.close()
    assert all(type(ts) is int for ts in answers.values()), answers
    stamps = published.timestamps()
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert keys_of(published.commits) == answers
    assert "MainThread" in published.threads  # the loop's thread published commits
    assert "tn-committer" in published.threads  # and the TN's heartbeats came between them

    log, pipeline, replayed = started(tmp_path, limits)
    try:
        assert keys_of(replayed.commits) == answers
    finally:
        pipeline.close()
        log.close()


def test_an_append_the_log_refuses_on_callers_turn_is_unknown_and_commits_go_on(tmp_path):
    log, pipeline, published = started(tmp_path, CommitLimits())
    refusing = threading.Event()
    failing_while(refusing, log, OSError("no space left on the device"), "append_then")
    try:
        before = commit_from_loop(pipeline, [1, 2])
        refusing.set()
        refused_now = commit_from_loop(pipeline, [3])
        refusing.clear()
        after = commit_from_loop(pipeline, [4, 5])
    finally:
        pipeline.close()
        log.close()
    assert all(type(ts) is int for ts in (*before.values(), *after.values()))
    assert isinstance(refused_now[3], CommitOutcomeUnknown)
    found = keys_of(published.commits)
    assert {1, 2, 4, 5} <= set(found) <= {1, 2, 3, 4, 5}
    assert all(found[key] == ts for key, ts in {**before, **after}.items())


def test_an_append_the_log_never_answers_is_given_up_and_read_back(tmp_path):
    """The log holds the commit but its answer is lost: after commit_timeout the TN's thread
    gives up on it (outcome unknown), reads the log back (the commit is there: published), and
    commits go on."""
    log, pipeline, published = started(tmp_path, CommitLimits(commit_timeout_seconds=1.0))
    append_then = log.append_then
    losing = threading.Event()

    def answer_lost(records, appended):
        if losing.is_set():
            return append_then(records, lambda *_: None)
        return append_then(records, appended)

    log.append_then = answer_lost
    try:
        losing.set()
        lost = commit_from_loop(pipeline, [7])
        losing.clear()
        wait_until(lambda: 7 in keys_of(published.commits), 30, "the lost commit read back")
        after = commit_from_loop(pipeline, [8])
    finally:
        pipeline.close()
        log.close()
    assert isinstance(lost[7], CommitOutcomeUnknown)
    assert type(after[8]) is int and after[8] > keys_of(published.commits)[7]
