"""Locked-down DuckDB, run off the event loop.

Each query gets a DuckDB database of its own for as long as it runs (databases are kept and reused,
one per memory limit): the database's memory_limit is then the query's. A database sees nothing but
the Arrow tables handed to it: no files, no network, no extensions, no temporary files, its settings
locked so that SQL cannot change them back. Queries run in a bounded pool of worker threads; a query
that is cancelled, or runs past its timeout, is interrupted inside DuckDB.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from be.engine import ciphers, hashes
from be.engine.columnar_rows import (
    ROW_OVERHEAD_BYTES,
    VALUE_BYTES,
    ArrowRows,
    answers_in_arrow,
    estimated_arrow_bytes,
)
from be.engine.errors import (
    ArithmeticOverflow,
    EngineBusy,
    EngineError,
    InvalidQuery,
    InvalidValue,
    MemoryLimitExceeded,
    NoTables,
    NotGrouped,
    OrderTermOutOfRange,
    QueryAbandoned,
    QueryFailed,
    QueryInterrupted,
    QueryTimedOut,
    UnknownColumn,
    UnknownFunction,
    WrongColumnCount,
)
from be.engine.row_stream import RowStream, StreamedAnswer, StreamLimits
from be.engine.wide_integers import has_wide_integers, register_with_wide_integers

# A big answer's rest is fetched as Arrow from the cursor that gave its first rows as Python
# rows (con.sql() would cost a query's planning again); DuckDB warns of that copy once a process.
warnings.filterwarnings(
    "ignore", message="Arrow output on a DB-API result makes an extra copy", category=UserWarning
)

logger = logging.getLogger(__name__)

FETCH_ROWS = 2048  # rows converted to Python between two checks for an interrupt
COLUMNAR_FETCH_ROWS = 8192  # rows of an Arrow answer's record batch (one part of a stream)
COLUMNAR_HEAD_ROWS = FETCH_ROWS  # rows fetched as Python rows first: Arrow costs ~1 ms more a query
ABANDON_CHECK_SECONDS = 0.5  # how soon a query whose asker went away is stopped
INTERRUPT_RETRY_SECONDS = 0.05  # an interrupt that arrived before DuckDB started is sent again

ORDER_TERM_OUT_OF_RANGE = re.compile(r"ORDER term out of range")
WRONG_COLUMN_COUNT = re.compile(
    r"Subquery returns \d+ columns|Cannot compare values of type .*STRUCT"
)
NOT_GROUPED = re.compile(r'column "([^"]+)" must appear in the GROUP BY clause')
NO_TABLES = re.compile(r"\* expression without FROM clause")
SYNTAX_ERROR = re.compile(
    r"STAR expression is only allowed|cannot be applied to a star|LIMIT/OFFSET cannot be negative"
)
SQL_TYPE_NAMES = {
    "INT8": "TINYINT",
    "INT16": "SMALLINT",
    "INT32": "INT",
    "INT64": "BIGINT",
    "INT128": "DECIMAL(38,0)",
    "HUGEINT": "DECIMAL(38,0)",
    "UINT8": "TINYINT UNSIGNED",
    "UINT16": "SMALLINT UNSIGNED",
    "UINT32": "INT UNSIGNED",
    "UINT64": "BIGINT UNSIGNED",
    "UINT128": "DECIMAL(39,0)",
    "UHUGEINT": "DECIMAL(39,0)",
    "INTEGER": "INT",
    "TIMESTAMP": "DATETIME",
}
DUCKDB_TYPE = re.compile(r"\b(" + "|".join(SQL_TYPE_NAMES) + r")\b")


# DuckDB's advice after its message names its own functions and settings (TRY(...), SET ...),
# which a MySQL client cannot use.
DUCKDB_ADVICE = re.compile(
    r"(?<=\.)\s+(?:You might need|Use TRY|Consider|Did you mean|Try |Set |If you)\b.*$"
)


def sql_type_names(message: str) -> str:
    """DuckDB's message with its type names as SQL's (INT128 is a DECIMAL(38,0))."""
    return DUCKDB_TYPE.sub(lambda match: SQL_TYPE_NAMES[match.group(1)], message)


OVERFLOW = re.compile(r"Overflow in (?:addition|subtraction|multiplication) of (\w+) \((.*)\)")
UNKNOWN_COLUMN = re.compile(r'Referenced column "([^"]+)" (?:was )?not found')
UNKNOWN_FUNCTION = re.compile(
    r"(?:Scalar|Table|Aggregate)? ?Function with name (\w+) does not exist"
)


def opened_database(memory_limit_bytes: int, threads: int) -> duckdb.DuckDBPyConnection:
    """A new engine database with database_config's settings and MySQL's x DIV 0 and x % 0
    (NULL, not an error: a setting DuckDB takes only once open), then locked."""
    database = duckdb.connect(":memory:", config=database_config(memory_limit_bytes, threads))
    database.execute("SET GLOBAL error_on_division_by_zero = false")
    database.execute("SET lock_configuration = true")
    hashes.register(database)
    ciphers.register(database)
    return database


def database_config(memory_limit_bytes: int, threads: int) -> dict[str, object]:
    """The settings of every engine database (locked once it is open: opened_database)."""
    return {
        "enable_external_access": False,
        "autoload_known_extensions": False,
        "autoinstall_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "allow_persistent_secrets": False,
        "python_enable_replacements": False,
        "memory_limit": f"{memory_limit_bytes}B",
        "temp_directory": "",
        "max_temp_directory_size": "0B",
        "threads": threads,
    }


# The SQL and the tables it reads; or the Answer itself, when the caller worked it out without
# SQL (a plain read of a few rows), which then still takes a worker and its limits.
Prepare = Callable[[], "tuple[str, Mapping[str, pa.Table]] | Answer"]


@dataclass(frozen=True)
class Answer:
    """A query's result: (name, DuckDB type name) per column, and the rows."""

    columns: list[tuple[str, str]]
    rows: list[tuple] | ArrowRows


@dataclass(frozen=True)
class ArrowAnswer:
    """A query's result as Arrow: (name, DuckDB type name) per column, and the record batches
    (DuckDB's own Arrow types: a HUGEINT is a decimal128(38, 0))."""

    columns: list[tuple[str, str]]
    batches: list[pa.RecordBatch]


class Engine:
    """Runs SQL (DuckDB's dialect) over registered Arrow tables, `workers` queries at a time and
    at most `queue_size` more waiting; beyond that a query is refused with EngineBusy."""

    def __init__(
        self,
        workers: int,
        queue_size: int,
        threads_per_query: int,
        stream_limits: StreamLimits | None = None,
    ):
        """stream_limits: how big an answer asked for with stream=True may grow before it
        streams instead (None: such answers are held whole, as others)."""
        assert workers > 0 and queue_size >= 0 and threads_per_query > 0
        self.stream_limits = stream_limits
        self.workers = workers
        self.queue_size = queue_size
        self.threads_per_query = threads_per_query
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="query")
        self._lock = threading.Lock()
        self._admitted = 0  # queries submitted whose worker has not finished
        self._idle: dict[int, list[duckdb.DuckDBPyConnection]] = {}
        self._closed = False

    async def run(
        self,
        prepare: Prepare,
        *,
        timeout_seconds: float | None,
        memory_limit_bytes: int,
        abandoned: Callable[[], bool] = lambda: False,
        arrow: bool = False,
        stream: bool = False,
        columnar: bool = False,
    ) -> Answer | ArrowAnswer | StreamedAnswer:
        """Run the SQL that prepare() gives over the tables it gives, both made on the worker (a
        big statement's preparation holds no event loop; its exceptions reach the caller as they
        are); `abandoned` says whether the one waiting has gone (the query is then stopped); arrow:
        the answer as Arrow record batches, not as Python rows; stream: an answer bigger than the
        engine's stream_limits hold comes as a StreamedAnswer (its worker stays busy until the
        reader has taken every part or closed it); columnar: the rows (and a stream's parts) may
        come as ArrowRows, when every column's type reads the same from Arrow."""
        assert memory_limit_bytes > 0
        row_stream = None
        if stream and not arrow and self.stream_limits is not None:
            row_stream = RowStream(asyncio.get_running_loop(), self.stream_limits)
        query = _Query(prepare, memory_limit_bytes, arrow, row_stream, columnar)
        with self._lock:
            if self._closed or self._admitted >= self.workers + self.queue_size:
                running = min(self._admitted, self.workers)
                raise EngineBusy(running, self._admitted - running)
            self._admitted += 1
        try:
            future = self._executor.submit(self._execute, query)
        except RuntimeError:  # shut down meanwhile
            self._finished(None)
            raise EngineBusy(0, 0) from None
        future.add_done_callback(self._finished)
        try:
            if row_stream is not None:
                return await self._first(future, row_stream, timeout_seconds, abandoned)
            return await self._answer(future, timeout_seconds, abandoned)
        except TimeoutError:
            self._stop(query, future)
            raise QueryTimedOut(timeout_seconds) from None
        except QueryAbandoned:
            self._stop(query, future)
            raise
        except asyncio.CancelledError:
            self._stop(query, future)
            raise

    async def _answer(
        self, future: Future, timeout_seconds: float | None, abandoned: Callable[[], bool]
    ) -> Answer:
        """The query's answer; every ABANDON_CHECK_SECONDS, whether the asker is still there."""
        answer = asyncio.wrap_future(future)
        async with asyncio.timeout(timeout_seconds):
            while True:
                done, _ = await asyncio.wait({answer}, timeout=ABANDON_CHECK_SECONDS)
                if done:
                    return answer.result()
                if abandoned():
                    raise QueryAbandoned()

    async def _first(
        self,
        future: Future,
        row_stream: RowStream,
        timeout_seconds: float | None,
        abandoned: Callable[[], bool],
    ) -> Answer | StreamedAnswer:
        """The whole answer, or, once it streams, its first part and the stream."""
        answer = asyncio.wrap_future(future)
        async with asyncio.timeout(timeout_seconds):
            while True:
                await asyncio.wait(
                    {answer, row_stream.started},
                    timeout=ABANDON_CHECK_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if row_stream.started.done():
                    columns, rows = row_stream.started.result()
                    return StreamedAnswer(columns, rows, row_stream, timeout_seconds)
                if answer.done():
                    return answer.result()
                if abandoned():
                    raise QueryAbandoned()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [database for databases in self._idle.values() for database in databases]
            self._idle.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for database in idle:
            database.close()

    def _finished(self, future: Future | None) -> None:
        with self._lock:
            self._admitted -= 1

    def _stop(self, query: _Query, future: Future) -> None:
        """Interrupt the query until its worker is done with it."""
        if future.done():
            return
        query.stop()
        asyncio.get_running_loop().call_later(INTERRUPT_RETRY_SECONDS, self._stop, query, future)

    def _execute(self, query: _Query) -> Answer:
        database = self._database(query.memory_limit_bytes)
        try:
            return query.run(database)
        finally:
            self._release(query.memory_limit_bytes, database)

    def _database(self, memory_limit_bytes: int) -> duckdb.DuckDBPyConnection:
        with self._lock:
            idle = self._idle.get(memory_limit_bytes)
            if idle:
                return idle.pop()
        return opened_database(memory_limit_bytes, self.threads_per_query)

    def _release(self, memory_limit_bytes: int, database: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            kept = sum(len(databases) for databases in self._idle.values())
            if not self._closed and kept < self.workers:
                self._idle.setdefault(memory_limit_bytes, []).append(database)
                return
        database.close()


def estimated_bytes(rows: list[tuple]) -> int:
    """About what rows take as Python objects: the answer counts against the query's memory
    limit too (DuckDB streams it, so its own limit does not see it)."""
    total = 0
    for row in rows:
        total += ROW_OVERHEAD_BYTES + VALUE_BYTES * len(row)
        for value in row:
            if isinstance(value, str | bytes):
                total += len(value)
            elif isinstance(value, list):  # an array: its elements, and their text once answered
                total += _list_bytes(value)
    return total


def _list_bytes(values: list) -> int:
    total = 2 * VALUE_BYTES * len(values)
    for value in values:
        if isinstance(value, str | bytes):
            total += 2 * len(value)
        elif isinstance(value, list):
            total += _list_bytes(value)
    return total


class _Query:
    """One query's state shared by the worker running it and the loop that may stop it."""

    def __init__(
        self,
        prepare: Prepare,
        memory_limit_bytes: int,
        arrow: bool = False,
        row_stream: RowStream | None = None,
        columnar: bool = False,
    ):
        self.prepare = prepare
        self.columnar = columnar
        self.memory_limit_bytes = memory_limit_bytes
        self.arrow = arrow
        self.row_stream = row_stream
        self.streaming = False  # rows go through row_stream: the answer is not held
        if row_stream is not None:
            row_stream.on_close = self.stop
        self._lock = threading.Lock()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._stopped = False

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            connection = self._connection
        if connection is not None:
            connection.interrupt()

    def run(self, database: duckdb.DuckDBPyConnection) -> Answer | ArrowAnswer:
        prepared = self.prepare()
        if isinstance(prepared, Answer | ArrowAnswer):
            return prepared
        sql, tables = prepared
        connection = database.cursor()
        try:
            with self._lock:
                if self._stopped:
                    raise QueryInterrupted()
                self._connection = connection
            for name, table in tables.items():
                if has_wide_integers(table):
                    register_with_wide_integers(connection, name, table)
                else:
                    connection.register(name, table)
            if self.arrow:
                return self._arrow(connection.sql(sql))
            result = connection.execute(sql)
            columns = [(entry[0], str(entry[1])) for entry in result.description]
            if self.columnar and answers_in_arrow(columns):
                head = result.fetchmany(COLUMNAR_HEAD_ROWS)
                if len(head) < COLUMNAR_HEAD_ROWS:
                    return Answer(columns, head)
                return self._columnar(result, columns, head)
            rows: list[tuple] = []
            held = 0
            while batch := result.fetchmany(FETCH_ROWS):
                if self._stopped:
                    raise QueryInterrupted()
                if self.streaming:
                    self.row_stream.put(batch)
                    continue
                held += estimated_bytes(batch)
                rows += batch
                if self._must_stream(held):
                    self.row_stream.start(columns, rows)
                    self.streaming, rows = True, []
            if self.streaming:
                self.row_stream.finish()
            return Answer(columns, rows)
        except duckdb.Error as error:
            if self.streaming:
                self.row_stream.fail(self._engine_error(error))
                return Answer([], [])
            raise self._engine_error(error) from None
        except EngineError as error:
            if self.streaming:
                self.row_stream.fail(error)
                return Answer([], [])
            raise
        finally:
            with self._lock:
                self._connection = None
            connection.close()

    def _must_stream(self, held: int) -> bool:
        """Whether an answer holding held bytes so far goes on streamed; past the memory limit
        with no stream to go to, MemoryLimitExceeded."""
        if self.row_stream is not None and held > self.row_stream.limits.hold_bytes:
            return True
        if held > self.memory_limit_bytes:
            raise MemoryLimitExceeded(self.memory_limit_bytes)
        return False

    def _columnar(
        self, result: duckdb.DuckDBPyConnection, columns: list[tuple[str, str]], head: list[tuple]
    ) -> Answer:
        """The answer's rows after its head as Arrow: ArrowRows held, or streamed a record batch
        a part."""
        batches: list[pa.RecordBatch] = []
        held = estimated_bytes(head)
        reader = result.to_arrow_reader(COLUMNAR_FETCH_ROWS)  # the rows the fetch left
        for batch in reader:
            if self._stopped:
                raise QueryInterrupted()
            if not batch.num_rows:
                continue
            if self.streaming:
                self.row_stream.put(ArrowRows(pa.Table.from_batches([batch]), columns))
                continue
            held += estimated_arrow_bytes(batch)  # as the rows would count in Python
            batches.append(batch)
            if self._must_stream(held):
                first = ArrowRows(pa.Table.from_batches(batches, reader.schema), columns, head)
                self.row_stream.start(columns, first)
                self.streaming, batches = True, []
        if self.streaming:
            self.row_stream.finish()
            return Answer(columns, [])
        table = pa.Table.from_batches(batches, reader.schema)
        return Answer(columns, ArrowRows(table, columns, head))

    def _arrow(self, relation: duckdb.DuckDBPyRelation) -> ArrowAnswer:
        columns = [
            (name, str(kind)) for name, kind in zip(relation.columns, relation.types, strict=True)
        ]
        batches: list[pa.RecordBatch] = []
        held = 0
        for batch in relation.to_arrow_reader(FETCH_ROWS):
            held += batch.nbytes
            if held > self.memory_limit_bytes:
                raise MemoryLimitExceeded(self.memory_limit_bytes)
            if self._stopped:
                raise QueryInterrupted()
            batches.append(batch)
        return ArrowAnswer(columns, batches)

    def _engine_error(self, error: duckdb.Error) -> EngineError:
        if isinstance(error, duckdb.InterruptException) or self._stopped:
            return QueryInterrupted()
        if isinstance(error, duckdb.OutOfMemoryException):
            return MemoryLimitExceeded(self.memory_limit_bytes)
        message = str(error).splitlines()[0]
        detail = DUCKDB_ADVICE.sub("", message.split(":", 1)[-1].strip())
        if match := UNKNOWN_COLUMN.search(message):
            return UnknownColumn(match.group(1))
        if match := UNKNOWN_FUNCTION.search(message):
            return UnknownFunction(match.group(1))
        if ORDER_TERM_OUT_OF_RANGE.search(message):
            return OrderTermOutOfRange()
        if WRONG_COLUMN_COUNT.search(message):
            return WrongColumnCount()
        if match := NOT_GROUPED.search(message):
            return NotGrouped(match.group(1))
        if NO_TABLES.search(message):
            return NoTables()
        if match := OVERFLOW.search(message):
            return ArithmeticOverflow(sql_type_names(match.group(1)), match.group(2))
        if isinstance(error, duckdb.ParserException) or SYNTAX_ERROR.search(message):
            return InvalidQuery(detail)
        if isinstance(
            error,
            duckdb.ConversionException | duckdb.InvalidInputException | duckdb.OutOfRangeException,
        ):
            return InvalidValue(sql_type_names(detail))
        logger.debug("query failed in DuckDB: %s", message)
        return QueryFailed(sql_type_names(detail))
