"""Every statement of the MySQL front against a real `quire up`, through PyMySQL."""

import pymysql
import pytest

from tests.harness import error_of, login_error, mariadb, run, wait_until


def expect_error(connection, sql, code):
    error = error_of(connection, sql)
    assert error[0] == code, error


def test_databases(root):
    run(root, "CREATE DATABASE db1")
    run(root, "CREATE DATABASE IF NOT EXISTS db1")
    expect_error(root, "CREATE DATABASE db1", 1007)
    assert ("db1",) in run(root, "SHOW DATABASES")
    assert run(root, "SHOW DATABASES LIKE 'db_'") == (("db1",),)
    run(root, "CREATE SCHEMA gone")
    run(root, "DROP DATABASE gone")
    run(root, "DROP DATABASE IF EXISTS gone")
    expect_error(root, "DROP DATABASE gone", 1008)
    expect_error(root, "USE nowhere", 1049)


def test_create_table_doris_syntax_and_show_create_round_trip(root):
    run(root, "CREATE DATABASE IF NOT EXISTS shop")
    run(root, "USE shop")
    run(
        root,
        "CREATE TABLE t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 8 "
        'PROPERTIES ("replication_num" = "1")',
    )
    run(
        root,
        "CREATE TABLE sales (d DATE NOT NULL, shop INT NOT NULL COMMENT 'the shop', "
        'amount DECIMAL(10,2) SUM DEFAULT "0") AGGREGATE KEY(d, shop) '
        'PARTITION BY RANGE(d) (PARTITION p2025 VALUES LESS THAN ("2026-01-01"), '
        "PARTITION pmax VALUES LESS THAN MAXVALUE) DISTRIBUTED BY HASH(shop) BUCKETS 4 COMMENT 'money'",
    )
    assert run(root, "SHOW TABLES") == (("sales",), ("t",))
    for name in ("t", "sales"):
        created = run(root, f"SHOW CREATE TABLE {name}")[0][1]
        copy = created.replace(f"CREATE TABLE `{name}`", f"CREATE TABLE `{name}_copy`", 1)
        run(root, copy)
        again = run(root, f"SHOW CREATE TABLE {name}_copy")[0][1]
        assert again.replace(f"`{name}_copy`", f"`{name}`", 1) == created
    assert (
        "amount` decimal(10,2) SUM NOT NULL DEFAULT '0'"
        in run(root, "SHOW CREATE TABLE sales")[0][1]
        or "SUM" in run(root, "SHOW CREATE TABLE sales")[0][1]
    )
    partitions = run(root, "SHOW PARTITIONS FROM sales")
    assert [row[1] for row in partitions] == ["p2025", "pmax"]
    assert sum(row[8] for row in partitions) == 8  # Buckets, after Doris's columns before it
    tablets = run(root, "SHOW TABLETS FROM t")
    assert len(tablets) == 8
    tablet = run(root, f"SHOW TABLET {tablets[3][0]}")
    assert tablet[0][:3] == ("shop", "t", "t")


def test_create_table_mysql_syntax_like_and_errors(root):
    run(root, "USE shop")
    run(
        root,
        "CREATE TABLE users (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(50) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    )
    assert "UNIQUE KEY(`id`)" in run(root, "SHOW CREATE TABLE users")[0][1]
    run(root, "CREATE TABLE users2 LIKE users")
    assert run(root, "DESC users2") == run(root, "DESC users")
    expect_error(root, "CREATE TABLE users (a INT)", 1050)
    run(root, "CREATE TABLE IF NOT EXISTS users (a INT)")
    run(root, "DROP TABLE IF EXISTS nothing")
    fresh = pymysql.connect(
        host=root.host, port=root.port, user="root", password="", autocommit=True
    )
    expect_error(fresh, "CREATE TABLE x (a INT)", 1046)
    fresh.close()


@pytest.mark.parametrize(
    "statement, code",
    [
        ("CREATE TABLE bad (a INT, a INT)", 1060),
        ("CREATE TABLE bad (a FOO)", 1064),
        ("CREATE TABLE nowhere.t (a INT)", 1049),
        ("CREATE TABLE bad (a INT) DUPLICATE KEY(zz)", 1072),
        ("DROP TABLE nothing", 1051),
        ("SHOW CREATE TABLE nothing", 1146),
    ],
)
def test_bad_table_statements_get_their_error(root, statement, code):
    run(root, "USE shop")
    expect_error(root, statement, code)


def test_alter_table(root):
    run(root, "USE shop")
    run(
        root,
        "CREATE TABLE a (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(root, "ALTER TABLE a ADD COLUMN c INT DEFAULT \"0\" COMMENT 'cc' AFTER k")
    assert [row[0] for row in run(root, "DESC a")] == ["k", "c", "v"]
    run(root, "ALTER TABLE a MODIFY COLUMN v VARCHAR(40) NOT NULL")
    assert run(root, "SHOW COLUMNS FROM a LIKE 'v'")[0][:3] == ("v", "varchar(40)", "NO")
    run(root, "ALTER TABLE a DROP COLUMN c")
    expect_error(root, "ALTER TABLE a DROP COLUMN c", 1091)
    expect_error(root, "ALTER TABLE a ADD COLUMN v INT", 1060)
    expect_error(root, "ALTER TABLE a MODIFY COLUMN zz INT", 1054)
    run(root, "ALTER TABLE a RENAME b")
    assert ("b",) in run(root, "SHOW TABLES") and ("a",) not in run(root, "SHOW TABLES")
    full = run(root, "SHOW FULL COLUMNS FROM b")
    assert full[0][0] == "k" and len(full[0]) == 9
    run(root, "DROP TABLE b")


def test_information_schema_and_connect_time_queries(root):
    run(root, "USE shop")
    assert run(root, "SELECT 1") == ((1,),)
    assert "Quire" in run(root, "SELECT @@version_comment LIMIT 1")[0][0]
    assert run(root, "SELECT DATABASE()") == (("shop",),)
    assert run(root, "SELECT @@session.autocommit, @@max_allowed_packet")[0][0] == 1
    run(root, "SET NAMES utf8mb4")
    run(root, "SET sql_mode = concat(@@sql_mode, ',STRICT_TRANS_TABLES')")
    assert "STRICT_TRANS_TABLES" in run(root, "SELECT @@sql_mode")[0][0]
    run(root, "SET SESSION wait_timeout = 100")
    assert run(root, "SHOW VARIABLES LIKE 'wait_timeout'") == (("wait_timeout", "100"),)
    expect_error(root, "SET no_such_variable = 1", 1193)
    schemata = run(root, "SELECT schema_name FROM information_schema.schemata ORDER BY schema_name")
    assert ("shop",) in schemata and ("information_schema",) in schemata
    tables = run(
        root,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop' ORDER BY 1",
    )
    assert ("t",) in tables
    columns = run(
        root,
        "SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns WHERE table_schema='shop' AND table_name='sales' ORDER BY ordinal_position",
    )
    assert columns[2] == ("amount", "decimal", 10, 2)
    expect_error(root, "SELEC 1", 1064)


def test_users_grants_and_privileges(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS priv")
    run(root, "CREATE TABLE priv.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "CREATE DATABASE IF NOT EXISTS secret")
    run(root, "CREATE USER alice IDENTIFIED BY 'pw1'")
    expect_error(root, "CREATE USER alice", 1396)
    assert login_error(quire, "alice", "wrong")[0] == 1045
    alice = quire.connect("alice", "pw1")
    assert run(alice, "SHOW DATABASES") == (("information_schema",),)
    for statement, code in [
        ("USE priv", 1044),
        ("CREATE DATABASE mine", 1044),
        ("CREATE USER bob", 1227),
        ("SHOW FRONTENDS", 1227),
        ("ADMIN SHOW FRONTEND CONFIG", 1227),
        ("ALTER SYSTEM ADD FOLLOWER '127.0.0.1:1'", 1227),
    ]:
        expect_error(alice, statement, code)
    run(root, "GRANT SELECT ON priv.* TO alice")
    assert ("priv",) in run(alice, "SHOW DATABASES") and ("secret",) not in run(
        alice, "SHOW DATABASES"
    )
    run(alice, "USE priv")
    assert run(alice, "SHOW TABLES") == (("t",),)
    expect_error(alice, "DROP TABLE priv.t", 1142)
    expect_error(alice, "CREATE TABLE priv.u (k INT)", 1142)
    grants = run(root, "SHOW GRANTS FOR alice")
    assert any("SELECT_PRIV" in row[0] and "priv.*" in row[0] for row in grants)
    run(root, "GRANT CREATE_PRIV ON priv.u TO alice")
    run(alice, "CREATE TABLE priv.u (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(root, "REVOKE SELECT ON priv.* FROM alice")
    expect_error(root, "REVOKE SELECT ON priv.* FROM alice", 1141)
    run(alice, "SET PASSWORD = PASSWORD('pw2')")
    alice.close()
    quire.connect("alice", "pw2").close()
    run(root, "ALTER USER alice IDENTIFIED BY 'pw3'")
    quire.connect("alice", "pw3").close()
    run(root, "DROP USER alice")
    expect_error(root, "DROP USER alice", 1396)
    assert login_error(quire, "alice", "pw3")[0] == 1045


def test_admin_statements(quire, root):
    frontends = run(root, "SHOW FRONTENDS")
    assert len(frontends) == 1
    with root.cursor() as cursor:
        cursor.execute("SHOW FRONTENDS")
        names = [d[0] for d in cursor.description]
    assert names[:8] == [
        "Name",
        "Host",
        "EditLogPort",
        "HttpPort",
        "QueryPort",
        "RpcPort",
        "Role",
        "IsMaster",
    ]
    assert frontends[0][6] == "FOLLOWER" and frontends[0][7] == "true"
    assert ("dbs",) in run(root, "SHOW PROC '/'")
    dbs = run(root, "SHOW PROC '/dbs'")
    shop = next(row for row in dbs if row[1] == "shop")
    assert any(row[1] == "t" for row in run(root, f"SHOW PROC '/dbs/{shop[0]}'"))
    assert run(root, "SHOW PROC '/frontends'")[0][0] == frontends[0][0]
    expect_error(root, "SHOW PROC '/nothing'", 1105)
    config = run(root, "ADMIN SHOW FRONTEND CONFIG LIKE 'edit_log_roll%'")
    assert config[0][:2] == ("edit_log_roll_num", "50000")
    run(root, "ADMIN SET FRONTEND CONFIG ('edit_log_roll_num' = '60000')")
    assert run(root, "ADMIN SHOW FRONTEND CONFIG LIKE 'edit_log_roll%'")[0][1] == "60000"
    expect_error(root, "ADMIN SET FRONTEND CONFIG ('query_port' = '1')", 1105)


def test_processlist_and_kill(quire, root):
    other = quire.connect()
    other_id = run(other, "SELECT CONNECTION_ID()")[0][0]
    ids = [row[0] for row in run(root, "SHOW PROCESSLIST")]
    assert other_id in ids
    run(root, f"KILL {other_id}")
    with pytest.raises(pymysql.MySQLError):
        run(other, "SELECT 1")
    expect_error(root, "KILL 999999", 1094)


def test_show_create_table_writes_every_range_partition_in_one_form(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS ranges")
    run(
        root,
        "CREATE TABLE ranges.written (d DATE, v INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2020-01-01'), PARTITION p2 VALUES LESS THAN "
        "('2021-01-01'), PARTITION pmax VALUES LESS THAN MAXVALUE) DISTRIBUTED BY HASH(d) BUCKETS 1",
    )
    text = run(root, "SHOW CREATE TABLE ranges.written")[0][1]
    assert text.count("VALUES LESS THAN") == 3 and "VALUES [" not in text

    run(
        root,
        "CREATE TABLE ranges.gapped (d DATE, v INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2020-01-01'), PARTITION p2 VALUES LESS THAN "
        "('2021-01-01')) DISTRIBUTED BY HASH(d) BUCKETS 1",
    )
    run(root, "ALTER TABLE ranges.gapped ADD PARTITION p3 VALUES [('2022-01-01'), ('2023-01-01'))")
    done = mariadb(quire, "--batch", "--raw", "-N", "-e", "SHOW CREATE TABLE ranges.gapped")
    assert done.returncode == 0, done.stderr
    assert "LESS THAN" not in done.stdout
    for bounds in (
        '[("0000-01-01"), ("2020-01-01"))',
        '[("2020-01-01"), ("2021-01-01"))',
        '[("2022-01-01"), ("2023-01-01"))',
    ):
        assert bounds in done.stdout, done.stdout
    # What SHOW CREATE TABLE writes creates the same table again.
    again = text.replace("CREATE TABLE `written`", "CREATE TABLE ranges.written_again")
    run(root, again)
    assert run(root, "SHOW CREATE TABLE ranges.written_again")[0][1] == text.replace(
        "`written`", "`written_again`"
    )


@pytest.mark.parametrize(
    "table, statement, code, message",
    [
        ("agg", "ALTER TABLE keys_db.agg ADD COLUMN region INT", 0, ""),
        ("agg", "ALTER TABLE keys_db.agg DROP COLUMN d", 0, ""),
        ("agg_replace", "ALTER TABLE keys_db.agg_replace DROP COLUMN d", 1105, "REPLACE"),
        ("dup", "ALTER TABLE keys_db.dup DROP COLUMN d", 0, ""),
        ("dup", "ALTER TABLE keys_db.dup ADD COLUMN zone INT KEY", 0, ""),
        ("dup_one", "ALTER TABLE keys_db.dup_one DROP COLUMN k", 1105, "No key column left"),
        ("uniq", "ALTER TABLE keys_db.uniq DROP COLUMN k", 1105, "Unique data model"),
    ],
)
def test_key_columns_change_as_in_doris(quire, root, table, statement, code, message):
    definitions = {
        "agg": "(k INT, d DATE, v BIGINT SUM) AGGREGATE KEY(k, d)",
        "agg_replace": "(k INT, d DATE, v BIGINT REPLACE) AGGREGATE KEY(k, d)",
        "dup": "(k INT, d DATE, v BIGINT) DUPLICATE KEY(k, d)",
        "dup_one": "(k INT, v BIGINT) DUPLICATE KEY(k)",
        "uniq": "(k INT, d DATE, v BIGINT) UNIQUE KEY(k, d)",
    }
    run(root, "CREATE DATABASE IF NOT EXISTS keys_db")
    run(root, f"DROP TABLE IF EXISTS keys_db.{table} FORCE")
    run(
        root,
        f"CREATE TABLE keys_db.{table} {definitions[table]} DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    if code:
        got, text = error_of(root, statement)
        assert got == code and message in text, text
        done = mariadb(quire, "-e", statement)
        assert f"ERROR {code} " in done.stderr and message in done.stderr, done.stderr
        return
    run(root, statement)  # key changes run as an ALTER job behind the answer, as in Doris
    wait_until(
        lambda: all(row[9] in ("FINISHED", "CANCELLED")
                    for row in run(root, "SHOW ALTER TABLE COLUMN FROM keys_db")),
        60,
        "the ALTER job",
    )  # fmt: skip
    created = run(root, f"SHOW CREATE TABLE keys_db.{table}")[0][1]
    keys = created.split("KEY(", 1)[1].split(")", 1)[0].replace("`", "").split(", ")
    columns = [row[0] for row in run(root, f"DESC keys_db.{table}")]
    assert columns[: len(keys)] == keys  # the keys lead the schema
    if "ADD" in statement:
        added = statement.split("ADD COLUMN ")[1].split()[0]
        assert keys[-1] == added  # after the other keys, before the values
    else:
        assert "d" not in keys and "d" not in columns


def test_the_internal_catalog_as_doris_names_it(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS in_catalog")
    run(root, "CREATE TABLE IF NOT EXISTS in_catalog.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    with root.cursor() as cursor:
        cursor.execute("SHOW CATALOGS")
        assert [d[0] for d in cursor.description] == [
            "CatalogId", "CatalogName", "Type", "IsCurrent", "CreateTime", "LastUpdateTime",
            "Comment",
        ]  # fmt: skip
        assert cursor.fetchall() == (
            (0, "internal", "internal", "yes", "UNRECORDED", None, "Doris internal catalog"),
        )
    assert run(root, "SHOW CATALOGS LIKE 'hive%'") == ()
    run(root, "SWITCH internal")
    assert error_of(root, "SWITCH hive") == (
        5086,
        "Unknown catalog 'hive'",
    )  # Doris's ERR_UNKNOWN_CATALOG
    done = mariadb(
        quire, "--batch", "-N", "-e", "SWITCH internal; USE internal.in_catalog; SHOW TABLES"
    )
    assert done.returncode == 0 and done.stdout.split() == ["t"], done.stderr
    assert run(root, "SHOW TABLES FROM internal.in_catalog") == (("t",),)
