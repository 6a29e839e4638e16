"""Failed-login tracking and temporary account locking: MySQL's FAILED_LOGIN_ATTEMPTS and
PASSWORD_LOCK_TIME. After that many consecutive wrong passwords an account refuses every login,
the right password included, until the lock time has passed or ACCOUNT UNLOCK.

As in a MySQL server, the count and the lock live in memory: each FE counts the logins it serves
and a restart forgets them. What resets them is journaled, so it reaches every FE: a new policy or
ACCOUNT UNLOCK gives the account a new `lockout_epoch`, and state counted under another epoch is
void. The tracker holds at most `max_accounts` accounts, evicting the least recently failed.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from fe.mysql.errors import ErrorCode, QueryError
from metadata.records import LOCKED_UNTIL_UNLOCK, User

logger = logging.getLogger(__name__)

SECONDS_PER_DAY = 86_400


@dataclass
class _Count:
    epoch: int
    failures: int = 0
    locked_at: float | None = None


class LoginTracker:
    def __init__(self, max_accounts: int, clock: Callable[[], float] = time.monotonic):
        assert max_accounts > 0, max_accounts
        self.max_accounts = max_accounts
        self._clock = clock
        self._counts: OrderedDict[tuple[str, str], _Count] = OrderedDict()
        self._lock = threading.Lock()

    def login(self, account: User, password_ok: bool, client_host: str) -> QueryError | None:
        """Count one login to `account` from `client_host`; the error that refuses it whatever
        the password (3955) while the account is blocked, else None."""
        key = (account.name, account.host)
        with self._lock:
            if not account.tracks_failed_logins:
                self._counts.pop(key, None)
                return None
            now = self._clock()
            count = self._counts.get(key)
            if (
                count is None
                or count.epoch != account.lockout_epoch
                or _expired(account, count, now)
            ):
                count = _Count(account.lockout_epoch)
            if count.locked_at is None:
                if password_ok:
                    self._counts.pop(key, None)
                    return None
                count.failures += 1
                if count.failures >= account.failed_login_attempts:
                    count.locked_at = now
                    logger.warning(
                        "account %s blocked after %d consecutive failed logins (the last from %s)",
                        account.identity,
                        count.failures,
                        client_host,
                    )
            self._remember(key, count)
            if count.locked_at is None:
                return None
            return blocked(account, client_host, now - count.locked_at)

    def _remember(self, key: tuple[str, str], count: _Count) -> None:
        self._counts[key] = count
        self._counts.move_to_end(key)
        while len(self._counts) > self.max_accounts:
            evicted, _ = self._counts.popitem(last=False)
            logger.warning("failed-login tracking is full: forgot the count of %r", evicted)


def _expired(account: User, count: _Count, now: float) -> bool:
    lock_seconds = account.password_lock_seconds
    return (
        count.locked_at is not None
        and lock_seconds != LOCKED_UNTIL_UNLOCK
        and now - count.locked_at >= lock_seconds
    )


def blocked(account: User, client_host: str, locked_for: float) -> QueryError:
    """MySQL's 3955, in days as MySQL says it (Doris's seconds for a lock time of DAY/HOUR/SECOND
    that is not whole days)."""
    lock_seconds = account.password_lock_seconds
    if lock_seconds == LOCKED_UNTIL_UNLOCK:
        unit, lock, remaining = "day", "unlimited", "unlimited"
    else:
        size, unit = (
            (SECONDS_PER_DAY, "day") if lock_seconds % SECONDS_PER_DAY == 0 else (1, "second")
        )
        lock = str(lock_seconds // size)
        remaining = str(max(1, math.ceil((lock_seconds - locked_for) / size)))
    return QueryError(
        ErrorCode.USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK,
        f"Access denied for user '{account.name}'@'{client_host}'. Account is blocked for "
        f"{lock} {unit}(s) ({remaining} {unit}(s) remaining) due to "
        f"{account.failed_login_attempts} consecutive failed logins.",
    )
