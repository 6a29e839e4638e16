"""Doris's s3(...) table function: the Parquet, CSV and JSON objects of an S3-compatible store
(moto's server here) read in FROM, `INSERT INTO t SELECT ... FROM s3(...)` loading them; and
SELECT ... INTO OUTFILE "s3://..." writing a query's rows there. Admins only, keys required, at
most s3_table_function_max_bytes read. Through PyMySQL and the mariadb CLI."""

import json

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.harness import QuireProcess, error_of, mariadb, moto_filesystem, run

BUCKET = "lake"


@pytest.fixture(scope="module")
def store(moto_endpoint):
    """The bucket's objects: two Parquet parts, a CSV and JSON lines."""
    filesystem = moto_filesystem(moto_endpoint, BUCKET)
    for part, ids in (("a", range(0, 3)), ("b", range(3, 5))):
        table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
        pq.write_table(table, f"{BUCKET}/parts/{part}.parquet", filesystem=filesystem)
    with filesystem.open_output_stream(f"{BUCKET}/plain.csv") as out:
        out.write(b"7|seven\n8|eight\n")
    with filesystem.open_output_stream(f"{BUCKET}/rows.json") as out:
        out.write("\n".join(json.dumps({"id": i, "name": f"j{i}"}) for i in (1, 2)).encode())
    return moto_endpoint


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(
        tmp_path_factory.mktemp("s3_tvf"), {"s3_table_function_max_bytes": 100_000}
    ).start()
    yield node
    node.stop()


def s3(endpoint: str, uri: str, kind: str, **more: str) -> str:
    properties = {
        "uri": f"s3://{BUCKET}/{uri}",
        "format": kind,
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "s3.access_key": "testing",
        "s3.secret_key": "testing",
        **more,
    }
    return "s3(" + ", ".join(f'"{k}" = "{v}"' for k, v in properties.items() if v) + ")"


def test_parquet_csv_and_json_objects_read_and_load(quire, root, store):
    parts = s3(store, "parts/*.parquet", "parquet")
    assert run(root, f"SELECT id, name FROM {parts} ORDER BY id") == tuple(
        (i, f"n{i}") for i in range(5)
    )
    plain = s3(store, "plain.csv", "csv", column_separator="|")
    assert run(root, f"SELECT c1, c2 FROM {plain} ORDER BY c1") == (("7", "seven"), ("8", "eight"))
    # a CSV's text converted as MySQL converts text
    assert run(root, f"SELECT c1 * 2, c1 + 0.5 FROM {plain} WHERE c1 > 7") == ((16.0, 8.5),)
    lines = s3(store, "rows.json", "json")
    assert run(root, f"SELECT SUM(id) FROM {lines}") == ((3,),)
    run(root, "CREATE DATABASE lake")
    run(root, "CREATE TABLE lake.t (id BIGINT, name VARCHAR(9)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    run(root, f"INSERT INTO lake.t SELECT id, name FROM {parts} WHERE id > 1")
    run(root, f"INSERT INTO lake.t SELECT CAST(c1 AS BIGINT), c2 FROM {plain}")
    assert run(root, "SELECT COUNT(*), CAST(SUM(id) AS SIGNED) FROM lake.t") == ((5, 24),)
    done = mariadb(quire, "--batch", "-N", "-e", f"SELECT COUNT(*) FROM {parts}")
    assert done.stdout.split() == ["5"], done.stderr


def test_s3_is_for_admins_with_keys_and_within_its_bytes(quire, root, store):
    run(root, "CREATE USER IF NOT EXISTS 'analyst'@'%' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON *.* TO 'analyst'@'%'")
    analyst = quire.connect(user="analyst", password="pw")
    try:
        parts = s3(store, "parts/*.parquet", "parquet")
        assert error_of(analyst, f"SELECT * FROM {parts}")[0] == 1227
    finally:
        analyst.close()
    keyless = s3(store, "plain.csv", "csv", **{"s3.secret_key": ""})
    assert error_of(root, f"SELECT * FROM {keyless}") == (
        1105,
        "s3 needs its s3.access_key and s3.secret_key properties",
    )
    assert "no object" in error_of(root, f"SELECT * FROM {s3(store, 'nothing.csv', 'csv')}")[1]
    assert error_of(root, f"SELECT * FROM {s3(store, 'plain.csv', 'orc')}")[0] == 1105
    big = b"x" * 200_000
    filesystem = moto_filesystem(store)
    with filesystem.open_output_stream(f"{BUCKET}/big.csv") as out:
        out.write(big)
    code, message = error_of(root, f"SELECT COUNT(*) FROM {s3(store, 'big.csv', 'csv')}")
    assert code == 1105 and "s3_table_function_max_bytes" in message


def test_select_into_outfile_writes_an_object_the_s3_function_reads_back(quire, root, store):
    keys = (
        f'"s3.endpoint" = "{store}", "s3.region" = "us-east-1", '
        '"s3.access_key" = "testing", "s3.secret_key" = "testing"'
    )
    run(root, "CREATE DATABASE IF NOT EXISTS lake")
    run(root, "CREATE TABLE IF NOT EXISTS lake.out (id BIGINT, name VARCHAR(9), d DATE) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    run(root, "INSERT INTO lake.out VALUES (1, 'a,b', '2024-01-02'), (2, NULL, NULL)")
    with root.cursor() as cursor:
        cursor.execute(
            "SELECT id, name, d FROM lake.out ORDER BY id INTO OUTFILE "
            f'"s3://{BUCKET}/export/out_" FORMAT AS PARQUET PROPERTIES ({keys})'
        )
        assert [d[0] for d in cursor.description] == ["FileNumber", "TotalRows", "FileSize", "URL"]
        ((files, rows, size, url),) = cursor.fetchall()
    assert (files, rows) == (1, 2) and size > 0 and url.startswith(f"s3://{BUCKET}/export/out_")
    written = s3(store, url.removeprefix(f"s3://{BUCKET}/") + "0.parquet", "parquet")
    assert run(root, f"SELECT id, name FROM {written} ORDER BY id") == ((1, "a,b"), (2, None))
    done = mariadb(quire, "--batch", "-N", "-e",
                   "SELECT id, name FROM lake.out ORDER BY id INTO OUTFILE "
                   f'"s3://{BUCKET}/export/csv_" FORMAT AS CSV_WITH_NAMES PROPERTIES ({keys})')  # fmt: skip
    assert done.returncode == 0, done.stderr
    url = done.stdout.split()[-1]
    text = s3(store, url.removeprefix(f"s3://{BUCKET}/") + "0.csv", "csv")
    assert run(root, f"SELECT c1, c2 FROM {text}") == (("id", "name"), ("1", "a,b"), ("2", None))
    assert error_of(root, "SELECT 1 INTO OUTFILE '/tmp/x.csv'")[0] == 1235
    run(root, "CREATE USER IF NOT EXISTS 'analyst'@'%' IDENTIFIED BY 'pw'")
    analyst = quire.connect(user="analyst", password="pw")
    try:
        refused = error_of(analyst, f'SELECT 1 INTO OUTFILE "s3://{BUCKET}/x_" PROPERTIES ({keys})')
        assert refused[0] == 1227
    finally:
        analyst.close()


def test_outfile_splits_its_rows_into_files_of_max_file_size(root, store):
    keys = (
        f'"s3.endpoint" = "{store}", "s3.region" = "us-east-1", '
        '"s3.access_key" = "testing", "s3.secret_key" = "testing"'
    )
    query = 'SELECT number, repeat("x", 100) FROM numbers("number" = "120000")'
    ((files, rows, size, url),) = run(
        root,
        f'{query} INTO OUTFILE "s3://{BUCKET}/split/part_" FORMAT AS CSV '
        f'PROPERTIES ({keys}, "max_file_size" = "5MB")',
    )
    assert files >= 3 and rows == 120000 and size > 10 * 1024 * 1024, (files, rows, size)
    filesystem = moto_filesystem(store)
    prefix = url.removeprefix("s3://")
    folder = prefix.rpartition("/")[0]
    written = [
        info
        for info in filesystem.get_file_info(pafs.FileSelector(folder))
        if info.path.startswith(prefix)
    ]
    assert sorted(info.base_name for info in written) == sorted(
        f"{prefix.rpartition('/')[2]}{n}.csv" for n in range(files)
    )
    assert all(info.size <= 5 * 1024 * 1024 for info in written)
    assert sum(info.size for info in written) == size
    lines = sum(filesystem.open_input_stream(info.path).readall().count(b"\n") for info in written)
    assert lines == 120000
    assert error_of(
        root,
        f'{query} INTO OUTFILE "s3://{BUCKET}/split/x_" PROPERTIES ({keys}, "max_file_size" = "3MB")',
    ) == (1105, "max file size should between 5MB and 2GB. Given: 3145728")
