"""DDL acts on data: TRUNCATE, ADD / DROP / MODIFY / RENAME COLUMN, DROP / RECOVER / REPLACE
PARTITION, REPLACE WITH TABLE and DROP / RECOVER TABLE on tables that hold rows, through PyMySQL
(and the mariadb CLI) against `quire up`: once with the rows in memory, once with them flushed
into objects (before the DDL, and rows of the old schema flushed after it), and after a restart
(kill -9 with every row in memory)."""

import datetime
import signal
from pathlib import Path

import pyarrow as pa
import pytest

from be.logtail.entries import COMMIT_TS, PARTITION_ID, ROW_ID, Commit, TableChanges
from be.row_adapter import adapted
from be.table_schema import ColumnSchema, PartitionSchema, TableSchema
from be.tn import placement, wal_records
from metadata.records import KeyModel
from tests.harness import QuireProcess, mariadb, run, wait_until

NO_FLUSH = {"flush_rows": 10_000_000, "flush_interval_second": 3600}
TINY_FLUSH = {"flush_rows": 10, "flush_interval_second": 1}
FAST_JOBS = {"alter_scheduler_interval_millisecond": 100}
UNFINISHED = ("PENDING", "WAITING_TXN", "RUNNING")

# Per mode, what each query must read last: checked again after the restart.
EXPECTED: dict[str, dict[str, tuple]] = {"memory": {}, "flushed": {}}


@pytest.fixture(scope="module", params=["memory", "flushed"])
def node(request, tmp_path_factory):
    overrides = {**(NO_FLUSH if request.param == "memory" else TINY_FLUSH), **FAST_JOBS}
    quire = QuireProcess(tmp_path_factory.mktemp(request.param), overrides=overrides).start()
    quire.mode = request.param
    connection = quire.connect()
    run(connection, "CREATE DATABASE d")
    connection.close()
    yield quire
    quire.stop()


@pytest.fixture
def db(node):
    connection = node.connect()
    run(connection, "USE d")
    connection.node = node
    yield connection
    connection.close()


def create(db, name: str, columns: str = "k INT, v VARCHAR(10), n INT") -> None:
    run(
        db,
        f"CREATE TABLE {name} ({columns}) DUPLICATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (100), "
        "PARTITION p2 VALUES LESS THAN (1000)) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )


def insert(db, name: str, keys, note: str = "v") -> None:
    run(
        db,
        f"INSERT INTO {name} (k, v, n) VALUES "
        + ", ".join(f"({k}, '{note}{k}', {k})" for k in keys),
    )


def tablets_with_objects(db, name: str) -> tuple[set[int], set[int]]:
    """The tablets of the table holding rows (SHOW TABLETS counts unflushed rows too), and those
    with objects in the store."""
    storage = Path(db.node.workdir) / "storage" / "objects"
    rows = run(db, f"SHOW TABLETS FROM {name}")
    holding = {int(row[0]) for row in rows if int(row[10]) > 0}
    stored = {
        tablet
        for tablet in (int(row[0]) for row in rows)
        if any(storage.glob(f"t*/p*/{tablet}/*.data.parquet"))
    }
    return holding, stored


def partition_objects(db) -> list[Path]:
    """Objects of rows whose partition was not in the table when they were flushed: filed under
    the partition's id as their tablet's."""
    storage = Path(db.node.workdir) / "storage" / "objects"
    return [
        path
        for path in storage.glob("t*/p*/*/*.data.parquet")
        if path.parent.name == path.parent.parent.name[1:]
    ]


def settle(db, name: str) -> None:
    """In flushed mode: wait until every tablet with rows has objects (a flush wrote them)."""
    if db.node.mode != "flushed":
        return

    def flushed():
        holding, stored = tablets_with_objects(db, name)
        return holding <= stored

    wait_until(flushed, 30, f"a flush of {name}")


def unfinished_jobs(db, name: str) -> list:
    return [
        row
        for row in run(db, "SHOW ALTER TABLE COLUMN FROM d")
        if row[1] == name and row[9] in UNFINISHED
    ]


def alter(db, sql: str) -> None:
    run(db, sql)
    name = sql.split()[2]
    wait_until(lambda: not unfinished_jobs(db, name), 60, f"{name}'s ALTER jobs")


def check(db, query: str, expected: tuple) -> None:
    assert run(db, query) == expected, query
    EXPECTED[db.node.mode][query] = expected


def keys(rows) -> tuple:
    return tuple((k,) for k in rows)


# -- rows adapted to the reading schema, as pure functions ---------------------------------------


def schema(*columns: ColumnSchema, partitions=()) -> TableSchema:
    return TableSchema(
        1, 1, columns, KeyModel.DUPLICATE, (columns[0].name,), "RANGE", (), partitions, ()
    )


K = ColumnSchema("k", pa.int32(), id=65536)
V = ColumnSchema("v", pa.string(), id=65537)


def test_older_rows_read_by_column_id_with_backfills_and_casts():
    written = adapted(
        pa.table({ROW_ID: pa.array([1, 2], pa.int64()), "k": pa.array([1, 2], pa.int32()),
                  "v": ["a", "b"]}),
        schema(K, V),
        [pa.field(ROW_ID, pa.int64(), False)],
        stored=True,
    )  # fmt: skip
    hidden = [pa.field(ROW_ID, pa.int64(), False)]
    renamed_and_widened = schema(
        ColumnSchema("key", pa.int64(), id=K.id),
        ColumnSchema("w", pa.string(), id=V.id),
        ColumnSchema("added", pa.int16(), id=3 << 16, backfill="'7'"),
        ColumnSchema("later", pa.date32(), id=(3 << 16) + 1, backfill="CURRENT_TIMESTAMP"),
    )
    read = adapted(written, renamed_and_widened, hidden)
    assert read.schema == pa.schema([*hidden, *renamed_and_widened.arrow()])
    assert read.to_pydict() == {
        ROW_ID: [1, 2], "key": [1, 2], "w": ["a", "b"], "added": [7, 7], "later": [None, None]
    }  # fmt: skip
    not_null = schema(K, V, ColumnSchema("z", pa.decimal128(10, 2), False, id=5 << 16))
    assert adapted(written, not_null, hidden).column("z").to_pylist() == [0, 0]  # MySQL's implicit
    readded = schema(K, ColumnSchema("v", pa.string(), id=4 << 16))  # dropped, then added again
    assert adapted(written, readded, hidden).column("v").to_pylist() == [None, None]
    legacy = written.replace_schema_metadata(None).cast(  # rows written before ids: by name
        pa.schema([*hidden, pa.field("k", pa.int32()), pa.field("v", pa.string())])
    )
    assert adapted(legacy, renamed_and_widened, hidden).column("w").to_pylist() == [None, None]
    assert adapted(legacy, schema(K, V), hidden).column("v").to_pylist() == ["a", "b"]
    no_ids = schema(ColumnSchema("k", pa.int32()), ColumnSchema("v", pa.string()))
    assert adapted(written, no_ids, hidden).column("v").to_pylist() == ["a", "b"]


def test_column_ids_and_backfills_travel_with_the_schema():
    sent = schema(
        K, ColumnSchema("added", pa.int16(), id=3 << 16, backfill="'7'", aggregation="SUM")
    )
    assert TableSchema.from_fields(sent.fields()) == sent  # the node service, log, checkpoints


def test_the_flush_files_rows_by_the_partition_they_were_written_in():
    listed = PartitionSchema(10, (), ("100",), (), (11, 12))
    rows = pa.table({
        ROW_ID: pa.array([1, 2, 3, 4], pa.int64()),
        COMMIT_TS: pa.array([5] * 4, pa.int64()),
        PARTITION_ID: pa.array([10, 10, 20, 20], pa.int64()),  # 20: dropped since
        "k": pa.array([1, 2, 150, 160], pa.int32()),
    })  # fmt: skip
    table = TableSchema(1, 1, (K,), KeyModel.DUPLICATE, ("k",), "RANGE", ("k",), (listed,), ("k",))
    placed = placement.by_placed_partition(table, rows)
    assert {(t.partition_id, t.tablet_id) for t in placed} <= {(10, 11), (10, 12), (20, 20)}
    assert sum(part.num_rows for t, part in placed.items() if t.partition_id == 10) == 2
    assert all(PARTITION_ID not in part.column_names for part in placed.values())
    assert [part for t, part in placed.items() if t.tablet_id == 20][0].column("k").to_pylist() == [
        150,
        160,
    ]


def test_a_version_2_log_record_still_reads():
    inserts = pa.table({ROW_ID: pa.array([1], pa.int64()), "k": pa.array([1], pa.int32())})
    listed = schema(K, partitions=(PartitionSchema(10, tablet_ids=(11,)),))
    record = wal_records.encode(Commit(7, (TableChanges(1, 1, inserts),)), "r", {1: listed})
    old = bytes([2]) + record[1:]
    commit, request, schemas = wal_records.decode(old)
    assert (commit.changes[0].inserts.column("k").to_pylist(), request) == ([1], "r")
    assert schemas[1].columns[0].id == K.id
    note = wal_records.encode_checkpoint_note("c1", 9)
    assert wal_records.checkpoint_named(bytes([2]) + note[1:]) == "c1"
    assert wal_records.checkpoint_named(note) == "c1"


# -- through the MySQL front ---------------------------------------------------------------------


def test_truncate_table_and_partition(db):
    create(db, "tt")
    insert(db, "tt", range(0, 200, 10))
    settle(db, "tt")
    run(db, "TRUNCATE TABLE tt")
    assert run(db, "SELECT COUNT(*) FROM tt") == ((0,),)
    insert(db, "tt", [5, 150], "new")
    check(db, "SELECT k, v FROM tt ORDER BY k", ((5, "new5"), (150, "new150")))
    settle(db, "tt")
    check(db, "SELECT k, v FROM tt ORDER BY k", ((5, "new5"), (150, "new150")))
    assert run(db, "SHOW DATA FROM tt")[0][4] == "2", "the old tablets' rows are not counted"

    create(db, "tp")
    insert(db, "tp", range(0, 200, 10))
    settle(db, "tp")
    run(db, "TRUNCATE TABLE tp PARTITION (p1)")
    check(db, "SELECT k FROM tp ORDER BY k", keys(range(100, 200, 10)))
    insert(db, "tp", [1])
    settle(db, "tp")
    check(db, "SELECT k FROM tp ORDER BY k", keys([1, *range(100, 200, 10)]))


def test_add_column_reads_its_default_in_older_rows(db):
    create(db, "added")
    insert(db, "added", range(0, 120, 10))
    settle(db, "added")
    alter(db, 'ALTER TABLE added ADD COLUMN c INT DEFAULT "7"')
    alter(db, "ALTER TABLE added ADD COLUMN s VARCHAR(8) DEFAULT 'x', ADD COLUMN z INT")
    alter(db, "ALTER TABLE added ADD COLUMN k2 INT KEY AFTER k")  # NOT NULL, no default: 0
    run(db, "INSERT INTO added (k, k2, v, n, c, s) VALUES (500, 5, 'late', 1, 8, 'y')")
    expected = tuple((k, 0, 7, "x", None) for k in range(0, 120, 10)) + ((500, 5, 8, "y", None),)
    check(db, "SELECT k, k2, c, s, z FROM added ORDER BY k", expected)
    check(db, "SELECT COUNT(*) FROM added WHERE c = 7", ((12,),))
    settle(db, "added")
    check(db, "SELECT k, k2, c, s, z FROM added ORDER BY k", expected)


def test_rename_column_keeps_its_values(db):
    create(db, "renamed")
    insert(db, "renamed", range(0, 120, 10))
    settle(db, "renamed")
    alter(db, "ALTER TABLE renamed RENAME COLUMN v w")
    run(db, "INSERT INTO renamed (k, w, n) VALUES (7, 'after7', 7)")
    expected = tuple(sorted([(k, f"v{k}") for k in range(0, 120, 10)] + [(7, "after7")]))
    check(db, "SELECT k, w FROM renamed ORDER BY k", expected)
    check(db, "SELECT k FROM renamed WHERE w = 'v20'", ((20,),))
    settle(db, "renamed")
    check(db, "SELECT k, w FROM renamed ORDER BY k", expected)


def test_a_dropped_column_added_again_does_not_bring_old_values_back(db):
    create(db, "readded")
    insert(db, "readded", range(0, 120, 10))
    alter(db, "ALTER TABLE readded DROP COLUMN n")
    settle(db, "readded")
    alter(db, "ALTER TABLE readded ADD COLUMN n INT")
    check(db, "SELECT COUNT(*), COUNT(n) FROM readded", ((12, 0),))
    check(db, "SELECT COUNT(*) FROM readded WHERE n = 20", ((0,),))
    run(db, "INSERT INTO readded VALUES (999, 'new', 5)")
    settle(db, "readded")
    check(db, "SELECT k, n FROM readded WHERE n IS NOT NULL", ((999, 5),))
    check(db, "SELECT COUNT(*), COUNT(n) FROM readded", ((13, 1),))


def test_modify_column_widens_older_rows(db):
    create(db, "modified")
    insert(db, "modified", range(0, 120, 10))
    settle(db, "modified")
    alter(db, "ALTER TABLE modified MODIFY COLUMN n BIGINT")
    alter(db, "ALTER TABLE modified MODIFY COLUMN v VARCHAR(20)")
    run(db, "INSERT INTO modified VALUES (990, 'a much longer value', 12345678901)")
    expected = tuple((k, f"v{k}", k) for k in range(0, 120, 10)) + (
        (990, "a much longer value", 12345678901),
    )
    check(db, "SELECT k, v, n FROM modified ORDER BY k", expected)
    check(
        db, "SELECT SUM(n) FROM modified WHERE n > 50", ((12345678901 + sum(range(60, 120, 10)),),)
    )
    settle(db, "modified")
    check(db, "SELECT k, v, n FROM modified ORDER BY k", expected)


def test_drop_and_recover_partition(db):
    create(db, "dropped")
    insert(db, "dropped", range(0, 200, 10))
    settle(db, "dropped")
    insert(db, "dropped", [1, 2])  # in memory when p1 is dropped, flushed while it is away
    run(db, "ALTER TABLE dropped DROP PARTITION p1")
    assert run(db, "SELECT k FROM dropped ORDER BY k") == keys(range(100, 200, 10))
    insert(db, "dropped", [500])
    settle(db, "dropped")
    if db.node.mode == "flushed":
        wait_until(lambda: partition_objects(db), 30, "the dropped partition's rows flushed")
    assert run(db, "SELECT COUNT(*) FROM dropped") == ((11,),)
    run(db, "RECOVER PARTITION p1 FROM dropped")
    check(db, "SELECT k FROM dropped ORDER BY k", keys(sorted([*range(0, 200, 10), 1, 2, 500])))


def test_replace_partition_with_a_temporary_one(db):
    create(db, "swapped")
    insert(db, "swapped", range(0, 200, 10))
    settle(db, "swapped")
    run(db, "ALTER TABLE swapped ADD TEMPORARY PARTITION tp1 VALUES LESS THAN (100)")
    run(db, "ALTER TABLE swapped REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp1)")
    check(db, "SELECT k FROM swapped ORDER BY k", keys(range(100, 200, 10)))
    insert(db, "swapped", [3])
    settle(db, "swapped")
    check(db, "SELECT k FROM swapped ORDER BY k", keys([3, *range(100, 200, 10)]))


def test_replace_with_table_and_recover_table(db):
    create(db, "first")
    create(db, "second")
    insert(db, "first", [1, 2])
    insert(db, "second", [101, 102, 103])
    settle(db, "first")
    settle(db, "second")
    run(db, "ALTER TABLE first REPLACE WITH TABLE second")
    check(db, "SELECT k FROM first ORDER BY k", keys([101, 102, 103]))
    check(db, "SELECT k FROM second ORDER BY k", keys([1, 2]))
    run(db, "DROP TABLE second")
    run(db, "CREATE TABLE second (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    assert run(db, "SELECT COUNT(*) FROM second") == ((0,),)
    run(db, "ALTER TABLE second RENAME second_new")
    run(db, "RECOVER TABLE second")
    check(db, "SELECT k, v FROM second ORDER BY k", ((1, "v1"), (2, "v2")))


def test_the_cli_reads_a_renamed_and_added_column(db):
    create(db, "cli")
    insert(db, "cli", [1, 2])
    settle(db, "cli")
    alter(db, "ALTER TABLE cli RENAME COLUMN v label")
    alter(db, 'ALTER TABLE cli ADD COLUMN score INT DEFAULT "3"')
    done = mariadb(db.node, "d", "--batch", "-e", "SELECT k, label, score FROM cli ORDER BY k")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["k\tlabel\tscore", "1\tv1\t3", "2\tv2\t3"]


def test_a_column_added_with_current_timestamp_reads_the_alter_time_in_older_rows(db):
    """As in MySQL: the rows already there read the time of the ALTER, not NULL, and keep it
    (after a restart too); a row inserted later gets its own time."""
    create(db, "stamped")
    insert(db, "stamped", range(0, 120, 40))
    settle(db, "stamped")
    before = datetime.datetime.now().replace(microsecond=0)
    alter(db, "ALTER TABLE stamped ADD COLUMN at DATETIME DEFAULT CURRENT_TIMESTAMP")
    after = datetime.datetime.now()
    stamps = run(db, "SELECT DISTINCT at FROM stamped")
    assert len(stamps) == 1 and before <= stamps[0][0] <= after, (before, stamps, after)
    assert stamps[0][0].microsecond == 0  # DATETIME: whole seconds
    run(db, "INSERT INTO stamped (k, v, n) VALUES (500, 'late', 1)")
    late = run(db, "SELECT at FROM stamped WHERE k = 500")[0][0]
    assert late >= stamps[0][0].replace(microsecond=0)
    expected = tuple((k, stamps[0][0]) for k in range(0, 120, 40)) + ((500, late),)
    check(db, "SELECT k, at FROM stamped ORDER BY k", expected)


def test_everything_reads_the_same_after_a_restart(node):
    """Rows in memory come back from the TN's log (kill -9: nothing but the log), flushed ones
    from their objects (a clean stop)."""
    if node.mode == "memory":
        node.kill(signal.SIGKILL)
        node.start()
    else:
        node.restart()
    connection = node.connect()
    try:
        run(connection, "USE d")
        for query, expected in EXPECTED[node.mode].items():
            assert run(connection, query) == expected, query
    finally:
        connection.close()


def test_point_reads_follow_ddl_on_a_unique_key_table(db):
    """A point read on the first key is answered from the CN's key index: it must see what the
    table is after each change (a renamed or added column, a TRUNCATE), not what it indexed."""
    run(
        db,
        "CREATE TABLE pointed (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(db, "INSERT INTO pointed VALUES " + ", ".join(f"({k}, 'v{k}')" for k in range(30)))
    assert run(db, "SELECT v FROM pointed WHERE k = 5") == (("v5",),)
    run(db, "ALTER TABLE pointed RENAME COLUMN v w")
    assert run(db, "SELECT w FROM pointed WHERE k = 5") == (("v5",),)
    run(db, "ALTER TABLE pointed ADD COLUMN c INT DEFAULT '7'")
    wait_until(lambda: has_column(db, "pointed", "c"), 30, "the added column")
    assert run(db, "SELECT k, w, c FROM pointed WHERE k BETWEEN 4 AND 5") == (
        (4, "v4", 7),
        (5, "v5", 7),
    )
    run(db, "TRUNCATE TABLE pointed")
    assert run(db, "SELECT w FROM pointed WHERE k = 5") == ()
    run(db, "INSERT INTO pointed (k, w, c) VALUES (5, 'again', 1)")
    assert run(db, "SELECT w, c FROM pointed WHERE k = 5") == (("again", 1),)


def has_column(db, table: str, column: str) -> bool:
    return any(row[0] == column for row in run(db, f"DESC {table}"))
