"""One MySQL connection's session: who is connected, the current database and variables, and the
dispatch of each statement to its handler.

Parsing is the front's hot spot: statements come from the FE's StatementCache, so a repeated
statement or query shape skips sqlglot's parser.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mysql_mimic.session import BaseSession
from mysql_mimic.types import ServerStatus

from fe import statement_cache
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.prepared import SessionPlan
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql.parser import ParseError, UnknownCatalog, with_executable_comments, without_catalog
from fe.statement_cache import LongStatementsBusy, ShapedRead
from fe.statement_history import StatementHistory
from fe.statements import accounts, point_writes, queries, table_data, transactions
from fe.statements.labelled_jobs import LabelledJobs
from fe.statements.statement_kinds import kind_of
from fe.variables import QuireSessionVariables
from metadata.records import User

if TYPE_CHECKING:
    from be.client import EmbeddedDataPlane, RemoteDataPlane
    from be.config import Config
    from be.engine import Engine
    from fe.cluster.backends import BackendMonitor
    from fe.cluster.checkpoints import Checkpointer
    from fe.cluster.dynamic_partition_scheduler import DynamicPartitionScheduler
    from fe.cluster.forwarding import Forwarder
    from fe.cluster.freshness import Freshness
    from fe.cluster.frontends import FrontendMonitor
    from fe.cluster.metrics import Metrics
    from fe.cluster.startup import ThisFrontend
    from fe.cluster.write_path import MetadataWriter
    from fe.mysql.server import MysqlFront
    from fe.statement_cache import StatementCache
    from fe.statements.information_schema import SchemaTables
    from fe.statements.transactions import OpenTransaction
    from fe.variables import ClusterGlobalVariables
    from image.images import ImageStore
    from metadata.catalog import Catalog
    from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FrontendServices:
    """What a session's statements use of the FE they run on."""

    this: ThisFrontend
    config: Config
    catalog: Catalog
    global_variables: ClusterGlobalVariables
    statement_cache: StatementCache
    information_schema: SchemaTables
    engine: Engine
    writer: MetadataWriter
    forwarder: Forwarder
    freshness: Freshness
    metrics: Metrics
    front: MysqlFront
    frontends: FrontendMonitor
    journal: ReplicatedJournal
    images: ImageStore
    checkpointer: Checkpointer
    data_plane: EmbeddedDataPlane | RemoteDataPlane  # quire up: embedded; quire fe: remote
    set_config: Callable[[str, str], None]
    started_at: float  # wall clock
    history: StatementHistory
    backends: BackendMonitor | None = None  # None when the data plane is embedded
    dynamic_partitions: DynamicPartitionScheduler | None = None
    broker_loads: LabelledJobs = field(default_factory=lambda: LabelledJobs("LOAD"))  # LOAD LABEL's
    exports: LabelledJobs = field(default_factory=lambda: LabelledJobs("EXPORT"))  # EXPORT's

    def uptime(self) -> float:
        return time.time() - self.started_at


SERVER_STATUS_AUTOCOMMIT = int(ServerStatus.SERVER_STATUS_AUTOCOMMIT)
SERVER_STATUS_IN_TRANS = int(ServerStatus.SERVER_STATUS_IN_TRANS)


class QuireSession(BaseSession):
    def __init__(self, services: FrontendServices):
        self.services = services
        self.catalog = services.catalog
        self.variables = QuireSessionVariables(services.global_variables)
        self.username: str | None = None  # the account logged in as: username@user_host
        self.user_host: str | None = None
        self.database: str | None = None
        self.connection = None
        self.request_id: str | None = None  # a statement another FE forwarded: its id
        self.recorded = True  # its statements go to the FE's history (not the console's pages')
        self.last_commit_ts = 0  # of this session's newest data commit: its reads see it
        self._variable_answers: dict[str, tuple[tuple[int, int], bool]] = {}
        # prepared point reads' tables and plans by read, while the catalog stays (point_reads)
        self.point_read_tables: dict[int, tuple] = {}
        self.last_insert_id = 0  # the first AUTO_INCREMENT value its last such INSERT generated
        self.last_insert: tuple | None = None  # SHOW LAST INSERT's row: its last INSERT committed
        self.row_count = 0  # ROW_COUNT(): the last statement's affected rows; -1 after rows
        self.found_rows = 0  # FOUND_ROWS(): the rows the last statement with rows found
        self.transaction: OpenTransaction | None = None  # BEGIN, or autocommit off
        self.warnings: list[tuple] = []
        self.user_variables: dict[str, object] = {}  # SET @x = ...: by lower-case name
        self.started = time.monotonic()

    # -- BaseSession ---------------------------------------------------------------------------

    async def init(self, connection) -> None:
        self.connection = connection
        self._take_user_properties()
        if self.database:
            self.check_database(self.database)

    def _take_user_properties(self) -> None:
        """Session variables the user's properties set (Doris's SET PROPERTY query_timeout,
        ...), over the global defaults."""
        user = self.catalog.users.get((self.username or "", self.user_host or ""))
        for name, value in () if user is None else accounts.session_defaults(user):
            self.variables.set(name, value)

    async def use(self, database: str) -> None:
        try:
            database = without_catalog(database)
        except UnknownCatalog as error:
            raise QueryError(ErrorCode.UNKNOWN_CATALOG, str(error)) from None
        self.check_database(database)
        self.database = database

    async def reset(self) -> None:
        self.variables = QuireSessionVariables(self.services.global_variables)
        self._take_user_properties()
        self.user_variables = {}
        self.warnings = []
        self.transaction = None

    async def close(self) -> None:
        pass

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Result:
        sql = with_executable_comments(sql)
        with Counted(self, sql):
            statement = self.services.statement_cache.cached(sql)
            if statement is None:
                statement = await self.parse(sql, reads=True)
            if isinstance(statement, ShapedRead):  # read by its key: as a prepared read
                result = await self._point_read(statement.read, statement.values, statement.names)
                if result is not None:
                    return result
                statement = statement.plan()
            return await self._run(statement, lambda: sql)

    async def prepare_statement(self, sql: str) -> SessionPlan:
        """The statement parsed once with its `?` markers, for execute_prepared; the columns of
        a query (its markers read as NULL) are found by running it, never a write."""
        sql = with_executable_comments(sql)
        with PARSE_ERRORS:
            prepared = await self.services.statement_cache.prepare(sql)
        columns = []
        if prepared.is_query:
            with contextlib.suppress(QueryError, ParseError, RecursionError):
                statement = statement_cache.bind(prepared, [None] * prepared.parameters)
                columns = (await queries.run_select(self, statement)).columns
        return SessionPlan(prepared, prepared.parameters, columns)

    async def execute_prepared(self, prepared, values: list, attrs: dict[str, str]) -> Result:
        with Counted(self, prepared):
            if prepared.read is not None:  # from the data plane's key index, if at hand
                result = await self._point_read(prepared.read, values)
                if result is not None:
                    return result
            if prepared.write is not None:
                result = await self._point_write(prepared.write, values)
                if result is not None:
                    return result
            with PARSE_ERRORS:
                statement = statement_cache.bind(prepared, values)
            return await self._run(statement, lambda: statement_cache.written(prepared, values))

    async def _point_read(self, read, values: list, names: list[str] | None = None):
        """A read by its table's key columns (a prepared one, or a query of a known shape with
        its literals as the values) answered from the data plane's key index, its columns
        named names (the read's own by default); None if it cannot be (its plan runs)."""
        await self._ready_for_key_access()
        result = queries.point_read(self, read, values, names)  # no coroutine: fastest
        if result is None:
            result = await queries.run_prepared_read(self, read, values, names)
        if result is not None:
            self.warnings = []
        return result

    async def _ready_for_key_access(self) -> None:
        """What a read or write by key needs first: the transaction autocommit off opens (asked
        of a remote data plane off the event loop), and on a non-leader a fresh catalog."""
        plane = self.services.data_plane
        if plane is not None and not plane.reads_at_hand:
            await transactions.open_implicitly(self)
        if not self.services.writer.is_leader():
            self.services.freshness.check_fresh()

    async def _point_write(self, write, values: list) -> Result | None:
        """An UPDATE or DELETE of one key's rows done without binding it, if it can be."""
        await self._ready_for_key_access()
        self.warnings = []
        return await self._run_again_on_schema_change(
            lambda session, _: point_writes.run(session, write, values), None
        )

    async def _run(self, statement, text: Callable[[], str]) -> Result:
        if not self.services.writer.is_leader():
            kind = kind_of(statement)
            if kind.forwarded(statement):
                return await self.services.forwarder.forward(self, text())
            if not kind.runs_when_stale(statement):
                self.services.freshness.check_fresh()
        return await self.execute(statement)

    async def parse(self, sql: str, reads: bool = False):
        """The statement, parsed (from the FE's cache, or off the event loop when it is long);
        reads: a query read by its table's key may come as a ShapedRead."""
        with PARSE_ERRORS:
            return await self.services.statement_cache.parse(sql, reads)

    def changed_variables(self) -> dict[str, object]:
        """The session variables this session set (what a forwarded statement runs with)."""
        return dict(self.variables._values)

    def apply_variables(self, values: dict[str, object]) -> None:
        for name, value in values.items():
            self.variables.set(name, value)

    # -- who and where -------------------------------------------------------------------------

    @property
    def user(self) -> User:
        user = self.catalog.users.get((self.username or "", self.user_host or ""))
        if user is None:
            raise QueryError(
                1045,
                f"Access denied for user '{self.username}'@'{self.user_host}': the account was dropped",
            )
        return self.catalog.effective_user(user)  # its roles' privileges are its own

    @property
    def client_host(self) -> str:
        peer = getattr(getattr(self.connection, "stream", None), "writer", None)
        if peer is not None:
            address = peer.get_extra_info("peername")
            if address:
                return str(address[0])
        return "%"

    def client_gone(self) -> bool:
        """Whether this session's client closed its connection (a forwarded session has none)."""
        return self.connection is not None and self.connection.client_gone()

    @property
    def connection_id(self) -> int:
        return getattr(self.connection, "connection_id", 0)

    @property
    def current_user_identity(self) -> str:
        user = self.user
        return f"{user.name}@{user.host}"

    def database_denied(self, name: str) -> QueryError:
        return QueryError(1044, f"Access denied for user {self.user.identity} to database '{name}'")

    def table_denied(self, command: str, db: str, table: str) -> QueryError:
        return QueryError(
            1142,
            f"{command} command denied to user {self.user.identity} for table '{db}.{table}'",
        )

    def check_database(self, name: str) -> None:
        """USE: what the user may not see is denied whether or not it exists, as in MySQL."""
        if name.lower() == "information_schema":
            return
        if not privileges.has_any(self.user, name):
            raise self.database_denied(name)
        if self.catalog.database(name) is None:
            raise QueryError(1049, f"Unknown database '{name}'")

    def require(self, privilege: str, db: str, table: str = "*") -> None:
        if privileges.has(self.user, privilege, db, table):
            return
        if table == "*":
            raise self.database_denied(db)
        raise self.table_denied(privilege.removesuffix("_PRIV"), db, table)

    def require_admin(self) -> None:
        if not privileges.is_admin(self.user):
            raise accounts.access_denied(privileges.ADMIN)

    def require_node(self) -> None:
        """Node operations (ALTER SYSTEM ... FOLLOWER/OBSERVER/BACKEND) need NODE_PRIV."""
        if not privileges.is_node_operator(self.user):
            raise accounts.access_denied(privileges.NODE)

    def require_admin_or_node(self) -> None:
        """What nodes there are and how they are (SHOW FRONTENDS, BACKENDS, node PROC paths)."""
        user = self.user
        if not (privileges.is_admin(user) or privileges.is_node_operator(user)):
            raise accounts.access_denied(privileges.ADMIN, privileges.NODE)

    def reads_now(self, zone_known: Callable[[str], bool]) -> bool:
        """Whether this session reads the newest data (no read_ts) in a time zone zone_known
        accepts."""
        return self._while_variables_stay(
            "reads_now",
            lambda: not self.variable("read_ts") and zone_known(str(self.variable("time_zone"))),
        )

    def transaction_flags(self) -> int:
        """The status flags MySQL sends after a statement: autocommit on, a transaction open (JDBC
        drivers send COMMIT only when told one is open)."""
        flags = SERVER_STATUS_AUTOCOMMIT if self.autocommits() else 0
        return flags | (SERVER_STATUS_IN_TRANS if self.transaction is not None else 0)

    def autocommits(self) -> bool:
        return self._while_variables_stay("autocommit", lambda: bool(self.variable("autocommit")))

    def _while_variables_stay(self, what: str, work_out: Callable[[], bool]) -> bool:
        """work_out()'s answer, worked out again only once a variable was set, here or globally
        (the catalog moved)."""
        asked = (self.variables.version, self.catalog.journal_id)
        kept = self._variable_answers.get(what)
        if kept is None or kept[0] != asked:
            kept = self._variable_answers[what] = (asked, work_out())
        return kept[1]

    def variable(self, name: str, scope: str = ""):
        if name.lower() == "ssl_cipher" and scope != "GLOBAL":
            return getattr(self.connection, "cipher", "")
        try:
            if scope == "GLOBAL":
                return self.variables.global_variables.get_variable(name)
            return self.variables.get_variable(name)
        except Exception:
            raise QueryError(1193, f"Unknown system variable '{name}'") from None

    # -- execution -----------------------------------------------------------------------------

    async def execute(self, statement) -> Result:
        kind = kind_of(statement)
        if kind.resets_warnings:
            self.warnings = []
        if kind.touches_data_of(statement):
            await transactions.open_implicitly(self)
        if not kind.writes:
            if kind.retried_on_schema_change:
                return await self._run_again_on_schema_change(kind.handler, statement)
            return await kind.handler(self, statement)
        if self.transaction is not None:  # a catalog change commits the open transaction first
            await transactions.commit(self)
        if kind.serialised:
            async with self.services.writer.catalog_lock:
                changed = await self._write(kind.handler, statement)
        else:
            changed = await self._write(kind.handler, statement)
        if changed and kind.after is not None:
            return await kind.after(self, statement)
        return Result()

    async def _run_again_on_schema_change(self, handler, statement) -> Result:
        """A DML statement outside a transaction runs again when the TN refused it for an older
        table definition, once this FE has the newer one (a transaction's client retries)."""
        deadline = time.monotonic() + self.services.config["dml_schema_wait_second"]
        while True:
            try:
                return await handler(self, statement)
            except table_data.SchemaChanged as changed:
                if self.transaction is not None or time.monotonic() >= deadline:
                    raise
                logger.info(
                    "table %d changed under a statement (version %d): running it again",
                    changed.table_id,
                    changed.version,
                )
                await table_data.wait_for_definition(self, changed, deadline)

    async def _write(self, builder, statement) -> bool:
        """Whether the statement changed the catalog (IF NOT EXISTS may find nothing to do)."""
        operations = builder(self, statement)
        if inspect.isawaitable(operations):  # a builder that asks another node first
            operations = await operations
        if operations:
            await self.services.writer.commit(operations, self.request_id)
        return bool(operations)


TOO_DEEP = "You have an error in your SQL syntax: the statement nests too deeply"


class Counted:
    """One statement in the metrics and the FE's statement history; a failure counted, too-deep
    nesting told as 1064 (a class, not a generator: it wraps every statement)."""

    __slots__ = ("session", "text", "started", "began")

    def __init__(self, session: QuireSession, text):
        self.session = session
        self.text = text

    def __enter__(self) -> None:
        self.session.services.metrics.query_started()
        self.started = time.time()
        self.began = time.perf_counter()

    def __exit__(self, kind, error, traceback) -> bool:
        code = 0
        if kind is not None and issubclass(kind, QueryError | RecursionError):
            self.session.services.metrics.query_failed()
            code = error.code if issubclass(kind, QueryError) else 1064
        elif kind is not None:
            code = 1105
        services = self.session.services
        seconds = time.perf_counter() - self.began
        if self.session.recorded:
            services.history.add(self.session, self.text, self.started, seconds, code)
        if kind is not None and issubclass(kind, RecursionError):
            raise QueryError(1064, TOO_DEEP) from None
        return False


class ParseErrors:
    """A statement that cannot be parsed, told as MySQL tells it."""

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is None:
            return False
        if issubclass(kind, UnknownCatalog):
            raise QueryError(ErrorCode.UNKNOWN_CATALOG, str(error)) from None
        if issubclass(kind, ParseError):
            raise QueryError(error.code, str(error)) from None
        if issubclass(kind, LongStatementsBusy):
            raise QueryError(
                1105, "Too many long statements are being parsed on this FE; retry later"
            ) from None
        if issubclass(kind, RecursionError):
            raise QueryError(1064, TOO_DEEP) from None
        return False


PARSE_ERRORS = ParseErrors()
