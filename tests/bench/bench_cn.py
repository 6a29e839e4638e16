"""CN memory per million in-memory rows, and CN restart time over a 10M-row table.

Run by hand from the repository root:  python tests/bench/bench_cn.py [--memory-rows N]
[--restart-rows N] [--skip-memory] [--skip-restart]

A TN (`quire tn`) and a CN (`quire cn`) run as processes of their own, sharing storage_root; rows
of sysbench's shape (id BIGINT, k INT, c CHAR(120), pad CHAR(60), random digits as sysbench
writes them) are committed straight to the TN's service in commits of 50,000 rows.

Memory: flushing and checkpoints off, the CN subscribed before the load; the CN process's RSS
growth once it has every row, beside the Arrow bytes of those rows (the anchor: the raw data), and
again after a one-column read (the newest snapshot is kept for the next read).

Restart: flush every 1M rows and checkpoints every few seconds while loading; once a checkpoint
covers the load, a few more commits (logtail after the checkpoint), then kill -9 of the CN and a
new CN process: the time from its start until it answers a COUNT(*) (a one-column snapshot, the
CN's reply counted) at the TN's latest commit. Target: under 5 s.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa  # noqa: E402

from be.service.format import (  # noqa: E402
    CommitRequest,
    ReadTsRequest,
    SnapshotRequest,
)
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema  # noqa: E402
from be.tn import checkpoint  # noqa: E402
from be.tn.write_set import TableWrite, WriteSet  # noqa: E402
from metadata.records import KeyModel  # noqa: E402
from tests.harness import free_port, wait_until  # noqa: E402
from tests.test_data_processes import DataNode  # noqa: E402

BATCH = 50_000
DIGITS = bytes(ord("0") + byte % 10 for byte in range(256))  # a random byte as a digit
TARGET_SECONDS = 5.0
SCHEMA = TableSchema(
    1001,
    1,
    (
        ColumnSchema("id", pa.int64(), False),
        ColumnSchema("k", pa.int32(), False),
        ColumnSchema("c", pa.string(), False),
        ColumnSchema("pad", pa.string(), False),
    ),
    KeyModel.DUPLICATE,
    ("id",),
    partitions=(PartitionSchema(1002, tablet_ids=(1003, 1004, 1005, 1006)),),
    distribution_columns=("id",),
)
ONE_COLUMN = replace(SCHEMA, columns=SCHEMA.columns[:1])
NO_FLUSH = {
    "flush_rows": 1 << 40,
    "flush_bytes": 1 << 40,
    "flush_interval_second": 10_000_000,
    "tn_checkpoint_interval_second": 10_000_000,
}
FLUSHING = {"flush_rows": 1_000_000, "tn_checkpoint_interval_second": 5}


def digits(count: int, width: int) -> pa.Array:
    """count random strings of width decimal digits (as sysbench's c and pad, ungrouped)."""
    data = os.urandom(count * width).translate(DIGITS)
    offsets = pa.array(range(0, (count + 1) * width, width), pa.int32())
    return pa.StringArray.from_buffers(count, offsets.buffers()[1], pa.py_buffer(data))


def batch(first_id: int, count: int) -> pa.Table:
    ids = pa.array(range(first_id, first_id + count), pa.int64())
    keys = pa.array([i % 1_000_000 for i in range(first_id, first_id + count)], pa.int32())
    return pa.Table.from_arrays(
        [ids, keys, digits(count, 120), digits(count, 60)], schema=SCHEMA.arrow()
    )


class Bench:
    def __init__(self, settings: dict):
        self.folder = folder = Path(tempfile.mkdtemp(prefix="quire-bench-cn-"))
        token = secrets.token_hex(16)
        logtail_port = free_port()
        storage = folder / "tn" / "storage"
        self.storage = storage
        self.tn = DataNode(folder / "tn", "tn", token, logtail_port, **settings)
        self.cn = DataNode(folder / "cn", "cn", token, logtail_port, storage_root=storage)
        self.tn.start()
        self.cn.start()
        self.tn_client = self.tn.client()
        self.next_id = 0
        self.arrow_bytes = 0

    def close(self) -> None:
        self.tn_client.close()
        for node in (self.cn, self.tn):
            node.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def load(self, rows: int) -> int:
        ts = 0
        started = time.monotonic()
        for start in range(0, rows, BATCH):
            count = min(BATCH, rows - start)
            inserts = batch(self.next_id, count)
            self.next_id += count
            self.arrow_bytes += inserts.nbytes
            write_set = WriteSet(0, (TableWrite(SCHEMA, inserts=inserts),))
            ts = self.tn_client.call(CommitRequest(write_set), timeout=120).commit_ts
        seconds = time.monotonic() - started
        print(f"  loaded {rows:,} rows in {seconds:.1f} s ({rows / seconds:,.0f} rows/s)")
        return ts

    def latest_ts(self) -> int:
        return self.tn_client.call(ReadTsRequest(), timeout=10).ts

    def cn_watermark(self) -> int:
        client = self.cn.client()
        try:
            return client.call(ReadTsRequest(), timeout=10).ts
        finally:
            client.close()

    def count(self, ts: int) -> int:
        client = self.cn.client()
        try:
            request = SnapshotRequest(ONE_COLUMN, ts, False, 60_000)
            return client.call(request, timeout=90).table.num_rows
        finally:
            client.close()

    def cn_rss(self) -> int:
        status = Path(f"/proc/{self.cn.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    def wait_quiet(self, quiet_seconds: float = 5, timeout: float = 300) -> None:
        """Until the TN has written no object for quiet_seconds."""
        objects = self.storage / "objects"
        deadline = time.monotonic() + timeout
        seen, since = None, time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < quiet_seconds:
            names = {path.name for path in objects.rglob("*") if path.is_file()}
            if names != seen:
                seen, since = names, time.monotonic()
            time.sleep(0.5)

    def checkpoints(self) -> list[int]:
        folder = self.storage / "objects" / checkpoint.FOLDER
        return sorted(int(path.stem) for path in folder.glob("*.ckpt")) if folder.exists() else []


def memory(rows: int) -> None:
    print(f"CN memory: {rows:,} rows in memory (no flush)")
    bench = Bench(NO_FLUSH)
    try:
        assert bench.count(bench.latest_ts()) == 0  # subscribed before the load
        time.sleep(1)
        before = bench.cn_rss()
        last = bench.load(rows)
        wait_until(lambda: bench.cn_watermark() >= last, 120, "the CN to have every row")
        time.sleep(2)
        after = bench.cn_rss()
        assert bench.count(bench.latest_ts()) == rows
        read = bench.cn_rss()
    finally:
        bench.close()
    million = 1_000_000 / rows
    print(
        f"  Arrow bytes of the rows (the anchor): {bench.arrow_bytes * million / 2**20:,.0f} MiB per 1M rows"
    )
    print(
        f"  CN RSS growth:                        {(after - before) * million / 2**20:,.0f} MiB per 1M rows "
        f"({(after - before) / bench.arrow_bytes:.2f}x)"
    )
    print(
        f"  CN RSS growth after a read:           {(read - before) * million / 2**20:,.0f} MiB per 1M rows "
        f"({(read - before) / bench.arrow_bytes:.2f}x)"
    )


def restart(rows: int) -> None:
    print(f"CN restart over {rows:,} rows (flush every 1M rows, checkpoints every 5 s)")
    bench = Bench(FLUSHING)
    try:
        assert bench.count(bench.latest_ts()) == 0
        last = bench.load(rows)
        wait_until(
            lambda: bench.checkpoints() and bench.checkpoints()[-1] >= last,
            300,
            "a checkpoint covering the load",
        )
        bench.wait_quiet()  # the TN's flushes and merges done: the CN's restart is measured alone
        tail = 3 * 1000
        for _ in range(3):
            bench.load(1000)  # logtail after the checkpoint
        total = rows + tail
        bench.cn.kill()
        started = time.monotonic()
        bench.cn.start()
        serving = time.monotonic() - started
        ts = bench.latest_ts()
        counted = bench.count(ts)
        answered = time.monotonic() - started
        assert counted == total, (counted, total)
        again = time.monotonic()
        assert bench.count(bench.latest_ts()) == total
        warm = time.monotonic() - again
        log = (bench.cn.workdir / "log" / "cn.log").read_text().splitlines()
        restored = [line for line in log if "from checkpoint" in line]
    finally:
        bench.close()
    verdict = "meets" if answered < TARGET_SECONDS else "misses"
    print(f"  new CN process serving:      {serving:.2f} s")
    print(
        f"  first COUNT(*) answered at:  {answered:.2f} s after the start "
        f"({verdict} the {TARGET_SECONDS:.0f} s target)"
    )
    print(f"  the next COUNT(*):           {warm:.2f} s")
    if restored:
        print(f"  {restored[-1].split(': ', 1)[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory-rows", type=int, default=1_000_000)
    parser.add_argument("--restart-rows", type=int, default=10_000_000)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-restart", action="store_true")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not arguments.skip_memory:
        memory(arguments.memory_rows)
    if not arguments.skip_restart:
        restart(arguments.restart_rows)


if __name__ == "__main__":
    main()
