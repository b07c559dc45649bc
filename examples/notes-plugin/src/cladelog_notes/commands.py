"""The notes plugin's domain command: validate, apply the settings, append.

Settings take effect here, when an event is written, and never on replay: whatever
a setting decides is stored in the event's data, so the projection is a pure fold of
the log and the same log gives the same digests under any deployment's settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from cladelog.core import InputError, NewEvent, RecordedEvent

from .events import NOTE_ADDED

if TYPE_CHECKING:
    from cladelog.core import Deployment

STREAM = "notes"


def add_note(deployment: Deployment, text: str, tags: Iterable[str] = ()) -> RecordedEvent:
    """Append one note and return it as recorded.

    A note given no tag is written with the deployment's ``default_tag`` setting
    (``[settings.notes]``) in its ``tags``: the event records the tag the note got.
    Blank text raises :class:`InputError` and appends nothing.
    """
    if not text.strip():
        raise InputError("text: must not be empty")
    chosen = list(tags) or [deployment.settings("notes").default_tag]
    data = {"text": text, "tags": chosen}
    return deployment.append([NewEvent(STREAM, NOTE_ADDED.name, data)])[-1]
