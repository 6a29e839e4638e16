"""CRC-32 (zlib's: reflected, polynomial 0xEDB88320) of each value of an Arrow binary array at
once, with numpy: the values of each length as a matrix of their bytes, one table step per byte
position for all of them, so a batch costs a few array operations per byte of its longest value
instead of a Python call (and object) per value. Equal to zlib.crc32 of each value
(tests/test_spark_write.py checks it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_POLYNOMIAL = 0xEDB88320
MAX_VECTOR_LENGTH = 256  # longer values: the per-position loop would cost more than it saves
MAX_LENGTH_GROUPS = 16  # values of more lengths than this are stepped all at every position


def _table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLYNOMIAL), table >> 1)
    return table.astype(np.uint32)


_TABLE = _table()


def crc32_each(values: pa.Array) -> np.ndarray | None:
    """uint32 CRC-32 of each value's bytes (binary or string, no nulls); None when a value is
    longer than MAX_VECTOR_LENGTH (the caller hashes value by value)."""
    assert values.null_count == 0
    values = pc.cast(values, pa.large_binary())
    count = len(values)
    if not count:
        return np.zeros(0, np.uint32)
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[values.offset : values.offset + count + 1]
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if int(lengths.max()) > MAX_VECTOR_LENGTH:
        return None
    data = (
        np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    )
    crc = np.zeros(count, np.uint32)
    distinct = np.flatnonzero(np.bincount(lengths))  # the lengths there are, ascending
    if len(distinct) > MAX_LENGTH_GROUPS:
        return _by_position(data, starts, lengths)
    for length in distinct.tolist():
        rows = slice(None) if len(distinct) == 1 else np.flatnonzero(lengths == length)
        crc[rows] = _of_length(data, starts[rows], length)
    return crc


def _of_length(data: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The CRC-32 of values all length bytes long, starting at starts in data."""
    register = np.full(len(starts), 0xFFFFFFFF, np.uint32)
    if length:
        matrix = data[starts[:, None] + np.arange(length)].T.copy()  # a row per byte position
        for column in matrix:
            register = _TABLE[register.astype(np.uint8) ^ column] ^ (register >> 8)
    return register ^ np.uint32(0xFFFFFFFF)


def _by_position(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The CRC-32 of values of many lengths: every value stepped at each byte position, a value
    shorter than the position keeping its register."""
    last = len(data) - 1
    crc = np.full(len(starts), 0xFFFFFFFF, np.uint32)
    for position in range(int(lengths.max())):
        byte = data[np.minimum(starts + position, last)]
        stepped = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        crc = np.where(lengths > position, stepped, crc)
    return crc ^ np.uint32(0xFFFFFFFF)
