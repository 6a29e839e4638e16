"""CRC-32 (zlib's: reflected, polynomial 0xEDB88320) of each value of an Arrow binary array at
once, with numpy: byte position by byte position over every value, so a batch costs a few array
operations per byte of its longest value instead of a Python call (and object) per value.
Equal to zlib.crc32 of each value (tests/test_spark_write.py checks it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_POLYNOMIAL = 0xEDB88320
MAX_VECTOR_LENGTH = 256  # longer values: the per-position loop would cost more than it saves


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
    longest = int(lengths.max())
    if longest > MAX_VECTOR_LENGTH:
        return None
    if not longest:
        return np.zeros(count, np.uint32)
    data = np.frombuffer(data_buffer, np.uint8)
    last = len(data) - 1
    crc = np.full(count, 0xFFFFFFFF, np.uint32)
    for position in range(longest):  # a value shorter than position keeps its register
        byte = data[np.minimum(starts + position, last)]
        stepped = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        crc = np.where(lengths > position, stepped, crc)
    return crc ^ np.uint32(0xFFFFFFFF)
