"""Administration statements: ADMIN SHOW/SET FRONTEND CONFIG, ADMIN CHECKPOINT, KILL, ALTER SYSTEM,
SYNC."""

from __future__ import annotations

import asyncio

from be.config import ConfigError
from be.service.errors import NotAuthenticated, ServiceError
from be.service.format import Role
from fe.cluster import connection_ids, peers
from fe.cluster.backends import ROLE_PROPERTY, backend_role
from fe.cluster.frontend_messages import ConfigRequest, KillRequest
from fe.cluster.startup import frontend_name
from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.security import privileges
from fe.sql import statements as st
from fe.statements.show import like_matcher, text_result
from metadata import ops
from metadata.records import Backend, Frontend, FrontendRole


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise QueryError(1105, f"Invalid address '{text}': expected host:edit_log_port")
    return host, int(port)


async def alter_system(session, statement: st.AlterSystem) -> list[ops.Op]:
    session.require_node()
    if statement.role == "BACKEND":
        return await _alter_backends(session, statement)
    host, port = _address(statement.address)
    existing = next(
        (
            fe
            for fe in list(session.catalog.frontends.values())
            if fe.host == host and fe.edit_log_port == port
        ),
        None,
    )
    role = FrontendRole(statement.role)
    if statement.action == "ADD":
        if existing is not None:
            raise QueryError(1105, f"Frontend {host}:{port} already exists (as {existing.role})")
        name = frontend_name(host, port, taken=session.catalog.frontends)
        return [ops.AddFrontend(Frontend(name, host, port, role=role))]
    if existing is None or existing.role != role:
        raise QueryError(1105, f"{role} {host}:{port} does not exist")
    if existing.name == session.services.this.name:
        raise QueryError(1105, "Cannot drop the current leader; transfer leadership first")
    return [ops.DropFrontend(existing.name)]


async def _alter_backends(session, statement: st.AlterSystem) -> list[ops.Op]:
    """ADD BACKEND asks the node, over its port and with the cluster token, what it is (TN or
    CN); DROP BACKEND forgets it. An FE talks to added backends only."""
    services = session.services
    plane = services.data_plane
    if services.backends is None:
        raise QueryError(
            1235, "This node runs its own TN and CN (quire up): it takes no other backends"
        )
    text = statement.address
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise QueryError(1105, f"Invalid address '{text}': expected host:port of a TN or CN")
    port = int(port)
    existing = next(
        (
            b
            for b in list(session.catalog.backends.values())
            if (b.host, b.heartbeat_port) == (host, port)
        ),
        None,
    )
    if statement.action == "DROP":
        if existing is None:
            raise QueryError(1105, f"Backend {host}:{port} does not exist")
        plane.forget(host, port)
        return [ops.DropBackend(existing.id)]
    if existing is not None:
        raise QueryError(1105, f"Backend {host}:{port} already exists")
    try:
        status = await asyncio.to_thread(plane.status, host, port, services.backends.timeout)
    except NotAuthenticated as error:
        raise QueryError(
            1105, f"Backend {host}:{port} does not hold this cluster's token: {error}"
        ) from None
    except ServiceError as error:
        raise QueryError(1105, f"Backend {host}:{port} cannot be reached: {error}") from None
    if status.role is Role.TN and any(
        backend_role(b) is Role.TN for b in list(session.catalog.backends.values())
    ):
        raise QueryError(1105, "The cluster has a TN already; drop it first")
    backend_id = services.writer.allocate_ids(1)
    properties = ((ROLE_PROPERTY, status.role.value),)
    return [ops.AddBackend(Backend(backend_id, host, port, properties))]


async def kill(session, statement: st.Kill) -> Result:
    services = session.services
    user, is_admin = session.user.name, privileges.is_admin(session.user)
    owner = connection_ids.owner_of(session.catalog, statement.connection_id)
    if owner is None or owner.name == services.this.name:
        connection_ids.kill_here(
            services.front, statement.connection_id, statement.query_only, user, is_admin
        )
    else:
        request = KillRequest(statement.connection_id, statement.query_only, user, is_admin)
        timeout = services.config["kill_forward_timeout_second"]
        await peers.ask_frontend(owner, peers.KILL_PATH, services.this.token, request, timeout)
    return Result()


async def show_config(session, statement: st.AdminShowConfig) -> Result:
    session.require_admin()
    match = like_matcher(statement.like, case_sensitive=False)
    rows = []
    for key, value in session.services.config.items():
        if match(key.name):
            kind = type(key.default).__name__.replace("str", "String").replace("bool", "boolean")
            rows.append(
                (
                    key.name,
                    str(value),
                    kind,
                    "true" if key.mutable else "false",
                    "true" if key.master_only else "false",
                    key.comment,
                )
            )
    return text_result(["Key", "Value", "Type", "IsMutable", "MasterOnly", "Comment"], rows)


async def set_config(session, statement: st.AdminSetConfig) -> Result:
    """ADMIN SET [ALL FRONTENDS | FRONTEND] CONFIG: this FE's settings, then (ALL) every other
    FE's, each told over HTTP; not persisted, as in Doris (the conf file is read at start)."""
    session.require_admin()
    set_config_here(session.services, statement.settings)
    if statement.all_frontends:
        services = session.services
        request = ConfigRequest(dict(statement.settings))
        timeout = services.config["kill_forward_timeout_second"]
        with session.catalog.lock:
            others = [f for f in session.catalog.frontends.values() if f.name != services.this.name]
        for frontend in others:
            await peers.ask_frontend(
                frontend, peers.CONFIG_PATH, services.this.token, request, timeout
            )
    return Result()


def set_config_here(services, settings) -> None:
    for name, value in settings:
        try:
            services.set_config(name, value)
        except ConfigError as error:
            raise QueryError(1105, str(error)) from None


async def checkpoint(session, statement: st.AdminCheckpoint) -> Result:
    session.require_admin()
    info = await session.services.checkpointer.checkpoint_now()
    return Result(info=f"image.{info.journal_id}" if info else "")


async def sync(session, statement: st.Sync) -> Result:
    """Doris's SYNC, which anyone may run: nothing to do on the leader. A non-leader forwards
    it (statement_kinds) and answers once it has replayed the journal id the leader answered
    with, as after any forwarded statement (within journal_commit_timeout_second, else 1105)."""
    return Result()
