"""A CN's memory is bounded: the snapshots and key indexes it keeps fit one byte budget across its
tables (the least recently read go first, one too large is used once), and a table nobody reads
is let go (unsubscribed, its rows dropped) and read again correctly later, writes made meanwhile
included; a table dropped with FORCE is let go at once. In `quire up`'s process (the TN hands
its CN every commit) and in a CN process (logtail subscriptions)."""

from __future__ import annotations

import json
import random
import secrets
import threading
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from be.client import EmbeddedDataPlane, open_embedded
from be.cn.bounds import ColumnBound
from be.cn.kept_bytes import KeptBytes
from be.cn.limits import ComputeLimits
from be.cn.service import ComputeNodeService
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.logservice.limits import LogLimits
from be.logservice.service import LogService
from be.logtail.entries import ROW_ID, Commit
from be.logtail.limits import LogtailLimits
from be.service.format import (
    StatusRequest,
)
from be.storage.objects import ObjectStore
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn.service import TransactionNode, commit_limits
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import QuireProcess, free_port, run, wait_until
from tests.test_data_processes import FE_OVERRIDES, backends, fe_with_tn_and_cn
from tests.test_logtail import Consumer, CuttingProxy, servers  # noqa: F401 - the fixture
from tests.test_logtail import rows as logtail_rows

BUDGET = 48 << 10


def schema_of(table_id: int) -> TableSchema:
    return TableSchema(
        table_id,
        1,
        (ColumnSchema("k", pa.int64(), False), ColumnSchema("v", pa.string())),
        KeyModel.UNIQUE,
        ("k",),
        partitions=(PartitionSchema(table_id * 10, tablet_ids=(table_id * 10 + 1,)),),
        distribution_columns=("k",),
    )


def rows_of(schema: TableSchema, keys, tag: str = "") -> pa.Table:
    keys = list(keys)
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": [f"{tag}{key}" for key in keys]},
        schema=schema.arrow(),
    )


def pairs(table: pa.Table) -> list[tuple]:
    return sorted(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))


def log_of(path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


# -- the budget on its own -------------------------------------------------------------------


def test_the_least_recently_used_go_first_and_a_too_large_entry_is_not_kept():
    budget = KeptBytes(ComputeLimits(kept_bytes=100, max_kept_entry_bytes=60, max_kept_entries=3))
    evicted = []
    tokens = {}
    for name, size in (("a", 30), ("b", 30), ("c", 30)):
        tokens[name] = budget.token()
        assert budget.admit(tokens[name], size, lambda name=name: evicted.append(name))
    budget.touch(tokens["a"])
    tokens["d"] = budget.token()
    assert budget.admit(tokens["d"], 30, lambda: evicted.append("d"))
    assert evicted == ["b"] and budget.used_bytes == 90  # a was read since: b was older
    assert not budget.admit(budget.token(), 61, lambda: evicted.append("large"))
    assert budget.refused == 1 and budget.used_bytes == 90
    assert budget.resize(tokens["a"], 50)  # grew: the oldest (c) makes room
    assert evicted == ["b", "c"] and budget.used_bytes == 80
    assert not budget.resize(tokens["a"], 70)  # too large now: let go, no callback
    assert evicted == ["b", "c"] and budget.used_bytes == 30
    budget.release(tokens["d"])
    assert budget.used_bytes == 0 and budget.entries == 0


def test_the_limits_check_their_relations():
    with pytest.raises(AssertionError, match="max_kept_entry_bytes <= kept_bytes"):
        ComputeLimits(kept_bytes=10, max_kept_entry_bytes=11)
    with pytest.raises(AssertionError, match="idle_check_seconds <= unsubscribe_idle_seconds"):
        ComputeLimits(unsubscribe_idle_seconds=1, idle_check_seconds=2)


def test_a_subscription_given_up_before_its_answer_is_not_taken_for_the_next(servers):  # noqa: F811
    """subscribe, unsubscribe while the answer is on its way, subscribe again: the first answer
    is not the second's (the TN skipped the table's pushes in between: taking it would lose
    them)."""
    start, consumers = servers
    server = start()
    consumer = Consumer(server)
    consumers.append(consumer)
    ts = 0
    for table_id in range(1, 21):
        ts += 1
        server.publish(Commit(ts, (logtail_rows(table_id, 1, 1),)))
        consumer.subscriber.subscribe(table_id)
        consumer.subscriber.unsubscribe(table_id, timeout=10)
        ts += 1
        server.publish(Commit(ts, (logtail_rows(table_id, 2, 1),)))
        consumer.subscriber.subscribe(table_id)
        assert consumer.subscriber.wait_active(table_id, 10)
        ts += 1
        server.publish(Commit(ts))
        consumer.wait_watermark(ts)
        assert ts - 1 in consumer.timestamps(table_id), table_id


def test_an_unsubscribed_table_gets_nothing_and_a_cut_stream_does_not_bring_it_back(servers):  # noqa: F811
    start, consumers = servers
    limits = LogtailLimits(reconnect_min_delay=0.005, reconnect_max_delay=0.05)
    server = start(limits)
    proxy = CuttingProxy(server.port)
    consumer = Consumer(proxy, tables=[1, 2], limits=limits)
    consumers.append(consumer)
    assert consumer.subscriber.wait_active(1, 10) and consumer.subscriber.wait_active(2, 10)
    server.publish(Commit(1, (logtail_rows(1, 1, 1), logtail_rows(2, 1, 1))))
    consumer.wait_watermark(1)
    consumer.subscriber.unsubscribe(1, timeout=10)
    server.publish(Commit(2, (logtail_rows(1, 2, 1), logtail_rows(2, 2, 1))))
    consumer.wait_watermark(2)
    connects = consumer.subscriber.connects
    proxy.cut()  # the reconnect resubscribes table 2 only
    wait_until(lambda: consumer.subscriber.connects > connects, 10, "a new stream")
    server.publish(Commit(3, (logtail_rows(1, 3, 1), logtail_rows(2, 3, 1))))
    consumer.wait_watermark(3)
    assert consumer.timestamps(1) == [1] and consumer.timestamps(2) == [1, 2, 3]
    consumer.subscriber.subscribe(1)  # again, from the start: every commit of it
    assert consumer.subscriber.wait_active(1, 10)
    assert consumer.timestamps(1) == [1, 1, 2, 3]
    proxy.close()


# -- quire up's CN ---------------------------------------------------------------------------


def plane_of(tmp_path, *settings: str):
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [
            f"storage_root={tmp_path}",
            "flush_interval_second=3600",
            f"cn_snapshot_cache_bytes={BUDGET}",
            *settings,
        ],
    )
    plane = open_embedded(config)
    plane.start()
    return plane


def commit(plane, schema, inserts=None, deletes=None) -> int:
    write = TableWrite(schema, inserts=inserts, deletes=deletes)
    ts = plane.commit(WriteSet(plane.read_ts(), (write,)))
    wait_until(lambda: plane.read_ts() >= ts, 10, "the CN has the commit")
    return ts


def test_many_tables_read_in_turn_stay_within_the_budget(tmp_path):
    plane = plane_of(tmp_path)
    try:
        schemas = [schema_of(table_id) for table_id in range(1, 25)]
        expected = {}
        for number, schema in enumerate(schemas):
            count = 40 if number % 6 else 4000  # every sixth: a snapshot larger than the budget
            expected[schema.table_id] = [(k, f"{number}.{k}") for k in range(count)]
            commit(plane, schema, rows_of(schema, range(count), f"{number}."))
        for _ in range(3):
            for schema in schemas:
                ts = plane.read_ts()
                rows = expected[schema.table_id]
                assert pairs(plane.snapshot(schema, ts, 10)) == rows
                point = (ColumnBound("k", 3, 3),)
                assert pairs(plane.snapshot(schema, ts, 10, bounds=point)) == [rows[3]]
                stats = plane.cn_stats()
                assert stats["kept_bytes"] <= BUDGET, stats
        stats = plane.cn_stats()
        assert stats["kept_evicted"] > 0 and stats["kept_refused"] > 0, stats
        assert 0 < stats["kept_bytes"] <= BUDGET
        # A change lets the table's kept snapshots go: the budget shrinks with them.
        before = plane.cn_stats()["kept_bytes"]
        last = schemas[-1]
        commit(plane, last, rows_of(last, [10_000], "new"))
        assert plane.cn_stats()["kept_bytes"] < before
        assert (10_000, "new10000") in pairs(plane.snapshot(last, plane.read_ts(), 10))
    finally:
        plane.close()


def test_an_idle_table_is_let_go_and_read_again_with_the_writes_made_meanwhile(tmp_path):
    plane = plane_of(tmp_path, "cn_unsubscribe_idle_second=2", "flush_rows=50")
    try:
        idle, busy = schema_of(1), schema_of(2)
        commit(plane, idle, rows_of(idle, range(100), "a"))  # flushed: objects and memory
        commit(plane, busy, rows_of(busy, range(5)))
        snapshot = plane.snapshot(idle, plane.read_ts(), 10, row_ids=True)
        assert len(snapshot) == 100
        with plane.cn.reading(busy.table_id, 10):  # a read under way: never let go
            wait_until(lambda: plane.cn.table(1) is None, 20, "the idle table let go")
            assert plane.cn.table(2) is not None
        # Written while let go: the CN ignores it, the TN keeps it (flushed in part).
        gone = snapshot.filter(pc.less(snapshot.column("k"), 10))
        commit(plane, idle, deletes=gone.select([ROW_ID, "k"]))
        commit(plane, idle, rows_of(idle, range(100, 160), "b"))
        commit(plane, idle, rows_of(idle, [50], "c"))  # a UNIQUE KEY replace
        assert plane.cn.table(1) is None
        expected = sorted(
            [(k, f"a{k}") for k in range(10, 100) if k != 50]
            + [(50, "c50")]
            + [(k, f"b{k}") for k in range(100, 160)]
        )
        assert pairs(plane.snapshot(idle, plane.read_ts(), 10)) == expected
        point = (ColumnBound("k", 50, 50),)
        assert pairs(plane.snapshot(idle, plane.read_ts(), 10, bounds=point)) == [(50, "c50")]
        assert plane.cn.table(1) is not None
        assert plane.cn_stats()["tables_let_go"] >= 1
    finally:
        plane.close()


class RacingLoad:
    """Inserts into one table in a thread of its own, and reads of it (whole, and one key) at
    random moments from others, while the CN lets the table go and follows it again between
    reads: every read sees exactly the rows committed at or before its timestamp."""

    def __init__(self, schema: TableSchema, commit, read, read_ts):
        self.schema, self.commit, self.read, self.read_ts = schema, commit, read, read_ts
        self.committed: list[tuple[int, int]] = [(0, 0)]  # (commit ts, rows by then)
        self.reads = 0
        self.failures: list[str] = []
        self.stop = threading.Event()

    def write(self) -> None:
        rows = 0
        while not self.stop.wait(0.02):
            ts = self.commit(rows_of(self.schema, range(rows, rows + 5)))
            rows += 5
            self.committed.append((ts, rows))

    def check(self, seed: int) -> None:
        chooser = random.Random(seed)
        while not self.stop.wait(chooser.uniform(0, 0.12)):
            ts = self.read_ts()
            expected = max(rows for stamp, rows in self.committed if stamp <= ts)
            bounds = (ColumnBound("k", 2, 2),) if chooser.random() < 0.5 else ()
            try:
                found = self.read(ts, bounds)
            except Exception as error:
                self.failures.append(f"read at {ts}: {error!r}")
                continue
            # A commit may be in before the writer noted it: at least what it noted, in order.
            keys = sorted(found.column("k").to_pylist())
            if bounds:
                right = keys == [2] if expected > 2 else keys in ([], [2])
            else:
                right = keys == list(range(len(keys))) and len(keys) >= expected
            if not right:
                self.failures.append(f"read at {ts} {bounds}: {keys[:5]}..., {expected} expected")
            self.reads += 1

    def run(self, seconds: float) -> None:
        threads = [threading.Thread(target=self.write)]
        threads += [threading.Thread(target=self.check, args=(seed,)) for seed in range(3)]
        for thread in threads:
            thread.start()
        self.stop.wait(seconds)
        self.stop.set()
        for thread in threads:
            thread.join()
        assert not self.failures, self.failures[:5]


def test_reads_racing_quire_ups_let_go_see_every_row(tmp_path):
    config = Config.load(BE_KEYS, [DEFAULT_BE_CONF], [f"storage_root={tmp_path}", "flush_rows=40"])
    limits = replace(
        ComputeLimits.from_config(config), unsubscribe_idle_seconds=0.05, idle_check_seconds=0.01
    )
    log_limits = LogLimits.from_config(config)
    # an idle TN heartbeat every 5 ms: the CN looks for idle tables as often as that
    heartbeats = replace(commit_limits(config, log_limits), idle_check_seconds=0.005)
    plane = EmbeddedDataPlane(
        lambda: LogService.open(tmp_path, log_limits),
        heartbeats,
        ObjectStore.from_config(config),
        limits,
    )
    plane.start()
    try:
        schema = schema_of(1)

        def read(ts, bounds):
            if bounds:
                found = plane.indexed_snapshot(schema, ts, False, bounds)
                if found is not None:
                    return found
            return plane.snapshot(schema, ts, 10, bounds=bounds)

        load = RacingLoad(
            schema,
            lambda rows: plane.commit(WriteSet(plane.read_ts(), (TableWrite(schema, rows),))),
            read,
            plane.read_ts,
        )
        load.run(3)
        assert load.reads > 20 and plane.cn_stats()["tables_let_go"] > 3, plane.cn_stats()
    finally:
        plane.close()


def test_reads_racing_a_cns_unsubscribes_see_every_row(tmp_path):
    logtail_port = free_port()
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [
            f"storage_root={tmp_path}",
            "flush_rows=40",
            "tn_checkpoint_interval_second=1",
            f"logtail_port={logtail_port}",
            f"tn_logtail_address=127.0.0.1:{logtail_port}",
            f"tn_service_port={free_port()}",
            "webserver_port=0",
            f"cn_service_port={free_port()}",
        ],
    )
    token = secrets.token_hex(16)
    tn = TransactionNode(config, token)
    cn = ComputeNodeService(config, token)
    cn.node.limits = replace(cn.node.limits, unsubscribe_idle_seconds=0.05, idle_check_seconds=0.01)
    tn.start()
    try:
        cn.start()
        schema = schema_of(1)

        def commit(rows) -> int:
            write = WriteSet(tn.pipeline.last_ts, (TableWrite(schema, rows),))
            return tn.pipeline.commit(write)

        load = RacingLoad(
            schema,
            commit,
            lambda ts, bounds: cn.snapshot(schema, ts, False, 10, bounds),
            lambda: tn.pipeline.published_ts,
        )
        load.run(4)
        assert load.reads > 20 and cn.node.stats()["tables_let_go"] > 3, cn.node.stats()
    finally:
        cn.close()
        tn.close()


# -- a CN process ----------------------------------------------------------------------------


IDLE_SECONDS = 8  # longer than the FE takes to tell a DROP ... FORCE (two checks a second apart)


@pytest.fixture
def processes(tmp_path):
    fe = {**FE_OVERRIDES, "catalog_trash_check_interval_second": 1}
    cn = {"cn_snapshot_cache_bytes": BUDGET, "cn_unsubscribe_idle_second": IDLE_SECONDS}
    with fe_with_tn_and_cn(tmp_path, {"flush_rows": 50}, cn, fe) as nodes:
        yield nodes


def test_a_cn_process_unsubscribes_idle_and_gone_tables(processes):
    fe, tn, cn = processes
    cn_client = cn.client()
    connection = fe.connect()
    try:

        def status():
            return cn_client.call(StatusRequest(), timeout=10)

        def shown() -> dict:  # SHOW BACKENDS' Status column: the CN's figures, as of a heartbeat
            return json.loads(backends(fe)[cn.port]["Status"])

        def unsubscribed(why: str) -> int:
            return log_of(cn.workdir / "log" / "cn.log").count(f"({why})")

        names = [f"d.t{number}" for number in range(6)]
        run(connection, "CREATE DATABASE d")
        for number, name in enumerate(names):
            run(connection, f"CREATE TABLE {name} (k INT, v INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
            values = ", ".join(f"({k}, {number})" for k in range(40 * (number + 1)))
            run(connection, f"INSERT INTO {name} VALUES {values}")
        for number, name in enumerate(names):
            assert run(connection, f"SELECT count(*), sum(v) FROM {name}") == (
                (40 * (number + 1), 40 * (number + 1) * number),
            )
            assert dict(status().stats)["kept_bytes"] <= BUDGET
        assert len(status().tables) >= 1
        wait_until(
            lambda: not status().tables and dict(status().stats)["tables"] == 0,
            60,
            "every idle table unsubscribed and dropped",
        )
        stats = dict(status().stats)
        assert stats["tables"] == 0 and stats["kept_bytes"] == 0 and stats["memory_bytes"] == 0
        assert stats["tables_let_go"] == len(names) and unsubscribed("idle") >= 1
        wait_until(lambda: shown().get("tables_let_go") == len(names), 20, "SHOW BACKENDS")
        assert shown()["kept_bytes"] == 0 and shown()["watermark"] > 0
        # Written while unsubscribed (flushed too), then read again: subscribed from the TN.
        run(connection, "INSERT INTO d.t0 VALUES " + ", ".join(f"({k}, 7)" for k in range(100)))
        run(connection, "DELETE FROM d.t0 WHERE k < 10")
        assert run(connection, "SELECT count(*), sum(v) FROM d.t0") == ((120, 630),)
        assert len(status().tables) == 1
        # DROP ... FORCE: the FE tells the CN, as it tells the TN, and the CN unsubscribes.
        run(connection, "DROP TABLE d.t0 FORCE")
        wait_until(lambda: status().tables == (), 30, "the dropped table unsubscribed")
        assert unsubscribed("gone for good") == 1
    finally:
        connection.close()
        cn_client.close()


# -- DROP TABLE ... FORCE through the front --------------------------------------------------


def cn_figures(quire) -> dict[str, float]:
    """The quire_cn_* gauges of quire up's /metrics."""
    response = requests.get(f"http://127.0.0.1:{quire.http_port}/metrics", timeout=10)
    assert response.status_code == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if sample.name.startswith("quire_cn_")
    }


def test_a_table_dropped_with_force_is_let_go(tmp_path):
    quire = QuireProcess(
        tmp_path,
        overrides={"catalog_trash_check_interval_second": 1, "cn_unsubscribe_idle_second": 600},
    ).start()
    try:
        connection = quire.connect()
        run(connection, "CREATE DATABASE d")
        run(connection, "USE d")
        for name in ("kept", "dropped"):
            run(connection, f"CREATE TABLE {name} (k INT, v INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
            run(connection, f"INSERT INTO {name} VALUES (1, 1), (2, 2)")
            assert run(connection, f"SELECT count(*) FROM {name}") == ((2,),)
        assert cn_figures(quire)["quire_cn_tables_let_go"] == 0
        run(connection, "DROP TABLE dropped FORCE")
        wait_until(
            lambda: "are gone for good: let go" in log_of(quire.log_file), 30, "the table let go"
        )
        figures = cn_figures(quire)
        assert figures["quire_cn_tables_let_go"] >= 1
        assert 0 < figures["quire_cn_kept_bytes"] <= 256 << 20  # the kept table's snapshot
        assert run(connection, "SELECT count(*) FROM kept") == ((2,),)
        connection.close()
    finally:
        quire.stop()
