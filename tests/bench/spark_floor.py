"""What any PySpark Python data source costs before it does any work of its own: the floor under
format("quire") in bench_spark_read.py and bench_spark_write.py.

    floor_read    yields batch_rows-row Arrow batches it made once in memory (no object read,
                  no delete, no conversion), the columns and rows of the benchmark's full scan;
                  with the option filtered, also the id column, and it takes every pushed filter
                  as its own (Spark applies none): the rows of a filtered query, its answer made
                  already, as format("quire") yields them with prune_blocks
    floor_write   takes the DataFrame's Arrow batches and drops them (no conversion, no row ids,
                  no object written, no commit)

Whatever separates these from Spark's own Parquet reader and writer is Spark's Python data source
path itself (Arrow batches over a socket to or from a Python worker, turned into or out of rows
on the JVM): a ceiling on the ratio any Python data source reaches on this machine."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

READ_SCHEMA = "k INT, v DOUBLE"  # the columns the benchmark's full scan reads
FILTERED_SCHEMA = "id BIGINT NOT NULL, k INT, v DOUBLE"  # and its filtered query


class FloorPartition(InputPartition):
    def __init__(self, rows: int):
        super().__init__(rows)
        self.rows = rows


class FloorReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int, batch_rows: int, filtered: bool):
        self.rows, self.count, self.batch_rows = rows, partitions, batch_rows
        self.filtered = filtered

    def pushFilters(self, filters):
        if not self.filtered:
            yield from filters

    def partitions(self) -> list[FloorPartition]:
        share = -(-self.rows // self.count)
        return [
            FloorPartition(min(share, self.rows - start)) for start in range(0, self.rows, share)
        ]

    def read(self, partition: FloorPartition):
        ids = np.arange(self.batch_rows, dtype=np.int64)
        columns = [pa.array((ids % 1000).astype(np.int32)), pa.array(ids * 0.5)]
        fields = [("k", pa.int32()), ("v", pa.float64())]
        if self.filtered:
            columns.insert(0, pa.array(ids))
            fields.insert(0, pa.field("id", pa.int64(), False))
        batch = pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))
        for start in range(0, partition.rows, self.batch_rows):
            yield batch.slice(0, min(self.batch_rows, partition.rows - start))


class FloorWriter(DataSourceArrowWriter):
    def write(self, iterator) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class FloorSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "quire_floor"

    def schema(self) -> str:
        return FILTERED_SCHEMA if self.options.get("filtered") == "true" else READ_SCHEMA

    def reader(self, schema) -> FloorReader:
        return FloorReader(
            int(self.options["rows"]),
            int(self.options.get("partitions", "2")),
            int(self.options.get("batch_rows", str(1 << 16))),
            self.options.get("filtered") == "true",
        )

    def writer(self, schema, overwrite: bool) -> FloorWriter:
        return FloorWriter()


def register(spark) -> None:
    spark.dataSource.register(FloorSource)
