"""A read plan: what a reader outside the data plane (Spark) needs to read one table as of one
snapshot timestamp straight from object storage (be/read_plan/plan.py), as bytes."""

from be.read_plan.errors import ReadPlanError, ReadPlanFormatError
from be.read_plan.plan import ReadPlan, decode, encode

__all__ = ["ReadPlan", "ReadPlanError", "ReadPlanFormatError", "decode", "encode"]
