"""Binary protocol rows encoded into the output buffer (fe/mysql/binary_rows.py) are the bytes
results.binary_row gives, packet by packet: on random values of every column type, NULLs at every
place of the bitmap, long strings, ints out of a column's range, and rows longer than a packet."""

from __future__ import annotations

import random
import struct
from datetime import date, datetime, time, timedelta
from decimal import Decimal

import pytest

from fe.mysql.binary_rows import BinaryRows
from fe.mysql.connection import MAX_PAYLOAD, PacketStream
from fe.mysql.results import binary_row, column

SEED = 20261124
TYPES = {
    "TINYINT": lambda r: r.randint(-128, 127),
    "TINYINT UNSIGNED": lambda r: r.randint(0, 255),
    "SMALLINT": lambda r: r.randint(-(2**15), 2**15 - 1),
    "INT": lambda r: r.randint(-(2**31), 2**31 - 1),
    "INT UNSIGNED": lambda r: r.randint(0, 2**32 - 1),
    "BIGINT": lambda r: r.randint(-(2**63), 2**63 - 1),
    "BIGINT UNSIGNED": lambda r: r.randint(0, 2**64 - 1),
    "BOOLEAN": lambda r: r.choice([True, False, 0, 1]),
    "FLOAT": lambda r: r.uniform(-1e6, 1e6),
    "DOUBLE": lambda r: r.choice([r.uniform(-1e300, 1e300), 3, 0.5]),
    "DECIMAL(20,4)": lambda r: Decimal(r.randint(-(10**12), 10**12)) / 10000,
    "DECIMAL(10,0)": lambda r: r.choice([Decimal(r.randint(-99, 99)), r.randint(-99, 99)]),
    "VARCHAR(300)": lambda r: "".join(r.choice("aé€😀 -") for _ in range(r.randint(0, 300))),
    "STRING": lambda r: r.choice(["", "x" * r.randint(250, 70000), b"\x00\xff", "12"]),
    "CHAR(10)": lambda r: r.choice(["abc", 12, Decimal("1.5")]),
    "DATE": lambda r: r.choice([date(2024, 2, 29), datetime(2020, 1, 2, 3, 4, 5), "2021-03-04"]),
    "DATETIME(6)": lambda r: r.choice(
        [datetime(2024, 2, 29, 1, 2, 3, 456), datetime(2024, 1, 1), date(1999, 12, 31)]
    ),
    "TIME(3)": lambda r: r.choice([timedelta(hours=-30, seconds=5), time(1, 2, 3), "12:00:01"]),
}


def packets(rows, columns, seq: int, fast: bool) -> bytes:
    stream = PacketStream.__new__(PacketStream)
    stream.buffer = bytearray()
    stream.seq = seq
    if fast:
        stream.write_binary_rows(rows, BinaryRows(columns))
    else:
        for row in rows:
            stream.write(binary_row(row, columns))
    return bytes(stream.buffer)


@pytest.mark.parametrize("width", [1, 2, 6, 7, 8, 15, len(TYPES)])
def test_rows_of_every_type_and_null_encode_as_binary_row_does(width):
    generator = random.Random(SEED + width)
    names = list(TYPES)
    for _ in range(20):
        chosen = [generator.choice(names) for _ in range(width)]
        columns = [column(f"c{i}", sql_type) for i, sql_type in enumerate(chosen)]
        rows = [
            tuple(None if generator.random() < 0.2 else TYPES[t](generator) for t in chosen)
            for _ in range(generator.randint(0, 40))
        ]
        seq = generator.randint(0, 255)
        assert packets(rows, columns, seq, fast=True) == packets(rows, columns, seq, fast=False)


def test_a_value_out_of_its_column_range_fails_as_binary_row_fails():
    columns = [column("a", "TINYINT")]
    with pytest.raises(struct.error):
        binary_row((300,), columns)
    with pytest.raises(struct.error):
        packets([(300,)], columns, 1, fast=True)


def test_a_row_of_the_wrong_width_is_refused():
    with pytest.raises(AssertionError):
        packets([(1, 2)], [column("a", "BIGINT")], 1, fast=True)


def test_a_row_as_long_as_a_packet_splits_as_mysql_splits_it():
    big = "q" * (MAX_PAYLOAD + 10)
    columns = [column("a", "BIGINT"), column("s", "LONGTEXT")]
    rows = [(1, "x"), (2, big), (3, None)]
    encoded = packets(rows, columns, 0, fast=True)
    assert encoded == packets(rows, columns, 0, fast=False)
    (first,) = struct.unpack_from("<I", encoded, 0)
    (second,) = struct.unpack_from("<I", encoded, 4 + (first & MAX_PAYLOAD))
    assert (second & MAX_PAYLOAD, second >> 24) == (MAX_PAYLOAD, 1)


def test_one_text_column_rows_of_every_kind_encode_as_binary_row_does():
    from fe.mysql import binary_rows

    assert binary_rows.MAX_PAYLOAD == MAX_PAYLOAD
    columns = [column("c", "CHAR(120)")]
    values = ["", "é" * 125, "x" * 250, "y" * 251, "z" * 70000, None, 12, b"\x01", "€"]
    rows = [(value,) for value in values] * 3
    for seq in (0, 200, 255):
        assert packets(rows, columns, seq, fast=True) == packets(rows, columns, seq, fast=False)
