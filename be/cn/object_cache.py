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
        self._put(name, table)
        return table

    def get_columns(
        self, name: str, columns: list[str], read: Callable[[list[str]], pa.Table]
    ) -> pa.Table:
        """The object's columns, each decoded once and kept on its own (a scan of some columns
        and then of others decodes each column once); read(missing) decodes those missing."""
        found: dict[str, pa.Table] = {}
        with self._lock:
            for column in columns:
                table = self._tables.get(_column_key(name, column))
                if table is not None:
                    self._tables.move_to_end(_column_key(name, column))
                    found[column] = table
        missing = [column for column in columns if column not in found]
        if missing:
            table = read(missing)
            for column in missing:
                found[column] = single = table.select([column])
                self._put(_column_key(name, column), single)
        return pa.Table.from_arrays(
            [found[column].column(0) for column in columns],
            schema=pa.schema([found[column].schema.field(0) for column in columns]),
        )

    def missing(self, name: str, columns) -> tuple[str, ...]:
        """The object's columns of these that are not kept, in their order."""
        with self._lock:
            return tuple(
                column for column in columns if _column_key(name, column) not in self._tables
            )

    def _put(self, name: str, table: pa.Table) -> None:
        if table.nbytes > self.limits.max_cached_object_bytes:
            return
        with self._lock:
            if name not in self._tables:
                self._tables[name] = table
                self._bytes += table.nbytes
            while self._bytes > self.limits.cache_bytes:
                _, evicted = self._tables.popitem(last=False)
                self._bytes -= evicted.nbytes
        assert self._bytes >= 0

    @property
    def used_bytes(self) -> int:
        return self._bytes

    def forget(self, name: str) -> None:
        with self._lock:
            for key in [key for key in self._tables if key == name or key.startswith(f"{name}#")]:
                self._bytes -= self._tables.pop(key).nbytes


def _column_key(name: str, column: str) -> str:
    return f"{name}#{column}"
