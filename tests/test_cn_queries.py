"""Queries run on the CN: `quire fe` sends a SELECT of table data whole to a CN (`quire cn`), which
builds the snapshots from its own tables, runs the engine and streams the result back in parts.
The answers are those of `quire up`, a table larger than a node message is read, an engine error
keeps its MySQL code, and a CN killed mid-query costs the client one query at most."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
import pymysql
import pytest

from be import engine
from be.service import format as service_format
from be.service.client import raised_again
from be.service.errors import ServiceFormatError
from be.service.format import (
    Failure,
    Kind,
    QueryRequest,
    QueryTable,
    ResultEnd,
    ResultPart,
    decode,
    encode,
)
from be.service.limits import ServiceLimits
from be.service.queries import NodeQueries, result_parts
from be.service.server import failure
from be.table_schema import ColumnSchema, TableSchema
from metadata.records import KeyModel
from tests.harness import (
    QuireProcess,
    cluster_token,
    execute,
    free_port,
    mariadb,
    wait_until,
)
from tests.test_data_processes import FE_OVERRIDES, DataNode, rows

SMALL_MESSAGE_BYTES = 256 << 10  # the nodes' node_max_message_bytes: the big table is larger
BIG_ROWS = 20_000


# The format and the parts, without processes.


def _schema() -> TableSchema:
    columns = (ColumnSchema("k", pa.int64()), ColumnSchema("v", pa.string()))
    return TableSchema(7, 1, columns, KeyModel.DUPLICATE, ("k",))


def test_query_messages_round_trip_and_are_checked_strictly():
    limits = ServiceLimits()
    request = QueryRequest(
        "SELECT count(*) FROM quire_t_7",
        (QueryTable("quire_t_7", _schema(), 42, False, (), ("k",)),),
        (("quire_list_0", pa.table({"value": [1, 2, 3]})),),
        10_000,
        30_000,
        1 << 30,
    )
    assert decode(encode(request, limits), limits) == request
    part = ResultPart(pa.table({"n": [1, 2]}))
    assert decode(encode(part, limits), limits).rows.equals(part.rows)
    end = ResultEnd((("n", "BIGINT"),), 2)
    assert decode(encode(end, limits), limits) == end
    twice = QueryRequest("SELECT 1", request.tables * 2, (), 0, 1, 1)  # one name for two tables
    with pytest.raises(ServiceFormatError, match="twice"):
        decode(encode(twice, limits), limits)
    long_sql = ServiceLimits(max_query_chars=10)
    with pytest.raises(ServiceFormatError, match="malformed query"):
        decode(encode(request, limits), long_sql)
    assert decode(encode(Failure("X", "y", (None, 2, "z")), limits), limits).arguments == (
        None,
        2,
        "z",
    )
    nested = service_format._ENVELOPE.seal([Kind.FAILURE, "X", "y", [[1]]], 1 << 10)
    with pytest.raises(ServiceFormatError, match="malformed error argument"):
        decode(nested, limits)


def test_engine_errors_are_made_again_from_their_arguments():
    for error in (
        engine.NotGrouped("v"),
        engine.UnknownColumn("w"),
        engine.InvalidValue("Could not convert string 'x' to INT"),
        engine.QueryTimedOut(2.5),
        engine.MemoryLimitExceeded(1234),
        engine.EngineBusy(4, 64),
        engine.WrongColumnCount(),
    ):
        limits = ServiceLimits()
        again = raised_again(decode(encode(failure(error), limits), limits))
        assert type(again) is type(error) and vars(again) == vars(error), error


def test_result_parts_keep_order_and_stay_under_the_budget():
    batch = pa.record_batch({"k": list(range(10_000)), "v": [f"value {i}" for i in range(10_000)]})
    parts = list(result_parts([batch, batch.slice(0, 0), batch], 16 << 10, 3000))
    assert all(part.nbytes <= 16 << 10 and part.num_rows <= 3000 for part in parts)
    joined = pa.concat_tables(parts)
    assert joined.num_rows == 20_000 and joined.column("k").to_pylist()[9_999:10_001] == [9999, 0]
    assert list(result_parts([], 1 << 10, 10)) == []


def _run(queries: NodeQueries, request: QueryRequest) -> list:
    async def replies() -> list:
        return [reply async for reply in queries.answer(request)]

    return asyncio.run(replies())


def test_a_cn_sends_parts_that_fit_a_message_and_caps_a_querys_memory():
    table = pa.table({"k": list(range(50_000)), "v": [f"value {i}" for i in range(50_000)]})
    request = QueryRequest(
        "SELECT k, v FROM t ORDER BY k",
        (QueryTable("t", _schema(), 1, False),),
        (),
        1000,
        30_000,
        1 << 30,
    )
    small = ServiceLimits(max_message_bytes=64 << 10, max_query_memory_bytes=16 << 20)
    queries = NodeQueries(small, lambda *read: table)
    try:
        *parts, end = _run(queries, request)
        assert end == ResultEnd((("k", "BIGINT"), ("v", "VARCHAR")), 50_000)
        assert len(parts) > 10 and all(len(encode(part, small)) <= 64 << 10 for part in parts)
        assert pa.concat_tables(part.rows for part in parts).equals(table)
    finally:
        queries.close()
    capped = NodeQueries(ServiceLimits(max_query_memory_bytes=256 << 10), lambda *read: table)
    try:
        with pytest.raises(engine.MemoryLimitExceeded):
            _run(capped, request)
    finally:
        capped.close()


# Through processes.


@pytest.fixture(scope="module")
def planes(tmp_path_factory):
    """(quire fe with a TN and two CNs whose messages are small, quire up) holding the same rows."""
    root = tmp_path_factory.mktemp("cn_queries")
    fe = QuireProcess(root / "fe", FE_OVERRIDES, command="fe").start()
    up = QuireProcess(root / "up").start()
    token = cluster_token(fe)
    logtail_port = free_port()
    small = {"node_max_message_bytes": SMALL_MESSAGE_BYTES}
    tn = DataNode(root / "tn", "tn", token, logtail_port, **small)
    cns = [DataNode(root / f"cn{i}", "cn", token, logtail_port, **small) for i in (1, 2)]
    try:
        tn.start()
        for cn in cns:
            cn.start()
        for node in (tn, *cns):
            execute(fe, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        for node in (fe, up):
            _load(node)
        yield fe, up, tn, cns
    finally:
        for node in (*cns, tn, up, fe):
            node.stop()


def _load(node) -> None:
    execute(
        node,
        "CREATE DATABASE d",
        "CREATE TABLE d.big (k BIGINT, v VARCHAR(40), g INT) DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 4",
        "CREATE TABLE d.groups (g INT, name VARCHAR(20)) UNIQUE KEY(g) "
        "DISTRIBUTED BY HASH(g) BUCKETS 1",
        "INSERT INTO d.groups VALUES " + ", ".join(f"({g}, 'group {g}')" for g in range(10)),
    )
    connection = node.connect(database="d")
    try:
        with connection.cursor() as cursor:
            for start in range(0, BIG_ROWS, 2000):
                values = ", ".join(
                    f"({k}, 'row {k:06d} of the big table', {k % 13})"
                    for k in range(start, start + 2000)
                )
                cursor.execute(f"INSERT INTO big VALUES {values}")
            cursor.execute("DELETE FROM big WHERE k % 1000 = 7")
            cursor.execute("UPDATE groups SET name = 'renamed' WHERE g = 3")
    finally:
        connection.close()


def error_code(node, sql: str) -> int:
    connection = node.connect(database="d")
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
    except pymysql.MySQLError as error:
        return error.args[0]
    finally:
        connection.close()
    raise AssertionError(f"{sql!r} did not fail on {node.command}")


QUERIES = [
    "SELECT g, count(*), sum(k), min(v), max(v) FROM big GROUP BY g ORDER BY g",
    "SELECT b.g, n.name, count(*) AS c FROM big b JOIN groups n ON b.g = n.g "
    "WHERE b.k < 5000 GROUP BY b.g, n.name ORDER BY c DESC, b.g",
    "SELECT k, v, row_number() OVER (PARTITION BY g ORDER BY k DESC) AS r FROM big "
    "WHERE k BETWEEN 100 AND 160 ORDER BY k",
    "WITH top AS (SELECT g, max(k) AS m FROM big GROUP BY g) "
    "SELECT t.g, t.m, n.name FROM top t LEFT JOIN groups n ON t.g = n.g ORDER BY t.g",
    "SELECT k, v FROM big ORDER BY k DESC LIMIT 5 OFFSET 3",
    "SELECT name FROM groups WHERE g IN (SELECT g FROM big WHERE k < 20) ORDER BY name",
    "SELECT avg(k), sum(k * 1.5), count(DISTINCT g) FROM big WHERE v LIKE '%00 of%'",
    "SELECT table_name, (SELECT count(*) FROM big) FROM information_schema.tables "
    "WHERE table_schema = 'd' ORDER BY table_name",
    "SELECT g, count(*) FROM big WHERE k IN (" + ", ".join(map(str, range(0, 900, 7))) + ") "
    "GROUP BY g ORDER BY g",  # a long IN list: a table the FE gives
    "SELECT max(k), CAST(sum(k) AS DECIMAL(38, 0)), INTERVAL 3 DAY FROM big WHERE g = 2",
    "SELECT g, array_sort(collect_list(k)), collect_set(g), [v, 'x'] FROM big WHERE k < 40 "
    "GROUP BY g, v ORDER BY g, v",  # arrays come back from the CN as Arrow lists
    "SELECT k, w FROM big LATERAL VIEW explode_split(v, ' ') t AS w WHERE k < 3 ORDER BY k, w",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_are_those_of_quire_up(planes, sql):
    fe, up, tn, cns = planes
    assert rows(fe, sql) == rows(up, sql)


def test_the_mariadb_cli_prints_the_same(planes):
    fe, up, tn, cns = planes
    script = ";\n".join(QUERIES[:5]) + ";\n"
    printed = [mariadb(node, "--batch", "d", stdin=script) for node in (fe, up)]
    assert printed[0].returncode == 0, printed[0].stderr
    assert printed[0].stdout == printed[1].stdout and printed[0].stdout.count("\n") > 50


def test_a_table_and_a_result_larger_than_a_node_message(planes):
    fe, up, tn, cns = planes
    everything = rows(fe, "SELECT k, v, g FROM big ORDER BY k")
    assert len(everything) == BIG_ROWS - BIG_ROWS // 1000
    assert sum(len(v) + 16 for _, v, _ in everything) > 2 * SMALL_MESSAGE_BYTES
    assert everything == rows(up, "SELECT k, v, g FROM big ORDER BY k")
    assert rows(fe, "SELECT count(*) FROM big") == [(BIG_ROWS - BIG_ROWS // 1000,)]
    assert sorted(rows(fe, "SELECT k, v, g FROM big")) == everything  # a plain read, whole


def test_a_result_over_exec_mem_limit_gets_the_same_error(planes):
    fe, up, tn, cns = planes
    codes, messages = [], []
    for node in (fe, up):
        connection = node.connect(database="d")
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET exec_mem_limit = 200000")
                with pytest.raises(pymysql.MySQLError) as raised:
                    cursor.execute("SELECT k, v FROM big")
                codes.append(raised.value.args[0])
                messages.append(raised.value.args[1])
        finally:
            connection.close()
    assert codes[0] == codes[1], messages


ENGINE_ERRORS = [
    "SELECT g, count(*) FROM big",  # not grouped
    "SELECT CAST(k * 100000000000 AS INT) FROM big WHERE k = 5",  # a cast out of range (a text that is no date casts to NULL)
    "SELECT k FROM big ORDER BY 3",  # ORDER BY position
    "SELECT (SELECT k, v FROM big LIMIT 1) FROM groups",  # operand columns
]


@pytest.mark.parametrize("sql", ENGINE_ERRORS)
def test_an_engine_error_keeps_its_mysql_code(planes, sql):
    fe, up, tn, cns = planes
    assert error_code(fe, sql) == error_code(up, sql)


def test_a_transaction_reads_its_own_writes_and_explain_runs(planes):
    """A table this transaction wrote is read on the FE (only it has those rows); the others
    and EXPLAIN go to a CN."""
    fe, up, tn, cns = planes
    sql = "SELECT count(*), max(n.name) FROM big b JOIN groups n ON b.g = n.g WHERE b.k < 26"
    seen = []
    for node in (fe, up):
        connection = node.connect(database="d")
        try:
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("UPDATE groups SET name = 'zzz' WHERE g = 9")
                cursor.execute(sql)
                inside = cursor.fetchall()
                cursor.execute("ROLLBACK")
                cursor.execute(sql)
                seen.append((inside, cursor.fetchall()))
                cursor.execute("EXPLAIN SELECT g, count(*) FROM big GROUP BY g")
                assert len(cursor.fetchall()) > 3
        finally:
            connection.close()
    assert seen[0] == seen[1]
    assert seen[0][0][0][1] == "zzz" and seen[0][1][0][1] == "renamed", seen


def test_time_travel_reads_on_the_cn(planes):
    """`FOR SYSTEM_TIME AS OF` and `SET read_ts` answer as of their moment on a CN as in quire
    up: rows deleted and changed since are as they were, rows inserted since are not there."""
    fe, up, tn, cns = planes
    query = (
        "SELECT t.k, t.v, n.name FROM travel FOR SYSTEM_TIME AS OF '{moment}' t "
        "JOIN groups n ON t.k = n.g ORDER BY t.k"
    )
    seen = []
    for node in (fe, up):
        execute(
            node,
            "CREATE TABLE d.travel (k INT, v VARCHAR(10)) UNIQUE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 2",
            "INSERT INTO d.travel VALUES (1, 'one'), (2, 'two'), (3, 'three')",
        )
        before = rows(node, "SELECT t.k, t.v, n.name FROM travel t JOIN groups n ON t.k = n.g "
                      "ORDER BY t.k")  # fmt: skip
        moment = rows(node, "SELECT NOW(6)")[0][0]
        wait_until(lambda n=node, m=moment: rows(n, "SELECT NOW(6)")[0][0] > m, 5, "a later time")
        execute(
            node,
            "UPDATE d.travel SET v = 'TWO' WHERE k = 2",
            "DELETE FROM d.travel WHERE k = 3",
            "INSERT INTO d.travel VALUES (4, 'four')",
        )
        then = rows(node, query.format(moment=moment))
        assert then == before, node.command
        connection = node.connect(database="d")
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"SET read_ts = '{moment}'")
                cursor.execute("SELECT k, v FROM travel ORDER BY k")
                assert [tuple(row) for row in cursor.fetchall()] == [
                    (1, "one"), (2, "two"), (3, "three"),
                ]  # fmt: skip
        finally:
            connection.close()
        now = rows(node, "SELECT k, v FROM travel ORDER BY k")
        assert now == [(1, "one"), (2, "TWO"), (4, "four")], node.command
        seen.append(then)
    assert seen[0] == seen[1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime, stime in clock ticks


def _cpu_idle(cns, window: int = 4):
    """A condition asked every half second: no CN used more than a quarter of a core over the
    last window samples (a CN running a query uses a whole one)."""
    samples: list[list[float]] = []

    def idle() -> bool:
        samples.append([_cpu_seconds(cn.process.pid) for cn in cns])
        if len(samples) <= window:
            return False
        return all(
            now - then < window * 0.5 / 4
            for now, then in zip(samples[-1], samples[-1 - window], strict=True)
        )

    return idle


SLOW_QUERY = (  # seconds of a CN's time: 240 million pairs, no join to plan
    "SELECT count(*) FROM big a, big b WHERE a.k < 12000 AND (a.k * 31 + b.k) % 1000003 = 5"
)


def test_a_cn_killed_mid_query(planes):
    """The FE survives, and the client gets an answer from the other CN or an error."""
    fe, up, tn, cns = planes
    before = {cn.port: _cpu_seconds(cn.process.pid) for cn in cns}
    outcome: dict[str, object] = {}

    def ask():
        try:
            outcome["rows"] = rows(fe, SLOW_QUERY)
        except pymysql.MySQLError as error:
            outcome["error"] = error.args

    asker = threading.Thread(target=ask)
    asker.start()
    busy = wait_until(
        lambda: next(
            (cn for cn in cns if _cpu_seconds(cn.process.pid) - before[cn.port] > 1.0), None
        ),
        60,
        "a CN to work on the query",
        interval=0.02,
    )
    busy.kill()
    asker.join(timeout=120)
    assert not asker.is_alive()
    assert outcome.get("rows", [(1,)]) == [(1,)] and len(outcome) == 1, outcome
    if "error" in outcome:
        assert outcome["error"][0] != 2013, outcome  # an error, not a lost connection
    assert rows(fe, "SELECT count(*) FROM groups") == [(10,)]  # the other CN answers
    busy.start()
    wait_until(lambda: rows(fe, "SELECT max(k) FROM big") == [(BIG_ROWS - 1,)], 60, "the CN back")


def test_a_query_past_its_timeout_stops_on_the_cn(planes):
    fe, up, tn, cns = planes
    codes = []
    for node in (fe, up):
        connection = node.connect(database="d")
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET query_timeout = 1")
                with pytest.raises(pymysql.MySQLError) as raised:
                    cursor.execute(SLOW_QUERY.replace("12000", "20000"))
                codes.append(raised.value.args[0])
        finally:
            connection.close()
    assert codes[0] == codes[1], codes

    wait_until(_cpu_idle(cns), 20, "the CNs to stop the query", interval=0.5)


def test_a_client_gone_mid_query_stops_it_on_the_cn(planes):
    """The client goes (kill -9 of the mariadb CLI): the FE leaves the CN's stream, and the CN
    interrupts a query that would have run for many seconds more."""
    fe, up, tn, cns = planes
    before = {cn.port: _cpu_seconds(cn.process.pid) for cn in cns}
    endless = (
        "SELECT count(*) FROM big a, big b, groups c WHERE (a.k * 31 + b.k + c.g) % 1000003 = 5"
    )
    command = ["mariadb", "-h", "127.0.0.1", "-P", str(fe.query_port), "-u", "root", "d"]
    client = subprocess.Popen([*command, "-e", endless], stdout=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: any(_cpu_seconds(cn.process.pid) - before[cn.port] > 1.0 for cn in cns),
            60,
            "a CN to work on the query",
            interval=0.02,
        )
    finally:
        client.kill()
        client.wait(timeout=30)
    left = time.monotonic()
    wait_until(_cpu_idle(cns), 30, "the CNs to stop the query", interval=0.5)
    assert time.monotonic() - left < 10  # the whole query takes a minute or more
    assert rows(fe, "SELECT count(*) FROM groups") == [(10,)]


def test_cn_answers_without_the_tn(planes):
    """Queries go on while the TN is down: the CNs have the data up to their watermark."""
    fe, up, tn, cns = planes
    tn.stop()
    try:
        started = time.monotonic()
        assert rows(fe, "SELECT count(*) FROM groups WHERE name = 'renamed'") == [(1,)]
        assert time.monotonic() - started < 30
    finally:
        tn.start()
