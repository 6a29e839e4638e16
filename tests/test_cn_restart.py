"""kill -9 of a CN process: it comes back, subscribes from the TN's checkpoint (objects'
metadata, then the logtail after it) and catches up; every acknowledged row is read once, also
rows committed while it was down and while the TN checkpointed under it."""

from __future__ import annotations

import secrets
import threading

import pyarrow as pa
import pytest

from be.cn.table_state import TableState
from be.logtail.entries import ROW_ID, TableChanges
from be.service.format import CommitRequest, ReadTsRequest, SnapshotRequest
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn import checkpoint
from be.tn.errors import CheckpointCorrupt
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import free_port, wait_until
from tests.test_data_processes import DataNode, tn_and_cn

TABLE = TableSchema(
    41,
    1,
    (ColumnSchema("id", pa.int64(), False), ColumnSchema("c", pa.string())),
    KeyModel.DUPLICATE,
    ("id",),
    partitions=(PartitionSchema(42, tablet_ids=(43, 44)),),
    distribution_columns=("id",),
)
TINY = {
    "flush_rows": 200,
    "flush_interval_second": 1,
    "tn_checkpoint_interval_second": 1,
    "logtail_heartbeat_interval_millisecond": 5,
}


class Loader:
    """Commits batches of new ids straight to the TN and remembers the acknowledged ones."""

    def __init__(self, tn: DataNode):
        self.client = tn.client()
        self.next_id = 0
        self.acknowledged: list[int] = []
        self.deleted: set[int] = set()

    def insert(self, count: int) -> int:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        rows = pa.table(
            {"id": pa.array(ids, pa.int64()), "c": [f"row {i}" for i in ids]},
            schema=TABLE.arrow(),
        )
        ts = self.client.call(
            CommitRequest(WriteSet(0, (TableWrite(TABLE, inserts=rows),))), timeout=30
        ).commit_ts
        self.acknowledged.extend(ids)
        return ts

    def delete(self, snapshot: pa.Table, snapshot_ts: int, predicate) -> None:
        chosen = [
            (row_id, key)
            for row_id, key in zip(
                snapshot.column(ROW_ID).to_pylist(), snapshot.column("id").to_pylist(), strict=True
            )
            if predicate(key)
        ]
        deletes = pa.table(
            {
                ROW_ID: pa.array([row_id for row_id, _ in chosen], pa.int64()),
                "id": pa.array([key for _, key in chosen], pa.int64()),
            }
        )
        self.client.call(
            CommitRequest(WriteSet(snapshot_ts, (TableWrite(TABLE, deletes=deletes),))),
            timeout=30,
        )
        self.deleted.update(key for _, key in chosen)

    def expected(self) -> list[int]:
        return sorted(set(self.acknowledged) - self.deleted)

    def latest_ts(self) -> int:
        return self.client.call(ReadTsRequest(), timeout=10).ts


def snapshot(cn: DataNode, ts: int, row_ids: bool = False) -> pa.Table:
    client = cn.client()
    try:
        return client.call(SnapshotRequest(TABLE, ts, row_ids, 20_000), timeout=30).table
    finally:
        client.close()


def ids_read(cn: DataNode, ts: int) -> list[int]:
    return sorted(snapshot(cn, ts).column("id").to_pylist())


def checkpoints(storage) -> list[int]:
    folder = storage / "objects" / checkpoint.FOLDER
    return sorted(int(path.stem) for path in folder.glob("*.ckpt")) if folder.exists() else []


@pytest.fixture
def nodes(tmp_path):
    with tn_and_cn(tmp_path, **TINY) as started:
        yield started


def test_a_killed_cn_restarts_from_the_checkpoint_and_catches_up(nodes):
    tn, cn, storage = nodes
    loader = Loader(tn)
    assert ids_read(cn, loader.latest_ts()) == []  # subscribed while the table is empty
    for _ in range(12):
        loader.insert(97)
    ts = loader.latest_ts()
    loader.delete(snapshot(cn, ts, row_ids=True), ts, lambda key: key % 10 == 0)
    last = loader.insert(50)
    wait_until(
        lambda: checkpoints(storage) and checkpoints(storage)[-1] >= last, 30, "a checkpoint"
    )
    assert ids_read(cn, loader.latest_ts()) == loader.expected()

    cn.kill()
    for _ in range(5):  # while it is down: flushed and checkpointed, and some not yet
        loader.insert(61)
    loader.insert(3)
    cn.start()
    ts = loader.latest_ts()
    assert ids_read(cn, ts) == loader.expected(), "each acknowledged row once"
    log = (cn.workdir / "log" / "cn.log").read_text()
    assert "from checkpoint" in log, "the restarted CN started from the TN's checkpoint"

    # Writes go on while it is killed and restarted once more.
    stop = threading.Event()
    failures: list[BaseException] = []
    writer = Loader(tn)
    writer.next_id = 1_000_000

    def write() -> None:
        try:
            while not stop.is_set():
                writer.insert(23)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(writer.acknowledged) > 400, 30, "writes under way")
        cn.kill()
        wait_until(lambda: len(writer.acknowledged) > 1500, 30, "writes while the CN is down")
        cn.start()
        wait_until(lambda: len(writer.acknowledged) > 2000, 30, "writes after the restart")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not failures, failures
    ts = loader.latest_ts()
    assert ids_read(cn, ts) == sorted(loader.expected() + writer.acknowledged)


def test_a_cn_reads_only_the_metadata_of_its_tables_in_a_checkpoint(nodes):
    tn, cn, storage = nodes
    loader = Loader(tn)
    for _ in range(4):
        loader.insert(150)
    last = loader.latest_ts()
    wait_until(
        lambda: checkpoints(storage) and checkpoints(storage)[-1] >= last, 30, "a checkpoint"
    )
    name = checkpoint.object_name(checkpoints(storage)[-1])
    data = (storage / "objects" / name).read_bytes()
    found = checkpoint.decode_storage(data, frozenset({TABLE.table_id}))
    assert sum(meta.rows for meta in found[TABLE.table_id].objects) == 600
    assert checkpoint.decode_storage(data, frozenset({999})) == {}
    for damaged in (data[:-7], data[:40] + bytes([data[40] ^ 1]) + data[41:], b"QCKP"):
        with pytest.raises(CheckpointCorrupt):
            checkpoint.decode_storage(damaged, frozenset({TABLE.table_id}))
    assert ids_read(cn, loader.latest_ts()) == loader.expected()


def test_a_cn_subscribing_to_more_logtail_than_a_pull_carries_gets_a_checkpoint(tmp_path):
    """The logtail since the last checkpoint is over the pull's cap: the TN checkpoints, and the
    new CN starts from that checkpoint instead of waiting for ever."""
    token = secrets.token_hex(16)
    logtail_port = free_port()
    storage = tmp_path / "tn" / "storage"
    settings = {"logtail_max_response_bytes": 65536, "tn_checkpoint_interval_second": 3600}
    tn = DataNode(tmp_path / "tn", "tn", token, logtail_port, **settings)
    cn = DataNode(tmp_path / "cn", "cn", token, logtail_port, storage_root=storage)
    try:
        tn.start()
        loader = Loader(tn)
        for _ in range(20):
            loader.insert(500)  # about 300 kB of logtail, no flush, no checkpoint
        assert checkpoints(storage) == []
        cn.start()
        assert ids_read(cn, loader.latest_ts()) == loader.expected()
        assert checkpoints(storage), "the TN checkpointed for the subscription"
    finally:
        for node in (cn, tn):
            node.stop()


def test_changes_a_checkpoint_holds_are_applied_once():
    """A push at or below the checkpoint a table was restored from (it raced the subscription's
    answer) is in the checkpoint already; rows committed after it stay in memory."""
    state = TableState(TABLE.table_id)

    def change(first: int, count: int) -> TableChanges:
        ids = pa.array(range(first, first + count), pa.int64())
        rows = pa.table({ROW_ID: ids, "id": ids, "c": pa.nulls(count, pa.string())})
        return TableChanges(TABLE.table_id, 1, inserts=rows)

    state.apply(change(0, 5), 50)
    state.restore((), (), 100)
    state.apply(change(10, 5), 90)
    state.apply(change(5, 5), 150)
    state.apply(change(15, 5), 200)
    assert sorted(state.snapshot(TABLE, 300).column("id").to_pylist()) == [
        *range(5, 10),
        *range(15, 20),
    ]
    assert state.snapshot(TABLE, 160, row_ids=True).column(ROW_ID).to_pylist() == [5, 6, 7, 8, 9]
