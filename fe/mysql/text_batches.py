"""Text protocol rows made a column at a time: each Arrow column turned into its MySQL text
with Arrow's kernels, then the length-encoded cells of every row joined into framed packets.

The text of a value is the same as the row encoders of `results` give its Python value (a test
compares them on random values of every type); a column of a type not known here is encoded a
value at a time by those encoders.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fe.mysql.results import Column, float_text

MAX_PAYLOAD = 0xFFFFFF  # a longer payload continues in the next packet (MySQL's framing)
NULL_CELL = 0xFB
SHORT_CELL_BYTES = 251  # a cell this long or longer has a longer length prefix
# A longer cell's length: from this many bytes on, a marker and this many bytes of length.
LONG_LENGTHS = ((SHORT_CELL_BYTES, 2), (2**16, 3), (2**24, 8))
LONG_MARKERS = (0xFC, 0xFD, 0xFE)
# A DOUBLE's text: Arrow and Python both print the shortest digits that read back the same, but
# in other forms: Python writes plain digits from 1e-4 up to 1e16 (float_text drops the ".0" of
# a whole number, as Arrow does), beyond d.dddde+XX as Arrow does; Arrow writes some of Python's
# plain numbers with an exponent and its small exponents with one digit. A value Arrow writes
# otherwise is written by Python.
PLAIN_FLOAT_LOW = 1e-4
PLAIN_FLOAT_HIGH = 1e16


def text_cells(values: pa.Array, column: Column) -> pa.Array:
    """The column's values as MySQL text (binary, NULL where the value is)."""
    kind = column.spec.kind
    type_ = values.type
    whole = kind in ("int", "decimal") and column.decimals == 0
    if whole and (pa.types.is_integer(type_) or pa.types.is_boolean(type_)):
        if pa.types.is_boolean(type_):
            values = pc.cast(values, pa.int8())
        return _binary(pc.cast(values, pa.string()))
    if kind in ("int", "decimal") and pa.types.is_decimal(type_) and type_.scale == column.decimals:
        return _binary(pc.cast(values, pa.string()))
    if kind == "float" and pa.types.is_floating(type_):
        return _float_cells(pc.cast(values, pa.float64()))
    if kind == "date" and pa.types.is_date32(type_):
        return _binary(pc.cast(values, pa.string()))
    if kind == "datetime" and pa.types.is_timestamp(type_) and type_.unit == "us" and not type_.tz:
        text = pc.cast(values, pa.string())  # always six digits of microseconds
        fsp = column.decimals
        width = 19 if fsp == 0 else 23 if fsp <= 3 else 26  # as isoformat's timespec cuts
        return _binary(pc.utf8_slice_codeunits(text, 0, width))
    if kind in ("text", "bytes") and (
        pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
    ):
        return _binary(values)
    return _cells_one_by_one(values, column)


def _binary(values: pa.Array) -> pa.Array:
    type_ = values.type
    if pa.types.is_large_string(type_) or pa.types.is_large_binary(type_):
        return pc.cast(values, pa.large_binary())
    return pc.cast(values, pa.binary())


def _float_cells(values: pa.Array) -> pa.Array:
    text = pc.cast(values, pa.string())
    numbers = values.to_numpy(zero_copy_only=False)  # NaN where NULL
    finite = np.isfinite(numbers)
    magnitude = np.abs(numbers)
    tiny = (magnitude < PLAIN_FLOAT_LOW) & (magnitude != 0)
    python_exponent = tiny | (magnitude >= PLAIN_FLOAT_HIGH)
    arrow_exponent = pc.match_substring(text, "e").to_numpy(zero_copy_only=False)
    by_python = finite & (tiny | (python_exponent != arrow_exponent))
    if by_python.any():
        chosen = pa.array(map(float_text, numbers[by_python].tolist()), pa.string())
        text = pc.replace_with_mask(text, pa.array(by_python), chosen)
    return _binary(text)


def _cells_one_by_one(values: pa.Array, column: Column) -> pa.Array:
    encode = column.text
    cells = [
        None if value is None else value.encode() if type(value) is str else encode(value)
        for value in values.to_pylist()
    ]
    return pa.array(cells, pa.large_binary())


def text_packets(
    columns: Sequence[pa.Array], encoders: Sequence[Column], seq: int
) -> tuple[pa.Buffer | bytes, int] | None:
    """Every row of the columns as a framed text protocol row packet, numbered from seq on:
    the packets' bytes and how many they are; None if a row is as long as a packet can be (the
    caller then writes its payloads, which split)."""
    payloads = _joined_rows(columns, encoders, seq)
    if payloads is None:
        return None
    return payloads, len(columns[0]) if columns else 0


def row_payloads(columns: Sequence[pa.Array], encoders: Sequence[Column]) -> list[bytes]:
    """Each row's payload on its own (for rows that need more than one packet)."""
    joined = _join(_cells(columns, encoders), None)
    return joined.to_pylist()


def _cells(columns: Sequence[pa.Array], encoders: Sequence[Column]) -> list[tuple]:
    assert len(columns) == len(encoders), (len(columns), len(encoders))
    cells = []
    for values, column in zip(columns, encoders, strict=True):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        text = text_cells(values, column)
        lengths = pc.binary_length(text).to_numpy(zero_copy_only=False)
        nulls = None
        if text.null_count:
            nulls = text.is_null().to_numpy(zero_copy_only=False)
            lengths = np.where(nulls, 0, lengths)
            text = text.fill_null(b"")
        lengths = lengths.astype(np.int64)
        cells.append((_prefixes(lengths, nulls), text, lengths))
    return cells


def _prefixes(lengths: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """Each cell's length-encoded length (0xFB for a NULL) as a binary array."""
    count = len(lengths)
    if count == 0 or lengths.max() < SHORT_CELL_BYTES:  # the common case: a byte each
        data = lengths.astype(np.uint8)
        if nulls is not None:
            data[nulls] = NULL_CELL
        offsets = np.arange(count + 1, dtype=np.int32)
        return pa.Array.from_buffers(
            pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    widths = np.ones(count, dtype=np.int64)  # a marker byte and 0, 2, 3 or 8 bytes of length
    for limit, width in LONG_LENGTHS:
        widths[lengths >= limit] = width + 1
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    short = widths == 1
    data[starts[short]] = lengths[short]
    for (_, width), marker in zip(LONG_LENGTHS, LONG_MARKERS, strict=True):
        chosen = widths == width + 1
        if chosen.any():
            data[starts[chosen]] = marker
            for byte in range(width):
                data[starts[chosen] + 1 + byte] = (lengths[chosen] >> (8 * byte)) & 0xFF
    if nulls is not None:
        data[starts[nulls]] = NULL_CELL  # a NULL's length is 0: one byte
    return pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )


def _joined_rows(
    columns: Sequence[pa.Array], encoders: Sequence[Column], seq: int
) -> pa.Buffer | bytes | None:
    if not columns or len(columns[0]) == 0:
        return b""
    cells = _cells(columns, encoders)
    count = len(columns[0])
    payload = np.zeros(count, dtype=np.int64)
    for prefixes, _, lengths in cells:
        payload += lengths
        payload += np.diff(np.frombuffer(prefixes.buffers()[1], np.int32, count + 1, 0))
    if payload.max() >= MAX_PAYLOAD:
        return None
    numbers = (np.arange(seq, seq + count, dtype=np.int64) & 0xFF) << 24
    headers = (payload | numbers).astype("<u4").view(np.uint8)
    offsets = np.arange(0, 4 * count + 1, 4, dtype=np.int32)
    header_cells = pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(headers)]
    )
    joined = _join(cells, header_cells)
    begin, end = _bounds(joined)
    return joined.buffers()[2].slice(begin, end - begin)


def _join(cells: list[tuple], headers: pa.Array | None) -> pa.Array:
    parts: list[pa.Array] = [] if headers is None else [headers]
    large = any(pa.types.is_large_binary(text.type) for _, text, _ in cells)
    for prefixes, text, _ in cells:
        parts += [prefixes, text]
    if large:
        parts = [pc.cast(part, pa.large_binary()) for part in parts]
        return pc.binary_join_element_wise(*parts, pa.scalar(b"", pa.large_binary()))
    return pc.binary_join_element_wise(*parts, pa.scalar(b"", pa.binary()))


def _bounds(joined: pa.Array) -> tuple[int, int]:
    width = np.int64 if pa.types.is_large_binary(joined.type) else np.int32
    offsets = np.frombuffer(joined.buffers()[1], width, len(joined) + 1, joined.offset)
    return int(offsets[0]), int(offsets[-1])


def arrow_fractional_digits(values: pa.ChunkedArray | pa.Array) -> int:
    """The fractional seconds a DATETIME column of timestamps shows: as many as its values
    need (0, 3 or 6), as the row path counts them."""
    type_ = values.type
    assert pa.types.is_timestamp(type_) and type_.unit == "us", type_
    micros = pc.cast(values, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False) % 10**6
    if (micros % 1000).any():
        return 6
    return 3 if micros.any() else 0
