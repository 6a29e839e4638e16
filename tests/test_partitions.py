"""Doris's partitioning as its users write it, against a real `quire up`: LIST and multi-column
partitions, batch ranges, partitions' own properties, temporary partitions with REPLACE
PARTITION, and REPLACE WITH TABLE; through PyMySQL and the mariadb CLI, and after a restart."""

import pytest

from tests.harness import QuireProcess, add_and_start, error_of, execute, mariadb, run, wait_until

COLUMN_INDEX = {"PartitionName": 1, "Range": 6, "Buckets": 8, "ReplicationNum": 9}


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE IF NOT EXISTS parts")
    run(root, "USE parts")
    return root


def partitions(connection, table, temporary=False):
    """{name: row} of SHOW [TEMPORARY] PARTITIONS, its columns Doris's."""
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {'TEMPORARY ' if temporary else ''}PARTITIONS FROM {table}")
        names = [d[0] for d in cursor.description]
        assert names[:10] == [
            "PartitionId", "PartitionName", "VisibleVersion", "VisibleVersionTime", "State",
            "PartitionKey", "Range", "DistributionKey", "Buckets", "ReplicationNum",
        ]  # fmt: skip
        return {row[1]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}


def ranges(connection, table, temporary=False):
    return {name: row["Range"] for name, row in partitions(connection, table, temporary).items()}


def assert_error(connection, quire, sql, code, text):
    """The same error through PyMySQL and the mariadb CLI (code, SQLSTATE and message)."""
    error = error_of(connection, sql)
    assert error[0] == code and text in error[1], (sql, error)
    done = mariadb(quire, "--batch", "-D", "parts", "-e", sql)
    assert done.returncode != 0
    assert f"ERROR {code} (" in done.stderr and text in done.stderr, done.stderr


def assert_round_trip(connection, table):
    """SHOW CREATE TABLE's text creates the same table again."""
    created = run(connection, f"SHOW CREATE TABLE {table}")[0][1]
    copy = created.replace(f"CREATE TABLE `{table}`", f"CREATE TABLE `{table}_again`", 1)
    run(connection, copy)
    again = run(connection, f"SHOW CREATE TABLE {table}_again")[0][1]
    assert again == copy
    assert ranges(connection, f"{table}_again") == ranges(connection, table)
    return created


LIST_TABLE = (
    "CREATE TABLE cities (k INT NOT NULL, city VARCHAR(20) NOT NULL, v INT) "
    "DUPLICATE KEY(k, city) PARTITION BY LIST(city) ("
    'PARTITION p_north VALUES IN ("Oslo", "Bergen"), PARTITION p_south VALUES IN ("Rome")) '
    "DISTRIBUTED BY HASH(k) BUCKETS 2"
)
MULTI_LIST_TABLE = (
    "CREATE TABLE pairs (k INT NOT NULL, city VARCHAR(20) NOT NULL, v INT) "
    "DUPLICATE KEY(k, city) PARTITION BY LIST(k, city) ("
    'PARTITION p1 VALUES IN (("1", "Oslo"), ("2", "Rome")), PARTITION p2 VALUES IN (("-0", "Oslo"))) '
    "DISTRIBUTED BY HASH(k) BUCKETS 1"
)


def test_list_partitions(quire, db):
    run(db, LIST_TABLE)
    run(db, MULTI_LIST_TABLE)
    assert ranges(db, "cities") == {
        "p_north": "[types: [VARCHAR]; keys: [Oslo]; , types: [VARCHAR]; keys: [Bergen]; ]",
        "p_south": "[types: [VARCHAR]; keys: [Rome]; ]",
    }
    assert ranges(db, "pairs") == {
        "p1": "[types: [INT, VARCHAR]; keys: [1, Oslo]; , types: [INT, VARCHAR]; keys: [2, Rome]; ]",
        "p2": "[types: [INT, VARCHAR]; keys: [0, Oslo]; ]",
    }
    assert partitions(db, "cities")["p_north"]["PartitionKey"] == "city"
    created = assert_round_trip(db, "cities")
    assert "PARTITION BY LIST(`city`)" in created
    assert 'PARTITION `p_north` VALUES IN ("Oslo","Bergen")' in created
    created = assert_round_trip(db, "pairs")
    assert 'PARTITION `p1` VALUES IN (("1","Oslo"),("2","Rome"))' in created
    run(db, 'ALTER TABLE cities ADD PARTITION p_east VALUES IN ("Tallinn")')
    assert set(ranges(db, "cities")) == {"p_north", "p_south", "p_east"}
    done = mariadb(quire, "--batch", "-N", "-D", "parts", "-e", "SHOW PARTITIONS FROM cities")
    assert done.returncode == 0, done.stderr
    assert "types: [VARCHAR]; keys: [Tallinn]; " in done.stdout


@pytest.mark.parametrize(
    "sql, code, text",
    [
        (
            "CREATE TABLE bad (k INT NOT NULL) PARTITION BY LIST(k) (PARTITION p1 VALUES IN "
            '("1", "2"), PARTITION p2 VALUES IN ("3", "+2"))',
            1105,
            "The partition key[(\"2\")] in partition item[('3','2')] is conflict with "
            'current partitionKeys[(("1"),("2"))]',
        ),
        (
            'CREATE TABLE bad (k INT NOT NULL) PARTITION BY LIST(k) (PARTITION p1 VALUES IN ("1", "01"))',
            1105,
            "has duplicate item",
        ),
        (
            'CREATE TABLE bad (k INT NOT NULL) PARTITION BY LIST(k) (PARTITION p1 VALUES IN ("abc"))',
            1105,
            "Invalid list value format: Invalid number format: abc",
        ),
        (
            "CREATE TABLE bad (k TINYINT NOT NULL) PARTITION BY LIST(k) "
            '(PARTITION p1 VALUES IN ("300"))',
            1105,
            "Number out of range[300]. type: TINYINT",
        ),
        (
            'CREATE TABLE bad (d DATE NOT NULL) PARTITION BY LIST(d) (PARTITION p1 VALUES IN ("2000-13-01"))',
            1105,
            "date literal [2000-13-01] is invalid",
        ),
        (
            "CREATE TABLE bad (k INT NOT NULL, c VARCHAR(5) NOT NULL) PARTITION BY LIST(k, c) "
            '(PARTITION p1 VALUES IN (("1")))',
            1105,
            "is not equal to partition column size[2]",
        ),
        (
            "CREATE TABLE bad (k INT NOT NULL) PARTITION BY LIST(k) "
            '(PARTITION p1 VALUES LESS THAN ("1"))',
            1105,
            "List partition expected 'VALUES IN'",
        ),
        (
            "CREATE TABLE bad (k INT NOT NULL) PARTITION BY LIST(k) "
            '(PARTITION p1 VALUES IN ("1"), PARTITION P1 VALUES IN ("2"))',
            1517,
            "Duplicate partition name P1",
        ),
        (
            "CREATE TABLE bad (i INT, k DOUBLE NOT NULL) DUPLICATE KEY(i) PARTITION BY LIST(k) "
            '(PARTITION p1 VALUES IN ("1"))',
            1105,
            "Column[k] type[DOUBLE] cannot be a list partition key.",
        ),
        ('ALTER TABLE cities ADD PARTITION p_x VALUES IN ("Rome")', 1105, "is conflict with"),
        ('ALTER TABLE cities ADD PARTITION p_south VALUES IN ("Paris")', 1517, "Duplicate"),
        (
            'ALTER TABLE pairs ADD PARTITION p3 VALUES IN (("0", "Oslo"))',
            1105,
            'The partition key[("0", "Oslo")]',
        ),
    ],
)
def test_list_partition_errors(quire, db, sql, code, text):
    assert_error(db, quire, sql, code, text)


MULTI_RANGE_TABLE = (
    "CREATE TABLE visits (d DATE NOT NULL, id INT NOT NULL, v INT) DUPLICATE KEY(d, id) "
    "PARTITION BY RANGE(d, id) ("
    'PARTITION p201701_1000 VALUES LESS THAN ("2017-02-01", "1000"), '
    'PARTITION p201702_2000 VALUES LESS THAN ("2017-03-01", "2000"), '
    'PARTITION p201703_all VALUES LESS THAN ("2017-04-01")) DISTRIBUTED BY HASH(id) BUCKETS 1'
)


def key(values):
    return f"types: [DATEV2, INT]; keys: [{values}]; "


def test_multi_column_range_partitions(quire, db):
    run(db, MULTI_RANGE_TABLE)
    assert ranges(db, "visits") == {
        "p201701_1000": f"[{key('0000-01-01, -2147483648')}..{key('2017-02-01, 1000')})",
        "p201702_2000": f"[{key('2017-02-01, 1000')}..{key('2017-03-01, 2000')})",
        "p201703_all": f"[{key('2017-03-01, 2000')}..{key('2017-04-01, -2147483648')})",
    }
    run(db, 'ALTER TABLE visits ADD PARTITION p_later VALUES [("2018-01-01", "5"), ("2018-02-01"))')
    assert ranges(db, "visits")["p_later"] == (
        f"[{key('2018-01-01, 5')}..{key('2018-02-01, -2147483648')})"
    )
    created = assert_round_trip(db, "visits")
    assert "PARTITION BY RANGE(`d`, `id`)" in created


@pytest.mark.parametrize(
    "sql, text",
    [
        (
            'ALTER TABLE visits ADD PARTITION p_in VALUES [("2017-02-15", "0"), ("2017-02-20", "0"))',
            f"Range [{key('2017-02-15, 0')}..{key('2017-02-20, 0')}) is intersected with range: "
            f"[{key('2017-02-01, 1000')}..{key('2017-03-01, 2000')})",
        ),
        (
            'ALTER TABLE visits ADD PARTITION p_same VALUES LESS THAN ("2017-03-01", "2000")',
            "is intersected with range",
        ),
        (
            'ALTER TABLE visits ADD PARTITION p_many VALUES LESS THAN ("2019-01-01", "1", "2")',
            "Partition values number is more than partition column number",
        ),
        (
            'ALTER TABLE visits ADD PARTITION p_empty VALUES [("2019-01-01"), ("2018-12-01"))',
            "The lower values must smaller than upper values",
        ),
        (
            'ALTER TABLE visits ADD PARTITION p_bad VALUES LESS THAN ("2019-01-01", "x")',
            "Invalid range value format: Invalid number format: x",
        ),
        (
            "CREATE TABLE bad (k VARCHAR(10) NOT NULL) PARTITION BY RANGE(k) "
            '(PARTITION p1 VALUES LESS THAN ("a"))',
            "Column[k] type[VARCHAR] cannot be a range partition key.",
        ),
    ],
)
def test_multi_column_range_errors(quire, db, sql, text):
    assert_error(db, quire, sql, 1105, text)


@pytest.mark.parametrize(
    "column, batch, names, last",
    [
        (
            "DATE",
            'FROM ("2000-01-01") TO ("2000-12-31") INTERVAL 1 MONTH',
            [f"p_2000{month:02d}" for month in range(1, 13)],
            '[("2000-12-01"), ("2000-12-31"))',
        ),
        (
            "DATE",
            'FROM ("2000-01-01") TO ("2003-01-01") INTERVAL 1 YEAR',
            ["p_2000", "p_2001", "p_2002"],
            '[("2002-01-01"), ("2003-01-01"))',
        ),
        (
            "DATE",
            'FROM ("2024-01-01") TO ("2024-01-22") INTERVAL 1 WEEK',
            ["p_2024_01", "p_2024_02", "p_2024_03"],
            '[("2024-01-15"), ("2024-01-22"))',
        ),
        (
            "DATE",
            'FROM ("2000-01-01") TO ("2000-01-04") INTERVAL 1 DAY',
            ["p_20000101", "p_20000102", "p_20000103"],
            '[("2000-01-03"), ("2000-01-04"))',
        ),
        (
            "DATETIME",
            'FROM ("2000-01-01 00:00:00") TO ("2000-01-01 03:00:00") INTERVAL 1 HOUR',
            ["p_2000010100", "p_2000010101", "p_2000010102"],
            '[("2000-01-01 02:00:00"), ("2000-01-01 03:00:00"))',
        ),
        (
            "INT",
            "FROM (1) TO (100) INTERVAL 10",
            [f"p_{start}_{min(start + 10, 100)}" for start in range(1, 100, 10)],
            '[("91"), ("100"))',
        ),
    ],
)
def test_batch_range_partitions(quire, db, column, batch, names, last):
    table = f"batch_{column.lower()}_{names[0].lower()}"
    run(
        db,
        f"CREATE TABLE {table} (k {column} NOT NULL, v INT) DUPLICATE KEY(k) "
        f"PARTITION BY RANGE(k) ({batch}) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    assert list(partitions(db, table)) == names
    created = run(db, f"SHOW CREATE TABLE {table}")[0][1]
    assert f"PARTITION `{names[-1]}` VALUES {last}" in created
    assert_round_trip(db, table)


def test_batch_partitions_mix_with_single_ones_and_have_a_limit(quire, db):
    run(
        db,
        "CREATE TABLE mixed (d DATE NOT NULL) PARTITION BY RANGE(d) (PARTITION p_old VALUES "
        'LESS THAN ("2000-01-01"), FROM ("2000-01-01") TO ("2000-03-01") INTERVAL 1 MONTH) '
        "DISTRIBUTED BY HASH(d) BUCKETS 1",
    )
    assert list(partitions(db, "mixed")) == ["p_old", "p_200001", "p_200002"]
    assert ("max_multi_partition_num", "4096") in {
        row[:2] for row in run(db, "ADMIN SHOW FRONTEND CONFIG LIKE 'max_multi%'")
    }
    run(db, 'ADMIN SET FRONTEND CONFIG ("max_multi_partition_num" = "5")')
    try:
        assert_error(
            db,
            quire,
            "CREATE TABLE too_many (d DATE NOT NULL) PARTITION BY RANGE(d) "
            '(FROM ("2000-01-01") TO ("2001-01-01") INTERVAL 1 MONTH)',
            1105,
            "The number of Multi partitions too much, should not exceed:5",
        )
        run(
            db,
            "CREATE TABLE five (d DATE NOT NULL) PARTITION BY RANGE(d) "
            '(FROM ("2000-01-01") TO ("2000-06-01") INTERVAL 1 MONTH)',
        )
    finally:
        run(db, 'ADMIN SET FRONTEND CONFIG ("max_multi_partition_num" = "4096")')
    for sql, text in (
        (
            '(FROM ("2000-01-01") TO ("2000-06-01") INTERVAL 1 MINUTE)',
            "Multi build partition does not support time interval type: MINUTE",
        ),
        (
            '(FROM ("2000-06-01") TO ("2000-01-01") INTERVAL 1 MONTH)',
            "Multi build partition start time should less than end time.",
        ),
        (
            '(FROM ("2000/06/01") TO ("2001-01-01") INTERVAL 1 MONTH)',
            "Multi build partition START or END time style is illegal.",
        ),
        (
            '(FROM ("2000-01-01") TO ("2000-06-01") INTERVAL 0 MONTH)',
            "Multi partition time interval mush be larger than zero.",
        ),
    ):
        assert_error(
            db, quire, f"CREATE TABLE bad (d DATE NOT NULL) PARTITION BY RANGE(d) {sql}", 1105, text
        )


RANGE_TABLE = (
    "CREATE TABLE {name} (k INT NOT NULL, v INT) DUPLICATE KEY(k) PARTITION BY RANGE(k) ("
    'PARTITION p1 VALUES [("0"), ("10")), PARTITION p2 VALUES [("10"), ("20")), '
    'PARTITION p3 VALUES [("20"), ("30"))) DISTRIBUTED BY HASH(k) BUCKETS 2'
)


def test_partitions_own_properties_and_modify_partition(quire, db):
    run(db, RANGE_TABLE.format(name="props"))
    run(
        db,
        'ALTER TABLE props ADD PARTITION p4 VALUES [("30"), ("40")) ("replication_num" = "1") '
        "DISTRIBUTED BY HASH(k) BUCKETS 5",
    )
    shown = partitions(db, "props")
    assert (shown["p4"]["Buckets"], shown["p4"]["ReplicationNum"]) == (5, 1)
    assert shown["p4"]["ReplicaAllocation"] == "tag.location.default: 1"
    assert (shown["p1"]["Buckets"], shown["p1"]["ReplicationNum"]) == (2, 3)
    run(db, 'ALTER TABLE props MODIFY PARTITION p1 SET ("storage_medium" = "SSD")')
    run(db, 'ALTER TABLE props MODIFY PARTITION (p2, p3) SET ("replication_num" = "2")')
    shown = partitions(db, "props")
    assert shown["p1"]["StorageMedium"] == "SSD"
    assert [shown[p]["ReplicationNum"] for p in ("p1", "p2", "p3", "p4")] == [3, 2, 2, 1]
    run(db, 'ALTER TABLE props MODIFY PARTITION (*) SET ("replication_num" = "1")')
    assert {row["ReplicationNum"] for row in partitions(db, "props").values()} == {1}
    done = mariadb(quire, "--batch", "-D", "parts", "-e", "SHOW PARTITIONS FROM props")
    assert done.returncode == 0 and "tag.location.default: 1" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "sql, code, text",
    [
        ('ALTER TABLE props MODIFY PARTITION p1 SET ("colour" = "red")', 1105, "Unknown properties: {colour=red}"),
        ('ALTER TABLE props MODIFY PARTITION p9 SET ("replication_num" = "1")', 1735, "Unknown partition 'p9' in table 'props'"),
        ("ALTER TABLE props MODIFY PARTITION p1 SET ()", 1105, "Properties is not set"),
        ('ALTER TABLE props MODIFY PARTITION p1 SET ("replication_num" = "0")', 1105, "Replication num should larger than 0"),
        ('ALTER TABLE props MODIFY PARTITION p1 SET ("replication_num" = "x")', 1105, "Invalid replication number: x"),
        ('ALTER TABLE props MODIFY PARTITION p1 SET ("storage_medium" = "TAPE")', 1105, "Invalid storage medium: TAPE"),
        (
            'ALTER TABLE props ADD PARTITION p5 VALUES [("40"), ("50")) DISTRIBUTED BY HASH(v) BUCKETS 1',
            1105,
            "Cannot assign hash distribution with different distribution cols. new is: [v] default is: [k]",
        ),
        ('ALTER TABLE props ADD PARTITION p5 VALUES [("40"), ("50")) ("colour" = "red")', 1105, "Unknown properties"),
    ],
)  # fmt: skip
def test_modify_partition_errors(quire, db, sql, code, text):
    assert_error(db, quire, sql, code, text)


def recycled_names(connection):
    return {row[1] for row in run(connection, "SHOW CATALOG RECYCLE BIN")}


def test_temporary_partitions_and_replace_partition(quire, db):
    run(db, RANGE_TABLE.format(name="swapped"))
    run(db, 'ALTER TABLE swapped ADD TEMPORARY PARTITION tp1 VALUES [("0"), ("20"))')
    assert_error(
        db,
        quire,
        'ALTER TABLE swapped ADD TEMPORARY PARTITION tp2 VALUES [("10"), ("15"))',
        1105,
        "is intersected with range",
    )
    assert_error(
        db,
        quire,
        'ALTER TABLE swapped ADD TEMPORARY PARTITION p1 VALUES [("50"), ("60"))',
        1517,
        "Duplicate partition name p1",
    )
    temporary = partitions(db, "swapped", temporary=True)
    assert list(temporary) == ["tp1"]
    assert "tp1" not in partitions(db, "swapped")
    tablet = temporary["tp1"]["PartitionId"] + 1  # a partition's tablets follow its id
    assert run(db, f"SHOW TABLET {tablet}")[0][:3] == ("parts", "swapped", "tp1")

    assert_error(
        db,
        quire,
        "ALTER TABLE swapped REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp1)",
        1105,
        "2 range lists are not stricly matched",
    )
    assert_error(
        db,
        quire,
        "ALTER TABLE swapped REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (nope)",
        1105,
        "Temp partition[nope] does not exist",
    )
    assert_error(
        db,
        quire,
        "ALTER TABLE swapped REPLACE PARTITION (p9) WITH TEMPORARY PARTITION (tp1)",
        1105,
        "Partition[p9] does not exist",
    )
    old_ids = {name: row["PartitionId"] for name, row in partitions(db, "swapped").items()}
    run(db, "ALTER TABLE swapped REPLACE PARTITION (p1, p2) WITH TEMPORARY PARTITION (tp1)")
    shown = partitions(db, "swapped")
    assert set(shown) == {"tp1", "p3"}  # two replaced by one: it keeps its own name
    assert shown["tp1"]["PartitionId"] == temporary["tp1"]["PartitionId"]
    assert partitions(db, "swapped", temporary=True) == {}
    assert not {"p1", "p2"} & recycled_names(db)  # replaced partitions are gone, not recycled
    assert run(db, f"SHOW TABLET {tablet}")[0][:3] == ("parts", "swapped", "tp1")
    assert error_of(db, f"SHOW TABLET {old_ids['p1'] + 1}")[0] == 1105

    run(db, 'ALTER TABLE swapped ADD TEMPORARY PARTITION tp2 VALUES [("20"), ("25"))')
    assert_error(
        db,
        quire,
        "ALTER TABLE swapped REPLACE PARTITION (p3) WITH TEMPORARY PARTITION (tp2)",
        1105,
        "not stricly matched",
    )
    run(
        db,
        "ALTER TABLE swapped REPLACE PARTITION (p3) WITH TEMPORARY PARTITION (tp2) "
        'PROPERTIES ("strict_range" = "false")',
    )
    assert ranges(db, "swapped")["p3"] == (
        "[types: [INT]; keys: [20]; ..types: [INT]; keys: [25]; )"
    )  # one for one: the formal name stays
    run(db, 'ALTER TABLE swapped ADD TEMPORARY PARTITION tp3 VALUES [("40"), ("50"))')
    run(
        db,
        "ALTER TABLE swapped REPLACE PARTITION (p3) WITH TEMPORARY PARTITION (tp3) "
        'PROPERTIES ("strict_range" = "false", "use_temp_partition_name" = "true")',
    )
    assert set(partitions(db, "swapped")) == {"tp1", "tp3"}
    run(db, 'ALTER TABLE swapped ADD TEMPORARY PARTITION tp4 VALUES [("0"), ("5"))')
    run(db, "ALTER TABLE swapped DROP TEMPORARY PARTITION tp4")
    assert partitions(db, "swapped", temporary=True) == {}
    assert "tp4" not in recycled_names(db)
    assert_error(
        db,
        quire,
        "ALTER TABLE swapped DROP TEMPORARY PARTITION tp4",
        1507,
        "partition tp4 does not exist",
    )


def test_temporary_list_partitions(quire, db):
    run(
        db,
        "CREATE TABLE colours (c VARCHAR(10) NOT NULL) PARTITION BY LIST(c) ("
        'PARTITION p_warm VALUES IN ("red", "orange"), PARTITION p_cold VALUES IN ("blue")) '
        "DISTRIBUTED BY HASH(c) BUCKETS 1",
    )
    run(db, 'ALTER TABLE colours ADD TEMPORARY PARTITION tp VALUES IN ("orange", "red")')
    run(db, "ALTER TABLE colours REPLACE PARTITION (p_warm) WITH TEMPORARY PARTITION (tp)")
    assert set(partitions(db, "colours")) == {"p_warm", "p_cold"}
    run(db, 'ALTER TABLE colours ADD TEMPORARY PARTITION tp VALUES IN ("blue", "green")')
    assert_error(
        db,
        quire,
        "ALTER TABLE colours REPLACE PARTITION (p_cold) WITH TEMPORARY PARTITION (tp)",
        1105,
        "2 list partitions are not strictly matched",
    )


def test_replace_with_table(quire, db):
    run(db, "CREATE TABLE first (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(db, "CREATE TABLE second (k INT, v INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    run(db, "ALTER TABLE first REPLACE WITH TABLE second")
    assert [row[0] for row in run(db, "DESC first")] == ["k", "v"]
    assert [row[0] for row in run(db, "DESC second")] == ["k"]
    assert list(partitions(db, "first")) == ["first"]  # an unpartitioned table's one partition
    run(db, 'ALTER TABLE first REPLACE WITH TABLE second PROPERTIES ("swap" = "false")')
    assert [row[0] for row in run(db, "DESC first")] == ["k"]
    assert ("second",) not in run(db, "SHOW TABLES")
    assert "second" not in recycled_names(db)  # the replaced table is dropped at once
    assert_error(db, quire, "ALTER TABLE first REPLACE WITH TABLE nothing", 1146, "doesn't exist")
    run(db, "CREATE TABLE third (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    assert_error(
        db,
        quire,
        'ALTER TABLE first REPLACE WITH TABLE third PROPERTIES ("swap" = "maybe")',
        1105,
        "Invalid swap value",
    )
    # ALTER_PRIV on both tables, as for any ALTER TABLE.
    run(db, "CREATE USER IF NOT EXISTS alterer IDENTIFIED BY 'pw'")
    run(db, "GRANT ALTER_PRIV ON parts.first TO alterer")
    alterer = quire.connect("alterer", "pw", database="parts")
    try:
        assert error_of(alterer, "ALTER TABLE first REPLACE WITH TABLE third")[0] == 1142
    finally:
        alterer.close()


def test_create_table_like_leaves_temporary_partitions_behind(quire, db):
    run(db, RANGE_TABLE.format(name="with_temporary"))
    run(db, 'ALTER TABLE with_temporary ADD TEMPORARY PARTITION tp VALUES [("0"), ("5"))')
    run(db, "CREATE TABLE like_it LIKE with_temporary")
    assert set(partitions(db, "like_it")) == {"p1", "p2", "p3"}
    assert partitions(db, "like_it", temporary=True) == {}


def test_an_observer_and_a_restarted_node_see_the_same_partitions(tmp_path, fresh_quire):
    fresh_quire.start()
    statements = [
        "CREATE DATABASE parts",
        "USE parts",
        LIST_TABLE,
        MULTI_RANGE_TABLE,
        RANGE_TABLE.format(name="props"),
        'ALTER TABLE props MODIFY PARTITION (p1, p2) SET ("replication_num" = "1")',
        "ADMIN CHECKPOINT",  # what follows is replayed from the journal after the image
        'ALTER TABLE props ADD TEMPORARY PARTITION tp1 VALUES [("0"), ("20"))',
        'ALTER TABLE props ADD TEMPORARY PARTITION tp2 VALUES [("30"), ("40"))',
        "ALTER TABLE props REPLACE PARTITION (p1, p2) WITH TEMPORARY PARTITION (tp1)",
        "CREATE TABLE other (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1",
        "ALTER TABLE other REPLACE WITH TABLE cities",
    ]
    execute(fresh_quire, *statements)

    def seen(node):
        connection = node.connect(database="parts")
        try:
            return [
                (table, partitions(connection, table), partitions(connection, table, True))
                for table in ("cities", "other", "visits", "props")
            ] + [run(connection, f"SHOW CREATE TABLE {t}") for t in ("other", "visits", "props")]
        finally:
            connection.close()

    before = seen(fresh_quire)
    assert list(before[3][2]) == ["tp2"]
    # An observer (it replicates without voting, so the node restarts alone afterwards).
    observer = QuireProcess(tmp_path / "observer", command="fe").join_through(fresh_quire)
    try:
        add_and_start(fresh_quire, observer, "OBSERVER")
        wait_until(
            lambda: (
                ("props",) in execute(observer, "SHOW TABLES FROM parts")
                and seen(observer) == before
            ),
            60,
            "the same partitions on the observer",
        )
    finally:
        observer.stop()
    fresh_quire.stop()
    fresh_quire.start()
    assert seen(fresh_quire) == before
    tablet = before[3][2]["tp2"]["PartitionId"] + 1
    assert execute(fresh_quire, f"SHOW TABLET {tablet}")[0][:3] == ("parts", "props", "tp2")


def test_show_partitions_filters_sorts_and_limits_and_partitions_are_renamed(quire, db):
    """Doris's SHOW PARTITIONS ... WHERE c = v | c LIKE 'p' ... ORDER BY ... LIMIT, ADD PARTITION IF
    NOT EXISTS and RENAME PARTITION (the rows stay with the partition)."""
    run(
        db,
        "CREATE TABLE shown (k INT, d DATE) DUPLICATE KEY(k) PARTITION BY RANGE(d) ("
        "PARTITION p1 VALUES LESS THAN ('2024-01-01'), PARTITION p2 VALUES LESS THAN "
        "('2025-01-01'), PARTITION q3 VALUES LESS THAN ('2026-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    run(db, "INSERT INTO shown VALUES (1, '2024-06-01')")

    def names(sql: str) -> list[str]:
        return [row[1] for row in run(db, sql)]

    assert names("SHOW PARTITIONS FROM shown WHERE PartitionName = 'p1'") == ["p1"]
    assert names(
        "SHOW PARTITIONS FROM shown WHERE partitionname LIKE 'P%' ORDER BY PartitionId DESC LIMIT 1"
    ) == ["p2"]
    assert names("SHOW PARTITIONS FROM shown ORDER BY PartitionName DESC LIMIT 1, 1") == ["p2"]
    assert names("SHOW PARTITIONS FROM shown WHERE Buckets = 1 AND PartitionName LIKE '%3'") == [
        "q3"
    ]
    assert error_of(db, "SHOW PARTITIONS FROM shown WHERE nope = 1") == (
        1105,
        "Title name[nope] does not exist",
    )
    run(db, "ALTER TABLE shown ADD PARTITION IF NOT EXISTS p2 VALUES LESS THAN ('2025-01-01')")
    assert (
        error_of(db, "ALTER TABLE shown ADD PARTITION p2 VALUES LESS THAN ('2025-01-01')")[0]
        == 1517
    )
    run(db, "ALTER TABLE shown RENAME PARTITION p2 year2024")
    assert names("SHOW PARTITIONS FROM shown") == ["p1", "year2024", "q3"]
    assert run(db, "SELECT k FROM shown PARTITION (year2024)") == ((1,),)
    assert error_of(db, "ALTER TABLE shown RENAME PARTITION nope x")[0] == 1735
    assert error_of(db, "ALTER TABLE shown RENAME PARTITION p1 q3")[0] == 1517
    done = mariadb(
        quire,
        "parts",
        "--batch",
        "-N",
        "-e",
        "SHOW PARTITIONS FROM shown WHERE PartitionName = 'q3'",
    )
    assert done.returncode == 0 and done.stdout.split("\t")[1] == "q3", done.stderr
