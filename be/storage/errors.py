"""What object storage and the block format raise, as kinds of our own (the FE maps them)."""

from __future__ import annotations

import re

PATH = re.compile(r"(?<![\w.])/[^\s'\"]+")  # an absolute path or the path part of a URI


def without_paths(text: str) -> str:
    """A store's or a decoder's message as a client may see it: its first line, with no path of
    the node's folders (or of a bucket) in it."""
    first = text.splitlines()[0] if text else ""
    return PATH.sub("...", first)


class StorageError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ObjectStoreError(StorageError):
    """The store could not do what was asked; `name` is the object concerned, if one is."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message if name is None else f"object {name}: {message}")
        self.name = name


class ObjectNotFound(ObjectStoreError):
    pass


class ObjectExists(ObjectStoreError):
    """Objects are never overwritten: a name is written once."""


class WriteRefused(ObjectStoreError):
    """The store refused a write: a read-only folder, no permission, no space."""


class ObjectTooLarge(ObjectStoreError):
    pass


class ObjectCorrupt(ObjectStoreError):
    """An object is truncated, damaged or not what its metadata says it is."""


class StoreUnavailable(ObjectStoreError):
    """Any other failure of the store (network, server errors after pyarrow's retries)."""


class BadRows(StorageError):
    """Rows that cannot be written as blocks (missing row ids, duplicates, too many rows)."""


class UnknownColumn(StorageError):
    pass


class BadPredicate(StorageError):
    """A pruning range of a type the column's values do not compare with."""


class MergeRefused(StorageError):
    """Objects that cannot be merged together (other tablets or schema versions)."""
