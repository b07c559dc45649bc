"""An example cladelog plugin (see README.md)."""

__all__ = ["NoteAdded", "NotesSettings", "add_note"]

from .commands import add_note
from .events import NoteAdded
from .plugin import NotesSettings
