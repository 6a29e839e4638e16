"""Every bound and timeout of the logservice, checked against each other."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from be.config import Config
from be.logservice.lsn import MAX_RECORDS_PER_ENTRY
from metadata.journal.limits import JournalLimits

# What msgpack adds around one append's records: a version byte, the entry's array, its kind, the
# records' array header (at most 1 + 1 + 1 + 5 bytes) and each record's bin header (at most 5).
APPEND_FRAMING_BYTES = 16
RECORD_FRAMING_BYTES = 5


def _journal_limits() -> JournalLimits:
    return JournalLimits(max_payload_bytes=(4 << 20) + (64 << 10))


@dataclass(frozen=True)
class LogLimits:
    max_record_bytes: int = 1 << 20
    max_records_per_append: int = 4096
    max_append_bytes: int = 4 << 20  # the records of one append together
    max_read_bytes: int = 64 << 20  # the largest max_bytes a read may ask for
    max_groups_in_flight: int = 2  # group appends committing at once; later ones gather records
    max_groups_waiting: int = 64  # groups gathering or full, waiting for one in flight to settle
    append_timeout: float = 10.0  # the longest an append waits for its commit
    truncate_interval: float = 10.0  # how often the truncation worker runs
    # Entries below the applied index a replica never drops, so that a follower a little behind
    # catches up from the leader's log instead of needing the leader's state.
    truncate_keep_entries: int = 1000
    tso_window_ns: int = 1_000_000_000  # timestamps reserved ahead by one log write
    tso_max_count: int = 1 << 20  # timestamps one call may take
    journal: JournalLimits = field(default_factory=_journal_limits)

    def __post_init__(self) -> None:
        largest_entry = (
            self.max_append_bytes
            + APPEND_FRAMING_BYTES
            + RECORD_FRAMING_BYTES * self.max_records_per_append
        )
        rules = {
            "0 < max_record_bytes <= max_append_bytes": (
                0 < self.max_record_bytes <= self.max_append_bytes
            ),
            "0 < max_records_per_append <= 65536": (
                0 < self.max_records_per_append <= MAX_RECORDS_PER_ENTRY
            ),
            "journal.max_payload_bytes >= the largest append's entry": (
                self.journal.max_payload_bytes >= largest_entry
            ),
            "max_read_bytes >= max_record_bytes": self.max_read_bytes >= self.max_record_bytes,
            "0 < max_groups_in_flight <= journal.max_pending_submissions": (
                0 < self.max_groups_in_flight <= self.journal.max_pending_submissions
            ),
            "max_groups_waiting > 0": self.max_groups_waiting > 0,
            "append_timeout > 0": self.append_timeout > 0,
            "truncate_interval > 0": self.truncate_interval > 0,
            "truncate_keep_entries >= 0": self.truncate_keep_entries >= 0,
            "tso_window_ns >= 1 ms": self.tso_window_ns >= 1_000_000,
            "0 < tso_max_count <= tso_window_ns": 0 < self.tso_max_count <= self.tso_window_ns,
        }
        broken = [rule for rule, holds in rules.items() if not holds]
        if broken:
            raise ValueError(f"logservice limits must satisfy: {', '.join(broken)}")

    @classmethod
    def from_config(cls, config: Config) -> LogLimits:
        """The limits be.conf sets; the others keep their defaults."""
        max_record_bytes = config["logservice_max_record_bytes"]
        max_append_bytes = max(cls.max_append_bytes, max_record_bytes)
        largest_entry = (
            max_append_bytes
            + APPEND_FRAMING_BYTES
            + RECORD_FRAMING_BYTES * cls.max_records_per_append
        )
        payload = max(_journal_limits().max_payload_bytes, largest_entry)
        return cls(
            max_record_bytes=max_record_bytes,
            max_append_bytes=max_append_bytes,
            max_read_bytes=max(cls.max_read_bytes, max_record_bytes),
            append_timeout=config["logservice_append_timeout_ms"] / 1000,
            truncate_interval=config["logservice_truncate_interval_second"],
            truncate_keep_entries=config["logservice_truncate_keep_entries"],
            tso_window_ns=config["tso_window_millisecond"] * 1_000_000,
            journal=JournalLimits(
                max_payload_bytes=payload,
                max_frame_bytes=max(JournalLimits.max_frame_bytes, 8 * payload),
            ),
        )

    def journal_options(self) -> dict[str, float | int]:
        """The journal's limits as ReplicatedJournal takes them."""
        return dataclasses.asdict(self.journal)
