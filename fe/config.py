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
    Key("meta_dir", "meta"),
    Key("log_dir", "log"),
    Key("sys_log_level", "INFO", mutable=True, choices=("DEBUG", "INFO", "WARN", "ERROR")),
    Key("sys_log_roll_mb", 1024),
    Key("sys_log_roll_num", 10),
    Key("query_port", 9030),
    Key("http_port", 8030),
    Key("edit_log_port", 9010),
    Key("rpc_port", 9020),
    Key("priority_networks", ""),
    Key("cluster_id", 0),
    Key("edit_log_roll_num", 50000, mutable=True),
    Key("checkpoint_interval_second", 60, mutable=True),
    Key("image_keep_count", 3, mutable=True),
    Key("master_sync_policy", "SYNC", choices=("SYNC", "WRITE_NO_SYNC", "NO_SYNC")),
    Key("election_timeout_min_ms", 600),
    Key("election_timeout_max_ms", 1000),
    Key("journal_max_frame_bytes", 32 * 1024 * 1024),
    Key("journal_max_unauthenticated_frame_bytes", 64 * 1024),
    Key("journal_handshake_timeout_ms", 5000),
    Key("journal_max_unknown_connections", 64),
    Key("meta_delay_toleration_second", 300, mutable=True),
    Key("qe_max_connection", 1024, mutable=True),
    Key("max_allowed_packet", 16 * 1024 * 1024),
    Key("enable_ssl", True),
    Key("mysql_ssl_cert_file", ""),
    Key("mysql_ssl_key_file", ""),
    Key("journal_commit_timeout_second", 30, mutable=True),
    Key("statement_cache_size", 4096),
    Key("statement_cache_max_sql_bytes", 16384),
    Key("max_statement_tokens", 200_000),
    Key("max_waiting_long_statements", 4),
    Key("query_executor_threads", 4),
    Key("query_queue_size", 64),
    Key("query_engine_threads", 1),
    Key("failed_login_max_accounts", 100_000),
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
