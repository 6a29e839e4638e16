"""What a start checks and takes before it touches anything: its ports free, its meta_dir locked
for this process (an flock on meta_dir/quire.lock, held for the process's life), its pid file."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import socket
from pathlib import Path

from be.config import Config
from fe.cluster.startup import StartupError

logger = logging.getLogger(__name__)

LOCK_FILE = "quire.lock"
PORT_KEYS = ("query_port", "http_port", "edit_log_port")


def check_ports_free(config: Config, host: str, keys: tuple[str, ...] = PORT_KEYS) -> None:
    """Bind each listening port briefly, as its server will (SO_REUSEADDR): a port in use is
    refused now, before the meta_dir is read or made."""
    for key in keys:
        port = config[key]
        if port == 0:
            continue  # the system picks one
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as error:
                raise StartupError(
                    f"{key} {port} on {host} is in use ({error.strerror}): is another Quire "
                    f"running? Stop it or choose another {key}"
                ) from None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


class FolderLock:
    """This process's claim on its meta_dir (or storage_root, named by key). A folder this start
    made is removed again when the start fails, so a failed first start leaves nothing behind."""

    def __init__(self, folder: Path, key: str = "meta_dir"):
        self.folder = folder
        self.made_here = not folder.exists()
        path = folder / LOCK_FILE
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise StartupError(f"cannot lock {key} {folder}: {error}") from None
        try:
            fcntl.flock(self.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.descriptor)
            holder = _pid_in(path)
            raise StartupError(
                f"{key} {folder} is in use by another Quire process"
                + (f" (pid {holder})" if holder else "")
                + f": stop it first, or give this node its own {key}"
            ) from None
        os.ftruncate(self.descriptor, 0)
        os.write(self.descriptor, f"{os.getpid()}\n".encode())

    def release(self, start_failed: bool) -> None:
        if start_failed and self.made_here:
            shutil.rmtree(self.folder, ignore_errors=True)
            logger.debug("removed %s, made by this failed start", self.folder)
        os.close(self.descriptor)


class PidFile:
    """log_dir/quire.pid: never taken from, nor removed for, another running process."""

    def __init__(self, path: Path):
        owner = _pid_in(path)
        if owner is not None and owner != os.getpid() and _running(owner):
            raise StartupError(
                f"{path} names running process {owner}: another Quire uses this log_dir; "
                "stop it first, or give this node its own log_dir"
            )
        try:
            path.write_text(f"{os.getpid()}\n")
        except OSError as error:
            raise StartupError(f"cannot write the pid file: {error}") from None
        self.path = path

    def release(self) -> None:
        if _pid_in(self.path) == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
