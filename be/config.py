"""Configuration: `key = value` conf files, `--override key=value`, and run-time changes; and the
data plane's keys (conf/be.conf).

A process's schema (its tuple of Keys) is the single list of its keys: the conf files document the
same keys (a test keeps them in step), an unknown key is an error, and only keys marked mutable
change at run time. The mechanism lives here, not in `fe`, because the data plane reads its conf
without importing `fe`; `fe.config` composes the FE's keys with these.
"""

from __future__ import annotations

import configparser
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BE_CONF = PACKAGE_ROOT / "conf" / "be.conf"


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Key:
    name: str
    default: object
    mutable: bool = False
    choices: tuple[str, ...] = ()
    comment: str = ""  # its comment line(s) in the conf file
    master_only: bool = False  # read by the leader's work alone (ADMIN SHOW CONFIG's MasterOnly)

    def parse(self, text: str) -> object:
        text = text.strip()
        if isinstance(self.default, bool):
            if text.lower() not in ("true", "false"):
                raise ConfigError(f"{self.name} must be true or false, not {text!r}")
            return text.lower() == "true"
        if isinstance(self.default, int):
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{self.name} must be an integer, not {text!r}") from None
        if self.choices and text.upper() not in self.choices:
            raise ConfigError(f"{self.name} must be one of {', '.join(self.choices)}, not {text!r}")
        return text.upper() if self.choices else text


BE_KEYS = (
    Key(
        "storage_root",
        "storage",
        comment="Where the TN keeps its log (wal/) and the objects (objects/): a folder or a pyarrow filesystem URI.",
    ),
    Key(
        "tn_log_dir",
        "",
        comment="A local folder for the TN's log (wal/) instead of storage_root; an s3:// storage_root needs one.",
    ),
    # The logservice: the TN's write-ahead log and timestamp oracle.
    Key(
        "logservice_replicas",
        1,
        comment="Replicas of the TN's log: 1 (in the TN's storage_root) or 3 (logservice_peers).",
    ),
    Key(
        "logservice_port",
        9071,
        comment="The port this log replica replicates on when logservice_replicas is 3.",
    ),
    Key(
        "logservice_peers",
        "",
        comment="Every log replica's host:port, comma-separated, when logservice_replicas is 3.",
    ),
    Key(
        "logservice_max_record_bytes",
        16777216,
        comment="The largest record the log takes (one commit's entry in the TN's log).",
    ),
    Key(
        "logservice_append_timeout_ms",
        10000,
        comment="How long an append waits for a majority of replicas before it fails.",
    ),
    Key(
        "logservice_truncate_interval_second",
        10,
        comment="How often each replica drops the log entries below the TN's truncate point.",
    ),
    Key(
        "logservice_truncate_keep_entries",
        1000,
        comment="Entries a replica keeps below its newest, however old: a follower this far behind catches up from the log.",
    ),
    Key(
        "tso_window_millisecond",
        1000,
        comment="How far ahead of the clock the timestamp oracle reserves timestamps with one log write.",
    ),
    # Logtail: the TN's stream of committed changes to the CNs.
    Key(
        "logtail_port",
        9070,
        comment="The TN's logtail port: one stream per CN, authenticated with the cluster token.",
    ),
    Key(
        "logtail_heartbeat_interval_millisecond",
        5,
        comment="How often the TN commits an empty transaction that advances every CN's watermark (MatrixOne: 2 ms; 5 keeps a read's wait for the watermark under 10 ms at a fraction of the CPU). The TN of `quire up`, whose one CN shares its process, commits one every tn_idle_check_interval_millisecond instead, and when a read waits for it.",
    ),
    Key(
        "tn_idle_check_interval_millisecond",
        50,
        comment="How often the idle TN of `quire up` commits an empty transaction and looks for due flushes, merges and checkpoints (a read waiting for its CN's watermark asks for one at once).",
    ),
    Key(
        "logtail_page_size",
        256,
        comment="Commits per page of the logtail table (found by binary search over pages, then within one).",
    ),
    Key(
        "logtail_max_response_bytes",
        32 << 20,
        comment="The largest pull answering a subscription; a larger one makes the TN flush and checkpoint first.",
    ),
    Key(
        "logtail_send_queue_size",
        1024,
        comment="Messages queued for one CN; a CN further behind is disconnected, and resubscribes from its watermark.",
    ),
    # Object storage and the block format (be/storage)
    Key(
        "s3_endpoint",
        "",
        comment="The S3-compatible endpoint for an s3:// storage_root, as http(s)://host[:port]; empty for AWS itself.",
    ),
    Key(
        "s3_region",
        "",
        comment="The S3 region; empty for the AWS default (AWS_DEFAULT_REGION, then us-east-1).",
    ),
    Key(
        "s3_access_key",
        "",
        comment="The S3 access key; empty to take the AWS default chain (AWS_ACCESS_KEY_ID in the environment, then ~/.aws). Never logged.",
    ),
    Key(
        "s3_secret_key",
        "",
        comment="The S3 secret key, set together with s3_access_key; empty to take AWS_SECRET_ACCESS_KEY from the environment or ~/.aws. Never logged.",
    ),
    Key(
        "s3_connect_timeout_ms",
        5000,
        comment="Longest wait to connect to the S3 endpoint.",
    ),
    Key(
        "s3_request_timeout_ms",
        30000,
        comment="Longest wait for one S3 request.",
    ),
    Key(
        "s3_max_attempts",
        3,
        comment="Attempts of one S3 request before its error is reported (pyarrow's standard retry strategy).",
    ),
    Key(
        "block_rows",
        8192,
        comment="Rows of a block (a Parquet row group of an object), as MatrixOne's.",
    ),
    Key(
        "max_object_rows",
        8388608,
        comment="Most rows of one object (a flush or a merge); a multiple of block_rows.",
    ),
    Key(
        "max_object_bytes",
        536870912,
        comment="Most bytes of one object, written or read.",
    ),
    Key(
        "block_compression",
        "ZSTD",
        choices=("ZSTD", "LZ4", "SNAPPY", "NONE"),
        comment="How blocks are compressed: ZSTD, LZ4, SNAPPY or NONE.",
    ),
    Key(
        "block_dictionary_bytes",
        16384,
        comment="A block's column whose dictionary passes this many bytes is written plain (mostly distinct values are not worth one).",
    ),
    Key(
        "merge_small_object_bytes",
        16777216,
        comment="A tablet's objects smaller than this are merged once there are merge_min_objects of them.",
    ),
    Key(
        "merge_min_objects",
        8,
        comment="How many small objects of a tablet make a merge.",
    ),
    Key(
        "merge_max_objects",
        64,
        comment="Most objects one merge takes.",
    ),
    Key(
        "merge_max_bytes",
        268435456,
        comment="Most bytes one merge reads; at least merge_min_objects x merge_small_object_bytes.",
    ),
    # TN and CN processes (quire tn, quire cn): the ports FEs call and the CN's way to the TN.
    Key(
        "bind_host",
        "127.0.0.1",
        comment="The address the TN's and CN's ports listen on (0.0.0.0 for every interface).",
    ),
    Key(
        "tn_service_port",
        9060,
        comment="The TN's port for FEs (commits, read timestamps, snapshot reads); ALTER SYSTEM ADD BACKEND names it.",
    ),
    Key(
        "cn_service_port",
        9061,
        comment="The CN's port for FEs (snapshot reads); ALTER SYSTEM ADD BACKEND names it.",
    ),
    Key(
        "tn_logtail_address",
        "127.0.0.1:9070",
        comment="Where a CN subscribes to logtail: the TN's host and logtail_port.",
    ),
    Key(
        "node_max_message_bytes",
        268435456,
        comment="The largest request or reply on the TN's and CN's ports (a write set, a snapshot, one part of a query's result).",
    ),
    Key(
        "node_max_connections",
        256,
        comment="Connections the TN's or CN's port accepts at once; reads waiting on a node are bounded by it too.",
    ),
    Key(
        "cn_max_read_wait_ms",
        10000,
        comment="Longest a read waits for a CN (or the TN) to have everything up to its timestamp.",
    ),
    Key(
        "node_log_dir",
        "log",
        comment="Where quire tn and quire cn write their log (tn.log, cn.log) and pid file (tn.pid, cn.pid).",
    ),
    # Flush, checkpoints and the CN's cache (be/tn/flush.py, be/cn)
    Key(
        "flush_rows",
        1000000,
        comment="The TN flushes a table's unflushed rows and deletes to objects once there are this many.",
    ),
    Key(
        "flush_bytes",
        134217728,
        comment="The TN flushes a table once its unflushed rows and deletes take this many bytes in memory.",
    ),
    Key(
        "flush_interval_second",
        300,
        comment="The TN flushes a table whose oldest unflushed change is this old.",
    ),
    Key(
        "tn_checkpoint_interval_second",
        600,
        comment="How often the TN flushes every table, writes a checkpoint object and truncates its log behind it.",
    ),
    Key(
        "merged_object_retention_second",
        3600,
        comment="Objects a merge replaced are deleted this long after it; snapshots older than the merge read them until then.",
    ),
    Key(
        "cn_cache_bytes",
        268435456,
        comment="Bytes of decoded objects and tombstones a CN keeps for the next reads.",
    ),
    Key(
        "cn_key_index_max_rows",
        2000000,
        comment="A CN indexes a table by its first key column for point and range reads while it has at most this many rows (the index holds a copy of them); 0: never.",
    ),
    Key(
        "cn_key_index_history_second",
        2,
        comment="A CN's key index forgets the row versions deleted longer ago than this; snapshots older than that are read without it.",
    ),
    # Queries a CN runs for FEs.
    Key(
        "cn_query_workers",
        4,
        comment="Queries a CN runs at once (each builds its tables' snapshots, then DuckDB runs it).",
    ),
    Key(
        "cn_query_queue_size",
        64,
        comment="Queries waiting for one of those workers beyond which a CN refuses more (the FE tries another CN).",
    ),
    Key("cn_query_engine_threads", 1, comment="DuckDB threads one query may use on a CN."),
    Key(
        "cn_query_max_memory_bytes",
        2147483648,
        comment="Memory one query may use on a CN, its result included: the lower of this and the session's exec_mem_limit.",
    ),
    # Tombstone compaction and time travel (be/tn/compaction.py, be/storage/compaction.py)
    Key(
        "tombstone_compaction_min_objects",
        16,
        comment="The TN rewrites a tablet's objects without the rows its tombstones deleted before the oldest readable snapshot once it has this many such tombstone objects (they are then removed).",
    ),
    Key(
        "tombstone_compaction_deleted_percent",
        20,
        comment="Or once those tombstones delete this percentage (1 to 100) of the tablet's rows.",
    ),
    Key(
        "tombstone_compaction_max_objects",
        256,
        comment="Most objects (data and tombstones together) one tombstone compaction rewrites and removes; at most 4096.",
    ),
    Key(
        "time_travel_retention_second",
        3600,
        comment="Snapshots this old stay readable (AS OF, read_ts) and keep their conflict information; older ones are refused, and tombstones older than this may be compacted away.",
    ),
    Key(
        "tn_commit_timeout_second",
        30,
        comment="A commit not in the TN's log by then is answered with an unknown outcome; less than time_travel_retention_second.",
    ),
    Key(
        "tn_commit_on_caller_max_bytes",
        65536,
        comment="In `quire up`, a write set up to this size is committed on the thread of the MySQL front that asked (no hand-over to the TN's thread and back); a larger one, and every commit while the TN's thread has work of its own, goes to the TN's thread.",
    ),
    Key(
        "tn_commit_on_caller_wait_millisecond",
        5,
        comment="How long such a commit waits on that thread for its log append; a slower answer is taken up when it comes, the thread serving other clients meanwhile.",
    ),
    # The CN's memory: what it keeps besides the rows of the tables it follows.
    Key(
        "cn_snapshot_cache_bytes",
        268435456,
        comment="Bytes of table snapshots and key indexes a CN keeps for the next reads, across all its tables (the least recently read go first; a larger one is used once, not kept); 0: none kept.",
    ),
    Key(
        "cn_unsubscribe_idle_second",
        600,
        comment="A CN unsubscribes a table no read asked for this long and drops its rows; the next read subscribes again and waits for it; 0: never.",
    ),
    # Bulk loads: Stream Load on the backend's HTTP port, and the TN's commit of objects written elsewhere.
    Key(
        "webserver_port",
        8040,
        comment="The backend's HTTP port (Doris's webserver_port): Stream Load, which FEs redirect here; served by the TN (quire tn, and quire up); 0 picks a free port.",
    ),
    Key(
        "streaming_load_max_mb",
        10240,
        comment="The largest body one Stream Load may send, in MB.",
    ),
    Key(
        "streaming_load_json_max_mb",
        100,
        comment="The largest body of a JSON Stream Load read whole (a JSON array, or one object: without read_json_by_line), in MB.",
    ),
    Key(
        "stream_load_max_running",
        16,
        comment="Stream Loads a backend runs at once; more are refused until one ends.",
    ),
    Key(
        "stream_load_precommit_timeout_second",
        3600,
        comment="A two-phase Stream Load not committed or aborted by then (_stream_load_2pc) is aborted.",
    ),
    Key(
        "stream_load_token_ttl_second",
        300,
        comment="How long the token of an FE's redirect to the backend is good.",
    ),
    Key(
        "label_keep_max_second",
        259200,
        comment="Labels of finished loads are kept this long (a load with the same label is refused meanwhile); committed ones survive TN restarts.",
    ),
    Key(
        "max_open_loads",
        64,
        comment="Bulk loads (Stream Load, Spark writes) open on the TN at once.",
    ),
    # Spark writes: df.write.format("quire") tasks write objects straight to storage; the FE begins and commits the load.
    Key(
        "spark_write_token_ttl_second",
        3600,
        comment="How long the token an FE signs for a Spark write (its row ids, commit and abort) is good: the longest a write may run.",
    ),
    Key(
        "load_timeout_second",
        3600,
        comment="A Spark write's load still open after this long (its driver died) is aborted: SHOW LOAD shows it CANCELLED.",
    ),
)


def tn_log_folder(config: Config) -> Path:
    """Where the TN keeps its log: tn_log_dir, else storage_root, which must be a folder then."""
    if str(config["tn_log_dir"]):
        return config.path("tn_log_dir")
    root = str(config["storage_root"])
    if "://" in root and not root.startswith("file://"):
        raise ConfigError(
            f"storage_root {root.split('://')[0]}://... keeps objects only: set tn_log_dir, a "
            "local folder for the TN's log"
        )
    return Path(root.removeprefix("file://")).resolve()


def tn_log_key(config: Config) -> str:
    """The key that names tn_log_folder: what an operator changes to move it."""
    return "tn_log_dir" if str(config["tn_log_dir"]) else "storage_root"


def read_conf_file(path: str | Path) -> dict[str, str]:
    """key = value lines with # comments, as Doris's fe.conf; no sections."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist")
    parser = configparser.ConfigParser(
        interpolation=None, comment_prefixes=("#",), inline_comment_prefixes=None, strict=True
    )
    parser.optionxform = str
    try:
        parser.read_string("[conf]\n" + path.read_text(encoding="utf-8"), source=str(path))
    except configparser.Error as error:
        raise ConfigError(f"{path}: {error}") from None
    return dict(parser["conf"])


def parse_override(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"--override wants key=value, not {text!r}")
    return name.strip(), value.strip()


class Config:
    """Typed, validated configuration; reads are lock-free, run-time changes take a lock."""

    def __init__(self, keys: Iterable[Key], values: dict[str, object]):
        self._keys = {key.name: key for key in keys}
        assert set(values) == set(self._keys), "a value for every key of the schema"
        self._values = values
        self._lock = threading.Lock()

    @classmethod
    def load(
        cls, keys: Iterable[Key], conf_files: Iterable[str | Path], overrides: Iterable[str] = ()
    ) -> Config:
        """The schema's defaults, then each conf file in order, then the overrides."""
        keys = tuple(keys)
        schema = {key.name: key for key in keys}
        assert len(schema) == len(keys), "a key belongs to one schema"
        raw: dict[str, str] = {}
        for path in conf_files:
            raw.update(read_conf_file(path))
        for text in overrides:
            name, value = parse_override(text)
            raw[name] = value
        values = {key.name: key.default for key in schema.values()}
        for name, text in raw.items():
            key = schema.get(name)
            if key is None:
                raise ConfigError(f"unknown configuration key {name!r}")
            values[name] = key.parse(text)
        return cls(schema.values(), values)

    def __getitem__(self, name: str):
        return self._values[name]

    def items(self) -> list[tuple[Key, object]]:
        return [(self._keys[name], value) for name, value in sorted(self._values.items())]

    def set(self, name: str, text: str) -> None:
        key = self._keys.get(name)
        if key is None:
            raise ConfigError(f"unknown configuration key {name!r}")
        if not key.mutable:
            raise ConfigError(f"{name} cannot be changed at run time; set it in the conf file")
        value = key.parse(text)
        with self._lock:
            self._values[name] = value

    def path(self, name: str) -> Path:
        return Path(str(self._values[name])).resolve()
