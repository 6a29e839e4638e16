"""MySQL's functions, WITH queries and statement words as a MySQL user writes them, through PyMySQL
and the mariadb CLI against a real `quire up`."""

import datetime
import decimal
import threading
from pathlib import Path

import mysql.connector
import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from tests.harness import QuireProcess, error_of, mariadb, run

ANSWERS = [
    ("CONVERT('abc' USING utf8mb4)", "abc"),  # every text is UTF-8 already
    ("CHAR_LENGTH(CONVERT('h\u00e9llo' USING latin1))", 5),
    # date and time
    ("UNIX_TIMESTAMP('1970-01-02 00:00:00')", 86400),
    ("FROM_UNIXTIME(86400)", datetime.datetime(1970, 1, 2)),
    ("FROM_UNIXTIME(0, '%Y-%m-%d %H:%i:%s')", "1970-01-01 00:00:00"),
    ("CONVERT_TZ('2024-01-01 00:00:00', '+00:00', '+08:00')", datetime.datetime(2024, 1, 1, 8)),
    (
        "CONVERT_TZ('2024-07-01 12:00:00', 'UTC', 'America/New_York')",
        datetime.datetime(2024, 7, 1, 8),
    ),
    (
        "CONVERT_TZ('2024-01-01 12:00:00', 'UTC', 'America/New_York')",
        datetime.datetime(2024, 1, 1, 7),
    ),
    ("CONVERT_TZ('2024-01-01', 'nowhere', '+00:00')", None),
    ("DATE_FORMAT('2024-01-02 03:04:05', '%Y/%m/%d %H:%i')", "2024/01/02 03:04"),
    ("DATE_FORMAT('2024-01-02 03:04:05', 'yyyy-MM-dd HH:mm:ss')", "2024-01-02 03:04:05"),  # Doris's
    ("DATE_FORMAT('2024-01-02 03:04:05', 'yyyyMMdd')", "20240102"),
    ("FROM_UNIXTIME(86400, 'yyyy-MM-dd')", "1970-01-02"),
    ("UNIX_TIMESTAMP('1970-01-02', '%Y-%m-%d')", 86400),
    ("UNIX_TIMESTAMP('1970-01-02 00:00:01', 'yyyy-MM-dd HH:mm:ss')", 86401),
    ("UNIX_TIMESTAMP('no date', '%Y-%m-%d')", None),
    ("MD5SUM('a', 'b')", "187ef4436122d1cc2f40dc2b92f0eba0"),  # Doris's: MD5 of 'ab'
    ("MD5SUM(1)", "c4ca4238a0b923820dcc509a6f75849b"),
    ("MD5SUM('a', NULL)", None),
    # Doris's functions DuckDB has in other shapes
    ("PMOD(-7, 3)", 2),
    ("MASK('Abc-123')", "Xxx-nnn"),
    ("TO_MONDAY('2024-01-07 10:00:00')", datetime.date(2024, 1, 1)),
    ("INITCAP('hello wORLD-x')", "Hello World-X"),
    ("ARRAY_POSITION([1, 2, NULL], 2)", 2),
    ("ARRAY_POSITION([1], 5)", 0),
    ("ARRAY_REMOVE([1, 2, NULL, 2], 2)", "[1, null]"),
    ("ARRAY_SLICE([1, 2, 3, 4], 2, 2)", "[2, 3]"),
    ("ARRAY_SLICE([1, 2, 3, 4], -2)", "[3, 4]"),
    ("ARRAY_DISTINCT([3, 1, 3, NULL, NULL])", "[3, 1, null]"),
    ("ARRAY_COMPACT([1, 2, 2, NULL, NULL, 1])", "[1, 2, null, 1]"),
    ("ARRAY_UNION([1, 2], [2, 3])", "[1, 2, 3]"),
    ("ARRAY_UNION(NULL, [1])", None),
    ("ARRAY_INTERSECT([1, 2, NULL], [2, NULL])", "[2, null]"),
    ("ARRAY_EXCEPT([1, 2, 1], [2])", "[1]"),
    ("ARRAYS_OVERLAP([1, 2], [2])", 1),
    ("ARRAY_REVERSE_SORT([1, NULL, 3])", "[3, 1, null]"),
    ("ARRAY_CONCAT([1], [2, 3])", "[1, 2, 3]"),
    # Doris's hashes, answered as Doris's documentation shows them
    ("MURMUR_HASH3_32('hello')", 1321743225),
    ("MURMUR_HASH3_32('hello', 'world')", 984713481),
    ("MURMUR_HASH3_32('hello', NULL)", None),
    ("XXHASH_32('hello', 'world')", -920844969),
    ("XXHASH_64('hello')", -7685981735718036227),
    ("XXHASH_64('hello', 'world')", 7001965798170371843),
    ("DATE_ADD('2024-01-31', INTERVAL 1 MONTH)", datetime.date(2024, 2, 29)),
    ("DATE_SUB('2024-01-31 10:00:00', INTERVAL 1 HOUR)", datetime.datetime(2024, 1, 31, 9)),
    ("ADDDATE('2024-01-31', 1)", datetime.date(2024, 2, 1)),
    ("DATE_ADD('2024-01-31', 1)", datetime.date(2024, 2, 1)),  # Doris's: days
    ("ADDDATE(20240131, 1)", datetime.date(2024, 2, 1)),  # MySQL reads a number YYYYMMDD
    ("DATE_ADD(1, @none)", None),
    ("DATE_SUB('2024-03-01 10:00:00', 1)", datetime.datetime(2024, 2, 29, 10)),
    ("INTERVAL 1 DAY + '2024-01-31'", datetime.date(2024, 2, 1)),
    ("INTERVAL 2 HOUR + DATE '2024-01-31'", datetime.datetime(2024, 1, 31, 2)),
    ("ADDDATE('2024-01-31', INTERVAL 2 DAY)", datetime.date(2024, 2, 2)),
    ("SUBDATE('2024-03-01', INTERVAL 1 DAY)", datetime.date(2024, 2, 29)),
    ("DATEDIFF('2024-03-01', '2024-02-01')", 29),
    ("TIMESTAMPDIFF(MONTH, '2024-01-31', '2024-03-01')", 1),
    ("TIMESTAMPDIFF(DAY, '2024-01-31', '2024-03-01')", 30),
    ("LAST_DAY('2024-02-10')", datetime.date(2024, 2, 29)),
    ("DAYOFWEEK('2024-01-07')", 1),
    ("WEEKDAY('2024-01-07')", 6),
    ("STR_TO_DATE('01/02/2024', '%m/%d/%Y')", datetime.date(2024, 1, 2)),
    ("YEAR('2024-05-06 07:08:09')", 2024),
    ("MONTH('2024-05-06')", 5),
    ("DAY('2024-05-06')", 6),
    ("HOUR('2024-05-06 07:08:09')", 7),
    ("MINUTE('2024-05-06 07:08:09')", 8),
    ("SECOND('2024-05-06 07:08:09')", 9),
    # strings: 1-based, MySQL's NULL rules
    ("MID('abcdef', 2, 3)", "bcd"),
    ("MID('abcdef', 3)", "cdef"),
    ("FIELD('b', 'a', 'b', 'c')", 2),
    ("FIELD('z', 'a', 'b')", 0),
    ("FIELD(NULL, 'a')", 0),
    ("FIND_IN_SET('b', 'a,b,c')", 2),
    ("FIND_IN_SET('z', 'a,b,c')", 0),
    ("FIND_IN_SET(NULL, 'a,b')", None),
    ("STRCMP('a', 'b')", -1),
    ("STRCMP('b', 'a')", 1),
    ("STRCMP('a', 'a')", 0),
    ("STRCMP(NULL, 'a')", None),
    ("LOCATE('b', 'abcb')", 2),
    ("LOCATE('b', 'abcb', 3)", 4),
    ("INSTR('abc', 'c')", 3),
    ("LPAD('hi', 5, '?')", "???hi"),
    ("RPAD('hi', 5, '?')", "hi???"),
    ("LPAD('hello', 2, '?')", "he"),
    ("REPEAT('ab', 3)", "ababab"),
    ("REPEAT('x', 100000000)", None),  # longer than max_allowed_packet, as in MySQL
    ("LPAD('a', 100000000, 'b')", None),
    ("SPACE(100000000)", None),
    ("REPLACE(REPEAT('a', 10000), 'a', REPEAT('b', 100000))", None),
    ("REPLACE('banana', 'an', 'AN!')", "bAN!AN!a"),
    ("REPLACE('banana', '', 'x')", "banana"),
    ("CONCAT('[', SPACE(3), ']')", "[   ]"),
    ("ELT(2, 'a', 'b')", "b"),
    ("ELT(3, 'a', 'b')", None),
    ("FORMAT(1234567.891, 2)", "1,234,567.89"),
    # Doris's date functions
    ("DATE_TRUNC('2024-05-06 07:08:09', 'month')", datetime.datetime(2024, 5, 1)),
    ("DATE_TRUNC('week', '2024-05-08 10:00:00')", datetime.datetime(2024, 5, 6)),
    ("DAYS_ADD('2024-05-06', 3)", datetime.date(2024, 5, 9)),
    ("DAYS_SUB('2024-05-06', 6)", datetime.date(2024, 4, 30)),
    ("MONTHS_ADD('2024-01-31', 1)", datetime.date(2024, 2, 29)),
    ("YEARS_SUB('2024-02-29', 1)", datetime.date(2023, 2, 28)),
    ("WEEKS_ADD('2024-05-06', 1)", datetime.date(2024, 5, 13)),
    ("HOURS_ADD('2024-05-06 07:00:00', 2)", datetime.datetime(2024, 5, 6, 9)),
    ("MINUTES_SUB('2024-05-06 07:00:00', 1)", datetime.datetime(2024, 5, 6, 6, 59)),
    ("SECONDS_ADD('2024-05-06 07:00:00', 61)", datetime.datetime(2024, 5, 6, 7, 1, 1)),
    ("TIMESTAMPADD(DAY, 1, '2024-05-06')", datetime.date(2024, 5, 7)),
    ("TIMESTAMPADD(HOUR, 1, '2024-05-06')", datetime.datetime(2024, 5, 6, 1)),
    ("WEEKOFYEAR('2024-05-06')", 19),
    ("MAKEDATE(2024, 60)", datetime.date(2024, 2, 29)),
    ("MAKEDATE(2024, 0)", None),
    ("TO_DAYS('1995-05-01')", 728779),
    ("FROM_DAYS(730669)", datetime.date(2000, 7, 3)),
    ("FROM_DAYS(365)", None),
    ("TIME('2024-01-02 03:04:05')", datetime.timedelta(hours=3, minutes=4, seconds=5)),
    ("WEEK('2024-01-02')", 0),
    ("YEARWEEK('2024-01-02')", 202353),
    # and others
    ("REGEXP_EXTRACT('abc123', '([a-z]+)([0-9]+)', 2)", "123"),
    ("NULL_OR_EMPTY('')", 1),
    ("NULL_OR_EMPTY(NULL)", 1),
    ("NULL_OR_EMPTY('a')", 0),
    ("NOT_NULL_OR_EMPTY('a')", 1),
    ("NOT_NULL_OR_EMPTY('')", 0),
    ("NOT_NULL_OR_EMPTY(NULL)", 0),
    # Doris's
    ("YEARS_DIFF('2024-03-01', '2020-03-02')", 3),
    ("MONTHS_DIFF('2020-12-25', '2020-10-25')", 2),
    ("WEEKS_DIFF('2020-12-25', '2020-12-10')", 2),
    ("DAYS_DIFF('2020-12-25 22:00:00', '2020-12-24 22:00:01')", 0),
    ("HOURS_DIFF('2020-12-25 22:00:00', '2020-12-25 20:30:00')", 1),
    ("MINUTES_DIFF('2020-12-25 22:00:00', '2020-12-25 22:30:00')", -30),
    ("SECONDS_DIFF('2020-12-25 22:00:00', '2020-12-25 21:59:00')", 60),
    ("MICROSECONDS_DIFF('2020-12-25 22:00:00.5', '2020-12-25 22:00:00')", 500000),
    ("STRLEFT('abcde', 2)", "ab"),
    ("STRRIGHT('abcde', 2)", "de"),
    ("MONEY_FORMAT(17014116.675)", "17,014,116.68"),
    ("MONEY_FORMAT(-123.456)", "-123.46"),
    ("REGEXP_REPLACE_ONE('aaa', 'a', 'b')", "baa"),
    ("E()", 2.718281828459045),
    ("BIT_COUNT(7)", 3),
    ("CRC32('MySQL')", 3259397556),
    ("CRC32(NULL)", None),
    ("CONV('a', 16, 2)", "1010"),
    ("CONV('6E', 18, 8)", "172"),
    ("CONV(-17, 10, -18)", "-H"),
    ("CONV(-1, 10, 16)", "FFFFFFFFFFFFFFFF"),
    ("CONV('12abc', 10, 10)", "12"),
    ("CONV('5', 1, 10)", None),
    # MySQL's and Doris's everyday functions DuckDB lacks (MariaDB's answers)
    ("SUBSTRING_INDEX('a.b.c', '.', 2)", "a.b"),
    ("SUBSTRING_INDEX('a.b.c', '.', -1)", "c"),
    ("SUBSTRING_INDEX('a.b.c', '.', -5)", "a.b.c"),
    ("SUBSTRING_INDEX('a.b.c', '.', 0)", ""),
    ("SUBSTRING_INDEX('a..b', '..', 1)", "a"),
    ("SUBSTRING_INDEX('a.b', NULL, 1)", None),
    (
        "STR_TO_DATE('02/01/2024 10:11:12', '%d/%m/%Y %H:%i:%s')",
        datetime.datetime(2024, 1, 2, 10, 11, 12),
    ),
    ("STR_TO_DATE('x', '%Y-%m-%d %H')", None),
    ("TIME_TO_SEC('01:01:01')", 3661),
    ("TIME_TO_SEC('2024-01-02 10:00:00')", 36000),
    ("TIME_TO_SEC('25:00:00')", 90000),  # a TIME past a day, and below zero
    ("TIME_TO_SEC('-01:00:00')", -3600),
    ("TIME_TO_SEC('838:59:59')", 3020399),
    ("TIME_TO_SEC('01:30')", 5400),
    ("TIME_TO_SEC('no time')", None),
    ("TIMEDIFF('30:00:00', '01:00:00')", datetime.timedelta(hours=29)),
    ("TIMEDIFF('01:00:00', '30:00:00')", datetime.timedelta(hours=-29)),
    ("SEC_TO_TIME(3661)", datetime.timedelta(seconds=3661)),
    ("SEC_TO_TIME(-3661)", datetime.timedelta(seconds=-3661)),
    ("SEC_TO_TIME(4000000)", datetime.timedelta(hours=838, minutes=59, seconds=59)),
    ("SEC_TO_TIME(NULL)", None),
    ("TIMEDIFF('10:00:00', '09:00:01')", datetime.timedelta(seconds=3599)),
    ("TIMEDIFF('2024-01-02 01:00:00', '2024-01-01 00:00:00')", datetime.timedelta(hours=25)),
    ("TIMEDIFF('09:00:00', '10:00:00')", datetime.timedelta(hours=-1)),
    ("TIME_TO_SEC(TIMEDIFF('2024-01-02 00:00:00', '2024-01-01 00:00:00'))", 86400),
    ("PERIOD_DIFF(202403, 202401)", 2),
    ("PERIOD_DIFF(2403, 2312)", 3),
    ("PERIOD_ADD(202401, 2)", 202403),
    ("PERIOD_ADD(202412, 1)", 202501),
    ("PERIOD_ADD(2401, 13)", 202502),
    ("PERIOD_ADD(202403, -3)", 202312),
    ("TIME_FORMAT('10:05:03', '%H %i %s')", "10 05 03"),
    ("TIME_FORMAT('2024-01-01 22:05:03.5', '%h:%i %p %f')", "10:05 PM 500000"),
    ("TIME_FORMAT(SEC_TO_TIME(3661), '%T')", "01:01:01"),
    ("TIME_FORMAT(NULL, '%H')", None),
    ("JSON_UNQUOTE(JSON_EXTRACT('{\"a\": \"x\"}', '$.a'))", "x"),
    ("JSON_UNQUOTE('abc')", "abc"),
    ("GET_JSON_STRING('{\"b\": {\"c\": [1, 2]}}', '$.b.c[1]')", "2"),
    ("GET_JSON_STRING('no json', '$.a')", None),
    ("GET_JSON_INT('{\"a\": 7}', '$.a')", 7),
    ("GET_JSON_INT('{\"a\": \"7\"}', '$.a')", None),
    ("GET_JSON_BIGINT('{\"a\": 12345678901}', '$.a')", 12345678901),
    ("GET_JSON_DOUBLE('{\"a\": 1.5}', '$.a')", 1.5),
    ("MONTHS_BETWEEN('2024-03-01', '2024-01-01')", 2.0),
    # Doris's documented answer, and MariaDB's for the others (AES-128-ECB, MySQL's key folding)
    (
        "TO_BASE64(AES_ENCRYPT('text', 'F3229A0B371ED2D9441B830D21A390C3'))",
        "wr2JEDVXzL9+2XtRhgIloA==",
    ),
    ("HEX(AES_ENCRYPT('hello world', 'k'))", "1C374376150CCDF6D2CD9C28B48F11F7"),
    ("HEX(AES_ENCRYPT('', 'k'))", "932F1B1E9189536B938A6B67666D4031"),
    ("HEX(AES_ENCRYPT('a', REPEAT('0123456789abcdef', 3)))", "0950013D77ED2905CE50637ECA5442EE"),
    ("AES_DECRYPT(AES_ENCRYPT('\u00e9t\u00e9', 'cl\u00e9'), 'cl\u00e9')", "\u00e9t\u00e9"),
    ("AES_DECRYPT(UNHEX('1C374376150CCDF6D2CD9C28B48F11F7'), 'k')", "hello world"),
    ("AES_DECRYPT(UNHEX('00112233445566778899AABBCCDDEEFF'), 'k')", None),
    ("AES_ENCRYPT(NULL, 'k')", None),
]


@pytest.mark.parametrize(("expression", "answer"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_function_answers(root, expression, answer):
    run(root, "SET time_zone = '+00:00'")
    assert run(root, f"SELECT {expression}") == ((answer,),)


def test_functions_through_the_mariadb_cli(quire):
    sql = "; ".join(f"SELECT {expression}" for expression, _ in ANSWERS)
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", f"SET time_zone='+00:00'; {sql}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [_text(answer) for _, answer in ANSWERS]


def _text(answer) -> str:
    """A value as MySQL's text protocol writes it."""
    if answer is None:
        return "NULL"
    if isinstance(answer, datetime.datetime):
        return answer.isoformat(" ")
    if isinstance(answer, float) and answer.is_integer():  # a DOUBLE's shortest text
        return str(int(answer))
    if isinstance(answer, datetime.timedelta):  # a TIME
        sign, seconds = (
            ("-" if answer.total_seconds() < 0 else ""),
            abs(int(answer.total_seconds())),
        )
        return f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return str(answer)


# MySQL's (MariaDB's) WEEK(d, mode) and YEARWEEK(d, mode) for modes 0 to 7, and TO_DAYS(d): the
# days where the modes part (the first week's start, 0-53 or 1-53, a year's last days).
WEEK_MODES = {
    "2021-01-03": ([1, 0, 1, 53, 1, 0, 1, 52], [202101, 202053, 202101, 202053, 202101, 202052, 202101, 202052], 738158),
    "2024-01-02": ([0, 1, 53, 1, 1, 1, 1, 1], [202353, 202401, 202353, 202401, 202401, 202401, 202401, 202401], 739252),
    "2024-12-30": ([52, 53, 52, 1, 53, 53, 1, 53], [202452, 202501, 202452, 202501, 202501, 202453, 202501, 202453], 739615),
    "2026-12-31": ([52, 53, 52, 53, 52, 52, 52, 52], [202652, 202653, 202652, 202653, 202652, 202652, 202652, 202652], 740346),
    "2027-01-01": ([0, 0, 52, 53, 0, 0, 52, 52], [202652, 202653, 202652, 202653, 202652, 202652, 202652, 202652], 740347),
    "2032-01-01": ([0, 1, 52, 1, 0, 0, 53, 52], [203152, 203201, 203152, 203201, 203153, 203152, 203153, 203152], 742173),
}  # fmt: skip


def test_week_modes_and_day_numbers_are_mysqls(quire):
    """DuckDB's WEEK is ISO's (MySQL's mode 3) and sqlglot counted TO_DAYS one day high; a DATE
    column and the mariadb CLI give the same, and a mode that is no constant is refused."""
    connection = quire.connect()
    run(connection, "CREATE DATABASE IF NOT EXISTS weeks")
    run(connection, "CREATE TABLE weeks.days (d DATE) DISTRIBUTED BY HASH(d) BUCKETS 1")
    run(connection, "INSERT INTO weeks.days VALUES " + ", ".join(f"('{d}')" for d in WEEK_MODES))
    columns = [f"WEEK(d, {mode})" for mode in range(8)]
    columns += [f"YEARWEEK(d, {mode})" for mode in range(8)] + [
        "TO_DAYS(d)",
        "FROM_DAYS(TO_DAYS(d))",
    ]
    sql = f"SELECT d, {', '.join(columns)} FROM weeks.days ORDER BY d"
    expected = [
        (
            datetime.date.fromisoformat(day),
            *weeks,
            *year_weeks,
            days,
            datetime.date.fromisoformat(day),
        )
        for day, (weeks, year_weeks, days) in WEEK_MODES.items()
    ]
    assert [tuple(row) for row in run(connection, sql)] == expected
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["\t".join(str(value) for value in row) for row in expected]
    run(connection, "SET default_week_format = 3")  # WEEK(d)'s mode; YEARWEEK(d) keeps 0
    day = "2024-01-02"
    assert run(connection, f"SELECT WEEK('{day}'), YEARWEEK('{day}')") == (
        (WEEK_MODES[day][0][3], WEEK_MODES[day][1][0]),
    )
    code, message = error_of(connection, "SELECT WEEK(d, LENGTH('ab')) FROM weeks.days")
    assert (code, message) == (1235, "WEEK's mode must be an integer from 0 to 7")
    assert run(connection, "SELECT 1") == ((1,),)
    connection.close()


# DATE_FORMAT(d, '%D %u %V %v %X %x %U %W') as MariaDB answers it: the specifiers strftime has
# none of (day suffixes, Sunday weeks 1..53 and their year, Monday weeks 0..53) worked out
DATE_FORMAT_WEEKS = {
    "2021-01-03": "3rd 00 01 53 2021 2020 01 Sunday",
    "2024-01-02": "2nd 01 53 01 2023 2024 00 Tuesday",
    "2024-12-30": "30th 53 52 01 2024 2025 52 Monday",
    "2026-12-31": "31st 53 52 53 2026 2026 52 Thursday",
    "2027-01-01": "1st 00 52 53 2026 2026 00 Friday",
    "2032-01-01": "1st 01 52 01 2031 2032 00 Thursday",
    "2024-03-22": "22nd 12 11 12 2024 2024 11 Friday",
    "2024-02-11": "11th 06 06 06 2024 2024 06 Sunday",
}


def test_date_format_week_and_day_suffix_specifiers_are_mysqls(quire):
    connection = quire.connect()
    run(connection, "CREATE DATABASE IF NOT EXISTS formats")
    run(connection, "CREATE TABLE formats.days (d DATE) DISTRIBUTED BY HASH(d) BUCKETS 1")
    run(connection, "INSERT INTO formats.days VALUES "
                    + ", ".join(f"('{d}')" for d in DATE_FORMAT_WEEKS))  # fmt: skip
    sql = "SELECT d, DATE_FORMAT(d, '%D %u %V %v %X %x %U %W') FROM formats.days ORDER BY d"
    expected = sorted(DATE_FORMAT_WEEKS.items())
    assert [(str(d), text) for d, text in run(connection, sql)] == expected
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
    assert done.stdout.splitlines() == [f"{d}\t{text}" for d, text in expected], done.stderr
    run(connection, "SET time_zone = '+00:00'")
    assert run(connection, "SELECT DATE_FORMAT('2024-01-01 10:00:00', '%%D=%D'), "
                           "FROM_UNIXTIME(86400 * 2, '%D of %M')") == (("%D=1st", "3rd of January"),)  # fmt: skip
    connection.close()


def test_conv_takes_constant_bases(root):
    code, message = error_of(root, "SELECT CONV('1', LENGTH('ab'), 10)")
    assert (code, message) == (1235, "CONV's bases must be integer constants")
    assert run(root, "SELECT CONV(255, 10, 16)") == (("FF",),)


CLOCKS = ["NOW()", "CURRENT_TIMESTAMP()", "CURRENT_TIMESTAMP", "SYSDATE()", "LOCALTIME()"]


@pytest.mark.parametrize("zone", ["+08:00", "Asia/Shanghai", "-05:30"])
def test_clock_functions_honour_the_session_time_zone(quire, zone):
    connection = quire.connect()
    run(connection, f"SET time_zone = '{zone}'")
    offset = {"+08:00": 8 * 60, "Asia/Shanghai": 8 * 60, "-05:30": -(5 * 60 + 30)}[zone]
    row = run(connection, f"SELECT {', '.join(CLOCKS)}, UTC_TIMESTAMP(), UNIX_TIMESTAMP()")[0]
    *local, utc, unix = row
    assert all(value == local[0] for value in local), row  # one reading per statement
    assert local[0] - utc == datetime.timedelta(minutes=offset)
    assert datetime.datetime.fromtimestamp(unix, datetime.UTC).replace(tzinfo=None) == utc
    assert run(connection, "SELECT UNIX_TIMESTAMP(NOW()) = UNIX_TIMESTAMP()") == ((1,),)
    assert run(connection, "SELECT FROM_UNIXTIME(UNIX_TIMESTAMP()) = NOW()") == ((1,),)
    today, utc_date = run(connection, "SELECT CURDATE(), UTC_DATE()")[0]
    assert isinstance(today, datetime.date) and abs((today - utc_date).days) <= 1
    assert run(connection, "SELECT CURRENT_DATE = CURDATE(), CAST(NOW() AS DATE) = CURDATE()") == (
        (1, 1),
    )
    connection.close()


def test_clock_through_the_mariadb_cli(quire):
    done = mariadb(
        quire,
        "--batch",
        "--skip-column-names",
        "-e",
        "SET time_zone='Asia/Shanghai'; SELECT TIMESTAMPDIFF(HOUR, UTC_TIMESTAMP(), NOW()), "
        "NOW() = CURRENT_TIMESTAMP, CURDATE() = CURRENT_DATE",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["8", "1", "1"]


def test_unknown_time_zone_is_refused(root):
    assert error_of(root, "SET time_zone = 'Mars/Olympus'")[0] == 1298
    assert error_of(root, "SET time_zone = '+99:00'")[0] == 1298


def test_a_date_format_is_not_taken_from_another_statement_of_the_same_shape(root):
    assert run(root, "SELECT DATE_FORMAT('2024-01-02 03:04:05', '%Y')") == (("2024",),)
    assert run(root, "SELECT DATE_FORMAT('2024-01-02 03:04:05', '%i')") == (("04",),)
    assert run(root, "SELECT DATE_FORMAT('2024-01-02 03:04:05', '%M')") == (("January",),)


@pytest.mark.parametrize("sql", ["MATCH x", "FROB", "HELLO world", "ACCEPT 1", "IDENTIFIER x"])
def test_unknown_statements_are_syntax_errors(quire, root, sql):
    assert error_of(root, sql)[0] == 1064
    done = mariadb(quire, "--batch", "-e", sql)
    assert "ERROR 1064 (42000)" in done.stderr, done.stderr


WITH_QUERIES = [
    ("WITH t AS (SELECT 1 AS a) SELECT a FROM t", ((1,),)),
    (
        "WITH s AS (SELECT schema_name FROM information_schema.schemata) "
        "SELECT COUNT(*) > 0 FROM s WHERE schema_name = 'information_schema'",
        ((1,),),
    ),
    (
        "WITH x AS (WITH y AS (SELECT schema_name AS n FROM schemata) SELECT n FROM y) "
        "SELECT n FROM x WHERE n = 'information_schema'",
        (("information_schema",),),
    ),
    ("WITH tables AS (SELECT 2 AS a) SELECT a FROM tables", ((2,),)),
    (
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
        "SELECT SUM(n) FROM r",
        ((55,),),
    ),
]


@pytest.mark.parametrize(("sql", "rows"), WITH_QUERIES, ids=[q[0] for q in WITH_QUERIES])
def test_common_table_expressions(quire, sql, rows):
    connection = quire.connect(database="information_schema")
    assert run(connection, sql) == rows
    connection.close()
    done = mariadb(quire, "--batch", "--skip-column-names", "information_schema", "-e", sql)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(value) for row in rows for value in row]


def test_an_endless_recursive_query_is_stopped(quire):
    connection = quire.connect()
    run(connection, "SET query_timeout = 2")
    code, _ = error_of(
        connection,
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
    )
    assert code in (3024, 1041)  # timed out, or out of memory first
    assert run(connection, "SELECT 1") == ((1,),)
    connection.close()


def test_frontend_config_comments_are_the_conf_files(quire, root):
    from fe.config import FE_KEYS

    rows = run(root, "ADMIN SHOW FRONTEND CONFIG")
    comments = {row[0]: row[5] for row in rows}
    for key in FE_KEYS:
        assert comments[key.name] and comments[key.name] == key.comment, key.name
    master_only = {row[0] for row in rows if row[4] == "true"}  # the leader's periodic work's
    assert {"catalog_trash_expire_second", "alter_table_timeout_second"} <= master_only
    assert not master_only & {"query_port", "sys_log_level", "qe_max_connection"}
    done = mariadb(
        quire,
        "--batch",
        "--skip-column-names",
        "-e",
        "ADMIN SHOW FRONTEND CONFIG LIKE 'query_port'",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n").split("\t")[-1] == "MySQL protocol port."
    assert run(root, "SHOW FRONTEND CONFIG LIKE 'query_port'") == run(
        root, "ADMIN SHOW FRONTEND CONFIG LIKE 'query_port'"
    )  # Doris 3's name of it


def test_columns_are_named_by_the_expression_as_written(quire):
    connection = quire.connect()
    sql = "SELECT DATABASE(), schema(), CURDATE(), CURRENT_TIMESTAMP, 1+1, now( ), 'a' AS x, @@version"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        names = [entry[0] for entry in cursor.description]
    assert names == [
        "DATABASE()",
        "schema()",
        "CURDATE()",
        "CURRENT_TIMESTAMP",
        "1+1",
        "now( )",
        "x",
        "@@version",
    ]
    connection.close()
    done = mariadb(
        quire,
        "--batch",
        "-e",
        "SELECT DATABASE(), DISTINCT_COUNT FROM (SELECT 1 AS DISTINCT_COUNT) t",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "DATABASE()\tDISTINCT_COUNT"


@pytest.mark.parametrize(
    "sql",
    [
        "EXPLAIN SELECT table_name FROM information_schema.tables WHERE table_schema = 'x'",
        "EXPLAIN VERBOSE SELECT 1 + 1",
        "EXPLAIN PHYSICAL PLAN SELECT COUNT(*) FROM information_schema.columns",
        "EXPLAIN WITH t AS (SELECT 1 AS a) SELECT a FROM t",
        "DESC VERBOSE SELECT 1 + 1",  # Doris's other name of EXPLAIN
        "DESCRIBE SELECT 2",
    ],
)
def test_explain_answers_a_plan_as_doris_does(quire, root, sql):
    with root.cursor() as cursor:
        cursor.execute(sql)
        assert [d[0] for d in cursor.description] == ["Explain String"]
        lines = [row[0] for row in cursor.fetchall()]
    assert lines[0] == "PLAN FRAGMENT 0" and lines[1].startswith("  OUTPUT EXPRS:")
    assert len(lines) > 3 and "quire_is_" not in "\n".join(lines)
    done = mariadb(quire, "--batch", "-e", sql)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["Explain String", "PLAN FRAGMENT 0"]


def test_explain_is_refused_as_the_query_would_be(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS explained")
    run(root, "CREATE TABLE IF NOT EXISTS explained.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE USER IF NOT EXISTS 'explainer' IDENTIFIED BY 'pw'")
    explainer = quire.connect("explainer", "pw")
    try:
        assert error_of(explainer, "EXPLAIN SELECT * FROM explained.t")[0] == 1142
    finally:
        explainer.close()
    assert error_of(root, "EXPLAIN CREATE DATABASE x")[0] == 1064
    assert error_of(root, "EXPLAIN")[0] == 1064


CONVERSIONS = [
    # MySQL converts a value of another kind implicitly, where DuckDB refuses it
    ("LENGTH(1)", 1, "1"),
    ("CONCAT(1, 2.5)", "12.5", "12.5"),
    ("UPPER(12)", "12", "12"),
    ("ABS('3')", 3.0, "3"),
    ("ROUND('2.5')", 3.0, "3"),
    ("1 + '2'", 3, "3"),
    ("'3' * '4'", 12, "12"),
    ("SUBSTRING(12345, 2, 2)", "23", "23"),
    ("LEFT(123, 1)", "1", "1"),
    ("REPEAT(1, 3)", "111", "111"),
    ("YEAR(20240102)", 2024, "2024"),
    ("DAYNAME(20240102)", "Tuesday", "Tuesday"),
    ("LPAD(1, 3, 0)", "001", "001"),
    ("LOCATE(2, 123)", 2, "2"),
    ("TO_BASE64(12)", "MTI=", "MTI="),
    ("DATE '2024-01-02' + 1", 20240103, "20240103"),
    ("12 < DATE '2024-01-02'", 1, "1"),
    ("IFNULL(12, DATE '2024-01-02')", "12", "12"),
    ("IF(1 > 0, 1.5, 2)", decimal.Decimal("1.5"), "1.5"),
    ("IFNULL(NULL, TRUE) + 1", 2, "2"),
    ("HOUR(NULL)", None, "NULL"),
    ("5 DIV 0", None, "NULL"),
    ("5 % 0", None, "NULL"),
    ("MOD(5.5, 0)", None, "NULL"),
    ("-7 MOD 3", -1, "-1"),
    (
        "'2024-01-02 03:04:05' + INTERVAL 1 DAY",
        datetime.datetime(2024, 1, 3, 3, 4, 5),
        "2024-01-03 03:04:05",
    ),
    ("'a' COLLATE utf8mb4_bin", "a", "a"),
    ("'a' COLLATE utf8mb4_general_ci = 'A'", 1, "1"),
    # MySQL's functions DuckDB lacks, answered as MariaDB answers them
    ("ORD('é')", 50089, "50089"),
    ("ORD('')", 0, "0"),
    ("OCT(-1)", "1777777777777777777777", "1777777777777777777777"),
    ("QUOTE('it''s')", "'it\\'s'", "'it\\'s'"),
    ("QUOTE(NULL)", "NULL", "NULL"),
    ("INET_ATON('10.0.5.9')", 167773449, "167773449"),
    ("INET_ATON('127.1')", 2130706433, "2130706433"),
    ("INET_ATON('1.2.3.400')", None, "NULL"),
    ("OCTET_LENGTH('é')", 2, "2"),
    ("LENGTH('é')", 2, "2"),  # bytes, as MySQL's and Doris's
    ("LENGTH(CONCAT('é', 1))", 3, "3"),
    ("CHAR_LENGTH('é')", 1, "1"),
    ("LENGTH(x'ff00')", 2, "2"),
    ("BIT_LENGTH('ab')", 16, "16"),
    ("JSON_LENGTH('[1,2]')", 2, "2"),
    ("JSON_LENGTH('{\"a\":1,\"b\":[1,2]}', '$.b')", 2, "2"),
    ("JSON_LENGTH('{\"a\":1}', '$.z')", None, "NULL"),
    ("JSON_LENGTH('3')", 1, "1"),
    ("JSON_CONTAINS('[1,2]', '3')", 0, "0"),
    ('JSON_CONTAINS(\'{"a":1,"b":2}\', \'{"a":1}\')', 1, "1"),
    ("JSON_CONTAINS('{\"a\":{\"c\":1},\"b\":2}', '1', '$.a.c')", 1, "1"),
    ('JSON_KEYS(\'{"a":1,"b":2}\')', '["a", "b"]', '["a", "b"]'),
    ("JSON_KEYS('[1]')", None, "NULL"),
    ("JSON_VALID('{')", 0, "0"),
    ("JSON_VALID(NULL)", None, "NULL"),
    ("JSON_QUOTE('ab')", '"ab"', '"ab"'),
    ("INET_NTOA(3232235777)", "192.168.1.1", "192.168.1.1"),
    ("INET_NTOA(NULL)", None, "NULL"),
    ("MAKETIME(1, 2, 3)", datetime.timedelta(seconds=3723), "01:02:03"),
    ("TIMESTAMP('2024-01-02')", datetime.datetime(2024, 1, 2), "2024-01-02 00:00:00"),
    (
        "TIMESTAMP('2024-01-02 10:00:00', '01:30:00')",
        datetime.datetime(2024, 1, 2, 11, 30),
        "2024-01-02 11:30:00",
    ),
    (
        "TIMESTAMP('2024-01-02', '-02:00:00')",
        datetime.datetime(2024, 1, 1, 22),
        "2024-01-01 22:00:00",
    ),
    ("TIMESTAMP(NULL)", None, "NULL"),
    ("TIMESTAMP(DATE '2024-03-01')", datetime.datetime(2024, 3, 1), "2024-03-01 00:00:00"),
]


@pytest.mark.parametrize(
    ("expression", "answer", "cli"), CONVERSIONS, ids=[c[0] for c in CONVERSIONS]
)
def test_implicit_conversions_answer_as_mysql_does(quire, root, expression, answer, cli):
    assert run(root, f"SELECT {expression}") == ((answer,),)
    done = mariadb(quire, "--batch", "--skip-column-names", "--raw", "-e", f"SELECT {expression}")
    assert done.stdout == f"{cli}\n", done.stderr


def test_a_string_beside_a_column_makes_ifnull_coalesce_if_and_case_strings(quire, root):
    """MySQL's IFNULL(d, 'none') is a string whatever d's type (DuckDB would read 'none' as a
    DATETIME and fail); NULLIF keeps its first argument's type."""
    run(root, "CREATE DATABASE IF NOT EXISTS mixed")
    run(
        root,
        "CREATE TABLE mixed.t (id INT, ts DATETIME, amount DECIMAL(10,2), n INT, s VARCHAR(8)) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO mixed.t VALUES (1, '2024-01-01 10:00:00', 10.50, 7, 'a'), (2, NULL, NULL, NULL, '')",
    )
    query = (
        "SELECT IFNULL(ts, 'none'), COALESCE(n, amount, ''), IF(amount > 6, amount, '-'), "
        "CASE WHEN id = 1 THEN ts ELSE 'n/a' END, NULLIF(s, ''), NULLIF(n, 7) FROM mixed.t ORDER BY id"
    )
    assert run(root, query) == (
        ("2024-01-01 10:00:00", "7", "10.50", "2024-01-01 10:00:00", "a", None),
        ("none", "", "-", "n/a", None, None),
    )
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", query)
    assert done.stdout == (
        "2024-01-01 10:00:00\t7\t10.50\t2024-01-01 10:00:00\ta\tNULL\nnone\t\t-\tn/a\tNULL\tNULL\n"
    ), done.stderr
    assert run(root, "SELECT id FROM mixed.t WHERE IFNULL(ts, 'none') = 'none'") == ((2,),)


COLUMN_CONVERSIONS = [  # MariaDB's answers over the same rows
    ("SELECT id, s + 1 FROM mixed.conv ORDER BY id", [(1, 6), (2, 8), (3, 1), (4, 126), (5, None)]),
    ("SELECT SUM(s), AVG(s), SUM(s * 2) FROM mixed.conv", [(137, 34.25, 274)]),
    ("SELECT id FROM mixed.conv WHERE s = 5", [(1,)]),
    ("SELECT id FROM mixed.conv WHERE s > 6 ORDER BY id", [(2,), (4,)]),
    ("SELECT id FROM mixed.conv WHERE s IN (5, 7) ORDER BY id", [(1,), (2,)]),
    ("SELECT id FROM mixed.conv WHERE s BETWEEN 6 AND 100", [(2,)]),
    ("SELECT id FROM mixed.conv WHERE id IN ('1', '2x') ORDER BY id", [(1,), (2,)]),
    ("SELECT id FROM mixed.conv WHERE id BETWEEN '2' AND '3z' ORDER BY id", [(2,), (3,)]),
    ("SELECT id, d + 1 FROM mixed.conv WHERE d IS NOT NULL ORDER BY id", [(1, 20240103), (2, 20240302)]),
    ("SELECT id FROM mixed.conv WHERE d > 20240201", [(2,)]),
    ("SELECT id FROM mixed.conv WHERE d IN (20240102, 20240301) ORDER BY id", [(1,), (2,)]),
    ("SELECT SUM(CASE WHEN id < 3 THEN n * 2 ELSE 0 END) FROM mixed.conv", [(decimal.Decimal("9.0"),)]),
    # through a derived table and a WITH query, the column keeps its column's type
    ("SELECT id, a + 1 FROM (SELECT id, s AS a FROM mixed.conv) q WHERE a > 6 ORDER BY id", [(2, 8), (4, 126)]),
    ("WITH w AS (SELECT id, s FROM mixed.conv) SELECT SUM(s * 2) FROM w", [(274,)]),
    ("SELECT x.id FROM (SELECT id, d FROM mixed.conv) x WHERE x.d > 20240201", [(2,)]),
]  # fmt: skip


def test_string_and_date_columns_convert_as_mysqls_do(quire, root):
    """A VARCHAR column in arithmetic, SUM or a comparison with a number is read as the number it
    starts with, as its literal is ('7x' is 7, 'abc' 0, NULL stays NULL); a DATE column beside a
    number by its digits; where DuckDB refused them all."""
    run(root, "CREATE DATABASE IF NOT EXISTS mixed")
    run(
        root,
        "CREATE TABLE mixed.conv (id INT, s VARCHAR(20), d DATE, n DECIMAL(5,1)) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO mixed.conv VALUES (1, '5', '2024-01-02', 1.5), (2, '7x', '2024-03-01', 3), "
        "(3, 'abc', NULL, 4), (4, ' 12.5e1', NULL, NULL), (5, NULL, NULL, NULL)",
    )
    for sql, rows in COLUMN_CONVERSIONS:
        assert [tuple(row) for row in run(root, sql)] == rows, sql
        done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
        assert done.stdout == "".join(
            "\t".join("NULL" if v is None else str(v) for v in row) + "\n" for row in rows
        ), (sql, done.stderr)


def test_texts_made_a_row_stay_within_the_querys_memory(quire, root):
    """DuckDB makes a function's values for a batch of 2048 rows at once, outside its memory
    limit: a REPEAT of a row's value is NULL past exec_mem_limit's share of one row (1 MB), where
    3000 rows of 10 MB each took the node's memory; a constant one is made once, to
    max_allowed_packet (one of 1 GB was made, 2 GB resident, before it was found too long)."""
    run(root, "CREATE DATABASE IF NOT EXISTS texts")
    run(root, "CREATE TABLE texts.n (id INT) DISTRIBUTED BY HASH(id) BUCKETS 1")
    run(root, "INSERT INTO texts.n VALUES " + ", ".join(f"({i})" for i in range(3000)))
    sql = (
        "SELECT COUNT(REPEAT('x', 10000000 + id)), MAX(LENGTH(REPEAT('x', 1000 + id))), "
        "MAX(LENGTH(LPAD('a', 5000000 + id, 'b'))), LENGTH(REPEAT('x', 10000000)), "
        "REPEAT('x', 1000000000) IS NULL FROM texts.n"
    )
    assert run(root, sql) == ((0, 3999, None, 10000000, 1),)
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
    assert done.stdout == "0\t3999\tNULL\t10000000\t1\n", done.stderr
    status = Path(f"/proc/{quire.process.pid}/status").read_text()
    peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    assert peak_kb < 1_500_000, f"the node's memory peaked at {peak_kb} KB"


def _nested(function: str, inner: str, depth: int) -> str:
    for _ in range(depth):
        inner = function.format(inner)
    return inner


def test_nested_texts_stay_small_and_answer_at_once(quire, root):
    """QUOTE, HEX, TO_BASE64, CONCAT, CONCAT_WS and REPEAT nested 40 deep: each read its
    argument twice once rewritten, so the query grew as 2^depth (QUOTE 14 deep took 89 s and
    1.5 GB, 16 deep did not end; REPEAT 20 deep, a minute), and QUOTE and HEX double their text
    (2^40 bytes): now each argument is worked out once and a text past max_allowed_packet is
    NULL, as MySQL answers. Another client is answered meanwhile."""
    deep = [
        _nested("QUOTE({})", "'a'", 40),
        _nested("HEX(CONCAT({}, 'b'))", "REPEAT('a', 1000)", 40),
        _nested("TO_BASE64(CONCAT_WS(',', {}, 'x'))", "'abc'", 40),
        _nested("REPEAT({}, 2)", "'a'", 40),
        _nested("REPEAT({}, 2)", "'a'", 20),
        _nested("QUOTE({})", "'a'", 12),
        _nested("LENGTH(CONCAT({}, 'b'))", "'a'", 40),  # sqlglot writes LENGTH's x thrice
    ]
    sql = "SELECT " + ", ".join(f"LENGTH({text})" for text in deep)
    answers = {}
    asking = quire.connect(read_timeout=120)
    thread = threading.Thread(target=lambda: answers.setdefault("deep", run(asking, sql)))
    thread.start()
    assert run(root, "SELECT 1") == ((1,),)
    thread.join(timeout=120)
    # as MariaDB answers: a QUOTE past the limit is NULL, and the next QUOTE of it 'NULL'
    # (MySQL's TO_BASE64 breaks its lines, Doris's and Quire's do not: 1468228, not 2296480)
    assert answers["deep"] == ((65538, None, 1468228, None, 1 << 20, 8191, 1),)
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", sql)
    assert done.stdout == "65538\tNULL\t1468228\tNULL\t1048576\t8191\t1\n", done.stderr
    status = Path(f"/proc/{quire.process.pid}/status").read_text()
    peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    assert peak_kb < 1_500_000, f"the node's memory peaked at {peak_kb} KB"
    asking.close()


def test_uuid_is_a_new_36_character_string_a_row(quire, root):
    rows = run(root, "SELECT UUID(), UUID() FROM (SELECT 1 UNION ALL SELECT 2) two")
    values = [value for row in rows for value in row]
    assert len(set(values)) == 4 and all(
        len(value) == 36 and value.count("-") == 4 for value in values
    )
    done = mariadb(
        quire, "--batch", "--skip-column-names", "-e", "SELECT LENGTH(UUID()), UUID() <> UUID()"
    )
    assert done.stdout == "36\t1\n", done.stderr


def test_doris_functions_of_everyday_reports(quire, root):
    """NDV, APPROX_COUNT_DISTINCT, PERCENTILE, PERCENTILE_APPROX and TO_DATE, as Doris answers."""
    run(root, "CREATE DATABASE IF NOT EXISTS reports")
    run(
        root,
        "CREATE TABLE reports.t (id INT, ts DATETIME, amount DECIMAL(10,2)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO reports.t VALUES (1, '2024-05-06 07:08:09', 10.00), "
        "(2, '2024-05-07 00:00:00', 20.00), (2, NULL, 40.00), (3, NULL, NULL)",
    )
    query = (
        "SELECT NDV(id), APPROX_COUNT_DISTINCT(id), PERCENTILE(amount, 0.5), "
        "PERCENTILE_APPROX(amount, 0.25), MIN(TO_DATE(ts)), TO_DATE('2024-05-06 07:08:09') "
        "FROM reports.t"
    )
    assert run(root, query) == (
        (3, 3, 20.0, 15.0, datetime.date(2024, 5, 6), datetime.date(2024, 5, 6)),
    )
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", query)
    assert done.stdout == "3\t3\t20\t15\t2024-05-06\t2024-05-06\n", done.stderr  # not 20.0
    grouped = "SELECT id, NDV(amount) FROM reports.t GROUP BY id ORDER BY id"
    assert run(root, grouped) == ((1, 1), (2, 2), (3, 0))


def test_casts_take_doris_type_names_and_give_null_for_text_that_is_none(quire, root):
    """CAST(x AS DATETIMEV2 / DATEV2 / DECIMALV3(p, s) / LARGEINT) as Doris's types (1064
    before); a text that is no number or date casts to NULL, as in Doris (the engine refused
    the query before); a number too large for its type is still refused (1292)."""
    run(root, "CREATE DATABASE IF NOT EXISTS casts")
    run(
        root,
        "CREATE TABLE casts.t (k INT, v VARCHAR(10), dt DATETIME) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(root, "INSERT INTO casts.t VALUES (1, 'a', '2024-01-02 03:04:05'), (2, '12', NULL)")
    query = (
        "SELECT CAST(v AS BIGINT), CAST(v AS DECIMALV3(5, 2)), CAST(dt AS DATEV2), "
        "CAST(dt AS DATETIMEV2(3)), CAST(k AS LARGEINT) FROM casts.t ORDER BY k"
    )
    assert run(root, query) == (
        (None, None, datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5), 1),
        (12, decimal.Decimal("12.00"), None, None, 2),  # LARGEINT's 39 digits: a DECIMAL
    )
    done = mariadb(
        quire,
        "--batch",
        "-N",
        "-e",
        "SELECT CAST('abc' AS SIGNED), CAST('2024-13-01' AS DATE), CAST('7' AS SIGNED)",
    )
    assert done.stdout == "NULL\tNULL\t7\n", done.stderr
    assert run(root, "SELECT datev2 FROM (SELECT 1 AS datev2) q") == ((1,),)  # a name stays one
    assert error_of(root, "SELECT CAST(18446744073709551616 AS SIGNED)")[0] == 1292


def test_group_by_with_rollup_adds_the_totals(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS rolled")
    run(
        root,
        "CREATE TABLE rolled.t (region VARCHAR(8), city VARCHAR(8), amount INT) "
        "DUPLICATE KEY(region) DISTRIBUTED BY HASH(region) BUCKETS 2",
    )
    run(root, "INSERT INTO rolled.t VALUES ('n', 'a', 1), ('n', 'b', 2), ('s', 'c', 4)")
    query = (
        "SELECT region, city, SUM(amount) FROM rolled.t GROUP BY region, city WITH ROLLUP "
        "ORDER BY region IS NULL, region, city IS NULL, city"
    )
    rows = (("n", "a", 1), ("n", "b", 2), ("n", None, 3), ("s", "c", 4), ("s", None, 4))
    assert run(root, query) == (*rows, (None, None, 7))
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", query)
    assert done.stdout == "n\ta\t1\nn\tb\t2\nn\tNULL\t3\ns\tc\t4\ns\tNULL\t4\nNULL\tNULL\t7\n"
    # GROUPING() and Doris's GROUPING_ID() tell a total's NULL from a NULL of the data
    query = (
        "SELECT region, GROUPING(region), GROUPING_ID(region, city), SUM(amount) FROM rolled.t "
        "GROUP BY GROUPING SETS ((region), (region, city), ()) HAVING GROUPING(city) = 1 "
        "ORDER BY 3, 1"
    )
    assert run(root, query) == (("n", 0, 1, 3), ("s", 0, 1, 4), (None, 1, 3, 7))
    cubed = "SELECT COUNT(*) FROM (SELECT 1 FROM rolled.t GROUP BY CUBE(region, city)) q"
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", f"{query}; {cubed}")
    assert done.stdout == "n\t0\t1\t3\ns\t0\t1\t4\nNULL\t1\t3\t7\n9\n", done.stderr


def test_user_variables_hold_a_value_for_the_session(tmp_path):
    node = QuireProcess(tmp_path / "node", overrides={"max_user_variables": 2}).start()
    try:
        connection = node.connect()
        run(connection, "CREATE DATABASE uv")
        run(
            connection,
            "CREATE TABLE uv.t (k INT, v VARCHAR(4)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
        )
        run(connection, "INSERT INTO uv.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        assert run(connection, "SELECT @top") == ((None,),)
        run(connection, "SET @top = (SELECT MAX(k) FROM uv.t), @word = 'z'")  # subquery first
        assert run(connection, "SELECT @top + 1, CONCAT(@word, '!')") == ((4, "z!"),)
        assert run(connection, "SELECT k FROM uv.t WHERE k < @top ORDER BY k") == ((1,), (2,))
        run(connection, "UPDATE uv.t SET v = @word WHERE k = @top")
        assert run(connection, "SELECT v FROM uv.t WHERE k = 3") == (("z",),)
        run(connection, "SET @top = 1")  # set again: still two
        code, message = error_of(connection, "SET @third = 3")
        assert code == 1105 and "max_user_variables" in message
        other = node.connect()
        try:
            assert run(other, "SELECT @top") == ((None,),), "another session's variables"
        finally:
            other.close()
        connection.close()
        done = mariadb(node, "--batch", "--skip-column-names", "-e", "SET @n = 41; SELECT @n + 1")
        assert done.stdout == "42\n", done.stderr
        sql = "SET @n = (SELECT 1), = 2"  # an item neither form reads
        done = mariadb(node, "--batch", "-e", sql)
        assert "ERROR 1064 (42000)" in done.stderr, done.stderr
    finally:
        node.stop()


def test_set_operations_and_columns_named_with_their_database(quire, root):
    """EXCEPT and INTERSECT (MySQL 8's; 1064 before), Doris's MINUS, INSERT ... SELECT ... EXCEPT,
    and a column named `db.t.c` (a correlated subquery's outer column: 1105 before)."""
    run(root, "CREATE DATABASE IF NOT EXISTS sets")
    run(
        root,
        "CREATE TABLE sets.t (k INT, minus INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(root, "INSERT INTO sets.t VALUES (1, 1), (2, 2), (3, 3)")
    assert run(root, "SELECT k FROM sets.t EXCEPT SELECT 2 ORDER BY k") == ((1,), (3,))
    assert run(root, "SELECT k FROM sets.t MINUS SELECT 2 ORDER BY k") == ((1,), (3,))
    assert run(root, "SELECT k FROM sets.t INTERSECT SELECT 2") == ((2,),)
    assert run(root, "SELECT minus FROM sets.t WHERE k = 1") == ((1,),)  # a column's name still
    correlated = (
        "SELECT k FROM sets.t WHERE EXISTS (SELECT 1 FROM sets.t t2 WHERE t2.k = sets.t.k "
        "AND t2.k > 1) ORDER BY sets.t.k"
    )
    assert run(root, correlated) == ((2,), (3,))
    run(root, "INSERT INTO sets.t SELECT k + 10, minus FROM sets.t EXCEPT SELECT 11, 1")
    assert run(root, "SELECT k FROM sets.t WHERE k > 10 ORDER BY k") == ((12,), (13,))
    done = mariadb(
        quire, "--batch", "-N", "-e", "SELECT k FROM sets.t MINUS SELECT k FROM sets.t WHERE k > 2"
    )
    assert done.stdout.split() == ["1", "2"] or sorted(done.stdout.split()) == ["1", "2"], (
        done.stderr
    )


def test_numbers_table_function_generates_rows(quire, root):
    """Doris's numbers("number" = "n"): the numbers 0 to n - 1, as its data generators use it."""
    run(root, "CREATE DATABASE IF NOT EXISTS gen")
    run(
        root,
        "CREATE TABLE gen.t (id BIGINT, v VARCHAR(20)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO gen.t SELECT number, CONCAT('v', number) FROM numbers('number' = '100000')",
    )
    assert run(root, "SELECT COUNT(*), SUM(id), MAX(v) FROM gen.t") == (
        (100000, 4999950000, "v99999"),
    )
    assert run(
        root, 'SELECT number * 2 FROM numbers("number" = "5") n WHERE number > 2 ORDER BY 1'
    ) == (
        (6,),
        (8,),
    )
    assert run(
        root, "SELECT COUNT(*) FROM numbers('number' = '4', 'const_value' = '7') WHERE number = 7"
    ) == ((4,),)
    done = mariadb(quire, "--batch", "-N", "-e", "SELECT * FROM numbers('number' = '3')")
    assert done.stdout == "0\n1\n2\n", done.stderr
    code, message = error_of(root, "SELECT * FROM numbers('number' = '99999999999')")
    assert code == 1105 and "0 to 10000000 (table_function_max_rows)" in message
    assert error_of(root, "SELECT * FROM numbers('rows' = '1')") == (
        1105,
        "Unknown numbers property: rows",
    )


def test_full_text_predicates_match_words(quire, root):
    """Doris's MATCH_ANY, MATCH_ALL, MATCH_PHRASE, MATCH_PHRASE_PREFIX and MATCH_REGEXP: a text's
    words (lower case letters and digits) against the words asked for."""
    run(root, "CREATE DATABASE IF NOT EXISTS search")
    run(
        root,
        "CREATE TABLE search.logs (id INT, msg STRING, INDEX idx_msg (msg) USING INVERTED "
        "PROPERTIES ('parser' = 'english')) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(
        root,
        "INSERT INTO search.logs VALUES (1, 'Error: disk full'), (2, 'all good here'), "
        "(3, 'error again, disk slow'), (4, NULL), (5, 'Disk-Full error')",
    )
    asked = {
        "msg MATCH_ANY 'disk error'": [1, 3, 5],
        "msg MATCH_ALL 'DISK full'": [1, 5],
        "msg MATCH_PHRASE 'disk full'": [1, 5],
        "msg MATCH_PHRASE_PREFIX 'again, di'": [3],
        "msg MATCH_REGEXP '^go+d$'": [2],
        "l.msg MATCH_ANY 'slow' AND id > 1": [3],
    }
    for predicate, ids in asked.items():
        rows = run(root, f"SELECT id FROM search.logs l WHERE {predicate} ORDER BY id")
        assert [row[0] for row in rows] == ids, predicate
    done = mariadb(
        quire, "search", "--batch", "-N", "-e", "SELECT id FROM logs WHERE msg MATCH_ANY 'good'"
    )
    assert done.stdout == "2\n", done.stderr
    connection = mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="search"
    )
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT id FROM logs WHERE msg MATCH_ANY ? ORDER BY id", ("full",))
        assert cursor.fetchall() == [(1,), (5,)]
    finally:
        connection.close()


def _mysql_aes(text: bytes, key: bytes, vector: bytes, bits: int) -> bytes:
    """AES-CBC as MySQL keys it: the key XOR-folded into bits / 8 zero bytes, PKCS#7 padding."""
    folded = bytearray(bits // 8)
    for index, byte in enumerate(key):
        folded[index % len(folded)] ^= byte
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(bytes(folded)), modes.CBC(vector)).encryptor()
    return encryptor.update(padder.update(text) + padder.finalize()) + encryptor.finalize()


def test_aes_modes_come_from_the_session_or_the_call(quire, root):
    vector = "0123456789abcdef"
    expected = _mysql_aes(b"secret", b"k", vector.encode(), 256).hex().upper()
    named = f"HEX(AES_ENCRYPT('secret', 'k', '{vector}', 'aes-256-cbc'))"
    assert run(root, f"SELECT {named}") == ((expected,),)
    assert run(root, f"SELECT {named.replace('aes-256-cbc', 'AES_256_CBC')}") == ((expected,),)
    run(root, "SET block_encryption_mode = 'AES_256_CBC'")
    try:
        assert run(root, f"SELECT HEX(AES_ENCRYPT('secret', 'k', '{vector}'))") == ((expected,),)
        assert run(root, f"SELECT AES_DECRYPT(UNHEX('{expected}'), 'k', '{vector}')") == (
            ("secret",),
        )
    finally:
        run(root, "SET block_encryption_mode = ''")
    assert run(root, "SELECT HEX(AES_ENCRYPT('hello world', 'k'))") == (
        ("1C374376150CCDF6D2CD9C28B48F11F7",),
    )
    # every mode round trips a table's texts, NULL staying NULL
    run(root, "CREATE DATABASE IF NOT EXISTS aes")
    run(
        root, "CREATE TABLE aes.t (id INT, s VARCHAR(40)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id)"
    )
    run(root, "INSERT INTO aes.t VALUES (1, 'one'), (2, NULL), (3, 'a longer text than a block')")
    for bits in (128, 192, 256):
        for kind in ("ECB", "CBC", "CFB", "CFB8", "CFB128", "OFB", "CTR"):
            mode = f"AES_{bits}_{kind}"
            key, iv = "CONCAT('key', id)", f"'{vector}'"
            sql = (
                f"SELECT id, AES_DECRYPT(AES_ENCRYPT(s, {key}, {iv}, '{mode}'), {key}, {iv}, "
                f"'{mode}') FROM aes.t ORDER BY id"
            )
            assert run(root, sql) == (
                (1, "one"),
                (2, None),
                (3, "a longer text than a block"),
            ), mode


def test_aes_refuses_what_mysql_refuses(quire, root):
    assert error_of(root, "SET block_encryption_mode = 'aes-999-ecb'") == (
        1231,
        "Variable 'block_encryption_mode' can't be set to the value of 'aes-999-ecb'",
    )
    assert error_of(root, "SELECT AES_ENCRYPT('a')") == (
        1582,
        "Incorrect parameter count in the call to native function 'aes_encrypt'",
    )
    code, message = error_of(root, "SELECT AES_DECRYPT('a', 'k', '', 'AES_128_XYZ')")
    assert code == 1210 and "AES_128_XYZ" in message
    done = mariadb(quire, "--batch", "-e", "SELECT AES_ENCRYPT('a')")
    assert "ERROR 1582 (42000)" in done.stderr
    assert run(root, "SELECT 1") == ((1,),)
