"""Doris's row policies: `CREATE ROW POLICY [IF NOT EXISTS] p ON [db.]t AS RESTRICTIVE |
PERMISSIVE TO user | ROLE r USING (predicate)` limits the rows of t that user (or every user
holding r) reads to those the predicate holds for; `DROP ROW POLICY [IF EXISTS] p ON t [FOR user
| ROLE r]` lifts it; `SHOW ROW POLICY [FOR user | ROLE r]` lists them (GRANT_PRIV for each).

Several policies of one reader on one table combine as Doris combines them: the RESTRICTIVE ones
all hold, and one of the PERMISSIVE ones. Every read of the table by that reader (queries,
the rows UPDATE and DELETE name, INSERT ... SELECT, EXPORT, a view's query) reads it through
`(SELECT * FROM t WHERE filter) AS t`; the reads that would bypass the engine (key-index point
reads and writes, plain reads) are not taken for it.

A policy is kept as the table's hidden property POLICY_PROPERTY + its name (JSON), so that the
journal and images carry it with the table and it goes with the table when it is dropped."""

from __future__ import annotations

import dataclasses
import functools
import json

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from fe.mysql.errors import QueryError
from fe.sql import statements as st
from fe.statements import accounts
from fe.statements.names import resolve_table
from metadata import ops
from metadata.records import HIDDEN_PROPERTY_PREFIX, Table

POLICY_PROPERTY = HIDDEN_PROPERTY_PREFIX + "row_policy."
FILTER_TYPES = ("RESTRICTIVE", "PERMISSIVE")
MAX_PREDICATE_CHARS = 4096
TITLES = ["PolicyName", "CatalogName", "DbName", "TableName", "Type", "FilterType",
          "WherePredicate", "User", "Role", "OriginStmt"]  # fmt: skip
NOT_IN_A_FILTER = (exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder)


@dataclasses.dataclass(frozen=True)
class RowPolicy:
    name: str
    filter_type: str
    user: tuple[str, str] | None  # (name, host) of the account it binds, or
    role: str | None  # the role whose holders it binds
    predicate: str  # MySQL's SQL
    statement: str  # as it was written

    def binds(self, username: str, host: str, roles: tuple[str, ...]) -> bool:
        if self.user is not None:
            return self.user == (username, host)
        return self.role in roles


def without_policies(properties: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in properties if not k.startswith(POLICY_PROPERTY))


def policies_of(table: Table) -> tuple[RowPolicy, ...]:
    return _policies(table.properties)


@functools.lru_cache(maxsize=256)
def _policies(properties: tuple[tuple[str, str], ...]) -> tuple[RowPolicy, ...]:
    found = []
    for key, value in properties:
        if key.startswith(POLICY_PROPERTY):
            fields = json.loads(value)
            user = tuple(fields["user"]) if fields["user"] is not None else None
            found.append(
                RowPolicy(
                    fields["name"],
                    fields["filter_type"],
                    user,
                    fields["role"],
                    fields["predicate"],
                    fields["statement"],
                )
            )
    return tuple(found)


def _binding(session, table: Table) -> list[RowPolicy]:
    """The table's policies that bind the session's user (by its account or a role of it)."""
    policies = policies_of(table)
    if not policies:
        return []
    username, host = session.username or "", session.user_host or ""
    account = session.catalog.users.get((username, host))
    roles = account.roles if account is not None else ()
    return [policy for policy in policies if policy.binds(username, host, roles)]


def filter_of(session, table: Table) -> exp.Expression | None:
    """The condition the session's user reads the table's rows under, None if no policy binds
    it."""
    bound = _binding(session, table)
    if not bound:
        return None
    restrictive = [_parsed(p.predicate) for p in bound if p.filter_type == "RESTRICTIVE"]
    permissive = [_parsed(p.predicate) for p in bound if p.filter_type == "PERMISSIVE"]
    parts = [*restrictive]
    if permissive:
        parts.append(exp.paren(exp.or_(*permissive), copy=False))
    return exp.and_(*parts)


@functools.lru_cache(maxsize=256)
def _parsed_once(predicate: str) -> exp.Expression:
    return sqlglot.parse_one(predicate, read="mysql")


def _parsed(predicate: str) -> exp.Expression:
    return exp.paren(_parsed_once(predicate).copy(), copy=False)


def binds_any(session, table: Table) -> bool:
    """Whether a policy binds the session's user on the table (its fast reads are not taken)."""
    return bool(_binding(session, table))


def filter_table(session, table: exp.Table, record: Table) -> None:
    """The table node (of record) replaced by `(SELECT * FROM t WHERE filter) AS alias` when a
    policy binds the session's user on it."""
    if table.meta.get(_FILTERED):
        return
    condition = filter_of(session, record)
    if condition is None:
        return
    inner = table.copy()
    inner.meta[_FILTERED] = True
    alias = table.alias_or_name
    table.replace(exp.select("*").from_(inner).where(condition).subquery(alias, copy=False))


_FILTERED = "quire_row_policy_applied"


# -- statements -------------------------------------------------------------------------------


def create(session, statement: st.CreateRowPolicy) -> list[ops.Op]:
    accounts.require_user_admin(session)
    _, table = resolve_table(session, statement.table)
    if statement.filter_type not in FILTER_TYPES:
        raise QueryError(1105, f"Unknown filter type: {statement.filter_type}")
    if statement.user is not None and (statement.user.name, statement.user.host) not in (
        session.catalog.users
    ):
        raise QueryError(1105, f"user {_identity(statement.user)} does not exist")
    if statement.role is not None and statement.role not in session.catalog.roles:
        raise QueryError(1105, f"Role {statement.role} does not exist")
    predicate = _checked_predicate(table, statement.predicate)
    key = POLICY_PROPERTY + statement.name.lower()
    if any(k == key for k, _ in table.properties):
        if statement.if_not_exists:
            return []
        raise QueryError(1105, f"the policy {statement.name} already create")
    fields = {
        "name": statement.name,
        "filter_type": statement.filter_type,
        "user": [statement.user.name, statement.user.host] if statement.user else None,
        "role": statement.role,
        "predicate": predicate,
        "statement": statement.text,
    }
    properties = dict(table.properties)
    properties[key] = json.dumps(fields, separators=(",", ":"))
    return [
        ops.ReplaceTable(dataclasses.replace(table, properties=tuple(sorted(properties.items()))))
    ]


def drop(session, statement: st.DropRowPolicy) -> list[ops.Op]:
    accounts.require_user_admin(session)
    _, table = resolve_table(session, statement.table)
    key = POLICY_PROPERTY + statement.name.lower()
    policy = next((p for p in policies_of(table) if p.name.lower() == statement.name.lower()), None)
    if policy is not None and statement.user is not None:
        policy = policy if policy.user == (statement.user.name, statement.user.host) else None
    if policy is not None and statement.role is not None:
        policy = policy if policy.role == statement.role else None
    if policy is None:
        if statement.if_exists:
            return []
        raise QueryError(1105, f"the policy {statement.name} not exist")
    properties = tuple((k, v) for k, v in table.properties if k != key)
    return [ops.ReplaceTable(dataclasses.replace(table, properties=properties))]


def shown(session, statement: st.ShowRowPolicy) -> list[tuple]:
    """SHOW ROW POLICY's rows (TITLES)."""
    accounts.require_user_admin(session)
    rows = []
    for table in list(session.catalog.tables.values()):
        database = session.catalog.dbs.get(table.db_id)
        for policy in policies_of(table):
            if statement.user is not None and policy.user != (
                statement.user.name,
                statement.user.host,
            ):
                continue
            if statement.role is not None and policy.role != statement.role:
                continue
            user = f"'{policy.user[0]}'@'{policy.user[1]}'" if policy.user else None
            rows.append((
                policy.name, "internal", database.name if database else "", table.name, "ROW",
                policy.filter_type, policy.predicate, user, policy.role, policy.statement,
            ))  # fmt: skip
    rows.sort(key=lambda row: (row[2], row[3], row[0]))
    return rows


def _identity(user: st.UserName) -> str:
    return f"'{user.name}'@'{user.host}'"


def _checked_predicate(table: Table, text: str) -> str:
    """The predicate as MySQL's SQL, once it parses, names only the table's columns and holds
    no query, aggregate or window of its own."""
    if len(text) > MAX_PREDICATE_CHARS:
        raise QueryError(
            1105, f"A row policy's predicate is at most {MAX_PREDICATE_CHARS} characters"
        )
    try:
        predicate = sqlglot.parse_one(text, read="mysql")
    except SqlglotError:
        raise QueryError(1064, f"You have an error in your SQL syntax near '{text}'") from None
    if any(isinstance(node, NOT_IN_A_FILTER) for node in predicate.walk()):
        raise QueryError(
            1105, "A row policy's predicate reads the row only: no query, aggregate or window"
        )
    for column in predicate.find_all(exp.Column):
        if column.table or table.column(column.name) is None:
            raise QueryError(1054, f"Unknown column '{column.sql('mysql')}' in '{table.name}'")
    return predicate.sql("mysql")
