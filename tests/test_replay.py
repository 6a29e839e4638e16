"""Replaying the journal onto an image gives the catalog the live node had."""

import requests

from image.images import ImageStore, load_image
from metadata.journal.replicated import ReplicatedJournal
from tests.harness import free_port


def live_dump(node) -> str:
    response = requests.get(
        f"http://127.0.0.1:{node.http_port}/dump", auth=("root", ""), timeout=10
    )
    assert response.status_code == 200
    return response.text


def replayed_dump(meta_dir, image_path) -> str:
    catalog = load_image(image_path)
    journal = ReplicatedJournal(
        journal_dir=str(meta_dir / "journal"),
        self_address=f"127.0.0.1:{free_port()}",
        partners=[],
        state_machine=catalog,
        applied_index=catalog.raft_index,
        sync=False,
    )
    journal.start()
    journal.close()
    return catalog.canonical_dump()


def test_replay_onto_every_kept_image_matches_the_live_catalog(fresh_quire):
    node = fresh_quire.start()
    connection = node.connect()
    statements = [
        "CREATE DATABASE r1",
        "CREATE TABLE r1.a (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4",
        "CREATE USER u1 IDENTIFIED BY 'x'",
        "ADMIN CHECKPOINT",
        "CREATE TABLE r1.s (d DATE NOT NULL, n INT SUM) AGGREGATE KEY(d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2020-01-01'), PARTITION p2 VALUES LESS THAN MAXVALUE) "
        "DISTRIBUTED BY HASH(d) BUCKETS 2",
        "GRANT SELECT_PRIV ON r1.* TO u1",
        "ALTER TABLE r1.a ADD COLUMN c BIGINT DEFAULT '0' AFTER k",
        "ADMIN CHECKPOINT",
        "ALTER TABLE r1.s DROP PARTITION p1",  # p0 below is within p1's range
        "ALTER TABLE r1.s ADD PARTITION p0 VALUES [('1990-01-01'), ('2000-01-01'))",
        "CREATE TABLE r1.b LIKE r1.a",
        "ALTER TABLE r1.b RENAME c",
        "DROP TABLE r1.a",
        "SET GLOBAL wait_timeout = 77",
        "CREATE DATABASE r2",
        "DROP DATABASE r2",
        "TRUNCATE TABLE r1.s PARTITION (p2)",
        "RECOVER TABLE r1.a AS a_back",
        "DROP TABLE r1.c FORCE",
    ]
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    connection.close()
    expected = live_dump(node)
    assert "r1" in expected and "p0" in expected
    node.stop()
    images = ImageStore(node.meta_dir / "image").images()
    assert len(images) >= 2
    for info in images:
        assert replayed_dump(node.meta_dir, info.path) == expected, info.path.name
