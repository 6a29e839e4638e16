"""What Quire writes in an object's Parquet footer (key-value metadata `quire.object`), so that an
object describes itself: a bulk load or a checkpoint rebuilds its metadata from the footer alone.

Versioned and strict, as the journal codec: an unknown version, a missing or extra field, or a
value of the wrong type is refused, never guessed at.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from types import SimpleNamespace

from be.storage.names import KINDS

FOOTER_KEY = b"quire.object"
FORMAT_VERSION = 1
MAX_FOOTER_TEXT = 4096


class FooterError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Footer:
    kind: str  # names.KINDS
    table_id: int
    partition_id: int
    tablet_id: int
    schema_version: int  # 0 for tombstones, which have no user columns
    ts: int  # data: the flush timestamp; tombstones: the newest delete timestamp

    def __post_init__(self) -> None:
        assert not self.problems(), self.problems()

    def problems(self) -> list[str]:
        found = [] if self.kind in KINDS else [f"kind {self.kind!r} is not one of {KINDS}"]
        if min(self.table_id, self.partition_id, self.tablet_id, self.ts) <= 0:
            found.append("ids and timestamp must be positive")
        if self.schema_version < 0:
            found.append("schema_version must not be negative")
        return found

    def encode(self) -> dict[bytes, bytes]:
        body = {"format": FORMAT_VERSION, **asdict(self)}
        return {FOOTER_KEY: json.dumps(body, separators=(",", ":")).encode()}

    @classmethod
    def decode(cls, metadata: dict[bytes, bytes] | None) -> Footer:
        raw = (metadata or {}).get(FOOTER_KEY)
        if raw is None:
            raise FooterError("no Quire footer: not an object Quire wrote")
        if len(raw) > MAX_FOOTER_TEXT:
            raise FooterError(f"a Quire footer of {len(raw)} bytes is too long")
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise FooterError(f"unreadable Quire footer: {error}") from None
        if not isinstance(body, dict) or body.pop("format", None) != FORMAT_VERSION:
            raise FooterError(f"Quire footer not of format version {FORMAT_VERSION}")
        fields = set(cls.__dataclass_fields__)
        if set(body) != fields:
            raise FooterError(f"Quire footer fields {sorted(body)} are not {sorted(fields)}")
        for name, value in body.items():
            wanted = str if name == "kind" else int
            if type(value) is not wanted:
                raise FooterError(f"Quire footer field {name} is not a {wanted.__name__}")
        problems = cls.problems(SimpleNamespace(**body))
        if problems:
            raise FooterError(f"Quire footer: {', '.join(problems)}")
        return cls(**body)
