"""Jobs an FE runs in the background for a statement that answered at once (Doris's S3 Load and
EXPORT): each named by its database and label, run as the user who issued it (its statements in
a session of its own), at most MAX_KEPT_JOBS of them kept while the FE runs.

Each state a job goes through is journaled (a LabelledJobRecord), so that every FE shows it and
a restart or a failover forgets none: a job journaled as running that no FE runs any more (its FE
stopped) is shown CANCELLED (known)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from metadata import ops
from metadata.records import LabelledJobRecord

logger = logging.getLogger(__name__)

MAX_KEPT_JOBS = 1000  # jobs an FE remembers; past it the oldest finished ones are let go
PENDING, FINISHED, CANCELLED = "PENDING", "FINISHED", "CANCELLED"


@dataclass
class LabelledJob:
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
    kind: str = "LOAD"  # LOAD | EXPORT
    warnings: int = 0  # its statements' (an INSERT's: the rows it filtered)
    written: int = 0  # the rows its statements wrote
    first_warning: str = ""  # the first of its statements' warnings
    committing: bool = False  # its last statement, a COMMIT, runs: it ends as that does
    answer: Result | None = field(default=None, repr=False)  # its last statement's
    details: dict = field(default_factory=dict)  # what its kind shows of it
    task: asyncio.Task | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in (FINISHED, CANCELLED)

    def record(self, runner: str) -> LabelledJobRecord:
        details = tuple(sorted((key, str(value)) for key, value in self.details.items()))
        return LabelledJobRecord(
            self.kind, self.db, self.label, self.job_id, self.user, self.tables,
            self.timeout_seconds, self.created_ms, self.state, self.started_ms,
            self.finished_ms, self.message, runner,
            (*details, ("filtered_rows", str(self.warnings))),
        )  # fmt: skip

    @classmethod
    def of_record(cls, record: LabelledJobRecord) -> LabelledJob:
        details = dict(record.details)
        warnings = int(details.pop("filtered_rows", "0"))
        return cls(
            record.job_id, record.db, record.label, record.user, record.tables,
            record.timeout_seconds, record.created_ms, record.state, record.started_ms,
            record.finished_ms, record.message, kind=record.kind, warnings=warnings,
            details=details,
        )  # fmt: skip


STOPPED = "the frontend that ran it stopped before it ended"


class LabelledJobs:
    """The jobs of one kind this FE took, by (database, label), oldest first."""

    def __init__(self, kind: str = "LOAD"):
        self.kind = kind
        self.jobs: dict[tuple[str, str], LabelledJob] = {}
        self._ids = itertools.count(int(time.time() * 1000))

    def new(self, db: str, label: str, user: str, tables, timeout_seconds: int) -> LabelledJob:
        """A job kept from now on (its label's earlier one, finished, let go)."""
        while len(self.jobs) >= MAX_KEPT_JOBS:
            oldest = next((key for key, kept in self.jobs.items() if kept.finished), None)
            if oldest is None:
                raise QueryError(1105, f"{MAX_KEPT_JOBS} jobs are running; try again later")
            del self.jobs[oldest]
        job = LabelledJob(
            next(self._ids), db, label, user, tuple(tables), timeout_seconds, _now_ms(),
            kind=self.kind,
        )  # fmt: skip
        self.jobs.pop((db, label), None)
        self.jobs[(db, label)] = job
        return job

    def of(self, db: str) -> list[LabelledJob]:
        return [job for (job_db, _), job in self.jobs.items() if job_db == db]

    def running(self, db: str, label: str) -> LabelledJob | None:
        job = self.jobs.get((db, label))
        return None if job is None or job.finished else job

    def known(self, session, db: str) -> list[LabelledJob]:
        """The database's jobs of this kind as this FE knows them: its own, and those the
        journal holds of others (a restart's or another FE's). One journaled as running that
        this FE does not run is CANCELLED, unless this FE follows the leader that runs it."""
        services = session.services
        leading = services.writer.is_leader()
        leader = str(services.journal.status().leader or "")
        found = {job.label: job for job in self.of(db)}
        with session.catalog.lock:
            records = [r for r in session.catalog.labelled_jobs.values() if r.kind == self.kind]
        for record in records:
            if record.db != db or record.label in found:
                continue
            job = LabelledJob.of_record(record)
            if not job.finished and (leading or record.runner != leader):
                job.state, job.message = CANCELLED, job.message or STOPPED
            found[record.label] = job
        return sorted(found.values(), key=lambda job: job.created_ms)


async def start(
    job: LabelledJob,
    session,
    statements: list[str],
    running_state: str,
    commit: str | None = None,
    before_commit: Callable[[LabelledJob], None] | None = None,
) -> None:
    """The job's statements run in order, as session's user in its database, on the event
    loop's time; the job is CANCELLED at the first that fails, at its timeout or when cancelled.
    commit: a last statement that commits what they wrote: once begun, neither the timeout nor
    a cancel stops it, so that a job CANCELLED wrote nothing and one FINISHED all;
    before_commit(job): raises QueryError if what they wrote may not be committed. The job is
    journaled before this returns: the statement that asked for it is answered once a restart,
    even after a kill -9, would show it."""
    try:
        await _journal(job, session)
    except BaseException as error:
        job.state, job.message = CANCELLED, f"not journaled: {error}"
        raise
    if job.finished:  # cancelled meanwhile
        await _journaled(job, session)
        return
    runner = type(session)(session.services)
    runner.username, runner.user_host = session.username, session.user_host
    runner.database = job.db
    runner.recorded = False
    job.task = asyncio.get_running_loop().create_task(
        _run(job, runner, statements, running_state, commit, before_commit)
    )


def cancel(job: LabelledJob) -> None:
    """Stops the job; 1105 if it is committing (its commit lands or fails on its own)."""
    if job.committing:
        raise QueryError(
            1105, f"Load job [{job.label}] is committing its transaction and cannot be cancelled"
        )
    if job.task is not None:
        job.task.cancel()
    else:  # not started yet (its start journals it): it never will be
        job.state, job.message, job.finished_ms = CANCELLED, "user cancel", _now_ms()


async def _run(
    job: LabelledJob,
    session,
    statements: list[str],
    running_state: str,
    commit: str | None,
    before_commit: Callable[[LabelledJob], None] | None,
) -> None:
    job.state, job.started_ms = running_state, _now_ms()
    try:
        await _journaled(job, session)
        async with asyncio.timeout(job.timeout_seconds):
            for sql in statements:
                job.answer = await session.handle_query(sql, {})
                job.warnings += job.answer.warnings
                job.written += job.answer.affected_rows
                if session.warnings and not job.first_warning:
                    job.first_warning = session.warnings[0][2]
            if before_commit is not None:
                before_commit(job)
            job.committing = commit is not None
        if commit is not None:
            logger.info("job %s.%s committing", job.db, job.label)
            job.answer = await session.handle_query(commit, {})
        job.state = FINISHED
        logger.info("job %s.%s finished", job.db, job.label)
    except TimeoutError:
        job.state, job.message = CANCELLED, f"timeout: the job took over {job.timeout_seconds} s"
    except asyncio.CancelledError:
        job.state, job.message = CANCELLED, "user cancel"
    except QueryError as error:
        job.state, job.message = CANCELLED, error.message
    except Exception as error:  # a bug: the job ends, the FE goes on
        logger.exception("job %s.%s failed", job.db, job.label)
        job.state, job.message = CANCELLED, f"internal error: {type(error).__name__}"
    finally:
        job.committing = False
        session.transaction = None  # what it had not committed is dropped
        job.finished_ms = _now_ms()
    if job.state == CANCELLED:
        logger.warning("job %s.%s cancelled: %s", job.db, job.label, job.message)
    await _journaled(job, session)


async def _journal(job: LabelledJob, session) -> None:
    """The job's state journaled, as this FE runs it (a finished EXPORT with its files)."""
    if job.answer is not None and job.finished and job.kind == "EXPORT":
        job.details["files"] = json.dumps([list(row) for row in job.answer.rows])
    record = job.record(session.services.this.address)
    await session.services.writer.commit([ops.SetLabelledJob(record)])


async def _journaled(job: LabelledJob, session) -> None:
    """_journal, a failure logged: the job goes on, this FE knows it."""
    try:
        await _journal(job, session)
    except Exception as error:  # not the leader any more, no quorum: the job is not stopped
        logger.warning("job %s.%s not journaled: %s", job.db, job.label, error)


def timeout_of(properties: dict[str, str], default: int) -> int:
    text = properties.get("timeout", str(default))
    if not text.isdigit() or int(text) <= 0:
        raise QueryError(1105, f"Invalid timeout: {text}")
    return int(text)


def sql_name(name: str) -> str:
    """A name as a job's statements write it (quoted)."""
    return exp.to_identifier(name, quoted=True).sql("mysql")


def sql_text(value: str) -> str:
    """A string literal as a job's statements write it."""
    return exp.Literal.string(value).sql("mysql")


def sql_properties(properties: dict[str, str]) -> str:
    """`"key" = "value", ...` as a job's statements write a function's or a clause's properties."""
    return ", ".join(f"{sql_text(key)} = {sql_text(value)}" for key, value in properties.items())


def sql_partitions(names: tuple[str, ...]) -> str:
    """` PARTITION (p, ...)` after a table's name, or nothing."""
    return f" PARTITION ({', '.join(sql_name(name) for name in names)})" if names else ""


def _now_ms() -> int:
    return int(time.time() * 1000)
