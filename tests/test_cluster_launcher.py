"""`quire cluster up | status | down`: a local cluster of real FE processes started, inspected,
stopped and restarted from its own files."""

import json
import os
import signal
import subprocess
import time

import pymysql
import pytest

from fe.cluster.launcher import process_alive
from tests.harness import REPO, run_quire, wait_until


def recorded_nodes(directory):
    return json.loads((directory / "cluster.json").read_text())["nodes"]


def databases(node) -> set[str]:
    connection = pymysql.connect(
        host="127.0.0.1", port=node["query_port"], user="root", password="", autocommit=True
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW DATABASES")
            return {row[0] for row in cursor.fetchall()}
    finally:
        connection.close()


def visible_everywhere(directory, database):
    def check():
        try:
            return all(database in databases(node) for node in recorded_nodes(directory))
        except pymysql.MySQLError:
            return False

    return check


@pytest.fixture
def cluster_dir(tmp_path):
    directory = tmp_path / "cluster"
    yield directory
    if (directory / "cluster.json").exists():
        run_quire("cluster", "down", "--dir", str(directory))
        for node in recorded_nodes(directory):  # whatever down could not stop
            if process_alive(node["pid"]):
                os.kill(node["pid"], signal.SIGKILL)


def test_up_status_down_and_up_again_from_the_nodes_own_files(cluster_dir):
    directory = str(cluster_dir)
    started = run_quire("cluster", "up", "--followers", "3", "--observers", "1", "--dir", directory)
    assert started.returncode == 0, started.stderr
    nodes = recorded_nodes(cluster_dir)
    assert [(n["name"], n["role"]) for n in nodes] == [
        ("fe1", "FOLLOWER"),
        ("fe2", "FOLLOWER"),
        ("fe3", "FOLLOWER"),
        ("fe4", "OBSERVER"),
    ]
    for node in nodes:
        assert f"mysql -h 127.0.0.1 -P {node['query_port']} -u root" in started.stdout
    assert "fe1 FOLLOWER" in next(line for line in started.stdout.splitlines() if "leader" in line)

    lines = run_quire("cluster", "status", "--dir", directory).stdout.splitlines()
    assert len(lines) == 4 and all(" alive " in line for line in lines)
    assert sum(" leader yes " in line for line in lines) == 1
    assert all("journal_id ?" not in line for line in lines)

    again = run_quire("cluster", "up", "--dir", directory)
    assert again.returncode != 0 and "already running" in again.stderr

    observer = nodes[3]
    connection = pymysql.connect(
        host="127.0.0.1", port=observer["query_port"], user="root", autocommit=True
    )
    with connection.cursor() as cursor:
        cursor.execute("CREATE DATABASE launched")  # forwarded to the leader
    connection.close()
    wait_until(visible_everywhere(cluster_dir, "launched"), 30, "the database on every node")

    stopped = run_quire("cluster", "down", "--dir", directory)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.count("stopped") == 4
    assert not any(process_alive(node["pid"]) for node in nodes)
    began = time.monotonic()
    lines = run_quire("cluster", "status", "--dir", directory).stdout.splitlines()
    assert time.monotonic() - began < 5
    assert len(lines) == 4 and all(" DOWN " in line for line in lines)

    restarted = run_quire("cluster", "up", "--dir", directory)
    assert restarted.returncode == 0, restarted.stderr
    renewed = recorded_nodes(cluster_dir)
    ports = ("query_port", "http_port", "edit_log_port")
    assert [[n[p] for p in ports] for n in renewed] == [[n[p] for p in ports] for n in nodes]
    assert all(process_alive(node["pid"]) for node in renewed)
    wait_until(visible_everywhere(cluster_dir, "launched"), 30, "the database after the restart")

    assert run_quire("cluster", "down", "--dir", directory).returncode == 0
    assert not any(process_alive(node["pid"]) for node in renewed)


@pytest.mark.parametrize("action", ["status", "down"])
def test_status_and_down_without_a_cluster_say_so(tmp_path, action):
    answer = run_quire("cluster", action, "--dir", str(tmp_path / "none"))
    assert answer.returncode == 1
    assert answer.stderr.strip() == (
        f"quire cluster {action}: no local cluster here ({tmp_path / 'none' / 'cluster.json'} does not exist): "
        "start one with `quire cluster up`"
    )


def test_the_cluster_folder_is_ignored_by_git():
    ignored = subprocess.run(
        ["git", "check-ignore", "--quiet", "cluster/cluster.json"], cwd=REPO, check=False
    )
    assert ignored.returncode == 0
