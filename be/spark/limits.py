"""Every bound of a Spark read of Quire tables, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass

from be.read_plan.plan import MAX_PLAN_BYTES
from be.storage.names import MAX_SEQ

MAX_ROW_ID_RANGE = 1_000_000  # row ids one request asks (the FE's and the TN's bound)


@dataclass(frozen=True)
class SparkReadLimits:
    partition_rows: int = 2 << 20  # rows of blocks one Spark partition reads (it may hold more)
    parallelism: int = 2  # tasks a read runs at once: its partitions are a multiple of it
    max_partitions: int = 4096  # Spark partitions of one read
    batch_rows: int = 1 << 16  # rows of one Arrow record batch handed to Spark
    plan_timeout_seconds: float = 120.0  # asking the FE for the plan
    max_plan_bytes: int = MAX_PLAN_BYTES

    def __post_init__(self) -> None:
        rules = {
            "partition_rows > 0": self.partition_rows > 0,
            "0 < parallelism <= max_partitions": 0 < self.parallelism <= self.max_partitions,
            "0 < batch_rows <= partition_rows": 0 < self.batch_rows <= self.partition_rows,
            "plan_timeout_seconds > 0": self.plan_timeout_seconds > 0,
            "0 < max_plan_bytes <= MAX_PLAN_BYTES": 0 < self.max_plan_bytes <= MAX_PLAN_BYTES,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"Spark read limits must satisfy: {', '.join(broken)}")


@dataclass(frozen=True)
class SparkWriteLimits:
    batch_rows: int = 1 << 16  # rows converted at once, per task
    row_id_rows: int = 1 << 19  # the fewest row ids a task asks the FE at once
    object_rows: int = 1_000_000  # rows of one tablet a task writes as one object
    max_buffered_bytes: int = 64 << 20  # a task's rows waiting for their object, all tablets
    objects_per_task: int = 128  # objects one task attempt writes per tablet
    attempts_named: int = 2  # a task's attempts name their objects apart (modulo this)
    max_tasks: int = (MAX_SEQ + 1) // (128 * 2)  # Spark partitions of one write
    request_timeout_seconds: float = 120.0  # one request to the FE

    def __post_init__(self) -> None:
        rules = {
            "0 < batch_rows <= object_rows": 0 < self.batch_rows <= self.object_rows,
            f"0 < row_id_rows <= {MAX_ROW_ID_RANGE}": 0 < self.row_id_rows <= MAX_ROW_ID_RANGE,
            "max_buffered_bytes > 0": self.max_buffered_bytes > 0,
            "objects_per_task > 0 and attempts_named > 0": (
                self.objects_per_task > 0 and self.attempts_named > 0
            ),
            "max_tasks * attempts_named * objects_per_task <= MAX_SEQ + 1": (
                0 < self.max_tasks * self.attempts_named * self.objects_per_task <= MAX_SEQ + 1
            ),
            "request_timeout_seconds > 0": self.request_timeout_seconds > 0,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"Spark write limits must satisfy: {', '.join(broken)}")

    def seqs(self, task: int, attempt: int) -> range:
        """The sequence numbers of the objects one task attempt names (apart from any other's)."""
        assert 0 <= task < self.max_tasks and attempt >= 0
        first = (task * self.attempts_named + attempt % self.attempts_named) * self.objects_per_task
        return range(first, first + self.objects_per_task)
