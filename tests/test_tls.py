"""TLS on the MySQL port: offered with a self-signed certificate made at first start, chosen by the
client, required once an admin sets require_secure_transport."""

import hashlib
import socket
import ssl
import struct

import mysql.connector
import pymysql
import pytest

from tests.harness import QuireProcess, mariadb


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("tls")).start()
    yield node
    node.stop()


def certificate(node) -> str:
    return str(node.meta_dir / "tls" / "server.crt")


def tls_connect(node, **kwargs):
    return node.connect(ssl_ca=certificate(node), ssl_verify_identity=True, **kwargs)


def one(connection, sql):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


def mariadb_cli(node, sql, *options):
    return mariadb(node, "-N", "-B", *options, "-e", sql)


def test_pymysql_prefers_tls_when_offered(node):
    with node.connect() as connection:  # PyMySQL's default, as MySQL's clients: PREFERRED
        assert one(connection, "SELECT @@ssl_cipher")


def test_pymysql_verifies_the_self_signed_certificate_and_gets_an_encrypted_session(node):
    key = node.meta_dir / "tls" / "server.key"
    assert key.stat().st_mode & 0o777 == 0o600
    with tls_connect(node) as connection:
        assert one(connection, "SELECT @@ssl_cipher")
        assert one(connection, "SELECT @@have_ssl") == "YES"
        assert one(connection, "SELECT COUNT(*) FROM information_schema.schemata") >= 1
    with node.connect(ssl_disabled=True) as plain:
        assert one(plain, "SELECT @@ssl_cipher") == ""


def test_mariadb_cli_with_and_without_tls(node):
    encrypted = mariadb_cli(
        node,
        "SELECT @@ssl_cipher",
        "--ssl",
        f"--ssl-ca={certificate(node)}",
        "--ssl-verify-server-cert",
    )
    assert encrypted.returncode == 0, encrypted.stderr
    assert encrypted.stdout.strip()
    plain = mariadb_cli(node, "SELECT 1", "--skip-ssl")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "1"


def test_mysql_connector_uses_tls_when_offered(node):
    connection = mysql.connector.connect(
        host="127.0.0.1", port=node.query_port, user="root", password="", ssl_ca=certificate(node)
    )
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT @@ssl_cipher")
        assert cursor.fetchone()[0]
    finally:
        connection.close()


def test_require_secure_transport_refuses_plain_connections(node):
    with node.connect() as root:
        with root.cursor() as cursor:
            cursor.execute("CREATE USER IF NOT EXISTS plain_user IDENTIFIED BY 'pw'")
    with tls_connect(node) as root:
        with root.cursor() as cursor:
            cursor.execute("SET GLOBAL require_secure_transport = ON")
        try:
            with pytest.raises(pymysql.err.OperationalError) as refused:
                node.connect(user="plain_user", password="pw", ssl_disabled=True)
            assert refused.value.args[0] == 3159
            assert "insecure transport" in refused.value.args[1]
            cli = mariadb_cli(node, "SELECT 1", "--skip-ssl")
            assert cli.returncode != 0
            assert "ERROR 3159 (HY000)" in cli.stderr
            with tls_connect(node, user="plain_user", password="pw") as user:
                assert one(user, "SELECT 1") == 1
        finally:
            with root.cursor() as cursor:
                cursor.execute("SET GLOBAL require_secure_transport = OFF")
    with node.connect(ssl_disabled=True) as plain:
        assert one(plain, "SELECT 1") == 1


def test_a_broken_tls_handshake_is_dropped_and_the_server_goes_on(node):
    with socket.create_connection(("127.0.0.1", node.query_port), timeout=10) as sock:
        sock.recv(4096)  # the server's greeting
        capabilities = 0x00000200 | 0x00000800 | 0x00008000  # PROTOCOL_41 | SSL | SECURE_CONN
        request = struct.pack("<IIB23x", capabilities, 1 << 24, 45)
        sock.sendall(struct.pack("<I", len(request) | 1 << 24) + request)
        sock.sendall(b"this is not a TLS client hello" * 10)
        while sock.recv(4096):  # whatever it answers, the server ends the connection
            pass
    with node.connect() as connection:
        assert one(connection, "SELECT 1") == 1


def test_the_certificate_survives_a_restart_and_operator_files_are_used(node, tmp_path):
    before = hashlib.sha256(open(certificate(node), "rb").read()).hexdigest()
    node.restart()
    assert hashlib.sha256(open(certificate(node), "rb").read()).hexdigest() == before
    with tls_connect(node) as connection:
        assert one(connection, "SELECT @@ssl_cipher")

    other = QuireProcess(
        tmp_path / "other",
        overrides={
            "mysql_ssl_cert_file": certificate(node),
            "mysql_ssl_key_file": node.meta_dir / "tls" / "server.key",
        },
    ).start()
    try:
        assert not (other.meta_dir / "tls").exists()
        with other.connect(ssl_ca=certificate(node), ssl_verify_identity=True) as connection:
            assert one(connection, "SELECT @@ssl_cipher")
    finally:
        other.stop()

    half = QuireProcess(tmp_path / "half", overrides={"mysql_ssl_cert_file": certificate(node)})
    half.start(wait=False)
    assert half.process.wait(timeout=60) != 0
    assert "mysql_ssl_key_file" in half.tail()


def test_ssl_can_be_turned_off(tmp_path):
    node = QuireProcess(tmp_path / "plain", overrides={"enable_ssl": "false"}).start()
    try:
        with node.connect() as connection:
            assert one(connection, "SELECT @@have_ssl") == "DISABLED"
        with pytest.raises(pymysql.err.OperationalError) as refused:
            node.connect(ssl=ssl.create_default_context())  # TLS required by the client
        assert "SSL" in str(refused.value)
        with node.connect() as connection:  # preferred: falls back to plain
            assert one(connection, "SELECT @@ssl_cipher") == ""
            with pytest.raises(pymysql.err.OperationalError) as refused:
                one(connection, "SET GLOBAL require_secure_transport = ON")
            assert refused.value.args[0] == 3161
    finally:
        node.stop()
