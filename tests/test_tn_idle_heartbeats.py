"""The TN of `quire up` shares its process with its one CN: idle, it commits an empty transaction
every tn_idle_check_interval_millisecond (not every logtail_heartbeat_interval_millisecond, which
a CN in another process needs), and at once when a read waits for the CN's watermark or for the
next commit (a table let go is followed again at it)."""

import time
from dataclasses import replace

import pyarrow as pa
import pytest

from be.client import open_embedded
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import wait_until

RARE_IDLE_HEARTBEATS = 20_000  # milliseconds: longer than a read waits (cn_max_read_wait_ms)


@pytest.fixture
def plane(tmp_path):
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [f"storage_root={tmp_path}", f"tn_idle_check_interval_millisecond={RARE_IDLE_HEARTBEATS}"],
    )
    plane = open_embedded(config)
    plane.start()
    yield plane
    plane.close()


def table(table_id: int) -> TableSchema:
    columns = (ColumnSchema("k", pa.int32(), False),)
    partitions = (PartitionSchema(table_id * 10, tablet_ids=(table_id * 10 + 1,)),)
    return TableSchema(
        table_id, 1, columns, KeyModel.DUPLICATE, ("k",), "RANGE", (), partitions, ("k",)
    )


def test_an_idle_tn_heartbeats_when_a_read_waits_for_the_watermark(plane):
    schema = table(1)
    rows = pa.table({"k": pa.array([1, 2], pa.int32())})
    committed = plane.commit(WriteSet(plane.read_ts(), (TableWrite(schema, rows),)))
    assert plane.read_ts() == committed, "the CN has the commit once it is acknowledged"
    assert plane.tn.published_ts == committed, "no heartbeat since: the TN is idle"
    now = time.time_ns()  # timestamps follow the wall clock: above the watermark
    snapshot = plane.snapshot(schema, now, timeout=10)
    assert snapshot.column("k").to_pylist() == [1, 2]
    assert plane.read_ts() >= now > committed, "a heartbeat, asked for by the read, moved it"


def test_a_table_let_go_is_followed_again_without_waiting_for_an_idle_heartbeat(plane):
    """The CN follows a table again at the next commit the TN publishes: the read asks for one."""
    first, second = table(1), table(2)
    for schema in (first, second):
        rows = pa.table({"k": pa.array([1, 2], pa.int32())})
        plane.commit(WriteSet(plane.read_ts(), (TableWrite(schema, rows),)))
    moment = 0.001  # a table not read for this long is let go
    plane.cn.limits = replace(
        plane.cn.limits, unsubscribe_idle_seconds=moment, idle_check_seconds=moment
    )
    wait_until(lambda: plane.cn.let_go_idle() and plane.cn.table(1) is None, 5, "table 1 let go")
    snapshot = plane.snapshot(first, plane.read_ts(), timeout=10)
    assert snapshot.column("k").to_pylist() == [1, 2]
    assert plane.cn.table(1) is not None
