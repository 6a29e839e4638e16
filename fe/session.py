"""One MySQL connection's session: who is connected, the current database and variables, and the
dispatch of each statement to its handler.

Parsing is the front's hot spot: statements come from the FE's StatementCache, so a repeated
statement or query shape skips sqlglot's parser.
"""

from __future__ import annotations

import logging
import time

from mysql_mimic.session import BaseSession
from sqlglot import exp

from fe import accounts, admin, ddl, privileges, queries, show
from fe.forwarding import needs_leader
from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.sql import statements as st
from fe.sql.parser import ParseError
from fe.statement_cache import LongStatementsBusy
from fe.variables import QuireSessionVariables, coerce
from metadata.records import User

logger = logging.getLogger(__name__)


class QuireSession(BaseSession):
    def __init__(self, node):
        self.node = node
        self.catalog = node.catalog
        self.variables = QuireSessionVariables(node.global_variables)
        self.username: str | None = None  # the account logged in as: username@user_host
        self.user_host: str | None = None
        self.database: str | None = None
        self.connection = None
        self.warnings: list[tuple] = []
        self.started = time.monotonic()

    # -- BaseSession ---------------------------------------------------------------------------

    async def init(self, connection) -> None:
        self.connection = connection
        if self.database:
            self.check_database(self.database)

    async def use(self, database: str) -> None:
        self.check_database(database)
        self.database = database

    async def reset(self) -> None:
        self.variables = QuireSessionVariables(self.node.global_variables)
        self.warnings = []

    async def close(self) -> None:
        pass

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Result:
        self.node.metrics.query_started()
        try:
            statement = await self.parse(sql)
            if not self.node.is_leader():
                if needs_leader(statement, WRITES):
                    return await self.node.forwarder.forward(self, sql)
                if isinstance(statement, METADATA_READS) and not _node_status(statement):
                    self.node.check_fresh()
            return await self.execute(statement)
        except QueryError:
            self.node.metrics.query_failed()
            raise
        except RecursionError:
            self.node.metrics.query_failed()
            raise QueryError(
                1064, "You have an error in your SQL syntax: the statement nests too deeply"
            ) from None

    async def parse(self, sql: str):
        """The statement, parsed (from the FE's cache, or off the event loop when it is long)."""
        try:
            return await self.node.statement_cache.parse(sql)
        except ParseError as error:
            raise QueryError(1064, str(error)) from None
        except LongStatementsBusy:
            raise QueryError(
                1105, "Too many long statements are being parsed on this FE; retry later"
            ) from None

    async def describe(self, sql: str):
        """Result columns of a statement being prepared (its `?` markers read as NULL); only
        queries are run for this, never writes."""
        try:
            statement = await self.parse(sql)
        except (QueryError, RecursionError):
            return None
        if not isinstance(statement, queries.SelectPlan):
            return None
        try:
            return (await queries.run_select(self, statement)).columns
        except QueryError:
            return None

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
        return user

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
        if isinstance(statement, queries.SelectPlan):
            self.warnings = []
            return await queries.run_select(self, statement)
        kind = type(statement)
        builder = WRITES.get(kind)
        if builder is not None:
            self.warnings = []
            if kind is st.AlterSystem:
                # One membership change at a time, each committed before the next is checked
                # (pysyncobj does not serialise them; Raft needs single-server changes).
                async with self.node.membership_lock:
                    await self._write(builder, statement)
            else:
                await self._write(builder, statement)
            return Result()
        handler = READS.get(kind)
        if handler is None:
            raise QueryError(1235, f"{kind.__name__} is not supported yet")
        return await handler(self, statement)

    async def _write(self, builder, statement) -> None:
        operations = builder(self, statement)
        if operations:
            await self.node.commit(operations)

    async def _set(self, statement: st.SetStatement) -> Result:
        for item in statement.expression.expressions:
            await self._set_item(item)
        return Result()

    async def _set_item(self, item: exp.SetItem) -> None:
        kind = (item.args.get("kind") or "").upper()
        if kind in ("NAMES", "CHARACTER SET", "CHARSET"):
            charset = item.name or "utf8mb4"
            for name in (
                "character_set_client",
                "character_set_connection",
                "character_set_results",
            ):
                self.variables.set(name, charset if charset.lower() != "default" else "utf8mb4")
            return
        if (
            kind == "TRANSACTION"
            or item.args.get("kind") is None
            and isinstance(item.this, exp.Var)
        ):
            return
        assignment = item.this
        if not isinstance(assignment, exp.EQ | exp.PropertyEQ):
            raise QueryError(1064, "You have an error in your SQL syntax near SET")
        target = assignment.this
        scope = kind
        if isinstance(target, exp.SessionParameter):
            scope = (target.args.get("kind") or scope or "SESSION").upper()
            name = target.name
        elif isinstance(target, exp.Parameter | exp.Placeholder):
            return  # user variables (@x) are accepted and ignored
        else:
            name = target.name
        value = await self._evaluate(assignment.expression)
        await self.set_variable(name.lower(), value, scope)

    async def _evaluate(self, expression: exp.Expression):
        if isinstance(expression, exp.Column | exp.Var):
            if expression.name.upper() == "DEFAULT":
                return None
            return expression.name  # SET autocommit = ON, SET time_zone = SYSTEM
        plan = queries.plan_select(exp.select(expression.copy()))
        result = await queries.run_select(self, plan)
        return result.rows[0][0] if result.rows else None

    async def set_variable(self, name: str, value, scope: str) -> None:
        try:
            type_, _, dynamic = self.variables.get_schema(name)
        except Exception:
            raise QueryError(1193, f"Unknown system variable '{name}'") from None
        if not dynamic:
            raise QueryError(1238, f"Variable '{name}' is a read only variable")
        try:
            typed = coerce(type_, value) if value is not None else None
        except (TypeError, ValueError):
            raise QueryError(
                1231, f"Variable '{name}' can't be set to the value of '{value}'"
            ) from None
        if name in POSITIVE_VARIABLES and typed is not None and typed <= 0:
            raise QueryError(1231, f"Variable '{name}' can't be set to the value of '{value}'")
        if scope == "GLOBAL":
            self.require_admin()
            if name == "require_secure_transport" and typed and not self.node.front.ssl_context:
                raise QueryError(
                    3161,
                    "No secure transports (SSL or Shared Memory) are configured, unable to set --require_secure_transport=ON.",
                )
            from metadata import ops

            text = "" if typed is None else str(int(typed) if isinstance(typed, bool) else typed)
            await self.node.commit([ops.SetGlobalVariable(name, text)])
            return
        self.variables.set(name, typed)

    async def _use(self, statement: st.Use) -> Result:
        await self.use(statement.db)
        return Result()

    async def _show(self, statement: st.Show) -> Result:
        return show.show(self, statement)

    async def _describe(self, statement: st.Describe) -> Result:
        return show.describe(self, statement)

    async def _transaction(self, statement: st.Transaction) -> Result:
        return Result()

    async def _unsupported(self, statement: st.Unsupported) -> Result:
        raise QueryError(
            1235, f"{statement.kind} is not supported yet: table data comes with the data plane"
        )


POSITIVE_VARIABLES = ("query_timeout", "exec_mem_limit")  # they bound every query
METADATA_READS = (queries.SelectPlan, st.Show, st.Describe, st.Use)
# What this FE itself knows about the cluster stays readable while its catalog is stale: it is
# how an operator finds out why reads are refused.
NODE_STATUS_PROC = ("/frontends", "/journal", "/images")


def _node_status(statement) -> bool:
    if not isinstance(statement, st.Show):
        return False
    if statement.what == "FRONTENDS":
        return True
    path = (statement.path or "").rstrip("/")
    return statement.what == "PROC" and path in NODE_STATUS_PROC


WRITES = {
    st.CreateDatabase: ddl.create_database,
    st.DropDatabase: ddl.drop_database,
    st.CreateTable: ddl.create_table,
    st.CreateTableLike: ddl.create_table_like,
    st.DropTable: ddl.drop_table,
    st.AlterTable: ddl.alter_table,
    st.CreateUser: accounts.create_user,
    st.DropUser: accounts.drop_user,
    st.SetPassword: accounts.set_password,
    st.AlterUser: accounts.alter_user,
    st.GrantStatement: accounts.grant,
    st.AlterSystem: admin.alter_system,
}

READS = {
    st.SetStatement: QuireSession._set,
    st.Use: QuireSession._use,
    st.Show: QuireSession._show,
    st.Describe: QuireSession._describe,
    st.Transaction: QuireSession._transaction,
    st.Unsupported: QuireSession._unsupported,
    st.Kill: admin.kill,
    st.AdminShowConfig: admin.show_config,
    st.AdminSetConfig: admin.set_config,
    st.AdminCheckpoint: admin.checkpoint,
}
