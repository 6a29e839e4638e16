"""DDL on databases and tables: check a statement against the catalog and turn it into journal
operations. The leader allocates every id here; `apply` only records them.
"""

from __future__ import annotations

import dataclasses
import re
import time

from fe.mysql.errors import QueryError
from fe.security import privileges
from fe.sql import statements as st
from fe.statements import create_table_as_select
from metadata import ops
from metadata.records import Column, Database, KeyModel, Partition, Table
from metadata.types import ColumnType

DEFAULT_BUCKETS = 10
# Doris's short key: at most this many columns and bytes, which also bound the DUPLICATE KEY a
# CREATE TABLE without KEY gets.
SHORT_KEY_MAX_COLUMNS = 3
SHORT_KEY_MAX_BYTES = 36
HIDDEN_COLUMN_PREFIX = "__DORIS_"  # Doris's hidden columns (__DORIS_DELETE_SIGN__, ...)
AUTO_INCREMENT_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
DATETIME_TYPES = frozenset({"DATETIME", "DATETIMEV1", "DATETIMEV2", "TIMESTAMP"})
STRING_LIKE_TYPES = frozenset({"CHAR", "VARCHAR", "STRING"})
MAX_COLUMNS = 4096
MAX_PARTITIONS = 4096


def create_database(session, statement: st.CreateDatabase) -> list[ops.Op]:
    session.require(privileges.CREATE, statement.name)
    if session.catalog.database(statement.name) is not None:
        if statement.if_not_exists:
            return []
        raise QueryError(1007, f"Can't create database '{statement.name}'; database exists")
    database = Database(
        session.services.writer.allocate_ids(1), statement.name, statement.properties
    )
    return [ops.CreateDatabase(database)]


def drop_database(session, statement: st.DropDatabase) -> list[ops.Op]:
    session.require(privileges.DROP, statement.name)
    database = session.catalog.database(statement.name)
    if database is None:
        if statement.if_exists:
            return []
        raise QueryError(1008, f"Can't drop database '{statement.name}'; database doesn't exist")
    return drop_database_ops(database.id, statement.force)


def database_name(session, db_name: str | None) -> str:
    """The database a statement names, or the current one."""
    name = db_name or session.database
    if not name:
        raise QueryError(1046, "No database selected")
    return name


def resolve_database(session, db_name: str | None) -> Database:
    name = database_name(session, db_name)
    database = session.catalog.database(name)
    if database is None:
        raise QueryError(1049, f"Unknown database '{name}'")
    return database


def resolve_table(session, name: st.TableName) -> tuple[Database, Table]:
    database = resolve_database(session, name.db)
    table = session.catalog.table(database.id, name.name)
    if table is None:
        raise QueryError(1146, f"Table '{database.name}.{name.name}' doesn't exist")
    return database, table


def _new_table_database(session, statement: st.CreateTable | st.CreateTableLike) -> Database | None:
    """The database a new table goes into; None when IF NOT EXISTS finds it already there."""
    session.require(
        privileges.CREATE, database_name(session, statement.table.db), statement.table.name
    )
    database = resolve_database(session, statement.table.db)
    if session.catalog.table(database.id, statement.table.name) is not None:
        if statement.if_not_exists:
            return None
        raise QueryError(1050, f"Table '{statement.table.name}' already exists")
    return database


def create_table(session, statement: st.CreateTable) -> list[ops.Op]:
    database = _new_table_database(session, statement)
    if database is None:
        return []
    if statement.query is not None:
        statement = create_table_as_select.with_query_columns(session, statement)
    return [ops.CreateTable(build_table(session, database, statement))]


def create_table_like(session, statement: st.CreateTableLike) -> list[ops.Op]:
    source_db = database_name(session, statement.source.db)
    session.require(privileges.SELECT, source_db, statement.source.name)
    session.require(
        privileges.CREATE, database_name(session, statement.table.db), statement.table.name
    )
    _, source = resolve_table(session, statement.source)
    database = _new_table_database(session, statement)
    if database is None:
        return []
    partitions = source.partitions
    first = session.services.writer.allocate_ids(1 + sum(1 + p.buckets for p in partitions))
    next_id = first + 1
    copies = []
    for partition in partitions:
        name = statement.table.name if not source.partition_columns else partition.name
        copies.append(
            dataclasses.replace(partition, id=next_id, name=name, tablet_start=next_id + 1)
        )
        next_id += 1 + partition.buckets
    table = dataclasses.replace(
        source,
        id=first,
        db_id=database.id,
        name=statement.table.name,
        partitions=tuple(copies),
        schema_version=1,
    )
    return [ops.CreateTable(table)]


def build_table(session, database: Database, statement: st.CreateTable) -> Table:
    columns = list(statement.columns)
    if not columns:
        raise QueryError(1113, "A table must have at least 1 column")
    if len(columns) > MAX_COLUMNS:
        raise QueryError(1117, f"Too many columns (at most {MAX_COLUMNS})")
    names = [column.name.lower() for column in columns]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise QueryError(1060, f"Duplicate column name '{columns[index].name}'")
    by_name = {column.name.lower(): column for column in columns}
    for column in columns:
        check_new_column(column)
    if sum(column.auto_increment for column in columns) > 1:
        raise QueryError(1105, "there can be at most one auto increment column in OlapTable.")

    def known(column_names: tuple[str, ...], what: str) -> tuple[str, ...]:
        result = []
        for name in column_names:
            column = by_name.get(name.lower())
            if column is None:
                raise QueryError(1072, f"{what} column '{name}' doesn't exist in table")
            result.append(column.name)
        return tuple(result)

    check_replication(dict(statement.properties))
    key_model = statement.key_model
    key_columns = known(statement.key_columns, "Key")
    if key_model is None:
        key_model, key_columns = default_keys(columns)
    if tuple(c.name for c in columns[: len(key_columns)]) != key_columns:
        raise QueryError(
            1105,
            "Key columns should be an ordered prefix of the schema (the first columns, in order)",
        )
    for position, column in enumerate(columns):
        is_key = position < len(key_columns)
        if is_key and column.aggregation:
            raise QueryError(
                1105, f"Key column '{column.name}' should not have an aggregation type"
            )
        if not is_key and key_model == KeyModel.AGGREGATE and not column.aggregation:
            raise QueryError(
                1105,
                f"Value column '{column.name}' of an AGGREGATE KEY table needs an aggregation (SUM, MAX, MIN, REPLACE, ...)",
            )
        if key_model != KeyModel.AGGREGATE and column.aggregation:
            raise QueryError(
                1105,
                f"Column '{column.name}': aggregation types are only allowed in AGGREGATE KEY tables",
            )
        columns[position] = dataclasses.replace(column, is_key=is_key)
    distribution = known(statement.distribution_columns, "Distribution")  # () is RANDOM
    buckets = statement.buckets or DEFAULT_BUCKETS
    partition_columns = known(statement.partition_columns, "Partition")
    ranges = partition_ranges(statement.partitions, partition_columns, columns)
    if not partition_columns:
        ranges = [(statement.table.name, (), ())]
    first = session.services.writer.allocate_ids(1 + len(ranges) * (1 + buckets))
    next_id = first + 1
    partitions = []
    for name, lower, upper in ranges:
        partitions.append(Partition(next_id, name, lower, upper, next_id + 1, buckets))
        next_id += 1 + buckets
    return Table(
        id=first,
        db_id=database.id,
        name=statement.table.name,
        columns=tuple(columns),
        key_model=key_model,
        key_columns=key_columns,
        distribution_columns=distribution,
        buckets=buckets,
        partition_columns=partition_columns,
        partitions=tuple(partitions),
        properties=statement.properties,
        comment=statement.comment,
        engine=statement.engine,
    )


def check_new_column(column: Column) -> None:
    """What Doris refuses in a column definition of CREATE TABLE beyond its syntax."""
    if column.name.upper().startswith(HIDDEN_COLUMN_PREFIX):
        raise QueryError(
            1105,
            f"Disable to create table column with name start with {HIDDEN_COLUMN_PREFIX}: "
            f"{column.name}",
        )
    if column.auto_increment:
        if column.default is not None:
            raise QueryError(1105, "the auto increment column can't have default value.")
        if column.nullable:
            raise QueryError(1105, "the auto increment column should be NOT NULL.")
        if column.type.base not in AUTO_INCREMENT_TYPES:
            raise QueryError(1105, "the auto increment should be integer type.")
    if column.default == "CURRENT_TIMESTAMP" and column.type.base not in DATETIME_TYPES:
        raise QueryError(
            1105,
            "Types other than DATETIME and DATETIMEV2 cannot use current_timestamp as the "
            "default value",
        )


def check_replication(properties: dict[str, str]) -> None:
    """Doris's checks of replication_num and replication_allocation ("tag.location.NAME: N, ...")
    at CREATE TABLE: each a number of a Java short, at least one replica in all."""
    if "replication_num" in properties:
        if _java_short(properties["replication_num"]) <= 0:
            raise QueryError(1105, "Replication num should larger than 0. (suggested 3)")
    allocation = properties.get("replication_allocation")
    if allocation is None:
        return
    total = 0
    for location in allocation.split(","):
        parts = location.split(":")
        if len(parts) != 2:
            raise QueryError(1105, f"Invalid replication allocation property: {location}")
        tag = parts[0].strip()
        if not tag.startswith("tag.location"):
            raise QueryError(1105, f"Invalid replication allocation tag property: {location}")
        if not tag[len("tag.location") + 1 :]:
            raise QueryError(
                1105, f"Invalid replication allocation location tag property: {location}"
            )
        total += _java_short(parts[1].strip())
    if total <= 0:
        raise QueryError(1105, "Total replication num should larger than 0")


def _java_short(text: str) -> int:
    """A number as Java's Short.valueOf reads it, refused with Java's words as Doris passes them on."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise QueryError(1105, f'For input string: "{text}"')
    if not -32768 <= int(text) <= 32767:
        raise QueryError(1105, f'Value out of range. Value:"{text}" Radix:10')
    return int(text)


def default_keys(columns: list[Column]) -> tuple[KeyModel, tuple[str, ...]]:
    """The keys Doris gives a CREATE TABLE that names none: the columns before the first one with
    an aggregation (AGGREGATE KEY), else a DUPLICATE KEY of the leading columns that fit in the
    short key, stopping at a type no short key holds and after a VARCHAR."""
    if any(column.aggregation for column in columns):
        keys = []
        for column in columns:
            if column.aggregation:
                break
            keys.append(column.name)
        return KeyModel.AGGREGATE, tuple(keys)
    keys = []
    key_bytes = 0
    for column in columns:
        base = column.type.base
        key_bytes += column.type.index_size
        if len(keys) >= SHORT_KEY_MAX_COLUMNS or key_bytes > SHORT_KEY_MAX_BYTES:
            if not keys and base in STRING_LIKE_TYPES:
                keys.append(column.name)
            break
        if base in ("FLOAT", "DOUBLE", "STRING") or not column.type.index_size:
            break
        keys.append(column.name)
        if base == "VARCHAR":
            break
    if not keys:
        raise QueryError(
            1105,
            "The olap table first column could not be float, double, string or array, struct, "
            "map, please use decimal or varchar instead.",
        )
    return KeyModel.DUPLICATE, tuple(keys)


def _sort_key(values: tuple[str, ...], types: list[ColumnType]):
    key = []
    for value, column_type in zip(values, types, strict=False):
        if column_type.is_integer:
            try:
                key.append((0, int(value), ""))
                continue
            except ValueError:
                raise QueryError(
                    1105, f"Invalid partition value '{value}' for type {column_type.sql}"
                ) from None
        key.append((1, 0, value))
    return tuple(key)


def partition_ranges(definitions, partition_columns, columns: list[Column]):
    """(name, lower, upper) per partition, ordered, with the lower bounds of LESS THAN filled in."""
    if partition_columns and not definitions:
        return []
    if len(definitions) > MAX_PARTITIONS:
        raise QueryError(1105, f"Too many partitions (at most {MAX_PARTITIONS})")
    types = [next(c.type for c in columns if c.name == name) for name in partition_columns]
    seen = set()
    for definition in definitions:
        if definition.name.lower() in seen:
            raise QueryError(1517, f"Duplicate partition name {definition.name}")
        seen.add(definition.name.lower())
        for bound in (definition.lower, definition.upper):
            if bound and len(bound) != len(partition_columns):
                raise QueryError(
                    1105,
                    f"Partition {definition.name}: expected {len(partition_columns)} value(s) per bound",
                )

    def upper_key(definition):
        return (1,) if not definition.upper else (0, _sort_key(definition.upper, types))

    ordered = sorted(definitions, key=upper_key)
    result = []
    previous_upper: tuple[str, ...] = ()
    for definition in ordered:
        lower = definition.lower or previous_upper
        if (
            lower
            and definition.upper
            and _sort_key(lower, types) >= _sort_key(definition.upper, types)
        ):
            raise QueryError(1105, f"Partition {definition.name}: empty or overlapping range")
        if result and not result[-1][2]:
            raise QueryError(1105, "Only the last partition may be VALUES LESS THAN MAXVALUE")
        if (
            result
            and lower
            and result[-1][2]
            and _sort_key(lower, types) < _sort_key(result[-1][2], types)
        ):
            raise QueryError(
                1105, f"Partition {definition.name}: range overlaps partition {result[-1][0]}"
            )
        result.append((definition.name, lower, definition.upper))
        previous_upper = definition.upper
    return result


def drop_table(session, statement: st.DropTable) -> list[ops.Op]:
    return drop_tables(session, statement)


def alter_table(session, statement: st.AlterTable) -> list[ops.Op]:
    session.require(
        privileges.ALTER, database_name(session, statement.table.db), statement.table.name
    )
    database, table = resolve_table(session, statement.table)
    original = table
    for action in statement.actions:
        table = ALTER_ACTIONS[type(action)](session, database, table, action)
    recycled = recycled_partitions(original, table, statement.actions)
    return [*recycled, ops.ReplaceTable(table)]


def _place(columns: list[Column], column: Column, after: str | None, first: bool) -> list[Column]:
    if first:
        return [column, *columns]
    if after is None:
        return [*columns, column]
    for index, existing in enumerate(columns):
        if existing.name.lower() == after.lower():
            return [*columns[: index + 1], column, *columns[index + 1 :]]
    raise QueryError(1054, f"Unknown column '{after}' in 'table'")


def _add_column(session, database, table: Table, action: st.AddColumn) -> Table:
    if table.column(action.column.name) is not None:
        raise QueryError(1060, f"Duplicate column name '{action.column.name}'")
    column = action.column
    if table.key_model == KeyModel.AGGREGATE and not column.aggregation:
        column = dataclasses.replace(column, is_key=True)  # as in Doris: no aggregation, a key
    if table.key_model != KeyModel.AGGREGATE and column.aggregation:
        raise QueryError(1105, "Aggregation types are only allowed in AGGREGATE KEY tables")
    if column.is_key and column.aggregation:
        raise QueryError(1105, f"Key column '{column.name}' should not have an aggregation type")
    after, first = action.after, action.first
    if column.is_key and after is None and not first:
        after = table.key_columns[-1] if table.key_columns else None
        first = not table.key_columns
    columns = _place(list(table.columns), column, after, first)
    position = columns.index(column)
    if column.is_key and not all(c.is_key for c in columns[:position]):
        raise QueryError(1105, "A key column must be placed among the key columns")
    if not column.is_key and any(c.is_key for c in columns[position + 1 :]):
        raise QueryError(1105, "A value column cannot be placed before key columns")
    key_columns = tuple(c.name for c in columns if c.is_key)
    return dataclasses.replace(table, columns=tuple(columns), key_columns=key_columns)


def _existing(table: Table, name: str) -> Column:
    column = table.column(name)
    if column is None:
        raise QueryError(1054, f"Unknown column '{name}' in '{table.name}'")
    return column


def _drop_column(session, database, table: Table, action: st.DropColumn) -> Table:
    column = table.column(action.name)
    if column is None:
        raise QueryError(1091, f"Can't DROP '{action.name}'; check that column/key exists")
    if column.is_key:
        _check_key_column_drop(table, column)
    if column.name in table.distribution_columns or column.name in table.partition_columns:
        raise QueryError(1105, f"Can not drop distribution or partition column '{column.name}'")
    if len(table.columns) == 1:
        raise QueryError(
            1090, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead"
        )
    return dataclasses.replace(
        table,
        columns=tuple(c for c in table.columns if c is not column),
        key_columns=tuple(name for name in table.key_columns if name != column.name),
    )


def _check_key_column_drop(table: Table, column: Column) -> None:
    """Doris's rules: a UNIQUE KEY table keeps its keys; an AGGREGATE KEY table keeps them while
    a value column is REPLACE'd; a DUPLICATE KEY table may drop any key but its last."""
    if table.key_model == KeyModel.UNIQUE:
        raise QueryError(1105, "Can not drop key column in Unique data model table")
    replaced = any(
        c.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in table.columns if not c.is_key
    )
    if table.key_model == KeyModel.AGGREGATE and replaced:
        raise QueryError(
            1105,
            "Can not drop key column when table has value column with REPLACE aggregation method",
        )
    if len(table.key_columns) == 1:
        raise QueryError(1105, f"Can not drop key column '{column.name}': it is the last one")


def _modify_column(session, database, table: Table, action: st.ModifyColumn) -> Table:
    old = _existing(table, action.column.name)
    column = dataclasses.replace(action.column, name=old.name, is_key=old.is_key)
    if old.is_key:
        column = dataclasses.replace(column, nullable=False)
    if (
        old.name in table.distribution_columns or old.name in table.partition_columns
    ) and column.type != old.type:
        raise QueryError(
            1105, f"Can not change the type of distribution or partition column '{old.name}'"
        )
    if table.key_model == KeyModel.AGGREGATE and not column.is_key and not column.aggregation:
        column = dataclasses.replace(column, aggregation=old.aggregation)
    columns = [c for c in table.columns if c is not old]
    if action.after is None and not action.first:
        columns = [column if c is old else c for c in table.columns]
    else:
        columns = _place(columns, column, action.after, action.first)
    return dataclasses.replace(table, columns=tuple(columns))


def _rename_column(session, database, table: Table, action: st.RenameColumn) -> Table:
    old = _existing(table, action.old)
    if table.column(action.new) is not None:
        raise QueryError(1060, f"Duplicate column name '{action.new}'")

    def renamed(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(action.new if name == old.name else name for name in names)

    return dataclasses.replace(
        table,
        columns=tuple(
            dataclasses.replace(c, name=action.new) if c is old else c for c in table.columns
        ),
        key_columns=renamed(table.key_columns),
        distribution_columns=renamed(table.distribution_columns),
        partition_columns=renamed(table.partition_columns),
    )


def _rename_table(session, database, table: Table, action: st.RenameTable) -> Table:
    session.require(privileges.CREATE, database.name, action.new_name)
    if session.catalog.table(database.id, action.new_name) is not None:
        raise QueryError(1050, f"Table '{action.new_name}' already exists")
    partitions = table.partitions
    if not table.partition_columns:
        partitions = tuple(dataclasses.replace(p, name=action.new_name) for p in partitions)
    return dataclasses.replace(table, name=action.new_name, partitions=partitions)


def _add_partition(session, database, table: Table, action: st.AddPartition) -> Table:
    if not table.partition_columns:
        raise QueryError(1505, "Table is not partitioned: ADD PARTITION needs PARTITION BY RANGE")
    definitions = [st.PartitionDef(p.name, p.lower, p.upper) for p in table.partitions] + [
        action.partition
    ]
    partition_ranges(definitions, table.partition_columns, list(table.columns))
    buckets = action.buckets or table.buckets
    first = session.services.writer.allocate_ids(1 + buckets)
    bounds = {
        name: (lower, upper)
        for name, lower, upper in partition_ranges(
            definitions, table.partition_columns, list(table.columns)
        )
    }
    lower, upper = bounds[action.partition.name]
    partition = Partition(first, action.partition.name, lower, upper, first + 1, buckets)
    return dataclasses.replace(table, partitions=(*table.partitions, partition))


def _drop_partition(session, database, table: Table, action: st.DropPartition) -> Table:
    kept = tuple(p for p in table.partitions if p.name.lower() != action.name.lower())
    if len(kept) == len(table.partitions):
        if action.if_exists:
            return table
        raise QueryError(
            1507, f"Error in list of partitions to DROP: partition {action.name} does not exist"
        )
    if not table.partition_columns:
        raise QueryError(1505, "Table is not partitioned")
    return dataclasses.replace(table, partitions=kept)


def _set_properties(session, database, table: Table, action: st.SetTableProperties) -> Table:
    merged = dict(table.properties)
    merged.update(action.properties)
    return dataclasses.replace(table, properties=tuple(sorted(merged.items())))


ALTER_ACTIONS = {
    st.AddColumn: _add_column,
    st.DropColumn: _drop_column,
    st.ModifyColumn: _modify_column,
    st.RenameColumn: _rename_column,
    st.RenameTable: _rename_table,
    st.AddPartition: _add_partition,
    st.DropPartition: _drop_partition,
    st.SetTableProperties: _set_properties,
}


# DROP without FORCE: into the recycle bin (fe/statements/recycle_bin.py brings it back).


def drop_time_ms() -> int:
    """The leader's clock at the drop: the bin's entry expires catalog_trash_expire_second later."""
    return int(time.time() * 1000)


def drop_database_ops(database_id: int, force: bool) -> list[ops.Op]:
    if force:
        return [ops.DropDatabase(database_id)]
    return [ops.RecycleDatabase(database_id, drop_time_ms())]


def drop_tables(session, statement: st.DropTable) -> list[ops.Op]:
    """DROP TABLE [IF EXISTS] a, b, db.c [FORCE]: all or nothing, as in MySQL 8."""
    for name in statement.tables:
        session.require(privileges.DROP, database_name(session, name.db), name.name)
    found: list[Table] = []
    missing: list[str] = []
    for name in statement.tables:
        database = resolve_database(session, name.db)
        table = session.catalog.table(database.id, name.name)
        if table is None:
            missing.append(f"{database.name}.{name.name}")
        elif table.id in {t.id for t in found}:
            raise QueryError(1066, f"Not unique table/alias: '{name.name}'")
        else:
            found.append(table)
    if missing and not statement.if_exists:
        raise QueryError(1051, f"Unknown table '{','.join(missing)}'")
    if statement.force:
        return [ops.DropTable(table.id) for table in found]
    now = drop_time_ms()
    return [ops.RecycleTable(table.id, now) for table in found]


def recycled_partitions(original: Table, altered: Table, actions) -> list[ops.Op]:
    """ALTER TABLE ... DROP PARTITION p (without FORCE): p goes to the recycle bin."""
    kept = {p.id for p in altered.partitions}
    names = {a.name.lower() for a in actions if isinstance(a, st.DropPartition) and not a.force}
    now = drop_time_ms()
    return [
        ops.RecyclePartition(original.id, p.id, now)
        for p in original.partitions
        if p.name.lower() in names and p.id not in kept
    ]
