"""The versioned encoding of the log's journal entries.

An entry is one format-version byte followed by a msgpack array whose first element is its kind:

    [APPEND, [record, ...]]        records of one append (msgpack bin), LSNs in order
    [TRUNCATE, lsn]                the TN's truncate point: records below lsn may be dropped
    [RESERVE_TIMESTAMPS, until]    the timestamp oracle may hand out timestamps up to until

A released version is never changed: a new field means a new version, and the decoder keeps
reading the old ones. Versions:

    1   the first release
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import msgpack

from be.logservice.errors import LogCorrupted

FORMAT_VERSION = 1
_VERSION_BYTE = bytes([FORMAT_VERSION])


class EntryKind(enum.IntEnum):
    APPEND = 1
    TRUNCATE = 2
    RESERVE_TIMESTAMPS = 3


@dataclass(frozen=True)
class Truncate:
    lsn: int


@dataclass(frozen=True)
class ReserveTimestamps:
    until: int


def encode_append(records: list[bytes]) -> bytes:
    return _VERSION_BYTE + msgpack.packb([EntryKind.APPEND, records], use_bin_type=True)


def encode_truncate(lsn: int) -> bytes:
    return _VERSION_BYTE + msgpack.packb([EntryKind.TRUNCATE, lsn])


def encode_reserve_timestamps(until: int) -> bytes:
    return _VERSION_BYTE + msgpack.packb([EntryKind.RESERVE_TIMESTAMPS, until])


def _unpacker(payload: bytes) -> msgpack.Unpacker:
    if not payload or payload[0] != FORMAT_VERSION:
        version = payload[0] if payload else None
        raise LogCorrupted(f"log entry of unknown format version {version}")
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=len(payload), strict_map_key=True)
    unpacker.feed(payload[1:])
    return unpacker


def kind_and_count(payload: bytes) -> tuple[EntryKind, int | Truncate | ReserveTimestamps]:
    """An entry's kind and, for an append, how many records it holds (without decoding them);
    for the others, the decoded entry. What the state machine needs for every entry."""
    try:
        unpacker = _unpacker(payload)
        if unpacker.read_array_header() != 2:
            raise LogCorrupted("a log entry is a pair of kind and body")
        kind = EntryKind(unpacker.unpack())
        if kind is EntryKind.APPEND:
            count = unpacker.read_array_header()
            if count == 0:
                raise LogCorrupted("an append entry holds at least one record")
            return kind, count
        value = unpacker.unpack()
        _check_end(unpacker)
    except (ValueError, msgpack.UnpackException, msgpack.OutOfData) as error:
        raise LogCorrupted(f"undecodable log entry: {error}") from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LogCorrupted(f"a {kind.name} entry holds {value!r}, not an LSN or timestamp")
    return kind, Truncate(value) if kind is EntryKind.TRUNCATE else ReserveTimestamps(value)


def decode_records(payload: bytes) -> list[bytes] | None:
    """The records of an append entry, None for an entry of another kind."""
    try:
        unpacker = _unpacker(payload)
        if unpacker.read_array_header() != 2:
            raise LogCorrupted("a log entry is a pair of kind and body")
        if EntryKind(unpacker.unpack()) is not EntryKind.APPEND:
            return None
        records = unpacker.unpack()
        _check_end(unpacker)
    except (ValueError, msgpack.UnpackException, msgpack.OutOfData) as error:
        raise LogCorrupted(f"undecodable log entry: {error}") from None
    if not isinstance(records, list) or not all(isinstance(r, bytes) for r in records):
        raise LogCorrupted("an append entry's records are not a list of bytes")
    return records


def _check_end(unpacker: msgpack.Unpacker) -> None:
    try:
        unpacker.unpack()
    except msgpack.OutOfData:
        return
    raise LogCorrupted("a log entry has bytes after its end")
