"""Graph objects (SPEC §1.1): nodes, segments and free objects with their per-object state."""

from __future__ import annotations

from typing import Any, Final

from .jsvalue import truthy

__all__ = ["KINDS", "GraphObject", "own_facts", "present"]

KINDS: Final = ("node", "segment", "free")


#: The facts of a segment that link two nodes (the engine keeps ``incoming`` / ``outgoing``
#: in step with them).
LINK_KEYS: Final = ("originNode", "targetNode")


class GraphObject:
    """One object of the graph.

    ``facts`` always holds ``_id``. Nodes keep ``incoming``/``outgoing`` segment ids (not
    facts). ``open`` lists the concept ids still considered, ``mapped`` maps a flag name to the
    concept id regarded as cast, ``watches`` maps a concept id to the ``(object, key)`` pairs on
    which its ensure/follow callbacks are installed. ``waiting`` maps an open concept id to
    a local require key that was missing when it was last tested on the tree ``synced`` (both
    are dropped when the tree changes): while that key is still unsatisfied the concept
    cannot apply, so discovery skips the full test (SPEC §3).

    The engine's bookkeeping keyed by one of this object's fact keys lives here too, rather
    than in engine-wide tables keyed by ``(object id, key)``: the write path then needs no key
    tuple and stays within the object's own small tables. ``callbacks`` maps a key to the
    ``(watcher id, concept id, kind)`` callbacks installed on it, ``followers`` maps a key to
    the ids of objects whose require paths read it, ``applying`` maps a flag name to the
    concept being applied that writes it, and ``counters`` counts the applies per concept
    label in the current settle (the apply cap, SPEC §1.11).

    ``shared`` is True while the last settle snapshot holds ``facts`` itself (a snapshot
    copies no facts): every write path calls :func:`own_facts` (or tests ``shared`` and does
    what it does) before it changes them.

    ``quiet`` holds the open concept ids that discovery may pass over unchanged: each was
    found waiting for a local fact at the last discovery (on the concept tree ``synced``), and
    neither that fact nor its flag has been written since (the write path drops the concepts
    a written key may wake, see ``Engine._wakers``). Without it, every discovery re-examines
    every open concept, although a settle pass usually changes one or two per object.
    """

    __slots__ = ("applying", "callbacks", "counters", "facts", "followers", "id", "incoming",
                 "kind", "mapped", "open", "outgoing", "quiet", "shared", "synced", "waiting",
                 "watches")

    def __init__(self, oid: str, kind: str) -> None:
        self.id = oid
        self.kind = kind
        self.facts: dict[str, Any] = {"_id": oid}
        self.open: list[str] = []
        self.mapped: dict[str, str] = {}
        # the bookkeeping below is created on first use (None until then): most objects
        # never need most of it, and an empty dict or list still costs 56-64 bytes each
        self.incoming: list[str] | None = None
        self.outgoing: list[str] | None = None
        self.watches: dict[str, tuple[tuple[str | None, str, str], ...]] | None = None
        self.waiting: dict[str, str] | None = None
        # key -> one (watcher, concept id, kind) callback or a dict of them; watcher None
        # is this object itself
        self.callbacks: dict[str, Any] | None = None
        self.followers: dict[str, dict[str, None]] | None = None
        self.applying: dict[str, str] | None = None
        self.counters: dict[str, int] | None = None
        self.quiet: dict[str, None] | None = None
        self.synced: object = None
        # True while a settle snapshot holds this very facts dict: the next write to the
        # object copies it first (copy on write; None otherwise)
        self.shared: bool | None = None

    def __repr__(self) -> str:
        return f"GraphObject({self.id!r}, {self.kind})"


def present(value: Any) -> bool:
    """A flag counts as present when it is truthy or exactly ``false`` (Q5: not 0 or "")."""
    return value is False or truthy(value)


def own_facts(obj: GraphObject) -> dict[str, Any]:
    """``obj.facts``, ready to be changed: a copy of them first when a settle snapshot holds
    them (``obj.shared``), so that the snapshot keeps what it saw."""
    if obj.shared:
        obj.facts = dict(obj.facts)
        obj.shared = None
    return obj.facts
