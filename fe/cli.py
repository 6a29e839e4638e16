"""The `quire` command."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import logging.handlers
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvloop

from be.config import BE_KEYS, DEFAULT_BE_CONF, Config, ConfigError, tn_log_folder, tn_log_key
from fe.cluster import launcher as cluster
from fe.config import DEFAULT_FE_CONF, load_config

logger = logging.getLogger("quire")

DAEMON_START_TIMEOUT_SECONDS = 120
READY = "ready"
# Catalog records hold no reference cycles, yet each one is a tracked container: with the default
# (700) the collector ran every few entries while a node caught up, a fifth of the apply time.
GC_YOUNG_THRESHOLD = 10_000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quire",
        description="Quire: a Doris-style FE metadata service. Start a node, then connect with "
        "`mysql -h 127.0.0.1 -P 9030 -u root`.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def node_options(sub: argparse.ArgumentParser, with_be: bool) -> None:
        sub.add_argument(
            "--conf",
            default=str(DEFAULT_FE_CONF),
            help="FE configuration file (default: conf/fe.conf)",
        )
        if with_be:
            sub.add_argument(
                "--be-conf",
                default=str(DEFAULT_BE_CONF),
                help="data-plane configuration file (default: conf/be.conf)",
            )
        sub.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="set any configuration key, repeatable (e.g. --override query_port=9031)",
        )
        sub.add_argument(
            "--daemon",
            action="store_true",
            help="run in the background; the pid goes to log_dir/quire.pid",
        )
        sub.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)

    up = commands.add_parser(
        "up",
        help="start the all-in-one node (FE leader, TN and CN in one process)",
        description="Start the all-in-one node in the foreground (or with --daemon in the background). "
        "Reads conf/fe.conf and conf/be.conf; an unknown key is an error.",
    )
    node_options(up, with_be=True)
    fe = commands.add_parser(
        "fe",
        help="start an FE node alone",
        description="Start one FE node (leader of a new cluster on first start). Its table data "
        "lives on the TN and CNs added with ALTER SYSTEM ADD BACKEND.",
    )
    node_options(fe, with_be=False)
    fe.add_argument(
        "--helper",
        metavar="HOST:EDIT_LOG_PORT|http://HOST:HTTP_PORT",
        help="join the cluster of this node (added first with ALTER SYSTEM ADD FOLLOWER/OBSERVER); "
        "needs the cluster token, from --token-file or the QUIRE_CLUSTER_TOKEN environment variable",
    )
    fe.add_argument(
        "--token-file",
        metavar="FILE",
        help="file holding the cluster token (printed by `quire token` on a node of the cluster)",
    )
    token = commands.add_parser(
        "token",
        help="print this node's cluster token, for a node that joins with --helper",
        description="Print the cluster token from meta_dir/image/VERSION. Give it to a joining node "
        "in a file (--token-file) or the QUIRE_CLUSTER_TOKEN environment variable, never as a "
        "command-line argument: other local users can read those.",
    )
    stop = commands.add_parser(
        "stop",
        help="stop a node started with --daemon",
        description="Send SIGTERM to the node whose pid file is in log_dir and wait for it to exit.",
    )
    for sub in (stop, token):
        sub.add_argument(
            "--conf",
            default=str(DEFAULT_FE_CONF),
            help="FE configuration file (default: conf/fe.conf)",
        )
        sub.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="configuration overrides used at start",
        )
    for role, does in (
        ("tn", "the TN: commits, its log, logtail pushed to the CNs"),
        ("cn", "a CN: follows the TN's logtail, answers snapshot reads"),
    ):
        sub = commands.add_parser(
            role,
            help=f"start {does}",
            description=f"Start {does}. Reads conf/be.conf; an unknown key is an error. Join it "
            f'to the cluster with ALTER SYSTEM ADD BACKEND "host:{role}_service_port".',
        )
        sub.add_argument(
            "--conf",
            default=str(DEFAULT_BE_CONF),
            help="data-plane configuration file (default: conf/be.conf)",
        )
        sub.add_argument(
            "--override",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="set any configuration key, repeatable (e.g. --override cn_service_port=9062)",
        )
        sub.add_argument(
            "--daemon",
            action="store_true",
            help=f"run in the background; the pid goes to node_log_dir/{role}.pid",
        )
        sub.add_argument(
            "--token-file",
            metavar="FILE",
            help="file holding the cluster token (`quire token` on an FE prints it); else the "
            "QUIRE_CLUSTER_TOKEN environment variable",
        )
        sub.add_argument(
            "--stop",
            action="store_true",
            help=f"stop the {role.upper()} started with --daemon (pid in node_log_dir/{role}.pid)",
        )
        sub.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    cluster.add_parser(commands)
    return parser


@contextlib.contextmanager
def replaying() -> Iterator[None]:
    """The process's collector around a journal replay. The catalog's records hold no reference
    cycles: the cyclic collector would only rescan the growing catalog during replay (a quarter of
    replay time), so it waits until after, and then leaves what replay built alone."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        gc.enable()


def warm_up_conversions() -> None:
    """pyarrow loads pandas the first time it converts Python values (about a third of a second
    of CPU, holding the interpreter): done once the node is ready, not in its first INSERT."""
    import pyarrow as pa

    pa.array([0])


def set_log_level(sys_log_level: str) -> None:
    logging.getLogger().setLevel(sys_log_level.replace("WARN", "WARNING"))


def setup_logging(config: Config, foreground: bool) -> None:
    log_dir = config.path("log_dir")
    log_dir.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter(
        "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"
    )
    handler = logging.handlers.RotatingFileHandler(
        log_dir / "fe.log",
        maxBytes=config["sys_log_roll_mb"] * 1024 * 1024,
        backupCount=config["sys_log_roll_num"],
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    if foreground:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(formatter)
        console.setLevel(logging.INFO)
        root.addHandler(console)
    set_log_level(config["sys_log_level"])
    for noisy in ("aiohttp.access", "mysql_mimic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def config_from_args(args: argparse.Namespace, with_be: bool) -> Config:
    return load_config(args.conf, getattr(args, "be_conf", None), args.override, with_be=with_be)


def run_node(
    config: Config,
    helper: str | None = None,
    token_file: str | None = None,
    ready_fd: int | None = None,
    embedded_data_plane: bool = True,
) -> int:
    """Check and claim (ports, pid file, meta_dir, storage_root) before anything is touched, then
    serve (with_data_plane: a TN and a CN in this process, as `quire up`); a start that fails says
    why in one line. ready_fd, from a --daemon parent, hears "ready" or that line."""
    from fe.cluster.node import FrontendNode, StartupError, pid_file_path
    from fe.cluster.preflight import PORT_KEYS, FolderLock, PidFile, check_ports_free
    from fe.cluster.startup import local_address

    report = StartReport(ready_fd)
    node = None
    lock = pid_file = storage_lock = None
    try:
        ports = PORT_KEYS + (("webserver_port",) if embedded_data_plane else ())
        check_ports_free(config, local_address(config["priority_networks"]), ports)
        pid_file = PidFile(pid_file_path(config))
        lock = FolderLock(config.path("meta_dir"))
        if embedded_data_plane:
            storage_lock = FolderLock(tn_log_folder(config), tn_log_key(config))
        node = FrontendNode(
            config, replaying, set_log_level, helper, token_file, embedded_data_plane
        )

        async def main() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, node.stop)
            await node.run(ready_callback=ready)

        def ready() -> None:
            report.ready()
            if embedded_data_plane:
                threading.Thread(target=warm_up_conversions, name="warm-up", daemon=True).start()

        uvloop.run(main())
    except (StartupError, ConfigError) as error:
        logger.error("cannot start: %s", error)
        report.failed(f"cannot start: {error}")
        return 1
    except Exception:
        logger.exception("the node failed")
        report.failed("the node failed")
        return 1
    finally:
        if pid_file:
            pid_file.release()
        for claim in (lock, storage_lock):
            if claim:
                claim.release(start_failed=not (node and node.ready))
        # What replay froze stays out of the collector's reach at exit, and DuckDB's bindings
        # report each of their objects still alive then as "leaked": give them back first.
        gc.unfreeze()
    return 0


class StartReport:
    """The --daemon parent's pipe: one line, "ready" or why the start failed."""

    def __init__(self, fd: int | None):
        self.fd = fd

    def ready(self) -> None:
        self._say(READY)

    def failed(self, reason: str) -> None:
        self._say(reason)

    def _say(self, line: str) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(OSError):
            os.write(fd, f"{line}\n".encode())
        os.close(fd)


def start_daemon(argv: list[str], config: Config, log_key: str = "log_dir", log="fe.log") -> int:
    """Start the node in the background and wait for its own word: ready, or why not."""
    log_dir = config.path(log_key)
    log_dir.mkdir(parents=True, exist_ok=True)
    child_args = [a for a in argv if a != "--daemon"]
    read_end, write_end = os.pipe()
    with open(log_dir / "quire.out", "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fe.cli", *child_args, "--ready-fd", str(write_end)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=os.getcwd(),
            pass_fds=(write_end,),
        )
    os.close(write_end)
    with open(read_end, "rb") as report:
        readable, _, _ = select.select([report], [], [], DAEMON_START_TIMEOUT_SECONDS)
        line = report.readline().decode(errors="replace").strip() if readable else None
    if line == READY:
        print(f"quire started in the background, pid {process.pid}; logs in {log_dir}")
        return 0
    if line is None:
        sys.stderr.write(
            f"quire did not become ready within {DAEMON_START_TIMEOUT_SECONDS} s; "
            f"see {log_dir / log}\n"
        )
        return 1
    try:
        code = process.wait(timeout=DAEMON_START_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        code = None
    sys.stderr.write(f"quire: {line or f'exited with {code}'}; see {log_dir / log}\n")
    return 1


def stop_daemon(config: Config, pid_file: Path | None = None) -> int:
    from fe.cluster.node import pid_file_path

    pid_file = pid_file or pid_file_path(config)
    if not pid_file.exists():
        sys.stderr.write(f"no pid file at {pid_file}: is quire running?\n")
        return 1
    pid = int(pid_file.read_text().strip())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink()
        sys.stderr.write(f"process {pid} is not running; removed the stale pid file\n")
        return 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print(f"quire (pid {pid}) stopped")
            return 0
        time.sleep(0.1)
    sys.stderr.write(f"quire (pid {pid}) did not stop within 60 s\n")
    return 1


def print_token(config: Config) -> int:
    from image.identity import IdentityError, read_version

    image_dir = config.path("meta_dir") / "image"
    try:
        identity = read_version(image_dir)
    except (IdentityError, OSError) as error:
        sys.stderr.write(f"quire: cannot read the cluster token: {error}\n")
        return 1
    if identity is None:
        sys.stderr.write(f"quire: no VERSION in {image_dir}: this node never started\n")
        return 1
    print(identity.token)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "cluster":
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
        return cluster.main(args)
    if args.command in ("tn", "cn"):
        return data_node(args, argv)
    try:
        config = config_from_args(args, with_be=args.command == "up")
    except ConfigError as error:
        sys.stderr.write(f"quire: configuration error: {error}\n")
        return 2
    if args.command == "stop":
        return stop_daemon(config)
    if args.command == "token":
        return print_token(config)
    if args.daemon:
        return start_daemon(argv, config)
    setup_logging(config, foreground=True)
    return run_node(
        config,
        getattr(args, "helper", None),
        getattr(args, "token_file", None),
        args.ready_fd,
        embedded_data_plane=args.command == "up",
    )


def data_node(args: argparse.Namespace, argv: list[str]) -> int:
    from fe.cluster.data_node_process import run_data_node, setup_logging

    try:
        config = Config.load(BE_KEYS, [args.conf], args.override)
    except ConfigError as error:
        sys.stderr.write(f"quire: configuration error: {error}\n")
        return 2
    if args.stop:
        return stop_daemon(config, config.path("node_log_dir") / f"{args.command}.pid")
    if args.daemon:
        return start_daemon(argv, config, "node_log_dir", f"{args.command}.log")
    setup_logging(config, args.command, foreground=args.ready_fd is None)
    return run_data_node(args.command, config, args.token_file, StartReport(args.ready_fd))


if __name__ == "__main__":
    sys.exit(main())
