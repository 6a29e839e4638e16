"""A CN's first scan of flushed objects: only the columns a query reads are decoded (keys and
distribution columns nobody reads are not), the objects missing the same columns are decoded
together, and a corrupted column chunk is still refused."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from be.cn.limits import ComputeLimits
from be.cn.object_cache import ObjectCache
from be.cn.table_state import TableState
from be.logtail.entries import COMMIT_TS, ROW_ID
from be.storage.blocks import ObjectMeta, write_blocks
from be.storage.errors import ObjectCorrupt
from be.storage.limits import StorageLimits
from be.storage.names import Tablet
from be.storage.objects import ObjectStore
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from metadata.records import KeyModel

OBJECTS = 4
ROWS = 3000  # per object: blocks of 1000 rows
FLUSH_TS = 100
SCHEMA = TableSchema(
    51,
    1,
    (
        ColumnSchema("k", pa.int64(), False, id=1),
        ColumnSchema("d", pa.int64(), False, id=2),
        ColumnSchema("price", pa.decimal128(15, 2), id=3),
        ColumnSchema("flag", pa.string(), id=4),
    ),
    KeyModel.DUPLICATE,
    ("k", "d"),
    partitions=(PartitionSchema(52, tablet_ids=tuple(range(60, 60 + OBJECTS))),),
    distribution_columns=("k",),
)


def _rows(tablet: int) -> pa.Table:
    first = tablet * ROWS
    ids = pa.array(range(first, first + ROWS), pa.int64())
    stored = pa.schema(
        [
            pa.field(ROW_ID, pa.int64(), False),
            pa.field(COMMIT_TS, pa.int64(), False),
            *SCHEMA.stored(),
        ]
    )
    return pa.table(
        [
            ids,
            pa.repeat(pa.scalar(FLUSH_TS - 1, pa.int64()), ROWS),
            ids,
            pc.multiply(ids, 2),
            pa.array([f"{i % 1000}.25" for i in range(first, first + ROWS)]).cast(
                pa.decimal128(15, 2)
            ),
            pa.array(["AR"[i % 2] for i in range(first, first + ROWS)]),
        ],
        schema=stored,
    )


@pytest.fixture
def table(tmp_path):
    store = ObjectStore.open_root(
        str(tmp_path / "storage"), limits=StorageLimits(block_rows=1000, max_object_rows=10_000)
    )
    metas = tuple(
        write_blocks(
            store,
            Tablet(SCHEMA.table_id, 52, 60 + index),
            _rows(index),
            schema_version=1,
            flush_ts=FLUSH_TS,
        )
        for index in range(OBJECTS)
    )
    cache = ObjectCache(ComputeLimits())
    state = TableState(SCHEMA.table_id, store, cache)
    state.restore(metas, (), FLUSH_TS)
    return state, cache, store, metas


def _kept_columns(cache: ObjectCache, meta: ObjectMeta) -> set[str]:
    return {column for column in meta.column_names if not cache.missing(meta.name, (column,))}


def test_a_scan_decodes_only_the_columns_it_reads(table):
    state, cache, _, metas = table
    rows = state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset({"price", "flag"}))
    assert rows.column_names == ["price", "flag"]
    assert rows.num_rows == OBJECTS * ROWS
    assert rows.column("flag").to_pylist()[:3] == ["A", "R", "A"]
    assert str(pc.sum(rows.column("price"))) == str(
        sum(pc.sum(_rows(index).column("price")).as_py() for index in range(OBJECTS))
    )
    for meta in metas:  # neither the keys nor the distribution column were decoded
        assert _kept_columns(cache, meta) == {"price", "flag"}


def test_a_scan_naming_no_column_counts_the_rows_by_one_key(table):
    state, cache, _, metas = table
    rows = state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset())
    assert rows.column_names == ["k"] and rows.num_rows == OBJECTS * ROWS
    assert all(_kept_columns(cache, meta) == {"k"} for meta in metas)


def test_columns_missing_since_an_earlier_scan_are_decoded_together(table):
    state, cache, _, metas = table
    state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset({"flag"}))
    rows = state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset({"flag", "d"}))
    assert rows.column_names == ["d", "flag"]
    assert rows.column("d").to_pylist() == [2 * i for i in range(OBJECTS * ROWS)]
    assert all(_kept_columns(cache, meta) == {"flag", "d"} for meta in metas)
    whole = state.snapshot(SCHEMA, FLUSH_TS)
    assert whole.column_names == ["k", "d", "price", "flag"]
    assert whole.column("k").to_pylist() == list(range(OBJECTS * ROWS))


def test_a_corrupted_column_chunk_is_refused_by_a_first_scan(table):
    state, _, store, metas = table
    path = store.local_path(metas[2].name)
    chunk = pq.read_metadata(path).row_group(1).column(metas[2].column_names.index("price"))
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    at = start + chunk.total_compressed_size // 2
    with open(path, "r+b") as file:  # a byte of the price column's second block
        file.seek(at)
        byte = file.read(1)
        file.seek(at)
        file.write(bytes([byte[0] ^ 0xFF]))
    assert state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset({"flag"})).num_rows == 4 * ROWS
    with pytest.raises(ObjectCorrupt, match="price"):
        state.snapshot(SCHEMA, FLUSH_TS, columns=frozenset({"price", "flag"}))
