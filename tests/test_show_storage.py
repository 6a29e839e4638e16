"""Doris's SHOW DATA, SHOW TABLETS and SHOW TABLET: its titles and rows, through PyMySQL and the
mariadb CLI."""

import pytest

from tests.harness import error_of, mariadb, run

TABLET_TITLES = [
    "TabletId", "ReplicaId", "BackendId", "SchemaHash", "Version", "LstSuccessVersion",
    "LstFailedVersion", "LstFailedTime", "LocalDataSize", "RemoteDataSize", "RowCount", "State",
    "LstConsistencyCheckTime", "CheckVersion", "VisibleVersionCount", "VersionCount", "QueryHits",
    "WindowAccessCount", "LastAccessTime", "PathHash", "Path", "MetaUrl", "CompactionStatus",
    "CooldownReplicaId", "CooldownMetaId",
]  # fmt: skip


@pytest.fixture(scope="module")
def shop(quire, root):
    run(root, "CREATE DATABASE sd")
    run(
        root,
        'CREATE TABLE sd.small (k INT) DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("replication_num" = "1")',
    )
    run(
        root,
        "CREATE TABLE sd.big (d DATE, k INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
        '(PARTITION p1 VALUES LESS THAN ("2025-01-01"), PARTITION p2 VALUES LESS THAN MAXVALUE) '
        "DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    run(
        root,
        "CREATE TABLE sd.tagged (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1 "
        'PROPERTIES ("replication_allocation" = "tag.location.default: 2")',
    )
    connection = quire.connect(database="sd")
    yield connection
    connection.close()


def titles(connection, sql):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [column[0] for column in cursor.description], cursor.fetchall()


def test_show_data_of_the_current_database(shop):
    names, rows = titles(shop, "SHOW DATA")
    assert names == ["TableName", "Size", "ReplicaCount", "RemoteSize"]
    assert rows == (
        ("big", ".000 ", "18", ".000 "),
        ("small", ".000 ", "2", ".000 "),
        ("tagged", ".000 ", "2", ".000 "),
        ("Total", ".000 ", "22", ".000 "),
        ("Quota", "8388608.000 TB", "1073741824", ""),
        ("Left", "8388608.000 TB", "1073741802", ""),
    )
    ordered = run(shop, "SHOW DATA ORDER BY ReplicaCount DESC, TableName")
    assert [row[0] for row in ordered] == ["big", "small", "tagged", "Total", "Quota", "Left"]
    ordered = run(shop, "SHOW DATA ORDER BY replicacount, tablename DESC")
    assert [row[0] for row in ordered][:3] == ["tagged", "small", "big"]
    assert error_of(shop, "SHOW DATA ORDER BY Nothing") == (
        1105,
        "Title name[Nothing] does not exist",
    )


def test_show_data_of_a_table_and_of_every_database(quire, shop):
    names, rows = titles(shop, "SHOW DATA FROM sd.big")
    assert names == ["TableName", "IndexName", "Size", "ReplicaCount", "RowCount", "RemoteSize"]
    assert rows == (
        ("big", "big", ".000 ", "18", "0", ".000 "),
        ("", "Total", ".000 ", "18", "", ".000 "),
    )
    assert run(shop, "SHOW DATA FROM small")[0][3] == "2"
    assert error_of(shop, "SHOW DATA FROM nothing")[0] == 1146
    with quire.connect() as anywhere:
        names, rows = titles(anywhere, "SHOW DATA")
    assert names == ["DbId", "DbName", "Size", "RemoteSize", "RecycleSize", "RecycleRemoteSize"]
    assert "sd" in [row[1] for row in rows] and rows[-1] == ("Total", "NULL", "0", "0", "0", "0")
    done = mariadb(quire, "--batch", "sd", "-e", "SHOW DATA")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "TableName\tSize\tReplicaCount\tRemoteSize"
    assert done.stdout.splitlines()[5] == "Quota\t8388608.000 TB\t1073741824\t"


def test_show_tablets_has_doris_titles_and_takes_partition_where_order_and_limit(quire, shop):
    names, rows = titles(shop, "SHOW TABLETS FROM sd.big")
    assert names == TABLET_TITLES
    assert len(rows) == 6 and all(row[1:3] == ("-1", "-1") for row in rows)
    ids = [int(row[0]) for row in rows]
    assert ids == sorted(ids)
    first_partition = run(shop, "SHOW TABLETS FROM big PARTITION (p1)")
    assert [row[0] for row in first_partition] == [row[0] for row in rows[:3]]
    assert len(run(shop, "SHOW TABLETS FROM big PARTITIONS (p1, p2)")) == 6
    descending = run(shop, "SHOW TABLETS FROM big ORDER BY TabletId DESC LIMIT 2")
    assert [int(row[0]) for row in descending] == ids[::-1][:2]
    assert [int(row[0]) for row in run(shop, "SHOW TABLETS FROM big LIMIT 2 OFFSET 3")] == ids[3:5]
    assert [int(row[0]) for row in run(shop, "SHOW TABLETS FROM big LIMIT 4, 1")] == ids[4:5]
    assert len(run(shop, "SHOW TABLETS FROM big WHERE indexname = 'big' AND Version = -1")) == 6
    assert run(shop, "SHOW TABLETS FROM big WHERE BackendId = 10001") == ()
    assert run(shop, "SHOW TABLETS FROM big WHERE IndexName = 'r1'") == ()
    code, message = error_of(shop, "SHOW TABLETS FROM big WHERE RowCount = 1")
    assert code == 1105 and message.startswith("Where clause should looks like")
    assert error_of(shop, "SHOW TABLETS FROM big WHERE State = 'SLEEPING'")[0] == 1105
    assert error_of(shop, "SHOW TABLETS FROM big ORDER BY Size") == (
        1105,
        "Title name[Size] does not exist",
    )
    assert error_of(shop, "SHOW TABLETS FROM big PARTITION (p9)")[0] == 1735
    done = mariadb(quire, "--batch", "-e", "SHOW TABLETS FROM sd.small LIMIT 1")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split("\t") == TABLET_TITLES
    assert row.split("\t")[1:3] == ["-1", "-1"]


def test_show_tablet_names_where_a_tablet_lives(quire, shop):
    tablet_id = run(shop, "SHOW TABLETS FROM big PARTITION (p2) LIMIT 1")[0][0]
    names, rows = titles(shop, f"SHOW TABLET {tablet_id}")
    assert names == ["DbName", "TableName", "PartitionName", "IndexName", "DbId", "TableId",
                     "PartitionId", "IndexId", "IsSync", "Order", "DetailCmd"]  # fmt: skip
    (row,) = rows
    assert row[:4] == ("sd", "big", "p2", "big") and row[8:10] == ("true", "0")
    assert row[10] == f"SHOW PROC '/dbs/{row[4]}/{row[5]}/partitions/{row[6]}/{row[7]}';"
    assert error_of(shop, "SHOW TABLET 1")[0] == 1105
    done = mariadb(quire, "--batch", "-e", f"SHOW TABLET {tablet_id}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split("\t")[:4] == ["sd", "big", "p2", "big"]


def test_show_tablets_needs_admin(quire, root, shop):
    run(root, "CREATE USER IF NOT EXISTS 'sd_reader' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT ON sd.* TO 'sd_reader'")
    with quire.connect("sd_reader", "pw", database="sd") as reader:
        assert error_of(reader, "SHOW TABLETS FROM big")[0] == 1227
        assert run(reader, "SHOW DATA")[0][0] == "big"


def test_a_rollup_is_an_index_of_its_own_in_show_data_and_show_tablets(quire, shop):
    run(
        shop,
        "CREATE TABLE sd.rolled (k INT, d DATE, v INT SUM) AGGREGATE KEY(k, d) "
        "PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ('2025-01-01')) "
        'DISTRIBUTED BY HASH(k) BUCKETS 2 ROLLUP (r_day (d, v)) PROPERTIES ("replication_num" = "1")',
    )
    run(shop, "ALTER TABLE sd.rolled ADD TEMPORARY PARTITION tp VALUES LESS THAN ('2025-01-01')")
    run(shop, "ALTER TABLE sd.rolled REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp)")
    rows = run(shop, "SHOW DATA FROM sd.rolled")
    assert [(row[1], row[3]) for row in rows] == [("rolled", "2"), ("r_day", "2"), ("Total", "4")]
    tablets = [row[0] for row in run(shop, "SHOW TABLETS FROM sd.rolled")]
    rollup = [row[0] for row in run(shop, "SHOW TABLETS FROM sd.rolled WHERE IndexName = 'r_day'")]
    assert len(tablets) == 4 and len(rollup) == 2 and set(rollup) < set(tablets)
    (tablet,) = run(shop, f"SHOW TABLET {rollup[0]}")
    assert (tablet[2], tablet[3]) == ("p1", "r_day")
    done = mariadb(quire, "--batch", "-e", f"SHOW TABLET {rollup[1]}")
    assert "\tr_day\t" in done.stdout, done.stderr


def test_show_partitions_counts_each_partitions_rows_and_bytes(quire, shop):
    run(
        shop,
        "CREATE TABLE sd.parted (d DATE, k INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2025-01-01'), PARTITION p2 VALUES LESS THAN "
        "('2026-01-01'), PARTITION p3 VALUES LESS THAN MAXVALUE) DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    run(
        shop, "INSERT INTO sd.parted VALUES ('2024-05-01', 1), ('2024-06-01', 2), ('2024-07-01', 3)"
    )
    run(shop, "INSERT INTO sd.parted VALUES ('2025-05-01', 4), ('2025-06-01', 5)")
    names, rows = titles(shop, "SHOW PARTITIONS FROM sd.parted")
    by_name = {row[1]: dict(zip(names, row, strict=True)) for row in rows}
    assert [by_name[name]["RowCount"] for name in ("p1", "p2", "p3")] == [3, 2, 0]
    assert by_name["p3"]["DataSize"] == ".000 "
    sizes = {name: by_name[name]["DataSize"] for name in ("p1", "p2")}
    assert all(size.endswith(" B") and float(size[:-2]) > 0 for size in sizes.values()), sizes
    (table_row, _) = run(shop, "SHOW DATA FROM sd.parted")
    tablets = run(shop, "SHOW TABLETS FROM sd.parted PARTITION (p1)")
    assert sum(int(tablet[10]) for tablet in tablets) == 3
    assert float(table_row[2][:-2]) == sum(float(size[:-2]) for size in sizes.values())
    run(shop, "DELETE FROM sd.parted WHERE k = 5")
    done = mariadb(quire, "--batch", "-D", "sd", "-e", "SHOW PARTITIONS FROM parted")
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    counted = {line[1]: line[lines[0].index("RowCount")] for line in lines[1:]}
    assert counted["p1"] == "3" and counted["p3"] == "0" and counted["p2"] in ("1", "2")


def test_information_schema_and_show_proc_count_what_tables_hold(quire, shop):
    run(shop, "CREATE TABLE sd.counted (k INT, v VARCHAR(10)) DISTRIBUTED BY HASH(k) BUCKETS 2")
    run(shop, "CREATE VIEW sd.counted_view AS SELECT k FROM sd.counted")
    lookup = (
        "SELECT TABLE_NAME, TABLE_ROWS, DATA_LENGTH, AVG_ROW_LENGTH FROM information_schema.tables "
        "WHERE TABLE_SCHEMA = 'sd' AND TABLE_NAME LIKE 'counted%' ORDER BY TABLE_NAME"
    )
    assert run(shop, lookup) == (("counted", 0, 0, 0), ("counted_view", None, None, None))
    run(shop, "INSERT INTO sd.counted VALUES (1, 'a'), (2, 'bb'), (3, 'ccc')")
    (counted, view) = run(shop, lookup)  # not the answer kept from before the insert
    status = {row[0]: row for row in run(shop, "SHOW TABLE STATUS FROM sd LIKE 'counted'")}
    assert counted[1:] == (3, status["counted"][6], status["counted"][5]) and counted[2] > 0
    assert view[1:] == (None, None, None)
    done = mariadb(quire, "--batch", "-N", "-e", lookup)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"counted\t3\t{counted[2]}\t{counted[3]}"
    dbs = {row[1]: row for row in run(shop, "SHOW PROC '/dbs'")}
    (total,) = [row for row in run(shop, "SHOW DATA") if row[0] == "Total"]
    assert dbs["sd"][3] == total[1] and dbs["sd"][3] != ".000 "
    assert dbs["sd"][4] == "8388608.000 TB"  # default_db_data_quota_bytes, as SHOW DATA's Quota
