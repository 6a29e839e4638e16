"""What both ends of a logtail stream share: length-prefixed frames of logtail messages over an
asyncio stream, and the handshake's proofs of the cluster token.

The handshake: the TN sends a Challenge (a random nonce); the CN answers Auth (its name, a nonce of
its own, and an HMAC of both nonces under the token); the TN checks it and answers Welcome (an HMAC
the other way round), so neither end talks to a stranger. Until the CN is authenticated the TN reads
no frame over `max_unauthenticated_message_bytes`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import struct

from be.logtail.errors import LogtailFormatError
from be.logtail.format import NONCE_BYTES, Message, decode, encode
from be.logtail.limits import LogtailLimits

FRAME_HEADER = struct.Struct(">I")


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def _token_bytes(token: str | bytes) -> bytes:
    return token.encode() if isinstance(token, str) else token


def client_proof(token: str | bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(
        _token_bytes(token), b"quire logtail cn" + server_nonce + client_nonce, hashlib.sha256
    ).digest()


def server_proof(token: str | bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    return hmac.new(
        _token_bytes(token), b"quire logtail tn" + client_nonce + server_nonce, hashlib.sha256
    ).digest()


def proofs_match(expected: bytes, given: bytes) -> bool:
    return hmac.compare_digest(expected, given)


def frame(payload: bytes) -> tuple[bytes, bytes]:
    """A message's frame as two pieces for writelines: no copy of the payload."""
    return FRAME_HEADER.pack(len(payload)), payload


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes:
    """One frame's payload; a header announcing more than max_bytes is refused before any read."""
    header = await reader.readexactly(FRAME_HEADER.size)
    (length,) = FRAME_HEADER.unpack(header)
    if length > max_bytes:
        raise LogtailFormatError(f"a {length}-byte frame is over the {max_bytes}-byte limit")
    return await reader.readexactly(length)


async def read_message(
    reader: asyncio.StreamReader, limits: LogtailLimits, authenticated: bool
) -> Message:
    limit = limits.max_message_bytes if authenticated else limits.max_unauthenticated_message_bytes
    return decode(await read_frame(reader, limit), limits)


def write_message(writer: asyncio.StreamWriter, message: Message, limits: LogtailLimits) -> None:
    writer.writelines(frame(encode(message, limits)))
