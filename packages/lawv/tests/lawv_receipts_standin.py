"""A tiny stand-in for the receipts plugin, so the lawv plugin tests need nothing else.

It registers only ``receipts.entry_recorded`` (stream ``receipts.register``) with a
lenient payload, the public contract lawv reads: ``seq``, ``kind``, ``entry`` (the
register entry), ``envelope`` and ``flags``.
"""

from __future__ import annotations

from typing import Any

import attrs
from cladelog.core import EventType, PluginInfo, hookimpl

__all__ = ["PLUGIN", "REGISTER_STREAM", "EntryRecorded", "cladelog_event_types"]

REGISTER_STREAM = "receipts.register"

PLUGIN = PluginInfo(name="receipts", version="0.0.0-standin",
                    description="test stand-in: register entries only")


@attrs.frozen
class EntryRecorded:
    """``receipts.entry_recorded`` as the stand-in accepts it."""

    seq: int
    kind: str
    entry: dict[str, Any]
    envelope: dict[str, Any] = attrs.field(factory=dict)
    flags: list[str] = attrs.field(factory=list)


@hookimpl
def cladelog_event_types() -> list[EventType]:
    return [EventType("receipts.entry_recorded", EntryRecorded)]
