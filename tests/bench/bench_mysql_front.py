"""MySQL front round trips: `SELECT 1` queries per second through fe/mysql with a trivial session.

The server runs in a child process; sysbench (libmariadb, written in C) is the client, so the
figures are the front's. Anchor: stock mysql-mimic 3.0.5's MysqlServer serving the same trivial
session on the same machine. Also measured on Quire's front alone (mysql-mimic cannot run it):
sysbench's prepared point selects.

    python tests/bench/bench_mysql_front.py [--seconds 5] [--threads 4]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mysql_mimic import MysqlServer  # noqa: E402
from mysql_mimic.auth import IdentityProvider, User  # noqa: E402
from mysql_mimic.session import BaseSession  # noqa: E402
from mysql_mimic.variables import GlobalVariables, SessionVariables  # noqa: E402

from fe.mysql import MysqlFront, NativePasswordPlugin, Result, column  # noqa: E402

logger = logging.getLogger("bench_mysql_front")

SELECT_ONE_LUA = """
function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
end
function event()
    con:query("SELECT 1")
end
function thread_done()
    con:disconnect()
end
"""


class Root(IdentityProvider):
    def get_plugins(self):
        return [NativePasswordPlugin()]

    async def get_user(self, username, host):
        return User(name=username, auth_string="", auth_plugin="mysql_native_password")


class QuireTrivialSession(BaseSession):
    def __init__(self):
        self.username = None
        self.database = None

    async def describe(self, sql):
        return [column("c", "CHAR(120)")] if sql.startswith("SELECT c FROM") else None

    async def handle_query(self, sql, attrs):
        if sql.startswith("SELECT c FROM"):
            return Result([column("c", "CHAR(120)")], [("x" * 120,)])
        if sql == "SELECT 1":
            return Result([column("1", "BIGINT")], [(1,)])
        return None

    async def use(self, database):
        self.database = database


class MimicTrivialSession(BaseSession):
    def __init__(self):
        self.variables = SessionVariables(GlobalVariables())
        self.username = None
        self.database = None

    async def handle_query(self, sql, attrs):
        if sql == "SELECT 1":
            return [(1,)], ["1"]
        return None

    async def use(self, database):
        self.database = database


async def serve(kind: str, port_file: Path) -> None:
    if kind == "quire":
        front = MysqlFront(session_factory=QuireTrivialSession, identity_provider=Root(), port=0)
        await front.start()
        port = front.port
    else:
        server = MysqlServer(session_factory=MimicTrivialSession, identity_provider=Root())
        await server.start_server(host="127.0.0.1", port=0)
        port = server.sockets()[0].getsockname()[1]
    port_file.write_text(str(port))
    await asyncio.Event().wait()


def start_server(kind: str, folder: Path) -> tuple[subprocess.Popen, int]:
    port_file = folder / f"{kind}.port"
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port-file", str(port_file)]
    )
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        assert child.poll() is None, f"{kind} server exited"
        assert time.monotonic() < deadline, f"{kind} server did not start"
        time.sleep(0.05)
    return child, int(port_file.read_text())


def sysbench(port: int, test: str, args: argparse.Namespace) -> float:
    done = subprocess.run(
        [
            "sysbench",
            test,
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={port}",
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--tables=1",
            "--table-size=10000",
            f"--threads={args.threads}",
            f"--time={args.seconds}",
            "run",
        ],
        capture_output=True,
        text=True,
        timeout=args.seconds + 60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.search(r"queries:\s+\d+\s+\((\d+(?:\.\d+)?) per sec\.\)", done.stdout)
    assert match, done.stdout
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--serve", choices=["quire", "mimic"], help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.port_file))
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    assert shutil.which("sysbench"), "sysbench is needed (Debian package sysbench)"

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = folder / "select_one.lua"
        script.write_text(SELECT_ONE_LUA)
        results = {}
        for kind in ("mimic", "quire"):
            child, port = start_server(kind, folder)
            try:
                results[kind] = sysbench(port, str(script), args)
                if kind == "quire":
                    results["point"] = sysbench(port, "oltp_point_select", args)
            finally:
                child.terminate()
                child.wait(10)

    logger.info(
        "client                          sysbench, %d threads, %d s", args.threads, args.seconds
    )
    logger.info("mysql-mimic 3.0.5, SELECT 1     %.0f queries/s", results["mimic"])
    logger.info("Quire front, prepared point sel %.0f queries/s", results["point"])
    logger.info("Quire front, SELECT 1           %.0f queries/s", results["quire"])
    logger.info("ratio to mysql-mimic's SELECT 1: %.2fx", results["quire"] / results["mimic"])


if __name__ == "__main__":
    main()
