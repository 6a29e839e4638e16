"""Binary protocol result rows encoded straight into an output buffer, a row at a time with no call
per value for the common values (a string of a text column, an int of an integer column): the
bytes are those of results.binary_row."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from mysql_mimic.types import ColumnType

from fe.mysql.results import Column, ColumnSpec, lenenc_int

MAX_PAYLOAD = 0xFFFFFF  # a longer payload continues in the next packet
OTHER, TEXT, INTEGER = 0, 1, 2
_HEADER = struct.Struct("<I")  # payload length (3 bytes), sequence id
_ONE_SHORT_TEXT = struct.Struct("<IBBB")  # header; row header, bitmap, length of a short string
_FIXED_SIZE = frozenset(
    (ColumnType.FLOAT, ColumnType.DOUBLE, ColumnType.DATE, ColumnType.DATETIME)
    + (ColumnType.TIMESTAMP, ColumnType.TIME)
)
_TEMPORAL_KINDS = frozenset(("date", "datetime", "time"))  # their text of a str is not its UTF-8


@lru_cache(maxsize=1024)
def _way(spec: ColumnSpec) -> tuple[int, Callable[[Any], bytes]]:
    """How a column of spec encodes its values: (kind, the encoder for values of that kind)."""
    if spec.int_format is not None:
        return INTEGER, spec.int_format.pack
    if spec.type in _FIXED_SIZE or spec.kind in _TEMPORAL_KINDS:
        return OTHER, spec.binary
    return TEXT, spec.binary  # lenenc of the value's text: a str's is its UTF-8


class BinaryRows:
    """The encoding of rows of one result's columns."""

    __slots__ = ("count", "_ways", "_empty")

    def __init__(self, columns: Sequence[Column]):
        self.count = len(columns)
        ways = []
        for column in columns:
            kind, encode = _way(column.spec)
            ways.append((kind, encode, column.binary))
        self._ways = ways
        self._empty = bytes(1 + (self.count + 9) // 8)  # the header byte, then the NULL bitmap

    def append_rows(self, buffer: bytearray, rows: Iterable[Sequence[Any]], seq: int) -> int:
        """rows as packets numbered from seq on after buffer's bytes; the next sequence id."""
        if self.count == 1 and self._ways[0][0] == TEXT:
            return self._append_texts(buffer, rows, seq)
        append = self.append
        for row in rows:
            start = len(buffer)
            buffer += b"\x00\x00\x00\x00"
            append(buffer, row)
            seq = _framed(buffer, start, seq)
        return seq

    def _append_texts(self, buffer: bytearray, rows: Iterable[Sequence[Any]], seq: int) -> int:
        """append_rows of one text column: a short string's row in one pack."""
        pack = _ONE_SHORT_TEXT.pack
        append = self.append
        for row in rows:
            if len(row) == 1:
                value = row[0]
                if type(value) is str:
                    data = value.encode()
                    n = len(data)
                    if n < 251:
                        buffer += pack((n + 3) | seq << 24, 0, 0, n)
                        buffer += data
                        seq = (seq + 1) & 0xFF
                        continue
            start = len(buffer)
            buffer += b"\x00\x00\x00\x00"
            append(buffer, row)
            seq = _framed(buffer, start, seq)
        return seq

    def append(self, buffer: bytearray, row: Sequence[Any]) -> None:
        """row's payload (header, NULL bitmap at offset 2, the values not NULL) after buffer's."""
        if len(row) != self.count:
            raise AssertionError(f"row of {len(row)} values for {self.count} columns")
        bitmap_at = len(buffer) + 1
        buffer += self._empty
        for i, (value, (kind, encode, binary)) in enumerate(zip(row, self._ways, strict=True)):
            if value is None:
                bit = i + 2
                buffer[bitmap_at + (bit >> 3)] |= 1 << (bit & 7)
            elif kind == TEXT and type(value) is str:
                data = value.encode()
                n = len(data)
                if n < 251:
                    buffer.append(n)
                else:
                    buffer += lenenc_int(n)
                buffer += data
            elif kind == INTEGER and type(value) is int:
                buffer += encode(value)
            else:
                buffer += binary(value)


def _framed(buffer: bytearray, start: int, seq: int) -> int:
    """The payload after the 4 bytes kept at start framed as packet seq (as packets from seq on
    if it is as long as a packet can be); the next sequence id."""
    length = len(buffer) - start - 4
    if length < MAX_PAYLOAD:
        _HEADER.pack_into(buffer, start, length | seq << 24)
        return (seq + 1) & 0xFF
    payload = memoryview(bytes(buffer[start + 4 :]))
    del buffer[start:]
    for at in range(0, len(payload) + 1, MAX_PAYLOAD):
        chunk = payload[at : at + MAX_PAYLOAD]
        buffer += _HEADER.pack(len(chunk) | seq << 24)
        buffer += chunk
        seq = (seq + 1) & 0xFF
    return seq
