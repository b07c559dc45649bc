"""Method caches for the master loop: in memory, or recorded as ``(type, json)`` records.

A cache is any object with ``has``, ``get``, ``set`` and ``delete`` (:class:`MethodCache`).
:class:`RecordingCache` emits every write to a sink and is rebuilt from those records with
:meth:`RecordingCache.replay`, so a method library written to cladelog's event log survives
restarts and replays; the log wiring itself is a plugin's job (the sink).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, Final, Protocol, cast, runtime_checkable

from ._util import canon
from .errors import AuthoringError

__all__ = [
    "CACHE_DELETED",
    "CACHE_SET",
    "MappingCache",
    "MemoryCache",
    "MethodCache",
    "RecordingCache",
    "as_method_cache",
]

CACHE_SET: Final = "authoring.cache_set"
CACHE_DELETED: Final = "authoring.cache_deleted"

Sink = Callable[[str, dict[str, Any]], None]


@runtime_checkable
class MethodCache(Protocol):
    """The cache interface the master loop needs."""

    def has(self, key: str) -> bool:
        """True when ``key`` is cached."""

    def get(self, key: str) -> Any:
        """The cached value (None when absent)."""

    def set(self, key: str, value: Any) -> None:
        """Cache ``value`` under ``key``."""

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""


class MappingCache:
    """A :class:`MethodCache` over a caller's mutable mapping (a plain ``dict`` works),
    which stays live: the loop's writes land in it."""

    def __init__(self, items: MutableMapping[str, Any]) -> None:
        self._items = items

    def has(self, key: str) -> bool:
        """True when ``key`` is cached."""
        return key in self._items

    def get(self, key: str) -> Any:
        """The cached value (None when absent)."""
        return self._items.get(key)

    def set(self, key: str, value: Any) -> None:
        """Cache ``value`` under ``key``."""
        self._items[key] = value

    def delete(self, key: str) -> None:
        """Forget ``key``."""
        self._items.pop(key, None)


class MemoryCache(MappingCache):
    """A plain in-memory cache (insertion-ordered), holding its own copy of ``items``."""

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        super().__init__(dict(items or {}))

    def items(self) -> dict[str, Any]:
        """A copy of every cached entry."""
        return dict(self._items)

    def __len__(self) -> int:
        return len(self._items)


def as_method_cache(cache: Any, path: str = "cache") -> MethodCache:
    """``cache`` itself when it has ``has/get/set/delete``, a :class:`MappingCache` over a
    mutable mapping; anything else is an :class:`AuthoringError`."""
    if all(callable(getattr(cache, name, None)) for name in ("has", "get", "set", "delete")):
        return cast(MethodCache, cache)
    if isinstance(cache, MutableMapping):
        return MappingCache(cache)
    raise AuthoringError(f"{path}: must have has/get/set/delete or be a mutable mapping, got "
                         f"{type(cache).__name__}")


class RecordingCache(MemoryCache):
    """A cache whose writes are records ``(CACHE_SET, {key, value})`` and
    ``(CACHE_DELETED, {key})`` handed to ``sink``; values must be JSON."""

    def __init__(self, sink: Sink | None = None, items: Mapping[str, Any] | None = None) -> None:
        super().__init__(items)
        self._sink = sink

    def set(self, key: str, value: Any) -> None:
        """Cache ``value`` and emit a ``CACHE_SET`` record (skipped when unchanged)."""
        if not isinstance(key, str):
            raise AuthoringError(f"cache.key: must be a string, got {type(key).__name__}")
        text = canon(value, f"cache[{key}]")
        if key in self._items and canon(self._items[key]) == text:
            return
        super().set(key, value)
        if self._sink is not None:
            self._sink(CACHE_SET, {"key": key, "value": value})

    def delete(self, key: str) -> None:
        """Forget ``key`` and emit a ``CACHE_DELETED`` record (when it was cached)."""
        if key not in self._items:
            return
        super().delete(key)
        if self._sink is not None:
            self._sink(CACHE_DELETED, {"key": key})

    @classmethod
    def replay(cls, records: Iterable[tuple[str, Mapping[str, Any]]],
               sink: Sink | None = None) -> RecordingCache:
        """Rebuild a cache from records (other record types are skipped); ``sink`` is
        attached afterwards for live use."""
        if isinstance(records, str | bytes | Mapping) or not isinstance(records, Iterable):
            raise AuthoringError(f"records: must be a list of (type, data) pairs, got "
                                 f"{type(records).__name__}")
        items: dict[str, Any] = {}
        for pos, record in enumerate(records):
            if not isinstance(record, tuple | list) or len(record) != 2:
                raise AuthoringError(f"records[{pos}]: must be a (type, data) pair")
            kind, data = record
            if kind not in (CACHE_SET, CACHE_DELETED):
                continue
            if not isinstance(data, Mapping) or not isinstance(data.get("key"), str):
                raise AuthoringError(f"records[{pos}].key: must be a string")
            if kind == CACHE_SET:
                if "value" not in data:
                    raise AuthoringError(f"records[{pos}].value: required")
                items[data["key"]] = data["value"]
            else:
                items.pop(data["key"], None)
        return cls(sink, items)
