"""What frontends send each other over HTTP: a forwarded statement and its answer, a KILL of a
connection another FE owns, a configuration change for every FE, their answer, a joined FE's port
report.

Each message is a JSON object with a "version" and exactly its fields, each of one type; the
receiver refuses any other shape with MessageError (a 400), as the journal codec refuses a
malformed entry. A new field means a new version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, Self

from metadata.codec import MAX_REQUEST_ID_CHARS

MESSAGE_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a forwarded statement is at most a max_allowed_packet


class MessageError(ValueError):
    """A body that is not a message of this version."""


class Message:
    """A dataclass whose fields are str, int, bool, str | None or dict[str, object]."""

    def to_json(self) -> dict[str, Any]:
        return {"version": MESSAGE_VERSION, **asdict(self)}  # type: ignore[call-overload]

    @classmethod
    def from_json(cls, body: Any) -> Self:
        if not isinstance(body, dict) or body.get("version") != MESSAGE_VERSION:
            raise MessageError(f"not a version {MESSAGE_VERSION} {cls.__name__}")
        declared = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
        if set(body) != {"version", *declared}:
            raise MessageError(f"a {cls.__name__} has the fields {sorted(declared)}")
        for name, declaration in declared.items():
            if not _has_type(body[name], declaration.type):
                raise MessageError(f"{cls.__name__}.{name} is not {declaration.type}")
        values = {name: body[name] for name in declared}
        try:
            return cls(**values)
        except (AssertionError, ValueError) as error:
            raise MessageError(f"bad {cls.__name__}: {error}") from None

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        if len(data) > MAX_MESSAGE_BYTES:
            raise MessageError(f"a message holds at most {MAX_MESSAGE_BYTES} bytes")
        try:
            return cls.from_json(json.loads(data))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise MessageError(f"not JSON: {error}") from None


def _has_type(value: Any, declared: str) -> bool:
    match declared:
        case "str":
            return type(value) is str
        case "int":
            return type(value) is int
        case "bool":
            return type(value) is bool
        case "str | None":
            return value is None or type(value) is str
        case "dict[str, object]":  # of JSON scalars
            return isinstance(value, dict) and all(
                type(k) is str and (v is None or type(v) in (str, int, float, bool))
                for k, v in value.items()
            )
    raise AssertionError(f"no check for fields of type {declared}")


@dataclass(frozen=True)
class ForwardRequest(Message):
    """A statement a non-leader sends the leader, with the session's context. The request id
    goes into the statement's journal entry: a second try of it is answered, not run."""

    request_id: str
    sql: str
    user: str
    user_host: str
    database: str | None
    variables: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 < len(self.request_id) <= MAX_REQUEST_ID_CHARS:
            raise ValueError(f"a request id has 1 to {MAX_REQUEST_ID_CHARS} characters")


class ForwardOutcome(StrEnum):
    DONE = "done"  # journaled up to journal_id
    REFUSED = "refused"  # the MySQL error code, message and SQLSTATE
    NOT_LEADER = "not_leader"  # ask the new leader


@dataclass(frozen=True)
class ForwardAnswer(Message):
    outcome: str
    journal_id: int = 0
    affected_rows: int = 0
    info: str = ""
    code: int = 0
    message: str = ""
    sqlstate: str | None = None

    def __post_init__(self) -> None:
        ForwardOutcome(self.outcome)  # ValueError if it is none


@dataclass(frozen=True)
class KillRequest(Message):
    connection_id: int
    query_only: bool
    user: str
    is_admin: bool


@dataclass(frozen=True)
class ConfigRequest(Message):
    """ADMIN SET ALL FRONTENDS CONFIG's settings (name -> value as written), for one other FE."""

    settings: dict[str, object]


@dataclass(frozen=True)
class PeerAnswer(Message):
    """Another FE's answer to a KillRequest or a ConfigRequest."""

    code: int = 0  # 0: done; else the MySQL error that FE answered
    message: str = ""


@dataclass(frozen=True)
class PortsReport(Message):
    """A joined FE tells the leader its HTTP and query ports, to be journaled."""

    name: str
    http_port: int
    query_port: int
