"""The logtail room: its format, the logtail table (pull) and the push stream, over real loopback
sockets, with connections cut mid-stream, strangers and slow consumers."""

from __future__ import annotations

import datetime
import decimal
import random
import socket
import struct
import threading
import time
import zlib

import msgpack
import pyarrow as pa
import pytest

from be.logtail.entries import ROW_ID, Commit, TableChanges
from be.logtail.errors import (
    AuthenticationFailed,
    LogtailClosed,
    LogtailFormatError,
    LogtailTableFull,
    PublishTimedOut,
    ResponseTooLarge,
)
from be.logtail.format import (
    NONCE_BYTES,
    PROOF_BYTES,
    Auth,
    Challenge,
    Kind,
    RefusalCode,
    Refused,
    Subscribe,
    Subscribed,
    Unsubscribe,
    Welcome,
    decode,
    decode_commit,
    encode,
    encode_commit,
)
from be.logtail.limits import LogtailLimits
from be.logtail.push import LogtailPushServer
from be.logtail.stream import FRAME_HEADER
from be.logtail.subscriber import LogtailSubscriber
from be.logtail.table import LogtailTable
from metadata.types import parse_column_type
from tests.harness import wait_until

LIMITS = LogtailLimits()
TOKEN = "a-cluster-token"

# Codec.

SAMPLES = {
    "BOOLEAN": [True, False, None],
    "TINYINT": [-128, 127, None],
    "SMALLINT": [-32768, 32767, None],
    "INT": [-(2**31), 2**31 - 1, None],
    "BIGINT": [-(2**63), 2**63 - 1, None],
    "LARGEINT": [decimal.Decimal(-(2**127)), decimal.Decimal(2**127 - 1), None],
    "FLOAT": [1.5, -0.0, None],
    "DOUBLE": [1e308, float("inf"), None],
    "DECIMAL(10,2)": [decimal.Decimal("12345678.90"), decimal.Decimal("-0.01"), None],
    "DECIMAL(76,10)": [decimal.Decimal("1" * 66 + ".0123456789"), decimal.Decimal(0), None],
    "DATE": [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), None],
    "DATETIME(6)": [
        datetime.datetime(2026, 1, 2, 3, 4, 5, 678901),
        datetime.datetime(1970, 1, 1),
        None,
    ],
    "CHAR(3)": ["abc", "", None],
    "VARCHAR(20)": ["héllo wörld", "\x00nul", None],
    "STRING": ["x" * 10_000, "日本語", None],
    "IPV6": ["::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None],  # its canonical text
    "BINARY": [b"", b"\x00\x01\xff", None],
    "ARRAY<INT>": [[1, None, 3], [], None],
    "MAP<STRING,INT>": [[("a", 1)], [], None],
    "STRUCT<a:INT,b:STRING>": [{"a": 1, "b": "x"}, {"a": None, "b": None}, None],
}


def every_type_table() -> pa.Table:
    columns = {ROW_ID: pa.array([1, 2, 3], pa.int64())}
    for number, (sql, values) in enumerate(SAMPLES.items()):
        columns[f"c{number}"] = pa.array(values, parse_column_type(sql).arrow)
    columns["nulls"] = pa.nulls(3)
    return pa.table(columns)


def rows(table_id: int, first_row_id: int, count: int, text: str = "v") -> TableChanges:
    row_ids = pa.array(range(first_row_id, first_row_id + count), pa.int64())
    return TableChanges(
        table_id, 1, pa.table({ROW_ID: row_ids, "v": pa.array([text] * count, pa.string())})
    )


def deletes(table_id: int, row_ids: list[int]) -> TableChanges:
    keys = pa.table({ROW_ID: pa.array(row_ids, pa.int64()), "k": pa.array(row_ids, pa.int32())})
    return TableChanges(table_id, 2, deletes=keys)


def assert_same_commit(left: Commit, right: Commit) -> None:
    assert left.commit_ts == right.commit_ts
    assert [c.table_id for c in left.changes] == [c.table_id for c in right.changes]
    for a, b in zip(left.changes, right.changes, strict=True):
        assert a.schema_version == b.schema_version
        for x, y in ((a.inserts, b.inserts), (a.deletes, b.deletes)):
            assert (x is None) == (y is None)
            assert x is None or (x.schema == y.schema and x.equals(y))


def test_commit_round_trip_of_every_column_type():
    table = every_type_table()
    commit = Commit(7, (TableChanges(3, 2, table, deletes(3, [1]).deletes), rows(4, 10, 2)))
    back = decode_commit(encode_commit(commit, LIMITS), LIMITS)
    assert_same_commit(commit, back)
    assert back.changes[0].inserts.column("c13").to_pylist()[0] == "héllo wörld"
    chunked = pa.concat_tables([table, table])  # two record batches in one stream
    back = decode_commit(encode_commit(Commit(8, (TableChanges(3, 2, chunked),)), LIMITS), LIMITS)
    assert back.changes[0].inserts.equals(chunked) and back.changes[0].inserts.num_rows == 6


def test_heartbeat_and_every_message_round_trip():
    heartbeat = decode_commit(encode_commit(Commit(99), LIMITS), LIMITS)
    assert heartbeat == Commit(99) and heartbeat.is_heartbeat
    assert len(encode_commit(Commit(99), LIMITS)) < 16
    nonce, proof = b"n" * NONCE_BYTES, b"p" * PROOF_BYTES
    for message in (
        Challenge(nonce),
        Auth("cn-1", nonce, proof),
        Welcome(proof),
        Subscribe((1, 2), 0),
        Unsubscribe((5,)),
        Refused(RefusalCode.RESPONSE_TOO_LARGE, (1,), "too large"),
        Subscribed((1,), 10, 0, ()),
    ):
        assert decode(encode(message, LIMITS), LIMITS) == message
    answer = Subscribed((1, 2), 20, 5, (Commit(6, (rows(1, 1, 3),)), Commit(9, (rows(2, 1, 1),))))
    back = decode(encode(answer, LIMITS), LIMITS)
    assert (back.table_ids, back.to_ts, back.checkpoint_ts) == ((1, 2), 20, 5)
    for left, right in zip(answer.commits, back.commits, strict=True):
        assert_same_commit(left, right)


def with_header(body: bytes, version: int = 1) -> bytes:
    return struct.pack(">BI", version, zlib.crc32(body)) + body


def test_an_overwrite_round_trips_and_version_2_is_still_read():
    overwrite = TableChanges(
        3, 1, deletes=deletes(3, [4, 5]).deletes, objects_removed=("t3/a", "t3/b"), overwrites=True
    )
    back = decode_commit(encode_commit(Commit(12, (overwrite,)), LIMITS), LIMITS)
    assert back.changes[0].overwrites and back.changes[0].objects_removed == ("t3/a", "t3/b")
    assert_same_commit(Commit(12, (overwrite,)), back)
    plain = [3, 1, None, None, [], [], ["t3/a"], 0]  # version 2: no overwrites field
    old = decode(with_header(msgpack.packb([Kind.COMMIT, 12, [plain]]), version=2), LIMITS)
    assert old.changes[0].objects_removed == ("t3/a",) and not old.changes[0].overwrites
    for flag in (1, None, "yes"):
        with pytest.raises(LogtailFormatError, match="overwrites"):
            decode(with_header(msgpack.packb([Kind.COMMIT, 12, [[*plain, flag]]]), 3), LIMITS)
    with pytest.raises(LogtailFormatError, match="table changes"):  # version 3 wants 9 fields
        decode(with_header(msgpack.packb([Kind.COMMIT, 12, [plain]]), version=3), LIMITS)


def test_decoding_is_strict():
    data = encode_commit(Commit(5, (rows(1, 1, 50), deletes(2, [3, 4]))), LIMITS)
    for cut in range(len(data)):  # every truncation
        with pytest.raises(LogtailFormatError):
            decode(data[:cut], LIMITS)
    flips = random.Random(1)
    for position in [0, *flips.sample(range(1, len(data)), 200)]:  # corrupted bytes
        corrupted = bytearray(data)
        corrupted[position] ^= 1 << flips.randrange(8)
        with pytest.raises(LogtailFormatError):
            decode(bytes(corrupted), LIMITS)
    with pytest.raises(LogtailFormatError, match="version 4"):
        decode(with_header(data[5:], version=4), LIMITS)
    with pytest.raises(LogtailFormatError, match="malformed logtail message"):
        decode(with_header(data[5:] + b"\x00"), LIMITS)  # trailing bytes, checksum right
    with pytest.raises(LogtailFormatError, match="checksum"):
        decode(data + b"\x00", LIMITS)
    for body in (
        [Kind.COMMIT, 5],  # a field short
        [Kind.COMMIT, 0, []],  # timestamp 0
        [Kind.COMMIT, 5, [[1, 1, b"not arrow", None]]],
        [Kind.COMMIT, 5, [[1, 1, None, None], [1, 1, None, None]]],  # a table twice
        [Kind.SUBSCRIBE, [1, 1], 0],
        [Kind.SUBSCRIBE, [1], -1],
        [Kind.CHALLENGE, b"short"],
        [Kind.REFUSED, 77, [], ""],
        [Kind.SUBSCRIBED, [1], 5, 0, [[9, []]]],  # a commit after its to_ts
        [99],
        "not a list",
    ):
        with pytest.raises(LogtailFormatError):
            decode(with_header(msgpack.packb(body)), LIMITS)
    no_row_id = pa.table({"v": [1]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, no_row_id.schema) as writer:
        writer.write_table(no_row_id)
    body = msgpack.packb([Kind.COMMIT, 5, [[1, 1, sink.getvalue().to_pybytes(), None]]])
    with pytest.raises(LogtailFormatError, match="row id"):
        decode(with_header(body), LIMITS)


def test_limits_are_checked_both_ways():
    small = LogtailLimits(
        max_message_bytes=64 << 10,
        max_unauthenticated_message_bytes=1024,
        max_response_bytes=16 << 10,
        send_queue_bytes=64 << 10,
        max_rows_per_batch=100,
        max_tables_per_commit=2,
    )
    with pytest.raises(LogtailFormatError, match="max_rows_per_batch"):
        encode_commit(Commit(1, (rows(1, 1, 101),)), small)
    with pytest.raises(LogtailFormatError, match="max_tables_per_commit"):
        encode_commit(Commit(1, tuple(rows(t, 1, 1) for t in (1, 2, 3))), small)
    with pytest.raises(LogtailFormatError, match="max_message_bytes"):
        encode_commit(Commit(1, (rows(1, 1, 100, "x" * 1000),)), small)
    big = encode_commit(Commit(1, (rows(1, 1, 101),)), LIMITS)
    with pytest.raises(LogtailFormatError, match="max_rows_per_batch"):
        decode(big, small)
    with pytest.raises(LogtailFormatError, match="max_message_bytes"):
        decode(encode_commit(Commit(1, (rows(1, 1, 100, "x" * 1000),)), LIMITS), small)
    with pytest.raises(ValueError, match="max_response_bytes"):
        LogtailLimits(max_response_bytes=LogtailLimits.max_message_bytes)


# The logtail table.


def random_commits(seed: int, count: int) -> list[Commit]:
    chooser = random.Random(seed)
    commits, ts, row_id = [], 0, 0
    for _ in range(count):
        ts += chooser.randint(1, 5)
        if chooser.random() < 0.3:
            commits.append(Commit(ts))
            continue
        tables = chooser.sample(range(1, 6), chooser.randint(1, 3))
        changes = []
        for table_id in sorted(tables):
            row_id += 1
            changes.append(rows(table_id, row_id, 1))
        commits.append(Commit(ts, tuple(changes)))
    return commits


def brute_force(commits, table_ids, from_ts, to_ts):
    found = []
    for commit in commits:
        if from_ts < commit.commit_ts <= to_ts:
            kept = [c for c in commit.changes if c.table_id in table_ids]
            if kept:
                found.append((commit.commit_ts, [c.table_id for c in kept]))
    return found


def summary(pulled):
    return [(c.commit_ts, [t.table_id for t in c.changes]) for c in pulled.commits]


def test_table_range_search_matches_a_brute_force_filter():
    commits = random_commits(seed=10, count=2000)
    table = LogtailTable(LogtailLimits(page_size=7))
    for commit in commits:
        table.add(commit)
    assert table.page_count == -(-sum(not c.is_heartbeat for c in commits) // 7)
    last = commits[-1].commit_ts
    chooser = random.Random(11)
    for _ in range(600):
        table_ids = frozenset(chooser.sample(range(1, 7), chooser.randint(1, 3)))
        from_ts = chooser.randint(0, last + 2)
        to_ts = chooser.randint(0, last)
        pulled = table.collect(table_ids, from_ts, to_ts)
        assert pulled.checkpoint_ts == 0
        assert summary(pulled) == brute_force(commits, table_ids, from_ts, to_ts)
    assert summary(table.collect({1, 2, 3, 4, 5}, 0, last)) == brute_force(
        commits, {1, 2, 3, 4, 5}, 0, last
    )


def test_checkpoint_drops_pages_and_pulls_say_so():
    commits = random_commits(seed=20, count=1000)
    table = LogtailTable(LogtailLimits(page_size=10))
    for commit in commits:
        table.add(commit)
    pages, kept = table.page_count, table.kept_bytes
    checkpoint = commits[500].commit_ts
    table.set_checkpoint(checkpoint)
    assert table.page_count < pages and table.kept_bytes < kept
    first_kept = table._pages[0]
    assert first_kept.last_ts > checkpoint
    last = commits[-1].commit_ts
    below = table.collect({1, 2}, 0, last)
    assert below.checkpoint_ts == checkpoint
    assert summary(below) == brute_force(commits, {1, 2}, checkpoint, last)
    above = table.collect({1, 2}, checkpoint + 1, last)
    assert above.checkpoint_ts == 0
    assert summary(above) == brute_force(commits, {1, 2}, checkpoint + 1, last)
    table.set_checkpoint(last)
    assert table.page_count == 0 and table.kept_bytes == 0 and table.kept_commits == 0
    assert table.collect({1}, 0, last).commits == ()
    table.add(Commit(last + 1, (rows(1, 1, 1),)))
    assert summary(table.collect({1}, last, last + 1)) == [(last + 1, [1])]


def test_too_large_and_bounded_memory():
    asked = []
    limits = LogtailLimits(page_size=4, soft_kept_bytes=20_000, max_kept_bytes=40_000)
    table = LogtailTable(limits, on_needs_checkpoint=asked.append)
    ts = 0
    while True:
        ts += 1
        try:
            table.add(Commit(ts, (rows(1, ts, 10, "x" * 50),)))
        except LogtailTableFull:
            break
    assert len(asked) == 1 and table.needs_checkpoint
    assert 20_000 < table.kept_bytes <= 40_000
    with pytest.raises(ResponseTooLarge) as raised:
        table.collect({1}, 0, ts - 1, max_bytes=5_000)
    assert raised.value.table_ids == {1}
    assert len(table.collect({1}, ts - 5, ts - 1, max_bytes=5_000).commits) == 4
    assert table.collect({2}, 0, ts - 1, max_bytes=5_000).commits == ()  # other tables cost nothing
    table.set_checkpoint(ts - 1)
    assert not table.needs_checkpoint and table.kept_bytes < 20_000
    table.add(Commit(ts, (rows(1, ts, 1),)))


# The push stream.


class Consumer:
    """A subscriber's deliveries, kept in order."""

    def __init__(self, server, tables=(), name="cn", limits=LIMITS, token=TOKEN, from_ts=0):
        self.commits: list[Commit] = []
        self.checkpoints: list[tuple[tuple[int, ...], int]] = []
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.gate.set()
        self.subscriber = LogtailSubscriber(
            "127.0.0.1",
            server.port,
            token,
            on_commit=self.on_commit,
            on_checkpoint=lambda tables, ts: self.checkpoints.append((tables, ts)),
            limits=limits,
            name=name,
        )
        self.subscriber.start()
        for table_id in tables:
            self.subscriber.subscribe(table_id, from_ts)

    def on_commit(self, commit):
        self.gate.wait(timeout=60)
        with self.lock:
            self.commits.append(commit)

    def timestamps(self, table_id=None):
        with self.lock:
            return [c.commit_ts for c in self.commits if table_id is None or table_id in c.tables()]

    def row_ids(self, table_id):
        with self.lock:
            return [
                row_id
                for c in self.commits
                for t in c.changes
                if t.table_id == table_id
                for row_id in t.inserts.column(ROW_ID).to_pylist()
            ]

    def wait_watermark(self, ts, timeout=30):
        assert self.subscriber.wait_for_watermark(ts, timeout), (
            f"watermark {self.subscriber.watermark} short of {ts}"
        )


@pytest.fixture
def servers():
    started = []

    def start(limits=LIMITS, table=None, port=0, **kwargs):
        table = table or LogtailTable(limits)
        server = LogtailPushServer(table, TOKEN, "127.0.0.1", port, limits, **kwargs)
        server.start()
        started.append(server)
        return server

    consumers = []
    yield start, consumers
    for consumer in consumers:
        consumer.subscriber.close()
    for server in started:
        server.close()
    wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith("logtail-")],
        10,
        "the servers' and subscribers' threads to end",
    )


def test_two_cns_get_only_their_tables_and_every_heartbeat(servers):
    start, consumers = servers
    server = start()
    server.publish(Commit(1, (rows(1, 1, 2), rows(2, 1, 2))))  # before anyone subscribed
    first = Consumer(server, tables=[1], name="cn-1")
    second = Consumer(server, tables=[2, 3], name="cn-2")
    consumers += [first, second]
    assert first.subscriber.wait_active(1, 10) and second.subscriber.wait_active(3, 10)
    server.publish(Commit(2, (rows(1, 3, 1),)))
    server.publish(Commit(3, (rows(2, 3, 1), rows(3, 1, 1))))
    server.publish(Commit(4, (rows(1, 4, 1), rows(2, 4, 1))))
    server.publish(Commit(5))  # heartbeat
    first.wait_watermark(5)
    second.wait_watermark(5)
    assert first.timestamps() == [1, 2, 4] and first.row_ids(1) == [1, 2, 3, 4]
    assert all(c.tables() == {1} for c in first.commits)
    assert second.timestamps() == [1, 3, 4] and second.row_ids(2) == [1, 2, 3, 4]
    assert second.row_ids(3) == [1]
    assert sorted(server.connected_cns) == ["cn-1", "cn-2"]
    first.subscriber.unsubscribe(1)
    first.subscriber.subscribe(3, 3)  # from 3: only what came after
    assert first.subscriber.wait_active(3, 10)
    server.publish(Commit(6, (rows(1, 5, 1), rows(3, 2, 1))))
    server.publish(Commit(7))
    first.wait_watermark(7)
    assert first.timestamps() == [1, 2, 4, 6] and first.commits[-1].tables() == {3}


def test_subscription_below_the_checkpoint_gets_the_marker_first(servers):
    start, consumers = servers
    server = start()
    for ts in range(1, 21):
        server.publish(Commit(ts, (rows(1, ts, 1),)))
    server.table.set_checkpoint(12)
    consumer = Consumer(server, tables=[1])
    consumers.append(consumer)
    consumer.wait_watermark(20)
    assert consumer.checkpoints == [((1,), 12)]
    assert consumer.timestamps() == list(range(13, 21))


class CuttingProxy:
    """A loopback TCP relay between a subscriber and the server whose connections the test cuts."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.black_holes: set[socket.socket] = set()  # what they receive goes nowhere
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self.lock:
                self.sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source, target):
        try:
            while data := source.recv(1500):  # small pieces: cuts land inside frames
                if source not in self.black_holes:
                    target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def silence(self):
        """The open connections stay open but carry nothing more, as behind a dead router."""
        with self.lock:
            self.black_holes.update(self.sockets)

    def cut(self):
        with self.lock:
            doomed, self.sockets = self.sockets, []
        for sock in doomed:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self):
        self.closed = True
        self.listener.close()
        self.cut()


def test_cut_streams_resume_with_no_gap_and_no_duplicate(servers):
    start, consumers = servers
    limits = LogtailLimits(reconnect_min_delay=0.005, reconnect_max_delay=0.05)
    server = start(limits)
    proxy = CuttingProxy(server.port)
    consumer = Consumer(proxy, tables=[1, 2], limits=limits)
    consumers.append(consumer)
    assert consumer.subscriber.wait_active(2, 10)
    total = 10_000
    done = threading.Event()

    def produce():
        for ts in range(1, total + 1):
            if ts % 7 == 0:
                server.publish(Commit(ts))
            else:
                server.publish(Commit(ts, (rows(1 + ts % 2, ts, 1 + ts % 3),)))
            if ts % 200 == 0:
                time.sleep(0.002)  # let cuts land while commits flow
        done.set()

    producer = threading.Thread(target=produce)
    producer.start()
    cuts = 0
    while not done.is_set():
        time.sleep(0.03)
        proxy.cut()
        cuts += 1
    producer.join()
    try:
        consumer.wait_watermark(total, timeout=45)
    finally:
        proxy.close()
    expected = [ts for ts in range(1, total + 1) if ts % 7]
    assert consumer.timestamps() == expected
    for table_id in (1, 2):
        assert consumer.row_ids(table_id) == [
            row_id
            for ts in expected
            if 1 + ts % 2 == table_id
            for row_id in range(ts, ts + 1 + ts % 3)
        ]
    print("connects", consumer.subscriber.connects, "cuts", cuts)
    assert consumer.subscriber.connects > 5, f"only {consumer.subscriber.connects} connections"


def test_strangers_are_refused(servers):
    start, consumers = servers
    limits = LogtailLimits(handshake_timeout=0.5, reconnect_max_delay=0.2)
    server = start(limits)

    def connect():
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        header = sock.recv(FRAME_HEADER.size, socket.MSG_WAITALL)
        (length,) = FRAME_HEADER.unpack(header)
        challenge = decode(sock.recv(length, socket.MSG_WAITALL), limits)
        assert isinstance(challenge, Challenge)
        return sock

    def closed(sock):
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True

    wrong_proof = connect()
    payload = encode(Auth("stranger", b"n" * NONCE_BYTES, b"p" * PROOF_BYTES), limits)
    wrong_proof.sendall(FRAME_HEADER.pack(len(payload)) + payload)
    assert closed(wrong_proof)
    oversize = connect()
    oversize.sendall(FRAME_HEADER.pack(limits.max_unauthenticated_message_bytes + 1) + b"x" * 100)
    assert closed(oversize)
    silent = connect()
    assert closed(silent)  # within the handshake timeout
    garbage = connect()
    garbage.sendall(FRAME_HEADER.pack(20) + b"\x01" * 20)
    assert closed(garbage)
    assert server.stats["refused"] == 4 and server.connected_cns == []

    impostor = Consumer(server, tables=[1], token="not-the-token", limits=limits)
    consumers.append(impostor)
    wait_until(
        lambda: isinstance(impostor.subscriber.last_error, AuthenticationFailed), 10, "refusal"
    )
    server.publish(Commit(1, (rows(1, 1, 1),)))
    assert not impostor.subscriber.connected and impostor.commits == []
    assert server.connected_cns == []


def test_a_slow_cn_is_cut_off_and_catches_up(servers):
    start, consumers = servers
    limits = LogtailLimits(send_queue_frames=16, reconnect_min_delay=0.01, reconnect_max_delay=0.1)
    server = start(limits)
    consumer = Consumer(server, tables=[1], limits=limits)
    consumers.append(consumer)
    assert consumer.subscriber.wait_active(1, 10)
    consumer.gate.clear()  # the CN stops applying: its loop stops reading the stream
    big = "x" * 2000
    ts = 0
    while server.stats["slow_disconnects"] == 0:
        ts += 1
        server.publish(Commit(ts, (rows(1, ts * 100, 100, big),)))
        assert ts < 5000, "the slow CN was never cut off"
    last = ts + 50
    for later in range(ts + 1, last + 1):
        server.publish(Commit(later, (rows(1, later * 100, 100, big),)))
    consumer.gate.set()
    consumer.wait_watermark(last)
    assert consumer.timestamps() == list(range(1, last + 1))
    assert consumer.subscriber.connects >= 2


def test_too_large_a_pull_is_refused_until_a_checkpoint(servers):
    start, consumers = servers
    limits = LogtailLimits(
        max_response_bytes=16 << 10,
        max_message_bytes=1 << 20,
        send_queue_bytes=1 << 20,
        reconnect_max_delay=0.1,
    )
    flushes = []
    server = start(limits, on_response_too_large=flushes.append)
    for ts in range(1, 101):
        server.publish(Commit(ts, (rows(1, ts, 10, "y" * 100),)))
    consumer = Consumer(server, tables=[1], limits=limits)
    consumers.append(consumer)
    wait_until(lambda: flushes, 10, "a request to flush")
    assert not consumer.subscriber.is_active(1) and server.stats["too_large"] >= 1
    server.table.set_checkpoint(95)  # what the TN does after its forced flush
    assert consumer.subscriber.wait_active(1, 10)
    assert consumer.checkpoints == [((1,), 95)]
    assert consumer.timestamps() == [96, 97, 98, 99, 100]


def test_a_silent_stream_is_dropped_and_resumed(servers):
    start, consumers = servers
    limits = LogtailLimits(heartbeat_interval=0.01, idle_timeout=0.4, reconnect_max_delay=0.1)
    server = start(limits)
    proxy = CuttingProxy(server.port)
    consumer = Consumer(proxy, tables=[1], limits=limits)
    consumers.append(consumer)
    assert consumer.subscriber.wait_active(1, 10)
    stop = threading.Event()
    published = []

    def tn():
        ts = 0
        while not stop.is_set():
            ts += 1
            commit = Commit(ts, (rows(1, ts, 1),)) if ts % 3 == 0 else Commit(ts)
            server.publish(commit)
            published.append(commit)
            time.sleep(limits.heartbeat_interval)

    heartbeats = threading.Thread(target=tn)
    heartbeats.start()
    try:
        wait_until(lambda: consumer.subscriber.watermark > 10, 10, "the stream to flow")
        proxy.silence()
        wait_until(lambda: consumer.subscriber.connects >= 2, 10, "a reconnect")
        mark = published[-1].commit_ts
        consumer.wait_watermark(mark + 10)
    finally:
        stop.set()
        heartbeats.join()
        proxy.close()
    delivered = consumer.timestamps()
    assert delivered == [c.commit_ts for c in published if c.changes][: len(delivered)]
    assert delivered[-1] > mark


def test_a_restarted_tn_rebuilt_from_its_log_resumes_its_cns(servers):
    start, consumers = servers
    limits = LogtailLimits(reconnect_min_delay=0.01, reconnect_max_delay=0.1)
    log: list[bytes] = []  # what the TN logs: encoded commits; heartbeats are not logged

    def commit(server, ts):
        if ts % 10 == 0:
            server.publish(Commit(ts))
            return
        change = rows(1, ts, 1) if ts % 2 else deletes(1, [ts - 1])
        data = encode_commit(Commit(ts, (change,)), limits)
        log.append(data)
        server.publish(decode_commit(data, limits), data)

    first = start(limits)
    consumer = Consumer(first, tables=[1], limits=limits)
    consumers.append(consumer)
    assert consumer.subscriber.wait_active(1, 10)
    for ts in range(1, 201):
        commit(first, ts)
    consumer.wait_watermark(200)
    first.close()
    replayed = LogtailTable(limits)
    for data in log:
        replayed.add(decode_commit(data, limits))
    assert replayed.last_ts == 199  # below the CN's watermark: the last heartbeat is gone
    second = start(limits, table=replayed, port=first.port)
    for ts in range(201, 301):
        commit(second, ts)
    consumer.wait_watermark(300)
    assert consumer.timestamps() == [ts for ts in range(1, 301) if ts % 10]
    assert consumer.subscriber.connects == 2


def test_publish_waits_for_room_then_refuses(servers):
    start, _ = servers
    limits = LogtailLimits(max_pending_publishes=2, publish_timeout=0.3)
    server = start(limits)
    server.publish(Commit(1))
    # The server's loop is busy elsewhere: commits pile up to the limit, then publish refuses.
    blocked = threading.Event()

    def busy():
        blocked.set()
        time.sleep(1.5)

    server._loop.call_soon_threadsafe(busy)
    assert blocked.wait(10)
    server.publish(Commit(2))
    server.publish(Commit(3))
    began = time.monotonic()
    with pytest.raises(PublishTimedOut):
        server.publish(Commit(4))
    assert time.monotonic() - began >= 0.3
    wait_until(lambda: server.last_pushed_ts == 3, 10, "the loop to push again")
    server.table.set_checkpoint(3)
    server.publish(Commit(5))  # the refused commit 4 never entered the table: the TN retries it
    server.close()
    with pytest.raises(LogtailClosed):
        server.publish(Commit(6))


def test_connection_limit_and_a_failing_cn(servers):
    start, consumers = servers
    limits = LogtailLimits(max_connections=1, reconnect_max_delay=0.1)
    server = start(limits)
    failing = []

    def apply(commit):
        failing.append(commit)
        raise RuntimeError("the CN could not apply it")

    cn = LogtailSubscriber("127.0.0.1", server.port, TOKEN, apply, limits=limits, name="bad")
    cn.start()
    cn.subscribe(1)
    assert cn.wait_active(1, 10)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as second:
        assert second.recv(1) == b""  # over max_connections: closed at once
    server.publish(Commit(1, (rows(1, 1, 1),)))
    wait_until(lambda: isinstance(cn.last_error, RuntimeError), 10, "the CN to stop")
    wait_until(lambda: not server.connected_cns, 10, "the TN to see it go")
    assert len(failing) == 1 and not cn.wait_for_watermark(1, 0.2)
    cn.close()
