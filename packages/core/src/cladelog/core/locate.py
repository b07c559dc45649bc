"""Finding the deployment file, cheaply (the CLI's start-up path imports only this)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["CONFIG_ENV", "DEFAULT_CONFIG", "enabled_plugins", "find_config"]

DEFAULT_CONFIG = "cladelog.toml"
CONFIG_ENV = "CLADELOG_CONFIG"


def find_config(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The deployment file to use: the explicit one, ``$CLADELOG_CONFIG``, or ./cladelog.toml."""
    return Path(explicit or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def enabled_plugins(path: Path) -> list[str]:
    """The plugin names a deployment file lists (cheap: no validation, [] when unreadable)."""
    try:
        plugins = tomllib.loads(path.read_text(encoding="utf-8")).get("plugins", [])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    return [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []
