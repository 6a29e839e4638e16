"""Roles, as in Doris: CREATE ROLE, GRANT ... TO ROLE, GRANT 'role' TO user (or CREATE USER ...
DEFAULT ROLE), REVOKE, DROP ROLE, SHOW ROLES; a user holds its roles' privileges. Attacked as a
user with GRANT_PRIV alone would, through PyMySQL and the mariadb CLI, against a real `quire up`."""

import pytest
import requests

from tests.harness import error_of, mariadb, mariadb_error, run


@pytest.fixture(scope="module")
def root(root):
    run(root, "CREATE DATABASE sales")
    run(
        root,
        "CREATE TABLE sales.orders (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(root, "INSERT INTO sales.orders VALUES (1), (2)")
    run(root, "CREATE DATABASE payroll")
    run(
        root,
        "CREATE TABLE payroll.pay (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    return root


def code_of(connection, sql) -> int:
    return error_of(connection, sql)[0]


def grants_of(root, account: str) -> list[str]:
    return [row[0] for row in run(root, f"SHOW GRANTS FOR {account}")]


def test_a_role_gives_its_users_its_privileges_until_revoked_or_dropped(quire, root):
    run(root, "CREATE ROLE analyst COMMENT 'reads sales'")
    run(root, "GRANT SELECT_PRIV ON sales.* TO ROLE 'analyst'")
    run(root, "GRANT LOAD_PRIV ON sales.orders TO ROLE analyst")
    run(root, "CREATE USER ann IDENTIFIED BY 'pw' DEFAULT ROLE 'analyst'")
    run(root, "CREATE USER bob IDENTIFIED BY 'pw'")
    ann = quire.connect("ann", "pw")
    assert run(ann, "SELECT COUNT(*) FROM sales.orders") == ((2,),)
    run(ann, "INSERT INTO sales.orders VALUES (3)")
    assert code_of(ann, "SELECT * FROM payroll.pay") == 1142
    bob = quire.connect("bob", "pw")
    assert code_of(bob, "SELECT * FROM sales.orders") == 1142
    run(root, "GRANT 'analyst' TO bob")
    assert run(bob, "SELECT COUNT(*) FROM sales.orders") == ((3,),)
    sql = "SELECT id FROM sales.orders ORDER BY id"
    done = mariadb(quire, "--batch", "-e", sql, user="bob", password="pw")
    assert done.stdout.splitlines() == ["id", "1", "2", "3"], done.stderr
    assert grants_of(root, "bob") == [
        "GRANT USAGE_PRIV ON *.* TO 'bob'@'%'",
        "GRANT 'analyst' TO 'bob'@'%'",
    ]
    done = mariadb(quire, "--batch", "-e", "SHOW ROLES")
    assert done.stdout.splitlines() == [
        "Name\tComment\tUsers\tGlobalPrivs\tCatalogPrivs\tDatabasePrivs\tTablePrivs\t"
        "ResourcePrivs\tWorkloadGroupPrivs",
        "analyst\treads sales\t'ann'@'%', 'bob'@'%'\tNULL\tNULL\tinternal.sales: Select_priv\t"
        "internal.sales.orders: Load_priv\tNULL\tNULL",
    ], done.stderr
    # A revoke from the role takes it from every user at once.
    run(root, "REVOKE SELECT_PRIV ON sales.* FROM ROLE analyst")
    assert code_of(ann, "SELECT * FROM sales.orders") == 1142
    run(ann, "INSERT INTO sales.orders VALUES (4)")  # LOAD on the table: still the role's
    run(root, "REVOKE 'analyst' FROM bob")
    assert code_of(bob, "INSERT INTO sales.orders VALUES (5)") == 1142
    assert grants_of(root, "bob") == ["GRANT USAGE_PRIV ON *.* TO 'bob'@'%'"]
    run(root, "DROP ROLE analyst")
    assert code_of(ann, "INSERT INTO sales.orders VALUES (5)") == 1142
    assert grants_of(root, "ann") == ["GRANT USAGE_PRIV ON *.* TO 'ann'@'%'"]
    assert run(root, "SHOW ROLES") == ()
    ann.close()
    bob.close()


@pytest.mark.parametrize(
    ("sql", "code", "sqlstate"),
    [
        ("CREATE ROLE taken", 1396, "HY000"),
        ("DROP ROLE no_such_role", 1396, "HY000"),
        ("GRANT 'no_such_role' TO root", 3523, "HY000"),
        ("GRANT SELECT ON sales.* TO ROLE no_such_role", 3523, "HY000"),
        ("REVOKE 'taken' FROM root", 1141, "42000"),
        ("REVOKE SELECT ON payroll.* FROM ROLE taken", 1141, "42000"),
        ("GRANT 'taken' TO nobody_here", 1133, "42000"),
        ("CREATE USER carl DEFAULT ROLE no_such_role", 3523, "HY000"),
        ("CREATE ROLE ''", 1064, "42000"),
    ],
)
def test_bad_role_statements_get_mysqls_errors(quire, root, sql, code, sqlstate):
    run(root, "CREATE ROLE IF NOT EXISTS taken")
    assert code_of(root, sql) == code
    assert mariadb_error(quire, "root", "", sql).startswith(f"ERROR {code} ({sqlstate})")
    assert run(root, "SELECT 1") == ((1,),)


def test_grant_priv_alone_reaches_no_further_through_a_role(quire, root):
    run(root, "CREATE USER granter IDENTIFIED BY 'pw'")
    run(root, "GRANT GRANT_PRIV ON *.* TO granter")
    run(root, "CREATE USER nobody IDENTIFIED BY 'pw'")
    granter = quire.connect("granter", "pw")
    nobody = quire.connect("nobody", "pw")
    run(granter, "CREATE ROLE mine")
    assert code_of(granter, "GRANT ADMIN_PRIV ON *.* TO ROLE mine") == 1227
    assert code_of(granter, "GRANT SELECT ON payroll.* TO ROLE mine") == 1044
    run(root, "CREATE ROLE admins")
    run(root, "GRANT ADMIN_PRIV ON *.* TO ROLE admins")
    run(root, "CREATE ROLE payroll_readers")
    run(root, "GRANT SELECT ON payroll.* TO ROLE payroll_readers")
    for sql, code in [
        ("GRANT 'admins' TO granter", 1227),
        ("GRANT 'payroll_readers' TO granter", 1044),
        ("CREATE USER sneaky IDENTIFIED BY 'pw' DEFAULT ROLE 'admins'", 1227),
        ("DROP ROLE admins", 1227),
        ("REVOKE ADMIN_PRIV ON *.* FROM ROLE admins", 1227),
    ]:
        assert code_of(granter, sql) == code, sql
    assert "ERROR 1227 (42000)" in mariadb_error(
        quire, "granter", "pw", "GRANT 'admins' TO granter"
    )
    assert code_of(granter, "SELECT * FROM payroll.pay") == 1142
    # An account that is an administrator through a role is out of its reach too.
    run(root, "CREATE USER boss2 IDENTIFIED BY 'pw' DEFAULT ROLE admins")
    assert code_of(granter, "SET PASSWORD FOR boss2 = PASSWORD('taken')") == 1227
    assert code_of(granter, "REVOKE 'admins' FROM boss2") == 1227
    assert code_of(granter, "DROP USER boss2") == 1227
    boss = quire.connect("boss2", "pw")
    assert run(boss, "SELECT COUNT(*) FROM payroll.pay") == ((0,),)  # ADMIN_PRIV, by its role
    boss.close()
    dump = f"http://127.0.0.1:{quire.http_port}/dump"  # the HTTP API reads roles too
    assert requests.get(dump, auth=("boss2", "pw"), timeout=30).status_code == 200
    assert requests.get(dump, auth=("granter", "pw"), timeout=30).status_code == 401
    # Without GRANT_PRIV nothing of roles is open.
    for sql in ("CREATE ROLE r2", "SHOW ROLES", "GRANT 'mine' TO nobody", "DROP ROLE mine"):
        assert code_of(nobody, sql) == 1227, sql
    granter.close()
    nobody.close()


def test_show_all_grants_lists_every_account_with_its_roles_privileges(quire, root):
    run(root, "CREATE ROLE IF NOT EXISTS auditors")
    run(root, "GRANT SELECT_PRIV ON payroll.* TO ROLE auditors")
    run(root, "CREATE USER audrey IDENTIFIED BY 'pw' DEFAULT ROLE auditors")
    run(root, "GRANT LOAD_PRIV ON sales.orders TO audrey")
    rows = {row[0]: row for row in run(root, "SHOW ALL GRANTS")}
    assert rows["'audrey'@'%'"] == (
        "'audrey'@'%'",
        None,
        "Yes",
        "auditors",
        None,
        None,
        "internal.payroll: Select_priv",
        "internal.sales.orders: Load_priv",
        None,
        None,
        None,
    )
    assert rows["'root'@'%'"][4].startswith("Admin_priv,")
    done = mariadb(quire, "--batch", "-e", "SHOW ALL GRANTS")
    assert done.stdout.splitlines()[0].split("\t")[:4] == [
        "UserIdentity",
        "Comment",
        "Password",
        "Roles",
    ], done.stderr
    audrey = quire.connect("audrey", "pw")
    assert code_of(audrey, "SHOW ALL GRANTS") == 1227
    audrey.close()


def test_roles_outlive_a_checkpoint_and_a_restart(quire, root):
    run(root, "CREATE ROLE kept COMMENT 'kept'")
    run(root, "GRANT SELECT ON sales.orders TO ROLE kept")
    run(root, "CREATE USER keeper IDENTIFIED BY 'pw' DEFAULT ROLE kept")
    run(root, "ADMIN CHECKPOINT")  # the roles in the image ...
    run(root, "CREATE ROLE later")  # ... and in the journal after it
    run(root, "GRANT 'later' TO keeper")
    quire.restart()
    connection = quire.connect()
    try:
        assert ("kept", "kept") in {row[:2] for row in run(connection, "SHOW ROLES")}
        assert grants_of(connection, "keeper")[-1] == "GRANT 'kept', 'later' TO 'keeper'@'%'"
        keeper = quire.connect("keeper", "pw")
        assert run(keeper, "SELECT COUNT(*) FROM sales.orders") == ((4,),)
        keeper.close()
    finally:
        connection.close()
