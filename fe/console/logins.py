"""Browser logins: a random session id in an HttpOnly, SameSite=Strict cookie names a Login kept
here (never the password); every change also carries the login's CSRF token, which the page
holds and a cross-site form cannot know."""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from fe.console.limits import ConsoleLimits

COOKIE = "quire_console"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf"


@dataclass
class Login:
    user: str
    host: str
    csrf: str
    session: object  # the QuireSession the editor's statements run in
    pages: object  # the QuireSession the pages' SHOW statements run in (kept out of the history)
    seen: float = field(default_factory=time.monotonic)
    pager: object | None = None  # the editor's open result (statements.Pager)


class Logins:
    def __init__(self, limits: ConsoleLimits):
        self.limits = limits
        self._logins: OrderedDict[str, Login] = OrderedDict()

    def add(self, user: str, host: str, session, pages) -> tuple[str, Login]:
        self._expire()
        while len(self._logins) >= self.limits.max_logins:
            _, oldest = self._logins.popitem(last=False)
            _close(oldest)
        sid = secrets.token_urlsafe(32)
        login = Login(user, host, secrets.token_urlsafe(32), session, pages)
        self._logins[sid] = login
        return sid, login

    def get(self, sid: str | None) -> Login | None:
        if not sid:
            return None
        self._expire()
        login = self._logins.get(sid)
        if login is None:
            return None
        login.seen = time.monotonic()
        self._logins.move_to_end(sid)
        return login

    def remove(self, sid: str | None) -> None:
        login = self._logins.pop(sid or "", None)
        if login is not None:
            _close(login)

    def __len__(self) -> int:
        return len(self._logins)

    def _expire(self) -> None:
        deadline = time.monotonic() - self.limits.idle_seconds
        while self._logins:
            sid, login = next(iter(self._logins.items()))
            if login.seen >= deadline:
                return
            del self._logins[sid]
            _close(login)


def csrf_ok(login: Login, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(login.csrf, given)


def _close(login: Login) -> None:
    login.pager = None  # its rows' generator is closed by the event loop once unreferenced
