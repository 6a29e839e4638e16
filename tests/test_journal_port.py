"""A stranger on the journal port (edit_log_port), with raw sockets: frames are bounded from their
length header, a connection that does not authenticate in time is dropped, and a message that
would run code does not, even encrypted with the cluster token."""

import os
import pickle
import socket
import struct
import threading
import time
import zlib

import pytest
from pysyncobj.encryptor import getEncryptor

from tests.harness import QuireProcess, cluster_token, execute, wait_until

HANDSHAKE_TIMEOUT_MS = 2000
DDL_BOUND_SECONDS = 2.0  # 7 s before frames were bounded; 0.0x s on an idle machine


@pytest.fixture(scope="module")
def fe(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("journal_port"),
        {"journal_handshake_timeout_ms": HANDSHAKE_TIMEOUT_MS},
    ).start()
    yield node
    node.stop()


def connect(fe) -> socket.socket:
    return socket.create_connection(("127.0.0.1", fe.edit_log_port), timeout=30)


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the FE closes the connection within the socket's timeout (read until EOF)."""
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return False
    return True


def test_a_frame_announced_at_2_gb_drops_the_connection(fe):
    with connect(fe) as sock:
        sock.sendall(struct.pack("i", 2**31 - 1) + b"x" * 1000)
        assert closed_by_peer(sock)
    wait_until(
        lambda: "announced a frame of 2147483647 bytes" in fe.log_file.read_text(),
        30,
        "the FE to log the dropped connection",
    )


def test_a_silent_connection_is_dropped_after_the_handshake_deadline(fe):
    with connect(fe) as sock:
        started = time.monotonic()
        assert closed_by_peer(sock)
        assert time.monotonic() - started >= HANDSHAKE_TIMEOUT_MS / 1000 - 0.5
    assert "no handshake within" in fe.log_file.read_text()


def test_a_flood_of_silent_connections_is_capped_and_the_node_still_commits(tmp_path):
    limit = 4
    fe = QuireProcess(
        tmp_path / "capped",
        {"journal_max_unknown_connections": limit, "journal_handshake_timeout_ms": 60000},
    ).start()
    try:
        flood = [connect(fe) for _ in range(limit)]
        try:
            wait_until(
                lambda: _refused_at_once(fe), 60, "a connection past the cap to be dropped at once"
            )
            execute(fe, "CREATE DATABASE during_the_flood")
        finally:
            for sock in flood:
                sock.close()
        assert "others have not named themselves yet" in fe.log_file.read_text()
        assert ("during_the_flood",) in execute(fe, "SHOW DATABASES")
    finally:
        fe.stop()


def _refused_at_once(fe) -> bool:
    with connect(fe) as sock:
        sock.settimeout(1.0)  # well under the handshake deadline
        return closed_by_peer(sock)


def test_ddl_stays_fast_while_a_stranger_streams_a_big_frame(fe):
    total, chunk = 32 << 20, b"\0" * (64 << 10)
    stop, dropped = threading.Event(), []

    def stream():
        """31+ MB over several seconds, reconnecting whenever the FE hangs up."""
        sent = 0
        while sent < total and not stop.is_set():
            try:
                with connect(fe) as sock:
                    sock.sendall(struct.pack("i", total))
                    while sent < total and not stop.is_set():
                        sock.sendall(chunk)
                        sent += len(chunk)
                        time.sleep(0.01)
            except OSError:
                dropped.append(sent)

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    try:
        durations = []
        for number in range(10):
            started = time.monotonic()
            execute(fe, f"CREATE DATABASE during_stream_{number}")
            durations.append(time.monotonic() - started)
            time.sleep(0.2)
        assert max(durations) < DDL_BOUND_SECONDS, durations
    finally:
        stop.set()
        streamer.join(timeout=60)
    assert dropped, "the FE read the whole oversized frame"
    databases = {row[0] for row in execute(fe, "SHOW DATABASES")}
    assert {f"during_stream_{number}" for number in range(10)} <= databases


class RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_message_that_would_run_code_does_not_even_with_the_token(fe, tmp_path):
    marker = tmp_path / "ran"
    data = zlib.compress(pickle.dumps(RunsCode(marker)), 3)
    data = getEncryptor(cluster_token(fe)).encrypt_at_time(data, int(time.monotonic()))
    with connect(fe) as sock:
        sock.sendall(struct.pack("i", len(data)) + data)
        closed = closed_by_peer(sock)
    assert not marker.exists(), "a journal message ran a command on the FE host"
    assert closed
    execute(fe, "CREATE DATABASE after_the_payload")
    assert ("after_the_payload",) in execute(fe, "SHOW DATABASES")


def test_frame_limits_too_small_for_the_journal_are_refused_at_start(tmp_path):
    node = QuireProcess(tmp_path / "small", {"journal_max_frame_bytes": 1 << 20})
    node.start(wait=False)
    assert node.process.wait(timeout=60) != 0
    assert "max_frame_bytes >= 2 * (append_entries_batch_bytes" in node.log_file.read_text()
