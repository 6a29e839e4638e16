"""The catalog: every database, table, user and node, in memory, changed only by `apply`.

`apply` is the replicated state machine: it reads nothing but the operation and the catalog, so
the same operations in the same order give the same catalog on every node. Records are immutable
and replaced on change, so `snapshot` is a cheap shallow copy that stays consistent while later
operations are applied (the image writer works from it without stopping writers).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Set
from dataclasses import dataclass, field, replace

from metadata import codec
from metadata.ops import (
    AddBackend,
    AddFrontend,
    ClientRequest,
    CreateAlterJob,
    CreateDatabase,
    CreateRole,
    CreateTable,
    CreateUser,
    DropBackend,
    DropDatabase,
    DropFrontend,
    DropRole,
    DropTable,
    DropTableStats,
    DropUser,
    EraseRecycled,
    GrantPrivileges,
    GrantRole,
    GrantToRole,
    NextId,
    Op,
    RecoverDatabase,
    RecoverPartition,
    RecoverTable,
    RecycleDatabase,
    RecyclePartition,
    RecycleTable,
    RemoveAlterJobs,
    ReplaceTable,
    RevokeFromRole,
    RevokePrivileges,
    RevokeRole,
    SetGlobalVariable,
    SetLabelledJob,
    SetLockoutPolicy,
    SetPassword,
    SetTableStats,
    SetUserProperties,
    SwapTables,
    Timestamp,
    TruncateTable,
    UpdateAlterJob,
    UpdateFrontend,
)
from metadata.records import (
    CONNECTION_PREFIXES,
    LOCKED_UNTIL_UNLOCK,
    NO_CONNECTION_PREFIX,
    AlterJob,
    AlterJobState,
    AlterJobType,
    Backend,
    Database,
    Frontend,
    Grant,
    LabelledJobRecord,
    Partition,
    RecycledKind,
    RecycledObject,
    RequestOutcome,
    Role,
    Table,
    TableStats,
    User,
)

# Ids below this are never handed out, as in Doris: room for built-in objects.
INITIAL_NEXT_ID = 10_000

# Forwarded statements whose outcome is kept for a retry: a retry comes within seconds (one
# failover), and the oldest is forgotten first, the same on every node.
MAX_REMEMBERED_REQUESTS = 16_384
MAX_KEPT_LABELLED_JOBS = 1000  # of a kind: past it the oldest finished are let go
FINISHED_JOB_STATES = frozenset({"FINISHED", "CANCELLED"})

# Dead tablet range ids a lookup may step over before the range index is swept.
_MAX_DEAD_STEPS = 64


class ApplyError(Exception):
    """An operation the catalog rejects; it still takes its journal id and changes nothing.

    The subclasses are the rejections a statement can run into (a name taken or gone since the
    statement looked); ApplyError itself is an operation that would break an invariant of the
    catalog (an id in use, overlapping tablets, a clashing node). Each carries the operation it
    rejects, so the same entry gives the same error on every node."""

    def __init__(self, op: Op, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


class DatabaseExists(ApplyError):
    pass


class UnknownDatabase(ApplyError):
    pass


class TableExists(ApplyError):
    pass


class UnknownTable(ApplyError):
    pass


class UserExists(ApplyError):
    pass


class UnknownUser(ApplyError):
    pass


class NoSuchGrant(ApplyError):
    pass


class RoleExists(ApplyError):
    pass


class UnknownRole(ApplyError):
    pass


@dataclass(frozen=True)
class CatalogSnapshot:
    """The catalog at one journal id. The dicts are private copies; the records are shared."""

    journal_id: int
    raft_index: int
    next_id: int
    last_timestamp_ms: int
    dbs: dict[int, Database]
    tables: dict[int, Table]
    users: dict[tuple[str, str], User]
    frontends: dict[str, Frontend]
    backends: dict[int, Backend]
    global_variables: dict[str, str]
    raft_term: int = (
        0  # the term of the entry at raft_index, which the journal knows (images record it)
    )
    requests: dict[str, RequestOutcome] = field(default_factory=dict)  # oldest first
    recycle_bin: dict[int, RecycledObject] = field(default_factory=dict)  # oldest drop first
    alter_jobs: dict[int, AlterJob] = field(default_factory=dict)  # oldest first
    roles: dict[str, Role] = field(default_factory=dict)
    table_stats: dict[int, TableStats] = field(default_factory=dict)
    # by (kind, database, label), oldest first
    labelled_jobs: dict[tuple[str, str, str], LabelledJobRecord] = field(default_factory=dict)

    def tablet_count(self) -> int:
        return sum(
            p.buckets * (1 + len(p.rollup_tablets))
            for t in self.tables.values()
            for p in tablet_holders(t)
        )


def initial_ops(privileges: frozenset[str] = frozenset({"ALL"})) -> list[Op]:
    """What the first leader journals before anything else: the built-in users, as in Doris,
    holding `privileges` on *.*."""
    everything = (Grant("*", "*", privileges),)
    return [
        CreateUser(User("root", "%", "", everything)),
        CreateUser(User("admin", "%", "", everything)),
    ]


class Catalog:
    """The primary dicts are public for reading; change them only through `apply`. Lookups that
    use the derived indexes take `lock`, so they never see half of an operation."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.journal_id = 0
        self.raft_index = 0
        self.raft_term = 0  # known after an image load; apply does not track it
        self.next_id = INITIAL_NEXT_ID
        self.last_timestamp_ms = 0
        self.dbs: dict[int, Database] = {}
        self.tables: dict[int, Table] = {}
        self.users: dict[tuple[str, str], User] = {}
        self.roles: dict[str, Role] = {}
        self.frontends: dict[str, Frontend] = {}
        self.backends: dict[int, Backend] = {}
        self.global_variables: dict[str, str] = {}
        self.requests: dict[str, RequestOutcome] = {}  # oldest first
        # Dropped databases, tables and partitions by their id, oldest drop first.
        self.recycle_bin: dict[int, RecycledObject] = {}
        # Schema changes and rollups by job id, oldest first: unfinished and kept history.
        self.alter_jobs: dict[int, AlterJob] = {}
        self.table_stats: dict[int, TableStats] = {}  # by table id: its last ANALYZE's
        # S3 Load's and EXPORT's jobs by (kind, database, label), oldest first, at most
        # MAX_KEPT_LABELLED_JOBS of a kind (the oldest finished let go first)
        self.labelled_jobs: dict[tuple[str, str, str], LabelledJobRecord] = {}
        # Derived indexes, rebuilt from the primary dicts on load.
        self._db_ids_by_name: dict[str, int] = {}
        self._table_ids_by_db: dict[int, dict[str, int]] = {}
        self._tablet_ranges = TabletRanges()

    # Reads.

    def database(self, name: str) -> Database | None:
        with self.lock:
            db_id = self._db_ids_by_name.get(name)
            return None if db_id is None else self.dbs[db_id]

    def tables_of(self, db_id: int) -> list[Table]:
        with self.lock:
            names = self._table_ids_by_db.get(db_id, {})
            return [self.tables[names[name]] for name in sorted(names)]

    def table(self, db_id: int, name: str) -> Table | None:
        with self.lock:
            table_id = self._table_ids_by_db.get(db_id, {}).get(name)
            return None if table_id is None else self.tables[table_id]

    def tablet(self, tablet_id: int) -> tuple[Table, Partition, int] | None:
        """The table and partition holding a tablet, and the tablet's bucket index."""
        with self.lock:
            found = self._tablet_ranges.find(tablet_id)
            if found is None:
                return None
            table_id, partition_position, bucket = found
            table = self.tables[table_id]
            return table, tablet_holders(table)[partition_position], bucket

    def tablet_count(self) -> int:
        return self._tablet_ranges.tablet_count

    def request_outcome(self, request_id: str) -> RequestOutcome | None:
        """What became of the forwarded statement with this id, if its entry was applied."""
        return self.requests.get(request_id)

    @staticmethod
    def refusal_of(outcome: RequestOutcome) -> ApplyError | None:
        """The error that refused the request's operation, as its entry's apply raised it."""
        if not outcome.refusal:
            return None
        kind = _apply_errors().get(outcome.refusal, ApplyError)
        return kind(codec.decode_ops(outcome.refused_op)[0], outcome.message)

    # Changes.

    def apply(self, op: Op) -> object:
        """Apply one operation. Returns the record it created or changed (None for the others);
        raises ApplyError, with the catalog unchanged, if the catalog rejects it. Either way the
        operation takes the next journal id."""
        handler = _HANDLERS.get(type(op))
        assert handler is not None, f"no apply for {type(op).__name__}"
        with self.lock:
            self.journal_id += 1
            return handler(self, op)

    def apply_entry(self, raft_index: int, payload: bytes) -> list[object]:
        """Apply one journal entry (a batch of encoded operations) at its raft index. Returns one
        result per operation, an ApplyError where it was rejected. An entry at or below the
        catalog's raft index is already in it (it came with the image) and is skipped. A payload
        that cannot be decoded raises codec.CodecError: the entry is passed over (the raft index
        advances) and nothing is applied, the same on every node."""
        try:
            ops = codec.decode_ops(payload)
        except codec.CodecError:
            with self.lock:
                self.raft_index = max(self.raft_index, raft_index)
            raise
        with self.lock:
            if raft_index <= self.raft_index:
                return []
            request = ops[0].request_id if ops and type(ops[0]) is ClientRequest else None
            if request is not None and request in self.requests:
                # A retry of a statement whose entry is in already: it changes nothing.
                self.journal_id += len(ops)
                self.raft_index = raft_index
                outcome = self.requests[request]
                return [self.refusal_of(outcome) or outcome]
            results: list[object] = []
            for op in ops:
                self.journal_id += 1
                try:
                    results.append(_HANDLERS[type(op)](self, op))
                except ApplyError as error:
                    results.append(error)
            if request is not None:
                self._remember(request, results)
            self.raft_index = raft_index
            return results

    def _remember(self, request_id: str, results: list[object]) -> None:
        refusal = next((r for r in results if isinstance(r, ApplyError)), None)
        outcome = RequestOutcome(request_id, self.journal_id)
        if refusal is not None:
            outcome = replace(
                outcome,
                refusal=type(refusal).__name__,
                message=refusal.message,
                refused_op=codec.encode_ops([refusal.op]),
            )
        self.requests[request_id] = outcome
        while len(self.requests) > MAX_REMEMBERED_REQUESTS:
            del self.requests[next(iter(self.requests))]

    def assume(self, other: Catalog) -> None:
        """Take other's contents in place (an image newer than everything applied here), so that
        every holder of this catalog sees them at once."""
        assert other.raft_index >= self.raft_index, "an image older than the catalog"
        with self.lock, other.lock:
            for name, value in vars(other).items():
                if name != "lock":
                    setattr(self, name, value)

    def snapshot(self) -> CatalogSnapshot:
        with self.lock:
            return CatalogSnapshot(
                journal_id=self.journal_id,
                raft_index=self.raft_index,
                next_id=self.next_id,
                last_timestamp_ms=self.last_timestamp_ms,
                dbs=self.dbs.copy(),
                tables=self.tables.copy(),
                users=self.users.copy(),
                frontends=self.frontends.copy(),
                backends=self.backends.copy(),
                global_variables=self.global_variables.copy(),
                raft_term=self.raft_term,
                requests=self.requests.copy(),
                recycle_bin=self.recycle_bin.copy(),
                alter_jobs=self.alter_jobs.copy(),
                roles=self.roles.copy(),
                table_stats=self.table_stats.copy(),
                labelled_jobs=self.labelled_jobs.copy(),
            )

    @classmethod
    def from_snapshot(cls, snap: CatalogSnapshot) -> Catalog:
        catalog = cls()
        catalog.journal_id = snap.journal_id
        catalog.raft_index = snap.raft_index
        catalog.next_id = snap.next_id
        catalog.last_timestamp_ms = snap.last_timestamp_ms
        catalog.dbs = dict(snap.dbs)
        catalog.tables = dict(snap.tables)
        catalog.users = dict(snap.users)
        catalog.frontends = {}
        for frontend in snap.frontends.values():  # images before codec 4 gave no prefixes
            catalog._add_frontend(AddFrontend(frontend))
        catalog.backends = dict(snap.backends)
        catalog.global_variables = dict(snap.global_variables)
        catalog.raft_term = snap.raft_term
        catalog.requests = dict(snap.requests)
        catalog.recycle_bin = dict(snap.recycle_bin)
        catalog.alter_jobs = dict(snap.alter_jobs)
        catalog.roles = dict(snap.roles)
        catalog.table_stats = dict(snap.table_stats)
        catalog.labelled_jobs = dict(snap.labelled_jobs)
        catalog._rebuild_indexes()
        return catalog

    def canonical_dump(self) -> str:
        """The whole state as text, identical on two nodes exactly when their catalogs are."""
        snap = self.snapshot()
        lines = [
            f"journal_id {snap.journal_id}",
            f"raft_index {snap.raft_index}",
            f"next_id {snap.next_id}",
            f"last_timestamp_ms {snap.last_timestamp_ms}",
        ]
        sections: list[tuple[str, Iterable]] = [
            ("database", (snap.dbs[key] for key in sorted(snap.dbs))),
            ("table", (snap.tables[key] for key in sorted(snap.tables))),
            ("user", (snap.users[key] for key in sorted(snap.users))),
            ("role", (snap.roles[key] for key in sorted(snap.roles))),
            ("frontend", (snap.frontends[key] for key in sorted(snap.frontends))),
            ("backend", (snap.backends[key] for key in sorted(snap.backends))),
            ("request", snap.requests.values()),
            ("recycled", snap.recycle_bin.values()),
            ("alter job", snap.alter_jobs.values()),
            ("table stats", (snap.table_stats[key] for key in sorted(snap.table_stats))),
            ("labelled job", snap.labelled_jobs.values()),
        ]
        for kind, records in sections:
            lines.extend(f"{kind} {codec.encode_record(record)!r}" for record in records)
        lines.extend(
            f"variable {name!r} {snap.global_variables[name]!r}"
            for name in sorted(snap.global_variables)
        )
        return "\n".join(lines) + "\n"

    def unfinished_jobs(self, table_id: int) -> list[AlterJob]:
        with self.lock:
            return [
                job
                for job in self.alter_jobs.values()
                if job.table_id == table_id and not job.state.done
            ]

    def table_state(self, table_id: int) -> str:
        """Doris's OlapTableState: NORMAL, or SCHEMA_CHANGE / ROLLUP while such a job runs."""
        jobs = self.unfinished_jobs(table_id)
        return jobs[0].job_type.value if jobs else "NORMAL"

    def recycled(self, kind: RecycledKind, name: str, db_id: int = -1, table_id: int = -1):
        """The entry of the recycle bin a RECOVER of `name` brings back (the latest dropped),
        a database by name, a table by name in db_id, a partition by name in table_id."""
        with self.lock:
            found = None
            for recycled in self.recycle_bin.values():
                if (recycled.kind, recycled.name) != (kind, name):
                    continue
                if kind == RecycledKind.TABLE and recycled.db_id != db_id:
                    continue
                if kind == RecycledKind.PARTITION and recycled.table_id != table_id:
                    continue
                found = recycled
            return found

    # Operation handlers: validate everything first, then change, so a rejection changes nothing.

    def _create_database(self, op: CreateDatabase) -> Database:
        database = op.database
        if database.name in self._db_ids_by_name:
            raise DatabaseExists(op, f"database '{database.name}' exists")
        if database.id in self.dbs:
            raise ApplyError(op, f"database id {database.id} is already in use")
        self.dbs[database.id] = database
        self._db_ids_by_name[database.name] = database.id
        self._table_ids_by_db[database.id] = {}
        self._raise_next_id(database.id + 1)
        return database

    def _drop_database(self, op: DropDatabase) -> Database:
        database = self.dbs.get(op.db_id)
        if database is None:
            raise UnknownDatabase(op, f"no database with id {op.db_id}")
        table_ids = list(self._table_ids_by_db.pop(database.id).values())
        dropped = [self.tables.pop(table_id) for table_id in table_ids]
        for table_id in table_ids:
            self.table_stats.pop(table_id, None)
        self._tablet_ranges.remove([p for t in dropped for p in tablet_holders(t)])
        del self.dbs[database.id]
        del self._db_ids_by_name[database.name]
        return database

    def _create_table(self, op: CreateTable) -> Table:
        table = op.table
        if table.schema_version != 1:
            table = replace(table, schema_version=1)
        names = self._table_ids_by_db.get(table.db_id)
        if names is None:
            raise UnknownDatabase(op, f"no database with id {table.db_id}")
        if table.name in names:
            raise TableExists(op, f"table '{table.name}' exists")
        if table.id in self.tables:
            raise ApplyError(op, f"table id {table.id} is already in use")
        self._check_tablet_ranges(op)
        self.tables[table.id] = table
        names[table.name] = table.id
        self._tablet_ranges.add(table)
        self._raise_next_id_for(table)
        return table

    def _drop_table(self, op: DropTable) -> Table:
        table = self.tables.get(op.table_id)
        if table is None:
            raise UnknownTable(op, f"no table with id {op.table_id}")
        del self.tables[table.id]
        del self._table_ids_by_db[table.db_id][table.name]
        self._tablet_ranges.remove(tablet_holders(table))
        self.table_stats.pop(table.id, None)
        return table

    def _replace_table(self, op: ReplaceTable) -> Table:
        table = op.table
        old = self.tables.get(table.id)
        if old is None:
            raise UnknownTable(op, f"no table with id {table.id}")
        schema_version = old.schema_version + (1 if _schema_changed(old, table) else 0)
        if table.schema_version != schema_version:
            table = replace(table, schema_version=schema_version)
        names = self._table_ids_by_db.get(table.db_id)
        if names is None:
            raise UnknownDatabase(op, f"no database with id {table.db_id}")
        if names.get(table.name, table.id) != table.id:
            raise TableExists(op, f"table '{table.name}' exists")
        partition_names = [p.name.lower() for p in tablet_holders(table)]
        if len(set(partition_names)) != len(partition_names):
            raise ApplyError(op, f"table '{table.name}' has two partitions of one name")
        self._check_tablet_ranges(op, replacing=old)
        self.tables[table.id] = table
        if (old.db_id, old.name) != (table.db_id, table.name):
            del self._table_ids_by_db[old.db_id][old.name]
            names[table.name] = table.id
        self._tablet_ranges.replace(old, table)
        self._raise_next_id_for(table)
        return table

    def _create_user(self, op: CreateUser) -> User:
        user = op.user
        key = (user.name, user.host)
        if key in self.users:
            raise UserExists(op, f"user {user.identity} exists")
        _check_lockout_policy(op, user.failed_login_attempts, user.password_lock_seconds)
        self.users[key] = user
        self._raise_next_id(user.lockout_epoch + 1)
        return user

    def _drop_user(self, op: DropUser) -> User:
        user = self.users.pop((op.name, op.host), None)
        if user is None:
            raise UnknownUser(op, f"no user '{op.name}'@'{op.host}'")
        return user

    def _existing_user(
        self,
        op: SetPassword | SetLockoutPolicy | GrantPrivileges | RevokePrivileges | GrantRole,
    ) -> User:
        user = self.users.get((op.name, op.host))
        if user is None:
            raise UnknownUser(op, f"no user '{op.name}'@'{op.host}'")
        return user

    def _set_password(self, op: SetPassword) -> User:
        user = replace(self._existing_user(op), password_hash=op.password_hash)
        self.users[(op.name, op.host)] = user
        return user

    def _set_lockout_policy(self, op: SetLockoutPolicy) -> User:
        _check_lockout_policy(op, op.failed_login_attempts, op.password_lock_seconds)
        user = replace(
            self._existing_user(op),
            failed_login_attempts=op.failed_login_attempts,
            password_lock_seconds=op.password_lock_seconds,
            lockout_epoch=op.lockout_epoch,
        )
        self.users[(op.name, op.host)] = user
        self._raise_next_id(op.lockout_epoch + 1)
        return user

    def _grant(self, op: GrantPrivileges) -> User:
        user = self._existing_user(op)
        user = replace(user, grants=_with_grant(user.grants, op.grant))
        self.users[(op.name, op.host)] = user
        return user

    def _revoke(self, op: RevokePrivileges) -> User:
        user = self._existing_user(op)
        if not _holds_grant_on(user.grants, op.grant):
            raise NoSuchGrant(
                op, f"user '{op.name}'@'{op.host}' holds no grant on {op.grant.db}.{op.grant.table}"
            )
        user = replace(user, grants=_without_grant(user.grants, op.grant))
        self.users[(op.name, op.host)] = user
        return user

    def effective_user(self, user: User) -> User:
        """The user with the grants of its roles as its own (what privilege checks read)."""
        if not user.roles:
            return user
        grants = user.grants
        with self.lock:
            for name in user.roles:
                role = self.roles.get(name)
                for grant in () if role is None else role.grants:
                    grants = _with_grant(grants, grant)
        return replace(user, grants=grants)

    def _existing_role(self, op: DropRole | GrantToRole | RevokeFromRole | GrantRole) -> Role:
        name = op.name if isinstance(op, DropRole) else op.role
        role = self.roles.get(name)
        if role is None:
            raise UnknownRole(op, f"no role '{name}'")
        return role

    def _create_role(self, op: CreateRole) -> Role:
        if op.role.name in self.roles:
            raise RoleExists(op, f"role '{op.role.name}' exists")
        self.roles[op.role.name] = op.role
        return op.role

    def _drop_role(self, op: DropRole) -> Role:
        role = self._existing_role(op)
        del self.roles[op.name]
        for key, user in list(self.users.items()):
            if op.name in user.roles:
                roles = tuple(name for name in user.roles if name != op.name)
                self.users[key] = replace(user, roles=roles)
        return role

    def _grant_to_role(self, op: GrantToRole) -> Role:
        role = self._existing_role(op)
        role = self.roles[op.role] = replace(role, grants=_with_grant(role.grants, op.grant))
        return role

    def _revoke_from_role(self, op: RevokeFromRole) -> Role:
        role = self._existing_role(op)
        if not _holds_grant_on(role.grants, op.grant):
            raise NoSuchGrant(
                op, f"role '{op.role}' holds no grant on {op.grant.db}.{op.grant.table}"
            )
        role = self.roles[op.role] = replace(role, grants=_without_grant(role.grants, op.grant))
        return role

    def _set_user_properties(self, op: SetUserProperties) -> tuple[User, ...]:
        accounts = [key for key in self.users if key[0] == op.name]
        if not accounts:
            raise UnknownUser(op, f"no user '{op.name}'")
        changed = []
        for key in accounts:
            user = self.users[key]
            properties = tuple(sorted({**dict(user.properties), **dict(op.properties)}.items()))
            changed.append(replace(user, properties=properties))
            self.users[key] = changed[-1]
        return tuple(changed)

    def _grant_role(self, op: GrantRole) -> User:
        user = self._existing_user(op)
        self._existing_role(op)
        user = replace(user, roles=tuple(sorted({*user.roles, op.role})))
        self.users[(op.name, op.host)] = user
        return user

    def _revoke_role(self, op: RevokeRole) -> User:
        user = self._existing_user(op)
        if op.role not in user.roles:
            raise NoSuchGrant(op, f"user '{op.name}'@'{op.host}' does not hold role '{op.role}'")
        user = replace(user, roles=tuple(name for name in user.roles if name != op.role))
        self.users[(op.name, op.host)] = user
        return user

    def _add_frontend(self, op: AddFrontend) -> Frontend:
        frontend = op.frontend
        if frontend.name in self.frontends:
            raise ApplyError(op, f"frontend '{frontend.name}' already exists")
        clash = next(
            (
                f
                for f in self.frontends.values()
                if (f.host, f.edit_log_port) == (frontend.host, frontend.edit_log_port)
            ),
            None,
        )
        if clash is not None:
            raise ApplyError(
                op,
                f"frontend {frontend.host}:{frontend.edit_log_port} already exists as '{clash.name}'",
            )
        taken = {f.connection_prefix for f in self.frontends.values()}
        if frontend.connection_prefix == NO_CONNECTION_PREFIX:
            free = next((p for p in range(CONNECTION_PREFIXES) if p not in taken), None)
            if free is None:
                raise ApplyError(op, f"a cluster holds at most {CONNECTION_PREFIXES} frontends")
            frontend = replace(frontend, connection_prefix=free)
        elif frontend.connection_prefix in taken:
            raise ApplyError(
                op, f"connection prefix {frontend.connection_prefix} is already in use"
            )
        self.frontends[frontend.name] = frontend
        return frontend

    def _update_frontend(self, op: UpdateFrontend) -> Frontend:
        frontend = op.frontend
        existing = self.frontends.get(frontend.name)
        if existing is None:
            raise ApplyError(op, f"frontend '{frontend.name}' does not exist")
        if (existing.host, existing.edit_log_port, existing.role) != (
            frontend.host,
            frontend.edit_log_port,
            frontend.role,
        ):
            raise ApplyError(
                op,
                f"frontend '{frontend.name}' may only change its HTTP and query ports",
            )
        frontend = replace(frontend, connection_prefix=existing.connection_prefix)
        self.frontends[frontend.name] = frontend
        return frontend

    def _drop_frontend(self, op: DropFrontend) -> Frontend:
        frontend = self.frontends.pop(op.name, None)
        if frontend is None:
            raise ApplyError(op, f"frontend '{op.name}' does not exist")
        return frontend

    def _add_backend(self, op: AddBackend) -> Backend:
        backend = op.backend
        if backend.id in self.backends:
            raise ApplyError(op, f"backend id {backend.id} already exists")
        if any(
            (b.host, b.heartbeat_port) == (backend.host, backend.heartbeat_port)
            for b in self.backends.values()
        ):
            raise ApplyError(
                op,
                f"backend {backend.host}:{backend.heartbeat_port} already exists",
            )
        self.backends[backend.id] = backend
        self._raise_next_id(backend.id + 1)
        return backend

    def _drop_backend(self, op: DropBackend) -> Backend:
        backend = self.backends.pop(op.backend_id, None)
        if backend is None:
            raise ApplyError(op, f"backend id {op.backend_id} does not exist")
        return backend

    def _timestamp(self, op: Timestamp) -> None:
        self.last_timestamp_ms = op.millis

    def _next_id(self, op: NextId) -> None:
        self._raise_next_id(op.next_id)

    def _set_global_variable(self, op: SetGlobalVariable) -> None:
        self.global_variables[op.name] = op.value

    def _client_request(self, op: ClientRequest) -> None:
        """Marks its entry (apply_entry keeps the entry's outcome); nothing of its own."""

    # The recycle bin.

    def _put_in_bin(self, recycled: RecycledObject) -> None:
        """Keep `recycled`, erasing an older entry of the same name in the same place, as
        Doris does: RECOVER brings back the latest drop."""
        stale = self.recycled(recycled.kind, recycled.name, recycled.db_id, recycled.table_id)
        if stale is not None:
            del self.recycle_bin[stale.id]
        assert recycled.id not in self.recycle_bin, recycled.id
        self.recycle_bin[recycled.id] = recycled

    def _recycle_database(self, op: RecycleDatabase) -> RecycledObject:
        database = self.dbs.get(op.db_id)
        if database is None:
            raise ApplyError(op, f"no database with id {op.db_id}")
        tables = tuple(self.tables_of(database.id))
        recycled = RecycledObject(
            RecycledKind.DATABASE, op.drop_time_ms, database.id, database=database, tables=tables
        )
        del self._table_ids_by_db[database.id]
        for table in tables:
            del self.tables[table.id]
        self._tablet_ranges.remove([p for t in tables for p in tablet_holders(t)])
        del self.dbs[database.id]
        del self._db_ids_by_name[database.name]
        self._put_in_bin(recycled)
        return recycled

    def _recycle_table(self, op: RecycleTable) -> RecycledObject:
        table = self.tables.get(op.table_id)
        if table is None:
            raise ApplyError(op, f"no table with id {op.table_id}")
        recycled = RecycledObject(
            RecycledKind.TABLE, op.drop_time_ms, table.db_id, table.id, tables=(table,)
        )
        del self.tables[table.id]
        del self._table_ids_by_db[table.db_id][table.name]
        self._tablet_ranges.remove(tablet_holders(table))
        self._put_in_bin(recycled)
        return recycled

    def _recycle_partition(self, op: RecyclePartition) -> RecycledObject:
        table = self.tables.get(op.table_id)
        if table is None:
            raise ApplyError(op, f"no table with id {op.table_id}")
        partition = next((p for p in table.partitions if p.id == op.partition_id), None)
        if partition is None:
            raise ApplyError(op, f"table '{table.name}' has no partition with id {op.partition_id}")
        if not table.partition_columns:
            raise ApplyError(op, f"table '{table.name}' is not partitioned")
        recycled = RecycledObject(
            RecycledKind.PARTITION, op.drop_time_ms, table.db_id, table.id, partition=partition
        )
        kept = _versioned(
            table,
            replace(table, partitions=tuple(p for p in table.partitions if p is not partition)),
        )
        self.tables[table.id] = kept
        self._tablet_ranges.replace(table, kept)
        self._put_in_bin(recycled)
        return recycled

    def _in_bin(self, op: Op, object_id: int, kind: RecycledKind) -> RecycledObject:
        recycled = self.recycle_bin.get(object_id)
        if recycled is None or recycled.kind != kind:
            raise ApplyError(op, f"no {kind.value.lower()} with id {object_id} in the recycle bin")
        return recycled

    def _recover_database(self, op: RecoverDatabase) -> Database:
        recycled = self._in_bin(op, op.db_id, RecycledKind.DATABASE)
        if op.name in self._db_ids_by_name:
            raise ApplyError(op, f"Database[{op.name}] already exist.")
        assert recycled.database is not None
        database = replace(recycled.database, name=op.name)
        del self.recycle_bin[database.id]
        self.dbs[database.id] = database
        self._db_ids_by_name[database.name] = database.id
        self._table_ids_by_db[database.id] = {t.name: t.id for t in recycled.tables}
        for table in recycled.tables:
            self.tables[table.id] = table
            self._tablet_ranges.add(table)
        return database

    def _recover_table(self, op: RecoverTable) -> Table:
        recycled = self._in_bin(op, op.table_id, RecycledKind.TABLE)
        table = recycled.tables[0]
        names = self._table_ids_by_db.get(table.db_id)
        if names is None:
            raise ApplyError(op, f"no database with id {table.db_id}")
        if op.name in names:
            raise ApplyError(op, f"Table '{op.name}' already exists")
        table = renamed(table, op.name)
        del self.recycle_bin[table.id]
        self.tables[table.id] = table
        names[table.name] = table.id
        self._tablet_ranges.add(table)
        return table

    def _recover_partition(self, op: RecoverPartition) -> Table:
        recycled = self._in_bin(op, op.partition_id, RecycledKind.PARTITION)
        table = self.tables.get(recycled.table_id)
        if table is None:
            raise ApplyError(op, f"no table with id {recycled.table_id}")
        if any(p.name.lower() == op.name.lower() for p in table.partitions):
            raise ApplyError(op, f"partition[{op.name}] already exist in table[{table.name}]")
        assert recycled.partition is not None
        partition = replace(recycled.partition, name=op.name)
        recovered = _versioned(table, replace(table, partitions=(*table.partitions, partition)))
        del self.recycle_bin[partition.id]
        self.tables[table.id] = recovered
        self._tablet_ranges.replace(table, recovered)
        return recovered

    # Statistics: ANALYZE TABLE's, kept until DROP STATS or the table goes for good.

    def _set_table_stats(self, op: SetTableStats) -> TableStats:
        stats = op.stats
        if stats.table_id not in self.tables:
            raise UnknownTable(op, f"no table with id {stats.table_id}")
        names = [c.column for c in stats.columns]
        if len(set(names)) != len(names):
            raise ApplyError(op, "statistics name each column once")
        kept = self.table_stats.get(stats.table_id)
        if kept is not None:
            others = tuple(c for c in kept.columns if c.column not in set(names))
            stats = replace(stats, columns=others + stats.columns)
        self.table_stats[stats.table_id] = stats
        return stats

    def _drop_table_stats(self, op: DropTableStats) -> None:
        kept = self.table_stats.get(op.table_id)
        if kept is None:
            return
        if not op.columns:
            del self.table_stats[op.table_id]
            return
        dropped = set(op.columns)
        columns = tuple(c for c in kept.columns if c.column not in dropped)
        self.table_stats[op.table_id] = replace(kept, columns=columns)

    # S3 Load's and EXPORT's jobs, each state its FE ran it through.

    def _set_labelled_job(self, op: SetLabelledJob) -> LabelledJobRecord:
        job = op.job
        key = (job.kind, job.db, job.label)
        self.labelled_jobs.pop(key, None)
        self.labelled_jobs[key] = job
        of_kind = [k for k in self.labelled_jobs if k[0] == job.kind]
        excess = len(of_kind) - MAX_KEPT_LABELLED_JOBS
        for old in of_kind:
            if excess <= 0:
                break
            if self.labelled_jobs[old].state in FINISHED_JOB_STATES and old != key:
                del self.labelled_jobs[old]
                excess -= 1
        return job

    def _erase_recycled(self, op: EraseRecycled) -> None:
        for object_id, drop_time_ms in op.entries:
            recycled = self.recycle_bin.get(object_id)
            if recycled is not None and recycled.drop_time_ms == drop_time_ms:
                del self.recycle_bin[object_id]
                for table in recycled.tables:
                    self.table_stats.pop(table.id, None)

    def _truncate_table(self, op: TruncateTable) -> Table:
        table = self.tables.get(op.table_id)
        if table is None:
            raise ApplyError(op, f"no table with id {op.table_id}")
        fresh = {p.name: p for p in op.partitions}
        if len(fresh) != len(op.partitions) or not fresh:
            raise ApplyError(op, "TRUNCATE names each partition once")
        old = {p.name: p for p in table.partitions}
        for name, partition in fresh.items():
            previous = old.get(name)
            if previous is None:
                raise ApplyError(op, f"table '{table.name}' has no partition '{name}'")
            if partition.id in self.recycle_bin or any(
                p.id == partition.id for p in table.partitions
            ):
                raise ApplyError(op, f"partition id {partition.id} is already in use")
            if (partition.lower, partition.upper) != (previous.lower, previous.upper):
                raise ApplyError(op, f"partition '{name}' keeps its bounds when truncated")
        truncated = _versioned(
            table, replace(table, partitions=tuple(fresh.get(p.name, p) for p in table.partitions))
        )
        problem = self._tablet_ranges.conflict(truncated, table)
        if problem is not None:
            raise ApplyError(op, f"table '{table.name}': {problem}")
        self.tables[table.id] = truncated
        self._tablet_ranges.replace(table, truncated)
        self._raise_next_id_for(truncated)
        return truncated

    def _swap_tables(self, op: SwapTables) -> tuple[Table, Table]:
        table, other = self.tables.get(op.table_id), self.tables.get(op.other_table_id)
        if table is None or other is None:
            missing = op.table_id if table is None else op.other_table_id
            raise UnknownTable(op, f"no table with id {missing}")
        if table.db_id != other.db_id or table.id == other.id:
            raise ApplyError(op, "SWAP takes two tables of one database")
        swapped = (renamed(table, other.name), renamed(other, table.name))
        names = self._table_ids_by_db[table.db_id]
        for each in swapped:
            self.tables[each.id] = each
            names[each.name] = each.id
        return swapped

    # ALTER jobs: a small state machine, each transition one journaled UpdateAlterJob.

    def _create_alter_job(self, op: CreateAlterJob) -> AlterJob:
        job = op.job
        if job.id in self.alter_jobs:
            raise ApplyError(op, f"alter job id {job.id} is already in use")
        if job.table_id not in self.tables:
            raise ApplyError(op, f"no table with id {job.table_id}")
        self.alter_jobs[job.id] = job
        ids = [job.id, job.index_id, *(first for _, first in job.rollup_tablets)]
        self._raise_next_id(max(ids) + 1)
        return job

    def _update_alter_job(self, op: UpdateAlterJob) -> AlterJob:
        job = self.alter_jobs.get(op.job_id)
        if job is None:
            raise ApplyError(op, f"no alter job with id {op.job_id}")
        if op.state not in _NEXT_STATES[job.state]:
            raise ApplyError(op, f"alter job {job.id} cannot go from {job.state} to {op.state}")
        done = op.state.done
        job = replace(
            job,
            state=op.state,
            message=op.message,
            finish_time_ms=op.time_ms if done else -1,
        )
        if op.state == AlterJobState.FINISHED:
            table = self.tables.get(job.table_id)
            if table is None:
                raise ApplyError(op, f"no table with id {job.table_id}")
            finished = _FINISHERS[job.job_type](table, job)
            problem = self._tablet_ranges.conflict(finished, table)
            if problem is not None:
                raise ApplyError(op, f"table '{table.name}': {problem}")
            schema_version = table.schema_version + (1 if _schema_changed(table, finished) else 0)
            finished = replace(finished, schema_version=schema_version)
            self.tables[table.id] = finished
            self._tablet_ranges.replace(table, finished)
        self.alter_jobs[job.id] = job
        return job

    def _remove_alter_jobs(self, op: RemoveAlterJobs) -> None:
        for job_id in op.job_ids:
            job = self.alter_jobs.get(job_id)
            if job is not None and job.state.done:
                del self.alter_jobs[job_id]

    # Id counter and indexes.

    def _raise_next_id(self, at_least: int) -> None:
        if at_least > self.next_id:
            self.next_id = at_least

    def _raise_next_id_for(self, table: Table) -> None:
        highest = max((table.id, *(r.id for r in table.rollups)))
        for partition in tablet_holders(table):
            last_tablet = max(start + count - 1 for start, count in tablet_spans(partition))
            highest = partition.id if partition.id > highest else highest
            highest = last_tablet if last_tablet > highest else highest
        self._raise_next_id(highest + 1)

    def _check_tablet_ranges(
        self, op: CreateTable | ReplaceTable, replacing: Table | None = None
    ) -> None:
        table = op.table
        problem = self._tablet_ranges.conflict(table, replacing)
        if problem is not None:
            raise ApplyError(op, f"table '{table.name}': {problem}")

    def _rebuild_indexes(self) -> None:
        self._db_ids_by_name = {db.name: db.id for db in self.dbs.values()}
        self._table_ids_by_db = {db_id: {} for db_id in self.dbs}
        for table in self.tables.values():
            names = self._table_ids_by_db.get(table.db_id)
            assert names is not None, f"table {table.id} belongs to no database"
            assert table.name not in names, f"table name {table.name!r} twice in {table.db_id}"
            names[table.name] = table.id
        self._tablet_ranges = TabletRanges.of(self.tables.values())
        assert len(self._db_ids_by_name) == len(self.dbs), "two databases with one name"


def renamed(table: Table, name: str) -> Table:
    """The table under another name: an unpartitioned table's partition is named as it."""
    partitions = table.partitions
    if not table.partition_columns and name != table.name:  # its partition is named as it
        partitions = tuple(replace(p, name=name) for p in partitions)
    return replace(table, name=name, partitions=partitions)


def _schema_changed(old: Table, new: Table) -> bool:
    """Whether rows written for `old` no longer fit `new`: a column or the keys changed, or the
    partitions rows are placed in (TRUNCATE, ADD / DROP / REPLACE / RECOVER PARTITION: a write
    placed by the old ones would land where no read looks); not the name, comment, properties or
    buckets."""
    return (old.columns, old.key_model, old.key_columns, _partition_ids(old)) != (
        new.columns,
        new.key_model,
        new.key_columns,
        _partition_ids(new),
    )


def _partition_ids(table: Table) -> tuple[int, ...]:
    return tuple(partition.id for partition in table.partitions)


def _versioned(old: Table, new: Table) -> Table:
    """new, its schema version one past old's if rows written for old no longer fit it."""
    if not _schema_changed(old, new):
        return new
    return replace(new, schema_version=old.schema_version + 1)


def _finish_schema_change(table: Table, job: AlterJob) -> Table:
    """The table with the job's columns, keys and rollups: all a schema change may change."""
    assert job.table is not None
    target = job.table
    return replace(
        table, columns=target.columns, key_columns=target.key_columns, rollups=target.rollups
    )


def _finish_rollup(table: Table, job: AlterJob) -> Table:
    """The table with the job's rollup, its tablets in every partition."""
    assert job.rollup is not None
    first_tablets = dict(job.rollup_tablets)
    partitions = tuple(
        replace(p, rollup_tablets=(*p.rollup_tablets, (job.rollup.id, first_tablets[p.id])))
        if p.id in first_tablets
        else p
        for p in table.partitions
    )
    return replace(table, rollups=(*table.rollups, job.rollup), partitions=partitions)


_FINISHERS = {
    AlterJobType.SCHEMA_CHANGE: _finish_schema_change,
    AlterJobType.ROLLUP: _finish_rollup,
}

_NEXT_STATES = {
    AlterJobState.PENDING: {AlterJobState.WAITING_TXN, AlterJobState.CANCELLED},
    AlterJobState.WAITING_TXN: {AlterJobState.RUNNING, AlterJobState.CANCELLED},
    AlterJobState.RUNNING: {AlterJobState.FINISHED, AlterJobState.CANCELLED},
    AlterJobState.FINISHED: set(),
    AlterJobState.CANCELLED: set(),
}


def _check_lockout_policy(
    op: CreateUser | SetLockoutPolicy, failed_login_attempts: int, password_lock_seconds: int
) -> None:
    if failed_login_attempts < 0 or password_lock_seconds < LOCKED_UNTIL_UNLOCK:
        raise ApplyError(
            op,
            f"invalid lock-out policy: FAILED_LOGIN_ATTEMPTS {failed_login_attempts}, "
            f"PASSWORD_LOCK_TIME {password_lock_seconds} s",
        )


def _with_grant(grants: tuple[Grant, ...], granted: Grant) -> tuple[Grant, ...]:
    """grants with granted's privileges added to the grant on its object (or as a new one)."""
    target = (granted.db, granted.table)
    if not any((grant.db, grant.table) == target for grant in grants):
        return (*grants, granted)
    return tuple(
        replace(grant, privileges=grant.privileges | granted.privileges)
        if (grant.db, grant.table) == target
        else grant
        for grant in grants
    )


def _holds_grant_on(grants: tuple[Grant, ...], revoked: Grant) -> bool:
    return any((grant.db, grant.table) == (revoked.db, revoked.table) for grant in grants)


def _without_grant(grants: tuple[Grant, ...], revoked: Grant) -> tuple[Grant, ...]:
    """grants with revoked's privileges taken from the grant on its object (gone if empty)."""
    kept = []
    for grant in grants:
        if (grant.db, grant.table) == (revoked.db, revoked.table):
            grant = replace(grant, privileges=grant.privileges - revoked.privileges)
        if grant.privileges:
            kept.append(grant)
    return tuple(kept)


_HANDLERS = {
    CreateDatabase: Catalog._create_database,
    DropDatabase: Catalog._drop_database,
    CreateTable: Catalog._create_table,
    DropTable: Catalog._drop_table,
    ReplaceTable: Catalog._replace_table,
    CreateUser: Catalog._create_user,
    DropUser: Catalog._drop_user,
    SetPassword: Catalog._set_password,
    GrantPrivileges: Catalog._grant,
    RevokePrivileges: Catalog._revoke,
    SetLockoutPolicy: Catalog._set_lockout_policy,
    CreateRole: Catalog._create_role,
    DropRole: Catalog._drop_role,
    GrantToRole: Catalog._grant_to_role,
    RevokeFromRole: Catalog._revoke_from_role,
    GrantRole: Catalog._grant_role,
    RevokeRole: Catalog._revoke_role,
    SetUserProperties: Catalog._set_user_properties,
    AddFrontend: Catalog._add_frontend,
    UpdateFrontend: Catalog._update_frontend,
    DropFrontend: Catalog._drop_frontend,
    AddBackend: Catalog._add_backend,
    DropBackend: Catalog._drop_backend,
    Timestamp: Catalog._timestamp,
    NextId: Catalog._next_id,
    SetGlobalVariable: Catalog._set_global_variable,
    ClientRequest: Catalog._client_request,
    RecycleDatabase: Catalog._recycle_database,
    RecycleTable: Catalog._recycle_table,
    RecyclePartition: Catalog._recycle_partition,
    RecoverDatabase: Catalog._recover_database,
    RecoverTable: Catalog._recover_table,
    RecoverPartition: Catalog._recover_partition,
    EraseRecycled: Catalog._erase_recycled,
    TruncateTable: Catalog._truncate_table,
    SwapTables: Catalog._swap_tables,
    CreateAlterJob: Catalog._create_alter_job,
    UpdateAlterJob: Catalog._update_alter_job,
    RemoveAlterJobs: Catalog._remove_alter_jobs,
    SetTableStats: Catalog._set_table_stats,
    DropTableStats: Catalog._drop_table_stats,
    SetLabelledJob: Catalog._set_labelled_job,
}


class TabletRanges:
    """Which table and partition hold a tablet, without an entry per tablet.

    A partition's tablets are one id range (tablet_start, buckets). The index keeps the ranges'
    first ids in a sorted list, and for each its table id, partition position and end. Live ranges
    never overlap (apply rejects a table whose ranges would), so the range holding a tablet is the
    live one with the greatest first id at or below it: one bisection.

    Removing a range only forgets its entry and marks its first id dead in the list (deleting
    from the middle of a long list costs a memmove of the whole tail); dead ids are skipped by
    lookups and swept out once they are many, or a lookup had to step over too many.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []  # sorted; live and dead first ids
        self._dead: set[int] = set()  # first ids in the list with no entry
        self._entries: dict[int, tuple[int, int, int]] = {}  # start -> (table id, position, end)
        self._high_water = 0  # above every tablet id of every range indexed so far
        self.tablet_count = 0

    @classmethod
    def of(cls, tables: Iterable[Table]) -> TabletRanges:
        index = cls()
        entries = index._entries
        for table in tables:
            for position, partition in enumerate(tablet_holders(table)):
                for start, buckets in tablet_spans(partition):
                    assert start not in entries, f"tablet range {start} used twice"
                    entries[start] = (table.id, position, start + buckets)
                    index.tablet_count += buckets
        index._starts = sorted(entries)
        index._high_water = max((end for _, _, end in entries.values()), default=0)
        return index

    def find(self, tablet_id: int) -> tuple[int, int, int] | None:
        """(table id, partition position, bucket) of a tablet, None if no partition holds it."""
        starts = self._starts
        closest = bisect.bisect_right(starts, tablet_id) - 1
        position = self._live_at_or_before(closest)
        if closest - position > _MAX_DEAD_STEPS:
            self._sweep()  # so that the next lookups here take one step again
        if position < 0:
            return None
        start = starts[position]
        table_id, partition_position, end = self._entries[start]
        if tablet_id >= end:
            return None
        return table_id, partition_position, tablet_id - start

    def conflict(self, table: Table, replacing: Table | None = None) -> str | None:
        """Why the table's tablet ranges cannot be indexed, as a new table or in place of its
        definition `replacing`; None if they can."""
        rollup_ids = {r.id for r in table.rollups}
        for partition in tablet_holders(table):
            unknown = {i for i, _ in partition.rollup_tablets} - rollup_ids
            if unknown or len(partition.rollup_tablets) != len(dict(partition.rollup_tablets)):
                return f"partition {partition.name} has tablets of unknown rollups {unknown}"
        if replacing is not None and _same_ranges(replacing, table):
            return None
        spans = sorted(span for p in tablet_holders(table) for span in tablet_spans(p))
        previous_end = -1
        for start, buckets in spans:
            if buckets < 1 or start < 0:
                return f"invalid tablet range {start}+{buckets}"
            if start < previous_end:
                return f"its partitions' tablet ranges overlap at {start}"
            previous_end = start + buckets
        if replacing is not None:  # ranges it keeps are known not to overlap other tables'
            kept = {span for p in tablet_holders(replacing) for span in tablet_spans(p)}
            spans = [span for span in spans if span not in kept]
        if not spans:
            return None
        if spans[0][0] >= self._high_water:
            return None  # the usual case: new ids, above every range indexed so far
        for start, buckets in spans:
            other = self._overlapping_table(start, start + buckets, table.id)
            if other is not None:
                return f"tablets {start}..{start + buckets - 1} overlap those of table id {other}"
        return None

    def _overlapping_table(self, start: int, end: int, own_table_id: int) -> int | None:
        starts, entries = self._starts, self._entries
        position = self._live_at_or_before(bisect.bisect_right(starts, start) - 1)
        while position >= 0:
            table_id, _, other_end = entries[starts[position]]
            if table_id != own_table_id:
                if other_end > start:
                    return table_id
                break
            position = self._live_at_or_before(position - 1)
        for position in range(bisect.bisect_right(starts, start), len(starts)):
            if starts[position] >= end:
                break
            entry = entries.get(starts[position])
            if entry is not None and entry[0] != own_table_id:
                return entry[0]
        return None

    def _live_at_or_before(self, position: int) -> int:
        """The position of the last live first id at or before `position`, -1 if none."""
        starts, dead = self._starts, self._dead
        while position >= 0 and starts[position] in dead:
            position -= 1
        return position

    def add(self, table: Table, already_indexed: Set[int] = frozenset()) -> None:
        starts, entries, dead = self._starts, self._entries, self._dead
        for position, partition in enumerate(tablet_holders(table)):
            for start, buckets in tablet_spans(partition):
                assert start not in entries, f"tablet range {start} indexed twice"
                end = start + buckets
                entries[start] = (table.id, position, end)
                self.tablet_count += buckets
                if end > self._high_water:
                    self._high_water = end
                if start in already_indexed:
                    continue
                if start in dead:
                    dead.discard(start)
                elif not starts or start > starts[-1]:
                    starts.append(start)
                else:
                    bisect.insort(starts, start)

    def remove(self, partitions: Iterable[Partition]) -> None:
        entries = self._entries
        for partition in partitions:
            for start, _ in tablet_spans(partition):
                _, _, end = entries.pop(start)
                self.tablet_count -= end - start
                self._dead.add(start)
        if len(self._dead) > max(_MAX_DEAD_STEPS, len(self._starts) // 4):
            self._sweep()

    def replace(self, old: Table, new: Table) -> None:
        """Index `new` in place of `old`, the same table redefined."""
        assert old.id == new.id
        if _same_ranges(old, new):
            return  # same ranges at the same positions: the entries are already right
        new_starts = {start for p in tablet_holders(new) for start, _ in tablet_spans(p)}
        old_starts = {start for p in tablet_holders(old) for start, _ in tablet_spans(p)}
        for start in old_starts - new_starts:
            _, _, end = self._entries.pop(start)
            self.tablet_count -= end - start
            self._dead.add(start)
        if len(self._dead) > max(_MAX_DEAD_STEPS, len(self._starts) // 4):
            self._sweep()
        kept = old_starts & new_starts
        for start in kept:
            _, _, end = self._entries.pop(start)
            self.tablet_count -= end - start
        self.add(new, already_indexed=kept)

    def _sweep(self) -> None:
        dead = self._dead
        self._starts = [start for start in self._starts if start not in dead]
        dead.clear()


def tablet_holders(table: Table) -> tuple[Partition, ...]:
    """The partitions whose tablets the index finds: the formal ones, then the temporary ones."""
    return (*table.partitions, *table.temporary_partitions)


def tablet_spans(partition: Partition) -> list[tuple[int, int]]:
    """(first tablet id, count) of each index of the partition: the base index, then rollups."""
    buckets = partition.buckets
    return [(partition.tablet_start, buckets)] + [
        (first, buckets) for _, first in partition.rollup_tablets
    ]


def _same_ranges(old: Table, new: Table) -> bool:
    old_partitions, new_partitions = tablet_holders(old), tablet_holders(new)
    return len(old_partitions) == len(new_partitions) and all(
        tablet_spans(a) == tablet_spans(b)
        for a, b in zip(old_partitions, new_partitions, strict=True)
    )


def _apply_errors() -> dict[str, type[ApplyError]]:
    found, pending = {"ApplyError": ApplyError}, [ApplyError]
    while pending:
        for kind in pending.pop().__subclasses__():
            found[kind.__name__] = kind
            pending.append(kind)
    return found
