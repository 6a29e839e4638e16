"""Real MySQL clients against a running `quire up`: the mariadb CLI, SQLAlchemy,
mysql-connector-python, many concurrent clients, and clients that send bad input."""

from __future__ import annotations

import os
import pty
import random
import select
import socket
import struct
import subprocess
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import mysql.connector
import pymysql
import pytest
from pymysql.protocol import FieldDescriptorPacket
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    create_engine,
    inspect,
    text,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy import types as sa_types

from tests.harness import mariadb, run, wait_until

COM_QUERY = 3
COM_FIELD_LIST = 4
DORIS_ONLY_TYPES = ("bitmap", "hll", "quantile_state", "agg_state", "variant", "ipv4", "ipv6")

DORIS_TABLE = (
    "CREATE TABLE items (k INT NOT NULL, name VARCHAR(20), price DECIMAL(10,2) NOT NULL, "
    "made DATE, seen DATETIME, visits BITMAP BITMAP_UNION) "
    "AGGREGATE KEY(k, name, price, made, seen) DISTRIBUTED BY HASH(k) BUCKETS 2 "
    'PROPERTIES ("replication_num" = "1")'
)
MYSQL_TABLE = (
    "CREATE TABLE users (id BIGINT NOT NULL AUTO_INCREMENT, name VARCHAR(20) NOT NULL, "
    "balance DECIMAL(10,2) DEFAULT 0, note TEXT, PRIMARY KEY (id)) "
    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)


def read_result(connection) -> tuple:
    result = pymysql.connections.MySQLResult(connection)
    result.read()
    return result.rows


def field_list(connection, table: str, wildcard: str = "") -> list[FieldDescriptorPacket]:
    """COM_FIELD_LIST, which PyMySQL has no method for: send it raw, read definitions until EOF."""
    connection._execute_command(COM_FIELD_LIST, f"{table}\0{wildcard}".encode())
    fields = []
    while not (packet := connection._read_packet()).is_eof_packet():
        fields.append(FieldDescriptorPacket(packet.get_all_data(), connection.encoding))
    return fields


def processlist_ids(connection) -> set[int]:
    return {row[0] for row in run(connection, "SHOW PROCESSLIST")}


def hang_up(connection) -> None:
    """Drop a PyMySQL connection's TCP connection without a COM_QUIT."""
    connection._sock.shutdown(socket.SHUT_RDWR)
    connection._sock.close()


@pytest.fixture(scope="module")
def root(root):
    """The root connection, with what this module's tests share."""
    run(root, "CREATE DATABASE cli_db")
    run(root, "CREATE DATABASE orm")
    run(root, "CREATE TABLE cli_db.wide (zebra_count INT NOT NULL, label VARCHAR(10))")
    return root


# -- the mariadb command-line client ---------------------------------------------------------


def test_mariadb_cli_runs_a_ddl_script_given_with_e(quire, root):
    script = (
        "USE cli_db; "
        "CREATE TABLE orders (id INT, amount DECIMAL(10,2)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 4; "
        "CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT) ENGINE=InnoDB; "
        "SHOW TABLES"
    )
    done = mariadb(quire, "-e", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Tables_in_cli_db\nnotes\norders\nwide\n"

    done = mariadb(quire, "--batch", "-N", "-e", "SHOW DATABASES")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cli_db", "information_schema", "orm"]

    done = mariadb(quire, "--batch", "-D", "cli_db", "-e", "DESC orders")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split("\t") == [
        "Field",
        "Type",
        "Null",
        "Key",
        "Default",
        "Extra",
    ]
    rows = [line.split("\t")[:3] for line in done.stdout.splitlines()[1:]]
    assert rows == [["id", "int", "YES"], ["amount", "decimal(10,2)", "YES"]]


def test_mariadb_cli_in_batch_mode_from_stdin(quire, root):
    script = """
-- a comment line, then a statement over several lines
USE cli_db;
CREATE TABLE IF NOT EXISTS
    batch_t (k INT NOT NULL COMMENT 'the key', v VARCHAR(20))
    DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1;
SHOW TABLES LIKE 'batch%';
SELECT DATABASE();
SHOW COLUMNS FROM batch_t;
DROP TABLE batch_t;
SHOW TABLES LIKE 'batch%';
"""
    done = mariadb(quire, "--batch", "-N", stdin=script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["batch_t", "cli_db"]
    assert [line.split("\t")[:3] for line in lines[2:]] == [
        ["k", "int", "NO"],
        ["v", "varchar(20)", "YES"],
    ]


@pytest.mark.parametrize(
    "sql, message",
    [
        ("USE nowhere", "ERROR 1049 (42000) at line 1: Unknown database 'nowhere'"),
        ("CREATE DATABASE cli_db", "ERROR 1007 (HY000) at line 1"),
        ("SELEC 1", "ERROR 1064 (42000) at line 1"),
        ("DROP TABLE cli_db.nothing", "ERROR 1051 (42S02) at line 1"),
        ("SHOW CREATE TABLE cli_db.nothing", "ERROR 1146 (42S02) at line 1"),
        ("CREATE TABLE nowhere.t (a INT)", "ERROR 1049 (42000) at line 1"),
        ("SET no_such_variable = 1", "ERROR 1193 (HY000) at line 1"),
        ("SELECT * FROM cli_db.nothing", "ERROR 1146 (42S02) at line 1"),
        ("SELECT no_such_column", "ERROR 1054 (42S22) at line 1"),
        ("SELECT nope FROM information_schema.tables", "ERROR 1054 (42S22) at line 1"),
        ("SELECT 1 FROM information_schema.nothing", "ERROR 1109 (42S02) at line 1"),
    ],
)
def test_mariadb_cli_errors_show_code_and_sqlstate(quire, root, sql, message):
    done = mariadb(quire, "-e", sql)
    assert done.returncode == 1
    assert message in done.stderr, done.stderr


def test_mariadb_cli_stops_at_the_first_error_unless_forced(quire, root):
    script = "SELECT 1;\nUSE nowhere;\nSELECT 2;\n"
    done = mariadb(quire, "--batch", "-N", stdin=script)
    assert done.returncode == 1
    assert done.stdout == "1\n"
    assert "ERROR 1049 (42000) at line 2: Unknown database 'nowhere'" in done.stderr

    done = mariadb(quire, "--batch", "-N", "--force", stdin=script)
    assert done.stdout == "1\n2\n"
    assert "ERROR 1049 (42000) at line 2" in done.stderr


def test_mariadb_cli_connect_errors(quire, root):
    done = mariadb(quire, "-D", "nowhere", "-e", "SELECT 1")
    assert done.returncode == 1
    assert "ERROR 1049 (42000): Unknown database 'nowhere'" in done.stderr
    done = mariadb(quire, "-pwrong", "-e", "SELECT 1")
    assert done.returncode == 1
    assert "ERROR 1045 (28000): Access denied for user 'root'" in done.stderr


class Terminal:
    """The interactive mariadb client on a pseudo-terminal, so that readline and tab completion run."""

    def __init__(self, args: list[str]):
        controller, device = pty.openpty()
        self.controller = controller
        self.process = subprocess.Popen(
            args, stdin=device, stdout=device, stderr=device, close_fds=True
        )
        os.close(device)
        self.output = b""

    def expect(self, wanted: bytes, timeout: float = 10) -> bytes:
        deadline = time.monotonic() + timeout
        while wanted not in self.output:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None:
                raise AssertionError(f"waited for {wanted!r}, the terminal shows:\n{self.text()}")
            readable, _, _ = select.select([self.controller], [], [], min(remaining, 0.2))
            if readable:
                try:
                    self.output += os.read(self.controller, 65536)
                except OSError:
                    break
        return self.output

    def send(self, keys: bytes) -> None:
        os.write(self.controller, keys)

    def text(self) -> str:
        return self.output.decode(errors="replace")

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(timeout=10)
        os.close(self.controller)
        return code


def test_mariadb_dump_output_restores_through_the_mariadb_cli(quire, root):
    """mariadb-dump's statements run (its executable comments, LOCK TABLES, ALTER TABLE ...
    DISABLE KEYS) and its dump restores whole."""
    run(root, "CREATE DATABASE dumped")
    run(
        root,
        "CREATE TABLE dumped.t (k INT, s STRING, dt DATETIME, j JSON, a ARRAY<INT>) "
        "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(
        root,
        """INSERT INTO dumped.t VALUES (1, 'it''s', '2024-01-01 10:00:00', '{"a": 1}', [1, 2]),
        (2, NULL, NULL, NULL, NULL)""",
    )
    before = run(root, "SELECT * FROM dumped.t ORDER BY k")
    dump = subprocess.run(
        ["mariadb-dump", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "root",
         "--no-tablespaces", "--databases", "dumped"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert dump.returncode == 0, dump.stderr
    assert "LOCK TABLES `t` WRITE" in dump.stdout and "/*!40101 SET NAMES" in dump.stdout
    run(root, "DROP DATABASE dumped FORCE")
    restored = mariadb(quire, stdin=dump.stdout)
    assert restored.returncode == 0, restored.stderr
    assert run(root, "SELECT * FROM dumped.t ORDER BY k") == before


def test_mysql_statements_tools_send(quire, root):
    """FROM DUAL, executable comments, LOCK / UNLOCK TABLES, FLUSH, SHOW PROCEDURE STATUS and
    Doris's SHOW TABLE <id>, as GUI tools and scripts send them."""
    assert run(root, "SELECT 1 FROM DUAL") == ((1,),)
    assert run(root, "SELECT 1 FROM dual WHERE 1 = 0") == ()
    assert run(root, "SELECT 1 /*!40101 + 1 */ /*!99999 + 100 */ /*M!100101 + 10 */") == ((2,),)
    run(root, "CREATE DATABASE IF NOT EXISTS tools")
    run(root, "CREATE TABLE tools.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    for sql in ("LOCK TABLES tools.t READ LOCAL", "UNLOCK TABLES", "FLUSH PRIVILEGES",
                "ALTER TABLE tools.t DISABLE KEYS"):  # fmt: skip
        assert not run(root, sql)
    assert run(root, "SHOW PROCEDURE STATUS WHERE Db = 'tools'") == ()
    assert run(root, "SHOW FUNCTION STATUS LIKE 'x%'") == ()
    databases = {row[1]: row[0] for row in run(root, "SHOW PROC '/dbs'")}
    tables = {row[1]: row[0] for row in run(root, f"SHOW PROC '/dbs/{databases['tools']}'")}
    shown = run(root, f"SHOW TABLE {tables['t']}")
    assert shown == (("tools", "t", str(databases["tools"])),)
    partition = run(root, "SHOW PARTITIONS FROM tools.t")[0][0]
    assert run(root, f"SHOW PARTITION {partition}") == (
        ("tools", "t", "t", str(databases["tools"]), str(tables["t"])),
    )
    assert run(root, "SHOW PARTITION 1") == ()
    done = mariadb(quire, "--batch", "-e", "LOCK TABLES tools.missing READ")
    assert "ERROR 1146 (42S02)" in done.stderr
    done = mariadb(quire, "--batch", "-e", "SHOW PROCEDURE STATUS")
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert error_of_statement(root, "/*!99999 SELECT 1 */") == 1065  # MySQL's Query was empty


def error_of_statement(connection, sql: str) -> int:
    with pytest.raises(pymysql.MySQLError) as raised:
        run(connection, sql)
    return raised.value.args[0]


def test_mariadb_cli_auto_rehash_completes_table_and_column_names(quire, root):
    terminal = Terminal(
        ["mariadb", "-h", "127.0.0.1", "-P", str(quire.query_port), "-u", "root"]
        + ["-D", "cli_db", "--auto-rehash"]
    )
    try:
        welcome = terminal.expect(b"[cli_db]> ").decode(errors="replace")
        assert "Reading table information for completion" in welcome
        assert "ERROR" not in welcome and "Didn't find any fields" not in welcome
        # Column names come from COM_FIELD_LIST on connect: zebra_c<TAB> completes to zebra_count.
        terminal.send(b"SELECT 1 AS zebra_c\t;\n")
        terminal.expect(b"| zebra_count |")
        terminal.expect(b"1 row in set")
        # Table names come from SHOW TABLES: wi<TAB> completes to wide.
        terminal.send(b"SHOW COLUMNS FROM wi\t;\n")
        terminal.expect(b"2 rows in set")
        assert "| zebra_count | int" in terminal.text()
        terminal.send(b"rehash\n")
        terminal.send(b"SHOW TABLES;\n")
        terminal.expect(b"| wide ")
        terminal.send(b"quit\n")
        terminal.expect(b"Bye")
        assert terminal.process.wait(timeout=10) == 0
        assert "ERROR" not in terminal.text()
    finally:
        terminal.close()


def test_field_list_as_the_cli_sends_it(quire, root):
    connection = quire.connect(database="cli_db")
    fields = field_list(connection, "wide")
    assert [field.name for field in fields] == ["zebra_count", "label"]
    assert {field.table_name for field in fields} == {"wide"}
    assert [field.type_code for field in fields] == [
        pymysql.constants.FIELD_TYPE.LONG,
        pymysql.constants.FIELD_TYPE.VAR_STRING,
    ]
    assert [field.name for field in field_list(connection, "wide", "zebra%")] == ["zebra_count"]
    with pytest.raises(pymysql.MySQLError) as excinfo:
        field_list(connection, "nothing")
    assert excinfo.value.args[0] == 1146
    # The same statements the CLI's rehash runs, and the connection is still in step afterwards.
    assert ("cli_db",) in run(connection, "show databases")
    assert ("wide",) in run(connection, "show tables")
    assert [row[0] for row in run(connection, "show fields from `wide`")] == [
        "zebra_count",
        "label",
    ]
    connection.close()


# -- SQLAlchemy -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(quire, root):
    engine = create_engine(f"mysql+pymysql://root@127.0.0.1:{quire.query_port}/orm")
    yield engine
    engine.dispose()


def unexpected_reflection_warnings(caught) -> list[str]:
    """SQLAlchemy's warnings other than Doris-only types and Doris-only clauses of SHOW CREATE TABLE."""
    unexpected = []
    for warning in caught:
        message = str(warning.message)
        if message.startswith("Did not recognize type"):
            if any(f"'{name}'" in message for name in DORIS_ONLY_TYPES):
                continue
        elif message.startswith("Unknown schema content: "):
            # Doris clauses (KEY model, DISTRIBUTED BY, PROPERTIES) are fine; a column line is not.
            if not message.removeprefix("Unknown schema content: ").strip("'").startswith("`"):
                continue
        unexpected.append(message)
    return unexpected


def test_sqlalchemy_connects_and_runs_text(engine):
    with engine.connect() as connection:
        assert connection.execute(text("SELECT 1")).scalar() == 1
        assert connection.execute(text("SELECT :x + 1"), {"x": 41}).scalar() == 42
        assert connection.execute(text("SELECT DATABASE()")).scalar() == "orm"
    assert "orm" in inspect(engine).get_schema_names()


def test_sqlalchemy_reflects_doris_and_mysql_tables(engine):
    with engine.begin() as connection:
        connection.execute(text(DORIS_TABLE))
        connection.execute(text(MYSQL_TABLE))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sa_exc.SAWarning)
        inspector = inspect(engine)
        assert inspector.get_table_names() == ["items", "users"]
        assert inspector.has_table("users") and not inspector.has_table("nothing")

        items = {column["name"]: column for column in inspector.get_columns("items")}
        assert list(items) == ["k", "name", "price", "made", "seen", "visits"]
        assert isinstance(items["k"]["type"], sa_types.INTEGER)
        assert isinstance(items["name"]["type"], sa_types.VARCHAR)
        assert items["name"]["type"].length == 20
        assert isinstance(items["price"]["type"], sa_types.DECIMAL)
        assert (items["price"]["type"].precision, items["price"]["type"].scale) == (10, 2)
        assert isinstance(items["made"]["type"], sa_types.DATE)
        assert isinstance(items["seen"]["type"], sa_types.DATETIME)
        assert [items[n]["nullable"] for n in ("k", "name", "price")] == [False, True, False]

        users = {column["name"]: column for column in inspector.get_columns("users")}
        assert list(users) == ["id", "name", "balance", "note"]
        assert isinstance(users["id"]["type"], sa_types.BIGINT)
        assert users["id"]["autoincrement"] is True
        assert users["id"]["nullable"] is False and users["name"]["nullable"] is False
        assert users["balance"]["default"] == "0"
        assert isinstance(users["note"]["type"], sa_types.TEXT)

        # Doris has no PRIMARY KEY clause: a MySQL primary key becomes the UNIQUE KEY model,
        # which SHOW CREATE TABLE prints as Doris does, so SQLAlchemy sees no primary key.
        assert inspector.get_pk_constraint("items")["constrained_columns"] == []
        assert inspector.get_pk_constraint("users")["constrained_columns"] == []
        assert inspector.get_foreign_keys("users") == []

        table = Table("users", MetaData(), autoload_with=engine)
        assert [column.name for column in table.columns] == ["id", "name", "balance", "note"]
        assert table.c.name.type.length == 20 and table.c.name.nullable is False
        assert table.c.balance.server_default is not None

        metadata = MetaData()
        metadata.reflect(bind=engine)
        assert sorted(metadata.tables) == ["items", "users"]
        assert metadata.tables["items"].c.price.type.scale == 2
    assert unexpected_reflection_warnings(caught) == []

    with engine.connect() as connection:
        keys = connection.execute(
            text(
                "SELECT column_name, column_key FROM information_schema.columns "
                "WHERE table_schema = 'orm' AND table_name = 'users' ORDER BY ordinal_position"
            )
        ).all()
    assert keys[0] == ("id", "UNI")


def test_sqlalchemy_create_all_and_drop_all(engine):
    metadata = MetaData()
    Table(
        "accounts",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("owner", String(30), nullable=False),
        Column("amount", Numeric(12, 3)),
    )
    metadata.create_all(engine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sa_exc.SAWarning)
        columns = inspect(engine).get_columns("accounts")
    assert unexpected_reflection_warnings(caught) == []
    assert [(c["name"], str(c["type"]), c["nullable"]) for c in columns] == [
        ("id", "INTEGER", False),
        ("owner", "VARCHAR(30)", False),
        ("amount", "DECIMAL(12, 3)", True),
    ]
    metadata.create_all(engine)  # checks first, creates nothing
    metadata.drop_all(engine)
    assert "accounts" not in inspect(engine).get_table_names()


# -- mysql-connector-python -------------------------------------------------------------------


def test_mysql_connector_python_pure_with_server_side_prepared_statements(quire, root):
    connection = mysql.connector.connect(
        host="127.0.0.1",
        port=quire.query_port,
        user="root",
        password="",
        database="cli_db",
        use_pure=True,
    )
    try:
        assert connection.is_connected()
        cursor = connection.cursor()
        cursor.execute("CREATE TABLE connector_t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cursor.execute("SHOW TABLES LIKE 'connector%'")
        assert cursor.fetchall() == [("connector_t",)]
        cursor.execute("SELECT DATABASE()")
        assert cursor.fetchall() == [("cli_db",)]
        with pytest.raises(mysql.connector.Error) as excinfo:
            cursor.execute("USE nowhere")
        assert (excinfo.value.errno, excinfo.value.sqlstate) == (1049, "42000")
        connection.cmd_init_db("orm")
        cursor.execute("SELECT DATABASE()")
        assert cursor.fetchall() == [("orm",)]
        connection.ping(reconnect=False)

        prepared = connection.cursor(prepared=True)
        query = (
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = ? AND table_name LIKE ? ORDER BY table_name"
        )
        prepared.execute(query, ("cli_db", "w%"))
        assert prepared.fetchall() == [("wide",)]
        prepared.execute(query, ("cli_db", "%"))
        assert ("connector_t",) in prepared.fetchall()
        prepared.execute("SELECT ? + 1, ?, ?", (41, "héllo", None))
        assert prepared.fetchall() == [(42, "héllo", None)]
        first_names = [entry[0] for entry in prepared.description]
        prepared.execute("SELECT ? + 1, ?, ?", (1, "other", 7))
        assert prepared.fetchall() == [(2, "other", 7)]
        # Result metadata belongs to the statement, not to one execution's parameters.
        assert [entry[0] for entry in prepared.description] == first_names
        assert "héllo" not in "".join(first_names)
        prepared.close()
    finally:
        connection.close()


# -- many clients at once ---------------------------------------------------------------------

CONCURRENT_CLIENTS = 16
TABLES_PER_CLIENT = 6


def test_many_concurrent_clients_end_with_the_expected_catalog(quire, root):
    run(root, "CREATE DATABASE crowd")

    def client(number: int) -> set[str]:
        connection = quire.connect(database="crowd")
        kept = set()
        try:
            for index in range(TABLES_PER_CLIENT):
                name = f"t_{number}_{index}"
                run(connection, f"CREATE TABLE {name} (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
                assert (name,) in run(connection, "SHOW TABLES")
                if index % 2:
                    run(connection, f"DROP TABLE {name}")
                    assert (name,) not in run(connection, "SHOW TABLES")
                else:
                    kept.add(name)
        finally:
            connection.close()
        return kept

    with ThreadPoolExecutor(CONCURRENT_CLIENTS) as pool:
        expected = set().union(*pool.map(client, range(CONCURRENT_CLIENTS)))
    assert len(expected) == CONCURRENT_CLIENTS * TABLES_PER_CLIENT // 2
    fresh = quire.connect()
    assert {row[0] for row in run(fresh, "SHOW TABLES FROM crowd")} == expected
    counted = run(
        fresh,
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'crowd'",
    )
    assert counted[0][0] == len(expected)
    fresh.close()


# -- bad input --------------------------------------------------------------------------------


def assert_server_answers(quire) -> None:
    connection = quire.connect(database="cli_db")
    assert run(connection, "SELECT 1 + 1") == ((2,),)
    assert ("wide",) in run(connection, "SHOW TABLES")
    connection.close()


def test_a_megabyte_of_garbage_gets_a_syntax_error(quire, root):
    rng = random.Random(20240601)
    garbage = "".join(rng.choice("abcdefghij KLMNOP()+-*/=<>,.") for _ in range(1 << 20))
    connection = quire.connect()
    with pytest.raises(pymysql.MySQLError) as excinfo:
        run(connection, garbage)
    assert excinfo.value.args[0] == 1064
    assert len(excinfo.value.args[1]) <= 512, "an error message is at most 512 bytes"
    connection._execute_command(COM_QUERY, rng.randbytes(1 << 20))
    with pytest.raises(pymysql.MySQLError) as excinfo:
        read_result(connection)
    assert excinfo.value.args[0] in (1064, 1300)
    assert run(connection, "SELECT 2") == ((2,),)
    connection.close()
    assert_server_answers(quire)


def test_invalid_utf8_gets_1300_and_the_connection_lives_on(quire, root):
    connection = quire.connect()
    connection._execute_command(COM_QUERY, b"SELECT '\xff\xfe'")
    with pytest.raises(pymysql.MySQLError) as excinfo:
        read_result(connection)
    assert excinfo.value.args[0] == 1300
    assert "FFFE" in excinfo.value.args[1]
    connection._execute_command(COM_QUERY, "SELECT 'héllo'".encode())
    assert read_result(connection) == (("héllo",),)
    connection.close()
    assert_server_answers(quire)


def test_clients_that_vanish_mid_packet_leave_no_trace(quire, root):
    watcher = quire.connect()
    before = processlist_ids(watcher)
    # Before authenticating: half a packet header, then gone.
    with socket.create_connection(("127.0.0.1", quire.query_port), timeout=10) as raw:
        assert raw.recv(4096)  # the server's greeting
        raw.sendall(b"\x20\x00")
    # Authenticated: a header that promises 64 bytes, 3 of them, then gone.
    vanishing = quire.connect()
    vanishing._sock.sendall(struct.pack("<I", 64)[:3] + b"\x00" + bytes([COM_QUERY]) + b"SEL")
    hang_up(vanishing)
    # A client that stalls mid-packet does not hold up anyone else.
    stalled = quire.connect()
    stalled._sock.sendall(struct.pack("<I", 64)[:3] + b"\x00" + bytes([COM_QUERY]))
    assert_server_answers(quire)
    hang_up(stalled)
    wait_until(lambda: processlist_ids(watcher) == before, 10, "the vanished clients to go away")
    watcher.close()


def test_a_flood_of_malformed_sql_from_several_clients(quire, root):
    shapes = [
        "SELEC {i}",
        "CREATE TABLE (((( {i}",
        "DROP DATABASE",
        "SELECT '{i}",
        "SHOW TABLES FROM",
        "ALTER TABLE cli_db.wide ADD COLUMN",
        "GRANT ON TO {i}",
        "`unterminated {i}",
        "CREATE TABLE cli_db.bad_{i} (a INT) DISTRIBUTED BY HASH(zz) BUCKETS 1",
        "/* {i}",
    ]
    statements_per_client = 100

    def flood(number: int) -> list[int]:
        connection = quire.connect()
        codes = []
        try:
            for i in range(statements_per_client):
                sql = shapes[(number + i) % len(shapes)].format(i=i)
                try:
                    run(connection, sql)
                    codes.append(0)
                except pymysql.MySQLError as error:
                    codes.append(error.args[0])
            assert run(connection, "SELECT 3") == ((3,),)
        finally:
            connection.close()
        return codes

    with ThreadPoolExecutor(4) as pool:
        codes = [code for result in pool.map(flood, range(4)) for code in result]
    assert len(codes) == 4 * statements_per_client
    assert set(codes) <= {1064, 1072}, set(codes)
    assert codes.count(1064) >= len(codes) * 8 // 10
    assert not any(name.startswith("bad_") for (name,) in run(root, "SHOW TABLES FROM cli_db"))
    assert_server_answers(quire)


# One statement of every kind that answers with an OK packet (statement_kinds.py's registry),
# each in the mariadb CLI, which reads OK packets as strictly as libmariadb does.
OK_STATEMENTS = {
    "use": "USE ok_kinds",
    "set session": "SET @@session.wait_timeout = 100",
    "set names": "SET NAMES utf8mb4",
    "transaction": "BEGIN",
    "admin set config": 'ADMIN SET FRONTEND CONFIG ("sys_log_level" = "INFO")',
    "admin checkpoint": "ADMIN CHECKPOINT",
    "create database": "CREATE DATABASE ok_kinds_2",
    "drop database": "DROP DATABASE ok_kinds_2",
    "create table": "CREATE TABLE ok_kinds.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1",
    "create table like": "CREATE TABLE ok_kinds.t2 LIKE ok_kinds.base",
    "alter table": "ALTER TABLE ok_kinds.base ADD COLUMN c INT",
    "drop table": "DROP TABLE ok_kinds.gone",
    "create user": "CREATE USER ok_kinds_user IDENTIFIED BY 'pw'",
    "set password": "SET PASSWORD FOR ok_kinds_other = PASSWORD('pw2')",
    "alter user": "ALTER USER ok_kinds_other FAILED_LOGIN_ATTEMPTS 5",
    "grant": "GRANT SELECT_PRIV ON ok_kinds.* TO ok_kinds_other",
    "revoke": "REVOKE SELECT_PRIV ON ok_kinds.* FROM ok_kinds_other",
    "drop user": "DROP USER ok_kinds_dropped",
    "set global": "SET GLOBAL wait_timeout = 28800",
}


@pytest.fixture(scope="module")
def ok_kinds(quire, root):
    with root.cursor() as cursor:
        for statement in (
            "CREATE DATABASE ok_kinds",
            "CREATE TABLE ok_kinds.base (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1",
            "CREATE TABLE ok_kinds.gone (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1",
            "CREATE USER ok_kinds_other IDENTIFIED BY 'pw'",
            "CREATE USER ok_kinds_dropped",
        ):
            cursor.execute(statement)
    return quire


@pytest.mark.parametrize("sql", OK_STATEMENTS.values(), ids=OK_STATEMENTS.keys())
def test_every_kind_of_ok_answer_is_read_by_the_mariadb_cli(ok_kinds, sql):
    done = mariadb(ok_kinds, "-vvv", "-e", sql)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stderr, done.stderr
    assert sql.startswith("USE") or "Query OK" in done.stdout, done.stdout  # USE prints no OK


def test_admin_checkpoint_names_its_image_to_both_clients(ok_kinds, root):
    done = mariadb(ok_kinds, "-vvv", "-e", "ADMIN CHECKPOINT")
    assert done.returncode == 0, done.stderr
    assert "image." in done.stdout
    with root.cursor() as cursor:
        cursor.execute("ADMIN CHECKPOINT")
        assert b"image." in root._result.message
