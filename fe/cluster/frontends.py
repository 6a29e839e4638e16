"""What every FE knows of the others, for SHOW FRONTENDS: each FE polls the others' HTTP API in the
background, so SHOW FRONTENDS answers at once from what it last saw, even while a node is down
(Doris can take 12-40 s there, its issue #4589)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import requests

from be.config import Config
from fe.cluster.freshness import Freshness
from fe.cluster.startup import ThisFrontend
from metadata.catalog import Catalog
from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
POLL_TIMEOUT_SECONDS = 0.5
COLUMNS = [
    "Name", "Host", "EditLogPort", "HttpPort", "QueryPort", "RpcPort", "Role", "IsMaster", "ClusterId",
    "Join", "Alive", "ReplayedJournalId", "LastHeartbeat", "IsHelper", "ErrMsg", "Version",
    "CurrentConnected",
]  # fmt: skip
VERSION = "quire-0.1.0"
NO_RPC_PORT = (
    0  # what Doris shows for an FE whose heartbeat brought no RPC port: Quire has none yet
)


@dataclass(frozen=True)
class Seen:
    alive: bool
    journal_id: int
    last_heartbeat: float  # wall clock of the last answer; 0 if none yet
    error: str


class FrontendMonitor:
    def __init__(
        self,
        this: ThisFrontend,
        catalog: Catalog,
        journal: ReplicatedJournal,
        freshness: Freshness,
        config: Config,
        stopping: threading.Event,
    ):
        self.this = this
        self.catalog = catalog
        self.journal = journal
        self.freshness = freshness
        self.config = config
        self.stopping = stopping
        self.seen: dict[str, Seen] = {}

    def start(self) -> None:
        threading.Thread(target=self._poll_forever, name="frontend-monitor", daemon=True).start()

    def _poll_forever(self) -> None:
        while not self.stopping.wait(POLL_SECONDS):
            for frontend in list(self.catalog.frontends.values()):
                if frontend.name != self.this.name and frontend.http_port:
                    self.seen[frontend.name] = self._poll(frontend, self.seen.get(frontend.name))

    def _poll(self, frontend, before: Seen | None) -> Seen:
        url = f"http://{frontend.host}:{frontend.http_port}/journal_id"
        try:
            response = requests.get(
                url, headers={"X-Quire-Token": self.this.token}, timeout=POLL_TIMEOUT_SECONDS
            )
            response.raise_for_status()
            return Seen(True, int(response.json()["journal_id"]), time.time(), "")
        except (requests.RequestException, ValueError, KeyError) as error:
            last = before.last_heartbeat if before else 0.0
            journal_id = before.journal_id if before else 0
            return Seen(False, journal_id, last, type(error).__name__)

    def table(self) -> tuple[list[str], list[tuple]]:
        """SHOW FRONTENDS: its column names and rows."""
        return COLUMNS, self.rows()

    def rows(self) -> list[tuple]:
        this = self.this
        status = self.journal.status()
        members = set(status.voters) | set(status.observers or ())
        lag = self.freshness.stale_seconds()
        rows = []
        for fe in sorted(list(self.catalog.frontends.values()), key=lambda f: f.name):
            address = f"{fe.host}:{fe.edit_log_port}"
            if fe.name == this.name:
                seen = Seen(
                    True,
                    self.catalog.journal_id,
                    time.time(),
                    f"metadata {lag:.0f} s behind the leader" if lag is not None else "",
                )
            else:
                seen = self.seen.get(fe.name, Seen(False, 0, 0.0, "not polled yet"))
            heartbeat = (
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seen.last_heartbeat))
                if seen.last_heartbeat
                else ""
            )
            rows.append((
                fe.name, fe.host, fe.edit_log_port, fe.http_port, fe.query_port, NO_RPC_PORT,
                str(fe.role), str(address == str(status.leader)).lower(), this.cluster_id,
                str(address in members or fe.name == this.name).lower(), str(seen.alive).lower(),
                seen.journal_id, heartbeat, str(fe.role == "FOLLOWER").lower(), seen.error, VERSION,
                "Yes" if fe.name == this.name else "No",
            ))  # fmt: skip
        return rows
