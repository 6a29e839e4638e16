"""Schema change as Doris does it: ALTER TABLE's column clauses (ADD COLUMN, ADD COLUMN (...),
DROP, MODIFY, RENAME, ORDER BY, each on the base index or a rollup), rollups (CREATE TABLE's
ROLLUP (...), ADD ROLLUP, DROP ROLLUP) and which clauses one ALTER TABLE may combine.

Each function takes the table as the clauses before it left it and returns the table after it.
"""

from __future__ import annotations

import dataclasses
import datetime

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from fe.statements import cluster_keys, generated_columns
from metadata.catalog import tablet_holders
from metadata.records import SEQUENCE_COLUMN_PROPERTY, Column, KeyModel, Partition, Rollup, Table

# Doris's short key: at most this many leading columns of a DUPLICATE rollup without DUPLICATE KEY.
SHORT_KEY_MAX_COLUMNS = 3
FLOATING_TYPES = {"FLOAT", "DOUBLE"}
VARIABLE_LENGTH_TYPES = {"VARCHAR", "STRING", "TEXT"}
REPLACE_AGGREGATIONS = {"REPLACE", "REPLACE_IF_NOT_NULL"}

# Doris's AlterOpType of each clause: clauses of one ALTER TABLE must share one of BATCHED.
SCHEMA_CHANGE = "SCHEMA_CHANGE"
ADD_ROLLUP = "ADD_ROLLUP"
DROP_ROLLUP = "DROP_ROLLUP"
OPERATION_TYPES = {
    st.AddColumn: SCHEMA_CHANGE,
    st.DropColumn: SCHEMA_CHANGE,
    st.ModifyColumn: SCHEMA_CHANGE,
    st.ReorderColumns: SCHEMA_CHANGE,
    st.AddRollup: ADD_ROLLUP,
    st.DropRollup: DROP_ROLLUP,
    st.RenameColumn: "RENAME",
    st.RenameTable: "RENAME",
    st.AddPartition: "ADD_PARTITION",
    st.DropPartition: "DROP_PARTITION",
    st.SetTableProperties: "MODIFY_TABLE_PROPERTY",
    st.ModifyTableComment: "MODIFY_TABLE_COMMENT",
    st.RenamePartition: "RENAME",
    st.RenameRollup: "RENAME",
    st.AddIndex: "INDEX_CHANGE",
    st.AddMysqlKey: "INDEX_CHANGE",
    st.DropIndexClause: "INDEX_CHANGE",
}
BATCHED = {SCHEMA_CHANGE, ADD_ROLLUP, DROP_ROLLUP, "DROP_PARTITION", "INDEX_CHANGE"}


def operation_type(action) -> str:
    return OPERATION_TYPES.get(type(action), type(action).__name__.upper())


def check_conflicts(actions) -> None:
    """Doris's rule: one kind of clause per ALTER TABLE, several only of the batched kinds."""
    seen: list[str] = []
    for action in actions:
        kind = operation_type(action)
        for earlier in seen:
            if earlier != kind or kind not in BATCHED:
                raise QueryError(1105, f"Alter operation {kind} conflicts with operation {earlier}")
        if kind not in seen:
            seen.append(kind)


def _rollup(table: Table, name: str) -> Rollup:
    for rollup in table.rollups:
        if rollup.name.lower() == name.lower():
            return rollup
    raise QueryError(1105, f"Index[{name}] does not exist in table[{table.name}]")


def _target_rollup(table: Table, name: str | None) -> Rollup | None:
    """The rollup a clause's TO/FROM names; None for the base index (named as the table)."""
    if name is None or name == table.name:
        return None
    return _rollup(table, name)


def _with_rollup(table: Table, rollup: Rollup) -> Table:
    rollups = tuple(rollup if r.id == rollup.id else r for r in table.rollups)
    return dataclasses.replace(table, rollups=rollups)


# Column clauses.


def _place(columns: list[Column], column: Column, after: str | None, first: bool) -> list[Column]:
    if first:
        return [column, *columns]
    if after is None:
        return [*columns, column]
    for index, existing in enumerate(columns):
        if existing.name.lower() == after.lower():
            return [*columns[: index + 1], column, *columns[index + 1 :]]
    raise QueryError(1054, f"Unknown column '{after}' in 'table'")


def _with_backfill_now(column: Column) -> Column:
    """A column added with DEFAULT CURRENT_TIMESTAMP: the rows already there read the time of the
    ALTER, as in MySQL (the catalog's apply reads no clock, so the time is fixed here)."""
    default = (column.default or "").upper()
    if not (default.startswith("CURRENT_TIMESTAMP") or default.startswith("NOW")):
        return column
    digits = column.type.arguments[0] if column.type.arguments else 0  # DATETIME(digits)
    now = datetime.datetime.now()
    cut = 10 ** (6 - digits)
    now = now.replace(microsecond=now.microsecond // cut * cut)
    return dataclasses.replace(column, backfill=f"'{now.isoformat(sep=' ')}'")


def add_column(session, database, table: Table, action: st.AddColumn) -> Table:
    if table.column(action.column.name) is not None:
        raise QueryError(1060, f"Duplicate column name '{action.column.name}'")
    rollup = _target_rollup(table, action.rollup)
    column = action.column
    if table.key_model == KeyModel.AGGREGATE:
        if column.is_key and column.aggregation:
            raise QueryError(
                1105, f"Can not assign aggregation method on key column: {column.name}"
            )
        if not column.aggregation:
            column = dataclasses.replace(column, is_key=True)  # as in Doris: no aggregation, a key
    elif column.aggregation:
        model = "Unique" if table.key_model == KeyModel.UNIQUE else "Duplicate"
        raise QueryError(
            1105,
            f"Can not assign aggregation method on column in {model} data model table: "
            f"{column.name}",
        )
    if column.is_key:
        column = dataclasses.replace(column, nullable=False)
    column = _with_backfill_now(column)
    after, first = action.after, action.first
    if column.is_key and after is None and not first:
        after = table.key_columns[-1] if table.key_columns else None
        first = not table.key_columns
    columns = _place(list(table.columns), column, after, first)
    position = columns.index(column)
    if column.is_key and not all(c.is_key for c in columns[:position]):
        raise QueryError(1105, f"Cannot add key column {column.name} after value column")
    if not column.is_key and any(c.is_key for c in columns[position + 1 :]):
        raise QueryError(1105, f"Cannot add value column {column.name} before key column")
    key_columns = tuple(c.name for c in columns if c.is_key)
    table = dataclasses.replace(table, columns=tuple(columns), key_columns=key_columns)
    if rollup is None:
        return table
    if column.is_key:
        keys = (*rollup.key_columns, column.name)
        values = rollup.columns[len(rollup.key_columns) :]
        rollup = dataclasses.replace(rollup, columns=(*keys, *values), key_columns=keys)
    else:
        rollup = dataclasses.replace(rollup, columns=(*rollup.columns, column.name))
    return _with_rollup(table, rollup)


def _existing(table: Table, name: str) -> Column:
    column = table.column(name)
    if column is None:
        raise QueryError(1054, f"Unknown column '{name}' in '{table.name}'")
    return column


def drop_column(session, database, table: Table, action: st.DropColumn) -> Table:
    column = table.column(action.name)
    if column is None:
        raise QueryError(1091, f"Can't DROP '{action.name}'; check that column/key exists")
    rollup = _target_rollup(table, action.rollup)
    if rollup is not None:
        return _with_rollup(table, _without_column(table, rollup, column.name))
    if column.is_key:
        _check_key_column_drop(table, column)
    if column.name in table.distribution_columns or column.name in table.partition_columns:
        raise QueryError(1105, f"Can not drop distribution or partition column '{column.name}'")
    if column.name == table.sequence_column:
        raise QueryError(
            1105,
            f"Can not drop sequence mapping column[{column.name}] in Unique data model "
            f"table[{table.name}]",
        )
    if len(table.columns) == 1:
        raise QueryError(
            1090, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead"
        )
    generated_columns.check_unread(table, column.name)
    cluster_keys.check_dropped(table, column.name)
    rollups = tuple(_without_column(table, r, column.name) for r in table.rollups)
    return dataclasses.replace(
        generated_columns.without(table, column.name),
        columns=tuple(c for c in table.columns if c is not column),
        key_columns=tuple(name for name in table.key_columns if name != column.name),
        rollups=rollups,
    )


def _without_column(table: Table, rollup: Rollup, name: str) -> Rollup:
    """The rollup without the column, as Doris drops a base column from every index holding it;
    refused where the rollup would keep no column or no key."""
    if name not in rollup.columns:
        return rollup
    columns = tuple(c for c in rollup.columns if c != name)
    keys = tuple(c for c in rollup.key_columns if c != name)
    if not columns or not keys:
        raise QueryError(
            1105, f"Can not drop column {name}: it is the last key of rollup {rollup.name}"
        )
    return dataclasses.replace(rollup, columns=columns, key_columns=keys)


def _check_key_column_drop(table: Table, column: Column) -> None:
    """Doris's rules: a UNIQUE KEY table keeps its keys; an AGGREGATE KEY table keeps them while
    a value column is REPLACE'd; a DUPLICATE KEY table may drop any key but its last."""
    if table.key_model == KeyModel.UNIQUE:
        raise QueryError(1105, "Can not drop key column in Unique data model table")
    replaced = any(c.aggregation in REPLACE_AGGREGATIONS for c in table.columns if not c.is_key)
    if table.key_model == KeyModel.AGGREGATE and replaced:
        raise QueryError(
            1105,
            "Can not drop key column when table has value column with REPLACE aggregation method",
        )
    if len(table.key_columns) == 1:
        raise QueryError(1105, f"No key column left. index[{table.name}]")


def modify_column(session, database, table: Table, action: st.ModifyColumn) -> Table:
    old = _existing(table, action.column.name)
    if generated_columns.is_generated(table, old):
        raise QueryError(1105, "Not supporting alter table modify generated columns.")
    rollup = _target_rollup(table, action.rollup)
    if rollup is not None and old.name not in rollup.columns:
        raise QueryError(1105, f"Column[{old.name}] does not exist in index[{rollup.name}]")
    column = dataclasses.replace(
        action.column, name=old.name, is_key=old.is_key, id=old.id, backfill=old.backfill
    )
    if old.is_key:
        column = dataclasses.replace(column, nullable=False)
    if (
        old.name in table.distribution_columns or old.name in table.partition_columns
    ) and column.type != old.type:
        raise QueryError(
            1105, f"Can not change the type of distribution or partition column '{old.name}'"
        )
    if old.name == table.sequence_column and column.type != old.type:
        raise QueryError(1105, f"Can not change the type of sequence mapping column[{old.name}]")
    if table.key_model == KeyModel.AGGREGATE and not column.is_key and not column.aggregation:
        column = dataclasses.replace(column, aggregation=old.aggregation)
    columns = [c for c in table.columns if c is not old]
    if action.after is None and not action.first:
        columns = [column if c is old else c for c in table.columns]
    else:
        columns = _place(columns, column, action.after, action.first)
    _check_keys_first(columns, [c.name for c in columns])
    return dataclasses.replace(table, columns=tuple(columns))


def _check_keys_first(columns: list[Column], names: list[str]) -> None:
    seen_value = False
    for column, name in zip(columns, names, strict=True):
        if column.is_key and seen_value:
            raise QueryError(1105, f"Invalid column order. key should before all values: {name}")
        seen_value = seen_value or not column.is_key


def rename_column(session, database, table: Table, action: st.RenameColumn) -> Table:
    old = _existing(table, action.old)
    if table.column(action.new) is not None:
        raise QueryError(1060, f"Duplicate column name '{action.new}'")
    generated_columns.check_unread(table, old.name)  # the expressions name it
    table = generated_columns.renamed(table, old.name, action.new)
    table = cluster_keys.renamed(table, old.name, action.new)

    def renamed(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(action.new if name == old.name else name for name in names)

    return dataclasses.replace(
        table,
        columns=tuple(
            dataclasses.replace(c, name=action.new) if c is old else c for c in table.columns
        ),
        properties=tuple(
            (key, action.new if key == SEQUENCE_COLUMN_PROPERTY and value == old.name else value)
            for key, value in table.properties
        ),
        key_columns=renamed(table.key_columns),
        distribution_columns=renamed(table.distribution_columns),
        partition_columns=renamed(table.partition_columns),
        rollups=tuple(
            dataclasses.replace(r, columns=renamed(r.columns), key_columns=renamed(r.key_columns))
            for r in table.rollups
        ),
    )


def reorder_columns(session, database, table: Table, action: st.ReorderColumns) -> Table:
    """ORDER BY (...): every column of the index once, its keys before its values."""
    rollup = _target_rollup(table, action.rollup)
    index_columns = rollup.columns if rollup is not None else tuple(c.name for c in table.columns)
    by_name = {name.lower(): name for name in index_columns}
    ordered: list[str] = []
    for name in action.columns:
        found = by_name.get(name.lower())
        if found is None:
            raise QueryError(1105, f"Column[{name}] not exists")
        if found in ordered:
            raise QueryError(1105, f"Duplicated column[{name}]")
        ordered.append(found)
    if len(ordered) != len(index_columns):
        raise QueryError(1105, "Reorder stmt should contains all columns")
    if rollup is not None:
        keys = set(rollup.key_columns)
        flags = [dataclasses.replace(table.column(n), is_key=n in keys) for n in ordered]
        _check_keys_first(flags, ordered)
        rollup = dataclasses.replace(
            rollup, columns=tuple(ordered), key_columns=tuple(n for n in ordered if n in keys)
        )
        return _with_rollup(table, rollup)
    columns = [table.column(name) for name in ordered]
    _check_keys_first(columns, ordered)
    return dataclasses.replace(
        table,
        columns=tuple(columns),
        key_columns=tuple(c.name for c in columns if c.is_key),
    )


# Rollups.


def rollup_columns(table: Table, action: st.AddRollup) -> Rollup:
    """The rollup ADD ROLLUP / ROLLUP (...) describes, by Doris's rules for the table's key
    model (its id is 0 until tablets are given to it)."""
    if action.name.lower() == table.name.lower() or any(
        r.name.lower() == action.name.lower() for r in table.rollups
    ):
        raise QueryError(1105, f"Rollup index[{action.name}] already exists")
    base_columns = tuple(c.name for c in table.columns)
    if action.base is not None and action.base != table.name:
        base_columns = _rollup(table, action.base).columns
    names = []
    for name in action.columns:
        match = next((c for c in base_columns if c.lower() == name.lower()), None)
        if match is None:
            where = " in base index" if table.key_model == KeyModel.DUPLICATE else ""
            raise QueryError(1105, f"Column[{name}] does not exist{where}")
        names.append(match)
    if len(set(names)) != len(names):
        raise QueryError(1105, f"Duplicate column name in rollup {action.name}")
    if table.key_model == KeyModel.DUPLICATE:
        keys = _duplicate_rollup_keys(table, action, names)
    else:
        keys = _aggregate_rollup_keys(table, names)
    return Rollup(0, action.name, tuple(names), keys)


def _aggregate_rollup_keys(table: Table, names: list[str]) -> tuple[str, ...]:
    keys: list[str] = []
    seen_value = replaced = False
    for name in names:
        column = table.column(name)
        if column.is_key and seen_value:
            raise QueryError(1105, "Invalid column order. value should be after key")
        if column.is_key:
            keys.append(name)
        else:
            seen_value = True
            replaced = replaced or column.aggregation in REPLACE_AGGREGATIONS
    if not keys:
        raise QueryError(1105, "No key column is found")
    if table.key_model == KeyModel.UNIQUE and len(keys) != len(table.key_columns):
        raise QueryError(1105, "Rollup should contains all unique keys in basetable")
    if replaced and len(keys) != len(table.key_columns):
        raise QueryError(1105, "Rollup should contains all keys if there is a REPLACE value")
    return tuple(keys)


def _duplicate_rollup_keys(table: Table, action: st.AddRollup, names: list[str]):
    if action.duplicate_keys:
        if len(action.duplicate_keys) > len(names):
            raise QueryError(
                1105,
                "Num of duplicate keys should less than or equal to num of rollup columns.",
            )
        for key, name in zip(action.duplicate_keys, names, strict=False):
            if key.lower() != name.lower():
                raise QueryError(1105, "Duplicate keys should be the prefix of rollup columns")
        return tuple(names[: len(action.duplicate_keys)])
    keys: list[str] = []
    for name in names[:SHORT_KEY_MAX_COLUMNS]:
        base_type = table.column(name).type.base
        if base_type in FLOATING_TYPES:
            break
        keys.append(name)
        if base_type in VARIABLE_LENGTH_TYPES:
            break
    if not keys:
        raise QueryError(1105, "The first column could not be float or double")
    return tuple(keys)


def add_rollup(session, database, table: Table, action: st.AddRollup) -> Table:
    rollup = rollup_columns(table, action)
    return dataclasses.replace(table, rollups=(*table.rollups, rollup))


def drop_rollup(session, database, table: Table, action: st.DropRollup) -> Table:
    if action.name == table.name:
        raise QueryError(
            1105, "Cannot drop base index by using DROP ROLLUP or DROP MATERIALIZED VIEW."
        )
    if not any(r.name == action.name for r in table.rollups):
        raise QueryError(
            1105, f"Materialized view [{action.name}] does not exist in table [{table.name}]"
        )
    rollups = tuple(r for r in table.rollups if r.name != action.name)
    partitions = tuple(_keep_rollup_tablets(p, rollups) for p in table.partitions)
    return dataclasses.replace(table, rollups=rollups, partitions=partitions)


def _keep_rollup_tablets(partition: Partition, rollups: tuple[Rollup, ...]) -> Partition:
    ids = {r.id for r in rollups}
    kept = tuple(pair for pair in partition.rollup_tablets if pair[0] in ids)
    return dataclasses.replace(partition, rollup_tablets=kept)


def with_rollup_tablets(session, table: Table) -> Table:
    """Ids for rollups that have none yet (id 0), and tablets for every rollup in every partition
    (temporary ones too) that lacks them: `buckets` tablets each, as the base index has."""
    new_rollups = [r for r in table.rollups if r.id == 0]
    missing = [
        (p, r)
        for p in tablet_holders(table)
        for r in table.rollups
        if r.id == 0 or r.id not in dict(p.rollup_tablets)
    ]
    if not new_rollups and not missing:
        return table
    count = len(new_rollups) + sum(p.buckets for p, _ in missing)
    next_id = session.services.writer.allocate_ids(count)
    ids = {}
    for rollup in new_rollups:
        ids[rollup.name] = next_id
        next_id += 1
    rollups = tuple(
        dataclasses.replace(r, id=ids[r.name]) if r.id == 0 else r for r in table.rollups
    )
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for partition, rollup in missing:
        rollup_id = ids.get(rollup.name, rollup.id)
        by_partition.setdefault(partition.id, []).append((rollup_id, next_id))
        next_id += partition.buckets

    def completed(partitions: tuple[Partition, ...]) -> tuple[Partition, ...]:
        return tuple(
            dataclasses.replace(p, rollup_tablets=(*p.rollup_tablets, *by_partition.get(p.id, ())))
            for p in partitions
        )

    return dataclasses.replace(
        table,
        rollups=rollups,
        partitions=completed(table.partitions),
        temporary_partitions=completed(table.temporary_partitions),
    )


def create_table_rollups(session, table: Table, rollups: tuple[st.AddRollup, ...]) -> Table:
    for action in rollups:
        table = dataclasses.replace(table, rollups=(*table.rollups, rollup_columns(table, action)))
    return with_rollup_tablets(session, table)


ACTIONS = {
    st.AddColumn: add_column,
    st.DropColumn: drop_column,
    st.ModifyColumn: modify_column,
    st.RenameColumn: rename_column,
    st.ReorderColumns: reorder_columns,
    st.AddRollup: add_rollup,
    st.DropRollup: drop_rollup,
}
