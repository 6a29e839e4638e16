"""Views: CREATE [OR REPLACE] VIEW, ALTER VIEW, DROP VIEW, SHOW CREATE VIEW, and queries that read
them, against a real `quire up` through PyMySQL and the mariadb CLI."""

import decimal

from tests.harness import error_of, mariadb, run

ORDERS = (
    "CREATE TABLE shop.orders (id INT, customer VARCHAR(20), amount DECIMAL(10,2)) "
    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2"
)


def _shop(root) -> None:
    run(root, "CREATE DATABASE IF NOT EXISTS shop")
    run(root, "DROP TABLE IF EXISTS shop.orders FORCE")
    run(root, ORDERS)
    run(
        root,
        "INSERT INTO shop.orders VALUES (1, 'ann', 10.50), (2, 'bob', 3.00), (3, 'ann', 7.25), "
        "(4, 'cy', NULL)",
    )


def test_a_view_reads_as_its_query(quire, root):
    _shop(root)
    run(root, "USE shop")
    run(
        root,
        "CREATE VIEW spend (who, total) COMMENT 'per customer' AS "
        "SELECT customer, SUM(amount) FROM orders GROUP BY customer",
    )
    assert run(root, "SELECT * FROM shop.spend ORDER BY who") == (
        ("ann", decimal.Decimal("17.75")),
        ("bob", decimal.Decimal("3.00")),
        ("cy", None),
    )
    joined = (
        "SELECT o.id, s.total FROM shop.orders o JOIN shop.spend s ON o.customer = s.who "
        "WHERE s.total > 5 ORDER BY o.id"
    )
    assert run(root, joined) == ((1, decimal.Decimal("17.75")), (3, decimal.Decimal("17.75")))
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", joined)
    assert done.stdout == "1\t17.75\n3\t17.75\n", done.stderr
    assert [row[:2] for row in run(root, "DESC shop.spend")] == [
        ("who", "varchar(20)"),
        ("total", "decimal(38,2)"),
    ]
    assert run(root, "SHOW FULL TABLES FROM shop") == (
        ("orders", "BASE TABLE"),
        ("spend", "VIEW"),
    )
    assert run(
        root,
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'shop' ORDER BY table_name",
    ) == (("orders", "BASE TABLE"), ("spend", "VIEW"))
    created = run(root, "SHOW CREATE VIEW shop.spend")
    assert created == (
        (
            "spend",
            'CREATE VIEW `spend` (`who`, `total`) COMMENT "per customer" AS SELECT '
            "orders.customer AS customer, SUM(orders.amount) FROM shop.orders AS orders "
            "GROUP BY orders.customer",
            "utf8mb4",
            "utf8mb4_0900_bin",
        ),
    )
    assert run(root, "SHOW CREATE TABLE shop.spend") == created
    run(root, "USE information_schema")  # the view names its tables with their database
    assert run(root, "SELECT COUNT(*) FROM shop.spend") == ((3,),)


def test_replace_alter_nest_and_drop(quire, root):
    _shop(root)
    run(root, "CREATE VIEW shop.big AS SELECT id, amount FROM shop.orders WHERE amount > 5")
    run(root, "CREATE VIEW shop.biggest AS SELECT MAX(amount) AS top FROM shop.big")
    assert run(root, "SELECT * FROM shop.biggest") == ((decimal.Decimal("10.50"),),)
    run(
        root,
        "CREATE OR REPLACE VIEW shop.big AS SELECT id, amount FROM shop.orders WHERE amount < 5",
    )
    assert run(root, "SELECT * FROM shop.biggest") == ((decimal.Decimal("3.00"),),)
    run(root, "ALTER VIEW shop.big AS SELECT id, amount * 2 AS amount FROM shop.orders")
    assert run(root, "SELECT * FROM shop.biggest") == ((decimal.Decimal("21.00"),),)
    run(root, "CREATE VIEW IF NOT EXISTS shop.big AS SELECT 1")  # kept as it is
    assert run(root, "SELECT COUNT(*) FROM shop.big") == ((4,),)
    run(root, "CREATE OR REPLACE VIEW shop.loop AS SELECT 1 AS a")
    run(root, "CREATE OR REPLACE VIEW shop.loop AS SELECT a FROM shop.loop")
    assert error_of(root, "SELECT * FROM shop.loop")[0] == 1462
    run(root, "DROP VIEW shop.big, shop.loop")
    assert error_of(root, "SELECT * FROM shop.biggest")[0] == 1356  # its view is gone
    run(root, "DROP VIEW IF EXISTS shop.big, shop.biggest")
    assert run(root, "SHOW TABLES FROM shop LIKE 'big%'") == ()


def test_a_view_takes_no_writes_and_keeps_its_name_apart(quire, root):
    _shop(root)
    run(root, "CREATE OR REPLACE VIEW shop.named AS SELECT id, customer FROM shop.orders")
    refused = {
        "INSERT INTO shop.named VALUES (9, 'x')": 1471,
        "UPDATE shop.named SET customer = 'y'": 1471,
        "DELETE FROM shop.named WHERE id = 1": 1471,
        "TRUNCATE TABLE shop.named": 1347,
        "ALTER TABLE shop.named ADD COLUMN z INT": 1347,
        "DROP TABLE shop.named": 1347,
        "DROP VIEW shop.orders": 1347,
        "CREATE VIEW shop.orders AS SELECT 1": 1050,
        "CREATE OR REPLACE VIEW shop.orders AS SELECT 1": 1347,
        "CREATE VIEW shop.named AS SELECT 1": 1050,
        "ALTER VIEW shop.nothing AS SELECT 1": 1146,
        "DROP VIEW shop.nothing": 1051,
        "CREATE VIEW shop.twice AS SELECT id, id FROM shop.orders": 1060,
        "CREATE VIEW shop.wrong (a, b, c) AS SELECT id FROM shop.orders": 1105,
        "CREATE VIEW shop.nowhere AS SELECT * FROM shop.missing": 1146,
    }
    for sql, code in refused.items():
        assert error_of(root, sql)[0] == code, sql
    done = mariadb(quire, "-e", "INSERT INTO shop.named VALUES (9, 'x')")
    assert "ERROR 1471 (HY000)" in done.stderr
    assert run(root, "SELECT COUNT(*) FROM shop.orders") == ((4,),)


def test_a_user_reads_a_view_with_select_on_the_view_alone(quire, root):
    """As in Doris (and MySQL's SQL SECURITY DEFINER): the view is how a user is shown some rows
    of a table it may not read."""
    _shop(root)
    run(root, "CREATE OR REPLACE VIEW shop.public AS SELECT id FROM shop.orders WHERE id < 3")
    run(root, "DROP USER IF EXISTS viewer")
    run(root, "CREATE USER viewer IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON shop.public TO viewer")
    viewer = quire.connect("viewer", "pw")
    try:
        assert run(viewer, "SELECT * FROM shop.public ORDER BY id") == ((1,), (2,))
        assert error_of(viewer, "SELECT * FROM shop.orders")[0] == 1142
        code, _ = error_of(viewer, "CREATE VIEW shop.mine AS SELECT * FROM shop.orders")
        assert code in (1142, 1044)
    finally:
        viewer.close()
    done = mariadb(quire, "-e", "SELECT * FROM shop.public", user="viewer", password="pw")
    assert done.stdout.split() == ["id", "1", "2"], done.stderr


def test_a_view_keeps_the_columns_it_was_made_with(quire, root):
    """As in MySQL, `*` is the table's columns when the view is made: a column added later is
    not the view's, and a column dropped makes the view an error, not another column's values."""
    _shop(root)
    run(root, "CREATE OR REPLACE VIEW shop.every AS SELECT * FROM shop.orders WHERE id = 1")
    run(root, "ALTER TABLE shop.orders ADD COLUMN note VARCHAR(10) DEFAULT 'n'")
    assert run(root, "SELECT * FROM shop.every") == ((1, "ann", decimal.Decimal("10.50")),)
    run(root, "ALTER TABLE shop.orders DROP COLUMN customer")
    assert error_of(root, "SELECT * FROM shop.every")[0] in (1054, 1105)


def test_a_view_whose_table_is_gone_is_invalid_as_in_mysql(quire, root):
    """MySQL's 1356, naming the view the query read (the outermost), not the table."""
    _shop(root)
    run(root, "CREATE TABLE shop.gone (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    run(root, "CREATE OR REPLACE VIEW shop.over_gone AS SELECT id FROM shop.gone")
    run(root, "CREATE OR REPLACE VIEW shop.over_view AS SELECT id FROM shop.over_gone")
    run(root, "DROP TABLE shop.gone")
    invalid = "references invalid table(s) or column(s) or function(s) or definer/invoker"
    for view in ("over_gone", "over_view"):
        code, message = error_of(root, f"SELECT * FROM shop.{view}")
        assert (code, message) == (
            1356,
            f"View 'shop.{view}' {invalid} of view lack rights to use them",
        )
    done = mariadb(quire, "shop", "-e", "SELECT o.id FROM orders o JOIN over_gone g ON o.id = g.id")
    assert f"ERROR 1356 (HY000) at line 1: View 'shop.over_gone' {invalid}" in done.stderr
    assert error_of(root, "SELECT * FROM shop.no_such_table")[0] == 1146


def test_views_outlive_a_restart(quire, root):
    _shop(root)
    run(root, "CREATE OR REPLACE VIEW shop.kept AS SELECT customer FROM shop.orders WHERE id = 2")
    quire.restart()
    connection = quire.connect()
    try:
        assert run(connection, "SELECT * FROM shop.kept") == (("bob",),)
    finally:
        connection.close()
