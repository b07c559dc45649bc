"""Reference paths (SPEC §1.3): ``label``, ``originNode:label``, ``$clock:tick``, ``xs.length``.

A path is compiled once into parts and hops, then resolved against a starting object through
a lookup function, so the same code serves live objects and template scopes (where pending
values overlay existing facts). Every fact read along the way can be recorded as an
``(object id, key)`` pair; the engine uses them to register followers and callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .jsvalue import UNDEFINED, truthy

__all__ = ["CompiledPath", "FactView", "compile_path", "resolve", "satisfies_require"]

FactView = Mapping[str, Any]
Lookup = Callable[[str], FactView | None]


class _Obj:
    """A graph object reached during resolution (as opposed to a plain fact value)."""

    __slots__ = ("facts", "id")

    def __init__(self, oid: str, facts: FactView) -> None:
        self.id = oid
        self.facts = facts


@attrs.frozen
class CompiledPath:
    """A parsed path: ``parts`` split on ``.``, each part a tuple of ``:`` hops."""

    text: str
    parts: tuple[tuple[str, ...], ...]
    simple: bool  # a single local key: no ".", ":" or "$"
    first: str  # the first hop name (used for template scopes)


_CACHE: dict[str, CompiledPath] = {}


def compile_path(text: str) -> CompiledPath:
    """Parse ``text`` (cached)."""
    found = _CACHE.get(text)
    if found is not None:
        return found
    parts = tuple(tuple(part.split(":")) for part in text.split("."))
    simple = "." not in text and ":" not in text and not text.startswith("$") and text != ""
    compiled = CompiledPath(text, parts, simple, parts[0][0])
    if len(_CACHE) < 100_000:
        _CACHE[text] = compiled
    return compiled


def _read(current: Any, key: str, reads: list[tuple[str, str]] | None) -> Any:
    if isinstance(current, _Obj):
        if reads is not None:
            reads.append((current.id, key))
        return current.facts.get(key, UNDEFINED)
    tp = type(current)
    if tp is dict:
        return current.get(key, UNDEFINED)
    if tp is list or tp is str:
        if key == "length":
            if tp is str and not current.isascii():
                return len(current.encode("utf-16-le")) // 2
            return len(current)
        if key.isdigit():
            idx = int(key)
            return current[idx] if idx < len(current) else UNDEFINED
    return UNDEFINED


def _jump(oid: Any, lookup: Lookup) -> _Obj | None:
    if type(oid) is not str:
        return None
    facts = lookup(oid)
    return None if facts is None else _Obj(oid, facts)


def _unwrap(value: Any) -> Any:
    if isinstance(value, _Obj):
        return dict(value.facts)
    return value


def resolve(
    path: CompiledPath | str,
    start_id: str | None,
    lookup: Lookup,
    reads: list[tuple[str, str]] | None = None,
    scope: Mapping[str, str] | None = None,
) -> Any:
    """Resolve ``path`` from object ``start_id``; ``undefined`` when it does not resolve.

    ``lookup(id)`` returns an object's facts (or None). ``scope`` maps special first names
    (``_parent``, template aliases) to object ids. Every fact read is appended to ``reads``.
    A trailing empty hop (``originNode:``) yields the facts of the object reached.
    """
    cp = compile_path(path) if isinstance(path, str) else path
    facts = None if start_id is None else lookup(start_id)
    if cp.simple and scope is None:  # the common case: one local key, no wrapper object
        if facts is None:
            return UNDEFINED
        if reads is not None:
            reads.append((start_id, cp.text))  # type: ignore[arg-type]
        return facts.get(cp.text, UNDEFINED)
    current: Any = _Obj(start_id, facts) if facts is not None else None  # type: ignore[arg-type]
    last_index = len(cp.parts) - 1
    for index, hops in enumerate(cp.parts):
        # ':' hops: every hop but the last jumps to another object
        part = hops[-1]
        for hop_index, hop in enumerate(hops[:-1]):
            if index == 0 and hop_index == 0 and scope is not None and hop in scope:
                current = _jump(scope[hop], lookup)
            elif hop.startswith("$"):
                current = _jump(hop[1:], lookup)
            else:
                if current is None:
                    return UNDEFINED
                current = _jump(_read(current, hop, reads), lookup)
            if current is None:
                return UNDEFINED
        if len(hops) > 1 and part == "":
            if index == last_index:
                return _unwrap(current)
            continue
        if index == 0 and len(hops) == 1 and scope is not None and part in scope:
            current = _jump(scope[part], lookup)
            if current is None:
                return UNDEFINED
            if index == last_index:
                return _unwrap(current)
            continue
        if part.startswith("$"):
            target = _jump(part[1:], lookup)
            if index == last_index:
                return UNDEFINED if target is None else part[1:]
            if target is None:
                return UNDEFINED
            current = target
            continue
        if current is None:
            return UNDEFINED
        value = _read(current, part, reads)
        if index == last_index:
            return _unwrap(value)
        if not truthy(value):
            return UNDEFINED
        current = value
    return UNDEFINED  # pragma: no cover - the loop always returns on the last part


def satisfies_require(value: Any) -> bool:
    """A require item holds unless its value is null, undefined or NaN (SPEC §1.4)."""
    if value is None or value is UNDEFINED:
        return False
    return not (type(value) is float and value != value)

