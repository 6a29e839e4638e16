"""A UNIQUE KEY table's sequence column (Doris's function_column.sequence_col): of the rows written
for one key, the one with the largest sequence value stays, whatever order they arrive in (an
INSERT, a Stream Load, a row within one batch), across restarts and checkpoints; checked with
PyMySQL, the mariadb CLI and curl-like HTTP as a Doris user loads."""

import signal

import pytest
import requests

from tests.harness import QuireProcess, error_of, mariadb, run, wait_until

TABLE = (
    "CREATE TABLE {name} (k INT, v VARCHAR(10), seq {type}) UNIQUE KEY(k) "
    "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('function_column.sequence_col' = 'seq')"
)


@pytest.fixture
def db(root):
    run(root, "CREATE DATABASE IF NOT EXISTS sequences")
    root.select_db("sequences")
    yield root


def rows(connection, table: str = "s"):
    return run(connection, f"SELECT k, v, seq FROM {table} ORDER BY k")


def test_the_row_of_the_largest_sequence_value_stays(quire, db):
    run(db, TABLE.format(name="s", type="INT"))
    run(db, "INSERT INTO s VALUES (1, 'a', 5)")
    run(db, "INSERT INTO s VALUES (1, 'older', 3)")  # smaller: not written, no error
    assert rows(db) == ((1, "a", 5),)
    run(db, "INSERT INTO s VALUES (1, 'same', 5)")  # equal: the later one replaces
    assert rows(db) == ((1, "same", 5),)
    run(db, "INSERT INTO s VALUES (1, 'newer', 6)")
    assert rows(db) == ((1, "newer", 6),)
    # within one statement: the largest of each key, the last of equal ones
    run(db, "INSERT INTO s VALUES (2, 'x', 1), (2, 'y', 9), (2, 'z', 4), (3, 'p', 2), (3, 'q', 2)")
    assert rows(db)[1:] == ((2, "y", 9), (3, "q", 2))
    # NULL is smaller than every value
    run(db, "INSERT INTO s VALUES (4, 'null', NULL)")
    run(db, "INSERT INTO s VALUES (4, 'zero', 0)")
    run(db, "INSERT INTO s VALUES (4, 'null again', NULL)")
    assert rows(db)[3] == (4, "zero", 0)
    # once the key's row is deleted, any value takes it
    run(db, "DELETE FROM s WHERE k = 1")
    run(db, "INSERT INTO s VALUES (1, 'back', 1)")
    assert rows(db)[0] == (1, "back", 1)
    # an UPDATE rewrites the row it reads, keeping its value or setting a new one
    run(db, "UPDATE s SET v = 'u' WHERE k = 2")
    run(db, "UPDATE s SET seq = 1 WHERE k = 3")
    assert rows(db)[1:3] == ((2, "u", 9), (3, "q", 1))
    done = mariadb(quire, "--batch", "-e", "SELECT k, v, seq FROM sequences.s ORDER BY k")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["1\tback\t1", "2\tu\t9", "3\tq\t1", "4\tzero\t0"]


def test_a_transaction_and_dates_as_sequence_values(db):
    run(db, TABLE.format(name="dated", type="DATETIME"))
    run(db, "INSERT INTO dated VALUES (1, 'june', '2024-06-01 00:00:00')")
    run(db, "BEGIN")
    run(db, "INSERT INTO dated VALUES (1, 'may', '2024-05-01 00:00:00')")
    run(db, "INSERT INTO dated VALUES (2, 'new', '2024-01-01 00:00:00')")
    run(db, "INSERT INTO dated VALUES (2, 'december', '2023-12-01 00:00:00')")
    # the transaction reads what its commit will leave
    assert [row[:2] for row in rows(db, "dated")] == [(1, "june"), (2, "new")]
    run(db, "COMMIT")
    assert [row[:2] for row in rows(db, "dated")] == [(1, "june"), (2, "new")]


def test_a_stream_load_keeps_the_largest_sequence_value(quire, db):
    run(db, TABLE.format(name="loaded", type="BIGINT"))
    run(db, "INSERT INTO loaded VALUES (1, 'kept', 5), (2, 'replaced', 5)")

    def load(body: bytes, label: str):
        return requests.put(
            f"http://127.0.0.1:{quire.http_port}/api/sequences/loaded/_stream_load",
            data=body,
            auth=("root", ""),
            timeout=30,
            headers={"label": label, "column_separator": ","},
        ).json()

    answer = load(b"1,older,3\n2,newer,7\n3,x,1\n3,y,4\n3,z,2\n", "first")
    assert (answer["Status"], answer["NumberLoadedRows"]) == ("Success", 5), answer
    assert rows(db, "loaded") == ((1, "kept", 5), (2, "newer", 7), (3, "y", 4))
    answer = load(b"3,late,3\n", "second")
    assert answer["Status"] == "Success", answer
    assert rows(db, "loaded")[2] == (3, "y", 4)


def test_doris_refuses_what_it_refuses(quire, db):
    def refused(sql: str) -> tuple[int, str]:
        return error_of(db, sql)

    duplicate = (
        "CREATE TABLE bad (k INT, seq INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
        "PROPERTIES ('function_column.sequence_col' = 'seq')"
    )
    assert refused(duplicate) == (1105, "sequence column only support UNIQUE_KEYS")
    missing = TABLE.format(name="bad", type="INT").replace("'seq')", "'nope')")
    assert refused(missing) == (1105, "The specified sequence column[nope] not exists")
    assert refused(TABLE.format(name="bad", type="VARCHAR(10)")) == (
        1105,
        "Sequence type only support integer types and date types",
    )
    both = TABLE.format(name="bad", type="INT").replace(
        "'seq')", "'seq', 'function_column.sequence_type' = 'int')"
    )
    assert refused(both) == (
        1105,
        "The sequence_col and sequence_type cannot be set at the same time",
    )
    hidden = TABLE.format(name="bad", type="INT").replace(
        "'function_column.sequence_col' = 'seq'", "'function_column.sequence_type' = 'int'"
    )
    assert refused(hidden)[0] == 1235
    run(db, TABLE.format(name="kept", type="INT"))
    assert refused("ALTER TABLE kept DROP COLUMN seq") == (
        1105,
        "Can not drop sequence mapping column[seq] in Unique data model table[kept]",
    )
    assert refused("ALTER TABLE kept MODIFY COLUMN seq VARCHAR(10)")[0] == 1105
    assert refused("ALTER TABLE kept SET ('function_column.sequence_col' = 'v')")[0] == 1105
    shown = run(db, "SHOW CREATE TABLE kept")[0][1]
    assert '"function_column.sequence_col" = "seq"' in shown
    done = mariadb(quire, "--batch", "-e", duplicate.replace("bad", "sequences.bad"))
    assert "ERROR 1105 (HY000)" in done.stderr and "only support UNIQUE_KEYS" in done.stderr


def test_a_renamed_sequence_column_still_decides(db):
    run(db, TABLE.format(name="renamed", type="INT"))
    run(db, "INSERT INTO renamed VALUES (1, 'a', 5)")
    run(db, "ALTER TABLE renamed RENAME COLUMN seq version")
    wait_until(
        lambda: (
            '"function_column.sequence_col" = "version"'
            in run(db, "SHOW CREATE TABLE renamed")[0][1]
        ),
        30,
        "the rename",
    )
    run(db, "INSERT INTO renamed VALUES (1, 'older', 4)")
    assert run(db, "SELECT v, version FROM renamed") == (("a", 5),)


def test_the_sequence_values_survive_kill_9_and_checkpoints(tmp_path):
    node = QuireProcess(
        tmp_path / "node", overrides={"tn_checkpoint_interval_second": 1, "flush_rows": 50}
    ).start()
    folder = node.workdir / "storage" / "objects" / "checkpoints"
    try:
        connection = node.connect()
        run(connection, "CREATE DATABASE d")
        connection.select_db("d")
        run(connection, TABLE.format(name="s", type="INT"))
        # a key column named as the checkpoint's own columns once were
        run(
            connection,
            "CREATE TABLE named (ts INT, row_id INT, seq INT) UNIQUE KEY(ts, row_id) "
            "DISTRIBUTED BY HASH(ts) BUCKETS 1 PROPERTIES ('function_column.sequence_col' = 'seq')",
        )
        values = ", ".join(f"({k}, 'v{k}', 10)" for k in range(100))
        run(connection, f"INSERT INTO s VALUES {values}")
        run(connection, "INSERT INTO named VALUES (1, 2, 10)")
        wait_until(lambda: list(folder.glob("*.ckpt")), 30, "a checkpoint")
        run(connection, "INSERT INTO s VALUES (200, 'after', 10)")  # in the log, not the checkpoint
        answer = requests.put(
            f"http://127.0.0.1:{node.http_port}/api/d/s/_stream_load",
            data=b"300,loaded,10\n301,loaded,10\n",
            auth=("root", ""),
            timeout=30,
            headers={"column_separator": ","},
        ).json()
        assert answer["Status"] == "Success", answer
        connection.close()
        node.kill(signal.SIGKILL)
        node.start()
        connection = node.connect(database="d")
        run(
            connection,
            "INSERT INTO s VALUES (5, 'older', 9), (200, 'older', 9), (7, 'newer', 11), "
            "(300, 'older', 9)",
        )
        run(connection, "INSERT INTO named VALUES (1, 2, 9)")
        assert run(connection, "SELECT v FROM s WHERE k IN (5, 7, 200, 300) ORDER BY k") == (
            ("v5",),
            ("newer",),
            ("after",),
            ("loaded",),
        )
        assert run(connection, "SELECT seq FROM named") == ((10,),)
        assert run(connection, "SELECT COUNT(*) FROM s") == ((103,),)
        assert "TN loaded checkpoint checkpoints/" in node.log_file.read_text()
        connection.close()
    finally:
        node.stop()
