"""The console's routes (under /console, and / redirecting there), mounted on the FE's HTTP API.

A GET shows a page; a POST changes something and must carry the login's CSRF token (htmx sends
it as a header from the page's body, forms as a field) and, if the browser says where it comes
from, come from this page's own origin. Pages run their SHOW statements as the logged-in user."""

from __future__ import annotations

import asyncio
import csv
import functools
import io
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from fe.console import statements
from fe.console.charts import Charts
from fe.console.limits import ConsoleLimits
from fe.console.loads import LOAD_COLUMNS, load_rows
from fe.console.logins import COOKIE, CSRF_FIELD, CSRF_HEADER, Login, Logins, csrf_ok
from fe.security import privileges
from fe.security.lockout import LoginTracker
from fe.sql import statements as st
from fe.statements.accounts import password_login
from fe.statements.data_sizes import table_sizes, total
from fe.statements.queries import SelectPlan
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)

PREFIX = "/console"
STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
CSV_ROWS_PER_WRITE = 1000
TN_TOTALS_SECONDS = 10.0
TN_TOTALS_MAX_TABLES = 1000
READ_STATEMENT_WORDS = ("SHOW", "DESC", "DESCRIBE", "EXPLAIN")


def logged_in(handler):
    """A page: shown to a login only (anyone else is sent to log in), which it is handed."""

    @functools.wraps(handler)
    async def shown(self, request: web.Request) -> web.StreamResponse:
        login = self._login(request)
        if login is None:
            return self._must_login(request)
        return await handler(self, request, login)

    return shown


def changes(handler):
    """A change: done for a login only, with its CSRF token and from this origin."""

    @functools.wraps(handler)
    async def done(self, request: web.Request) -> web.StreamResponse:
        login = self._login(request)
        refused = await self._refusal(request, login)
        if refused is not None:
            return refused
        return await handler(self, request, login)

    return done


def is_console(path: str) -> bool:
    return path == "/" or path == PREFIX or path.startswith(PREFIX + "/")


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Console:
    def __init__(
        self,
        catalog: Catalog,
        login_tracker: LoginTracker,
        new_session: Callable[[], object],
        limits: ConsoleLimits,
    ):
        self.catalog = catalog
        self.login_tracker = login_tracker
        self.new_session = new_session
        self.limits = limits
        self.logins = Logins(limits)
        self.charts = Charts(limits)
        self._totals: tuple[float, tuple[int, int, int]] | None = None
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("fe.console", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.templates.filters["datetime"] = lambda seconds: time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(seconds)
        )

    def routes(self) -> list[web.RouteDef]:
        get, post = web.get, web.post
        return [
            get("/", self.root),
            get(PREFIX, self.root),
            get(PREFIX + "/", self.root),
            get(PREFIX + "/login", self.login_page),
            post(PREFIX + "/login", self.login),
            post(PREFIX + "/logout", self.logout),
            get(PREFIX + "/cluster", self.cluster),
            get(PREFIX + "/cluster/live", self.cluster_live),
            get(PREFIX + "/catalog", self.catalog_page),
            get(PREFIX + "/catalog/{db}", self.database_page),
            get(PREFIX + "/catalog/{db}/{table}", self.table_page),
            get(PREFIX + "/sql", self.sql_page),
            post(PREFIX + "/sql/run", self.sql_run),
            post(PREFIX + "/sql/page", self.sql_next_page),
            post(PREFIX + "/sql/csv", self.sql_csv),
            get(PREFIX + "/sessions", self.sessions),
            get(PREFIX + "/sessions/live", self.sessions_live),
            post(PREFIX + "/sessions/kill", self.kill),
            get(PREFIX + "/loads", self.loads),
            get(PREFIX + "/charts", self.charts_page),
            get(PREFIX + "/charts/data", self.charts_data),
            get(PREFIX + "/config", self.config_page),
            post(PREFIX + "/config", self.config_set),
            web.static(PREFIX + "/static", STATIC, append_version=False),
        ]

    def start(self, services) -> None:
        """Begins sampling the charts' counters (on the running event loop)."""
        self.charts.start(services)

    # -- logins --------------------------------------------------------------------------------

    def _login(self, request: web.Request) -> Login | None:
        return self.logins.get(request.cookies.get(COOKIE))

    def _page(self, request: web.Request, template: str, login: Login | None, **values):
        html = self.templates.get_template(template).render(
            login=login,
            prefix=PREFIX,
            path=request.path,
            frontend=self._frontend_banner(login),
            **values,
        )
        return web.Response(text=html, content_type="text/html", headers=SECURITY_HEADERS)

    def _frontend_banner(self, login: Login | None) -> dict | None:
        if login is None:
            return None
        services = login.session.services
        this = services.this
        lag = services.freshness.stale_seconds()
        return {
            "name": this.name,
            "role": str(this.role),
            "is_leader": services.writer.is_leader(),
            "lag_seconds": lag,
        }

    def _must_login(self, request: web.Request) -> web.Response:
        target = f"{PREFIX}/login?next={quote(request.path_qs, safe='')}"
        if request.headers.get("HX-Request"):
            return web.Response(status=401, headers={"HX-Redirect": target})
        raise web.HTTPSeeOther(target)

    async def _refusal(self, request: web.Request, login: Login | None) -> web.Response | None:
        """None if the POST may change something: a login, from this console's origin, with the
        login's CSRF token (the header htmx sends, or a form's field); else the refusal."""
        if login is None:
            return web.Response(status=401, text="Log in first", headers=SECURITY_HEADERS)
        given = request.headers.get(CSRF_HEADER)
        if given is None and request.content_type == "application/x-www-form-urlencoded":
            given = str((await request.post()).get(CSRF_FIELD, ""))
        if not _same_origin(request) or not csrf_ok(login, given):
            logger.warning("console: refused a change without this page's token from %s",
                           request.remote)  # fmt: skip
            return web.Response(status=403, text="Refused: cross-site request",
                                headers=SECURITY_HEADERS)  # fmt: skip
        return None

    async def root(self, request: web.Request) -> web.Response:
        raise web.HTTPSeeOther(PREFIX + ("/cluster" if self._login(request) else "/login"))

    async def login_page(self, request: web.Request) -> web.Response:
        return self._page(request, "login.html", None, error=None, user="",
                          next=_local(request.query.get("next", "")))  # fmt: skip

    async def login(self, request: web.Request) -> web.Response:
        if not _same_origin(request):
            return web.Response(status=403, text="Refused: cross-site request")
        form = await request.post()
        name, password = str(form.get("user", "")), str(form.get("password", ""))
        target = _local(str(form.get("next", ""))) or PREFIX + "/cluster"
        user, refusal = password_login(
            self.catalog, self.login_tracker, name, password, request.remote or ""
        )
        if user is None or refusal is not None:
            error = (
                refusal.message
                if refusal is not None
                else (
                    f"Access denied for user '{name}' (using password: {'YES' if password else 'NO'})"
                )
            )
            page = self._page(request, "login.html", None, error=error, user=name, next=target)
            page.set_status(401)
            return page
        session, pages = self.new_session(), self.new_session()
        for each in (session, pages):
            each.username, each.user_host = user.name, user.host
        pages.recorded = False
        sid, _ = self.logins.add(user.name, user.host, session, pages)
        logger.info("console: %s@%s logged in from %s", user.name, user.host, request.remote)
        response = web.HTTPSeeOther(target)
        response.set_cookie(COOKIE, sid, httponly=True, samesite="Strict", path="/")
        raise response

    @changes
    async def logout(self, request: web.Request, login: Login) -> web.Response:
        self.logins.remove(request.cookies.get(COOKIE))
        response = web.HTTPSeeOther(PREFIX + "/login")
        response.del_cookie(COOKIE, path="/")
        raise response

    # -- cluster -------------------------------------------------------------------------------

    @logged_in
    async def cluster(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "cluster.html", login, **await self._cluster(login))

    @logged_in
    async def cluster_live(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "cluster_live.html", login, **await self._cluster(login))

    async def _cluster(self, login: Login) -> dict:
        session = login.pages
        frontends = await statements.table_of(session, "SHOW FRONTENDS", self.limits)
        backends = await statements.table_of(session, "SHOW BACKENDS", self.limits)
        state = None
        if frontends.failure is None:
            state = _journal_state(session.services, self.charts)
            _add_lag(frontends, self.charts)
            _add_figures(backends, await self._tn_totals(session))
        shown_frontends = _picked(frontends, FRONTEND_COLUMNS)
        shown_backends = _picked(backends, BACKEND_COLUMNS)
        embedded = None
        stats = getattr(session.services.data_plane, "cn_stats", None)
        if session.services.backends is None and stats is not None and frontends.failure is None:
            embedded = stats()  # quire up: the TN and a CN run inside this FE
        return {"frontends": shown_frontends, "backends": shown_backends,
                "all_frontends": frontends, "all_backends": backends, "state": state,
                "embedded": embedded, "now": time.strftime("%H:%M:%S")}  # fmt: skip

    async def _tn_totals(self, session) -> tuple[int, int, int]:
        """(tablets, rows, bytes) of every table, as the TN counts them; asked at most every
        TN_TOTALS_SECONDS, over at most TN_TOTALS_MAX_TABLES tables."""
        kept = self._totals
        if kept is not None and time.monotonic() - kept[0] < TN_TOTALS_SECONDS:
            return kept[1]
        tables = list(session.services.catalog.tables.values())[:TN_TOTALS_MAX_TABLES]

        def ask() -> tuple[int, int, int]:
            rows, size = total(table_sizes(session, tables))
            return session.services.catalog.tablet_count(), rows, size

        totals = await asyncio.to_thread(ask)
        self._totals = (time.monotonic(), totals)
        return totals

    # -- catalog -------------------------------------------------------------------------------

    @logged_in
    async def catalog_page(self, request: web.Request, login: Login) -> web.Response:
        session = login.pages
        databases = await statements.table_of(session, "SHOW DATABASES", self.limits)
        recycle = await statements.table_of(session, "SHOW CATALOG RECYCLE BIN", self.limits)
        return self._page(request, "catalog.html", login, databases=databases, recycle=recycle)

    @logged_in
    async def database_page(self, request: web.Request, login: Login) -> web.Response:
        db = request.match_info["db"]
        tables = await statements.table_of(
            login.pages, f"SHOW TABLE STATUS FROM {quoted(db)}", self.limits
        )
        return self._page(request, "database.html", login, db=db, tables=tables)

    @logged_in
    async def table_page(self, request: web.Request, login: Login) -> web.Response:
        db, table = request.match_info["db"], request.match_info["table"]
        name = f"{quoted(db)}.{quoted(table)}"
        session, limits = login.pages, self.limits
        create = await statements.table_of(session, f"SHOW CREATE TABLE {name}", limits)
        sections = []
        if create.failure is None:
            for title, sql in (
                ("Columns", f"SHOW FULL COLUMNS FROM {name}"),
                ("Partitions", f"SHOW PARTITIONS FROM {name}"),
                ("Tablets", f"SHOW TABLETS FROM {name}"),
                ("Data", f"SHOW DATA FROM {name}"),
            ):
                sections.append((title, await statements.table_of(session, sql, limits)))
        text = create.rows[0][1] if create.rows and len(create.rows[0]) > 1 else ""
        return self._page(request, "table.html", login, db=db, table=table, create=create,
                          create_text=text, sections=sections)  # fmt: skip

    # -- SQL editor ----------------------------------------------------------------------------

    @logged_in
    async def sql_page(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "sql.html", login, sql=request.query.get("sql", ""),
                          database=login.session.database or "")  # fmt: skip

    @changes
    async def sql_run(self, request: web.Request, login: Login) -> web.Response:
        if request.content_length and request.content_length > self.limits.max_sql_bytes:
            return web.Response(status=413, text="The statement is too long")
        form = await request.post()
        sql = str(form.get("sql", "")).strip()
        if form.get("explain"):
            sql = "EXPLAIN " + sql
        if login.pager is not None:
            pager, login.pager = login.pager, None
            await pager.close()
        database = str(form.get("database", "")).strip()
        if database and database != login.session.database:
            try:
                await login.session.use(database)
            except Exception as error:  # noqa: BLE001 - shown as MySQL's error
                page = statements.Page(failure=statements.failure_of(error))
                return self._page(request, "result.html", login, page=page, sql=sql)
        page, login.pager = await statements.page_of(login.session, sql, self.limits)
        return self._page(request, "result.html", login, page=page, sql=sql)

    @changes
    async def sql_next_page(self, request: web.Request, login: Login) -> web.Response:
        pager = login.pager
        if pager is None:
            page = statements.Page(failure=statements.Failure(1105, "HY000",
                                   "No open result: run the statement again"))  # fmt: skip
            return self._page(request, "result.html", login, page=page, sql="")
        started = time.perf_counter()
        try:
            rows, first, more = await pager.page()
        except Exception as error:  # noqa: BLE001
            login.pager = None
            page = statements.Page(failure=statements.failure_of(error))
            return self._page(request, "result.html", login, page=page, sql="")
        if not more:
            login.pager = None
        page = statements.Page(pager.columns, rows, first, more,
                               seconds=time.perf_counter() - started)  # fmt: skip
        return self._page(request, "result.html", login, page=page, sql="")

    @changes
    async def sql_csv(self, request: web.Request, login: Login) -> web.StreamResponse:
        form = await request.post()
        sql = str(form.get("sql", "")).strip()
        database = str(form.get("database", "")).strip()
        if database and database != login.session.database:
            try:
                await login.session.use(database)
            except Exception as error:  # noqa: BLE001
                return web.Response(status=400, text=str(statements.failure_of(error)),
                                    headers=SECURITY_HEADERS)  # fmt: skip
        if not await _reads_only(login.session, sql):
            return web.Response(status=400, text="Only a query's answer can be downloaded",
                                headers=SECURITY_HEADERS)  # fmt: skip
        try:
            result = await statements.run(login.session, sql)
        except Exception as error:  # noqa: BLE001
            return web.Response(status=400, text=str(statements.failure_of(error)),
                                headers=SECURITY_HEADERS)  # fmt: skip
        response = web.StreamResponse(headers={
            **SECURITY_HEADERS,
            "Content-Type": "text/csv; charset=utf-8",
            "Content-Disposition": 'attachment; filename="result.csv"',
        })  # fmt: skip
        await response.prepare(request)
        pager = statements.Pager(result, self.limits)
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(pager.columns)
        count = 0
        try:
            async for row in pager.all_rows():
                writer.writerow(["" if v is None else statements.shown(v, 1 << 30) for v in row])
                count += 1
                if count % CSV_ROWS_PER_WRITE == 0:
                    await response.write(buffer.getvalue().encode())
                    buffer.seek(0)
                    buffer.truncate()
        finally:
            await pager.close()
        await response.write(buffer.getvalue().encode())
        await response.write_eof()
        return response

    # -- sessions ------------------------------------------------------------------------------

    @logged_in
    async def sessions(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "sessions.html", login, **await self._sessions(login))

    @logged_in
    async def sessions_live(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "sessions_live.html", login, **await self._sessions(login))

    async def _sessions(self, login: Login) -> dict:
        processes = await statements.table_of(login.pages, "SHOW PROCESSLIST", self.limits)
        history = login.session.services.history
        recent = history.seen_by(None if _is_admin(login) else login.user)
        return {"processes": processes, "recent": recent[: self.limits.page_rows],
                "message": None}  # fmt: skip

    @changes
    async def kill(self, request: web.Request, login: Login) -> web.Response:
        form = await request.post()
        connection_id = str(form.get("id", ""))
        if not connection_id.isdigit():
            return web.Response(status=400, text="A connection id is a number")
        page, _ = await statements.page_of(login.session, f"KILL {connection_id}", self.limits)
        values = await self._sessions(login)
        values["message"] = str(page.failure) if page.failure else f"Killed {connection_id}"
        return self._page(request, "sessions_live.html", login, **values)

    # -- loads ---------------------------------------------------------------------------------

    @logged_in
    async def loads(self, request: web.Request, login: Login) -> web.Response:
        session = login.pages
        databases = await statements.table_of(session, "SHOW DATABASES", self.limits)
        loads = statements.Page(list(LOAD_COLUMNS))
        shown = [
            row[0]
            for row in databases.rows
            if row[0].lower() not in ("information_schema", "mysql", "__internal_schema")
        ]
        loads.rows, loads.failure = await asyncio.to_thread(load_rows, session, shown)
        loads.rows.sort(key=lambda row: row[LOAD_COLUMNS.index("Started")] or "", reverse=True)
        return self._page(request, "loads.html", login, databases=databases, loads=loads)

    # -- charts --------------------------------------------------------------------------------

    @logged_in
    async def charts_page(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "charts.html", login, allowed=_is_admin(login))

    @logged_in
    async def charts_data(self, request: web.Request, login: Login) -> web.Response:
        if not _is_admin(login):
            return web.json_response({"error": "Access denied; you need ADMIN privilege"},
                                     status=403, headers=SECURITY_HEADERS)  # fmt: skip
        return web.json_response(self.charts.series(), headers=SECURITY_HEADERS)

    # -- config --------------------------------------------------------------------------------

    @logged_in
    async def config_page(self, request: web.Request, login: Login) -> web.Response:
        return self._page(request, "config.html", login, **await self._config(login, None))

    async def _config(self, login: Login, message: str | None) -> dict:
        config = await statements.table_of(login.pages, "ADMIN SHOW FRONTEND CONFIG", self.limits)
        return {"config": config, "message": message, "admin": _is_admin(login)}

    @changes
    async def config_set(self, request: web.Request, login: Login) -> web.Response:
        form = await request.post()
        key, value = str(form.get("key", "")), str(form.get("value", ""))
        sql = f"ADMIN SET FRONTEND CONFIG ({_string(key)} = {_string(value)})"
        page, _ = await statements.page_of(login.session, sql, self.limits)
        message = str(page.failure) if page.failure else f"{key} = {value}"
        values = await self._config(login, message)
        return self._page(request, "config_table.html", login, **values)


def _is_admin(login: Login) -> bool:
    try:
        return privileges.is_admin(login.session.user)
    except Exception:  # noqa: BLE001 - a dropped account is no admin
        return False


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _local(target: str) -> str:
    """target if it is a path of this console (never another site), else ""."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith(PREFIX + "/"):
        return ""
    return target


def _same_origin(request: web.Request) -> bool:
    """False if the browser says the request comes from another origin."""
    origin = request.headers.get("Origin")
    if origin is None:
        return request.headers.get("Sec-Fetch-Site") in (None, "same-origin", "none")
    return urlsplit(origin).netloc == request.host


async def _reads_only(session, sql: str) -> bool:
    first = sql.lstrip("( \t\r\n").split(None, 1)[0].upper() if sql.strip() else ""
    if first in READ_STATEMENT_WORDS:
        return True
    try:
        statement = await session.parse(sql)
    except Exception:  # noqa: BLE001 - a statement that does not parse is no query
        return False
    return isinstance(statement, SelectPlan | st.Show)


def _add_lag(frontends: statements.Page, charts: Charts) -> None:
    """LagEntries and LagSeconds: how far each FE's replayed journal is behind the newest."""
    if "ReplayedJournalId" not in frontends.columns:
        return
    at = frontends.columns.index("ReplayedJournalId")
    ids = [int(row[at] or 0) for row in frontends.rows]
    newest = max(ids, default=0)
    frontends.columns += ["LagEntries", "LagSeconds"]
    for row, journal_id in zip(frontends.rows, ids, strict=True):
        seconds = charts.seconds_behind(journal_id)
        row.append(str(newest - journal_id))
        row.append(f"{seconds:.1f}" if seconds is not None else "more than the charts keep")


FRONTEND_COLUMNS = (
    "Name", "Host", "Role", "IsMaster", "Alive", "ReplayedJournalId", "LagEntries", "LagSeconds",
    "LastHeartbeat", "Version", "ErrMsg",
)  # fmt: skip
BACKEND_COLUMNS = (
    "BackendId", "Host", "HeartbeatPort", "Role", "Alive", "LastHeartbeat", "Tablets", "Rows",
    "Bytes", "HeartbeatFailureCounter", "Version", "ErrMsg",
)  # fmt: skip


def _picked(page: statements.Page, names: tuple[str, ...]) -> statements.Page:
    """page with only the named columns (those it has), in that order."""
    if page.failure is not None or not page.columns:
        return page
    at = [page.columns.index(name) for name in names if name in page.columns]
    rows = [[row[i] for i in at] for row in page.rows]
    return statements.Page([page.columns[i] for i in at], rows, 0, page.more)


def _add_figures(backends: statements.Page, totals: tuple[int, int, int]) -> None:
    """Tablets, Rows and Bytes of each backend: the TN's are every tablet's (it holds them
    all); a CN's come from its heartbeat (rows it holds in memory, deleted ones included, and
    bytes in memory and in its cache of decoded objects)."""
    if "Status" not in backends.columns or "Role" not in backends.columns:
        return
    status_at, role_at = backends.columns.index("Status"), backends.columns.index("Role")
    backends.columns += ["Tablets", "Rows", "Bytes"]
    for row in backends.rows:
        try:
            figures = json.loads(row[status_at] or "{}")
        except ValueError:
            figures = {}
        if row[role_at] == "TN":
            row += [str(value) for value in totals]
        else:
            held = figures.get("memory_bytes", 0) + figures.get("cache_bytes", 0)
            row += ["", str(figures.get("rows", "")), str(held)]


def _journal_state(services, charts: Charts) -> dict:
    status = services.journal.status()
    images = services.images.images()
    newest = images[0] if images else None
    return {
        "journal_id": services.catalog.journal_id,
        "is_leader": status.is_leader,
        "leader": charts.leader or "",
        "last_failover": charts.last_failover,
        "image_journal_id": newest.journal_id if newest else None,
        "image_bytes": newest.size if newest else None,
        "images": len(images),
        "checkpoint_age": round(services.checkpointer.seconds_since_checkpoint(), 1),
    }
