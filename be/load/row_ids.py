"""Row ids for a load's rows, asked of the TN in big ranges (a request per range, not per batch)
and handed out in order; ids of a range left unused stay unused (row ids need only be unique)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa


class RowIdRanges:
    def __init__(self, reserve: Callable[[int], int], range_rows: int):
        """reserve(count): the first of count row ids the TN hands the load; range_rows: the
        fewest ids asked at once."""
        assert range_rows > 0
        self.reserve = reserve
        self.range_rows = range_rows
        self._next = 0
        self._end = 0

    def take(self, count: int) -> pa.Array:
        """count row ids (int64, increasing), from the range at hand and then a new one."""
        assert count > 0
        pieces = []
        left = count
        while left:
            if self._next == self._end:
                asked = max(left, self.range_rows)
                self._next = self.reserve(asked)
                self._end = self._next + asked
            taken = min(left, self._end - self._next)
            pieces.append(np.arange(self._next, self._next + taken, dtype=np.int64))
            self._next += taken
            left -= taken
        ids = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        assert len(ids) == count
        return pa.array(ids, pa.int64())
