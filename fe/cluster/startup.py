"""Who this FE is: its address from priority_networks, and its identity (cluster id, token, name,
role) read from the meta_dir, made on a cluster's first start, or fetched through a helper."""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from be.config import Config
from fe.cluster.helper import (
    HOW_TO_GIVE_THE_TOKEN,
    JoinError,
    ask_role,
    check_local,
    download_image,
    given_token,
    helper_url,
)
from image.identity import (
    NodeRole,
    new_identity,
    read_role,
    read_version,
    write_role,
    write_version,
)

logger = logging.getLogger(__name__)


class StartupError(Exception):
    """A reason the node cannot start, said plainly (bad VERSION, no usable image, ...)."""


@dataclass(frozen=True)
class ThisFrontend:
    """This FE in its cluster, fixed once start-up has read its meta_dir."""

    name: str
    role: str  # FOLLOWER or OBSERVER
    host: str
    edit_log_port: int
    cluster_id: int
    token: str
    known_followers: tuple[str, ...] = ()  # from the helper, before the catalog knows them

    @property
    def address(self) -> str:
        """Its journal address, as the others know it."""
        return f"{self.host}:{self.edit_log_port}"

    @property
    def observes(self) -> bool:
        return self.role == "OBSERVER"


def local_address(priority_networks: str) -> str:
    try:
        networks = [
            ipaddress.ip_network(n.strip(), strict=False)
            for n in priority_networks.split(";")
            if n.strip()
        ]
    except ValueError as error:
        raise StartupError(f"priority_networks: {error}") from None
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


def frontend_name(host: str, edit_log_port: int, taken: Collection[str] = ()) -> str:
    """An FE's name as Doris makes it, <host>_<edit_log_port>_<milliseconds since the epoch>,
    the first node's and joined ones' alike; never one of taken."""
    stamp = int(time.time() * 1000)
    while (name := f"{host}_{edit_log_port}_{stamp}") in taken:
        stamp += 1
    return name


def establish_identity(config: Config, helper: str | None, token_file: str | None) -> ThisFrontend:
    """Read this FE's VERSION and ROLE; on a first start make them, or ask the helper for them."""
    host = local_address(config["priority_networks"])
    meta_dir = config.path("meta_dir")
    image_dir = meta_dir / "image"
    image_dir.mkdir(parents=True, exist_ok=True)
    meta_dir.chmod(0o700)  # the token, images and journal: for this node's user only
    known_followers: list[str] = []
    if helper:
        known_followers = _join(config, host, image_dir, helper, token_file)
    version = read_version(image_dir)
    configured = config["cluster_id"]
    if version is None:
        if any(image_dir.glob("image.*")) or (meta_dir / "journal").exists():
            raise StartupError(
                f"{image_dir / 'VERSION'} is missing but the meta_dir holds data; refusing to start a new cluster over it"
            )
        version = new_identity(configured or None)
        write_version(image_dir, version)
        logger.info("new cluster: cluster id %d", version.cluster_id)
    elif configured and configured != version.cluster_id:
        raise StartupError(
            f"cluster_id {configured} in the configuration differs from {version.cluster_id} in {image_dir / 'VERSION'}"
        )
    role = read_role(image_dir)
    if role is None:
        role = NodeRole("FOLLOWER", frontend_name(host, config["edit_log_port"]))
        write_role(image_dir, role)
    return ThisFrontend(
        name=role.name,
        role=role.role,
        host=host,
        edit_log_port=config["edit_log_port"],
        cluster_id=version.cluster_id,
        token=version.token,
        known_followers=tuple(known_followers),
    )


def _join(
    config: Config, host: str, image_dir: Path, helper: str, token_file: str | None
) -> list[str]:
    """First start (or a restart) with --helper: ask the helper, check, fetch its image. Returns
    the followers the helper named."""
    base = helper_url(helper, config["http_port"])
    try:
        local_version = read_version(image_dir)
        token = given_token(token_file) or (local_version and local_version.token)
        if not token:
            raise JoinError(
                f"joining through --helper needs the cluster token: {HOW_TO_GIVE_THE_TOKEN}"
            )
        role, identity, followers = ask_role(base, host, config["edit_log_port"], token)
        local_role = read_role(image_dir)
        check_local(local_version, local_role, role, identity)
        if local_version is None:
            download_image(base, identity.token, image_dir)
            write_version(image_dir, identity)
            write_role(image_dir, role)
        elif local_role is not None and local_role.name != role.name:
            # Dropped and added again on the same address: the cluster knows it by a new name.
            logger.info("re-added to the cluster: %s is now %s", local_role.name, role.name)
            download_image(base, identity.token, image_dir)
            write_role(image_dir, role)
    except JoinError as error:
        raise StartupError(str(error)) from None
    logger.info(
        "joined cluster %d through %s as %s %s", identity.cluster_id, base, role.role, role.name
    )
    return followers
