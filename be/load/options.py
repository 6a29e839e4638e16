"""A Stream Load's headers, as Doris names them, checked."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

from be.load.errors import BadLoadRequest
from be.table_schema import TableSchema

LABEL = re.compile(r"[-_A-Za-z0-9:]{1,128}")
FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types", "json")
MERGE_TYPES = ("APPEND", "DELETE", "MERGE")  # merge_type: which rows delete their key
DELETE_SIGN = "__DORIS_DELETE_SIGN__"  # a field of the load: 1 deletes the row's key


@dataclass(frozen=True)
class LoadOptions:
    label: str
    columns: tuple[str, ...]  # the body's fields, in order: the table's columns or the load's own
    mappings: tuple[tuple[str, str], ...] = ()  # (table column, the engine's SQL over the fields)
    format: str = "csv"
    separator: str = "\t"
    max_filter_ratio: float = 0.0
    two_phase: bool = False
    comment: str = ""
    strict: bool = True  # Doris's strict_mode; Quire's default is MySQL's strict SQL mode
    json_by_line: bool = False  # read_json_by_line: a JSON value a line, else one for the body
    strip_outer_array: bool = False  # a JSON value is an array of objects, each a row
    jsonpaths: tuple[str, ...] = ()  # where each of columns is in an object (`$.a.b`)

    @property
    def header_lines(self) -> int:
        return {"csv_with_names": 1, "csv_with_names_and_types": 2}.get(self.format, 0)


def load_options(headers, schema: TableSchema, claims: dict | None = None) -> LoadOptions:
    """The headers' options; the columns and mappings as the FE read them (claims), if it did."""
    label = headers.get("label", "").strip() or str(uuid.uuid4())
    if not LABEL.fullmatch(label):
        raise BadLoadRequest(
            f"Label format error. regex: ^[-_A-Za-z0-9:]{{1,128}}$, label: {label[:200]}"
        )
    kind = headers.get("format", "csv").strip().lower() or "csv"
    if kind not in FORMATS:
        raise BadLoadRequest(f"unknown data format {kind!r}: one of {', '.join(FORMATS)}")
    delimiter = _unescaped(headers.get("line_delimiter", "\n"))
    if delimiter not in ("\n", "\r\n"):
        raise BadLoadRequest("line_delimiter may be \\n or \\r\\n")
    separator = _unescaped(headers.get("column_separator", "\t"))
    if len(separator) != 1 or separator in '\r\n"':
        raise BadLoadRequest("column_separator must be one character (\\xNN for a byte)")
    try:
        ratio = float(headers.get("max_filter_ratio", "0"))
    except ValueError:
        raise BadLoadRequest("max_filter_ratio must be a number from 0 to 1") from None
    if not 0 <= ratio <= 1:
        raise BadLoadRequest("max_filter_ratio must be a number from 0 to 1")
    if claims is not None and "columns" in claims:
        columns, mappings = _claimed(claims, schema)
    else:
        columns, mappings = _columns(headers.get("columns", ""), schema), ()
    jsonpaths = _jsonpaths(headers.get("jsonpaths", ""))
    if jsonpaths and len(jsonpaths) != len(columns):
        raise BadLoadRequest(
            f"jsonpaths has {len(jsonpaths)} paths for {len(columns)} columns: one a column"
        )
    return LoadOptions(
        label,
        columns,
        mappings,
        kind,
        separator,
        ratio,
        _flag(headers, "two_phase_commit"),
        headers.get("comment", "")[:1024],
        headers.get("strict_mode", "true").strip().lower() != "false",
        _flag(headers, "read_json_by_line"),
        _flag(headers, "strip_outer_array"),
        jsonpaths,
    )


def _flag(headers, name: str) -> bool:
    return headers.get(name, "").strip().lower() == "true"


MAX_JSONPATHS = 4096


def _jsonpaths(text: str) -> tuple[str, ...]:
    """Doris's jsonpaths header: a JSON array of paths, each from the object's root `$`."""
    if not text.strip():
        return ()
    try:
        paths = json.loads(text)
    except ValueError:
        raise BadLoadRequest('jsonpaths must be a JSON array of paths, e.g. ["$.k"]') from None
    if (
        not isinstance(paths, list)
        or not 0 < len(paths) <= MAX_JSONPATHS
        or not all(isinstance(path, str) and path.startswith("$") for path in paths)
    ):
        raise BadLoadRequest('jsonpaths must be a JSON array of paths, e.g. ["$.k"]')
    return tuple(paths)


def _columns(text: str, schema: TableSchema) -> tuple[str, ...]:
    if not text.strip():
        return schema.names
    by_lower = {name.lower(): name for name in schema.names}
    found = []
    for item in text.split(","):
        name = item.strip().strip("`")
        if "=" in name:
            raise BadLoadRequest(f"column mapping expressions are not supported: {item.strip()!r}")
        column = by_lower.get(name.lower())
        if column is None:
            raise BadLoadRequest(f"Unknown column '{name}' in table")
        found.append(column)
    if len(set(found)) != len(found):
        raise BadLoadRequest("a column is named twice in columns")
    return tuple(found)


def _claimed(claims: dict, schema: TableSchema) -> tuple[tuple[str, ...], tuple]:
    """The FE's reading of the columns header (a signed claim: its shape is checked, not its
    sense)."""
    try:
        columns = tuple(str(name) for name in claims["columns"])
        mappings = tuple((str(target), str(sql)) for target, sql in claims.get("mappings", ()))
    except (TypeError, ValueError):
        raise BadLoadRequest("the load's columns are malformed") from None
    if not columns or any(target not in schema.names for target, _ in mappings):
        raise BadLoadRequest("the load's columns are malformed")
    return columns, mappings


def _unescaped(text: str) -> str:
    """Doris's \\xNN hex form, and \\t, \\n, \\r, as the header spells them."""
    if re.fullmatch(r"\\x[0-9A-Fa-f]{2}", text):
        return chr(int(text[2:], 16))
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")
