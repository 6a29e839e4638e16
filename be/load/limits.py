"""Every bound of a backend's loads, checked against each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoadLimits:
    max_body_bytes: int = 10 << 30  # one load's body (Doris's streaming_load_max_mb)
    read_block_bytes: int = 4 << 20  # CSV/JSON bytes parsed at once
    max_line_bytes: int = 1 << 20  # one JSON line
    max_json_bytes: int = 100 << 20  # a JSON body read whole (Doris's streaming_load_json_max_mb)
    object_rows: int = 1_000_000  # rows of one tablet written as one object
    max_buffered_bytes: int = 128 << 20  # rows waiting for their object, all tablets together
    row_id_rows: int = 1 << 16  # the fewest row ids asked of the TN at once
    max_open_loads: int = 16  # loads running at once on this backend
    max_precommitted: int = 64  # two-phase loads waiting for commit or abort
    precommit_timeout_seconds: float = 3600.0  # then aborted
    token_ttl_seconds: float = 300.0  # a redirect's token is good this long
    max_token_bytes: int = 64 << 10  # the token (it carries the table's schema)
    max_error_rows: int = 1000  # bad rows kept for the ErrorURL
    max_error_logs: int = 256  # error logs kept (the oldest go)
    auto_partition_timeout_seconds: float = 30.0  # an FE asked for a load's auto partitions

    def __post_init__(self) -> None:
        rules = {
            "0 < read_block_bytes <= max_body_bytes": 0
            < self.read_block_bytes
            <= self.max_body_bytes,
            "0 < max_line_bytes": 0 < self.max_line_bytes,
            "0 < max_json_bytes": 0 < self.max_json_bytes,
            "0 < object_rows": 0 < self.object_rows,
            "max_buffered_bytes > 0": self.max_buffered_bytes > 0,
            "0 < row_id_rows <= 1_000_000": 0 < self.row_id_rows <= 1_000_000,
            "max_open_loads > 0 and max_precommitted > 0": (
                self.max_open_loads > 0 and self.max_precommitted > 0
            ),
            "precommit_timeout_seconds > 0": self.precommit_timeout_seconds > 0,
            "0 < token_ttl_seconds <= precommit_timeout_seconds": (
                0 < self.token_ttl_seconds <= self.precommit_timeout_seconds
            ),
            "max_token_bytes >= 1024": self.max_token_bytes >= 1024,
            "auto_partition_timeout_seconds > 0": self.auto_partition_timeout_seconds > 0,
            "max_error_rows >= 0 and max_error_logs > 0": (
                self.max_error_rows >= 0 and self.max_error_logs > 0
            ),
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        assert not broken, f"LoadLimits break: {', '.join(broken)}"

    @classmethod
    def from_config(cls, config) -> LoadLimits:
        return cls(
            max_body_bytes=config["streaming_load_max_mb"] << 20,
            max_json_bytes=config["streaming_load_json_max_mb"] << 20,
            max_open_loads=config["stream_load_max_running"],
            precommit_timeout_seconds=config["stream_load_precommit_timeout_second"],
            token_ttl_seconds=config["stream_load_token_ttl_second"],
        )
