"""information_schema as a client reads it while the catalog changes under it: each query sees the
catalog as it is and what its user may see, whichever columns it reads (the FE keeps the tables it
built until the catalog changes, with only the columns queries read)."""

import pytest

from tests.harness import error_of, mariadb, run

TABLES_OF = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'is_db'"
COLUMNS_OF = (
    "SELECT column_name, ordinal_position FROM information_schema.columns "
    "WHERE table_schema = 'is_db' AND table_name = 't1'"
)


@pytest.fixture(scope="module")
def root(root):
    run(root, "CREATE DATABASE is_db")
    run(root, "CREATE TABLE is_db.t1 (k INT, v VARCHAR(20)) DISTRIBUTED BY HASH(k) BUCKETS 1")
    return root


def names(rows) -> set[str]:
    return {row[0] for row in rows}


def test_each_query_sees_the_catalog_as_it_is_now(root):
    assert names(run(root, TABLES_OF)) == {"t1"}
    run(root, "CREATE TABLE is_db.t2 (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    assert names(run(root, TABLES_OF)) == {"t1", "t2"}
    assert run(root, COLUMNS_OF) == (("k", 1), ("v", 2))
    run(root, "ALTER TABLE is_db.t1 ADD COLUMN w INT")
    assert run(root, COLUMNS_OF) == (("k", 1), ("v", 2), ("w", 3))
    run(root, "DROP TABLE is_db.t2")
    assert names(run(root, TABLES_OF)) == {"t1"}


def test_the_same_query_from_two_users_shows_each_what_they_may_see(quire, root):
    run(root, "CREATE TABLE is_db.mine (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE TABLE is_db.theirs (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    for name in ("is_me", "is_them"):
        run(root, f"CREATE USER {name} IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON is_db.mine TO is_me")
    run(root, "GRANT SELECT_PRIV ON is_db.theirs TO is_them")
    me, them = quire.connect("is_me", "pw"), quire.connect("is_them", "pw")
    for _ in range(3):
        assert names(run(me, TABLES_OF)) == {"mine"}
        assert names(run(them, TABLES_OF)) == {"theirs"}
        assert "t1" in names(run(root, TABLES_OF))
    run(root, "REVOKE SELECT_PRIV ON is_db.mine FROM is_me")
    assert run(me, TABLES_OF) == ()
    done = mariadb(quire, "--batch", "-N", "-e", TABLES_OF, user="is_them", password="pw")
    assert (done.returncode, done.stdout, done.stderr) == (0, "theirs\n", "")
    me.close()
    them.close()


def test_queries_reading_every_column_or_none(root):
    star = (
        "SELECT * FROM information_schema.tables WHERE table_schema = 'is_db' AND table_name = 't1'"
    )
    with root.cursor() as cursor:
        cursor.execute(star)
        assert len(cursor.description) == 21
        assert cursor.fetchall()[0][:4] == ("internal", "is_db", "t1", "BASE TABLE")
    counted = (
        "SELECT COUNT(*) FROM information_schema.columns "
        "WHERE table_schema = 'is_db' AND table_name = 't1'"
    )
    assert run(root, counted) == ((3,),)  # t1 (k, v, w), as the first test left it
    ones = "SELECT 1 FROM information_schema.columns WHERE table_schema = 'is_db'"
    assert len(run(root, ones)) >= 3
    natural = (
        "SELECT column_name FROM information_schema.tables NATURAL JOIN information_schema.columns "
        "WHERE table_schema = 'is_db' AND table_name = 't1' ORDER BY column_name"
    )
    assert run(root, natural) == (("k",), ("v",), ("w",))
    aliased = (
        "SELECT c.COLUMN_NAME FROM information_schema.columns AS c "
        "WHERE c.TABLE_SCHEMA = 'is_db' AND c.TABLE_NAME = 't1' AND c.ORDINAL_POSITION = 2"
    )
    assert run(root, aliased) == (("v",),)


def test_the_cache_limit_is_a_config_key(quire, root):
    rows = run(root, "ADMIN SHOW FRONTEND CONFIG LIKE 'information_schema_cache_max_bytes'")
    assert rows and rows[0][1] == "67108864"
    assert rows[0][-1]  # its comment from conf/fe.conf


# Each simple query, and the same query with a condition (1 = 1) that sends it to the engine.
SIMPLE_QUERIES = [
    (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'is_db'",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'is_db' AND 1 = 1",
    ),
    (
        "SELECT TABLE_NAME AS n, engine, version, table_comment FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = 'is_db' LIMIT 2",
        "SELECT TABLE_NAME AS n, engine, version, table_comment FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = 'is_db' AND 1 = 1 LIMIT 2",
    ),
    (
        "SELECT c.column_name, c.ordinal_position, c.character_maximum_length, c.column_default "
        "FROM information_schema.columns c WHERE c.table_schema = 'is_db' AND 't1' = c.table_name "
        "AND ordinal_position = 2",
        "SELECT c.column_name, c.ordinal_position, c.character_maximum_length, c.column_default "
        "FROM information_schema.columns c WHERE c.table_schema = 'is_db' AND 't1' = c.table_name "
        "AND ordinal_position = 2 AND 1 = 1",
    ),
    (
        "SELECT schema_name FROM information_schema.schemata",
        "SELECT schema_name FROM information_schema.schemata WHERE 1 = 1",
    ),
    (
        "SELECT collation_name, id FROM information_schema.collations "
        "WHERE character_set_name = 'utf8mb4'",
        "SELECT collation_name, id FROM information_schema.collations "
        "WHERE character_set_name = 'utf8mb4' AND 1 = 1",
    ),
    (
        "SELECT table_name FROM information_schema.views WHERE table_schema = 'is_db'",
        "SELECT table_name FROM information_schema.views WHERE table_schema = 'is_db' AND 1 = 1",
    ),
    (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'IS_DB'",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'IS_DB' AND 1 = 1",
    ),
    (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'is_db' LIMIT 0",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'is_db' AND 1 = 1 "
        "LIMIT 0",
    ),
]


@pytest.mark.parametrize(("query", "engine_query"), SIMPLE_QUERIES)
def test_simple_queries_answer_as_the_engine_does(root, query, engine_query):
    """Simple queries are answered without the engine: the same columns, types and rows."""
    answers = []
    for sql in (query, engine_query):
        with root.cursor() as cursor:
            cursor.execute(sql)
            answers.append((cursor.description, cursor.fetchall()))
    assert answers[0] == answers[1]


def test_a_simple_query_on_the_session_database(quire):
    connection = quire.connect()
    run(connection, "USE information_schema")
    assert run(connection, "SELECT table_name FROM tables WHERE table_schema = 'is_db' LIMIT 1")
    run(connection, "USE is_db")
    code, message = error_of(connection, "SELECT table_name FROM tables WHERE table_schema = 'x'")
    assert code == 1146 and "tables" in message
    done = mariadb(quire, "--batch", "-N", "-e", SIMPLE_QUERIES[0][0])
    assert done.returncode == 0 and "t1\n" in done.stdout, done.stderr
    connection.close()


def test_partitions_processlist_and_privileges_as_tools_read_them(quire, root):
    """PARTITIONS lists each partition (a table without any: one row of NULLs), PROCESSLIST the
    connections SHOW PROCESSLIST shows, USER_ / SCHEMA_ / TABLE_PRIVILEGES the user's grants."""
    run(
        root,
        "CREATE TABLE is_db.ranged (k INT, d DATE NOT NULL) DUPLICATE KEY(k) PARTITION BY "
        "RANGE(d) (PARTITION p1 VALUES LESS THAN ('2024-01-01'), PARTITION p2 VALUES LESS THAN "
        "(MAXVALUE)) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    rows = run(
        root,
        "SELECT table_name, partition_name, partition_ordinal_position, partition_method, "
        "partition_expression, partition_description FROM information_schema.partitions "
        "WHERE table_schema = 'is_db' AND table_name IN ('ranged', 't1') ORDER BY 1, 3",
    )
    assert rows == (
        ("ranged", "p1", 1, "RANGE", "d", "'2024-01-01'"),
        ("ranged", "p2", 2, "RANGE", "d", "MAXVALUE"),
        ("t1", None, None, None, None, None),
    )
    mine = (
        "SELECT command, info FROM information_schema.processlist WHERE info LIKE '%processlist%'"
    )
    assert run(root, mine) == (("Query", mine),)
    run(root, "CREATE USER reader IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON is_db.* TO reader")
    reader = quire.connect(user="reader", password="pw")
    try:
        assert run(
            reader,
            "SELECT grantee, table_schema, privilege_type FROM information_schema.schema_privileges",
        ) == (("'reader'@'%'", "is_db", "Select_priv"),)
        assert run(
            reader, "SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'root'"
        ) == ((0,),)
    finally:
        reader.close()
    done = mariadb(
        quire, "--batch", "-N", "-e", "SELECT COUNT(*) FROM information_schema.parameters"
    )
    assert done.stdout == "0\n", done.stderr


def test_show_tables_from_information_schema_lists_its_tables(quire, root):
    shown = {row[0] for row in run(root, "SHOW TABLES FROM information_schema")}
    assert {"TABLES", "COLUMNS", "PARTITIONS", "PROCESSLIST"} <= shown
    assert run(root, "SHOW FULL TABLES FROM information_schema LIKE 'schemata'") == (
        ("SCHEMATA", "SYSTEM VIEW"),
    )
    done = mariadb(quire, "information_schema", "--batch", "-N", "-e", "SHOW TABLES LIKE 'engines'")
    assert done.stdout == "ENGINES\n", done.stderr
