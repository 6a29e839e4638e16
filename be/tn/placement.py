"""Placement: the partition and the tablet of each row, a pure function of the table's schema.

A row's partition is the one whose RANGE holds its partition columns (lower inclusive, upper
exclusive, compared column by column as Doris does) or whose LIST names them; a table without
partition columns has one partition. Its bucket is a hash of its DISTRIBUTED BY columns modulo the
partition's buckets, or, for DISTRIBUTED BY RANDOM, its row id modulo them (round robin)."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import PARTITION_ID, ROW_ID
from be.storage.names import Tablet
from be.table_schema import PartitionSchema, TableSchema
from be.tn.errors import NoPartitionForRow
from be.tn.text_crc import crc32_each

HASH_MASK = 0xFFFFFFFF
SHOWN_COLUMNS = 8
SAMPLE_VALUES = 1024  # of a distribution column, looked at to choose how to hash it
LEAST_TIME = "0000-01-01"  # the values a refusal quotes


def placeable(schema: TableSchema) -> bool:
    """Whether the schema names the table's tablets (a schema built without the catalog may not)."""
    return bool(schema.partitions or schema.partition_columns)


_FIRST_PARTITION = pa.scalar(0, pa.int32())
_NO_HASH = pa.scalar(0, pa.int64())


def partition_indexes(schema: TableSchema, rows: pa.Table, strict: bool = True) -> pa.Array:
    """Per row, the index in schema.partitions of its partition; if a row has none,
    NoPartitionForRow (nothing is placed then), or NULL when not strict."""
    assert placeable(schema)
    count = rows.num_rows
    if not schema.partition_columns:
        return pa.repeat(_FIRST_PARTITION, count)
    columns = [rows.column(name).combine_chunks() for name in schema.partition_columns]
    found = pa.nulls(count, pa.int32())
    for index, partition in enumerate(schema.partitions):
        holds = _holds(schema, partition, columns)
        found = pc.if_else(pc.and_(pc.is_null(found), holds), pa.scalar(index, pa.int32()), found)
    missing = pc.is_null(found)
    if strict and count and pc.any(missing).as_py():
        row = pc.index(missing, True).as_py()
        values = ", ".join(str(column[row].as_py()) for column in columns[:SHOWN_COLUMNS])
        raise NoPartitionForRow(f"no partition for this tuple. tuple=({values})")
    return found


def in_partitions(schema: TableSchema, rows: pa.Table, partition_ids: frozenset[int]) -> pa.Table:
    """Of rows (with the partition columns), those whose partition is one of partition_ids."""
    assert placeable(schema)
    kept = [
        index for index, partition in enumerate(schema.partitions) if partition.id in partition_ids
    ]
    if len(kept) == len(schema.partitions) or not rows.num_rows:
        return rows
    indexes = partition_indexes(schema, rows, strict=False)
    return rows.filter(pc.is_in(indexes, pa.array(kept, pa.int32())))


def by_tablet(schema: TableSchema, rows: pa.Table) -> dict[Tablet, pa.Table]:
    """rows (ROW_ID first) split by tablet, in row order within each; rows of no partition (one
    dropped since they were written) are left out."""
    indexes = partition_indexes(schema, rows, strict=False)
    placed: dict[Tablet, pa.Table] = {}
    for index, partition in enumerate(schema.partitions):
        if len(schema.partitions) == 1 and not indexes.null_count:
            members = rows  # every row in the one partition: no copy
        else:
            members = rows.filter(pc.equal(indexes, index))
        if not members.num_rows:
            continue
        buckets = _buckets(schema, partition, members)
        for bucket, tablet_id in enumerate(partition.tablet_ids):
            part = (
                members.filter(pc.equal(buckets, bucket))
                if len(partition.tablet_ids) > 1
                else members
            )
            if part.num_rows:
                placed[Tablet(schema.table_id, partition.id, tablet_id)] = part
    assert sum(part.num_rows for part in placed.values()) <= rows.num_rows
    return placed


def by_placed_partition(schema: TableSchema, rows: pa.Table) -> dict[Tablet, pa.Table]:
    """rows (ROW_ID, COMMIT_TS, PARTITION_ID: the partition the TN placed each in when it was
    written) split by tablet, in row order within each, without PARTITION_ID. A partition the
    schema lists splits into its buckets; the rows of one it does not (dropped, and maybe
    recovered later) keep together under the partition's id as their tablet's, an id no real
    tablet has (the catalog hands out each id once)."""
    placed: dict[Tablet, pa.Table] = {}
    listed = {partition.id: partition for partition in schema.partitions}
    column = rows.column(PARTITION_ID)
    for partition_id in pc.unique(column).to_pylist():
        part = rows.filter(pc.equal(column, partition_id)).drop_columns([PARTITION_ID])
        partition = listed.get(partition_id)
        if partition is None:
            placed[Tablet(schema.table_id, partition_id, partition_id)] = part
            continue
        buckets = _buckets(schema, partition, part)
        for bucket, tablet_id in enumerate(partition.tablet_ids):
            mine = part.filter(pc.equal(buckets, bucket)) if len(partition.tablet_ids) > 1 else part
            if mine.num_rows:
                placed[Tablet(schema.table_id, partition_id, tablet_id)] = mine
    return placed


def _holds(schema: TableSchema, partition: PartitionSchema, columns: list[pa.Array]) -> pa.Array:
    count = len(columns[0])
    if schema.partition_kind == "LIST":
        holds = pa.array([False] * count)
        for value in partition.values:
            equal = pa.array([True] * count)
            for column, text in zip(columns, value, strict=True):
                same = pc.fill_null(pc.equal(column, _typed(text, column.type)), False)
                equal = pc.and_(equal, same)
            holds = pc.or_(holds, equal)
        return holds
    holds = pa.array([True] * count)
    if partition.lower:
        holds = pc.and_(holds, _compare(columns, partition.lower, "lower"))
    if partition.upper:
        holds = pc.and_(holds, _compare(columns, partition.upper, "upper"))
    return holds


def _compare(columns: list[pa.Array], bound: tuple[str, ...], side: str) -> pa.Array:
    """Rows at or above a lower bound, or below an upper one, column by column. NULL sorts below
    every value, as in Doris (it lands in the partition that starts at the least value)."""
    result = None
    for column, text in reversed(list(zip(columns, bound, strict=False))):
        value = _typed(text, column.type)
        if side == "lower":
            strict = pc.fill_null(pc.greater(column, value), False)
            tie = pc.fill_null(pc.equal(column, value), False)
            if result is None:
                result = pc.or_(strict, tie)
            else:
                result = pc.or_(strict, pc.and_(tie, result))
            least = pc.is_null(column)
            result = pc.or_(result, pc.and_(least, pa.scalar(_is_least(value, column.type))))
        else:
            strict = pc.fill_null(pc.less(column, value), True)
            tie = pc.fill_null(pc.equal(column, value), False)
            result = strict if result is None else pc.or_(strict, pc.and_(tie, result))
    return result


def _typed(text: str, arrow_type: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pa.scalar(text, arrow_type)
    return pa.scalar(text).cast(arrow_type)


def _is_least(value: pa.Scalar, arrow_type: pa.DataType) -> bool:
    """Whether no value of the type sorts below value (a padded lower bound)."""
    if pa.types.is_integer(arrow_type):
        return value.as_py() == -(1 << (arrow_type.bit_width - 1))
    if pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type):
        return value.equals(_typed(LEAST_TIME, arrow_type))
    return value.as_py() == ""


def _buckets(schema: TableSchema, partition: PartitionSchema, rows: pa.Table) -> pa.Array:
    count = len(partition.tablet_ids)
    if count == 1:
        return pa.repeat(_NO_HASH, rows.num_rows)
    if schema.distribution_columns:
        hashed = pa.repeat(_NO_HASH, rows.num_rows)
        for name in schema.distribution_columns:
            hashed = pc.bit_wise_and(
                pc.add(pc.multiply(hashed, 31), _column_hash(rows.column(name))), HASH_MASK
            )
    else:
        hashed = rows.column(ROW_ID).combine_chunks()
    return pc.subtract(hashed, pc.multiply(pc.divide(hashed, count), count))


def _column_hash(column: pa.ChunkedArray) -> pa.Array:
    """A stable hash of each value (the same in every process): CRC-32 of its text, computed
    once per distinct value (per value when a sample shows them mostly distinct); NULL hashes
    to 0."""
    array = column.combine_chunks()
    texts_of_arrow = pa.types.is_integer(array.type) or pa.types.is_string(array.type)
    if texts_of_arrow and _mostly_distinct(array):
        hashes = _text_hashes(pc.fill_null(pc.cast(array, pa.string()), ""))
        return pc.if_else(array.is_null(), 0, hashes)
    encoded = array.dictionary_encode()
    values = encoded.dictionary
    if texts_of_arrow:
        hashes = _text_hashes(pc.cast(values, pa.string()))
    else:
        hashes = pa.array(
            [zlib.crc32(str(value).encode()) for value in values.to_pylist()], pa.int64()
        )
    return pc.fill_null(pc.take(hashes, encoded.indices), 0)


def _text_hashes(texts: pa.Array) -> pa.Array:
    """CRC-32 of each text (no NULLs), as UTF-8: the same text str() gives, made by Arrow."""
    binary = pc.cast(texts, pa.binary())
    vector = crc32_each(binary)
    if vector is not None:
        return pa.array(vector.astype("int64"))
    return pa.array([zlib.crc32(text) for text in binary.to_pylist()], pa.int64())


def _mostly_distinct(array: pa.Array) -> bool:
    """Whether the first SAMPLE_VALUES values are more than half distinct: hashing each value
    then costs less than finding the distinct ones first."""
    sample = array.slice(0, SAMPLE_VALUES)
    return len(sample) > 0 and 2 * pc.count_distinct(sample).as_py() > len(sample)
