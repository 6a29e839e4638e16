"""The FE's configuration: its keys (conf/fe.conf) composed with the data plane's (conf/be.conf).

The mechanism (Key, Config, conf files, overrides) is `be.config`'s; this module adds the FE's keys
and how `quire fe` and `quire up` read their conf files. Only keys marked mutable change at run time
(ADMIN SET FRONTEND CONFIG).
"""

from __future__ import annotations

from pathlib import Path

from be.config import BE_KEYS, DEFAULT_BE_CONF, PACKAGE_ROOT, Config, Key

DEFAULT_FE_CONF = PACKAGE_ROOT / "conf" / "fe.conf"

FE_KEYS = (
    Key(
        "meta_dir",
        "meta",
        comment="Where the journal (journal/) and the images, VERSION and ROLE (image/) live.",
    ),
    Key(
        "log_dir",
        "log",
        comment="Where fe.log (and quire.out / quire.pid of a --daemon start) are written.",
    ),
    Key(
        "sys_log_level",
        "INFO",
        mutable=True,
        choices=("DEBUG", "INFO", "WARN", "ERROR"),
        comment="Log level: DEBUG, INFO, WARN, ERROR.",
    ),
    Key(
        "sys_log_roll_mb",
        1024,
        comment="Size at which fe.log rolls over, in MB; that many old logs are kept by sys_log_roll_num.",
    ),
    Key("sys_log_roll_num", 10, comment="Number of rolled fe.log files kept."),
    Key("query_port", 9030, comment="MySQL protocol port."),
    Key("http_port", 8030, comment="HTTP API port."),
    Key("edit_log_port", 9010, comment="Journal replication port (Raft between FEs)."),
    Key(
        "rpc_port",
        9020,
        comment="Reserved for the FE-to-FE RPC of later issues (Doris's thrift port); unused until then (SHOW FRONTENDS: RpcPort 0).",
    ),
    Key(
        "priority_networks",
        "",
        comment='CIDR list (";" separated) choosing this node\'s address; empty = 127.0.0.1.',
    ),
    Key(
        "cluster_id",
        0,
        comment="Cluster id written to VERSION at first start; 0 = a random 32-bit id.",
    ),
    Key(
        "edit_log_roll_num",
        50000,
        mutable=True,
        comment="Journal entries after the newest image that trigger a checkpoint.",
    ),
    Key(
        "checkpoint_interval_second",
        60,
        mutable=True,
        comment="Minimum seconds between two checkpoints.",
    ),
    Key("image_keep_count", 3, mutable=True, comment="Number of images kept in meta_dir/image."),
    Key(
        "master_sync_policy",
        "SYNC",
        choices=("SYNC", "WRITE_NO_SYNC", "NO_SYNC"),
        comment="Journal durability: SYNC (fsync before acknowledging), WRITE_NO_SYNC or NO_SYNC.",
    ),
    Key(
        "election_timeout_min_ms",
        600,
        comment="A follower that hears nothing from the leader for a random time in [min, max] ms calls an election.",
    ),
    Key(
        "election_timeout_max_ms",
        1000,
        comment="Upper end of that range (keep it well above the 100 ms heartbeat: a busy machine delays threads).",
    ),
    Key(
        "journal_max_frame_bytes",
        32 * 1024 * 1024,
        comment="Largest message frame read on the journal port; a peer announcing a bigger one is disconnected.",
    ),
    Key(
        "journal_max_unauthenticated_frame_bytes",
        64 * 1024,
        comment="Largest frame before a connection's first message proved the cluster token (a stranger's limit).",
    ),
    Key(
        "journal_handshake_timeout_ms",
        5000,
        comment="A journal connection that has not proved the token and named itself by then is disconnected.",
    ),
    Key(
        "journal_max_unknown_connections",
        64,
        comment="Incoming journal connections that have not named themselves yet; more are dropped at once.",
    ),
    Key(
        "meta_delay_toleration_second",
        300,
        mutable=True,
        comment="A non-leader whose replayed TimePrinter timestamp is older than this refuses reads.",
    ),
    Key(
        "catalog_trash_expire_second",
        86400,
        mutable=True,
        master_only=True,
        comment="Seconds a dropped database, table or partition stays in the recycle bin for RECOVER (DROP ... FORCE skips the bin).",
    ),
    Key(
        "catalog_trash_check_interval_second",
        30,
        mutable=True,
        master_only=True,
        comment="How often the leader looks for expired recycle bin entries and journals their erase.",
    ),
    Key(
        "dynamic_partition_enable",
        True,
        mutable=True,
        master_only=True,
        comment="Whether the leader keeps dynamic partition tables' partitions (dynamic_partition.* table properties) up to date.",
    ),
    Key(
        "materialized_view_check_interval_second",
        5,
        mutable=True,
        master_only=True,
        comment="How often the leader looks for asynchronous materialized views due for their scheduled refresh (REFRESH ... ON SCHEDULE EVERY n unit).",
    ),
    Key(
        "dynamic_partition_check_interval_seconds",
        600,
        mutable=True,
        master_only=True,
        comment="How often the leader adds the partitions dynamic partition tables want and drops the expired ones.",
    ),
    Key(
        "default_db_data_quota_bytes",
        2**63 - 1,
        mutable=True,
        comment="A database's data quota in bytes, as SHOW DATA reports it (Quota and Left rows).",
    ),
    Key(
        "default_db_replica_quota_size",
        1024 * 1024 * 1024,
        mutable=True,
        comment="A database's quota of tablet replicas, as SHOW DATA reports it.",
    ),
    Key(
        "max_multi_partition_num",
        4096,
        mutable=True,
        master_only=True,
        comment="Most partitions one batch (FROM ... TO ... INTERVAL) of CREATE TABLE may create.",
    ),
    Key(
        "max_auto_partition_num",
        2000,
        mutable=True,
        master_only=True,
        comment="Most partitions an auto partition table may have; an INSERT that would make more is refused.",
    ),
    Key(
        "alter_table_timeout_second",
        86400,
        mutable=True,
        master_only=True,
        comment="Seconds an ALTER job (schema change or rollup) may run before it is cancelled, unless its PROPERTIES give a timeout.",
    ),
    Key(
        "history_job_keep_max_second",
        7 * 24 * 3600,
        mutable=True,
        master_only=True,
        comment="Seconds a finished or cancelled ALTER job stays in SHOW ALTER TABLE before the leader removes it.",
    ),
    Key(
        "alter_scheduler_interval_millisecond",
        1000,
        mutable=True,
        master_only=True,
        comment="How often the leader moves each ALTER job on to its next state (Doris waits 10000 between rounds of real work).",
    ),
    Key("qe_max_connection", 1024, mutable=True, comment="Maximum concurrent MySQL connections."),
    Key(
        "max_allowed_packet",
        16 * 1024 * 1024,
        comment="Largest MySQL packet accepted, in bytes, and the longest text REPEAT, SPACE, LPAD, RPAD and REPLACE make (a longer one is NULL, as in MySQL).",
    ),
    Key(
        "enable_ssl",
        True,
        comment="Offer TLS on the MySQL port (clients choose; SET GLOBAL require_secure_transport = ON makes it a must).",
    ),
    Key(
        "mysql_ssl_cert_file",
        "",
        comment="PEM certificate (chain) for TLS; with mysql_ssl_key_file empty too, a self-signed pair is made in meta_dir/tls at first start.",
    ),
    Key("mysql_ssl_key_file", "", comment="PEM private key of mysql_ssl_cert_file."),
    Key(
        "journal_commit_timeout_second",
        30,
        mutable=True,
        comment="Seconds a DDL statement waits for its journal commit before failing.",
    ),
    Key(
        "kill_forward_timeout_second",
        10,
        mutable=True,
        comment="Seconds a KILL, or ADMIN SET ALL FRONTENDS CONFIG, waits for another frontend to answer.",
    ),
    Key(
        "statement_cache_size",
        4096,
        comment="Statements whose parsed form is cached per FE (repeated statements skip parsing).",
    ),
    Key(
        "statement_cache_max_sql_bytes",
        16384,
        comment="Longer statements (a 1 MB COMMENT, say) are not cached: the cache's memory stays bounded.",
    ),
    Key(
        "table_function_max_rows",
        10_000_000,
        comment='Most rows one table function in FROM makes, numbers("number" = "n") (8 bytes each, held by the FE while its query runs).',
    ),
    Key(
        "s3_table_function_max_bytes",
        1 << 30,
        comment="Most bytes of objects one s3(...) table function reads (the FE holds them while its query runs).",
    ),
    Key(
        "statement_cache_max_bytes",
        256 * 1024 * 1024,
        comment="Memory the cached statements may take together (an estimate: about 2 KB a token); the least recently used go.",
    ),
    Key(
        "information_schema_cache_max_bytes",
        64 * 1024 * 1024,
        comment="Memory the information_schema tables built for queries may take together (kept until the catalog changes); the least recently used go.",
    ),
    Key(
        "max_user_variables",
        1024,
        comment="User variables (SET @x = ...) one session may hold; a SET of one more is refused.",
    ),
    Key(
        "max_statement_tokens",
        200_000,
        comment="Statements with more tokens are refused with 1064 (sqlglot parses about 30,000 tokens a second).",
    ),
    Key(
        "long_statement_threads",
        2,
        comment="Threads parsing statements longer than statement_cache_max_sql_bytes off the event loop (a bulk INSERT of plain literals is read mostly outside the GIL, so two overlap).",
    ),
    Key(
        "max_waiting_long_statements",
        4,
        comment="Such longer statements that may wait for one of those threads (more are refused).",
    ),
    Key(
        "query_executor_threads",
        4,
        comment="Worker threads running SELECTs that need the query engine, off the event loop: at most this many run at once.",
    ),
    Key(
        "query_queue_size",
        64,
        comment="Queries waiting for a worker beyond this many are refused (the client may retry).",
    ),
    Key("query_engine_threads", 1, comment="DuckDB threads one query may use."),
    Key(
        "query_stream_hold_bytes",
        16 * 1024 * 1024,
        comment="A SELECT's answer up to this size (as rows in memory) is gathered before it is sent; a bigger one streams to the client in parts as the engine makes them.",
    ),
    Key(
        "query_stream_max_parts",
        8,
        comment="Parts of a streaming answer (up to 8192 rows each) between the engine and a client that reads slowly; the engine waits beyond.",
    ),
    Key(
        "failed_login_max_accounts",
        100_000,
        comment="Accounts whose failed logins (FAILED_LOGIN_ATTEMPTS) an FE counts at once; past it the least recently failed is forgotten.",
    ),
    Key(
        "heartbeat_interval_second",
        2,
        comment="How often each FE heartbeats every backend (TN, CN) for SHOW BACKENDS' Alive, LastHeartbeat and ErrMsg (Doris: 5).",
    ),
    Key(
        "backend_heartbeat_timeout_ms",
        2000,
        comment="A backend that does not answer a heartbeat within this is marked not alive, and reads go to another.",
    ),
    Key(
        "dml_schema_wait_second",
        5,
        comment="An INSERT, UPDATE or DELETE outside a transaction that the TN refuses because the table changed is run again once this FE has the new definition, if it gets it within this.",
    ),
    Key(
        "statement_history_size",
        1000,
        comment="Statements (from every client) an FE keeps for the web console's Sessions page, with user, duration and outcome.",
    ),
    Key(
        "console_max_logins",
        64,
        comment="Browsers logged in to the web console (http_port, /) at once; past it the least recently seen is logged out.",
    ),
    Key(
        "console_idle_timeout_second",
        1800,
        comment="A web console login unused this long is logged out.",
    ),
    Key(
        "console_page_rows",
        100,
        comment="Rows of a result the web console's SQL editor shows per page (it never holds a whole result).",
    ),
    Key(
        "console_chart_points",
        600,
        comment="Samples (one a second) the web console's charts keep: the last ten minutes by default.",
    ),
)


def load_config(
    fe_conf: str | Path | None = None,
    be_conf: str | Path | None = None,
    overrides: list[str] = (),
    with_be: bool = True,
) -> Config:
    """Every key of both schemas; conf/be.conf is read only with_be (`quire up`)."""
    conf_files = [fe_conf or DEFAULT_FE_CONF] + ([be_conf or DEFAULT_BE_CONF] if with_be else [])
    return Config.load(FE_KEYS + BE_KEYS, conf_files, overrides)
