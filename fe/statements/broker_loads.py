"""Doris's S3 Load: `LOAD LABEL [db.]label (DATA INFILE ("s3://bucket/path" [, ...]) INTO TABLE t
[PARTITION (p, ...)] [COLUMNS TERMINATED BY "x"] [FORMAT AS "csv" | "parquet" | "json"] [(c, ...)]
[SET (column = expression, ...)] [WHERE predicate] [, DATA INFILE ...]) WITH S3 ("s3.endpoint" =
..., "s3.access_key" = ..., "s3.secret_key" = ...) [PROPERTIES ("timeout" = "seconds")]`.

The statement answers at once; the load is a job of the FE that took it, run as the user who
issued it: the objects read as s3(...) reads them (admins only, as s3(...): the FE reaches any
endpoint from its host) and their rows committed into the tables in one transaction with the
label. SHOW LOAD shows it (Type BROKER): PENDING, LOADING, then FINISHED from the TN's record of
the label, or CANCELLED with its error; CANCEL LOAD stops one not finished. A CSV's columns are
the file's, by position (the table's columns, or the ones listed); Parquet and JSON columns by
name."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements.names import resolve_database, resolve_table
from fe.statements.table_functions import S3_ALIASES, S3_FORMATS

logger = logging.getLogger(__name__)

MAX_KEPT_JOBS = 1000  # jobs an FE remembers; past it the oldest finished ones are let go
DEFAULT_TIMEOUT_SECONDS = 4 * 3600  # Doris's broker load timeout
DEFAULT_SEPARATOR = "\t"  # Doris's column separator of a CSV load
SOURCE_KEYS = frozenset(
    {"s3.endpoint", "s3.region", "s3.access_key", "s3.secret_key", "use_path_style"}
)
IGNORED_SOURCE_KEYS = frozenset({"provider"})  # Doris's name of the store's kind: S3 here
PENDING, LOADING, FINISHED, CANCELLED = "PENDING", "LOADING", "FINISHED", "CANCELLED"


@dataclass
class BrokerLoadJob:
    job_id: int
    db: str
    label: str
    user: str
    tables: tuple[str, ...]
    timeout_seconds: int
    created_ms: int
    state: str = PENDING
    started_ms: int = 0
    finished_ms: int = 0
    message: str = ""
    task: asyncio.Task | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in (FINISHED, CANCELLED)


class BrokerLoads:
    """The S3 loads this FE took, newest last, at most MAX_KEPT_JOBS."""

    def __init__(self):
        self.jobs: dict[tuple[str, str], BrokerLoadJob] = {}
        self._ids = itertools.count(int(time.time() * 1000))

    def add(self, job: BrokerLoadJob) -> None:
        while len(self.jobs) >= MAX_KEPT_JOBS:
            oldest = next((key for key, kept in self.jobs.items() if kept.finished), None)
            if oldest is None:
                raise QueryError(1105, f"{MAX_KEPT_JOBS} loads are running; try again later")
            del self.jobs[oldest]
        self.jobs.pop((job.db, job.label), None)
        self.jobs[(job.db, job.label)] = job

    def of(self, db: str) -> list[BrokerLoadJob]:
        return [job for (job_db, _), job in self.jobs.items() if job_db == db]

    def next_id(self) -> int:
        return next(self._ids)


async def load(session, statement: st.BrokerLoad) -> Result:
    session.require_admin()  # its objects are read from the FE's host, as s3(...)'s
    database = resolve_database(session, statement.db)
    for data in statement.data:
        _, table = resolve_table(session, st.TableName(database.name, data.table))
        session.require(privileges.LOAD, database.name, table.name)
    loads: BrokerLoads = session.services.broker_loads
    running = loads.jobs.get((database.name, statement.label))
    if (
        running is not None
        and running.state != CANCELLED
        or _label_taken(session, database.name, statement.label)
    ):
        raise QueryError(1105, f"Label [{statement.label}] has already been used.")
    statements = load_statements(statement, database.name, session)
    for sql in statements:  # a SET or WHERE that is no expression: 1064 now, not in the job
        await session.parse(sql)
    job = BrokerLoadJob(
        loads.next_id(),
        database.name,
        statement.label,
        session.username or "",
        tuple(data.table for data in statement.data),
        _timeout(dict(statement.properties)),
        int(time.time() * 1000),
    )
    loads.add(job)
    job.task = asyncio.get_running_loop().create_task(
        _run(job, _session_as(session, database.name), statements)
    )
    return Result()


def _label_taken(session, db: str, label: str) -> bool:
    plane = session.services.data_plane
    records = plane.load_records(db) if plane is not None else []
    return any(record.label == label and record.state != "ABORTED" for record in records)


def _timeout(properties: dict[str, str]) -> int:
    text = properties.get("timeout", str(DEFAULT_TIMEOUT_SECONDS))
    if not text.isdigit() or int(text) <= 0:
        raise QueryError(1105, f"Invalid timeout: {text}")
    return int(text)


def _session_as(session, db: str):
    """A session of the FE as the user who issued the load, in its database."""
    loader = type(session)(session.services)
    loader.username, loader.user_host = session.username, session.user_host
    loader.database = db
    loader.recorded = False
    return loader


async def _run(job: BrokerLoadJob, session, statements: list[str]) -> None:
    job.state, job.started_ms = LOADING, int(time.time() * 1000)
    try:
        async with asyncio.timeout(job.timeout_seconds):
            for sql in statements:
                await session.handle_query(sql, {})
        job.state = FINISHED
        logger.info("load %s.%s finished", job.db, job.label)
    except TimeoutError:
        job.state, job.message = CANCELLED, f"timeout: the load took over {job.timeout_seconds} s"
    except asyncio.CancelledError:
        job.state, job.message = CANCELLED, "user cancel"
    except QueryError as error:
        job.state, job.message = CANCELLED, error.message
    except Exception as error:  # a bug: the job ends, the FE goes on
        logger.exception("load %s.%s failed", job.db, job.label)
        job.state, job.message = CANCELLED, f"internal error: {type(error).__name__}"
    finally:
        session.transaction = None  # what it had not committed is dropped
        job.finished_ms = int(time.time() * 1000)
    if job.state == CANCELLED:
        logger.warning("load %s.%s cancelled: %s", job.db, job.label, job.message)


async def cancel(session, statement: st.CancelLoad) -> Result:
    database = resolve_database(session, statement.db)
    job = session.services.broker_loads.jobs.get((database.name, statement.label))
    if job is None or job.finished:
        raise QueryError(1105, f"Load job[{statement.label}] is not found or already finished")
    for table in job.tables:
        session.require(privileges.LOAD, database.name, table)
    if job.task is not None:
        job.task.cancel()
    return Result()


# -- the statements a load runs -------------------------------------------------------------------


def load_statements(statement: st.BrokerLoad, db: str, session) -> list[str]:
    """The load as statements of its user: BEGIN WITH LABEL, an INSERT ... SELECT of each object
    path of each DATA INFILE, COMMIT."""
    source = _source(statement.source)
    inserts = [
        _insert(data, path, db, source, session) for data in statement.data for path in data.paths
    ]
    return [f"BEGIN WITH LABEL {_name(statement.label)}", *inserts, "COMMIT"]


def _source(properties: tuple[tuple[str, str], ...]) -> dict[str, str]:
    source = {}
    for key, value in properties:
        name = S3_ALIASES.get(key.lower(), key.lower())
        if name in IGNORED_SOURCE_KEYS:
            continue
        if name not in SOURCE_KEYS:
            raise QueryError(1105, f"Unknown S3 property: {key}")
        source[name] = value
    return source


def _insert(data: st.LoadData, path: str, db: str, source: dict[str, str], session) -> str:
    """INSERT INTO the table SELECT the file's columns (a CSV's c1, c2, ... by position, as the
    list names them; others' by name) and the SET expressions FROM s3(...) WHERE the predicate,
    each reading the file's columns by the names the list gives them."""
    file_format = (data.format or "csv").lower()
    if file_format not in S3_FORMATS:
        raise QueryError(1105, f"LOAD's format must be one of {', '.join(S3_FORMATS)}")
    _, table = resolve_table(session, st.TableName(db, data.table))
    table_columns = {column.name.lower(): column.name for column in table.columns}
    file_columns = data.columns or tuple(column.name for column in table.columns)
    if file_format == "csv":
        read = {name.lower(): exp.column(f"c{n}") for n, name in enumerate(file_columns, start=1)}
    else:
        read = {name.lower(): exp.column(name, quoted=True) for name in file_columns}
    set_names = {name.lower() for name, _ in data.settings}
    targets, values = [], []
    for name in file_columns:
        if name.lower() in table_columns and name.lower() not in set_names:
            targets.append(table_columns[name.lower()])
            values.append(read[name.lower()].sql("mysql"))
    for name, expression in data.settings:
        if name.lower() not in table_columns:
            raise QueryError(1054, f"Unknown column '{name}' in '{table.name}'")
        targets.append(table_columns[name.lower()])
        values.append(_reading(expression, read))
    properties = {"uri": path, "format": file_format, **source}
    if file_format == "csv":
        properties["column_separator"] = data.separator or DEFAULT_SEPARATOR
    arguments = ", ".join(f"{_text(key)} = {_text(value)}" for key, value in properties.items())
    partition = (
        f" PARTITION ({', '.join(_name(p) for p in data.partitions)})" if data.partitions else ""
    )
    where = f" WHERE {_reading(data.where, read)}" if data.where else ""
    return (
        f"INSERT INTO {_name(db)}.{_name(table.name)}{partition} "
        f"({', '.join(_name(t) for t in targets)}) SELECT {', '.join(values)} "
        f"FROM s3({arguments}){where}"
    )


def _reading(text: str, read: dict[str, exp.Expression]) -> str:
    """An expression as written, each name of a file column read from the file."""
    try:
        expression = sqlglot.parse_one(text, read="mysql")
    except SqlglotError:
        raise QueryError(1064, f"You have an error in your SQL syntax near '{text}'") from None
    for column in list(expression.find_all(exp.Column)):
        if not column.table and column.name.lower() in read:
            column.replace(read[column.name.lower()].copy())
    return f"({expression.sql('mysql')})"


def _name(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("mysql")


def _text(value: str) -> str:
    return exp.Literal.string(value).sql("mysql")
