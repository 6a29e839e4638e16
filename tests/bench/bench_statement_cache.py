"""Statements per second through the FE's StatementCache, and how many times each statement text is
tokenized and parsed on its way to a runnable statement.

Run by hand from the repository root:

    python tests/bench/bench_statement_cache.py [--statements 3000]

Each case sends a few thousand distinct statement texts (so the exact-text cache never hits) to one
StatementCache: point queries that differ only in their literal (one shape), CREATE/DROP DATABASE
and CREATE TABLE statements, and prepared statements (prepare, then bind typed values).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fe import statement_cache  # noqa: E402
from fe.sql import parser  # noqa: E402

logger = logging.getLogger("bench_statement_cache")
CALLS = {"tokenize": 0, "sqlglot": 0, "grammar": 0}


def counted(module, name, counter):
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        CALLS[counter] += 1
        return original(*args, **kwargs)

    setattr(module, name, wrapper)


def cases(n: int):
    yield (
        "SELECT ... WHERE id = <n>",
        [
            f"SELECT table_name FROM information_schema.tables WHERE table_rows = {i}"
            for i in range(n)
        ],
    )
    yield (
        "SELECT CAST(... DECIMAL(20, 2))",
        [
            f"SELECT CAST(table_rows AS DECIMAL(20, 2)) FROM information_schema.tables "
            f"WHERE table_rows = {i}"
            for i in range(n)
        ],
    )
    yield (
        "CREATE/DROP DATABASE",
        [f"{'CREATE' if i % 2 else 'DROP'} DATABASE d{i}" for i in range(n)],
    )
    yield (
        "CREATE TABLE",
        [
            f"CREATE TABLE t{i} (k INT, v VARCHAR(20) DEFAULT 'x') DUPLICATE KEY (k) "
            "DISTRIBUTED BY HASH (k) BUCKETS 2 PROPERTIES ('replication_num' = '1')"
            for i in range(n)
        ],
    )


def run(label: str, texts: list[str], handle) -> None:
    for counter in CALLS:
        CALLS[counter] = 0
    started = time.perf_counter()
    for text in texts:
        handle(text)
    elapsed = time.perf_counter() - started
    logger.info(
        "%-28s %8.0f statements/s; per statement: %.3f tokenizations, %.3f sqlglot parses, "
        "%.3f grammar parses",
        label,
        len(texts) / elapsed,
        CALLS["tokenize"] / len(texts),
        CALLS["sqlglot"] / len(texts),
        CALLS["grammar"] / len(texts),
    )


def main() -> None:
    arguments = argparse.ArgumentParser()
    arguments.add_argument("--statements", type=int, default=3000)
    n = arguments.parse_args().statements
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for module in (parser, statement_cache):
        for name in ("tokenize",):
            if hasattr(module, name):
                counted(module, name, "tokenize")
        if hasattr(module, "parse_with_sqlglot"):
            counted(module, "parse_with_sqlglot", "sqlglot")
    counted(parser.Grammar, "statement", "grammar")
    for label, texts in cases(n):
        run(label, texts, statement_cache.StatementCache(1024).statement)
    prepare = statement_cache.StatementCache(1024).prepare_statement
    run("prepare SELECT ... id = ?", [f"SELECT ?, ? AS s{i}" for i in range(n)], prepare)
    run("prepare SET @a = ?", [f"SET @a{i} = ?" for i in range(n)], prepare)
    run("prepare CREATE USER ?", [f"CREATE USER ? IDENTIFIED BY 'p{i}'" for i in range(n)], prepare)


if __name__ == "__main__":
    main()
