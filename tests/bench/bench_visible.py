"""Commit-to-visible latency on a CN over the push path, beside a loopback round trip.

Run by hand from the repository root:  python tests/bench/bench_visible.py [--commits N]

Starts `quire tn` and `quire cn` as processes on free loopback ports. Each sample commits a
one-row write set on the TN (the service's commit call) and then reads the table on the CN at the
commit's timestamp: the CN answers once the push carrying the commit has arrived (it never answers
above its watermark). Reported: the commit alone, commit-to-visible (the commit plus the CN's
answer), and visible-after-ack (the read alone: what the push path adds once the client has its
ack), p50 and p99, with the heartbeat interval. The anchor is a status round trip on the CN's port
(the same client, framing and handshake-proven connection, nothing to wait for), and a bare TCP
echo on loopback.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from be.service.client import NodeClient  # noqa: E402
from be.service.format import (  # noqa: E402
    CommitRequest,
    Role,
    SnapshotRequest,
    StatusRequest,
)
from be.table_schema import ColumnSchema, TableSchema  # noqa: E402
from be.tn.write_set import TableWrite, WriteSet  # noqa: E402
from fe.cluster.helper import TOKEN_ENVIRONMENT_VARIABLE  # noqa: E402
from metadata.records import KeyModel  # noqa: E402
from tests.harness import free_port, wait_until  # noqa: E402

HEARTBEAT_MS = 5


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {p50 * 1000:7.3f} ms   p99 {p99 * 1000:7.3f} ms"


def start(role: str, folder: Path, token: str, overrides: dict) -> subprocess.Popen:
    args = [sys.executable, "-m", "fe.cli", role]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    folder.mkdir(parents=True)
    return subprocess.Popen(
        args,
        cwd=REPO,
        stdout=open(folder / "quire.out", "ab"),
        stderr=subprocess.STDOUT,
        env={**os.environ, TOKEN_ENVIRONMENT_VARIABLE: token},
    )


def echo_round_trips(count: int) -> list[float]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        connection, _ = server.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := connection.recv(64):
            connection.sendall(data)
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    client = socket.create_connection(server.getsockname())
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        client.sendall(b"x")
        client.recv(64)
        samples.append(time.perf_counter() - began)
    client.close()
    server.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    args = parser.parse_args()
    token = secrets.token_hex(16)
    logtail_port, tn_port, cn_port = free_port(), free_port(), free_port()
    common = {
        "logtail_port": logtail_port,
        "tn_logtail_address": f"127.0.0.1:{logtail_port}",
        "logtail_heartbeat_interval_millisecond": HEARTBEAT_MS,
        "tn_service_port": tn_port,
        "cn_service_port": cn_port,
    }
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        processes = []
        try:
            for role in ("tn", "cn"):
                overrides = {
                    **common,
                    "storage_root": scratch / role / "storage",
                    "node_log_dir": scratch / role / "log",
                }
                processes.append(start(role, scratch / role, token, overrides))
            tn = NodeClient("127.0.0.1", tn_port, token)
            cn = NodeClient("127.0.0.1", cn_port, token)

            def answers(client, role):
                try:
                    return client.call(StatusRequest(), timeout=1).role is role
                except Exception:
                    return False

            wait_until(lambda: answers(tn, Role.TN), 60, "the TN")
            wait_until(lambda: answers(cn, Role.CN), 60, "the CN")
            schema = TableSchema(1, 1, (ColumnSchema("k", pa.int64()),), KeyModel.DUPLICATE, ("k",))
            cn.call(SnapshotRequest(schema, 0, False, 10_000))  # the CN subscribes the table
            commit_only, visible, after_ack, status = [], [], [], []
            for key in range(args.commits):
                rows = pa.table({"k": pa.array([key], pa.int64())})
                write = WriteSet(0, (TableWrite(schema, rows),))
                began = time.perf_counter()
                ts = tn.call(CommitRequest(write)).commit_ts
                acked = time.perf_counter()
                table = cn.call(SnapshotRequest(schema, ts, False, 10_000)).table
                done = time.perf_counter()
                assert table.num_rows == key + 1, (table.num_rows, key)
                commit_only.append(acked - began)
                visible.append(done - began)
                after_ack.append(done - acked)
                began = time.perf_counter()
                cn.call(StatusRequest())
                status.append(time.perf_counter() - began)
            echo = echo_round_trips(args.commits)
            report(f"{args.commits} one-row commits, heartbeat interval {HEARTBEAT_MS} ms")
            report(f"  commit on the TN (logged, acked)      {percentiles(commit_only)}")
            report(f"  commit-to-visible on the CN            {percentiles(visible)}")
            report(f"  visible on the CN after the ack        {percentiles(after_ack)}")
            report(f"  anchor: status round trip on the CN    {percentiles(status)}")
            report(f"  anchor: TCP echo on loopback           {percentiles(echo)}")
            tn.close()
            cn.close()
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                process.wait(timeout=30)


if __name__ == "__main__":
    main()
