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
)


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

    def __contains__(self, name: str) -> bool:
        return name in self._values

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
