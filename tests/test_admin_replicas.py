"""Doris's SHOW DATA SKEW, ADMIN SHOW REPLICA STATUS / DISTRIBUTION and SYNC, through PyMySQL and
the mariadb CLI: on a `quire up` (its TN in the process) and on two FEs with a TN and a CN of
their own (the TN holds every tablet's one replica; SYNC on the follower waits for the leader's
journal)."""

import threading
import time

import pytest

from fe.statements.storage import bar, share
from tests.harness import (
    QuireProcess,
    add_and_start,
    cluster_token,
    error_of,
    execute,
    free_port,
    mariadb,
    run,
    wait_until,
)
from tests.test_data_processes import FE_OVERRIDES, DataNode

SKEW_TITLES = ["PartitionName", "BucketIdx", "AvgRowCount", "AvgDataSize", "Graph", "Percent"]
STATUS_TITLES = [
    "TabletId", "ReplicaId", "BackendId", "Version", "LastFailedVersion", "LastSuccessVersion",
    "CommittedVersion", "SchemaHash", "VersionNum", "IsBad", "IsUserDrop", "State", "Status",
]  # fmt: skip
DISTRIBUTION_TITLES = [
    "BackendId", "ReplicaNum", "ReplicaSize", "NumGraph", "NumPercent", "SizeGraph",
    "SizePercent", "CloudClusterName", "CloudClusterId",
]  # fmt: skip
WHERE_HINT = (
    "Where clause should looks like: status =/!= 'OK/DEAD/VERSION_ERROR/SCHEMA_ERROR/MISSING'"
)


@pytest.fixture(scope="module")
def ar(quire, root):
    run(root, "CREATE DATABASE ar")
    run(
        root,
        "CREATE TABLE ar.parted (d DATE, k INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2025-01-01'), PARTITION p2 VALUES LESS THAN MAXVALUE) "
        "DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    days = ", ".join(f"('2024-01-{k:02}', {k})" for k in range(1, 11))
    run(root, f"INSERT INTO ar.parted VALUES {days}")
    run(root, "CREATE TABLE ar.one (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")  # fmt: skip
    run(root, "INSERT INTO ar.one VALUES (7, 'a'), (7, 'bb'), (7, 'ccc')")
    run(
        root,
        "CREATE TABLE ar.rolled (k INT, d DATE, v INT SUM) AGGREGATE KEY(k, d) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2 ROLLUP (r_day (d, v))",
    )
    run(root, "CREATE VIEW ar.seen AS SELECT k FROM ar.one")
    run(root, "CREATE USER IF NOT EXISTS 'ar_nobody' IDENTIFIED BY 'pw'")
    run(root, "CREATE USER IF NOT EXISTS 'ar_reader' IDENTIFIED BY 'pw'")
    run(root, "GRANT SELECT_PRIV ON ar.parted TO 'ar_reader'")
    connection = quire.connect(database="ar")
    yield connection
    connection.close()


def titled(connection, sql):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [column[0] for column in cursor.description], cursor.fetchall()


def batch(node, sql, user="root", password=""):
    """The mariadb CLI's --batch lines of a statement, split at tabs."""
    done = mariadb(node, "--batch", "-e", sql, user=user, password=password)
    assert done.returncode == 0, done.stderr
    return [line.split("\t") for line in done.stdout.splitlines()]


def test_graph_and_percent_are_written_as_doris_writes_them():
    assert [share(part, whole) for part, whole in ((1, 3), (2, 3), (1, 20), (0, 5))] == [
        "33.33 %", "66.67 %", "05.00 %", "00.00 %",
    ]  # fmt: skip
    assert (share(5, 5), share(0, 0)) == ("100.00%", "0.00%")
    assert (bar(1, 3), bar(2, 3), bar(5, 5), bar(0, 0)) == (">" * 33, ">" * 66, ">" * 100, "")


def test_show_data_skew_counts_each_bucket_of_each_partition(quire, ar):
    names, rows = titled(ar, "SHOW DATA SKEW FROM ar.parted")
    assert names == SKEW_TITLES
    assert [row[:2] for row in rows] == [(p, str(b)) for p in ("p1", "p2") for b in range(3)]
    tablets = run(ar, "SHOW TABLETS FROM parted PARTITION (p1)")  # the buckets in order
    assert [row[2:4] for row in rows[:3]] == [(tablet[10], tablet[8]) for tablet in tablets]
    assert sum(int(row[2]) for row in rows[:3]) == 10
    sizes = [int(row[3]) for row in rows[:3]]
    for (_, _, _, size, graph, percent), part in zip(rows[:3], sizes, strict=True):
        assert graph == ">" * (part * 100 // sum(sizes)), (size, graph)
        assert percent[2] == "." and percent.endswith(" %") and len(percent) == 7, percent
    assert abs(sum(float(row[5][:-2]) for row in rows[:3]) - 100) < 0.05
    assert rows[3:] == tuple(("p2", str(b), "0", "0", "", "0.00%") for b in range(3))
    assert run(ar, "SHOW DATA SKEW FROM parted PARTITION p2") == rows[3:]
    assert run(ar, "SHOW DATA SKEW FROM parted PARTITIONS (p2, p1)") == rows[3:] + rows[:3]
    # Every row of `one` has the same key: one bucket holds them all, the other none.
    held, empty = sorted(run(ar, "SHOW DATA SKEW FROM one"), key=lambda row: row[2] == "0")
    assert held[2] == "3" and int(held[3]) > 0 and held[4:] == (">" * 100, "100.00%")
    assert empty[2:] == ("0", "0", "", "00.00 %")
    lines = batch(quire, "SHOW DATA SKEW FROM ar.one")
    assert lines[0] == SKEW_TITLES
    assert sorted(tuple(line) for line in lines[1:]) == sorted([held, empty])


def test_show_data_skew_needs_a_privilege_on_the_table_and_a_table_with_tablets(quire, ar):
    assert error_of(ar, "SHOW DATA SKEW FROM parted PARTITION (p9)")[0] == 1735
    assert error_of(ar, "SHOW DATA SKEW FROM nothing")[0] == 1146
    assert error_of(ar, "SHOW DATA SKEW FROM seen") == (1105, "Table 'seen' is not a OLAP table")
    assert error_of(ar, "SHOW DATA SKEW parted")[0] == 1064
    assert error_of(ar, "SHOW DATA SKEW FROM parted WHERE k = 1")[0] == 1064
    with quire.connect("ar_nobody", "pw") as nobody:
        code, message = error_of(nobody, "SHOW DATA SKEW FROM ar.parted")
        assert code == 1142 and message.startswith("SHOW DATA SKEW command denied to user")
        assert error_of(nobody, "SHOW DATA SKEW FROM ar.nothing")[0] == 1142
    with quire.connect("ar_reader", "pw") as reader:
        assert len(run(reader, "SHOW DATA SKEW FROM ar.parted")) == 6
        assert error_of(reader, "SHOW DATA SKEW FROM ar.one")[0] == 1142
    lines = batch(quire, "SHOW DATA SKEW FROM ar.parted PARTITION p2", "ar_reader", "pw")
    assert lines[0] == SKEW_TITLES and len(lines) == 4


def test_replica_status_shows_each_tablets_one_replica(quire, ar):
    names, rows = titled(ar, "ADMIN SHOW REPLICA STATUS FROM ar.rolled")
    assert names == STATUS_TITLES
    tablets = run(ar, "SHOW TABLETS FROM rolled")  # the base index's and the rollup's
    assert len(tablets) == 4 and [row[0] for row in rows] == [row[0] for row in tablets]
    assert {row[1:] for row in rows} == {
        ("-1", "-1", "-1", "-1", "-1", "-1", "-1", "0", "false", "false", "NORMAL", "OK")
    }  # VersionNum: the tablet's objects (none flushed here)
    assert run(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE STATUS = 'OK'") == rows
    assert run(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE status = 'ok'") == rows
    assert run(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE STATUS != 'OK'") == ()
    assert run(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE Status <> 'DEAD'") == rows
    assert run(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE STATUS = 'MISSING'") == ()
    assert run(ar, "SHOW REPLICA STATUS FROM rolled") == rows  # Doris 2.1's words too
    p1 = run(ar, "ADMIN SHOW REPLICA STATUS FROM parted PARTITION (p1)")
    assert [row[0] for row in p1] == [row[0] for row in run(ar, "SHOW TABLETS FROM parted PARTITION (p1)")]  # fmt: skip
    lines = batch(quire, "ADMIN SHOW REPLICA STATUS FROM ar.parted PARTITION p2")
    assert lines[0] == STATUS_TITLES and len(lines) == 4 and lines[1][-1] == "OK"


def test_replica_status_refuses_other_conditions_users_without_admin_and_unknown_tables(quire, ar):
    for where in ("STATUS = 'BROKEN'", "Version = 1", "STATUS = 1"):
        sql = f"ADMIN SHOW REPLICA STATUS FROM rolled WHERE {where}"
        assert error_of(ar, sql) == (1105, WHERE_HINT), where
    sql = "ADMIN SHOW REPLICA STATUS FROM nothing WHERE Version = 1"  # checked before the table
    assert error_of(ar, sql) == (1105, WHERE_HINT)
    assert error_of(ar, "ADMIN SHOW REPLICA STATUS FROM rolled WHERE STATUS > 'OK'")[0] == 1064
    assert error_of(ar, "ADMIN SHOW REPLICA FROM rolled")[0] == 1064
    assert error_of(ar, "ADMIN SHOW REPLICA STATUS FROM nothing")[0] == 1146
    assert error_of(ar, "ADMIN SHOW REPLICA STATUS FROM parted PARTITION (p9)")[0] == 1735
    assert error_of(ar, "ADMIN SHOW REPLICA STATUS FROM seen")[0] == 1105
    with quire.connect("ar_reader", "pw") as reader:
        for sql in (
            "ADMIN SHOW REPLICA STATUS FROM ar.parted",
            "ADMIN SHOW REPLICA STATUS FROM ar.nothing",
            "ADMIN SHOW REPLICA DISTRIBUTION FROM ar.parted",
        ):
            code, message = error_of(reader, sql)
            assert code == 1227 and "ADMIN" in message, (sql, message)
    done = mariadb(quire, "--batch", "-e", "ADMIN SHOW REPLICA STATUS FROM ar.parted",
                   user="ar_reader", password="pw")  # fmt: skip
    assert done.returncode == 1 and "ERROR 1227" in done.stderr, done.stderr


def test_replica_distribution_lists_the_backends_show_backends_lists(quire, ar):
    """quire up's TN runs inside it: it adds no backend, so none is listed (as SHOW BACKENDS)."""
    names, rows = titled(ar, "ADMIN SHOW REPLICA DISTRIBUTION FROM ar.parted")
    assert names == DISTRIBUTION_TITLES and rows == () and run(ar, "SHOW BACKENDS") == ()
    assert run(ar, "SHOW REPLICA DISTRIBUTION FROM parted PARTITION (p1)") == ()
    assert error_of(ar, "ADMIN SHOW REPLICA DISTRIBUTION FROM nothing")[0] == 1146
    assert error_of(ar, "ADMIN SHOW REPLICA DISTRIBUTION FROM parted PARTITION (p9)")[0] == 1735
    assert error_of(ar, "ADMIN SHOW REPLICA DISTRIBUTION parted")[0] == 1064
    assert (
        batch(quire, "ADMIN SHOW REPLICA DISTRIBUTION FROM ar.parted") == []
    )  # no rows: no header


def answers_ok(connection, sql) -> bool:
    """Whether the statement is answered with OK (no result set)."""
    with connection.cursor() as cursor:
        return cursor.execute(sql) == 0 and cursor.description is None


def test_sync_on_the_leader_answers_at_once_for_anyone(quire, ar):
    started = time.monotonic()
    assert answers_ok(ar, "SYNC")
    assert time.monotonic() - started < 1
    with quire.connect("ar_nobody", "pw") as nobody:
        assert answers_ok(nobody, "SYNC")
    done = mariadb(quire, "-e", "SYNC", user="ar_nobody", password="pw")
    assert done.returncode == 0, done.stderr
    assert error_of(ar, "SYNC ar")[0] == 1064


def journal_id(node) -> int:
    return int(dict(execute(node, "SHOW PROC '/journal'"))["JournalId"])


def test_replicas_live_on_the_tn_and_sync_waits_for_the_leaders_journal(tmp_path):
    leader = QuireProcess(tmp_path / "fe1", FE_OVERRIDES, command="fe").start()
    follower = QuireProcess(tmp_path / "fe2", FE_OVERRIDES, command="fe").join_through(leader)
    logtail_port = free_port()
    tn = DataNode(tmp_path / "tn", "tn", cluster_token(leader), logtail_port)
    cn = DataNode(tmp_path / "cn", "cn", cluster_token(leader), logtail_port,
                  storage_root=tn.overrides["storage_root"])  # fmt: skip
    try:
        add_and_start(leader, follower, "FOLLOWER")
        for node in (tn.start(), cn.start()):
            execute(leader, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        roles = {row[25]: int(row[0]) for row in execute(leader, "SHOW BACKENDS")}
        execute(
            leader,
            "CREATE DATABASE d",
            "CREATE TABLE d.t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4",
            "INSERT INTO d.t VALUES " + ", ".join(f"({k}, 'value {k}')" for k in range(40)),
        )
        tablets = execute(leader, "SHOW TABLETS FROM d.t")
        assert {int(row[2]) for row in tablets} == {roles["TN"]}
        size = sum(int(row[8]) for row in tablets)
        assert size > 0
        wait_until(lambda: journal_id(follower) >= journal_id(leader), 30, "the follower")
        for fe in (leader, follower):
            status = execute(fe, "ADMIN SHOW REPLICA STATUS FROM d.t WHERE STATUS = 'OK'")
            assert [row[0] for row in status] == [row[0] for row in tablets]
            assert {row[2] for row in status} == {str(roles["TN"])}
        distribution = execute(leader, "ADMIN SHOW REPLICA DISTRIBUTION FROM d.t")
        assert distribution == tuple(sorted(
            [(str(roles["TN"]), "4", str(size), ">" * 100, "100.00%", ">" * 100, "100.00%", "", ""),
             (str(roles["CN"]), "0", "0", "", "00.00 %", "", "00.00 %", "", "")],
            key=lambda row: int(row[0]),
        ))  # fmt: skip
        lines = batch(leader, "ADMIN SHOW REPLICA DISTRIBUTION FROM d.t")
        assert lines[0] == DISTRIBUTION_TITLES and [tuple(line) for line in lines[1:]] == list(
            distribution
        )

        # SYNC on the follower answers once it has the leader's journal of that moment.
        made = []

        def create_tables():
            connection = leader.connect(database="d")
            for i in range(40):
                run(connection, f"CREATE TABLE made_{i} (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
                made.append(f"made_{i}")
            connection.close()

        writer = threading.Thread(target=create_tables)
        writer.start()
        synced = follower.connect(database="d")
        while writer.is_alive():
            before = journal_id(leader)
            assert answers_ok(synced, "SYNC")
            assert journal_id(follower) >= before
        writer.join()
        run(synced, "SYNC")
        assert {f"made_{i}" for i in range(40)} <= {row[0] for row in run(synced, "SHOW TABLES")}
        assert len(made) == 40
        done = mariadb(follower, "-e", "SYNC")
        assert done.returncode == 0, done.stderr

        # The TN gone: its replicas are DEAD once a heartbeat misses it.
        tn.kill()
        dead = "ADMIN SHOW REPLICA STATUS FROM d.t WHERE STATUS = 'DEAD'"
        wait_until(lambda: len(execute(leader, dead)) == 4, 30, "the TN's replicas to be DEAD")
        assert execute(leader, "ADMIN SHOW REPLICA STATUS FROM d.t WHERE STATUS = 'OK'") == ()

        # Without a leader, SYNC on the follower fails after a bounded wait.
        leader.stop()
        started = time.monotonic()
        code, _ = error_of(synced, "SYNC")
        assert code == 1105 and time.monotonic() - started < 30
        synced.close()
    finally:
        for node in (cn, tn, follower, leader):
            node.stop()
