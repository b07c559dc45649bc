"""An example cladelog plugin (see README.md)."""

__all__ = ["NoteAdded"]

from .events import NoteAdded
