"""The store interface every backend implements, and the logic they share.

A backend only moves rows; this module decides what a row is. Building a
batch (positions, stream versions, bodies, hashes) and verifying a chain are
plain functions here, so SQLite and PostgreSQL produce byte-identical events.
"""

from __future__ import annotations

import abc
import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from ..canonical import CanonicalError, canonical_bytes
from ..errors import ChainError, ConcurrencyError, InputError
from ..events import (
    GENESIS_HASH,
    RecordedEvent,
    chain_hash,
    encode_body,
    utc_now,
)

__all__ = [
    "Checkpoint",
    "EncodedBatch",
    "EventStore",
    "Head",
    "ImportResult",
    "PreparedEvent",
    "RawRow",
    "VerifyReport",
    "batch_digest",
    "build_batch",
    "check_import",
    "check_row",
    "encode_batch",
    "event_from_json",
    "row_filter",
    "verify_rows",
]

# (position, stream, stream_version, type, schema_version, recorded_at, body, hash, prev_hash)
RawRow = tuple[int, str, int, str, int, str, bytes, str, str]


class PreparedEvent(NamedTuple):
    """A validated event ready for a store: JSON data in the current schema version."""

    stream: str
    type: str
    schema_version: int
    data: Any
    meta: Mapping[str, Any]


@attrs.frozen
class Head:
    position: int
    hash: str


@attrs.frozen
class Checkpoint:
    """A projection's saved state: beside the log, outside the chain."""

    name: str
    version: int
    position: int
    head_hash: str
    state: Any
    digest: str


@attrs.frozen
class VerifyReport:
    ok: bool
    checked: int
    head: Head
    position: int | None = None
    reason: str | None = None


@attrs.frozen
class ImportResult:
    already_present: int
    appended: int
    head: Head


class EncodedBatch(NamedTuple):
    """A batch with each event's canonical ``data`` and ``meta`` bytes, and its digest.

    Encoding happens before a store takes its write lock, so the lock is held
    only to number, hash and insert.
    """

    events: Sequence[PreparedEvent]
    parts: list[tuple[bytes, bytes]]
    digest: str


def encode_batch(events: Sequence[PreparedEvent], *, digest: bool = True) -> EncodedBatch:
    """Encode every event's data and meta canonically (meta once per shared object).

    The digest covers the batch's content but not its positions or times, so a
    retry of the same batch has the same digest (idempotency keys). Raises
    :class:`InputError` naming the event and field that has no canonical form.
    """
    parts: list[tuple[bytes, bytes]] = []
    metas: dict[int, bytes] = {}  # a batch usually shares one meta object
    for i, e in enumerate(events):
        try:
            meta_bytes = metas.get(id(e.meta))
            if meta_bytes is None:
                meta_bytes = metas[id(e.meta)] = canonical_bytes(e.meta, path="$.meta")
            parts.append((canonical_bytes(e.data, path="$.data"), meta_bytes))
        except CanonicalError as exc:
            where = f"events[{i}]" if len(events) > 1 else "event"
            raise InputError(f"{where}.{str(exc).removeprefix('$.')}") from None
    if not digest:  # only idempotent appends compare digests
        return EncodedBatch(events, parts, "")
    h = hashlib.sha256()
    for e, (data_bytes, meta_bytes) in zip(events, parts, strict=True):
        # canonical JSON never holds a raw NUL byte, so NUL separates unambiguously
        h.update(canonical_bytes([e.stream, e.type, e.schema_version], path="$.stream")
                 + b"\0" + data_bytes + b"\0" + meta_bytes + b"\0")
    return EncodedBatch(events, parts, h.hexdigest())


def batch_digest(events: Sequence[PreparedEvent]) -> str:
    """Digest of a batch's content (not its positions or times), for idempotent retries."""
    return encode_batch(events).digest


def build_batch(
    batch: EncodedBatch | Sequence[PreparedEvent],
    head: Head,
    current_versions: Mapping[str, int],
    expected_versions: Mapping[str, int] | None,
    clock: Callable[[], str] | None = None,
) -> list[RecordedEvent]:
    """Assign positions, stream versions, timestamps and hashes to a batch.

    Raises :class:`ConcurrencyError` when a stream is not at its expected version.
    """
    if not isinstance(batch, EncodedBatch):
        batch = encode_batch(batch)
    if expected_versions:
        for stream, expected in expected_versions.items():
            actual = current_versions.get(stream, 0)
            if actual != expected:
                raise ConcurrencyError(stream, expected, actual)
    versions = dict(current_versions)
    position, prev = head.position, head.hash
    now = (clock or utc_now)()
    out: list[RecordedEvent] = []
    sha256 = hashlib.sha256
    prev_raw = bytes(32) if prev == GENESIS_HASH else bytes.fromhex(prev)
    # The body's members after data and meta, laid out as assemble_body does (the
    # conformance suite pins the bytes); strings are quoted once per batch.
    quoted: dict[str, str] = {}

    def quote(value: object, field: str) -> str:
        q = quoted.get(value) if value.__class__ is str else None  # type: ignore[arg-type]
        if q is None:
            if value.__class__ is not str:
                raise InputError(f"event at position {position}: {field}: must be a string")
            q = _json_str(value)
            try:
                q.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"event at position {position}: {field}: contains a lone "
                                 "surrogate") from None
            quoted[value] = q  # type: ignore[index]
        return q

    now_q = quote(now, "recorded_at")
    for e, (data_bytes, meta_bytes) in zip(batch.events, batch.parts, strict=True):
        position += 1
        stream = e.stream
        version = versions.get(stream, 0) + 1
        versions[stream] = version
        if e.schema_version.__class__ is not int:
            raise InputError(f"event at position {position}: schema_version: must be an integer")
        tail = (f',"position":{position},"prev_hash":"{prev}","recorded_at":{now_q},'
                f'"schema_version":{e.schema_version},"stream":{quote(stream, "stream")},'
                f'"stream_version":{version},"type":{quote(e.type, "type")}}}')
        body = b'{"data":' + data_bytes + b',"meta":' + meta_bytes + tail.encode("utf-8")
        prev_raw = sha256(prev_raw + body).digest()
        hex_hash = prev_raw.hex()
        out.append(RecordedEvent(position, stream, version, e.type, e.schema_version, e.data,
                                 e.meta, now, prev, hex_hash, body))
        prev = hex_hash
    return out


_json_str = json.JSONEncoder(ensure_ascii=False).encode


def check_row(row: RawRow, expected_position: int, prev_hash: str) -> tuple[RecordedEvent, str]:
    """Check one stored row against the chain; return the event or raise :class:`ChainError`."""
    position, stream, stream_version, type_, schema_version, recorded_at, body, hash_, prev = row
    if position != expected_position:
        raise ChainError(expected_position, f"missing: the next stored position is {position}")
    try:
        event = RecordedEvent.from_body(bytes(body), hash_)
    except (ValueError, KeyError, TypeError):
        raise ChainError(position, "stored body is not a valid event document") from None
    if chain_hash(prev_hash, bytes(body)) != hash_:
        raise ChainError(position, "hash does not match the stored event")
    if prev != prev_hash or event.prev_hash != prev_hash:
        raise ChainError(position, "prev_hash does not link to the previous event")
    columns = (position, stream, stream_version, type_, schema_version, recorded_at)
    inner = (event.position, event.stream, event.stream_version, event.type,
             event.schema_version, event.recorded_at)
    if columns != inner:
        names = ("position", "stream", "stream_version", "type", "schema_version", "recorded_at")
        bad = next(n for n, a, b in zip(names, columns, inner, strict=True) if a != b)
        raise ChainError(position, f"column {bad} disagrees with the hashed event")
    return event, hash_


_decode_value = json.JSONDecoder().raw_decode
_DATA_AT = len('{"data":')
_META_KEY = ',"meta":'


def verified_events(rows: Iterable[RawRow], start: Head) -> Iterator[RecordedEvent]:
    """Turn stored rows into events, checking each against the chain (the replay hot path).

    Equivalent to :func:`check_row` per row, but parses only ``data`` and
    ``meta`` from the body: the rest of the body is compared byte for byte
    with its expected canonical form, rebuilt from the row's columns.
    """
    position, prev = start.position, start.hash
    prev_raw = bytes(32) if prev == GENESIS_HASH else bytes.fromhex(prev)
    sha256 = hashlib.sha256
    quoted: dict[str, str] = {}
    dumps = json.dumps
    for row in rows:
        pos, stream, stream_version, type_, schema_version, recorded_at, body, hash_, prev_h = row
        position += 1
        if pos != position:
            raise ChainError(position, f"missing: the next stored position is {pos}")
        body = bytes(body)
        digest = sha256(prev_raw + body).digest()
        if digest.hex() != hash_:
            raise ChainError(pos, "hash does not match the stored event")
        if prev_h != prev:
            raise ChainError(pos, "prev_hash does not link to the previous event")
        try:
            text = body.decode("utf-8")
            data, end = _decode_value(text, _DATA_AT)
            if not text.startswith(_META_KEY, end):
                raise ValueError("meta")
            meta, end = _decode_value(text, end + len(_META_KEY))
        except ValueError:
            raise ChainError(pos, "stored body is not a valid event document") from None
        qs = quoted.get(stream) or quoted.setdefault(stream, dumps(stream, ensure_ascii=False))
        qt = quoted.get(type_) or quoted.setdefault(type_, dumps(type_, ensure_ascii=False))
        tail = (f',"position":{pos},"prev_hash":"{prev}","recorded_at":"{recorded_at}",'
                f'"schema_version":{schema_version},"stream":{qs},'
                f'"stream_version":{stream_version},"type":{qt}}}')
        if not text.startswith('{"data":') or text[end:] != tail:
            raise ChainError(pos, "the stored columns disagree with the hashed event")
        prev, prev_raw = hash_, digest
        yield RecordedEvent(pos, stream, stream_version, type_, schema_version, data, meta,
                            recorded_at, prev, hash_, body)


def row_filter(
    start: int,
    stop: int | None,
    stream: str | None,
    types: Collection[str] | None,
    mark: str,
) -> tuple[str, list[Any]] | None:
    """The WHERE clause and arguments of a read (``mark`` is the driver's placeholder);
    None when the read cannot match anything (an empty ``types``)."""
    where = [f"position >= {mark}"]
    args: list[Any] = [start]
    if stop is not None:
        where.append(f"position <= {mark}")
        args.append(stop)
    if stream is not None:
        where.append(f"stream = {mark}")
        args.append(stream)
    if types is not None:
        types = list(types)
        if not types:
            return None
        where.append(f"type IN ({', '.join([mark] * len(types))})")
        args.extend(types)
    return " AND ".join(where), args


def check_import(event: RecordedEvent, position: int, prev_hash: str) -> None:
    """An imported event must be the next position and verify against the chain."""
    if event.position != position + 1:
        raise ChainError(position + 1, f"import: expected position {position + 1}, "
                                       f"got {event.position}")
    if event.prev_hash != prev_hash or chain_hash(prev_hash, event.body) != event.hash:
        raise ChainError(event.position, "import: hash chain does not verify")


def verify_rows(rows: Iterable[RawRow], start: Head | None = None) -> VerifyReport:
    """Walk rows in position order; report the first position that does not verify."""
    head = start or Head(0, GENESIS_HASH)
    position, prev = head.position, head.hash
    checked = 0
    for row in rows:
        try:
            _, prev = check_row(row, position + 1, prev)
        except ChainError as exc:
            return VerifyReport(False, checked, Head(position, prev), exc.position, exc.reason)
        position += 1
        checked += 1
    return VerifyReport(True, checked, Head(position, prev))


_EXPORT_KEYS = frozenset(
    ("position", "stream", "stream_version", "type", "schema_version", "data", "meta",
     "recorded_at", "prev_hash", "hash")
)


def event_from_json(doc: Any, where: str = "event") -> RecordedEvent:
    """Rebuild a recorded event from its export form, recomputing its canonical body."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected an object")
    missing = _EXPORT_KEYS - doc.keys()
    if missing:
        raise InputError(f"{where}: missing field(s) {sorted(missing)}")
    extra = doc.keys() - _EXPORT_KEYS
    if extra:
        raise InputError(f"{where}: unknown field(s) {sorted(extra)}")
    for key in ("position", "stream_version", "schema_version"):
        if type(doc[key]) is not int or doc[key] < 1:
            raise InputError(f"{where}.{key}: must be a positive integer")
    for key in ("stream", "type", "recorded_at", "prev_hash", "hash"):
        if type(doc[key]) is not str:
            raise InputError(f"{where}.{key}: must be a string")
    if not isinstance(doc["meta"], dict):
        raise InputError(f"{where}.meta: must be an object")
    body = encode_body(
        position=doc["position"], stream=doc["stream"], stream_version=doc["stream_version"],
        type=doc["type"], schema_version=doc["schema_version"], data=doc["data"],
        meta=doc["meta"], recorded_at=doc["recorded_at"], prev_hash=doc["prev_hash"],
    )
    return RecordedEvent(doc["position"], doc["stream"], doc["stream_version"], doc["type"],
                         doc["schema_version"], json.loads(body)["data"], doc["meta"],
                         doc["recorded_at"], doc["prev_hash"], doc["hash"], body)


class EventStore(abc.ABC):
    """An append-only, hash-chained event log.

    Implementations guarantee: batches are atomic; positions are 1, 2, 3, ...
    without gaps; ``(stream, stream_version)`` is unique; rows can be neither
    updated nor deleted (the database refuses it); reads stream lazily.
    """

    url: str

    @abc.abstractmethod
    def append(
        self,
        events: Sequence[PreparedEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
    ) -> list[RecordedEvent]:
        """Append a batch atomically and return the recorded events.

        ``expected_versions`` maps a stream to the version it must be at (0 =
        empty); a mismatch raises :class:`ConcurrencyError` and appends nothing.
        A retry with the same ``idempotency_key`` and the same content returns
        the events of the first attempt instead of appending again.
        """

    @abc.abstractmethod
    def read_rows(
        self,
        start: int = 1,
        stop: int | None = None,
        *,
        stream: str | None = None,
        types: Collection[str] | None = None,
    ) -> Iterator[RawRow]:
        """Stored rows in position order, ``start <= position <= stop``, streamed."""

    def read(
        self,
        start: int = 1,
        stop: int | None = None,
        *,
        stream: str | None = None,
        types: Collection[str] | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in position order (not chain-checked; see :meth:`verify`)."""
        for row in self.read_rows(start, stop, stream=stream, types=types):
            yield RecordedEvent.from_body(bytes(row[6]), row[7])

    def read_verified(self, start: Head, stop: int | None = None) -> Iterator[RecordedEvent]:
        """Events after ``start``, each checked against the chain as it is read."""
        return verified_events(self.read_rows(start.position + 1, stop), start)

    @abc.abstractmethod
    def head(self) -> Head:
        """The last position and its hash (0 and the genesis hash when empty)."""

    @abc.abstractmethod
    def hash_at(self, position: int) -> str | None:
        """The stored hash at ``position``, if any."""

    @abc.abstractmethod
    def stream_version(self, stream: str) -> int:
        """The version of ``stream`` (0 when it has no events)."""

    def wait_for_append(self, after: int, timeout: float) -> bool:
        """Block until the head passes ``after`` or ``timeout`` seconds pass; True if it did.

        This default polls; stores with a notification channel override it.
        """
        import time

        deadline = time.monotonic() + timeout
        while True:
            if self.head().position > after:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.2, remaining))

    def verify(self, stop: int | None = None) -> VerifyReport:
        """Walk the whole chain and report the first position that does not verify."""
        return verify_rows(self.read_rows(1, stop))

    @abc.abstractmethod
    def import_events(self, events: Iterable[RecordedEvent]) -> ImportResult:
        """Add exported events: a known prefix is skipped, the rest must extend the chain."""

    @abc.abstractmethod
    def load_checkpoint(self, name: str) -> Checkpoint | None: ...

    @abc.abstractmethod
    def save_checkpoint(self, checkpoint: Checkpoint) -> None: ...

    @abc.abstractmethod
    def delete_checkpoint(self, name: str) -> None: ...

    @abc.abstractmethod
    def checkpoints(self) -> list[Checkpoint]: ...

    def size_bytes(self) -> int | None:
        """Bytes the store occupies, when the backend can tell."""
        return None

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
