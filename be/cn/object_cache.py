"""Decoded objects a CN keeps between snapshots: objects never change, so a name is a key for
good; the least recently read go first once cache_bytes is passed."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

import pyarrow as pa

from be.cn.limits import ComputeLimits


class ObjectCache:
    def __init__(self, limits: ComputeLimits):
        self.limits = limits
        self._tables: collections.OrderedDict[str, pa.Table] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, name: str, read: Callable[[], pa.Table]) -> pa.Table:
        with self._lock:
            table = self._tables.get(name)
            if table is not None:
                self._tables.move_to_end(name)
                return table
        table = read()
        if table.nbytes > self.limits.max_cached_object_bytes:
            return table
        with self._lock:
            if name not in self._tables:
                self._tables[name] = table
                self._bytes += table.nbytes
            while self._bytes > self.limits.cache_bytes:
                _, evicted = self._tables.popitem(last=False)
                self._bytes -= evicted.nbytes
        assert self._bytes >= 0
        return table

    def forget(self, name: str) -> None:
        with self._lock:
            table = self._tables.pop(name, None)
            if table is not None:
                self._bytes -= table.nbytes
