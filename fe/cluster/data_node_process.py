"""`quire tn` and `quire cn`: a data-plane node as a process of its own, started as the FE is
(one-line start failures, --daemon with the child's own word on readiness, SIGTERM to stop)."""

from __future__ import annotations

import logging
import logging.handlers
import signal
import sys
import threading

from be.config import Config, ConfigError, tn_log_folder, tn_log_key
from be.logservice.errors import LogServiceError
from fe.cluster.helper import HOW_TO_GIVE_THE_TOKEN, JoinError, given_token
from fe.cluster.preflight import FolderLock, PidFile
from fe.cluster.startup import StartupError

logger = logging.getLogger("quire")

LOG_ROLL_BYTES = 256 << 20
LOG_ROLL_COUNT = 5


def setup_logging(config: Config, role: str, foreground: bool) -> None:
    log_dir = config.path("node_log_dir")
    log_dir.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter(
        "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"
    )
    handler = logging.handlers.RotatingFileHandler(
        log_dir / f"{role}.log", maxBytes=LOG_ROLL_BYTES, backupCount=LOG_ROLL_COUNT
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    if foreground:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(formatter)
        root.addHandler(console)


def run_data_node(role: str, config: Config, token_file: str | None, report) -> int:
    """Claim (pid file; the TN: its storage_root), start, serve until SIGTERM or SIGINT."""
    from be.cn.service import ComputeNodeService
    from be.tn.service import TransactionNode

    assert role in ("tn", "cn"), role
    pid_file = storage_lock = node = None
    started = False
    try:
        try:
            token = given_token(token_file)
        except JoinError as error:
            raise StartupError(str(error)) from None
        if not token:
            raise StartupError(f"a {role.upper()} needs the cluster token: {HOW_TO_GIVE_THE_TOKEN}")
        config.path("node_log_dir").mkdir(parents=True, exist_ok=True)
        pid_file = PidFile(config.path("node_log_dir") / f"{role}.pid")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            if role == "tn":
                storage_lock = FolderLock(tn_log_folder(config), tn_log_key(config))
                name = f"tn@{config['bind_host']}:{config['tn_service_port']}"
                node = TransactionNode(config, token, name)
            else:
                name = f"cn@{config['bind_host']}:{config['cn_service_port']}"
                node = ComputeNodeService(config, token, name)
            node.start()
        except OSError as error:
            raise StartupError(f"a port is not free ({error.strerror or error})") from None
        except (ValueError, LogServiceError, ConfigError) as error:
            raise StartupError(str(error)) from None
        started = True
        logger.info("Quire %s is ready", role.upper())
        report.ready()
        stop.wait()
        logger.info("Quire %s stopping", role.upper())
        node.close()
        return 0
    except StartupError as error:
        logger.error("cannot start: %s", error)
        report.failed(f"cannot start: {error}")
        return 1
    except Exception:
        logger.exception("the %s failed", role.upper())
        report.failed(f"the {role.upper()} failed")
        return 1
    finally:
        if pid_file:
            pid_file.release()
        if storage_lock:
            storage_lock.release(start_failed=not started)
