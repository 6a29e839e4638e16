"""Every bound of a CN, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ComputeLimits:
    cache_bytes: int = 256 << 20  # decoded objects and tombstones kept for the next snapshot
    max_cached_object_bytes: int = 64 << 20  # a larger decoded object is read, never cached
    key_index_max_rows: int = 2_000_000  # a table with more rows is read without a key index

    def __post_init__(self) -> None:
        rules = {
            "0 < max_cached_object_bytes <= cache_bytes": (
                0 < self.max_cached_object_bytes <= self.cache_bytes
            ),
            "key_index_max_rows >= 0": self.key_index_max_rows >= 0,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        assert not broken, f"ComputeLimits break: {', '.join(broken)}"

    @classmethod
    def from_config(cls, config) -> ComputeLimits:
        cache = config["cn_cache_bytes"]
        return cls(
            cache_bytes=cache,
            max_cached_object_bytes=max(1, min(cache, 64 << 20)),
            key_index_max_rows=config["cn_key_index_max_rows"],
        )
