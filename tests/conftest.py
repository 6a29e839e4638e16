import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import QuireProcess, free_port, local_spark, wait_until

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def spark():
    """A local[2] Spark session with the quire data source registered, for a test module."""
    session = local_spark("quire-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    """One running `quire up` shared by a test module."""
    node = QuireProcess(tmp_path_factory.mktemp("quire")).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def root(quire):
    """A root connection to the module's quire."""
    connection = quire.connect()
    yield connection
    connection.close()


@pytest.fixture
def fresh_quire(tmp_path):
    """A `quire up` of the test's own, for tests that kill or restart it."""
    node = QuireProcess(tmp_path / "node")
    yield node
    node.stop()


@pytest.fixture
def leader(tmp_path):
    """A `quire up` of the test's own that others join."""
    node = QuireProcess(tmp_path / "leader").start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory):
    """moto's S3 server on a free loopback port, for a test module: its http:// endpoint (any
    key pair is accepted, "testing" by convention)."""
    executable = Path(sys.executable).with_name("moto_server")
    assert executable.exists(), "moto_server is missing: install the test extras (.[test])"
    port = free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("w")
    process = subprocess.Popen(
        [str(executable), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )

    def answers() -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(answers, 30, "moto_server to listen")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
