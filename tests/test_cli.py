"""The `quire` command as a user runs it: --daemon with a pid file, stop, start-up logs, starts
refused before they touch anything."""

import fcntl
import os
import socket
from pathlib import Path

import pymysql
import pytest
from rocksdict import Options, Rdict

from tests.harness import QuireProcess, free_port, run, run_quire


def test_daemon_start_pid_file_logs_and_stop(tmp_path):
    node = QuireProcess(tmp_path)  # only for its free ports and overrides
    overrides = [arg for arg in node.args()[4:]]
    started = run_quire("up", "--daemon", *overrides)
    assert started.returncode == 0, started.stderr
    assert "started in the background" in started.stdout
    pid_file = tmp_path / "log" / "quire.pid"
    pid = int(pid_file.read_text())
    os.kill(pid, 0)  # running
    connection = pymysql.connect(host="127.0.0.1", port=node.query_port, user="root", password="")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    connection.close()
    log = (tmp_path / "log" / "fe.log").read_text()
    assert f"MySQL protocol listening on 127.0.0.1:{node.query_port}" in log
    assert f"HTTP API listening on 127.0.0.1:{node.http_port}" in log
    assert "is ready" in log
    stopped = run_quire("stop", *overrides)
    assert stopped.returncode == 0, stopped.stderr
    assert not pid_file.exists()
    assert run_quire("stop", *overrides).returncode == 1


@pytest.fixture
def node(tmp_path):
    """A node's ports and dirs, for `quire up --daemon`; stopped at the end if it still runs."""
    node = QuireProcess(tmp_path)
    yield node
    if (tmp_path / "log" / "quire.pid").exists():
        run_quire("stop", *overrides_of(node))


def overrides_of(node: QuireProcess, **changed) -> list[str]:
    settings = {**node.overrides, **changed}
    return [arg for key, value in settings.items() for arg in ("--override", f"{key}={value}")]


def test_a_second_start_beside_a_running_node_is_refused_and_leaves_it_alone(tmp_path, node):
    overrides = overrides_of(node)
    assert run_quire("up", "--daemon", *overrides).returncode == 0
    pid_file = tmp_path / "log" / "quire.pid"
    pid = pid_file.read_text()
    other_ports = dict(query_port=free_port(), http_port=free_port(), edit_log_port=free_port())
    attempts = {
        "same meta_dir": ("up", "--daemon", *overrides_of(node, **other_ports)),
        "same ports": ("up", "--daemon", *overrides),
        # The README's second FE, whose overrides do not separate it from the first:
        "same log_dir": (
            "fe",
            *overrides_of(node, query_port=free_port(), meta_dir=tmp_path / "meta2"),
        ),
        "same log_dir, own ports": (
            "fe",
            *overrides_of(node, **other_ports, meta_dir=tmp_path / "meta3"),
        ),
    }
    for what, args in attempts.items():
        refused = run_quire(*args)
        assert refused.returncode == 1, (what, refused.stdout, refused.stderr)
        assert "started" not in refused.stdout, what
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot start" in lines[0], (what, refused.stderr)
        assert pid_file.read_text() == pid, what
    assert not (tmp_path / "meta2").exists() and not (tmp_path / "meta3").exists()
    with node.connect() as connection:
        assert run(connection, "SELECT 1") == ((1,),)
    stopped = run_quire("stop", *overrides)
    assert stopped.returncode == 0, stopped.stderr
    assert not pid_file.exists()


def test_a_clean_stop_reports_no_leaked_objects(tmp_path, node):
    overrides = overrides_of(node)
    assert run_quire("up", "--daemon", *overrides).returncode == 0
    with node.connect() as connection:  # DuckDB at work before the stop
        assert run(connection, "SELECT COUNT(*) FROM information_schema.schemata")[0][0] >= 1
    assert run_quire("stop", *overrides).returncode == 0
    assert "Quire FE stopped" in node.log_file.read_text()
    for output in (tmp_path / "log" / "quire.out", node.log_file):
        assert "leaked" not in output.read_text(), output.read_text()[-2000:]


def hold_port(sockets: list[socket.socket], port: int) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()
    sockets.append(listener)


def hold_meta_dir_lock(meta_dir: Path) -> int:
    meta_dir.mkdir()
    descriptor = os.open(meta_dir / "quire.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    return descriptor


@pytest.mark.parametrize(
    "fault, said",
    [
        ("query_port", "query_port"),
        ("http_port", "http_port"),
        ("edit_log_port", "edit_log_port"),
        ("webserver_port", "webserver_port"),
        ("lock", "meta_dir"),
        ("priority_networks", "priority_networks"),
    ],
)
@pytest.mark.parametrize("daemon", [False, True])
def test_a_failed_start_says_why_in_one_line_and_leaves_no_meta_dir(
    tmp_path, node, fault, said, daemon
):
    held: list[socket.socket] = []
    changed = {}
    lock = None
    if fault.endswith("_port"):
        hold_port(held, node.overrides[fault])
    elif fault == "lock":
        lock = hold_meta_dir_lock(node.meta_dir)
    else:
        changed[fault] = "not-a-network"
    try:
        failed = run_quire("up", *(["--daemon"] if daemon else []), *overrides_of(node, **changed))
    finally:
        for listener in held:
            listener.close()
        if lock is not None:
            os.close(lock)
    assert failed.returncode == 1
    assert "started" not in failed.stdout
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1, failed.stderr
    assert "cannot start" in lines[0] and said in lines[0]
    assert "Traceback" not in (tmp_path / "log" / "fe.log").read_text()
    if fault == "lock":
        assert sorted(p.name for p in node.meta_dir.iterdir()) == ["quire.lock"]
    else:
        assert not node.meta_dir.exists()


def test_a_checkpoint_with_nothing_new_answers_with_the_existing_image(fresh_quire):
    node = fresh_quire.start()
    with node.connect() as connection:
        run(connection, "CREATE DATABASE checkpointed")
        run(connection, "ADMIN CHECKPOINT")
        images = sorted(p.name for p in (node.meta_dir / "image").glob("image.*"))
        written = node.log_file.read_text().count("checkpoint image.")
        run(connection, "ADMIN CHECKPOINT")
        assert sorted(p.name for p in (node.meta_dir / "image").glob("image.*")) == images
        assert node.log_file.read_text().count("checkpoint image.") == written


def test_a_journal_held_by_another_process_is_one_line(tmp_path, node):
    overrides = overrides_of(node)
    assert run_quire("up", "--daemon", *overrides).returncode == 0
    assert run_quire("stop", *overrides).returncode == 0
    held = Rdict(str(node.meta_dir / "journal"), Options(raw_mode=True))  # RocksDB's LOCK
    try:
        failed = run_quire("up", *overrides)
    finally:
        held.close()
    assert failed.returncode == 1
    errors = [line for line in failed.stderr.splitlines() if " INFO " not in line]
    assert len(errors) == 1 and "cannot open the journal" in errors[0], failed.stderr
    assert "Traceback" not in node.log_file.read_text()
    assert (node.meta_dir / "image" / "VERSION").exists()  # not made by this start: kept
