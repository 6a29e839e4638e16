"""A load that overwrites its table, on the TN of an embedded data plane: one commit replaces the
rows in objects and in memory (the snapshot before it still reads them); the log replays it and a
checkpoint keeps it; a merge that rewrote the replaced objects meanwhile is dropped; log records
of the older version still read; the node service carries a load commit's overwrite."""

import json
import struct
import zlib
from dataclasses import replace

import msgpack
import pyarrow as pa

from be.client import open_embedded
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.load.limits import LoadLimits
from be.load.objects import LoadWriter
from be.logtail.entries import Commit, TableChanges
from be.service import format as service_format
from be.service.errors import ServiceFormatError
from be.service.limits import ServiceLimits
from be.storage.blocks import write_blocks
from be.storage.names import Tablet
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn import wal_records
from be.tn.errors import WriteConflict
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import wait_until

SCHEMA = TableSchema(
    1,
    1,
    (ColumnSchema("k", pa.int32()), ColumnSchema("v", pa.string())),
    KeyModel.DUPLICATE,
    ("k",),
    "RANGE",
    (),
    (PartitionSchema(10, tablet_ids=(11,)),),
    ("k",),
)


def open_plane(root):
    config = Config.load(BE_KEYS, [DEFAULT_BE_CONF], [f"storage_root={root}", "flush_rows=100"])
    plane = open_embedded(config)
    plane.start()
    return plane


def insert(plane, keys, note: str) -> int:
    rows = pa.table({"k": pa.array(keys, pa.int32()), "v": [f"{note}{k}" for k in keys]})
    return plane.commit(WriteSet(plane.read_ts(), (TableWrite(SCHEMA, inserts=rows),)))


def rows_at(plane, ts: int) -> list[tuple]:
    snapshot = plane.snapshot(SCHEMA, ts, 10)
    return sorted(
        zip(snapshot.column("k").to_pylist(), snapshot.column("v").to_pylist(), strict=True)
    )


def overwrite(plane, keys) -> int:
    txn_id = plane.begin_load(SCHEMA)
    writer = LoadWriter(
        plane.store,
        SCHEMA,
        txn_id,
        lambda count: plane.reserve_row_ids(txn_id, count),
        LoadLimits(),
        keep_keys=False,
    )
    writer.add(pa.table({"k": pa.array(keys, pa.int32()), "v": [f"new{k}" for k in keys]}))
    return plane.commit_load(txn_id, SCHEMA, tuple(writer.finish()), overwrite=True)


def test_an_overwrite_replaces_objects_and_memory_and_survives_restarts(tmp_path):
    plane = open_plane(tmp_path)
    try:
        insert(plane, range(100), "flushed")
        wait_until(lambda: plane.cn.table(1).memory_rows() == 0, 30, "the flush")
        insert(plane, range(100, 120), "memory")
        snapshot_ts = plane.read_ts()
        old = rows_at(plane, snapshot_ts)
        assert len(old) == 120
        ts = overwrite(plane, range(500, 530))
        new = [(k, f"new{k}") for k in range(500, 530)]
        assert rows_at(plane, ts) == new
        assert rows_at(plane, ts - 1) == old, "the snapshot before it"
        late = WriteSet(  # a transaction older than the overwrite deletes an old row
            snapshot_ts, (TableWrite(SCHEMA, deletes=pa.table({"__QUIRE_ROW_ID": [3]})),)
        )
        try:
            plane.commit(late)
            raise AssertionError("a delete of an overwritten row committed")
        except WriteConflict as error:
            assert "overwritten" in str(error)
        insert(plane, [900], "after")
        new.append((900, "after900"))
    finally:
        plane.close()
    plane = open_plane(tmp_path)  # the log replays it
    try:
        assert rows_at(plane, plane.read_ts()) == new
        assert plane.tn.state.tables[1].overwritten_ts == ts
        plane.tn.request_checkpoint()
        wait_until(lambda: plane.tn.checkpoint_ts > ts, 30, "a checkpoint")
    finally:
        plane.close()
    plane = open_plane(tmp_path)  # from the checkpoint
    try:
        assert plane.tn.checkpoint_ts > ts
        assert rows_at(plane, plane.read_ts()) == new
        assert plane.tn.state.tables[1].overwritten_ts == ts
    finally:
        plane.close()


def test_a_merge_of_replaced_objects_is_dropped(tmp_path):
    plane = open_plane(tmp_path)
    try:
        insert(plane, range(100), "flushed")
        wait_until(lambda: plane.cn.table(1).memory_rows() == 0, 30, "the flush")
        (replaced,) = plane.cn.table(1).objects()
        data = pa.table(
            {
                "__QUIRE_ROW_ID": pa.array([1], pa.int64()),
                "__QUIRE_COMMIT_TS": pa.array([1], pa.int64()),
                "k": pa.array([1], pa.int32()),
                "v": ["merged"],
            }
        )
        merged = write_blocks(
            plane.store, Tablet(1, 10, 11), data, schema_version=1, flush_ts=plane.read_ts()
        )
        overwrite(plane, range(5))
        change = TableChanges(1, 1, objects_added=(merged,), objects_removed=(replaced.name,))
        assert plane.tn._control(lambda: plane.tn._replaced_meanwhile(change))
        assert merged.name not in plane.store.list()
        assert len(rows_at(plane, plane.read_ts())) == 5
    finally:
        plane.close()


def test_log_records_of_version_3_overwrite_nothing():
    change = TableChanges(1, 1, objects_removed=("t1/x",), overwrites=True)
    record = wal_records.encode(Commit(7, (change,)), "", {1: SCHEMA})
    commit, _, _ = wal_records.decode(record)
    assert commit.changes[0].overwrites
    version, size = struct.unpack_from(">BI", record)
    assert version == 4
    header = json.loads(record[5 : 5 + size])
    del header["tables"][0]["overwrites"]
    older = json.dumps(header, separators=(",", ":")).encode()
    commit, _, _ = wal_records.decode(struct.pack(">BI", 3, len(older)) + older)
    assert commit.changes[0] == replace(change, overwrites=False)
    header["tables"][0]["overwrites"] = 1
    damaged = json.dumps(header, separators=(",", ":")).encode()
    try:
        wal_records.decode(struct.pack(">BI", 4, len(damaged)) + damaged)
        raise AssertionError("a damaged record was read")
    except wal_records.WalRecordError as error:
        assert "overwrites" in str(error)


def test_a_load_commit_carries_overwrite_to_the_tn():
    limits = ServiceLimits()
    for overwrite in (False, True):
        asked = service_format.CommitLoad(9, SCHEMA, (), overwrite)
        back = service_format.decode(service_format.encode(asked, limits), limits)
        assert back == asked
    fields = [service_format.Kind.COMMIT_LOAD, 9, service_format.encode_schema(SCHEMA), [], 1]
    body = msgpack.packb(fields)
    data = struct.pack(">BI", service_format.FORMAT_VERSION, zlib.crc32(body)) + body
    try:
        service_format.decode(data, limits)
        raise AssertionError("a load commit whose overwrite is not a bool was read")
    except ServiceFormatError as error:
        assert "overwrite" in str(error)
