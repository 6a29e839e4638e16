"""TN restart time over a table of N rows: from a checkpoint, beside replaying the whole log.

Run by hand from the repository root:  python tests/bench/bench_tn_restart.py [--rows N]

A UNIQUE KEY table (BIGINT key, VARCHAR value, 4 buckets) is loaded in commits of 50,000 rows into
an embedded data plane (TN + CN) with flush_rows 200,000. Quire's side: a checkpoint is taken,
the plane is closed and opened again (the checkpoint loaded, the log after it replayed), and the
whole table is read once. The anchor: the same load with no checkpoint, whose restart replays
every commit from the log.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa  # noqa: E402

from be.client import open_embedded  # noqa: E402
from be.config import BE_KEYS, DEFAULT_BE_CONF, Config  # noqa: E402
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema  # noqa: E402
from be.tn.write_set import TableWrite, WriteSet  # noqa: E402
from metadata.records import KeyModel  # noqa: E402

BATCH = 50_000
SCHEMA = TableSchema(
    1,
    1,
    (ColumnSchema("k", pa.int64()), ColumnSchema("v", pa.string())),
    KeyModel.UNIQUE,
    ("k",),
    partitions=(PartitionSchema(10, tablet_ids=(11, 12, 13, 14)),),
    distribution_columns=("k",),
)


def restart_seconds(rows: int, checkpoint: bool) -> tuple[float, float]:
    folder = tempfile.mkdtemp(prefix="quire-bench-")
    overrides = [f"storage_root={folder}", "flush_rows=200000"]
    overrides.append(f"tn_checkpoint_interval_second={1 if checkpoint else 100000}")
    config = Config.load(BE_KEYS, [DEFAULT_BE_CONF], overrides)
    plane = open_embedded(config)
    plane.start()
    for start in range(0, rows, BATCH):
        keys = range(start, min(rows, start + BATCH))
        batch = pa.table({"k": pa.array(keys, pa.int64()), "v": [f"v{key}" for key in keys]})
        plane.commit(WriteSet(plane.read_ts(), (TableWrite(SCHEMA, inserts=batch),)))
    if checkpoint:
        last = plane.tn.last_ts
        deadline = time.monotonic() + 120
        while plane.tn.checkpoint_ts < last and time.monotonic() < deadline:
            time.sleep(0.1)
        assert plane.tn.checkpoint_ts >= last, "no checkpoint in time"
    plane.close()
    started = time.monotonic()
    plane = open_embedded(config)
    plane.start()
    restart = time.monotonic() - started
    started = time.monotonic()
    count = plane.snapshot(SCHEMA, plane.read_ts(), 60).num_rows
    scan = time.monotonic() - started
    plane.close()
    assert count == rows, (count, rows)
    return restart, scan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    restart, scan = restart_seconds(arguments.rows, checkpoint=True)
    print(f"from a checkpoint: TN restart {restart:.2f} s, first full read {scan:.2f} s")
    restart, scan = restart_seconds(arguments.rows, checkpoint=False)
    print(f"replaying the log: TN restart {restart:.2f} s, first full read {scan:.2f} s")


if __name__ == "__main__":
    main()
