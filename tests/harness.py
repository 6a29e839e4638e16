"""Start real Quire processes on free loopback ports for the tests and benchmarks."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import requests

from fe.cluster.helper import TOKEN_ENVIRONMENT_VARIABLE
from image.identity import read_version

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_SECONDS = 60
CLI_TIMEOUT_SECONDS = 60


# Ports for test servers come from below the kernel's ephemeral range, where the local ends of
# client connections (and of the servers' own connections to each other) never land, so a port
# handed out here is not taken by some connection before its server binds it. None is handed
# out twice in one test run: pytest-xdist's workers each take their own share of the range.
ALL_TEST_PORTS = range(15_000, 32_000)


def _ports_of_this_worker() -> range:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    share = len(ALL_TEST_PORTS) // workers
    return ALL_TEST_PORTS[worker * share : (worker + 1) * share]


PORT_RANGE = _ports_of_this_worker()
_ports_handed_out: set[int] = set()
_port_lock = threading.Lock()
_port_picker = random.Random(os.getpid() ^ time.time_ns())


def moto_with_s3(endpoint: str) -> str:
    """Doris's `WITH S3 (...)` clause of moto's S3 server at endpoint (S3 Load, EXPORT)."""
    return (
        f'WITH S3 ("provider" = "S3", "AWS_ENDPOINT" = "{endpoint}", "AWS_REGION" = "us-east-1", '
        '"AWS_ACCESS_KEY" = "testing", "AWS_SECRET_KEY" = "testing")'
    )


def moto_filesystem(endpoint: str, bucket: str | None = None):
    """pyarrow's filesystem of moto's S3 server at endpoint (any key pair is taken), with
    bucket made in it if named."""
    import pyarrow.fs as pafs

    filesystem = pafs.S3FileSystem(
        access_key="testing",
        secret_key="testing",
        region="us-east-1",
        endpoint_override=endpoint.removeprefix("http://"),
        scheme="http",
        allow_bucket_creation=True,
    )
    if bucket is not None:
        filesystem.create_dir(bucket)
    return filesystem


def put_objects(filesystem, objects: dict[str, bytes]) -> None:
    """Each object (its path in the store, its bytes) written whole."""
    for path, data in objects.items():
        with filesystem.open_output_stream(path) as out:
            out.write(data)


def free_port() -> int:
    with _port_lock:
        for _ in range(1000):
            port = _port_picker.choice(PORT_RANGE)
            if port in _ports_handed_out:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _ports_handed_out.add(port)
            return port
    raise AssertionError("no free loopback port below the ephemeral range")


def free_address() -> str:
    """host:port of a free loopback port, as the journal names its nodes."""
    return f"127.0.0.1:{free_port()}"


def cluster_token(node: QuireProcess) -> str:
    """The token in a started node's VERSION, as `quire token` prints it."""
    return read_version(node.meta_dir / "image").token


def run(connection, sql, args=None):
    """One statement on a PyMySQL connection: its rows."""
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        return cursor.fetchall()


def error_of(connection, sql) -> tuple[int, str]:
    """The MySQL error code and message a statement fails with (it must fail)."""
    try:
        run(connection, sql)
    except pymysql.MySQLError as error:
        return error.args[0], error.args[1]
    raise AssertionError(f"{sql!r} did not fail")


def logs_in(node, user: str, password: str) -> bool:
    """Whether the user logs in (the connection is closed at once)."""
    try:
        node.connect(user, password).close()
    except pymysql.MySQLError:
        return False
    return True


def login_error(node, user: str, password: str, **kwargs) -> tuple[int, str]:
    """The MySQL error code and message a login is refused with (it must be refused)."""
    try:
        node.connect(user, password, **kwargs).close()
    except pymysql.MySQLError as error:
        return error.args[0], error.args[1]
    raise AssertionError(f"{user!r} logged in")


def mariadb(
    node, *args: str, user: str = "root", password: str = "", stdin: str | None = None
) -> subprocess.CompletedProcess:
    """The mariadb CLI run to its end against node's MySQL port, as a user runs it."""
    command = ["mariadb", "-h", "127.0.0.1", "-P", str(node.query_port), "-u", user]
    if password:
        command.append(f"-p{password}")
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS
    )


def mariadb_error(node, user: str, password: str, sql: str = "SELECT 1") -> str:
    """The last line the mariadb CLI prints on stderr for a statement (its error line with SQLSTATE)."""
    done = mariadb(node, "--batch", "-e", sql, user=user, password=password)
    return (done.stderr.strip().splitlines() or [""])[-1]


def cli_answers(node, expressions) -> list[str]:
    """Each expression's answer as the mariadb CLI prints it (a SELECT each, raw, one line)."""
    sql = "; ".join(f"SELECT {expression}" for expression in expressions)
    done = mariadb(node, "--batch", "--raw", "--skip-column-names", "-e", sql)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def assert_unknown_function(node, connection, call: str) -> None:
    """`SELECT call` answers 1305 naming the function in lower case, as Quire answers a Doris
    function given a count of arguments it does not take (PMOD(1)), to PyMySQL and the CLI."""
    message = f"FUNCTION {call.split('(')[0].lower()} does not exist"
    assert error_of(connection, f"SELECT {call}") == (1305, message)
    assert (
        mariadb_error(node, "root", "", f"SELECT {call}")
        == f"ERROR 1305 (42000) at line 1: {message}"
    )


def execute(node, *statements):
    """Statements on a new root connection to node: the last one's rows."""
    connection = node.connect()
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return cursor.fetchall()
    finally:
        connection.close()


def check_snapshot_starts_at_first_table_read(node, table: str) -> None:
    """As in MySQL: a transaction opened implicitly (autocommit off) reads at the moment it first
    reads a table; a query that names none before it (SELECT NOW()) does not fix its snapshot.
    table: an empty one-INT-column table, written to by another client in between."""
    connection = node.connect(autocommit=False)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT NOW(), UPPER('a'), 1 + 1")
            execute(node, f"INSERT INTO {table} VALUES (1)")  # another client, committed
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            assert cursor.fetchall() == ((1,),)
            execute(node, f"INSERT INTO {table} VALUES (2)")
            cursor.execute(f"SELECT COUNT(*) FROM {table}")  # the snapshot is now fixed
            assert cursor.fetchall() == ((1,),)
        connection.commit()
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            assert cursor.fetchall() == ((2,),)
    finally:
        connection.close()


def add_and_start(leader: QuireProcess, node: QuireProcess, role: str) -> None:
    """Add node to leader's cluster as a FOLLOWER or OBSERVER, then start it."""
    execute(leader, f'ALTER SYSTEM ADD {role} "127.0.0.1:{node.edit_log_port}"')
    node.start()


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def start_fails(node: QuireProcess) -> str:
    """Start node, which must exit with an error: its log."""
    node.start(wait=False)
    assert node.process.wait(timeout=60) != 0
    return node.log_file.read_text()


def run_quire(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The `quire` command run to its end, as a user runs it: its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "fe.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class RecordingStateMachine:
    """A journal's state machine that keeps what it applied; `gate` holds apply while cleared,
    a payload starting with b"fail:" fails, and seconds_per_entry slows each entry down."""

    def __init__(self, seconds_per_entry: float = 0.0):
        self.applied: list[tuple[int, bytes]] = []
        self.seconds_per_entry = seconds_per_entry
        self.gate = threading.Event()
        self.gate.set()

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        self.gate.wait(30)
        if self.seconds_per_entry:
            time.sleep(self.seconds_per_entry)
        if payload.startswith(b"fail:"):
            raise ValueError(payload.decode())
        self.applied.append((raft_index, payload))
        return raft_index


def agreed_leader(voters, timeout: float):
    """The journal node that leads, once every one of voters agrees on it."""
    found = []

    def agreed():
        statuses = [node.status() for node in voters]
        leaders = [node for node, status in zip(voters, statuses, strict=True) if status.is_leader]
        if len(leaders) == 1 and all(s.leader == leaders[0].self_address for s in statuses):
            found.append(leaders[0])
            return True
        return False

    wait_until(agreed, timeout, "the voters to agree on a leader")
    return found[0]


class QuireProcess:
    """One `quire up` process with its own meta_dir, log_dir and ports."""

    def __init__(
        self,
        workdir: Path,
        overrides: dict[str, object] | None = None,
        command: str = "up",
        extra_args: list[str] = (),
        env: dict[str, str] | None = None,
    ):
        self.workdir = Path(workdir)
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.command = command
        self.query_port = free_port()
        self.http_port = free_port()
        self.edit_log_port = free_port()
        self.overrides = {
            "query_port": self.query_port,
            "http_port": self.http_port,
            "edit_log_port": self.edit_log_port,
            "meta_dir": self.workdir / "meta",
            "log_dir": self.workdir / "log",
            **(
                {"storage_root": self.workdir / "storage", "webserver_port": free_port()}
                if command == "up"
                else {}
            ),
            **(overrides or {}),
        }
        self.process: subprocess.Popen | None = None

    @property
    def meta_dir(self) -> Path:
        return Path(self.overrides["meta_dir"])

    @property
    def log_file(self) -> Path:
        return Path(self.overrides["log_dir"]) / "fe.log"

    def join_through(self, helper: QuireProcess) -> QuireProcess:
        """Start with --helper on helper's HTTP port, given the cluster token as an operator would."""
        self.extra_args = ["--helper", f"http://127.0.0.1:{helper.http_port}"]
        self.env[TOKEN_ENVIRONMENT_VARIABLE] = cluster_token(helper)
        return self

    def args(self) -> list[str]:
        args = [sys.executable, "-m", "fe.cli", self.command]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        return args + self.extra_args

    def start(self, wait: bool = True) -> QuireProcess:
        assert self.process is None or self.process.poll() is not None
        self.output = open(self.workdir / "quire.out", "ab")
        self.process = subprocess.Popen(
            self.args(),
            cwd=REPO,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"},
        )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        def ready():
            if self.process.poll() is not None:
                raise AssertionError(f"quire exited with {self.process.returncode}:\n{self.tail()}")
            try:
                return (
                    requests.get(
                        f"http://127.0.0.1:{self.http_port}/api/health", timeout=1
                    ).status_code
                    == 200
                )
            except requests.RequestException:
                return False

        wait_until(ready, timeout, "quire to become ready")

    def tail(self, lines: int = 40) -> str:
        text = ""
        for path in (self.workdir / "quire.out", self.log_file):
            if path.exists():
                text += (
                    f"--- {path.name}\n"
                    + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                    + "\n"
                )
        return text

    def connect(
        self, user: str = "root", password: str = "", database: str | None = None, **kwargs
    ):
        kwargs.setdefault("autocommit", True)
        return pymysql.connect(
            host="127.0.0.1",
            port=self.query_port,
            user=user,
            password=password,
            database=database,
            **kwargs,
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def stop(self) -> int:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode if self.process else 0

    def restart(self) -> QuireProcess:
        self.stop()
        return self.start()


# Words of Quire's insides that no error message a client sees may hold.
INTERNALS = ("sqlglot", "traceback", "int128", "duckdb", "<class", "internal error")


def assert_mysql_error(code: int, message: str, what) -> None:
    """A MySQL error code (or one of Doris's own, from 5000), not Internal error, and none of
    Quire's insides in the message."""
    assert 1000 <= code < 6000 or code in range(20000, 30000), (code, message, what)
    assert not (code == 1105 and message.startswith("Internal error")), (message, what)
    lowered = message.lower()
    assert not any(word in lowered for word in INTERNALS), (message, what)


MARIADB_JDBC_JAR = "/usr/share/java/mariadb-java-client.jar"  # Debian's libmariadb-java


def local_spark(app: str, driver_memory: str = "1g", **conf: str):
    """A local[2] Spark session (shuffles in 2 partitions, no UI, Python workers over unix
    sockets) with the quire data source registered and MariaDB Connector/J on the driver's class
    path; conf: more settings. Spark's workers run this interpreter and import this checkout."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    # One JVM serves every session of a process, started by the first: Connector/J must be on
    # its class path from the start (spark.jars given later does not reach DriverManager).
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        f"--driver-class-path {MARIADB_JDBC_JAR} --jars {MARIADB_JDBC_JAR} pyspark-shell",
    )
    from pyspark.sql import SparkSession

    import be.spark

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", driver_memory)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    be.spark.register(session)
    return session
