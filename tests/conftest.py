import os

import pytest

from tests.harness import QuireProcess

# Every Spark session of the test run shares one JVM, started by the first: MariaDB Connector/J
# (Debian's libmariadb-java) must be on its class path from the start, whichever module starts it
# (a session's spark.jars given later does not reach java.sql.DriverManager).
MARIADB_JDBC_JAR = "/usr/share/java/mariadb-java-client.jar"
os.environ.setdefault(
    "PYSPARK_SUBMIT_ARGS",
    f"--driver-class-path {MARIADB_JDBC_JAR} --jars {MARIADB_JDBC_JAR} pyspark-shell",
)


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
