from pathlib import Path

import pytest

from tests.harness import QuireProcess, local_spark

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
