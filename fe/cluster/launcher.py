"""A local cluster of FE processes on one machine: `quire cluster up | status | down`.

Every node is a separate `quire fe` process on free loopback ports, with its own folder under the
cluster folder (meta/, log/, quire.out); with `--cns N`, a `quire tn` and N `quire cn` processes
beside them (log/, quire.out; the TN's storage/ holds the objects every CN reads), added to the cluster with ALTER SYSTEM ADD BACKEND. cluster.json in the cluster folder records the nodes, so
that status and down find them again and a second `up` restarts them from their own files.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests

from fe.cluster.helper import TOKEN_ENVIRONMENT_VARIABLE
from image.identity import IdentityError, read_version

logger = logging.getLogger("quire.cluster")

CLUSTER_FILE = "cluster.json"
HOST = "127.0.0.1"
MAX_NODES = 64
NODE_START_TIMEOUT_SECONDS = 90
LEADER_TIMEOUT_SECONDS = 30
STOP_TIMEOUT_SECONDS = 30
KILL_TIMEOUT_SECONDS = 10
STATUS_TIMEOUT_SECONDS = 0.5
POLL_SECONDS = 0.1
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class ClusterError(Exception):
    """A cluster command that cannot go on; the message says why and what to do."""


@dataclass
class ClusterNode:
    name: str
    role: str
    query_port: int
    http_port: int
    edit_log_port: int
    pid: int = 0
    service_port: int = 0  # a TN's or CN's port for FEs
    logtail_port: int = 0  # the TN's logtail port (a CN's: the one it follows)
    webserver_port: int = 0  # the TN's backend HTTP port (Stream Load)

    @property
    def is_data_node(self) -> bool:
        return self.role in DATA_ROLES

    def folder(self, directory: Path) -> Path:
        return directory / self.name

    def overrides(self, directory: Path) -> list[str]:
        folder = self.folder(directory).resolve()
        if self.is_data_node:
            # CNs read the objects the TN writes: one storage_root, the TN's
            storage = (directory / "tn").resolve() / "storage"
            return [
                f"{self.role.lower()}_service_port={self.service_port}",
                f"logtail_port={self.logtail_port}",
                f"tn_logtail_address={HOST}:{self.logtail_port}",
                f"storage_root={storage}",
                f"node_log_dir={folder / 'log'}",
                f"webserver_port={self.webserver_port}",
            ]
        return [
            f"query_port={self.query_port}",
            f"http_port={self.http_port}",
            f"edit_log_port={self.edit_log_port}",
            f"meta_dir={folder / 'meta'}",
            f"log_dir={folder / 'log'}",
        ]


NODE_FIELDS = tuple(ClusterNode.__dataclass_fields__)
DATA_ROLES = ("TN", "CN")


@dataclass
class Cluster:
    """What cluster.json holds: the nodes, and the configuration they were started with."""

    directory: Path
    nodes: list[ClusterNode] = field(default_factory=list)
    conf: str | None = None
    overrides: list[str] = field(default_factory=list)
    complete: bool = False

    @property
    def path(self) -> Path:
        return self.directory / CLUSTER_FILE

    @classmethod
    def load(cls, directory: Path) -> Cluster | None:
        path = Path(directory) / CLUSTER_FILE
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            nodes = [
                ClusterNode(**{key: node[key] for key in NODE_FIELDS if key in node})
                for node in data["nodes"]
            ]
            return cls(
                Path(directory),
                nodes,
                data.get("conf"),
                list(data.get("overrides", [])),
                bool(data.get("complete")),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ClusterError(f"{path} is not a cluster file: {error}") from None

    def save(self) -> None:
        assert len(self.nodes) <= MAX_NODES
        data = {
            "complete": self.complete,
            "conf": self.conf,
            "overrides": self.overrides,
            "nodes": [
                {
                    **asdict(node),
                    "meta_dir": str(Path(node.name) / "meta"),
                    "log_dir": str(Path(node.name) / "log"),
                    "output": str(Path(node.name) / "quire.out"),
                }
                for node in self.nodes
            ],
        }
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, indent=2) + "\n")
        temporary.replace(self.path)

    def token(self) -> str | None:
        """The cluster token from the first node's VERSION file, for the HTTP API."""
        if not self.nodes:
            return None
        try:
            identity = read_version(self.nodes[0].folder(self.directory) / "meta" / "image")
        except (IdentityError, OSError):
            return None
        return identity.token if identity else None


@dataclass
class NodeStatus:
    node: ClusterNode
    alive: bool
    is_leader: bool | None
    journal_id: int | None


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports; the sockets stay bound until all are picked."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def process_alive(pid: int) -> bool:
    """Whether pid is a running (not zombie) Quire process."""
    if pid <= 0:
        return False
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)  # a child of ours that exited: reap it
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc") / str(pid)
    try:
        if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
        command = proc.joinpath("cmdline").read_bytes()
        return not command or b"fe.cli" in command  # empty while the child is still in exec
    except (OSError, IndexError):
        return True  # no /proc here: trust kill(0)


def start_process(cluster: Cluster, node: ClusterNode, helper: str | None) -> None:
    folder = node.folder(cluster.directory)
    folder.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ}
    if node.is_data_node:
        args = [sys.executable, "-m", "fe.cli", node.role.lower()]
        for override in node.overrides(cluster.directory):
            args += ["--override", override]
        token = cluster.token()
        assert token, "a TN or CN starts beside a cluster whose first FE has started"
        environment[TOKEN_ENVIRONMENT_VARIABLE] = token
    else:
        args = [sys.executable, "-m", "fe.cli", "fe"]
        if cluster.conf:
            args += ["--conf", cluster.conf]
        for override in [*cluster.overrides, *node.overrides(cluster.directory)]:
            args += ["--override", override]
    if helper:
        args += ["--helper", helper]
        token = cluster.token()
        assert token, "a node joins a cluster whose first node has started"
        environment[TOKEN_ENVIRONMENT_VARIABLE] = token  # not in args: others read /proc/*/cmdline
    python_path = os.pathsep.join(
        p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    with open(folder / "quire.out", "ab") as output:
        process = subprocess.Popen(
            args,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**environment, "PYTHONUNBUFFERED": "1", "PYTHONPATH": python_path},
        )
    node.pid = process.pid
    logger.info("started %s (%s), pid %d", node.name, node.role, node.pid)


def wait_ready(cluster: Cluster, nodes: list[ClusterNode]) -> None:
    deadline = time.monotonic() + NODE_START_TIMEOUT_SECONDS
    waiting = list(nodes)
    while waiting:
        for node in list(waiting):
            if not process_alive(node.pid):
                raise ClusterError(
                    f"{node.name} exited while starting; see "
                    f"{node.folder(cluster.directory) / 'quire.out'} and log/fe.log"
                )
            if node_ready(cluster, node):
                waiting.remove(node)
        if waiting and time.monotonic() > deadline:
            names = ", ".join(node.name for node in waiting)
            raise ClusterError(f"{names} not ready within {NODE_START_TIMEOUT_SECONDS} s")
        if waiting:
            time.sleep(POLL_SECONDS)


def node_ready(cluster: Cluster, node: ClusterNode) -> bool:
    if node.is_data_node:
        from be.service.client import NodeClient
        from be.service.errors import ServiceError
        from be.service.format import StatusRequest

        client = NodeClient(HOST, node.service_port, cluster.token() or "")
        try:
            return client.call(StatusRequest(), timeout=1).role == node.role
        except ServiceError:
            return False
        finally:
            client.close()
    try:
        url = f"http://{HOST}:{node.http_port}/api/health"
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def add_to_cluster(leader: ClusterNode, node: ClusterNode) -> None:
    """ALTER SYSTEM ADD the node on the leader. An observer keeps no journal of its own: it
    restarts from the image it downloaded on joining, so that image must list the followers."""
    import pymysql

    if node.is_data_node:
        statements = [f'ALTER SYSTEM ADD BACKEND "{HOST}:{node.service_port}"']
    else:
        statements = [f'ALTER SYSTEM ADD {node.role} "{HOST}:{node.edit_log_port}"']
    if node.role == "OBSERVER":
        statements.append("ADMIN CHECKPOINT")
    connection = pymysql.connect(
        host=HOST, port=leader.query_port, user="root", password="", autocommit=True
    )
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        connection.close()


def up(
    directory: Path,
    followers: int | None = None,
    observers: int | None = None,
    conf: str | None = None,
    overrides: list[str] = (),
    cns: int | None = None,
) -> Cluster:
    """Start a new cluster in directory, or restart the stopped nodes of the one recorded there."""
    directory = Path(directory)
    cluster = Cluster.load(directory)
    if cluster is not None:
        if followers is not None or observers is not None or cns is not None or conf or overrides:
            logger.warning("%s already holds a cluster: restarting it as recorded", directory)
        return restart(cluster)
    followers = 3 if followers is None else followers
    observers = 0 if observers is None else observers
    if followers < 1:
        raise ClusterError("--followers counts the first node: it must be at least 1")
    if observers < 0 or followers + observers + 1 + (cns or 0) > MAX_NODES:
        raise ClusterError(f"between 1 and {MAX_NODES} nodes, observers not negative")
    if cns is not None and cns < 0:
        raise ClusterError("--cns must not be negative")
    directory.mkdir(parents=True, exist_ok=True)
    roles = ["FOLLOWER"] * followers + ["OBSERVER"] * observers
    ports = free_ports(3 * len(roles))
    cluster = Cluster(
        directory,
        conf=str(Path(conf).resolve()) if conf else None,
        overrides=list(overrides),
    )
    first_http = ports[1]
    try:
        for index, role in enumerate(roles):
            node = ClusterNode(f"fe{index + 1}", role, *ports[3 * index : 3 * index + 3])
            if index == 0:
                start_process(cluster, node, helper=None)
            else:
                add_to_cluster(cluster.nodes[0], node)
                start_process(cluster, node, helper=f"http://{HOST}:{first_http}")
            cluster.nodes.append(node)
            cluster.save()
            wait_ready(cluster, [node])
        if cns is not None:
            start_data_nodes(cluster, cns)
    except Exception as error:
        stop(cluster)
        raise ClusterError(
            f"cluster up failed: {error}. The nodes started were stopped; "
            f"remove {directory} before trying again"
        ) from None
    cluster.complete = True
    cluster.save()
    return cluster


def start_data_nodes(cluster: Cluster, cns: int) -> None:
    """A TN and cns CNs following it, each added on the first FE once it answers."""
    ports = free_ports(3 + cns)
    logtail_port = ports[0]
    tn = ClusterNode(
        "tn", "TN", 0, 0, 0, service_port=ports[1], logtail_port=logtail_port,
        webserver_port=ports[2],
    )  # fmt: skip
    nodes = [tn]
    nodes += [
        ClusterNode(f"cn{i + 1}", "CN", 0, 0, 0, service_port=port, logtail_port=logtail_port)
        for i, port in enumerate(ports[3:])
    ]
    for node in nodes:
        start_process(cluster, node, helper=None)
        cluster.nodes.append(node)
        cluster.save()
    wait_ready(cluster, nodes)
    for node in nodes:
        add_to_cluster(cluster.nodes[0], node)


def restart(cluster: Cluster) -> Cluster:
    if not cluster.complete:
        raise ClusterError(
            f"a previous cluster up in {cluster.directory} did not finish; remove it and start again"
        )
    running = [node for node in cluster.nodes if process_alive(node.pid)]
    if len(running) == len(cluster.nodes):
        raise ClusterError(
            f"the cluster in {cluster.directory} is already running "
            f"({', '.join(f'{n.name} pid {n.pid}' for n in running)}); "
            "use `quire cluster status`, or `quire cluster down` first"
        )
    stopped = [node for node in cluster.nodes if node not in running]
    # All at once: a follower waits for a journal leader, which needs a majority of followers.
    try:
        for node in stopped:
            start_process(cluster, node, helper=None)
        cluster.save()
        wait_ready(cluster, stopped)
    except Exception as error:
        stop(Cluster(cluster.directory, stopped))
        raise ClusterError(f"restart failed: {error}. The nodes restarted were stopped") from None
    return cluster


def stop(cluster: Cluster) -> tuple[list[ClusterNode], list[ClusterNode]]:
    """SIGTERM every node, SIGKILL those still running after a while: (terminated, killed)."""
    running = [node for node in cluster.nodes if process_alive(node.pid)]
    for node in running:
        signal_node(node, signal.SIGTERM)
    remaining = wait_exit(running, STOP_TIMEOUT_SECONDS)
    for node in remaining:
        logger.warning("%s (pid %d) ignored SIGTERM: killing it", node.name, node.pid)
        signal_node(node, signal.SIGKILL)
    still = wait_exit(remaining, KILL_TIMEOUT_SECONDS)
    if still:
        raise ClusterError(f"could not stop {', '.join(n.name for n in still)}")
    return [node for node in running if node not in remaining], remaining


def signal_node(node: ClusterNode, sig: int) -> None:
    try:
        os.kill(node.pid, sig)
    except ProcessLookupError:
        pass


def wait_exit(nodes: list[ClusterNode], timeout: float) -> list[ClusterNode]:
    deadline = time.monotonic() + timeout
    remaining = list(nodes)
    while remaining:
        remaining = [node for node in remaining if process_alive(node.pid)]
        if not remaining or time.monotonic() > deadline:
            break
        time.sleep(POLL_SECONDS)
    return remaining


def down(directory: Path) -> tuple[list[ClusterNode], list[ClusterNode]]:
    cluster = require(directory)
    return stop(cluster)


def require(directory: Path) -> Cluster:
    cluster = Cluster.load(Path(directory))
    if cluster is None:
        raise ClusterError(
            f"no local cluster here ({Path(directory) / CLUSTER_FILE} does not exist): "
            "start one with `quire cluster up`"
        )
    return cluster


def node_status(node: ClusterNode, headers: dict[str, str], auth) -> NodeStatus:
    alive = process_alive(node.pid)
    is_leader = journal_id = None
    if alive and not node.is_data_node:
        base = f"http://{HOST}:{node.http_port}"
        try:
            info = requests.get(
                f"{base}/info", headers=headers, auth=auth, timeout=STATUS_TIMEOUT_SECONDS
            )
            if info.ok:
                is_leader = bool(info.json()["is_leader"])
            answer = requests.get(
                f"{base}/journal_id", headers=headers, auth=auth, timeout=STATUS_TIMEOUT_SECONDS
            )
            if answer.ok:
                journal_id = int(answer.json()["journal_id"])
        except (requests.RequestException, ValueError, KeyError):
            pass
    return NodeStatus(node, alive, is_leader, journal_id)


def status(directory: Path) -> list[NodeStatus]:
    cluster = require(directory)
    token = cluster.token()
    headers = {"X-Quire-Token": token} if token else {}
    auth = None if token else ("root", "")
    with ThreadPoolExecutor(max_workers=min(len(cluster.nodes), MAX_NODES) or 1) as pool:
        return list(pool.map(lambda node: node_status(node, headers, auth), cluster.nodes))


def wait_leader(directory: Path, timeout: float = LEADER_TIMEOUT_SECONDS) -> ClusterNode | None:
    deadline = time.monotonic() + timeout
    while True:
        for answer in status(directory):
            if answer.is_leader:
                return answer.node
        if time.monotonic() > deadline:
            return None
        time.sleep(POLL_SECONDS)


def describe(status: NodeStatus) -> str:
    node = status.node
    if node.is_data_node:
        return (
            f"{node.name:<5} {node.role:<8} pid {node.pid:<7} "
            f"{'alive' if status.alive else 'DOWN ':<5}  service {node.service_port:<5} "
            f"logtail {node.logtail_port}"
            + (f" stream load {node.webserver_port}" if node.webserver_port else "")
        )
    leader = {True: "yes", False: "no", None: "?"}[status.is_leader]
    journal = "?" if status.journal_id is None else str(status.journal_id)
    return (
        f"{node.name:<5} {node.role:<8} pid {node.pid:<7} "
        f"{'alive' if status.alive else 'DOWN ':<5}  query {node.query_port:<5} "
        f"http {node.http_port:<5} edit_log {node.edit_log_port:<5} "
        f"leader {leader:<3} journal_id {journal}"
    )


def print_connections(cluster: Cluster, leader: ClusterNode | None) -> None:
    write = sys.stdout.write
    write(f"Quire cluster in {cluster.directory} ({len(cluster.nodes)} nodes):\n")
    for node in cluster.nodes:
        if node.is_data_node:
            write(f"  {node.name} {node.role:<8} pid {node.pid:<7} port {node.service_port}\n")
            continue
        mark = "  <- leader" if leader and node.name == leader.name else ""
        write(
            f"  {node.name} {node.role:<8} pid {node.pid:<7} "
            f"mysql -h {HOST} -P {node.query_port} -u root{mark}\n"
        )
    if leader is None:
        write("  no leader known yet: see `quire cluster status`\n")
    write(f"Stop it with: quire cluster down --dir {cluster.directory}\n")


def add_parser(commands) -> None:
    """The `cluster` subcommand of `quire`."""
    cluster = commands.add_parser(
        "cluster",
        help="start, inspect or stop a local cluster of FE processes",
        description="A local cluster of FE processes on free loopback ports, one folder per node "
        "(meta/, log/, quire.out) under --dir, recorded in --dir/cluster.json.",
    )
    actions = cluster.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    start = actions.add_parser(
        "up",
        help="start a cluster (or restart the stopped nodes of the one in --dir)",
        description="Start fe1 as leader, then add each further node with ALTER SYSTEM and start "
        "it with --helper, one at a time. On a --dir whose nodes are stopped, restart them from "
        "their own files on their recorded ports; refuse if they are all running.",
    )
    start.add_argument(
        "--followers",
        type=int,
        default=None,
        help="followers, counting the first node (default 3)",
    )
    start.add_argument("--observers", type=int, default=None, help="observers (default 0)")
    start.add_argument(
        "--cns",
        type=int,
        default=None,
        help="start a TN and this many CNs beside the FEs, added as backends (default: none)",
    )
    start.add_argument(
        "--conf", default=None, help="FE configuration file for every node (default conf/fe.conf)"
    )
    start.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="configuration for every node, repeatable; ports and folders are set per node",
    )
    for name, text in (
        ("status", "one line per node: role, pid alive, ports, leader, journal id"),
        ("down", "SIGTERM every node, SIGKILL those still running after 30 s"),
    ):
        actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
    for action in actions.choices.values():
        action.add_argument(
            "--dir", default="cluster", help="the cluster's folder (default ./cluster)"
        )


def main(args) -> int:
    """Run `quire cluster ACTION` for parsed args; the exit code."""
    directory = Path(args.dir)
    try:
        if args.cluster_command == "up":
            cluster = up(
                directory, args.followers, args.observers, args.conf, args.override, args.cns
            )
            print_connections(cluster, wait_leader(directory))
        elif args.cluster_command == "status":
            for answer in status(directory):
                sys.stdout.write(describe(answer) + "\n")
        else:
            terminated, killed = down(directory)
            for node in terminated:
                sys.stdout.write(f"{node.name} (pid {node.pid}) stopped\n")
            for node in killed:
                sys.stdout.write(
                    f"{node.name} (pid {node.pid}) killed after {STOP_TIMEOUT_SECONDS} s\n"
                )
            if not terminated and not killed:
                sys.stdout.write("no node was running\n")
    except ClusterError as error:
        sys.stderr.write(f"quire cluster {args.cluster_command}: {error}\n")
        return 1
    return 0
