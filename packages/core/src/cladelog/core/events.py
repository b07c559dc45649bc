"""Events: what is appended (:class:`NewEvent`) and the time it is recorded at.

What is stored (:class:`RecordedEvent`), the hashed body and the hash chain that links
events are :mod:`cladelog.core.body`'s, the one owner of that format; their names are
also importable from here. ``recorded_at`` is an RFC 3339 UTC timestamp with
microseconds and a ``Z`` suffix. See ``docs/events.md`` for a worked example a third
party can recompute.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .body import GENESIS_HASH, RecordedEvent, assemble_body, chain_hash, encode_body

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "GENESIS_HASH",
    "NewEvent",
    "RecordedEvent",
    "assemble_body",
    "chain_hash",
    "encode_body",
    "format_timestamp",
    "utc_now",
]


def utc_now() -> str:
    """The current UTC time as stored in ``recorded_at``."""
    from datetime import UTC, datetime  # appends only: not on the replay start path

    return format_timestamp(datetime.now(UTC))


def format_timestamp(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC."""
    if moment.tzinfo is None:
        raise ValueError("recorded_at: timestamp must be timezone-aware")
    from datetime import UTC

    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@attrs.frozen
class NewEvent:
    """An event to append. ``data`` is a JSON object or an attrs payload instance.

    ``schema_version`` defaults to the current version of the registered type.
    ``meta`` holds actor, producing plugin and version, and correlation id; the
    deployment fills what is missing.
    """

    stream: str
    type: str
    data: Any
    meta: Mapping[str, Any] = attrs.field(factory=dict)
    schema_version: int | None = None
