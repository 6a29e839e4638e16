import os
import sys
from pathlib import Path

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
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def spark():
    """A local[2] Spark session with the quire data source registered, for a test module."""
    from pyspark.sql import SparkSession

    import be.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    session = (
        SparkSession.builder.master("local[2]")
        .appName("quire-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    be.spark.register(session)
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
