"""The VERSION and ROLE files of the image directory, as in Doris.

VERSION holds the cluster's identity (`clusterId=`, `token=`), chosen once by the first leader and
copied by every node that joins; ROLE holds this node's role (FOLLOWER or OBSERVER) and its name.
Both are small key=value text files, replaced atomically, readable by their owner only.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

VERSION_FILE = "VERSION"
ROLE_FILE = "ROLE"
ROLES = ("FOLLOWER", "OBSERVER")
MAX_CLUSTER_ID = 2**31 - 1
MAX_FILE_BYTES = 64 * 1024


class IdentityError(Exception):
    """A VERSION or ROLE file that cannot be read as one."""


@dataclass(frozen=True)
class ClusterIdentity:
    cluster_id: int
    token: str


@dataclass(frozen=True)
class NodeRole:
    role: str
    name: str


def new_identity(cluster_id: int | None = None) -> ClusterIdentity:
    """A new cluster's identity: the given cluster id or a random positive 32-bit one."""
    if cluster_id is None:
        cluster_id = 1 + secrets.randbelow(MAX_CLUSTER_ID)
    _check_cluster_id(cluster_id)
    return ClusterIdentity(cluster_id, secrets.token_hex(16))


def read_version(directory: str | Path) -> ClusterIdentity | None:
    path = Path(directory) / VERSION_FILE
    values = _read_key_values(path)
    if values is None:
        return None
    cluster_id_text = _required(values, "clusterId", path)
    try:
        cluster_id = int(cluster_id_text)
        _check_cluster_id(cluster_id)
    except ValueError as error:
        raise IdentityError(f"{path}: bad clusterId {cluster_id_text!r}: {error}") from None
    token = _required(values, "token", path)
    return ClusterIdentity(cluster_id, token)


def write_version(directory: str | Path, identity: ClusterIdentity) -> None:
    _check_cluster_id(identity.cluster_id)
    _check_value(identity.token, "token")
    _write_key_values(
        Path(directory) / VERSION_FILE,
        {"clusterId": str(identity.cluster_id), "token": identity.token},
    )


def read_role(directory: str | Path) -> NodeRole | None:
    path = Path(directory) / ROLE_FILE
    values = _read_key_values(path)
    if values is None:
        return None
    role = _required(values, "role", path)
    if role not in ROLES:
        raise IdentityError(f"{path}: role must be one of {', '.join(ROLES)}, not {role!r}")
    return NodeRole(role, _required(values, "name", path))


def write_role(directory: str | Path, role: NodeRole) -> None:
    if role.role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role.role!r}")
    _check_value(role.name, "name")
    _write_key_values(Path(directory) / ROLE_FILE, {"role": role.role, "name": role.name})


def _check_cluster_id(cluster_id: int) -> None:
    if not 0 < cluster_id <= MAX_CLUSTER_ID:
        raise ValueError(f"cluster id must be between 1 and {MAX_CLUSTER_ID}, not {cluster_id}")


def _check_value(value: str, what: str) -> None:
    if not value or any(c in value for c in "\r\n=") or value != value.strip():
        raise ValueError(f"{what} must be non-empty, on one line, without '=': {value!r}")


def _required(values: dict[str, str], key: str, path: Path) -> str:
    value = values.get(key)
    if not value:
        raise IdentityError(f"{path}: missing {key}=")
    return value


def _read_key_values(path: Path) -> dict[str, str] | None:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_FILE_BYTES:
        raise IdentityError(f"{path}: larger than {MAX_FILE_BYTES} bytes, not a {path.name} file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise IdentityError(f"{path}: not UTF-8 text ({error})") from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise IdentityError(f"{path}: line {number} is not key=value: {line!r}")
        values[key.strip()] = value.strip()
    return values


def _write_key_values(path: Path, values: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)  # a leftover would keep its mode
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(descriptor, "w", encoding="utf-8") as file:
        file.write("".join(f"{key}={value}\n" for key, value in values.items()))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    descriptor = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
