"""What an FE knows of the backends (the TN and the CNs added with ALTER SYSTEM ADD BACKEND): each
FE heartbeats every backend in the background, so SHOW BACKENDS answers at once from what it last
saw, and reads skip a CN that stopped answering. A heartbeat is a Status call proven with the
cluster token: a node without the token never counts as alive."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass

from be.client import DataNode, RemoteDataPlane
from be.config import Config
from be.service.errors import ServiceError
from be.service.format import Role
from metadata.catalog import Catalog
from metadata.records import Backend

logger = logging.getLogger(__name__)

ROLE_PROPERTY = "role"
COLUMNS = [
    "BackendId", "Host", "HeartbeatPort", "BePort", "HttpPort", "BrpcPort", "ArrowFlightSqlPort",
    "LastStartTime", "LastHeartbeat", "Alive", "SystemDecommissioned", "TabletNum",
    "DataUsedCapacity", "TrashUsedCapacity", "AvailCapacity", "TotalCapacity", "UsedPct",
    "MaxDiskUsedPct", "RemoteUsedCapacity", "Tag", "ErrMsg", "Version", "Status",
    "HeartbeatFailureCounter", "NodeRole", "Role",
]  # fmt: skip
VERSION = "quire-0.1.0"
DORIS_NODE_ROLES = {Role.TN: "mix", Role.CN: "computation"}


def backend_role(backend: Backend) -> Role:
    return Role(dict(backend.properties).get(ROLE_PROPERTY, Role.CN.value))


@dataclass(frozen=True)
class Heard:
    alive: bool
    last_heartbeat: float  # wall clock of the last answer; 0 if none yet
    started_ms: int
    watermark: int
    failures: int  # heartbeats failed in a row
    error: str
    stats: tuple[tuple[str, int], ...] = ()  # the node's own figures (a CN's kept bytes, ...)


NOT_YET = Heard(False, 0.0, 0, 0, 0, "not heartbeaten yet")


class BackendMonitor:
    def __init__(
        self,
        catalog: Catalog,
        plane: RemoteDataPlane,
        config: Config,
        stopping: threading.Event,
    ):
        self.catalog = catalog
        self.plane = plane
        self.config = config
        self.stopping = stopping
        self.heard: dict[int, Heard] = {}

    def start(self) -> None:
        threading.Thread(target=self._beat_forever, name="backend-monitor", daemon=True).start()

    @property
    def timeout(self) -> float:
        return self.config["backend_heartbeat_timeout_ms"] / 1000

    def nodes(self) -> list[DataNode]:
        """The added backends, alive unless a heartbeat failed since the last that answered."""
        nodes = []
        for backend in sorted(list(self.catalog.backends.values()), key=lambda b: b.id):
            heard = self.heard.get(backend.id)
            alive = heard is None or heard.alive
            nodes.append(
                DataNode(
                    backend.id, backend.host, backend.heartbeat_port, backend_role(backend), alive
                )
            )
        return nodes

    def _beat_forever(self) -> None:
        while True:
            self.beat_all()
            if self.stopping.wait(self.config["heartbeat_interval_second"]):
                return

    def beat_all(self) -> None:
        backends = list(self.catalog.backends.values())
        for backend in backends:
            if self.stopping.is_set():
                return
            self.heard[backend.id] = self._beat(backend, self.heard.get(backend.id))
        for gone in set(self.heard) - {b.id for b in backends}:
            self.heard.pop(gone, None)

    def _beat(self, backend: Backend, before: Heard | None) -> Heard:
        before = before or NOT_YET
        try:
            status = self.plane.status(backend.host, backend.heartbeat_port, self.timeout)
        except ServiceError as error:
            if before.alive:
                logger.warning(
                    "backend %d (%s:%d) stopped answering: %s",
                    backend.id,
                    backend.host,
                    backend.heartbeat_port,
                    error,
                )
            return Heard(
                False,
                before.last_heartbeat,
                before.started_ms,
                before.watermark,
                before.failures + 1,
                str(error)[:500],
                before.stats,
            )
        error = ""
        if status.role is not backend_role(backend):
            error = f"the node says it is a {status.role}, added as a {backend_role(backend)}"
        return Heard(
            not error, time.time(), status.started_ms, status.watermark, 0, error, status.stats
        )

    def rows(self) -> list[tuple]:
        rows = []
        for backend in sorted(list(self.catalog.backends.values()), key=lambda b: b.id):
            heard = self.heard.get(backend.id, NOT_YET)
            role = backend_role(backend)
            rows.append((
                backend.id, backend.host, backend.heartbeat_port, -1, -1, -1, -1,
                _when(heard.started_ms / 1000), _when(heard.last_heartbeat),
                str(heard.alive).lower(), "false", 0, "0.000", "0.000", "0.000", "0.000",
                "0.00 %", "0.00 %", "0.000", '{"location" : "default"}', heard.error, VERSION,
                json.dumps({"watermark": heard.watermark, **dict(heard.stats)}, separators=(",", ":")),
                heard.failures, DORIS_NODE_ROLES[role],
                role.value,
            ))  # fmt: skip
        return rows


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "NULL"
