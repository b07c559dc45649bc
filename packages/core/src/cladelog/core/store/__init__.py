"""Event stores: SQLite (embedded default) and PostgreSQL (scale-out)."""

from __future__ import annotations

from .base import (
    Checkpoint,
    EventStore,
    Head,
    ImportResult,
    PreparedEvent,
    VerifyReport,
    event_from_json,
)

__all__ = [
    "Checkpoint",
    "EventStore",
    "Head",
    "ImportResult",
    "PreparedEvent",
    "VerifyReport",
    "event_from_json",
    "open_store",
]


def open_store(url: str, *, create: bool = False) -> EventStore:
    """Open the store a deployment names: a file path, ``sqlite:///path`` or ``postgresql://``."""
    from ..errors import StoreError

    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url, create=create)
    if "://" in url and not url.startswith("sqlite:///"):
        raise StoreError(f"store: unsupported URL {url!r} (use a path, sqlite:/// or postgresql://)")
    from .sqlite import SQLiteStore

    return SQLiteStore(url.removeprefix("sqlite:///"), create=create)
