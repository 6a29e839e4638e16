"""Tombstones compacted and freed: a tablet's objects are rewritten without the rows its older
tombstones delete, and those tombstones go, in one commit. Seen from the storage functions, from
a user of `quire up` (files under storage_root, answers beside a SQLite oracle, AS OF across a
compaction), and from TN and CN processes (kill -9 of the TN while it compacts; a CN restarted
from a checkpoint taken after a compaction)."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.cn.table_state import TableState
from be.logtail.entries import COMMIT_TS, ROW_ID, TableChanges
from be.storage.blocks import read_blocks, write_blocks
from be.storage.compaction import compact_tablet, tombstones_to_compact
from be.storage.errors import MergeRefused, ObjectExists
from be.storage.limits import StorageLimits
from be.storage.merge import merge_objects
from be.storage.names import Tablet
from be.storage.objects import ObjectStore
from be.storage.tombstones import write_tombstones
from be.table_schema import ColumnSchema, TableSchema
from metadata.records import KeyModel
from tests.harness import QuireProcess, run, wait_until
from tests.test_cn_restart import TABLE, TINY, Loader, checkpoints, ids_read, snapshot
from tests.test_data_processes import DataNode, tn_and_cn
from tests.test_flush import versions

TABLET = Tablet(10, 11, 12)


def numbered(count: int, first_row_id: int, commit_ts: int) -> pa.Table:
    row_ids = list(range(first_row_id, first_row_id + count))
    return pa.table(
        {
            ROW_ID: pa.array(row_ids, pa.int64()),
            COMMIT_TS: pa.array([commit_ts] * count, pa.int64()),
            "k": pa.array(row_ids, pa.int64()),
        }
    )


def test_compaction_rewrites_only_the_objects_its_tombstones_touch(tmp_path):
    limits = StorageLimits(
        tombstone_compaction_min_objects=3,
        tombstone_compaction_max_objects=8,
        tombstone_compaction_deleted_ratio=0.5,
    )
    store = ObjectStore.open_root(str(tmp_path / "storage"), limits=limits)
    objects = [
        write_blocks(
            store, TABLET, numbered(100, 1 + i * 100, i + 1), schema_version=1, flush_ts=i + 1
        )
        for i in range(4)
    ]
    first = write_tombstones(store, TABLET, [5, 7], 10)  # object 0
    second = write_tombstones(store, TABLET, list(range(101, 201)), 11, seq=1)  # all of object 1
    late = write_tombstones(store, TABLET, [9, 305], 30, seq=2)  # after the cutoff
    tombstones = [first, second, late]
    # Policy: only tombstones wholly at or before the cutoff, and only past a count or a ratio.
    assert tombstones_to_compact(objects, tombstones, 20, limits) == ()  # 2 < 3, 102 < 50%
    assert tombstones_to_compact(objects, tombstones, 30, limits) == (first, second, late)
    ratio = StorageLimits(tombstone_compaction_deleted_ratio=0.25)
    assert tombstones_to_compact(objects, tombstones, 20, ratio) == (first, second)

    done = compact_tablet(store, objects, [first, second], at_ts=40)
    assert done.tombstones == (first, second)
    assert done.replaced == (objects[0], objects[1])
    (written,) = done.written  # object 1 lost every row: nothing written for it
    expected = numbered(100, 1, 1).filter(
        pc.invert(pc.is_in(pa.array(range(1, 101)), pa.array([5, 7])))
    )
    assert read_blocks(store, written).equals(expected)
    assert (written.flush_ts, written.schema_version) == (objects[0].flush_ts, 1)
    assert set(done.removed_names) == {objects[0].name, objects[1].name, first.name, second.name}

    # The budget: tombstones whose objects do not fit wait for the next compaction.
    small = StorageLimits(tombstone_compaction_min_objects=1, tombstone_compaction_max_objects=2)
    tight = ObjectStore.open_root(str(tmp_path / "storage"), limits=small)
    wide = write_tombstones(tight, TABLET, [210, 310], 12, seq=3)  # objects 2 and 3
    done = compact_tablet(tight, objects, [first, wide], at_ts=41)
    assert done.tombstones == (first,) and done.replaced == (objects[0],)
    assert compact_tablet(tight, objects, [wide], at_ts=42) is None
    with pytest.raises(MergeRefused):
        compact_tablet(store, objects, [write_tombstones(store, Tablet(10, 11, 13), [1], 5)], 43)


def test_a_failed_write_leaves_no_half_written_compaction(tmp_path):
    store = ObjectStore.open_root(str(tmp_path / "storage"))
    objects = [
        write_blocks(store, TABLET, numbered(50, 1 + i * 50, 1), schema_version=1, flush_ts=i + 1)
        for i in range(3)
    ]
    tombstone = write_tombstones(store, TABLET, [1, 51, 101], 4)
    # The name the second rewritten object would take is taken: the first one goes again.
    taken = str(TABLET.object_name(5, 1, "data"))
    store.put(taken, pa.py_buffer(b"not an object"))
    before = set(store.list())
    with pytest.raises(ObjectExists):
        compact_tablet(store, objects, [tombstone], at_ts=5)
    assert set(store.list()) == before
    done = compact_tablet(store, objects, [tombstone], at_ts=6)
    assert [meta.rows for meta in done.written] == [49, 49, 49]


# -- through quire up: files, answers beside SQLite, time travel across a compaction ------------

RETENTION_SECONDS = 16
UP_OVERRIDES = {
    "flush_rows": 1000,
    "flush_interval_second": 1,
    "time_travel_retention_second": RETENTION_SECONDS,
    "tn_commit_timeout_second": 5,
    # the first round's tombstones are compacted once they are old enough, whatever the second
    # round adds (its tombstones are younger than the moment read as of)
    "tombstone_compaction_min_objects": 1,
    "merged_object_retention_second": 1,
}


def files(objects: Path, kind: str = "") -> list[Path]:
    return sorted(objects.rglob(f"*.{kind}.parquet" if kind else "*.parquet"))


def rows_of(connection, sql: str) -> list[tuple]:
    return [tuple(row) for row in run(connection, sql)]


def wall_clock(connection) -> str:
    """NOW(6) as the server sees it, then a moment for the clock to move past it."""
    moment = run(connection, "SELECT NOW(6)")[0][0]
    time.sleep(0.01)  # commit timestamps come from the clock: the next commit is later
    return moment.isoformat(sep=" ")


def test_updates_and_deletes_on_flushed_rows_are_compacted_away(tmp_path):
    quire = QuireProcess(tmp_path / "up", overrides=UP_OVERRIDES).start()
    try:
        db = quire.connect()
        run(db, "CREATE DATABASE d")
        run(db, "USE d")
        run(
            db,
            "CREATE TABLE t (k INT, v INT, s VARCHAR(20)) UNIQUE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 2",
        )
        oracle = sqlite3.connect(":memory:")
        oracle.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER, s TEXT)")
        objects = Path(quire.workdir) / "storage" / "objects"
        values = ", ".join(f"({k}, {k * 10}, 'row {k}')" for k in range(300))
        for connection in (db, oracle):
            connection.execute(f"INSERT INTO t VALUES {values}") if connection is oracle else run(
                connection, f"INSERT INTO t VALUES {values}"
            )
        wait_until(lambda: len(files(objects, "data")) >= 2, 30, "the rows flushed")

        chosen = random.Random(10)

        def both(sql: str) -> None:
            run(db, sql)
            oracle.execute(sql)

        def same() -> None:
            expected = oracle.execute("SELECT k, v, s FROM t ORDER BY k").fetchall()
            assert rows_of(db, "SELECT k, v, s FROM t ORDER BY k") == expected

        def a_round(first_key: int) -> None:
            """Single-row UPDATEs and DELETEs of flushed rows, flushed as tombstones in batches."""
            for batch in range(3):
                before = set(files(objects, "tomb"))
                for step in range(12):
                    k = chosen.randrange(first_key, first_key + 150)
                    if step % 6 == 5:
                        both(f"DELETE FROM t WHERE k = {k}")
                    else:
                        both(f"UPDATE t SET v = v + 1, s = 'b{batch} s{step}' WHERE k = {k}")
                wait_until(
                    lambda before=before: set(files(objects, "tomb")) - before,
                    30,
                    "the batch's deletes flushed",
                )
            same()

        a_round(0)
        started = time.monotonic()
        # The snapshot read as of later: after every delete of the first round is flushed.
        # The first round's deletes are compacted RETENTION_SECONDS after they were made, and the
        # read as of moment is refused RETENTION_SECONDS after moment: the twelve seconds between
        # them are what a loaded machine has to read as of moment after the compaction.
        wait_until(lambda: time.monotonic() - started > 12, 20, "the first round's flushes")
        moment = wall_clock(db)
        then = oracle.execute("SELECT k, v, s FROM t ORDER BY k").fetchall()
        as_of = f"SELECT k, v, s FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{moment}' ORDER BY k"
        assert rows_of(db, as_of) == then
        a_round(150)
        both("INSERT INTO t VALUES (1000, 1, 'late')")
        peak_tombstones = len(files(objects, "tomb"))
        peak_files = len(files(objects))
        assert peak_tombstones >= 1

        log = Path(quire.workdir) / "log" / "fe.log"
        wait_until(lambda: "compacted" in log.read_text(), RETENTION_SECONDS + 20, "a compaction")
        assert rows_of(db, as_of) == then, "a readable snapshot older than the compaction"
        same()
        wait_until(
            lambda: len(files(objects, "tomb")) < peak_tombstones,
            30,
            "tombstones compacted and their files deleted",
        )
        wait_until(lambda: len(files(objects)) < peak_files, 30, "fewer files under storage_root")
        same()
    finally:
        quire.stop()


def test_admin_compact_applies_the_tombstones_no_snapshot_needs(tmp_path):
    """Too few deletes for the compaction policy: ADMIN COMPACT TABLE ... 'FULL' applies them to
    the objects all the same, once no snapshot kept for time travel reads them."""
    overrides = {**UP_OVERRIDES, "time_travel_retention_second": 2, "tn_commit_timeout_second": 1}
    del overrides["tombstone_compaction_min_objects"]  # the default: the policy stays away
    quire = QuireProcess(tmp_path / "up", overrides=overrides).start()
    try:
        db = quire.connect()
        run(db, "CREATE DATABASE d")
        run(db, "CREATE TABLE d.t (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        run(db, "INSERT INTO d.t VALUES " + ", ".join(f"({k}, {k})" for k in range(1200)))
        objects = Path(quire.workdir) / "storage" / "objects"
        wait_until(lambda: files(objects, "data"), 30, "the rows flushed")
        for k in (3, 5, 8):
            run(db, f"DELETE FROM d.t WHERE k = {k}")
        wait_until(lambda: files(objects, "tomb"), 30, "the deletes flushed as tombstones")
        expected = [(k, k) for k in range(1200) if k not in (3, 5, 8)]

        def compacted() -> bool:
            run(db, "ADMIN COMPACT TABLE d.t WHERE type = 'FULL'")
            return not files(objects, "tomb")

        wait_until(compacted, 30, "the tombstones applied and deleted", interval=0.5)
        assert rows_of(db, "SELECT k, v FROM d.t ORDER BY k") == expected
        assert set(versions(db, "d.t").values()) == {(len(files(objects, "data")),) * 2}
    finally:
        quire.stop()


# -- TN and CN processes: kill -9 of the TN while it compacts; a CN restarted after it ----------

PROCESS_OVERRIDES = {
    **TINY,
    "time_travel_retention_second": 4,
    "tn_commit_timeout_second": 3,
    "tombstone_compaction_min_objects": 2,
    "merged_object_retention_second": 1,
}


@pytest.fixture
def nodes(tmp_path):
    with tn_and_cn(tmp_path, **PROCESS_OVERRIDES) as started:
        yield started


def ids_on_disk(storage: Path) -> list[int] | None:
    """The table's rows as its files under storage_root hold them: every data object's rows less
    every tombstone's; a row twice if two objects hold it. None if a file went meanwhile."""
    folder = storage / "objects" / f"t{TABLE.table_id}"
    deleted: set[int] = set()
    try:
        for path in files(folder, "tomb"):
            deleted.update(pq.read_table(path, columns=[ROW_ID]).column(ROW_ID).to_pylist())
        tables = [pq.read_table(path, columns=[ROW_ID, "id"]) for path in files(folder, "data")]
    except FileNotFoundError:
        return None
    found = []
    for rows in tables:
        found += [
            key
            for row_id, key in zip(rows[ROW_ID].to_pylist(), rows["id"].to_pylist(), strict=True)
            if row_id not in deleted
        ]
    return sorted(found)


def delete_in_rounds(loader: Loader, cn: DataNode, storage: Path, rounds: range) -> None:
    """Deletes of flushed rows, each round flushed as tombstones before the next."""
    folder = storage / "objects" / f"t{TABLE.table_id}"
    for round_ in rounds:
        before = set(files(folder, "tomb"))
        ts = loader.latest_ts()
        loader.delete(snapshot(cn, ts, row_ids=True), ts, lambda key, r=round_: key % 20 == r)
        wait_until(
            lambda before=before: set(files(folder, "tomb")) - before, 30, "tombstones flushed"
        )


def test_kill_9_of_the_tn_while_it_compacts_and_a_cn_restarted_after_it(nodes):
    tn, cn, storage = nodes
    folder = storage / "objects" / f"t{TABLE.table_id}"
    loader = Loader(tn)
    for _ in range(6):
        loader.insert(100)
    wait_until(lambda: ids_on_disk(storage) == loader.expected(), 30, "the rows flushed")
    delete_in_rounds(loader, cn, storage, range(4))
    assert ids_read(cn, loader.latest_ts()) == loader.expected()

    tn_log = tn.workdir / "log" / "tn.log"
    wait_until(lambda: "compacted" in tn_log.read_text(), 30, "a compaction", interval=0.002)
    tn.kill()
    tn.start()
    loader.client = tn.client()
    assert ids_read(cn, loader.latest_ts()) == loader.expected(), "nothing acknowledged lost"
    loader.insert(40)
    delete_in_rounds(loader, cn, storage, range(4, 8))
    assert ids_read(cn, loader.latest_ts()) == loader.expected()
    # Every tombstone old enough is compacted, and no file is left from a half compaction: the
    # files alone give the table's rows, each once.
    wait_until(lambda: len(files(folder, "tomb")) <= 2, 30, "the tombstones compacted")
    wait_until(
        lambda: ids_on_disk(storage) == loader.expected(), 30, "the files to hold the rows once"
    )
    compacted_at = loader.insert(1)  # a commit after it, for the next checkpoint to hold

    wait_until(
        lambda: checkpoints(storage) and checkpoints(storage)[-1] >= compacted_at,
        30,
        "a checkpoint after the compaction",
    )
    cn.kill()
    loader.insert(7)
    cn.start()
    assert ids_read(cn, loader.latest_ts()) == loader.expected()
    assert "from checkpoint" in (cn.workdir / "log" / "cn.log").read_text()
    delete_in_rounds(loader, cn, storage, range(8, 9))
    assert ids_read(cn, loader.latest_ts()) == loader.expected()


def test_a_merge_keeps_the_rows_deleted_after_the_oldest_readable_snapshot(tmp_path):
    """So that a CN restarted from a later checkpoint, which reads the merged object alone with
    the tombstones left, answers a snapshot between the two as a CN that saw the merge does."""
    store = ObjectStore.open_root(str(tmp_path / "storage"))
    objects = [
        write_blocks(store, TABLET, numbered(10, 1 + i * 10, 1), schema_version=1, flush_ts=i + 1)
        for i in range(2)
    ]
    old = write_tombstones(store, TABLET, [1, 2], 5)
    recent = write_tombstones(store, TABLET, [3, 11], 8, seq=1)
    merged = merge_objects(store, objects, [old, recent], at_ts=9, deleted_by=6)
    kept = read_blocks(store, merged).column(ROW_ID).to_pylist()
    assert kept == list(range(3, 21))
    assert merge_objects(store, objects, [old, recent], at_ts=10, seq=1).rows == 16


def test_a_cn_answers_every_readable_snapshot_alike_across_a_compaction_and_a_restore(tmp_path):
    """Rows 1..10 flushed at 2; row 2 deleted at 3, row 5 at 7 (tombstones flushed at 4 and 8);
    a compaction at 10 with the oldest readable snapshot at 5 applies the first tombstone."""
    store = ObjectStore.open_root(str(tmp_path / "storage"))
    schema = TableSchema(10, 1, (ColumnSchema("k", pa.int64(), False),), KeyModel.DUPLICATE, ("k",))
    cache = ObjectCache(ComputeLimits())
    (flushed,) = [write_blocks(store, TABLET, numbered(10, 1, 1), schema_version=1, flush_ts=2)]
    early = write_tombstones(store, TABLET, [2], 3)
    late = write_tombstones(store, TABLET, [5], 7)
    live = TableState(10, store, cache)
    live.apply(TableChanges(10, 1, objects_added=(flushed,), flushed_ts=2), 2)
    live.apply(TableChanges(10, 1, tombstones_added=(early,), flushed_ts=4), 4)
    live.apply(TableChanges(10, 1, tombstones_added=(late,), flushed_ts=8), 8)
    (chosen,) = tombstones_to_compact(
        [flushed], [early, late], 5, StorageLimits(tombstone_compaction_deleted_ratio=0.1)
    )
    done = compact_tablet(store, [flushed], [chosen], at_ts=10)
    every = set(range(1, 11))
    expected = {2: every, 3: every - {2}, 6: every - {2}, 7: every - {2, 5}, 11: every - {2, 5}}

    def read(state: TableState, ts: int) -> set[int]:
        return set(state.snapshot(schema, ts).column("k").to_pylist())

    assert {ts: read(live, ts) for ts in expected} == expected
    live.apply(
        TableChanges(10, 1, objects_added=done.written, objects_removed=done.removed_names), 10
    )
    assert {ts: read(live, ts) for ts in expected} == expected, "the same answers after it"
    # A CN restored from a checkpoint after the compaction: the new objects and the tombstones
    # left, and every snapshot from the oldest readable one (5) on answered alike.
    restored = TableState(10, store, ObjectCache(ComputeLimits()))
    restored.restore(done.written, (late,), 11)
    assert {ts: read(restored, ts) for ts in expected if ts >= 5} == {
        ts: rows for ts, rows in expected.items() if ts >= 5
    }
