"""The FE node: start-up (identity, image, journal replay, first-start bootstrap), wiring the
services each part of the FE uses, and the MySQL and HTTP servers on one asyncio loop."""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from be.client import RemoteDataPlane, open_embedded
from be.config import Config
from be.engine import Engine, StreamLimits
from be.logservice.errors import LogServiceError
from be.service.limits import ServiceLimits
from fe.cluster import connection_ids
from fe.cluster.alter_job_runner import AlterJobRunner
from fe.cluster.backends import BackendMonitor
from fe.cluster.checkpoints import Checkpointer, sync_image_from_cluster
from fe.cluster.dynamic_partition_scheduler import DynamicPartitionScheduler
from fe.cluster.forwarding import Forwarder
from fe.cluster.freshness import Freshness, TimePrinter
from fe.cluster.frontends import FrontendMonitor
from fe.cluster.http_api import HttpApi
from fe.cluster.membership import CatalogStateMachine, PortReporter, followers
from fe.cluster.metrics import Metrics
from fe.cluster.recycle_bin_cleaner import RecycleBinCleaner
from fe.cluster.spark_writes import SparkWrites
from fe.cluster.startup import StartupError, ThisFrontend, establish_identity
from fe.cluster.stream_load_front import StreamLoadFront
from fe.cluster.view_refresher import ViewRefresher
from fe.cluster.write_path import MetadataWriter
from fe.console.app import Console
from fe.console.limits import ConsoleLimits
from fe.mysql.server import MysqlFront
from fe.security import privileges
from fe.security.certificates import CertificateError, self_signed, server_context
from fe.security.lockout import LoginTracker
from fe.session import FrontendServices, QuireSession
from fe.statement_cache import StatementCache
from fe.statement_history import StatementHistory
from fe.statements import table_functions
from fe.statements.accounts import CatalogIdentityProvider
from fe.statements.information_schema import SchemaTables
from fe.variables import ClusterGlobalVariables
from image.images import ImageError, ImageInfo, ImageStore
from metadata import ops
from metadata.catalog import Catalog, initial_ops
from metadata.journal.errors import JournalError
from metadata.journal.replicated import ReplicatedJournal
from metadata.records import Frontend, FrontendRole

__all__ = ["FrontendNode", "StartupError", "pid_file_path"]

logger = logging.getLogger(__name__)

CATCH_UP_BEFORE_SERVING_SECONDS = 60
LEADER_ELECTION_SECONDS = 30
ROOT_PRIVILEGES = frozenset(
    (*privileges.OBJECT_PRIVILEGES, privileges.GRANT, *privileges.GLOBAL_ONLY)
)


class FrontendNode:
    def __init__(
        self,
        config: Config,
        replaying: Callable[[], AbstractContextManager[None]],
        set_log_level: Callable[[str], None],
        helper: str | None = None,
        token_file: str | None = None,
        embedded_data_plane: bool = True,
    ):
        """replaying and set_log_level change process-wide state (the collector, the root logger):
        the process's entry point owns them."""
        self.config = config
        self.replaying = replaying
        self.set_log_level = set_log_level
        self.helper = helper
        self.token_file = token_file
        self.started_at = time.time()
        self.meta_dir = config.path("meta_dir")
        # quire up runs a TN and a CN in this process; quire fe talks to the added backends
        self.data_plane = open_embedded(config) if embedded_data_plane else None
        self.backend_monitor: BackendMonitor | None = None
        self.images = ImageStore(self.meta_dir / "image", keep=config["image_keep_count"])
        self.catalog = Catalog()  # one object for the node's life: images are taken in place
        self.global_variables = ClusterGlobalVariables(
            self.catalog, {"have_ssl": "YES" if config["enable_ssl"] else "DISABLED"}
        )
        table_functions.limit_rows(config["table_function_max_rows"])
        self.statement_cache = StatementCache(
            config["statement_cache_size"],
            config["statement_cache_max_sql_bytes"],
            max_bytes=config["statement_cache_max_bytes"],
            max_tokens=config["max_statement_tokens"],
            max_waiting_long_statements=config["max_waiting_long_statements"],
            long_statement_threads=config["long_statement_threads"],
        )
        self.information_schema = SchemaTables(
            self.catalog, config["information_schema_cache_max_bytes"]
        )
        self.login_tracker = LoginTracker(config["failed_login_max_accounts"])
        self.query_engine = Engine(
            workers=config["query_executor_threads"],
            queue_size=config["query_queue_size"],
            threads_per_query=config["query_engine_threads"],
            stream_limits=StreamLimits(
                config["query_stream_hold_bytes"], config["query_stream_max_parts"]
            ),
        )
        self.stopping = threading.Event()
        self.ready = False
        self.last_image: ImageInfo | None = None
        # Made by start-up, in this order:
        self.this: ThisFrontend | None = None
        self.journal: ReplicatedJournal | None = None
        self.state_machine: CatalogStateMachine | None = None
        self.http: HttpApi | None = None
        self.front: MysqlFront | None = None

    # -- start-up ------------------------------------------------------------------------------

    def load_image(self) -> None:
        started = time.monotonic()
        try:
            loaded = self.images.load_newest()
        except ImageError as error:
            raise StartupError(f"no usable image: {error}") from None
        if loaded is None:
            logger.info("no image yet: starting from an empty catalog")
            return
        catalog, self.last_image = loaded
        self.catalog.assume(catalog)
        logger.info(
            "loaded %s (journal id %d, %d tables) in %.2f s",
            self.last_image.path.name,
            self.catalog.journal_id,
            len(self.catalog.tables),
            time.monotonic() - started,
        )

    def start_journal(self) -> None:
        this = self.this
        self.state_machine = CatalogStateMachine(self.catalog, this)
        self.journal = ReplicatedJournal(
            journal_dir=str(self.meta_dir / "journal"),
            self_address=None if this.observes else this.address,
            partners=[a for a in followers(self.catalog, this) if a != this.address],
            state_machine=self.state_machine,
            applied_index=self.catalog.raft_index,
            applied_term=self.catalog.raft_term,
            sync=self.config["master_sync_policy"] == "SYNC",
            password=this.token,
            observer_address=this.address if this.observes else None,
            raft_min_timeout=self.config["election_timeout_min_ms"] / 1000,
            raft_max_timeout=self.config["election_timeout_max_ms"] / 1000,
            max_frame_bytes=self.config["journal_max_frame_bytes"],
            max_unauthenticated_frame_bytes=self.config["journal_max_unauthenticated_frame_bytes"],
            handshake_timeout=self.config["journal_handshake_timeout_ms"] / 1000,
            max_unknown_connections=self.config["journal_max_unknown_connections"],
        )
        members = self.state_machine.members()
        if members is not None:
            self.journal.set_members(*members)
        started = time.monotonic()
        with self.replaying():
            self.journal.start()
        logger.info(
            "journal replayed to journal id %d in %.2f s",
            self.catalog.journal_id,
            time.monotonic() - started,
        )
        if not self.journal.wait_leader(timeout=LEADER_ELECTION_SECONDS):
            raise StartupError(
                f"the journal did not elect a leader within {LEADER_ELECTION_SECONDS} s"
            )

    def wire(self) -> None:
        """The services, each handed what it uses."""
        this, catalog, journal, config = self.this, self.catalog, self.journal, self.config
        self.writer = MetadataWriter(journal, catalog, config)
        self.freshness = Freshness(catalog, journal, config)
        self.checkpointer = Checkpointer(
            this, self.state_machine, journal, self.images, config, self.stopping, self.last_image
        )
        self.forwarder = Forwarder(journal, catalog, this.token, config)
        self.frontend_monitor = FrontendMonitor(
            this, catalog, journal, self.freshness, config, self.stopping
        )
        self.time_printer = TimePrinter(self.writer, config, self.stopping)
        self.alter_job_runner = AlterJobRunner(catalog, self.writer, config, self.stopping)
        self.port_reporter = PortReporter(
            this, catalog, self.writer, self.forwarder.leader_url, self.stopping
        )
        if self.data_plane is None:
            self.data_plane = RemoteDataPlane(
                this.token,
                lambda: self.backend_monitor.nodes(),
                ServiceLimits.from_config(config),
                name=this.name,
            )
            self.backend_monitor = BackendMonitor(catalog, self.data_plane, config, self.stopping)
        self.recycle_bin_cleaner = RecycleBinCleaner(
            catalog, self.writer, config, self.stopping, self.data_plane
        )
        self.dynamic_partitions = DynamicPartitionScheduler(
            catalog, self.writer, config, self.stopping
        )
        self.view_refresher = ViewRefresher(
            catalog,
            self.writer,
            self.new_session,
            lambda: config["materialized_view_check_interval_second"],
        )
        self.front = MysqlFront(
            session_factory=self.new_session,
            identity_provider=CatalogIdentityProvider(
                catalog, self.login_tracker, lambda name: self.front.connections_of(name)
            ),
            host=this.host,
            port=config["query_port"],
            max_connections=config["qe_max_connection"],
            max_packet_bytes=config["max_allowed_packet"],
            ssl_context=self._mysql_tls() if config["enable_ssl"] else None,
            secure_transport_required=lambda: bool(
                self.global_variables.get_variable("require_secure_transport")
            ),
            connection_id_prefix=lambda: connection_ids.frontend_prefix(catalog, this.name),
        )
        self.metrics = Metrics(
            catalog,
            connection_count=lambda: self.front.connection_count,
            seconds_since_checkpoint=self.checkpointer.seconds_since_checkpoint,
            is_leader=journal.is_leader,
            cn_stats=getattr(self.data_plane, "cn_stats", None),
        )
        self.services = FrontendServices(
            this=this,
            config=config,
            catalog=catalog,
            global_variables=self.global_variables,
            statement_cache=self.statement_cache,
            information_schema=self.information_schema,
            engine=self.query_engine,
            writer=self.writer,
            forwarder=self.forwarder,
            freshness=self.freshness,
            metrics=self.metrics,
            front=self.front,
            frontends=self.frontend_monitor,
            journal=journal,
            images=self.images,
            checkpointer=self.checkpointer,
            data_plane=self.data_plane,
            set_config=self.set_config,
            started_at=self.started_at,
            history=StatementHistory(config["statement_history_size"]),
            backends=self.backend_monitor,
            dynamic_partitions=self.dynamic_partitions,
        )
        self.http = HttpApi(
            this=this,
            catalog=catalog,
            journal=journal,
            writer=self.writer,
            images=self.images,
            checkpointer=self.checkpointer,
            metrics=self.metrics,
            login_tracker=self.login_tracker,
            new_session=self.new_session,
            is_ready=lambda: self.ready,
            query_port=lambda: self.front.port,
            front=self.front,
            stream_loads=StreamLoadFront(
                catalog,
                self.login_tracker,
                lambda: this.token,
                self.data_plane,
                this.host,
                config["stream_load_token_ttl_second"],
                self.writer,
                config,
            ),
            spark_writes=SparkWrites(
                catalog,
                self.login_tracker,
                lambda: this.token,
                self.data_plane,
                config["spark_write_token_ttl_second"],
                self.new_session,
            ),
            console=Console(
                catalog,
                self.login_tracker,
                self.new_session,
                ConsoleLimits(
                    max_logins=config["console_max_logins"],
                    idle_seconds=float(config["console_idle_timeout_second"]),
                    page_rows=config["console_page_rows"],
                    chart_points=config["console_chart_points"],
                ),
            ),
        )

    def new_session(self) -> QuireSession:
        return QuireSession(self.services)

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

    def bootstrap(self) -> None:
        """First start of a cluster: journal the built-in users and this frontend."""
        this = self.this
        if (
            self.helper
            or this.observes
            or self.catalog.frontends
            and this.name not in self.catalog.frontends
        ):
            return  # a node that joined: the leader journaled all of this
        first: list[ops.Op] = []
        if not self.catalog.users:
            first += initial_ops(ROOT_PRIVILEGES)
        if this.name not in self.catalog.frontends:
            first.append(
                ops.AddFrontend(
                    Frontend(
                        this.name,
                        this.host,
                        this.edit_log_port,
                        self.config["http_port"],
                        self.config["query_port"],
                        FrontendRole.FOLLOWER,
                    )
                )
            )
        if first:
            self.writer.commit_blocking(first)

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
        return server_context(*self_signed(self.meta_dir / "tls", self.this.host))

    async def run(self, ready_callback=None) -> None:
        """Start everything and serve until stop() is called."""
        try:
            self.this = establish_identity(self.config, self.helper, self.token_file)
            self.load_image()
            if (
                not self.helper
                and len(self.catalog.frontends) > 1
                and sync_image_from_cluster(self.images, self.catalog, self.this, leader="")
            ):
                self.load_image()  # down a long time: the cluster's image covers what we missed
            await asyncio.to_thread(self.start_journal)
            self.wire()
            # The HTTP API opens first: other FEs and operators reach it (health says STARTING)
            # while this FE catches up.
            await self.http.start(self.this.host, self.config["http_port"])
            logger.info("HTTP API listening on %s:%d", self.this.host, self.http.port)
            await asyncio.to_thread(self.catch_up)
            await asyncio.to_thread(self.bootstrap)
            if self.data_plane is not None:
                await asyncio.to_thread(self.data_plane.start)
            await self.front.start()
            logger.info("MySQL protocol listening on %s:%d", self.this.host, self.front.port)
        except (OSError, CertificateError, JournalError, LogServiceError) as error:
            await self.shutdown()
            raise StartupError(str(error)) from None
        except BaseException:
            await self.shutdown()
            raise
        self.port_reporter.start(self.http.port, self.front.port)
        self.frontend_monitor.start()
        self.checkpointer.start()
        self.time_printer.start()
        self.recycle_bin_cleaner.start()
        self.dynamic_partitions.start()
        self.alter_job_runner.start()
        self._view_refresher = asyncio.get_running_loop().create_task(self.view_refresher.run())
        if self.backend_monitor is not None:
            self.backend_monitor.start()
        self.ready = True
        logger.info(
            "Quire FE %s is ready: mysql -h %s -P %d -u root",
            self.this.name,
            self.this.host,
            self.front.port,
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
        self.stopping.set()
        refresher = getattr(self, "_view_refresher", None)
        if refresher is not None:
            refresher.cancel()
        if self.http:
            await self.http.close()
        if self.front:
            await self.front.close()
        self.query_engine.close()
        self.statement_cache.close()
        if self.data_plane is not None:
            await asyncio.to_thread(self.data_plane.close)
        if self.journal:
            await asyncio.to_thread(self.journal.close)
        logger.info("Quire FE stopped")

    def set_config(self, name: str, value: str) -> None:
        self.config.set(name, value)
        if name == "sys_log_level":
            self.set_log_level(self.config[name])
        if name == "image_keep_count":
            self.images.keep = self.config[name]


def pid_file_path(config: Config) -> Path:
    return config.path("log_dir") / "quire.pid"
