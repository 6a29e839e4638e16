"""A client's socket as an asyncio Protocol: what arrives is kept in one bytearray, from which the
packet layer takes whole packets without a wait when they are there; what is sent goes out with one
transport write. It serves as both the reader and the writer of a PacketStream (and of TlsChannel).
"""

from __future__ import annotations

import asyncio
import os
import socket

READ_AHEAD_BYTES = 64 * 1024  # past this much unread data the socket is not read until it is taken
COPY_ONCE_BYTES = 4096  # a longer packet is copied out through a view: once, not twice


class ClientSocket(asyncio.Protocol):
    def __init__(self, on_connect):
        self._on_connect = on_connect  # called with this protocol once the transport is there
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self._eof = False
        self._lost = False
        self._closing = False  # close() was called (the transport's own is_closing() is slower)
        self._reading_paused = False
        self._writing_paused = False
        self._data_waiter: asyncio.Future | None = None
        self._drain_waiter: asyncio.Future | None = None
        self._closed: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1  # the socket's descriptor, written to directly while nothing is queued

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's are no asyncio.Transport, but behave as one
        # Kept: asyncio.get_running_loop() makes a getpid() system call each time (Python 3.11).
        self._loop = asyncio.get_running_loop()
        raw = transport.get_extra_info("socket")
        if raw is not None and raw.family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
            self._fd = raw.fileno()
        self._closed = self._loop.create_future()
        self._on_connect(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > READ_AHEAD_BYTES and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        return True  # a half-closed client still gets what it asked for

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = self._lost = True
        self._wake_reader()
        waiter = self._drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("Connection lost"))
        self._drain_waiter = None
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        waiter = self._drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self._drain_waiter = None

    # Reading

    def _wake_reader(self) -> None:
        waiter = self._data_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self._data_waiter = None

    async def wait_for_data(self) -> None:
        """Until more bytes (or the end) arrive; reading resumes if it was paused."""
        assert self._data_waiter is None, "one reader at a time"
        if self._eof:
            return
        if self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()
        self._data_waiter = self._loop.create_future()
        try:
            await self._data_waiter
        finally:
            self._data_waiter = None

    @property
    def eof(self) -> bool:
        return self._eof

    def taken(self, n: int, skip: int = 0) -> bytes:
        """The first n buffered bytes but the first `skip`, all n removed from the buffer."""
        buffer = self.buffer
        if n - skip > COPY_ONCE_BYTES:
            with memoryview(buffer) as view:  # released before the buffer shrinks
                data = bytes(view[skip:n])
        else:
            data = bytes(buffer[skip:n])
        del buffer[:n]
        if self._reading_paused and len(buffer) <= READ_AHEAD_BYTES:
            self._reading_paused = False
            self.transport.resume_reading()
        return data

    async def readexactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if self._eof:
                raise asyncio.IncompleteReadError(bytes(self.buffer), n)
            await self.wait_for_data()
        return self.taken(n)

    async def read(self, n: int) -> bytes:
        """Up to n bytes, b"" at the end."""
        if not self.buffer:
            await self.wait_for_data()
        return self.taken(min(n, len(self.buffer)))

    def at_eof(self) -> bool:
        return self._eof and not self.buffer

    # Writing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """One write(2) of the descriptor while the transport holds nothing unsent: the system
        call lets other threads run (uvloop's own holds the interpreter); what it did not take,
        or an error, goes to the transport, which queues or reports it."""
        transport = self.transport
        if self._fd >= 0 and not self._lost and not transport.get_write_buffer_size():
            try:
                sent = os.write(self._fd, data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._fd = -1  # the transport meets the error again and closes
                sent = 0
            if sent == len(data):
                return
            if sent:
                data = memoryview(data)[sent:]
        transport.write(data)

    @property
    def must_drain(self) -> bool:
        """Whether drain() would wait or fail (else it returns at once)."""
        return self._writing_paused or self._lost or self._closing

    async def drain(self) -> None:
        if self._lost or self.transport.is_closing():
            raise ConnectionResetError("Connection lost")
        if self._writing_paused:
            if self._drain_waiter is None:
                self._drain_waiter = self._loop.create_future()
            await self._drain_waiter

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def close(self) -> None:
        self._closing = True
        self.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    def get_extra_info(self, name: str, default=None):
        return self.transport.get_extra_info(name, default)
