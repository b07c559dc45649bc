"""Finding the deployment file, cheaply (the CLI's start-up path imports only this).

The search works on strings (:func:`config_location`): ``cladelog --help`` reads the
deployment file to list the enabled plugins' commands and would otherwise import
:mod:`pathlib` for it (~3 ms); :func:`find_config` and :func:`search_config` give the
same answers as :class:`~pathlib.Path`.
"""

from __future__ import annotations

import os
import sys
import tomllib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import importlib.metadata as md
    from pathlib import Path

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "EntryPoint",
    "config_location",
    "enabled_plugins",
    "entry_point_values",
    "entry_points",
    "find_config",
    "search_config",
]

DEFAULT_CONFIG = "cladelog.toml"
CONFIG_ENV = "CLADELOG_CONFIG"


def find_config(explicit: str | os.PathLike[str] | None = None, *, search: bool = True) -> Path:
    """The deployment file to use.

    In order: ``explicit`` (``--config``), ``$CLADELOG_CONFIG``, then the nearest
    ``cladelog.toml`` in the working directory or any folder above it, as git finds
    ``.git`` (returned as ``cladelog.toml`` in the working directory, as an absolute
    path above it). When none is found, or ``search`` is false (``cladelog init``
    writes a new file here), the result is ``cladelog.toml`` in the working
    directory, which may not exist: callers check ``exists()``.
    """
    from pathlib import Path

    return Path(config_location(explicit, search=search))


def config_location(explicit: str | os.PathLike[str] | None = None, *,
                    search: bool = True) -> str:
    """:func:`find_config`'s answer as a string."""
    given = explicit or os.environ.get(CONFIG_ENV)
    if given:
        return os.fspath(given)
    if search:
        found = _search(None)
        if found is not None:
            return found
    return DEFAULT_CONFIG


def search_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``cladelog.toml`` in ``start`` (default: the working directory) or a
    folder above it, or ``None``. One ``stat`` per folder level, so it is cheap."""
    from pathlib import Path

    found = _search(start)
    return None if found is None else Path(found)


def _search(start: str | os.PathLike[str] | None) -> str | None:
    try:
        here = os.getcwd() if start is None else os.fspath(start)
    except OSError:  # the working directory was removed
        return None
    first = os.path.join(here, DEFAULT_CONFIG)
    if os.path.isfile(first):
        return DEFAULT_CONFIG if start is None else first
    folder = here if os.path.isabs(here) else os.path.join(os.getcwd(), here)
    # the folders above, as Path.absolute().parents lists them (lexically: a '..' in
    # ``start`` is a folder name; a '.' or a doubled '/' only repeats a folder's check)
    while (parent := os.path.dirname(folder)) != folder:
        folder = parent
        candidate = os.path.join(folder, DEFAULT_CONFIG)
        if os.path.isfile(candidate):
            return candidate
    return None


def enabled_plugins(path: str | os.PathLike[str]) -> list[str]:
    """The plugin names a deployment file lists (cheap: no validation, [] when unreadable)."""
    try:
        with open(path, encoding="utf-8") as fh:
            plugins = tomllib.loads(fh.read()).get("plugins", [])
    except (OSError, ValueError, RecursionError):  # ValueError: not UTF-8, not TOML, a NUL
        return []
    return [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []


class EntryPoint:
    """One entry point found by :func:`entry_points`: what core uses of
    :class:`importlib.metadata.EntryPoint` (``name``, ``value``, ``group``, ``load()``,
    ``dist``), without importing :mod:`importlib.metadata` until ``dist`` is asked for."""

    __slots__ = ("group", "name", "path", "value")

    def __init__(self, name: str, value: str, group: str, path: str) -> None:
        self.name, self.value, self.group = name, value, group
        self.path = path  #: the ``*.dist-info`` (or ``*.egg-info``) folder that declares it

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def load(self) -> Any:
        """Import ``module`` of ``module:attr [extras]`` and return ``attr`` (dotted), or
        the module when there is no ``attr``."""
        import importlib

        module, _, attr = self.value.split("[", 1)[0].partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in attr.strip().split(".") if attr else ():
            obj = getattr(obj, part)
        return obj

    @property
    def dist(self) -> md.Distribution:
        """The distribution that declares it (reads its metadata: slow, only when asked)."""
        import importlib.metadata as md
        from pathlib import Path

        return md.PathDistribution(Path(self.path))


def entry_points(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by name, read straight from the ``entry_points.txt``
    of the ``*.dist-info`` and ``*.egg-info`` folders on ``sys.path``.

    :func:`importlib.metadata.entry_points` imports ~20 modules (``email``, ``zipfile``,
    ``csv``...) and parses every distribution's metadata first, ~19 ms of every command
    of a deployment that enables a plugin; this lists each folder once and reads only
    the one section. The first distribution on ``sys.path`` wins a name, as with imports.
    """
    found: dict[str, EntryPoint] = {}
    header = f"[{group}]"
    for entry in sys.path:
        folder = entry or "."
        try:  # one listing a folder; no pathlib.glob (its matching costs ~1 ms a call)
            infos = sorted(n for n in os.listdir(folder)
                           if n.lower().endswith((".dist-info", ".egg-info")))
        except OSError:  # missing, not a folder (a zip file), unreadable
            continue
        for info in infos:
            where = os.path.join(folder, info)
            try:  # a .dist-info without entry points (or not a folder) fails here
                with open(os.path.join(where, "entry_points.txt"), encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            inside = False
            for line in lines:
                line = line.strip()
                if line.startswith("["):
                    inside = line == header
                elif inside and "=" in line and not line.startswith(("#", ";")):
                    name, _, value = line.partition("=")
                    name = name.strip()
                    if name not in found:
                        found[name] = EntryPoint(name, value.strip(), group, where)
    return found


def entry_point_values(group: str) -> dict[str, str]:
    """``name -> "module:attr"`` of an entry-point group (:func:`entry_points`)."""
    return {name: ep.value for name, ep in entry_points(group).items()}
