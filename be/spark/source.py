"""spark.read.format("quire") (and df.write.format("quire"), be/spark/writer.py): a PySpark Python data source reading a Quire table straight from
object storage at one snapshot.

The reader asks an FE for the table's read plan once (be/spark/plans.py) and cuts it into Spark
partitions of a few tablets' blocks each (with prune_blocks, only the blocks Spark's pushed
filters may match, by their min/max); a task reads its blocks with pyarrow (be/spark/scan.py)
and hands Spark Arrow record batches in exactly Spark's Arrow schema. The rows not yet flushed travel in the plan and make one
partition of their own. Every partition is part of the same plan, so a read is the table at one
snapshot whatever commits, flushes and merges happen meanwhile; and a DataFrame is the table at
the snapshot of its load() (schema() pins it: Spark keeps the data source as schema() left it),
every action on it alike.

Pruning is off unless prune_blocks is true. It skips the blocks the pushed filters cannot match,
and applies those filters it can evaluate exactly to the rows it reads, so that Spark does not
(be/spark/filters.py). But Spark 4.3 keeps the partitions planned for a filtered scan on the
DataFrame's relation and reuses them for a later scan of the same DataFrame without filters,
which would then miss the pruned blocks and the filtered rows (later Spark keeps them per scan).
With prune_blocks, read a DataFrame once, or always with the same filters.

Options: fe (host:http_port), user, password, table ("db.t"), snapshot (a commit timestamp;
default the newest readable at load()), columns ("a,b": the columns read, since Spark does not
prune the columns of Python data sources), prune_blocks ("true": skip blocks by Spark's filters),
partition_rows, parallelism (the tasks Spark runs at once, 2 by default: the blocks are cut
into a multiple of that many partitions, so no core waits while one reads alone), batch_rows
(rows of an Arrow batch handed to Spark), s3_endpoint, s3_region,
s3_access_key, s3_secret_key (an s3:// store; no keys: the AWS default chain).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from dataclasses import replace

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from be.read_plan import ReadPlan
from be.spark.errors import BadOption
from be.spark.filters import kept, split
from be.spark.limits import SparkReadLimits
from be.spark.options import (
    limits,
    lowered,
    positive_integer,
    require_fe_user_table,
    s3_options,
)
from be.spark.plans import fetch_plan
from be.spark.pruning import Ranges, chosen_blocks, ranges_of
from be.spark.scan import PartitionParts, open_store, scan
from be.spark.types import arrow_schema, spark_schema, spark_type, to_spark_arrow
from be.storage.blocks import ObjectMeta
from metadata.records import KeyModel

logger = logging.getLogger(__name__)

_FROZEN = False  # whether this Python worker froze what it holds for good (gc.freeze)


class QuireDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "quire"

    def schema(self) -> StructType:
        options = ReadOptions.of(self.options)
        plan = options.fetch(schema_only=True)
        self.pinned_ts = plan.ts  # every read of this DataFrame: the snapshot of its load()
        return spark_schema(plan.schema, options.columns)

    def writer(self, schema: StructType, overwrite: bool):
        """df.write.format("quire") (be/spark/writer.py)."""
        from be.spark.writer import QuireWriter, WriteOptions

        return QuireWriter(WriteOptions.of(self.options), schema, overwrite)

    def reader(self, schema: StructType) -> QuireReader:
        options = ReadOptions.of(self.options)
        if options.snapshot is None:
            options.snapshot = getattr(self, "pinned_ts", None)
        return QuireReader(options, schema)


class ReadOptions:
    def __init__(self, options: dict[str, str]):
        require_fe_user_table(options, "spark.read.format('quire')")
        self.fe = options["fe"]
        self.user = options["user"]
        self.password = options.get("password", "")
        self.table = options["table"]
        self.snapshot = positive_integer(options, "snapshot")
        named = options.get("columns")
        self.columns = None
        if named:
            self.columns = tuple(part.strip() for part in named.split(",") if part.strip())
        prune = options.get("prune_blocks", "false").strip().lower()
        if prune not in ("true", "false"):
            raise BadOption(f"the option prune_blocks is true or false, not {prune!r}")
        self.prune_blocks = prune == "true"
        keys = ("partition_rows", "parallelism", "batch_rows")
        self.limits = limits(SparkReadLimits, options, keys)
        self.s3 = s3_options(options)

    @classmethod
    def of(cls, options) -> ReadOptions:
        return cls(lowered(options))

    def fetch(self, schema_only: bool = False) -> ReadPlan:
        return fetch_plan(
            self.fe,
            self.user,
            self.password,
            self.table,
            snapshot=self.snapshot,
            columns=self.columns,
            schema_only=schema_only,
            limits=self.limits,
        )


class QuirePartition(InputPartition):
    def __init__(self, parts: PartitionParts, filters: tuple[Filter, ...] = ()):
        super().__init__(parts.rows)
        self.parts = parts
        self.filters = filters  # applied to its rows (be/spark/filters.py)


class QuireReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self.filters: list[Filter] = []  # pushed, with prune_blocks: they prune blocks
        self.applied: list[Filter] = []  # of those, the ones the read applies, not Spark

    def pushFilters(self, filters: list[Filter]):
        """With prune_blocks, the filters prune blocks (by min/max: a block kept may hold rows
        outside them), and those a read can apply exactly are applied to the rows it yields,
        not by Spark (be/spark/filters.py); without it, Spark applies every filter."""
        if not self.options.prune_blocks:
            yield from filters
            return
        self.filters = list(filters)
        self.applied, left = split(filters, arrow_schema(self.schema))
        yield from left

    def partitions(self) -> list[QuirePartition]:
        plan = self.options.fetch()
        applied = tuple(self.applied)
        return [
            QuirePartition(parts, applied)
            for parts in partitioned(plan, self._ranges(plan), self.options.limits)
        ]

    def _ranges(self, plan: ReadPlan) -> Ranges:
        if plan.schema.key_model is KeyModel.AGGREGATE:
            return {}  # rows merge by key first: a value column's min/max says nothing yet
        prunable = {  # LARGEINT reads as text: its filters' values are not its statistics'
            column.name
            for column in plan.schema.columns
            if not (
                pa.types.is_decimal(column.type) and spark_type(column.type).typeName() == "string"
            )
        }
        return ranges_of(self.filters, plan.schema, prunable)

    def read(self, partition: QuirePartition) -> Iterator[pa.RecordBatch]:
        _freeze_once()
        parts = partition.parts
        target = arrow_schema(self.schema)
        store = open_store(parts.location, self.options.s3)
        batch_rows = self.options.limits.batch_rows
        for rows in scan(parts, store):
            rows = kept(to_spark_arrow(rows, target), partition.filters)
            yield from rows.to_batches(max_chunksize=batch_rows)


def partitioned(plan: ReadPlan, ranges: Ranges, limits: SparkReadLimits) -> list[PartitionParts]:
    """The plan's blocks that may match ranges, grouped by tablet into even partitions of about
    partition_rows rows at most (a large tablet split, its tombstones in every part), and the
    tail in one of its own; an AGGREGATE KEY table in one partition (its rows merge by key)."""
    version = plan.schema.schema_version
    chosen = []
    for meta in sorted(plan.objects, key=lambda meta: (meta.tablet_id, meta.name)):
        blocks = chosen_blocks(meta, ranges, version)
        if blocks:
            chosen.append((_carried(meta), tuple(blocks)))
    tombstones: dict[int, list] = {}
    for meta in plan.tombstones:
        tombstones.setdefault(meta.tablet_id, []).append(meta)

    def parts(objects: list, tail: pa.Table | None) -> PartitionParts:
        tablets = {meta.tablet_id for meta, _ in objects}
        held = tuple(meta for tablet in sorted(tablets) for meta in tombstones.get(tablet, ()))
        return PartitionParts(
            plan.location, plan.ts, plan.schema, tuple(objects), held, plan.deleted, tail
        )

    if plan.schema.key_model is KeyModel.AGGREGATE:
        return [parts(chosen, plan.tail)]
    chosen_rows = sum(meta.blocks[block].rows for meta, blocks in chosen for block in blocks)
    count = max(-(-chosen_rows // limits.partition_rows), 1)
    waves = -(-count // limits.parallelism)  # every task of a wave busy
    count = min(waves * limits.parallelism, limits.max_partitions)
    budget = -(-chosen_rows // count)  # even partitions: none waits for a larger one
    groups: list[list] = [[]]
    rows = 0
    for meta, blocks in chosen:
        for block in blocks:
            size = meta.blocks[block].rows
            if rows >= budget:
                groups.append([])
                rows = 0
            last = groups[-1]
            if last and last[-1][0] is meta:
                last[-1] = (meta, (*last[-1][1], block))
            else:
                last.append((meta, (block,)))
            rows += size
    result = [parts(group, None) for group in groups if group]
    if plan.tail.num_rows or not result:
        result.append(parts([], plan.tail))
    assert len(result) <= count + 1 <= limits.max_partitions + 1, (len(result), count)
    return result


def _carried(meta: ObjectMeta) -> ObjectMeta:
    """An object's metadata as a task needs it, pickled to it: the blocks' column statistics
    only prune, before, so only the first block's are kept (they name the object's columns)."""
    blocks = (meta.blocks[0], *(replace(block, columns=()) for block in meta.blocks[1:]))
    return replace(meta, blocks=blocks)


def _freeze_once() -> None:
    """Spark runs a full gc.collect() after every task; with pyarrow and pandas loaded that takes
    tens of milliseconds, unless what the worker holds for good is frozen out of it."""
    global _FROZEN
    if not _FROZEN:
        gc.collect()
        gc.freeze()
        _FROZEN = True
