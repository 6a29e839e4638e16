"""Configuration: conf/fe.conf and conf/be.conf, `--override key=value`, and run-time changes.

The schema below is the single list of keys: the conf files document the same keys (a test keeps
them in step), an unknown key is an error, and only keys marked mutable change at run time
(ADMIN SET FRONTEND CONFIG).
"""

from __future__ import annotations

import configparser
import threading
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FE_CONF = PACKAGE_ROOT / "conf" / "fe.conf"
DEFAULT_BE_CONF = PACKAGE_ROOT / "conf" / "be.conf"


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Key:
    name: str
    default: object
    mutable: bool = False
    choices: tuple[str, ...] = ()

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
BE_KEYS = (Key("storage_root", "storage"),)
KEYS = {key.name: key for key in FE_KEYS + BE_KEYS}


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

    def __init__(self, values: dict[str, object]):
        self._values = values
        self._lock = threading.Lock()

    @classmethod
    def load(
        cls,
        fe_conf: str | Path | None = None,
        be_conf: str | Path | None = None,
        overrides: list[str] = (),
        with_be: bool = True,
    ) -> Config:
        raw: dict[str, str] = {}
        raw.update(read_conf_file(fe_conf or DEFAULT_FE_CONF))
        if with_be:
            raw.update(read_conf_file(be_conf or DEFAULT_BE_CONF))
        for text in overrides:
            name, value = parse_override(text)
            raw[name] = value
        values = {key.name: key.default for key in KEYS.values()}
        for name, text in raw.items():
            key = KEYS.get(name)
            if key is None:
                raise ConfigError(f"unknown configuration key {name!r}")
            values[name] = key.parse(text)
        return cls(values)

    def __getitem__(self, name: str):
        return self._values[name]

    def items(self) -> list[tuple[Key, object]]:
        return [(KEYS[name], value) for name, value in sorted(self._values.items())]

    def set(self, name: str, text: str) -> None:
        key = KEYS.get(name)
        if key is None:
            raise ConfigError(f"unknown configuration key {name!r}")
        if not key.mutable:
            raise ConfigError(f"{name} cannot be changed at run time; set it in the conf file")
        value = key.parse(text)
        with self._lock:
            self._values[name] = value

    def path(self, name: str) -> Path:
        return Path(str(self._values[name])).resolve()
