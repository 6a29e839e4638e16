"""The FE's HTTP API against a running `quire up`, through requests."""

from __future__ import annotations

import pymysql
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from image.identity import read_version
from tests.harness import run, wait_until

TIMEOUT_SECONDS = 10
ROOT = ("root", "")
ADMIN_ENDPOINTS = [
    ("GET", "/info"),
    ("GET", "/version"),
    ("GET", "/role"),
    ("GET", "/journal_id"),
    ("GET", "/image"),
    ("POST", "/api/checkpoint"),
]


@pytest.fixture(scope="module")
def api(quire):
    def call(method: str, path: str, **kwargs) -> requests.Response:
        url = f"http://127.0.0.1:{quire.http_port}{path}"
        return requests.request(method, url, timeout=TIMEOUT_SECONDS, **kwargs)

    return call


@pytest.fixture(scope="module")
def root(root):
    """The root connection, with what this module's tests share."""
    run(root, "CREATE USER reader IDENTIFIED BY 'pw'")
    run(root, "CREATE DATABASE IF NOT EXISTS web")
    run(root, "GRANT SELECT_PRIV ON web.* TO reader")
    run(root, "CREATE USER operator IDENTIFIED BY 'op'")
    run(root, "GRANT ADMIN_PRIV ON *.* TO operator")
    return root


def metrics(api) -> dict[str, float]:
    response = api("GET", "/metrics")
    assert response.status_code == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def journal_id(api) -> int:
    response = api("GET", "/journal_id", auth=ROOT)
    assert response.status_code == 200
    body = response.json()
    assert response.headers["X-Quire-Journal-Id"] == str(body["journal_id"])
    return body["journal_id"]


def test_health_is_open(api):
    response = api("GET", "/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "OK"
    assert isinstance(body["journal_id"], int) and body["journal_id"] > 0


def test_metrics_are_open_prometheus_text(quire, api, root):
    response = api("GET", "/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    for name in (
        "quire_journal_id",
        "quire_queries",
        "quire_query_errors",
        "quire_connections",
        "quire_checkpoint_age_seconds",
    ):
        assert f"\n{name}" in response.text, name
    before = metrics(api)
    assert before["quire_journal_id"] == journal_id(api)
    assert before["quire_connections"] >= 1  # the module's root connection
    assert before["quire_checkpoint_age_seconds"] >= 0

    extra = [quire.connect() for _ in range(3)]
    run(extra[0], "SELECT 1")
    with pytest.raises(pymysql.MySQLError):
        run(extra[0], "SELEC 1")
    after = metrics(api)
    assert after["quire_queries_total"] >= before["quire_queries_total"] + 2
    assert after["quire_query_errors_total"] >= before["quire_query_errors_total"] + 1
    assert after["quire_connections"] == before["quire_connections"] + 3
    for connection in extra:
        connection.close()
    wait_until(
        lambda: metrics(api)["quire_connections"] == before["quire_connections"],
        TIMEOUT_SECONDS,
        "quire_connections to count the closed connections out",
    )


REFUSED = {
    "no credentials": {},
    "a user without ADMIN_PRIV": {"auth": ("reader", "pw")},
    "root with a wrong password": {"auth": ("root", "wrong")},
    "an unknown user": {"auth": ("nobody", "")},
    "a wrong token": {"headers": {"X-Quire-Token": "0" * 32}},
    "a malformed Authorization header": {"headers": {"Authorization": "Basic !!!"}},
}
ADMITTED = ["root", "a user with ADMIN_PRIV", "the cluster token"]


@pytest.mark.parametrize("method, path", ADMIN_ENDPOINTS)
@pytest.mark.parametrize("kwargs", REFUSED.values(), ids=REFUSED.keys())
def test_admin_endpoints_need_an_admin(api, root, method, path, kwargs):
    response = api(method, path, **kwargs)
    assert response.status_code == 401
    assert response.json()["code"] == 401


def test_health_is_open_to_a_user_without_admin_priv(api, root):
    assert api("GET", "/api/health", auth=("reader", "pw")).status_code == 200


@pytest.mark.parametrize("method, path", ADMIN_ENDPOINTS)
@pytest.mark.parametrize("who", ADMITTED)
def test_admin_endpoints_let_an_admin_in(quire, api, root, method, path, who):
    kwargs = {
        "root": {"auth": ROOT},
        "a user with ADMIN_PRIV": {"auth": ("operator", "op")},
        "the cluster token": {
            "headers": {"X-Quire-Token": read_version(quire.meta_dir / "image").token}
        },
    }[who]
    response = api(method, path, **kwargs)
    # /image answers 404 until a first image exists; either way it let the caller in.
    allowed = (200, 404) if path == "/image" else (200,)
    assert response.status_code in allowed, (kwargs, response.status_code, response.text)


def test_info_version_and_role(quire, api, root):
    info = api("GET", "/info", auth=ROOT).json()
    assert info["query_port"] == quire.query_port
    assert info["http_port"] == quire.http_port
    assert info["edit_log_port"] == quire.edit_log_port
    assert info["is_leader"] is True
    assert info["journal_id"] == journal_id(api)
    databases = [row[0] for row in run(root, "SHOW DATABASES") if row[0] != "information_schema"]
    assert info["databases"] == len(databases)
    assert info["cluster_id"] == read_version(quire.meta_dir / "image").cluster_id

    version = api("GET", "/version", auth=ROOT).json()
    assert version["mysql_version"] == run(root, "SELECT VERSION()")[0][0].split("-")[0]

    role = api("GET", "/role", auth=ROOT).json()
    assert role["role"] == "FOLLOWER"
    assert role["name"] == info["name"]
    assert role["cluster_id"] == info["cluster_id"]


def test_journal_id_grows_after_ddl(api, root):
    before = journal_id(api)
    run(root, "CREATE DATABASE grows")
    after_create = journal_id(api)
    assert after_create > before
    run(root, "CREATE TABLE grows.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 3")
    assert journal_id(api) > after_create
    assert api("GET", "/api/health").json()["journal_id"] == journal_id(api)


def test_checkpoint_then_download_the_image(quire, api, root):
    run(root, "CREATE TABLE web.pages (url VARCHAR(200)) DISTRIBUTED BY HASH(url) BUCKETS 2")
    current = journal_id(api)
    response = api("POST", "/api/checkpoint", auth=ROOT)
    assert response.status_code == 200, response.text
    checkpoint = response.json()
    assert checkpoint["journal_id"] == current
    image_file = quire.meta_dir / "image" / f"image.{current}"
    assert checkpoint["image"] == image_file.name
    assert image_file.exists()
    assert metrics(api)["quire_checkpoint_age_seconds"] < 60

    download = api("GET", "/image", params={"version": current}, auth=ROOT)
    assert download.status_code == 200
    assert download.headers["Content-Type"] == "application/octet-stream"
    assert download.headers["X-Image-Version"] == str(current)
    assert download.content == image_file.read_bytes()

    for missing in (current + 1000, "abc"):
        response = api("GET", "/image", params={"version": missing}, auth=ROOT)
        assert response.status_code == 404
        assert response.json()["code"] == 404


def test_checkpoint_is_post_only(api, root):
    response = api("GET", "/api/checkpoint", auth=ROOT)
    assert response.status_code == 405
    assert api("GET", "/no/such/path", auth=ROOT).status_code == 404
