"""Doris's SQLAlchemy dialects from PyPI, unmodified: pydoris (`pydoris://`, over mysqlclient) and
sqlalchemy-doris (`doris+pymysql://`)."""

import pydoris.sqlalchemy  # noqa: F401  (imported before sqlalchemy_doris: see below)
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, text
from sqlalchemy_doris import HASH

from tests.harness import mariadb_error, run

# Both packages register the dialect name "doris" when imported, the last import winning; table
# arguments named doris_* belong to sqlalchemy-doris, so it is imported last (pydoris's are pydoris_*).

DIALECT_URLS = {
    "pydoris": "pydoris://root@127.0.0.1:{port}/{db}",
    "sqlalchemy-doris": "doris+pymysql://root@127.0.0.1:{port}/{db}",
}


@pytest.fixture(params=list(DIALECT_URLS))
def engine(request, quire, root):
    db = "dialect_" + request.param.replace("-", "_")
    run(root, f"CREATE DATABASE IF NOT EXISTS {db}")
    run(
        root,
        f"CREATE TABLE IF NOT EXISTS {db}.items (k INT NOT NULL, name VARCHAR(20)) "
        "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    )
    engine = create_engine(DIALECT_URLS[request.param].format(port=quire.query_port, db=db))
    yield engine
    engine.dispose()


def test_dialect_connects_and_reflects(engine):
    with engine.connect() as connection:
        assert connection.execute(text("SELECT 1")).scalar() == 1
    inspector = inspect(engine)
    assert "items" in inspector.get_table_names()
    assert inspector.has_table("items")
    assert not inspector.has_table("missing")
    columns = inspector.get_columns("items")
    assert [column["name"] for column in columns] == ["k", "name"]
    assert [column["nullable"] for column in columns] == [False, True]
    assert inspector.get_pk_constraint("items")["constrained_columns"] in ([], ["k"])


def doris_table(dialect: str, metadata: MetaData) -> Table:
    """A table as each dialect's users declare it: pydoris takes the key from the primary key,
    sqlalchemy-doris from its doris_unique_key argument."""
    if dialect == "pydoris":
        return Table(
            "made",
            metadata,
            Column("id", Integer, primary_key=True),
            Column("label", String(30)),
            pydoris_key_type="UNIQUE",
            pydoris_distributed_by="HASH(`id`)",
            pydoris_buckets=1,
            pydoris_properties={"replication_num": "1"},
        )
    return Table(
        "made",
        metadata,
        Column("id", Integer, nullable=False),
        Column("label", String(30)),
        doris_unique_key="id",
        doris_distributed_by=HASH("id", buckets=1),
        doris_properties={"replication_num": "1"},
    )


def test_dialect_creates_and_drops_a_table(engine):
    metadata = MetaData()
    doris_table(engine.dialect.name, metadata)
    metadata.create_all(engine)
    inspector = inspect(engine)
    assert inspector.has_table("made")
    assert [column["name"] for column in inspector.get_columns("made")] == ["id", "label"]
    metadata.create_all(engine)  # has_table() first: creates nothing
    metadata.drop_all(engine)
    assert not inspect(engine).has_table("made")


def test_describe_of_a_missing_table_is_1051_as_doris(quire, root):
    run(root, "CREATE DATABASE IF NOT EXISTS described")
    error = mariadb_error(quire, "root", "", "DESC described.missing")
    assert error.startswith("ERROR 1051 (42S02)"), error
    assert "Unknown table 'missing'" in error
