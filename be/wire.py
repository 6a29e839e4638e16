"""What the logtail format and the node service share on the wire: the envelope of a message (a
format version, a CRC-32 of the body, the body as msgpack, its first field the message's kind),
strict readers of the decoded fields, and Arrow tables as IPC streams. Each raises the format's
own error."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Collection
from typing import Any

import msgpack
import pyarrow as pa

_HEADER = struct.Struct(">BI")  # version, CRC-32 of the body
_IPC_OPTIONS = pa.ipc.IpcWriteOptions()  # given: Arrow's default reads the environment per writer


def arrow_stream(table: pa.Table) -> pa.Buffer:
    """A table as one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue()


class Envelope:
    def __init__(self, name: str, error: type[Exception], version: int, readable: Collection[int]):
        assert version in readable
        self.name = name  # "logtail", "service": what messages call the format
        self.error = error
        self.version = version
        self.readable = readable

    def seal(self, fields: list, max_bytes: int) -> bytes:
        body = msgpack.packb(fields, use_bin_type=True)
        if len(body) + _HEADER.size > max_bytes:
            raise self.error(
                f"a {len(body) + _HEADER.size}-byte message is over max_message_bytes ({max_bytes})"
            )
        return _HEADER.pack(self.version, zlib.crc32(body)) + body

    def open(self, data: bytes | memoryview, max_bytes: int) -> tuple[int, tuple]:
        """(its format version, its fields: a kind number first)."""
        if len(data) > max_bytes:
            raise self.error(f"a {len(data)}-byte message is over max_message_bytes")
        if len(data) < _HEADER.size:
            raise self.error(f"a {len(data)}-byte message is shorter than its header")
        version, checksum = _HEADER.unpack_from(data)
        if version not in self.readable:
            raise self.error(f"{self.name} format version {version} is not one this build reads")
        body = memoryview(data)[_HEADER.size :]
        if zlib.crc32(body) != checksum:
            raise self.error(f"{self.name} message checksum mismatch")
        try:
            fields = msgpack.unpackb(body, use_list=False, raw=False, strict_map_key=True)
        except (ValueError, msgpack.UnpackException) as error:
            raise self.error(f"malformed {self.name} message: {error}") from None
        if type(fields) is not tuple or not fields or type(fields[0]) is not int:
            raise self.error(f"malformed {self.name} message: {fields!r:.200}")
        return version, fields


class FieldReader:
    def __init__(self, error: type[Exception]):
        self.error = error

    def shape(self, value: Any, length: int, what: str) -> tuple:
        if type(value) is not tuple or len(value) != length:
            raise self.error(f"malformed {what}: expected {length} fields, got {value!r:.100}")
        return value

    def items(self, value: Any, most: int, what: str) -> tuple:
        """A list of at most `most` items (each read by the caller)."""
        if type(value) is not tuple or len(value) > most:
            raise self.error(f"malformed {what}: a list of at most {most} expected")
        return value

    def integer(self, value: Any, what: str, minimum: int = 0) -> int:
        if type(value) is not int or value < minimum or value >= 1 << 63:
            raise self.error(f"malformed {what}: {value!r:.100}")
        return value

    def bytes(self, value: Any, what: str, length: int | None = None) -> bytes:
        if type(value) is not bytes or (length is not None and len(value) != length):
            raise self.error(f"malformed {what}")
        return value

    def text(self, value: Any, what: str, max_chars: int) -> str:
        if type(value) is not str or len(value) > max_chars:
            raise self.error(f"malformed {what}: {value!r:.100}")
        return value
