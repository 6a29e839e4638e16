"""Object storage and the block format: types round-trip, blocks of 8192 rows, pruning reads less,
tombstones, merges, the s3:// path against moto's server, and faults (a read-only folder,
truncated and corrupted objects)."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from be.config import BE_KEYS, DEFAULT_BE_CONF, Config
from be.logtail.entries import COMMIT_TS, ROW_ID
from be.storage import parquet_decoder
from be.storage.blocks import prune, read_blocks, read_object_meta, write_blocks
from be.storage.errors import (
    BadPredicate,
    BadRows,
    MergeRefused,
    ObjectCorrupt,
    ObjectExists,
    ObjectNotFound,
    ObjectStoreError,
    ObjectTooLarge,
    StoreUnavailable,
    UnknownColumn,
    WriteRefused,
)
from be.storage.limits import StorageLimits
from be.storage.merge import merge_objects, objects_to_merge
from be.storage.meta_codec import META_KEY, decode_object, encode_object
from be.storage.names import ObjectName, Tablet
from be.storage.objects import ObjectStore, S3Options
from be.storage.tombstones import (
    DELETE_TS,
    deleted_row_ids,
    read_tombstone_meta,
    read_tombstones,
    write_tombstones,
)
from metadata.types import parse_column_type
from tests.harness import REPO, QuireProcess, free_port, run, run_quire, wait_until

TABLET = Tablet(table_id=10, partition_id=11, tablet_id=12)
TYPES = {
    "c_tinyint": "TINYINT",
    "c_smallint": "SMALLINT",
    "c_int": "INT",
    "c_bigint": "BIGINT",
    "c_largeint": "LARGEINT",
    "c_decimal": "DECIMAL(10,2)",
    "c_decimal38": "DECIMAL(38,10)",
    "c_float": "FLOAT",
    "c_double": "DOUBLE",
    "c_date": "DATE",
    "c_datetime": "DATETIME(6)",
    "c_char": "CHAR(4)",
    "c_varchar": "VARCHAR(20)",
    "c_string": "STRING",
    "c_boolean": "BOOLEAN",
}
EXTREMES = {
    "c_tinyint": (-128, 127),
    "c_smallint": (-32768, 32767),
    "c_int": (-(2**31), 2**31 - 1),
    "c_bigint": (-(2**63), 2**63 - 1),
    "c_largeint": (Decimal(-(2**127)), Decimal(2**127 - 1)),
    "c_decimal": (Decimal("-99999999.99"), Decimal("99999999.99")),
    "c_decimal38": (Decimal("-" + "9" * 28 + ".9999999999"), Decimal("9" * 28 + ".9999999999")),
    "c_float": (-3.4028234663852886e38, 1.5),
    "c_double": (-1.7976931348623157e308, 2.5e-308),
    "c_date": (datetime.date(1, 1, 1), datetime.date(9999, 12, 31)),
    "c_datetime": (
        datetime.datetime(1, 1, 1),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
    ),
    "c_char": ("", "abcd"),
    "c_varchar": ("ünïcödé ✓", "x" * 20),
    "c_string": ("", "long " * 1000),
    "c_boolean": (False, True),
}


def rows_of(columns: dict[str, list], row_ids, commit_ts) -> pa.Table:
    arrays = {ROW_ID: pa.array(row_ids, pa.int64()), COMMIT_TS: pa.array(commit_ts, pa.int64())}
    for name, values in columns.items():
        arrays[name] = pa.array(values, parse_column_type(TYPES.get(name, "BIGINT")).arrow)
    return pa.table(arrays)


def numbered(count: int, first_row_id: int = 1, commit_ts: int = 5) -> pa.Table:
    row_ids = list(range(first_row_id, first_row_id + count))
    return pa.table(
        {
            ROW_ID: pa.array(row_ids, pa.int64()),
            COMMIT_TS: pa.array([commit_ts] * count, pa.int64()),
            "k": pa.array(row_ids, pa.int64()),
            "v": pa.array([f"value {i % 1000:04d}" for i in row_ids], pa.string()),
            "nothing": pa.array([None] * count, pa.int32()),
        }
    )


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    return ObjectStore.open_root(str(tmp_path / "storage"))


def test_every_type_round_trips_exactly(store):
    columns = {name: [low, None, high] for name, (low, high) in EXTREMES.items()}
    rows = rows_of(columns, [7, 8, 9], [3, 4, 4])
    meta = write_blocks(store, TABLET, rows, schema_version=2, flush_ts=4)
    back = read_blocks(store, meta)
    assert back.schema == rows.schema
    assert back.to_pylist() == rows.to_pylist()
    assert meta.rows == 3 and meta.schema_version == 2 and meta.flush_ts == 4
    assert meta.name == "t10/p11/12/00000000000000000004-000000.data.parquet"
    assert ObjectName.parse(meta.name).tablet == TABLET
    (block,) = meta.blocks
    assert (block.min_row_id, block.max_row_id, block.min_commit_ts, block.max_commit_ts) == (
        7,
        9,
        3,
        4,
    )
    for name, (low, high) in EXTREMES.items():
        stats = block.column(name)
        assert stats.null_count == 1, name
        if name != "c_string":  # over Parquet's 4 KiB statistics: no min/max, no pruning
            assert (stats.min, stats.max) == (min(low, high), max(low, high)), name
    assert block.column("c_string").min is None
    # The footer alone gives the same metadata (floats may hold NaN as far as it knows).
    again = read_object_meta(store, meta.name)
    assert again.blocks[0].column("c_int") == block.column("c_int")
    assert (again.name, again.rows, again.bytes, again.tablet) == (
        meta.name,
        3,
        meta.bytes,
        TABLET,
    )
    assert again.blocks[0].column("c_float").may_have_nan
    assert not block.column("c_float").may_have_nan


def test_20000_rows_make_three_blocks_sorted_by_row_id(store):
    rows = numbered(20_000)
    shuffled = rows.take(pa.array([(i * 7919) % 20_000 for i in range(20_000)]))
    meta = write_blocks(store, TABLET, shuffled, schema_version=1, flush_ts=5)
    assert [block.rows for block in meta.blocks] == [8192, 8192, 3616]
    assert [(b.min_row_id, b.max_row_id) for b in meta.blocks] == [
        (1, 8192),
        (8193, 16384),
        (16385, 20000),
    ]
    assert read_blocks(store, meta).equals(rows)
    assert read_blocks(store, meta, columns=["k"], blocks=[2]).column("k").to_pylist() == list(
        range(16385, 20001)
    )
    with pytest.raises(BadRows, match="twice"):
        write_blocks(store, TABLET, pa.concat_tables([rows, rows]), schema_version=1, flush_ts=6)
    with pytest.raises(BadRows, match="after the flush"):
        write_blocks(store, TABLET, rows, schema_version=1, flush_ts=4)
    with pytest.raises(BadRows, match="start with"):
        write_blocks(store, TABLET, rows.select(["k", ROW_ID]), schema_version=1, flush_ts=9)
    with pytest.raises(ObjectExists):
        write_blocks(store, TABLET, rows, schema_version=1, flush_ts=5)
    small = StorageLimits(block_rows=1000, max_object_rows=10_000)
    with pytest.raises(BadRows, match="1 to 10000 rows"):
        write_blocks(
            ObjectStore.open_root(store.base, limits=small),
            TABLET,
            rows,
            schema_version=1,
            flush_ts=7,
        )


class CountingStore(ObjectStore):
    """A local store whose reads are counted (the bytes pyarrow asks the file for)."""

    bytes_read = 0

    def open(self, name):
        store = self

        class Counting:
            def __init__(self, file):
                self.file = file

            def read(self, size=-1):
                data = self.file.read(size)
                store.bytes_read += len(data)
                return data

            def __getattr__(self, attribute):
                return getattr(self.file, attribute)

        return pa.PythonFile(Counting(open(f"{self.base}/{name}", "rb")), mode="r")


def test_column_and_block_pruning_read_less(tmp_path):
    store = CountingStore(pafs.LocalFileSystem(), str(tmp_path), location="counting", local=True)
    meta = write_blocks(store, TABLET, numbered(100_000), schema_version=1, flush_ts=5)
    assert len(meta.blocks) == 13

    def bytes_for(**kwargs) -> tuple[int, int]:
        store.bytes_read = 0
        table = read_blocks(store, meta, **kwargs)
        return store.bytes_read, table.num_rows

    footer, rows = bytes_for(columns=["k", "v"], blocks=[])
    assert rows == 0
    everything, all_rows = bytes_for()
    keys, rows = bytes_for(columns=["k"])
    values, _ = bytes_for(columns=["v"])
    assert rows == all_rows == 100_000
    assert keys < everything and values < everything
    assert keys + values - footer <= everything * 1.1  # each reads the footer

    chosen = prune(meta, {"k": (50_000, 50_010)})
    assert chosen == [6]
    pruned, rows = bytes_for(columns=["k", "v"], blocks=chosen)
    whole, _ = bytes_for(columns=["k", "v"])
    assert rows == 8192 and pruned - footer < (whole - footer) / 8

    assert prune(meta, {"k": (None, 8192)}) == [0]
    assert prune(meta, {"k": (8193, None)}) == list(range(1, 13))
    assert prune(meta, {"k": (42, 42)}) == [0]
    assert prune(meta, {"k": (7, 3)}) == []
    assert prune(meta, {ROW_ID: (99_999, None), "k": (None, 100_000)}) == [12]
    assert prune(meta, {COMMIT_TS: (6, None)}) == []
    assert prune(meta, {"v": ("value 0999", "value 0999")}) == list(range(13))
    assert prune(meta, {"v": ("value 1", None)}) == []
    assert prune(meta, {"nothing": (None, None)}) == [], "a column of NULLs matches no range"
    with pytest.raises(UnknownColumn):
        prune(meta, {"missing": (1, 2)})
    with pytest.raises(BadPredicate):
        prune(meta, {"k": ("a", None)})
    with pytest.raises(UnknownColumn):
        read_blocks(store, meta, columns=["missing"])


def test_nan_keeps_a_block_for_ranges_from_below(store):
    rows = rows_of({"c_double": [1.0, float("nan"), 2.0]}, [1, 2, 3], [1, 1, 1])
    meta = write_blocks(store, TABLET, rows, schema_version=1, flush_ts=1)
    assert meta.blocks[0].column("c_double").may_have_nan
    assert prune(meta, {"c_double": (10.0, None)}) == [0]  # NaN sorts above every number
    assert prune(meta, {"c_double": (None, 0.5)}) == []


def test_tombstones(store):
    meta = write_tombstones(store, TABLET, [30, 10, 20], 7)
    assert (meta.rows, meta.min_row_id, meta.max_row_id, meta.max_delete_ts) == (3, 10, 30, 7)
    assert meta.name.endswith("00000000000000000007-000000.tomb.parquet")
    table = read_tombstones(store, meta)
    assert table.column(ROW_ID).to_pylist() == [10, 20, 30]
    assert table.column(DELETE_TS).to_pylist() == [7, 7, 7]
    assert read_tombstone_meta(store, meta.name) == meta
    later = write_tombstones(store, TABLET, [40, 50], [8, 12])
    assert deleted_row_ids(store, [meta, later], 6).to_pylist() == []
    assert sorted(deleted_row_ids(store, [meta, later], 8).to_pylist()) == [10, 20, 30, 40]
    assert deleted_row_ids(store, [meta, later], 20, row_id_range=(35, 60)).to_pylist() == [
        40,
        50,
    ]
    with pytest.raises(BadRows):
        write_tombstones(store, TABLET, [1, 1], 9)
    with pytest.raises(BadRows):
        write_tombstones(store, TABLET, [], 9)


def test_merge_of_small_objects_is_their_union_less_deletes(store):
    limits = StorageLimits(merge_min_objects=4, merge_small_object_bytes=1 << 20)
    metas = [
        write_blocks(
            store,
            TABLET,
            numbered(500, 1 + i * 500, commit_ts=i + 1),
            schema_version=3,
            flush_ts=i + 1,
        )
        for i in range(10)
    ]
    assert objects_to_merge(metas[:3], limits) == ()
    assert objects_to_merge(metas, limits) == tuple(metas)
    assert objects_to_merge(
        metas, StorageLimits(merge_min_objects=4, merge_max_objects=6)
    ) == tuple(metas[:6])
    early = write_tombstones(store, TABLET, list(range(1, 5000, 3)), 10)
    late = write_tombstones(store, TABLET, [2, 5], 30, seq=1)
    merged = merge_objects(store, metas, [early, late], at_ts=20, seq=1)
    expected = pa.concat_tables([numbered(500, 1 + i * 500, commit_ts=i + 1) for i in range(10)])
    expected = expected.filter(pa.compute.not_equal(pa.compute.modulo(expected[ROW_ID], 3), 1))
    assert read_blocks(store, merged).equals(expected)
    assert merged.flush_ts == 10 and merged.rows == expected.num_rows
    assert [block.rows for block in merged.blocks] == [3333]
    assert ObjectName.parse(merged.name).ts == 20
    # Row ids survive: the later tombstones still find their rows in the merged object.
    assert deleted_row_ids(
        store, [late], 30, row_id_range=(merged.min_row_id, merged.max_row_id)
    ).to_pylist() == [2, 5]
    other = write_blocks(store, TABLET, numbered(5, 9000), schema_version=4, flush_ts=11)
    with pytest.raises(MergeRefused, match="schema version"):
        merge_objects(store, [metas[0], other], [], at_ts=20)
    with pytest.raises(MergeRefused, match="before a flush"):
        merge_objects(store, metas, [], at_ts=5)
    everything = write_tombstones(store, TABLET, list(range(1, 5001)), 15, seq=2)
    assert merge_objects(store, metas[:2], [everything], at_ts=20, seq=2) is None


def test_object_store_basics(store, tmp_path):
    assert store.list() == []
    assert store.put("a/b/one", b"1") == 1
    store.put("a/two", pa.py_buffer(b"22"))
    assert store.list() == ["a/b/one", "a/two"] and store.list("a/b/") == ["a/b/one"]
    assert store.size("a/two") == 2 and store.read("a/two").to_pybytes() == b"22"
    assert store.exists("a/two") and not store.exists("a/three")
    with pytest.raises(ObjectExists):
        store.put("a/two", b"other")
    assert store.read("a/two").to_pybytes() == b"22"
    for bad in ("../escape", "/absolute", "a//b", ".hidden", "a/../b", ""):
        with pytest.raises(ObjectStoreError, match="not a valid object name"):
            store.put(bad, b"x")
    with pytest.raises(ObjectNotFound):
        store.open("a/three")
    with pytest.raises(ObjectNotFound):
        store.size("a/three")
    store.delete("a/two")
    with pytest.raises(ObjectNotFound):
        store.delete("a/two")
    store.delete("a/two", missing_ok=True)
    tiny = ObjectStore.open_root(
        str(tmp_path / "tiny"),
        limits=StorageLimits(
            max_object_bytes=1 << 20,
            max_footer_bytes=1 << 16,
            merge_max_bytes=1 << 20,
            merge_small_object_bytes=1 << 16,
        ),
    )
    with pytest.raises(ObjectTooLarge):
        tiny.put("big", b"x" * ((1 << 20) + 1))
    assert not (tmp_path / "tiny").exists()
    with pytest.raises(ValueError, match="multiple of block_rows"):
        StorageLimits(block_rows=1000, max_object_rows=1500)
    with pytest.raises(ObjectStoreError, match="no credentials"):
        ObjectStore.open_root("s3://key:secret@bucket/prefix")


def test_store_and_limits_from_be_conf(tmp_path):
    config = Config.load(
        BE_KEYS,
        [DEFAULT_BE_CONF],
        [
            f"storage_root={tmp_path}",
            "merge_min_objects=3",
            "s3_secret_key=hush",
            "s3_access_key=me",
        ],
    )
    store = ObjectStore.from_config(config)
    assert store.base == f"{tmp_path}/objects" and store.limits.merge_min_objects == 3
    assert store.limits.block_rows == 8192 and store.limits.compression == "ZSTD"
    options = S3Options.from_config(config)
    assert "hush" not in repr(options) and "hush" not in repr(store)


# --- faults ---------------------------------------------------------------------------------


def make_read_only(folder: Path) -> bool:
    """chmod 0555, and for root (whom modes do not stop) the immutable attribute; whether it took."""
    folder.chmod(0o555)
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            return False
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            return False
    try:
        (folder / ".probe").touch()
    except OSError:
        return True
    (folder / ".probe").unlink()
    return False


def make_writable(folder: Path) -> None:
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    folder.chmod(0o755)


def test_read_only_folder_refuses_writes_and_leaves_nothing(store):
    first = write_blocks(store, TABLET, numbered(10), schema_version=1, flush_ts=5)
    tablet_folder = Path(store.base) / TABLET.prefix
    objects_folder = Path(store.base) / "t10"
    if not make_read_only(tablet_folder):
        pytest.skip("cannot make a folder read-only here")
    try:
        assert make_read_only(objects_folder)
        with pytest.raises(WriteRefused):
            write_blocks(store, TABLET, numbered(10, 100), schema_version=1, flush_ts=6)
        with pytest.raises(WriteRefused):
            write_tombstones(store, TABLET, [1], 6)
        with pytest.raises(WriteRefused):
            write_blocks(store, Tablet(10, 12, 13), numbered(10), schema_version=1, flush_ts=6)
        with pytest.raises(WriteRefused):
            store.delete(first.name)
        assert sorted(os.listdir(tablet_folder)) == [Path(first.name).name]
        assert store.list() == [first.name]
        assert read_blocks(store, first).num_rows == 10, "reads go on"
    finally:
        make_writable(objects_folder)
        make_writable(tablet_folder)
    write_blocks(store, TABLET, numbered(10, 100), schema_version=1, flush_ts=6)
    assert len(store.list(TABLET.prefix)) == 2


def test_objects_read_whole_by_duckdb_equal_pyarrows_reads(store):
    """A local object whose column checksums are known is checked column by column and decoded
    by DuckDB's reader: the same rows and types as pyarrow's reader gives, every type but
    LARGEINT (read by pyarrow), all columns and some; an object whose metadata predates the
    checksums (format 1) is read by pyarrow."""
    columns = {name: [low, None, high] * 4000 for name, (low, high) in EXTREMES.items()}
    del columns["c_largeint"]
    rows = rows_of(columns, list(range(1, 12_001)), [3] * 12_000)
    meta = write_blocks(store, TABLET, rows, schema_version=2, flush_ts=4)
    assert len(meta.column_checksums) == rows.num_columns and len(meta.blocks) == 2
    assert parquet_decoder.decodes_exactly(rows.schema), "DuckDB decodes every column here"
    by_pyarrow = replace(meta, column_checksums=())
    for chosen in (None, ["c_decimal", "c_datetime", "c_varchar"], [ROW_ID, "c_date"]):
        whole = read_blocks(store, meta, chosen)
        assert whole.equals(read_blocks(store, by_pyarrow, chosen)), chosen
    assert read_blocks(store, meta).to_pylist() == rows.to_pylist()
    assert decode_object(encode_object(meta)) == meta
    header_of = pa.ipc.open_stream(encode_object(meta)).read_all()
    header = json.loads(header_of.schema.metadata[META_KEY])
    header["version"] = 1
    del header["column_checksums"]
    old = header_of.replace_schema_metadata({META_KEY: json.dumps(header).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, old.schema) as writer:
        writer.write_table(old)
    assert decode_object(sink.getvalue().to_pybytes()) == by_pyarrow


def test_truncated_or_corrupted_objects_give_clear_errors(store):
    meta = write_blocks(store, TABLET, numbered(20_000), schema_version=1, flush_ts=5)
    tomb = write_tombstones(store, TABLET, [1, 2, 3], 6)
    path = Path(store.base) / meta.name
    original = path.read_bytes()

    path.write_bytes(original[: len(original) // 2])
    with pytest.raises(ObjectCorrupt, match="metadata says"):
        read_blocks(store, meta)
    with pytest.raises(ObjectCorrupt, match="end marker"):
        read_object_meta(store, meta.name)

    damaged = bytearray(original)
    for offset in range(200, 260):  # inside the first data page of the first column
        damaged[offset] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(ObjectCorrupt, match="unreadable Parquet"):
        read_blocks(store, meta)

    path.write_bytes(b"\0" * len(original))
    with pytest.raises(ObjectCorrupt):
        read_blocks(store, meta)
    with pytest.raises(ObjectCorrupt):
        read_object_meta(store, meta.name)

    tomb_path = Path(store.base) / tomb.name
    tomb_path.write_bytes(path.read_bytes()[: tomb.bytes])
    with pytest.raises(ObjectCorrupt):
        read_tombstones(store, tomb)

    path.write_bytes(original)
    assert read_blocks(store, meta).num_rows == 20_000
    path.unlink()
    with pytest.raises(ObjectNotFound):
        read_blocks(store, meta)


WRITER = """
import os, sys
from be.storage.objects import ObjectStore
store = ObjectStore.open_root(sys.argv[1])
for number in range(1000):
    store.put(f"big/{number:04d}", os.urandom(8 << 20))
"""


def test_a_writer_killed_mid_write_leaves_only_whole_objects(tmp_path):
    root = tmp_path / "storage"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root)], cwd=Path(__file__).resolve().parent.parent
    )
    store = ObjectStore.open_root(str(root))
    try:
        wait_until(lambda: len(store.list()) >= 2, 60, "the writer's first objects")
    finally:
        writer.kill()
        writer.wait(timeout=30)
    names = store.list()
    assert names == [f"big/{number:04d}" for number in range(len(names))]
    assert all(store.size(name) == 8 << 20 for name in names), "no object is half-written"
    leftovers = [path for path in (root / "objects" / "big").iterdir() if path.name.startswith(".")]
    assert store.remove_temporaries() == len(leftovers) <= 1
    assert sorted(path.name for path in (root / "objects" / "big").iterdir()) == [
        name.split("/")[1] for name in names
    ]


# --- s3:// against moto's server -------------------------------------------------------------


def test_s3_path_against_moto_server(moto_endpoint):
    options = S3Options(
        endpoint=moto_endpoint,
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
    )
    options.filesystem().create_dir("quire-bucket")
    store = ObjectStore.open_root("s3://quire-bucket/cluster1", s3=options)
    assert store.location == "s3://quire-bucket/cluster1/objects"
    rows = rows_of(
        {name: [low, None, high] for name, (low, high) in EXTREMES.items()}, [1, 2, 3], [1, 1, 1]
    )
    meta = write_blocks(store, TABLET, rows, schema_version=1, flush_ts=1)
    assert read_blocks(store, meta).to_pylist() == rows.to_pylist()
    big = write_blocks(store, TABLET, numbered(20_000), schema_version=1, flush_ts=5)
    assert [block.rows for block in big.blocks] == [8192, 8192, 3616]
    assert (
        read_blocks(store, big, columns=["k"], blocks=prune(big, {"k": (9000, 9001)})).num_rows
        == 8192
    )
    assert read_object_meta(store, big.name).blocks[1].column("k").min == 8193
    tomb = write_tombstones(store, TABLET, [2, 3], 6)
    assert read_tombstones(store, tomb).column(ROW_ID).to_pylist() == [2, 3]
    assert store.list(TABLET.prefix) == sorted([meta.name, big.name, tomb.name])
    with pytest.raises(ObjectExists):
        write_blocks(store, TABLET, rows, schema_version=1, flush_ts=1)
    assert read_tombstone_meta(store, tomb.name) == tomb
    store.delete(meta.name)
    with pytest.raises(ObjectNotFound):
        read_blocks(store, meta)
    with store.filesystem.open_output_stream(f"{store.base}/{meta.name}") as stream:
        stream.write(b"not parquet at all, but as long as the object was" * 100)
    with pytest.raises(ObjectCorrupt):
        read_object_meta(store, meta.name)
    store.delete(meta.name)
    assert store.list() == sorted([big.name, tomb.name])
    unreachable = ObjectStore.open_root(
        "s3://quire-bucket/cluster1",
        s3=S3Options(
            endpoint=f"http://127.0.0.1:{free_port()}",
            region="us-east-1",
            access_key="testing",
            secret_key="testing",
            max_attempts=1,
            connect_timeout_ms=500,
            request_timeout_ms=1000,
        ),
    )
    with pytest.raises(StoreUnavailable):
        unreachable.put("x", b"x")
    with pytest.raises(StoreUnavailable):
        read_blocks(unreachable, big)


def test_quire_up_keeps_objects_in_s3_and_its_log_in_tn_log_dir(moto_endpoint, tmp_path):
    """An s3:// storage_root holds the objects only: a start without tn_log_dir is refused in one
    line (no local folder named after the URI appears); with it, rows are flushed to the bucket
    and read back."""
    S3Options(
        endpoint=moto_endpoint,
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
    ).filesystem().create_dir("quire-up")
    s3 = {
        "storage_root": "s3://quire-up/cluster",
        "s3_endpoint": moto_endpoint,
        "s3_region": "us-east-1",
        "s3_access_key": "testing",
        "s3_secret_key": "testing",
        "flush_rows": 10,
        "flush_interval_second": 1,
    }
    node = QuireProcess(tmp_path / "up", s3)
    refused = run_quire(
        "up", *[arg for k, v in node.overrides.items() for arg in ("--override", f"{k}={v}")]
    )
    assert refused.returncode == 1
    assert "tn_log_dir" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (REPO / "s3:").exists() and not (tmp_path / "up" / "meta").exists()
    node = QuireProcess(tmp_path / "up", {**s3, "tn_log_dir": tmp_path / "up" / "tn-log"}).start()
    try:
        connection = node.connect()
        run(connection, "CREATE DATABASE s")
        run(connection, "CREATE TABLE s.t (k INT, v VARCHAR(8)) DISTRIBUTED BY HASH(k) BUCKETS 2")
        run(connection, "INSERT INTO s.t VALUES " + ", ".join(f"({k}, 'v{k}')" for k in range(50)))
        bucket = ObjectStore.open_root(
            "s3://quire-up/cluster",
            s3=S3Options(
                endpoint=moto_endpoint, region="us-east-1", access_key="testing",
                secret_key="testing",
            ),
        )  # fmt: skip
        wait_until(lambda: any(".data." in name for name in bucket.list()), 30, "a flush")
        assert (tmp_path / "up" / "tn-log" / "wal").exists()
        assert run(connection, "SELECT count(*), sum(k) FROM s.t") == ((50, 1225),)
        connection.close()
    finally:
        node.stop()
    assert not (REPO / "s3:").exists()
