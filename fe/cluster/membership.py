"""Who is in the cluster: the journal's state machine (the catalog, naming the followers and
observers ALTER SYSTEM made), and the ports each FE reports once it listens."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

import requests

from fe.cluster.frontend_messages import PortsReport
from fe.cluster.startup import ThisFrontend
from fe.cluster.write_path import MetadataWriter
from fe.mysql.errors import QueryError
from metadata import ops
from metadata.catalog import Catalog
from metadata.records import Frontend, FrontendRole

logger = logging.getLogger(__name__)

Members = tuple[list[str], list[str]]  # (followers, observers) journal addresses

PORT_REPORT_RETRY_SECONDS = 1.0


def followers(catalog: Catalog, this: ThisFrontend) -> list[str]:
    """The voting members' journal addresses, as the catalog (or the helper) knows them."""
    from_catalog = [
        f"{f.host}:{f.edit_log_port}"
        for f in list(catalog.frontends.values())
        if f.role == FrontendRole.FOLLOWER
    ]
    return sorted(set(from_catalog) | set(this.known_followers))


def members(catalog: Catalog, this: ThisFrontend) -> Members:
    observers = [
        f"{f.host}:{f.edit_log_port}"
        for f in list(catalog.frontends.values())
        if f.role == FrontendRole.OBSERVER
    ]
    return followers(catalog, this), sorted(observers)


class CatalogStateMachine:
    """What the journal applies entries to: the catalog. The journal reads `members()` after each
    entry, so ALTER SYSTEM ... FOLLOWER/OBSERVER changes who votes and who observes."""

    def __init__(self, catalog: Catalog, this: ThisFrontend):
        self.catalog = catalog
        self.this = this
        self._members: Members | None = None
        self._refresh()

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        results = self.catalog.apply_entry(raft_index, payload)
        if any(type(result) is Frontend for result in results):
            self._refresh()
        return results

    def members(self) -> Members | None:
        return self._members

    def restore(self, image: Catalog) -> None:
        """Take an image's catalog (from the journal's thread, between two entries)."""
        self.catalog.assume(image)
        self._refresh()

    def _refresh(self) -> None:
        if not self.catalog.frontends:
            return
        current = members(self.catalog, self.this)
        if current != self._members:
            self._members = current


def record_ports(
    catalog: Catalog, writer: MetadataWriter, name: str, http_port: int, query_port: int
) -> None:
    """Leader: journal the HTTP and query ports a joined FE listens on."""
    record = catalog.frontends.get(name)
    if record is None:
        raise QueryError(1105, f"frontend {name} does not exist")
    if (record.http_port, record.query_port) != (http_port, query_port):
        updated = dataclasses.replace(record, http_port=http_port, query_port=query_port)
        writer.commit_blocking([ops.UpdateFrontend(updated)])


class PortReporter:
    """An FE added by ALTER SYSTEM is known by its journal port only: tell the cluster the ports
    other FEs forward to and clients connect to, once, retrying until the leader has them."""

    def __init__(
        self,
        this: ThisFrontend,
        catalog: Catalog,
        writer: MetadataWriter,
        leader_url: Callable[[], str],
        stopping: threading.Event,
    ):
        self.this = this
        self.catalog = catalog
        self.writer = writer
        self.leader_url = leader_url
        self.stopping = stopping

    def start(self, http_port: int, query_port: int) -> None:
        threading.Thread(
            target=self._report, args=(http_port, query_port), name="report-ports", daemon=True
        ).start()

    def _report(self, http_port: int, query_port: int) -> None:
        interval = 0.0
        while not self.stopping.wait(interval):
            interval = PORT_REPORT_RETRY_SECONDS
            try:
                if self.writer.is_leader():
                    record_ports(self.catalog, self.writer, self.this.name, http_port, query_port)
                else:
                    report = PortsReport(self.this.name, http_port, query_port)
                    requests.post(
                        self.leader_url() + "/api/frontend_ports",
                        json=report.to_json(),
                        headers={"X-Quire-Token": self.this.token},
                        timeout=10,
                    ).raise_for_status()
                return
            except Exception as error:
                logger.info("ports not reported to the leader yet: %s", error)
