"""The MySQL front (fe/mysql) against real clients and raw sockets.

The front runs in a background thread with its own event loop, on a free loopback port, serving
ScriptedSession: a stand-in for Quire's session that answers a fixed set of statements.

Each defect of mysql-mimic 3.0.5 that the front corrects has a test here that fails on mysql-mimic:
1 auth bypass after a failed login, 2 unescaped prepared-statement strings, 3 an extra EOF after
prepared-statement parameters (libmariadb clients), 4 parameter types forgotten between executes,
5 DATE/DATETIME/DECIMAL parameters rejected, 6 result sets ending with affected rows = row count,
7 column definitions without length and decimals, 8 affected rows lost, 9 Python exception text
sent to clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import logging
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path

import mysql.connector
import pymysql
import pytest
import sqlglot
from sqlglot import exp

from fe.mysql import (
    BaseSession,
    IdentityProvider,
    MysqlFront,
    NativePasswordPlugin,
    QueryError,
    Result,
    User,
    column,
    native_password_hash,
)
from fe.mysql.errors import ErrorCode
from fe.mysql.results import EncodedAnswers
from tests.harness import wait_until

DATABASES = {"test", "sbtest", "db1"}
VARIABLES = {
    "version_comment": "Quire",
    "max_allowed_packet": 1 << 20,
    "auto_increment_increment": 1,
    "system_time_zone": "UTC",
    "time_zone": "SYSTEM",
    "tx_isolation": "REPEATABLE-READ",
    "transaction_isolation": "REPEATABLE-READ",
    "sql_mode": "",
    "lower_case_table_names": 0,
    "character_set_client": "utf8mb4",
    "collation_connection": "utf8mb4_general_ci",
    "wait_timeout": 28800,
}
TYPED_COLUMNS = [
    ("id", "BIGINT"),
    ("price", "DECIMAL(10,2)"),
    ("name", "VARCHAR(20)"),
    ("created", "DATETIME"),
    ("ratio", "DOUBLE"),
    ("day", "DATE"),
    ("flag", "BOOLEAN"),
    ("small", "SMALLINT UNSIGNED"),
]
TYPED_ROWS = [
    (1, Decimal("0.25"), "first", dt.datetime(2024, 1, 2, 3, 4, 5), 0.5, dt.date(2024, 1, 2), 1, 7),
    (2, Decimal("12345678.9"), "second", None, -1e-05, dt.date(1999, 12, 31), 0, 65535),
]
BIG_ROWS = 200_000
SERVER_STATUS_IN_TRANS = 1
SERVER_STATUS_AUTOCOMMIT = 2
KEPT = EncodedAnswers()  # the answers of SELECT KEPT, shared by the sessions of every front
SLEEP = re.compile(r"SELECT SLEEP\((\d+(?:\.\d+)?)\)", re.I)
KILL = re.compile(r"KILL\s+(QUERY\s+|CONNECTION\s+)?(\d+)", re.I)
POINT_SELECT = re.compile(r"SELECT c FROM sbtest\d+ WHERE id\s*=\s*(\d+)", re.I)
INSERT = re.compile(r"INSERT INTO t VALUES\s*(.*)", re.I | re.S)


class Users(IdentityProvider):
    """root without a password; alice's password "pw" stored as MySQL stores it."""

    def get_plugins(self):
        return [NativePasswordPlugin()]

    async def get_user(self, username, host):
        if username == "crash":
            raise RuntimeError("secret identity detail")
        if username == "root":
            return User(name="root", auth_string="", auth_plugin="mysql_native_password")
        if username == "alice":
            return User(
                name="alice",
                auth_string=native_password_hash("pw"),
                auth_plugin="mysql_native_password",
            )
        return None


class Journal:
    """What the sessions of one front saw, for the tests to check."""

    def __init__(self):
        self.queries: list[str] = []
        self.closed = 0
        self.resets = 0
        self.lock = threading.Lock()

    def saw(self, sql):
        with self.lock:
            self.queries.append(sql)


class ScriptedSession(BaseSession):
    def __init__(self, harness: FrontHarness):
        self.harness = harness
        self.journal = harness.journal
        self.username = None
        self.database = None
        self.connection = None

    async def init(self, connection):
        self.connection = connection

    async def close(self):
        self.journal.closed += 1

    async def reset(self):
        self.journal.resets += 1

    async def use(self, database):
        if database not in DATABASES:
            raise QueryError(ErrorCode.BAD_DB_ERROR, f"Unknown database '{database}'")
        self.database = database

    async def describe(self, sql):
        if POINT_SELECT.fullmatch(sql.replace("?", "0")):
            return [column("c", "CHAR(120)")]
        return None

    async def handle_query(self, sql, attrs):
        self.journal.saw(sql)
        text = sql.strip().rstrip(";").strip()
        upper = text.upper()
        if upper in ("BEGIN", "COMMIT"):
            in_transaction = SERVER_STATUS_IN_TRANS if upper == "BEGIN" else 0
            flags = self.connection.status_flags & ~SERVER_STATUS_IN_TRANS
            self.connection.status_flags = flags | in_transaction
            return None
        if upper.startswith(("SET ", "ROLLBACK", "START TRANSACTION")):
            return None
        if upper == "SELECT KEPT":
            value = self.harness.kept_value
            return Result([column("kept", "BIGINT")], [(value,)], answers=KEPT, answer_key=value)
        if match := SLEEP.fullmatch(text):
            await asyncio.sleep(float(match.group(1)))
            return Result([column("SLEEP", "BIGINT")], [(0,)])
        if match := KILL.fullmatch(text):
            query_only = (match.group(1) or "").strip().upper() == "QUERY"
            if not self.harness.front.kill(int(match.group(2)), query_only):
                raise QueryError(ErrorCode.NO_SUCH_THREAD, f"Unknown thread id: {match.group(2)}")
            return None
        if match := POINT_SELECT.fullmatch(text):
            return Result([column("c", "CHAR(120)")], [(f"row-{match.group(1)}",)])
        if match := INSERT.fullmatch(text):
            return Result(affected_rows=match.group(1).count("("), last_insert_id=41)
        if upper == "DELETE FROM T":
            return Result(affected_rows=3)
        if upper == "SELECT * FROM TYPED":
            return Result([column(n, t) for n, t in TYPED_COLUMNS], TYPED_ROWS)
        if upper == "SELECT * FROM BIG":
            row = ("x" * 100,)
            return Result([column("x", "VARCHAR(100)")], (row for _ in range(BIG_ROWS)))
        if upper == "BOOM":
            raise RuntimeError("secret python detail")
        if upper.startswith("SHOW COLUMNS FROM `T`"):
            return Result(
                [column(n) for n in ("Field", "Type", "Null", "Key", "Default", "Extra")],
                [
                    ("id", "bigint", "NO", "PRI", None, ""),
                    ("price", "decimal(10,2)", "YES", "", "1.50", ""),
                ],
            )
        if upper == "SHOW PROCESSLIST":
            names = ("Id:BIGINT", "User", "Host", "db", "Command", "Time:BIGINT", "State", "Info")
            rows = [
                (p.id, p.user, p.host, p.db, p.command, p.time, p.state, p.info)
                for p in self.harness.front.processlist()
            ]
            return Result([column(*n.split(":")) for n in names], rows)
        return self._select_constants(text)

    def _select_constants(self, sql):
        """SELECT of literals, @@variables, DATABASE(), USER(), CONNECTION_ID(): echoed back."""
        try:
            tree = sqlglot.parse_one(sql, read="mysql")
        except sqlglot.errors.ParseError:
            raise QueryError(
                ErrorCode.PARSE_ERROR, "You have an error in your SQL syntax"
            ) from None
        if not isinstance(tree, exp.Select) or tree.args.get("from_") or tree.args.get("where"):
            raise QueryError(ErrorCode.PARSE_ERROR, f"Unsupported statement: {sql[:40]}")
        columns, row = [], []
        for expression in tree.expressions:
            value, sql_type = self._value(expression.unalias())
            columns.append(column(expression.alias_or_name or expression.sql(), sql_type))
            row.append(value)
        return Result(columns, [tuple(row)])

    def _value(self, e):
        if isinstance(e, exp.Literal) and e.is_string:
            return e.this, "VARCHAR(255)"
        if isinstance(e, exp.Literal):
            number = Decimal(e.this)
            if number == number.to_integral_value() and "." not in e.this and "e" not in e.this:
                return int(number), "BIGINT"
            if "e" in e.this.lower():
                return float(number), "DOUBLE"
            scale = -number.as_tuple().exponent
            return number, f"DECIMAL({max(len(number.as_tuple().digits), scale + 1)},{scale})"
        if isinstance(e, exp.Neg):
            value, sql_type = self._value(e.this)
            return -value, sql_type
        if isinstance(e, exp.Null):
            return None, "VARCHAR(255)"
        if isinstance(e, exp.Boolean):
            return int(e.this), "BOOLEAN"
        if isinstance(e, exp.HexString):
            return bytes.fromhex(e.this), "VARBINARY(255)"
        if isinstance(e, exp.SessionParameter):
            return VARIABLES.get(e.name.lower()), "VARCHAR(255)"
        if isinstance(e, exp.CurrentSchema):
            return self.database, "VARCHAR(64)"
        if isinstance(e, exp.Anonymous) and e.name.upper() == "CONNECTION_ID":
            return self.connection.connection_id, "BIGINT"
        if isinstance(e, (exp.CurrentUser, exp.Anonymous)) and e.name.upper() in ("USER", ""):
            return f"{self.username}@{self.connection.host}", "VARCHAR(64)"
        raise QueryError(ErrorCode.PARSE_ERROR, f"Not a constant: {e.sql('mysql')[:40]}")


class FrontHarness:
    """A MysqlFront in a thread of its own, with its own event loop."""

    def __init__(self, **options):
        self.journal = Journal()
        self.kept_value = 7  # what SELECT KEPT answers
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        options.setdefault("max_packet_bytes", 1 << 20)
        self.front = MysqlFront(
            session_factory=lambda: ScriptedSession(self),
            identity_provider=Users(),
            host="127.0.0.1",
            port=0,
            **options,
        )
        self.call(self.front.start())
        self.port = self.front.port

    def call(self, coroutine, timeout=10):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self):
        self.call(self.front.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def pymysql(self, user="alice", password="pw", **kwargs):
        return pymysql.connect(
            host="127.0.0.1", port=self.port, user=user, password=password, **kwargs
        )

    def connector(self, **kwargs):
        kwargs.setdefault("user", "alice")
        kwargs.setdefault("password", "pw")
        return mysql.connector.connect(
            host="127.0.0.1", port=self.port, use_pure=True, ssl_disabled=True, **kwargs
        )


@pytest.fixture(scope="module")
def front():
    harness = FrontHarness()
    yield harness
    harness.stop()


# A raw protocol client, to send what no well-behaved client sends.

CLIENT_LONG_PASSWORD = 1
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_DEPRECATE_EOF = 1 << 24
RAW_CAPABILITIES = (
    CLIENT_LONG_PASSWORD
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_DEPRECATE_EOF
)
COM_QUERY, COM_FIELD_LIST, COM_STMT_PREPARE, COM_STMT_EXECUTE = 0x03, 0x04, 0x16, 0x17
COM_STMT_FETCH = 0x1C
COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE = 0x18, 0x19


def scramble(password: str, nonce: bytes) -> bytes:
    if not password:
        return b""
    stage1 = hashlib.sha1(password.encode()).digest()
    mask = hashlib.sha1(nonce + hashlib.sha1(stage1).digest()).digest()
    return bytes(a ^ b for a, b in zip(stage1, mask, strict=True))


class RawClient:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.seq = 0

    def close(self):
        self.sock.close()

    def recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by server")
            data += chunk
        return data

    def read(self) -> bytes:
        header = self.recv_exact(4)
        length = int.from_bytes(header[:3], "little")
        self.last_seq = header[3]
        self.seq = (header[3] + 1) & 0xFF
        return self.recv_exact(length)

    def send(self, payload: bytes, seq: int | None = None):
        seq = self.seq if seq is None else seq
        self.sock.sendall(len(payload).to_bytes(3, "little") + bytes([seq]) + payload)
        self.seq = (seq + 1) & 0xFF

    def login(self, user="alice", password="pw", capabilities=RAW_CAPABILITIES) -> bytes:
        handshake = self.read()
        assert handshake[0] == 10
        rest = handshake[handshake.index(b"\x00", 1) + 1 :]
        nonce = rest[4:12] + rest[31:43]
        auth = scramble(password, nonce)
        self.send(
            struct.pack("<IIB23x", capabilities, 1 << 24, 45)
            + user.encode()
            + b"\x00"
            + bytes([len(auth)])
            + auth
            + b"mysql_native_password\x00"
        )
        return self.read()

    def command(self, payload: bytes) -> bytes:
        self.send(payload, seq=0)
        return self.read()

    def query_packets(self, sql: str) -> list[bytes]:
        """Every packet of a (DEPRECATE_EOF) response to COM_QUERY."""
        first = self.command(bytes([COM_QUERY]) + sql.encode())
        if first[0] in (0x00, 0xFF):
            return [first]
        packets = [first]
        while True:
            packet = self.read()
            packets.append(packet)
            if packet[0] == 0xFF or (packet[0] == 0xFE and len(packet) < 0xFFFFFF):
                return packets

    def is_closed(self, timeout=5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


@contextlib.contextmanager
def logged_in(port: int):
    """A RawClient logged in as alice, closed at the end."""
    client = RawClient(port)
    try:
        assert client.login()[0] == 0x00
        yield client
    finally:
        client.close()


def error_of(packet: bytes) -> tuple[int, str, str]:
    assert packet[0] == 0xFF, packet
    code = int.from_bytes(packet[1:3], "little")
    return code, packet[4:9].decode(), packet[9:].decode()


def lenenc(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos]
    if first < 0xFB:
        return first, pos + 1
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(data[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def ok_counts(packet: bytes) -> tuple[int, int]:
    """(affected rows, last insert id) of an OK packet."""
    affected, pos = lenenc(packet, 1)
    last_id, _ = lenenc(packet, pos)
    return affected, last_id


# Everyday use


def test_pymysql_round_trip(front):
    with front.pymysql(database="test") as conn, conn.cursor() as cur:
        cur.execute("SELECT 1, 'two', NULL")
        assert cur.fetchall() == ((1, "two", None),)
        cur.execute("SELECT DATABASE()")
        assert cur.fetchone() == ("test",)
        cur.execute("SELECT * FROM typed")
        assert cur.fetchall() == tuple(TYPED_ROWS)


def test_stored_native_password_hash_authenticates():
    assert (
        native_password_hash("pw")
        == "*" + hashlib.sha1(hashlib.sha1(b"pw").digest()).hexdigest().upper()
    )
    harness = FrontHarness()
    try:
        with harness.pymysql() as conn, conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            assert cur.fetchone() == ("alice@127.0.0.1",)
        with pytest.raises(pymysql.err.OperationalError) as denied:
            harness.pymysql(password="wrong")
        assert denied.value.args[0] == 1045
        assert "Access denied for user 'alice'" in denied.value.args[1]
    finally:
        harness.stop()


def test_mariadb_cli(front):
    if shutil.which("mariadb") is None:
        pytest.fail("mariadb client not installed")
    base = ["mariadb", "-h127.0.0.1", f"-P{front.port}", "-ualice", "-ppw", "--batch"]
    done = subprocess.run(
        [*base, "test", "-e", "SELECT * FROM typed; SELECT 'it''s'"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert "0.25" in done.stdout and "12345678.90" in done.stdout and "it's" in done.stdout
    denied = subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{front.port}", "-ualice", "-pnope", "-e", "SELECT 1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert denied.returncode != 0
    assert "ERROR 1045 (28000)" in denied.stderr


# Defect 1: a failed login must end the connection


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("nobody", "pw")])
def test_failed_login_closes_the_connection(front, user, password):
    client = RawClient(front.port)
    try:
        code, sqlstate, message = error_of(client.login(user, password))
        try:
            client.send(bytes([COM_QUERY]) + b"SELECT 'bypass'", seq=0)
        except OSError:
            pass
        assert client.is_closed()
        assert "SELECT 'bypass'" not in front.journal.queries
        assert (code, sqlstate) == (1045, "28000")  # not 3162 either: no probing for user names
        assert f"Access denied for user '{user}'@'127.0.0.1' (using password: YES)" == message
    finally:
        client.close()


# Defect 2: prepared statement strings are substituted as escaped literals

TRICKY_STRINGS = [
    "x' OR '1'='1",
    "back\\slash \\' \\\\' end\\",
    "quotes \" ' ` and ''",
    "line\nbreak\ttab\r\x00nul\x1a",
    "100% _under_ é 😀",
    "",
]


@pytest.mark.parametrize(
    "value",
    TRICKY_STRINGS,
    ids=[
        "quote injection",
        "backslashes",
        "quotes",
        "control bytes",
        "wildcards and utf8",
        "empty",
    ],
)
def test_prepared_string_parameters_come_back_verbatim(front, value):
    conn = front.connector()
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT ?", (value,))
        assert cur.fetchall() == [(value,)]
    finally:
        conn.close()


def test_question_marks_in_literals_and_comments_are_no_parameters(front):
    conn = front.connector()
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT ?, '?', ? /* ? */", ("a'b", 7))
        assert cur.fetchall() == [("a'b", "?", 7)]
    finally:
        conn.close()


# Defects 3 and 4: prepared statements of libmysqlclient and libmariadb, types sent once

LIBMYSQLCLIENT_SCRIPT = """
import sys
import _mysql_connector  # first, so that it loads the libssl it was built with
import mysql.connector
from decimal import Decimal
conn = mysql.connector.connect(host="127.0.0.1", port=int(sys.argv[1]), user="alice",
                               password="pw", use_pure=False, ssl_disabled=True)
assert type(conn).__name__ == "CMySQLConnection"
cur = conn.cursor(prepared=True)
for value in ["it's", "back\\\\slash", "third"]:
    cur.execute("SELECT ?, ?", (value, Decimal("1.25")))
    print(cur.fetchall())
cur.execute("INSERT INTO t VALUES (?), (?), (?)", (1, 2, 3))
print(cur.rowcount)
"""


def test_libmysqlclient_prepared_statements(front):
    """mysql-connector-python's C extension: Oracle's libmysqlclient, with CLIENT_DEPRECATE_EOF."""
    probe = subprocess.run(
        [sys.executable, "-c", "import _mysql_connector"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.fail("mysql-connector-python's C extension (libmysqlclient) cannot load")
    done = subprocess.run(
        [sys.executable, "-c", LIBMYSQLCLIENT_SCRIPT, str(front.port)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[(\"it's\", Decimal('1.25'))]",
        "[('back\\\\slash', Decimal('1.25'))]",
        "[('third', Decimal('1.25'))]",
        "3",
    ]


def test_sysbench_point_selects_with_prepared_statements(front):
    """sysbench's oltp_point_select: libmariadb, parameter types bound once per statement."""
    if shutil.which("sysbench") is None:
        pytest.fail("sysbench not installed")
    before = len(front.journal.queries)
    done = subprocess.run(
        [
            "sysbench",
            "oltp_point_select",
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={front.port}",
            "--mysql-user=alice",
            "--mysql-password=pw",
            "--mysql-db=sbtest",
            "--tables=1",
            "--table-size=1000",
            "--threads=2",
            "--events=2000",
            "--time=0",
            "--db-ps-mode=auto",
            "run",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"read:\s+2000\b", done.stdout), done.stdout
    assert re.search(r"ignored errors:\s+0\b", done.stdout), done.stdout
    point_selects = [q for q in front.journal.queries[before:] if POINT_SELECT.fullmatch(q)]
    assert len(point_selects) == 2000


def test_prepare_and_execute_on_the_wire(front):
    """No EOF after parameter definitions for a DEPRECATE_EOF client; types sent only once."""
    with logged_in(front.port) as client:
        prepared = client.command(bytes([COM_STMT_PREPARE]) + b"SELECT ?, ?")
        assert prepared[0] == 0x00
        stmt_id, columns, params = struct.unpack_from("<IHH", prepared, 1)
        assert (columns, params) == (0, 2)
        for _ in range(params):
            assert client.read()[:4] == b"\x03def"

        def execute(bound: bool, number: int, text: bytes) -> list:
            payload = struct.pack("<BIBI", COM_STMT_EXECUTE, stmt_id, 0, 1) + b"\x00"
            payload += b"\x01" if bound else b"\x00"
            if bound:
                payload += bytes([0x08, 0x00, 0xFD, 0x00])  # LONGLONG, VAR_STRING
            payload += struct.pack("<q", number) + bytes([len(text)]) + text
            first = client.command(payload)
            assert client.last_seq == 1 and first == b"\x02", first  # the column count
            packets = [first]
            while packets[-1][0] != 0xFE:
                packets.append(client.read())
            return packets

        first = execute(True, 5, b"abc")
        again = execute(False, -6, b"de")
        assert first[-2] == b"\x00\x00" + struct.pack("<q", 5) + b"\x03abc"
        assert again[-2] == b"\x00\x00" + struct.pack("<q", -6) + b"\x02de"


def test_cursor_fetch(front):
    with logged_in(front.port) as client:
        prepared = client.command(bytes([COM_STMT_PREPARE]) + b"SELECT * FROM typed")
        stmt_id = struct.unpack_from("<I", prepared, 1)[0]
        opened = [client.command(struct.pack("<BIBI", COM_STMT_EXECUTE, stmt_id, 1, 1))]
        while opened[-1][0] != 0xFE:
            opened.append(client.read())
        assert opened[0] == bytes([len(TYPED_COLUMNS)]) and len(opened) == len(TYPED_COLUMNS) + 2
        assert struct.unpack_from("<H", opened[-1], 3)[0] & 0x40  # SERVER_STATUS_CURSOR_EXISTS

        def fetch(count):
            packets = [client.command(struct.pack("<BII", COM_STMT_FETCH, stmt_id, count))]
            while packets[-1][0] != 0xFE:
                packets.append(client.read())
            return packets[:-1], struct.unpack_from("<H", packets[-1], 3)[0]

        rows, status = fetch(1)
        assert len(rows) == 1 and rows[0][0] == 0x00 and status & 0x40
        rows, status = fetch(5)
        assert len(rows) == 1 and status & 0x80  # SERVER_STATUS_LAST_ROW_SENT
        assert struct.unpack_from("<q", rows[0], 3)[0] == 2  # after the 2-byte NULL bitmap


def test_perl_dbd_mariadb_server_side_prepared_statements(front):
    perl = shutil.which("perl")
    if perl is None or subprocess.run([perl, "-MDBD::MariaDB", "-e1"]).returncode != 0:
        pytest.fail("perl DBD::MariaDB not installed")
    script = r"""
use strict; use DBI;
my $dbh = DBI->connect("DBI:MariaDB:database=test;host=127.0.0.1;port=$ARGV[0];mariadb_server_prepare=1",
                       "alice", "pw", {RaiseError => 1, PrintError => 0});
my $sth = $dbh->prepare("SELECT ?, ?");
for my $i (1 .. 3) {
    $sth->execute("it's \\ $i", $i * 10);
    my @row = $sth->fetchrow_array;
    print join("|", @row), "\n";
}
print $dbh->do("INSERT INTO t VALUES (?), (?)", undef, 1, 2), "\n";
"""
    done = subprocess.run(
        [perl, "-e", script, str(front.port)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["it's \\ 1|10", "it's \\ 2|20", "it's \\ 3|30", "2"]


# Defect 5: temporal and decimal parameters


def test_prepared_date_datetime_decimal_time_parameters(front):
    conn = front.connector()
    try:
        cur = conn.cursor(prepared=True)
        params = (
            dt.date(2024, 2, 29),
            dt.datetime(2024, 2, 29, 23, 59, 58, 123456),
            dt.datetime(2024, 3, 1, 8, 0),
            Decimal("-12345.678"),
            dt.timedelta(hours=25, minutes=3, microseconds=5),
            None,
            2.5,
        )
        cur.execute("SELECT ?, ?, ?, ?, ?, ?, ?", params)
        assert cur.fetchall() == [
            (
                "2024-02-29",
                "2024-02-29 23:59:58.123456",
                "2024-03-01 08:00:00",
                Decimal("-12345.678"),
                "25:03:00.000005",
                None,
                Decimal("2.5"),
            )
        ]
    finally:
        conn.close()


# Defect 6: the packet ending a result set carries no affected rows


def test_result_set_end_reports_no_affected_rows(front):
    with logged_in(front.port) as client:
        packets = client.query_packets("SELECT * FROM typed")
        assert packets[0] == bytes([len(TYPED_COLUMNS)])
        end = packets[-1]
        assert end[0] == 0xFE and ok_counts(end) == (0, 0)
        assert len(packets) == 1 + len(TYPED_COLUMNS) + len(TYPED_ROWS) + 1


# Defect 7: column definitions carry length, decimals, flags


def test_column_definitions_carry_precision_and_scale(front):
    with front.pymysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM typed")
        described = {d[0]: d for d in cur.description}
    # (name, type_code, display_size, internal_size, precision, scale, null_ok)
    assert described["price"][1] == 246 and described["price"][4:6] == (12, 2)
    assert described["name"][1] == 253 and described["name"][4] == 80  # 20 utf8mb4 chars
    assert described["id"][1] == 8 and described["id"][4] == 20
    assert described["created"][1] == 12 and described["created"][4] == 19
    assert described["ratio"][1] == 5 and described["ratio"][5] == 31
    assert described["flag"][1] == 1 and described["flag"][4] == 1


def test_column_types_map_to_definitions():
    price = column("p", "DECIMAL(10,2)")
    assert (price.type, price.spec.length, price.spec.decimals) == (0xF6, 12, 2)
    unsigned = column("u", "decimal(5, 0) unsigned")
    assert (unsigned.spec.length, unsigned.spec.decimals) == (5, 0)
    assert column("b", "BIGINT UNSIGNED").flags & 0x20
    assert column("v", "varchar(20)").spec.length == 80
    assert column("t", "DATETIME(3)").spec.length == 23
    assert column("j", "JSON").type == 0xF5
    assert column("x", "ARRAY<INT>").type == 0xFD
    assert column("n", "INT", nullable=False).flags & 0x01


# Defect 8: affected rows and insert ids reach the client


def test_affected_rows_and_last_insert_id(front):
    with front.pymysql() as conn, conn.cursor() as cur:
        assert cur.execute("INSERT INTO t VALUES (1), (2)") == 2
        assert cur.lastrowid == 41
        assert cur.execute("DELETE FROM t") == 3


# Defect 9: unexpected exceptions


def test_unexpected_exception_gives_internal_error_with_incident_id(front, caplog):
    with caplog.at_level(logging.ERROR, logger="fe.mysql.connection"):
        with front.pymysql() as conn, conn.cursor() as cur:
            with pytest.raises(pymysql.err.OperationalError) as failed:
                cur.execute("BOOM")
            code, message = failed.value.args
            assert code == 1105
            assert "Internal error" in message and "secret" not in message
            incident = re.search(r"incident ([0-9a-f]+)", message).group(1)
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    logged = [r for r in caplog.records if incident in r.getMessage()]
    assert logged and logged[0].levelno == logging.ERROR
    assert "secret python detail" in str(logged[0].exc_info[1])
    with pytest.raises(pymysql.err.OperationalError) as failed:
        front.pymysql(user="crash")
    assert failed.value.args[0] == 1105 and "secret" not in failed.value.args[1]


def test_query_error_reaches_client_with_code_and_sqlstate(front):
    conn = front.connector()
    try:
        cur = conn.cursor()
        with pytest.raises(mysql.connector.Error) as failed:
            cur.execute("SELECT FROM WHERE")
        assert (failed.value.errno, failed.value.sqlstate) == (1064, "42000")
        with pytest.raises(mysql.connector.Error) as failed:
            conn.cmd_init_db("nope")
        assert (failed.value.errno, failed.value.sqlstate) == (1049, "42000")
    finally:
        conn.close()


# Robustness: bad packets and bad clients


def test_malformed_and_unknown_commands_leave_the_connection_usable(front):
    with logged_in(front.port) as client:
        assert error_of(client.command(bytes([COM_STMT_EXECUTE, 1, 0])))[0] == 1835
        assert error_of(client.command(b"\x63"))[:2] == (1047, "08S01")
        assert error_of(client.command(b""))[0] == 1835
        assert error_of(client.command(bytes([COM_STMT_EXECUTE]) + bytes(9)))[0] == 1243
        code, _, message = error_of(client.command(bytes([COM_QUERY]) + b"SELECT '\xff\xfe'"))
        assert code == 1300 and "FFFE" in message
        packets = client.query_packets("SELECT 1")
        assert packets[-2] == b"\x011"


def test_packet_over_the_limit_gets_1153_and_is_not_read(front):
    with logged_in(front.port) as client:
        size = (1 << 20) + 1
        client.sock.sendall(size.to_bytes(3, "little") + b"\x00" + bytes([COM_QUERY]) + b"x" * 10)
        code, sqlstate, _ = error_of(client.read())
        assert (code, sqlstate) == (1153, "08S01")
        assert client.is_closed()
    with front.pymysql() as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("SELECT '" + "y" * (2 << 20) + "'")


def test_packets_out_of_order_and_bad_handshakes_are_refused(front):
    with logged_in(front.port) as client:
        client.send(bytes([COM_QUERY]) + b"SELECT 1", seq=5)
        assert error_of(client.read())[:2] == (1156, "08S01")
        assert client.is_closed()
    client = RawClient(front.port)
    try:
        client.read()
        client.send(b"\x01\x02garbage")
        assert error_of(client.read())[:2] == (1043, "08S01")
        assert client.is_closed()
    finally:
        client.close()


def test_a_handshake_response_out_of_sequence_gets_1156(front):
    client = RawClient(front.port)
    try:
        client.read()
        client.send(struct.pack("<IIB23x", RAW_CAPABILITIES, 1 << 24, 45) + b"alice\x00\x00", seq=7)
        assert error_of(client.read())[:2] == (1156, "08S01")
        assert client.is_closed()
    finally:
        client.close()


@pytest.mark.parametrize(
    "payload",
    [
        bytes([COM_STMT_SEND_LONG_DATA]),
        bytes([COM_STMT_SEND_LONG_DATA, 1, 0, 0]),
        bytes([COM_STMT_CLOSE, 1]),
    ],
)
def test_commands_without_a_reply_get_none_even_when_malformed(front, payload):
    with logged_in(front.port) as client:
        client.send(payload, seq=0)
        packets = client.query_packets("SELECT 1")
        assert packets[0] == b"\x01", packets  # the answer to SELECT 1, not an error for the above


def test_clients_vanishing_mid_packet_and_mid_result(front):
    baseline = front.front.connection_count
    mid_packet = RawClient(front.port)
    assert mid_packet.login()[0] == 0x00
    mid_packet.sock.sendall((100).to_bytes(3, "little") + b"\x00" + bytes([COM_QUERY]) + b"SEL")
    mid_packet.close()

    mid_result = RawClient(front.port)
    assert mid_result.login()[0] == 0x00
    mid_result.send(bytes([COM_QUERY]) + b"SELECT * FROM big", seq=0)
    assert mid_result.read() == b"\x01"
    mid_result.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    mid_result.close()  # reset, with most of the 20 MB result unsent

    mid_handshake = RawClient(front.port)
    mid_handshake.read()
    mid_handshake.close()

    # a deadline, not a duration: on a loaded 2-core machine the reset write can take seconds
    wait_until(lambda: front.front.connection_count == baseline, 60, "connections to end")
    with front.pymysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT 'still serving'")
        assert cur.fetchone() == ("still serving",)


def test_large_result_is_streamed_completely(front):
    with front.pymysql() as conn, conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute("SELECT * FROM big")
        count = sum(1 for _ in cur)
    assert count == BIG_ROWS


def test_max_connections_refuses_with_1040():
    harness = FrontHarness(max_connections=2)
    try:
        first, second = harness.pymysql(), harness.pymysql()
        with pytest.raises(pymysql.err.OperationalError) as refused:
            harness.pymysql()
        assert refused.value.args[0] == 1040
        first.close()
        wait_until(lambda: harness.front.connection_count == 1, 10, "a free slot")
        third = harness.pymysql()
        third.close()
        second.close()
    finally:
        harness.stop()


# KILL and the process list


def _connection_id(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        return cur.fetchone()[0]


def _sleep_in_thread(conn, seconds=30):
    outcome = {}

    def run():
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT SLEEP({seconds})")
                outcome["rows"] = cur.fetchall()
        except pymysql.err.MySQLError as e:
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_kill_query_interrupts_statement_and_keeps_connection(front):
    victim, killer = front.pymysql(database="test"), front.pymysql()
    try:
        victim_id = _connection_id(victim)
        thread, outcome = _sleep_in_thread(victim)

        def sleeping():  # its SLEEP, not the state its last statement left a moment longer
            return any(
                p.id == victim_id and p.command == "Query" and p.info == "SELECT SLEEP(30)"
                for p in front.front.processlist()
            )

        wait_until(sleeping, 10, "the victim to be running")
        with killer.cursor() as cur:
            cur.execute("SHOW PROCESSLIST")
            rows = {row[0]: row for row in cur.fetchall()}
            assert rows[victim_id][1:5] == ("alice", "127.0.0.1", "test", "Query")
            assert rows[victim_id][7] == "SELECT SLEEP(30)"
            cur.execute(f"KILL QUERY {victim_id}")
        thread.join(10)
        assert outcome["error"].args[0] == 1317
        with victim.cursor() as cur:
            cur.execute("SELECT 'alive'")
            assert cur.fetchone() == ("alive",)
        with killer.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as unknown:
            cur.execute("KILL 999999")
        assert unknown.value.args[0] == 1094
    finally:
        victim.close()
        killer.close()


def test_kill_connection_ends_busy_and_idle_connections(front):
    busy, idle, killer = front.pymysql(), front.pymysql(), front.pymysql()
    try:
        busy_id, idle_id = _connection_id(busy), _connection_id(idle)
        thread, outcome = _sleep_in_thread(busy)
        wait_until(
            lambda: any(
                p.id == busy_id and p.command == "Query" and p.info == "SELECT SLEEP(30)"
                for p in front.front.processlist()
            ),
            10,
            "the busy connection to be running its query",
        )
        with killer.cursor() as cur:
            cur.execute(f"KILL {busy_id}")
            cur.execute(f"KILL CONNECTION {idle_id}")
        thread.join(10)
        assert outcome["error"].args[0] == 1927
        ids = {busy_id, idle_id}
        wait_until(
            lambda: not ids & {p.id for p in front.front.processlist()},
            10,
            "the killed connections to leave the process list",
        )
        with pytest.raises(pymysql.err.OperationalError) as lost:
            with idle.cursor() as cur:
                cur.execute("SELECT 1")
        assert lost.value.args[0] in (2006, 2013)
        with killer.cursor() as cur:  # killing yourself ends the connection after the statement
            cur.execute("SELECT CONNECTION_ID()")
            with pytest.raises(pymysql.err.OperationalError) as own:
                cur.execute(f"KILL {cur.fetchone()[0]}")
            assert own.value.args[0] == 1927
    finally:
        for conn in (busy, idle, killer):
            try:
                conn.close()
            except pymysql.err.Error:
                pass


# Other commands


def test_init_db_ping_reset_and_change_user(front):
    conn = front.connector(database="test")
    try:
        conn.cmd_init_db("db1")
        cur = conn.cursor()
        cur.execute("SELECT DATABASE()")
        assert cur.fetchall() == [("db1",)]
        assert conn.cmd_ping()["status_flag"] & 0x0002
        resets = front.journal.resets
        conn.cmd_reset_connection()
        assert front.journal.resets == resets + 1
        conn.cmd_change_user(username="root", password="", database="test")
        cur = conn.cursor()
        cur.execute("SELECT CURRENT_USER(), DATABASE()")
        assert cur.fetchall() == [("root@127.0.0.1", "test")]
        with pytest.raises(mysql.connector.Error) as denied:
            conn.cmd_change_user(username="alice", password="wrong")
        assert denied.value.errno == 1045
    finally:
        conn.close()


def test_field_list(front):
    with logged_in(front.port) as client:
        packets = [client.command(bytes([COM_FIELD_LIST]) + b"t\x00")]
        while packets[-1][0] not in (0xFE, 0xFF):
            packets.append(client.read())
        definitions = packets[:-1]
        names = []
        for d in definitions:
            pos = 0
            fields = []
            for _ in range(6):
                n, pos = lenenc(d, pos)
                fields.append(d[pos : pos + n])
                pos += n
            names.append(fields[4])
            assert d[pos] == 0x0C
            type_code = d[pos + 7]
            default = d[pos + 13 :]
            if fields[4] == b"id":
                assert type_code == 0x08 and default == b"\xfb"
            else:
                assert type_code == 0xF6 and d[pos + 10] == 2 and default == b"\x041.50"
        assert names == [b"id", b"price"]


# MariaDB Connector/J (what Spark's JDBC source uses)

JAVA_PROGRAM = r"""
import java.math.BigDecimal;
import java.sql.*;

public class QuireJdbc {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + args[0] + "/test?user=alice&password=pw"
            + "&useServerPrepStmts=" + args[1];
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT * FROM typed")) {
                ResultSetMetaData m = r.getMetaData();
                for (int i = 1; i <= m.getColumnCount(); i++) {
                    System.out.println("meta " + m.getColumnLabel(i) + " " + m.getPrecision(i)
                        + " " + m.getScale(i));
                }
                while (r.next()) {
                    System.out.println("row " + r.getLong("id") + " " + r.getBigDecimal("price")
                        + " " + r.getString("name"));
                }
            }
            try (Statement s = c.createStatement()) {
                System.out.println("deleted " + s.executeUpdate("DELETE FROM t"));
            }
            try (PreparedStatement p = c.prepareStatement("SELECT ?, ?, ?")) {
                p.setString(1, "x' OR '1'='1");
                p.setBigDecimal(2, new BigDecimal("12.34"));
                p.setDate(3, Date.valueOf("2024-02-29"));
                for (int i = 0; i < 2; i++) {
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        System.out.println("echo " + r.getString(1) + "|" + r.getString(2)
                            + "|" + r.getString(3));
                    }
                }
            }
        }
    }
}
"""


@pytest.fixture(scope="module")
def jdbc_program(tmp_path_factory):
    jar = Path("/usr/share/java/mariadb-java-client.jar")
    if not jar.exists() or shutil.which("javac") is None:
        pytest.fail("MariaDB Connector/J (Debian libmariadb-java) or javac not installed")
    folder = tmp_path_factory.mktemp("jdbc")
    (folder / "QuireJdbc.java").write_text(JAVA_PROGRAM)
    subprocess.run(
        ["javac", "-cp", str(jar), "QuireJdbc.java"], cwd=folder, check=True, timeout=120
    )
    return folder, jar


@pytest.mark.parametrize("server_prepared", ["false", "true"])
def test_mariadb_connector_j(front, jdbc_program, server_prepared):
    folder, jar = jdbc_program
    done = subprocess.run(
        ["java", "-cp", f"{jar}:{folder}", "QuireJdbc", str(front.port), server_prepared],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "meta price 10 2" in lines
    assert "meta name 20 0" in lines
    assert "row 1 0.25 first" in lines and "row 2 12345678.90 second" in lines
    assert "deleted 3" in lines
    assert lines.count("echo x' OR '1'='1|12.34|2024-02-29") == 2


# Kept answers: a session's answer that is the same whenever its key is, sent again as encoded.


def _kept(client: RawClient) -> tuple[int, int, int]:
    """SELECT KEPT over a DEPRECATE_EOF raw client: its value, status flags, packets' last seq."""
    packets = client.query_packets("SELECT KEPT")
    assert [p[0] for p in packets[:1]] == [1] and len(packets) == 4, packets
    end = packets[-1]
    assert end[0] == 0xFE
    flags = int.from_bytes(end[3:5], "little")
    return int(packets[2][1:].decode()), flags, client.last_seq


def test_a_kept_answer_follows_its_key_the_status_flags_and_the_eof_style(front):
    with logged_in(front.port) as client:
        assert _kept(client) == (7, SERVER_STATUS_AUTOCOMMIT, 4)
        assert _kept(client) == (7, SERVER_STATUS_AUTOCOMMIT, 4)
        assert client.query_packets("BEGIN")[0][0] == 0x00
        in_transaction = SERVER_STATUS_AUTOCOMMIT | SERVER_STATUS_IN_TRANS
        assert _kept(client) == (7, in_transaction, 4)
        assert client.query_packets("COMMIT")[0][0] == 0x00
        front.kept_value = 8
        assert _kept(client) == (8, SERVER_STATUS_AUTOCOMMIT, 4)
        front.kept_value = 7
        assert _kept(client) == (7, SERVER_STATUS_AUTOCOMMIT, 4)
    eof_client = front.pymysql()  # without DEPRECATE_EOF: EOF packets, one more of them
    try:
        with eof_client.cursor() as cursor:
            for value in (7, 8, 7):
                front.kept_value = value
                cursor.execute("SELECT KEPT")
                assert cursor.fetchall() == ((value,),)
                assert cursor.description[0][0] == "kept"
            cursor.execute("BEGIN")
            cursor.execute("SELECT KEPT")
            assert eof_client.server_status & SERVER_STATUS_IN_TRANS
            cursor.execute("COMMIT")
            cursor.execute("SELECT KEPT")
            assert not eof_client.server_status & SERVER_STATUS_IN_TRANS
    finally:
        eof_client.close()
    done = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(front.port), "-u", "alice", "-ppw", "-N", "-B"],
        input="SELECT KEPT;\nSELECT KEPT;\nSELECT 1;\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "7\n7\n1\n"), done.stderr


def test_whole_commands_in_one_segment_and_commands_split_byte_by_byte(front):
    """Pipelined commands are each answered; a command arriving a byte at a time is read whole."""
    with logged_in(front.port) as client:
        query = bytes([COM_QUERY]) + b"SELECT KEPT"
        packet = len(query).to_bytes(3, "little") + b"\x00" + query
        client.sock.sendall(packet * 3)
        for _ in range(3):
            answer = [client.read() for _ in range(4)]
            assert answer[2][1:] == b"7" and answer[3][0] == 0xFE
        client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for byte in packet:
            client.sock.sendall(bytes([byte]))
        answer = [client.read() for _ in range(4)]
        assert answer[2][1:] == b"7"
