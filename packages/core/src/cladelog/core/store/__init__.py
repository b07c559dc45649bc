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
    "redact_url",
]


def redact_url(url: str) -> str:
    """A store URL as it may be shown (``status``, the report): a password, in the
    authority (``user:secret@``) or as a ``password=`` parameter, becomes ``***``."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    if "://" not in url or url.startswith("sqlite:///"):
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            auth, _, host = netloc.rpartition("@")
            if ":" in auth:
                netloc = f"{auth.split(':', 1)[0]}:***@{host}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(k == "password" for k, _ in pairs):
                query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs],
                                  safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not a URL urllib can split: show its scheme only
        return url.split("://", 1)[0] + "://***"


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
