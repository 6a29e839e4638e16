"""Binary parameters of prepared statements beyond MySQL's ranges get MySQL's values, at once."""

from __future__ import annotations

import datetime as dt
import struct
import time
from decimal import Decimal

import mysql.connector
import pytest

from tests.test_mysql_protocol import COM_STMT_EXECUTE, COM_STMT_PREPARE, RawClient

NEWDECIMAL, LONGLONG, TIME, DATETIME = 246, 8, 11, 12
SIXTY_FIVE_NINES = "9" * 65


def lenenc_bytes(data: bytes) -> bytes:
    if len(data) < 251:
        return bytes([len(data)]) + data
    return b"\xfc" + len(data).to_bytes(2, "little") + data


def first_text_value(packets: list[bytes]) -> str:
    row = packets[-2]  # binary row: header, null bitmap, then one length-prefixed value
    assert row[:2] == b"\x00\x00", packets
    return row[3 : 3 + row[2]].decode()


def execute_one(port: int, sql: str, type_code: int, value: bytes, unsigned=False) -> list[bytes]:
    client = RawClient(port)
    try:
        assert client.login("root", "")[0] == 0x00
        ok = client.command(bytes([COM_STMT_PREPARE]) + sql.encode())
        assert ok[0] == 0x00, ok
        stmt_id, columns, params = struct.unpack_from("<IHH", ok, 1)
        for _ in range(columns + params):
            client.read()
        header = struct.pack("<BIBI", COM_STMT_EXECUTE, stmt_id, 0, 1)
        types = bytes([type_code, 0x80 if unsigned else 0])
        packets = [client.command(header + b"\x00\x01" + types + value)]
        assert packets[0][0] not in (0x00, 0xFF), packets[0]
        while not (packets[-1][0] == 0xFE and len(packets[-1]) < 9):
            packets.append(client.read())
        return packets
    finally:
        client.close()


@pytest.mark.parametrize(
    ("sql", "text", "answer"),
    [
        ("SELECT ? + 1", b"1E+1000000", "1" + "0" * 65),
        ("SELECT ? + 1", b"1E+5000000", "1" + "0" * 65),
        ("SELECT ?", b"-1E+5000000", "-" + SIXTY_FIVE_NINES),
        ("SELECT ?", b"1" * 70, SIXTY_FIVE_NINES),
        ("SELECT ?", b"1E-1000000", "0." + "0" * 30),
    ],
)
def test_a_decimal_beyond_65_digits_is_the_largest_decimal_at_once(quire, sql, text, answer):
    started = time.monotonic()
    packets = execute_one(quire.query_port, sql, NEWDECIMAL, lenenc_bytes(text))
    assert first_text_value(packets) == answer
    assert time.monotonic() - started < 10


def test_an_unsigned_bigint_parameter_and_literal_answer_their_value(quire):
    value = 9223372036854775808
    packets = execute_one(quire.query_port, "SELECT ?", LONGLONG, struct.pack("<Q", value), True)
    assert packets[-2][2:] == struct.pack("<Q", value)
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", password=""
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT 9223372036854775808")
        assert cursor.fetchall() == [(value,)]
        cursor.execute("SELECT %s + 1", (Decimal("1E+1000000"),))
        ((answer,),) = cursor.fetchall()
        assert Decimal(answer) == Decimal("1E+65")
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("type_code", "value", "answer"),
    [
        (TIME, bytes([8, 0]) + struct.pack("<I", 10**9) + bytes([1, 2, 3]), "838:59:59"),
        (TIME, bytes([8, 1]) + struct.pack("<I", 10**9) + bytes([1, 2, 3]), "-838:59:59"),
        (TIME, bytes([12, 0, 1, 0, 0, 0, 1, 2, 3]) + b"\xff" * 4, "00:00:00"),
        (DATETIME, bytes([11, 0xE8, 7, 1, 2, 3, 4, 5]) + b"\xff" * 4, "0000-00-00 00:00:00"),
    ],
)
def test_time_and_datetime_parameters_out_of_range_answer_mysqls_value(
    quire, type_code, value, answer
):
    packets = execute_one(quire.query_port, "SELECT ?", type_code, value)
    assert first_text_value(packets) == answer


def test_a_connector_time_parameter_of_many_days(quire):
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", password=""
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT %s", (dt.timedelta(days=999_999_999),))
        ((answer,),) = cursor.fetchall()
        assert str(answer) in ("838:59:59", "34 days, 22:59:59")
    finally:
        connection.close()
