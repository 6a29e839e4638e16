"""System variables: mysql-mimic's variable store with Quire's schema.

Session values live in the session; global values set with SET GLOBAL are journaled and read from
the catalog, so every FE answers the same.
"""

from __future__ import annotations

from typing import Any

from mysql_mimic.variables import SYSTEM_VARIABLES, GlobalVariables, SessionVariables

from be.engine.ciphers import mode_name
from metadata.catalog import Catalog

VERSION = "5.7.99"


def doris_boolean(value: Any) -> str:
    """Doris's boolean variables: set as ON/OFF, true/false or 1/0, shown as true/false."""
    lowered = str(value).strip().lower()
    if lowered in ("on", "true", "1"):
        return "true"
    if lowered in ("off", "false", "0"):
        return "false"
    raise ValueError(f"expected true or false, not {value!r}")


def encryption_mode(value: Any) -> str:
    """block_encryption_mode: AES_ENCRYPT's and AES_DECRYPT's mode, in Doris's (AES_128_ECB) or
    MySQL's (aes-128-ecb) spelling; '' is the default, AES_128_ECB."""
    if mode_name(str(value)) is None:
        raise ValueError(f"no encryption mode {value!r}")
    return str(value)


# The commonly set variables of Doris's SessionVariable, with its defaults and types.
DORIS_SESSION_VARIABLES = {
    "enable_nereids_planner": (doris_boolean, "true", True),
    "enable_fallback_to_original_planner": (doris_boolean, "false", True),
    "enable_nereids_dml": (doris_boolean, "true", True),
    "enable_vectorized_engine": (doris_boolean, "true", True),
    "enable_pipeline_engine": (doris_boolean, "true", True),
    "enable_pipeline_x_engine": (doris_boolean, "true", True),
    "show_hidden_columns": (doris_boolean, "false", True),
    "enable_profile": (doris_boolean, "false", True),
    "enable_insert_strict": (doris_boolean, "true", True),
    "enable_sql_cache": (doris_boolean, "false", True),
    "enable_query_cache": (doris_boolean, "false", True),
    "enable_cost_based_join_reorder": (doris_boolean, "false", True),
    "enable_bucket_shuffle_join": (doris_boolean, "true", True),
    "disable_colocate_plan": (doris_boolean, "false", True),
    "disable_join_reorder": (doris_boolean, "false", True),
    "enable_spill": (doris_boolean, "false", True),
    "enable_unique_key_partial_update": (doris_boolean, "false", True),
    "forward_to_master": (doris_boolean, "true", True),
    "allow_partition_column_nullable": (doris_boolean, "true", True),
    "parallel_fragment_exec_instance_num": (int, 8, True),
    "parallel_pipeline_task_num": (int, 0, True),
    "batch_size": (int, 4064, True),
    "default_order_by_limit": (int, -1, True),
    "max_scan_key_num": (int, -1, True),
    "max_pushdown_conditions_per_column": (int, -1, True),
    "send_batch_parallelism": (int, 1, True),
    "load_mem_limit": (int, 0, True),
    "insert_max_filter_ratio": (float, 1.0, True),
    "runtime_filter_mode": (str, "GLOBAL", True),
    "runtime_filter_type": (str, "IN_OR_BLOOM_FILTER,MIN_MAX", True),
    "prefer_join_method": (str, "broadcast", True),
    "resource_group": (str, "", True),
    "workload_group": (str, "", True),
    "sql_dialect": (str, "doris", True),
    "block_encryption_mode": (encryption_mode, "", True),
}
VERSION_COMMENT = "Quire FE 0.1.0 (Doris-compatible metadata service)"

SCHEMA = {
    **SYSTEM_VARIABLES,
    "version": (str, VERSION, False),
    "version_comment": (str, VERSION_COMMENT, False),
    "sql_mode": (str, "ONLY_FULL_GROUP_BY", True),
    "transaction_isolation": (str, "REPEATABLE-READ", True),
    "tx_isolation": (str, "REPEATABLE-READ", True),
    "tx_read_only": (bool, False, True),
    "default_storage_engine": (str, "OLAP", True),
    "default_tmp_storage_engine": (str, "OLAP", True),
    "storage_engine": (str, "OLAP", True),
    "license": (str, "Apache License, Version 2.0", False),
    "query_cache_size": (int, 0, True),
    "query_cache_type": (str, "OFF", True),
    "have_query_cache": (str, "NO", False),
    "net_read_timeout": (int, 60, True),
    "character_set_system": (str, "utf8mb3", False),
    "character_set_filesystem": (str, "binary", True),
    "sql_safe_updates": (int, 0, True),
    "sql_quote_show_create": (bool, True, True),
    "sql_notes": (bool, True, True),
    "sql_warnings": (bool, False, True),
    "unique_checks": (bool, True, True),
    "foreign_key_checks": (bool, True, True),
    "names": (str, "utf8mb4", True),
    "protocol_version": (int, 10, False),
    "version_compile_os": (str, "Linux", False),
    "version_compile_machine": (str, "x86_64", False),
    "default_week_format": (int, 0, True),
    "div_precision_increment": (int, 4, True),
    "innodb_lock_wait_timeout": (int, 50, True),
    "lock_wait_timeout": (int, 31536000, True),
    "max_connections": (int, 1024, False),
    "session_track_schema": (bool, True, True),
    "session_track_state_change": (bool, False, True),
    "session_track_system_variables": (str, "", True),
    "session_track_transaction_info": (str, "OFF", True),
    "query_timeout": (int, 900, True),
    "insert_timeout": (int, 14400, True),
    "exec_mem_limit": (int, 2147483648, True),
    "time_format": (str, "%H:%i:%s", False),
    "date_format": (str, "%Y-%m-%d", False),
    "datetime_format": (str, "%Y-%m-%d %H:%i:%s", False),
    "last_insert_id": (int, 0, True),
    # Quire: reads as of this time ('' = the newest data): a datetime or a commit timestamp
    "read_ts": (str, "", True),
    "identity": (int, 0, True),
    "warning_count": (int, 0, False),
    "error_count": (int, 0, False),
    "hostname": (str, "localhost", False),
    "port": (int, 9030, False),
    "socket": (str, "", False),
    "ssl_cipher": (str, "", False),
    "have_ssl": (str, "DISABLED", False),
    "require_secure_transport": (bool, False, True),
    "wait_timeout": (int, 28800, True),
    "group_concat_max_len": (int, 2147483646, True),
    "max_user_connections": (int, 100, True),
    "optimizer_switch": (str, "", True),
    "sql_big_selects": (bool, True, True),
    "sql_log_bin": (bool, True, True),
    "profiling": (bool, False, True),
    "transaction_read_only": (bool, False, True),
    **DORIS_SESSION_VARIABLES,
}


class ClusterGlobalVariables(GlobalVariables):
    """Global values: what SET GLOBAL journaled, else this node's own value (node_values: what
    differs between FEs, such as have_ssl), else the schema's default."""

    def __init__(self, catalog: Catalog, node_values: dict[str, Any] | None = None):
        super().__init__(SCHEMA)
        self.catalog = catalog
        self.node_values = dict(node_values or {})

    def get_variable(self, name: str) -> Any | None:
        name = name.lower()
        if name in self.node_values:
            return self.node_values[name]
        text = self.catalog.global_variables.get(name)
        if text is None:
            return super().get_variable(name)
        type_, _, _ = self.get_schema(name)
        return coerce(type_, text)


class QuireSessionVariables(SessionVariables):
    version = 0  # moves with every SET of a session value

    def set(self, name: str, value: Any, force: bool = False) -> None:
        super().set(name, value, force)
        self.version += 1

    def get_variable(self, name: str) -> Any | None:
        name = name.lower()
        if name in self._values:
            return self._values[name]
        return self.global_variables.get_variable(name)


def coerce(type_, value: Any) -> Any:
    if type_ is bool:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("on", "true", "1"):
                return True
            if lowered in ("off", "false", "0"):
                return False
            raise ValueError(f"expected ON or OFF, not {value!r}")
        return bool(value)
    if value is None:
        return None
    return type_(value)
