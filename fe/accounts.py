"""Users, passwords and grants: statements to journal operations, and the identity provider the
MySQL front authenticates against."""

from __future__ import annotations

from mysql_mimic.auth import IdentityProvider
from mysql_mimic.auth import User as AuthUser

from fe import privileges
from fe.mysql.connection import NativePasswordPlugin, native_password_hash
from fe.mysql.errors import QueryError
from fe.sql import statements as st
from metadata import ops
from metadata.catalog import Catalog
from metadata.records import Grant, User

BUILT_IN_USERS = ("root", "admin")
HASH_LENGTH = 41


def find_user(catalog: Catalog, name: str, host: str | None = None) -> User | None:
    if host is not None:
        return catalog.users.get((name, host))
    exact = catalog.users.get((name, "%"))
    if exact is not None:
        return exact
    for (user_name, _), user in list(catalog.users.items()):
        if user_name == name:
            return user
    return None


class CatalogIdentityProvider(IdentityProvider):
    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def get_plugins(self):
        return [NativePasswordPlugin()]

    async def get_user(self, username: str) -> AuthUser | None:
        user = find_user(self.catalog, username)
        if user is None:
            return None
        return AuthUser(
            name=user.name,
            auth_string=user.password_hash or None,
            auth_plugin=NativePasswordPlugin.name,
        )


def _hash(password: str | None, password_hash: str | None) -> str:
    if password_hash is not None:
        if password_hash and (
            len(password_hash) != HASH_LENGTH or not password_hash.startswith("*")
        ):
            raise QueryError(1372, "Password hash should be a 41-digit hexadecimal number")
        return password_hash.upper()
    return native_password_hash(password) if password else ""


def _require_user_admin(session) -> None:
    if not privileges.has(session.user, privileges.GRANT):
        raise QueryError(
            1227,
            "Access denied; you need (at least one of) the GRANT_PRIV or ADMIN_PRIV privilege(s) for this operation",
        )


def create_user(session, statement: st.CreateUser) -> list[ops.Op]:
    _require_user_admin(session)
    name, host = statement.user.name, statement.user.host
    if session.catalog.users.get((name, host)) is not None:
        if statement.if_not_exists:
            return []
        raise QueryError(1396, f"Operation CREATE USER failed for '{name}'@'{host}'")
    password_hash = _hash(statement.password, statement.password_hash)
    return [ops.CreateUser(User(name, host, password_hash, ()))]


def drop_user(session, statement: st.DropUser) -> list[ops.Op]:
    _require_user_admin(session)
    name, host = statement.user.name, statement.user.host
    if name in BUILT_IN_USERS:
        raise QueryError(1396, f"Operation DROP USER failed for '{name}'@'{host}': built-in user")
    if session.catalog.users.get((name, host)) is None:
        if statement.if_exists:
            return []
        raise QueryError(1396, f"Operation DROP USER failed for '{name}'@'{host}'")
    return [ops.DropUser(name, host)]


def _named_user(session, target: st.UserName | None, code: int, message: str) -> User:
    """The user a statement names (the session's own when it names none)."""
    if target is None:
        return session.user
    user = session.catalog.users.get((target.name, target.host)) or find_user(
        session.catalog, target.name
    )
    if user is None:
        raise QueryError(code, message.format(name=target.name, host=target.host))
    return user


def set_password(session, statement: st.SetPassword) -> list[ops.Op]:
    user = _named_user(
        session,
        statement.user,
        1133,
        "Can't find any matching row in the user table for '{name}'@'{host}'",
    )
    if user.name != session.user.name:
        _require_user_admin(session)
    return [
        ops.SetPassword(user.name, user.host, _hash(statement.password, statement.password_hash))
    ]


def grant(session, statement: st.GrantStatement) -> list[ops.Op]:
    is_global = statement.db == "*"
    if not privileges.has(session.user, privileges.GRANT, statement.db):
        raise QueryError(
            1227,
            "Access denied; you need (at least one of) the GRANT_PRIV privilege(s) for this operation",
        )
    target = session.catalog.users.get((statement.user.name, statement.user.host))
    if target is None:
        raise QueryError(
            1133,
            f"Can't find any matching row in the user table for {statement.user.name}@{statement.user.host}",
        )
    names = privileges.canonical(statement.privileges, is_global)
    if not is_global and names & set(privileges.GLOBAL_ONLY):
        raise QueryError(1221, "ADMIN_PRIV and NODE_PRIV can only be granted on *.*")
    if statement.revoke and target.name in BUILT_IN_USERS:
        raise QueryError(1227, f"Cannot revoke privileges of built-in user {target.name}")
    entry = Grant(statement.db, statement.table, names)
    if statement.revoke:
        held = next((g for g in target.grants if g.db == entry.db and g.table == entry.table), None)
        if held is None or not (held.privileges & names):
            raise QueryError(
                1141,
                f"There is no such grant defined for user '{target.name}' on host '{target.host}'",
            )
        return [ops.RevokePrivileges(target.name, target.host, entry)]
    return [ops.GrantPrivileges(target.name, target.host, entry)]


def show_grants_rows(session, target: st.UserName | None) -> list[tuple]:
    user = _named_user(
        session, target, 1141, "There is no such grant defined for user '{name}' on host '{host}'"
    )
    if user.name != session.user.name and not privileges.has(session.user, privileges.GRANT):
        raise QueryError(
            1044,
            f"Access denied for user '{session.user.name}'@'{session.user.host}' to database 'mysql'",
        )
    lines = [privileges.grant_text(user, grant) for grant in user.grants]
    if not lines:
        lines = [f"GRANT USAGE_PRIV ON *.* TO {user.identity}"]
    return [(line,) for line in lines]
