"""The web console (http://fe:http_port/) in a real browser: headless Chromium from Debian driven
by Playwright. Log in with a MySQL account, browse the cluster and the catalog, run queries and
page through them, download CSV, kill a session, change a config key; a user without grants sees
none of it; a forged cross-site POST changes nothing; a frontend killed with kill -9 shows as down
within seconds and an observer says what it is."""

from __future__ import annotations

import csv
import http.server
import io
import re
import subprocess
import threading

import pymysql
import pytest
import requests
from playwright.sync_api import expect, sync_playwright

from tests.harness import (
    QuireProcess,
    add_and_start,
    cluster_token,
    execute,
    free_port,
    wait_until,
)

CHROMIUM = "/usr/bin/chromium"  # Debian's chromium (scripts/setup.sh installs it)
PAGES = ("cluster", "catalog", "sql", "sessions", "loads", "charts", "config")
ROWS = 250


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def quire(tmp_path_factory):
    node = QuireProcess(tmp_path_factory.mktemp("console") / "q").start()
    execute(
        node,
        "CREATE DATABASE shop",
        "CREATE TABLE shop.orders (id INT, item VARCHAR(20), price DECIMAL(10,2)) "
        "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
        "INSERT INTO shop.orders VALUES "
        + ",".join(f"({i}, 'item{i}', {i}.25)" for i in range(1, ROWS))
        + f",({ROWS}, NULL, NULL)",
        "CREATE USER nobody IDENTIFIED BY 'nopass'",
    )
    yield node
    node.stop()


def base(node) -> str:
    return f"http://127.0.0.1:{node.http_port}"


def logged_in(browser, node, user="root", password=""):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(base(node) + "/")
    page.fill("input[name=user]", user)
    page.fill("input[name=password]", password)
    page.click("#login-button")
    page.wait_for_url("**/console/cluster")
    return page


def run_sql(page, sql: str) -> None:
    page.goto(page.url.split("/console/")[0] + "/console/sql")
    page.fill("#sql", sql)
    page.click("#run")
    page.wait_for_selector("#result > *")


def test_login_browse_query_page_download_and_logout(browser, quire):
    page = browser.new_page()
    page.goto(base(quire) + "/console/cluster")
    expect(page).to_have_url(re.compile(r".*/console/login.*"))
    page.fill("input[name=user]", "root")
    page.fill("input[name=password]", "wrong")
    page.click("#login-button")
    expect(page.locator("#login-error")).to_contain_text("Access denied for user 'root'")
    page.close()

    page = logged_in(browser, quire)
    expect(page.locator("#frontends tbody tr")).to_have_count(1)
    expect(page.locator("#leader")).not_to_have_text("unknown")
    expect(page.locator("#embedded")).to_contain_text("runs the TN and a CN")

    page.click("text=Catalog")
    page.click("#databases >> text=shop")
    rows_at = page.locator("#tables th").all_inner_texts().index("Rows")
    expect(page.locator("#tables tbody tr td").nth(rows_at)).to_have_text(str(ROWS))
    page.click("#tables >> text=orders")
    expect(page.locator("#create-table")).to_contain_text("UNIQUE KEY(`id`)")
    expect(page.locator("#columns")).to_contain_text("decimal(10,2)")
    expect(page.locator("#tablets tbody tr")).to_have_count(2)

    run_sql(page, "SELECT id, item, price FROM shop.orders ORDER BY id")
    expect(page.locator("#result-summary")).to_contain_text("Rows 1–100, more follow")
    expect(page.locator("#result-table tbody tr")).to_have_count(100)
    page.click("#next-page")
    expect(page.locator("#result-summary")).to_contain_text("Rows 101–200")
    page.click("#next-page")
    expect(page.locator("#result-summary")).to_contain_text(f"Rows 201–{ROWS} (")
    expect(page.locator("#next-page")).to_have_count(0)
    last = page.locator("#result-table tbody tr").last
    expect(last.locator("td.null")).to_have_count(2)  # NULL shown as NULL, not as text

    run_sql(page, "SELECT id FROM shop.orders ORDER BY id LIMIT 200")  # pages end exactly
    page.click("#next-page")
    expect(page.locator("#result-summary")).to_contain_text("Rows 101–200 (")
    expect(page.locator("#next-page")).to_have_count(0)

    run_sql(page, "SELEC 1")
    expect(page.locator("#result .error")).to_contain_text("ERROR 1064 (42000)")
    run_sql(page, "SELECT * FROM shop.missing")
    expect(page.locator("#result .error")).to_contain_text("ERROR 1146 (42S02)")
    run_sql(page, "UPDATE shop.orders SET price = 9.99 WHERE id = 1")
    expect(page.locator("#result-ok")).to_contain_text("1 row affected")
    assert str(execute(quire, "SELECT price FROM shop.orders WHERE id = 1")[0][0]) == "9.99"

    page.fill("#sql", "SELECT item FROM shop.orders WHERE id <= 3 ORDER BY id")
    page.click("#explain")
    expect(page.locator("#result-table")).to_be_visible()

    with page.expect_download() as download:
        page.click("#csv")
    text = open(download.value.path(), encoding="utf-8").read()
    assert list(csv.reader(io.StringIO(text))) == [["item"], ["item1"], ["item2"], ["item3"]]

    page.click("#logout")
    page.wait_for_url("**/console/login")
    page.goto(base(quire) + "/console/sql")
    expect(page).to_have_url(re.compile(r".*/console/login.*"))
    page.close()


def test_kill_a_session_and_change_a_config_key(browser, quire):
    victim = pymysql.connect(host="127.0.0.1", port=quire.query_port, user="root")
    victim_id = victim.thread_id()
    victim.cursor().execute("SELECT 'from a mysql client'")
    victim.cursor().execute("CREATE USER temp IDENTIFIED BY 'hunter2'")
    page = logged_in(browser, quire)
    page.click("text=Sessions")
    button = page.locator(f"button.kill[data-id='{victim_id}']")
    page.on("dialog", lambda dialog: dialog.accept())
    button.click()
    expect(page.locator("#kill-message")).to_contain_text(f"Killed {victim_id}")
    with pytest.raises(pymysql.err.OperationalError):
        victim.cursor().execute("SELECT 1")
    expect(page.locator("#recent")).to_contain_text(f"KILL {victim_id}")  # every client's
    expect(page.locator("#recent")).to_contain_text("SELECT 'from a mysql client'")
    expect(page.locator("#recent")).to_contain_text("CREATE USER temp IDENTIFIED BY <secret>")
    assert "hunter2" not in page.content()

    page.click("text=Config")
    row = page.locator("#config-table tr[data-key='catalog_trash_expire_second']")
    row.locator("input[name=value]").fill("4321")
    row.locator("button").click()
    expect(page.locator("#config-message")).to_contain_text("catalog_trash_expire_second = 4321")
    shown = execute(quire, "ADMIN SHOW FRONTEND CONFIG LIKE 'catalog_trash_expire_second'")
    assert shown[0][1] == "4321"

    execute(quire, "INSERT INTO shop.orders VALUES (9001, 'charted', 1.5)")  # a commit to chart

    def visible_p99() -> list:
        series = page.request.get(base(quire) + "/console/charts/data").json()
        return [ms for ms in series["visible"].get("cn (this process)", []) if ms is not None]

    wait_until(visible_p99, 20, "the CN's commit-to-visible p99 on the Charts page")
    assert all(0 <= ms < 10_000 for ms in visible_p99())
    page.close()


def test_a_user_without_grants_sees_nothing_it_may_not(browser, quire):
    execute(quire, "SELECT 'a secret of root' FROM shop.orders LIMIT 1")
    page = logged_in(browser, quire, "nobody", "nopass")
    expect(page.locator("main .error").first).to_contain_text("ERROR 1227")
    expect(page.locator("#frontends")).to_have_count(0)
    page.click("text=Catalog")
    expect(page.locator("#databases")).not_to_contain_text("shop")
    page.goto(base(quire) + "/console/catalog/shop/orders")
    expect(page.locator("main .error")).to_contain_text("ERROR 1142")
    expect(page.locator("#create-table")).to_have_count(0)
    run_sql(page, "SELECT * FROM shop.orders")
    expect(page.locator("#result .error")).to_contain_text("ERROR 1142 (42000)")
    page.click("text=Config")
    expect(page.locator("main .error")).to_contain_text("ERROR 1227")
    page.click("text=Charts")
    expect(page.locator("main .error")).to_contain_text("ERROR 1227")
    page.click("text=Sessions")
    expect(page.locator("#recent")).to_contain_text("SELECT * FROM shop.orders")  # its own
    expect(page.locator("#recent")).not_to_contain_text("a secret of root")
    expect(page.locator("#processlist tbody tr")).to_have_count(0)  # root's are not its own
    token = cluster_token(quire)
    for name in PAGES:
        page.goto(base(quire) + "/console/" + name)
        assert token not in page.content()
    page.close()
    root_page = logged_in(browser, quire)
    for name in PAGES:
        root_page.goto(base(quire) + "/console/" + name)
        assert token not in root_page.content()
    root_page.close()


def test_the_loads_page_lists_a_stream_load(browser, quire, tmp_path):
    data = tmp_path / "orders.csv"
    data.write_text("".join(f"{i},loaded{i},1.00\n" for i in range(1000, 1100)))
    url = f"{base(quire)}/api/shop/orders/_stream_load"
    loaded = subprocess.run(
        ["curl", "-s", "--location-trusted", "-u", "root:", "-H", "label:console_load",
         "-H", "column_separator:,", "-T", str(data), url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert '"Status": "Success"' in loaded.stdout, loaded.stdout
    page = logged_in(browser, quire)
    page.click("text=Loads")
    row = page.locator("#loads tbody tr", has_text="console_load")
    expect(row).to_contain_text("FINISHED")
    expect(row).to_contain_text("stream_load")
    columns = page.locator("#loads th").all_inner_texts()
    expect(row.locator("td").nth(columns.index("LoadedRows"))).to_have_text("100")
    expect(row.locator("td").nth(columns.index("Database"))).to_have_text("shop")
    expect(row.locator("td").nth(columns.index("Message"))).to_have_text("OK")
    page.close()
    # A user who may see another table of the database does not see this table's load.
    execute(
        quire,
        "CREATE TABLE shop.notes (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
        "CREATE USER clerk IDENTIFIED BY 'clerkpass'",
        "GRANT SELECT_PRIV ON shop.notes TO clerk",
    )
    page = logged_in(browser, quire, "clerk", "clerkpass")
    page.goto(base(quire) + "/console/loads")
    expect(page.locator("#loads")).to_be_visible()
    expect(page.locator("#loads")).not_to_contain_text("console_load")
    page.close()


class _Forger(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_GET(self):  # noqa: N802 - the stdlib's name
        body = (
            f'<form id="f" method="post" action="{self.target}/console/config">'
            '<input name="key" value="catalog_trash_expire_second">'
            '<input name="value" value="1"></form>'
            '<script>document.getElementById("f").submit()</script>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_forged_cross_site_post_is_refused(browser, quire):
    execute(quire, "ADMIN SET FRONTEND CONFIG ('catalog_trash_expire_second' = '5555')")
    page = logged_in(browser, quire)  # the victim is logged in as root
    _Forger.target = base(quire)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Forger)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.wait_for_url(f"{base(quire)}/console/config")
        expect(page.locator("body")).to_contain_text("Refused: cross-site request")
    finally:
        server.shutdown()
    shown = execute(quire, "ADMIN SHOW FRONTEND CONFIG LIKE 'catalog_trash_expire_second'")
    assert shown[0][1] == "5555"

    # Without a browser: the session cookie alone changes nothing.
    session = requests.Session()
    session.post(base(quire) + "/console/login", data={"user": "root", "password": ""})
    refused = session.post(
        base(quire) + "/console/config", data={"key": "catalog_trash_expire_second", "value": "2"}
    )
    assert refused.status_code == 403
    refused = session.post(
        base(quire) + "/console/sql/run",
        data={"sql": "DROP DATABASE shop"},
        headers={"X-CSRF-Token": "guess", "Origin": "http://evil.example"},
    )
    assert refused.status_code == 403
    assert ("shop",) in execute(quire, "SHOW DATABASES")
    page.close()


def test_a_killed_frontend_shows_as_down_and_an_observer_says_so(browser, tmp_path):
    leader = QuireProcess(tmp_path / "leader", command="fe").start()
    observer = QuireProcess(tmp_path / "observer", command="fe").join_through(leader)
    try:
        add_and_start(leader, observer, "OBSERVER")
        wait_until(lambda: len(execute(observer, "SHOW FRONTENDS")) == 2, 30, "the observer")
        page = logged_in(browser, observer)
        expect(page.locator("#frontend-role")).to_contain_text("This FE is an observer")
        page.close()

        page = logged_in(browser, leader)
        rows = page.locator("#frontends tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator("#frontends tr.down")).to_have_count(0, timeout=15_000)
        observer.kill()
        down = page.locator("#frontends tr.down")
        expect(down).to_have_count(1, timeout=10_000)  # refreshed every 2 s, polled every 1 s
        expect(down).to_contain_text("OBSERVER")
        page.close()
    finally:
        observer.stop()
        leader.stop()
