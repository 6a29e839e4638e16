"""Commits from many clients at once: published in timestamp order, each before it is
acknowledged; a log that goes away in the middle loses no acknowledged commit (those refused may
or may not be there after a restart, and nothing else is), and the committer refuses the rest
rather than dying, and takes the log up again by itself once it answers."""

import threading

import pyarrow as pa
import pytest

from be.tn.errors import CommitOutcomeUnknown, LabelTaken, TransactionNodeClosed
from be.tn.loads import INSERT, LoadClaim
from be.tn.write_set import TableWrite, WriteSet
from tests.harness import wait_until
from tests.test_overwrite_commit import SCHEMA
from tests.test_tn_timestamps import insert, started

CLIENTS = 4
COMMITS_PER_CLIENT = 150


def submit_all(pipeline, close_log_after: int | None = None, log=None):
    """Every client's commits, one at a time each; the log closed after that many answers.
    (key -> commit timestamp) of those acknowledged, and the keys of every commit tried."""
    acknowledged: dict[int, int] = {}
    tried: set[int] = set()
    lock = threading.Lock()
    answers = [0]

    def client(number: int) -> None:
        for n in range(COMMITS_PER_CLIENT):
            key = number * COMMITS_PER_CLIENT + n
            rows = pa.table({"k": pa.array([key], pa.int32()), "v": [f"v{key}"]})
            write_set = WriteSet(pipeline.published_ts, (TableWrite(SCHEMA, inserts=rows),))
            with lock:
                tried.add(key)
            try:
                ts = pipeline.commit(write_set)
            except Exception:
                ts = None
            with lock:
                if ts is not None:
                    acknowledged[key] = ts
                answers[0] += 1
                if close_log_after is not None and answers[0] == close_log_after:
                    log.close()

    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acknowledged, tried


def keys_of(commits) -> dict[int, int]:
    return {
        key: commit.commit_ts
        for commit in commits
        for change in commit.changes
        for key in (change.inserts.column("k").to_pylist() if change.inserts else [])
    }


def test_commits_of_many_clients_are_published_in_order_before_they_are_answered(tmp_path):
    log, pipeline, published = started(tmp_path)
    try:
        acknowledged, tried = submit_all(pipeline)
    finally:
        pipeline.close()
        log.close()
    assert len(acknowledged) == len(tried) == CLIENTS * COMMITS_PER_CLIENT
    stamps = published.timestamps()
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert keys_of(published.commits) == acknowledged


def test_a_log_gone_mid_load_loses_no_acknowledged_commit(tmp_path):
    log, pipeline, _ = started(tmp_path)
    try:
        acknowledged, tried = submit_all(pipeline, close_log_after=CLIENTS * 40, log=log)
        assert pipeline._thread.is_alive()
    finally:
        pipeline.close()
        log.close()
    assert 0 < len(acknowledged) < len(tried)
    log, pipeline, replayed = started(tmp_path)
    try:
        found = keys_of(replayed.commits)
    finally:
        pipeline.close()
        log.close()
    assert set(acknowledged) <= set(found) <= tried
    assert all(found[key] == ts for key, ts in acknowledged.items())


def failing_while(event: threading.Event, log, error: Exception, *methods: str) -> None:
    """The log's methods raise error while event is set (its disk gone, or full)."""
    for name in methods:
        real = getattr(log, name)

        def call(*args, real=real, **kwargs):
            if event.is_set():
                raise error
            return real(*args, **kwargs)

        setattr(log, name, call)


def test_a_log_readable_again_is_taken_up_without_waiting_for_a_commit(tmp_path):
    """After a failed append whose log could not be read back either, the idle TN tries again
    by itself: once the log answers, heartbeats move the published timestamp (the CNs'
    watermarks) before any commit comes, and commits are taken."""
    log, pipeline, published = started(tmp_path)
    broken = threading.Event()
    failing_while(broken, log, OSError("the disk is gone"), "append", "append_then", "read")
    try:
        first = insert(pipeline, [1])
        broken.set()
        with pytest.raises(CommitOutcomeUnknown):
            insert(pipeline, [2])
        with pytest.raises(TransactionNodeClosed, match="cannot read its log"):
            insert(pipeline, [3])
        stalled = published.newest()
        broken.clear()
        wait_until(lambda: published.newest() > stalled, 30, "a heartbeat with no commit")
        assert insert(pipeline, [4]) > first
    finally:
        pipeline.close()
        log.close()


def test_a_label_whose_commit_the_log_refused_may_be_used_again(tmp_path):
    """A labelled INSERT whose append fails is not known to be committed: its label is free
    again once the TN has read its log back (it was held until a restart); a label committed
    before stays taken."""
    log, pipeline, _ = started(tmp_path)
    refusing = threading.Event()
    failing_while(refusing, log, OSError("no space left on the device"), "append", "append_then")

    def labelled(label: str, key: int) -> int:
        rows = pa.table({"k": pa.array([key], pa.int32()), "v": [f"v{key}"]})
        claim = LoadClaim(label, "db", "t", "root", "127.0.0.1", source=INSERT)
        write = TableWrite(SCHEMA, inserts=rows)
        return pipeline.commit(WriteSet(pipeline.published_ts, (write,), claim=claim))

    try:
        labelled("kept", 1)
        refusing.set()
        with pytest.raises(CommitOutcomeUnknown):
            labelled("again", 2)
        refusing.clear()
        assert labelled("again", 3) > 0
        with pytest.raises(LabelTaken):
            labelled("kept", 4)
    finally:
        pipeline.close()
        log.close()
