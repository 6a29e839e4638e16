"""be.engine's DuckDB on its own, under the allow-list: even SQL that the allow-list would refuse
reaches no file, no extension and no setting, and runs within its limits."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest
import sqlglot

from be import engine

MEMORY = 256 * 1024 * 1024
COLLATIONS = pa.table({"name": ["a", "b", "c", "d"]})


def run(sql: str, memory_limit_bytes: int = MEMORY, timeout_seconds: float | None = 30):
    async def main():
        query_engine = engine.Engine(workers=2, queue_size=2, threads_per_query=1)
        try:
            return await query_engine.run(
                lambda: (sql, {"c": COLLATIONS}),
                timeout_seconds=timeout_seconds,
                memory_limit_bytes=memory_limit_bytes,
            )
        finally:
            query_engine.close()

    return asyncio.run(main())


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('/proc/self/cmdline')",
        "SELECT * FROM read_blob('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "COPY c TO 'copied.csv'",
        "ATTACH 'other.duckdb'",
        "INSTALL httpfs",
    ],
)
def test_no_file_or_extension_is_reachable(sql, tmp_path):
    with pytest.raises(engine.EngineError) as caught:
        run(sql.replace("'copied.csv'", f"'{tmp_path}/copied.csv'"))
    assert "disabled by configuration" in caught.value.message or isinstance(
        caught.value, engine.InvalidQuery
    )
    assert not (tmp_path / "copied.csv").exists()


@pytest.mark.parametrize(
    "setting",
    [
        "enable_external_access = true",
        "memory_limit = '100GB'",
        "threads = 64",
        "temp_directory = '.'",
        "error_on_division_by_zero = true",
        "lock_configuration = false",
    ],
)
def test_settings_are_locked(setting):
    with pytest.raises(engine.EngineError) as caught:
        run(f"SET {setting}")
    assert "configuration has been locked" in caught.value.message


def test_limits_are_the_query_s():
    answer = run(
        "SELECT current_setting('threads'), current_setting('enable_external_access'), "
        "current_setting('temp_directory'), current_setting('memory_limit')",
        memory_limit_bytes=64 * 1024 * 1024,
    )
    assert answer.rows == [(1, False, "", "64.0 MiB")]


def test_allow_list_names_the_refused_function_first():
    tree = sqlglot.parse_one(
        "SELECT * FROM t, LATERAL read_text('/etc/hostname') WHERE LOWER(x) = 'y'", read="mysql"
    )
    with pytest.raises(engine.UnknownFunction) as caught:
        engine.check(tree)
    assert caught.value.name == "read_text"
    engine.check(sqlglot.parse_one("SELECT LOWER(x), COUNT(*) FROM t GROUP BY 1", read="mysql"))


def test_duckdb_s_advice_stays_out_of_the_message():
    """The message says what is wrong, not which DuckDB function or setting would help."""
    with pytest.raises(engine.QueryFailed) as caught:
        run("SELECT name + 1 FROM c")
    assert caught.value.message.endswith("'+(VARCHAR, INTEGER_LITERAL)'."), caught.value.message
    assert "cast" not in caught.value.message


def test_timeout_interrupts_duckdb():
    names = [f"c{i}" for i in range(16)]
    sql = (
        "SELECT COUNT(*) FROM "
        + ", ".join(f"c {n}" for n in names)
        + " WHERE "
        + " || ".join(f"{n}.name" for n in names)
        + " <> 'x'"
    )
    with pytest.raises(engine.QueryTimedOut):
        run(sql, timeout_seconds=0.5)
