"""The FE node: start-up (image, journal replay, first-start bootstrap), the write path from a
statement to a committed journal entry, the checkpointer and TimePrinter threads, and the MySQL and
HTTP servers on one asyncio loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import requests

from be.config import Config
from be.engine import Engine
from fe.client_errors import apply_failure, catalog_error, journal_error
from fe.cluster.forwarding import Forwarder
from fe.cluster.frontends import COLUMNS as FRONTEND_COLUMNS
from fe.cluster.frontends import FrontendMonitor
from fe.cluster.helper import (
    HOW_TO_GIVE_THE_TOKEN,
    JoinError,
    ask_role,
    check_local,
    download_image,
    fetch_newer_image,
    given_token,
    helper_url,
)
from fe.cluster.metrics import Metrics
from fe.mysql.errors import QueryError
from fe.mysql.server import MysqlFront
from fe.security import privileges
from fe.security.certificates import CertificateError, self_signed, server_context
from fe.security.lockout import LoginTracker
from fe.session import QuireSession
from fe.statement_cache import StatementCache
from fe.statements.accounts import CatalogIdentityProvider
from fe.variables import ClusterGlobalVariables
from image.identity import (
    NodeRole,
    new_identity,
    read_role,
    read_version,
    write_role,
    write_version,
)
from image.images import ImageError, ImageInfo, ImageStore
from metadata import ops
from metadata.catalog import ApplyError, Catalog, initial_ops
from metadata.codec import encode_ops
from metadata.journal.replicated import ReplicatedJournal
from metadata.records import Frontend, FrontendRole

logger = logging.getLogger(__name__)

MAX_OPS_PER_STATEMENT = 1024
CHECKPOINTER_TICK_SECONDS = 1.0
IMAGE_RETRY_SECONDS = 1.0
CATCH_UP_BEFORE_SERVING_SECONDS = 60
QUORUM_CHECK_SECONDS = 0.25  # how often a waiting write checks that the majority still answers
ROOT_PRIVILEGES = frozenset(
    (*privileges.OBJECT_PRIVILEGES, privileges.GRANT, *privileges.GLOBAL_ONLY)
)


class StartupError(Exception):
    """A reason the node cannot start, said plainly (bad VERSION, no usable image, ...)."""


def local_address(priority_networks: str) -> str:
    networks = [
        ipaddress.ip_network(n.strip(), strict=False)
        for n in priority_networks.split(";")
        if n.strip()
    ]
    if not networks:
        return "127.0.0.1"
    candidates = {"127.0.0.1"}
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            candidates.add(str(info[4][0]))
    except OSError:
        pass
    for network in networks:
        for address in sorted(candidates):
            if ipaddress.ip_address(address) in network:
                return address
    raise StartupError(f"no local address is in priority_networks {priority_networks!r}")


class FrontendNode:
    def __init__(
        self,
        config: Config,
        replaying: Callable[[], AbstractContextManager[None]],
        set_log_level: Callable[[str], None],
        helper: str | None = None,
        token_file: str | None = None,
    ):
        """replaying and set_log_level change process-wide state (the collector, the root logger):
        the process's entry point owns them."""
        self.config = config
        self.replaying = replaying
        self.set_log_level = set_log_level
        self.helper = helper
        self.token_file = token_file
        self.role = "FOLLOWER"
        self.known_followers: list[str] = []  # from the helper, before the catalog knows them
        self.host = local_address(config["priority_networks"])
        self.meta_dir = config.path("meta_dir")
        self.image_dir = self.meta_dir / "image"
        self.images = ImageStore(self.image_dir, keep=config["image_keep_count"])
        self.catalog = Catalog()
        self.global_variables = ClusterGlobalVariables(
            self.catalog, {"have_ssl": "YES" if config["enable_ssl"] else "DISABLED"}
        )
        self.statement_cache = StatementCache(
            config["statement_cache_size"],
            config["statement_cache_max_sql_bytes"],
            max_tokens=config["max_statement_tokens"],
            max_waiting_long_statements=config["max_waiting_long_statements"],
        )
        self.login_tracker = LoginTracker(config["failed_login_max_accounts"])
        self.metrics = Metrics(self)
        self.query_engine = Engine(
            workers=config["query_executor_threads"],
            queue_size=config["query_queue_size"],
            threads_per_query=config["query_engine_threads"],
        )
        self.frontend_monitor = FrontendMonitor(self)
        self.journal: ReplicatedJournal | None = None
        self.front: MysqlFront | None = None
        self.http = None
        self.name = ""
        self.cluster_id = 0
        self.token = ""
        self.started_at = time.time()
        self._next_free_id = 0
        self._id_lock = threading.Lock()
        self._stopping = threading.Event()
        self._checkpoint_lock = threading.Lock()
        self._image_catch_up = threading.Lock()  # held while one runs
        self.last_checkpoint_at = time.monotonic()
        self.last_image: ImageInfo | None = None
        self.ready = False

    # -- start-up ------------------------------------------------------------------------------

    def join(self) -> None:
        """First start (or a restart) with --helper: ask the helper, check, fetch its image."""
        base = helper_url(self.helper, self.config["http_port"])
        try:
            local_version = read_version(self.image_dir)
            token = given_token(self.token_file) or (local_version and local_version.token)
            if not token:
                raise JoinError(
                    f"joining through --helper needs the cluster token: {HOW_TO_GIVE_THE_TOKEN}"
                )
            role, identity, self.known_followers = ask_role(
                base, self.host, self.config["edit_log_port"], token
            )
            local_role = read_role(self.image_dir)
            check_local(local_version, local_role, role, identity)
            if local_version is None:
                download_image(base, identity.token, self.image_dir)
                write_version(self.image_dir, identity)
                write_role(self.image_dir, role)
            elif local_role is not None and local_role.name != role.name:
                # Dropped and added again on the same address: the cluster knows it by a new name.
                logger.info("re-added to the cluster: %s is now %s", local_role.name, role.name)
                download_image(base, identity.token, self.image_dir)
                write_role(self.image_dir, role)
        except JoinError as error:
            raise StartupError(str(error)) from None
        logger.info(
            "joined cluster %d through %s as %s %s", identity.cluster_id, base, role.role, role.name
        )

    def load_identity(self) -> None:
        self.image_dir.mkdir(parents=True, exist_ok=True)
        self.meta_dir.chmod(0o700)  # the token, images and journal: for this node's user only
        if self.helper:
            self.join()
        version = read_version(self.image_dir)
        configured = self.config["cluster_id"]
        if version is None:
            if any(self.image_dir.glob("image.*")) or (self.meta_dir / "journal").exists():
                raise StartupError(
                    f"{self.image_dir / 'VERSION'} is missing but the meta_dir holds data; refusing to start a new cluster over it"
                )
            version = new_identity(configured or None)
            write_version(self.image_dir, version)
            logger.info("new cluster: cluster id %d", version.cluster_id)
        elif configured and configured != version.cluster_id:
            raise StartupError(
                f"cluster_id {configured} in the configuration differs from {version.cluster_id} in {self.image_dir / 'VERSION'}"
            )
        role = read_role(self.image_dir)
        if role is None:
            role = NodeRole(
                "FOLLOWER", f"{self.host}_{self.config['edit_log_port']}_{int(time.time() * 1000)}"
            )
            write_role(self.image_dir, role)
        self.cluster_id, self.token, self.name = version.cluster_id, version.token, role.name
        self.role = role.role

    def load_image(self) -> None:
        started = time.monotonic()
        try:
            loaded = self.images.load_newest()
        except ImageError as error:
            raise StartupError(f"no usable image: {error}") from None
        if loaded is not None:
            self.catalog, self.last_image = loaded
            self.global_variables.catalog = self.catalog
            logger.info(
                "loaded %s (journal id %d, %d tables) in %.2f s",
                self.last_image.path.name,
                self.catalog.journal_id,
                len(self.catalog.tables),
                time.monotonic() - started,
            )
        else:
            logger.info("no image yet: starting from an empty catalog")

    def start_journal(self) -> None:
        self.membership = MembershipTracker(self)
        self.journal = ReplicatedJournal(
            journal_dir=str(self.meta_dir / "journal"),
            self_address=None if self.role == "OBSERVER" else self.address,
            partners=[a for a in self.followers() if a != self.address],
            state_machine=self.membership,
            applied_index=self.catalog.raft_index,
            applied_term=self.catalog.raft_term,
            sync=self.config["master_sync_policy"] == "SYNC",
            password=self.token,
            observer_address=self.address if self.role == "OBSERVER" else None,
            raft_min_timeout=self.config["election_timeout_min_ms"] / 1000,
            raft_max_timeout=self.config["election_timeout_max_ms"] / 1000,
            max_frame_bytes=self.config["journal_max_frame_bytes"],
            max_unauthenticated_frame_bytes=self.config["journal_max_unauthenticated_frame_bytes"],
            handshake_timeout=self.config["journal_handshake_timeout_ms"] / 1000,
            max_unknown_connections=self.config["journal_max_unknown_connections"],
            on_needs_image=self.needs_image,
        )
        if self.catalog.frontends:
            self.journal.set_members(*self.members())
        started = time.monotonic()
        with self.replaying():
            self.journal.start()
        logger.info(
            "journal replayed to journal id %d in %.2f s",
            self.catalog.journal_id,
            time.monotonic() - started,
        )
        if not self.journal.wait_leader(timeout=30):
            raise StartupError("the journal did not elect a leader within 30 s")

    def catch_up(self) -> None:
        """Before the MySQL port opens: apply what the cluster committed, so that a restarted FE
        never answers with less than it had acknowledged."""
        started = time.monotonic()
        if self.journal.wait_caught_up(timeout=CATCH_UP_BEFORE_SERVING_SECONDS):
            logger.info(
                "caught up to journal id %d in %.2f s",
                self.catalog.journal_id,
                time.monotonic() - started,
            )
        else:
            logger.warning(
                "not caught up with the leader after %d s: serving anyway; reads are refused "
                "while this FE lags more than meta_delay_toleration_second",
                CATCH_UP_BEFORE_SERVING_SECONDS,
            )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.config['edit_log_port']}"

    def followers(self) -> list[str]:
        """The voting members' journal addresses, as the catalog (or the helper) knows them."""
        from_catalog = [
            f"{f.host}:{f.edit_log_port}"
            for f in list(self.catalog.frontends.values())
            if f.role == FrontendRole.FOLLOWER
        ]
        return sorted(set(from_catalog) | set(self.known_followers))

    def members(self) -> tuple[list[str], list[str]]:
        """(followers, observers) journal addresses, as ALTER SYSTEM made them."""
        observers = [
            f"{f.host}:{f.edit_log_port}"
            for f in list(self.catalog.frontends.values())
            if f.role == FrontendRole.OBSERVER
        ]
        return self.followers(), sorted(observers)

    def bootstrap(self) -> None:
        """First start of a cluster: journal the built-in users and this frontend."""
        if (
            self.helper
            or self.role == "OBSERVER"
            or self.catalog.frontends
            and self.name not in self.catalog.frontends
        ):
            return  # a node that joined: the leader journaled all of this
        first: list[ops.Op] = []
        if not self.catalog.users:
            first += initial_ops(ROOT_PRIVILEGES)
        if self.name not in self.catalog.frontends:
            first.append(
                ops.AddFrontend(
                    Frontend(
                        self.name,
                        self.host,
                        self.config["edit_log_port"],
                        self.config["http_port"],
                        self.config["query_port"],
                        FrontendRole.FOLLOWER,
                    )
                )
            )
        if first:
            self.commit_blocking(first)

    async def start_http(self) -> None:
        """The HTTP API opens first: other FEs and operators reach it (health says STARTING) while
        this FE catches up."""
        self._completions = Completions(asyncio.get_running_loop())
        self.membership_lock = asyncio.Lock()
        self.forwarder = Forwarder(self)
        from fe.cluster.http_api import HttpApi

        self.http = HttpApi(self)
        await self.http.start(self.host, self.config["http_port"])
        logger.info("HTTP API listening on %s:%d", self.host, self.http.port)

    async def start_front(self) -> None:
        self.front = MysqlFront(
            session_factory=lambda: QuireSession(self),
            identity_provider=CatalogIdentityProvider(self.catalog, self.login_tracker),
            host=self.host,
            port=self.config["query_port"],
            max_connections=self.config["qe_max_connection"],
            max_packet_bytes=self.config["max_allowed_packet"],
            ssl_context=self._mysql_tls() if self.config["enable_ssl"] else None,
            secure_transport_required=lambda: bool(
                self.global_variables.get_variable("require_secure_transport")
            ),
        )
        await self.front.start()
        logger.info("MySQL protocol listening on %s:%d", self.host, self.front.port)

    def _mysql_tls(self) -> ssl.SSLContext:
        cert_file, key_file = self.config["mysql_ssl_cert_file"], self.config["mysql_ssl_key_file"]
        if bool(cert_file) != bool(key_file):
            raise CertificateError(
                "set both mysql_ssl_cert_file and mysql_ssl_key_file, or neither"
            )
        if cert_file:
            return server_context(
                self.config.path("mysql_ssl_cert_file"), self.config.path("mysql_ssl_key_file")
            )
        return server_context(*self_signed(self.meta_dir / "tls", self.host))

    def start_threads(self) -> None:
        threading.Thread(target=self._report_ports, name="report-ports", daemon=True).start()
        self.frontend_monitor.start()
        threading.Thread(target=self._checkpointer, name="checkpointer", daemon=True).start()
        threading.Thread(target=self._time_printer, name="time-printer", daemon=True).start()

    async def run(self, ready_callback=None) -> None:
        """Start everything and serve until stop() is called."""
        try:
            self.load_identity()
            self.load_image()
            if (
                not self.helper
                and len(self.catalog.frontends) > 1
                and self.sync_image_from_cluster()
            ):
                self.load_image()  # down a long time: the cluster's image covers what we missed
            await asyncio.to_thread(self.start_journal)
            await self.start_http()
            await asyncio.to_thread(self.catch_up)
            await asyncio.to_thread(self.bootstrap)
            await self.start_front()
        except (OSError, CertificateError) as error:
            await self.shutdown()
            raise StartupError(str(error)) from None
        except BaseException:
            await self.shutdown()
            raise
        self.start_threads()
        self.ready = True
        logger.info(
            "Quire FE %s is ready: mysql -h %s -P %d -u root", self.name, self.host, self.front.port
        )
        if ready_callback:
            ready_callback()
        stop = asyncio.Event()
        self._stop_event = stop
        self._loop = asyncio.get_running_loop()
        await stop.wait()
        await self.shutdown()

    def stop(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(self._stop_event.set)

    async def shutdown(self) -> None:
        self._stopping.set()
        if self.http:
            await self.http.close()
        if self.front:
            await self.front.close()
        self.query_engine.close()
        self.statement_cache.close()
        if self.journal:
            await asyncio.to_thread(self.journal.close)
        logger.info("Quire FE stopped")

    def uptime(self) -> float:
        return time.time() - self.started_at

    # -- the write path ------------------------------------------------------------------------

    def allocate_ids(self, count: int) -> int:
        assert 0 < count <= 1_000_000, count
        with self._id_lock:
            first = max(self._next_free_id, self.catalog.next_id)
            self._next_free_id = first + count
            return first

    async def commit(self, operations: list[ops.Op]) -> list[object]:
        """Journal the operations as one entry; returns once committed, fsynced and applied."""
        assert 0 < len(operations) <= MAX_OPS_PER_STATEMENT
        self.require_quorum()
        future = asyncio.get_running_loop().create_future()
        self.journal.submit(
            encode_ops(operations), lambda r, e: self._completions.put(future, r, e)
        )
        timeout = self.config["journal_commit_timeout_second"]
        deadline = time.monotonic() + timeout
        while True:
            try:
                results = await asyncio.wait_for(asyncio.shield(future), QUORUM_CHECK_SECONDS)
                return _raise_first_error(results)
            except TimeoutError:
                pass
            if not self.journal.has_quorum():
                raise QueryError(
                    1105,
                    "A majority of the follower FEs became unreachable while the statement was being "
                    "committed: it may or may not have taken effect",
                )
            if time.monotonic() > deadline:
                raise QueryError(
                    1105,
                    f"The journal did not commit within {timeout} s; the statement may or may not have taken effect",
                )

    def commit_blocking(self, operations: list[ops.Op]) -> list[object]:
        results = self.journal.commit(
            encode_ops(operations), timeout=self.config["journal_commit_timeout_second"]
        )
        return _raise_first_error(results)

    # -- checkpoints ---------------------------------------------------------------------------

    def checkpoint(self) -> ImageInfo:
        with self._checkpoint_lock:
            started = time.monotonic()
            snapshot = self.catalog.snapshot()
            term = self.journal.term_at(snapshot.raft_index)
            snapshot = dataclasses.replace(snapshot, raft_term=term or 0)
            info = self.images.write(snapshot)
            self.last_image = info
            self.last_checkpoint_at = time.monotonic()
            # The journal keeps what the oldest readable image lacks, so start-up can fall back to it.
            covered = min(i.raft_index for i in self.images.images() if i.raft_index >= 0)
            self.journal.truncate_through(covered)
            logger.info(
                "checkpoint %s written in %.2f s; journal truncated through raft index %d",
                info.path.name,
                time.monotonic() - started,
                covered,
            )
            return info

    async def checkpoint_now(self) -> ImageInfo:
        return await asyncio.to_thread(self.checkpoint)

    def _checkpointer(self) -> None:
        while not self._stopping.wait(CHECKPOINTER_TICK_SECONDS):
            since = self.last_image.journal_id if self.last_image else 0
            due = self.catalog.journal_id - since >= self.config["edit_log_roll_num"]
            period = (
                time.monotonic() - self.last_checkpoint_at
                >= self.config["checkpoint_interval_second"]
            )
            if not period:
                continue
            if not self.journal.status().is_leader:
                self.last_checkpoint_at = time.monotonic()
                self.follow_images()
            elif due:
                try:
                    self.checkpoint()
                except Exception:
                    logger.exception("checkpoint failed; will retry")

    def sync_image_from_cluster(self) -> ImageInfo | None:
        """Fetch the newest image another FE holds if it is newer than ours (leader first)."""
        have = self.images.images()
        newest = have[0].journal_id if have else -1
        leader = str(self.journal.status().leader) if self.journal else ""
        others = sorted(
            (
                f
                for f in list(self.catalog.frontends.values())
                if f.name != self.name and f.http_port
            ),
            key=lambda f: f"{f.host}:{f.edit_log_port}" != leader,
        )
        for frontend in others:
            base = f"http://{frontend.host}:{frontend.http_port}"
            try:
                path = fetch_newer_image(base, self.token, self.image_dir, newest)
            except JoinError as error:
                logger.info("no image from %s: %s", base, error)
                continue
            if path is None:
                return None
            self.images.prune()
            return next((i for i in self.images.images() if i.path == path), None)
        return None

    def follow_images(self) -> None:
        """Non-leaders keep the leader's recent images, so they restart from one, and drop the
        journal entries those images cover."""
        try:
            info = self.sync_image_from_cluster()
        except Exception:
            logger.exception("fetching the leader's image failed; will retry")
            return
        if info is None:
            return
        self.last_image = info
        covered = min(i.raft_index for i in self.images.images() if i.raft_index >= 0)
        if covered <= self.journal.status().last_applied:
            self.journal.truncate_through(covered)
        logger.info(
            "keeping %s from the leader; journal truncated through %d", info.path.name, covered
        )

    def needs_image(self, first_index: int) -> None:
        """The journal's thread: the leader no longer has the entries this FE lacks (its journal
        starts after first_index). Catch up from an image, in the background."""
        if self._image_catch_up.acquire(blocking=False):
            threading.Thread(
                target=self._catch_up_from_image,
                args=(first_index,),
                name="quire-image-catch-up",
                daemon=True,
            ).start()

    def _catch_up_from_image(self, first_index: int) -> None:
        try:
            started = time.monotonic()
            logger.warning(
                "this FE is at raft index %d but the leader's journal starts after %d: "
                "catching up from the leader's image",
                self.catalog.raft_index,
                first_index,
            )
            while not self._stopping.is_set():
                loaded = None
                try:
                    self.sync_image_from_cluster()
                    # Headers first: a whole image is read only once one covers first_index.
                    if any(i.raft_index >= first_index for i in self.images.images()):
                        loaded = self.images.load_newest()
                except Exception as error:
                    logger.warning("no image to catch up from yet: %s", error)
                if loaded is not None and loaded[0].raft_index >= first_index:
                    break
                self._stopping.wait(IMAGE_RETRY_SECONDS)
            else:
                return
            catalog, info = loaded

            def load() -> None:
                self.catalog.assume(catalog)
                self.membership.update_members()

            if self.journal.install_image(catalog.raft_index, catalog.raft_term, load):
                self.last_image = info
                logger.info(
                    "caught up from %s (journal id %d, %d tables) in %.2f s",
                    info.path.name,
                    catalog.journal_id,
                    len(catalog.tables),
                    time.monotonic() - started,
                )
        except Exception:
            logger.exception("catching up from an image failed; the leader will ask again")
        finally:
            self._image_catch_up.release()

    def report_ports(self, name: str, http_port: int, query_port: int) -> None:
        """Leader: journal the HTTP and query ports a joined FE listens on."""
        record = self.catalog.frontends.get(name)
        if record is None:
            raise QueryError(1105, f"frontend {name} does not exist")
        if (record.http_port, record.query_port) != (http_port, query_port):
            updated = dataclasses.replace(record, http_port=http_port, query_port=query_port)
            self.commit_blocking([ops.UpdateFrontend(updated)])

    def _report_ports(self) -> None:
        """An FE added by ALTER SYSTEM is known by its journal port only: tell the cluster the
        ports other FEs forward to and clients connect to."""
        interval = 0.0
        while not self._stopping.wait(interval):
            interval = 1.0
            try:
                if self.is_leader():
                    self.report_ports(self.name, self.http.port, self.front.port)
                else:
                    url = self.forwarder.leader_url() + "/api/frontend_ports"
                    body = {
                        "name": self.name,
                        "http_port": self.http.port,
                        "query_port": self.front.port,
                    }
                    requests.post(
                        url, json=body, headers={"X-Quire-Token": self.token}, timeout=10
                    ).raise_for_status()
                return
            except Exception as error:
                logger.info("ports not reported to the leader yet: %s", error)

    def _time_printer(self) -> None:
        interval = 0.0  # the first timestamp goes out at once
        while not self._stopping.wait(interval):
            interval = max(self.config["meta_delay_toleration_second"] / 2, 0.5)
            if not self.journal.status().is_leader:
                continue
            try:
                self.commit_blocking([ops.Timestamp(int(time.time() * 1000))])
            except Exception as error:
                logger.warning("TimePrinter could not journal a timestamp: %s", error)

    # -- roles ---------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        return self.journal.is_leader()

    def require_quorum(self) -> None:
        if not self.journal.has_quorum():
            raise QueryError(
                1105,
                "Writes are refused: a majority of the follower FEs is unreachable (reads still work; "
                "writes resume when the majority is back)",
            )

    def stale_seconds(self) -> float | None:
        """How far behind the leader this non-leader's metadata is, when more than
        meta_delay_toleration_second (the TimePrinter rule); None while it is fresh enough."""
        lag = self.metadata_lag_seconds()
        if lag is None or lag <= self.config["meta_delay_toleration_second"] or self.is_leader():
            return None
        return lag

    def check_fresh(self) -> None:
        """TimePrinter: a non-leader whose newest leader timestamp is too old refuses reads."""
        lag = self.stale_seconds()
        if lag is not None:
            tolerance = self.config["meta_delay_toleration_second"]
            raise QueryError(
                1105,
                f"Metadata on this FE is {lag:.0f} s behind the leader (meta_delay_toleration_second="
                f"{tolerance}): it cannot reach the leader, so it refuses reads until it catches up",
            )

    def metadata_lag_seconds(self) -> float | None:
        """Seconds between now and the newest TimePrinter entry replayed; None before the first."""
        if self.catalog.last_timestamp_ms == 0:
            return None
        return max(time.time() - self.catalog.last_timestamp_ms / 1000, 0.0)

    # -- status --------------------------------------------------------------------------------

    def set_config(self, name: str, value: str) -> None:
        self.config.set(name, value)
        if name == "sys_log_level":
            self.set_log_level(self.config[name])
        if name == "image_keep_count":
            self.images.keep = self.config[name]

    def frontends_rows(self) -> tuple[list[str], list[tuple]]:
        return FRONTEND_COLUMNS, self.frontend_monitor.rows()


class MembershipTracker:
    """The journal's state machine: the catalog, plus telling the journal when ALTER SYSTEM
    changed who follows and who observes."""

    def __init__(self, node: FrontendNode):
        self.node = node
        self.members = node.members()

    def apply_entry(self, raft_index: int, payload: bytes) -> object:
        results = self.node.catalog.apply_entry(raft_index, payload)
        if any(type(result) is Frontend for result in results):
            self.update_members()
        return results

    def update_members(self) -> None:
        if self.node.journal is None or not self.node.catalog.frontends:
            return
        members = self.node.members()
        if members != self.members:
            self.members = members
            try:
                self.node.journal.set_members(*members)
            except Exception as error:  # the change is journaled; the journal keeps its set
                logger.error("journal members not changed to %s: %s", members, error)


class Completions:
    """Hands journal acknowledgements from the journal's thread to the event loop, many per
    wake-up instead of one loop wake-up per statement."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._pending: list = []

    def put(self, future: asyncio.Future, result, error) -> None:
        with self._lock:
            self._pending.append((future, result, error))
            first = len(self._pending) == 1
        if first:
            self.loop.call_soon_threadsafe(self._settle_all)

    def _settle_all(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for future, result, error in pending:
            _settle(future, result, error)


def _settle(future: asyncio.Future, result, error) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error if isinstance(error, QueryError) else journal_error(error))
    else:
        future.set_result(result)


def _raise_first_error(results) -> list[object]:
    if isinstance(results, BaseException):
        raise apply_failure(results)
    for result in results:
        if isinstance(result, ApplyError):
            raise catalog_error(result)
    return results


def pid_file_path(config: Config) -> Path:
    return config.path("log_dir") / "quire.pid"
