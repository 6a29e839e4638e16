"""A fuzzer of the front with a fixed seed: every answer is OK, a result or a MySQL error that
neither is an internal error nor shows Quire's internals, and the FE stays up."""

from __future__ import annotations

import random
import struct

import pymysql
import pytest

from tests.harness import assert_mysql_error, run
from tests.test_mysql_protocol import (
    COM_FIELD_LIST,
    COM_QUERY,
    COM_STMT_CLOSE,
    COM_STMT_EXECUTE,
    COM_STMT_PREPARE,
    RawClient,
)

SEED = 20261123
STATEMENTS = 3000
RAW_CASES = 1500
BATCH = 250
VALUES = [
    "1", "0", "-1", "1.5", "1e3", "9223372036854775808", "18446744073709551616", "NULL", "TRUE",
    "'a'", "''", "'%'", "x'ff'", "0x41", "b'101'", "DATE '2024-01-31'", "'2024-13-40'",
    "'838:59:59'", "1E+400", "@@version", "@x", "?", "table_name", "*", "DEFAULT",
]  # fmt: skip
FUNCTIONS = [
    "ABS", "CONCAT", "SUBSTRING", "DATE_ADD", "STR_TO_DATE", "IFNULL", "COALESCE", "CAST",
    "UNHEX", "HEX", "JSON_OBJECT", "LENGTH", "UPPER", "ROUND", "NOW", "UNIX_TIMESTAMP", "IF",
    "COUNT", "SUM", "MAX", "GROUP_CONCAT", "DATABASE", "VERSION", "LEFT", "REPEAT", "FROM_UNIXTIME",
]  # fmt: skip
OPERATORS = [
    "+", "-", "*", "/", "DIV", "%", "MOD", "=", "<>", "<=>", "<", ">=", "AND", "OR", "XOR", "&",
    "|", "^", "<<", ">>", "LIKE", "REGEXP", "IS", "IN", "BETWEEN", "COLLATE",
]  # fmt: skip
TYPES = ["SIGNED", "UNSIGNED", "CHAR", "DECIMAL(65,30)", "DECIMAL(5,2)", "DATE", "DATETIME", "JSON"]
TABLES = [
    "information_schema.tables", "information_schema.columns", "information_schema.schemata",
    "fuzz.t", "t", "nowhere.x", "(SELECT 1 AS a) AS d",
]  # fmt: skip
STATEMENT_FORMS = [
    "SELECT {e}",
    "SELECT {e}, {e} FROM {t}",
    "SELECT {e} FROM {t} WHERE {e} GROUP BY {e} HAVING {e} ORDER BY {e} LIMIT {n}",
    "SELECT * FROM {t} WHERE {e} IN ({e}, {e}, {e})",
    "WITH c AS (SELECT {e} AS a) SELECT a FROM c",
    "SELECT {e} UNION SELECT {e}",
    "SET {v} = {e}",
    "SET @x = {e}",
    "SHOW {show} LIKE {e}",
    "SHOW CREATE TABLE {t}",
    "DESC {t}",
    "EXPLAIN SELECT {e}",
    "USE {t}",
    "CREATE DATABASE IF NOT EXISTS fuzz",
    "CREATE TABLE IF NOT EXISTS fuzz.t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) "
    "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')",
    "ALTER TABLE fuzz.t ADD COLUMN {name} {type}",
    "KILL {k}",
    "PREPARE s FROM 'SELECT {e}'",
    "EXECUTE s",
    "ADMIN SHOW FRONTEND CONFIG LIKE {e}",
]
SHOWS = ["DATABASES", "TABLES", "VARIABLES", "STATUS", "PROCESSLIST", "FRONTENDS", "CATALOGS"]
SESSION_VARIABLES = ["wait_timeout", "sql_mode", "time_zone", "autocommit", "names", "character"]


def expression(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(VALUES)
    if roll < 0.6:
        return f"{expression(rng, depth + 1)} {rng.choice(OPERATORS)} {expression(rng, depth + 1)}"
    if roll < 0.8:
        arguments = ", ".join(expression(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return f"{rng.choice(FUNCTIONS)}({arguments})"
    if roll < 0.9:
        return f"CAST({expression(rng, depth + 1)} AS {rng.choice(TYPES)})"
    return f"({expression(rng, depth + 1)})"


def statement(rng: random.Random) -> str:
    form = rng.choice(STATEMENT_FORMS)
    parts = {
        "e": lambda: expression(rng),
        "t": lambda: rng.choice(TABLES),
        "n": lambda: rng.choice(["0", "1", "-1", "18446744073709551616", "''"]),
        "k": lambda: rng.choice(["999999999", "QUERY 999999999", "-1", "'a'"]),
        "v": lambda: rng.choice(SESSION_VARIABLES),
        "show": lambda: rng.choice(SHOWS),
        "name": lambda: rng.choice(["c1", "`a b`", "k", "x" * 70]),
        "type": lambda: rng.choice(["INT", "DECIMAL(70, 2)", "VARCHAR(0)", "FLOAT SUM", "BOGUS"]),
    }
    pieces = form.split("{")
    text = pieces[0]
    for piece in pieces[1:]:
        key, rest = piece.split("}", 1)
        text += parts[key]() + rest
    return text


def mutated(rng: random.Random, sql: str) -> str:
    """`sql` with a few tokens dropped, doubled or swapped, or random characters written in."""
    tokens = sql.split(" ")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(tokens))
        kind = rng.randrange(4)
        if kind == 0 and len(tokens) > 1:
            del tokens[i]
        elif kind == 1:
            tokens.insert(i, tokens[i])
        elif kind == 2:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            noise = "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)]))
                            for _ in range(rng.randint(1, 4)))  # fmt: skip
            tokens[i] = tokens[i][: rng.randint(0, len(tokens[i]))] + noise
    return " ".join(tokens)


def assert_answers_select_1(quire) -> None:
    fresh = quire.connect(read_timeout=120)
    try:
        assert run(fresh, "SELECT 1") == ((1,),)
    finally:
        fresh.close()


@pytest.fixture(scope="module")
def fuzzing(quire):
    yield quire
    log = quire.log_file.read_text(errors="replace")
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:6000]


def test_random_and_mutated_statements_get_mysql_answers(fuzzing):
    rng = random.Random(SEED)
    connection = fuzzing.connect(read_timeout=120)
    try:
        for count in range(STATEMENTS):
            sql = statement(rng)
            if rng.random() < 0.5:
                sql = mutated(rng, sql)
            try:
                run(connection, sql)
            except pymysql.err.OperationalError as error:
                if error.args[0] in (2006, 2013):
                    raise AssertionError(f"the FE dropped the connection at {sql!r}") from error
                assert_mysql_error(*error.args, sql)
            except pymysql.MySQLError as error:
                assert_mysql_error(*error.args, sql)
            if count % BATCH == BATCH - 1:
                assert_answers_select_1(fuzzing)
    finally:
        connection.close()
    assert_answers_select_1(fuzzing)


PARAMETER_TYPES = [1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 15, 16, 245, 246, 252, 253, 254, 6, 0xFF]


def raw_packet(rng: random.Random, stmt_id: int) -> bytes:
    noise = rng.randbytes(rng.randint(0, 24))
    command = rng.choice([COM_QUERY, COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_CLOSE])
    command = rng.choice([command, COM_FIELD_LIST])
    if command in (COM_QUERY, COM_STMT_PREPARE):
        sql = statement(rng).encode()
        cut = rng.randint(0, len(sql))
        return bytes([command]) + rng.choice([sql[:cut] + noise + sql[cut:], noise, sql[:cut]])
    if command == COM_STMT_EXECUTE:
        types = b"".join(
            bytes([rng.choice(PARAMETER_TYPES), rng.choice([0, 0x80])]) for _ in range(2)
        )
        values = rng.randbytes(rng.randint(0, 16))
        if rng.random() < 0.5:
            values = bytes([rng.choice([0, 4, 7, 8, 11, 12, 0xFC, 0xFE])]) + values
        body = struct.pack("<IBI", stmt_id, rng.choice([0, 1, 8]), 1)
        body += bytes([rng.randrange(4)]) + bytes([rng.randrange(2)]) + types + values
        return bytes([command]) + body[: rng.randint(0, len(body))]
    if command == COM_STMT_CLOSE:
        return bytes([command]) + rng.choice([struct.pack("<I", stmt_id), noise])
    return bytes([command]) + rng.choice([b"tables\x00%", noise, b"t\x00" + noise])


def read_until_synced(client: RawClient, marker: bytes, what) -> None:
    """Read every packet up to the answer of `SELECT '<marker>'`, checking each ERR."""
    seen_marker = False
    while True:
        packet = client.read()
        if packet[:1] == b"\xff":
            code = int.from_bytes(packet[1:3], "little")
            assert packet[3:4] == b"#", (packet, what)
            assert_mysql_error(code, packet[9:].decode("utf-8", "replace"), what)
        if marker in packet:
            seen_marker = True
        elif seen_marker and packet[:1] == b"\xfe" and len(packet) < 9:
            return


def test_mutated_protocol_packets_after_login_get_mysql_answers(fuzzing):
    rng = random.Random(SEED + 1)
    client = None
    synced = 0
    for case in range(RAW_CASES):
        if client is None:
            client = RawClient(fuzzing.query_port)
            client.sock.settimeout(120)
            assert client.login("root", "")[0] == 0x00
            prepared = client.command(bytes([COM_STMT_PREPARE]) + b"SELECT ? + ?")
            assert prepared[0] == 0x00, prepared
            stmt_id = int.from_bytes(prepared[1:5], "little")
            for _ in range(2 + 1):
                client.read()
        packet = raw_packet(rng, stmt_id)
        marker = f"sync-{case}".encode()
        try:
            client.send(packet, seq=0)
            client.send(bytes([COM_QUERY]) + b"SELECT '" + marker + b"'", seq=0)
            read_until_synced(client, marker, packet)
            synced += 1
        except (ConnectionError, OSError):
            client.close()  # the FE may close a connection that sent a malformed packet
            client = None
        if case % BATCH == BATCH - 1:
            assert_answers_select_1(fuzzing)
    if client is not None:
        client.close()
    assert_answers_select_1(fuzzing)
    assert synced > RAW_CASES // 2, f"only {synced} of {RAW_CASES} cases kept their connection"
