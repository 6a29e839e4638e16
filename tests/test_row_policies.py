"""Doris's row policies: CREATE ROW POLICY ... TO user | ROLE r USING (predicate) limits the rows
that reader reads of the table, in every way it reads them: text queries (PyMySQL, the mariadb
CLI), prepared point reads (the binary protocol, as sysbench and JDBC send them), the rows UPDATE
and DELETE name, INSERT ... SELECT, views; a Spark read plan is refused. RESTRICTIVE policies all
hold, one PERMISSIVE one must; others read every row. SHOW ROW POLICY lists them, DROP ROW
POLICY lifts one, a restart keeps them; GRANT_PRIV makes them."""

import mysql.connector
import pytest
import requests

from tests.harness import error_of, mariadb, run

ROWS = ((1, "east", 10), (2, "west", 20), (3, "east", 30), (4, "north", 40))


@pytest.fixture(scope="module")
def policies(quire, root):
    run(root, "CREATE DATABASE guarded")
    run(root, "CREATE TABLE guarded.sales (id INT, region VARCHAR(10), amount INT) "
              "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")  # fmt: skip
    run(root, "INSERT INTO guarded.sales VALUES " + ", ".join(f"{row}" for row in ROWS))
    run(root, "CREATE VIEW guarded.big AS SELECT id, amount FROM guarded.sales WHERE amount > 5")
    run(root, "CREATE USER ann IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV, LOAD_PRIV ON guarded.* TO ann")
    run(root, "CREATE ROLE westers")
    run(root, "GRANT SELECT_PRIV ON guarded.* TO ROLE 'westers'")
    run(root, "CREATE USER bob IDENTIFIED BY 'pw' DEFAULT ROLE 'westers'")
    run(root, "CREATE USER carl IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON guarded.* TO carl")
    run(root, "CREATE ROW POLICY only_east ON guarded.sales AS RESTRICTIVE TO ann "
              "USING (region = 'east')")  # fmt: skip
    run(root, "CREATE ROW POLICY small ON guarded.sales AS RESTRICTIVE TO ann USING (amount < 25)")
    run(root, "CREATE ROW POLICY west ON guarded.sales AS PERMISSIVE TO ROLE westers "
              "USING (region = 'west')")  # fmt: skip
    run(root, "CREATE ROW POLICY north ON guarded.sales AS PERMISSIVE TO ROLE westers "
              "USING (region = 'north')")  # fmt: skip
    return quire


def ids(connection, sql: str) -> list[int]:
    return [row[0] for row in run(connection, sql)]


def test_each_reader_reads_the_rows_its_policies_let_it(policies):
    seen = {"ann": [1], "bob": [2, 4], "carl": [1, 2, 3, 4]}
    for user, expected in seen.items():
        connection = policies.connect(user=user, password="pw", database="guarded")
        try:
            assert ids(connection, "SELECT id FROM sales ORDER BY id") == expected
            assert ids(connection, "SELECT id FROM guarded.sales s WHERE s.id IN (1, 2, 3, 4) "
                                   "ORDER BY s.id") == expected  # fmt: skip
            assert run(connection, "SELECT COUNT(*) FROM sales") == ((len(expected),),)
            assert ids(connection, "WITH x AS (SELECT * FROM sales) SELECT id FROM x "
                                   "ORDER BY id") == expected  # fmt: skip
            assert ids(connection, "SELECT id FROM big ORDER BY id") == expected  # a view's
            for key in (1, 2, 4):
                assert ids(connection, f"SELECT id FROM sales WHERE id = {key}") == (
                    [key] if key in expected else []
                )
        finally:
            connection.close()
        done = mariadb(policies, "-u", user, "-ppw", "--batch", "--skip-column-names", "guarded",
                       "-e", "SELECT id FROM sales ORDER BY id")  # fmt: skip
        assert done.stdout.split() == [str(key) for key in expected], done.stderr

    prepared = mysql.connector.connect(
        host="127.0.0.1", port=policies.query_port, user="ann", password="pw", database="guarded"
    )
    try:
        cursor = prepared.cursor(prepared=True)
        for key, expected in ((1, [(1, "east")]), (2, []), (3, []), (4, [])):
            cursor.execute("SELECT id, region FROM sales WHERE id = ?", (key,))
            assert cursor.fetchall() == expected
        cursor.execute("SELECT id FROM sales WHERE id BETWEEN ? AND ?", (1, 4))
        assert cursor.fetchall() == [(1,)]
    finally:
        prepared.close()

    run(policies.connect(), "ANALYZE TABLE guarded.sales WITH SYNC")
    for user, shown in (("ann", ("N/A", "N/A")), ("carl", ("'east'", "'west'"))):
        connection = policies.connect(user=user, password="pw", database="guarded")
        try:  # the table's least and greatest values are not shown to a limited reader
            rows = run(connection, "SHOW COLUMN STATS sales (region)")
            assert rows[0][7:9] == shown, (user, rows)
        finally:
            connection.close()

    plan = requests.post(
        f"http://127.0.0.1:{policies.http_port}/api/guarded/sales/_read_plan",
        auth=("ann", "pw"),
        timeout=30,
    )
    assert plan.status_code == 403 and "row policy" in plan.text


def test_updates_and_deletes_reach_only_the_rows_read(policies, root):
    ann = policies.connect(user="ann", password="pw", database="guarded")
    prepared = mysql.connector.connect(
        host="127.0.0.1", port=policies.query_port, user="ann", password="pw", database="guarded"
    )
    try:
        run(ann, "UPDATE sales SET amount = amount + 1")
        run(ann, "DELETE FROM sales WHERE id = 2")
        run(ann, "INSERT INTO sales SELECT id + 100, region, amount FROM sales")
        cursor = prepared.cursor(prepared=True)
        cursor.execute("UPDATE sales SET amount = 0 WHERE id = ?", (4,))
        cursor.execute("DELETE FROM sales WHERE id = ?", (3,))
        prepared.commit()
    finally:
        ann.close()
        prepared.close()
    assert run(root, "SELECT id, region, amount FROM guarded.sales ORDER BY id") == (
        (1, "east", 11), (2, "west", 20), (3, "east", 30), (4, "north", 40), (101, "east", 11),
    )  # fmt: skip
    run(root, "DELETE FROM guarded.sales WHERE id > 100")
    run(root, "UPDATE guarded.sales SET amount = 10 WHERE id = 1")


def test_show_drop_restart_and_who_may(policies, root):
    rows = run(root, "SHOW ROW POLICY FOR ROLE westers")
    assert [(r[0], r[2], r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows] == [
        ("north", "guarded", "sales", "ROW", "PERMISSIVE", "region = 'north'", None, "westers"),
        ("west", "guarded", "sales", "ROW", "PERMISSIVE", "region = 'west'", None, "westers"),
    ]
    assert [r[0] for r in run(root, "SHOW ROW POLICY FOR ann")] == ["only_east", "small"]
    done = mariadb(policies, "--batch", "-e", "SHOW ROW POLICY FOR ann")
    assert done.stdout.splitlines()[0].split("\t") == [
        "PolicyName", "CatalogName", "DbName", "TableName", "Type", "FilterType",
        "WherePredicate", "User", "Role", "OriginStmt",
    ]  # fmt: skip

    refusals = {
        "CREATE ROW POLICY only_east ON guarded.sales AS RESTRICTIVE TO ann USING (id = 1)":
            (1105, "the policy only_east already create"),
        "CREATE ROW POLICY p ON guarded.sales AS RESTRICTIVE TO nobody USING (id = 1)":
            (1105, "user 'nobody'@'%' does not exist"),
        "CREATE ROW POLICY p ON guarded.sales AS RESTRICTIVE TO ann USING (nope = 1)":
            (1054, "Unknown column 'nope'"),
        "CREATE ROW POLICY p ON guarded.sales AS RESTRICTIVE TO ann "
        "USING (id IN (SELECT 1))": (1105, "no query, aggregate or window"),
        "CREATE ROW POLICY p ON guarded.sales AS SOMETIMES TO ann USING (id = 1)":
            (1105, "Unknown filter type"),
        "CREATE ROW POLICY p ON guarded.nope AS RESTRICTIVE TO ann USING (id = 1)": (1146, ""),
        "DROP ROW POLICY nope ON guarded.sales": (1105, "the policy nope not exist"),
        "DROP ROW POLICY only_east ON guarded.sales FOR bob": (1105, "not exist"),
    }  # fmt: skip
    for statement, (code, words) in refusals.items():
        got = error_of(root, statement)
        assert got[0] == code and words in got[1], (statement, got)
    run(root, "CREATE ROW POLICY IF NOT EXISTS only_east ON guarded.sales AS RESTRICTIVE TO ann "
              "USING (id = 1)")  # fmt: skip
    run(root, "DROP ROW POLICY IF EXISTS nope ON guarded.sales")

    carl = policies.connect(user="carl", password="pw", database="guarded")
    try:
        for statement in (
            "CREATE ROW POLICY p ON guarded.sales AS PERMISSIVE TO carl USING (TRUE)",
            "DROP ROW POLICY only_east ON guarded.sales",
            "SHOW ROW POLICY",
        ):
            assert error_of(carl, statement)[0] == 1227, statement
    finally:
        carl.close()

    run(root, "CREATE TABLE guarded.copied LIKE guarded.sales")  # no one's policies come along
    run(root, "INSERT INTO guarded.copied SELECT * FROM guarded.sales")
    policies.restart()
    root = policies.connect(database="guarded")
    try:
        ann = policies.connect(user="ann", password="pw", database="guarded")
        assert ids(ann, "SELECT id FROM sales ORDER BY id") == [1]
        assert ids(ann, "SELECT id FROM copied ORDER BY id") == [1, 2, 3, 4]
        run(root, "DROP ROW POLICY small ON guarded.sales FOR ann")
        assert ids(ann, "SELECT id FROM sales ORDER BY id") == [1, 3]
        run(root, "DROP ROW POLICY only_east ON guarded.sales")
        assert ids(ann, "SELECT id FROM sales ORDER BY id") == [1, 2, 3, 4]
        ann.close()
    finally:
        root.close()
