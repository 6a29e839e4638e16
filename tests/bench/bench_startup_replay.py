"""Start-up replay: journal entries per second replayed from RocksDB into a fresh catalog, the way
an FE restarts (fe/cli.py's replaying: the cyclic GC waits until the replay is done).

Fills a journal with --entries CREATE/ALTER TABLE entries through ReplicatedJournal (one operation
per entry, as DDL statements make), closes it, then times the replay of a fresh ReplicatedJournal
into an empty Catalog. Anchor: 50,000 entries per second (the issue's target).

    python tests/bench/bench_startup_replay.py [--entries 100000] [--threads 16]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from metadata import ops  # noqa: E402
from metadata.catalog import Catalog  # noqa: E402
from metadata.codec import encode_ops  # noqa: E402
from metadata.journal.replicated import ReplicatedJournal  # noqa: E402
from metadata.records import Column, Database, Partition, Table  # noqa: E402
from tests.harness import free_port  # noqa: E402

TARGET = 50_000
BUCKETS = 8


def payloads(entries: int) -> list[bytes]:
    columns = (Column("k", "INT", is_key=True), Column("v", "VARCHAR(20)"))
    result = [encode_ops([ops.CreateDatabase(Database(1, "bench"))])]
    next_id = 100
    tables = []
    while len(result) < entries:
        if tables and len(result) % 4 == 3:
            table = tables[len(result) % len(tables)]
            table = replace(table, columns=(*table.columns, Column(f"c{len(result)}", "BIGINT")))
            result.append(encode_ops([ops.ReplaceTable(table)]))
            continue
        partition = Partition(next_id + 1, f"t{next_id}", tablet_start=next_id + 2, buckets=BUCKETS)
        table = Table(
            next_id,
            1,
            f"t{next_id}",
            columns,
            key_columns=("k",),
            buckets=BUCKETS,
            partitions=(partition,),
        )
        tables.append(table)
        next_id += 2 + BUCKETS
        result.append(encode_ops([ops.CreateTable(table)]))
    return result


def journal(directory: Path, catalog: Catalog) -> ReplicatedJournal:
    return ReplicatedJournal(
        journal_dir=str(directory),
        self_address=f"127.0.0.1:{free_port()}",
        partners=[],
        state_machine=catalog,
        applied_index=0,
    )


def fill(directory: Path, entries: list[bytes], threads: int) -> float:
    node = journal(directory, Catalog())
    node.start()
    assert node.wait_leader(10)
    started = time.perf_counter()
    node.commit(entries[0], timeout=30)
    chunks = [entries[1 + i :: threads] for i in range(threads)]

    def submit_all(chunk: list[bytes]) -> None:
        for payload in chunk:
            node.commit(payload, timeout=60)

    workers = [threading.Thread(target=submit_all, args=(chunk,)) for chunk in chunks]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    node.close()
    return seconds


def replay(directory: Path) -> tuple[float, Catalog]:
    catalog = Catalog()
    node = journal(directory, catalog)
    started = time.perf_counter()
    gc.disable()
    try:
        node.start()
    finally:
        gc.freeze()
        gc.enable()
    seconds = time.perf_counter() - started
    node.close()
    return seconds, catalog


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    entries = payloads(args.entries)
    with tempfile.TemporaryDirectory(prefix="quire-bench-replay-") as tmp:
        directory = Path(tmp) / "journal"
        fill_seconds = fill(directory, entries, args.threads)
        print(
            f"filled journal        {len(entries)} entries in {fill_seconds:.1f} s ({len(entries) / fill_seconds:.0f}/s, fsynced)"
        )
        seconds, catalog = replay(directory)
        assert catalog.journal_id == len(entries), (catalog.journal_id, len(entries))
        rate = len(entries) / seconds
        print(
            f"start-up replay       {len(entries)} entries in {seconds:.2f} s: {rate:.0f} entries/s"
        )
        print(
            f"catalog after replay  {len(catalog.tables)} tables, {catalog.tablet_count()} tablets"
        )
        print(f"ratio to the {TARGET:,} entries/s target: {rate / TARGET:.2f}x")


if __name__ == "__main__":
    main()
