"""What making, sending and reading a read plan raises."""

from __future__ import annotations


class ReadPlanError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ReadPlanFormatError(ReadPlanError):
    """Bytes that are not a read plan of a version this build reads, or one over its limits."""
