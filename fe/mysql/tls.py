"""A connection's switch to TLS after the client's SSL request, over the streams it already has.

The event loop's start_tls cannot be used: the client sends its TLS hello right behind the SSL
request, so the stream reader may already hold those bytes, and start_tls would never see them.
Here the ssl module works on memory buffers fed from the same reader, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import ssl

from fe.mysql.transport import ClientSocket

READ_BYTES = 64 * 1024


class TlsChannel:
    """A reader and writer pair (readexactly, write, drain, close, ...) that speaks TLS."""

    def __init__(
        self,
        reader: ClientSocket,
        writer: ClientSocket,
        context: ssl.SSLContext,
    ):
        self._reader = reader
        self._writer = writer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.ssl_object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._plain = bytearray()

    async def handshake(self) -> None:
        while True:
            try:
                self.ssl_object.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._exchange()
        self._send_outgoing()
        await self._writer.drain()

    async def _exchange(self) -> None:
        """Send what TLS has to say, then wait for the peer's next bytes."""
        self._send_outgoing()
        data = await self._reader.read(READ_BYTES)
        if not data:
            raise ConnectionResetError("the client closed the connection during TLS")
        self._incoming.write(data)

    def _send_outgoing(self) -> None:
        pending = self._outgoing.read()
        if pending:
            self._writer.write(pending)

    # What PacketStream uses of a reader and a writer.

    async def readexactly(self, n: int) -> bytes:
        plain = self._plain
        while len(plain) < n:
            try:
                plain += self.ssl_object.read(READ_BYTES)
            except ssl.SSLWantReadError:
                try:
                    await self._exchange()
                except ConnectionResetError:
                    raise asyncio.IncompleteReadError(bytes(plain), n) from None
            except (ssl.SSLZeroReturnError, ssl.SSLError) as error:
                raise ConnectionResetError(f"TLS: {error}") from None
        data = bytes(plain[:n])
        del plain[:n]
        return data

    def at_eof(self) -> bool:
        return not self._plain and not self._incoming.pending and self._reader.at_eof()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.ssl_object.write(data)
        self._send_outgoing()

    async def drain(self) -> None:
        await self._writer.drain()

    def is_closing(self) -> bool:
        return self._writer.is_closing()

    def close(self) -> None:
        self._writer.close()

    async def wait_closed(self) -> None:
        await self._writer.wait_closed()

    def get_extra_info(self, name: str, default=None):
        if name == "ssl_object":
            return self.ssl_object
        return self._writer.get_extra_info(name, default)
