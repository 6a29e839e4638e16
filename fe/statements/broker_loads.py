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

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from be.tn.loads import ABORTED
from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import generated_columns, labelled_jobs
from fe.statements.labelled_jobs import sql_name, sql_partitions, sql_properties, sql_text
from fe.statements.names import resolve_database, resolve_table
from fe.statements.table_functions import S3_ALIASES, S3_FORMATS, S3_STORE_PROPERTIES

DEFAULT_TIMEOUT_SECONDS = 4 * 3600  # Doris's broker load timeout
DEFAULT_SEPARATOR = "\t"  # Doris's column separator of a CSV load
IGNORED_SOURCE_KEYS = frozenset({"provider"})  # Doris's name of the store's kind: S3 here
LOADING = "LOADING"
QUALITY_FAIL = "quality not good enough to cancel"  # Doris's words for a load filtering too much
# a column type a file's text may not convert to: not strict, such a value is NULL
TRIED_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE",
    "DECIMAL", "DECIMALV3", "DATE", "DATEV2", "DATETIME", "DATETIMEV2",
})  # fmt: skip
HONOURED_PROPERTIES = frozenset({"timeout", "max_filter_ratio", "timezone", "strict_mode"})
HINT_PROPERTIES = frozenset({  # Doris's tuning of its own executors: nothing to tune here
    "exec_mem_limit", "load_parallelism", "send_batch_parallelism", "load_to_single_tablet",
    "priority",
})  # fmt: skip


async def load(session, statement: st.BrokerLoad) -> Result:
    session.require_admin()  # its objects are read from the FE's host, as s3(...)'s
    database = resolve_database(session, statement.db)
    for data in statement.data:
        _, table = resolve_table(session, st.TableName(database.name, data.table))
        session.require(privileges.LOAD, database.name, table.name)
    loads = session.services.broker_loads
    if loads.running(database.name, statement.label) or _label_taken(
        session, database.name, statement.label
    ):
        raise QueryError(1105, f"Label [{statement.label}] has already been used.")
    properties = load_properties(statement.properties)
    strict = properties.get("strict_mode", "true").lower() == "true"
    *statements, commit = load_statements(statement, database.name, session, strict)
    statements = [*_settings(properties), *statements]
    for sql in statements:  # a SET or WHERE that is no expression: 1064 now, not in the job
        await session.parse(sql)
    timeout = labelled_jobs.timeout_of(properties, DEFAULT_TIMEOUT_SECONDS)
    tables = [data.table for data in statement.data]
    job = loads.new(database.name, statement.label, session.username or "", tables, timeout)
    job.details["max_filter_ratio"] = float(properties.get("max_filter_ratio", "0"))
    await labelled_jobs.start(job, session, statements, LOADING, commit, _quality_checked)
    return Result()


def _quality_checked(job: labelled_jobs.LabelledJob) -> None:
    """Doris's test of a load before its commit: the rows filtered (values that do not convert,
    rows without a partition) at most max_filter_ratio of all the rows its objects gave."""
    total = job.written + job.warnings
    ratio = job.details["max_filter_ratio"]
    if total and job.warnings / total > ratio:
        raise QueryError(
            1105,
            f"type:ETL_QUALITY_UNSATISFIED; msg:{QUALITY_FAIL} ({job.warnings} of {total} rows "
            f"filtered, max_filter_ratio {ratio:g}; the first: {job.first_warning})",
        )


def load_properties(given: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """PROPERTIES (...) checked: Doris's names, the ones Quire honours with values it takes."""
    properties = {key.lower(): value for key, value in given}
    for key, value in properties.items():
        if key in HINT_PROPERTIES:
            continue
        if key not in HONOURED_PROPERTIES:
            raise QueryError(1105, f"{key} is invalid property")
        if key == "max_filter_ratio" and not _ratio(value):
            raise QueryError(1105, "max_filter_ratio must be between 0.0 and 1.0.")
        if key == "strict_mode" and value.lower() not in ("true", "false"):
            raise QueryError(1105, "strict_mode is not a boolean")
    return properties


def _ratio(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False


def _settings(properties: dict[str, str]) -> list[str]:
    """The job session's variables for the properties: each INSERT filters the rows that do not
    convert, whatever their share (_quality_checked weighs them all before the commit), and
    reads times in the time zone."""
    settings = ["SET enable_insert_strict = false", "SET insert_max_filter_ratio = 1"]
    if "timezone" in properties:
        settings.append(f"SET time_zone = {sql_text(properties['timezone'])}")
    return settings


def _label_taken(session, db: str, label: str) -> bool:
    plane = session.services.data_plane
    records = plane.load_records(db) if plane is not None else []
    return any(record.label == label and record.state != ABORTED for record in records)


async def cancel(session, statement: st.CancelLoad) -> Result:
    database = resolve_database(session, statement.db)
    job = session.services.broker_loads.running(database.name, statement.label)
    if job is None:
        raise QueryError(1105, f"Load job[{statement.label}] is not found or already finished")
    for table in job.tables:
        session.require(privileges.LOAD, database.name, table)
    labelled_jobs.cancel(job)
    return Result()


# -- the statements a load runs -------------------------------------------------------------------


def load_statements(statement: st.BrokerLoad, db: str, session, strict: bool = True) -> list[str]:
    """The load as statements of its user: BEGIN WITH LABEL, an INSERT ... SELECT of each object
    path of each DATA INFILE, COMMIT. Not strict, a file's value that does not convert to its
    column's type is NULL (TRY_CAST), as Doris's strict_mode false makes it."""
    source = s3_source(statement.source)
    inserts = [
        _insert(data, path, db, source, session, strict)
        for data in statement.data
        for path in data.paths
    ]
    return [f"BEGIN WITH LABEL {sql_name(statement.label)}", *inserts, "COMMIT"]


def s3_source(properties: tuple[tuple[str, str], ...]) -> dict[str, str]:
    source = {}
    for key, value in properties:
        name = S3_ALIASES.get(key.lower(), key.lower())
        if name in IGNORED_SOURCE_KEYS:
            continue
        if name not in S3_STORE_PROPERTIES:
            raise QueryError(1105, f"Unknown S3 property: {key}")
        source[name] = value
    return source


def _insert(
    data: st.LoadData, path: str, db: str, source: dict[str, str], session, strict: bool
) -> str:
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
    generated = {name.lower() for name in generated_columns.texts(table)}  # worked out anew
    targets, values = [], []
    for name in file_columns:
        if name.lower() in generated:
            continue
        if name.lower() in table_columns and name.lower() not in set_names:
            targets.append(table_columns[name.lower()])
            value = read[name.lower()].sql("mysql")
            column_type = table.column(name).type
            if not strict and column_type.base in TRIED_TYPES:
                value = f"TRY_CAST({value} AS {column_type.sql})"
            values.append(value)
    for name, expression in data.settings:
        if name.lower() not in table_columns:
            raise QueryError(1054, f"Unknown column '{name}' in '{table.name}'")
        if name.lower() in generated:
            continue
        targets.append(table_columns[name.lower()])
        values.append(reading(expression, read))
    properties = {"uri": path, "format": file_format, **source}
    if file_format == "csv":
        properties["column_separator"] = data.separator or DEFAULT_SEPARATOR
    where = f" WHERE {reading(data.where, read)}" if data.where else ""
    return (
        f"INSERT INTO {sql_name(db)}.{sql_name(table.name)}{sql_partitions(data.partitions)} "
        f"({', '.join(sql_name(t) for t in targets)}) SELECT {', '.join(values)} "
        f"FROM s3({sql_properties(properties)}){where}"
    )


def reading(text: str, read: dict[str, exp.Expression]) -> str:
    """An expression as written, each name of a file column read from the file."""
    try:
        expression = sqlglot.parse_one(text, read="mysql")
    except SqlglotError:
        raise QueryError(1064, f"You have an error in your SQL syntax near '{text}'") from None
    for column in list(expression.find_all(exp.Column)):
        if not column.table and column.name.lower() in read:
            column.replace(read[column.name.lower()].copy())
    return f"({expression.sql('mysql')})"
