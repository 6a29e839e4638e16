"""The cluster token stays with the nodes that hold it: /role never sends it, a joining node
presents it (given by the operator in a file or the environment), and only its owner reads it."""

import json
import stat
import subprocess
import uuid

from fe.cluster.helper import TOKEN_ENVIRONMENT_VARIABLE
from tests.harness import (
    QuireProcess,
    cluster_token,
    execute,
    run_quire,
    start_fails,
    wait_until,
)


def curl(*args: str) -> tuple[int, str]:
    """(HTTP status, body) of a curl call, as an attacker on the FE's host runs it."""
    output = subprocess.run(
        ["curl", "-s", "-m", "10", "-w", "\n%{http_code}", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    body, _, status = output.rpartition("\n")
    return int(status), body


def test_a_local_process_gets_no_token_and_no_fe_to_fe_endpoint(leader):
    token = cluster_token(leader)
    base = f"http://127.0.0.1:{leader.http_port}"
    for query in ("", f"?host=127.0.0.1&port={leader.edit_log_port}"):
        status, body = curl(f"{base}/role{query}")
        assert status == 401 and token not in body, body
    status, body = curl(
        "-X", "POST", "-d", '{"user": "root", "sql": "SELECT 1"}', f"{base}/api/forward"
    )
    assert status == 401 and token not in body
    for path in ("/dump", "/image"):
        status, body = curl(f"{base}{path}")
        assert status == 401 and "root" not in body, (path, body)

    # Even its holder is not sent the token back.
    status, body = curl(
        "-H", f"X-Quire-Token: {token}", f"{base}/role?host=127.0.0.1&port={leader.edit_log_port}"
    )
    assert status == 200 and token not in body
    assert json.loads(body)["followers"] == [f"127.0.0.1:{leader.edit_log_port}"]


def test_token_files_and_meta_dir_are_for_their_owner_only(leader):
    image_dir = leader.meta_dir / "image"
    assert stat.S_IMODE(leader.meta_dir.stat().st_mode) == 0o700
    for name in ("VERSION", "ROLE"):
        assert stat.S_IMODE((image_dir / name).stat().st_mode) == 0o600, name


def test_a_joiner_without_the_token_or_with_a_wrong_one_is_refused(tmp_path, leader):
    node = QuireProcess(tmp_path / "joiner", command="fe").join_through(leader)
    execute(leader, f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{node.edit_log_port}"')

    del node.env[TOKEN_ENVIRONMENT_VARIABLE]
    log = start_fails(node)
    assert "needs the cluster token" in log and "quire token" in log and "--token-file" in log

    node.env[TOKEN_ENVIRONMENT_VARIABLE] = "0" * 32
    log = start_fails(node)
    assert "refused this node's cluster token" in log
    assert not (node.meta_dir / "image" / "VERSION").exists()


def test_a_joiner_given_the_token_in_a_file_joins(tmp_path, leader):
    token = run_quire("token", *leader.args()[4:])
    assert token.returncode == 0, token.stderr
    printed = token.stdout
    assert printed.strip() == cluster_token(leader)
    token_file = tmp_path / "token"
    token_file.write_text(printed)
    token_file.chmod(0o600)

    node = QuireProcess(tmp_path / "joiner", command="fe").join_through(leader)
    del node.env[TOKEN_ENVIRONMENT_VARIABLE]
    node.extra_args += ["--token-file", str(token_file)]
    execute(
        leader,
        "CREATE DATABASE joined",
        f'ALTER SYSTEM ADD OBSERVER "127.0.0.1:{node.edit_log_port}"',
    )
    try:
        node.start()
        wait_until(
            lambda: ("joined",) in execute(node, "SHOW DATABASES"), 30, "the joiner to follow"
        )
        cmdline = open(f"/proc/{node.process.pid}/cmdline", "rb").read().decode(errors="replace")
        assert cluster_token(leader) not in cmdline
        assert cluster_token(node) == cluster_token(leader)
    finally:
        node.stop()


def test_the_leader_runs_only_statements_that_are_forwarded(leader):
    token = cluster_token(leader)
    url = f"http://127.0.0.1:{leader.http_port}/api/forward"

    def forward(sql: str, request_id: str | None = None) -> dict:
        request = {"version": 1, "sql": sql, "user": "root", "user_host": "%", "database": None}
        request |= {"variables": {}, "request_id": request_id or uuid.uuid4().hex}
        body = json.dumps(request)
        status, answer = curl("-X", "POST", "-H", f"X-Quire-Token: {token}", "-d", body, url)
        assert status == 200, answer
        return json.loads(answer)

    for sql in ("SELECT 1", "SHOW DATABASES", "SET SESSION query_timeout = 30", "KILL 1"):
        answer = forward(sql)
        assert (answer["outcome"], answer["code"]) == ("refused", 1105), sql
    assert forward("CREATE DATABASE forwarded")["outcome"] == "done"
    assert ("forwarded",) in execute(leader, "SHOW DATABASES")

    # Sent again with its id (the FE retries after a failover), a statement takes effect once
    # and gets the first answer: success for the one that made the database, 1007 for another.
    first = forward("CREATE DATABASE once", request_id="r-once")
    again = forward("CREATE DATABASE once", request_id="r-once")
    assert again["outcome"] == "done" and again["journal_id"] >= first["journal_id"]
    assert forward("CREATE DATABASE once")["code"] == 1007
    assert forward("CREATE DATABASE forwarded", request_id="r-refused")["code"] == 1007
    assert forward("CREATE DATABASE forwarded", request_id="r-refused")["code"] == 1007
    names = [row[0] for row in execute(leader, "SHOW DATABASES")]
    assert names.count("once") == 1

    # Without an id, with one that is not an id, or in any other shape than a version 1
    # forward request, the leader runs nothing and says why.
    unmarked = {"version": 1, "sql": "CREATE DATABASE unmarked", "user": "root"}
    unmarked |= {"user_host": "%", "database": None, "variables": {}}
    for body in (
        unmarked,
        {**unmarked, "request_id": "x" * 65},
        {**unmarked, "request_id": "r", "version": 2},
        {**unmarked, "request_id": "r", "variables": {"a": [1]}},
        {**unmarked, "request_id": "r", "user": 7},
        {**unmarked, "request_id": "r", "retry": True},
        [unmarked],
    ):
        status, answer = curl(
            "-X", "POST", "-H", f"X-Quire-Token: {token}", "-d", json.dumps(body), url
        )  # fmt: skip
        assert status == 400 and "ForwardRequest" in json.loads(answer)["msg"], (body, answer)
    status, answer = curl("-X", "POST", "-H", f"X-Quire-Token: {token}", "-d", "{not json", url)
    assert status == 400 and "not JSON" in answer
    assert ("unmarked",) not in execute(leader, "SHOW DATABASES")
