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


class SparkWriteError(Exception):
    """A df.write.format("quire") that did not happen: none of its rows is visible."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class WriteRefused(SparkWriteError):
    """The FE refused a step of the write (bad credentials, no LOAD, no such table, a conflict)
    or the data plane failed it."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class BadValue(SparkWriteError):
    """A row whose values do not fit the table's columns (strictly, as an INSERT)."""
