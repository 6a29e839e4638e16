"""Doris's user properties: SET PROPERTY [FOR 'name'] 'key' = 'value' and SHOW PROPERTY, kept for
the user name; max_user_connections bounds its connections to an FE, query_timeout,
insert_timeout and exec_mem_limit set its sessions' variables. Through PyMySQL and the mariadb
CLI against a real `quire up`."""

import pytest

from tests.harness import error_of, login_error, logs_in, mariadb, mariadb_error, run, wait_until


def test_max_user_connections_bounds_the_users_connections(quire, root):
    run(root, "CREATE USER jack IDENTIFIED BY 'pw'")
    assert ("max_user_connections", "100") in run(root, "SHOW PROPERTY FOR jack")
    run(root, "SET PROPERTY FOR 'jack' 'max_user_connections' = '2'")
    first, second = quire.connect("jack", "pw"), quire.connect("jack", "pw")
    code, message = login_error(quire, "jack", "pw")
    assert code == 1203 and "'max_user_connections'" in message, message
    assert mariadb_error(quire, "jack", "pw").startswith("ERROR 1203 (42000)")
    assert login_error(quire, "jack", "wrong")[0] == 1045  # a wrong password is told as such
    quire.connect().close()  # other users are not held back
    second.close()
    wait_until(lambda: logs_in(quire, "jack", "pw"), 30, "a connection closed lets another in")
    assert run(first, "SELECT 1") == ((1,),)
    first.close()


def test_session_properties_set_the_users_session_variables(quire, root):
    run(root, "CREATE USER jill IDENTIFIED BY 'pw'")
    run(
        root,
        "SET PROPERTY FOR 'jill' 'query_timeout' = '77', 'insert_timeout' = '88', "
        "'exec_mem_limit' = '1073741824'",
    )
    jill = quire.connect("jill", "pw")
    assert run(jill, "SELECT @@query_timeout, @@insert_timeout, @@exec_mem_limit") == (
        (77, 88, 1073741824),
    )
    run(jill, "SET query_timeout = 5")  # the session may still set its own
    assert run(jill, "SELECT @@query_timeout") == ((5,),)
    assert run(jill, "SHOW PROPERTY LIKE '%timeout'") == (
        ("query_timeout", "77"),
        ("insert_timeout", "88"),
    )
    done = mariadb(
        quire, "--batch", "-N", "-e", "SELECT @@query_timeout", user="jill", password="pw"
    )
    assert done.stdout == "77\n", done.stderr
    assert run(root, "SELECT @@query_timeout") == ((900,),)  # others keep the default
    # Kept for the user name, as Doris keeps it: a new account of it has them too.
    run(root, "CREATE USER 'jill'@'localhost' IDENTIFIED BY 'pw'")
    local = quire.connect("jill", "pw")
    assert run(local, "SELECT CURRENT_USER(), @@query_timeout") == (("jill@localhost", 77),)
    local.close()
    jill.close()


@pytest.mark.parametrize(
    ("sql", "code", "sqlstate"),
    [
        ("SET PROPERTY FOR 'jack2' 'no_such_key' = '1'", 1105, "HY000"),
        ("SET PROPERTY FOR 'jack2' 'max_user_connections' = '0'", 1231, "42000"),
        ("SET PROPERTY FOR 'jack2' 'query_timeout' = 'soon'", 1231, "42000"),
        ("SET PROPERTY FOR 'nobody_at_all' 'query_timeout' = '5'", 1105, "HY000"),
        ("SHOW PROPERTY FOR nobody_at_all", 1105, "HY000"),
    ],
)
def test_bad_properties_get_errors(quire, root, sql, code, sqlstate):
    run(root, "CREATE USER IF NOT EXISTS jack2")
    assert error_of(root, sql)[0] == code
    assert mariadb_error(quire, "root", "", sql).startswith(f"ERROR {code} ({sqlstate})")


def test_only_an_administrator_sets_properties(quire, root):
    run(root, "CREATE USER joe IDENTIFIED BY 'pw'")
    run(root, "GRANT GRANT_PRIV ON *.* TO joe")
    joe = quire.connect("joe", "pw")
    assert error_of(joe, "SET PROPERTY 'max_user_connections' = '10000'")[0] == 1227
    assert error_of(joe, "SET PROPERTY FOR 'root' 'max_user_connections' = '1'")[0] == 1227
    assert ("max_user_connections", "100") in run(joe, "SHOW PROPERTY")
    joe.close()


def test_properties_outlive_a_restart(quire, root):
    run(root, "CREATE USER kept_props IDENTIFIED BY 'pw'")
    run(root, "SET PROPERTY FOR 'kept_props' 'query_timeout' = '33'")
    quire.restart()
    connection = quire.connect("kept_props", "pw")
    assert run(connection, "SELECT @@query_timeout") == ((33,),)
    connection.close()
