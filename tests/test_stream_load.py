"""Doris's Stream Load: curl and requests against `quire up` (the FE redirects to the backend's
HTTP port), CSV and JSON lines, columns / where / max_filter_ratio, labels, two-phase commit,
SHOW LOAD over PyMySQL and the mariadb CLI, refusals (privileges, password, forged and expired
tokens), a client killed mid-upload, UNIQUE KEY replacement, and `quire fe` + `quire tn` +
`quire cn` with a TN restart keeping a committed load."""

from __future__ import annotations

import datetime
import json
import signal
import socket
import subprocess
import urllib.parse
import zlib
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from be.client import DataNode as DataPlaneNode
from be.client import RemoteDataPlane
from be.load import token
from be.load.limits import LoadLimits
from be.load.objects import LoadWriter
from be.service.format import Role
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn.errors import LoadUnknown
from tests.harness import (
    QuireProcess,
    add_and_start,
    cluster_token,
    error_of,
    execute,
    free_port,
    run,
    wait_until,
)
from tests.test_data_processes import FE_OVERRIDES, DataNode
from tests.test_flush import read_only

ANSWER_KEYS = {
    "TxnId", "Label", "Comment", "TwoPhaseCommit", "Status", "Message", "NumberTotalRows",
    "NumberLoadedRows", "NumberFilteredRows", "NumberUnselectedRows", "LoadBytes", "LoadTimeMs",
    "BeginTxnTimeMs", "StreamLoadPutTimeMs", "ReadDataTimeMs", "WriteDataTimeMs",
    "ReceiveDataTimeMs", "CommitAndPublishTimeMs",
}  # fmt: skip


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("load"), {"webserver_port": free_port()}).start()
    execute(
        node,
        "CREATE DATABASE d",
        "CREATE TABLE d.t (k INT NOT NULL, v VARCHAR(20), n DECIMAL(10,2), day DATE) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3",
        "CREATE TABLE d.u (k INT NOT NULL, v VARCHAR(20)) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
        "CREATE USER loader IDENTIFIED BY 'pw'",
        "GRANT INSERT ON d.* TO loader",
        "CREATE USER reader IDENTIFIED BY 'pw'",
        "GRANT SELECT ON d.* TO reader",
    )
    yield node
    node.stop()


def table(up, name: str) -> str:
    execute(up, f"CREATE TABLE d.{name} (k INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 2")  # fmt: skip
    return name


def curl(up, path: str, data: Path, *headers: str, user: str = "root:") -> dict:
    args = ["curl", "-sS", "--location-trusted", "-u", user, "-T", str(data)]
    for header in headers:
        args += ["-H", header]
    out = subprocess.run(
        [*args, f"http://127.0.0.1:{up.http_port}{path}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def put(up, path: str, body: bytes, headers: dict, auth=("root", "")) -> requests.Response:
    """requests follows the 307 with the body again (it keeps a PUT's method and body)."""
    first = requests.put(
        f"http://127.0.0.1:{up.http_port}{path}",
        data=b"",
        headers=headers,
        auth=auth,
        allow_redirects=False,
        timeout=30,
    )
    if first.status_code != 307:
        return first
    return requests.put(first.headers["Location"], data=body, headers=headers, timeout=60)


def rows(up, sql: str) -> list[tuple]:
    return [tuple(row) for row in execute(up, sql)]


def stored_objects(up, table_name: str) -> set[str]:
    """The data objects of the table's tablets in the store."""
    tablets = {str(row[0]) for row in execute(up, f"SHOW TABLETS FROM d.{table_name}")}
    folder = Path(up.overrides["storage_root"]) / "objects"
    return {
        str(path)
        for path in folder.rglob("*.data.parquet")
        if path.relative_to(folder).parts[2] in tablets
    }


def test_csv_by_curl_answers_doris_keys_and_the_rows_read_back(up, tmp_path):
    data = tmp_path / "data.csv"
    lines = [f"{i},name{i},{i}.25,2024-01-{1 + i % 28:02d}" for i in range(1, 3001)]
    data.write_text("\n".join(lines) + "\n")
    answer = curl(up, "/api/d/t/_stream_load", data, "label:csv1", "column_separator:,")
    assert ANSWER_KEYS <= set(answer), answer
    assert answer["Status"] == "Success" and answer["Message"] == "OK", answer
    assert answer["NumberTotalRows"] == answer["NumberLoadedRows"] == 3000
    assert answer["NumberFilteredRows"] == 0 and "ErrorURL" not in answer
    assert answer["LoadBytes"] == data.stat().st_size and answer["TwoPhaseCommit"] == "false"
    got = rows(up, "SELECT k, v, n, day FROM d.t ORDER BY k")
    assert [f"{k},{v},{n},{day.isoformat()}" for k, v, n, day in got] == lines


def test_json_lines_by_requests(up):
    name = table(up, "j")
    body = b'{"k": 1, "v": "one"}\n{"k": 2, "v": null}\n\n{"v": "no key"}\n[1]\n{"K": 3}\n'
    answer = put(
        up,
        f"/api/d/{name}/_stream_load",
        body,
        {"format": "json", "read_json_by_line": "true", "max_filter_ratio": "0.5"},
    ).json()
    assert answer["Status"] == "Success", answer["Message"]
    # {"v": "no key"}: NULL in NOT NULL k; [1]: not an object
    assert (answer["NumberLoadedRows"], answer["NumberFilteredRows"]) == (3, 2)
    assert rows(up, f"SELECT k, v FROM d.{name} ORDER BY k") == [(1, "one"), (2, None), (3, None)]
    refused = put(up, f"/api/d/{name}/_stream_load", body, {"format": "json"}).json()
    assert refused["Status"] == "Fail" and "too many filtered rows" in refused["Message"]
    assert "read_json_by_line" in requests.get(refused["ErrorURL"], timeout=10).text


def test_columns_the_file_leaves_out_take_their_defaults_as_now(up):
    execute(
        up,
        "CREATE TABLE d.stamped (k INT NOT NULL, n INT DEFAULT '5', "
        "at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, note VARCHAR(8) DEFAULT 'it''s') "
        "DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1",
        "ALTER TABLE d.stamped MODIFY COLUMN n INT DEFAULT '100'",  # the default of now counts
    )
    before = datetime.datetime.now().replace(microsecond=0)
    answer = put(up, "/api/d/stamped/_stream_load", b"1\n2\n", {"columns": "k"}).json()
    assert answer["Status"] == "Success", answer["Message"]
    execute(up, "INSERT INTO d.stamped (k) VALUES (3)")  # as an INSERT takes them
    after = datetime.datetime.now() + datetime.timedelta(seconds=1)  # DATETIME rounds
    loaded = rows(up, "SELECT k, n, note, at FROM d.stamped ORDER BY k")
    assert [row[:3] for row in loaded] == [(k, 100, "it's") for k in (1, 2, 3)]
    assert all(before <= row[3] <= after for row in loaded), (before, loaded, after)


def test_json_arrays_single_objects_and_jsonpaths(up, tmp_path):
    """Doris's JSON bodies: one array of objects (strip_outer_array), one object, and jsonpaths
    reading each column at its path; through curl, as DataX and Flink's Doris writers send."""
    name = table(up, "ja")
    data = tmp_path / "a.json"
    data.write_text('[\n  {"k": 1, "v": "one"},\n  {"k": 2, "v": "two"},\n  7\n]\n')
    answer = curl(up, f"/api/d/{name}/_stream_load", data, "format: json",
                  "strip_outer_array: true", "max_filter_ratio: 0.5")  # fmt: skip
    assert (answer["Status"], answer["NumberLoadedRows"], answer["NumberFilteredRows"]) == (
        "Success", 2, 1,
    ), answer  # fmt: skip
    refused = curl(up, f"/api/d/{name}/_stream_load", data, "format: json")
    assert refused["Status"] == "Fail" and "strip_outer_array" in refused["Message"], refused
    data.write_text('{"k": 3, "v": "three"}')
    assert curl(up, f"/api/d/{name}/_stream_load", data, "format: json")["Status"] == "Success"
    data.write_text('[{"id": 4, "info": {"name": "four", "tags": ["a"]}}, {"id": 5, "info": {}}]')
    by_paths = curl(up, f"/api/d/{name}/_stream_load", data, "format: json",
                    "strip_outer_array: true", 'jsonpaths: ["$.id", "$.info.name"]',
                    "columns: k, v")  # fmt: skip
    assert by_paths["Status"] == "Success" and by_paths["NumberLoadedRows"] == 2, by_paths
    assert rows(up, f"SELECT k, v FROM d.{name} ORDER BY k") == [
        (1, "one"), (2, "two"), (3, "three"), (4, "four"), (5, None),
    ]  # fmt: skip
    bad = curl(up, f"/api/d/{name}/_stream_load", data, "format: json",
               "strip_outer_array: true", 'jsonpaths: ["$.id"]', "columns: k, v")  # fmt: skip
    assert bad["Status"] == "Fail" and "jsonpaths has 1 paths for 2 columns" in bad["Message"]


def test_columns_where_and_max_filter_ratio(up, tmp_path):
    name = table(up, "c")
    data = tmp_path / "c.csv"
    data.write_text("a|1\nb|2\nc|3\nd|x\ne|5\n")
    too_many = curl(up, f"/api/d/{name}/_stream_load", data, "column_separator:|", "columns:v,k")
    assert too_many["Status"] == "Fail", too_many
    assert "too many filtered rows" in too_many["Message"] and too_many["ErrorURL"]
    error_log = requests.get(too_many["ErrorURL"], timeout=10).text
    assert "src line" in error_log and "x" in error_log
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(0,)]
    answer = curl(
        up,
        f"/api/d/{name}/_stream_load",
        data,
        "column_separator:|",
        "columns: v, k",
        "where: k > 1 AND v <> 'c'",
        "max_filter_ratio:0.4",  # 1 filtered of 5 - 2 unselected
    )
    assert answer["Status"] == "Success", answer["Message"]
    assert answer["NumberTotalRows"] == 5 and answer["NumberFilteredRows"] == 1
    assert answer["NumberUnselectedRows"] == 2 and answer["NumberLoadedRows"] == 2
    assert rows(up, f"SELECT k, v FROM d.{name} ORDER BY k") == [(2, "b"), (5, "e")]
    bad = curl(up, f"/api/d/{name}/_stream_load", data, "columns:v,k,nope=k")
    assert bad["Status"] == "Fail" and "Unknown column 'nope'" in bad["Message"], bad


def test_column_mappings_compute_columns_from_the_files_fields(up, tmp_path):
    """Doris's `columns: a, tmp, b=expr`: a field of the load's own is skipped or read by a
    mapping; a mapping's value the column cannot take filters its row (strict mode)."""
    execute(up, "CREATE TABLE d.mapped (k INT NOT NULL, n INT, v VARCHAR(20)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 2")  # fmt: skip
    data = tmp_path / "m.csv"
    data.write_text("1,skip,ab\n2,skip,cd\n")
    answer = curl(up, "/api/d/mapped/_stream_load", data, "column_separator:,",
                  "columns: k, tmp, raw, n = k * 10, v = concat(upper(raw), '!')")  # fmt: skip
    assert answer["Status"] == "Success" and answer["NumberLoadedRows"] == 2, answer
    assert rows(up, "SELECT k, n, v FROM d.mapped ORDER BY k") == [(1, 10, "AB!"), (2, 20, "CD!")]
    data.write_text("3,7,x\n")  # a field of the load's own is text: converted as MySQL's
    answer = curl(up, "/api/d/mapped/_stream_load", data, "column_separator:,",
                  "columns: k, tmp, raw, n = tmp * 2 + k, v = raw")  # fmt: skip
    assert answer["Status"] == "Success", answer
    assert rows(up, "SELECT n FROM d.mapped WHERE k = 3") == [(17,)]
    data.write_text("1,skip,ab\n2,skip,cd\n")
    wrong = curl(up, "/api/d/mapped/_stream_load", data, "column_separator:,",
                 "columns: k, tmp, raw, n = concat(raw, 'x')", "max_filter_ratio:1")  # fmt: skip
    assert (wrong["Status"], wrong["NumberFilteredRows"]) == ("Success", 2), wrong
    for header, said in (
        ("columns: k, tmp, raw, v = nope", "no column of the file"),
        ("columns: k, tmp, raw, v = read_text('/etc/passwd')", "read_text"),
        ("columns: k, k, raw", "named twice"),
        ("columns: k, tmp, raw, v = (", "the columns header"),
    ):
        refused = curl(up, "/api/d/mapped/_stream_load", data, "column_separator:,", header)
        assert refused["Status"] == "Fail" and said in refused["Message"], (header, refused)
    assert rows(up, "SELECT count(*) FROM d.mapped") == [(3,)]
    execute(up, "CREATE TABLE d.visits (dt DATE, page VARCHAR(9), users BITMAP BITMAP_UNION) "
            "AGGREGATE KEY(dt, page) DISTRIBUTED BY HASH(dt) BUCKETS 1")  # fmt: skip
    data.write_text("2024-01-01,home,7\n2024-01-01,home,8\n2024-01-01,home,7\n")
    loaded = curl(up, "/api/d/visits/_stream_load", data, "column_separator:,",
                  "columns: dt, page, uid, users = to_bitmap(uid)")  # fmt: skip
    assert loaded["Status"] == "Success", loaded
    assert rows(up, "SELECT page, BITMAP_COUNT(users) FROM d.visits") == [("home", 2)]


def test_strict_mode_and_lengths(up, tmp_path):
    execute(up, "CREATE TABLE d.m (k INT NOT NULL, n INT, v VARCHAR(3)) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
    data = tmp_path / "m.csv"
    data.write_text("1,5,abc\n2,x,ab\n3,7,abcd\n4,\\N,é\n")
    strict = curl(up, "/api/d/m/_stream_load", data, "column_separator:,", "max_filter_ratio:1")
    assert (strict["NumberLoadedRows"], strict["NumberFilteredRows"]) == (2, 2), strict
    loose = curl(up, "/api/d/m/_stream_load", data, "column_separator:,", "max_filter_ratio:1",
                 "strict_mode:false")  # fmt: skip
    assert (loose["NumberLoadedRows"], loose["NumberFilteredRows"]) == (3, 1), loose
    assert rows(up, "SELECT k, n, v FROM d.m ORDER BY k, n") == [
        (1, 5, "abc"), (1, 5, "abc"), (2, None, "ab"), (4, None, "é"), (4, None, "é"),
    ]  # fmt: skip


def test_a_label_makes_a_load_idempotent(up, tmp_path):
    name = table(up, "l")
    data = tmp_path / "l.csv"
    data.write_text("1,a\n2,b\n")
    first = curl(up, f"/api/d/{name}/_stream_load", data, "label:once", "column_separator:,")
    assert first["Status"] == "Success"
    again = curl(up, f"/api/d/{name}/_stream_load", data, "label:once", "column_separator:,")
    assert again["Status"] == "Label Already Exists", again
    assert again["ExistingJobStatus"] == "FINISHED" and str(first["TxnId"]) in again["Message"]
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(2,)]
    failed_label = curl(up, f"/api/d/{name}/_stream_load", data, "label:retry")  # tab separated
    assert failed_label["Status"] == "Fail"  # every row filtered: reusable label
    retried = curl(up, f"/api/d/{name}/_stream_load", data, "label:retry", "column_separator:,")
    assert retried["Status"] == "Success", retried


def test_two_phase_commit_and_abort(up, tmp_path):
    name = table(up, "p")
    data = tmp_path / "p.csv"
    data.write_text("1,a\n2,b\n")
    held = curl(
        up,
        f"/api/d/{name}/_stream_load",
        data,
        "label:tp1",
        "column_separator:,",
        "two_phase_commit:true",
    )
    assert held["Status"] == "Success" and held["TwoPhaseCommit"] == "true", held
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(0,)]
    shown = rows(up, "SHOW LOAD FROM d WHERE LABEL = 'tp1'")
    assert [row[2] for row in shown] == ["COMMITTED"]
    committed = put(up, "/api/d/_stream_load_2pc", b"", {"txn_id": str(held["TxnId"]),
                                                         "txn_operation": "commit"}).json()  # fmt: skip
    assert committed == {
        "status": "Success",
        "msg": f"transaction [{held['TxnId']}] commit successfully.",
    }
    assert rows(up, f"SELECT k, v FROM d.{name} ORDER BY k") == [(1, "a"), (2, "b")]
    before = stored_objects(up, name)
    second = curl(up, f"/api/d/{name}/_stream_load", data, "label:tp2", "column_separator:,",
                  "two_phase_commit:true")  # fmt: skip
    aborted = put(
        up, f"/api/d/{name}/_stream_load_2pc", b"", {"label": "tp2", "txn_operation": "abort"}
    ).json()
    assert aborted["status"] == "Success" and str(second["TxnId"]) in aborted["msg"]
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(2,)]
    assert stored_objects(up, name) == before  # the aborted load's objects are gone
    gone = put(up, "/api/d/_stream_load_2pc", b"", {"label": "tp2", "txn_operation": "commit"})
    assert gone.json()["status"] == "Fail"


def test_show_load_by_pymysql_and_the_mariadb_cli(up, tmp_path):
    name = table(up, "s")
    data = tmp_path / "s.csv"
    data.write_text("1,a\n")
    curl(up, f"/api/d/{name}/_stream_load", data, "label:shown", "column_separator:,")
    connection = up.connect(database="d")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW LOAD WHERE LABEL = 'shown'")
            titles = [entry[0] for entry in cursor.description]
            found = cursor.fetchall()
        assert titles[:5] == ["JobId", "Label", "State", "Progress", "Type"]
        assert titles[-3:] == ["ErrorTablets", "User", "Comment"] and len(titles) == 19
        assert [(row[1], row[2], row[17]) for row in found] == [("shown", "FINISHED", "root")]
        streams = run(connection, "SHOW STREAM LOAD FROM d WHERE LABEL LIKE 'show%'")
        assert [(r[0], r[1], r[2], r[4], r[8]) for r in streams] == [
            ("shown", "d", name, "Success", 1)
        ]
    finally:
        connection.close()
    out = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(up.query_port), "-u", "root", "--batch",
         "-e", "SHOW STREAM LOAD FROM d WHERE LABEL = 'shown'"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    header, line = out.stdout.splitlines()
    assert header.split("\t")[:3] == ["Label", "Db", "Table"] and line.startswith("shown\td\t")
    hidden = pymysql_rows(up, "reader", "SHOW STREAM LOAD FROM d")
    assert any(row[0] == "shown" for row in hidden)  # reader sees d's tables


def test_show_transaction_finds_a_load_by_id_label_or_status(up, tmp_path):
    name = table(up, "x")
    data = tmp_path / "x.csv"
    data.write_text("1,a\n2,b\n")
    done = curl(up, f"/api/d/{name}/_stream_load", data, "label:txn1", "column_separator:,")
    held = curl(up, f"/api/d/{name}/_stream_load", data, "label:txn2", "column_separator:,",
                "two_phase_commit:true")  # fmt: skip
    connection = up.connect(database="d")
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SHOW TRANSACTION WHERE id = {done['TxnId']}")
            titles = [entry[0] for entry in cursor.description]
            (visible,) = cursor.fetchall()
        assert titles[:5] == ["TransactionId", "Label", "Coordinator", "TransactionStatus",
                              "LoadJobSourceType"] and titles[-1] == "ErrMsg"  # fmt: skip
        shown = dict(zip(titles, visible, strict=True))
        assert (shown["Label"], shown["TransactionStatus"]) == ("txn1", "VISIBLE")
        assert shown["Coordinator"].startswith("BE: ")
        assert shown["LoadJobSourceType"] == "BACKEND_STREAMING"
        assert None not in (shown["PrepareTime"], shown["CommitTime"], shown["FinishTime"])
        (waiting,) = run(connection, "SHOW TRANSACTION FROM d WHERE label = 'txn2'")
        assert waiting[0] == held["TxnId"] and waiting[3] == "PRECOMMITTED"
        assert waiting[6] is not None and waiting[7] is None  # pre-committed, not committed
        precommitted = run(connection, "SHOW TRANSACTION WHERE status = 'precommitted'")
        assert "txn2" in [row[1] for row in precommitted]
        assert error_of(connection, "SHOW TRANSACTION") == (1105, "Missing transaction id")
        assert error_of(connection, "SHOW TRANSACTION WHERE id = 987654321") == (
            1105, "transaction with id 987654321 does not exist")  # fmt: skip
        assert "id = 123 or label" in error_of(connection, "SHOW TRANSACTION WHERE k = 1")[1]
    finally:
        connection.close()
    reader = up.connect(user="reader", password="pw", database="d")
    try:
        assert error_of(reader, "SHOW TRANSACTION WHERE label = 'txn1'")[0] == 1227
    finally:
        reader.close()
    out = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(up.query_port), "-u", "root", "--batch", "d",
         "-e", f"SHOW TRANSACTION WHERE id = {done['TxnId']}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].startswith(f"{done['TxnId']}\ttxn1\tBE: ")
    put(up, f"/api/d/{name}/_stream_load_2pc", b"", {"label": "txn2", "txn_operation": "abort"})


def pymysql_rows(up, user: str, sql: str) -> list[tuple]:
    connection = up.connect(user=user, password="pw")
    try:
        return run(connection, sql)
    finally:
        connection.close()


def test_accounts_are_checked(up, tmp_path):
    data = tmp_path / "a.csv"
    data.write_text("7,x\n")
    name = table(up, "a")
    denied = curl(up, f"/api/d/{name}/_stream_load", data, "column_separator:,",
                  user="reader:pw")  # fmt: skip
    assert denied["Status"] == "Fail" and "denied" in denied["Message"], denied
    wrong = curl(up, f"/api/d/{name}/_stream_load", data, "column_separator:,",
                 user="loader:nope")  # fmt: skip
    assert "Access denied" in wrong["Message"]
    allowed = curl(up, f"/api/d/{name}/_stream_load", data, "column_separator:,",
                   user="loader:pw")  # fmt: skip
    assert allowed["Status"] == "Success", allowed
    missing = curl(up, "/api/d/nope/_stream_load", data)
    assert missing["Status"] == "Fail" and "nope" in missing["Message"]


def redirected(node, table_name: str) -> tuple[str, dict]:
    """Where the FE redirects a load, and the claims of its token."""
    first = requests.put(
        f"http://127.0.0.1:{node.http_port}/api/d/{table_name}/_stream_load",
        auth=("root", ""),
        allow_redirects=False,
        timeout=10,
    )
    assert first.status_code == 307, first.text
    location = urllib.parse.urlsplit(first.headers["Location"])
    signed = urllib.parse.parse_qs(location.query)[token.TOKEN_PARAMETER][0]
    claims = json.loads(zlib.decompress(token._unb64(signed.split(".")[0])))
    del claims["expires"]
    return f"{location.scheme}://{location.netloc}{location.path}", claims


def test_forged_and_expired_tokens_are_refused(up):
    base, claims = redirected(up, "t")
    for signed in (
        token.sign(claims, "not the cluster token", 60),
        token.sign(claims, cluster_token(up), -1),
        token.sign(dict(claims, table="u"), cluster_token(up), 60),
        "",
    ):
        refused = requests.put(base, params={token.TOKEN_PARAMETER: signed}, data=b"1\tx\n",
                               timeout=10)  # fmt: skip
        assert refused.status_code == 401 and refused.json()["Status"] == "Fail", refused.text


def test_a_client_killed_mid_upload_leaves_nothing(up):
    name = table(up, "k")
    first = requests.put(
        f"http://127.0.0.1:{up.http_port}/api/d/{name}/_stream_load",
        auth=("root", ""),
        headers={"label": "killed", "column_separator": ","},
        allow_redirects=False,
        timeout=10,
    )
    target = urllib.parse.urlsplit(first.headers["Location"])
    chunk = b"".join(b"%d,v\n" % i for i in range(200_000))
    before = stored_objects(up, name)
    with socket.create_connection((target.hostname, target.port), timeout=10) as client:
        client.sendall(
            f"PUT {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n"
            f"label: killed\r\ncolumn_separator: ,\r\n"
            f"Content-Length: {len(chunk) * 20}\r\n\r\n".encode()
        )
        for _ in range(6):  # more than an object's worth is written before the client goes
            client.sendall(chunk)
    wait_until(
        lambda: (
            [r[4] for r in rows(up, "SHOW STREAM LOAD FROM d WHERE LABEL = 'killed'")] == ["Fail"]
        ),
        30,
        "the cut load to fail",
    )
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(0,)]
    assert stored_objects(up, name) == before


def test_a_store_refusing_writes_fails_the_load_and_the_node_goes_on(up, tmp_path):
    name = table(up, "ro")
    data = tmp_path / "ro.csv"
    data.write_text("1,a\n2,b\n")
    with read_only(Path(up.overrides["storage_root"]) / "objects"):
        refused = curl(up, f"/api/d/{name}/_stream_load", data, "label:ro", "column_separator:,")
    assert refused["Status"] == "Fail", refused
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(0,)]
    again = curl(up, f"/api/d/{name}/_stream_load", data, "label:ro", "column_separator:,")
    assert again["Status"] == "Success", again  # a failed load's label is free again
    assert rows(up, f"SELECT count(*) FROM d.{name}") == [(2,)]


def test_unique_key_rows_replace_and_the_last_of_a_key_wins(up, tmp_path):
    execute(up, "INSERT INTO d.u VALUES (1, 'old'), (2, 'old')")
    data = tmp_path / "u.csv"
    data.write_text("2,new\n3,first\n3,last\n4,x\n")
    answer = curl(up, "/api/d/u/_stream_load", data, "column_separator:,")
    assert answer["Status"] == "Success", answer["Message"]
    assert rows(up, "SELECT k, v FROM d.u ORDER BY k") == [
        (1, "old"), (2, "new"), (3, "last"), (4, "x"),
    ]  # fmt: skip
    execute(up, "UPDATE d.u SET v = 'updated' WHERE k = 3")
    assert rows(up, "SELECT k, v FROM d.u WHERE k = 3") == [(3, "updated")]


def test_fe_tn_cn_processes_and_a_tn_restart_keep_a_committed_load(tmp_path):
    fe = QuireProcess(tmp_path / "fe", FE_OVERRIDES, command="fe").start()
    shared = cluster_token(fe)
    follower = QuireProcess(tmp_path / "fe2", FE_OVERRIDES, command="fe").join_through(fe)
    logtail_port = free_port()
    tn = DataNode(tmp_path / "tn", "tn", shared, logtail_port, webserver_port=free_port())
    cn = DataNode(tmp_path / "cn", "cn", shared, logtail_port, storage_root=tn.workdir / "storage")
    try:
        tn.start()
        cn.start()
        add_and_start(fe, follower, "FOLLOWER")
        for node in (tn, cn):
            execute(fe, f'ALTER SYSTEM ADD BACKEND "127.0.0.1:{node.port}"')
        execute(fe, "CREATE DATABASE d", "CREATE TABLE d.t (k INT, v DECIMAL(12,2)) "
                "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")  # fmt: skip
        data = tmp_path / "d.csv"
        data.write_text("".join(f"{i},{i}.5\n" for i in range(1000)))

        def loaded() -> dict:
            return curl(fe, "/api/d/t/_stream_load", data, "label:r1", "column_separator:,")

        answer = wait_until(
            lambda: (a := loaded())["Status"] != "Fail" and a, 30, "the TN to take loads"
        )
        assert answer["Status"] == "Success" and answer["NumberLoadedRows"] == 1000, answer
        assert rows(fe, "SELECT count(*), sum(v) FROM d.t") == [(1000, Decimal("500000.00"))]
        execute(fe, "CREATE TABLE d.u (k INT NOT NULL, v VARCHAR(9)) UNIQUE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 2", "INSERT INTO d.u VALUES (1, 'old')")  # fmt: skip
        unique = tmp_path / "u.csv"
        unique.write_text("1,new\n2,x\n")
        assert curl(fe, "/api/d/u/_stream_load", unique, "column_separator:,")["Status"] == (
            "Success"
        )
        assert rows(fe, "SELECT k, v FROM d.u ORDER BY k") == [(1, "new"), (2, "x")]  # on the CN
        tn.process.send_signal(signal.SIGKILL)
        tn.process.wait(30)
        tn.start()
        again = wait_until(
            lambda: (a := loaded())["Status"] != "Fail" and a, 30, "the TN to come back"
        )
        assert again["Status"] == "Label Already Exists", again
        wait_until(
            lambda: rows(fe, "SELECT count(*) FROM d.t") == [(1000,)], 30, "the rows after restart"
        )
        assert [r[2] for r in rows(fe, "SHOW LOAD FROM d WHERE LABEL = 'r1'")] == ["FINISHED"]
        unique.write_text("2,y\n")  # the restarted TN read the loaded rows' keys again
        assert curl(fe, "/api/d/u/_stream_load", unique, "column_separator:,")["Status"] == (
            "Success"
        )
        assert rows(fe, "SELECT k, v FROM d.u ORDER BY k") == [(1, "new"), (2, "y")]
        data.write_text("2000,1\n")  # any FE takes a load: the follower redirects it too
        by_follower = wait_until(
            lambda: (
                (a := curl(follower, "/api/d/t/_stream_load", data, "column_separator:,"))["Status"]
                != "Fail"
                and a
            ),
            30,
            "the follower to know the TN",
        )
        assert by_follower["Status"] == "Success", by_follower
        assert rows(follower, "SELECT count(*) FROM d.t WHERE k = 2000") == [(1,)]
        execute(fe, "CREATE TABLE d.months (k INT, d DATE NOT NULL) DUPLICATE KEY(k) AUTO "
                "PARTITION BY RANGE (date_trunc(d, 'month')) () DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
        data.write_text("1,2024-01-05\n2,2024-02-06\n3,2024-01-31\n")
        wait_until(lambda: rows(follower, "SHOW TABLES FROM d LIKE 'months'"), 20, "the table")
        into_months = curl(follower, "/api/d/months/_stream_load", data, "column_separator:,")
        assert (into_months["Status"], into_months["NumberLoadedRows"]) == ("Success", 3), (
            into_months
        )  # the TN asked the follower, which had the leader make them
        assert [r[1] for r in rows(fe, "SHOW PARTITIONS FROM d.months")] == [
            "p20240101000000",
            "p20240201000000",
        ]
        assert rows(follower, "SELECT k FROM d.months ORDER BY k") == [(1,), (2,), (3,)]
        bulk_load_by_the_client_api(fe, shared, tn)
    finally:
        for node in (cn, tn):
            node.stop()
        follower.stop()
        fe.stop()


def bulk_load_by_the_client_api(fe, shared: str, tn) -> None:
    """What a Spark write does: objects written beside the TN, committed through the remote
    data plane in one commit; an aborted load's objects removed by the TN."""
    _, claims = redirected(fe, "t")
    schema = TableSchema.from_fields(claims["schema"])
    plane = RemoteDataPlane(shared, lambda: [DataPlaneNode(1, "127.0.0.1", tn.port, Role.TN)])
    store = ObjectStore.open_root(str(tn.workdir / "storage"))
    rows_in = pa.table({"k": pa.array(range(5000, 5100), pa.int32()),
                        "v": pa.array([Decimal("1.00")] * 100, pa.decimal128(12, 2))})  # fmt: skip
    try:
        txn_id = plane.begin_load(schema)
        writer = LoadWriter(store, schema, txn_id,
                            lambda n: plane.reserve_row_ids(txn_id, n), LoadLimits(), False)  # fmt: skip
        writer.add(rows_in)
        objects = writer.finish()
        assert objects and rows(fe, "SELECT count(*) FROM d.t WHERE k >= 5000") == [(0,)]
        plane.commit_load(txn_id, schema, objects)
        wait_until(lambda: rows(fe, "SELECT count(*) FROM d.t WHERE k >= 5000") == [(100,)],
                   30, "the committed objects")  # fmt: skip
        with pytest.raises(LoadUnknown):  # committed once
            plane.commit_load(txn_id, schema, objects)
        aborted = plane.begin_load(schema)
        writer = LoadWriter(store, schema, aborted,
                            lambda n: plane.reserve_row_ids(aborted, n), LoadLimits(), False)  # fmt: skip
        writer.add(rows_in)
        names = tuple(meta.name for meta in writer.finish())
        assert all(store.exists(name) for name in names)
        plane.abort_load(aborted, names + tuple(meta.name for meta in objects))
        assert not any(store.exists(name) for name in names)
        assert all(store.exists(meta.name) for meta in objects)  # committed ones stay
        with pytest.raises(LoadUnknown):
            plane.reserve_row_ids(aborted, 1)
        cut = plane.begin_load(schema)  # written, then the TN dies before the commit
        writer = LoadWriter(store, schema, cut,
                            lambda n: plane.reserve_row_ids(cut, n), LoadLimits(), False)  # fmt: skip
        writer.add(rows_in)
        written = writer.finish()
        tn.process.send_signal(signal.SIGKILL)
        tn.process.wait(30)
        tn.start()
        assert not any(store.exists(meta.name) for meta in written)  # the start-up sweep
        with pytest.raises(LoadUnknown):
            plane.commit_load(cut, schema, written)
    finally:
        plane.close()


def test_a_checkpoint_and_a_restart_keep_loads_and_labels(tmp_path):
    node = QuireProcess(
        tmp_path / "up", {"webserver_port": free_port(), "tn_checkpoint_interval_second": 1}
    ).start()
    try:
        execute(node, "CREATE DATABASE d", "CREATE TABLE d.u (k INT NOT NULL, v VARCHAR(9)) "
                "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")  # fmt: skip
        data, empty = tmp_path / "u.csv", tmp_path / "empty.csv"
        data.write_text("1,a\n2,b\n")
        empty.write_text("")
        assert (
            curl(node, "/api/d/u/_stream_load", data, "label:c1", "column_separator:,")["Status"]
            == "Success"
        )
        nothing = curl(node, "/api/d/u/_stream_load", empty, "label:c0")
        assert nothing["Status"] == "Success" and nothing["NumberLoadedRows"] == 0, nothing
        wait_until(lambda: "checkpoint checkpoints/" in node.log_file.read_text(), 30,
                   "a checkpoint")  # fmt: skip
        data.write_text("2,c\n3,d\n")
        assert (
            curl(node, "/api/d/u/_stream_load", data, "label:c2", "column_separator:,")["Status"]
            == "Success"
        )
        node.stop()
        node.start()
        for label in ("c0", "c1", "c2"):
            again = curl(node, "/api/d/u/_stream_load", data, f"label:{label}")
            assert again["Status"] == "Label Already Exists", (label, again)
        # the keys of loaded rows are known again: a new load replaces, never duplicates (the
        # checkpoints counted before it: the one after it may come before the SELECT is answered)
        taken = node.log_file.read_text().count("checkpoint checkpoints/")
        data.write_text("1,z\n")
        assert curl(node, "/api/d/u/_stream_load", data, "column_separator:,")["Status"] == (
            "Success"
        )
        assert rows(node, "SELECT k, v FROM d.u ORDER BY k") == [(1, "z"), (2, "c"), (3, "d")]
        # the deletes of replaced loaded rows flushed as tombstones into the next checkpoint
        wait_until(
            lambda: node.log_file.read_text().count("checkpoint checkpoints/") > taken,
            30,
            "a checkpoint after the replacing load",
        )
        node.stop()
        node.start()
        assert rows(node, "SELECT k, v FROM d.u ORDER BY k") == [(1, "z"), (2, "c"), (3, "d")]
    finally:
        node.stop()
