"""The TN and CNs as processes of their own beside FEs: DML from any FE straight to the TN, reads
from the CN that follows the table, logtail pushed only to the CNs subscribed, kill -9 of a CN and
of the TN, strangers without the cluster token, SHOW BACKENDS kept by heartbeats."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pymysql
import pytest
import requests

from be.client import DataNode as ClientNode
from be.client import RemoteDataPlane
from be.cn.bounds import ColumnBound
from be.logtail.errors import AuthenticationFailed
from be.logtail.format import MAX_OBJECTS_PER_CHANGE
from be.logtail.subscriber import LogtailSubscriber
from be.service import format as service_format
from be.service.client import NodeClient
from be.service.errors import NodeUnavailable, NotAuthenticated, ServiceFormatError
from be.service.format import (
    FORMAT_VERSION,
    Accepted,
    AutoIncrement,
    CompactRequest,
    Kind,
    ObserveAutoIncrement,
    Reachable,
    Role,
    Rows,
    SnapshotRequest,
    Status,
    StatusRequest,
    TabletStats,
    TabletStatsRequest,
    TakeAutoIncrement,
    decode,
    encode,
    encode_schema,
)
from be.service.limits import ServiceLimits
from be.service.server import NodeServer
from be.table_schema import ColumnSchema, TableSchema
from fe.cluster.helper import TOKEN_ENVIRONMENT_VARIABLE
from metadata.records import KeyModel
from tests.harness import (
    REPO,
    QuireProcess,
    add_and_start,
    check_snapshot_starts_at_first_table_read,
    cluster_token,
    execute,
    free_port,
    wait_until,
)

FE_OVERRIDES = {"heartbeat_interval_second": 1, "backend_heartbeat_timeout_ms": 500}


class DataNode:
    """One `quire tn` or `quire cn` process with its own ports and folders."""

    def __init__(self, workdir: Path, role: str, token: str, logtail_port: int, **overrides):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.role = role
        self.token = token
        self.port = free_port()
        self.logtail_port = logtail_port
        self.overrides = {
            f"{role}_service_port": self.port,
            "logtail_port": logtail_port,
            "tn_logtail_address": f"127.0.0.1:{logtail_port}",
            "storage_root": self.workdir / "storage",
            "node_log_dir": self.workdir / "log",
            **({"webserver_port": free_port()} if role == "tn" else {}),
            **overrides,
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> DataNode:
        args = [sys.executable, "-m", "fe.cli", self.role]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self.output = open(self.workdir / "quire.out", "ab")
        self.process = subprocess.Popen(
            args,
            cwd=REPO,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            env={**os.environ, TOKEN_ENVIRONMENT_VARIABLE: self.token},
        )
        wait_until(self.answers, 60, f"the {self.role} to answer")
        return self

    def client(self, token: str | None = None) -> NodeClient:
        return NodeClient("127.0.0.1", self.port, token or self.token)

    def answers(self) -> bool:
        assert self.process.poll() is None, self.tail()
        client = self.client()
        try:
            return client.call(StatusRequest(), timeout=2).role is Role(self.role.upper())
        except Exception:
            return False
        finally:
            client.close()

    def status(self):
        client = self.client()
        try:
            return client.call(StatusRequest(), timeout=5)
        finally:
            client.close()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def tail(self) -> str:
        path = self.workdir / "quire.out"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@contextlib.contextmanager
def fe_with_tn_and_cn(
    folder: Path, tn: dict | None = None, cn: dict | None = None, fe: dict | None = None
):
    """A `quire fe` whose backends are a `quire tn` and a `quire cn` (overrides: tn, cn, fe; the
    CN reads the TN's storage_root unless cn names one), started: (fe, tn, cn)."""
    fe = {"heartbeat_interval_second": 1, **(fe or {})}
    front = QuireProcess(folder / "fe", fe, command="fe").start()
    token = cluster_token(front)
    logtail_port = free_port()
    tn_node = DataNode(folder / "tn", "tn", token, logtail_port, **(tn or {}))
    cn = {"storage_root": tn_node.overrides["storage_root"], **(cn or {})}
    cn_node = DataNode(folder / "cn", "cn", token, logtail_port, **cn)
    try:
        tn_node.start()
        cn_node.start()
        for node in (tn_node, cn_node):
            execute(front, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        yield front, tn_node, cn_node
    finally:
        for node in (cn_node, tn_node, front):
            node.stop()


@contextlib.contextmanager
def tn_and_cn(folder: Path, **tn_overrides):
    """A `quire tn` and a `quire cn` reading its storage_root, started: (tn, cn, storage_root)."""
    token = secrets.token_hex(16)
    logtail_port = free_port()
    storage = folder / "tn" / "storage"
    tn = DataNode(folder / "tn", "tn", token, logtail_port, **tn_overrides)
    cn = DataNode(folder / "cn", "cn", token, logtail_port, storage_root=storage)
    try:
        tn.start()
        cn.start()
        yield tn, cn, storage
    finally:
        for node in (cn, tn):
            node.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("processes")
    leader = QuireProcess(root / "fe1", FE_OVERRIDES, command="fe").start()
    token = cluster_token(leader)
    follower = QuireProcess(root / "fe2", FE_OVERRIDES, command="fe").join_through(leader)
    logtail_port = free_port()
    tn = DataNode(root / "tn", "tn", token, logtail_port)
    cns = [DataNode(root / f"cn{i}", "cn", token, logtail_port) for i in (1, 2)]
    nodes = [leader, follower, tn, *cns]
    try:
        add_and_start(leader, follower, "FOLLOWER")
        tn.start()
        for cn in cns:
            cn.start()
        for node in (tn, *cns):
            execute(leader, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        execute(leader, "CREATE DATABASE d")
        yield leader, follower, tn, cns
    finally:
        for node in reversed(nodes):
            node.stop()


def rows(node, sql: str) -> list[tuple]:
    connection = node.connect(database="d")
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def table_id(node, name: str) -> int:
    found = rows(node, f"SHOW PROC '/dbs'")  # noqa: F541 - the database's id first
    db_id = next(row[0] for row in found if row[1] == "d")
    tables = rows(node, f"SHOW PROC '/dbs/{db_id}'")
    return int(next(row[0] for row in tables if row[1] == name))


def backends(node) -> dict[int, dict]:
    connection = node.connect()
    try:
        with connection.cursor(pymysql.cursors.DictCursor) as cursor:
            cursor.execute("SHOW BACKENDS")
            return {row["HeartbeatPort"]: row for row in cursor.fetchall()}
    finally:
        connection.close()


def test_show_backends_has_doris_columns_and_roles(cluster):
    leader, follower, tn, cns = cluster
    for fe in (leader, follower):
        seen = wait_until(
            lambda fe=fe: (
                (b := backends(fe)) and all(r["Alive"] == "true" for r in b.values()) and b
            ),
            20,
            "every backend alive",
        )
        assert {row["Role"] for row in seen.values()} == {"TN", "CN"}
        assert seen[tn.port]["Role"] == "TN" and seen[cns[0].port]["Role"] == "CN"
        assert {"BackendId", "LastHeartbeat", "ErrMsg", "NodeRole", "Version"} <= set(
            next(iter(seen.values()))
        )
    assert len(rows(leader, "SHOW PROC '/backends'")) == 3


def test_insert_on_a_follower_reads_on_another_fe(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.t (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    wait_until(lambda: rows(follower, "SHOW TABLES") == [("t",)], 20, "the table on the follower")
    connection = follower.connect(database="d")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        cursor.execute("UPDATE t SET v = 'bb' WHERE k = 2")
        cursor.execute("SELECT k, v FROM t ORDER BY k")  # the session reads its own write
        assert cursor.fetchall() == ((1, "a"), (2, "bb"), (3, "c"))
    connection.close()
    assert rows(leader, "SELECT k, v FROM t ORDER BY k") == [(1, "a"), (2, "bb"), (3, "c")]
    assert rows(leader, "SELECT count(*) FROM t WHERE v > 'a'") == [(2,)]
    hashed = "SELECT k, MURMUR_HASH3_32(v), XXHASH_64(v, k) FROM t WHERE k = 1"  # a CN's engine
    assert rows(leader, hashed) == [(1, 1086686554, -2552955714554822400)]
    counted = (
        "SELECT BITMAP_UNION_COUNT(TO_BITMAP(k)), BITMAP_TO_STRING(BITMAP_UNION(BITMAP_HASH(v)))"
    )
    assert rows(leader, counted + " FROM t WHERE k = 1") == [(1, "1086686554")]  # on a CN
    execute(follower, "CREATE TABLE d.uv (v VARCHAR(9), users BITMAP BITMAP_UNION) "
            "AGGREGATE KEY(v) DISTRIBUTED BY HASH(v) BUCKETS 1",
            "INSERT INTO d.uv SELECT 'all', TO_BITMAP(k) FROM d.t",
            "INSERT INTO d.uv VALUES ('all', TO_BITMAP(7))")  # fmt: skip
    assert rows(leader, "SELECT BITMAP_TO_STRING(users) FROM uv") == [("1,2,3,7",)]
    generated = "SELECT COUNT(*) FROM numbers('number' = '10') n JOIN t ON t.k = n.number"
    assert rows(leader, generated) == [(3,)]  # a table the FE made, read beside a CN's
    execute(follower, "CREATE TABLE d.t_copy AS SELECT k, v FROM d.t WHERE k > 1")  # forwarded
    assert rows(leader, "SELECT k, v FROM t_copy ORDER BY k") == [(2, "bb"), (3, "c")]


def test_an_insert_on_a_follower_has_the_leader_make_auto_partitions(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.auto_months (id INT, d DATE NOT NULL) DUPLICATE KEY(id) AUTO PARTITION "
        "BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    wait_until(
        lambda: ("auto_months",) in rows(follower, "SHOW TABLES"), 20, "the table on the follower"
    )
    execute(follower, "INSERT INTO d.auto_months VALUES (1, '2024-01-05'), (2, '2024-02-06')")
    assert [row[1] for row in rows(leader, "SHOW PARTITIONS FROM auto_months")] == [
        "p20240101000000",
        "p20240201000000",
    ]
    assert rows(follower, "SELECT id FROM auto_months ORDER BY id") == [(1,), (2,)]
    stranger = requests.post(  # only FEs of the cluster (its token) ask for partitions
        f"http://127.0.0.1:{leader.http_port}/api/_auto_partitions",
        json={"table_id": 1, "values": [["2030-01-01"]]},
        timeout=10,
    )
    assert stranger.status_code == 401


def test_nested_values_read_as_doris_shows_them_from_a_cn(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.nest (k INT, arr ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<a:INT>) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    wait_until(lambda: ("nest",) in rows(follower, "SHOW TABLES"), 20, "the table on the follower")
    execute(follower, """INSERT INTO d.nest VALUES (1, [1, NULL], '{"a": 2}', '{"a": 3}')""")
    assert rows(leader, "SELECT arr, m, s, m['a'] FROM nest") == [
        ("[1, null]", '{"a":2}', '{"a":3}', 2)
    ]


def test_auto_increment_tablet_stats_and_point_reads_through_the_nodes(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.ai (id BIGINT NOT NULL AUTO_INCREMENT, v VARCHAR(10)) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3",
    )
    wait_until(lambda: ("ai",) in rows(follower, "SHOW TABLES"), 20, "the table on the follower")
    for fe, values in ((leader, "(NULL, 'a'), (NULL, 'b')"), (follower, "(10, 'c'), (NULL, 'd')")):
        connection = fe.connect(database="d")
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO ai VALUES {values}")
        connection.close()
    assert rows(leader, "SELECT id, v FROM ai ORDER BY id") == [
        (1, "a"),
        (2, "b"),
        (10, "c"),
        (11, "d"),
    ]
    assert rows(follower, "SELECT v FROM ai WHERE id = 10") == [("c",)]
    assert rows(leader, "SELECT v FROM ai WHERE id BETWEEN 2 AND 10 ORDER BY v") == [("b",), ("c",)]
    counted = [int(row[10]) for row in rows(leader, "SHOW TABLETS FROM d.ai")]  # RowCount
    assert sum(counted) == 4 and len(counted) == 3, counted
    execute(follower, "ADMIN COMPACT TABLE d.ai WHERE type = 'FULL'")  # the TN process flushes

    def one_object_a_tablet_with_rows() -> bool:  # (RowCount, VersionCount) of each tablet
        shown = [(int(row[10]), int(row[15])) for row in rows(leader, "SHOW TABLETS FROM d.ai")]
        return all(versions == (1 if count else 0) for count, versions in shown)

    wait_until(one_object_a_tablet_with_rows, 30, "the compaction's flush")


def test_statements_naming_partitions_keep_to_them_through_the_nodes(cluster):
    """Reads by the first key column are answered from a CN's key index, which holds every
    partition's rows: a statement naming partitions gets only theirs (it deleted a row of p1)."""
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.parted (k INT, dt DATE, n INT) DUPLICATE KEY(k, dt) PARTITION BY "
        "RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), PARTITION p2 VALUES LESS "
        "THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2",
        "INSERT INTO d.parted VALUES (1, '2024-01-05', 1), (3, '2024-01-06', 3), "
        "(4, '2024-02-07', 4), (5, '2024-02-09', 5)",
    )
    assert rows(leader, "SELECT k FROM parted PARTITION (p2) WHERE k = 3") == []
    execute(
        leader,
        "DELETE FROM d.parted PARTITION (p2) WHERE k = 3",  # k = 3 is in p1
        "UPDATE d.parted PARTITION p2 SET n = 0 WHERE k = 1",
    )
    assert rows(leader, "SELECT k, n FROM parted ORDER BY k") == [(1, 1), (3, 3), (4, 4), (5, 5)]
    execute(leader, "DELETE FROM d.parted PARTITION (p1) WHERE k = 3")
    assert rows(leader, "SELECT k FROM parted ORDER BY k") == [(1,), (4,), (5,)]


def test_show_data_and_table_status_count_every_table_through_the_tn(cluster):
    """SHOW DATA and SHOW TABLE STATUS ask the TN about all of a database's tables at once: each
    table's rows and bytes are what SHOW TABLETS counts for it alone."""
    leader, follower, tn, cns = cluster
    inserted = {"a": 3, "b": 7, "c": 0, "e": 12}
    execute(leader, "CREATE DATABASE sized")
    for name, count in inserted.items():
        execute(
            leader,
            f"CREATE TABLE sized.{name} (k INT, v VARCHAR(20)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 2",
        )
        if count:
            values = ", ".join(f"({k}, 'value {k}')" for k in range(count))
            execute(leader, f"INSERT INTO sized.{name} VALUES {values}")

    def figures(fe) -> tuple[dict, dict, dict, dict, dict]:
        """Each table alone (SHOW TABLETS, SHOW DATA FROM it), then all of them at once."""
        tablets = {name: execute(fe, f"SHOW TABLETS FROM sized.{name}") for name in inserted}
        each = {name: (sum(int(r[10]) for r in rows), sum(int(r[8]) for r in rows))
                for name, rows in tablets.items()}  # fmt: skip
        each_text = {name: execute(fe, f"SHOW DATA FROM sized.{name}")[0][2] for name in inserted}
        status = {row[0]: (int(row[4]), int(row[6]))
                  for row in execute(fe, "SHOW TABLE STATUS FROM sized")}  # fmt: skip
        data = {row[0]: row[1] for row in execute(fe, "USE sized", "SHOW DATA")}
        databases = {row[1]: row[2] for row in execute(fe, "SHOW DATA")}
        return each, each_text, status, data, databases

    for fe in (leader, follower):
        wait_until(
            lambda fe=fe: set(execute(fe, "SHOW TABLES FROM sized")) == {(n,) for n in inserted},
            20,
            "the tables on every FE",
        )
        each, each_text, status, data, databases = figures(fe)
        assert {name: rows for name, (rows, _) in each.items()} == inserted
        assert all(size > 0 for name, (_, size) in each.items() if inserted[name])
        assert each["c"][1] == 0
        assert status == each
        assert {name: data[name] for name in inserted} == each_text
        assert set(data) == {*inserted, "Total", "Quota", "Left"}
        assert int(databases["sized"]) == sum(size for _, size in each.values())


def test_a_statement_on_a_lagging_fe_is_run_again_after_a_schema_change(cluster):
    """The follower may write with the definition it had before the leader's ALTER reached it:
    the TN refuses that write, and the follower runs the INSERT again with the new one."""
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.evolving (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    wait_until(lambda: ("evolving",) in rows(follower, "SHOW TABLES"), 20, "the table")
    first, second = leader.connect(database="d"), follower.connect(database="d")
    try:
        with first.cursor() as on_leader, second.cursor() as on_follower:
            for n in range(6):
                on_leader.execute(f"ALTER TABLE evolving ADD COLUMN c{n} INT DEFAULT '{n}'")
                on_leader.execute(f"INSERT INTO evolving (k, v) VALUES ({2 * n}, {n})")
                on_follower.execute(f"INSERT INTO evolving (k, v) VALUES ({2 * n + 1}, {n})")
    finally:
        first.close()
        second.close()
    assert rows(leader, "SELECT count(*), sum(k) FROM evolving") == [(12, sum(range(12)))]


def test_a_write_on_a_lagging_fe_after_a_truncate_is_not_lost(cluster):
    """TRUNCATE gives the partitions new ids: a follower that has not replayed it yet would place
    its rows in the old ones, where no read looks. The TN refuses that write (the table's
    version moved) and the follower writes again into the new partitions."""
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.emptied (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    wait_until(lambda: ("emptied",) in rows(follower, "SHOW TABLES"), 20, "the table")
    first, second = leader.connect(database="d"), follower.connect(database="d")
    try:
        with first.cursor() as on_leader, second.cursor() as on_follower:
            for n in range(5):
                on_leader.execute("TRUNCATE TABLE emptied")
                on_leader.execute(f"INSERT INTO emptied VALUES ({n}, 0)")
                on_follower.execute(f"INSERT INTO emptied VALUES ({n}, 1)")
                on_leader.execute("SELECT k, v FROM emptied ORDER BY v")
                assert on_leader.fetchall() == ((n, 0), (n, 1))
    finally:
        first.close()
        second.close()


def test_two_cns_follow_different_tables(cluster):
    leader, follower, tn, cns = cluster
    names: list[str] = []
    ids: set[int] = set()
    followed: list[set[int]] = [set(), set()]
    while not (followed[0] and followed[1]):  # until each CN follows some table
        assert len(names) < 32, followed
        name = f"spread{len(names)}"
        names.append(name)
        execute(
            leader,
            f"CREATE TABLE d.{name} (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
        )
        execute(leader, f"INSERT INTO d.{name} VALUES (1), (2)")
        assert rows(leader, f"SELECT count(*) FROM {name}") == [(2,)]
        ids.add(table_id(leader, name))
        followed = [set(cn.status().tables) & ids for cn in cns]
    assert not followed[0] & followed[1], "a table is followed by one CN"
    assert followed[0] | followed[1] == ids
    # A second FE reads each table from the same CN (rendezvous hashing over the same backends).
    for name in names:
        assert rows(follower, f"SELECT count(*) FROM {name}") == [(2,)]
    assert [set(cn.status().tables) & ids for cn in cns] == followed


def test_a_killed_cn_comes_back_and_reads_go_on(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader, "CREATE TABLE d.k9 (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    execute(leader, "INSERT INTO d.k9 VALUES (1, 1)")
    assert rows(leader, "SELECT count(*) FROM k9") == [(1,)]
    k9 = table_id(leader, "k9")
    victim = next(cn for cn in cns if k9 in cn.status().tables)
    victim.kill()
    execute(follower, "INSERT INTO d.k9 VALUES (2, 2)")
    assert rows(leader, "SELECT sum(v) FROM k9") == [(3,)]  # through the other CN or the TN
    wait_until(
        lambda: backends(leader)[victim.port]["Alive"] == "false", 10, "the killed CN not alive"
    )
    assert backends(leader)[victim.port]["ErrMsg"]
    victim.start()
    for fe in (leader, follower):
        wait_until(lambda fe=fe: backends(fe)[victim.port]["Alive"] == "true", 20, "the CN back")
    execute(leader, "INSERT INTO d.k9 VALUES (3, 3)")
    assert rows(follower, "SELECT sum(v) FROM k9") == [(6,)]
    assert k9 in victim.status().tables  # it resubscribed and caught up from the TN
    assert victim.status().watermark > 0


def test_a_killed_tn_loses_no_acknowledged_commit(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader, "CREATE TABLE d.durable (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    wait_until(lambda: ("durable",) in rows(follower, "SHOW TABLES"), 20, "the table everywhere")
    acknowledged: list[int] = []
    stop = threading.Event()

    def load(fe, start):
        connection = fe.connect(database="d")
        key = start
        while not stop.is_set():
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"INSERT INTO durable VALUES ({key})")
                acknowledged.append(key)
            except pymysql.MySQLError:
                pass
            key += 2
        connection.close()

    loaders = [
        threading.Thread(target=load, args=(fe, n)) for n, fe in enumerate((leader, follower))
    ]
    for loader in loaders:
        loader.start()
    wait_until(lambda: len(acknowledged) >= 20, 30, "some commits")
    assert rows(follower, "SELECT count(*) FROM durable")[0][0] >= 20  # a CN follows it now
    execute(follower, "INSERT INTO d.durable WITH LABEL kept VALUES (-10)")  # a labelled load
    tn.kill()
    time.sleep(0.3)  # the loaders see the TN gone  # noqa: TID251
    stop.set()
    for loader in loaders:
        loader.join()
    # Without the TN the CN following the table still answers, at the lowest watermark of all.
    assert rows(follower, "SELECT count(*) FROM durable")[0][0] > 0
    error = pytest.raises(pymysql.MySQLError, execute, leader, "INSERT INTO d.durable VALUES (0)")
    assert "TN" in str(error.value)
    tn.start()
    # The FEs' pooled connections to the old TN are not used: the first statements succeed.
    execute(leader, "INSERT INTO d.durable VALUES (-2)")
    execute(follower, "INSERT INTO d.durable VALUES (-3)")
    # cns[0] starts from nothing (all from the restarted TN's log); cns[1] stayed up and
    # resubscribes from its watermark: both must hold the same rows, none twice.
    cns[0].kill()
    cns[0].start()
    found = wait_until(
        lambda: rows(leader, "SELECT k FROM durable"), 30, "the table readable again"
    )
    assert set(acknowledged) | {-2, -3, -10} <= {k for (k,) in found}
    # The load's label came back with the TN's log: the same label is refused on any FE.
    refused = pytest.raises(
        pymysql.MySQLError, execute, leader, "INSERT INTO d.durable WITH LABEL kept VALUES (-11)"
    )
    assert refused.value.args[0] == 1105 and "Label [kept]" in refused.value.args[1]
    schema = TableSchema(
        table_id(leader, "durable"), 1, (ColumnSchema("k", pa.int32()),), KeyModel.DUPLICATE, ("k",)
    )
    ts = tn.status().watermark
    held = []
    for cn in cns:
        client = cn.client()
        table = client.call(SnapshotRequest(schema, ts, False, 20_000), timeout=30).table
        client.close()
        held.append(sorted(table.column("k").to_pylist()))
    assert held[0] == held[1]
    assert len(held[0]) == len(set(held[0])) == len(found)
    execute(follower, "INSERT INTO d.durable VALUES (-1)")
    assert (-1,) in rows(leader, "SELECT k FROM durable")
    execute(follower, "CLEAN LABEL kept FROM d")  # asked of the TN's process
    execute(leader, "INSERT INTO d.durable WITH LABEL kept VALUES (-11)")


def test_strangers_without_the_token_are_refused(cluster):
    leader, follower, tn, cns = cluster
    for node in (tn, *cns):
        stranger = node.client(token="not the cluster token")
        with pytest.raises(NotAuthenticated):
            stranger.call(StatusRequest(), timeout=5)
        stranger.close()
    subscriber = LogtailSubscriber(
        "127.0.0.1", tn.logtail_port, "not the cluster token", on_commit=lambda commit: None
    )
    subscriber.start()
    try:
        wait_until(
            lambda: isinstance(subscriber.last_error, AuthenticationFailed), 10, "the refusal"
        )
        assert not subscriber.connected
    finally:
        subscriber.close()
    error = pytest.raises(
        pymysql.MySQLError, execute, leader, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{free_port()}"'
    )
    assert "cannot be reached" in str(error.value)


def test_drop_backend_and_add_it_again(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader, "CREATE TABLE d.dropped (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    execute(leader, "INSERT INTO d.dropped VALUES (1), (2), (3)")
    cn = cns[0]
    execute(leader, f'ALTER SYSTEM DROP BACKEND "127.0.0.1:{cn.port}"')
    for fe in (leader, follower):
        wait_until(lambda fe=fe: cn.port not in backends(fe), 20, "the CN gone from SHOW BACKENDS")
    assert rows(follower, "SELECT count(*) FROM dropped") == [(3,)]
    error = pytest.raises(
        pymysql.MySQLError, execute, leader, f'ALTER SYSTEM DROP BACKEND "127.0.0.1:{cn.port}"'
    )
    assert "does not exist" in str(error.value)
    execute(leader, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{cn.port}"')
    error = pytest.raises(
        pymysql.MySQLError, execute, leader, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{tn.port}"'
    )
    assert "already exists" in str(error.value)
    wait_until(lambda: backends(leader)[cn.port]["Alive"] == "true", 20, "the CN back")


def test_a_node_that_cannot_start_says_why_in_one_line(cluster, tmp_path):
    leader, follower, tn, cns = cluster
    no_token = DataNode(tmp_path / "no_token", "cn", "", tn.logtail_port)
    second_tn = DataNode(
        tmp_path / "second", "tn", tn.token, free_port(), storage_root=tn.overrides["storage_root"]
    )
    for node, words in ((no_token, "cluster token"), (second_tn, "in use by another")):
        args = [sys.executable, "-m", "fe.cli", node.role]
        for key, value in node.overrides.items():
            args += ["--override", f"{key}={value}"]
        environment = {**os.environ, TOKEN_ENVIRONMENT_VARIABLE: node.token}
        finished = subprocess.run(
            args + ["--daemon"], cwd=REPO, env=environment, capture_output=True, timeout=60
        )
        assert finished.returncode == 1
        line = finished.stderr.decode().strip()
        assert words in line and "\n" not in line, line


# -- the node service alone, in this process ---------------------------------------------------


def echo_server(handle=None) -> NodeServer:
    async def status(request):
        if handle is not None:
            return await handle(request)
        return Status(Role.CN, "echo", 7, (1, 2), 0)

    server = NodeServer(Role.CN, "echo", "token", status, port=free_port())
    server.start()
    return server


def test_messages_are_checked_strictly():
    limits = ServiceLimits()
    schema = TableSchema(
        5, 2, (ColumnSchema("k", pa.int32(), False), ColumnSchema("v", pa.string(), True, "REPLACE")),
        KeyModel.AGGREGATE, ("k",),
    )  # fmt: skip
    request = SnapshotRequest(schema, 42, True, 1000, (ColumnBound("k", 3, None),), ("v",))
    data = encode(request, limits)
    assert decode(data, limits) == request
    for message in (
        TakeAutoIncrement(5, 100),
        ObserveAutoIncrement(5, -(1 << 63)),
        AutoIncrement(7),
        TabletStatsRequest((schema, replace(schema, table_id=6))),
        TabletStats(((5, ((11, 3, 4096, 2), (12, 0, 0, 0))), (6, ()))),
        Reachable(99, ((5, (6, 7)), (8, ()))),
        CompactRequest(5, (6, 7)),
        CompactRequest(5),
        Accepted(),
    ):
        assert decode(encode(message, limits), limits) == message
    for malformed in (
        TakeAutoIncrement(5, 0),
        TabletStats(((5, ((0, 1, 1, 1),)),)),  # tablet id 0
        TabletStats(((5, ((11, 3, 4096),)),)),  # no object count (format 10's shape)
        TabletStats(((5, ()), (5, ()))),  # a table twice
        CompactRequest(0),  # table id 0
        TabletStatsRequest((schema, schema)),
    ):
        with pytest.raises(ServiceFormatError):
            decode(encode(malformed, limits), limits)
    few = ServiceLimits(max_stats_tables=1)
    for too_many in (TabletStatsRequest((schema, replace(schema, table_id=6))),
                     TabletStats(((5, ()), (6, ())))):  # fmt: skip
        with pytest.raises(ServiceFormatError):
            encode(too_many, few)
        with pytest.raises(ServiceFormatError):
            decode(encode(too_many, limits), few)
    for damaged in (
        data[:-1],  # truncated
        data[:10] + bytes([data[10] ^ 1]) + data[11:],  # a flipped bit
        bytes([FORMAT_VERSION + 1]) + data[1:],  # a version this build does not read
        data + b"\0",  # trailing bytes
    ):
        with pytest.raises(ServiceFormatError):
            decode(damaged, limits)
    small = ServiceLimits(max_message_bytes=1 << 12, max_unauthenticated_message_bytes=1 << 10)
    with pytest.raises(ServiceFormatError):
        encode(Rows(pa.table({"x": pa.array(range(10_000))})), small)


def test_every_malformed_list_is_refused():
    """Each list a message carries is refused when it is not a list, when it is longer than its
    limit, or when it names a table twice; a table that must be there is refused when absent."""
    limits = ServiceLimits(max_columns=2, max_stats_tables=2, max_query_tables=1)
    schema = TableSchema(5, 1, (ColumnSchema("k", pa.int32(), False),), KeyModel.DUPLICATE, ("k",))
    encoded = encode_schema(schema)
    other = encode_schema(replace(schema, table_id=6))
    read = [encoded, 1, False]
    malformed = {
        Kind.STATUS: (["CN", "n", 1, 7, 0, []], ["CN", "n", 1, [], 0, [["s", 1]] * 65]),
        Kind.COMMIT_REQUEST: ([1, "r", 5], [1, "r", [[encoded, None, None]] * 2]),
        Kind.SNAPSHOT_REQUEST: (
            [*read, 1000, [], None],  # six fields
            [*read, 1000, "bounds", None, None],
            [*read, 1000, [], ["a", "b", "c"], None],  # over max_columns
            [*read, 1000, [], None, 9],
        ),
        Kind.ROWS: ([None],),
        Kind.READ_PLAN_REQUEST: ([encoded, 1, 1, "k"], [encoded, 1, 1, ["a", "b", "c"]]),
        Kind.TABLET_STATS_REQUEST: ([encoded], [[encoded, other, encoded]], [[encoded, encoded]]),
        Kind.TABLET_STATS: ([[[5, 7]]], [[[5, []], [6, []], [7, []]]], [[[5, []], [5, []]]]),
        Kind.REACHABLE: ([1, 5], [1, [[5, 6]]]),
        Kind.COMPACT_REQUEST: ([5], [0, []], [5, [0]], [5, 6]),
        Kind.QUERY_REQUEST: (
            ["SELECT 1", "t", [], 1, 1, 1],
            ["SELECT 1", [], [["a", None]], 1, 1, 1],
            ["SELECT 1", [], [["a", None], ["b", None]], 1, 1, 1],
        ),
        Kind.RESULT_PART: ([None],),
        Kind.RESULT_END: ([[["a", "INT"]] * 3, 0], ["a", 0]),
        Kind.FAILURE: (["X", "y", "z"], ["X", "y", [1] * 9]),
        Kind.COMMIT_LOAD: ([1, encoded, "objects", False],),
        Kind.ABORT_LOAD: ([1, "name"], [1, ["n"] * (MAX_OBJECTS_PER_CHANGE + 1)]),
    }
    for kind, cases in malformed.items():
        for fields in cases:
            data = service_format._ENVELOPE.seal([kind, *fields], limits.max_message_bytes)
            with pytest.raises(ServiceFormatError):
                decode(data, limits)
                pytest.fail(f"{kind.name} {fields!r:.100} was accepted")


def test_dropped_connections_and_oversized_frames():
    server = echo_server()
    try:
        client = NodeClient("127.0.0.1", server.port, "token")
        assert client.call(StatusRequest(), timeout=5).tables == (1, 2)
        # The node drops every connection: the next call fails, the one after reconnects.
        asyncio.run_coroutine_threadsafe(_drop_all(server), server.loop).result(5)
        try:
            client.call(StatusRequest(), timeout=5)
        except NodeUnavailable:
            pass
        assert client.call(StatusRequest(), timeout=5).watermark == 7
        client.close()
        # Before the token is proven a large frame is refused without being read.
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
            raw.recv(1024)  # the challenge
            raw.sendall(struct.pack(">I", 1 << 20) + b"x" * 100)
            wait_until(lambda: raw.recv(1024) == b"", 5, "the node to hang up")
    finally:
        server.close()
    # A node gone: its client gets NodeUnavailable, not a hang.
    with pytest.raises(NodeUnavailable):
        NodeClient("127.0.0.1", server.port, "token").call(StatusRequest(), timeout=2)


async def _drop_all(server: NodeServer) -> None:
    for task in list(server._connections):
        task.cancel()


def test_show_table_status_of_more_tables_than_one_request_holds(cluster):
    """A database of more tables than a tablet statistics request may name: the FE asks the TN
    process in batches, and every table's rows are there, those of the last batch too."""
    leader, _, _, _ = cluster
    count = ServiceLimits().max_stats_tables + 4
    names = [f"t{number:03d}" for number in range(count)]
    creates = [
        f"CREATE TABLE many.{name} (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
        for name in names
    ]
    filled = {name: number % 5 + 1 for number, name in enumerate(names) if number % 37 == 0}
    filled[names[-1]] = 3  # named by the last request alone
    inserts = [
        f"INSERT INTO many.{name} VALUES " + ", ".join(f"({k})" for k in range(rows))
        for name, rows in filled.items()
    ]
    execute(leader, "CREATE DATABASE many", *creates, *inserts)
    status = {row[0]: int(row[4]) for row in execute(leader, "SHOW TABLE STATUS FROM many")}
    assert status == {name: filled.get(name, 0) for name in names}
    data = {row[0]: row for row in execute(leader, "USE many", "SHOW DATA")}
    assert set(data) == {*names, "Total", "Quota", "Left"}
    assert int(execute(leader, "SELECT COUNT(*) FROM many." + names[-1])[0][0]) == 3


def test_tablet_statistics_of_many_tables_are_asked_in_batches():
    """The data plane asks the TN about max_stats_tables tables per request, not one per table,
    and hands back each table's tablets."""
    asked: list[tuple[int, ...]] = []

    async def tn(request):
        assert type(request) is TabletStatsRequest
        ids = tuple(schema.table_id for schema in request.schemas)
        asked.append(ids)
        return TabletStats(tuple((i, ((i * 100, i, i * 10, 1),)) for i in ids))

    server = echo_server(tn)
    plane = RemoteDataPlane(
        "token",
        lambda: [ClientNode(1, "127.0.0.1", server.port, Role.TN)],
        ServiceLimits(max_stats_tables=2),
    )
    schema = TableSchema(1, 1, (ColumnSchema("k", pa.int32(), False),), KeyModel.DUPLICATE, ("k",))
    try:
        stats = plane.tablet_stats([replace(schema, table_id=i) for i in range(1, 6)])
    finally:
        plane.close()
        server.close()
    assert asked == [(1, 2), (3, 4), (5,)]
    assert stats == {i: {i * 100: (i, i * 10, 1)} for i in range(1, 6)}


def test_a_slow_node_times_out_and_its_connection_is_not_reused():
    release = threading.Event()

    async def slow(request):
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)
        return Status(Role.CN, "slow", 1, (), 0)

    server = echo_server(slow)
    try:
        client = NodeClient("127.0.0.1", server.port, "token")
        with pytest.raises(NodeUnavailable):
            client.call(StatusRequest(), timeout=0.3)
        release.set()
        assert client.call(StatusRequest(), timeout=5).name == "slow"  # not the late reply
        client.close()
    finally:
        server.close()


def test_a_daemon_cn_starts_and_stops(cluster, tmp_path):
    leader, follower, tn, cns = cluster
    node = DataNode(tmp_path / "daemon", "cn", tn.token, tn.logtail_port)
    args = [sys.executable, "-m", "fe.cli", "cn"]
    for key, value in node.overrides.items():
        args += ["--override", f"{key}={value}"]
    environment = {**os.environ, TOKEN_ENVIRONMENT_VARIABLE: node.token}
    started = subprocess.run(
        args + ["--daemon"], cwd=REPO, env=environment, capture_output=True, timeout=60
    )
    assert started.returncode == 0, started.stderr
    assert node.status().role is Role.CN
    stopped = subprocess.run(args + ["--stop"], cwd=REPO, capture_output=True, timeout=90)
    assert stopped.returncode == 0, stopped.stderr
    assert not (tmp_path / "daemon" / "log" / "cn.pid").exists()


def test_a_cn_process_reads_what_the_tn_flushed(tmp_path):
    """A CN in a process of its own reads the objects the TN flushed into their shared
    storage_root, and keeps reading them after a restart of the TN."""
    fe = QuireProcess(tmp_path / "fe", FE_OVERRIDES, command="fe").start()
    token = cluster_token(fe)
    logtail_port = free_port()
    storage = tmp_path / "tn" / "storage"
    flushing = {"flush_rows": 10, "flush_interval_second": 1}
    tn = DataNode(tmp_path / "tn", "tn", token, logtail_port, **flushing)
    cn = DataNode(tmp_path / "cn", "cn", token, logtail_port, storage_root=storage)
    try:
        tn.start()
        cn.start()
        execute(fe, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{cn.port}"')
        execute(fe, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{tn.port}"')
        execute(
            fe,
            "CREATE DATABASE d",
            "CREATE TABLE d.f (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        )
        for start in range(0, 60, 20):
            values = ", ".join(f"({k}, {k * 2})" for k in range(start, start + 20))
            execute(fe, f"INSERT INTO d.f VALUES {values}")
        wait_until(
            lambda: list((storage / "objects").rglob("*.parquet")), 30, "the TN to flush objects"
        )
        execute(fe, "DELETE FROM d.f WHERE k < 10")
        assert rows(fe, "SELECT COUNT(*), SUM(v) FROM d.f") == [
            (50, sum(k * 2 for k in range(10, 60)))
        ]
        tn.stop()
        tn.start()
        wait_until(
            lambda: rows(fe, "SELECT COUNT(*) FROM d.f") == [(50,)], 30, "reads after the restart"
        )
    finally:
        for node in (cn, tn, fe):
            node.stop()


def _answers_meanwhile(front, stalled: list[threading.Thread], seconds: float) -> float:
    """The longest a `SELECT 1` on another connection took while the stalled statements ran
    (for about seconds; they must still be running at its end)."""
    connection = front.connect()
    longest = 0.0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            started = time.monotonic()
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                assert cursor.fetchall() == ((1,),)
            longest = max(longest, time.monotonic() - started)
    finally:
        connection.close()
    assert all(thread.is_alive() for thread in stalled), "the statements were not stalled"
    return longest


def test_a_stopped_tn_or_cn_stalls_only_the_statements_that_wait_for_it(tmp_path):
    """A node that does not answer holds up the statements that need it, off the FE's event
    loop: every other client of the FE is answered meanwhile."""
    with fe_with_tn_and_cn(tmp_path) as (front, tn, cn):
        execute(
            front,
            "CREATE DATABASE d",
            "CREATE TABLE d.t (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
            "INSERT INTO d.t VALUES (1, 1), (2, 2)",
        )
        answers: dict[str, object] = {}

        def run(name: str, *statements: str, autocommit: bool = True) -> threading.Thread:
            def statements_run():
                connection = front.connect(database="d", autocommit=autocommit)
                try:
                    with connection.cursor() as cursor:
                        for sql in statements:
                            cursor.execute(sql)
                        answers[name] = list(cursor.fetchall())
                    connection.commit()
                except pymysql.MySQLError as error:
                    answers[name] = error
                finally:
                    connection.close()

            thread = threading.Thread(target=statements_run)
            thread.start()
            return thread

        # The TN stopped: the newest timestamp is asked of it (5 s, then of the CNs).
        tn.process.send_signal(signal.SIGSTOP)
        try:
            stalled = [
                run("point read", "SELECT v FROM t WHERE k = 1"),
                run("begin", "BEGIN", "SELECT v FROM t WHERE k = 2"),
                run("insert", "INSERT INTO t VALUES (3, 3)"),
                run("autocommit off", "SELECT v FROM t WHERE k = 2", autocommit=False),
            ]
            assert _answers_meanwhile(front, stalled, 3.0) < 2.0
        finally:
            tn.process.send_signal(signal.SIGCONT)
        for thread in stalled:
            thread.join(timeout=120)
        assert answers == {
            "point read": [(1,)],
            "begin": [(2,)],
            "insert": [],
            "autocommit off": [(2,)],
        }
        # The CN stopped: an INSERT in a transaction reads the rows it replaces from it.
        connection = front.connect(database="d")
        run_in_transaction = connection.cursor()
        run_in_transaction.execute("BEGIN")
        cn.process.send_signal(signal.SIGSTOP)
        try:
            stalled = [
                threading.Thread(
                    target=run_in_transaction.execute,
                    args=("INSERT INTO t VALUES (1, 10), (4, 4)",),
                )
            ]
            stalled[0].start()
            assert _answers_meanwhile(front, stalled, 3.0) < 2.0
        finally:
            cn.process.send_signal(signal.SIGCONT)
        stalled[0].join(timeout=120)
        connection.commit()
        connection.close()
        assert rows(front, "SELECT k, v FROM t ORDER BY k") == [(1, 10), (2, 2), (3, 3), (4, 4)]


def test_reads_by_key_through_a_cn_see_a_transactions_own_writes(cluster):
    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.keyed (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        "CREATE TABLE d.summed (k INT, v INT SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        "INSERT INTO d.keyed VALUES (1, 1), (2, 2), (3, 3)",
        "INSERT INTO d.summed VALUES (1, 1), (1, 2), (2, 5)",
    )
    both = {("keyed",), ("summed",)}
    wait_until(lambda: both <= set(rows(follower, "SHOW TABLES")), 20, "the tables everywhere")
    connection = follower.connect(database="d", autocommit=False)  # PyMySQL's default
    try:
        with connection.cursor() as cursor:

            def read(sql: str) -> set:
                cursor.execute(sql)
                return set(cursor.fetchall())

            assert read("SELECT v FROM keyed WHERE k = 2") == {(2,)}
            cursor.execute("UPDATE keyed SET v = 20 WHERE k = 2")
            cursor.execute("DELETE FROM keyed WHERE k = 3")
            cursor.execute("INSERT INTO keyed VALUES (4, 4), (1, 10)")
            assert read("SELECT v FROM keyed WHERE k = 2") == {(20,)}
            assert read("SELECT k, v FROM keyed WHERE k BETWEEN 1 AND 4") == {
                (1, 10),
                (2, 20),
                (4, 4),
            }
            assert read("SELECT v FROM keyed WHERE k = 3") == set()
            assert read("SELECT v FROM summed WHERE k = 1") == {(3,)}
            cursor.execute("INSERT INTO summed VALUES (1, 4)")
            assert read("SELECT v FROM summed WHERE k = 1") == {(7,)}
        assert rows(leader, "SELECT k, v FROM keyed ORDER BY k") == [(1, 1), (2, 2), (3, 3)]
        connection.commit()
    finally:
        connection.close()
    assert rows(leader, "SELECT k, v FROM keyed ORDER BY k") == [(1, 10), (2, 20), (4, 4)]
    assert rows(follower, "SELECT k, v FROM summed ORDER BY k") == [(1, 7), (2, 5)]


def test_an_autocommit_off_snapshot_starts_at_the_first_read_of_a_table(cluster):
    leader, follower, tn, cns = cluster
    execute(leader, "CREATE TABLE d.firsts (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    check_snapshot_starts_at_first_table_read(leader, "d.firsts")


def test_prepared_writes_by_key_through_a_cn(cluster):
    """sysbench's prepared UPDATE and DELETE by key on an FE whose CN is another process: the
    row is read from the CN, the write is the one the text statement makes."""
    import mysql.connector

    leader, follower, tn, cns = cluster
    execute(
        leader,
        "CREATE TABLE d.sb (id INT, k INT, c VARCHAR(20)) UNIQUE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
        "INSERT INTO d.sb VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')",
    )
    wait_until(lambda: ("sb",) in rows(follower, "SHOW TABLES"), 20, "the table everywhere")
    connection = mysql.connector.connect(
        host="127.0.0.1", port=follower.query_port, user="root", database="d", use_pure=True
    )
    try:
        connection.autocommit = True
        cursor = connection.cursor(prepared=True)
        cursor.execute("UPDATE sb SET k = k + 1 WHERE id = ?", (1,))
        assert cursor.rowcount == 1
        cursor.execute("START TRANSACTION")
        cursor.execute("UPDATE sb SET c = ? WHERE id = ?", ("bb", 2))
        cursor.execute("DELETE FROM sb WHERE id = ?", (3,))
        cursor.execute("UPDATE sb SET k = k + 1 WHERE id = ?", (3,))
        assert cursor.rowcount == 0  # deleted in this transaction
        cursor.execute("UPDATE sb SET k = k + 1 WHERE id = ?", (2,))
        cursor.execute("SELECT id, k, c FROM sb WHERE id BETWEEN ? AND ?", (1, 3))
        assert sorted(cursor.fetchall()) == [(1, 11, "a"), (2, 21, "bb")]
        assert rows(leader, "SELECT id, k, c FROM sb ORDER BY id") == [
            (1, 11, "a"),
            (2, 20, "b"),
            (3, 30, "c"),
        ]
        cursor.execute("COMMIT")
    finally:
        connection.close()
    assert rows(leader, "SELECT id, k, c FROM sb ORDER BY id") == [(1, 11, "a"), (2, 21, "bb")]
