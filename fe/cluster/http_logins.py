"""HTTP basic auth as a MySQL login: the account whose password the header proves, counted by
the lock-out as a MySQL login is (the HTTP API, Stream Load, Spark's read plans and writes)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import BasicAuth, web

from fe.security.lockout import LoginTracker
from fe.statements.accounts import password_login
from metadata.catalog import Catalog
from metadata.records import User


@dataclass(frozen=True)
class HttpLogin:
    user: User | None  # None: no such account, or a wrong password
    name: str  # the user name the header gave
    password_given: bool
    blocked: str | None = None  # the lock-out's refusal, if the account is locked

    def access_denied(self) -> str:
        """MySQL's 1045 message for this login."""
        using = "YES" if self.password_given else "NO"
        return f"Access denied for user '{self.name}' (using password: {using})"


def basic_auth_login(
    catalog: Catalog, tracker: LoginTracker, request: web.Request
) -> HttpLogin | None:
    """The login the request's Authorization header makes; None if it has no valid one."""
    try:
        credentials = BasicAuth.decode(request.headers.get("Authorization", ""), "utf-8")
    except ValueError:
        return None
    user, blocked = password_login(
        catalog, tracker, credentials.login, credentials.password, request.remote or ""
    )
    return HttpLogin(
        user if blocked is None else None,
        credentials.login,
        bool(credentials.password),
        blocked.message if blocked is not None else None,
    )
