"""Stream Load rows/s of a CSV into `quire up` (curl, through the FE's redirect) against
`LOAD DATA LOCAL INFILE` of the same file into a MariaDB server (bench_front.MariaDB starts one,
InnoDB, the mariadb CLI sends the file), then the ratio.

    python tests/bench/bench_stream_load.py [--mb 1024] [--buckets 8]

The file has five columns (BIGINT, VARCHAR, DECIMAL, DATE, VARCHAR), about 60 bytes a row."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_front import DATABASE, MariaDB  # noqa: E402
from tests.harness import QuireProcess, execute, free_port  # noqa: E402

logger = logging.getLogger("bench_stream_load")
BATCH_ROWS = 500_000
ROW_BYTES = 70  # about, in the CSV
COLUMNS = "id BIGINT, name VARCHAR(64), amount DECIMAL(12,2), day DATE, note VARCHAR(100)"


def write_csv(path: Path, megabytes: int) -> int:
    """A CSV of about megabytes MB: its row count."""
    wanted = max((megabytes << 20) // ROW_BYTES, 1)
    rows = 0
    with pacsv.CSVWriter(
        str(path),
        pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.string()),
                   ("day", pa.date32()), ("note", pa.string())]),
        write_options=pacsv.WriteOptions(include_header=False, quoting_style="none"),
    ) as writer:  # fmt: skip
        while rows < wanted:
            ids = pa.array(range(rows, min(rows + BATCH_ROWS, wanted)), pa.int64())
            text = pc.cast(ids, pa.string())
            batch = pa.record_batch(
                [
                    ids,
                    pc.binary_join_element_wise("name-", text, ""),
                    pc.binary_join_element_wise(text, "25", "."),
                    pc.add(
                        pc.cast(pc.divide(ids, 100_000), pa.int32()), pa.scalar(18_000, pa.int32())
                    ).view(pa.date32()),
                    pc.binary_join_element_wise("a note about row ", text, ""),
                ],
                names=["id", "name", "amount", "day", "note"],
            )
            writer.write_batch(batch)
            rows += len(ids)
    return rows


def quire_load(folder: Path, data: Path, buckets: int) -> tuple[float, int]:
    node = QuireProcess(folder / "quire", {"webserver_port": free_port()}).start()
    try:
        execute(node, "CREATE DATABASE b", f"CREATE TABLE b.sl ({COLUMNS}) DUPLICATE KEY(id) "
                f"DISTRIBUTED BY HASH(id) BUCKETS {buckets}")  # fmt: skip
        started = time.monotonic()
        out = subprocess.run(
            ["curl", "-sS", "--location-trusted", "-u", "root:", "-H", "column_separator:,",
             "-T", str(data), f"http://127.0.0.1:{node.http_port}/api/b/sl/_stream_load"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        seconds = time.monotonic() - started
        logger.info("Quire answered %s", out.stdout)
        loaded = execute(node, "SELECT count(*) FROM b.sl")[0][0]
        return seconds, loaded
    finally:
        node.stop()


def mariadb_load(folder: Path, data: Path) -> tuple[float, int]:
    server = MariaDB(folder / "mariadb")
    server.start()
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {DATABASE}.sl ({COLUMNS}) ENGINE=InnoDB")
        started = time.monotonic()
        subprocess.run(
            ["mariadb", "--local-infile=1", "-h", "127.0.0.1", "-P", str(server.port), "-u",
             "root", "--skip-ssl", "-e",
             f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE {DATABASE}.sl "
             "FIELDS TERMINATED BY ','"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.monotonic() - started
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {DATABASE}.sl")
            loaded = cursor.fetchone()[0]
        connection.close()
        return seconds, loaded
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the CSV (default 1024)")
    parser.add_argument("--buckets", type=int, default=8, help="buckets of the Quire table")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="bench-stream-load-") as temporary:
        folder = Path(temporary)
        data = folder / "data.csv"
        rows = write_csv(data, args.mb)
        size = data.stat().st_size
        print(f"CSV: {rows} rows, {size / (1 << 20):.0f} MB")
        quire_seconds, quire_rows = quire_load(folder, data, args.buckets)
        assert quire_rows == rows, (quire_rows, rows)
        print(
            f"Quire Stream Load:        {quire_seconds:7.2f} s  {rows / quire_seconds:12,.0f} rows/s"
        )
        maria_seconds, maria_rows = mariadb_load(folder, data)
        assert maria_rows == rows, (maria_rows, rows)
        print(
            f"MariaDB LOAD DATA LOCAL:  {maria_seconds:7.2f} s  {rows / maria_seconds:12,.0f} rows/s"
        )
        print(f"ratio (Quire / MariaDB rows/s): {maria_seconds / quire_seconds:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
