"""One byte budget for what a CN keeps to answer the next reads faster (snapshots of a table's
newest state, key indexes), across all its tables: each kept thing is an entry with its size,
the least recently used go first once the budget is passed, and one larger than an entry may be
is not kept at all (the read that made it uses it once).

An entry's owner learns it was evicted through its callback, called outside the budget's lock
(an owner calls the budget outside its own lock too, so neither waits on the other)."""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from be.cn.limits import ComputeLimits


@dataclass(slots=True)
class _Entry:
    nbytes: int
    on_evict: Callable[[], None]


class KeptBytes:
    def __init__(self, limits: ComputeLimits):
        self.limits = limits
        self._entries: collections.OrderedDict[int, _Entry] = collections.OrderedDict()
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()
        self.used_bytes = 0
        self.evicted = 0  # entries let go to make room
        self.refused = 0  # entries too large to keep

    def token(self) -> int:
        """A new entry's name, for its owner to record before it admits it."""
        return next(self._tokens)

    def admit(self, token: int, nbytes: int, on_evict: Callable[[], None]) -> bool:
        """Keep an entry of nbytes until it is evicted (on_evict) or released; False if it is too
        large to keep."""
        assert nbytes >= 0
        with self._lock:
            assert token not in self._entries, "a token is admitted once"
            if nbytes > self.limits.max_kept_entry_bytes:
                self.refused += 1
                return False
            self._entries[token] = _Entry(nbytes, on_evict)
            self.used_bytes += nbytes
            victims = self._make_room(token)
        _evict(victims)
        return True

    def touch(self, token: int | None) -> None:
        if token is None:
            return
        with self._lock:
            if token in self._entries:
                self._entries.move_to_end(token)

    def resize(self, token: int | None, nbytes: int) -> bool:
        """The entry grew or shrank; False if it no longer may be kept (then it is released, and
        its owner lets it go: on_evict is not called)."""
        if token is None:
            return False
        with self._lock:
            entry = self._entries.get(token)
            if entry is None:
                return False
            if nbytes > self.limits.max_kept_entry_bytes:
                del self._entries[token]
                self.used_bytes -= entry.nbytes
                self.refused += 1
                return False
            self.used_bytes += nbytes - entry.nbytes
            entry.nbytes = nbytes
            self._entries.move_to_end(token)
            victims = self._make_room(token)
        _evict(victims)
        return True

    def release(self, token: int | None) -> None:
        """The owner let the entry go."""
        if token is None:
            return
        with self._lock:
            entry = self._entries.pop(token, None)
            if entry is not None:
                self.used_bytes -= entry.nbytes
            assert self.used_bytes >= 0

    @property
    def entries(self) -> int:
        return len(self._entries)

    def _make_room(self, keep: int) -> list[_Entry]:
        """Under the lock: the least recently used entries taken out (never keep) until the
        budget holds."""
        victims = []
        while self._entries and (
            self.used_bytes > self.limits.kept_bytes
            or len(self._entries) > self.limits.max_kept_entries
        ):
            token, entry = next(iter(self._entries.items()))
            if token == keep:
                break
            del self._entries[token]
            self.used_bytes -= entry.nbytes
            victims.append(entry)
        self.evicted += len(victims)
        assert self.used_bytes >= 0
        return victims


def _evict(victims: list[_Entry]) -> None:
    for entry in victims:
        entry.on_evict()
