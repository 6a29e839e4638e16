"""A multi-gigabyte image sent to a joining FE without timing out (Doris issue #26003).

Run by hand from the repository root (needs curl: apt-get install curl):

    python tests/bench/bench_image_transfer.py [--gigabytes 2.5] [--comment-bytes 1000000]
                                                [--clients 4] [--dir PARENT]

1. A leader (`quire up`, edit_log_roll_num=100000000 so that no checkpoint runs by itself) is
   filled to --gigabytes of catalog by CREATE TABLE statements each carrying a COMMENT of
   --comment-bytes random base64 text (one journal entry must stay under the journal's 1 MiB
   payload limit), sent by --clients PyMySQL connections in parallel.
2. ALTER SYSTEM ADD OBSERVER, then ADMIN CHECKPOINT writes the image; its size and write time are
   taken from the image directory and the leader's fe.log.
3. The observer starts with --helper http://127.0.0.1:<leader http port> and downloads the image.
   Timed: from its process start until /api/health answers 200 (ready), and the download itself,
   from the moment its image.download file appears until its fe.log says "downloaded image" (the
   transfer, fsync and checksum verification). Its SHOW TABLES must list the leader's tables.
4. Anchor, same run, same image: curl downloads GET /image from the leader (header X-Quire-Token,
   the token from the leader's meta/image/VERSION) into the same temporary directory.

The temporary directory needs about 6x the image size free (the leader's journal, about 1.7x with
RocksDB's write-ahead log, and its image, the observer's copy, curl's copy, and some to spare); the
benchmark refuses to start with less. Memory: about 4x the image size, leader and observer
together (the leader runs with statement_cache_size=0: the statement cache would keep each 1 MB
statement too). The ratio comes last.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pymysql  # noqa: E402
import requests  # noqa: E402

from image.identity import read_version  # noqa: E402
from image.images import ImageStore, verify  # noqa: E402
from tests.harness import QuireProcess, wait_until  # noqa: E402

logger = logging.getLogger("bench_image_transfer")

HOST = "127.0.0.1"
DATABASE = "bench_image_transfer"
MAX_GIGABYTES = 64.0
MAX_CLIENTS = 32
MIN_COMMENT_BYTES = 1_000
# The journal refuses an entry over 1 MiB (JournalLimits.max_payload_bytes); the CREATE TABLE
# operation carries the comment plus a few hundred bytes of table definition.
MAX_COMMENT_BYTES = 1_000_000
# The leader's journal (measured 1.7x the image: RocksDB's write-ahead log and tables), its image,
# the observer's copy and curl's copy, and some to spare for RocksDB's compactions.
DISK_FACTOR = 6.0
# The leader's RSS is about 2x the image (catalog, journal cache), the observer's about 1.6x.
MEMORY_FACTOR = 4.0
LEADER_OVERRIDES = {
    "edit_log_roll_num": 100_000_000,  # no automatic checkpoint: ADMIN CHECKPOINT writes the image
    # The statement cache keeps up to 4096 statements by their whole text: 4096 of these 1 MB
    # statements would keep several GB alive on the leader besides the catalog.
    "statement_cache_size": 0,
}
STATEMENT_TIMEOUT = 120.0
CHECKPOINT_TIMEOUT = 3600.0
LEADER_START_TIMEOUT = 120.0
PROGRESS_SECONDS = 10.0
POLL_SECONDS = 0.02
TRANSFER_FLOOR_BYTES_PER_SECOND = 10e6  # deadlines: slower than this counts as stuck
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (.*)$")
DOWNLOADED = re.compile(
    r"downloaded image (image\.\d+) \((\d+) bytes\) from \S+?(?: in ([\d.]+) s)?$"
)
LOADED = re.compile(r"loaded (image\.\d+) \(journal id \d+, (\d+) tables\) in ([\d.]+) s")
READY = re.compile(r"Quire FE \S+ is ready")
CHECKPOINT_WRITTEN = re.compile(r"checkpoint (image\.\d+) written in ([\d.]+) s")


def gigabytes(value: float) -> str:
    return f"{value / 1e9:.2f} GB"


def rate(size: int, seconds: float) -> str:
    return f"{size / seconds / 1e6:.0f} MB/s" if seconds > 0 else "n/a"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def log_lines(path: Path) -> list[tuple[float, str]]:
    """(wall-clock time, message) for each timestamped line of an fe.log."""
    lines = []
    for line in path.read_text(errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if match:
            stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            lines.append((stamp, match.group(2)))
    return lines


def find_line(lines: list[tuple[float, str]], pattern: re.Pattern):
    """(time, match) of the last line matching pattern, or None."""
    found = None
    for stamp, message in lines:
        match = pattern.search(message)
        if match:
            found = (stamp, match)
    return found


def check_resources(parent: Path, target_bytes: float) -> None:
    free = shutil.disk_usage(parent).free
    needed = DISK_FACTOR * target_bytes
    logger.info(
        "free space in %s: %s; this run needs about %s", parent, gigabytes(free), gigabytes(needed)
    )
    if free < needed:
        raise SystemExit(
            f"not enough free space in {parent}: {gigabytes(free)} free, about "
            f"{gigabytes(needed)} needed ({DISK_FACTOR:.0f}x the {gigabytes(target_bytes)} image: "
            "the leader's journal and image, the observer's copy and curl's copy). Free some "
            "space, pass --dir on a larger disk, or lower --gigabytes."
        )
    memory = available_memory()
    if memory is not None and memory < MEMORY_FACTOR * target_bytes:
        logger.warning(
            "only %s of memory available; the leader and the observer each hold the whole "
            "catalog (about %s together with loading): the run may be killed for memory",
            gigabytes(memory),
            gigabytes(MEMORY_FACTOR * target_bytes),
        )


def connect(port: int, timeout: float = STATEMENT_TIMEOUT):
    return pymysql.connect(
        ssl_disabled=True,  # the anchors serve no TLS
        host=HOST,
        port=port,
        user="root",
        password="",
        autocommit=True,
        connect_timeout=30,
        read_timeout=timeout,
        write_timeout=timeout,
    )


def execute(port: int, statement: str, timeout: float = STATEMENT_TIMEOUT):
    connection = connect(port, timeout)
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
            return cursor.fetchall()
    finally:
        connection.close()


def table_count(port: int) -> int:
    return len(execute(port, f"SHOW TABLES FROM {DATABASE}"))


def random_comment(size: int) -> str:
    """size characters of base64 text: nothing the journal or a disk could compress away."""
    return base64.b64encode(os.urandom(size * 3 // 4 + 3)).decode()[:size]


class Filler:
    """CREATE TABLE db.tN (k INT) COMMENT '<comment_bytes>' for N in range(tables), from several
    connections at once."""

    def __init__(self, port: int, tables: int, comment_bytes: int):
        self.port = port
        self.tables = tables
        self.comment_bytes = comment_bytes
        self.indexes = itertools.count()
        self.lock = threading.Lock()
        self.done = 0
        self.stop = threading.Event()

    def next_index(self) -> int | None:
        with self.lock:
            index = next(self.indexes)
        return index if index < self.tables and not self.stop.is_set() else None

    def worker(self) -> None:
        connection = connect(self.port)
        try:
            with connection.cursor() as cursor:
                while (index := self.next_index()) is not None:
                    comment = random_comment(self.comment_bytes)
                    cursor.execute(f"CREATE TABLE {DATABASE}.t{index} (k INT) COMMENT '{comment}'")
                    with self.lock:
                        self.done += 1
        finally:
            connection.close()

    def run(self, clients: int, timeout: float) -> float:
        began = time.perf_counter()
        deadline = began + timeout
        with ThreadPoolExecutor(max_workers=clients, thread_name_prefix="fill") as pool:
            futures = [pool.submit(self.worker) for _ in range(clients)]
            try:
                while True:
                    finished, pending = wait(
                        futures, timeout=PROGRESS_SECONDS, return_when=FIRST_EXCEPTION
                    )
                    for future in finished:
                        future.result()  # a failed client stops the run with its error
                    if not pending:
                        break
                    elapsed = time.perf_counter() - began
                    logger.info(
                        "filling: %d of %d tables (%s) in %.0f s, %s",
                        self.done,
                        self.tables,
                        gigabytes(self.done * self.comment_bytes),
                        elapsed,
                        rate(self.done * self.comment_bytes, elapsed),
                    )
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"filling did not finish within {timeout:.0f} s")
            finally:
                self.stop.set()
        return time.perf_counter() - began


def watch_observer(observer: QuireProcess, image_bytes: int, timeout: float) -> dict:
    """Poll the starting observer until it is ready: when its image.download first appeared and
    when it reached the image's size (wall clock), and when /api/health first answered 200."""
    partial = observer.meta_dir / "image" / "image.download"
    seen = {"download_seen": None, "download_full": None, "ready": None}

    def ready() -> bool:
        if observer.process.poll() is not None:
            raise RuntimeError(
                f"the observer exited with {observer.process.returncode}:\n{observer.tail()}"
            )
        now = time.time()
        try:
            size = partial.stat().st_size
        except FileNotFoundError:
            size = None
        if size is not None and seen["download_seen"] is None:
            seen["download_seen"] = now
        if size is not None and size >= image_bytes and seen["download_full"] is None:
            seen["download_full"] = now
        try:
            answer = requests.get(f"http://{HOST}:{observer.http_port}/api/health", timeout=1)
        except requests.RequestException:
            return False
        if answer.status_code == 200:
            seen["ready"] = time.time()
            return True
        return False

    wait_until(ready, timeout, "the observer to become ready", interval=POLL_SECONDS)
    return seen


def curl_image(leader: QuireProcess, token: str, target: Path, timeout: float) -> tuple[float, str]:
    """Download the leader's newest image with curl: (seconds, curl's own summary)."""
    command = [
        "curl",
        "--silent",
        "--show-error",
        "--fail",
        "--header",
        f"X-Quire-Token: {token}",
        "--output",
        str(target),
        "--write-out",
        "HTTP %{http_code}, %{size_download} bytes in %{time_total} s",
        f"http://{HOST}:{leader.http_port}/image",
    ]
    began = time.perf_counter()
    answer = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - began
    if answer.returncode != 0:
        raise RuntimeError(f"curl failed ({answer.returncode}): {answer.stderr.strip()}")
    return seconds, answer.stdout.strip()


def run(args: argparse.Namespace, root: Path) -> dict:
    tables = math.ceil(args.gigabytes * 1e9 / args.comment_bytes)
    figures: dict = {}
    leader = QuireProcess(root / "leader", overrides=LEADER_OVERRIDES)
    observer = None
    try:
        began = time.perf_counter()
        leader.start(wait=False)
        leader.wait_ready(LEADER_START_TIMEOUT)
        logger.info("leader up in %.1f s (pid %d)", time.perf_counter() - began, leader.process.pid)
        execute(leader.query_port, f"CREATE DATABASE {DATABASE}")

        logger.info(
            "filling: %d tables with a %d-byte COMMENT each, %d clients",
            tables,
            args.comment_bytes,
            args.clients,
        )
        transfer_timeout = 600 + tables * args.comment_bytes / TRANSFER_FLOOR_BYTES_PER_SECOND
        filler = Filler(leader.query_port, tables, args.comment_bytes)
        fill_seconds = filler.run(args.clients, timeout=3600 + tables * 2)
        leader_tables = table_count(leader.query_port)
        assert leader_tables == tables, f"the leader lists {leader_tables} of {tables} tables"
        logger.info(
            "filled %d tables (%s of comments) in %.1f s, %s; leader journal on disk %s, "
            "leader RSS %s",
            tables,
            gigabytes(tables * args.comment_bytes),
            fill_seconds,
            rate(tables * args.comment_bytes, fill_seconds),
            gigabytes(folder_bytes(leader.meta_dir / "journal")),
            gigabytes(rss_bytes(leader.process.pid)),
        )

        observer = QuireProcess(root / "observer", command="fe").join_through(leader)
        execute(leader.query_port, f'ALTER SYSTEM ADD OBSERVER "{HOST}:{observer.edit_log_port}"')
        began = time.perf_counter()
        execute(leader.query_port, "ADMIN CHECKPOINT", timeout=CHECKPOINT_TIMEOUT)
        checkpoint_seconds = time.perf_counter() - began
        image = ImageStore(leader.meta_dir / "image").images()[0]
        written = find_line(log_lines(leader.log_file), CHECKPOINT_WRITTEN)
        logger.info(
            "ADMIN CHECKPOINT: %s, %d bytes (%s) in %.1f s; leader's fe.log: %s",
            image.path.name,
            image.size,
            gigabytes(image.size),
            checkpoint_seconds,
            written[1].group(0) if written else "no checkpoint line",
        )
        figures["image"] = image

        started_wall = time.time()
        observer.start(wait=False)
        seen = watch_observer(observer, image.size, transfer_timeout)
        figures["ready_seconds"] = seen["ready"] - started_wall
        lines = log_lines(observer.log_file)
        downloaded = find_line(lines, DOWNLOADED)
        assert downloaded, (
            f"no 'downloaded image' line in the observer's fe.log:\n{observer.tail()}"
        )
        downloaded_at, match = downloaded
        assert match.group(1) == image.path.name, f"the observer got {match.group(1)}"
        assert int(match.group(2)) == image.size, f"the observer got {match.group(2)} bytes"
        start = seen["download_seen"] or started_wall
        figures["download_seconds"] = downloaded_at - start
        figures["download_from"] = (
            "image.download appeared" if seen["download_seen"] else "process start"
        )
        figures["transfer_seconds"] = float(match.group(3)) if match.group(3) else None
        figures["full_seconds"] = (
            seen["download_full"] - seen["download_seen"]
            if seen["download_full"] and seen["download_seen"]
            else None
        )
        figures["since_start_seconds"] = downloaded_at - started_wall
        loaded = find_line(lines, LOADED)
        figures["load_seconds"] = float(loaded[1].group(3)) if loaded else None
        ready_line = find_line(lines, READY)
        logger.info(
            "observer: process start -> 'downloaded image' %.2f s, -> loaded %s, -> ready "
            "(its fe.log) %s, -> /api/health 200 %.2f s; observer RSS %s",
            figures["since_start_seconds"],
            f"{loaded[0] - started_wall:.2f} s (load {figures['load_seconds']:.2f} s)"
            if loaded
            else "?",
            f"{ready_line[0] - started_wall:.2f} s" if ready_line else "?",
            figures["ready_seconds"],
            gigabytes(rss_bytes(observer.process.pid)),
        )
        observer_tables = table_count(observer.query_port)
        logger.info("SHOW TABLES: observer %d, leader %d", observer_tables, leader_tables)
        assert observer_tables == leader_tables, "the observer does not serve the leader's tables"

        identity = read_version(leader.meta_dir / "image")
        assert identity is not None, "the leader has no VERSION file"
        target = root / "curl.image"
        curl_seconds, summary = curl_image(leader, identity.token, target, transfer_timeout)
        copy = verify(target)
        assert copy.size == image.size and copy.journal_id == image.journal_id, (
            f"curl got {copy.size} bytes of image {copy.journal_id}"
        )
        logger.info("curl: %s (%.2f s with its start; checksum verified)", summary, curl_seconds)
        figures["curl_seconds"] = curl_seconds
    finally:
        if observer is not None:
            observer.stop()
        leader.stop()
    return figures


def report(figures: dict) -> None:
    image = figures["image"]
    size = image.size
    logger.info("--- figures ---")
    logger.info(
        "image                       %s, %d bytes (%s)", image.path.name, size, gigabytes(size)
    )
    logger.info(
        "curl GET /image             %.2f s, %s (to a file, no fsync)",
        figures["curl_seconds"],
        rate(size, figures["curl_seconds"]),
    )
    logger.info(
        "Quire observer download     %.2f s, %s (from %s to its 'downloaded image' line: "
        "transfer, fsync, checksum)",
        figures["download_seconds"],
        rate(size, figures["download_seconds"]),
        figures["download_from"],
    )
    if figures["full_seconds"] is not None:
        logger.info(
            "  image.download full size  %.2f s after it appeared (polled every %.0f ms)",
            figures["full_seconds"],
            POLL_SECONDS * 1000,
        )
    if figures["transfer_seconds"] is not None:
        logger.info(
            "  transfer, its own log     %.2f s, %s",
            figures["transfer_seconds"],
            rate(size, figures["transfer_seconds"]),
        )
    logger.info(
        "observer ready              %.2f s after its process start (image load %s)",
        figures["ready_seconds"],
        f"{figures['load_seconds']:.2f} s" if figures["load_seconds"] is not None else "?",
    )
    logger.info(
        "ratio Quire download / curl download: %.3f",
        figures["download_seconds"] / figures["curl_seconds"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gigabytes", type=float, default=2.5, help="image size to reach, in GB (default 2.5)"
    )
    parser.add_argument(
        "--comment-bytes",
        type=int,
        default=MAX_COMMENT_BYTES,
        help=f"COMMENT size of each table (default and most {MAX_COMMENT_BYTES})",
    )
    parser.add_argument("--clients", type=int, default=4, help="parallel connections filling")
    parser.add_argument(
        "--dir", default=None, help="where the temporary directory goes (default: the system's)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    if not 0 < args.gigabytes <= MAX_GIGABYTES:
        parser.error(f"--gigabytes must be in (0, {MAX_GIGABYTES}]")
    if not MIN_COMMENT_BYTES <= args.comment_bytes <= MAX_COMMENT_BYTES:
        parser.error(f"--comment-bytes must be in [{MIN_COMMENT_BYTES}, {MAX_COMMENT_BYTES}]")
    if not 0 < args.clients <= MAX_CLIENTS:
        parser.error(f"--clients must be in [1, {MAX_CLIENTS}]")
    if shutil.which("curl") is None:
        raise SystemExit("curl is needed: apt-get install curl")
    parent = Path(args.dir or tempfile.gettempdir())
    check_resources(parent, args.gigabytes * 1e9)

    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="quire-bench-image-transfer-", dir=parent) as temporary:
        figures = run(args, Path(temporary))
    logger.info("total %.0f s", time.perf_counter() - began)
    report(figures)


if __name__ == "__main__":
    main()
