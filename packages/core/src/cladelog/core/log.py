"""structlog set-up: a human renderer on a terminal, JSON lines otherwise (to stderr).

structlog (and the asyncio it pulls in) costs more than a hundred milliseconds
to import, so :func:`get_logger` returns a small proxy that imports it only
when a message at or above the configured level is actually emitted.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["configure_logging", "get_logger"]

_configured = False
_threshold: int | None = None
# the stdlib logging levels, without importing logging on the start-up path
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
_LEVELS = {"DEBUG": DEBUG, "INFO": INFO, "WARNING": WARNING, "WARN": WARNING, "ERROR": ERROR,
           "CRITICAL": 50}


def _level(name: str | None) -> int:
    value = (name or os.environ.get("CLADELOG_LOG_LEVEL") or "warning").upper()
    return _LEVELS.get(value, WARNING)


def configure_logging(level: str | None = None, *, force_json: bool | None = None) -> None:
    """Configure structlog once; ``CLADELOG_LOG_LEVEL`` and ``CLADELOG_LOG_JSON`` override."""
    global _configured, _threshold
    import structlog

    numeric = _level(level)
    _threshold = numeric
    if force_json is None:
        env = os.environ.get("CLADELOG_LOG_JSON")
        force_json = env == "1" if env is not None else not sys.stderr.isatty()
    renderer: Any = (
        structlog.processors.JSONRenderer(sort_keys=True)
        if force_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    _configured = True


class _LazyLogger:
    """Forwards to a structlog logger, importing structlog on the first emitted message."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _emit(self, level: int, method: str, event: str, **kw: Any) -> None:
        threshold = _threshold if _threshold is not None else _level(None)
        if level < threshold:
            return
        import structlog

        if not _configured:
            configure_logging()
        getattr(structlog.get_logger(self._name), method)(event, **kw)

    def debug(self, event: str, **kw: Any) -> None:
        self._emit(DEBUG, "debug", event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._emit(INFO, "info", event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit(WARNING, "warning", event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._emit(ERROR, "error", event, **kw)


def get_logger(name: str = "cladelog") -> Any:
    """A logger with ``debug``/``info``/``warning``/``error(event, **fields)``."""
    return _LazyLogger(name)
