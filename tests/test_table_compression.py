"""Doris's table property "compression" (Doris has no per-column COMPRESSION clause): its names
accepted, shown by SHOW CREATE TABLE as Doris names the type, anything else refused as Doris does."""

import pytest

from tests.harness import error_of, mariadb, run


@pytest.mark.parametrize(
    "given, shown",
    [("zstd", "ZSTD"), ("LZ4", "LZ4"), ("lz4f", "LZ4F"), ("lz4hc", "LZ4HC"), ("zlib", "ZLIB"),
     ("snappy", "SNAPPY"), ("no_compression", "NO_COMPRESSION"), ("default_compression", "LZ4F")],
)  # fmt: skip
def test_compression_property_is_accepted_and_shown(quire, root, given, shown):
    run(root, "CREATE DATABASE IF NOT EXISTS cz")
    name = f"cz.t_{given}"
    run(
        root,
        f"CREATE TABLE {name} (k INT, v VARCHAR(10)) DISTRIBUTED BY HASH(k) BUCKETS 1 "
        f'PROPERTIES ("replication_num" = "1", "compression" = "{given}")',
    )
    created = run(root, f"SHOW CREATE TABLE {name}")[0][1]
    assert f'"compression" = "{shown}"' in created
    run(root, f"DROP TABLE {name} FORCE")
    run(root, created.replace(f"CREATE TABLE `t_{given}`", f"CREATE TABLE {name}", 1))
    assert run(root, f"SHOW CREATE TABLE {name}")[0][1] == created
    done = mariadb(quire, "--batch", "-N", "-r", "-e", f"SHOW CREATE TABLE {name}")
    assert done.returncode == 0 and f'"compression" = "{shown}"' in done.stdout, done.stderr


def test_unknown_compression_is_refused_as_doris_refuses_it(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS cz")
    sql = (
        "CREATE TABLE cz.bad (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1 "
        'PROPERTIES ("compression" = "brotli")'
    )
    assert error_of(root, sql) == (1105, "unknown compression type: brotli")
    done = mariadb(quire, "--batch", "-e", sql)
    assert done.stderr.strip().endswith(
        "ERROR 1105 (HY000) at line 1: unknown compression type: brotli"
    )
    run(root, "CREATE TABLE cz.good (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    code, message = error_of(root, 'ALTER TABLE cz.good SET ("compression" = "gzip")')
    assert (code, message) == (1105, "unknown compression type: gzip")


def test_a_per_column_compression_clause_is_not_doris_syntax(root):
    run(root, "CREATE DATABASE IF NOT EXISTS cz")
    assert error_of(root, "CREATE TABLE cz.c (k INT COMPRESSION 'zstd')")[0] == 1064
