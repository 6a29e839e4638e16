"""Account lock-out (FAILED_LOGIN_ATTEMPTS / PASSWORD_LOCK_TIME) as an attacker guessing passwords
and the account's owner see it: PyMySQL, the mariadb CLI (which shows the SQLSTATE) and HTTP basic
auth against a real `quire up`."""

import pytest
import requests

from fe.security.lockout import LoginTracker
from metadata.records import User
from tests.harness import (
    QuireProcess,
    error_of,
    login_error,
    logs_in,
    mariadb_error,
    run,
    wait_until,
)

HTTP_TIMEOUT_SECONDS = 30
EXPIRY_DEADLINE_SECONDS = 60
REPLICATION_DEADLINE_SECONDS = 60
BLOCKED = 3955


def http_get(quire, user: str, password: str) -> requests.Response:
    url = f"http://127.0.0.1:{quire.http_port}/dump"
    return requests.get(url, auth=(user, password), timeout=HTTP_TIMEOUT_SECONDS)


def blocked_text(user: str, lock: str, remaining: str, attempts: int, unit: str = "day") -> str:
    return (
        f"Access denied for user '{user}'@'127.0.0.1'. Account is blocked for {lock} {unit}(s) "
        f"({remaining} {unit}(s) remaining) due to {attempts} consecutive failed logins."
    )


def test_wrong_passwords_block_the_account_even_for_the_right_password(quire, root):
    run(
        root,
        "CREATE USER victim IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 1",
    )
    run(
        root,
        "CREATE USER bystander IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 1",
    )
    assert login_error(quire, "victim", "guess1")[0] == 1045
    assert login_error(quire, "victim", "guess2")[0] == 1045
    assert login_error(quire, "victim", "guess3") == (BLOCKED, blocked_text("victim", "1", "1", 3))
    assert login_error(quire, "victim", "right") == (BLOCKED, blocked_text("victim", "1", "1", 3))
    assert mariadb_error(quire, "victim", "right") == (
        f"ERROR 3955 (HY000): {blocked_text('victim', '1', '1', 3)}"
    )
    assert logs_in(quire, "bystander", "right")
    assert logs_in(quire, "root", "")

    run(root, "ALTER USER victim ACCOUNT UNLOCK")
    assert logs_in(quire, "victim", "right")
    assert mariadb_error(quire, "victim", "right") == ""


def test_a_successful_login_starts_the_count_afresh(quire, root):
    run(
        root,
        "CREATE USER forgetful IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 1",
    )
    for _ in range(3):
        assert login_error(quire, "forgetful", "wrong")[0] == 1045
        assert login_error(quire, "forgetful", "")[0] == 1045
        assert logs_in(quire, "forgetful", "right")


def test_a_lock_of_seconds_ends_by_itself(quire, root):
    run(
        root,
        "CREATE USER brief IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME 2 SECOND",
    )
    assert login_error(quire, "brief", "wrong") == (
        BLOCKED,
        blocked_text("brief", "2", "2", 1, unit="second"),
    )
    wait_until(
        lambda: logs_in(quire, "brief", "right"), EXPIRY_DEADLINE_SECONDS, "the lock to expire"
    )
    # The count starts afresh after the lock: one more wrong password blocks again.
    assert login_error(quire, "brief", "wrong")[0] == BLOCKED


def test_doris_units_and_unbounded_locks(quire, root):
    run(
        root,
        "CREATE USER hourly IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME 2 HOUR",
    )
    assert login_error(quire, "hourly", "wrong") == (
        BLOCKED,
        blocked_text("hourly", "7200", "7200", 1, unit="second"),
    )
    run(
        root,
        "CREATE USER forever IDENTIFIED BY 'right' PASSWORD_LOCK_TIME UNBOUNDED FAILED_LOGIN_ATTEMPTS 2",
    )
    assert login_error(quire, "forever", "wrong")[0] == 1045
    assert login_error(quire, "forever", "wrong") == (
        BLOCKED,
        blocked_text("forever", "unlimited", "unlimited", 2),
    )
    run(root, "ALTER USER forever@'%' ACCOUNT_UNLOCK")
    assert logs_in(quire, "forever", "right")


def test_no_policy_means_no_lock(quire, root):
    run(root, "CREATE USER plain IDENTIFIED BY 'right'")
    run(root, "CREATE USER half IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 1")
    for _ in range(5):
        assert login_error(quire, "plain", "wrong")[0] == 1045
        assert login_error(quire, "half", "wrong")[0] == 1045
    assert logs_in(quire, "plain", "right") and logs_in(quire, "half", "right")


def test_alter_user_sets_the_policy_and_a_new_policy_unblocks(quire, root):
    run(root, "CREATE USER later IDENTIFIED BY 'right'")
    run(root, "ALTER USER later FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 3")
    assert login_error(quire, "later", "wrong")[0] == 1045
    assert login_error(quire, "later", "wrong") == (BLOCKED, blocked_text("later", "3", "3", 2))
    run(root, "ALTER USER later PASSWORD_LOCK_TIME 5")  # as in MySQL: a new policy resets
    assert logs_in(quire, "later", "right")
    assert login_error(quire, "later", "wrong")[0] == 1045
    assert login_error(quire, "later", "wrong") == (BLOCKED, blocked_text("later", "5", "5", 2))
    run(root, "ALTER USER later IDENTIFIED BY 'new' FAILED_LOGIN_ATTEMPTS 0")
    assert logs_in(quire, "later", "new")


def test_show_create_user_shows_the_policy(quire, root):
    run(root, "CREATE USER shown IDENTIFIED BY 'pw' FAILED_LOGIN_ATTEMPTS 4 PASSWORD_LOCK_TIME 2")
    run(root, "CREATE USER 'shown'@'10.%' PASSWORD_LOCK_TIME 30 SECOND")
    ((own_text,),) = run(root, "SHOW CREATE USER shown")
    assert own_text == (
        "CREATE USER 'shown'@'%' IDENTIFIED WITH 'mysql_native_password' "
        "AS '*D821809F681A40A6E379B50D0463EFAE20BDD122' "
        "FAILED_LOGIN_ATTEMPTS 4 PASSWORD_LOCK_TIME 2"
    )
    ((text,),) = run(root, "SHOW CREATE USER 'shown'@'10.%'")
    assert text.endswith(
        "IDENTIFIED WITH 'mysql_native_password' FAILED_LOGIN_ATTEMPTS 0 PASSWORD_LOCK_TIME 30 SECOND"
    )
    run(root, "ALTER USER 'shown'@'10.%' PASSWORD_LOCK_TIME UNBOUNDED")
    assert run(root, "SHOW CREATE USER 'shown'@'10.%'")[0][0].endswith(
        "PASSWORD_LOCK_TIME UNBOUNDED"
    )
    with quire.connect("shown", "pw") as own:
        assert run(own, "SHOW CREATE USER shown") == ((own_text,),)
        assert error_of(own, "SHOW CREATE USER root")[0] == 1227
    assert error_of(root, "SHOW CREATE USER nobody_at_all")[0] == 1396


def test_http_basic_auth_counts_with_the_mysql_logins(quire, root):
    run(
        root,
        "CREATE USER operator IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 1",
    )
    run(root, "GRANT ADMIN_PRIV ON *.* TO operator")
    assert http_get(quire, "operator", "right").status_code == 200
    assert http_get(quire, "operator", "wrong").status_code == 401
    assert login_error(quire, "operator", "wrong")[0] == 1045
    blocked = http_get(quire, "operator", "wrong")
    assert blocked.status_code == 401
    assert blocked.json()["msg"] == blocked_text("operator", "1", "1", 3)
    refused = http_get(quire, "operator", "right")
    assert refused.status_code == 401 and refused.json()["msg"] == blocked.json()["msg"]
    assert login_error(quire, "operator", "right")[0] == BLOCKED
    run(root, "ALTER USER operator ACCOUNT UNLOCK")
    assert http_get(quire, "operator", "right").status_code == 200


def test_only_account_administrators_change_the_policy(quire, root):
    run(
        root,
        "CREATE USER target IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME 1",
    )
    run(root, "CREATE USER nobody IDENTIFIED BY 'pw'")
    run(root, "CREATE USER granter IDENTIFIED BY 'pw'")
    run(root, "GRANT GRANT_PRIV ON *.* TO granter")
    run(root, "CREATE USER boss IDENTIFIED BY 'pw' FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME 1")
    run(root, "GRANT ADMIN_PRIV ON *.* TO boss")
    assert login_error(quire, "target", "wrong")[0] == BLOCKED
    assert login_error(quire, "boss", "wrong")[0] == BLOCKED
    nobody = quire.connect("nobody", "pw")
    assert error_of(nobody, "ALTER USER target ACCOUNT UNLOCK")[0] == 1227
    assert error_of(nobody, "ALTER USER nobody FAILED_LOGIN_ATTEMPTS 0")[0] == 1227
    assert error_of(nobody, "ALTER USER missing ACCOUNT UNLOCK")[0] == 1227
    run(nobody, "ALTER USER nobody IDENTIFIED BY 'pw2'")  # one's own password needs no privilege
    assert "ERROR 1227 (42000)" in mariadb_error(
        quire, "nobody", "pw2", "ALTER USER target ACCOUNT UNLOCK"
    )
    granter = quire.connect("granter", "pw")
    assert error_of(granter, "ALTER USER boss ACCOUNT UNLOCK")[0] == 1227
    assert login_error(quire, "boss", "pw")[0] == BLOCKED
    run(granter, "ALTER USER target ACCOUNT UNLOCK")
    assert logs_in(quire, "target", "right")
    assert error_of(root, "ALTER USER missing ACCOUNT UNLOCK")[0] == 1396
    run(root, "ALTER USER IF EXISTS missing ACCOUNT UNLOCK")
    nobody.close()
    granter.close()


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER USER target FAILED_LOGIN_ATTEMPTS 32768",
        "ALTER USER target PASSWORD_LOCK_TIME -1",
        "ALTER USER target PASSWORD_LOCK_TIME 1 WEEK",
        "CREATE USER extra ACCOUNT UNLOCK",
        "ALTER USER target",
    ],
    ids=["too many attempts", "negative lock time", "unknown unit", "unlock on create", "nothing"],
)
def test_a_policy_out_of_range_or_out_of_place_is_a_syntax_error(root, sql):
    assert error_of(root, sql)[0] == 1064, sql


def test_the_policy_survives_a_restart_and_an_image(fresh_quire):
    quire = fresh_quire.start()
    with quire.connect() as root:
        run(
            root,
            "CREATE USER kept IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1",
        )
        run(root, "CREATE USER altered IDENTIFIED BY 'right'")
        run(root, "ALTER USER altered FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME UNBOUNDED")
    assert login_error(quire, "kept", "wrong")[0] == 1045
    assert login_error(quire, "kept", "wrong")[0] == BLOCKED

    quire.restart()  # journal replay; as in MySQL, a restart forgets counts and locks
    assert logs_in(quire, "kept", "right")
    assert login_error(quire, "kept", "wrong")[0] == 1045
    assert login_error(quire, "kept", "wrong") == (BLOCKED, blocked_text("kept", "1", "1", 2))
    assert login_error(quire, "altered", "wrong") == (
        BLOCKED,
        blocked_text("altered", "unlimited", "unlimited", 1),
    )

    with quire.connect() as root:
        run(root, "ADMIN CHECKPOINT")
    quire.restart()  # from the image
    assert login_error(quire, "kept", "wrong")[0] == 1045
    assert login_error(quire, "kept", "wrong")[0] == BLOCKED
    assert login_error(quire, "altered", "wrong")[0] == BLOCKED


def test_each_fe_counts_its_own_logins_and_account_unlock_reaches_every_fe(tmp_path):
    leader = QuireProcess(tmp_path / "leader").start()
    observer = QuireProcess(tmp_path / "observer", command="fe").join_through(leader)
    try:
        with leader.connect() as root:
            run(root, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{observer.edit_log_port}"')
            run(
                root,
                "CREATE USER roamer IDENTIFIED BY 'right' FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME 1",
            )
        observer.start()
        wait_until(
            lambda: login_error(observer, "roamer", "wrong")[0] == BLOCKED,
            REPLICATION_DEADLINE_SECONDS,
            "the observer to know the account and block it",
        )
        assert logs_in(leader, "roamer", "right")  # the leader has seen no failure
        assert login_error(leader, "roamer", "wrong")[0] == BLOCKED
        with observer.connect() as root_on_observer:  # forwarded to the leader
            run(root_on_observer, "ALTER USER roamer ACCOUNT UNLOCK")
        assert logs_in(observer, "roamer", "right")
        assert logs_in(leader, "roamer", "right")
    finally:
        observer.stop()
        leader.stop()


def test_the_tracker_holds_a_bounded_number_of_accounts():
    now = [0.0]
    tracker = LoginTracker(max_accounts=2, clock=lambda: now[0])
    accounts = [
        User(f"u{i}", failed_login_attempts=2, password_lock_seconds=10, lockout_epoch=1)
        for i in range(3)
    ]
    for account in accounts:
        assert tracker.login(account, False, "10.0.0.1") is None
    # u0, the least recently failed, was forgotten: its next failure is its first again.
    assert tracker.login(accounts[0], False, "10.0.0.1") is None
    assert tracker.login(accounts[2], False, "10.0.0.1").code == BLOCKED
    now[0] = 10.0
    assert tracker.login(accounts[2], True, "10.0.0.1") is None
