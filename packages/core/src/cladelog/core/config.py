"""The deployment file, ``cladelog.toml``.

::

    # which store: a path (relative to this file), sqlite:///path or postgresql://...
    store = "cladelog.sqlite3"
    # the plugins this deployment enables (installing a package enables nothing)
    plugins = ["fork-score", "receipts"]
    # who appends, recorded in each event's meta (default: $CLADELOG_ACTOR or the user)
    actor = "operator"
    # the log's name: the origin line of its signed checkpoints (cladelog checkpoint)
    log_name = "example.org/cladelog/main"

    [settings.fork-score]
    signal_floor = 0.05
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .errors import ConfigError
from .locate import CONFIG_ENV, DEFAULT_CONFIG, enabled_plugins, find_config

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "DeploymentConfig",
    "enabled_plugins",
    "find_config",
]

_KEYS = {"store", "plugins", "settings", "actor", "log_name"}


@attrs.frozen
class DeploymentConfig:
    """A parsed deployment file."""

    store: str
    plugins: tuple[str, ...] = ()
    settings: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    actor: str | None = None
    path: Path | None = None
    log_name: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DeploymentConfig:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"{p}: no deployment file here (run 'cladelog init' or pass --config)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{p}: cannot read the deployment file ({exc})") from None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML ({exc})") from None
        return cls.from_dict(doc, path=p)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, path: Path | None = None) -> DeploymentConfig:
        where = str(path) if path else "deployment"
        unknown = set(doc) - _KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)} (known: {sorted(_KEYS)})")
        store = doc.get("store")
        if not isinstance(store, str) or not store:
            raise ConfigError(f"{where}: store: expected a non-empty string (a path or URL)")
        plugins = doc.get("plugins", [])
        if not isinstance(plugins, list) or not all(isinstance(x, str) for x in plugins):
            raise ConfigError(f"{where}: plugins: expected a list of plugin names")
        if len(set(plugins)) != len(plugins):
            raise ConfigError(f"{where}: plugins: a plugin is listed twice")
        settings = doc.get("settings", {})
        if not isinstance(settings, dict) or not all(
            isinstance(v, dict) for v in settings.values()
        ):
            raise ConfigError(f"{where}: settings: expected tables [settings.<plugin>]")
        for name in settings:
            if name not in plugins:
                raise ConfigError(f"{where}: settings.{name}: plugin {name!r} is not enabled")
        actor = doc.get("actor")
        if actor is not None and not isinstance(actor, str):
            raise ConfigError(f"{where}: actor: expected a string")
        log_name = doc.get("log_name")
        if log_name is not None and (
            not isinstance(log_name, str) or not log_name or len(log_name) > 255
            or not log_name.isprintable() or log_name != log_name.strip()
        ):
            raise ConfigError(f"{where}: log_name: expected a non-empty one-line string of "
                              "at most 255 characters, without surrounding spaces")
        if path is not None and "://" not in store and not os.path.isabs(store):
            store = str((path.parent / store).resolve())
        return cls(store, tuple(plugins), settings, actor, path, log_name)

    def to_toml(self, store_as_written: str | None = None) -> str:
        lines = [
            "# cladelog deployment (see the README's integrator guide)",
            f"store = {_toml_value(store_as_written or self.store)}",
            f"plugins = {_toml_value(list(self.plugins))}",
        ]
        if self.actor:
            lines.append(f"actor = {_toml_value(self.actor)}")
        if self.log_name:
            lines.append(f"log_name = {_toml_value(self.log_name)}")
        for name, table in self.settings.items():
            lines.append("")
            lines.append(f"[settings.{_toml_key(name)}]")
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items())
        return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    if key and all(c.isalnum() or c in "-_" for c in key):
        return key
    return _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} to TOML")
