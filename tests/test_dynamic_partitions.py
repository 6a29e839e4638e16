"""Doris's dynamic partitions: CREATE TABLE with dynamic_partition.* properties makes a partition
a period from now to `end` periods ahead (and back to `start` with create_history_partition), the
leader keeps them (a dropped one comes back, a partition wholly before `start` goes), bad rules
are Doris's 1105, and SHOW DYNAMIC PARTITION TABLES lists the tables with what the scheduler
last did. Through PyMySQL and the mariadb CLI against a `quire up` whose scheduler runs every
second."""

import datetime

import pytest

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

RULES = (
    "'dynamic_partition.time_unit' = 'DAY', 'dynamic_partition.start' = '-3', "
    "'dynamic_partition.end' = '2', 'dynamic_partition.prefix' = 'p', "
    "'dynamic_partition.buckets' = '3'"
)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    started = QuireProcess(
        tmp_path_factory.mktemp("dynamic"),
        overrides={"dynamic_partition_check_interval_seconds": 1},
    ).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def db(node):
    connection = node.connect(autocommit=True)
    run(connection, "CREATE DATABASE dp")
    run(connection, "USE dp")
    yield connection
    connection.close()


def partitions(connection, table: str) -> list[str]:
    return [row[1] for row in run(connection, f"SHOW PARTITIONS FROM {table}")]


def day_name(offset: int) -> str:
    return f"p{datetime.date.today() + datetime.timedelta(days=offset):%Y%m%d}"


def test_create_table_makes_the_partitions_ahead_and_rows_go_in(node, db):
    run(
        db,
        "CREATE TABLE daily (k INT, dt DATE) DUPLICATE KEY(k) PARTITION BY RANGE(dt) () "
        f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({RULES})",
    )
    assert partitions(db, "daily") == [day_name(offset) for offset in range(0, 3)]
    buckets = {row[8] for row in run(db, "SHOW PARTITIONS FROM daily")}
    assert buckets == {3}
    run(db, "INSERT INTO daily VALUES (1, CURDATE()), (2, CURDATE() + INTERVAL 2 DAY)")
    assert run(db, f"SELECT k FROM daily PARTITION ({day_name(2)})") == ((2,),)
    assert error_of(db, "INSERT INTO daily VALUES (3, CURDATE() + INTERVAL 9 DAY)")[0] == 1105
    run(
        db,
        "CREATE TABLE history (k INT, dt DATETIME) DUPLICATE KEY(k) PARTITION BY RANGE(dt) () "
        f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({RULES}, "
        "'dynamic_partition.create_history_partition' = 'true')",
    )
    assert partitions(db, "history") == [day_name(offset) for offset in range(-3, 3)]


def test_the_leader_keeps_the_partitions_the_rules_want(node, db):
    run(
        db,
        "CREATE TABLE kept (k INT, dt DATE) DUPLICATE KEY(k) PARTITION BY RANGE(dt) "
        "(PARTITION old VALUES LESS THAN ('2001-01-01')) "
        f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({RULES})",
    )
    # 'old' lies wholly before start (3 days back): gone at once
    assert partitions(db, "kept") == [day_name(offset) for offset in range(0, 3)]
    # added again, the scheduler's next run drops it; a partition dropped by hand comes back
    run(db, "ALTER TABLE kept ADD PARTITION old VALUES [('2000-01-01'), ('2001-01-01'))")
    run(db, f"ALTER TABLE kept DROP PARTITION {day_name(1)}")
    wait_until(
        lambda: partitions(db, "kept") == [day_name(offset) for offset in range(0, 3)],
        30,
        "the scheduler's run",
    )
    shown = {row[0]: row for row in run(db, "SHOW DYNAMIC PARTITION TABLES")}
    assert set(shown) == {"daily", "history", "kept"}
    row = shown["kept"]
    assert row[1:8] == ("true", "DAY", "-3", "2", "p", "3", "3")
    assert row[10] != "NULL" and row[12] == "NORMAL" and "old" in row[14]
    run(db, "ALTER TABLE kept SET ('dynamic_partition.enable' = 'false')")
    run(db, f"ALTER TABLE kept DROP PARTITION {day_name(2)}")
    scheduled = shown["kept"][11]
    wait_until(
        lambda: (
            {r[0]: r for r in run(db, "SHOW DYNAMIC PARTITION TABLES")}["kept"][11] != scheduled
        ),
        30,
        "another run",
    )
    assert day_name(2) not in partitions(db, "kept")  # switched off: left as it is
    done = mariadb(node, "dp", "--batch", "-N", "-e", "SHOW DYNAMIC PARTITION TABLES FROM dp")
    assert done.returncode == 0 and done.stdout.count("\n") == 3, done.stderr


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ("'dynamic_partition.time_unit' = 'DAY', 'dynamic_partition.end' = '3'",
         "Must assign dynamic_partition.prefix properties"),
        ("'dynamic_partition.time_unit' = 'MINUTE', 'dynamic_partition.end' = '3', "
         "'dynamic_partition.prefix' = 'p'",
         "Unsupported time unit MINUTE. Expect HOUR/DAY/WEEK/MONTH/YEAR."),
        ("'dynamic_partition.time_unit' = 'DAY', 'dynamic_partition.end' = '0', "
         "'dynamic_partition.prefix' = 'p'", "Dynamic partition end must greater than 0"),
        ("'dynamic_partition.time_unit' = 'DAY', 'dynamic_partition.start' = '1', "
         "'dynamic_partition.end' = '3', 'dynamic_partition.prefix' = 'p'",
         "Dynamic partition start must less than 0"),
        ("'dynamic_partition.time_unit' = 'HOUR', 'dynamic_partition.end' = '3', "
         "'dynamic_partition.prefix' = 'p'",
         "Time unit is HOUR but the partition column is DATE: use DATETIME"),
    ],
)  # fmt: skip
def test_rules_doris_would_not_take_are_refused(db, properties, message):
    assert error_of(
        db,
        "CREATE TABLE refused (k INT, dt DATE) DUPLICATE KEY(k) PARTITION BY RANGE(dt) () "
        f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({properties})",
    ) == (1105, message)
    assert ("refused",) not in run(db, "SHOW TABLES")


def test_weeks_and_months_start_where_the_rules_say(db):
    run(
        db,
        "CREATE TABLE weekly (k INT, dt DATE) DUPLICATE KEY(k) PARTITION BY RANGE(dt) () "
        "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('dynamic_partition.time_unit' = 'WEEK', "
        "'dynamic_partition.end' = '1', 'dynamic_partition.prefix' = 'w', "
        "'dynamic_partition.start_day_of_week' = '3')",
    )
    today = datetime.date.today()
    wednesday = today - datetime.timedelta(days=(today.isoweekday() - 3) % 7)
    rows = run(db, "SHOW PARTITIONS FROM weekly")
    year, week, _ = wednesday.isocalendar()
    assert [row[1] for row in rows] == [
        f"w{year}_{week:02d}",
        "w{}_{:02d}".format(*(wednesday + datetime.timedelta(weeks=1)).isocalendar()[:2]),
    ]
    assert str(wednesday) in rows[0][6]
