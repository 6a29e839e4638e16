"""Privileges and accounts attacked as a low-privilege user would: through PyMySQL, the mariadb CLI
(which shows the SQLSTATE) and HTTP basic auth, against a real `quire up`."""

import itertools
import threading

import pytest
import requests

from tests.harness import error_of, login_error, mariadb_error, run, wait_until

HTTP_TIMEOUT_SECONDS = 30


def code_of(connection, sql) -> int:
    return error_of(connection, sql)[0]


def http_status(quire, user: str, password: str) -> int:
    url = f"http://127.0.0.1:{quire.http_port}/dump"
    return requests.get(url, auth=(user, password), timeout=HTTP_TIMEOUT_SECONDS).status_code


@pytest.fixture(scope="module")
def root(root):
    """The root connection, with what this module's tests share."""
    run(root, "CREATE DATABASE db1")
    run(root, "CREATE TABLE db1.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE DATABASE db2")
    run(
        root,
        "CREATE TABLE db2.secret_t (d DATE, salary INT COMMENT 'who earns what') "
        'PARTITION BY RANGE(d) (PARTITION p2025 VALUES LESS THAN ("2026-01-01")) '
        "DISTRIBUTED BY HASH(d) BUCKETS 2 COMMENT 'payroll'",
    )
    return root


def user(quire, root, name: str, *grants: str):
    """A fresh account 'name'@'%' with password 'pw' holding `grants`, logged in."""
    run(root, f"CREATE USER {name} IDENTIFIED BY 'pw'")
    for grant in grants:
        run(root, f"GRANT {grant} TO {name}")
    return quire.connect(name, "pw")


def grants_of(root, account: str) -> set[str]:
    return {row[0] for row in run(root, f"SHOW GRANTS FOR {account}")}


# -- finding 3: GRANT_PRIV grants only what its holder has ------------------------------------


def test_global_grant_priv_cannot_make_itself_admin(quire, root):
    granter = user(quire, root, "g_global", "GRANT_PRIV ON *.*")
    before = grants_of(root, "g_global")
    assert code_of(granter, "GRANT ADMIN_PRIV ON *.* TO g_global") == 1227
    assert code_of(granter, "GRANT ALL ON *.* TO g_global") == 1227
    assert code_of(granter, "GRANT NODE_PRIV ON *.* TO g_global") == 1227
    assert code_of(granter, "GRANT SELECT ON db2.* TO g_global") == 1044
    assert code_of(granter, "GRANT DROP ON db2.secret_t TO g_global") == 1142
    assert grants_of(root, "g_global") == before
    assert "ERROR 1227 (42000)" in mariadb_error(
        quire, "g_global", "pw", "GRANT ADMIN_PRIV ON *.* TO g_global"
    )
    assert code_of(granter, "SHOW CREATE TABLE db2.secret_t") == 1142
    # Nor through an admin's account: its password and grants are out of reach.
    boss = user(quire, root, "boss", "ADMIN_PRIV ON *.*")
    assert code_of(granter, "SET PASSWORD FOR boss = PASSWORD('taken')") == 1227
    assert code_of(granter, "REVOKE ADMIN_PRIV ON *.* FROM boss") == 1227
    assert code_of(granter, "DROP USER boss") == 1227
    quire.connect("boss", "pw").close()
    boss.close()
    granter.close()


def test_database_grant_priv_cannot_give_what_it_lacks(quire, root):
    granter = user(quire, root, "g_db", "GRANT_PRIV ON db1.*")
    other = user(quire, root, "g_other")
    assert code_of(granter, "GRANT ALL ON db1.* TO g_db") == 1044
    assert code_of(granter, "GRANT DROP, ALTER ON db1.* TO g_other") == 1044
    assert code_of(granter, "GRANT DROP ON db1.t TO g_other") == 1142
    assert code_of(granter, "GRANT SELECT ON db2.* TO g_other") == 1044
    assert code_of(granter, "GRANT SELECT ON *.* TO g_other") == 1227
    assert grants_of(root, "g_other") == {"GRANT USAGE_PRIV ON *.* TO 'g_other'@'%'"}
    assert code_of(other, "DROP TABLE db1.t") == 1142
    assert "ERROR 1044 (42000)" in mariadb_error(
        quire, "g_db", "pw", "GRANT DROP, ALTER ON db1.* TO g_other"
    )
    # Revoking takes the same privileges as granting.
    run(root, "GRANT DROP ON db1.* TO g_other")
    assert code_of(granter, "REVOKE DROP ON db1.* FROM g_other") == 1044
    # What it holds at that level (or above) it may pass on.
    run(root, "GRANT SELECT ON db1.* TO g_db")
    run(granter, "GRANT SELECT ON db1.* TO g_other")
    run(granter, "GRANT SELECT ON db1.t TO g_other")
    run(granter, "REVOKE SELECT ON db1.t FROM g_other")
    assert "GRANT DROP_PRIV, SELECT_PRIV ON db1.* TO 'g_other'@'%'" in grants_of(root, "g_other")
    other.close()
    granter.close()


# -- finding 4: NODE_PRIV covers node operations only -----------------------------------------


def test_node_priv_is_not_a_superuser(quire, root):
    operator = user(quire, root, "node_op", "NODE_PRIV ON *.*")
    assert run(operator, "SHOW DATABASES") == (("information_schema",),)
    assert code_of(operator, "SHOW CREATE TABLE db2.secret_t") == 1142
    assert code_of(operator, "DESC db2.secret_t") == 1142
    assert (
        run(
            operator,
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'db2'",
        )
        == ()
    )
    assert code_of(operator, "CREATE USER node_friend") == 1227
    assert code_of(operator, "GRANT SELECT ON db2.* TO node_op") == 1044
    assert code_of(operator, "CREATE DATABASE node_db") == 1044
    assert code_of(operator, "ADMIN SHOW FRONTEND CONFIG") == 1227
    assert code_of(operator, "SET GLOBAL wait_timeout = 5") == 1227
    assert code_of(operator, "SHOW PROC '/dbs'") == 1227
    assert "ERROR 1227 (42000)" in mariadb_error(quire, "node_op", "pw", "CREATE USER node_friend")
    assert http_status(quire, "node_op", "pw") == 401
    # What it is for: the nodes.
    assert len(run(operator, "SHOW FRONTENDS")) == 1
    assert len(run(operator, "SHOW PROC '/frontends'")) == 1
    assert run(operator, "SHOW BACKENDS") == ()
    # Past the privilege check (backends come with the data plane):
    assert code_of(operator, "ALTER SYSTEM ADD BACKEND '127.0.0.1:9050'") == 1235
    admin_only = user(quire, root, "admin_only", "ADMIN_PRIV ON *.*")
    assert code_of(admin_only, "ALTER SYSTEM ADD BACKEND '127.0.0.1:9050'") == 1227
    admin_only.close()
    operator.close()


# -- finding 7: CREATE TABLE ... LIKE reads its source ----------------------------------------


def test_create_table_like_needs_select_on_the_source(quire, root):
    creator = user(quire, root, "creator", "CREATE_PRIV ON db1.*")
    denied = error_of(creator, "CREATE TABLE db1.copied LIKE db2.secret_t")
    missing = error_of(creator, "CREATE TABLE db1.copied LIKE db2.nothing")
    assert denied[0] == missing[0] == 1142
    assert denied[1].replace("secret_t", "nothing") == missing[1]
    assert "ERROR 1142 (42000)" in mariadb_error(
        quire, "creator", "pw", "CREATE TABLE db1.copied LIKE db2.secret_t"
    )
    assert ("copied",) not in run(root, "SHOW TABLES FROM db1")
    run(root, "GRANT SELECT ON db2.secret_t TO creator")
    run(creator, "CREATE TABLE db1.copied LIKE db2.secret_t")
    assert "payroll" in run(root, "SHOW CREATE TABLE db1.copied")[0][1]
    creator.close()


# -- finding 8: an account is user@host -------------------------------------------------------


def current_user(connection) -> str:
    return run(connection, "SELECT CURRENT_USER()")[0][0]


def test_an_account_for_another_host_does_not_log_in_here(quire, root):
    run(root, "CREATE USER 'h1'@'10.0.0.1' IDENTIFIED BY 'pw'")
    run(root, "GRANT ADMIN_PRIV ON *.* TO 'h1'@'10.0.0.1'")
    assert login_error(quire, "h1", "pw")[0] == 1045
    assert http_status(quire, "h1", "pw") == 401
    run(root, "CREATE USER 'h1'@'127.0.0.2' IDENTIFIED BY 'pw2'")
    assert login_error(quire, "h1", "pw2")[0] == 1045
    from_two = quire.connect("h1", "pw2", bind_address="127.0.0.2")
    assert current_user(from_two) == "h1@127.0.0.2"
    from_two.close()


def test_the_most_specific_host_wins_and_statements_name_accounts_exactly(quire, root):
    run(root, "CREATE USER 'dup'@'127.0.0.2' IDENTIFIED BY 'admin-pw'")
    run(root, "GRANT ADMIN_PRIV ON *.* TO 'dup'@'127.0.0.2'")
    run(root, "CREATE USER 'dup'@'%' IDENTIFIED BY 'plain-pw'")
    run(root, "CREATE USER 'dup'@'127.0.0.%' IDENTIFIED BY 'pattern-pw'")

    anywhere = quire.connect("dup", "pattern-pw")  # from 127.0.0.1: '127.0.0.%' before '%'
    assert current_user(anywhere) == "dup@127.0.0.%"
    anywhere.close()
    run(root, "DROP USER 'dup'@'127.0.0.%'")
    plain = quire.connect("dup", "plain-pw")
    assert current_user(plain) == "dup@%"
    assert login_error(quire, "dup", "admin-pw")[0] == 1045
    assert run(plain, "SHOW GRANTS") == (("GRANT USAGE_PRIV ON *.* TO 'dup'@'%'",),)
    assert code_of(plain, "SHOW FRONTENDS") == 1227
    assert code_of(plain, "SHOW GRANTS FOR 'dup'@'127.0.0.2'") == 1044
    assert code_of(plain, "SET PASSWORD FOR 'dup'@'127.0.0.2' = PASSWORD('mine')") == 1227

    # Its own password is its own account's only.
    run(plain, "SET PASSWORD = PASSWORD('plain-pw2')")
    plain.close()
    quire.connect("dup", "plain-pw2").close()
    admin = quire.connect("dup", "admin-pw", bind_address="127.0.0.2")
    assert current_user(admin) == "dup@127.0.0.2"
    assert len(run(admin, "SHOW FRONTENDS")) == 1
    admin.close()
    assert login_error(quire, "dup", "plain-pw2", bind_address="127.0.0.2")[0] == 1045

    # GRANT and DROP USER change the account they name, not its namesakes.
    run(root, "GRANT SELECT ON db1.* TO 'dup'@'%'")
    assert "ADMIN_PRIV" not in str(run(root, "SHOW GRANTS FOR 'dup'@'%'"))
    run(root, "DROP USER 'dup'@'%'")
    assert login_error(quire, "dup", "plain-pw2")[0] == 1045
    quire.connect("dup", "admin-pw", bind_address="127.0.0.2").close()


def test_localhost_admits_loopback_clients_and_sessions_keep_their_account(quire, root):
    run(root, "CREATE USER 'loc'@'localhost' IDENTIFIED BY 'pw'")
    local = quire.connect("loc", "pw")
    assert current_user(local) == "loc@localhost"
    run(root, "CREATE USER 'loc'@'%' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT ON db1.* TO 'loc'@'%'")
    # The session goes on as the account it logged in as, not the one with the grants.
    assert code_of(local, "USE db1") == 1044
    run(root, "DROP USER 'loc'@'localhost'")
    assert code_of(local, "SELECT 1 FROM db1.t") == 1045
    local.close()


# -- finding 9: errors do not reveal what exists ----------------------------------------------


HIDDEN_PAIRS = [
    ("DESC db2.secret_t", "DESC db2.nothing", 1142),
    ("SHOW CREATE TABLE db2.secret_t", "SHOW CREATE TABLE db2.nothing", 1142),
    ("SHOW INDEX FROM db2.secret_t", "SHOW INDEX FROM db2.nothing", 1142),
    ("SHOW PARTITIONS FROM db2.secret_t", "SHOW PARTITIONS FROM db2.nothing", 1142),
    ("SHOW CREATE TABLE db2.secret_t", "SHOW CREATE TABLE nodb.secret_t", 1142),
    ("USE db2", "USE nodb", 1044),
    ("SHOW TABLES FROM db2", "SHOW TABLES FROM nodb", 1044),
    ("SHOW TABLE STATUS FROM db2", "SHOW TABLE STATUS FROM nodb", 1044),
    ("SHOW CREATE DATABASE db2", "SHOW CREATE DATABASE nodb", 1044),
    ("SELECT * FROM db2.secret_t", "SELECT * FROM db2.nothing", 1142),
    ("SELECT * FROM db2.secret_t", "SELECT * FROM nodb.secret_t", 1142),
    ("DROP TABLE db2.secret_t", "DROP TABLE nodb.secret_t", 1142),
    ("ALTER TABLE db2.secret_t ADD COLUMN x INT", "ALTER TABLE db2.nothing ADD COLUMN x INT", 1142),
    ("CREATE TABLE db2.mine (k INT)", "CREATE TABLE nodb.mine (k INT)", 1142),
]


@pytest.fixture(scope="module")
def outsider(quire, root):
    """A user that may read db1 and nothing else."""
    connection = user(quire, root, "outsider", "SELECT ON db1.*")
    yield connection
    connection.close()


@pytest.mark.parametrize(("existing", "missing", "code"), HIDDEN_PAIRS)
def test_errors_do_not_reveal_what_exists(quire, outsider, existing, missing, code):
    seen = error_of(outsider, existing)
    unseen = error_of(outsider, missing)
    assert seen[0] == unseen[0] == code, (seen, unseen)
    renamed = seen[1]
    if "nothing" in missing:
        renamed = renamed.replace("secret_t", "nothing")
    if "nodb" in missing:
        renamed = renamed.replace("db2", "nodb")
    assert renamed == unseen[1]
    cli_seen = mariadb_error(quire, "outsider", "pw", existing)
    cli_unseen = mariadb_error(quire, "outsider", "pw", missing)
    assert cli_seen.startswith(f"ERROR {code} (42000)"), cli_seen
    assert cli_unseen.startswith(f"ERROR {code} (42000)"), cli_unseen


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("DESC db2.nothing", 1051),  # as Doris
        ("USE nodb", 1049),
        ("SELECT * FROM db2.nothing", 1146),
    ],
    ids=["no table", "no database", "select from no table"],
)
def test_an_administrator_still_learns_what_does_not_exist(root, sql, code):
    assert code_of(root, sql) == code


def test_an_administrator_reads_a_table_it_did_not_create(root):
    assert run(root, "SELECT * FROM db2.secret_t") == ()


# -- SHOW FULL PROCESSLIST does not show passwords -------------------------------------------


def test_processlist_masks_the_passwords_of_running_statements(quire, root):
    run(root, "CREATE USER victim IDENTIFIED BY 'first'")
    stop = threading.Event()

    def change_passwords():
        with quire.connect() as connection:
            for n in itertools.count():
                if stop.is_set():
                    return
                run(connection, f"SET PASSWORD FOR victim = PASSWORD('s3cret-{n}')")
                run(connection, f"CREATE USER victim_{n} IDENTIFIED BY 's3cret-{n}'")

    writer = threading.Thread(target=change_passwords, daemon=True)
    writer.start()
    shown: list[str] = []

    def seen_both() -> bool:
        for row in run(root, "SHOW FULL PROCESSLIST"):
            if row[7] and "victim" in row[7]:
                shown.append(row[7])
        return any(i.startswith("SET") for i in shown) and any(
            i.startswith("CREATE") for i in shown
        )

    try:
        wait_until(seen_both, 120, "the password statements in the processlist", interval=0)
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not [info for info in shown if "s3cret" in info], shown
    assert any(info.startswith("SET PASSWORD FOR victim = PASSWORD(<secret>)") for info in shown)
    assert any("IDENTIFIED BY <secret>" in info for info in shown)
