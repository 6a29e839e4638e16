"""Bulk loads on the TN: objects written elsewhere (Stream Load, Spark tasks) registered in one
commit, and the labels that make a load idempotent.

A load begins with a timestamp the TN consumes for it (its transaction id: unique, never reused,
and the timestamp its objects are named and stamped at). Its writer asks for row ids in ranges the
TN hands out from the table's own counter, so they never clash with the TN's or another load's;
the commit checks every object's row ids lie in the ranges handed to that load, then adds all of
them at once (a UNIQUE KEY table's replaced rows deleted in the same commit). Row ids handed out
first keep objects as the writer wrote them: the TN never reads or rewrites a load's rows (but
for a UNIQUE KEY table's keys, read where the writer did not give them). A TN that restarts
forgets its open loads: their commits are refused and the start-up sweep removes their objects.

An overwrite's commit also removes every object and tombstone of the table's partitions and
deletes every row of them still in memory, at its own timestamp (TableChanges.overwrites): rows
committed between the load's begin and its commit are replaced too (as Doris's INSERT OVERWRITE
replaces what is there at its commit); a transaction whose snapshot is older than the overwrite
and deletes rows of the table fails with a write conflict when it commits after it.

A CN serves a load's objects from its commit on (the rows carry the load's begin timestamp, which
is older); a CN that starts again from a checkpoint, or a merge that rewrites them, serves them
by those row stamps, so a read AS OF a moment while the load ran may see them there.

An INSERT WITH LABEL (or a transaction begun WITH LABEL) is a load of rows: its write set carries
a LoadClaim, the committer refuses it if a load not aborted holds the label, and its record (its
transaction id is its commit timestamp) travels in the commit's log record as a bulk load's does.

Labels: the record of a committed load travels in its commit's log record and in checkpoints, so
"Label Already Exists" survives a restart; loads still open or aborted are kept in memory only.
Records are kept label_keep_seconds after they finish, at most max_labels of them. Stream Load
keeps its record itself; a load begun with a LoadClaim (a Spark write) has the TN keep it: its
label is claimed at the begin, its rows and bytes are those of the objects its commit registers,
and it is ABORTED by its abort or when it stays open longer than timeout_seconds (its writer
died).
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace

from be.storage.blocks import ObjectMeta
from be.table_schema import TableSchema
from be.tn.errors import BadLoad, LoadUnknown, TooManyLoads

# Doris's transaction states as SHOW LOAD and Stream Load name them
PREPARE = "PREPARE"
PRECOMMITTED = "PRECOMMITTED"
VISIBLE = "VISIBLE"
ABORTED = "ABORTED"
STATES = (PREPARE, PRECOMMITTED, VISIBLE, ABORTED)
STREAM_LOAD = "stream_load"
SPARK = "spark"
INSERT = "insert"  # an INSERT (or a transaction) given a label: its rows, not objects
SOURCES = (STREAM_LOAD, SPARK, INSERT)  # what wrote a load
MAX_LABEL_CHARS = 128  # Doris: a label is at most 128 characters
MAX_MESSAGE_CHARS = 1024


@dataclass(frozen=True, slots=True)
class LoadRecord:
    """What SHOW LOAD and a repeated label answer: one load as its backend reported it."""

    label: str
    db: str
    table: str
    table_id: int
    txn_id: int
    state: str
    user: str = ""
    client_ip: str = ""
    total_rows: int = 0
    loaded_rows: int = 0
    filtered_rows: int = 0
    unselected_rows: int = 0
    load_bytes: int = 0
    started_ms: int = 0
    finished_ms: int = 0
    message: str = ""
    commit_ts: int = 0
    two_phase: bool = False
    source: str = STREAM_LOAD
    overwrite: bool = False

    def __post_init__(self) -> None:
        assert self.state in STATES and self.source in SOURCES, self
        assert 0 < len(self.label) <= MAX_LABEL_CHARS and self.txn_id > 0, self

    @property
    def finished(self) -> bool:
        return self.state in (VISIBLE, ABORTED)

    def fields(self) -> dict:
        return asdict(self)

    @classmethod
    def from_fields(cls, given: dict) -> LoadRecord:
        """Strict: every field present with its type (a damaged record raises TypeError); a
        record written before a field was added lacks it and takes its default."""
        names = {item.name: item.type for item in fields(cls)}
        if not isinstance(given, dict) or not set(names) - ADDED_LATER <= set(given) <= set(names):
            raise TypeError("a load record with other fields")
        for name, value in given.items():
            wanted = {"str": str, "int": int, "bool": bool}[names[name]]
            if type(value) is not wanted:
                raise TypeError(f"load record field {name} is {type(value).__name__}")
        return cls(**given)


ADDED_LATER = frozenset({"source", "overwrite"})  # fields a logged or checkpointed record may lack


@dataclass(frozen=True, slots=True)
class LoadClaim:
    """What a load begun with a label tells the TN, which keeps its record (a Spark write);
    label "" names it <source>_<its transaction id>."""

    label: str
    db: str
    table: str
    user: str
    client_ip: str
    source: str = SPARK
    overwrite: bool = False

    def __post_init__(self) -> None:
        assert len(self.label) <= MAX_LABEL_CHARS and self.source in SOURCES, self

    def record(self, txn_id: int, table_id: int) -> LoadRecord:
        return LoadRecord(
            self.label or f"{self.source}_{txn_id}",
            self.db,
            self.table,
            table_id,
            txn_id,
            PREPARE,
            user=self.user,
            client_ip=self.client_ip,
            started_ms=int(time.time() * 1000),
            source=self.source,
            overwrite=self.overwrite,
        )


@dataclass
class OpenLoad:
    """A load begun and not committed or aborted: what its commit may name."""

    txn_id: int
    table_id: int
    began: float  # monotonic
    ranges: list[tuple[int, int]] = field(default_factory=list)  # row ids [first, end)
    record: LoadRecord | None = None  # kept by the TN (a load begun with a LoadClaim)

    def holds(self, meta: ObjectMeta) -> bool:
        """Whether each block's lowest and highest row ids lie in ranges handed to this load
        (a block may hold rows of several batches, each with its own range)."""

        def handed(row_id: int) -> bool:
            return any(first <= row_id < end for first, end in self.ranges)

        return all(handed(b.min_row_id) and handed(b.max_row_id) for b in meta.blocks)

    def add(self, first: int, end: int) -> None:
        if self.ranges and self.ranges[-1][1] == first:  # one run while nothing came between
            self.ranges[-1] = (self.ranges[-1][0], end)
        else:
            self.ranges.append((first, end))


@dataclass(frozen=True, slots=True)
class BulkCommit:
    """What a load's commit asks: its objects, and for a UNIQUE KEY table the key of each of its
    rows (row ids ascending, the writer read them from its own rows); overwrite: the objects
    replace every row of the table's partitions in the same commit."""

    txn_id: int
    schema: TableSchema
    objects: tuple[ObjectMeta, ...]
    record: LoadRecord | None = None
    row_ids: tuple[int, ...] = ()
    keys: tuple[tuple, ...] = ()
    overwrite: bool = False
    sequences: tuple = ()  # per row its value of the table's sequence column, if it has one
    deleting: frozenset[int] = frozenset()  # row ids of rows that delete their key

    def __post_init__(self) -> None:
        assert len(self.row_ids) == len(self.keys)
        assert self.schema.sequence is None or len(self.sequences) == len(self.keys)
        assert not self.deleting or self.schema.replaces_on_key
        assert all(meta.table_id == self.schema.table_id for meta in self.objects)


class OpenLoads:
    """The TN's open loads, bounded: past max_open, the ones older than timeout_seconds go."""

    def __init__(self, max_open: int, timeout_seconds: float):
        assert max_open > 0 and timeout_seconds > 0
        self.max_open = max_open
        self.timeout_seconds = timeout_seconds
        self._open: dict[int, OpenLoad] = {}
        # loads with a record that went for lack of room, until expired() is next asked (the
        # TN asks every second): at most max_open per begin
        self._dropped: list[OpenLoad] = []
        self._lock = threading.Lock()

    def begin(self, txn_id: int, table_id: int, record: LoadRecord | None = None) -> None:
        with self._lock:
            if len(self._open) >= self.max_open:
                deadline = time.monotonic() - self.timeout_seconds
                for old in [t for t, load in self._open.items() if load.began < deadline]:
                    dropped = self._open.pop(old)
                    if dropped.record is not None:
                        self._dropped.append(dropped)
            if len(self._open) >= self.max_open:
                raise TooManyLoads(f"the TN has {self.max_open} open loads; try again later")
            self._open[txn_id] = OpenLoad(txn_id, table_id, time.monotonic(), record=record)

    def expired(self, everything: bool = False) -> list[OpenLoad]:
        """The loads with a record open longer than timeout_seconds (every one with a record
        when everything), no longer open, with those dropped for lack of room."""
        deadline = time.monotonic() - self.timeout_seconds
        with self._lock:
            gone, self._dropped = self._dropped, []
            for txn_id, load in list(self._open.items()):
                if load.record is not None and (everything or load.began < deadline):
                    gone.append(self._open.pop(txn_id))
        return gone

    def record_of(self, txn_id: int) -> LoadRecord | None:
        with self._lock:
            load = self._open.get(txn_id)
        return None if load is None else load.record

    def get(self, txn_id: int) -> OpenLoad:
        with self._lock:
            load = self._open.get(txn_id)
        if load is None:
            raise LoadUnknown(
                f"load transaction {txn_id} is not open on this TN (expired, aborted, or begun "
                "before the TN restarted): load again"
            )
        return load

    def add_range(self, txn_id: int, first: int, end: int) -> None:
        self.get(txn_id).add(first, end)

    def end(self, txn_id: int) -> OpenLoad | None:
        with self._lock:
            return self._open.pop(txn_id, None)

    def check(self, bulk: BulkCommit, known_names) -> None:
        """BadLoad unless every object lies in the load's row id ranges, once, new."""
        load = self.get(bulk.txn_id)
        if load.table_id != bulk.schema.table_id:
            raise BadLoad(f"load {bulk.txn_id} was begun for table {load.table_id}")
        names = [meta.name for meta in bulk.objects]
        if len(set(names)) != len(names) or any(name in known_names for name in names):
            raise BadLoad("a load names an object twice, or one already committed")
        for meta in bulk.objects:
            if not load.holds(meta):
                raise BadLoad(f"object {meta.name} holds row ids the TN did not hand this load")


class Labels:
    """Load records by (db, label): a label of a load not aborted is taken."""

    def __init__(self, max_labels: int, keep_seconds: float):
        assert max_labels > 0 and keep_seconds > 0
        self.max_labels = max_labels
        self.keep_seconds = keep_seconds
        self._records: collections.OrderedDict[tuple[str, str], LoadRecord] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def claim(self, record: LoadRecord) -> LoadRecord | None:
        """Take record's label: None if done, else the load that holds it."""
        key = (record.db, record.label)
        with self._lock:
            self._expire()
            held = self._records.get(key)
            if held is not None and held.state != ABORTED:
                return held
            if len(self._records) >= self.max_labels:
                raise TooManyLoads(f"{self.max_labels} loads are kept; try again later")
            self._records.pop(key, None)
            self._records[key] = record
            return None

    def put(self, record: LoadRecord) -> None:
        """A load's new state (a committed one, also when replayed from the log)."""
        with self._lock:
            self._records.pop((record.db, record.label), None)
            self._records[(record.db, record.label)] = record
            self._expire()

    def forget_committed(self) -> None:
        """Let go of the committed loads' records: the log (read again) has each one that is
        committed."""
        with self._lock:
            for key in [key for key, record in self._records.items() if record.state == VISIBLE]:
                del self._records[key]

    def clean(self, db: str, label: str | None = None) -> int:
        """Let go of the finished loads of db (of label, if given): their labels may be used
        again. How many."""
        with self._lock:
            gone = [
                key
                for key, record in self._records.items()
                if key[0] == db and (label is None or key[1] == label) and record.finished
            ]
            for key in gone:
                del self._records[key]
        return len(gone)

    def get(self, db: str, label: str) -> LoadRecord | None:
        with self._lock:
            return self._records.get((db, label))

    def of_txn(self, txn_id: int) -> LoadRecord | None:
        with self._lock:
            for record in self._records.values():
                if record.txn_id == txn_id:
                    return record
        return None

    def records(self, db: str | None = None) -> list[LoadRecord]:
        with self._lock:
            self._expire()
            return [r for r in self._records.values() if db is None or r.db == db]

    def committed(self) -> list[LoadRecord]:
        """What a checkpoint keeps."""
        with self._lock:
            return [r for r in self._records.values() if r.state == VISIBLE]

    def _expire(self) -> None:
        now_ms = time.time() * 1000
        keep_ms = self.keep_seconds * 1000
        for key in [
            key
            for key, record in self._records.items()
            if record.finished and now_ms - record.finished_ms > keep_ms
        ]:
            del self._records[key]
        while len(self._records) > self.max_labels:
            oldest = next((key for key, record in self._records.items() if record.finished), None)
            if oldest is None:
                break
            del self._records[oldest]


def finished(record: LoadRecord, state: str, **changes) -> LoadRecord:
    """record at its end (VISIBLE or ABORTED) or pre-committed, stamped now."""
    assert state in (VISIBLE, ABORTED, PRECOMMITTED)
    message = str(changes.pop("message", record.message))[:MAX_MESSAGE_CHARS]
    return replace(
        record, state=state, finished_ms=int(time.time() * 1000), message=message, **changes
    )
