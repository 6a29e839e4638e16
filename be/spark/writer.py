"""df.write.format("quire"): a PySpark Python data source writer that writes a DataFrame's rows
as block objects straight to object storage and registers them in one TN commit.

writer() (on the driver's side) asks an FE to begin a load (be/spark/write_client.py): the FE
checks the account holds LOAD on the table and answers its schema, where its objects live and a
token naming the load. Each task converts its Arrow batches to the table's types strictly (a
value that does not fit fails the task, be/load/convert.py), asks the FE row ids per batch,
places rows into tablets and writes objects in the flush's block format as they fill
(be/load/objects.py: at most max_buffered_bytes of rows wait), and hands back the objects'
metadata. commit() registers every task's objects in one commit: all rows visible at once;
abort() (a task or the job failed) has the TN remove them, with what a failed task attempt
left behind (a task also removes its own objects when it fails). UNIQUE KEY tables replace rows
by key in that commit (the last written wins among a write's own rows), AGGREGATE KEY tables
merge on read, as Stream Load's rows do.

mode("overwrite") writes the same way; its commit also removes every row the table held (of
all its partitions: a static overwrite, Spark's default) at that one commit timestamp, so a
reader sees the old rows or the new ones; a failed job leaves the old rows.

A write is a load with a label (option label, default spark_<its transaction id>) that SHOW LOAD
lists as a Stream Load's; a label a load holds (not aborted) fails the write before any task
runs with Doris's "Label Already Exists".

Options: fe (host:http_port), user, password, table ("db.t"), label, batch_rows, row_id_rows,
object_rows, max_buffered_bytes, compression (of the blocks: ZSTD, the default of the BE's
block_compression, or LZ4, SNAPPY, NONE), s3_endpoint, s3_region, s3_access_key, s3_secret_key (an s3:// store).
A DataFrame's columns are matched to the table's by name (case-insensitively); a table column
it lacks takes its default.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from be.load.auto_partitions import partition_values
from be.load.convert import typed
from be.load.limits import LoadLimits
from be.load.objects import LoadWriter
from be.spark import write_client
from be.spark.errors import BadOption, BadValue, SparkWriteError, WriteRefused
from be.spark.limits import SparkWriteLimits
from be.spark.options import compression, limits, lowered, require_fe_user_table, s3_options
from be.spark.scan import open_store
from be.spark.write_protocol import Begun
from be.storage.blocks import ObjectMeta
from be.storage.errors import StorageError
from be.storage.names import ObjectName
from be.storage.objects import DEFAULT_LIMITS, ObjectStore

logger = logging.getLogger(__name__)

MAX_SHOWN_CHARS = 300  # of a bad row, in a task's error


@dataclass(frozen=True)
class WrittenObjects(WriterCommitMessage):
    """What one task wrote: its objects' metadata, pickled back to the driver."""

    objects: tuple[ObjectMeta, ...]
    rows: int


class WriteOptions:
    def __init__(self, options: dict[str, str]):
        require_fe_user_table(options, "df.write.format('quire')")
        self.fe = options["fe"]
        self.user = options["user"]
        self.password = options.get("password", "")
        self.table = options["table"]
        self.label = options.get("label", "").strip()
        keys = ("batch_rows", "row_id_rows", "object_rows", "max_buffered_bytes")
        self.limits = limits(SparkWriteLimits, options, keys)
        self.storage_limits = replace(
            DEFAULT_LIMITS, compression=compression(options, DEFAULT_LIMITS.compression)
        )
        self.s3 = s3_options(options)

    @classmethod
    def of(cls, options) -> WriteOptions:
        return cls(lowered(options))


class QuireWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool):
        self.options = options
        limits = options.limits
        self.begun: Begun = write_client.begin(
            options.fe,
            options.user,
            options.password,
            options.table,
            overwrite,
            limits.request_timeout_seconds,
            options.label,
        )
        try:
            self.columns = matched_columns(schema, self.begun)
        except BadOption:
            self._client().abort(())
            raise

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenObjects:
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        limits = self.options.limits
        if task >= limits.max_tasks:
            raise SparkWriteError(
                f"a write has at most {limits.max_tasks} partitions; coalesce the DataFrame"
            )
        client = self._client()
        store = open_store(self.begun.location, self.options.s3, self.options.storage_limits)
        writer = LoadWriter(
            store,
            self.begun.schema,
            self.begun.txn_id,
            client.reserve_row_ids,
            LoadLimits(
                object_rows=limits.object_rows,
                max_buffered_bytes=limits.max_buffered_bytes,
                row_id_rows=limits.row_id_rows,
            ),
            keep_keys=False,  # the TN reads a UNIQUE KEY table's keys from the objects
            seqs=limits.seqs(task, attempt),
        )
        try:
            for rows in self._converted(iterator):
                unplaced = writer.unplaced(rows)
                if pc.any(unplaced).as_py():  # an auto partition table's FE makes them
                    columns = writer.schema.partition_columns
                    values = partition_values(rows.filter(unplaced), columns)
                    try:
                        writer.schema = client.auto_partitions(values)
                    except WriteRefused as error:
                        raise BadValue(
                            f"a row of the DataFrame falls in no partition of "
                            f"{self.options.table}: {error}"
                        ) from None
                    if pc.any(writer.unplaced(rows)).as_py():
                        raise BadValue(
                            f"a row of the DataFrame falls in no partition of {self.options.table}"
                        )
                writer.add(rows)
            objects = writer.finish()
            # Row ids come in large ranges, so a task may never ask again after the job failed:
            # one more asks whether the load is still open (refused once aborted, and then the
            # objects this task wrote after the driver listed them for removal are removed here).
            client.reserve_row_ids(1)
        except BaseException:
            writer.abort()
            raise
        finally:
            client.close()
        logger.info("task %d wrote %d rows in %d objects", task, writer.rows, len(objects))
        return WrittenObjects(objects, writer.rows)

    def commit(self, messages: list[WrittenObjects | None]) -> None:
        objects = tuple(meta for message in messages if message for meta in message.objects)
        client = self._client()
        try:
            commit_ts = client.commit(objects)
            logger.info(
                "write %s into %s committed at %d", self.begun.label, self.options.table, commit_ts
            )
            committed = {meta.name for meta in objects}
            left = tuple(name for name in self._load_objects() if name not in committed)
            if left:  # of task attempts that failed without removing their own
                client.abort(left)
        finally:
            client.close()

    def abort(self, messages: list[WrittenObjects | None]) -> None:
        written = {meta.name for message in messages if message for meta in message.objects}
        client = self._client()
        try:
            client.abort(tuple(sorted(written | set(self._load_objects()))))
        finally:
            client.close()

    def _client(self) -> write_client.LoadClient:
        return write_client.LoadClient(
            self.options.fe, self.begun.token, self.options.limits.request_timeout_seconds
        )

    def _load_objects(self) -> list[str]:
        """The names of the objects written for this load (named at its transaction id)."""
        store: ObjectStore = open_store(self.begun.location, self.options.s3)
        try:
            names = store.list(f"t{self.begun.schema.table_id}/")
        except StorageError as error:
            logger.warning("the write's objects were not listed: %s", error)
            return []
        found = []
        for name in names:
            try:
                parsed = ObjectName.parse(name)
            except ValueError:
                continue
            if parsed.ts == self.begun.txn_id:
                found.append(name)
        return found

    def _converted(self, iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
        """The task's rows in the table's columns and types, about batch_rows at a time."""
        batch_rows = self.options.limits.batch_rows
        waiting: list[pa.RecordBatch] = []
        count = 0
        for batch in iterator:
            if not batch.num_rows:
                continue
            waiting.append(batch)
            count += batch.num_rows
            if count >= batch_rows:
                yield self._typed(pa.Table.from_batches(waiting))
                waiting, count = [], 0
        if waiting:
            yield self._typed(pa.Table.from_batches(waiting))

    def _typed(self, batch: pa.Table) -> pa.Table:
        source = pa.Table.from_arrays(
            [batch.column(position) for position, _ in self.columns],
            names=[name for _, name in self.columns],
        )
        rows, bad = typed(
            source, self.begun.schema, self.begun.lengths, strict=True, defaults=self.begun.defaults
        )
        if pc.any(bad).as_py():
            first = pc.index(bad, True).as_py()
            shown = str(source.slice(first, 1).to_pylist()[0])[:MAX_SHOWN_CHARS]
            raise BadValue(
                f"a row does not fit {self.options.table}'s columns (a value that does not "
                f"convert exactly to its column's type, a text too long, or a NULL in a NOT "
                f"NULL column): {shown}"
            )
        return rows


def matched_columns(schema: StructType, begun: Begun) -> list[tuple[int, str]]:
    """(position in the DataFrame, the table's column name) of each of the DataFrame's columns;
    BadOption if one is not the table's, or two are the same."""
    names = {column.name.lower(): column.name for column in begun.schema.columns}
    matched: list[tuple[int, str]] = []
    for position, field in enumerate(schema.fields):
        name = names.get(field.name.lower())
        if name is None:
            raise BadOption(f"the DataFrame's column {field.name!r} is not a column of the table")
        if any(name == taken for _, taken in matched):
            raise BadOption(f"the DataFrame names the column {name!r} twice")
        matched.append((position, name))
    return matched
