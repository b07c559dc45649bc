"""The notes plugin's event types (its public contract)."""

from __future__ import annotations

from typing import Any

import attrs
from cladelog.core import EventType


@attrs.frozen
class NoteAdded:
    """``notes.note_added`` v2: a note with tags."""

    text: str
    tags: list[str] = attrs.field(factory=list)


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # version 1 had no tags
    return {"text": data["text"], "tags": []}


NOTE_ADDED = EventType("notes.note_added", NoteAdded, schema_version=2, upcasters={1: _v1_to_v2},
                       description="a note was written")
