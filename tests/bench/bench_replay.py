"""Journal replay speed: decode + apply of encoded batches, as a follower or a restart replays them.

Builds 200,000 operations (create database, create table, alter = replace table, drop table, and
the leader's timestamps), encodes them into journal entries, then times `Catalog.apply_entry` over
all of them. Anchor: 50,000 operations per second on the project's 2-core machine.

    python tests/bench/bench_replay.py [--ops 200000] [--batch 10] [--gc default|off|freeze]

The replay runs under CPython's default garbage collector unless --gc says otherwise; the time
the collector takes is reported apart, since it grows with the catalog (every long-lived record is
walked again and again). --gc off disables it for the replay, as a start-up replay can (the
records are acyclic, reference counting frees them); --gc freeze calls gc.freeze() every 1,000
entries, as a process that freezes its catalog after start-up and each checkpoint would.
"""

from __future__ import annotations

import argparse
import gc
import logging
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from metadata.catalog import INITIAL_NEXT_ID, ApplyError, Catalog  # noqa: E402
from metadata.codec import encode_ops  # noqa: E402
from metadata.ops import (  # noqa: E402
    CreateDatabase,
    CreateTable,
    DropTable,
    ReplaceTable,
    Timestamp,
)
from metadata.records import Column, Database, KeyModel, Partition, Table  # noqa: E402

logger = logging.getLogger("bench_replay")

TARGET_OPS_PER_SECOND = 50_000
COLUMN_TYPES = ("BIGINT", "INT", "VARCHAR(64)", "DATE", "DECIMAL(12,2)", "DOUBLE")


def workload(count: int, seed: int = 1) -> list:
    """A valid DDL history: the mix a busy cluster's journal holds."""
    rng = random.Random(seed)
    next_id = INITIAL_NEXT_ID
    db_ids: list[int] = []
    tables: dict[int, Table] = {}
    ops: list = []

    def allocate(n: int = 1) -> int:
        nonlocal next_id
        next_id += n
        return next_id - n

    while len(ops) < count:
        roll = rng.random()
        if roll < 0.03 or not db_ids:
            db_ids.append(allocate())
            ops.append(CreateDatabase(Database(db_ids[-1], f"db_{len(db_ids)}")))
        elif roll < 0.50 or len(tables) < 100:
            table_id = allocate()
            columns = tuple(
                Column(f"c{i}", rng.choice(COLUMN_TYPES), nullable=i > 0, is_key=i == 0)
                for i in range(rng.randint(3, 8))
            )
            partitions = tuple(
                Partition(
                    allocate(), f"p{i}", (str(i * 100),), (str(i * 100 + 100),), allocate(10), 10
                )
                for i in range(rng.randint(1, 4))
            )
            table = Table(
                table_id,
                rng.choice(db_ids),
                f"tbl_{table_id}",
                columns,
                key_model=KeyModel.UNIQUE,
                key_columns=("c0",),
                distribution_columns=("c0",),
                buckets=10,
                partition_columns=("c0",),
                partitions=partitions,
                properties=(("replication_num", "3"),),
            )
            tables[table_id] = table
            ops.append(CreateTable(table))
        elif roll < 0.75:
            table = tables[rng.choice(list(tables))]
            if rng.random() < 0.5:
                altered = replace(
                    table, columns=(*table.columns, Column(f"c{len(table.columns)}", "INT"))
                )
            else:
                new_partition = Partition(
                    allocate(), f"p{len(table.partitions)}", (), (), allocate(10), 10
                )
                altered = replace(table, partitions=(*table.partitions, new_partition))
            tables[table.id] = altered
            ops.append(ReplaceTable(altered))
        elif roll < 0.97:
            ops.append(DropTable(tables.pop(rng.choice(list(tables))).id))
        else:
            ops.append(Timestamp(1_700_000_000_000 + len(ops)))
    return ops


class CollectorClock:
    """A gc callback that adds up the time spent in collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=10, help="operations per journal entry")
    parser.add_argument("--gc", choices=("default", "off", "freeze"), default="default")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)

    ops = workload(args.ops)
    started = time.perf_counter()
    batches = [encode_ops(ops[i : i + args.batch]) for i in range(0, len(ops), args.batch)]
    encode_seconds = time.perf_counter() - started
    journal_bytes = sum(map(len, batches))
    count = len(ops)
    del ops  # a replaying node holds the encoded journal, not the leader's operation objects

    gc.collect()
    collector = CollectorClock()
    gc.callbacks.append(collector)
    if args.gc == "off":
        gc.disable()
    catalog = Catalog()
    started = time.perf_counter()
    started_cpu = time.process_time()
    rejected = 0
    for raft_index, batch in enumerate(batches, start=1):
        for result in catalog.apply_entry(raft_index, batch):
            rejected += isinstance(result, ApplyError)
        if args.gc == "freeze" and raft_index % 1000 == 0:
            gc.freeze()
    replay_seconds = time.perf_counter() - started
    replay_cpu_seconds = time.process_time() - started_cpu
    gc.callbacks.remove(collector)
    gc.enable()
    assert rejected == 0, f"{rejected} operations were rejected: the workload is not valid"
    assert catalog.journal_id == count

    ops_per_second = count / replay_seconds
    logger.info("operations            %d in %d entries of %d", count, len(batches), args.batch)
    logger.info(
        "journal size          %.1f MB (%.0f bytes/op)", journal_bytes / 1e6, journal_bytes / count
    )
    logger.info("encode                %.0f ops/s", count / encode_seconds)
    logger.info(
        "catalog after replay  %d tables, %d tablets", len(catalog.tables), catalog.tablet_count()
    )
    logger.info(
        "decode + apply        %.2f s, %.0f ops/s (CPU time %.2f s, %.0f ops/s)",
        replay_seconds,
        ops_per_second,
        replay_cpu_seconds,
        count / replay_cpu_seconds,
    )
    logger.info(
        "of which cyclic gc    %.2f s in %s collections of generations 0/1/2%s",
        collector.seconds,
        "/".join(map(str, collector.collections)),
        f" (--gc {args.gc})",
    )
    logger.info("ratio to the 50,000 ops/s target: %.2fx", ops_per_second / TARGET_OPS_PER_SECOND)


if __name__ == "__main__":
    main()
