"""structlog set-up: a human renderer on a terminal, JSON lines otherwise (to stderr)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

__all__ = ["configure_logging", "get_logger"]

_configured = False


def configure_logging(level: str | None = None, *, force_json: bool | None = None) -> None:
    """Configure structlog once; ``CLADELOG_LOG_LEVEL`` and ``CLADELOG_LOG_JSON`` override."""
    global _configured
    import structlog

    name = (level or os.environ.get("CLADELOG_LOG_LEVEL") or "warning").upper()
    numeric = getattr(logging, name, logging.WARNING)
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


def get_logger(name: str = "cladelog") -> Any:
    import structlog

    if not _configured:
        configure_logging()
    return structlog.get_logger(name)
