"""Random INSERT / UPDATE / DELETE / SELECT and transactions (fixed seed) against Quire through
PyMySQL and against SQLite (stdlib) as the oracle, compared after every step: a DUPLICATE KEY
table (every row kept) and a UNIQUE KEY table (a row replaces the one with its key, as SQLite's
INSERT OR REPLACE does); and a table whose columns change (ADD with a default, DROP, RENAME,
MODIFY to a wider type) between its random statements; and a table with generated columns beside
SQLite's stored ones."""

import os
import random
import sqlite3

import pymysql
import pytest

from tests.harness import QuireProcess, cluster_token, execute, free_port, run, wait_until
from tests.test_data_processes import FE_OVERRIDES, DataNode

SEED = int(os.environ.get("QUIRE_DIFFERENTIAL_SEED", "20261123"))  # another: other sequences
STEPS = 300
KEYS = 40
TINY_FLUSH = {  # a flush every few statements, merges and checkpoints
    "flush_rows": 6,
    "flush_interval_second": 1,
    "merge_min_objects": 3,
    "merged_object_retention_second": 2,
    "tn_checkpoint_interval_second": 1,
}


FAST_JOBS = {"alter_scheduler_interval_millisecond": 100}  # ALTER jobs finish in a few tenths
SCHEMA_STEPS = 160


@pytest.fixture(
    scope="module", params=[FAST_JOBS, {**TINY_FLUSH, **FAST_JOBS}], ids=["in_memory", "tiny_flush"]
)
def quire(request, tmp_path_factory):
    """In memory only; and with flushes (objects, tombstones), merges and checkpoints every few
    statements."""
    node = QuireProcess(tmp_path_factory.mktemp("quire"), overrides=request.param).start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def quire_db(root):
    run(root, "CREATE DATABASE diff")
    run(
        root,
        "CREATE TABLE diff.dup (k INT, v INT, s VARCHAR(8)) DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 4",
    )
    run(
        root,
        "CREATE TABLE diff.uni (k INT, v INT, s VARCHAR(8)) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 4",
    )
    return root


def oracle() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE dup (k INT, v INT, s TEXT)")
    connection.execute("CREATE TABLE uni (k INT PRIMARY KEY, v INT, s TEXT)")
    return connection


def random_statement(chance: random.Random) -> tuple[str, str]:
    """(Quire's SQL, SQLite's SQL) of one random statement."""
    table = chance.choice(["dup", "uni"])
    kind = chance.choices(["insert", "update", "delete"], [5, 3, 2])[0]
    if kind == "insert":
        rows = [
            f"({chance.randrange(KEYS)}, {chance.randrange(-50, 50)}, '{chance.choice('abcxyz')}')"
            for _ in range(chance.randint(1, 6))
        ]
        if table == "uni":
            # SQLite's INSERT OR REPLACE takes rows in order: the last of equal keys stays
            return (
                f"INSERT INTO uni VALUES {', '.join(rows)}",
                f"INSERT OR REPLACE INTO uni VALUES {', '.join(rows)}",
            )
        return (f"INSERT INTO dup VALUES {', '.join(rows)}",) * 2
    low = chance.randrange(KEYS)
    where = f"k BETWEEN {low} AND {low + chance.randint(0, 8)}"
    if kind == "update":
        value = chance.randrange(-5, 5)
        return (f"UPDATE {table} SET v = v + {value}, s = 'u' WHERE {where}",) * 2
    return (f"DELETE FROM {table} WHERE {where}",) * 2


QUERIES = [
    "SELECT k, v, s FROM {t} ORDER BY k, v, s",
    "SELECT s, COUNT(*), SUM(v) FROM {t} GROUP BY s ORDER BY s",
]


def same(quire_connection, lite: sqlite3.Connection, step: int) -> None:
    for table in ("dup", "uni"):
        for query in QUERIES:
            sql = query.format(t=table)
            got = [
                tuple(
                    int(x) if hasattr(x, "as_integer_ratio") and not isinstance(x, float) else x
                    for x in row
                )
                for row in run(quire_connection, sql)
            ]
            expected = [tuple(row) for row in lite.execute(sql).fetchall()]
            assert got == expected, (step, sql)


def test_random_statements_and_transactions_match_sqlite(quire, quire_db):
    connection = pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="diff", autocommit=True
    )
    try:
        random_steps(connection, random.Random(SEED), oracle(), STEPS)
    finally:
        connection.close()


def random_steps(connection, chance: random.Random, lite, steps: int, between=None) -> None:
    """steps random statements and transactions on connection and on lite, the two compared after
    each; between(step), if given, runs before each step outside a transaction."""
    in_transaction = False
    for step in range(steps):
        if between is not None and not in_transaction:
            between(step)
        roll = chance.random()
        if not in_transaction and roll < 0.08:
            run(connection, "BEGIN")
            lite.execute("BEGIN")
            in_transaction = True
        elif in_transaction and roll < 0.16:
            ending = chance.choice(["COMMIT", "ROLLBACK"])
            run(connection, ending)
            lite.execute(ending)
            in_transaction = False
        else:
            quire_sql, lite_sql = random_statement(chance)
            with connection.cursor() as cursor:
                quire_rows = cursor.execute(quire_sql)
            lite_rows = lite.execute(lite_sql).rowcount
            if not quire_sql.startswith("INSERT INTO uni"):
                assert quire_rows == lite_rows or quire_sql.startswith("UPDATE"), (step, quire_sql)
        same(connection, lite, step)
    if in_transaction:
        run(connection, "COMMIT")
        lite.execute("COMMIT")
    same(connection, lite, steps)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """`quire fe`, `quire tn` (flushing, merging and checkpointing every few statements) and one
    `quire cn`, each a process of its own."""
    root = tmp_path_factory.mktemp("nodes")
    fe = QuireProcess(root / "fe", FE_OVERRIDES, command="fe").start()
    token = cluster_token(fe)
    logtail_port = free_port()
    tn = DataNode(root / "tn", "tn", token, logtail_port, **TINY_FLUSH)
    cn = DataNode(root / "cn", "cn", token, logtail_port, storage_root=root / "tn" / "storage")
    try:
        tn.start()
        cn.start()
        for node in (tn, cn):
            execute(fe, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        execute(
            fe,
            "CREATE DATABASE diff",
            "CREATE TABLE diff.dup (k INT, v INT, s VARCHAR(8)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 4",
            "CREATE TABLE diff.uni (k INT, v INT, s VARCHAR(8)) UNIQUE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 4",
        )
        yield fe, tn, cn
    finally:
        for node in (cn, tn, fe):
            node.stop()


def test_random_statements_match_sqlite_across_cn_and_tn_kills(nodes):
    """The same random sequence through TN and CN processes: the CN is killed with kill -9 and
    started again twice (it resubscribes from the TN's checkpoint), the TN once (it replays its
    log); every answer still equals SQLite's."""
    fe, tn, cn = nodes
    restarts = {STEPS // 4: cn, STEPS // 2: tn, 3 * STEPS // 4: cn}

    def between(step: int) -> None:
        node = restarts.get(step)
        if node is not None:
            node.kill()
            node.start()

    connection = fe.connect(database="diff")
    try:
        random_steps(connection, random.Random(SEED + 2), oracle(), STEPS, between)
    finally:
        connection.close()
    assert len(cn.status().tables) >= 2  # the CN, back, answered the reads
    assert list((tn.workdir / "storage" / "objects").rglob("*.parquet"))  # flushed and merged


def schema_change(chance: random.Random, columns: list[str], serial: int) -> tuple[str, str, list]:
    """(Quire's ALTER, SQLite's ALTER, the columns after it) of one random change of the
    evolving table's value columns (k stays)."""
    values = columns[1:]
    kind = chance.choice(["add", "add", "drop", "rename", "modify"] if values else ["add"])
    if kind == "add":
        name, default = f"c{serial}", chance.randrange(-9, 9)
        return (
            f'ALTER TABLE evolving ADD COLUMN {name} INT DEFAULT "{default}"',
            f"ALTER TABLE evolving ADD COLUMN {name} INT DEFAULT {default}",
            [*columns, name],
        )
    name = chance.choice(values)
    if kind == "drop":
        sql = f"ALTER TABLE evolving DROP COLUMN {name}"
        return sql, sql, [column for column in columns if column != name]
    if kind == "rename":
        new = f"r{serial}"
        return (
            f"ALTER TABLE evolving RENAME COLUMN {name} {new}",
            f"ALTER TABLE evolving RENAME COLUMN {name} TO {new}",
            [new if column == name else column for column in columns],
        )
    return f"ALTER TABLE evolving MODIFY COLUMN {name} BIGINT", "", columns  # SQLite: any integer


def evolving_statement(chance: random.Random, columns: list[str]) -> str:
    kind = chance.choices(["insert", "update", "delete"], [5, 3, 2])[0]
    if kind == "insert":
        rows = [
            "(" + ", ".join(str(chance.randrange(-50, 50)) for _ in columns) + ")"
            for _ in range(chance.randint(1, 6))
        ]
        return f"INSERT INTO evolving ({', '.join(columns)}) VALUES {', '.join(rows)}"
    low = chance.randrange(-50, 50)
    where = f"k BETWEEN {low} AND {low + chance.randint(0, 15)}"
    if kind == "update" and len(columns) > 1:
        return f"UPDATE evolving SET {chance.choice(columns[1:])} = {chance.randrange(-5, 5)} WHERE {where}"
    return f"DELETE FROM evolving WHERE {where}"


def test_random_schema_changes_between_statements_match_sqlite(quire, quire_db):
    chance = random.Random(SEED + 1)
    lite = sqlite3.connect(":memory:", isolation_level=None)
    columns = ["k", "v"]
    lite.execute("CREATE TABLE evolving (k INT, v INT)")
    connection = pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="diff", autocommit=True
    )
    try:
        run(connection, "CREATE TABLE evolving (k INT, v INT) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 3")  # fmt: skip
        changes = 0
        for step in range(SCHEMA_STEPS):
            if chance.random() < 0.08:
                quire_sql, lite_sql, columns = schema_change(chance, columns, step)
                run(connection, quire_sql)
                wait_until(lambda: not alter_jobs_running(connection), 60, "the ALTER job")
                if lite_sql:
                    lite.execute(lite_sql)
                changes += 1
            else:
                sql = evolving_statement(chance, columns)
                run(connection, sql)
                lite.execute(sql)
            query = f"SELECT {', '.join(columns)} FROM evolving ORDER BY {', '.join(columns)}"
            got = [
                tuple(int(x) if x is not None else None for x in row)
                for row in run(connection, query)
            ]
            assert got == [tuple(row) for row in lite.execute(query).fetchall()], (step, query)
        assert changes >= 8, "the sequence changes the schema often enough"
    finally:
        connection.close()


def alter_jobs_running(connection) -> bool:
    return any(
        row[1] == "evolving" and row[9] in ("PENDING", "WAITING_TXN", "RUNNING")
        for row in run(connection, "SHOW ALTER TABLE COLUMN FROM diff")
    )


GENERATED_STEPS = 120


def test_generated_columns_match_sqlites(quire, quire_db):
    """A UNIQUE KEY table with two generated columns (one reading the other) under random
    INSERT, UPDATE, DELETE and transactions, beside SQLite's stored generated columns."""
    connection = pymysql.connect(
        host="127.0.0.1", port=quire.query_port, user="root", database="diff", autocommit=True
    )
    lite = sqlite3.connect(":memory:", isolation_level=None)
    run(
        connection,
        "CREATE TABLE gen (k INT, v INT, s VARCHAR(8), g BIGINT AS (v * 3 + k), "
        "t VARCHAR(24) AS (concat(s, '-', g))) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    lite.execute(
        "CREATE TABLE gen (k INT PRIMARY KEY, v INT, s TEXT, "
        "g INT GENERATED ALWAYS AS (v * 3 + k) STORED, "
        "t TEXT GENERATED ALWAYS AS (s || '-' || g) STORED)"
    )
    chance = random.Random(SEED + 3)
    in_transaction = False
    try:
        for step in range(GENERATED_STEPS):
            roll = chance.random()
            if roll < 0.1:
                ending = (
                    ("COMMIT", "ROLLBACK")[chance.random() < 0.3] if in_transaction else "BEGIN"
                )
                run(connection, ending)
                lite.execute(ending)
                in_transaction = ending == "BEGIN"
                continue
            low = chance.randrange(KEYS)
            where = f"k BETWEEN {low} AND {low + chance.randint(0, 8)}"
            if roll < 0.6:
                rows = ", ".join(
                    f"({chance.randrange(KEYS)}, {chance.randrange(-50, 50)}, "
                    f"'{chance.choice('abc')}')"
                    for _ in range(chance.randint(1, 5))
                )
                statements = (
                    f"INSERT INTO gen (k, v, s) VALUES {rows}",
                    f"INSERT OR REPLACE INTO gen (k, v, s) VALUES {rows}",
                )
            elif roll < 0.85:
                value = chance.randrange(-5, 5)
                statements = (f"UPDATE gen SET v = v + {value}, s = 'u' WHERE {where}",) * 2
            else:
                statements = (f"DELETE FROM gen WHERE {where}",) * 2
            run(connection, statements[0])
            lite.execute(statements[1])
            sql = "SELECT k, v, s, g, t FROM gen ORDER BY k"
            assert [tuple(row) for row in run(connection, sql)] == lite.execute(sql).fetchall(), (
                step,
                statements[0],
            )
    finally:
        connection.close()
