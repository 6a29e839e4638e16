"""Doris's S3 Load (LOAD LABEL ... WITH S3) against moto's S3 server: the statement answers at
once, the job loads the objects' rows into the tables in one labelled transaction, SHOW LOAD
follows it (LOADING, FINISHED or CANCELLED with its error), CANCEL LOAD stops one; a label is
used once; CSV columns by position (listed, mapped by SET, filtered by WHERE), Parquet by name.
Through PyMySQL and the mariadb CLI."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.harness import (
    error_of,
    mariadb,
    moto_filesystem,
    moto_with_s3,
    put_objects,
    run,
    wait_until,
)

BUCKET = "loads"


@pytest.fixture(scope="module")
def store(moto_endpoint):
    filesystem = moto_filesystem(moto_endpoint, BUCKET)
    put_objects(filesystem, {
        f"{BUCKET}/orders/1.csv": b"1,ann,10\n2,bob,20\n",
        f"{BUCKET}/orders/2.csv": b"3,cid,30\n4,dan,40\n",
        f"{BUCKET}/bad.csv": b"5,eve,not a number\n",
    })  # fmt: skip
    table = pa.table({"id": pa.array([7, 8], pa.int64()), "name": ["gus", "hal"]})
    pq.write_table(table, f"{BUCKET}/people.parquet", filesystem=filesystem)
    return moto_endpoint


@pytest.fixture(scope="module")
def db(root):
    run(root, "CREATE DATABASE loading")
    root.select_db("loading")
    run(
        root,
        "CREATE TABLE orders (id INT, name VARCHAR(10), amount INT, doubled INT) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(
        root,
        "CREATE TABLE people (id BIGINT, name VARCHAR(10)) UNIQUE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    return root


def load_state(connection, label: str) -> tuple:
    rows = run(connection, f"SHOW LOAD WHERE LABEL = '{label}'")
    assert len(rows) == 1, rows
    return rows[0]


def finished(connection, label: str) -> tuple:
    wait_until(
        lambda: load_state(connection, label)[2] in ("FINISHED", "CANCELLED"),
        60,
        f"load {label} to end",
    )
    return load_state(connection, label)


def test_csv_objects_load_with_columns_set_and_where(db, store):
    run(
        db,
        f"""LOAD LABEL loading.first (
            DATA INFILE ("s3://{BUCKET}/orders/*.csv")
            INTO TABLE orders COLUMNS TERMINATED BY "," FORMAT AS "csv"
            (id, name, amount) SET (doubled = amount * 2) WHERE id != 3
        ) {moto_with_s3(store)} PROPERTIES ("timeout" = "600")""",
    )
    row = finished(db, "first")
    assert row[1:5] == ("first", "FINISHED", "100.00% (1/1)", "BROKER"), row
    assert run(db, "SELECT id, name, amount, doubled FROM orders ORDER BY id") == (
        (1, "ann", 10, 20),
        (2, "bob", 20, 40),
        (4, "dan", 40, 80),
    )
    # the label is used once
    again = f'LOAD LABEL first (DATA INFILE ("s3://{BUCKET}/bad.csv") INTO TABLE orders) {moto_with_s3(store)}'
    assert error_of(db, again) == (1105, "Label [first] has already been used.")


def test_parquet_by_name_and_two_tables_in_one_transaction(db, store):
    run(
        db,
        f"""LOAD LABEL both_tables (
            DATA INFILE ("s3://{BUCKET}/people.parquet") INTO TABLE people FORMAT AS "parquet",
            DATA INFILE ("s3://{BUCKET}/orders/1.csv") INTO TABLE orders
              COLUMNS TERMINATED BY "," (id, name, amount) WHERE id = 1
        ) {moto_with_s3(store)}""",
    )
    assert finished(db, "both_tables")[2] == "FINISHED"
    assert run(db, "SELECT id, name FROM people ORDER BY id") == ((7, "gus"), (8, "hal"))
    assert run(db, "SELECT COUNT(*) FROM orders WHERE id = 1") == ((2,),)


def test_a_generated_column_is_worked_out_whatever_the_load_gives_it(db, store):
    run(
        db,
        "CREATE TABLE priced (id INT, name VARCHAR(10), amount INT, taxed INT AS (amount + 1)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
    )
    run(
        db,
        f"""LOAD LABEL generated (
            DATA INFILE ("s3://{BUCKET}/orders/1.csv") INTO TABLE priced
              COLUMNS TERMINATED BY "," (id, name, taxed) SET (amount = taxed * 10)
        ) {moto_with_s3(store)}""",
    )  # the file's third column named after the generated column: read, not written
    assert finished(db, "generated")[2] == "FINISHED"
    assert run(db, "SELECT * FROM priced ORDER BY id") == (
        (1, "ann", 100, 101),
        (2, "bob", 200, 201),
    )


def csv_load(label: str, table: str, objects: tuple[str, ...], store, properties: str = "") -> str:
    """LOAD LABEL of CSV objects of the bucket (id, name, amount) into table."""
    data = ",".join(
        f'DATA INFILE ("s3://{BUCKET}/{name}") INTO TABLE {table} COLUMNS TERMINATED BY "," '
        "(id, name, amount)"
        for name in objects
    )
    tail = f" PROPERTIES ({properties})" if properties else ""
    return f"LOAD LABEL {label} ({data}) {moto_with_s3(store)}{tail}"


def test_a_failing_load_is_cancelled_with_its_error_and_writes_nothing(quire, db, store):
    before = run(db, "SELECT COUNT(*) FROM orders")
    run(db, csv_load("broken", "orders", ("orders/1.csv", "bad.csv"), store))
    row = finished(db, "broken")
    assert row[2] == "CANCELLED" and "not a number" in row[7], row
    assert run(db, "SELECT COUNT(*) FROM orders") == before  # neither object's rows
    missing = f'LOAD LABEL nothing (DATA INFILE ("s3://{BUCKET}/none.csv") INTO TABLE orders) {moto_with_s3(store)}'
    run(db, missing)
    assert "finds no object" in finished(db, "nothing")[7]
    # a cancelled load's label may be used again
    done = mariadb(
        quire,
        "--batch",
        "-e",
        f"LOAD LABEL loading.broken (DATA INFILE ('s3://{BUCKET}/orders/2.csv') INTO TABLE "
        f"orders COLUMNS TERMINATED BY ',' (id, name, amount)) {moto_with_s3(store)}; "
        "SELECT 'submitted'",
    )
    assert done.returncode == 0 and "submitted" in done.stdout, done.stderr
    assert finished(db, "broken")[2] == "FINISHED"


def test_bad_statements_and_who_may_load(quire, db, store):
    assert error_of(db, "LOAD LABEL x (DATA INFILE ('s3://b/x') INTO TABLE orders) WITH BROKER b")[
        0
    ] in (1064, 1235)
    assert (
        error_of(
            db,
            f"LOAD LABEL x (DATA INFILE ('s3://b/x') INTO TABLE orders SET (doubled = )) {moto_with_s3(store)}",
        )[0]
        == 1064
    )
    assert (
        error_of(
            db, f"LOAD LABEL x (DATA INFILE ('s3://b/x') INTO TABLE nope) {moto_with_s3(store)}"
        )[0]
        == 1146
    )
    assert error_of(db, "CANCEL LOAD WHERE LABEL = 'never'")[0] == 1105
    run(db, "CREATE USER loader IDENTIFIED BY 'pw'")
    run(db, "GRANT LOAD_PRIV, SELECT_PRIV ON loading.* TO loader")
    loader = quire.connect("loader", "pw", database="loading")
    try:  # it reaches any endpoint from the FE's host: admins only, as s3(...)
        code, _ = error_of(
            loader,
            f"LOAD LABEL mine (DATA INFILE ('s3://b/x') INTO TABLE orders) {moto_with_s3(store)}",
        )
        assert code == 1227
    finally:
        loader.close()
    done = mariadb(quire, "--batch", "-e", "SHOW LOAD FROM loading WHERE LABEL = 'first'")
    assert done.returncode == 0 and "BROKER" in done.stdout, done.stderr


def test_export_writes_a_table_as_an_object_and_shows_the_job(quire, db, store):
    run(
        db,
        "CREATE TABLE shipped (id INT, city VARCHAR(10)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
    )
    run(db, "INSERT INTO shipped VALUES (1, 'oslo'), (2, 'rome'), (3, 'lima')")
    run(
        db,
        f"""EXPORT TABLE shipped WHERE id > 1 TO "s3://{BUCKET}/exports/shipped_"
            PROPERTIES ("label" = "out1", "format" = "parquet", "columns" = "id,city")
            {moto_with_s3(store)}""",
    )

    def shown():
        rows = run(db, "SHOW EXPORT WHERE LABEL = 'out1'")
        assert len(rows) == 1, rows
        return rows[0]

    wait_until(lambda: shown()[2] in ("FINISHED", "CANCELLED"), 60, "the export to end")
    row = shown()
    assert row[1:4] == ("out1", "FINISHED", "100%"), row
    assert '"totalRows":"2"' in row[11] and "s3://loads/exports/shipped_" in row[11], row
    # the object it wrote is the table's rows, as s3(...) reads them back
    url = row[11].split('"url":"')[1].split('"')[0]
    properties = (
        f'"s3.endpoint" = "{store}", "s3.region" = "us-east-1", "s3.access_key" = "testing", '
        '"s3.secret_key" = "testing"'
    )
    back = f's3("uri" = "{url}*", "format" = "parquet", {properties})'
    assert run(db, f"SELECT id, city FROM {back} ORDER BY id") == ((2, "rome"), (3, "lima"))
    done = mariadb(quire, "--batch", "-e", "SHOW EXPORT FROM loading WHERE STATE = 'FINISHED'")
    assert done.returncode == 0 and "out1" in done.stdout, done.stderr
    failing = (
        f'EXPORT TABLE shipped TO "s3://no-such-bucket/x_" PROPERTIES ("label" = "out2") '
        f"{moto_with_s3(store)}"
    )
    run(db, failing)
    wait_until(
        lambda: run(db, "SHOW EXPORT WHERE LABEL = 'out2'")[0][2] == "CANCELLED",
        60,
        "the failing export to end",
    )
    assert error_of(db, "CANCEL EXPORT WHERE LABEL = 'out1'")[0] == 1105  # finished
    assert error_of(db, f'EXPORT TABLE nope TO "s3://{BUCKET}/x" {moto_with_s3(store)}')[0] == 1146
    assert error_of(db, f'EXPORT TABLE shipped TO "s3://{BUCKET}/x" WITH BROKER "b"')[0] in (
        1064,
        1235,
    )


def test_cancel_load_stops_a_running_load_and_writes_nothing(db, store):
    filesystem = moto_filesystem(store)
    with filesystem.open_output_stream(f"{BUCKET}/big/orders.csv") as out:
        for start in range(0, 300_000, 50_000):
            out.write(
                "".join(f"{n},name{n},{n % 1000}\n" for n in range(start, start + 50_000)).encode()
            )
    before = run(db, "SELECT COUNT(*) FROM orders")
    run(
        db,
        f"""LOAD LABEL big_one (DATA INFILE ("s3://{BUCKET}/big/orders.csv") INTO TABLE orders
            COLUMNS TERMINATED BY "," (id, name, amount)) {moto_with_s3(store)}""",
    )
    run(db, "CANCEL LOAD FROM loading WHERE LABEL = 'big_one'")  # at once: it has just begun
    row = finished(db, "big_one")
    assert row[2] == "CANCELLED" and "user cancel" in row[7], row
    assert run(db, "SELECT COUNT(*) FROM orders") == before
    assert error_of(db, "CANCEL LOAD WHERE LABEL = 'big_one'")[0] == 1105  # no longer running


def test_a_cancel_once_the_commit_began_is_refused_and_the_load_lands_whole(quire, db, store):
    filesystem = moto_filesystem(store)
    with filesystem.open_output_stream(f"{BUCKET}/whole/orders.csv") as out:
        out.write("".join(f"{n},name{n},{n % 1000}\n" for n in range(1000, 21_000)).encode())
    before = run(db, "SELECT COUNT(*) FROM orders")[0][0]
    run(
        db,
        f"""LOAD LABEL whole_one (DATA INFILE ("s3://{BUCKET}/whole/orders.csv") INTO TABLE
            orders COLUMNS TERMINATED BY "," (id, name, amount)) {moto_with_s3(store)}""",
    )
    wait_until(
        lambda: "job loading.whole_one committing" in quire.log_file.read_text(),
        60,
        "the load's commit to begin",
    )
    code, message = error_of(db, "CANCEL LOAD WHERE LABEL = 'whole_one'")
    assert code == 1105 and ("committing" in message or "finished" in message), message
    row = finished(db, "whole_one")
    assert row[2] == "FINISHED", row
    assert run(db, "SELECT COUNT(*) FROM orders")[0][0] == before + 20_000


def test_max_filter_ratio_lets_a_share_of_bad_rows_be_filtered(quire, db, store):
    filesystem = moto_filesystem(store)
    lines = [f"{n},ok{n},{n}" for n in range(500, 509)] + ["509,bad,not a number"]
    with filesystem.open_output_stream(f"{BUCKET}/ratio/orders.csv") as out:
        out.write(("\n".join(lines) + "\n").encode())
    run(db, "CREATE TABLE ratio (id INT, name VARCHAR(10), amount INT, doubled INT) "
            "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")  # fmt: skip

    def load(label: str, properties: str) -> None:
        run(
            db,
            f"""LOAD LABEL {label} (DATA INFILE ("s3://{BUCKET}/ratio/orders.csv") INTO TABLE
                ratio COLUMNS TERMINATED BY "," (id, name, amount)
                SET (doubled = hour(from_unixtime(0)))) {moto_with_s3(store)}
                PROPERTIES ({properties})""",
        )

    load("too_strict", '"max_filter_ratio" = "0.05"')
    row = finished(db, "too_strict")
    assert row[2] == "CANCELLED", row
    assert row[7].startswith("type:ETL_QUALITY_UNSATISFIED; msg:quality not good enough"), row
    assert "1 of 10 rows filtered" in row[7] and "not a number" in row[7], row
    assert "max_filter_ratio:0.05" in row[6], row
    assert run(db, "SELECT COUNT(*) FROM ratio") == ((0,),)

    load("lenient", '"max_filter_ratio" = "0.2", "timezone" = "Asia/Shanghai", "timeout" = "600"')
    row = finished(db, "lenient")
    assert row[2] == "FINISHED", row
    assert "timeout(s):600; max_filter_ratio:0.2" in row[6], row
    assert "dpp.abnorm.ALL=1; dpp.norm.ALL=9" in row[5], row
    assert run(db, "SELECT COUNT(*), MIN(doubled), MAX(doubled) FROM ratio") == ((9, 8, 8),)

    load("loose", '"strict_mode" = "false"')  # Doris's: a value that does not convert is NULL
    row = finished(db, "loose")
    assert row[2] == "FINISHED" and "dpp.abnorm.ALL=0; dpp.norm.ALL=10" in row[5], row
    assert run(db, "SELECT COUNT(*), COUNT(amount) FROM ratio") == ((19, 18),)
    assert run(db, "SELECT amount FROM ratio WHERE name = 'bad'") == ((None,),)

    # The ratio is of the whole load's rows, as Doris's: one object's may filter more.
    put_objects(filesystem, {
        f"{BUCKET}/ratio/half_bad.csv": b"600,ok600,6\n601,bad,not a number\n",
        f"{BUCKET}/ratio/good.csv": "".join(f"{n},ok{n},{n}\n" for n in range(602, 620)).encode(),
    })  # fmt: skip
    objects = ("ratio/half_bad.csv", "ratio/good.csv")
    run(db, csv_load("whole_ratio", "ratio", objects, store, '"max_filter_ratio" = "0.1"'))
    row = finished(db, "whole_ratio")
    assert row[2] == "FINISHED" and "dpp.abnorm.ALL=1; dpp.norm.ALL=19" in row[5], row
    assert run(db, "SELECT COUNT(*) FROM ratio WHERE id >= 600") == ((19,),)

    for properties, code, words in (
        ('"max_filter_ratio" = "2"', 1105, "max_filter_ratio must be between"),
        ('"max_filter_ratio" = "x"', 1105, "max_filter_ratio must be between"),
        ('"no_such_thing" = "1"', 1105, "no_such_thing is invalid property"),
        ('"strict_mode" = "maybe"', 1105, "strict_mode is not a boolean"),
    ):
        statement = (
            f'LOAD LABEL refused (DATA INFILE ("s3://{BUCKET}/ratio/orders.csv") INTO TABLE ratio) '
            f"{moto_with_s3(store)} PROPERTIES ({properties})"
        )
        assert error_of(db, statement)[:1] == (code,), properties
        assert words in error_of(db, statement)[1]
        done = mariadb(quire, "--batch", "loading", "-e", statement)
        assert f"ERROR {code}" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert run(db, "SHOW LOAD WHERE LABEL = 'refused'") == ()
