"""What any PySpark Python data source costs before it does any work of its own: the floor under
format("quire") in bench_spark_read.py and bench_spark_write.py.

    floor_read    yields batch_rows-row Arrow batches it made once in memory (no object read,
                  no delete, no conversion), the columns and rows of the benchmark's full scan
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


class FloorPartition(InputPartition):
    def __init__(self, rows: int):
        super().__init__(rows)
        self.rows = rows


class FloorReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int, batch_rows: int):
        self.rows, self.count, self.batch_rows = rows, partitions, batch_rows

    def partitions(self) -> list[FloorPartition]:
        share = -(-self.rows // self.count)
        return [
            FloorPartition(min(share, self.rows - start)) for start in range(0, self.rows, share)
        ]

    def read(self, partition: FloorPartition):
        ids = np.arange(self.batch_rows, dtype=np.int64)
        batch = pa.RecordBatch.from_arrays(
            [pa.array((ids % 1000).astype(np.int32)), pa.array(ids * 0.5)],
            schema=pa.schema([("k", pa.int32()), ("v", pa.float64())]),
        )
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
        return READ_SCHEMA

    def reader(self, schema) -> FloorReader:
        return FloorReader(
            int(self.options["rows"]),
            int(self.options.get("partitions", "2")),
            int(self.options.get("batch_rows", str(1 << 16))),
        )

    def writer(self, schema, overwrite: bool) -> FloorWriter:
        return FloorWriter()


def register(spark) -> None:
    spark.dataSource.register(FloorSource)
