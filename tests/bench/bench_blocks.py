"""Rows per second writing and scanning one tablet's rows as an object, beside plain pyarrow.

Run by hand from the repository root:  python tests/bench/bench_blocks.py [--rows N] [--repeat R]

The table has the hidden ROW_ID and COMMIT_TS and eight user columns of the usual types. Quire's
side is write_blocks (sort check, 8192-row row groups, statistics, page checksums, zstd, temporary
file + fsync + link) and read_blocks (size and footer checks, checksum verification). The anchor
is pyarrow writing the same table as a plain Parquet file with its defaults (snappy, one big row
group, no fsync) and reading it back with pq.read_table. Best of R runs each.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from be.logtail.entries import COMMIT_TS, ROW_ID  # noqa: E402
from be.storage.blocks import prune, read_blocks, write_blocks  # noqa: E402
from be.storage.limits import StorageLimits  # noqa: E402
from be.storage.names import Tablet  # noqa: E402
from be.storage.objects import ObjectStore  # noqa: E402
from metadata.types import parse_column_type  # noqa: E402


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def table_of(rows: int) -> pa.Table:
    ids = pa.array(range(1, rows + 1), pa.int64())
    epoch = datetime.datetime(2024, 1, 1)
    return pa.table(
        {
            ROW_ID: ids,
            COMMIT_TS: pa.array([1 + i // 1000 for i in range(rows)], pa.int64()),
            "k": pa.array([i * 7 % 1_000_003 for i in range(rows)], pa.int32()),
            "user_id": ids,
            "amount": pa.array(
                [Decimal(i % 100_000) / 100 for i in range(rows)],
                parse_column_type("DECIMAL(12,2)").arrow,
            ),
            "score": pa.array([i * 0.5 for i in range(rows)], pa.float64()),
            "day": pa.array(
                [datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 365) for i in range(rows)]
            ),
            "at": pa.array(
                [epoch + datetime.timedelta(seconds=i) for i in range(rows)], pa.timestamp("us")
            ),
            "name": pa.array([f"customer#{i % 50_000:09d}" for i in range(rows)], pa.string()),
            "flag": pa.array([i % 3 == 0 for i in range(rows)], pa.bool_()),
        }
    )


def best(repeat: int, action) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    rows = arguments.rows
    table = table_of(rows)
    flush_ts = int(table.column(COMMIT_TS)[-1].as_py())
    with tempfile.TemporaryDirectory() as folder:
        store = ObjectStore.open_root(folder, limits=StorageLimits(max_object_rows=8192 * 2048))
        metas = []
        seq = iter(range(1_000))

        def ours_write():
            metas.append(
                write_blocks(
                    store,
                    Tablet(1, 1, 1),
                    table,
                    schema_version=1,
                    flush_ts=flush_ts,
                    seq=next(seq),
                )
            )

        plain = Path(folder) / "plain.parquet"
        write_ours = best(arguments.repeat, ours_write)
        write_plain = best(arguments.repeat, lambda: pq.write_table(table, plain))
        meta = metas[-1]
        scan_ours = best(arguments.repeat, lambda: read_blocks(store, meta))
        scan_plain = best(arguments.repeat, lambda: pq.read_table(plain))
        chosen = prune(meta, {"user_id": (rows // 2, rows // 2 + 10)})
        point = best(
            arguments.repeat, lambda: read_blocks(store, meta, ["user_id", "name"], chosen)
        )
        one_column = best(arguments.repeat, lambda: read_blocks(store, meta, ["score"]))
        report(
            f"{rows} rows, {len(meta.blocks)} blocks; object {meta.bytes / 1e6:.1f} MB, "
            f"plain Parquet {plain.stat().st_size / 1e6:.1f} MB"
        )
        report(
            f"write: quire {rows / write_ours:,.0f} rows/s, pyarrow plain {rows / write_plain:,.0f} rows/s "
            f"({write_plain / write_ours:.2f}x)"
        )
        report(
            f"scan:  quire {rows / scan_ours:,.0f} rows/s, pyarrow plain {rows / scan_plain:,.0f} rows/s "
            f"({scan_plain / scan_ours:.2f}x)"
        )
        report(
            f"one column scan: {rows / one_column:,.0f} rows/s; pruned point read "
            f"({len(chosen)} block, 2 columns): {point * 1000:.2f} ms"
        )


if __name__ == "__main__":
    main()
