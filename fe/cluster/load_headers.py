"""Stream Load headers beyond the columns and WHERE, as Doris reads them: which rows delete their
key (`merge_type: APPEND | DELETE | MERGE` with `delete: condition`, or a `__DORIS_DELETE_SIGN__`
field named by `columns` or `hidden_columns`), and the headers Quire does not honour yet, refused
rather than ignored (each would change which rows land, or how the body is read)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from be.load.options import DELETE_SIGN, MERGE_TYPES
from metadata.records import KeyModel, Table

IGNORED = ("", "false", "0", "none", "upsert", "upsert_only")  # what the unkept headers may say
UNKEPT = {  # header -> what it asks, for its refusal
    "partial_columns": "partial column updates",
    "unique_key_update_mode": "partial column updates",
    "skip_lines": "skipped lines",
    "enclose": "enclosed fields",
    "escape": "escaped fields",
    "trim_double_quotes": "trimmed double quotes",
    "compress_type": "compressed bodies",
    "json_root": "a JSON root",
    "num_as_string": "numbers read as strings",
    "partitions": "loads into named partitions",
    "temporary_partitions": "loads into temporary partitions",
}


def unkept_header(headers: Mapping[str, str], table: Table) -> str | None:
    """The refusal of a header whose meaning Quire does not keep, None if there is none."""
    for name, what in UNKEPT.items():
        value = headers.get(name)
        if value is not None and value.strip().lower() not in IGNORED:
            return f"the {name} header ({what}) is not supported yet"
    mapped = headers.get("function_column.sequence_col")
    if mapped is not None and table.sequence_column is None:
        return (
            "the function_column.sequence_col header names a sequence column: the table has "
            "none (function_column.sequence_col is set at CREATE TABLE)"
        )
    return None


def merge_of(
    headers: Mapping[str, str],
    table: Table,
    sources: tuple[str, ...],
    condition_sql: Callable[[str], str],
) -> tuple[dict, tuple[str, ...]]:
    """The load's merge (its type, the delete condition as the engine's SQL, whether a field is
    the delete sign) and its fields (with the sign field `hidden_columns` adds); ValueError as
    Doris refuses."""
    kind = (headers.get("merge_type", "") or "APPEND").strip().upper()
    if kind not in MERGE_TYPES:
        raise ValueError(f"unknown merge type {kind}: APPEND, DELETE or MERGE")
    hidden = [name.strip() for name in headers.get("hidden_columns", "").split(",") if name.strip()]
    if any(name.upper() != DELETE_SIGN for name in hidden):
        raise ValueError(f"hidden_columns may name {DELETE_SIGN} only")
    if hidden and DELETE_SIGN not in (source.upper() for source in sources):
        sources = (*sources, DELETE_SIGN)
    sign = next((source for source in sources if source.upper() == DELETE_SIGN), None)
    condition = headers.get("delete", "").strip()
    if (kind != "APPEND" or sign is not None) and table.key_model is not KeyModel.UNIQUE:
        raise ValueError("load by MERGE or DELETE is only supported in unique tables.")
    if kind == "MERGE" and not condition:
        raise ValueError("Excepted DELETE ON clause when merge type is MERGE.")
    if kind != "MERGE" and condition:
        raise ValueError("not support DELETE ON clause when merge type is not MERGE.")
    merge = {"type": kind, "delete": condition_sql(condition) if condition else "", "sign": sign}
    return merge, sources
