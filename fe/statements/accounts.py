"""Users, passwords, roles and grants: statements to journal operations, and the identity provider
the MySQL front authenticates against.

A role holds privileges under a name; a user granted it holds them too (privileges are checked on
the user with its roles' grants as its own). Changing a role, or granting it, needs every
privilege it holds: GRANT_PRIV alone never reaches more than its holder has.

An account is user@host, as in MySQL: a client logs in as the account of its user name whose host
pattern matches the client's address, the most specific pattern first (a literal host or IP, then
patterns with % and _, '%' last). Statements name accounts exactly ('u' alone is 'u'@'%').
"""

from __future__ import annotations

import hmac
import ipaddress
import re

from mysql_mimic.auth import IdentityProvider

from fe.mysql.connection import Account, NativePasswordPlugin, native_password_hash
from fe.mysql.errors import ErrorCode, QueryError
from fe.security import privileges
from fe.security.lockout import SECONDS_PER_DAY, LoginTracker
from fe.sql import statements as st
from metadata import ops
from metadata.catalog import Catalog
from metadata.records import LOCKED_UNTIL_UNLOCK, Grant, Role, User

BUILT_IN_USERS = ("root", "admin")
# Doris's user properties Quire keeps (SET PROPERTY), by key: (default, least, greatest); -1
# in the others: not set, the session variable of that name keeps its own default.
USER_PROPERTIES = {
    "max_user_connections": (100, 1, 10_000),
    "query_timeout": (-1, 1, 2**31 - 1),
    "insert_timeout": (-1, 1, 2**31 - 1),
    "exec_mem_limit": (-1, 1, 2**63 - 1),
}
SESSION_PROPERTIES = ("query_timeout", "insert_timeout", "exec_mem_limit")
HASH_LENGTH = 41
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


def _address(host: str):
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def host_matches(pattern: str, client_host: str) -> bool:
    """Whether an account's host pattern admits a client connecting from `client_host` (an IP)."""
    pattern = pattern.lower()
    if pattern in ("%", ""):
        return True
    address = _address(client_host)
    if pattern == "localhost":
        return address is not None and (address in LOOPBACK or address.is_loopback)
    if "/" in pattern:
        try:
            return address is not None and address in ipaddress.ip_network(pattern, strict=False)
        except ValueError:
            return False
    host = str(address) if address is not None else client_host.lower()
    if "%" not in pattern and "_" not in pattern:
        literal = _address(pattern)
        return host == (str(literal) if literal is not None else pattern)
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, host) is not None


def host_specificity(pattern: str) -> tuple[int, int]:
    """Sorts account hosts most specific first: literals, then patterns by the length of their
    literal prefix, then '%', then ''."""
    if pattern == "":
        return (3, 0)
    if pattern == "%":
        return (2, 0)
    wildcard = min((i for i, c in enumerate(pattern) if c in "%_"), default=None)
    if wildcard is None or "/" in pattern:
        return (0, 0)
    return (1, -wildcard)


def account_for_login(catalog: Catalog, name: str, client_host: str) -> User | None:
    """The account a client at `client_host` logging in as `name` is."""
    candidates = [
        user
        for (user_name, host), user in list(catalog.users.items())
        if user_name == name and host_matches(host, client_host)
    ]
    return min(candidates, key=lambda user: host_specificity(user.host), default=None)


def password_login(
    catalog: Catalog, tracker: LoginTracker, name: str, password: str, client_host: str
) -> tuple[User | None, QueryError | None]:
    """A login with a clear-text password (HTTP basic auth): the account if the password is right,
    and the lock-out's refusal if the account is blocked; counted as MySQL logins are."""
    user = account_for_login(catalog, name, client_host)
    if user is None:
        return None, None
    expected = native_password_hash(password) if password else ""
    password_ok = hmac.compare_digest(user.password_hash, expected)
    refusal = tracker.login(user, password_ok, client_host)
    return (catalog.effective_user(user) if password_ok else None), refusal


class CatalogIdentityProvider(IdentityProvider):
    def __init__(self, catalog: Catalog, login_tracker: LoginTracker, connections_of=None):
        """connections_of(name): the connections of that user name on this FE (for its
        max_user_connections)."""
        self.catalog = catalog
        self.login_tracker = login_tracker
        self.connections_of = connections_of

    def get_plugins(self):
        return [NativePasswordPlugin()]

    async def get_user(self, username: str, host: str) -> Account | None:
        user = account_for_login(self.catalog, username, host)
        if user is None:
            return None
        return Account(
            name=user.name,
            auth_string=user.password_hash or None,
            auth_plugin=NativePasswordPlugin.name,
            host=user.host,
        )

    def login_refusal(self, account: Account, password_ok: bool, client_host: str):
        user = self.catalog.users.get((account.name, account.host))
        if user is None:
            return None
        refusal = self.login_tracker.login(user, password_ok, client_host)
        if refusal is not None or not password_ok or self.connections_of is None:
            return refusal
        limit = user_property(user, "max_user_connections")
        if self.connections_of(user.name) >= limit:
            return QueryError(
                ErrorCode.TOO_MANY_USER_CONNECTIONS,
                f"User {user.name} already has more than 'max_user_connections' active "
                f"connections ({limit})",
            )
        return None


def user_property(user: User, key: str) -> int:
    """The account's property (SET PROPERTY), or its default."""
    value = dict(user.properties).get(key)
    return USER_PROPERTIES[key][0] if value is None else int(value)


def session_defaults(user: User) -> list[tuple[str, int]]:
    """The session variables the user's properties set at login (those set, not -1)."""
    return [(key, value) for key in SESSION_PROPERTIES if (value := user_property(user, key)) != -1]


def set_property(session, statement: st.SetProperty) -> list[ops.Op]:
    """Doris's SET PROPERTY: the properties of every account of the user name (ADMIN_PRIV)."""
    if not privileges.is_admin(session.user):
        raise access_denied(privileges.ADMIN)
    name = session.username if statement.name is None else statement.name
    if not any(user_name == name for user_name, _ in list(session.catalog.users)):
        raise QueryError(ErrorCode.UNKNOWN_ERROR, f"Unknown user '{name}'")
    properties = {}
    for key, value in statement.properties:
        bounds = USER_PROPERTIES.get(key.lower())
        if bounds is None:
            raise QueryError(ErrorCode.UNKNOWN_ERROR, f"Unknown property key: {key}")
        _, least, greatest = bounds
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or not (least <= number <= greatest or number == bounds[0] == -1):
            raise QueryError(
                ErrorCode.WRONG_VALUE_FOR_VAR,
                f"{key.lower()} is {least} to {greatest}, not '{value}'",
            )
        properties[key.lower()] = str(number)
    return [ops.SetUserProperties(name, tuple(sorted(properties.items())))]


def show_property_rows(session, statement: st.ShowProperty) -> list[tuple]:
    """Doris's SHOW PROPERTY: each property of the user, set or not (another user's needs
    GRANT_PRIV)."""
    name = session.username if statement.name is None else statement.name
    if name != session.username:
        require_user_admin(session)
    user = next(
        (user for (user_name, _), user in list(session.catalog.users.items()) if user_name == name),
        None,
    )
    if user is None:
        raise QueryError(ErrorCode.UNKNOWN_ERROR, f"Unknown user '{name}'")
    return [(key, str(user_property(user, key))) for key in USER_PROPERTIES]


def _hash(password: str | None, password_hash: str | None) -> str:
    if password_hash is not None:
        if password_hash and (
            len(password_hash) != HASH_LENGTH or not password_hash.startswith("*")
        ):
            raise QueryError(1372, "Password hash should be a 41-digit hexadecimal number")
        return password_hash.upper()
    return native_password_hash(password) if password else ""


def access_denied(*privilege_names: str) -> QueryError:
    names = ", ".join(sorted(privilege_names))
    return QueryError(
        1227,
        f"Access denied; you need (at least one of) the {names} privilege(s) for this operation",
    )


def require_user_admin(session) -> None:
    if not privileges.has(session.user, privileges.GRANT):
        raise access_denied(privileges.GRANT)


def _require_may_change(session, target: User) -> None:
    """An account holding ADMIN_PRIV or NODE_PRIV (its own or a role's) is changed only by one
    holding it too (else GRANT_PRIV would reach them by setting their password)."""
    user = session.user
    target = session.catalog.effective_user(target)
    if privileges.is_admin(target) and not privileges.is_admin(user):
        raise access_denied(privileges.ADMIN)
    if privileges.is_node_operator(target) and not privileges.is_node_operator(user):
        raise access_denied(privileges.NODE)


def _require_grantor(session, db: str, table: str, names: frozenset[str]) -> None:
    """GRANT and REVOKE need GRANT_PRIV and every privilege they name, held at the level they
    name or above."""
    user = session.user
    missing = (names | {privileges.GRANT}) - privileges.held(user, db, table)
    if not missing:
        return
    if db == "*":
        raise access_denied(*missing)
    if table == "*":
        raise QueryError(1044, f"Access denied for user {user.identity} to database '{db}'")
    raise QueryError(1142, f"GRANT command denied to user {user.identity} for table '{db}.{table}'")


def create_user(session, statement: st.CreateUser) -> list[ops.Op]:
    require_user_admin(session)
    name, host = statement.user.name, statement.user.host
    if session.catalog.users.get((name, host)) is not None:
        if statement.if_not_exists:
            return []
        raise QueryError(1396, f"Operation CREATE USER failed for '{name}'@'{host}'")
    password_hash = _hash(statement.password, statement.password_hash)
    lockout = statement.lockout
    namesake = next(  # Doris keeps properties by user name: a new account of it shares them
        (user for (user_name, _), user in list(session.catalog.users.items()) if user_name == name),
        None,
    )
    granted = []
    if statement.default_role is not None:  # Doris's DEFAULT ROLE: the user holds the role
        role = _require_may_grant(session, statement.default_role)
        granted.append(ops.GrantRole(name, host, role.name))
    return [
        ops.CreateUser(
            User(
                name,
                host,
                password_hash,
                (),
                failed_login_attempts=lockout.failed_login_attempts or 0,
                password_lock_seconds=lockout.password_lock_seconds or 0,
                lockout_epoch=session.services.writer.allocate_ids(1),
                properties=() if namesake is None else namesake.properties,
            )
        ),
        *granted,
    ]


def alter_user(session, statement: st.AlterUser) -> list[ops.Op]:
    """ALTER USER: a new password (one's own needs no privilege) and the lock-out policy; a new
    policy or ACCOUNT UNLOCK unblocks the account and restarts its count on every FE."""
    name, host = statement.user.name, statement.user.host
    target = session.catalog.users.get((name, host))
    if target is None or not _is_own(session, target) or statement.lockout != st.LockoutOptions():
        require_user_admin(session)
    if target is None:
        if statement.if_exists:
            return []
        raise QueryError(1396, f"Operation ALTER USER failed for '{name}'@'{host}'")
    changes = []
    if statement.new_password is not None:
        changes += set_password(session, statement.new_password)
    lockout = statement.lockout
    if lockout != st.LockoutOptions():
        _require_may_change(session, target)
        attempts, lock_seconds = lockout.failed_login_attempts, lockout.password_lock_seconds
        changes.append(
            ops.SetLockoutPolicy(
                name,
                host,
                target.failed_login_attempts if attempts is None else attempts,
                target.password_lock_seconds if lock_seconds is None else lock_seconds,
                session.services.writer.allocate_ids(1),
            )
        )
    return changes


def drop_user(session, statement: st.DropUser) -> list[ops.Op]:
    require_user_admin(session)
    name, host = statement.user.name, statement.user.host
    if name in BUILT_IN_USERS:
        raise QueryError(1396, f"Operation DROP USER failed for '{name}'@'{host}': built-in user")
    target = session.catalog.users.get((name, host))
    if target is None:
        if statement.if_exists:
            return []
        raise QueryError(1396, f"Operation DROP USER failed for '{name}'@'{host}'")
    _require_may_change(session, target)
    return [ops.DropUser(name, host)]


def _named_user(session, target: st.UserName | None, code: int, message: str) -> User:
    """The account a statement names (the session's own when it names none), as kept."""
    if target is None:
        session.user  # noqa: B018 (1045 if the account was dropped)
        return session.catalog.users[(session.username, session.user_host)]
    user = session.catalog.users.get((target.name, target.host))
    if user is None:
        raise QueryError(code, message.format(name=target.name, host=target.host))
    return user


def _is_own(session, user: User) -> bool:
    return (user.name, user.host) == (session.username, session.user_host)


def set_password(session, statement: st.SetPassword) -> list[ops.Op]:
    user = _named_user(
        session,
        statement.user,
        1133,
        "Can't find any matching row in the user table for '{name}'@'{host}'",
    )
    if not _is_own(session, user):
        require_user_admin(session)
        _require_may_change(session, user)
    return [
        ops.SetPassword(user.name, user.host, _hash(statement.password, statement.password_hash))
    ]


def grant(session, statement: st.GrantStatement) -> list[ops.Op]:
    is_global = statement.db == "*"
    names = privileges.canonical(statement.privileges, is_global)
    if not is_global and names & set(privileges.GLOBAL_ONLY):
        raise QueryError(1221, "ADMIN_PRIV and NODE_PRIV can only be granted on *.*")
    _require_grantor(session, statement.db, statement.table, names)
    if statement.role is not None:
        return _grant_to_role(session, statement, names)
    target = session.catalog.users.get((statement.user.name, statement.user.host))
    if target is None:
        raise QueryError(
            1133,
            f"Can't find any matching row in the user table for '{statement.user.name}'@'{statement.user.host}'",
        )
    _require_may_change(session, target)
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


def _grant_to_role(session, statement: st.GrantStatement, names: frozenset[str]) -> list[ops.Op]:
    role = _role(session, statement.role)
    entry = Grant(statement.db, statement.table, names)
    if not statement.revoke:
        return [ops.GrantToRole(role.name, entry)]
    held = next((g for g in role.grants if (g.db, g.table) == (entry.db, entry.table)), None)
    if held is None or not (held.privileges & names):
        raise QueryError(
            ErrorCode.NONEXISTING_GRANT, f"There is no such grant defined for role '{role.name}'"
        )
    return [ops.RevokeFromRole(role.name, entry)]


def _role(session, name: str) -> Role:
    role = session.catalog.roles.get(name)
    if role is None:
        raise QueryError(ErrorCode.UNKNOWN_AUTHID, f"Unknown authorization ID `{name}`@`%`")
    return role


def _require_may_grant(session, name: str) -> Role:
    """The role, if the session holds every privilege it holds (with GRANT_PRIV at each level):
    granting, changing or dropping a role never reaches past what the granter has."""
    role = _role(session, name)
    for grant in role.grants:
        _require_grantor(session, grant.db, grant.table, grant.privileges)
    return role


def create_role(session, statement: st.CreateRole) -> list[ops.Op]:
    require_user_admin(session)
    created = []
    for name in statement.names:
        if name in session.catalog.roles:
            if statement.if_not_exists:
                continue
            raise QueryError(
                ErrorCode.CANNOT_USER, f"Operation CREATE ROLE failed for '{name}'@'%'"
            )
        created.append(ops.CreateRole(Role(name, statement.comment)))
    return created


def drop_role(session, statement: st.DropRole) -> list[ops.Op]:
    require_user_admin(session)
    dropped = []
    for name in statement.names:
        if name not in session.catalog.roles:
            if statement.if_exists:
                continue
            raise QueryError(ErrorCode.CANNOT_USER, f"Operation DROP ROLE failed for '{name}'@'%'")
        dropped.append(ops.DropRole(_require_may_grant(session, name).name))
    return dropped


def grant_roles(session, statement: st.GrantRoles) -> list[ops.Op]:
    """GRANT 'r', ... TO user and REVOKE 'r', ... FROM user."""
    require_user_admin(session)
    user = statement.user
    target = session.catalog.users.get((user.name, user.host))
    if target is None:
        raise QueryError(
            ErrorCode.PASSWORD_NO_MATCH,
            f"Can't find any matching row in the user table for '{user.name}'@'{user.host}'",
        )
    _require_may_change(session, target)
    changes = []
    for name in dict.fromkeys(statement.roles):
        role = _require_may_grant(session, name)
        if not statement.revoke:
            if role.name not in target.roles:
                changes.append(ops.GrantRole(target.name, target.host, role.name))
            continue
        if role.name not in target.roles:
            raise QueryError(
                ErrorCode.NONEXISTING_GRANT,
                f"There is no such grant defined for user '{target.name}' on host '{target.host}'",
            )
        changes.append(ops.RevokeRole(target.name, target.host, role.name))
    return changes


def show_roles_rows(session) -> list[tuple]:
    """Doris's SHOW ROLES: each role, its users and its privileges by level (GRANT_PRIV)."""
    require_user_admin(session)
    holders: dict[str, list[str]] = {}
    for user in list(session.catalog.users.values()):
        for name in user.roles:
            holders.setdefault(name, []).append(user.identity)
    rows = []
    for role in sorted(list(session.catalog.roles.values()), key=lambda role: role.name):
        levels = _privileges_by_level(role.grants)
        users = ", ".join(sorted(holders.get(role.name, ()))) or None
        rows.append((role.name, role.comment, users, *levels, None, None))
    return rows


def show_all_grants_rows(session) -> list[tuple]:
    """Doris's SHOW ALL GRANTS: every account with what it holds, its roles' included
    (GRANT_PRIV)."""
    require_user_admin(session)
    catalog = session.catalog
    rows = []
    for key in sorted(list(catalog.users)):
        user = catalog.users[key]
        global_, catalogs, databases, tables = _privileges_by_level(
            catalog.effective_user(user).grants
        )
        password = "Yes" if user.password_hash else "No"
        roles = ",".join(user.roles) or None
        rows.append(
            (user.identity, None, password, roles, global_, catalogs, databases, tables)
            + (None, None, None)
        )
    return rows


def _privileges_by_level(grants: tuple[Grant, ...]) -> tuple[str | None, ...]:
    """Global, catalog, database and table privileges as Doris's SHOW ROLES and SHOW GRANTS
    write them: `Select_priv,Load_priv`, by object `internal.db: ...; internal.db.t: ...`."""

    def names(grant: Grant) -> str:
        return ",".join(sorted(name.capitalize() for name in grant.privileges))

    global_ = [names(grant) for grant in grants if grant.db == "*"]
    databases = [
        f"internal.{grant.db}: {names(grant)}"
        for grant in grants
        if grant.db != "*" and grant.table == "*"
    ]
    tables = [
        f"internal.{grant.db}.{grant.table}: {names(grant)}"
        for grant in grants
        if grant.table != "*"
    ]
    return (
        ",".join(global_) or None,
        None,
        "; ".join(databases) or None,
        "; ".join(tables) or None,
    )


def show_create_user(session, target: st.UserName) -> str:
    """MySQL's SHOW CREATE USER: the account's password hash and lock-out policy."""
    user = session.catalog.users.get((target.name, target.host))
    if user is None or not _is_own(session, user):
        require_user_admin(session)
    if user is None:
        raise QueryError(
            1396, f"Operation SHOW CREATE USER failed for '{target.name}'@'{target.host}'"
        )
    if not _is_own(session, user):
        _require_may_change(session, user)
    text = f"CREATE USER {user.identity} IDENTIFIED WITH 'mysql_native_password'"
    if user.password_hash:
        text += f" AS '{user.password_hash}'"
    lock_seconds = user.password_lock_seconds
    if lock_seconds == LOCKED_UNTIL_UNLOCK:
        lock_time = "UNBOUNDED"
    elif lock_seconds % SECONDS_PER_DAY == 0:
        lock_time = str(lock_seconds // SECONDS_PER_DAY)
    else:
        lock_time = f"{lock_seconds} SECOND"
    return (
        f"{text} FAILED_LOGIN_ATTEMPTS {user.failed_login_attempts} PASSWORD_LOCK_TIME {lock_time}"
    )


def show_grants_rows(session, target: st.UserName | None) -> list[tuple]:
    user = _named_user(
        session, target, 1141, "There is no such grant defined for user '{name}' on host '{host}'"
    )
    if not _is_own(session, user) and not privileges.has(session.user, privileges.GRANT):
        raise QueryError(
            1044, f"Access denied for user {session.user.identity} to database 'mysql'"
        )
    lines = [privileges.grant_text(user, grant) for grant in user.grants]
    if not lines:
        lines = [f"GRANT USAGE_PRIV ON *.* TO {user.identity}"]
    if user.roles:
        roles = ", ".join(f"'{name}'" for name in user.roles)
        lines.append(f"GRANT {roles} TO {user.identity}")
    return [(line,) for line in lines]
