"""Doris's EXPORT TABLE [db.]t [PARTITION (p, ...)] [WHERE predicate] TO "s3://bucket/prefix"
[PROPERTIES ("label" = ..., "format" = "csv" | "csv_with_names" | "parquet", "column_separator"
= ..., "columns" = "a,b", "timeout" = seconds)] WITH S3 ("s3.endpoint" = ..., "s3.access_key" =
..., "s3.secret_key" = ...): the table's rows (at the job's snapshot) written as an object of the
store by a job of the FE, run as the user who issued it as SELECT ... INTO OUTFILE (admins only,
as OUTFILE: the FE reaches any endpoint from its host). SHOW EXPORT shows the jobs (PENDING,
EXPORTING, FINISHED with the files written, CANCELLED with the error); CANCEL EXPORT stops one
not finished. The jobs live on the FE that took them (a follower sends EXPORT to the leader)."""

from __future__ import annotations

import json
import secrets

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import labelled_jobs
from fe.statements.broker_loads import reading, s3_source
from fe.statements.labelled_jobs import sql_name, sql_partitions, sql_properties, sql_text
from fe.statements.names import resolve_database, resolve_table
from fe.statements.show import load_time, text_result

DEFAULT_TIMEOUT_SECONDS = 7200  # Doris's export timeout
FORMATS = ("csv", "csv_with_names", "parquet")
PROPERTIES = frozenset(
    {"label", "format", "column_separator", "columns", "timeout", "max_file_size"}
)
EXPORTING = "EXPORTING"
TITLES = [
    "JobId", "Label", "State", "Progress", "TaskInfo", "Path", "CreateTime", "StartTime",
    "FinishTime", "Timeout", "ErrorMsg", "OutfileInfo",
]  # fmt: skip
SHOWN_BY = ("id", "label", "state")


async def export(session, statement: st.Export) -> Result:
    session.require_admin()  # the FE writes to any endpoint from its host, as OUTFILE
    database, table = resolve_table(session, statement.table)
    session.require(privileges.SELECT, database.name, table.name)
    properties = {key.lower(): value for key, value in statement.properties}
    unknown = set(properties) - PROPERTIES
    if unknown:
        raise QueryError(1105, f"Unknown property: {sorted(unknown)[0]}")
    file_format = properties.get("format", "csv").lower()
    if file_format not in FORMATS:
        raise QueryError(1105, f"format must be one of {', '.join(FORMATS)}")
    label = properties.get("label") or f"export_{secrets.token_hex(16)}"
    exports = session.services.exports
    if exports.running(database.name, label):
        raise QueryError(1105, f"Label '{label}' already exists")
    sql = _outfile(statement, database.name, table, properties, file_format)
    await session.parse(sql)  # a WHERE that is no predicate: 1064 now, not in the job
    timeout = labelled_jobs.timeout_of(properties, DEFAULT_TIMEOUT_SECONDS)
    job = exports.new(database.name, label, session.username or "", [table.name], timeout)
    job.details = {
        "path": statement.path,
        "task_info": _task_info(statement, database.name, table.name, properties, file_format),
    }
    await labelled_jobs.start(job, session, [sql], EXPORTING)
    return Result()


def _outfile(statement: st.Export, db: str, table, properties: dict, file_format: str) -> str:
    columns = [name.strip() for name in properties.get("columns", "").split(",") if name.strip()]
    for name in columns:
        if table.column(name) is None:
            raise QueryError(1054, f"Unknown column '{name}' in '{table.name}'")
    chosen = ", ".join(sql_name(name) for name in columns) if columns else "*"
    where = f" WHERE {reading(statement.where, {})}" if statement.where else ""
    outfile = dict(s3_source(statement.source))
    for name in ("column_separator", "max_file_size"):
        if name in properties:
            outfile[name] = properties[name]
    partition = sql_partitions(statement.partitions)
    return (
        f"SELECT {chosen} FROM {sql_name(db)}.{sql_name(table.name)}{partition}{where} "
        f"INTO OUTFILE {sql_text(statement.path)} FORMAT AS {file_format.upper()} "
        f"PROPERTIES ({sql_properties(outfile)})"
    )


def _task_info(statement: st.Export, db: str, table: str, properties: dict, kind: str) -> str:
    return json.dumps(
        {
            "partitions": list(statement.partitions) or ["*"],
            "columns": properties.get("columns", ""),
            "format": kind,
            "column_separator": properties.get("column_separator", ","),
            "db": db,
            "tbl": table,
        },
        separators=(",", ":"),
    )


async def show(session, statement: st.ShowExport) -> Result:
    database = resolve_database(session, statement.db)
    jobs = session.services.exports.known(session, database.name)
    if statement.where is not None:
        key, value = statement.where[0].lower(), statement.where[1]
        if key not in SHOWN_BY:
            raise QueryError(1105, "Where clause should look like: LABEL = \"your_label\", "
                             "STATE = \"PENDING|EXPORTING|FINISHED|CANCELLED\" or ID = job_id")  # fmt: skip
        jobs = [job for job in jobs if _shown_by(job, key) == value]
    user = session.user
    rows = [
        _row(job)
        for job in jobs
        if all(privileges.has_any(user, database.name, table) for table in job.tables)
    ]
    return text_result(TITLES, rows)


def _shown_by(job, key: str):
    return {"id": job.job_id, "label": job.label, "state": job.state}[key]


def _row(job) -> tuple:
    files = "NULL"
    written = list(job.answer.rows) if job.answer is not None else None
    if written is None and "files" in job.details:  # a job another FE (or a restart) ran
        written = json.loads(job.details["files"])
    if job.state == labelled_jobs.FINISHED and written:
        number, rows, size, url = written[0]
        files = json.dumps(
            [[{"fileNumber": str(number), "totalRows": str(rows), "fileSize": f"{size}bytes",
               "url": url}]],
            separators=(",", ":"),
        )  # fmt: skip
    error = f"type:RUN_FAIL; msg:{job.message}" if job.message else "NULL"
    return (
        job.job_id, job.label, job.state,
        "100%" if job.state == labelled_jobs.FINISHED else "0%",
        job.details["task_info"], job.details["path"], load_time(job.created_ms),
        load_time(job.started_ms) if job.started_ms else "NULL",
        load_time(job.finished_ms) if job.finished_ms else "NULL",
        job.timeout_seconds, error, files,
    )  # fmt: skip


async def cancel(session, statement: st.CancelExport) -> Result:
    database = resolve_database(session, statement.db)
    job = session.services.exports.running(database.name, statement.label)
    if job is None:
        raise QueryError(1105, f"Export job [{statement.label}] is not found or already finished")
    session.require_admin()
    labelled_jobs.cancel(job)
    return Result()
