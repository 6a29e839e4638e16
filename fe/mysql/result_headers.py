"""A connection's result set headers (column count, column definitions, the EOF after them) as it
last framed them, to send again as they are when a statement answers with the same columns."""

from __future__ import annotations

from collections.abc import Hashable

MAX_KEPT_HEADERS = 16  # per connection; past it all are let go
MAX_HEADER_BYTES = 4096  # a header longer than this is framed again each time


class ResultHeaders:
    """Framed headers by what they depend on: the Column objects themselves (a Column never
    changes once made, and is kept alive here), the first sequence id, the EOF flags."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[bytes, int]] = {}

    def get(self, key: Hashable) -> tuple[bytes, int] | None:
        """The header's bytes and how many packets they are."""
        return self._kept.get(key)

    def put(self, key: Hashable, encoded: bytes, packets: int) -> None:
        if len(encoded) > MAX_HEADER_BYTES:
            return
        assert 0 < packets <= 0xFF, "a header this short is under 255 packets"
        if len(self._kept) >= MAX_KEPT_HEADERS:
            self._kept.clear()
        self._kept[key] = (encoded, packets)
