"""Stream Loads that delete as Doris's do, into a UNIQUE KEY table: `merge_type: DELETE` (every
row deletes its key), `merge_type: MERGE` with `delete: condition`, and the delete sign field
`__DORIS_DELETE_SIGN__` (named by `hidden_columns`, as Flink's Doris connector sends it); within
one load the last row of a key decides. Headers Quire does not honour are refused, not ignored.
Loaded over HTTP as curl sends them, read back with PyMySQL and the mariadb CLI, across kill -9."""

import json
import signal

import pytest
import requests

from tests.harness import QuireProcess, mariadb, run


@pytest.fixture
def node(tmp_path):
    node = QuireProcess(tmp_path / "node").start()
    connection = node.connect()
    run(connection, "CREATE DATABASE m")
    run(
        connection,
        "CREATE TABLE m.u (id INT, v VARCHAR(10)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        connection,
        "CREATE TABLE m.d (id INT, v VARCHAR(10)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(connection, "INSERT INTO m.u VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')")
    connection.close()
    yield node
    node.stop()


def load(node, body: bytes, table: str = "u", **headers: str) -> dict:
    return requests.put(
        f"http://127.0.0.1:{node.http_port}/api/m/{table}/_stream_load",
        data=body,
        auth=("root", ""),
        timeout=30,
        headers={"column_separator": ",", **headers},
    ).json()


def rows(node) -> tuple:
    connection = node.connect()
    try:
        return run(connection, "SELECT id, v FROM m.u ORDER BY id")
    finally:
        connection.close()


def test_delete_merge_and_the_delete_sign(node):
    answer = load(node, b"2\n4\n", merge_type="DELETE", columns="id")
    assert answer["Status"] == "Success", answer
    assert rows(node) == ((1, "a"), (3, "c"), (5, "e"))
    answer = load(node, b"1,kept\n3,gone\n6,new\n", merge_type="MERGE", delete="v = 'gone'")
    assert (answer["Status"], answer["NumberLoadedRows"]) == ("Success", 3), answer
    assert rows(node) == ((1, "kept"), (5, "e"), (6, "new"))
    # within one load the last row of a key decides
    answer = load(node, b"8,gone\n8,back\n6,x\n6,gone\n", merge_type="MERGE", delete="v = 'gone'")
    assert answer["Status"] == "Success", answer
    assert rows(node) == ((1, "kept"), (5, "e"), (8, "back"))
    # Flink's Doris connector: JSON lines with the delete sign, named by hidden_columns
    lines = [
        {"id": 5, "v": "e", "__DORIS_DELETE_SIGN__": 1},
        {"id": 7, "v": "y", "__DORIS_DELETE_SIGN__": 0},
    ]
    answer = load(
        node,
        "\n".join(json.dumps(line) for line in lines).encode(),
        format="json",
        read_json_by_line="true",
        hidden_columns="__DORIS_DELETE_SIGN__",
    )
    assert answer["Status"] == "Success", answer
    assert rows(node) == ((1, "kept"), (7, "y"), (8, "back"))
    # a CSV naming the sign field in columns
    answer = load(node, b"1,kept,1\n9,nine,0\n", columns="id, v, __DORIS_DELETE_SIGN__")
    assert answer["Status"] == "Success", answer
    assert rows(node) == ((7, "y"), (8, "back"), (9, "nine"))
    # what the TN knows of the keys survives kill -9: a deleted key is free, a held one replaced
    node.kill(signal.SIGKILL)
    node.start()
    connection = node.connect()
    try:
        run(connection, "INSERT INTO m.u VALUES (1, 'again'), (9, 'NINE')")
        assert run(connection, "SELECT id, v FROM m.u ORDER BY id") == (
            (1, "again"),
            (7, "y"),
            (8, "back"),
            (9, "NINE"),
        )
    finally:
        connection.close()
    done = mariadb(node, "--batch", "-N", "-e", "SELECT COUNT(*) FROM m.u")
    assert done.stdout.split() == ["4"], done.stderr


def test_what_doris_refuses_and_what_quire_does_not_honour(node):
    answer = load(node, b"1\n", table="d", merge_type="DELETE", columns="id")
    assert answer["Status"] == "Fail"
    assert "only supported in unique tables" in answer["Message"], answer
    answer = load(node, b"1,a\n", merge_type="MERGE")
    assert answer["Status"] == "Fail" and "DELETE ON clause" in answer["Message"], answer
    answer = load(node, b"1,a\n", delete="v = 'a'")
    assert answer["Status"] == "Fail" and "DELETE ON clause" in answer["Message"], answer
    answer = load(node, b"1,a\n", merge_type="UPSERT")
    assert answer["Status"] == "Fail" and "merge type" in answer["Message"], answer
    for header, value in (
        ("partial_columns", "true"),
        ("skip_lines", "1"),
        ("compress_type", "gz"),
        ("partitions", "p1"),
    ):
        answer = load(node, b"1,a\n", **{header: value})
        assert answer["Status"] == "Fail" and header in answer["Message"], (header, answer)
    answer = load(node, b"1,a\n", **{"function_column.sequence_col": "v"})
    assert answer["Status"] == "Fail" and "sequence" in answer["Message"], answer
    assert rows(node) == ((1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"))  # nothing loaded
