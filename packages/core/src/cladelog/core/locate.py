"""Finding the deployment file, cheaply (the CLI's start-up path imports only this)."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "enabled_plugins",
    "entry_point_values",
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
    given = explicit or os.environ.get(CONFIG_ENV)
    if given:
        return Path(given)
    if search:
        found = search_config()
        if found is not None:
            return found
    return Path(DEFAULT_CONFIG)


def search_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``cladelog.toml`` in ``start`` (default: the working directory) or a
    folder above it, or ``None``. One ``stat`` per folder level, so it is cheap."""
    try:
        here = Path(start) if start is not None else Path.cwd()
    except OSError:  # the working directory was removed
        return None
    if (here / DEFAULT_CONFIG).is_file():
        return here / DEFAULT_CONFIG if start is not None else Path(DEFAULT_CONFIG)
    for folder in here.absolute().parents:
        candidate = folder / DEFAULT_CONFIG
        if candidate.is_file():
            return candidate
    return None


def enabled_plugins(path: Path) -> list[str]:
    """The plugin names a deployment file lists (cheap: no validation, [] when unreadable)."""
    try:
        plugins = tomllib.loads(path.read_text(encoding="utf-8")).get("plugins", [])
    except (OSError, ValueError, RecursionError):  # ValueError: not UTF-8, not TOML, a NUL
        return []
    return [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []


def entry_point_values(group: str) -> dict[str, str]:
    """``name -> "module:attr"`` of an entry-point group, read straight from the
    ``*.dist-info/entry_points.txt`` files on ``sys.path``.

    ``importlib.metadata`` parses every distribution's metadata first, which
    costs tens of milliseconds at start-up; this reads only the one section.
    The first distribution on ``sys.path`` wins a name, as with imports.
    """
    found: dict[str, str] = {}
    header = f"[{group}]"
    for entry in sys.path:
        try:
            infos = sorted(Path(entry or ".").glob("*.dist-info/entry_points.txt"))
        except OSError:
            continue
        for info in infos:
            try:
                lines = info.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            inside = False
            for line in lines:
                line = line.strip()
                if line.startswith("["):
                    inside = line == header
                elif inside and "=" in line and not line.startswith(("#", ";")):
                    name, _, value = line.partition("=")
                    found.setdefault(name.strip(), value.strip())
    return found
