"""A CN's rows in memory arrive one commit at a time and are combined as they pile up, size-tiered:
after hundreds of commits of mixed sizes over two partitions, every snapshot (any timestamp, either
partition, both) still reads exactly the rows committed, the pieces stay few, and no commit copies
every row held (the largest piece is combined a bounded number of times). Pieces of a settled size
are combined no more: a load's rows are copied once at most."""

from __future__ import annotations

import random

import pyarrow as pa

from be.cn.table_state import SETTLED_TIER, TIER_BITS, TIER_PIECES, TableState
from be.logtail.entries import PARTITION_ID, ROW_ID, TableChanges
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from metadata.records import KeyModel

SCHEMA = TableSchema(
    71,
    1,
    (ColumnSchema("k", pa.int64(), False, id=1), ColumnSchema("v", pa.string(), id=2)),
    KeyModel.DUPLICATE,
    ("k",),
    "LIST",
    ("k",),
    (PartitionSchema(72, tablet_ids=(74,)), PartitionSchema(73, tablet_ids=(75,))),
    ("k",),
)
COMMITS = 2000


def _change(first: int, count: int, partition: int) -> TableChanges:
    ids = pa.array(range(first, first + count), pa.int64())
    fields = [pa.field(ROW_ID, pa.int64(), False), pa.field(PARTITION_ID, pa.int64(), False)]
    rows = pa.table(
        [
            ids,
            pa.repeat(pa.scalar(partition, pa.int64()), count),
            ids,
            pa.array([f"v{i}" for i in range(first, first + count)]),
        ],
        schema=pa.schema([*fields, *SCHEMA.stored()]),
    )
    return TableChanges(SCHEMA.table_id, SCHEMA.schema_version, inserts=rows)


def test_many_small_commits_read_back_exactly_from_few_pieces():
    state = TableState(SCHEMA.table_id)
    generator = random.Random(7)
    committed: list[tuple[int, int, int]] = []  # (commit ts, key, partition)
    most_pieces, next_key, copied = 0, 0, 0
    before: list[pa.Table] = []
    for number in range(COMMITS):
        count = generator.choice((1, 2, 7, 40, 300))
        partition = generator.choice((72, 73))
        ts = 1000 + number
        state.apply(_change(next_key, count, partition), ts)
        committed.extend((ts, key, partition) for key in range(next_key, next_key + count))
        next_key += count
        pieces = state._rows
        most_pieces = max(most_pieces, len(pieces))
        kept = {id(piece) for piece in before}  # alive in before: ids not reused
        made = [piece for piece in pieces if id(piece) not in kept]  # the commit's, or combined
        copied += sum(piece.num_rows for piece in made) - count
        before = list(pieces)
    settled_rows = 1 << (SETTLED_TIER * TIER_BITS)  # the fewest rows of a piece combined no more
    # a settled piece (and the smaller ones before it, as one) per settled_rows, a tier's worth
    # of pieces of each smaller tier
    assert most_pieces <= 2 * next_key // settled_rows + TIER_PIECES * SETTLED_TIER, most_pieces
    assert copied <= 6 * next_key, (copied, next_key)  # each row a few times, not every 64 commits

    def keys(ts: int, partitions: frozenset[int] | None) -> list[int]:
        snapshot = state.snapshot(SCHEMA, ts, partitions=partitions)
        return sorted(snapshot.column("k").to_pylist())

    newest = 1000 + COMMITS - 1
    for ts in (1000, 1000 + COMMITS // 3, newest):
        for partitions in (None, frozenset({72}), frozenset({73})):
            expected = sorted(
                key
                for at, key, partition in committed
                if at <= ts and (partitions is None or partition in partitions)
            )
            assert keys(ts, partitions) == expected, (ts, partitions)


def test_a_load_is_copied_at_most_once_and_small_commits_between_big_ones_are_not_left_alone():
    """Commits of 1000 rows (a bulk INSERT's) are copied once, into pieces of 8000 combined no
    more; 3000-row commits (one after another or not) with small ones between them are never
    copied, and leave one piece of small ones before each big one, not a piece per commit.
    Every row reads back."""
    # 15 pieces of 8000 and a tier's worth; a big piece each, a piece of small ones before each
    cases = (
        ((1000,), 15 + TIER_PIECES),
        ((3000, 5, 7), 2 * 40 + TIER_PIECES),
        ((3000, 3000, 5), 80 + 40 + TIER_PIECES),
    )
    for sizes, allowed in cases:
        state = TableState(SCHEMA.table_id)
        next_key, copied, most_pieces, small_rows = 0, 0, 0, 0
        before: list[pa.Table] = []
        for number in range(120):
            count = sizes[number % len(sizes)]
            state.apply(_change(next_key, count, 72), 1000 + number)
            next_key += count
            small_rows += count if count < 2048 else 0
            kept = {id(piece) for piece in before}
            copied += sum(p.num_rows for p in state._rows if id(p) not in kept) - count
            most_pieces = max(most_pieces, len(state._rows))
            before = list(state._rows)
        assert copied <= small_rows, (sizes, copied, small_rows)
        assert most_pieces <= allowed, (sizes, most_pieces)
        snapshot = state.snapshot(SCHEMA, 1000 + 119)
        assert sorted(snapshot.column("k").to_pylist()) == list(range(next_key)), sizes
