"""A full scan on a CN after many single-row UPDATEs of flushed rows, before and after the TN
compacted their tombstones.

Run by hand from the repository root:  python tests/bench/bench_tombstones.py [--rows N]
[--updates U] [--repeat R] [--min-objects M]

A TN (`quire tn`) and a CN (`quire cn`) run as processes sharing storage_root. N rows of
sysbench's shape are loaded and flushed; then U single-row UPDATEs (one commit each: the old
row's delete and the new row, on distinct keys) are committed straight to the TN's service,
flushed every few hundred rows, so that every tablet collects many tombstone objects. The TN runs
with an hour of time-travel retention, so nothing is compacted yet: the scan is timed. Then the
TN restarts with a retention of a few seconds, compacts, and the scan is timed again.

A scan is a snapshot of every column just before a one-row insert (so that the CN's kept newest
snapshot is not what is timed), once the TN is quiet; best of R.
The ratio (before / after) is printed last.
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa  # noqa: E402

from be.logtail.entries import ROW_ID  # noqa: E402
from be.service.format import CommitRequest, ReadTsRequest, SnapshotRequest  # noqa: E402
from be.tn.write_set import TableWrite, WriteSet  # noqa: E402
from tests.bench.bench_cn import SCHEMA, batch  # noqa: E402
from tests.harness import free_port, wait_until  # noqa: E402
from tests.test_data_processes import DataNode  # noqa: E402

LOAD_BATCH = 50_000
SETTINGS = {
    "flush_rows": 400,  # an update is a delete and an insert: a flush per 200 updates
    "flush_interval_second": 1,
    "tn_checkpoint_interval_second": 10_000_000,
    "merged_object_retention_second": 1,
}
KEEPING = {"time_travel_retention_second": 3600}
COMPACTING = {"time_travel_retention_second": 2, "tn_commit_timeout_second": 1}


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Bench:
    def __init__(self):
        self.folder = folder = Path(tempfile.mkdtemp(prefix="quire-bench-tombstones-"))
        token = secrets.token_hex(16)
        logtail_port = free_port()
        self.storage = folder / "tn" / "storage"
        self.tn = DataNode(folder / "tn", "tn", token, logtail_port, **SETTINGS, **KEEPING)
        self.cn = DataNode(folder / "cn", "cn", token, logtail_port, storage_root=self.storage)
        self.tn.start()
        self.cn.start()
        self.client = self.tn.client()
        self.next_id = 0

    def close(self) -> None:
        self.client.close()
        for node in (self.cn, self.tn):
            node.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def commit(self, write_set: WriteSet) -> int:
        return self.client.call(CommitRequest(write_set), timeout=60).commit_ts

    def insert(self, count: int) -> int:
        rows = batch(self.next_id, count)
        self.next_id += count
        return self.commit(WriteSet(0, (TableWrite(SCHEMA, inserts=rows),)))

    def snapshot(self, ts: int, row_ids: bool = False) -> pa.Table:
        client = self.cn.client()
        try:
            return client.call(SnapshotRequest(SCHEMA, ts, row_ids, 60_000), timeout=90).table
        finally:
            client.close()

    def files(self, kind: str) -> int:
        return sum(1 for _ in (self.storage / "objects").rglob(f"*.{kind}.parquet"))

    def update(self, updates: int, rows: int) -> None:
        ts = self.client.call(ReadTsRequest(), timeout=10).ts
        wait_until(lambda: self.snapshot(ts).num_rows == rows, 120, "the CN to have the load")
        seen = self.snapshot(ts, row_ids=True)
        chosen = random.Random(7).sample(range(seen.num_rows), updates)
        row_ids, keys = seen.column(ROW_ID), seen.column("id")
        started = time.monotonic()
        for index in chosen:
            old = seen.slice(index, 1)
            new = old.drop_columns([ROW_ID]).set_column(
                1, SCHEMA.arrow().field("k"), pa.array([index], pa.int32())
            )
            deletes = pa.table({ROW_ID: row_ids.take([index]), "id": keys.take([index])})
            self.commit(WriteSet(ts, (TableWrite(SCHEMA, inserts=new, deletes=deletes),)))
        seconds = time.monotonic() - started
        report(f"  {updates:,} single-row UPDATEs in {seconds:.1f} s ({updates / seconds:,.0f}/s)")

    def scan(self, repeat: int) -> float:
        """Seconds of the fastest full scan, at the timestamp just before a one-row insert: not
        the newest state, which the CN keeps once read (every update keeps the row count, so
        the table holds next_id - 1 rows then)."""
        ts = self.insert(1)
        self.wait_quiet()
        best = float("inf")
        for _ in range(repeat):
            started = time.monotonic()
            table = self.snapshot(ts - 1)
            best = min(best, time.monotonic() - started)
            assert table.num_rows == self.next_id - 1, (table.num_rows, self.next_id)
        return best

    def wait_quiet(self, quiet_seconds: float = 3, timeout: float = 300) -> None:
        """Until the TN has written and deleted no object for quiet_seconds."""
        objects = self.storage / "objects"
        deadline = time.monotonic() + timeout
        seen, since = None, time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < quiet_seconds:
            names = {path.name for path in objects.rglob("*.parquet")}
            if names != seen:
                seen, since = names, time.monotonic()
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--min-objects", type=int, default=16, help="tombstone_compaction_min_objects"
    )
    args = parser.parse_args()
    assert args.updates <= args.rows
    bench = Bench()
    try:
        for start in range(0, args.rows, LOAD_BATCH):
            bench.insert(min(LOAD_BATCH, args.rows - start))
        wait_until(lambda: bench.files("data") >= 4, 120, "the load flushed")
        bench.update(args.updates, args.rows)
        before = bench.scan(args.repeat)
        report(
            f"  before compaction: {bench.files('tomb')} tombstone objects, "
            f"{bench.files('data')} data objects; full scan {before * 1000:.1f} ms"
        )
        bench.tn.stop()
        bench.tn.overrides.update(COMPACTING, tombstone_compaction_min_objects=args.min_objects)
        bench.tn.start()
        bench.client = bench.tn.client()
        wait_until(lambda: bench.files("tomb") <= 4, 300, "the tombstones compacted")
        after = bench.scan(args.repeat)
        report(
            f"  after compaction:  {bench.files('tomb')} tombstone objects, "
            f"{bench.files('data')} data objects; full scan {after * 1000:.1f} ms"
        )
        report(f"full scan before / after compaction: {before / after:.2f}x")
    finally:
        bench.close()


if __name__ == "__main__":
    main()
