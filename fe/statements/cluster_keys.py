"""Doris's cluster keys of a merge-on-write UNIQUE KEY table (`CLUSTER BY (c1, c2)` in Doris
3.0, `ORDER BY (...)` as later versions write it): checked as Doris checks them, kept with the
table (a hidden property), written back by SHOW CREATE TABLE, renamed with their columns; a
column among them is not dropped. Quire's blocks keep the order of their row ids: no other order
is built for them (as no index structure is)."""

from __future__ import annotations

import json

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata.records import HIDDEN_PROPERTY_PREFIX, KeyModel, Table

PROPERTY = HIDDEN_PROPERTY_PREFIX + "cluster_keys"
MERGE_ON_WRITE = "enable_unique_key_merge_on_write"


def of(table: Table) -> st.ClusterKeys | None:
    text = dict(table.properties).get(PROPERTY)
    if text is None:
        return None
    word, columns = json.loads(text)
    return st.ClusterKeys(word, tuple(columns))


def with_cluster_keys(table: Table, keys: st.ClusterKeys | None) -> Table:
    """The table with its cluster keys, checked as Doris checks them."""
    if keys is None:
        return table
    word = keys.word.title()
    if table.key_model is not KeyModel.UNIQUE:
        raise QueryError(1105, f"{word} keys only support unique keys table")
    if dict(table.properties).get(MERGE_ON_WRITE, "true").lower() == "false":
        raise QueryError(
            1105,
            f"{word} keys only support unique keys table which enabled {MERGE_ON_WRITE}",
        )
    columns = []
    for name in keys.columns:
        column = table.column(name)
        if column is None:
            raise QueryError(1105, f"{word} key column[{name}] doesn't exist")
        if column.name in columns:
            raise QueryError(1105, f"Duplicate {word.lower()} key column[{column.name}]")
        columns.append(column.name)
    if tuple(columns) == table.key_columns:
        raise QueryError(1105, f"Unique keys and {word.lower()} keys should be different")
    return _with(table, st.ClusterKeys(keys.word, tuple(columns)))


def _with(table: Table, keys: st.ClusterKeys) -> Table:
    return table.with_property(PROPERTY, json.dumps([keys.word, list(keys.columns)]))


def shown(table: Table, quote) -> str | None:
    """The clause as SHOW CREATE TABLE writes it."""
    keys = of(table)
    if keys is None:
        return None
    return f"{keys.word} BY({', '.join(quote(name) for name in keys.columns)})"


def check_dropped(table: Table, name: str) -> None:
    keys = of(table)
    if keys is not None and name in keys.columns:
        raise QueryError(
            1105, f"Can not drop {keys.word.lower()} key column[{name}] of table[{table.name}]"
        )


def renamed(table: Table, old: str, new: str) -> Table:
    keys = of(table)
    if keys is None or old not in keys.columns:
        return table
    columns = tuple(new if name == old else name for name in keys.columns)
    return _with(table, st.ClusterKeys(keys.word, columns))
