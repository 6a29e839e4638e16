"""The `quire` command as a user runs it: --daemon with a pid file, stop, start-up logs."""

import os

import pymysql

from tests.harness import QuireProcess, run_quire


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
