"""What the Spark data source raises: a refused or failed read plan, a bad option."""

from __future__ import annotations


class SparkReadError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadOption(SparkReadError):
    """An option of spark.read.format("quire") is missing or malformed."""


class PlanRefused(SparkReadError):
    """The FE refused the read plan (bad credentials, no SELECT, no such table) or failed."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
