"""One client connection: packet framing, handshake and authentication, the command phase.

This replaces mysql-mimic's Connection and MysqlStream (whose defects are listed in
tests/test_mysql_protocol.py) while reusing its authentication plugins, identity providers and
BaseSession interface.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import enum
import hmac
import itertools
import logging
import secrets
import ssl
import struct
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from hashlib import sha1
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from mysql_mimic.auth import (
    AuthInfo,
    AuthPlugin,
    AuthState,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)
from mysql_mimic.charset import Collation
from mysql_mimic.errors import MysqlError
from mysql_mimic.session import BaseSession
from mysql_mimic.types import Capabilities, Commands, ServerStatus

from be.engine.columnar_rows import ArrowRows
from fe.mysql.binary_rows import BinaryRows
from fe.mysql.errors import ConnectionAborted, ErrorCode, QueryError, sqlstate_for
from fe.mysql.prepared import (
    MAX_PARAMS,
    MalformedPacket,
    PacketReader,
    PreparedStatement,
    parse_execute,
    parse_query_attributes,
    prepare,
    sql_literal,
)
from fe.mysql.redact import without_secrets
from fe.mysql.results import (
    NOT_NULL_FLAG,
    Column,
    Result,
    as_column,
    binary_row,
    column_definition,
    column_spec,
    lenenc_bytes,
    lenenc_int,
)
from fe.mysql.text_batches import row_payloads, text_packets
from fe.mysql.tls import TlsChannel
from fe.mysql.transport import ClientSocket

if TYPE_CHECKING:
    from fe.mysql.server import MysqlFront

logger = logging.getLogger(__name__)

CLIENT_CONNECT_WITH_DB = int(Capabilities.CLIENT_CONNECT_WITH_DB)
CLIENT_PROTOCOL_41 = int(Capabilities.CLIENT_PROTOCOL_41)
CLIENT_SECURE_CONNECTION = int(Capabilities.CLIENT_SECURE_CONNECTION)
CLIENT_PLUGIN_AUTH = int(Capabilities.CLIENT_PLUGIN_AUTH)
CLIENT_CONNECT_ATTRS = int(Capabilities.CLIENT_CONNECT_ATTRS)
CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = int(Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA)
CLIENT_DEPRECATE_EOF = int(Capabilities.CLIENT_DEPRECATE_EOF)
CLIENT_QUERY_ATTRIBUTES = int(Capabilities.CLIENT_QUERY_ATTRIBUTES)
CLIENT_SSL = int(Capabilities.CLIENT_SSL)
SERVER_STATUS_AUTOCOMMIT = int(ServerStatus.SERVER_STATUS_AUTOCOMMIT)
SERVER_STATUS_CURSOR_EXISTS = int(ServerStatus.SERVER_STATUS_CURSOR_EXISTS)
SERVER_STATUS_LAST_ROW_SENT = int(ServerStatus.SERVER_STATUS_LAST_ROW_SENT)

SERVER_CAPABILITIES = int(
    Capabilities.CLIENT_LONG_PASSWORD
    | Capabilities.CLIENT_FOUND_ROWS
    | Capabilities.CLIENT_LONG_FLAG
    | Capabilities.CLIENT_CONNECT_WITH_DB
    | Capabilities.CLIENT_ODBC
    | Capabilities.CLIENT_IGNORE_SPACE
    | Capabilities.CLIENT_PROTOCOL_41
    | Capabilities.CLIENT_INTERACTIVE
    | Capabilities.CLIENT_TRANSACTIONS
    | Capabilities.CLIENT_SECURE_CONNECTION
    | Capabilities.CLIENT_PLUGIN_AUTH
    | Capabilities.CLIENT_CONNECT_ATTRS
    | Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | Capabilities.CLIENT_DEPRECATE_EOF
    | Capabilities.CLIENT_QUERY_ATTRIBUTES
)
SERVER_COLLATION = 45  # utf8mb4_general_ci: known to every MySQL and MariaDB client

MAX_PAYLOAD = 0xFFFFFF  # a longer payload continues in the next packet
FLUSH_BYTES = 256 * 1024  # result sets are sent in pieces of about this size
ROWS_PER_BATCH = 1024
ARROW_ROWS_PER_BATCH = 8192  # rows of an Arrow answer encoded together, a column at a time
ARROW_BATCH_BYTES = 1 << 20  # and at most about this many bytes of them (as Arrow holds them)
MAX_ERROR_MESSAGE_BYTES = 512
MAX_AUTH_ROUNDS = 8
MAX_CONNECT_ATTRS = 1024
SSL_REQUEST_BYTES = 32  # capabilities, max packet size, collation, filler: nothing else

_HEADER = struct.Struct("<I")
_EOF = struct.Struct("<BHH")


class ConnectionClosed(Exception):
    """The client went away (cleanly or not)."""


class PacketTooLarge(Exception):
    pass


class PacketsOutOfOrder(Exception):
    pass


class PacketStream:
    """MySQL packet framing over an asyncio stream, with a limit on incoming payloads.

    Outgoing packets are buffered until flush(), so a whole small response costs one write.
    """

    def __init__(self, socket: ClientSocket, max_payload_bytes: int):
        assert max_payload_bytes > 0
        self.reader = self.writer = socket
        self._plain: ClientSocket | None = socket  # None once TLS stands between
        self.max_payload_bytes = max_payload_bytes
        self.seq = 0
        self.buffer = bytearray()
        self.flushed = False  # whether anything of the current response reached the socket
        self._response_seq = 0

    async def read(self) -> bytes:
        """The next payload, joined across 16 MiB continuation packets."""
        socket = self._plain
        if socket is None:
            return await self._read_joined()
        buffer = socket.buffer
        while True:
            if len(buffer) >= 4:
                value = _HEADER.unpack_from(buffer)[0]
                length = value & MAX_PAYLOAD
                if length == MAX_PAYLOAD or length > self.max_payload_bytes:
                    return await self._read_joined()
                if len(buffer) >= 4 + length:
                    seq = value >> 24
                    if seq != self.seq:
                        raise PacketsOutOfOrder(f"expected packet {self.seq}, got {seq}")
                    self.seq = (seq + 1) & 0xFF
                    self._start_response()
                    return socket.taken(4 + length, skip=4)
            if socket.eof:
                raise ConnectionClosed()
            await socket.wait_for_data()

    async def _read_joined(self) -> bytes:
        try:
            header = await self.reader.readexactly(4)
            value = _HEADER.unpack(header)[0]
            length, seq = value & MAX_PAYLOAD, value >> 24
            if seq != self.seq:
                raise PacketsOutOfOrder(f"expected packet {self.seq}, got {seq}")
            self.seq = (seq + 1) & 0xFF
            if length > self.max_payload_bytes:
                raise PacketTooLarge(length)
            payload = await self.reader.readexactly(length)
            if length < MAX_PAYLOAD:
                self._start_response()
                return payload
            parts = [payload]
            total = length
            while length == MAX_PAYLOAD:
                value = _HEADER.unpack(await self.reader.readexactly(4))[0]
                length, seq = value & MAX_PAYLOAD, value >> 24
                if seq != self.seq:
                    raise PacketsOutOfOrder(f"expected packet {self.seq}, got {seq}")
                self.seq = (seq + 1) & 0xFF
                total += length
                if total > self.max_payload_bytes:
                    raise PacketTooLarge(total)
                parts.append(await self.reader.readexactly(length))
            self._start_response()
            return b"".join(parts)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            raise ConnectionClosed() from e

    def _start_response(self) -> None:
        self._response_seq = self.seq
        self.flushed = False

    def write(self, payload: bytes) -> None:
        buffer = self.buffer
        if len(payload) < MAX_PAYLOAD:
            buffer += _HEADER.pack(len(payload) | self.seq << 24)
            buffer += payload
            self.seq = (self.seq + 1) & 0xFF
            return
        self._write_long(memoryview(payload))

    def write_packets(self, packets: bytes, count: int) -> None:
        """Packets framed before, numbered from the current sequence id on."""
        self.buffer += packets
        self.seq = (self.seq + count) & 0xFF

    def write_binary_rows(self, rows: Iterable[Sequence[Any]], encoding: BinaryRows) -> None:
        """Encode and frame binary protocol rows straight into the output buffer."""
        self.seq = encoding.append_rows(self.buffer, rows, self.seq)

    def _write_long(self, payload: memoryview) -> None:
        for start in range(0, len(payload) + 1, MAX_PAYLOAD):
            chunk = payload[start : start + MAX_PAYLOAD]
            self.buffer += _HEADER.pack(len(chunk) | self.seq << 24)
            self.buffer += chunk
            self.seq = (self.seq + 1) & 0xFF

    def write_text_rows(self, rows: Iterable[Sequence[Any]], columns: Sequence[Column]) -> None:
        """Encode and frame text protocol rows straight into the output buffer."""
        buffer = self.buffer
        seq = self.seq
        encoders = [c.text for c in columns]
        count = len(encoders)
        for row in rows:
            if len(row) != count:
                raise AssertionError(f"row of {len(row)} values for {count} columns")
            start = len(buffer)
            buffer += b"\x00\x00\x00\x00"
            for value, encode in zip(row, encoders, strict=False):  # lengths checked above
                if value is None:
                    buffer.append(0xFB)
                    continue
                data = value.encode() if type(value) is str else encode(value)
                n = len(data)
                if n < 251:
                    buffer.append(n)
                else:
                    buffer += lenenc_int(n)
                buffer += data
            length = len(buffer) - start - 4
            if length >= MAX_PAYLOAD:
                payload = bytes(buffer[start + 4 :])
                del buffer[start:]
                self.seq = seq
                self._write_long(memoryview(payload))
                seq = self.seq
                continue
            _HEADER.pack_into(buffer, start, length | seq << 24)
            seq = (seq + 1) & 0xFF
        self.seq = seq

    def write_text_columns(
        self, values: Sequence[pa.ChunkedArray], columns: Sequence[Column]
    ) -> None:
        """Encode and frame the text protocol rows of Arrow columns a column at a time."""
        packed = text_packets(values, columns, self.seq)
        if packed is None:  # a row as long as a packet can be: its payload splits
            for payload in row_payloads(values, columns):
                self.write(payload)
            return
        self.write_packets(*packed)

    def discard(self) -> bool:
        """Drop the unsent part of the current response; False if some of it was already sent."""
        self.buffer.clear()
        if self.flushed:
            return False
        self.seq = self._response_seq
        return True

    async def flush(self) -> None:
        self.send()
        await self.writer.drain()

    def send(self) -> bool:
        """The buffered packets handed to the socket: whether drain() must be awaited before
        more is written (the socket is full or gone, or TLS stands between)."""
        if self.buffer:
            self.writer.write(self.buffer)
            self.buffer = bytearray()
            self.flushed = True
        plain = self._plain
        return plain is None or plain.must_drain

    async def drain(self) -> None:
        await self.writer.drain()

    async def start_tls(self, context: ssl.SSLContext) -> None:
        """Go on over TLS (after a client's SSL request); the packet sequence carries on."""
        assert not self.buffer
        channel = TlsChannel(self.reader, self.writer, context)
        await channel.handshake()
        self.reader = self.writer = channel
        self._plain = None

    @property
    def cipher(self) -> str:
        ssl_object = self.writer.get_extra_info("ssl_object")
        return ssl_object.cipher()[0] if ssl_object is not None else ""

    async def close(self) -> None:
        if self.writer.is_closing():
            return
        try:
            if self.buffer:
                self.writer.write(self.buffer)
                self.buffer = bytearray()
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 1.0)
        except (ConnectionError, TimeoutError, OSError):
            pass


class KillKind(enum.Enum):
    QUERY = "query"
    CONNECTION = "connection"


@dataclass(frozen=True)
class ProcessInfo:
    """One row of SHOW PROCESSLIST."""

    id: int
    user: str
    host: str
    db: str | None
    command: str
    time: int
    state: str
    info: str | None


class NativePasswordPlugin(NativePasswordAuthPlugin):
    """mysql_native_password over stored hashes in MySQL's form "*" + HEX(SHA1(SHA1(password)))."""

    def verify_scramble(self, auth_string: str | None, scramble: bytes, nonce: bytes) -> bool:
        if not auth_string:
            return False
        try:
            stored = bytes.fromhex(auth_string.removeprefix("*"))
        except ValueError:
            logger.warning("stored mysql_native_password hash is not hex")
            return False
        if len(stored) != 20 or len(scramble) != 20:
            return False
        mask = sha1(nonce + stored).digest()
        sha1_password = bytes(a ^ b for a, b in zip(scramble, mask, strict=True))
        return hmac.compare_digest(sha1(sha1_password).digest(), stored)


def native_password_hash(password: str) -> str:
    """The mysql_native_password hash MySQL stores (and PASSWORD() returned): "*" + 40 hex digits."""
    return "*" + sha1(sha1(password.encode()).digest()).hexdigest().upper()


@dataclass
class HandshakeResponse:
    capabilities: int
    max_packet_size: int
    collation: int
    username: str
    auth_response: bytes
    database: str | None
    client_plugin: str | None
    connect_attrs: dict[str, str]


class AccessDenied(ConnectionAborted):
    pass


@dataclass
class Account(User):
    """A user account: `host` is the pattern of client hosts it admits ('%' for any)."""

    host: str = "%"


class Connection:
    """Serves one client from handshake to close, handing its statements to a session.

    Besides BaseSession's methods a session may define `async describe(sql) -> columns | None`:
    the result columns of a statement about to be prepared (`sql` still holds its `?` markers);
    and `async prepare_statement(sql) -> SessionPlan` with `async execute_prepared(plan, values,
    attrs) -> Result`: a statement parsed once when it is prepared (a malformed one refused then),
    each execution's typed values bound into it. A session without them is handed each execution
    as text with its values written in, and asked to `describe(sql)` at prepare.

    The identity provider's `get_user(username, host)` picks the account a client at `host` logs
    in as (an Account, or a plain User: host '%'); once the client proves it, the session's
    `username` and `user_host` name that account. A provider may also define
    `login_refusal(account, password_ok, host) -> QueryError | None`: told the outcome of every
    password check, it may refuse the login whatever the password (a blocked account).

    What a session can read from it: connection_id, user, host, codec (the client's character set
    as a Python codec), connect_attrs, front (the MysqlFront, for processlist and kill), and
    status_flags (a session may set or clear SERVER_STATUS_IN_TRANS there).
    """

    def __init__(
        self,
        front: MysqlFront,
        stream: PacketStream,
        session: BaseSession,
        connection_id: int,
        host: str,
    ):
        self.front = front
        self.stream = stream
        self.session = session
        self.connection_id = connection_id
        self.host = host
        self.identity_provider: IdentityProvider = front.identity_provider
        self.capabilities = 0
        self.deprecate_eof = False
        self.status_flags = SERVER_STATUS_AUTOCOMMIT
        self.codec = "utf-8"
        self.user = ""
        self.connect_attrs: dict[str, str] = {}
        self.prepared: dict[int, PreparedStatement] = {}
        self._stmt_ids = itertools.count(1)
        self._handshake_nonce = b""
        self._handshake_plugin = ""

        self.command = "Connect"
        self.state = "login"
        self.info: str | None = None
        self._since = time.monotonic()
        self._executing = False
        self._kill: KillKind | None = None
        self._task: asyncio.Task | None = None
        self._handlers: dict[int, Callable[[bytes], Any]] = {
            Commands.COM_QUERY: self._com_query,
            Commands.COM_STMT_PREPARE: self._com_stmt_prepare,
            Commands.COM_STMT_EXECUTE: self._com_stmt_execute,
            Commands.COM_STMT_SEND_LONG_DATA: self._com_stmt_send_long_data,
            Commands.COM_STMT_FETCH: self._com_stmt_fetch,
            Commands.COM_STMT_RESET: self._com_stmt_reset,
            Commands.COM_STMT_CLOSE: self._com_stmt_close,
            Commands.COM_PING: self._com_ping,
            Commands.COM_INIT_DB: self._com_init_db,
            Commands.COM_FIELD_LIST: self._com_field_list,
            Commands.COM_CHANGE_USER: self._com_change_user,
            Commands.COM_RESET_CONNECTION: self._com_reset_connection,
            Commands.COM_SET_OPTION: self._com_set_option,
            Commands.COM_STATISTICS: self._com_statistics,
            Commands.COM_PROCESS_KILL: self._com_process_kill,
            Commands.COM_DEBUG: self._com_ping,
        }

    # Life cycle

    async def run(self) -> None:
        self._task = asyncio.current_task()
        try:
            try:
                async with asyncio.timeout(self.front.handshake_timeout):
                    await self._connect()
            except TimeoutError:
                logger.info("connection %d: no handshake in time", self.connection_id)
                return
            except (ConnectionClosed, ConnectionAborted, ConnectionError, asyncio.CancelledError):
                raise
            except PacketsOutOfOrder as error:
                logger.info("connection %d: bad handshake: %s", self.connection_id, error)
                await self._abort(ErrorCode.NET_PACKETS_OUT_OF_ORDER, "Got packets out of order")
            except Exception:
                incident = secrets.token_hex(6)
                logger.exception(
                    "incident %s: connection %d login failed", incident, self.connection_id
                )
                await self._abort(ErrorCode.UNKNOWN_ERROR, f"Internal error (incident {incident})")
            await self._command_loop()
        except (ConnectionClosed, ConnectionAborted, ConnectionError):
            pass
        except asyncio.CancelledError:
            if self._kill is None:
                raise
        finally:
            self._executing = False
            try:
                await self.session.close()
            except Exception:
                logger.exception("connection %d: session close failed", self.connection_id)
            await self.stream.close()

    def kill(self, kind: KillKind) -> None:
        """Stop the running statement (QUERY) or the whole connection (CONNECTION)."""
        if kind == KillKind.QUERY and not self._executing:
            return
        if self._kill != KillKind.CONNECTION:
            self._kill = kind
        task = self._task
        if task is None or task.done():
            return
        if task is not asyncio.current_task():
            task.cancel()  # otherwise the session is killing its own connection: act on return

    def process_info(self, now: float) -> ProcessInfo:
        return ProcessInfo(
            id=self.connection_id,
            user=self.user,
            host=self.host,
            db=getattr(self.session, "database", None),
            command="Killed" if self._kill == KillKind.CONNECTION else self.command,
            time=int(now - self._since),
            state=self.state,
            info=without_secrets(self.info) if self.info else self.info,
        )

    def _set_idle(self) -> None:
        self.command = "Sleep"
        self.state = ""
        self.info = None
        self._since = time.monotonic()

    # Connection phase

    async def _connect(self) -> None:
        identity = self.identity_provider
        plugin = identity.get_default_plugin()
        nonce, handshake_state = await plugin.start()
        assert isinstance(nonce, bytes)
        self._handshake_nonce = nonce
        self._handshake_plugin = plugin.name
        self.stream.write(self._handshake(nonce, plugin.name))
        await self.stream.flush()

        try:
            payload = await self.stream.read()
            if self._is_ssl_request(payload):
                await self.stream.start_tls(self.front.ssl_context)
                payload = await self.stream.read()
            response = self._parse_handshake_response(payload)
        except (MalformedPacket, ValueError, ssl.SSLError) as e:
            logger.info("connection %d: bad handshake: %s", self.connection_id, e)
            await self._abort(ErrorCode.HANDSHAKE_ERROR, "Bad handshake")
        if not self.stream.cipher and self.front.secure_transport_required():
            await self._abort(
                ErrorCode.SECURE_TRANSPORT_REQUIRED,
                "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
            )
        self.capabilities = response.capabilities
        self.deprecate_eof = bool(response.capabilities & CLIENT_DEPRECATE_EOF)
        self.codec = _client_codec(response.collation)
        self.connect_attrs = response.connect_attrs

        user = await self._authenticate(
            response.username,
            response.auth_response,
            response.client_plugin,
            handshake=(plugin, handshake_state),
        )
        self._log_in_as(user)
        try:
            await self.session.init(self)
        except QueryError as e:
            await self._abort(e.code, e.message, e.sqlstate)
        if response.database:
            try:
                await self.session.use(response.database)
            except QueryError as e:
                await self._abort(e.code, e.message, e.sqlstate)
        self._write_ok()
        await self.stream.flush()
        logger.debug("connection %d: %s@%s logged in", self.connection_id, self.user, self.host)

    def _log_in_as(self, account: User) -> None:
        self.user = account.name
        self.session.username = account.name
        self.session.user_host = getattr(account, "host", "%")

    def _handshake(self, nonce: bytes, plugin_name: str) -> bytes:
        """Initial Handshake v10; `nonce` is the plugin's data (20 bytes and a NUL for native)."""
        capabilities = self._server_capabilities
        first, second = nonce[:8].ljust(8, b"\x00"), nonce[8:].ljust(13, b"\x00")
        flags = struct.pack(
            "<HBHHB",
            capabilities & 0xFFFF,
            SERVER_COLLATION,
            self.status_flags,
            capabilities >> 16,
            len(first) + len(second),
        )
        return b"".join(
            [
                b"\x0a",
                self.front.server_version.encode() + b"\x00",
                struct.pack("<I", self.connection_id),
                first + b"\x00",
                flags,
                bytes(10),
                second,
                plugin_name.encode() + b"\x00",
            ]
        )

    @property
    def _server_capabilities(self) -> int:
        if self.front.ssl_context is None:
            return SERVER_CAPABILITIES
        return SERVER_CAPABILITIES | CLIENT_SSL

    def _is_ssl_request(self, payload: bytes) -> bool:
        if len(payload) != SSL_REQUEST_BYTES or self.stream.cipher:
            return False
        capabilities = struct.unpack_from("<I", payload)[0]
        return bool(capabilities & self._server_capabilities & CLIENT_SSL)

    @property
    def cipher(self) -> str:
        """The TLS cipher this client's connection uses; empty when it is not encrypted."""
        return self.stream.cipher

    def client_gone(self) -> bool:
        """Whether the client closed its side (with nothing unread), say while a statement runs."""
        return self.stream.reader.at_eof()

    def _parse_handshake_response(self, payload: bytes) -> HandshakeResponse:
        reader = PacketReader(payload)
        client_capabilities = reader.uint4()
        if not client_capabilities & CLIENT_PROTOCOL_41:
            raise MalformedPacket("client does not speak protocol 4.1")
        capabilities = client_capabilities & self._server_capabilities
        max_packet_size = reader.uint4()
        collation = reader.uint1()
        reader.take(23)
        if reader.at_end():
            raise MalformedPacket("SSL requested but not offered")
        username = reader.null_terminated().decode("utf-8", "replace")
        if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth_response = reader.lenenc_bytes()
        elif capabilities & CLIENT_SECURE_CONNECTION:
            auth_response = reader.take(reader.uint1())
        else:
            auth_response = reader.null_terminated()
        database = None
        if capabilities & CLIENT_CONNECT_WITH_DB and not reader.at_end():
            database = reader.null_terminated().decode(_client_codec(collation)) or None
        client_plugin = None
        if capabilities & CLIENT_PLUGIN_AUTH and not reader.at_end():
            client_plugin = reader.null_terminated().decode("ascii", "replace")
        attrs = {}
        if capabilities & CLIENT_CONNECT_ATTRS and not reader.at_end():
            attrs = _read_connect_attrs(PacketReader(reader.lenenc_bytes()))
        return HandshakeResponse(
            capabilities=capabilities,
            max_packet_size=max_packet_size,
            collation=collation,
            username=username,
            auth_response=auth_response,
            database=database,
            client_plugin=client_plugin,
            connect_attrs=attrs,
        )

    async def _authenticate(
        self,
        username: str,
        auth_response: bytes,
        client_plugin: str | None,
        handshake: tuple[AuthPlugin, AuthState] | None = None,
    ) -> User:
        """The account the client authenticated as; on failure it gets 1045 and is dropped."""
        identity = self.identity_provider
        user = await identity.get_user(username, self.host)
        if user is None:
            if handshake is not None:
                await handshake[1].aclose()
            await self._deny(username, auth_response)
        plugin = identity.get_plugin(user.auth_plugin or "") or identity.get_default_plugin()
        info = AuthInfo(
            username=username,
            data=auth_response,
            user=user,
            connect_attrs=self.connect_attrs,
            client_plugin_name=client_plugin,
            handshake_auth_data=self._handshake_nonce,
            handshake_plugin_name=self._handshake_plugin,
        )
        speaks_client_plugin = plugin.client_plugin_name in (None, client_plugin)
        if handshake is not None and handshake[0].name == plugin.name and speaks_client_plugin:
            state = handshake[1]
            decision = await state.asend(info)
        else:
            if handshake is not None:
                await handshake[1].aclose()
            if speaks_client_plugin:
                decision, state = await plugin.start(info)
            else:
                decision, state = await plugin.start()
                if isinstance(decision, bytes) and plugin.client_plugin_name:
                    self.stream.write(
                        b"\xfe" + plugin.client_plugin_name.encode() + b"\x00" + decision
                    )
                    await self.stream.flush()
                    auth_response = await self.stream.read()
                    decision = await state.asend(info.copy(auth_response))
        for _ in range(MAX_AUTH_ROUNDS):
            if not isinstance(decision, bytes):
                break
            self.stream.write(b"\x01" + decision)
            await self.stream.flush()
            auth_response = await self.stream.read()
            decision = await state.asend(info.copy(auth_response))
        await state.aclose()
        password_ok = isinstance(decision, Success)
        login_refusal = getattr(identity, "login_refusal", None)
        refusal = None if login_refusal is None else login_refusal(user, password_ok, self.host)
        if refusal is not None:
            logger.info("connection %d: %s refused: %s", self.connection_id, username, refusal)
            await self._abort(refusal.code, refusal.message, refusal.sqlstate, error=AccessDenied)
        if password_ok:
            assert decision.authenticated_as == user.name, decision
            return user
        if isinstance(decision, Forbidden) and decision.msg:
            logger.info("connection %d: %s denied: %s", self.connection_id, username, decision.msg)
        await self._deny(username, auth_response)
        raise AssertionError("unreachable")

    async def _deny(self, username: str, auth_response: bytes) -> None:
        using = "YES" if auth_response else "NO"
        logger.info(
            "connection %d: access denied for %r@%s", self.connection_id, username, self.host
        )
        await self._abort(
            ErrorCode.ACCESS_DENIED_ERROR,
            f"Access denied for user '{username}'@'{self.host}' (using password: {using})",
            error=AccessDenied,
        )

    async def _abort(
        self,
        code: int,
        message: str,
        sqlstate: str | None = None,
        error: type[ConnectionAborted] = ConnectionAborted,
    ) -> None:
        """Tell the client why and end the connection."""
        self.stream.discard()
        self._write_error(code, message, sqlstate)
        try:
            await self.stream.flush()
        except ConnectionError:
            pass
        raise error(message)

    # Command phase

    async def _command_loop(self) -> None:
        stream = self.stream
        handlers = self._handlers
        while True:
            stream.seq = 0
            self._set_idle()
            try:
                payload = await stream.read()
            except PacketTooLarge:
                await self._abort(
                    ErrorCode.NET_PACKET_TOO_LARGE,
                    "Got a packet bigger than 'max_allowed_packet' bytes",
                )
            except PacketsOutOfOrder:
                await self._abort(ErrorCode.NET_PACKETS_OUT_OF_ORDER, "Got packets out of order")
            if not payload:
                self._write_error(ErrorCode.MALFORMED_PACKET, "Malformed communication packet")
                await stream.flush()
                continue
            command = payload[0]
            if command == Commands.COM_QUIT:
                return
            handler = handlers.get(command)
            try:
                if handler is None:
                    raise QueryError(ErrorCode.UNKNOWN_COM_ERROR, "Unknown command")
                await handler(payload)
            except asyncio.CancelledError:
                await self._killed()
            except QueryError as e:
                await self._fail(e.code, e.message, e.sqlstate)
            except MysqlError as e:
                await self._fail(e.code, str(e.msg))
            except (MalformedPacket, UnicodeDecodeError) as e:
                logger.info("connection %d: malformed packet: %s", self.connection_id, e)
                await self._fail(ErrorCode.MALFORMED_PACKET, "Malformed communication packet")
            except (ConnectionClosed, ConnectionAborted, ConnectionError):
                raise
            except Exception:
                incident = secrets.token_hex(6)
                logger.exception(
                    "incident %s: connection %d (%s@%s) failed running %r",
                    incident,
                    self.connection_id,
                    self.user,
                    self.host,
                    without_secrets(self.info) if self.info else self.info,
                )
                await self._fail(
                    ErrorCode.UNKNOWN_ERROR, f"Internal error (incident {incident}, see the FE log)"
                )

    async def _fail(self, code: int, message: str, sqlstate: str | None = None) -> None:
        self._answered(-1)
        self.stream.discard()
        self._write_error(code, message, sqlstate)
        await self.stream.flush()

    async def _killed(self) -> None:
        """The running command was cancelled by KILL: report it and go on, or end."""
        kind, self._kill = self._kill, None
        task = self._task
        if kind is None:
            raise asyncio.CancelledError()
        if task is not None:
            while task.cancelling():
                task.uncancel()
        if kind == KillKind.QUERY:
            await self._fail(ErrorCode.QUERY_INTERRUPTED, "Query execution was interrupted")
            return
        self._kill = kind
        await self._abort(ErrorCode.CONNECTION_KILLED, "Connection was killed")

    async def _execute(self, sql: str, attrs: dict[str, str], command: str) -> Result:
        return await self._run(self.session.handle_query(sql, attrs), sql, command)

    async def _run(self, running: Awaitable[Result], info: str, command: str) -> Result:
        self._started(info, command)
        try:
            result = await running
        finally:
            self._stopped()
        return self._answer(result)

    def _started(self, info: str, command: str) -> None:
        self.command = command
        self.state = "executing"
        self.info = info
        self._since = time.monotonic()
        self._executing = True
        self.front.questions += 1

    def _stopped(self) -> None:
        self._executing = False
        transaction_flags = getattr(self.session, "transaction_flags", None)
        if transaction_flags is not None:
            self.status_flags = transaction_flags()

    def _answer(self, result: Result | None) -> Result:
        if self._kill is not None:
            raise asyncio.CancelledError()  # a KILL of this very connection from its own session
        self.state = "sending data"
        if result is None:
            return _EMPTY_RESULT
        if not isinstance(result, Result):
            raise TypeError(f"session returned {type(result).__name__}, not Result")
        return result

    async def _com_query(self, payload: bytes) -> None:
        reader = PacketReader(payload, 1)
        attrs: dict[str, str] = {}
        if self.capabilities & CLIENT_QUERY_ATTRIBUTES:
            attrs = parse_query_attributes(reader, self.codec)
        sql = self._decode_sql(reader.rest())
        result = await self._execute(sql, attrs, "Query")
        await self._send_result(result, binary=False)

    def _decode_sql(self, raw: bytes) -> str:
        try:
            return raw.decode(self.codec)
        except UnicodeDecodeError as e:
            bad = raw[e.start : e.start + 8].hex().upper()
            raise QueryError(
                ErrorCode.INVALID_CHARACTER_STRING,
                f"Invalid {self.codec} character string: '{bad}'",
            ) from None

    async def _send_result(self, result: Result, binary: bool) -> None:
        stream = self.stream
        if not result.columns:
            self._answered(result.affected_rows)
            self._write_ok(
                affected_rows=result.affected_rows,
                last_insert_id=result.last_insert_id,
                warnings=result.warnings,
                info=result.info,
            )
            if stream.send():
                await stream.drain()
            return
        answers = None if binary else result.answers
        if answers is not None:
            key = (result.answer_key, result.warnings, stream.seq, self.status_flags)
            key += (self.deprecate_eof,)
            encoded = answers.get(key)
            if encoded is not None:
                self._answered(-1, _found(result, len(result.rows)))
                stream.write_packets(*encoded)
                await stream.flush()
                return
            start, first_seq = len(stream.buffer), stream.seq
        columns = [as_column(c) for c in result.columns]
        self._write_columns(columns)
        if not binary and isinstance(result.rows, ArrowRows):
            self._answered(-1, _found(result, len(result.rows)))
            await self._write_arrow_rows(result.rows, columns)
            self._write_end_of_rows(warnings=result.warnings)
            await stream.flush()
            return
        if hasattr(result.rows, "__aiter__"):
            await self._send_streamed_rows(result, columns, binary)
            return
        rows = iter(result.rows)
        encoding = BinaryRows(columns) if binary else None
        sent = 0
        while True:
            batch = list(itertools.islice(rows, ROWS_PER_BATCH))
            sent += len(batch)
            if encoding is not None:
                stream.write_binary_rows(batch, encoding)
            else:
                stream.write_text_rows(batch, columns)
            if len(batch) < ROWS_PER_BATCH:
                break
            if len(stream.buffer) >= FLUSH_BYTES:
                answers = None
                await stream.flush()
        self._answered(-1, _found(result, sent))
        self._write_end_of_rows(warnings=result.warnings)
        if answers is not None:
            answers.put(key, bytes(stream.buffer[start:]), (stream.seq - first_seq) & 0xFF)
        await stream.flush()

    def _answered(self, row_count: int, found_rows: int | None = None) -> None:
        """What ROW_COUNT() and FOUND_ROWS() answer next (Result says when what)."""
        session = self.session
        session.row_count = row_count
        if found_rows is not None:
            session.found_rows = found_rows

    async def _send_streamed_rows(self, result: Result, columns: list, binary: bool) -> None:
        """Rows that come in parts (an answer too big to hold), each sent on as it comes; the
        rows' source is closed whatever happens (a client gone stops the query)."""
        stream = self.stream
        encoding = BinaryRows(columns) if binary else None
        sent = 0
        self._answered(-1)
        async with contextlib.aclosing(result.rows) as parts:
            async for part in parts:
                sent += len(part)
                if not binary and isinstance(part, ArrowRows):
                    await self._write_arrow_rows(part, columns)
                    continue
                for start in range(0, len(part), ROWS_PER_BATCH):
                    batch = part[start : start + ROWS_PER_BATCH]
                    if encoding is not None:
                        stream.write_binary_rows(batch, encoding)
                    else:
                        stream.write_text_rows(batch, columns)
                    if len(stream.buffer) >= FLUSH_BYTES:
                        await stream.flush()
        self._answered(-1, _found(result, sent))
        self._write_end_of_rows(warnings=result.warnings)
        await stream.flush()

    async def _write_arrow_rows(self, rows: ArrowRows, columns: list[Column]) -> None:
        stream = self.stream
        stream.write_text_rows(rows.head, columns)
        table = rows.table
        if not table.num_rows:
            return
        row_bytes = max(table.nbytes // table.num_rows, 1)
        step = max(min(ARROW_BATCH_BYTES // row_bytes, ARROW_ROWS_PER_BATCH), 1)
        for start in range(0, table.num_rows, step):
            stream.write_text_columns(table.slice(start, step).columns, columns)
            if len(stream.buffer) >= FLUSH_BYTES:
                await stream.flush()

    def _write_columns(self, columns: Sequence[Column]) -> None:
        stream = self.stream
        stream.write(lenenc_int(len(columns)))
        for c in columns:
            stream.write(c.definition())
        if not self.deprecate_eof:
            self._write_eof()

    def _write_end_of_rows(self, warnings: int = 0, flags: int = 0) -> None:
        if self.deprecate_eof:
            self._write_ok(header=0xFE, warnings=warnings, flags=flags)  # affected rows: 0
        else:
            self._write_eof(warnings=warnings, flags=flags)

    def _write_ok(
        self,
        affected_rows: int = 0,
        last_insert_id: int = 0,
        warnings: int = 0,
        info: str = "",
        flags: int = 0,
        header: int = 0x00,
    ) -> None:
        self.stream.write(
            b"".join(
                [
                    bytes((header,)),
                    lenenc_int(affected_rows),
                    lenenc_int(last_insert_id),
                    struct.pack("<HH", self.status_flags | flags, min(warnings, 0xFFFF)),
                    # length-encoded, as MySQL sends it: libmariadb reads it so, PyMySQL either way
                    lenenc_bytes(info.encode()) if info else b"",
                ]
            )
        )

    def _write_eof(self, warnings: int = 0, flags: int = 0) -> None:
        self.stream.write(_EOF.pack(0xFE, min(warnings, 0xFFFF), self.status_flags | flags))

    def _write_error(self, code: int, message: str, sqlstate: str | None = None) -> None:
        text = message.encode()[:MAX_ERROR_MESSAGE_BYTES]
        state = (sqlstate or sqlstate_for(code)).encode()
        self.stream.write(struct.pack("<BH", 0xFF, code) + b"#" + state + text)

    # Simple commands

    async def _com_ping(self, payload: bytes) -> None:
        self._write_ok()
        await self.stream.flush()

    async def _com_init_db(self, payload: bytes) -> None:
        database = self._decode_sql(payload[1:])
        self.command = "Init DB"
        self.info = database
        await self.session.use(database)
        self._write_ok()
        await self.stream.flush()

    async def _com_reset_connection(self, payload: bytes) -> None:
        self.prepared.clear()
        await self.session.reset()
        self.status_flags = SERVER_STATUS_AUTOCOMMIT
        self._write_ok()
        await self.stream.flush()

    async def _com_set_option(self, payload: bytes) -> None:
        option = PacketReader(payload, 1).uint2()
        if option not in (0, 1):
            raise QueryError(ErrorCode.UNKNOWN_COM_ERROR, "Unknown command option")
        self._write_end_of_rows()
        await self.stream.flush()

    async def _com_statistics(self, payload: bytes) -> None:
        front = self.front
        uptime = max(int(time.monotonic() - front.started_at), 1)
        self.stream.write(
            f"Uptime: {uptime}  Threads: {front.connection_count}  Questions: {front.questions}  "
            f"Slow queries: 0  Opens: 0  Open tables: 0  "
            f"Queries per second avg: {front.questions / uptime:.3f}".encode()
        )
        await self.stream.flush()

    async def _com_process_kill(self, payload: bytes) -> None:
        target = PacketReader(payload, 1).uint4()
        await self._send_result(await self._execute(f"KILL {target}", {}, "Query"), binary=False)

    async def _com_field_list(self, payload: bytes) -> None:
        reader = PacketReader(payload, 1)
        table = reader.null_terminated().decode(self.codec)
        wildcard = reader.rest().decode(self.codec)
        sql = "SHOW COLUMNS FROM `{}`".format(table.replace("`", "``"))
        if wildcard:
            sql += f" LIKE {sql_literal(wildcard)}"
        result = await self._execute(sql, {}, "Field List")
        schema = getattr(self.session, "database", None) or ""
        for row in result.rows:
            name, sql_type, default = str(row[0]), str(row[1]), row[4]
            spec = column_spec(sql_type)
            flags = spec.flags if row[2] == "YES" else spec.flags | NOT_NULL_FLAG
            default_bytes = b"\xfb" if default is None else lenenc_bytes(str(default).encode())
            self.stream.write(
                column_definition(name, spec, flags, table=table, schema=schema) + default_bytes
            )
        self._write_end_of_rows()
        await self.stream.flush()

    async def _com_change_user(self, payload: bytes) -> None:
        reader = PacketReader(payload, 1)
        username = reader.null_terminated().decode(self.codec, "replace")
        if self.capabilities & CLIENT_SECURE_CONNECTION:
            auth_response = reader.take(reader.uint1())
        else:
            auth_response = reader.null_terminated()
        database = reader.null_terminated().decode(self.codec) if not reader.at_end() else ""
        client_plugin = None
        if not reader.at_end():
            self.codec = _client_codec(reader.uint2() & 0xFF)
            if self.capabilities & CLIENT_PLUGIN_AUTH and not reader.at_end():
                client_plugin = reader.null_terminated().decode("ascii", "replace")
            if self.capabilities & CLIENT_CONNECT_ATTRS and not reader.at_end():
                self.connect_attrs = _read_connect_attrs(PacketReader(reader.lenenc_bytes()))
        self.command = "Change user"
        user = await self._authenticate(username, auth_response, client_plugin)
        self.prepared.clear()
        await self.session.reset()
        self._log_in_as(user)
        self.status_flags = SERVER_STATUS_AUTOCOMMIT
        if database:
            try:
                await self.session.use(database)
            except QueryError as e:
                await self._abort(e.code, e.message, e.sqlstate)
        self._write_ok()
        await self.stream.flush()

    # Prepared statements

    async def _com_stmt_prepare(self, payload: bytes) -> None:
        sql = self._decode_sql(payload[1:])
        self.command = "Prepare"
        self.info = sql
        if len(self.prepared) >= self.front.max_prepared_statements:
            raise QueryError(
                ErrorCode.MAX_PREPARED_STMT_COUNT_REACHED,
                "Can't create more than max_prepared_stmt_count statements "
                f"(current value: {self.front.max_prepared_statements})",
            )
        stmt_id = next(self._stmt_ids)
        while stmt_id in self.prepared or stmt_id == 0:
            stmt_id = next(self._stmt_ids) & 0xFFFFFFFF
        prepare_statement = getattr(self.session, "prepare_statement", None)
        if prepare_statement is None:
            stmt = prepare(stmt_id, sql)
            columns = await self._describe(stmt)
        else:
            planned = await prepare_statement(sql)
            if planned.parameters > MAX_PARAMS:
                raise QueryError(
                    ErrorCode.PARSE_ERROR, "Prepared statement contains too many placeholders"
                )
            stmt = PreparedStatement(stmt_id, sql, planned.parameters, plan=planned.plan)
            columns = [as_column(c) for c in planned.columns]
            stmt.column_names = [c.name for c in columns]
        assert stmt.num_params <= MAX_PARAMS
        assert len(columns) <= 0xFFFF
        self.prepared[stmt_id] = stmt
        stream = self.stream
        stream.write(struct.pack("<BIHHBH", 0, stmt_id, len(columns), stmt.num_params, 0, 0))
        deprecate_eof = self.deprecate_eof
        if stmt.num_params:
            param = _PARAM_DEFINITION
            for _ in range(stmt.num_params):
                stream.write(param)
            if not deprecate_eof:
                self._write_eof()
        if columns:
            for c in columns:
                stream.write(c.definition())
            if not deprecate_eof:
                self._write_eof()
        await stream.flush()

    async def _describe(self, stmt: PreparedStatement) -> list[Column]:
        """The statement's result columns, if the session can tell them before it runs.

        Clients learn the columns again when the statement runs, but some (sysbench) take a
        statement announced without columns for one that returns no rows.
        """
        describe = getattr(self.session, "describe", None)
        if describe is None:
            return []
        columns = [as_column(c) for c in await describe(stmt.sql) or ()]
        stmt.column_names = [c.name for c in columns]
        return columns

    async def _com_stmt_execute(self, payload: bytes) -> None:
        execution = parse_execute(
            payload[1:],
            self.prepared,
            bool(self.capabilities & CLIENT_QUERY_ATTRIBUTES),
            self.codec,
        )
        stmt = execution.stmt
        limit = self.stream.max_payload_bytes
        if stmt.long_data and any(len(b) > limit for b in stmt.long_data.values()):
            raise QueryError(
                ErrorCode.NET_PACKET_TOO_LARGE, "Parameter data bigger than 'max_allowed_packet'"
            )
        stmt.cursor = None
        if stmt.plan is not None:
            self._started(stmt.sql, "Execute")
            try:
                result = await self.session.execute_prepared(
                    stmt.plan, execution.values, execution.attrs
                )
            finally:
                self._stopped()
            result = self._answer(result)
        else:
            result = await self._execute(execution.sql, execution.attrs, "Execute")
        if not (execution.use_cursor and result.columns):
            if result.columns:
                await self._send_rows(result, self._answer_shape(stmt, result.columns))
            else:
                await self._send_result(result, binary=True)
            return
        result.columns = self._named_as_written(stmt, result.columns)
        columns = [as_column(c) for c in result.columns]
        rows = result.rows
        if hasattr(rows, "__aiter__"):  # a cursor reads a streaming answer as a whole
            async with contextlib.aclosing(rows) as parts:
                rows = [row async for part in parts for row in part]
        stmt.cursor = (binary_row(row, columns) for row in rows)
        self._answered(-1, _found(result, len(rows)) if hasattr(rows, "__len__") else None)
        self.stream.write(lenenc_int(len(columns)))
        for c in columns:
            self.stream.write(c.definition())
        self._write_end_of_rows(flags=SERVER_STATUS_CURSOR_EXISTS)
        await self.stream.flush()

    @staticmethod
    def _named_as_written(stmt: PreparedStatement, columns: Sequence) -> list[Column]:
        """MySQL names a prepared statement's columns after its text, not the bound values."""
        columns = [as_column(c) for c in columns]
        if not stmt.column_names or len(stmt.column_names) != len(columns):
            return columns
        return [
            column if column.name == name else column.renamed(name)
            for column, name in zip(columns, stmt.column_names, strict=True)
        ]

    def _answer_shape(self, stmt: PreparedStatement, columns: Sequence) -> _AnswerShape:
        """The columns of stmt's answer as sent, their definition packets and row encoding; kept
        on the statement while its answers come with the very same columns object (a point
        read's do) and the packets would be numbered and flagged alike."""
        stream = self.stream
        kept = stmt.answer_shape
        if (
            kept is not None
            and kept.source is columns
            and kept.first_seq == stream.seq
            and kept.status_flags == self.status_flags
            and kept.deprecate_eof == self.deprecate_eof
        ):
            return kept
        named = self._named_as_written(stmt, columns)
        first_seq, start = stream.seq, len(stream.buffer)
        self._write_columns(named)
        header = bytes(stream.buffer[start:])
        count = (stream.seq - first_seq) & 0xFF
        del stream.buffer[start:]
        stream.seq = first_seq
        shape = _AnswerShape(
            columns,
            named,
            header,
            count,
            BinaryRows(named),
            first_seq,
            self.status_flags,
            self.deprecate_eof,
        )
        stmt.answer_shape = shape
        return shape

    async def _send_rows(self, result: Result, shape: _AnswerShape) -> None:
        """A prepared statement's rows in the binary protocol, its columns' packets as shaped."""
        result.columns = shape.columns
        rows = result.rows
        if hasattr(rows, "__aiter__"):
            self._write_columns(shape.columns)
            await self._send_streamed_rows(result, shape.columns, True)
            return
        stream = self.stream
        stream.write_packets(shape.header, shape.count)
        if isinstance(rows, list) and len(rows) <= ROWS_PER_BATCH:
            stream.write_binary_rows(rows, shape.encoding)
            sent = len(rows)
        else:
            rows = iter(rows)
            sent = 0
            while True:
                batch = list(itertools.islice(rows, ROWS_PER_BATCH))
                sent += len(batch)
                stream.write_binary_rows(batch, shape.encoding)
                if len(batch) < ROWS_PER_BATCH:
                    break
                if len(stream.buffer) >= FLUSH_BYTES:
                    await stream.flush()
        self._answered(-1, _found(result, sent))
        self._write_end_of_rows(warnings=result.warnings)
        if stream.send():
            await stream.drain()

    async def _com_stmt_fetch(self, payload: bytes) -> None:
        reader = PacketReader(payload, 1)
        stmt = self._statement(reader.uint4(), "mysqld_stmt_fetch")
        count = reader.uint4()
        if stmt.cursor is None:
            raise QueryError(ErrorCode.WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_fetch")
        sent = 0
        for row in itertools.islice(stmt.cursor, count):
            self.stream.write(row)
            sent += 1
            if len(self.stream.buffer) >= FLUSH_BYTES:
                await self.stream.flush()
        if sent < count:
            stmt.cursor = None
            self._write_end_of_rows(flags=SERVER_STATUS_LAST_ROW_SENT)
        else:
            self._write_end_of_rows(flags=SERVER_STATUS_CURSOR_EXISTS)
        await self.stream.flush()

    async def _com_stmt_send_long_data(self, payload: bytes) -> None:
        """No response to this command, not even an error (the client reads none)."""
        if len(payload) < 7:
            return
        reader = PacketReader(payload, 1)
        stmt = self.prepared.get(reader.uint4())
        param = reader.uint2()
        if stmt is None or param >= stmt.num_params:
            return
        buffer = stmt.long_data.setdefault(param, bytearray())
        if len(buffer) <= self.stream.max_payload_bytes:
            buffer += reader.rest()

    async def _com_stmt_reset(self, payload: bytes) -> None:
        stmt = self._statement(PacketReader(payload, 1).uint4(), "mysqld_stmt_reset")
        stmt.long_data.clear()
        stmt.cursor = None
        self._write_ok()
        await self.stream.flush()

    async def _com_stmt_close(self, payload: bytes) -> None:
        """No response to this command, not even an error (the client reads none)."""
        if len(payload) >= 5:
            self.prepared.pop(PacketReader(payload, 1).uint4(), None)

    def _statement(self, stmt_id: int, command: str) -> PreparedStatement:
        stmt = self.prepared.get(stmt_id)
        if stmt is None:
            raise QueryError(
                ErrorCode.UNKNOWN_STMT_HANDLER,
                f"Unknown prepared statement handler ({stmt_id}) given to {command}",
            )
        return stmt


_EMPTY_RESULT = Result()


@dataclass(frozen=True, slots=True)
class _AnswerShape:
    source: Sequence  # the columns as the session gave them
    columns: list[Column]  # as sent: named as the statement's text names them
    header: bytes  # their packets: the column count, the definitions, EOF if the client wants it
    count: int  # packets in header
    encoding: BinaryRows
    first_seq: int
    status_flags: int
    deprecate_eof: bool


_PARAM_DEFINITION = column_definition("?", column_spec("VARBINARY(0)"), 0)


def _client_codec(collation_id: int) -> str:
    try:
        charset = Collation(collation_id).charset.name
    except (ValueError, KeyError):
        return "utf-8"
    if charset in ("utf8mb4", "utf8", "utf8mb3", "binary", "ucs2", "utf16", "utf16le", "utf32"):
        return "utf-8"
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return "utf-8"


def _read_connect_attrs(reader: PacketReader) -> dict[str, str]:
    attrs = {}
    while not reader.at_end() and len(attrs) < MAX_CONNECT_ATTRS:
        key = reader.lenenc_bytes().decode("utf-8", "replace")
        attrs[key] = reader.lenenc_bytes().decode("utf-8", "replace")
    return attrs


__all__ = [
    "Connection",
    "KillKind",
    "NativePasswordPlugin",
    "ProcessInfo",
    "User",
    "native_password_hash",
]


def _found(result: Result, sent: int) -> int:
    return sent if result.found_rows is None else result.found_rows
