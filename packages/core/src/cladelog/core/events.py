"""Events: what is appended (:class:`NewEvent`), what is stored (:class:`RecordedEvent`),
and the hash chain that links them.

The hash of an event is ``SHA-256(prev || body)`` where ``prev`` is the 32 raw
bytes of the previous event's hash (32 zero bytes before the first event) and
``body`` is :func:`cladelog.core.canonical.canonical_bytes` of the JSON object
with exactly these members::

    data, meta, position, prev_hash, recorded_at, schema_version,
    stream, stream_version, type

``prev_hash`` and ``hash`` are lower-case hex. ``recorded_at`` is an RFC 3339
UTC timestamp with microseconds and a ``Z`` suffix. See ``docs/events.md`` for
a worked example a third party can recompute.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from .canonical import CanonicalError, canonical_bytes

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "GENESIS_HASH",
    "NewEvent",
    "RecordedEvent",
    "assemble_body",
    "chain_hash",
    "encode_body",
    "format_timestamp",
    "utc_now",
]

GENESIS_HASH = "0" * 64
_GENESIS_RAW = bytes(32)


def utc_now() -> str:
    """The current UTC time as stored in ``recorded_at``."""
    from datetime import UTC, datetime  # appends only: not on the replay start path

    return format_timestamp(datetime.now(UTC))


def format_timestamp(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC."""
    if moment.tzinfo is None:
        raise ValueError("recorded_at: timestamp must be timezone-aware")
    from datetime import UTC

    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@attrs.frozen
class NewEvent:
    """An event to append. ``data`` is a JSON object or an attrs payload instance.

    ``schema_version`` defaults to the current version of the registered type.
    ``meta`` holds actor, producing plugin and version, and correlation id; the
    deployment fills what is missing.
    """

    stream: str
    type: str
    data: Any
    meta: Mapping[str, Any] = attrs.field(factory=dict)
    schema_version: int | None = None


class RecordedEvent(NamedTuple):
    """An event as the log holds it (immutable). ``body`` is the exact canonical bytes hashed.

    A named tuple rather than an attrs class: replay builds one per event, and
    this is the cheapest immutable record Python offers. Use ``_replace`` to
    derive a modified copy.
    """

    position: int
    stream: str
    stream_version: int
    type: str
    schema_version: int
    data: Any
    meta: Mapping[str, Any]
    recorded_at: str
    prev_hash: str
    hash: str
    body: bytes

    def __repr__(self) -> str:
        return (f"RecordedEvent(position={self.position}, stream={self.stream!r}, "
                f"type={self.type!r}, hash={self.hash[:12]}...)")

    @classmethod
    def from_body(cls, body: bytes, hash_hex: str) -> RecordedEvent:
        """Rebuild an event from its stored canonical bytes and hash."""
        doc = json.loads(body)
        return cls(
            doc["position"],
            doc["stream"],
            doc["stream_version"],
            doc["type"],
            doc["schema_version"],
            doc["data"],
            doc["meta"],
            doc["recorded_at"],
            doc["prev_hash"],
            hash_hex,
            body,
        )

    def to_json(self) -> dict[str, Any]:
        """The event as one JSON object (the export line format): the body plus ``hash``."""
        return {
            "position": self.position,
            "stream": self.stream,
            "stream_version": self.stream_version,
            "type": self.type,
            "schema_version": self.schema_version,
            "data": self.data,
            "meta": dict(self.meta),
            "recorded_at": self.recorded_at,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }

    def computed_hash(self) -> str:
        """Recompute the hash from the stored bytes (no re-encoding)."""
        return chain_hash(self.prev_hash, self.body)


def encode_body(
    *,
    position: int,
    stream: str,
    stream_version: int,
    type: str,
    schema_version: int,
    data: Any,
    meta: Mapping[str, Any],
    recorded_at: str,
    prev_hash: str,
) -> bytes:
    """The canonical bytes an event's hash covers."""
    return assemble_body(
        canonical_bytes(data, path="$.data"), canonical_bytes(meta, path="$.meta"),
        position=position, stream=stream, stream_version=stream_version, type=type,
        schema_version=schema_version, recorded_at=recorded_at, prev_hash=prev_hash,
    )


_json_str = json.JSONEncoder(ensure_ascii=False).encode


def assemble_body(
    data: bytes,
    meta: bytes,
    *,
    position: int,
    stream: str,
    stream_version: int,
    type: str,
    schema_version: int,
    recorded_at: str,
    prev_hash: str,
) -> bytes:
    """The body from the canonical bytes of ``data`` and ``meta`` and the other fields.

    The members of the body sort as data, meta, position, prev_hash,
    recorded_at, schema_version, stream, stream_version, type, so the canonical
    object can be laid out directly; the result equals ``canonical_bytes`` of
    the whole body (docs/events.md pins an example).
    """
    for name, value in (("stream", stream), ("type", type), ("recorded_at", recorded_at),
                        ("prev_hash", prev_hash)):
        if value.__class__ is not str:
            raise CanonicalError(f"$.{name}: must be a string")
    for name, number in (("position", position), ("stream_version", stream_version),
                         ("schema_version", schema_version)):
        if number.__class__ is not int:
            raise CanonicalError(f"$.{name}: must be an integer")
    tail = (f',"position":{position},"prev_hash":{_json_str(prev_hash)},'
            f'"recorded_at":{_json_str(recorded_at)},"schema_version":{schema_version},'
            f'"stream":{_json_str(stream)},"stream_version":{stream_version},'
            f'"type":{_json_str(type)}}}')
    try:
        tail_bytes = tail.encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("$.stream: string contains a lone surrogate") from None
    return b'{"data":' + data + b',"meta":' + meta + tail_bytes


def chain_hash(prev_hash: str, body: bytes) -> str:
    """``SHA-256(prev || body)`` as hex, ``prev`` being the raw bytes of ``prev_hash``."""
    prev = _GENESIS_RAW if prev_hash == GENESIS_HASH else bytes.fromhex(prev_hash)
    return hashlib.sha256(prev + body).hexdigest()
