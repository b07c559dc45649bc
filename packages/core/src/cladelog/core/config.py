"""The deployment file, ``cladelog.toml``.

::

    # which store: a path (relative to this file), sqlite:///path or postgresql://...
    store = "cladelog.sqlite3"
    # the plugins this deployment enables (installing a package enables nothing)
    plugins = ["fork-score", "receipts"]
    # who appends, recorded in each event's meta (default: $CLADELOG_ACTOR or the user)
    actor = "operator"
    # how long `replay --follow` keeps reconnecting to a store it lost, in seconds
    follow_reconnect_timeout = 300
    # the log's name: the origin line of its signed checkpoints (cladelog checkpoint)
    log_name = "example.org/cladelog/main"

    [settings.fork-score]
    signal_floor = 0.05

Every error names the file, the table and the key in one form,
``cladelog.toml: [settings.fork-score] signal_flor: unknown setting (did you mean
'signal_floor'?)``, and a type error shows the value given (``must be a number, got
string 'high'``). Plugins' settings tables are read by :func:`structure_settings`, the
one implementation every plugin's settings go through (core calls it when the
deployment loads its plugins); a plugin raises :meth:`DeploymentConfig.setting_error`
for a problem it finds later (a weights file that does not load, say).
"""

from __future__ import annotations

import math
import os
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .errors import ConfigError
from .fields import did_you_mean, short_text, shown
from .locate import CONFIG_ENV, DEFAULT_CONFIG, enabled_plugins, find_config

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "DeploymentConfig",
    "enabled_plugins",
    "find_config",
    "setting_error",
    "structure_settings",
]

_KEYS = {"store", "plugins", "settings", "actor", "follow_reconnect_timeout", "log_name"}
#: how long ``replay --follow`` keeps reconnecting to a store it lost (seconds), by default
FOLLOW_RECONNECT_TIMEOUT = 300.0


@attrs.frozen
class DeploymentConfig:
    """A parsed deployment file."""

    store: str
    plugins: tuple[str, ...] = ()
    settings: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    actor: str | None = None
    path: Path | None = None
    follow_reconnect_timeout: float = FOLLOW_RECONNECT_TIMEOUT
    log_name: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DeploymentConfig:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            where = "here or in any folder above" if p == Path(DEFAULT_CONFIG) else "here"
            raise ConfigError(
                f"{p}: no deployment file {where} (run 'cladelog init' or pass --config)"
            ) from None
        except (OSError, ValueError) as exc:  # ValueError: not UTF-8, a NUL in the name
            raise ConfigError(f"{p}: cannot read the deployment file ({exc})") from None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML ({exc})") from None
        except RecursionError:  # tomllib parses nested arrays and tables recursively
            raise ConfigError(f"{p}: invalid TOML (nested too deeply)") from None
        return cls.from_dict(doc, path=p)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, path: Path | None = None) -> DeploymentConfig:
        where = str(path) if path else DEFAULT_CONFIG
        for key in sorted(set(doc) - _KEYS):
            raise ConfigError(f"{where}: {short_text(key)}: unknown key "
                              f"{did_you_mean(key, _KEYS)}")
        store = doc.get("store")
        if not isinstance(store, str) or not store:
            raise ConfigError(f"{where}: store: expected a non-empty string (a path or URL)")
        if "\0" in store:  # no file system or server takes it
            raise ConfigError(f"{where}: store: must not contain a NUL character")
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
                hint = did_you_mean(name, plugins) if plugins else "(no plugin is enabled)"
                raise ConfigError(f"{where}: [settings.{short_text(name)}]: plugin "
                                  f"{short_text(name)!r} is not enabled {hint}")
        actor = doc.get("actor")
        if actor is not None and not isinstance(actor, str):
            raise ConfigError(f"{where}: actor: expected a string")
        timeout = doc.get("follow_reconnect_timeout", FOLLOW_RECONNECT_TIMEOUT)
        if timeout.__class__ not in (int, float) or not 0 <= timeout <= 86_400:
            raise ConfigError(f"{where}: follow_reconnect_timeout: expected a number of "
                              "seconds from 0 to 86400")
        log_name = doc.get("log_name")
        if log_name is not None and (
            not isinstance(log_name, str) or not log_name or len(log_name) > 255
            or not log_name.isprintable() or log_name != log_name.strip()
        ):
            raise ConfigError(f"{where}: log_name: expected a non-empty one-line string of "
                              "at most 255 characters, without surrounding spaces")
        if path is not None and "://" not in store and not os.path.isabs(store):
            store = str((path.parent / store).resolve())
        return cls(store, tuple(plugins), settings, actor, path, float(timeout), log_name)

    @property
    def source(self) -> str:
        """How errors name this deployment file: its path as given, else ``cladelog.toml``."""
        return str(self.path) if self.path is not None else DEFAULT_CONFIG

    def setting_error(self, plugin: str, key: str | None, problem: str) -> ConfigError:
        """The :class:`ConfigError` for a problem with a plugin's setting, in the one form
        every configuration error takes (see :func:`setting_error`)."""
        return setting_error(plugin, key, problem, source=self.source)

    def to_toml(self, store_as_written: str | None = None) -> str:
        lines = [
            "# cladelog deployment (see the integrator guide, docs/guides/integrator.md)",
            f"store = {_toml_value(store_as_written or self.store)}",
            f"plugins = {_toml_value(list(self.plugins))}",
        ]
        if self.actor:
            lines.append(f"actor = {_toml_value(self.actor)}")
        if self.follow_reconnect_timeout != FOLLOW_RECONNECT_TIMEOUT:
            lines.append(f"follow_reconnect_timeout = {self.follow_reconnect_timeout!r}")
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


# -- plugins' settings tables ------------------------------------------------------------------
def setting_error(plugin: str, key: str | None, problem: str, *,
                  source: str = DEFAULT_CONFIG) -> ConfigError:
    """``<source>: [settings.<plugin>] <key>: <problem>`` as a :class:`ConfigError` (no
    ``<key>`` for a problem of the whole table: ``[settings.<plugin>]: <problem>``)."""
    where = f"{source}: [settings.{short_text(plugin)}]"
    return ConfigError(f"{where} {short_text(key)}: {problem}" if key else f"{where}: {problem}")


def structure_settings(cls: type | None, raw: Mapping[str, Any], plugin: str, *,
                       source: str = DEFAULT_CONFIG) -> Any:
    """A plugin's ``[settings.<plugin>]`` table as an instance of its settings class.

    ``cls`` is an attrs class whose fields (all with defaults) are the settings
    (``PluginInfo.settings``; ``None``: the plugin takes none). Checked, in this order,
    each failure a :class:`ConfigError` in the form of :func:`setting_error`:

    * a key that is no field: ``unknown setting (did you mean 'signal_floor'?)``, or the
      known keys when none is close;
    * a value whose TOML type does not match the field's annotation, with the value
      given: ``bool`` (``must be true or false, got string 'yes'``), ``int``, ``float``
      (finite; an integer is taken), ``str``, ``Literal[...]`` (``must be one of 'block',
      'abstain', got string 'blok' (did you mean 'block'?)``), ``list``/``tuple`` of
      those, ``X | None``;
    * each field's attrs validator, called as ``validator(None, attribute, value)``: it
      raises ``ValueError`` (or ``TypeError``) whose message is the problem
      (``must be > 0, got 0.0``; a leading ``<field>: `` is dropped, so it is not said
      twice);
    * the class itself (``__attrs_post_init__`` checks across fields): a message starting
      ``<field>: `` is reported under that field, any other under the table.
    """
    def fail(key: str | None, problem: str) -> ConfigError:
        return setting_error(plugin, key, problem, source=source)

    if cls is None:
        if raw:
            raise fail(None, "this plugin takes no settings")
        return None
    fields = {f.alias: f for f in attrs.fields(cls) if f.init}
    for key in sorted(raw, key=str):
        if key not in fields:
            raise fail(str(key), f"unknown setting {did_you_mean(str(key), fields)}")
    hints = typing.get_type_hints(cls)
    given: dict[str, Any] = {}
    for key, value in raw.items():
        field = fields[key]
        try:
            given[key] = _typed(value, hints.get(field.name, Any))
        except _Mismatch as exc:
            raise fail(key, f"{exc}, got {shown(value)}{exc.hint}") from None
        if field.validator is not None:
            try:
                field.validator(None, field, given[key])
            except (ValueError, TypeError) as exc:
                raise fail(key, _problem(str(exc), key)) from None
    try:
        return cls(**given)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        for key in fields:
            if text.startswith(f"{key}: "):
                raise fail(key, text[len(key) + 2:]) from None
        raise fail(None, text) from None


class _Mismatch(Exception):
    """A value of the wrong type: the message says what was expected."""

    def __init__(self, expected: str, hint: str = "") -> None:
        super().__init__(expected)
        self.hint = hint


def _problem(message: str, key: str) -> str:
    """A validator's message without a leading ``<key>: `` (the prefix names the key)."""
    return message[len(key) + 2:] if message.startswith(f"{key}: ") else message


def _typed(value: Any, tp: Any) -> Any:
    """``value`` checked against the annotation ``tp`` (TOML's types; see
    :func:`structure_settings`), converted where the field wants it (int -> float,
    list -> tuple)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _typed(value, options[0])
        for option in options:
            try:
                return _typed(value, option)
            except _Mismatch:
                continue
        raise _Mismatch("has the wrong type")
    if origin is typing.Literal:
        if value.__class__ in {a.__class__ for a in args} and value in args:
            return value
        choices = ", ".join(repr(a) for a in args)
        hint = ""
        if isinstance(value, str):
            close = did_you_mean(value, [a for a in args if isinstance(a, str)])
            hint = f" {close}" if close.startswith("(did") else ""
        raise _Mismatch(f"must be one of {choices}", hint)
    if tp is bool:
        if value.__class__ is bool:
            return value
        raise _Mismatch("must be true or false")
    if tp is int:
        if value.__class__ is int:
            return value
        raise _Mismatch("must be an integer")
    if tp is float:
        if value.__class__ is int:
            return float(value)
        if value.__class__ is float and math.isfinite(value):
            return value
        raise _Mismatch("must be a finite number")
    if tp is str:
        if value.__class__ is str:
            return value
        raise _Mismatch("must be a string")
    if origin in (list, tuple) or tp in (list, tuple):
        if not isinstance(value, list):
            raise _Mismatch("must be an array")
        inner = args[0] if args else Any
        try:
            items = [_typed(item, inner) for item in value]
        except _Mismatch as exc:
            raise _Mismatch(f"must be an array; each item {exc}") from None
        return tuple(items) if (origin or tp) is tuple else items
    if origin is dict or tp is dict:
        if isinstance(value, dict):
            return value
        raise _Mismatch("must be a table")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise _Mismatch(f"must be of type {getattr(tp, '__name__', tp)}")
