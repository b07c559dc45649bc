"""structlog set-up: a human renderer on a terminal, JSON lines otherwise (to stderr).

structlog (and the asyncio it pulls in) costs more than a hundred milliseconds
to import, so :func:`get_logger` returns a small proxy that imports it only
when a message at or above the configured level is actually emitted.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["configure_logging", "get_logger", "route_stdlib_logging"]

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
    if _ROUTED:
        import logging

        logging.getLogger().setLevel(numeric)
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
        logger_factory=structlog.PrintLoggerFactory(file=_STDERR),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    _configured = True


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written (a test runner, say, replaces it
    per command), not the stream it was when logging was configured."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


_STDERR = _CurrentStderr()
_ROUTED = False


def route_stdlib_logging() -> None:
    """Send the records of libraries that log through the standard library (psycopg and
    its pool, for instance) through structlog, at cladelog's level: they become the same
    structured lines (JSON when stderr is not a terminal) instead of Python's bare
    ``message`` lines beside cladelog's own. For an application (the CLI): it installs a
    handler on the root logger, once."""
    global _ROUTED
    if _ROUTED:
        return
    import logging

    class ToStructlog(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                fields: dict[str, Any] = {"logger": record.name}
                if record.exc_info and record.exc_info[1] is not None:
                    exc = record.exc_info[1]
                    text = " ".join(str(exc).split()) or type(exc).__name__
                    fields["exc"] = f"{type(exc).__name__}: {text}"
                level = record.levelno
                method = ("error" if level >= ERROR else "warning" if level >= WARNING
                          else "info" if level >= INFO else "debug")
                _LazyLogger(record.name)._emit(level, method, record.getMessage(), **fields)
            except Exception:
                self.handleError(record)

    root = logging.getLogger()
    root.addHandler(ToStructlog())
    root.setLevel(_threshold if _threshold is not None else _level(None))
    _ROUTED = True


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
