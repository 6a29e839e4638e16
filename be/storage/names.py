"""Object names: `t<table>/p<partition>/<tablet>/<ts>-<seq>.<kind>.parquet`.

Per tablet, so that a tablet's objects list together and a dropped tablet's go with one prefix;
the timestamp and sequence are zero-padded, so names sort in the order they were written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("data", "tomb")  # rows (blocks); tombstones (deleted row ids)
TS_DIGITS = 20  # a non-negative int64 has at most 19 digits
SEQ_DIGITS = 6
MAX_SEQ = 10**SEQ_DIGITS - 1
_PATTERN = re.compile(
    rf"t(\d+)/p(\d+)/(\d+)/(\d{{{TS_DIGITS}}})-(\d{{{SEQ_DIGITS}}})\.({'|'.join(KINDS)})\.parquet"
)


@dataclass(frozen=True, slots=True)
class Tablet:
    """Where a tablet sits in the catalog: its objects' names start with its prefix."""

    table_id: int
    partition_id: int
    tablet_id: int

    def __post_init__(self) -> None:
        assert min(self.table_id, self.partition_id, self.tablet_id) > 0, self

    @property
    def prefix(self) -> str:
        return f"t{self.table_id}/p{self.partition_id}/{self.tablet_id}/"

    def object_name(self, ts: int, seq: int = 0, kind: str = "data") -> ObjectName:
        return ObjectName(self.table_id, self.partition_id, self.tablet_id, ts, seq, kind)


@dataclass(frozen=True, slots=True)
class ObjectName:
    table_id: int
    partition_id: int
    tablet_id: int
    ts: int
    seq: int = 0
    kind: str = "data"

    def __post_init__(self) -> None:
        assert min(self.table_id, self.partition_id, self.tablet_id) > 0, self
        assert 0 < self.ts < 1 << 63, self
        assert 0 <= self.seq <= MAX_SEQ, self
        assert self.kind in KINDS, self

    def __str__(self) -> str:
        return (
            f"{self.tablet.prefix}"
            f"{self.ts:0{TS_DIGITS}d}-{self.seq:0{SEQ_DIGITS}d}.{self.kind}.parquet"
        )

    @property
    def tablet(self) -> Tablet:
        return Tablet(self.table_id, self.partition_id, self.tablet_id)

    @classmethod
    def parse(cls, text: str) -> ObjectName:
        match = _PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(f"not a Quire object name: {text!r}")
        *numbers, kind = match.groups()
        return cls(*map(int, numbers), kind=kind)
