"""Every bound of object storage and the block format, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass

COMPRESSIONS = ("ZSTD", "LZ4", "SNAPPY", "NONE")
MAX_COMPACTION_OBJECTS = 4096  # objects one compaction commit names, whatever the conf says


@dataclass(frozen=True)
class StorageLimits:
    block_rows: int = 8192  # rows of a block (a Parquet row group), as MatrixOne's
    max_object_rows: int = 8192 * 1024  # rows of one object (a flush or a merge)
    max_object_bytes: int = 512 << 20  # bytes of one object, written or read
    max_footer_bytes: int = 16 << 20  # a Parquet footer larger than this is refused as corrupt
    max_list_objects: int = 1_000_000  # names one listing returns
    compression: str = "ZSTD"
    # A column chunk whose dictionary passes this many bytes goes on plain (a column of mostly
    # distinct values is not worth a dictionary: it costs encoding time and bytes).
    dictionary_page_bytes: int = 16 << 10
    # Merge policy: a tablet's objects under merge_small_object_bytes are merged once there are
    # merge_min_objects of them; one merge takes at most merge_max_objects and merge_max_bytes.
    merge_small_object_bytes: int = 16 << 20
    merge_min_objects: int = 8
    merge_max_objects: int = 64
    merge_max_bytes: int = 256 << 20
    # Tombstone compaction: a tablet's objects are rewritten without the rows its tombstones
    # deleted before the oldest readable snapshot once it has tombstone_compaction_min_objects
    # such tombstone objects, or once they delete tombstone_compaction_deleted_ratio of its rows;
    # one compaction rewrites and removes at most tombstone_compaction_max_objects objects (data
    # and tombstones together) and reads at most merge_max_bytes of data objects.
    tombstone_compaction_min_objects: int = 16
    tombstone_compaction_deleted_ratio: float = 0.2
    tombstone_compaction_max_objects: int = 256

    def __post_init__(self) -> None:
        rules = {
            "block_rows > 0": self.block_rows > 0,
            "max_object_rows is a positive multiple of block_rows": (
                self.max_object_rows > 0 and self.max_object_rows % self.block_rows == 0
            ),
            "0 < max_footer_bytes <= max_object_bytes": (
                0 < self.max_footer_bytes <= self.max_object_bytes
            ),
            "max_list_objects > 0": self.max_list_objects > 0,
            f"compression in {COMPRESSIONS}": self.compression in COMPRESSIONS,
            "dictionary_page_bytes > 0": self.dictionary_page_bytes > 0,
            "2 <= merge_min_objects <= merge_max_objects": (
                2 <= self.merge_min_objects <= self.merge_max_objects
            ),
            "merge_small_object_bytes > 0": self.merge_small_object_bytes > 0,
            "merge_min_objects * merge_small_object_bytes <= merge_max_bytes": (
                self.merge_min_objects * self.merge_small_object_bytes <= self.merge_max_bytes
            ),
            "merge_max_bytes <= max_object_bytes": self.merge_max_bytes <= self.max_object_bytes,
            "1 <= tombstone_compaction_min_objects < tombstone_compaction_max_objects": (
                1 <= self.tombstone_compaction_min_objects < self.tombstone_compaction_max_objects
            ),
            "0 < tombstone_compaction_deleted_ratio <= 1": (
                0 < self.tombstone_compaction_deleted_ratio <= 1
            ),
            f"tombstone_compaction_max_objects <= {MAX_COMPACTION_OBJECTS}": (
                self.tombstone_compaction_max_objects <= MAX_COMPACTION_OBJECTS
            ),
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"storage limits must satisfy: {', '.join(broken)}")

    @property
    def max_blocks(self) -> int:
        return self.max_object_rows // self.block_rows

    @classmethod
    def from_config(cls, config) -> StorageLimits:
        """The limits an operator set in be.conf."""
        return cls(
            block_rows=config["block_rows"],
            max_object_rows=config["max_object_rows"],
            max_object_bytes=config["max_object_bytes"],
            compression=config["block_compression"],
            dictionary_page_bytes=config["block_dictionary_bytes"],
            merge_small_object_bytes=config["merge_small_object_bytes"],
            merge_min_objects=config["merge_min_objects"],
            merge_max_objects=config["merge_max_objects"],
            merge_max_bytes=config["merge_max_bytes"],
            tombstone_compaction_min_objects=config["tombstone_compaction_min_objects"],
            tombstone_compaction_deleted_ratio=config["tombstone_compaction_deleted_percent"] / 100,
            tombstone_compaction_max_objects=config["tombstone_compaction_max_objects"],
        )
