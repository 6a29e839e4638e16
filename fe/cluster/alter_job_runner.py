"""The leader moves each unfinished ALTER job on, one journaled state per round, as Doris's
AlterHandler does: PENDING -> WAITING_TXN -> RUNNING -> FINISHED, or CANCELLED when its table is
gone or its timeout passed; and it removes done jobs older than history_job_keep_max_second.

Each state has a step that says where the job goes next, or None to stay (the data plane's
conversion of tablets will be RUNNING's work). A new leader carries on from the journaled state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from be.config import Config
from fe.cluster.write_path import MetadataWriter, repeat_while_leading
from fe.mysql.errors import QueryError
from metadata import ops
from metadata.catalog import Catalog
from metadata.records import AlterJob, AlterJobState

logger = logging.getLogger(__name__)

MIN_INTERVAL_SECONDS = 0.05
Step = tuple[AlterJobState, str] | None


def _pending(catalog: Catalog, job: AlterJob) -> Step:
    return AlterJobState.WAITING_TXN, ""


def _waiting_txn(catalog: Catalog, job: AlterJob) -> Step:
    """Doris waits here for the loads begun before the job; there are none before the data plane."""
    return AlterJobState.RUNNING, ""


def _running(catalog: Catalog, job: AlterJob) -> Step:
    """Doris converts the tablets here; until the data plane there are no rows to convert."""
    return AlterJobState.FINISHED, ""


STEPS: dict[AlterJobState, Callable[[Catalog, AlterJob], Step]] = {
    AlterJobState.PENDING: _pending,
    AlterJobState.WAITING_TXN: _waiting_txn,
    AlterJobState.RUNNING: _running,
}


def next_update(catalog: Catalog, job: AlterJob, now_ms: int) -> ops.UpdateAlterJob | None:
    assert not job.state.done, job
    if job.table_id not in catalog.tables:
        return ops.UpdateAlterJob(job.id, AlterJobState.CANCELLED, now_ms, "table does not exist")
    if now_ms > job.create_time_ms + job.timeout_ms:
        return ops.UpdateAlterJob(job.id, AlterJobState.CANCELLED, now_ms, "Timeout")
    step = STEPS[job.state](catalog, job)
    if step is None:
        return None
    state, message = step
    return ops.UpdateAlterJob(job.id, state, now_ms, message)


def expired_jobs(catalog: Catalog, now_ms: int, keep_seconds: int) -> tuple[int, ...]:
    deadline = now_ms - keep_seconds * 1000
    return tuple(
        job.id
        for job in list(catalog.alter_jobs.values())
        if job.state.done and job.finish_time_ms <= deadline
    )


class AlterJobRunner:
    def __init__(
        self, catalog: Catalog, writer: MetadataWriter, config: Config, stopping: threading.Event
    ):
        self.catalog = catalog
        self.writer = writer
        self.config = config
        self.stopping = stopping

    def start(self) -> None:
        repeat_while_leading(
            "alter-job-runner", self.writer, self.stopping, self.interval, self.run_round
        )

    def interval(self) -> float:
        return max(self.config["alter_scheduler_interval_millisecond"] / 1000, MIN_INTERVAL_SECONDS)

    def run_round(self) -> None:
        now_ms = int(time.time() * 1000)
        for job in list(self.catalog.alter_jobs.values()):
            if job.state.done:
                continue
            update = next_update(self.catalog, job, now_ms)
            if update is None:
                continue
            try:
                self.writer.commit_blocking([update])
            except QueryError as error:  # cancelled by a user meanwhile
                logger.info("alter job %d not moved on: %s", job.id, error)
                continue
            logger.info("alter job %d of table %s: %s", job.id, job.table_name, update.state)
        expired = expired_jobs(self.catalog, now_ms, self.config["history_job_keep_max_second"])
        if expired:
            self.writer.commit_blocking([ops.RemoveAlterJobs(expired)])
            logger.info("removed %d ALTER jobs past history_job_keep_max_second", len(expired))
