"""S3 Load's and EXPORT's jobs are journaled: after a restart (and a kill -9) SHOW LOAD and SHOW
EXPORT show every job as it ended, and one the node was running when it died CANCELLED (its FE
stopped), with none of its rows and its label free again; a follower shows the jobs the leader
ran. Through PyMySQL and the mariadb CLI."""

from tests.harness import (
    QuireProcess,
    add_and_start,
    error_of,
    mariadb,
    moto_filesystem,
    moto_with_s3,
    put_objects,
    run,
    wait_until,
)

BUCKET = "jobs"


def load(connection, label: str, path: str, endpoint: str) -> None:
    run(
        connection,
        f"""LOAD LABEL {label} (DATA INFILE ("s3://{BUCKET}/{path}") INTO TABLE orders
            COLUMNS TERMINATED BY "," (id, name, amount)) {moto_with_s3(endpoint)}
            PROPERTIES ("timeout" = "600")""",
    )


def orders_in_shop(node, buckets: int):
    """A root connection to node in the new database shop, with its table orders."""
    db = node.connect()
    run(db, "CREATE DATABASE shop")
    db.select_db("shop")
    run(db, "CREATE TABLE orders (id INT, name VARCHAR(10), amount INT) DUPLICATE KEY(id) "
            f"DISTRIBUTED BY HASH(id) BUCKETS {buckets}")  # fmt: skip
    return db


def shown(connection, what: str, label: str) -> tuple:
    rows = run(connection, f"SHOW {what} WHERE LABEL = '{label}'")
    assert len(rows) == 1, rows
    return rows[0]


def test_jobs_are_shown_as_they_ended_after_a_kill_9(tmp_path, moto_endpoint):
    filesystem = moto_filesystem(moto_endpoint, BUCKET)
    put_objects(filesystem, {
        f"{BUCKET}/small.csv": b"1,ann,10\n2,bob,20\n",
        f"{BUCKET}/bad.csv": b"3,cid,not a number\n",
    })  # fmt: skip
    with filesystem.open_output_stream(f"{BUCKET}/big.csv") as out:
        for start in range(100, 600_100, 50_000):
            out.write(
                "".join(f"{n},n{n},{n % 999}\n" for n in range(start, start + 50_000)).encode()
            )
    node = QuireProcess(tmp_path / "node").start()
    try:
        db = orders_in_shop(node, 2)
        load(db, "kept", "small.csv", moto_endpoint)
        load(db, "broken", "bad.csv", moto_endpoint)
        run(db, f'EXPORT TABLE orders TO "s3://{BUCKET}/out/orders_" PROPERTIES ("label" = '
                f'"shipped", "format" = "csv") {moto_with_s3(moto_endpoint)}')  # fmt: skip
        for what, label in (("LOAD", "kept"), ("LOAD", "broken"), ("EXPORT", "shipped")):
            wait_until(
                lambda w=what, name=label: shown(db, w, name)[2] in ("FINISHED", "CANCELLED"),
                60,
                f"{label} to end",
            )
        exported = shown(db, "EXPORT", "shipped")
        load(db, "interrupted", "big.csv", moto_endpoint)
        wait_until(lambda: shown(db, "LOAD", "interrupted")[2] == "LOADING", 30, "the load")
        node.kill()
        node.start()
        db = node.connect(database="shop")

        kept = shown(db, "LOAD", "kept")
        assert kept[1:5] == ("kept", "FINISHED", "100.00% (1/1)", "BROKER"), kept
        assert "timeout(s):600" in kept[6], kept
        broken = shown(db, "LOAD", "broken")
        assert broken[2] == "CANCELLED" and "not a number" in broken[7], broken
        interrupted = shown(db, "LOAD", "interrupted")
        assert interrupted[2] == "CANCELLED", interrupted
        assert "the frontend that ran it stopped" in interrupted[7], interrupted
        assert shown(db, "EXPORT", "shipped") == exported
        assert run(db, "SELECT COUNT(*) FROM orders") == ((2,),)  # kept's rows only
        assert error_of(db, "CANCEL LOAD WHERE LABEL = 'interrupted'")[0] == 1105
        done = mariadb(node, "--batch", "shop", "-e", "SHOW LOAD WHERE LABEL = 'interrupted'")
        assert "CANCELLED" in done.stdout and "stopped" in done.stdout, done.stderr

        with filesystem.open_output_stream(f"{BUCKET}/again.csv") as out:
            out.write(b"7,gus,70\n")
        load(db, "interrupted", "again.csv", moto_endpoint)  # its label is free again
        wait_until(lambda: shown(db, "LOAD", "interrupted")[2] == "FINISHED", 60, "the reload")
        assert run(db, "SELECT COUNT(*) FROM orders") == ((3,),)
        db.close()
    finally:
        node.stop()


def test_a_follower_shows_the_jobs_the_leader_ran(tmp_path, moto_endpoint):
    filesystem = moto_filesystem(moto_endpoint, BUCKET)
    with filesystem.open_output_stream(f"{BUCKET}/few.csv") as out:
        out.write(b"1,ann,10\n2,bob,20\n")
    leader = QuireProcess(tmp_path / "leader").start()
    follower = QuireProcess(tmp_path / "follower", command="fe").join_through(leader)
    try:
        add_and_start(leader, follower, "FOLLOWER")
        db = orders_in_shop(leader, 1)
        load(db, "landed", "few.csv", moto_endpoint)
        wait_until(lambda: shown(db, "LOAD", "landed")[2] == "FINISHED", 60, "the load")
        db.close()

        def on_follower() -> str:
            done = mariadb(follower, "--batch", "shop", "-e", "SHOW LOAD WHERE LABEL = 'landed'")
            return done.stdout

        text = wait_until(lambda: "FINISHED" in on_follower() and on_follower(), 30, "the job")
        assert "landed" in text and "BROKER" in text, text
    finally:
        follower.stop()
        leader.stop()
