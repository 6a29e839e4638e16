"""Images: the leader writes one every checkpoint_interval_second once edit_log_roll_num entries
came in and truncates the journal they cover; the others keep the leader's newest; a node that
lacks entries the leader no longer has catches up from the leader's image."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time

from be.config import Config
from fe.cluster.helper import JoinError, fetch_newer_image
from fe.cluster.membership import CatalogStateMachine
from fe.cluster.startup import ThisFrontend
from image.images import ImageInfo, ImageStore
from metadata.catalog import Catalog
from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)

CHECKPOINTER_TICK_SECONDS = 1.0
IMAGE_RETRY_SECONDS = 1.0


def sync_image_from_cluster(
    images: ImageStore, catalog: Catalog, this: ThisFrontend, leader: str
) -> ImageInfo | None:
    """Fetch the newest image another FE holds if it is newer than ours (the leader first)."""
    have = images.images()
    newest = have[0].journal_id if have else -1
    others = sorted(
        (f for f in list(catalog.frontends.values()) if f.name != this.name and f.http_port),
        key=lambda f: f"{f.host}:{f.edit_log_port}" != leader,
    )
    for frontend in others:
        base = f"http://{frontend.host}:{frontend.http_port}"
        try:
            path = fetch_newer_image(base, this.token, images.image_dir, newest)
        except JoinError as error:
            logger.info("no image from %s: %s", base, error)
            continue
        if path is None:
            return None
        images.prune()
        return next((i for i in images.images() if i.path == path), None)
    return None


class Checkpointer:
    def __init__(
        self,
        this: ThisFrontend,
        state_machine: CatalogStateMachine,
        journal: ReplicatedJournal,
        images: ImageStore,
        config: Config,
        stopping: threading.Event,
        last_image: ImageInfo | None,
    ):
        self.this = this
        self.state_machine = state_machine
        self.catalog = state_machine.catalog
        self.journal = journal
        self.images = images
        self.config = config
        self.stopping = stopping
        self.last_image = last_image
        self.last_checkpoint_at = time.monotonic()
        self._lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._run, name="checkpointer", daemon=True).start()
        threading.Thread(
            target=self._catch_up_from_images, name="image-catch-up", daemon=True
        ).start()

    def checkpoint(self) -> ImageInfo:
        with self._lock:
            started = time.monotonic()
            snapshot = self.catalog.snapshot()
            if self._unchanged_since_last_image(snapshot.raft_index):
                return self.last_image
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

    def _unchanged_since_last_image(self, raft_index: int) -> bool:
        last = self.last_image
        return last is not None and last.raft_index == raft_index and last.path.exists()

    async def checkpoint_now(self) -> ImageInfo:
        return await asyncio.to_thread(self.checkpoint)

    def seconds_since_checkpoint(self) -> float:
        return time.monotonic() - self.last_checkpoint_at

    def _run(self) -> None:
        while not self.stopping.wait(CHECKPOINTER_TICK_SECONDS):
            since = self.last_image.journal_id if self.last_image else 0
            due = self.catalog.journal_id - since >= self.config["edit_log_roll_num"]
            if self.seconds_since_checkpoint() < self.config["checkpoint_interval_second"]:
                continue
            if not self.journal.status().is_leader:
                self.last_checkpoint_at = time.monotonic()
                self._follow_images()
            elif due:
                try:
                    self.checkpoint()
                except Exception:
                    logger.exception("checkpoint failed; will retry")

    def _sync(self) -> ImageInfo | None:
        leader = str(self.journal.status().leader)
        return sync_image_from_cluster(self.images, self.catalog, self.this, leader)

    def _follow_images(self) -> None:
        """Non-leaders keep the leader's recent images, so they restart from one, and drop the
        journal entries those images cover."""
        try:
            info = self._sync()
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

    def _catch_up_from_images(self) -> None:
        """When the leader no longer has the entries this FE lacks, install its image."""
        while not self.stopping.is_set():
            first_index = self.journal.wait_image_needed(CHECKPOINTER_TICK_SECONDS)
            if first_index is None or self.stopping.is_set():
                continue
            try:
                self._catch_up_from_image(first_index)
            except Exception:
                logger.exception("catching up from an image failed; the leader will ask again")
                self.stopping.wait(IMAGE_RETRY_SECONDS)

    def _catch_up_from_image(self, first_index: int) -> None:
        started = time.monotonic()
        logger.warning(
            "this FE is at raft index %d but the leader's journal starts after %d: "
            "catching up from the leader's image",
            self.catalog.raft_index,
            first_index,
        )
        while not self.stopping.is_set():
            loaded = None
            try:
                self._sync()
                # Headers first: a whole image is read only once one covers first_index.
                if any(i.raft_index >= first_index for i in self.images.images()):
                    loaded = self.images.load_newest()
            except Exception as error:
                logger.warning("no image to catch up from yet: %s", error)
            if loaded is not None and loaded[0].raft_index >= first_index:
                break
            self.stopping.wait(IMAGE_RETRY_SECONDS)
        else:
            return
        catalog, info = loaded
        if self.journal.install_image(
            catalog.raft_index, catalog.raft_term, lambda: self.state_machine.restore(catalog)
        ):
            self.last_image = info
            logger.info(
                "caught up from %s (journal id %d, %d tables) in %.2f s",
                info.path.name,
                catalog.journal_id,
                len(catalog.tables),
                time.monotonic() - started,
            )
