"""Objects of data no read may reach again are freed: TRUNCATE's old partitions, a table dropped
with FORCE, a partition erased from the recycle bin; while in the bin they are kept, and RECOVER
brings their rows back. Seen as a user would: the files in storage_root and SELECT's answers."""

from pathlib import Path

import pytest

from tests.harness import QuireProcess, run, wait_until

OVERRIDES = {
    "flush_rows": 10,
    "flush_interval_second": 1,
    "catalog_trash_check_interval_second": 1,
    "merged_object_retention_second": 1,
}
FREED_WITHIN_SECONDS = 60


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    quire = QuireProcess(tmp_path_factory.mktemp("freed"), overrides=OVERRIDES).start()
    connection = quire.connect()
    run(connection, "CREATE DATABASE d")
    connection.close()
    yield quire
    quire.stop()


@pytest.fixture
def db(node):
    connection = node.connect()
    run(connection, "USE d")
    connection.objects = Path(node.workdir) / "storage" / "objects"
    yield connection
    connection.close()


def create_and_fill(db, name: str) -> int:
    run(
        db,
        f"CREATE TABLE {name} (k INT, v INT) DUPLICATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (100), "
        "PARTITION p2 VALUES LESS THAN (1000)) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(db, f"INSERT INTO {name} VALUES " + ", ".join(f"({k}, {k})" for k in range(0, 400, 5)))
    table_id = table_id_of(db, name)
    wait_until(lambda: len(partitions_with_objects(db, table_id)) == 2, 30, "both flushed")
    return table_id


def table_id_of(db, name: str) -> int:
    dbs = run(db, "SHOW PROC '/dbs'")
    db_id = next(row[0] for row in dbs if row[1] == "d")
    return int(next(row[0] for row in run(db, f"SHOW PROC '/dbs/{db_id}'") if row[1] == name))


def partitions_with_objects(db, table_id: int) -> set[int]:
    folder = db.objects / f"t{table_id}"
    return {int(path.name[1:]) for path in folder.glob("p*") if any(path.rglob("*.parquet"))}


def test_truncate_frees_the_old_partitions_objects(db):
    table_id = create_and_fill(db, "emptied")
    before = partitions_with_objects(db, table_id)
    run(db, "TRUNCATE TABLE emptied PARTITION (p1)")
    assert run(db, "SELECT count(*), min(k) FROM emptied") == ((60, 100),)
    wait_until(
        lambda: len(partitions_with_objects(db, table_id) & before) == 1,
        FREED_WITHIN_SECONDS,
        "the truncated partition's objects freed",
    )
    assert run(db, "SELECT count(*), min(k) FROM emptied") == ((60, 100),)


def test_the_bin_keeps_objects_for_recover_and_erasing_frees_them(db):
    table_id = create_and_fill(db, "binned")
    run(db, "ALTER TABLE binned DROP PARTITION p2")
    assert run(db, "SELECT count(*) FROM binned") == ((20,),)
    # Another table's objects freed: the cleaner ran more than twice since the drop.
    witness = create_and_fill(db, "witness")
    run(db, "DROP TABLE witness FORCE")
    wait_until(
        lambda: not partitions_with_objects(db, witness), FREED_WITHIN_SECONDS, "FORCE frees"
    )
    assert len(partitions_with_objects(db, table_id)) == 2, "the bin's partition is kept"
    run(db, "RECOVER PARTITION p2 FROM binned")
    assert run(db, "SELECT count(*) FROM binned") == ((80,),)
    run(db, "ALTER TABLE binned DROP PARTITION p2")
    run(db, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '0')")
    try:
        wait_until(
            lambda: len(partitions_with_objects(db, table_id)) == 1,
            FREED_WITHIN_SECONDS,
            "the erased partition's objects freed",
        )
    finally:
        run(db, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '86400')")
    assert run(db, "SELECT count(*) FROM binned") == ((20,),)
