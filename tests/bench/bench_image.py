"""Image write and load at Doris scale: 10,000 tables, 1,000,000 tablets.

Builds the catalog through `Catalog.apply` (10 partitions x 10 buckets per table, a handful of
columns), writes its image, then loads it in a fresh Python process and reports that process's
load time and peak RSS. Targets: load in at most 10 s within 1 GB. Anchor for the last line:
Doris's published figure, about 2 GB of FE memory for 2,500 tables / 1 million tablets.

    python tests/bench/bench_image.py [--tables 10000] [--partitions 10] [--buckets 10]
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from image.images import ImageStore, load_image  # noqa: E402
from metadata.catalog import INITIAL_NEXT_ID, Catalog  # noqa: E402
from metadata.ops import CreateDatabase, CreateTable  # noqa: E402
from metadata.records import Column, Database, KeyModel, Partition, Table  # noqa: E402

logger = logging.getLogger("bench_image")

DORIS_FE_BYTES = 2 * 1024**3  # "2,500 tables and 1 million tablets ... about 2GB"
LOAD_SECONDS_TARGET = 10.0
LOAD_RSS_TARGET = 1024**3


def build_catalog(tables: int, partitions: int, buckets: int) -> Catalog:
    catalog = Catalog()
    next_id = INITIAL_NEXT_ID
    db_count = max(1, tables // 100)
    for i in range(db_count):
        catalog.apply(CreateDatabase(Database(next_id, f"db_{i}")))
        next_id += 1
    first_db = INITIAL_NEXT_ID
    columns = (
        Column("id", "BIGINT", nullable=False, is_key=True),
        Column("event_date", "DATE", nullable=False, is_key=True),
        Column("user_id", "BIGINT"),
        Column("city", "VARCHAR(64)", default="''"),
        Column("amount", "DECIMAL(12,2)", default="0", comment="order amount"),
        Column("tags", "STRING"),
    )
    for i in range(tables):
        table_id = next_id
        next_id += 1
        parts = []
        for p in range(partitions):
            parts.append(
                Partition(
                    next_id,
                    f"p2024{p + 1:02d}",
                    (f"2024-{p + 1:02d}-01",),
                    (f"2024-{p + 2:02d}-01",),
                    tablet_start=next_id + 1,
                    buckets=buckets,
                )
            )
            next_id += 1 + buckets
        catalog.apply(
            CreateTable(
                Table(
                    table_id,
                    first_db + i % db_count,
                    f"table_{i}",
                    columns,
                    key_model=KeyModel.UNIQUE,
                    key_columns=("id", "event_date"),
                    distribution_columns=("id",),
                    buckets=buckets,
                    partition_columns=("event_date",),
                    partitions=tuple(parts),
                    properties=(("replication_num", "3"), ("storage_format", "V2")),
                )
            )
        )
    return catalog


def load_in_this_process(path: str) -> None:
    """Child mode: load the image, report time, peak RSS and a check figure as JSON."""
    started = time.perf_counter()
    catalog = load_image(path)
    seconds = time.perf_counter() - started
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    report = {
        "seconds": seconds,
        "peak_rss": peak_rss,
        "tables": len(catalog.tables),
        "tablets": catalog.tablet_count(),
    }
    sys.stdout.write(json.dumps(report) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--buckets", type=int, default=10)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load_in_this_process(args.load)
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)

    started = time.perf_counter()
    catalog = build_catalog(args.tables, args.partitions, args.buckets)
    build_seconds = time.perf_counter() - started
    builder_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    with tempfile.TemporaryDirectory(prefix="quire-bench-image-") as directory:
        store = ImageStore(directory)
        started = time.perf_counter()
        snapshot = catalog.snapshot()
        snapshot_seconds = time.perf_counter() - started
        started = time.perf_counter()
        info = store.write(snapshot)
        write_seconds = time.perf_counter() - started

        child = subprocess.run(
            [sys.executable, __file__, "--load", str(info.path)],
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["tables"] == len(catalog.tables)
    assert report["tablets"] == catalog.tablet_count()

    logger.info("catalog               %d tables, %d tablets", report["tables"], report["tablets"])
    logger.info(
        "build through apply   %.2f s (builder peak RSS %.0f MiB)",
        build_seconds,
        builder_rss / 2**20,
    )
    logger.info("snapshot              %.1f ms", snapshot_seconds * 1000)
    logger.info("image write           %.2f s, %.1f MB", write_seconds, info.size / 1e6)
    logger.info(
        "image load (fresh process)  %.2f s (target <= %.0f s), peak RSS %.0f MiB (target <= %.0f MiB)",
        report["seconds"],
        LOAD_SECONDS_TARGET,
        report["peak_rss"] / 2**20,
        LOAD_RSS_TARGET / 2**20,
    )
    logger.info(
        "ratio of peak RSS to Doris's ~2 GB for 1M tablets: %.3f",
        report["peak_rss"] / DORIS_FE_BYTES,
    )


if __name__ == "__main__":
    main()
