"""ALTER jobs as Doris keeps them: what ALTER TABLE journals for a schema change or a rollup,
SHOW ALTER TABLE COLUMN / ROLLUP, and CANCEL ALTER TABLE.

A light schema change (value columns added or dropped, a VARCHAR widened: no key, order or index
changes) takes effect at once and leaves a FINISHED job, as Doris's light schema change does;
any other schema change and every rollup is a job the leader runs (fe/cluster/alter_job_runner.py)
while the table keeps its definition, and its state is SCHEMA_CHANGE or ROLLUP.
"""

from __future__ import annotations

import datetime
import time

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import ddl, mysql_functions, show
from metadata import ops
from metadata.records import AlterJob, AlterJobState, AlterJobType, Table

SCHEMA_CHANGE_COLUMNS = [
    "JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId", "OriginIndexId",
    "SchemaVersion", "TransactionId", "State", "Msg", "Progress", "Timeout",
]  # fmt: skip
ROLLUP_COLUMNS = [
    "JobId", "TableName", "CreateTime", "FinishTime", "BaseIndexName", "RollupIndexName",
    "RollupId", "TransactionId", "State", "Msg", "Progress", "Timeout",
]  # fmt: skip
JOB_TYPES = {"COLUMN": AlterJobType.SCHEMA_CHANGE, "ROLLUP": AlterJobType.ROLLUP}
NO_TRANSACTION = -1  # no load transaction to wait for until the data plane


def now_ms() -> int:
    return int(time.time() * 1000)


def check_normal(catalog, table: Table) -> None:
    state = catalog.table_state(table.id)
    if state != "NORMAL":
        raise QueryError(
            1105,
            f"Table[{table.name}]'s state({state}) is not NORMAL. Do not allow doing ALTER ops",
        )


def is_light(old: Table, new: Table) -> bool:
    """Doris's light schema change: only value columns added or dropped, or a VARCHAR widened."""
    if (old.key_columns, old.rollups) != (new.key_columns, new.rollups):
        return False
    kept = [c for c in new.columns if old.column(c.name) is not None]
    if [c.name for c in kept] != [c.name for c in old.columns if new.column(c.name) is not None]:
        return False
    return all(_widened_or_same(old.column(c.name).type, c.type) for c in kept)


def _widened_or_same(old, new) -> bool:
    if old == new:
        return True
    return old.base == new.base == "VARCHAR" and new.arguments >= old.arguments


def timeout_ms(session, properties) -> int:
    seconds = dict(properties).get("timeout")
    if seconds is None:
        return session.services.config["alter_table_timeout_second"] * 1000
    if not seconds.isdigit() or int(seconds) <= 0:
        raise QueryError(1105, f"Invalid timeout format: {seconds}")
    return int(seconds) * 1000


def schema_change_ops(session, old: Table, new: Table, properties=()) -> list[ops.Op]:
    """A light change at once with its FINISHED job; any other as a PENDING job."""
    first = session.services.writer.allocate_ids(2)
    light = is_light(old, new)
    created = now_ms()
    job = AlterJob(
        id=first,
        job_type=AlterJobType.SCHEMA_CHANGE,
        db_id=old.db_id,
        table_id=old.id,
        table_name=old.name,
        index_name=old.name,
        index_id=first + 1,
        origin_index_name=old.name,
        origin_index_id=old.id,
        create_time_ms=created,
        timeout_ms=timeout_ms(session, properties),
        state=AlterJobState.FINISHED if light else AlterJobState.PENDING,
        finish_time_ms=created if light else -1,
        schema_version=old.schema_version + 1,
        table=new,
    )
    if light:
        return [ops.ReplaceTable(new), ops.CreateAlterJob(job)]
    return [ops.CreateAlterJob(job)]


def rollup_ops(session, old: Table, new: Table, actions) -> list[ops.Op]:
    """One job per rollup ADD ROLLUP names; `new` has their ids and tablets."""
    added = [r for r in new.rollups if r.name not in {o.name for o in old.rollups}]
    first = session.services.writer.allocate_ids(len(added))
    by_name = {a.name: a for a in actions if isinstance(a, st.AddRollup)}
    created = now_ms()
    result: list[ops.Op] = []
    for offset, rollup in enumerate(added):
        action = by_name[rollup.name]
        tablets = tuple(
            (p.id, start)
            for p in new.partitions
            for rid, start in p.rollup_tablets
            if rid == rollup.id
        )
        base = action.base or old.name
        base_id = next((r.id for r in old.rollups if r.name == base), old.id)
        job = AlterJob(
            id=first + offset,
            job_type=AlterJobType.ROLLUP,
            db_id=old.db_id,
            table_id=old.id,
            table_name=old.name,
            index_name=rollup.name,
            index_id=rollup.id,
            origin_index_name=base,
            origin_index_id=base_id,
            create_time_ms=created,
            timeout_ms=timeout_ms(session, action.properties),
            rollup=rollup,
            rollup_tablets=tablets,
        )
        result.append(ops.CreateAlterJob(job))
    return result


# SHOW ALTER TABLE COLUMN | ROLLUP.


def _time(millis: int, zone) -> str | None:
    if millis < 0:
        return None
    moment = datetime.datetime.fromtimestamp(millis / 1000, zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _progress(job: AlterJob) -> str | None:
    return "0/1" if job.state == AlterJobState.RUNNING else None


def job_row(job: AlterJob, zone) -> tuple:
    common_head = (
        job.id,
        job.table_name,
        _time(job.create_time_ms, zone),
        _time(job.finish_time_ms, zone),
    )
    tail = (NO_TRANSACTION, job.state.value, job.message, _progress(job), job.timeout_ms // 1000)
    if job.job_type == AlterJobType.SCHEMA_CHANGE:
        version = f"{job.schema_version}:0"
        return (*common_head, job.index_name, job.index_id, job.origin_index_id, version, *tail)
    return (*common_head, job.origin_index_name, job.index_name, job.index_id, *tail)


async def show_alter(session, statement: st.ShowAlter) -> Result:
    """Doris lists the jobs of the database's tables the user may ALTER, oldest first."""
    database = ddl.resolve_database(session, statement.db)
    job_type = JOB_TYPES[statement.kind]
    names = SCHEMA_CHANGE_COLUMNS if job_type == AlterJobType.SCHEMA_CHANGE else ROLLUP_COLUMNS
    zone = mysql_functions.StatementTime.of(session).zone
    rows = [
        job_row(job, zone)
        for job in list(session.catalog.alter_jobs.values())
        if job.db_id == database.id
        and job.job_type == job_type
        and privileges.has(session.user, privileges.ALTER, database.name, job.table_name)
    ]
    for column, value in statement.where:
        position = show.title_index(names, column)
        rows = [row for row in rows if str(row[position]) == value]
    for order in reversed(statement.order_by):
        position = show.title_index(names, order.column)
        rows.sort(
            key=lambda row, p=position: (row[p] is not None, row[p]), reverse=order.descending
        )
    if statement.limit is not None:
        rows = rows[statement.offset : statement.offset + statement.limit]
    return show.text_result(names, [tuple(_text(v) for v in row) for row in rows])


def _text(value) -> str | None:
    return None if value is None else str(value)


# CANCEL ALTER TABLE COLUMN | ROLLUP FROM t [(job_id, ...)].


def cancel_alter(session, statement: st.CancelAlter) -> list[ops.Op]:
    session.require(
        privileges.ALTER, ddl.database_name(session, statement.table.db), statement.table.name
    )
    _, table = ddl.resolve_table(session, statement.table)
    job_type = JOB_TYPES[statement.kind]
    jobs = [j for j in session.catalog.unfinished_jobs(table.id) if j.job_type == job_type]
    if statement.job_ids:
        jobs = [j for j in jobs if j.id in statement.job_ids]
    if not jobs:
        if job_type == AlterJobType.ROLLUP:
            raise QueryError(
                1105,
                f"Table[{table.name}] is not under ROLLUP. "
                "Use 'ALTER TABLE DROP ROLLUP' if you want to.",
            )
        raise QueryError(1105, f"Table[{table.name}] is not under SCHEMA_CHANGE.")
    cancelled = now_ms()
    return [
        ops.UpdateAlterJob(job.id, AlterJobState.CANCELLED, cancelled, "user cancelled")
        for job in jobs
    ]
