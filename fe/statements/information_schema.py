"""information_schema tables built from the catalog, as Arrow tables for DuckDB to query.

Only what the session's user may see is included, as in MySQL.
"""

from __future__ import annotations

import pyarrow as pa

from fe.security import privileges
from fe.sql.parser import INTERNAL_CATALOG as CATALOG_NAME
from metadata.records import Column, Table
from metadata.types import STRING_LENGTH

INFORMATION_SCHEMA = "information_schema"


def column_key(table: Table, column: Column) -> str:
    if column.name in table.key_columns:
        return (
            "UNI"
            if table.key_model == "UNIQUE"
            else "DUP"
            if table.key_model == "DUPLICATE"
            else "AGG"
        )
    return ""


def visible_tables(session) -> list[tuple[str, Table]]:
    catalog = session.catalog
    user = session.user
    result = []
    for db in sorted(list(catalog.dbs.values()), key=lambda d: d.name):
        if not privileges.has_any(user, db.name):
            continue
        for table in catalog.tables_of(db.id):
            if privileges.has_any(user, db.name, table.name):
                result.append((db.name, table))
    return result


def visible_databases(session) -> list[str]:
    names = [
        db.name
        for db in list(session.catalog.dbs.values())
        if privileges.has_any(session.user, db.name)
    ]
    return sorted([INFORMATION_SCHEMA, *names])


def build_table(name: str, session) -> pa.Table | None:
    builder = BUILDERS.get(name.lower())
    return builder(session) if builder else None


def _schemata(session) -> pa.Table:
    names = visible_databases(session)
    return pa.table(
        {
            "CATALOG_NAME": [CATALOG_NAME] * len(names),
            "SCHEMA_NAME": names,
            "DEFAULT_CHARACTER_SET_NAME": ["utf8mb4"] * len(names),
            "DEFAULT_COLLATION_NAME": ["utf8mb4_0900_bin"] * len(names),
            "SQL_PATH": pa.array([None] * len(names), pa.string()),
            "DEFAULT_ENCRYPTION": ["NO"] * len(names),
        }
    )


def _tables(session) -> pa.Table:
    rows = visible_tables(session)
    count = len(rows)
    return pa.table(
        {
            "TABLE_CATALOG": [CATALOG_NAME] * count,
            "TABLE_SCHEMA": [db for db, _ in rows],
            "TABLE_NAME": [table.name for _, table in rows],
            "TABLE_TYPE": ["BASE TABLE"] * count,
            "ENGINE": [table.engine.upper() for _, table in rows],
            "VERSION": pa.array([10] * count, pa.int64()),
            "ROW_FORMAT": ["Dynamic"] * count,
            "TABLE_ROWS": pa.array([0] * count, pa.int64()),
            "AVG_ROW_LENGTH": pa.array([0] * count, pa.int64()),
            "DATA_LENGTH": pa.array([0] * count, pa.int64()),
            "MAX_DATA_LENGTH": pa.array([0] * count, pa.int64()),
            "INDEX_LENGTH": pa.array([0] * count, pa.int64()),
            "DATA_FREE": pa.array([0] * count, pa.int64()),
            "AUTO_INCREMENT": pa.array([None] * count, pa.int64()),
            "CREATE_TIME": pa.array([None] * count, pa.timestamp("s")),
            "UPDATE_TIME": pa.array([None] * count, pa.timestamp("s")),
            "CHECK_TIME": pa.array([None] * count, pa.timestamp("s")),
            "TABLE_COLLATION": ["utf8mb4_0900_bin"] * count,
            "CHECKSUM": pa.array([None] * count, pa.int64()),
            "CREATE_OPTIONS": [""] * count,
            "TABLE_COMMENT": [table.comment for _, table in rows],
        }
    )


def _columns(session) -> pa.Table:
    data: dict[str, list] = {
        name: []
        for name in (
            "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION",
            "COLUMN_DEFAULT", "IS_NULLABLE", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH",
            "CHARACTER_OCTET_LENGTH", "NUMERIC_PRECISION", "NUMERIC_SCALE", "DATETIME_PRECISION",
            "CHARACTER_SET_NAME", "COLLATION_NAME", "COLUMN_TYPE", "COLUMN_KEY", "EXTRA",
            "PRIVILEGES", "COLUMN_COMMENT", "GENERATION_EXPRESSION",
        )
    }  # fmt: skip
    for db, table in visible_tables(session):
        for position, column in enumerate(table.columns, start=1):
            length = column.type.character_length
            character = column.type.is_character
            data["TABLE_CATALOG"].append(CATALOG_NAME)
            data["TABLE_SCHEMA"].append(db)
            data["TABLE_NAME"].append(table.name)
            data["COLUMN_NAME"].append(column.name)
            data["ORDINAL_POSITION"].append(position)
            data["COLUMN_DEFAULT"].append(unquote_default(column.default))
            data["IS_NULLABLE"].append("YES" if column.nullable else "NO")
            data["DATA_TYPE"].append(column.type.data_type)
            data["CHARACTER_MAXIMUM_LENGTH"].append(length)
            data["CHARACTER_OCTET_LENGTH"].append(
                length * 4 if length and length < STRING_LENGTH else length
            )
            data["NUMERIC_PRECISION"].append(column.type.numeric_precision)
            data["NUMERIC_SCALE"].append(column.type.numeric_scale)
            data["DATETIME_PRECISION"].append(None)
            data["CHARACTER_SET_NAME"].append("utf8mb4" if character else None)
            data["COLLATION_NAME"].append("utf8mb4_0900_bin" if character else None)
            data["COLUMN_TYPE"].append(column.type.mysql)
            data["COLUMN_KEY"].append(column_key(table, column))
            data["EXTRA"].append("auto_increment" if column.auto_increment else "")
            data["PRIVILEGES"].append("select,insert,update,references")
            data["COLUMN_COMMENT"].append(column.comment)
            data["GENERATION_EXPRESSION"].append("")
    types = {
        "ORDINAL_POSITION": pa.int64(),
        "CHARACTER_MAXIMUM_LENGTH": pa.int64(),
        "CHARACTER_OCTET_LENGTH": pa.int64(),
        "NUMERIC_PRECISION": pa.int64(),
        "NUMERIC_SCALE": pa.int64(),
        "DATETIME_PRECISION": pa.int64(),
    }
    return pa.table(
        {name: pa.array(values, types.get(name, pa.string())) for name, values in data.items()}
    )


def unquote_default(default: str | None) -> str | None:
    if default is None or default == "NULL":
        return None
    if default.startswith("'") and default.endswith("'"):
        return default[1:-1].replace("''", "'")
    return default


def _empty(*names: str):
    return lambda session: pa.table({name: pa.array([], pa.string()) for name in names})


def _engines(session) -> pa.Table:
    return pa.table(
        {
            "ENGINE": ["OLAP"],
            "SUPPORT": ["DEFAULT"],
            "COMMENT": ["Quire's table engine"],
            "TRANSACTIONS": ["YES"],
            "XA": ["NO"],
            "SAVEPOINTS": ["NO"],
        }
    )


def _character_sets(session) -> pa.Table:
    return pa.table(
        {
            "CHARACTER_SET_NAME": ["utf8mb4", "utf8mb3", "binary"],
            "DEFAULT_COLLATE_NAME": ["utf8mb4_0900_bin", "utf8mb3_general_ci", "binary"],
            "DESCRIPTION": ["UTF-8 Unicode", "UTF-8 Unicode", "Binary pseudo charset"],
            "MAXLEN": pa.array([4, 3, 1], pa.int64()),
        }
    )


def _collations(session) -> pa.Table:
    return pa.table(
        {
            "COLLATION_NAME": [
                "utf8mb4_0900_bin",
                "utf8mb4_general_ci",
                "utf8mb3_general_ci",
                "binary",
            ],
            "CHARACTER_SET_NAME": ["utf8mb4", "utf8mb4", "utf8mb3", "binary"],
            "ID": pa.array([309, 45, 33, 63], pa.int64()),
            "IS_DEFAULT": ["Yes", "", "Yes", "Yes"],
            "IS_COMPILED": ["Yes"] * 4,
            "SORTLEN": pa.array([1] * 4, pa.int64()),
        }
    )


BUILDERS = {
    "schemata": _schemata,
    "tables": _tables,
    "columns": _columns,
    "engines": _engines,
    "character_sets": _character_sets,
    "collations": _collations,
    "views": _empty(
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "VIEW_DEFINITION",
        "CHECK_OPTION",
        "IS_UPDATABLE",
        "DEFINER",
        "SECURITY_TYPE",
        "CHARACTER_SET_CLIENT",
        "COLLATION_CONNECTION",
    ),
    "statistics": _empty(
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "NON_UNIQUE",
        "INDEX_SCHEMA",
        "INDEX_NAME",
        "SEQ_IN_INDEX",
        "COLUMN_NAME",
        "COLLATION",
        "CARDINALITY",
        "SUB_PART",
        "PACKED",
        "NULLABLE",
        "INDEX_TYPE",
        "COMMENT",
        "INDEX_COMMENT",
    ),
    "key_column_usage": _empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "TABLE_CATALOG",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "COLUMN_NAME",
        "ORDINAL_POSITION",
        "POSITION_IN_UNIQUE_CONSTRAINT",
        "REFERENCED_TABLE_SCHEMA",
        "REFERENCED_TABLE_NAME",
        "REFERENCED_COLUMN_NAME",
    ),
    "table_constraints": _empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "TABLE_SCHEMA",
        "TABLE_NAME",
        "CONSTRAINT_TYPE",
    ),
    "referential_constraints": _empty(
        "CONSTRAINT_CATALOG",
        "CONSTRAINT_SCHEMA",
        "CONSTRAINT_NAME",
        "UNIQUE_CONSTRAINT_CATALOG",
        "UNIQUE_CONSTRAINT_SCHEMA",
        "UNIQUE_CONSTRAINT_NAME",
        "MATCH_OPTION",
        "UPDATE_RULE",
        "DELETE_RULE",
        "TABLE_NAME",
        "REFERENCED_TABLE_NAME",
    ),
    "routines": _empty(
        "SPECIFIC_NAME",
        "ROUTINE_CATALOG",
        "ROUTINE_SCHEMA",
        "ROUTINE_NAME",
        "ROUTINE_TYPE",
        "DATA_TYPE",
        "ROUTINE_DEFINITION",
    ),
    "triggers": _empty(
        "TRIGGER_CATALOG",
        "TRIGGER_SCHEMA",
        "TRIGGER_NAME",
        "EVENT_MANIPULATION",
        "EVENT_OBJECT_SCHEMA",
        "EVENT_OBJECT_TABLE",
        "ACTION_STATEMENT",
    ),
    "partitions": _empty("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "PARTITION_NAME"),
    "events": _empty("EVENT_CATALOG", "EVENT_SCHEMA", "EVENT_NAME"),
}
