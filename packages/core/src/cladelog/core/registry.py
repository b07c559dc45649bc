"""Event types: their payload classes, schema versions and upcasters.

A plugin registers each of its event types once (through the
``cladelog_event_types`` hook). Appending checks the payload against the
type's attrs class strictly and stores its unstructured form; reading an event
written under an older schema version runs the upcasters in order
(``1 -> 2 -> ... -> current``) so projections only ever see the current shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from .errors import InputError, UnknownEventTypeError

__all__ = ["EventType", "EventTypeRegistry", "Upcaster"]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_REST = _NAME_START | frozenset("0123456789_")


def _valid_type_name(name: str) -> bool:
    """``plugin.event_name``: two or more dot-separated parts of ``[a-z][a-z0-9_]*``.
    (A plain check rather than a regex: compiling one costs start-up time.)"""
    parts = name.split(".")
    return len(parts) >= 2 and all(
        p and p[0] in _NAME_START and all(c in _NAME_REST for c in p) for p in parts)


@attrs.frozen
class EventType:
    """A registered event type.

    ``name`` is namespaced by its plugin (``fork_score.branch_scored``);
    ``payload`` is the attrs class of the current schema; ``upcasters[v]``
    turns the data of version ``v`` into version ``v + 1``.
    """

    name: str
    payload: type
    schema_version: int = 1
    upcasters: Mapping[int, Upcaster] = attrs.field(factory=dict)
    description: str = ""

    def __attrs_post_init__(self) -> None:
        if not _valid_type_name(self.name):
            raise ValueError(f"event type {self.name!r}: must look like 'plugin.event_name'")
        if not attrs.has(self.payload):
            raise ValueError(f"event type {self.name!r}: payload must be an attrs class")
        if self.schema_version < 1:
            raise ValueError(f"event type {self.name!r}: schema_version must be >= 1")
        missing = [v for v in range(1, self.schema_version) if v not in self.upcasters]
        if missing:
            raise ValueError(f"event type {self.name!r}: no upcaster from version(s) {missing}")


def encode_fast(cls: type, dumper: Any, data: Any) -> tuple[Any, bytes] | None:
    """A payload (an instance of ``cls`` or a JSON object for it) through its generated
    encoder: ``(json_data, canonical_bytes)``, or None for the general path. A JSON object
    is built into an instance first, so defaults, converters and validators apply as
    they do when cattrs structures it; anything unusual (an unknown or missing member, a
    validator's refusal) is left to the general path, which words the error."""
    if data.__class__ is dict:
        try:
            data = cls(**data)
        except Exception:
            return None
    return dumper(data)  # type: ignore[no-any-return]


def _schema() -> Any:
    from . import schema  # cattrs: imported on the first append only

    return schema


class EventTypeRegistry:
    """All event types known to a deployment, keyed by name."""

    def __init__(self, types: Iterable[EventType] = ()) -> None:
        self._types: dict[str, EventType] = {}
        # per type: the generated fast dumper of its payload class (None: there is none)
        self._dumpers: dict[str, Any] = {}
        # per type: a function turning its (current-version) data into a payload instance
        self._loaders: dict[str, Callable[[Any], Any]] = {}
        # per type: its prepare_encoded as a function (see _encoder)
        self._encoders: dict[str, Callable[[Any, int | None], tuple[int, Any, bytes | None]]] = {}
        for t in types:
            self.register(t)

    def register(self, event_type: EventType) -> None:
        if event_type.name in self._types and self._types[event_type.name] is not event_type:
            raise ValueError(f"event type {event_type.name!r} is registered twice")
        self._types[event_type.name] = event_type

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Any:
        return iter(sorted(self._types))

    def get(self, name: str) -> EventType:
        if name.__class__ is not str:
            raise UnknownEventTypeError(f"type: must be a string, got {type(name).__name__}")
        try:
            return self._types[name]
        except KeyError:
            raise UnknownEventTypeError(
                f"type: unknown event type {name!r} (no enabled plugin registers it; "
                f"known: {', '.join(self) or 'none'})"
            ) from None

    def prepare(self, name: str, data: Any, schema_version: int | None = None) -> tuple[int, Any]:
        """Validate a payload for appending; return ``(schema_version, json_data)``.

        ``data`` may be an instance of the payload class or a JSON object. New
        events are always written in the current schema version.
        """
        version, json_data, _ = self.prepare_encoded(name, data, schema_version)
        return version, json_data

    def prepare_encoded(
        self, name: str, data: Any, schema_version: int | None = None
    ) -> tuple[int, Any, bytes | None]:
        """:meth:`prepare`, plus the canonical bytes of the data when they came for free
        (payloads of classes with a generated encoder, see
        :func:`cladelog.core.schema.flat_dumper`), else None."""
        return self._encoder(name)(data, schema_version)

    def _encoder(self, name: str) -> Callable[[Any, int | None], tuple[int, Any, bytes | None]]:
        """:meth:`prepare_encoded` for the type ``name``, as a function ``(data,
        schema_version)`` made once per type: a batch looks its type up once, not per
        event. Raises :class:`UnknownEventTypeError` as :meth:`get` does."""
        encode = self._encoders.get(name) if name.__class__ is str else None
        if encode is None:
            encode = self._encoders[name] = self._make_encoder(self.get(name))
        return encode

    def _make_encoder(
        self, et: EventType
    ) -> Callable[[Any, int | None], tuple[int, Any, bytes | None]]:
        name, payload, current = et.name, et.payload, et.schema_version
        dumper = self.flat_dumper(name)

        def encode(data: Any, schema_version: int | None = None) -> tuple[int, Any, bytes | None]:
            if schema_version is not None and schema_version != current:
                if type(schema_version) is not int or schema_version > current:
                    raise InputError(
                        f"schema_version: {name} has no version {schema_version!r} "
                        f"(current is {current})"
                    )
                raise InputError(
                    f"schema_version: new {name} events are written in version "
                    f"{current}, not {schema_version}"
                )
            if dumper is not None:
                kind = data.__class__
                done = (dumper(data) if kind is payload
                        else encode_fast(payload, dumper, data) if kind is dict else None)
                if done is not None:
                    return current, done[0], done[1]
            schema = _schema()
            if isinstance(data, payload):
                # attrs does not check annotations when an instance is built: structuring
                # its unstructured form does, and names the field that does not match
                json_data = schema.unstructure_checked(data, payload)
                schema.structure(json_data, payload)
                return current, json_data, None
            obj: Any = schema.structure(data, payload)
            return current, schema.converter.unstructure(obj, payload), None

        return encode

    def flat_dumper(self, name: str) -> Any:
        """The generated encoder of the type's payload class (see
        :func:`cladelog.core.schema.flat_dumper`), or None when it has none."""
        try:
            return self._dumpers[name]
        except KeyError:
            dumper = self._dumpers[name] = _schema().flat_dumper(self.get(name).payload)
            return dumper

    def upcast(self, name: str, schema_version: int, data: Any) -> Any:
        """Bring stored data of ``schema_version`` up to the current version."""
        et = self._types.get(name)
        if et is None or schema_version == et.schema_version:
            return data
        if schema_version > et.schema_version:
            from .schema import PayloadError

            raise PayloadError(
                f"schema_version: {name} version {schema_version} is newer than this "
                f"plugin's {et.schema_version}"
            )
        for v in range(schema_version, et.schema_version):
            data = et.upcasters[v](data)
        return data

    def structure(self, name: str, data: Any) -> Any:
        """Structure (already upcast) data into the type's payload class, or raise
        :class:`~cladelog.core.schema.PayloadError` naming the field."""
        return self.loader(name)(data)

    def loader(self, name: str) -> Callable[[Any], Any]:
        """The function :meth:`structure` applies for ``name``: (already upcast) data to
        a payload instance. Payload classes of JSON scalars, lists of them and free JSON
        get a generated function (see :func:`cladelog.core.schema.flat_loader`) that
        takes the general path only for data it cannot vouch for."""
        try:
            return self._loaders[name]
        except KeyError:
            pass
        schema = _schema()
        cls = self.get(name).payload
        general = schema.structure

        def slow(data: Any) -> Any:
            return general(data, cls)

        # the generated function takes the general path itself for data it does not vouch for
        load = schema.flat_loader(cls, or_else=slow) or slow
        self._loaders[name] = load
        return load
