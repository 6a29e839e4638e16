"""Merging a tablet's small objects into one, so that scans stay fast after many small commits.

`objects_to_merge` is the policy: which of a tablet's objects to merge now, if any. `merge_objects`
writes the merged object: the rows of its inputs, sorted by row id, less those deleted at or
before the merge timestamp (or an earlier one: the TN gives the oldest readable snapshot, so
that a CN restarted from a later checkpoint, which reads the merged object alone, answers every
readable snapshot alike); row ids and commit timestamps are kept, so tombstones written later
still find their rows. The caller (the TN) then swaps the metadata in one commit and deletes the
inputs once no snapshot reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from be.logtail.entries import ROW_ID
from be.storage.blocks import ObjectMeta, read_blocks, write_blocks
from be.storage.errors import MergeRefused
from be.storage.limits import StorageLimits
from be.storage.objects import ObjectStore
from be.storage.tombstones import TombstoneMeta, deleted_row_ids

logger = logging.getLogger(__name__)


def objects_to_merge(
    metas: Iterable[ObjectMeta], limits: StorageLimits, every: bool = False
) -> tuple[ObjectMeta, ...]:
    """The objects of one tablet to merge now, oldest first: its small objects (under
    merge_small_object_bytes) of one schema version, once there are merge_min_objects of them
    (every: all its objects, once there are two: ADMIN COMPACT TABLE); at most
    merge_max_objects and merge_max_bytes. Empty when nothing needs merging."""
    by_version: dict[tuple[int, int], list[ObjectMeta]] = {}
    for meta in metas:
        if every or meta.bytes < limits.merge_small_object_bytes:
            by_version.setdefault((meta.tablet_id, meta.schema_version), []).append(meta)
    least = 2 if every else limits.merge_min_objects
    for _, small in sorted(by_version.items()):
        if len(small) < least:
            continue
        chosen, total = [], 0
        for meta in sorted(small, key=lambda meta: meta.name):
            if (
                len(chosen) == limits.merge_max_objects
                or total + meta.bytes > limits.merge_max_bytes
            ):
                break
            chosen.append(meta)
            total += meta.bytes
        if len(chosen) >= 2:
            return tuple(chosen)
    return ()


def merge_objects(
    store: ObjectStore,
    metas: Sequence[ObjectMeta],
    tombstones: Iterable[TombstoneMeta],
    at_ts: int,
    *,
    seq: int = 0,
    deleted_by: int | None = None,
) -> ObjectMeta | None:
    """One new object holding the rows of `metas` not deleted at or before deleted_by (at_ts by
    default; None if every row was deleted), named at at_ts and seq, with the newest flush
    timestamp of its inputs."""
    if len(metas) < 2:
        raise MergeRefused(f"a merge takes at least two objects, not {len(metas)}")
    first = metas[0]
    if any(
        meta.tablet != first.tablet or meta.schema_version != first.schema_version for meta in metas
    ):
        raise MergeRefused("merged objects must be of one tablet and one schema version")
    if len({meta.name for meta in metas}) != len(metas):
        raise MergeRefused("an object is named twice")
    flush_ts = max(meta.flush_ts for meta in metas)
    if at_ts < flush_ts:
        raise MergeRefused(f"merge timestamp {at_ts} is before a flush at {flush_ts}")
    total = sum(meta.bytes for meta in metas)
    if total > store.limits.merge_max_bytes:
        raise MergeRefused(
            f"{total} bytes to merge, over merge_max_bytes {store.limits.merge_max_bytes}"
        )
    tombstones = [meta for meta in tombstones if meta.tablet == first.tablet]
    low = min(meta.min_row_id for meta in metas)
    high = max(meta.max_row_id for meta in metas)
    deleted_by = at_ts if deleted_by is None else min(deleted_by, at_ts)
    deleted = deleted_row_ids(store, tombstones, deleted_by, row_id_range=(low, high))
    tables = [read_blocks(store, meta) for meta in metas]
    rows = pa.concat_tables(tables)
    if len(deleted):
        rows = rows.filter(pc.invert(pc.is_in(rows.column(ROW_ID), value_set=deleted)))
    logger.info(
        "merging %d objects of tablet %d (%d rows, %d deleted) at %d",
        len(metas),
        first.tablet_id,
        sum(meta.rows for meta in metas),
        sum(meta.rows for meta in metas) - rows.num_rows,
        at_ts,
    )
    if rows.num_rows == 0:
        return None
    return write_blocks(
        store,
        first.tablet,
        rows,
        schema_version=first.schema_version,
        flush_ts=flush_ts,
        seq=seq,
        name_ts=at_ts,
    )
