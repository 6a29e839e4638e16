"""Doris's Stream Load on a backend: a body read as it arrives, its rows converted and written as
block objects, committed on the TN in one commit (or held, with two_phase_commit, until
_stream_load_2pc commits or aborts it). Labels make a load idempotent; the answer is Doris's JSON.

Runs on a thread of its own per load (the body comes from the HTTP server's loop through a
blocking reader); the TN is the commit pipeline in this process."""

from __future__ import annotations

import collections
import functools
import io
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from be.load import auto_partitions, convert, read
from be.load.convert import typed
from be.load.errors import (
    BadLoadRequest,
    LabelAlreadyExists,
    LoadError,
    LoadNotFound,
    TooManyFiltered,
)
from be.load.limits import LoadLimits
from be.load.objects import LoadWriter
from be.load.options import MERGE_TYPES, LoadOptions, load_options
from be.storage.errors import StorageError
from be.storage.objects import ObjectStore
from be.table_schema import TableSchema
from be.tn import loads
from be.tn.errors import CommitError, CommitOutcomeUnknown

logger = logging.getLogger(__name__)

DELETING = "__QUIRE_DELETING"  # beside a batch's rows until they are written: deletes its key
SIGNED = pa.array(["1", "true"])  # a delete sign field's values that delete

# the engine's values of SQL expressions (the FE's DuckDB text) over the rows of a batch
Evaluator = Callable[[list[str], pa.Table], list[pa.Array]]


@dataclass
class _Held:
    """A two-phase load written and waiting for commit or abort."""

    bulk: loads.BulkCommit
    writer: LoadWriter
    record: loads.LoadRecord
    since: float  # monotonic


class StreamLoads:
    def __init__(
        self,
        pipeline: Callable[[], object],
        store: ObjectStore,
        limits: LoadLimits,
        evaluate: Evaluator,
        grow: Callable[[int, pa.Table], TableSchema | None] | None = None,
        token: str = "",
    ):
        """pipeline(): the TN's commit pipeline (be/tn/pipeline.py) in this process; grow(table
        id, rows): the table's schema once it has partitions for rows (an FE in this process
        makes an auto partition table's), None if it cannot. Without grow, the FE that
        redirected a load is asked over HTTP with the cluster's token."""
        self.pipeline = pipeline
        self.grow = grow
        self.token = token
        self.store = store
        self.limits = limits
        self.evaluate = evaluate
        self._running = threading.BoundedSemaphore(limits.max_open_loads)
        self._held: dict[int, _Held] = {}
        self._lock = threading.Lock()
        self.error_logs: collections.OrderedDict[str, str] = collections.OrderedDict()

    # -- one load -----------------------------------------------------------------------------

    def load(
        self, claims: dict, headers, body: io.RawIOBase, client_ip: str, error_url: str
    ) -> dict:
        """The load's answer (Doris's keys), whatever happened."""
        started = time.monotonic()
        schema = TableSchema.from_fields(claims["schema"])
        try:
            options = load_options(headers, schema, claims)
        except LoadError as error:
            return _answer_of_failure(headers.get("label", ""), 0, error)
        if not self._running.acquire(blocking=False):
            return _answer_of_failure(
                options.label,
                0,
                LoadError(f"this backend runs {self.limits.max_open_loads} loads; try again"),
            )
        try:
            return self._load(claims, schema, options, body, client_ip, error_url, started)
        finally:
            self._running.release()

    def _load(self, claims, schema, options, body, client_ip, error_url, started) -> dict:
        pipeline = self.pipeline()
        try:
            txn_id = pipeline.begin_load(schema)
        except CommitError as error:
            return _answer_of_failure(options.label, 0, error)
        begun = time.monotonic()
        record = loads.LoadRecord(
            options.label,
            claims["db"],
            claims["table"],
            schema.table_id,
            txn_id,
            loads.PREPARE,
            user=claims["user"],
            client_ip=client_ip[:64],
            started_ms=int(time.time() * 1000),
            two_phase=options.two_phase,
        )
        try:
            held = pipeline.labels.claim(record)
        except CommitError as error:
            pipeline.abort_load(txn_id)
            return _answer_of_failure(options.label, txn_id, error)
        if held is not None:
            pipeline.abort_load(txn_id)
            return _label_taken(held)
        writer = LoadWriter(
            self.store,
            schema,
            txn_id,
            lambda count: pipeline.reserve_row_ids(txn_id, count),
            self.limits,
            keep_keys=schema.replaces_on_key,
        )
        counts = _Counts()
        url = ""
        try:
            self._write(
                self._grow_of(claims, schema),
                claims.get("where", ""),
                _merge_of(claims, schema),
                claims.get("lengths", {}),
                frozenset(claims.get("json_columns", ())),
                _defaults_of(claims),
                schema,
                options,
                body,
                writer,
                counts,
            )
            read_ms = _ms(time.monotonic() - begun)
            record = replace(
                record,
                total_rows=counts.total,
                loaded_rows=counts.loaded,
                filtered_rows=counts.filtered,
                unselected_rows=counts.unselected,
                load_bytes=body.bytes_read,
            )
            url = self._error_log(txn_id, counts, error_url)
            ratio_base = counts.total - counts.unselected
            if counts.filtered and counts.filtered > options.max_filter_ratio * ratio_base:
                raise TooManyFiltered("[DATA_QUALITY_ERROR]too many filtered rows")
            objects = writer.finish()
            bulk = loads.BulkCommit(
                txn_id,
                writer.schema,
                objects,
                record,
                tuple(writer.row_ids),
                tuple(writer.keys),
                sequences=tuple(writer.sequences),
                deleting=frozenset(writer.deleting),
            )
            committed_at = time.monotonic()
            if options.two_phase:
                self._hold(_Held(bulk, writer, record, time.monotonic()))
                record = loads.finished(record, loads.PRECOMMITTED)  # its pre-commit time
                pipeline.labels.put(record)
            else:
                commit_ts = pipeline.commit_load(bulk)
                record = loads.finished(record, loads.VISIBLE, commit_ts=commit_ts)
            logger.info(
                "stream load %s into %s.%s: %d rows in %d objects (txn %d)",
                options.label,
                record.db,
                record.table,
                counts.loaded,
                len(objects),
                txn_id,
            )
            answer = _answer(record, options, "Success", "OK", url)
            answer.update(
                LoadTimeMs=_ms(time.monotonic() - started),
                BeginTxnTimeMs=_ms(begun - started),
                ReadDataTimeMs=read_ms,
                WriteDataTimeMs=read_ms,
                CommitAndPublishTimeMs=_ms(time.monotonic() - committed_at),
            )
            return answer
        except (LoadError, CommitError, StorageError, OSError) as error:
            logger.info("stream load %s failed: %s", options.label, error)
            failure = error
        except Exception as error:  # a bug: the load fails whole, the backend goes on
            logger.exception("stream load %s failed", options.label)
            failure = LoadError(f"the load failed: {type(error).__name__}: {error}")
        unknown = isinstance(failure, CommitOutcomeUnknown)
        if not unknown:
            writer.abort()  # (an unknown outcome keeps them: the TN's sweep decides)
        pipeline.abort_load(txn_id)
        record = loads.finished(record, loads.ABORTED, message=str(failure))
        current = pipeline.labels.get(record.db, record.label)
        if not (unknown and current is not None and current.state == loads.VISIBLE):
            pipeline.labels.put(record)
        answer = _answer(record, options, "Fail", str(failure), url)
        answer["LoadTimeMs"] = _ms(time.monotonic() - started)
        return answer

    def _grow_of(self, claims: dict, schema: TableSchema):
        """How this load asks for the auto partitions its rows need (None: it does not)."""
        front = claims.get("grow")
        if self.grow is not None or not front or not self.token:
            return self.grow
        timeout = self.limits.auto_partition_timeout_seconds
        return functools.partial(
            auto_partitions.asked_of_front,
            front,
            self.token,
            timeout,
            columns=schema.partition_columns,
        )

    def _write(
        self,
        grow,
        where: str,
        merge: _Merge,
        lengths: dict[str, int],
        json_columns: frozenset[str],
        defaults: dict[str, str],
        schema: TableSchema,
        options: LoadOptions,
        body,
        writer: LoadWriter,
        counts: _Counts,
    ) -> None:
        columns = list(options.columns)
        if options.format == "json":
            batches = read.json_batches(
                body,
                columns,
                self.limits,
                counts.reading,
                options.json_by_line,
                options.strip_outer_array,
                by_paths=bool(options.jsonpaths),
            )
            if options.jsonpaths:
                batches = self._by_paths(batches, columns, options.jsonpaths)
        else:
            batches = read.csv_batches(
                body,
                columns,
                options.separator,
                self.limits,
                counts.reading,
                options.header_lines,
            )
        targets = {target for target, _ in options.mappings}
        for batch in batches:
            counts.total += batch.num_rows
            plain = batch.drop_columns([n for n in batch.column_names if n in targets])
            rows, bad = typed(plain, schema, lengths, options.strict, json_columns, defaults)
            if options.mappings and batch.num_rows:
                rows, bad = self._mapped(options, schema, batch, rows, bad)
            if merge.deletes and batch.num_rows:
                rows = rows.append_column(DELETING, self._deleting(merge, batch, rows))
            if pc.any(bad).as_py():
                counts.note_bad(batch.filter(bad), self.limits.max_error_rows)
                rows = rows.filter(pc.invert(bad))
            if where and rows.num_rows:
                keep = self._kept(where, rows)
                counts.unselected += rows.num_rows - pc.sum(keep).as_py()
                rows = rows.filter(keep)
            unplaced = writer.unplaced(rows)
            if rows.num_rows and grow is not None and pc.any(unplaced).as_py():
                larger = grow(schema.table_id, rows.filter(unplaced))
                if larger is not None:
                    writer.schema = larger
                    unplaced = writer.unplaced(rows)
            if rows.num_rows and pc.any(unplaced).as_py():
                counts.no_partition += pc.sum(unplaced).as_py()
                rows = rows.filter(pc.invert(unplaced))
            deleting = None
            if DELETING in rows.column_names:
                deleting = rows.column(DELETING).combine_chunks()
                rows = rows.drop_columns([DELETING])
            writer.add(rows, deleting)
            counts.loaded += rows.num_rows
        if body.broken is not None:
            raise BadLoadRequest(body.broken)
        counts.total += counts.reading.malformed

    def _mapped(
        self, options: LoadOptions, schema: TableSchema, batch: pa.Table, rows: pa.Table, bad
    ) -> tuple[pa.Table, pa.Array]:
        """rows with each mapped column worked out from the batch's fields (the table's typed,
        the load's own as text), and bad with the rows whose value the column cannot take."""
        mapped = dict(options.mappings)
        given = {
            name: rows.column(name)
            if name in schema.names and name not in mapped
            else batch.column(name)
            for name in batch.column_names
        }
        for name in rows.column_names:  # the table's columns the file lacks: their defaults
            if name not in given and name not in mapped:
                given[name] = rows.column(name)
        fields = pa.table(given)
        try:
            values = self.evaluate([sql for _, sql in options.mappings], fields)
        except BadLoadRequest as error:
            raise BadLoadRequest(f"a column mapping failed: {error}") from None
        for (target, _), computed in zip(options.mappings, values, strict=True):
            column = schema.column(target)
            converted, failed = convert.converted(computed, column.type)
            if options.strict:
                bad = pc.or_(bad, failed)
            if not column.nullable:
                bad = pc.or_(bad, pc.is_null(converted))
            rows = rows.set_column(rows.schema.get_field_index(target), target, converted)
        return rows, bad

    def _by_paths(self, batches, columns: list[str], paths: tuple[str, ...]):
        """Each batch of objects' texts as the load's columns, each read at its path (DuckDB's
        JSONPath: a text as it is, a number's, an object's or an array's JSON text)."""
        document = exp.column(read.DOCUMENT)
        expressions = [
            exp.func("json_extract_string", document, exp.Literal.string(path)).sql("duckdb")
            for path in paths
        ]
        for batch in batches:
            try:
                values = self.evaluate(expressions, batch)
            except BadLoadRequest as error:
                raise BadLoadRequest(f"jsonpaths could not be read: {error}") from None
            yield pa.Table.from_arrays([v.cast(pa.string()) for v in values], names=columns)

    def _deleting(self, merge: _Merge, batch: pa.Table, rows: pa.Table) -> pa.Array:
        """Per row, whether it deletes its key: every row of a DELETE load; of a MERGE load,
        those its delete condition holds for; a row whose delete sign field is 1."""
        if merge.kind == "DELETE":
            return pa.array(np.ones(rows.num_rows, np.bool_))
        deleting = pa.array(np.zeros(rows.num_rows, np.bool_))
        if merge.condition:
            try:
                (held,) = self.evaluate([f"({merge.condition})"], rows)
            except BadLoadRequest as error:
                raise BadLoadRequest(f"the delete condition failed: {error}") from None
            deleting = pc.or_(deleting, pc.fill_null(held.cast(pa.bool_()), False))
        if merge.sign is not None:
            sign = pc.utf8_trim_whitespace(batch.column(merge.sign).cast(pa.string()))
            deleting = pc.or_(deleting, pc.fill_null(pc.is_in(sign, SIGNED), False))
        return deleting

    def _kept(self, where: str, rows: pa.Table) -> pa.Array:
        """Per row, whether the load's WHERE keeps it."""
        try:
            (keep,) = self.evaluate([f"({where})"], rows)
        except BadLoadRequest as error:
            raise BadLoadRequest(f"the where filter failed: {error}") from None
        return pc.fill_null(keep.cast(pa.bool_()), False)

    def _error_log(self, txn_id: int, counts: _Counts, error_url: str) -> str:
        lines = list(counts.reading.first_errors) + counts.bad_rows
        if counts.no_partition:
            lines.append(f"Reason: no partition for this tuple ({counts.no_partition} rows)")
        if not lines:
            return ""
        name = f"error_log_{txn_id}"
        with self._lock:
            self.error_logs[name] = "\n".join(lines[: self.limits.max_error_rows]) + "\n"
            while len(self.error_logs) > self.limits.max_error_logs:
                self.error_logs.popitem(last=False)
        return f"{error_url}?file={name}"

    # -- two-phase commit ---------------------------------------------------------------------

    def _hold(self, held: _Held) -> None:
        with self._lock:
            self._expire_held()
            if len(self._held) >= self.limits.max_precommitted:
                raise LoadError(f"{self.limits.max_precommitted} loads wait for their commit")
            self._held[held.bulk.txn_id] = held

    def two_phase(self, db: str, user: str, admin: bool, headers) -> dict:
        """_stream_load_2pc: commit or abort a held load named by txn_id or label."""
        operation = headers.get("txn_operation", "").strip().lower()
        if operation not in ("commit", "abort"):
            raise BadLoadRequest("txn_operation must be commit or abort")
        txn_text, label = headers.get("txn_id", "").strip(), headers.get("label", "").strip()
        pipeline = self.pipeline()
        with self._lock:
            self._expire_held()
            held = None
            if txn_text:
                if not txn_text.isdigit():
                    raise BadLoadRequest("txn_id must be a number")
                held = self._held.get(int(txn_text))
            elif label:
                held = next(
                    (
                        h
                        for h in self._held.values()
                        if (h.record.db, h.record.label) == (db, label)
                    ),
                    None,
                )
            else:
                raise BadLoadRequest("name the transaction with a txn_id or a label header")
            if held is None or held.record.db != db:
                known = (
                    pipeline.labels.of_txn(int(txn_text))
                    if txn_text
                    else pipeline.labels.get(db, label)
                )
                state = known.state if known is not None and known.db == db else None
                raise LoadNotFound(
                    f"transaction [{txn_text or label}] is not a precommitted load of this "
                    f"database" + (f": it is {state}" if state else "")
                )
            if not admin and held.record.user != user:
                raise LoadNotFound(f"transaction [{held.bulk.txn_id}] is another user's load")
            del self._held[held.bulk.txn_id]
        txn_id = held.bulk.txn_id
        if operation == "abort":
            self._abort(held, "aborted by _stream_load_2pc")
            return {"status": "Success", "msg": f"transaction [{txn_id}] abort successfully."}
        try:
            commit_ts = pipeline.commit_load(held.bulk)
        except CommitError as error:
            if not isinstance(error, CommitOutcomeUnknown):
                self._abort(held, str(error))
            raise
        pipeline.labels.put(loads.finished(held.record, loads.VISIBLE, commit_ts=commit_ts))
        return {"status": "Success", "msg": f"transaction [{txn_id}] commit successfully."}

    def _abort(self, held: _Held, why: str) -> None:
        held.writer.abort()
        pipeline = self.pipeline()
        pipeline.abort_load(held.bulk.txn_id)
        pipeline.labels.put(loads.finished(held.record, loads.ABORTED, message=why))

    def _expire_held(self) -> None:
        """Under the lock: abort what waited longer than precommit_timeout_seconds."""
        deadline = time.monotonic() - self.limits.precommit_timeout_seconds
        for txn_id in [t for t, held in self._held.items() if held.since < deadline]:
            self._abort(self._held.pop(txn_id), "precommitted load timed out")

    def abort_all(self) -> None:
        """The backend stops: held loads are aborted (their objects removed)."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for item in held:
            try:
                self._abort(item, "the backend stopped")
            except CommitError:
                pass


class _Counts:
    def __init__(self):
        self.reading = read.Counts()
        self.total = 0
        self.loaded = 0
        self.unselected = 0
        self.no_partition = 0
        self.converted_bad = 0
        self.bad_rows: list[str] = []

    @property
    def filtered(self) -> int:
        return self.reading.malformed + self.converted_bad + self.no_partition

    def note_bad(self, rows: pa.Table, keep: int) -> None:
        self.converted_bad += rows.num_rows
        for row in rows.slice(0, max(keep - len(self.bad_rows), 0)).to_pylist():
            self.bad_rows.append(
                "Reason: a value does not convert to its column's type, or is NULL in a NOT "
                f"NULL column. src line: [{', '.join(str(v) for v in row.values())}]"
            )


def _answer(
    record: loads.LoadRecord, options: LoadOptions, status: str, message: str, url: str
) -> dict:
    answer = {
        "TxnId": record.txn_id,
        "Label": record.label,
        "Comment": options.comment,
        "TwoPhaseCommit": "true" if options.two_phase else "false",
        "Status": status,
        "Message": message,
        "NumberTotalRows": record.total_rows,
        "NumberLoadedRows": record.loaded_rows,
        "NumberFilteredRows": record.filtered_rows,
        "NumberUnselectedRows": record.unselected_rows,
        "LoadBytes": record.load_bytes,
        "LoadTimeMs": 0,
        "BeginTxnTimeMs": 0,
        "StreamLoadPutTimeMs": 0,
        "ReadDataTimeMs": 0,
        "WriteDataTimeMs": 0,
        "ReceiveDataTimeMs": 0,
        "CommitAndPublishTimeMs": 0,
    }
    if url:
        answer["ErrorURL"] = url
    return answer


def _label_taken(held: loads.LoadRecord) -> dict:
    error = LabelAlreadyExists(
        f"errCode = 2, detailMessage = Label [{held.label}] has already been used, relate to "
        f"txn [{held.txn_id}]",
        "FINISHED" if held.state == loads.VISIBLE else "RUNNING",
    )
    answer = _answer_of_failure(held.label, held.txn_id, error)
    answer["ExistingJobStatus"] = error.existing_state
    return answer


def _answer_of_failure(label: str, txn_id: int, error: Exception) -> dict:
    return {
        "TxnId": txn_id,
        "Label": label,
        "Status": getattr(error, "status", "Fail"),
        "Message": str(error),
        "NumberTotalRows": 0,
        "NumberLoadedRows": 0,
        "NumberFilteredRows": 0,
        "NumberUnselectedRows": 0,
        "LoadBytes": 0,
        "LoadTimeMs": 0,
    }


@dataclass(frozen=True)
class _Merge:
    kind: str = "APPEND"
    condition: str = ""  # the engine's SQL over the table's columns
    sign: str | None = None  # the field that is Doris's delete sign

    @property
    def deletes(self) -> bool:
        return self.kind != "APPEND" or self.sign is not None


def _defaults_of(claims: dict) -> dict[str, str]:
    """The defaults the FE read for the load (each column's value as text, CURRENT_TIMESTAMP
    as the load's time); none from an FE that sends none (each column's backfill then)."""
    defaults = claims.get("defaults", {})
    if type(defaults) is not dict or any(
        type(name) is not str or type(value) is not str for name, value in defaults.items()
    ):
        raise BadLoadRequest("the load's defaults are malformed")
    return defaults


def _merge_of(claims: dict, schema: TableSchema) -> _Merge:
    """The FE's reading of merge_type, delete and the delete sign field (a signed claim: its
    shape is checked)."""
    merge = claims.get("merge") or {}
    try:
        kind, condition, sign = (
            merge.get("type", "APPEND"),
            merge.get("delete", ""),
            merge.get("sign"),
        )
    except AttributeError:
        raise BadLoadRequest("the load's merge is malformed") from None
    if kind not in MERGE_TYPES or not isinstance(condition, str):
        raise BadLoadRequest("the load's merge is malformed")
    if (kind != "APPEND" or sign is not None) and not schema.replaces_on_key:
        raise BadLoadRequest("load by MERGE or DELETE is only supported in unique tables.")
    return _Merge(kind, condition, sign if isinstance(sign, str) else None)


def _ms(seconds: float) -> int:
    return int(seconds * 1000)
