"""SHOW PROC '<path>': Doris's tree of catalog and cluster facts."""

from __future__ import annotations

from fe.mysql.errors import QueryError
from fe.statements import data_sizes

ROOT = ("dbs", "frontends", "backends", "journal", "images")
# The paths about nodes, not data: NODE_PRIV reads them as ADMIN_PRIV does.
NODE_PATHS = ("", "/frontends", "/backends", "/journal", "/images")


def show_proc(session, path: str) -> tuple[list[str], list[tuple]]:
    parts = [part for part in path.strip().split("/") if part]
    if not path.startswith("/"):
        raise QueryError(1105, f"Proc path '{path}' must start with '/'")
    catalog = session.catalog
    if not parts:
        return ["name"], [(name,) for name in ROOT]
    head, rest = parts[0], parts[1:]
    if head == "dbs" and not rest:
        databases = sorted(list(catalog.dbs.values()), key=lambda d: d.id)
        tables = {db.id: list(catalog.tables_of(db.id)) for db in databases}
        sizes = data_sizes.table_sizes(session, [t for listed in tables.values() for t in listed])
        quota = data_sizes.readable_size(session.services.config["default_db_data_quota_bytes"])
        rows = []
        for db in databases:
            size = sum(sizes[table.id][1] for table in tables[db.id])
            rows.append(
                (db.id, db.name, len(tables[db.id]), data_sizes.readable_size(size), quota, "NULL")
            )
        return ["DbId", "DbName", "TableNum", "Size", "Quota", "LastConsistencyCheckTime"], rows
    if head == "dbs" and len(rest) == 1:
        db = catalog.dbs.get(_id(rest[0]))
        if db is None:
            raise QueryError(1105, f"Database {rest[0]} does not exist")
        rows = []
        for table in catalog.tables_of(db.id):
            rows.append(
                (
                    table.id,
                    table.name,
                    1 + len(table.rollups),
                    ", ".join(table.partition_columns),
                    len(table.partitions),
                    catalog.table_state(table.id),
                    table.engine.upper(),
                    str(table.key_model),
                )
            )
        return [
            "TableId",
            "TableName",
            "IndexNum",
            "PartitionColumnName",
            "PartitionNum",
            "State",
            "Type",
            "KeysType",
        ], rows
    if head == "dbs" and len(rest) in (2, 3):
        table = catalog.tables.get(_id(rest[1]))
        if table is None or table.db_id != _id(rest[0]):
            raise QueryError(1105, f"Table {rest[1]} does not exist in database {rest[0]}")
        if rest[2:] == ["index_schema"]:
            row = (table.id, table.name, table.schema_version, str(table.key_model))
            return ["IndexId", "IndexName", "SchemaVersion", "KeysType"], [row]
        if rest[2:]:
            raise QueryError(1105, f"Proc path '{path}' does not exist")
        rows = [
            (p.id, p.name, p.buckets, p.tablet_start, p.tablet_start + p.buckets - 1)
            for p in table.partitions
        ]
        return ["PartitionId", "PartitionName", "Buckets", "FirstTabletId", "LastTabletId"], rows
    if head == "frontends" and not rest:
        return session.services.frontends.table()
    if head == "backends" and not rest:  # as SHOW BACKENDS, as in Doris
        from fe.cluster.backends import COLUMNS

        monitor = session.services.backends
        return list(COLUMNS), monitor.rows() if monitor is not None else []
    if head == "journal" and not rest:
        status = session.services.journal.status()
        return ["Name", "Value"], [
            ("JournalId", str(catalog.journal_id)),
            ("RaftIndex", str(catalog.raft_index)),
            ("Term", str(status.term)),
            ("Leader", str(status.leader or "")),
            ("CommitIndex", str(status.commit_index)),
            ("FirstIndex", str(status.first_index)),
            ("LastIndex", str(status.last_index)),
            ("EntriesInJournal", str(status.entries_in_journal)),
        ]
    if head == "images" and not rest:
        rows = [
            (info.journal_id, info.path.name, info.size)
            for info in session.services.images.images()
        ]
        return ["JournalId", "File", "Size"], rows
    raise QueryError(1105, f"Proc path '{path}' does not exist")


def _id(text: str) -> int:
    if not text.isdigit():
        raise QueryError(1105, f"Expected a numeric id, not '{text}'")
    return int(text)
