"""Every bound of a Spark read of Quire tables, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass

from be.read_plan.plan import MAX_PLAN_BYTES


@dataclass(frozen=True)
class SparkReadLimits:
    partition_rows: int = 2 << 20  # rows of blocks one Spark partition reads (it may hold more)
    max_partitions: int = 4096  # Spark partitions of one read
    batch_rows: int = 1 << 16  # rows of one Arrow record batch handed to Spark
    plan_timeout_seconds: float = 120.0  # asking the FE for the plan
    max_plan_bytes: int = MAX_PLAN_BYTES

    def __post_init__(self) -> None:
        rules = {
            "partition_rows > 0": self.partition_rows > 0,
            "max_partitions > 0": self.max_partitions > 0,
            "0 < batch_rows <= partition_rows": 0 < self.batch_rows <= self.partition_rows,
            "plan_timeout_seconds > 0": self.plan_timeout_seconds > 0,
            "0 < max_plan_bytes <= MAX_PLAN_BYTES": 0 < self.max_plan_bytes <= MAX_PLAN_BYTES,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"Spark read limits must satisfy: {', '.join(broken)}")
