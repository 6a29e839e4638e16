"""Privileges in Doris's model, accepting MySQL's names too.

A grant holds canonical names (SELECT_PRIV, LOAD_PRIV, ...) on *.*, db.* or db.table; a check
asks whether a user holds one privilege on one object, through a grant at that level or above.
ADMIN_PRIV on *.* holds every privilege but NODE_PRIV; NODE_PRIV covers node operations only.
"""

from __future__ import annotations

from metadata.records import Grant, User

SELECT = "SELECT_PRIV"
LOAD = "LOAD_PRIV"
ALTER = "ALTER_PRIV"
CREATE = "CREATE_PRIV"
DROP = "DROP_PRIV"
GRANT = "GRANT_PRIV"
ADMIN = "ADMIN_PRIV"
NODE = "NODE_PRIV"
USAGE = "USAGE_PRIV"
SHOW_VIEW = "SHOW_VIEW_PRIV"

OBJECT_PRIVILEGES = (SELECT, LOAD, ALTER, CREATE, DROP, SHOW_VIEW)
GLOBAL_ONLY = (ADMIN, NODE)

CANONICAL = {
    "SELECT": SELECT,
    "SELECT_PRIV": SELECT,
    "INSERT": LOAD,
    "UPDATE": LOAD,
    "DELETE": LOAD,
    "LOAD_PRIV": LOAD,
    "ALTER": ALTER,
    "INDEX": ALTER,
    "ALTER_PRIV": ALTER,
    "CREATE": CREATE,
    "CREATE_PRIV": CREATE,
    "DROP": DROP,
    "DROP_PRIV": DROP,
    "GRANT": GRANT,
    "GRANT_PRIV": GRANT,
    "SUPER": ADMIN,
    "PROCESS": ADMIN,
    "RELOAD": ADMIN,
    "ADMIN_PRIV": ADMIN,
    "NODE_PRIV": NODE,
    "USAGE": USAGE,
    "USAGE_PRIV": USAGE,
    "SHOW": SHOW_VIEW,
    "SHOW_VIEW_PRIV": SHOW_VIEW,
    "REFERENCES": SELECT,
    "EXECUTE": SELECT,
    "EVENT": ALTER,
    "TRIGGER": ALTER,
}


def canonical(names: tuple[str, ...], is_global: bool) -> frozenset[str]:
    """MySQL or Doris privilege names -> Doris's; ALL means every privilege the level can hold."""
    result: set[str] = set()
    for name in names:
        if name in ("ALL", "ALL PRIVILEGES"):
            result.update(OBJECT_PRIVILEGES + (GRANT,))
            if is_global:
                result.add(ADMIN)
        else:
            result.add(CANONICAL[name])
    return frozenset(result)


def _grants_on(user: User, db: str, table: str):
    """The user's grants at the level db.table or above (table "*": the whole database)."""
    for grant in user.grants:
        if grant.db == "*" or (grant.db == db and grant.table in ("*", table)):
            yield grant


def held(user: User, db: str = "*", table: str = "*") -> frozenset[str]:
    """Every privilege the user holds on db.table (db "*": globally), ADMIN_PRIV's included."""
    names = frozenset().union(*(grant.privileges for grant in _grants_on(user, db, table)))
    if is_admin(user):
        names |= {*OBJECT_PRIVILEGES, GRANT, USAGE}
    return names


def has(user: User, privilege: str, db: str = "*", table: str = "*") -> bool:
    return privilege in held(user, db, table)


def has_any(user: User, db: str, table: str | None = None) -> bool:
    """Whether the user may see the database (table=None) or the table at all: some object
    privilege on it (GRANT_PRIV, USAGE_PRIV and NODE_PRIV show nothing)."""
    if is_admin(user):
        return True
    for grant in user.grants:
        if not grant.privileges & set(OBJECT_PRIVILEGES):
            continue
        if grant.db == "*":
            return True
        if grant.db == db and (table is None or grant.table in ("*", table)):
            return True
    return False


def is_admin(user: User) -> bool:
    return any(grant.db == "*" and ADMIN in grant.privileges for grant in user.grants)


def is_node_operator(user: User) -> bool:
    return any(grant.db == "*" and NODE in grant.privileges for grant in user.grants)


def grant_text(user: User, grant: Grant) -> str:
    target = f"{grant.db}.{grant.table}"
    return f"GRANT {', '.join(sorted(grant.privileges))} ON {target} TO {user.identity}"
