"""Doris's secondary indexes of a table: INVERTED, NGRAM_BF and BITMAP, each of one column (an
NGRAM_BF may name several), from CREATE TABLE's INDEX clauses, CREATE INDEX and ALTER TABLE ADD
INDEX; gone with DROP INDEX, ALTER TABLE DROP INDEX or their column; renamed with it. SHOW INDEX
lists them and SHOW CREATE TABLE writes them back.

Each is kept as the table's hidden property INDEX_PROPERTY + its name (JSON), so that it travels
with the table through the journal, images and CREATE TABLE LIKE. Quire builds no index
structure (a scan reads every row, pruned by the blocks' statistics); MATCH_ANY and its kin
tokenise the text themselves (fe/statements/mysql_functions.py), but for a column whose
INVERTED index has no parser: its whole value is its one term, as Doris keeps it
(match_by_index)."""

from __future__ import annotations

import dataclasses
import json

from sqlglot import exp

from fe.mysql.errors import ErrorCode, QueryError
from fe.sql import statements as st
from metadata.records import HIDDEN_PROPERTY_PREFIX, KeyModel, Table
from metadata.types import ColumnType

INDEX_PROPERTY = HIDDEN_PROPERTY_PREFIX + "index."
# The names of MySQL's indexes (KEY k (c), CREATE INDEX without a Doris kind), kept so that DROP
# INDEX knows them; nothing else is (a scan reads every row anyway), SHOW INDEX lists none.
MYSQL_KEYS_PROPERTY = HIDDEN_PROPERTY_PREFIX + "mysql_keys"
KINDS = ("INVERTED", "NGRAM_BF", "BITMAP")
SINGLE_COLUMN_KINDS = ("INVERTED", "BITMAP")
MAX_NAME_CHARS = 64
PARSERS = ("none", "english", "unicode", "chinese", "standard")
INVERTED_PROPERTIES = frozenset({
    "parser", "parser_mode", "support_phrase", "char_filter_type", "char_filter_pattern",
    "char_filter_replacement", "ignore_above", "lower_case", "stopwords",
})  # fmt: skip
NGRAM_DEFAULTS = (("gram_size", "2"), ("bf_size", "256"))
NGRAM_LIMITS = {"gram_size": (1, 255), "bf_size": (64, 65535)}
INDEXED_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE",
    "DECIMAL", "DECIMALV2", "DECIMALV3", "DATE", "DATEV1", "DATEV2", "DATETIME", "DATETIMEV1",
    "DATETIMEV2", "TIMESTAMP", "CHAR", "VARCHAR", "STRING", "VARIANT", "IPV4", "IPV6",
})  # fmt: skip
STRING_TYPES = frozenset({"CHAR", "VARCHAR", "STRING"})


def indexes_of(table: Table) -> list[st.IndexDef]:
    """The table's indexes, in the order they were made."""
    kept = []
    for key, value in table.properties:
        if key.startswith(INDEX_PROPERTY):
            fields = json.loads(value)
            kept.append((fields.pop("at"), _index(fields)))
    return [index for _, index in sorted(kept, key=lambda pair: pair[0])]


def _index(fields: dict) -> st.IndexDef:
    return st.IndexDef(
        fields["name"],
        tuple(fields["columns"]),
        fields["kind"],
        tuple((key, value) for key, value in fields["properties"]),
        fields["comment"],
    )


def with_indexes(table: Table, indexes: tuple[st.IndexDef, ...]) -> Table:
    """CREATE TABLE's table with its INDEX clauses, each checked."""
    for index in indexes:
        table = added(table, index)
    return table


def added(table: Table, index: st.IndexDef, if_not_exists: bool = False) -> Table:
    """The table with the index, checked as Doris checks it (1105 with Doris's words)."""
    existing = indexes_of(table)
    if _named(table, index.name):
        if if_not_exists:
            return table
        raise QueryError(1105, f"index `{index.name}` already exist.")
    index = checked(table, index)
    for other in existing:
        if {c.lower() for c in other.columns} == {c.lower() for c in index.columns} and (
            other.kind == index.kind
        ):
            raise QueryError(1105, f"index for columns ({','.join(index.columns)} ) already exist.")
    at = 1 + max((_at(table, other.name) for other in existing), default=0)
    return _with_property(table, _key(index.name), _text(index, at))


def mysql_keys_of(table: Table) -> list[str]:
    return json.loads(dict(table.properties).get(MYSQL_KEYS_PROPERTY, "[]"))


def with_mysql_keys(table: Table, names: tuple[str, ...], if_not_exists: bool = False) -> Table:
    """The table with the names of MySQL indexes it was given (1061 for a name taken)."""
    for name in names:
        if _named(table, name):
            if if_not_exists:
                continue
            raise QueryError(ErrorCode.DUP_KEYNAME, f"Duplicate key name '{name}'")
        table = _with_property(
            table, MYSQL_KEYS_PROPERTY, json.dumps([*mysql_keys_of(table), name])
        )
    return table


def dropped(table: Table, name: str, if_exists: bool = False) -> Table:
    """The table without the index (Doris's or MySQL's) of that name."""
    key = _key(name)
    if any(k == key for k, _ in table.properties):
        return table.with_property(key, None)
    kept = mysql_keys_of(table)
    left = [other for other in kept if other.lower() != name.lower()]
    if len(left) < len(kept):
        if not left:
            return table.with_property(MYSQL_KEYS_PROPERTY, None)
        return _with_property(table, MYSQL_KEYS_PROPERTY, json.dumps(left))
    if if_exists:
        return table
    raise QueryError(1105, f"index {name} does not exist")


def _named(table: Table, name: str) -> bool:
    """Whether an index of the table (Doris's or MySQL's) has that name."""
    return any(k == _key(name) for k, _ in table.properties) or name.lower() in {
        other.lower() for other in mysql_keys_of(table)
    }


def following_columns(before: Table, after: Table) -> Table:
    """after's indexes on the columns as after names them (a column keeps its id through RENAME
    COLUMN); an index of a column dropped is dropped with it, as Doris drops it."""
    names = {column.id: column.name for column in after.columns}
    ids = {column.name.lower(): column.id for column in before.columns}
    table = after
    for index in indexes_of(after):
        columns = tuple(names.get(ids.get(name.lower(), -1)) for name in index.columns)
        if None in columns:
            table = dropped(table, index.name)
        elif columns != index.columns:
            renamed = dataclasses.replace(index, columns=columns)
            table = _with_property(table, _key(index.name), _text(renamed, _at(table, index.name)))
    return table


def checked(table: Table, index: st.IndexDef) -> st.IndexDef:
    """The index as it is kept (columns named as the table names them, Doris's default
    properties added), or 1105 for one Doris refuses."""
    if index.kind not in KINDS:
        raise QueryError(1105, f"unknown index type {index.kind}")
    if not index.name:
        raise QueryError(1105, "index name cannot be blank.")
    if len(index.name) > MAX_NAME_CHARS:
        raise QueryError(1105, "index name too long, the index name length at most is 64.")
    if index.kind in SINGLE_COLUMN_KINDS and len(index.columns) != 1:
        raise QueryError(1105, f"{index.kind} index can only apply to a single column.")
    if len({name.lower() for name in index.columns}) != len(index.columns):
        raise QueryError(1105, "columns of index has duplicated.")
    columns = []
    for name in index.columns:
        column = table.column(name)
        if column is None:
            raise QueryError(1072, f"Key column '{name}' doesn't exist in table")
        if not _indexable(column.type):
            raise QueryError(
                1105,
                f"{column.type.sql} is not supported in {index.kind} index. "
                f"invalid index: {index.name}",
            )
        if table.key_model is KeyModel.AGGREGATE and not column.is_key:
            raise QueryError(
                1105,
                "index should only be used in columns of DUP_KEYS/UNIQUE_KEYS table or key "
                f"columns of AGG_KEYS table. invalid index: {index.name}",
            )
        columns.append(column)
    properties = dict(index.properties)
    if index.kind == "INVERTED":
        _check_inverted(columns[0].name, columns[0].type, properties)
        if properties:
            properties.setdefault("lower_case", "true")
    elif index.kind == "NGRAM_BF":
        for key, default in NGRAM_DEFAULTS:
            properties.setdefault(key, default)
        _check_ngram(columns, properties)
    elif properties:
        raise QueryError(1105, "BITMAP index takes no properties")
    return dataclasses.replace(
        index,
        columns=tuple(column.name for column in columns),
        properties=tuple(properties.items()),
    )


def _indexable(column_type: ColumnType) -> bool:
    if column_type.base == "ARRAY":
        element = column_type.elements[0]
        return element.base != "ARRAY" and _indexable(element)
    return column_type.base in INDEXED_TYPES


def _check_inverted(column: str, column_type: ColumnType, properties: dict) -> None:
    def invalid(message: str) -> QueryError:
        return QueryError(1105, f"invalid INVERTED index:{message}")

    for key in properties:
        if key not in INVERTED_PROPERTIES:
            raise invalid(f"Invalid inverted index property key: {key}")
    parser = properties.get("parser", "none")
    if parser not in PARSERS:
        raise invalid(
            f"Invalid inverted index 'parser' value: {parser}, parser must be none, english, "
            "unicode or chinese"
        )
    if "parser_mode" in properties and parser != "chinese":
        raise invalid("parser_mode is only available for chinese parser")
    for key in ("support_phrase", "lower_case"):
        if properties.get(key, "true") not in ("true", "false"):
            raise invalid(
                f"Invalid inverted index '{key}' value: {properties[key]}, {key} must be true "
                "or false"
            )
    text = column_type.base in STRING_TYPES or (
        column_type.base == "ARRAY" and column_type.elements[0].base in STRING_TYPES
    )
    if parser != "none" and not text:
        raise invalid(
            f"INVERTED index with parser: {parser} is not supported for column: {column} of "
            f"type {column_type.sql}"
        )


def _check_ngram(columns, properties: dict) -> None:
    for column in columns:
        if column.type.base not in STRING_TYPES:
            raise QueryError(
                1105,
                f"{column.type.sql} is not supported in ngram_bf index. invalid column: "
                f"{column.name}",
            )
    if set(properties) != set(NGRAM_LIMITS):
        raise QueryError(1105, "ngram_bf index should have gram_size and bf_size properties")
    for key, (least, most) in NGRAM_LIMITS.items():
        value = properties[key]
        if not value.isdigit() or not least <= int(value) <= most:
            raise QueryError(
                1105,
                f"invalid ngram bf index params:{key} should be an integer between {least} and "
                f"{most}",
            )


def index_sql(index: st.IndexDef) -> str:
    """The index as SHOW CREATE TABLE writes it, inside the table's column list."""
    text = f"INDEX {index.name} ({','.join(f'`{c}`' for c in index.columns)}) USING {index.kind}"
    if index.properties:
        text += f" PROPERTIES{properties_text(index)}"
    if index.comment.strip():
        text += " COMMENT '" + index.comment.replace("'", "\\'") + "'"
    return text


def properties_text(index: st.IndexDef) -> str:
    """`("key" = "value", ...)`, as SHOW INDEX's Properties shows them ("" if none)."""
    if not index.properties:
        return ""
    return "(" + ", ".join(f'"{key}" = "{value}"' for key, value in index.properties) + ")"


def show_rows(table: Table) -> list[tuple]:
    """SHOW INDEX's rows: one an index, as Doris fills them."""
    return [
        (table.name, "", index.name, "", ",".join(index.columns), "", "", "", "", "",
         index.kind, index.comment, properties_text(index))
        for index in indexes_of(table)
    ]  # fmt: skip


def _key(name: str) -> str:
    return INDEX_PROPERTY + name.lower()


def _at(table: Table, name: str) -> int:
    return json.loads(dict(table.properties)[_key(name)])["at"]


def _text(index: st.IndexDef, at: int) -> str:
    fields = {
        "name": index.name,
        "columns": list(index.columns),
        "kind": index.kind,
        "properties": [list(pair) for pair in index.properties],
        "comment": index.comment,
        "at": at,
    }
    return json.dumps(fields, separators=(",", ":"))


def _with_property(table: Table, key: str, value: str) -> Table:
    properties = dict(table.properties)
    properties[key] = value
    return dataclasses.replace(table, properties=tuple(sorted(properties.items())))


# MATCH_* of a column whose INVERTED index keeps its whole value as one term (no parser)
KEYWORD_MATCHES = {
    "MATCH_ANY": lambda column, text: exp.EQ(this=column, expression=text),
    "MATCH_ALL": lambda column, text: exp.EQ(this=column, expression=text),
    "MATCH_PHRASE": lambda column, text: exp.EQ(this=column, expression=text),
    "MATCH_PHRASE_PREFIX": lambda column, text: exp.StartsWith(this=column, expression=text),
}


def match_by_index(expression: exp.Expression, tables: list[tuple[exp.Table, Table]]) -> None:
    """Each MATCH_* of a column (found by its table's alias, or the one table with a column of
    its name) whose INVERTED index has no parser made a comparison of the whole value."""
    matches = [
        node
        for node in expression.find_all(exp.Anonymous)
        if node.name.upper() in KEYWORD_MATCHES and len(node.expressions) == 2
    ]
    for node in matches:
        column, text = node.expressions
        if not isinstance(column, exp.Column):
            continue
        table = _table_of(column, tables)
        if table is not None and _keyword_indexed(table, column.name):
            node.replace(KEYWORD_MATCHES[node.name.upper()](column.copy(), text.copy()))


def _table_of(column: exp.Column, tables: list[tuple[exp.Table, Table]]) -> Table | None:
    if column.table:
        found = [r for node, r in tables if node.alias_or_name.lower() == column.table.lower()]
    else:
        found = [r for _, r in tables if r.column(column.name) is not None]
    return found[0] if len({r.id for r in found}) == 1 else None


def _keyword_indexed(table: Table, column: str) -> bool:
    return any(
        index.kind == "INVERTED"
        and [c.lower() for c in index.columns] == [column.lower()]
        and dict(index.properties).get("parser", "none") == "none"
        for index in indexes_of(table)
    )
