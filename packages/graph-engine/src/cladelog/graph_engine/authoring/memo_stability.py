"""The memo-stability gate for structural changes (SPEC §1.14, ``memo-stability``).

A concept's *memo surface* is what its ``require``/``ensure``/``assert`` read. A structural
change (add, patch or delete a concept, adopt a mined abstraction) is safe for the
incremental memo iff it leaves the incumbents' surfaces untouched. A snapshot digests, per
(object, concept), the projection of the surface off the object; a diff of two snapshots
names every perturbed entry, while an isolated new fact changes nothing.

cladelog differs from the reference on purpose: cross-object references follow their hops
(``owner:level`` projects the *owner's* ``level``, Q13), and digests cover whole values, so
a nested change is visible (Q12).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ..engine import Engine
from ..jsvalue import UNDEFINED
from ..refs import memo_surface, ref_key_of
from ._util import digest, resolve_sync
from .errors import AuthoringError, MemoStabilityError

__all__ = [
    "MemoChange",
    "MemoDiff",
    "aassert_memo_stable",
    "assert_memo_stable",
    "memo_diff",
    "memo_snapshot",
    "memo_surface_keys",
    "memo_surface_paths",
]


def _schema(engine: Engine, name: str) -> Mapping[str, Any]:
    if not isinstance(name, str):
        raise AuthoringError(f"concept: must be a string, got {type(name).__name__}")
    concept = engine.tree.get(name)
    if concept is None:
        raise AuthoringError(f"concept.{name}: no such concept")
    return concept.schema


def memo_surface_keys(engine: Engine, name: str) -> list[str]:
    """The distinct fact keys a concept's require items and ensure/assert references read,
    in that order, with hops dropped (``other:x`` gives ``x``)."""
    out: list[str] = []
    for ref in memo_surface(_schema(engine, name)):
        key = ref_key_of(ref).key
        if key and key not in out:
            out.append(key)
    return out


def _projection_path(ref: str) -> str | None:
    """The path whose value a reference depends on: its hops plus the key, no members."""
    if ":" in ref:
        prefix, rest = ref.rsplit(":", 1)
        key = rest.split(".", 1)[0]
        return f"{prefix}:{key}" if key else None
    pieces = ref.split(".")
    if not pieces[0].startswith("$"):
        return pieces[0] or None
    kept: list[str] = []
    for piece in pieces:  # `$obj.key.member`: the global jumps, then the key
        kept.append(piece)
        if not piece.startswith("$"):
            break
    return ".".join(kept)


def memo_surface_paths(engine: Engine, name: str) -> list[str]:
    """The distinct paths of a concept's memo surface with hops kept (Q13).

    A local reference gives its key (``size.length`` → ``size``); a cross-object one keeps
    its hops (``$$budget:spent.length`` → ``$budget:spent``).
    """
    out: list[str] = []
    for ref in memo_surface(_schema(engine, name)):
        path = _projection_path(ref)
        if path and path not in out:
            out.append(path)
    return out


def memo_snapshot(engine: Engine, names: Iterable[str] | None = None) -> dict[str, str]:
    """``{"<object id>|<concept>": digest}`` of each concept's memo surface on each object.

    ``names`` defaults to every concept of the live tree; a name the tree no longer holds
    contributes nothing (so a deleted incumbent shows up as removed entries). An object is
    covered when at least one surface path is present on it (a local key present, even if
    null, or a cross-object path that resolves).
    """
    tree = engine.tree
    wanted = list(tree.concepts) if names is None else list(names)
    facts = engine.facts()
    out: dict[str, str] = {}
    for name in wanted:
        if not isinstance(name, str) or tree.get(name) is None:
            continue
        paths = memo_surface_paths(engine, name)
        if not paths:
            continue
        local = [p for p in paths if ":" not in p and not p.startswith("$")]
        remote = [p for p in paths if p not in local]
        for oid, record in facts.items():
            proj: dict[str, Any] = {}
            for key in local:
                if key in record:
                    proj[key] = record[key]
            for path in remote:
                value = engine.get_ref(path, oid)
                if value is not UNDEFINED:
                    proj[path] = value
            if proj:
                out[f"{oid}|{name}"] = digest(proj, f"{oid}|{name}")
    return out


@attrs.frozen
class MemoChange:
    """One perturbed entry: its ``"<object>|<concept>"`` key and both digests."""

    key: str
    before: str
    after: str


@attrs.frozen
class MemoDiff:
    """``stable`` iff nothing changed and nothing was removed (additions are fine)."""

    stable: bool
    changed: tuple[MemoChange, ...]
    removed: tuple[str, ...]
    added: tuple[str, ...]


def memo_diff(before: Mapping[str, str], after: Mapping[str, str]) -> MemoDiff:
    """Compare two snapshots."""
    for name, snap in (("before", before), ("after", after)):
        if not isinstance(snap, Mapping):
            raise AuthoringError(f"{name}: must be a snapshot object, got "
                                 f"{type(snap).__name__}")
    changed = tuple(MemoChange(k, before[k], after[k]) for k in before
                    if k in after and after[k] != before[k])
    removed = tuple(k for k in before if k not in after)
    added = tuple(k for k in after if k not in before)
    return MemoDiff(not changed and not removed, changed, removed, added)


def _check(engine: Engine, incumbents: Iterable[str] | None) -> list[str] | None:
    if incumbents is None:
        return None
    names = list(incumbents)
    for i, name in enumerate(names):
        if not isinstance(name, str) or engine.tree.get(name) is None:
            raise AuthoringError(f"incumbents[{i}]: no such concept {name!r}")
    return names


def _verdict(before: Mapping[str, str], after: Mapping[str, str]) -> MemoDiff:
    d = memo_diff(before, after)
    if not d.stable:
        names = ", ".join([c.key for c in d.changed] + list(d.removed))
        raise MemoStabilityError(
            f"memo-stability violation: {names} (a structural change must leave the "
            "incumbents' memo surfaces unchanged)", d)
    return d


def assert_memo_stable(engine: Engine, incumbents: Iterable[str] | None,
                       apply_fn: Callable[[], Any]) -> MemoDiff:
    """Snapshot the incumbents, run ``apply_fn`` (e.g. add a concept and settle), snapshot
    again; raise :class:`MemoStabilityError` (with ``.diff``) when an incumbent's surface
    changed or vanished, else return the diff. ``incumbents=None`` protects every concept.
    """
    names = _check(engine, incumbents)
    before = memo_snapshot(engine, names)
    resolve_sync(apply_fn(), "apply_fn")
    return _verdict(before, memo_snapshot(engine, names))


async def aassert_memo_stable(engine: Engine, incumbents: Iterable[str] | None,
                              apply_fn: Callable[[], Any]) -> MemoDiff:
    """:func:`assert_memo_stable` with an async ``apply_fn``."""
    names = _check(engine, incumbents)
    before = memo_snapshot(engine, names)
    result = apply_fn()
    if inspect.isawaitable(result):
        await result
    return _verdict(before, memo_snapshot(engine, names))
