"""Flush: rows placed in the catalog's tablets, written as objects (one per tablet per flush) by
size or by age, deletes of flushed rows as tombstones; reads across flushes equal reads before;
restarts (clean and kill -9) keep every acknowledged row; a store that refuses writes makes the
commits that need a flush fail with a clear error and loses nothing acknowledged."""

import contextlib
import os
import re
import signal
import struct
import subprocess
import zlib
from dataclasses import replace
from pathlib import Path

import msgpack
import mysql.connector
import pyarrow as pa
import pymysql
import pytest
import requests

from be.client import open_embedded
from be.cn.bounds import ColumnBound
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.logtail import format as logtail_format
from be.logtail.entries import Commit, TableChanges
from be.logtail.limits import LogtailLimits
from be.storage.blocks import write_blocks
from be.storage.meta_codec import decode_object, encode_object
from be.storage.names import Tablet
from be.storage.objects import ObjectStore
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn import placement, wal_records
from be.tn.errors import NoPartitionForRow
from be.tn.objects import TableObjects
from be.tn.write_set import TableWrite, WriteSet
from metadata.records import KeyModel
from tests.harness import QuireProcess, mariadb, mariadb_error, run, start_fails, wait_until

FLUSH = {"flush_rows": 10, "flush_interval_second": 2}


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("flush"), overrides=FLUSH).start()
    yield node
    node.stop()


def objects_of(node: QuireProcess, kind: str = "data") -> list[Path]:
    return sorted((node.workdir / "storage" / "objects").glob(f"t*/p*/*/*.{kind}.parquet"))


def tablet_objects(root, table: str, kind: str = "data") -> dict[int, int]:
    """Objects of each tablet of the table (by SHOW TABLETS), from the object folder."""
    tablets = [int(row[0]) for row in run(root, f"SHOW TABLETS FROM {table}")]
    found = {}
    for tablet in tablets:
        folder = list(Path(root.storage).glob(f"t*/p*/{tablet}"))
        found[tablet] = len(list(folder[0].glob(f"*.{kind}.parquet"))) if folder else 0
    return found


def versions(root, table: str) -> dict[int, tuple[int, int]]:
    """SHOW TABLETS' VisibleVersionCount and VersionCount of each tablet: its objects."""
    return {
        int(row[0]): (int(row[14]), int(row[15])) for row in run(root, f"SHOW TABLETS FROM {table}")
    }


@pytest.fixture(scope="module")
def root(quire):
    connection = quire.connect()
    connection.storage = quire.workdir / "storage" / "objects"
    yield connection
    connection.close()


def error_of(connection, sql) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as caught:
        run(connection, sql)
    return caught.value.args[0], caught.value.args[1]


def metrics_of(node) -> str:
    return requests.get(f"http://127.0.0.1:{node.http_port}/metrics", timeout=10).text


# -- placement, as a pure function ------------------------------------------------------------


def schema(kind="RANGE", partitions=None, distribution=("k",)) -> TableSchema:
    partitions = partitions or (
        PartitionSchema(10, (), ("100",), (), (11, 12, 13)),
        PartitionSchema(20, ("100",), ("200",), (), (21, 22)),
    )
    columns = (ColumnSchema("k", pa.int32()), ColumnSchema("v", pa.string()))
    return TableSchema(
        1, 1, columns, KeyModel.DUPLICATE, ("k",), kind, ("k",), partitions, distribution
    )


def rows(keys) -> pa.Table:
    return pa.table(
        {
            "__QUIRE_ROW_ID": pa.array(range(1, len(keys) + 1), pa.int64()),
            "k": pa.array(keys, pa.int32()),
            "v": [f"v{key}" for key in keys],
        }
    )


def test_range_placement_and_refusal():
    table = schema()
    assert placement.partition_indexes(table, rows([0, 99, 100, 199, None])).to_pylist() == [
        0,
        0,
        1,
        1,
        0,  # NULL sorts below every value: the first partition
    ]
    with pytest.raises(NoPartitionForRow, match=r"no partition for this tuple. tuple=\(200\)"):
        placement.partition_indexes(table, rows([5, 200]))
    placed = placement.by_tablet(table, rows(list(range(0, 200, 3))))
    assert sum(part.num_rows for part in placed.values()) == len(range(0, 200, 3))
    assert {tablet.tablet_id for tablet in placed} <= {11, 12, 13, 21, 22}
    again = placement.by_tablet(table, rows(list(range(0, 200, 3))))
    assert {t: p.column("k").to_pylist() for t, p in placed.items()} == {
        t: p.column("k").to_pylist() for t, p in again.items()
    }, "a key's tablet never changes"


def test_list_and_random_placement():
    table = schema(
        "LIST",
        (
            PartitionSchema(10, values=(("1",), ("2",)), tablet_ids=(11,)),
            PartitionSchema(20, values=(("3",),), tablet_ids=(21, 22)),
        ),
        distribution=(),
    )
    assert placement.partition_indexes(table, rows([1, 2, 3, 3])).to_pylist() == [0, 0, 1, 1]
    with pytest.raises(NoPartitionForRow):
        placement.partition_indexes(table, rows([4]))
    placed = placement.by_tablet(table, rows([3, 3, 3, 3]))
    assert {tablet.tablet_id: part.num_rows for tablet, part in placed.items()} == {21: 2, 22: 2}


def test_object_metadata_survives_the_log_record(tmp_path):
    store = ObjectStore.open_root(str(tmp_path))
    data = rows([1, 2, 3]).add_column(1, "__QUIRE_COMMIT_TS", pa.array([5, 5, 6], pa.int64()))
    meta = write_blocks(store, Tablet(1, 10, 11), data, schema_version=1, flush_ts=7)
    assert decode_object(encode_object(meta)) == meta
    change = TableChanges(1, 1, objects_added=(meta,), flushed_ts=7)
    commit, request, schemas = wal_records.decode(
        wal_records.encode(Commit(7, (change,)), "", {1: schema()})
    )
    assert commit.changes[0].objects_added == (meta,) and commit.changes[0].flushed_ts == 7
    assert schemas[1] == schema(), "placement is logged with the schema"
    limits = LogtailLimits()
    pushed = logtail_format.decode_commit(
        logtail_format.encode_commit(Commit(7, (change,)), limits), limits
    )
    assert pushed.changes[0].objects_added == (meta,) and pushed.changes[0].flushed_ts == 7
    body = msgpack.packb([1, 9, [[1, 1, None, None]]], use_bin_type=True)
    version_1 = struct.pack(">BI", 1, zlib.crc32(body)) + body
    assert logtail_format.decode_commit(version_1, limits) == Commit(9, (TableChanges(1, 1),))


# -- through the MySQL front ------------------------------------------------------------------


def create(root, name: str, extra: str = "") -> None:
    run(root, "CREATE DATABASE IF NOT EXISTS f")
    run(
        root,
        f"CREATE TABLE f.{name} (k INT, v VARCHAR(10)) UNIQUE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (100), "
        "PARTITION p2 VALUES LESS THAN (1000)) "
        f"DISTRIBUTED BY HASH(k) BUCKETS 3 {extra}",
    )


def values(keys, note="v") -> str:
    return ", ".join(f"({key}, '{note}{key}')" for key in keys)


def test_a_row_of_no_partition_is_refused_and_nothing_is_written(root):
    create(root, "refused")
    code, message = error_of(root, f"INSERT INTO f.refused VALUES {values([1, 2, 5000])}")
    assert code == 1105 and "no partition for this tuple. tuple=(5000)" in message
    assert run(root, "SELECT COUNT(*) FROM f.refused") == ((0,),)


def test_flush_by_size_one_object_per_tablet_reads_the_same(root):
    create(root, "sized")
    keys = list(range(0, 1000, 20))  # 50 rows in both partitions: over flush_rows at once
    run(root, f"INSERT INTO f.sized VALUES {values(keys)}")

    tablets = run(root, "SHOW TABLETS FROM f.sized")  # unflushed rows count where they will go
    sized = {int(row[0]) for row in tablets if int(row[10]) > 0}

    def flushed():
        counts = tablet_objects(root, "f.sized")
        return counts if {tablet for tablet, count in counts.items() if count} == sized else None

    counts = wait_until(flushed, 30, "a flush of every tablet with rows")
    assert len(counts) == 6 and all(count <= 1 for count in counts.values()), counts
    assert sized == {tablet for tablet, count in counts.items() if count}
    assert len(sized) >= 4, "hash buckets spread the rows"
    assert run(root, "SELECT k, v FROM f.sized ORDER BY k") == tuple((k, f"v{k}") for k in keys)
    tablets = run(root, "SHOW TABLETS FROM f.sized")
    assert sum(int(row[10]) for row in tablets) == 50
    data = run(root, "SHOW DATA FROM f.sized")
    assert data[0][1] == "sized" and data[0][4] == "50" and data[0][2].endswith("KB"), data
    assert run(root, "SELECT COUNT(*), SUM(k) FROM f.sized WHERE k >= 500") == (
        (25, sum(k for k in keys if k >= 500)),
    )


def test_flush_by_age(root):
    create(root, "aged")
    run(root, "INSERT INTO f.aged VALUES (1, 'one'), (200, 'two')")
    assert sum(tablet_objects(root, "f.aged").values()) == 0, "under flush_rows: no flush yet"
    wait_until(lambda: sum(tablet_objects(root, "f.aged").values()) == 2, 30, "a flush by age")
    assert run(root, "SELECT k, v FROM f.aged ORDER BY k") == ((1, "one"), (200, "two"))


def test_deletes_and_updates_of_flushed_rows_are_tombstones(root):
    create(root, "changed")
    keys = list(range(0, 60))
    run(root, f"INSERT INTO f.changed VALUES {values(keys)}")

    def counted() -> dict[int, int] | None:
        """The objects of each tablet once a flush wrote some and SHOW TABLETS counts them all
        (a flush's files are there a moment before its commit)."""
        flushed = tablet_objects(root, "f.changed")
        if sum(flushed.values()) and versions(root, "f.changed") == {
            t: (n, n) for t, n in flushed.items()
        }:
            return flushed
        return None

    flushed = wait_until(counted, 30, "a flush SHOW TABLETS counts")
    run(root, "DELETE FROM f.changed WHERE k < 10")
    run(root, "UPDATE f.changed SET v = 'new' WHERE k >= 50")
    expected = tuple((k, "new" if k >= 50 else f"v{k}") for k in range(10, 60))
    assert run(root, "SELECT k, v FROM f.changed ORDER BY k") == expected
    wait_until(
        lambda: sum(tablet_objects(root, "f.changed", "tomb").values()) > 0, 30, "tombstones"
    )
    wait_until(  # a tablet's tombstones count among its versions, as its data objects do
        lambda: sum(v for v, _ in versions(root, "f.changed").values()) > sum(flushed.values()),
        30,
        "SHOW TABLETS counting the tombstones",
    )
    assert run(root, "SELECT k, v FROM f.changed ORDER BY k") == expected
    run(root, "INSERT INTO f.changed VALUES (5, 'back')")
    assert run(root, "SELECT v FROM f.changed WHERE k = 5") == (("back",),)


def test_restart_and_kill_9_after_flushes(tmp_path):
    node = QuireProcess(tmp_path / "node", overrides=FLUSH).start()
    try:
        connection = node.connect()
        connection.storage = node.workdir / "storage" / "objects"
        create(connection, "t")
        for start in range(0, 300, 30):
            run(connection, f"INSERT INTO f.t VALUES {values(range(start, start + 30))}")
        run(connection, "DELETE FROM f.t WHERE k % 7 = 0")
        run(connection, "UPDATE f.t SET v = 'u' WHERE k % 5 = 0")
        wait_until(lambda: objects_of(node, "tomb"), 30, "tombstones")
        run(connection, "INSERT INTO f.t VALUES (999, 'last')")  # in memory only
        expected = run(connection, "SELECT k, v FROM f.t ORDER BY k")
        assert len(expected) == 300 - 43 + 1
        connection.close()
        node.restart()
        connection = node.connect()
        assert run(connection, "SELECT k, v FROM f.t ORDER BY k") == expected
        run(connection, "INSERT INTO f.t VALUES (998, 'acked')")
        connection.close()
        node.kill(signal.SIGKILL)
        written = objects_of(node)[0]  # as if a flush was written, then never committed
        ts, rest = written.name.split("-", 1)
        orphan = written.with_name(f"{int(ts) - 1:020d}-{rest}")
        orphan.write_bytes(written.read_bytes())
        node.start()
        assert not orphan.exists(), "an object no commit names is removed at start"
        assert written.exists()
        connection = node.connect()
        got = run(connection, "SELECT k, v FROM f.t ORDER BY k")
        assert got == tuple(sorted(expected + ((998, "acked"),)))
        connection.close()
    finally:
        node.stop()


def _remove(written: Path) -> None:
    written.unlink()


def _truncate(written: Path) -> None:
    written.write_bytes(written.read_bytes()[:100])


def _garble(written: Path) -> None:
    written.write_bytes(bytes(written.stat().st_size))


def _folder_in_its_place(written: Path) -> None:
    written.unlink()
    written.mkdir()


DAMAGE = {  # what is done to the objects, what the client is told
    "missing": (_remove, "no such object"),
    "truncated": (_truncate, "its metadata says"),
    "garbled": (_garble, "unreadable Parquet"),
    "unreadable": (_folder_in_its_place, "read failed"),
}


def test_a_damaged_object_is_a_clear_error_and_the_node_serves_on(tmp_path):
    """An object file gone, cut short, garbled or unreadable under the node (an operator's
    mistake, a store that lost it): reads of its table get an error that names the object and
    what is wrong with it, not an internal one and not the node's folders; the rest works."""
    node = QuireProcess(tmp_path / "node", overrides=FLUSH).start()
    try:
        connection = node.connect()
        connection.storage = node.workdir / "storage" / "objects"
        for damage in DAMAGE:
            create(connection, damage)
            run(connection, f"INSERT INTO f.{damage} VALUES {values(range(0, 200, 5))}")
        run(connection, "CREATE TABLE f.kept (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
        run(connection, "INSERT INTO f.kept VALUES (1), (2)")
        for damage in DAMAGE:
            wait_until(
                lambda d=damage: sum(tablet_objects(connection, f"f.{d}").values()), 30, damage
            )
        wait_until(  # the flushes' commits too: no row is kept in memory any more
            lambda: "quire_cn_memory_bytes 0.0" in metrics_of(node), 30, "the flushes committed"
        )
        tablets = {
            damage: [int(row[0]) for row in run(connection, f"SHOW TABLETS FROM f.{damage}")]
            for damage in DAMAGE
        }
        connection.close()
        node.restart()  # nothing of the objects kept in memory
        for damage, (spoil, _) in DAMAGE.items():
            for tablet in tablets[damage]:
                for written in connection.storage.glob(f"t*/p*/{tablet}/*.parquet"):
                    spoil(written)
        connection = node.connect()
        prepared = mysql.connector.connect(
            host="127.0.0.1", port=node.query_port, user="root", database="f", use_pure=True
        )
        try:
            for damage, (_, told) in DAMAGE.items():

                def clear(message: str, told: str = told) -> bool:
                    return (
                        told in message and "object t" in message and str(tmp_path) not in message
                    )

                for read in (
                    f"SELECT COUNT(*), MAX(v) FROM f.{damage}",
                    f"SELECT v FROM f.{damage} WHERE k = 5",
                ):
                    code, message = error_of(connection, read)
                    assert code == 1105 and clear(message), (read, message)
                with pytest.raises(mysql.connector.Error) as caught:  # the key index's path
                    cursor = prepared.cursor(prepared=True)
                    cursor.execute(f"SELECT v FROM {damage} WHERE k = ?", (5,))
                    cursor.fetchall()
                assert caught.value.errno == 1105 and clear(caught.value.msg), caught.value.msg
                shown = mariadb_error(node, "root", "", f"SELECT k, v FROM f.{damage} WHERE k > 7")
                assert shown.startswith("ERROR 1105 (HY000)") and clear(shown), shown
        finally:
            prepared.close()
        assert run(connection, "SELECT COUNT(*) FROM f.kept") == ((2,),)
        assert run(connection, "SELECT 1") == ((1,),)
        connection.close()
    finally:
        node.stop()


@contextlib.contextmanager
def read_only(folder: Path):
    """The folder refuses new files, even to root (the immutable attribute where root runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_a_store_refusing_writes_refuses_commits_that_need_a_flush(tmp_path):
    node = QuireProcess(tmp_path / "node", overrides=FLUSH).start()
    try:
        connection = node.connect()
        create(connection, "t")
        with read_only(node.workdir / "storage" / "objects"):
            run(connection, f"INSERT INTO f.t VALUES {values(range(20))}")
            acknowledged = [(k, f"v{k}") for k in range(20)]
            keys = iter(range(100, 1000))

            def refused():  # commits are taken until the failed flush is known
                key = next(keys)
                try:
                    run(connection, f"INSERT INTO f.t VALUES ({key}, 'v{key}')")
                except pymysql.MySQLError as error:
                    return error.args
                acknowledged.append((key, f"v{key}"))
                return None

            code, message = wait_until(refused, 30, "a commit refused for want of a flush")
            assert code == 1105 and "refused its flush" in message, message
            assert run(connection, "SELECT k, v FROM f.t ORDER BY k") == tuple(acknowledged)
            assert not objects_of(node)
        acknowledged = tuple(acknowledged)

        def taken():  # once the retried flush took effect
            try:
                run(connection, "INSERT INTO f.t VALUES (500, 'x')")
            except pymysql.MySQLError as error:
                assert "refused its flush" in error.args[1], error
                return False
            return True

        wait_until(taken, 30, "a commit taken once the store takes writes")
        assert objects_of(node)
        assert run(connection, "SELECT k, v FROM f.t ORDER BY k") == (*acknowledged, (500, "x"))
        connection.close()
        node.restart()
        connection = node.connect()
        assert run(connection, "SELECT k, v FROM f.t ORDER BY k") == (*acknowledged, (500, "x"))
        connection.close()
    finally:
        node.stop()


# -- checkpoints ------------------------------------------------------------------------------


def checkpoints_of(node: QuireProcess) -> list[Path]:
    return sorted((node.workdir / "storage" / "objects" / "checkpoints").glob("*.ckpt"))


def test_checkpoint_truncates_the_log_and_a_restart_starts_from_it(tmp_path):
    node = QuireProcess(
        tmp_path / "node", overrides={**FLUSH, "tn_checkpoint_interval_second": 1}
    ).start()
    try:
        connection = node.connect()
        create(connection, "t")
        for start in range(0, 200, 40):
            run(connection, f"INSERT INTO f.t VALUES {values(range(start, start + 40))}")
        run(connection, "UPDATE f.t SET v = 'u' WHERE k % 3 = 0")
        run(connection, "DELETE FROM f.t WHERE k % 11 = 0")
        wait_until(lambda: checkpoints_of(node), 30, "a checkpoint")
        first = checkpoints_of(node)
        run(connection, "INSERT INTO f.t VALUES (900, 'after')")  # after it: in the log
        expected = run(connection, "SELECT k, v FROM f.t ORDER BY k")

        def newer():  # and the older one deleted
            found = checkpoints_of(node)
            return len(found) == 1 and found != first

        wait_until(newer, 30, "a newer checkpoint, the older one deleted")
        run(connection, "INSERT INTO f.t VALUES (901, 'later')")
        connection.close()
        node.kill(signal.SIGKILL)
        node.start()
        connection = node.connect()
        assert run(connection, "SELECT k, v FROM f.t ORDER BY k") == (*expected, (901, "later"))
        run(connection, "INSERT INTO f.t VALUES (3, 'replaced')")  # the key index came back
        assert run(connection, "SELECT v FROM f.t WHERE k = 3") == (("replaced",),)
        connection.close()
        log = node.log_file.read_text()
        assert "TN loaded checkpoint checkpoints/" in log
        assert "log truncated at LSN" in log
    finally:
        node.stop()


def test_a_damaged_checkpoint_stops_the_start_with_a_clear_error(tmp_path):
    node = QuireProcess(
        tmp_path / "node", overrides={**FLUSH, "tn_checkpoint_interval_second": 1}
    ).start()
    try:
        connection = node.connect()
        create(connection, "t")
        run(connection, f"INSERT INTO f.t VALUES {values(range(30))}")
        connection.close()
        wait_until(lambda: checkpoints_of(node), 30, "a checkpoint")
        node.stop()
        (newest,) = checkpoints_of(node)
        newest.chmod(0o644)
        data = bytearray(newest.read_bytes())
        data[len(data) // 2] ^= 0xFF
        newest.write_bytes(bytes(data))
        assert "checkpoint checksum does not match" in start_fails(node)
    finally:
        node.stop()


# -- merge ------------------------------------------------------------------------------------


def test_merge_keeps_answers_and_old_snapshots_and_deletes_replaced_objects_later(tmp_path):
    overrides = {**FLUSH, "merge_min_objects": 3, "merged_object_retention_second": 5}
    node = QuireProcess(tmp_path / "node", overrides=overrides).start()
    try:
        connection = node.connect()
        run(connection, "CREATE DATABASE f")
        run(
            connection,
            "CREATE TABLE f.m (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
        )
        run(connection, f"INSERT INTO f.m VALUES {values(range(0, 12))}")
        wait_until(lambda: len(objects_of(node)) == 1, 30, "the first flush")
        reader = node.connect()
        run(reader, "BEGIN")
        before = run(reader, "SELECT k, v FROM f.m ORDER BY k")
        moment = run(connection, "SELECT NOW(6)")[0][0]
        run(connection, f"INSERT INTO f.m VALUES {values(range(12, 24))}")
        run(connection, "DELETE FROM f.m WHERE k < 4")
        run(connection, f"INSERT INTO f.m VALUES {values(range(24, 36))}")
        run(connection, "UPDATE f.m SET v = 'u' WHERE k % 2 = 0")
        expected = tuple((k, "u" if k % 2 == 0 else f"v{k}") for k in range(4, 36))
        assert run(connection, "SELECT k, v FROM f.m ORDER BY k") == expected
        assert run(reader, "SELECT k, v FROM f.m ORDER BY k") == before, "its snapshot stands"
        run(reader, "COMMIT")
        reader.close()
        log = node.log_file
        wait_until(lambda: re.search(r"merging \d+ objects", log.read_text()), 30, "a merge")
        wait_until(
            lambda: len(objects_of(node)) < 4, 60, "the replaced objects deleted after retention"
        )
        assert run(connection, "SELECT k, v FROM f.m ORDER BY k") == expected
        wait_until(  # the CN forgets them too: the objects that replaced them serve
            lambda: "quire_cn_replaced_objects 0.0" in metrics_of(node), 30, "them forgotten"
        )
        as_of = f"SELECT k, v FROM f.m FOR SYSTEM_TIME AS OF '{moment}' ORDER BY k"
        assert run(connection, as_of) == before, "a snapshot older than the merge"
        connection.close()
        node.restart()
        connection = node.connect()
        assert run(connection, "SELECT k, v FROM f.m ORDER BY k") == expected
        connection.close()
    finally:
        node.stop()


# -- block pruning ----------------------------------------------------------------------------


def test_snapshot_skips_blocks_by_min_max(tmp_path):
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [f"storage_root={tmp_path}", "flush_rows=100", "block_rows=16"],
    )
    plane = open_embedded(config)
    plane.start()
    try:
        table = schema(partitions=(PartitionSchema(10, tablet_ids=(11,)),))
        table = replace(table, partition_columns=())
        keys = pa.array(range(100), pa.int32())
        inserts = pa.table({"k": keys, "v": [f"v{key}" for key in range(100)]})
        plane.commit(WriteSet(plane.read_ts(), (TableWrite(table, inserts=inserts),)))
        wait_until(lambda: plane.cn.table(1).memory_rows() == 0, 30, "the flush")
        ts = plane.read_ts()
        whole = plane.snapshot(table, ts, 10)
        state = plane.cn.table(1)
        (meta,) = state.objects()
        assert len(meta.blocks) == 7
        assert state._read_object(meta, {"k": (40, 45)}).num_rows == 16, "one block holds them"
        assert state._read_object(meta, {"k": (500, None)}) is None
        bounded = plane.snapshot(table, ts, 10, bounds=(ColumnBound("k", 40, 45),))
        assert whole.num_rows == 100
        assert sorted(bounded.column("k").to_pylist()) == list(range(40, 46))
        assert plane.snapshot(table, ts, 10, bounds=(ColumnBound("k", 500),)).num_rows == 0
    finally:
        plane.close()


def test_deletes_find_their_tablet_with_a_bounded_row_id_cache(tmp_path):
    store = ObjectStore.open_root(str(tmp_path))
    known = TableObjects(max_cached_row_ids=10)
    for tablet_id, first in ((11, 1), (12, 7), (13, 13)):
        ids = pa.array(range(first, first + 6), pa.int64())
        data = pa.table({"__QUIRE_ROW_ID": ids, "__QUIRE_COMMIT_TS": pa.array([5] * 6, pa.int64())})
        meta = write_blocks(store, Tablet(1, 10, tablet_id), data, schema_version=1, flush_ts=5)
        known.apply(TableChanges(1, 1, objects_added=(meta,)))
        known.remember_row_ids(meta.name, ids)
    assert known._cached <= 10
    found = known.tablets_of(store, pa.array([2, 8, 18, 99], pa.int64()))
    assert {tablet.tablet_id: ids.to_pylist() for tablet, ids in found.items()} == {
        11: [2],
        12: [8],
        13: [18],
    }


def test_nested_columns_read_back_from_their_objects(root):
    """ARRAY, MAP and STRUCT columns are several Parquet leaves each: their objects (a flush's,
    then a merge's and a delete's tombstone) still read back whole."""
    run(root, "CREATE DATABASE IF NOT EXISTS f")
    run(
        root,
        "CREATE TABLE f.nested (k INT, arr ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<a:INT>) "
        "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    values = ", ".join(
        f"""({k}, [{k}, NULL], '{{"k{k}": {k}}}', '{{"a": {k}}}')""" for k in range(12)
    )
    run(root, f"INSERT INTO f.nested VALUES {values}")  # over flush_rows: flushed
    wait_until(lambda: sum(tablet_objects(root, "f.nested").values()) > 0, 30, "the flush")
    run(root, "DELETE FROM f.nested WHERE k = 0")
    run(root, "UPDATE f.nested SET arr = [7] WHERE k = 1")
    assert run(root, "SELECT k, arr, m, s FROM f.nested WHERE k < 3 ORDER BY k") == (
        (1, "[7]", '{"k1":1}', '{"a":1}'),
        (2, "[2, null]", '{"k2":2}', '{"a":2}'),
    )
    assert run(root, "SELECT count(*) FROM f.nested WHERE arr[1] > 5") == ((7,),)


def test_admin_compact_merges_each_tablets_objects_of_the_partitions_named(quire, root):
    create(root, "compacted")
    for round_ in range(3):  # each over flush_rows: three flushes, three objects a tablet
        keys = [key + round_ for key in range(0, 1000, 4)]
        run(root, f"INSERT INTO f.compacted VALUES {values(keys, f'r{round_}')}")
        wait_until(
            lambda r=round_: min(tablet_objects(root, "f.compacted").values()) == r + 1,
            30,
            f"flush {round_ + 1} of every tablet",
        )
    before = run(root, "SELECT k, v FROM f.compacted ORDER BY k")
    p1 = {int(row[0]) for row in run(root, "SHOW TABLETS FROM f.compacted PARTITION (p1)")}
    assert all(count == (3, 3) for count in versions(root, "f.compacted").values())

    run(root, "ADMIN COMPACT TABLE f.compacted PARTITION (p1) WHERE type = 'BASE'")
    wait_until(
        lambda: all(versions(root, "f.compacted")[t] == (1, 1) for t in p1), 30, "p1 compacted"
    )
    assert all(v == (3, 3) for t, v in versions(root, "f.compacted").items() if t not in p1)
    done = mariadb(
        quire, "--batch", "-e", "ADMIN COMPACT TABLE f.compacted WHERE type = 'CUMULATIVE'"
    )
    assert done.returncode == 0, done.stderr
    wait_until(lambda: set(versions(root, "f.compacted").values()) == {(1, 1)}, 30, "all compacted")
    assert run(root, "SELECT k, v FROM f.compacted ORDER BY k") == before
    replicas = run(root, "ADMIN SHOW REPLICA STATUS FROM f.compacted")
    assert {row[8] for row in replicas} == {"1"}, replicas  # VersionNum, as VersionCount

    for statement, code in (
        ("ADMIN COMPACT TABLE f.compacted", 1105),  # Doris asks for the type
        ("ADMIN COMPACT TABLE f.compacted WHERE type = 'SOON'", 1105),
        ("ADMIN COMPACT TABLE f.missing WHERE type = 'BASE'", 1146),
        ("ADMIN COMPACT TABLE f.compacted PARTITION (p9) WHERE type = 'BASE'", 1735),
    ):
        assert error_of(root, statement)[0] == code, statement
    run(root, "CREATE USER IF NOT EXISTS 'plain'@'%' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON f.* TO 'plain'@'%'")
    plain = quire.connect(user="plain", password="pw")
    try:
        code, _ = error_of(plain, "ADMIN COMPACT TABLE f.compacted WHERE type = 'BASE'")
        assert code == 1227  # ADMIN needs the ADMIN privilege
    finally:
        plain.close()
