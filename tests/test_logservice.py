"""The TN's log: appends and reads, restarts and kill -9, truncation, the timestamp oracle, and
three replicas that lose their leader.

The kill -9 test starts this file as a worker process that appends from several threads and
reports each acknowledged LSN on stdout.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.logservice.entries import decode_records
from be.logservice.errors import (
    BadRequest,
    LogClosed,
    LogCorrupted,
    LogUnavailable,
    LsnTruncated,
    NotLeader,
    RecordTooLarge,
)
from be.logservice.group import GroupAppender
from be.logservice.limits import LogLimits
from be.logservice.lsn import raft_index_of
from be.logservice.service import STATE_FILE, WAL_FOLDER, LogService
from be.logservice.tso import ReservationDue, TimestampOracle
from metadata.journal.limits import JournalLimits
from metadata.journal.log import RocksJournal

REPO_ROOT = Path(__file__).resolve().parents[1]
FAST = LogLimits(truncate_interval=0.1, truncate_keep_entries=0, append_timeout=10.0)


def content(writer: int, number: int, size: int = 100) -> bytes:
    seed = hashlib.sha256(b"%d/%d" % (writer, number)).digest()
    return (seed * (size // len(seed) + 1))[:size]


@pytest.fixture
def opened():
    services: list[LogService] = []

    def open_log(folder: Path, limits: LogLimits = FAST, **options) -> LogService:
        services.append(LogService.open(folder, limits, **options))
        return services[-1]

    yield open_log
    for service in services:
        service.close()


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
    return result


def test_append_and_read_round_trip_with_max_bytes_edges(tmp_path, opened):
    log = opened(tmp_path)
    assert log.last_lsn() == 0 and log.truncated_lsn() == 0 and log.read(0, 100) == []
    sizes = [10, 20, 30]
    group = log.append([b"a" * size for size in sizes])
    assert group == [group[0], group[0] + 1, group[0] + 2]  # contiguous within one append
    [single] = log.append([b"b" * 50])
    assert single > group[-1] and log.last_lsn() == single
    everything = [(lsn, b"a" * size) for lsn, size in zip(group, sizes, strict=True)]
    everything.append((single, b"b" * 50))
    assert log.read(0, 1000) == everything
    assert log.read(group[0], 10) == everything[:1]  # exactly max_bytes
    assert log.read(group[0], 29) == everything[:1]  # the next one would cross it
    assert log.read(group[0], 30) == everything[:2]
    assert log.read(group[0], 1) == everything[:1]  # one record at least, however large
    assert log.read(group[1], 1000) == everything[1:]  # from the middle of a group
    assert log.read(group[2] + 1, 1000) == everything[3:]  # between two appends
    assert log.read(single, 1) == everything[3:]
    assert log.read(single + 1, 1000) == []
    for bad in (0, -1, log.limits.max_read_bytes + 1):
        with pytest.raises(BadRequest):
            log.read(0, bad)
    with pytest.raises(RecordTooLarge):
        log.append([])
    with pytest.raises(RecordTooLarge):
        log.append([b"x" * (log.limits.max_record_bytes + 1)])
    with pytest.raises(RecordTooLarge):
        log.append([b"x"] * (log.limits.max_records_per_append + 1))
    large = log.append([b"x" * log.limits.max_record_bytes, b""])
    assert log.read(large[0], 1) == [(large[0], b"x" * log.limits.max_record_bytes)]
    assert log.read(large[1], 1) == [(large[1], b"")]
    log.close()
    with pytest.raises(LogClosed):
        log.append([b"late"])
    with pytest.raises(LogClosed):
        log.read(0, 10)


def test_group_appends_from_many_threads_read_back_exactly(tmp_path, opened):
    log = opened(tmp_path)
    writers, appends = 16, 40
    acknowledged: dict[int, bytes] = {}
    lock = threading.Lock()
    errors = []

    def writer(number: int) -> None:
        try:
            for index in range(appends):
                records = [content(number, index * 4 + k) for k in range(1 + index % 3)]
                lsns = log.append(records)
                assert lsns == list(range(lsns[0], lsns[0] + len(records)))
                with lock:
                    assert not set(lsns) & set(acknowledged)
                    acknowledged.update(zip(lsns, records, strict=True))
        except Exception as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(acknowledged) == writers * sum(1 + i % 3 for i in range(appends))
    read, lsn = [], 0
    while batch := log.read(lsn, 4096):
        read.extend(batch)
        lsn = batch[-1][0] + 1
    assert read == sorted(acknowledged.items())
    assert log.last_lsn() == max(acknowledged)


def test_a_restart_keeps_every_record(tmp_path, opened):
    log = opened(tmp_path)
    lsns = [lsn for n in range(50) for lsn in log.append([content(0, n), content(1, n)])]
    before = log.read(0, 1 << 20)
    log.close()
    log = opened(tmp_path)
    assert log.read(0, 1 << 20) == before and len(before) == len(lsns) == 100
    assert log.last_lsn() == lsns[-1]
    assert log.append([b"after"])[0] > lsns[-1]
    assert (tmp_path / WAL_FOLDER).is_dir()


def test_one_folder_is_opened_by_one_log_at_a_time(tmp_path, opened):
    opened(tmp_path)
    with pytest.raises(LogUnavailable, match="cannot open the log"):
        LogService.open(tmp_path, FAST)


def test_truncate_records_the_point_and_the_worker_drops_entries_below_it(tmp_path, opened):
    log = opened(tmp_path, LogLimits(truncate_interval=3600, truncate_keep_entries=0))
    lsns = [log.append([content(0, n)])[0] for n in range(200)]
    point = lsns[150]
    with pytest.raises(BadRequest):
        log.truncate(log.last_lsn() + 2)
    log.truncate(point)
    assert log.truncated_lsn() == point
    assert len(log.read(0, 1 << 20)) == 200  # only recorded: nothing dropped yet
    log.truncate(lsns[10])  # an older point never moves it back
    assert log.truncated_lsn() == point

    first_kept = log.truncate_physically()
    assert first_kept == raft_index_of(point)  # up to the truncate point, never past it
    assert log.first_kept_lsn() == point
    with pytest.raises(LsnTruncated) as refused:
        log.read(lsns[149], 1 << 20)
    assert refused.value.first_kept_lsn == point
    with pytest.raises(LsnTruncated):
        log.read(0, 1 << 20)
    assert [lsn for lsn, _ in log.read(point, 1 << 20)] == lsns[150:]
    log.close()

    journal = RocksJournal(str(tmp_path / WAL_FOLDER))  # gone from the disk
    try:
        assert journal.first_index == raft_index_of(point)
    finally:
        journal.close()
    log = opened(tmp_path)  # a restart reads from the truncate point, the TN's checkpoint
    assert log.truncated_lsn() == point
    assert [record for _, record in log.read(log.truncated_lsn(), 1 << 20)] == [
        content(0, n) for n in range(150, 200)
    ]
    assert log.append([b"after"])[0] > lsns[-1]


def test_the_truncation_worker_keeps_entries_a_lagging_follower_may_need(tmp_path, opened):
    limits = LogLimits(truncate_interval=0.05, truncate_keep_entries=30)
    log = opened(tmp_path, limits)
    lsns = [log.append([content(0, n)])[0] for n in range(100)]
    log.truncate(lsns[-1])
    last_index = raft_index_of(lsns[-1])
    wait_until(
        lambda: log.first_kept_lsn() >= (last_index - 30) << 16, 10, "the worker to truncate"
    )
    margin_kept = last_index + 1 - 30 + 1  # the truncate entry is the last one
    assert log.truncate_physically() == margin_kept  # another round: not past the margin
    assert log.first_kept_lsn() == margin_kept << 16
    assert log.read(lsns[-1], 100) == [(lsns[-1], content(0, 99))]


def test_a_damaged_state_file_is_refused_with_a_clear_error(tmp_path, opened):
    log = opened(tmp_path, LogLimits(truncate_interval=3600, truncate_keep_entries=0))
    lsns = [log.append([content(0, n)])[0] for n in range(20)]
    log.truncate(lsns[10])
    log.truncate_physically()
    log.close()
    state_file = tmp_path / STATE_FILE
    good = state_file.read_bytes()
    state_file.write_bytes(good[: len(good) // 2])
    with pytest.raises(LogCorrupted, match="state file"):
        LogService.open(tmp_path, FAST)
    state_file.unlink()  # the entries it covers are gone: replaying from the start cannot work
    with pytest.raises(LogUnavailable, match="wal.state is missing"):
        LogService.open(tmp_path, FAST)
    state_file.write_bytes(good)
    assert [lsn for lsn, _ in opened(tmp_path).read(lsns[10], 1 << 20)] == lsns[10:]


def test_a_state_file_that_cannot_be_written_postpones_truncation_only(tmp_path, opened):
    log = opened(tmp_path, LogLimits(truncate_interval=3600, truncate_keep_entries=0))
    lsns = [log.append([content(0, n)])[0] for n in range(20)]
    log.truncate(lsns[10])
    (tmp_path / (STATE_FILE + ".tmp")).mkdir()  # where the state file is written first
    with pytest.raises(LogUnavailable, match="cannot save the log's state"):
        log.truncate_physically()
    assert log.first_kept_lsn() == 0  # nothing dropped without a saved state
    more = log.append([b"still appending"])
    assert len(log.read(0, 1 << 20)) == 21
    (tmp_path / (STATE_FILE + ".tmp")).rmdir()
    assert log.truncate_physically() == raft_index_of(lsns[10])
    log.close()
    log = opened(tmp_path)
    assert log.read(lsns[10], 1 << 20)[-1] == (more[0], b"still appending")


def test_timestamps_increase_under_threads_and_across_restarts(tmp_path, opened):
    limits = LogLimits(tso_window_ns=2_000_000)  # a reservation every 2 ms: many of them
    log = opened(tmp_path, limits)
    oracle = TimestampOracle(log)
    threads, calls = 8, 1500
    taken: list[list[tuple[int, int]]] = [[] for _ in range(threads)]

    def take(number: int) -> None:
        for call in range(calls):
            count = 1 + call % 3
            before = time.time_ns()
            first = oracle.next(count)
            assert first >= before  # at or above the wall clock
            taken[number].append((first, count))

    workers = [threading.Thread(target=take, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for ranges in taken:
        assert all(a[0] + a[1] <= b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    stamps = [first + k for ranges in taken for first, count in ranges for k in range(count)]
    assert len(stamps) == len(set(stamps)) == threads * sum(1 + c % 3 for c in range(calls))
    assert log.reserved_timestamp() >= max(stamps)
    reserved = log.reserved_timestamp()
    with pytest.raises(BadRequest):
        oracle.next(0)
    log.close()

    log = opened(tmp_path, LogLimits(tso_window_ns=3600 * 10**9))  # an hour ahead of the clock
    assert TimestampOracle(log).next() > reserved
    far = log.reserved_timestamp()
    log.close()
    log = opened(tmp_path)  # restarted: above the reservation, though the clock is far below
    assert TimestampOracle(log).next() > far > time.time_ns() + 3000 * 10**9


def test_timestamps_reserved_ahead_still_follow_the_wall_clock(tmp_path, opened):
    """A reservation grown before it runs out (so that a commit on the FE's thread never waits
    for the log) keeps timestamps at the wall clock, not at the end of the one it replaces;
    without room, a caller that may not wait is told so rather than kept waiting."""
    window = 10 * 10**9
    log = opened(tmp_path, LogLimits(tso_window_ns=window))
    now = [time.time_ns()]
    oracle = TimestampOracle(log, clock=lambda: now[0])
    with pytest.raises(ReservationDue):
        oracle.next(may_reserve=False)  # nothing reserved yet in this term
    oracle.reserve_ahead()
    first = log.reserved_timestamp()
    assert oracle.next(may_reserve=False) == now[0]
    now[0] += window // 4
    oracle.reserve_ahead()  # more than half a window left: no log write
    assert log.reserved_timestamp() == first
    now[0] += window // 2
    oracle.reserve_ahead()  # less than half left: grown
    assert log.reserved_timestamp() > first
    assert oracle.next(may_reserve=False) == now[0]  # not first + 1
    now[0] += window * 2
    with pytest.raises(ReservationDue):
        oracle.next(may_reserve=False)
    assert oracle.next() == now[0]
    log.close()


# kill -9 in the middle of appends.


def append_until_killed(folder: str) -> None:
    """The worker process: appends from 4 threads, prints each acknowledged LSN."""
    log = LogService.open(Path(folder), FAST)
    print_lock = threading.Lock()

    def writer(number: int) -> None:
        for index in range(1_000_000):
            records = [content(number, index * 2 + k, 300) for k in range(1 + index % 2)]
            lsns = log.append(records)
            with print_lock:
                for k, lsn in enumerate(lsns):
                    print(lsn, number, index * 2 + k, flush=True)

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    threads[0].join()


def test_kill_9_in_the_middle_of_appends_loses_nothing_acknowledged(tmp_path, opened):
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    worker = subprocess.Popen(
        [sys.executable, __file__, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
        cwd=REPO_ROOT,
    )
    acknowledged: dict[int, bytes] = {}
    try:
        deadline = time.monotonic() + 60
        while len(acknowledged) < 600:
            line = worker.stdout.readline()
            assert line and time.monotonic() < deadline, "the worker stopped appending"
            lsn, writer, number = map(int, line.split())
            acknowledged[lsn] = content(writer, number, 300)
        worker.send_signal(signal.SIGKILL)
        for line in worker.stdout:  # acknowledged before the kill, still in the pipe
            fields = line.split()
            if len(fields) == 3:
                lsn, writer, number = map(int, fields)
                acknowledged[lsn] = content(writer, number, 300)
    finally:
        worker.kill()
        worker.wait(30)
    log = opened(tmp_path)
    read = dict(log.read(0, 64 << 20))
    assert {lsn: read.get(lsn) for lsn in acknowledged} == acknowledged
    assert log.append([b"after"])[0] > max(read)


# Three replicas.


def replica_limits() -> LogLimits:
    journal = JournalLimits(
        max_payload_bytes=(4 << 20) + (64 << 10),
        raft_min_timeout=0.6,
        raft_max_timeout=1.2,
        leader_fallback_timeout=2.0,
        connection_timeout=1.5,
        keepalive_period=0.5,
    )
    return LogLimits(truncate_interval=0.2, truncate_keep_entries=0, journal=journal)


def agreed_leader(replicas: list[LogService], timeout: float = 20) -> LogService:
    def leader():
        leaders = [replica for replica in replicas if replica.is_leader()]
        if len(leaders) != 1:
            return None
        named = {replica.leader() for replica in replicas}
        return leaders[0] if named == {leaders[0].self_address} else None

    return wait_until(leader, timeout, "the replicas to agree on a leader")


def test_three_replicas_keep_every_acknowledged_record_when_the_leader_goes(tmp_path, opened):
    from tests.harness import free_address

    addresses = [free_address() for _ in range(3)]
    token = b"the cluster's token"
    replicas = [
        opened(
            tmp_path / f"replica-{n}",
            replica_limits(),
            self_address=a,
            peers=addresses,
            token=token,
        )
        for n, a in enumerate(addresses)
    ]
    for replica in replicas:
        assert replica.wait_ready(20)
    leader = agreed_leader(replicas)
    follower = next(replica for replica in replicas if replica is not leader)
    with pytest.raises(NotLeader) as refused:
        follower.append([b"to a follower"])
    assert refused.value.leader == leader.self_address

    stranger = opened(
        tmp_path / "stranger",
        replica_limits(),
        self_address=free_address(),
        peers=addresses,
        token=b"a guess",
    )
    acknowledged = {}
    for n in range(100):
        records = [content(0, 2 * n), content(0, 2 * n + 1)]
        acknowledged.update(zip(leader.append(records), records, strict=True))
    stamp = TimestampOracle(leader).next()
    assert not stranger.wait_ready(1.0) and stranger.last_lsn() == 0
    assert agreed_leader(replicas) is leader  # the stranger unseated no one

    point = sorted(acknowledged)[100]
    leader.truncate(point)  # every replica's worker drops the entries below it, on its own
    for replica in replicas:
        wait_until(lambda r=replica: r.first_kept_lsn() == point, 20, "the replicas to truncate")
    kept = {lsn: record for lsn, record in acknowledged.items() if lsn >= point}

    leader.close()
    survivors = [replica for replica in replicas if replica is not leader]
    new_leader = agreed_leader(survivors)
    assert new_leader.wait_ready(20)
    assert new_leader.truncated_lsn() == point
    assert dict(new_leader.read(point, 64 << 20)) == kept
    with pytest.raises(LsnTruncated):
        new_leader.read(0, 64 << 20)
    acknowledged = kept
    assert TimestampOracle(new_leader).next() > stamp
    [after] = new_leader.append([b"after the failover"])
    assert after > max(acknowledged)
    others = [replica for replica in survivors if replica is not new_leader]
    wait_until(lambda: others[0].last_lsn() == after, 10, "the follower to apply it")
    assert dict(others[0].read(point, 64 << 20)) == {**kept, after: b"after the failover"}

    number = addresses.index(leader.self_address)  # the old leader comes back and catches up
    rejoined = opened(
        tmp_path / f"replica-{number}",
        replica_limits(),
        self_address=leader.self_address,
        peers=addresses,
        token=token,
    )
    wait_until(lambda: rejoined.last_lsn() == after, 20, "the old leader to catch up")
    assert rejoined.truncated_lsn() == point and not rejoined.is_leader()
    assert dict(rejoined.read(point, 64 << 20)) == {**kept, after: b"after the failover"}

    others[0].close()  # one replica of three left: no quorum, and a clear refusal in time
    rejoined.close()
    started = time.monotonic()
    with pytest.raises(LogUnavailable):
        new_leader.append([b"without a quorum"], timeout=2.0)
    assert time.monotonic() - started < 5
    assert dict(new_leader.read(point, 64 << 20))[after] == b"after the failover"


def test_appends_wait_in_bounded_groups_and_keep_their_order():
    submitted = []
    groups = GroupAppender(
        lambda payload, settle: submitted.append((decode_records(payload), settle)),
        max_records=3,
        max_bytes=100,
        max_groups_in_flight=1,
        max_groups_waiting=1,
    )
    assert groups.append([b"a"], timeout=0.01) is None  # in flight, not settled yet
    assert groups.append([b"b", b"c"], timeout=0.01) is None  # waits in the open group
    with pytest.raises(LogUnavailable, match="retry later"):
        groups.append([b"d", b"e"], timeout=0.01)  # fits no group; none more may wait
    assert [records for records, _ in submitted] == [[b"a"]]
    submitted[0][1](7 << 16, None)
    assert [records for records, _ in submitted] == [[b"a"], [b"b", b"c"]]
    outcome = []

    def append_f() -> None:
        try:
            outcome.append(groups.append([b"f"], 10))
        except LogUnavailable as error:
            outcome.append(error)

    waiter = threading.Thread(target=append_f)
    waiter.start()
    wait_until(lambda: groups._waiting, 10, "the next group to open")
    submitted[1][1](9 << 16, None)
    wait_until(lambda: len(submitted) == 3, 10, "the next group to go")
    assert submitted[2][0] == [b"f"]
    submitted[2][1](None, LogUnavailable("no quorum"))
    waiter.join()
    assert [str(error) for error in outcome] == ["no quorum"]


def test_limits_come_from_be_conf():
    config = Config.load(BE_KEYS, [DEFAULT_BE_CONF])
    limits = LogLimits.from_config(config)
    assert limits.max_record_bytes == config["logservice_max_record_bytes"]
    assert limits.truncate_interval == config["logservice_truncate_interval_second"]
    assert limits.tso_window_ns == config["tso_window_millisecond"] * 1_000_000
    with pytest.raises(ValueError, match="max_record_bytes"):
        LogLimits(max_record_bytes=0)


if __name__ == "__main__":
    append_until_killed(sys.argv[1])
