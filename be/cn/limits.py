"""Every bound of a CN, checked against each other."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ComputeLimits:
    cache_bytes: int = 256 << 20  # decoded objects and tombstones kept for the next snapshot
    max_cached_object_bytes: int = 64 << 20  # a larger decoded object is read, never cached
    key_index_max_rows: int = 2_000_000  # a table with more rows is read without a key index
    # A key index forgets the rows deleted longer ago than this; older snapshots
    # are read without it.
    key_index_history_seconds: float = 2.0
    # Snapshots and key indexes kept for the next reads, across every table (least recently
    # read first out); a larger one is used by the read that made it and not kept.
    kept_bytes: int = 256 << 20
    max_kept_entry_bytes: int = 256 << 20
    max_kept_entries: int = 8192
    # A table nobody read for this long is unsubscribed and its state dropped (the next read
    # subscribes again); checked every idle_check_seconds.
    unsubscribe_idle_seconds: float = 600.0
    idle_check_seconds: float = 10.0
    max_unfollowed_tables: int = 65_536  # tables remembered as unfollowed (a TN's own reads)
    # Objects a merge replaced (and tombstones a compaction removed) are forgotten this long
    # after it, as the TN deletes their files then.
    replaced_retention_seconds: float = 3600.0

    @property
    def key_index_history_ns(self) -> int:
        return int(self.key_index_history_seconds * 1_000_000_000)

    def __post_init__(self) -> None:
        rules = {
            "0 < max_cached_object_bytes <= cache_bytes": (
                0 < self.max_cached_object_bytes <= self.cache_bytes
            ),
            "key_index_max_rows >= 0": self.key_index_max_rows >= 0,
            "key_index_history_seconds > 0": self.key_index_history_seconds > 0,
            "0 <= max_kept_entry_bytes <= kept_bytes": (
                0 <= self.max_kept_entry_bytes <= self.kept_bytes
            ),
            "max_kept_entries > 0": self.max_kept_entries > 0,
            "0 < idle_check_seconds <= unsubscribe_idle_seconds (inf: never)": (
                0 < self.idle_check_seconds <= self.unsubscribe_idle_seconds
            ),
            "max_unfollowed_tables > 0": self.max_unfollowed_tables > 0,
            "replaced_retention_seconds > 0": self.replaced_retention_seconds > 0,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        assert not broken, f"ComputeLimits break: {', '.join(broken)}"

    @classmethod
    def from_config(cls, config) -> ComputeLimits:
        cache = config["cn_cache_bytes"]
        kept = config["cn_snapshot_cache_bytes"]
        idle = float(config["cn_unsubscribe_idle_second"]) or math.inf  # 0: never
        return cls(
            cache_bytes=cache,
            max_cached_object_bytes=max(1, min(cache, 64 << 20)),
            key_index_max_rows=config["cn_key_index_max_rows"],
            key_index_history_seconds=config["cn_key_index_history_second"],
            kept_bytes=kept,
            max_kept_entry_bytes=kept,
            unsubscribe_idle_seconds=idle,
            idle_check_seconds=min(max(idle / 4, 0.05), 10.0, idle),
            replaced_retention_seconds=config["merged_object_retention_second"],
        )
