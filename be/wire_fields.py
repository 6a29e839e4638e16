"""Reading a decoded message's fields strictly (the logtail format's and the node service's): each
reader checks a value's type and range and raises the format's own error, naming the field."""

from __future__ import annotations

from typing import Any


class FieldReader:
    def __init__(self, error: type[Exception]):
        self.error = error

    def shape(self, value: Any, length: int, what: str) -> tuple:
        if type(value) is not tuple or len(value) != length:
            raise self.error(f"malformed {what}: expected {length} fields, got {value!r:.100}")
        return value

    def integer(self, value: Any, what: str, minimum: int = 0) -> int:
        if type(value) is not int or value < minimum or value >= 1 << 63:
            raise self.error(f"malformed {what}: {value!r:.100}")
        return value

    def bytes(self, value: Any, what: str, length: int | None = None) -> bytes:
        if type(value) is not bytes or (length is not None and len(value) != length):
            raise self.error(f"malformed {what}")
        return value

    def text(self, value: Any, what: str, max_chars: int) -> str:
        if type(value) is not str or len(value) > max_chars:
            raise self.error(f"malformed {what}: {value!r:.100}")
        return value
