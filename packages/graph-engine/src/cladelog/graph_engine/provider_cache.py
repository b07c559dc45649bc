"""The provider cache of SPEC §1.12 (``createProviderCache``), with the Q13 fix.

:meth:`ProviderCache.wrap` memoizes a provider. The key is the concept's ``_name``, the
cache ``version`` and either a key function's result or, by default, the concept's *memo
surface*: the values of its require items and of the references its ensure/assert
expressions read (:func:`cladelog.graph_engine.refs.memo_surface`: a ``'$x'`` string
literal is not a reference). cladelog resolves those paths **following their hops**
(Q13): ``owner:level`` reads ``level`` on the owner object. A cross-object path that
resolves to nothing bypasses the cache, and so does an empty surface, a truthy ``explore``
fact, or a key function that returns None or raises.

A hit hands a deep copy of the stored template to the engine without calling the provider.
A miss runs the provider; concurrent misses on one key (async providers) wait for the first
run and look up again (single-flight). A result is stored unless it failed, is empty, or
carries a truthy ``*CanonMiss`` key. With fidelity gating, the first ``warmup`` hits of a key
re-derive and compare; after that a key whose reproduce rate is below ``threshold`` always
re-derives. Counters: ``hits``, ``misses``, ``bypass``, ``stores``, ``calls``, ``verified``,
``escalated``, ``coalesced``.

The cache lives in memory beside a live engine; what it returns is recorded like any
provider result, so replays never need it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import attrs

from .canon import digest
from .engine import Provider, ProviderCall
from .errors import GraphEngineError
from .jsvalue import UNDEFINED, to_fact_value, truthy
from .refs import is_cross_object, memo_surface

__all__ = ["CacheStats", "Fidelity", "ProviderCache", "memo_surface", "memo_surface_key"]

KeyFn = Callable[[ProviderCall], Any]
_COUNTERS: Final = ("hits", "misses", "bypass", "stores", "calls", "verified", "escalated",
                    "coalesced")


@attrs.frozen
class Fidelity:
    """Fidelity gating: re-derive the first ``warmup`` hits of a key and compare; a key that
    reproduces less than ``threshold`` of the time then always re-derives."""

    warmup: int = 3
    threshold: float = 0.8


@attrs.define
class CacheStats:
    """The cache counters (SPEC §1.12)."""

    hits: int = 0
    misses: int = 0
    bypass: int = 0
    stores: int = 0
    calls: int = 0
    verified: int = 0
    escalated: int = 0
    coalesced: int = 0

    def to_json(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in _COUNTERS}


def memo_surface_key(call: ProviderCall) -> Any:
    """The default key object: ``{path: value}`` over the memo surface, hops followed (Q13).

    None (bypass) when the surface is empty or a cross-object path resolves to nothing.
    """
    paths = memo_surface(call.concept)
    if not paths:
        return None
    out: dict[str, Any] = {}
    for path in paths:
        value = call.get_ref(path)
        if value is UNDEFINED:
            if is_cross_object(path):
                return None
            value = None
        try:
            out[path] = to_fact_value(value, path)
        except (TypeError, ValueError):
            return None
    return out


def _has_canon_miss(template: Any) -> bool:
    items = template if type(template) is list else [template]
    for item in items:
        if type(item) is dict:
            for key, value in item.items():
                if key.endswith("CanonMiss") and truthy(value):
                    return True
    return False


def _copy(template: Any) -> Any:
    return to_fact_value(template, "cache")


class ProviderCache:
    """An in-memory provider cache; see the module docstring. ``max`` bounds the entries
    (oldest evicted first); ``version`` is part of every key."""

    def __init__(self, *, max: int = 5000, version: str = "1", single_flight: bool = True,
                 fidelity: Fidelity | None = None) -> None:
        if type(max) is not int or max < 1:
            raise GraphEngineError(f"cache.max: must be a positive integer, got {max!r}")
        self.max = max
        self.version = version
        self.single_flight = single_flight
        self.fidelity = fidelity
        self.stats = CacheStats()
        self._store: OrderedDict[str, Any] = OrderedDict()
        self._checks: dict[str, list[int]] = {}  # key -> [checked, reproduced]
        self._flights: dict[str, _Flight] = {}

    def __len__(self) -> int:
        return len(self._store)

    def key_of(self, call: ProviderCall, key_fn: KeyFn | None = None) -> str | None:
        """The cache key of a call, or None to bypass."""
        if truthy(call.facts.get("explore")):
            return None
        try:
            part = (key_fn or memo_surface_key)(call)
        except Exception:
            return None
        if part is None:
            return None
        text = part if type(part) is str else digest(part)
        name = call.concept.get("_name", call.concept_id)
        return f"{name}|{self.version}|{text}"

    def _put(self, key: str, template: Any) -> None:
        if template is None or template is False or _has_canon_miss(template):
            return
        try:
            stored = _copy(template)
        except (TypeError, ValueError):
            return
        self._store[key] = stored
        self._store.move_to_end(key)
        self.stats.stores += 1
        while len(self._store) > self.max:
            self._store.popitem(last=False)

    def _must_rederive(self, key: str) -> bool:
        if self.fidelity is None:
            return False
        checked, reproduced = self._checks.get(key, [0, 0])
        if checked < self.fidelity.warmup:
            return True
        if reproduced / checked < self.fidelity.threshold:
            self.stats.escalated += 1
            return True
        return False

    def _compare(self, key: str, stored: Any, fresh: Any) -> None:
        entry = self._checks.setdefault(key, [0, 0])
        entry[0] += 1
        self.stats.verified += 1
        try:
            same = digest(_copy(fresh)) == digest(stored)
        except (TypeError, ValueError):
            same = False
        if same:
            entry[1] += 1

    def wrap(self, fn: Provider, key_fn: KeyFn | None = None) -> Provider:
        """A provider that answers from the cache when it can (see the module docstring)."""

        def cached(call: ProviderCall) -> Any:
            self.stats.calls += 1
            key = self.key_of(call, key_fn)
            if key is None:
                self.stats.bypass += 1
                return fn(call)
            if key in self._store:
                return self._hit(fn, call, key)
            if self.single_flight and key in self._flights:
                return self._join(fn, call, key, self._flights[key])
            self.stats.misses += 1
            return self._miss(fn, call, key)

        return cached

    def _hit(self, fn: Provider, call: ProviderCall, key: str) -> Any:
        stored = self._store[key]
        self.stats.hits += 1
        if not self._must_rederive(key):
            return _copy(stored)
        fresh = fn(call)
        if inspect.isawaitable(fresh):
            async def later() -> Any:
                result = await fresh
                self._compare(key, stored, result)
                return result

            return later()
        self._compare(key, stored, fresh)
        return fresh

    def _miss(self, fn: Provider, call: ProviderCall, key: str) -> Any:
        result = fn(call)
        if not inspect.isawaitable(result):
            self._put(key, result)
            return result
        awaitable = result
        flight = _Flight()
        if self.single_flight:
            self._flights[key] = flight  # registered now: later misses of this pass join it

        async def later() -> Any:
            try:
                value = await awaitable
                self._put(key, value)
                return value
            finally:
                flight.done = True
                if self._flights.get(key) is flight:
                    del self._flights[key]

        return later()

    def _join(self, fn: Provider, call: ProviderCall, key: str, flight: _Flight) -> Any:
        async def later() -> Any:
            while not flight.done:
                await asyncio.sleep(0)
            if key in self._store:
                self.stats.coalesced += 1
                self.stats.hits += 1
                return _copy(self._store[key])
            self.stats.misses += 1
            result = fn(call)
            if inspect.isawaitable(result):
                result = await result
            self._put(key, result)
            return result

        return later()


class _Flight:
    """A miss whose async provider has not answered yet."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False
