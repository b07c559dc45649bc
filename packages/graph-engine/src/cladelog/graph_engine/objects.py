"""Graph objects (SPEC §1.1): nodes, segments and free objects with their per-object state."""

from __future__ import annotations

from typing import Any, Final

from .jsvalue import truthy

__all__ = ["KINDS", "GraphObject", "present"]

KINDS: Final = ("node", "segment", "free")


class GraphObject:
    """One object of the graph.

    ``facts`` always holds ``_id``. Nodes keep ``incoming``/``outgoing`` segment ids (not
    facts). ``open`` lists the concept ids still considered, ``mapped`` maps a flag name to the
    concept id regarded as cast, ``watches`` maps a concept id to the ``(object, key)`` pairs on
    which its ensure/follow callbacks are installed. ``waiting`` maps an open concept id to
    its compiled concept and a local require key that was missing when it was last tested:
    while that key is still unsatisfied (and the tree unchanged) the concept cannot apply, so
    discovery skips the full test (SPEC §3).
    """

    __slots__ = ("facts", "id", "incoming", "kind", "mapped", "open", "outgoing", "waiting",
                 "watches")

    def __init__(self, oid: str, kind: str) -> None:
        self.id = oid
        self.kind = kind
        self.facts: dict[str, Any] = {"_id": oid}
        self.incoming: list[str] = []
        self.outgoing: list[str] = []
        self.open: list[str] = []
        self.mapped: dict[str, str] = {}
        self.watches: dict[str, list[tuple[str, str, str]]] = {}
        self.waiting: dict[str, tuple[Any, str]] = {}

    def __repr__(self) -> str:
        return f"GraphObject({self.id!r}, {self.kind})"


def present(value: Any) -> bool:
    """A flag counts as present when it is truthy or exactly ``false`` (Q5: not 0 or "")."""
    return value is False or truthy(value)
