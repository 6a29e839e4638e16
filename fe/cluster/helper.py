"""Joining a cluster through a helper (`quire fe --helper`), as Doris's FE does: ask the helper
which role this node was added with and the cluster's identity, then download its newest image.

The joiner proves it may join with the cluster token, which the operator gives it (`quire token` on
a member prints it) in a file or the environment, never on the command line; the helper never sends
the token. A node that was never added, holds no or the wrong token, or whose local VERSION / ROLE
disagree with the cluster, stops with an error that names the cause.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests

from image.identity import ClusterIdentity, NodeRole
from image.images import ImageError, verify

logger = logging.getLogger(__name__)

HELPER_TIMEOUT_SECONDS = 10
DOWNLOAD_CHUNK_BYTES = 1 << 20
PROGRESS_SECONDS = 5.0


TOKEN_ENVIRONMENT_VARIABLE = "QUIRE_CLUSTER_TOKEN"
HOW_TO_GIVE_THE_TOKEN = (
    "run `quire token` on a node of the cluster and give its output to this node with "
    f"--token-file FILE or the {TOKEN_ENVIRONMENT_VARIABLE} environment variable"
)


class JoinError(Exception):
    pass


def given_token(token_file: str | None) -> str | None:
    """The cluster token the operator gave this node: --token-file, else the environment."""
    if token_file is None:
        return os.environ.get(TOKEN_ENVIRONMENT_VARIABLE, "").strip() or None
    try:
        token = Path(token_file).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise JoinError(f"cannot read the token file {token_file}: {error}") from None
    if not token:
        raise JoinError(f"the token file {token_file} is empty: {HOW_TO_GIVE_THE_TOKEN}")
    return token


def helper_url(helper: str, http_port: int) -> str:
    """`host:edit_log_port` (the helper serves HTTP on this node's http_port, as in Doris) or
    `http://host:http_port`."""
    if helper.startswith(("http://", "https://")):
        parts = urlsplit(helper)
        if not parts.hostname:
            raise JoinError(f"--helper {helper!r} has no host")
        return f"{parts.scheme}://{parts.netloc}"
    host, sep, port = helper.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise JoinError(
            f"--helper wants host:edit_log_port or http://host:http_port, not {helper!r}"
        )
    return f"http://{host}:{http_port}"


def ask_role(
    base: str, host: str, edit_log_port: int, token: str
) -> tuple[NodeRole, ClusterIdentity, list[str]]:
    """The role this node was added with, the cluster's identity and its followers' addresses."""
    try:
        response = requests.get(
            f"{base}/role",
            params={"host": host, "port": edit_log_port},
            headers={"X-Quire-Token": token},
            timeout=HELPER_TIMEOUT_SECONDS,
        )
    except requests.RequestException as error:
        raise JoinError(f"the helper {base} is unreachable: {error}") from None
    if response.status_code == 404:
        raise JoinError(
            f"this node ({host}:{edit_log_port}) was not added to the cluster of {base}: run "
            f'ALTER SYSTEM ADD FOLLOWER "{host}:{edit_log_port}" (or ADD OBSERVER) on its leader first'
        )
    if response.status_code == 401:
        raise JoinError(
            f"the helper {base} refused this node's cluster token: it is not the token of that "
            f"cluster; {HOW_TO_GIVE_THE_TOKEN}"
        )
    if response.status_code != 200:
        raise JoinError(
            f"the helper {base} refused: HTTP {response.status_code} {response.text[:200]}"
        )
    answer = response.json()
    identity = ClusterIdentity(int(answer["cluster_id"]), token)
    return NodeRole(answer["role"], answer["name"]), identity, list(answer["followers"])


def check_local(
    local_version: ClusterIdentity | None,
    local_role: NodeRole | None,
    role: NodeRole,
    identity: ClusterIdentity,
) -> None:
    if local_version is not None and local_version.cluster_id != identity.cluster_id:
        raise JoinError(
            f"wrong cluster: this node's VERSION says cluster id {local_version.cluster_id}, "
            f"the helper's cluster is {identity.cluster_id}"
        )
    if local_role is not None and local_role.role != role.role:
        raise JoinError(
            f"role mismatch: this node's ROLE says {local_role.role}, the cluster added it as {role.role}"
        )


def download_image(base: str, token: str, image_dir: Path) -> Path:
    """The helper's newest image, verified, as image.<journal_id> in image_dir. A helper without
    an image is asked to write one first: a joined node starts from an image, which also tells it
    the cluster's members when it restarts without --helper."""
    image = _download(base, token, image_dir)
    if image is None:
        try:
            requests.post(
                f"{base}/api/checkpoint", headers={"X-Quire-Token": token}, timeout=60
            ).raise_for_status()
        except requests.RequestException as error:
            raise JoinError(
                f"the helper {base} has no image and could not write one: {error}"
            ) from None
        image = _download(base, token, image_dir)
    if image is None:
        raise JoinError(f"the helper {base} has no image to start from")
    return image


def fetch_newer_image(base: str, token: str, image_dir: Path, have: int) -> Path | None:
    """The FE's newest image if it is newer than journal id `have`, verified and kept in
    image_dir; None if it has nothing newer."""
    return _download(base, token, image_dir, newer_than=have)


def _download(base: str, token: str, image_dir: Path, newer_than: int = -1) -> Path | None:
    try:
        response = requests.get(
            f"{base}/image",
            headers={"X-Quire-Token": token},
            stream=True,
            timeout=HELPER_TIMEOUT_SECONDS,
        )
    except requests.RequestException as error:
        raise JoinError(f"cannot download an image from {base}: {error}") from None
    with response:
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise JoinError(f"image download from {base} failed: HTTP {response.status_code}")
        version = int(response.headers["X-Image-Version"])
        if version <= newer_than:
            return None
        partial = image_dir / "image.download"
        total = int(response.headers.get("Content-Length", 0))
        started = reported = time.monotonic()
        received = 0
        # No limit on the whole transfer (a big image must not time out, Doris #26003): only
        # each read waits at most HELPER_TIMEOUT_SECONDS.
        with open(partial, "wb") as file:
            for chunk in response.iter_content(DOWNLOAD_CHUNK_BYTES):
                file.write(chunk)
                received += len(chunk)
                if time.monotonic() - reported >= PROGRESS_SECONDS:
                    reported = time.monotonic()
                    logger.info(
                        "downloading image.%d from %s: %d of %d MiB",
                        version,
                        base,
                        received >> 20,
                        total >> 20,
                    )
            file.flush()
            os.fsync(file.fileno())
        elapsed = time.monotonic() - started
    try:
        info = verify(partial)
    except ImageError as error:
        partial.unlink(missing_ok=True)
        raise JoinError(f"the image downloaded from {base} is damaged: {error}") from None
    if info.journal_id != version:
        raise JoinError(f"the helper sent image {info.journal_id} for version {version}")
    final = image_dir / f"image.{version}"
    os.replace(partial, final)
    logger.info(
        "downloaded image %s (%d bytes) from %s in %.2f s", final.name, info.size, base, elapsed
    )
    return final
