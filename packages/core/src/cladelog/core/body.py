"""The hashed body of an event: its one layout, its hash, and the stored row it comes from.

This module is the one owner of the format ``docs/events.md`` specifies. Everything that
lays out, hashes or verifies an event's body calls it: appending (both stores, through
:mod:`cladelog.core.store.base`), import and export, ``verify`` and replay.

The body is the canonical JSON object (RFC 8785, :mod:`cladelog.core.canonical`) of the
nine members::

    data, meta, position, prev_hash, recorded_at, schema_version,
    stream, stream_version, type

and ``hash = SHA-256(prev || body)``, ``prev`` being the 32 raw bytes of ``prev_hash``.
The members sort in that order, so the body is laid out directly (:data:`_LAYOUT`) from
the canonical bytes of ``data`` and ``meta`` and the other members. A store keeps those
two byte strings and every other member as a column (:data:`RawRow`); nothing is stored
twice, so a column cannot disagree with what was hashed.

What differs between callers is only how often the same parts are written: a batch
shares one ``recorded_at``, and a run of events shares stream, type and schema version,
so the loops below lay out those parts once (:func:`shape`, :func:`quote`) and pass them
to the one layout. A replay checks its rows a page at a time with operations that run in
C (``map`` and ``zip`` over the columns, hashlib, orjson); a page that does not check
out is checked again one row at a time by the same code, which then names the first row
and the rule it breaks.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

import orjson

from .canonical import CanonicalError, canonical_bytes
from .errors import ChainError, InputError

__all__ = [
    "CHECK_BYTES",
    "CHECK_ROWS",
    "GENESIS_HASH",
    "REPLAY_COLUMNS",
    "ROW_COLUMNS",
    "RawRow",
    "RecordedEvent",
    "ReplayRow",
    "assemble_body",
    "chain_batch",
    "chain_hash",
    "check_row",
    "encode_body",
    "event_from_row",
    "quote",
    "row_body",
    "shape",
    "split_body",
    "verified_events",
    "verified_pages",
]

GENESIS_HASH = "0" * 64
_GENESIS_RAW = bytes(32)


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
        return (
            f"RecordedEvent(position={self.position}, stream={self.stream!r}, "
            f"type={self.type!r}, hash={self.hash[:12]}...)"
        )

    @classmethod
    def from_body(cls, body: bytes, hash_hex: str) -> RecordedEvent:
        """Rebuild an event from its stored canonical bytes and hash."""
        doc = orjson.loads(body)
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


# -- the layout ------------------------------------------------------------------------------
#
# The body, its members in canonical (sorted) order. The arguments: data and meta (their
# canonical bytes), position, prev_hash (its canonical JSON string without the quotes),
# recorded_at (its canonical JSON string), the shape's head (schema_version and stream),
# stream_version, the shape's tail (type). Every body cladelog writes or checks is this.
_LAYOUT = b'{"data":%b,"meta":%b,"position":%d,"prev_hash":"%b","recorded_at":%b%b%d%b'

#: The body's bytes around ``stream_version`` for one (stream, type, schema version):
#: ``,"schema_version":N,"stream":"S","stream_version":`` and ``,"type":"T"}``.
Shape = tuple[bytes, bytes]


def quote(value: object, name: str) -> bytes:
    """A string member of the body as canonical JSON, or :class:`CanonicalError` naming it
    (not a string, or a lone surrogate)."""
    if value.__class__ is not str:
        raise CanonicalError(f"$.{name}: must be a string")
    return canonical_bytes(value, path=f"$.{name}")


def shape(stream: object, type_: object, schema_version: object) -> Shape:
    """The body's bytes around ``stream_version`` (see :data:`Shape`), or
    :class:`CanonicalError` naming the member that cannot be in a body."""
    stream_q, type_q = quote(stream, "stream"), quote(type_, "type")
    if schema_version.__class__ is not int:
        raise CanonicalError("$.schema_version: must be an integer")
    return (
        b',"schema_version":%d,"stream":%b,"stream_version":' % (schema_version, stream_q),
        b',"type":%b}' % type_q,
    )


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
    """The body from the canonical bytes of ``data`` and ``meta`` and the other members.

    Equals ``canonical_bytes`` of the whole body (docs/events.md pins an example).
    Raises :class:`CanonicalError` naming a member that cannot be in a body.
    """
    head, tail = shape(stream, type, schema_version)
    time_q, prev_q = quote(recorded_at, "recorded_at"), quote(prev_hash, "prev_hash")
    for name, number in (("position", position), ("stream_version", stream_version)):
        if number.__class__ is not int:
            raise CanonicalError(f"$.{name}: must be an integer")
    return _LAYOUT % (data, meta, position, prev_q[1:-1], time_q, head, stream_version, tail)


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
        canonical_bytes(data, path="$.data"),
        canonical_bytes(meta, path="$.meta"),
        position=position,
        stream=stream,
        stream_version=stream_version,
        type=type,
        schema_version=schema_version,
        recorded_at=recorded_at,
        prev_hash=prev_hash,
    )


def chain_hash(prev_hash: str, body: bytes) -> str:
    """``SHA-256(prev || body)`` as hex, ``prev`` being the raw bytes of ``prev_hash``."""
    prev = _GENESIS_RAW if prev_hash == GENESIS_HASH else bytes.fromhex(prev_hash)
    return hashlib.sha256(prev + body).hexdigest()


# -- appending: a batch numbered, laid out and chained ------------------------------------------
def chain_batch(
    events: Sequence[Any],
    parts: Sequence[tuple[bytes, bytes]],
    position: int,
    prev: str,
    versions: dict[str, int],
    now: str,
    digests: list[bytes] | None = None,
) -> tuple[list[RecordedEvent], list[RawRow]]:
    """Number, lay out and chain a batch after the event at ``position`` (hash ``prev``).

    ``events`` have ``stream``, ``type``, ``schema_version``, ``data`` and ``meta``
    (:class:`~cladelog.core.store.base.PreparedEvent`); ``parts`` are the canonical bytes of
    each one's data and meta; ``versions`` (each stream's version, updated in place) and
    ``now`` (every event's ``recorded_at``). Returns the events and the rows a store
    inserts; ``digests``, when given, receives each event's chain hash as its 32 raw bytes
    (what the store's Merkle tree hashes as the leaf). Raises :class:`InputError` naming
    the event and member that cannot be in a body.
    """
    out: list[RecordedEvent] = []
    rows: list[RawRow] = []
    sha256 = hashlib.sha256
    keep_digest = None if digests is None else digests.append
    prev_raw = _GENESIS_RAW if prev == GENESIS_HASH else bytes.fromhex(prev)
    try:
        time_q = quote(now, "recorded_at")
    except CanonicalError as exc:
        raise _input_error(position + 1, exc) from None
    shapes: dict[tuple[str, str, int], Shape] = {}
    new_event = partial(tuple.__new__, RecordedEvent)  # its own __new__ is Python
    layout = _LAYOUT.__mod__
    for e, (data_bytes, meta_bytes) in zip(events, parts, strict=True):
        position += 1
        stream, type_, schema_version = e.stream, e.type, e.schema_version
        version = versions.get(stream, 0) + 1
        versions[stream] = version
        key = (stream, type_, schema_version)
        known = shapes.get(key)
        if known is None:
            try:
                known = shapes[key] = shape(stream, type_, schema_version)
            except CanonicalError as exc:
                raise _input_error(position, exc) from None
        body = layout(
            (
                data_bytes,
                meta_bytes,
                position,
                prev.encode("ascii"),
                time_q,
                known[0],
                version,
                known[1],
            )
        )
        prev_raw = sha256(prev_raw + body).digest()
        hex_hash = prev_raw.hex()
        if keep_digest is not None:
            keep_digest(prev_raw)
        out.append(
            new_event(
                (
                    position,
                    stream,
                    version,
                    type_,
                    schema_version,
                    e.data,
                    e.meta,
                    now,
                    prev,
                    hex_hash,
                    body,
                )
            )
        )
        rows.append(
            (
                position,
                stream,
                version,
                type_,
                schema_version,
                now,
                data_bytes,
                meta_bytes,
                hex_hash,
                prev,
            )
        )
        prev = hex_hash
    return out, rows


def _input_error(position: int, exc: CanonicalError) -> InputError:
    return InputError(f"event at position {position}: {str(exc).removeprefix('$.')}")


# -- a stored row ------------------------------------------------------------------------------

#: A stored row: (position, stream, stream_version, type, schema_version, recorded_at,
#: data, meta, hash, prev_hash). ``data`` and ``meta`` are the canonical bytes of those
#: members; every other member of the body is a column (see :func:`row_body`).
RawRow = tuple[int, str, int, str, int, str, bytes, bytes, str, str]
ROW_COLUMNS = (
    "position, stream, stream_version, type, schema_version, recorded_at, data, "
    "meta, hash, prev_hash"
)
#: A row as replay reads it: a :data:`RawRow` without ``prev_hash`` (the body is rebuilt
#: with the previous event's hash, so the hash check also proves the link).
ReplayRow = tuple[int, str, int, str, int, str, bytes, bytes, str]
REPLAY_COLUMNS = (
    "position, stream, stream_version, type, schema_version, recorded_at, data, meta, hash"
)


def row_body(row: RawRow) -> bytes:
    """The canonical body a stored row stands for (the bytes its hash covers).

    Raises :class:`ChainError` when a column does not hold what the body needs (a
    hand-edited row: SQLite stores any type in any column).
    """
    position, stream, stream_version, type_, schema_version, recorded_at, data, meta, _, prev = row
    try:
        for name, value in (("data", data), ("meta", meta)):
            if not isinstance(value, bytes | bytearray | memoryview):
                raise CanonicalError(f"$.{name}: stored value is not bytes")
        return assemble_body(
            bytes(data),
            bytes(meta),
            position=position,
            stream=stream,
            stream_version=stream_version,
            type=type_,
            schema_version=schema_version,
            recorded_at=recorded_at,
            prev_hash=prev,
        )
    except CanonicalError as exc:
        raise ChainError(position, f"a stored column is not valid ({exc})") from None


def event_from_row(row: RawRow) -> RecordedEvent:
    """A stored row as an event (not chain-checked; :class:`ChainError` if it is not even
    well-formed)."""
    body = row_body(row)
    try:
        data, meta = orjson.loads(row[6]), orjson.loads(row[7])
    except ValueError:
        raise ChainError(row[0], "stored data or meta is not valid JSON") from None
    return RecordedEvent(
        row[0], row[1], row[2], row[3], row[4], data, meta, row[5], row[9], row[8], body
    )


def check_row(row: RawRow, expected_position: int, prev_hash: str) -> tuple[RecordedEvent, str]:
    """Check one stored row against the chain; return the event or raise :class:`ChainError`."""
    position, hash_, prev = row[0], row[8], row[9]
    if position != expected_position:
        raise ChainError(expected_position, f"missing: the next stored position is {position}")
    if prev != prev_hash:
        raise ChainError(position, "prev_hash does not link to the previous event")
    body = row_body(row)
    if chain_hash(prev_hash, body) != hash_:
        raise ChainError(position, "hash does not match the stored event")
    try:
        data, meta = orjson.loads(row[6]), orjson.loads(row[7])
        if meta.__class__ is not dict:
            raise ValueError("meta")
    except ValueError:
        raise ChainError(position, "stored data or meta is not valid JSON") from None
    return RecordedEvent(
        position, row[1], row[2], row[3], row[4], data, meta, row[5], prev, hash_, body
    ), hash_


_decode_value = json.JSONDecoder().raw_decode
_DATA_AT = len('{"data":')
_META_KEY = ',"meta":'


def split_body(event: RecordedEvent) -> tuple[bytes, bytes]:
    """The canonical bytes of ``data`` and ``meta`` inside an event's body, for storing.

    Raises :class:`ChainError` when the body is not laid out as cladelog lays out a
    canonical event (then its row could not reproduce it).
    """
    try:
        text = event.body.decode("utf-8")
        _, end = _decode_value(text, _DATA_AT)
        if not text.startswith('{"data":') or not text.startswith(_META_KEY, end):
            raise ValueError("layout")
        _, meta_end = _decode_value(text, end + len(_META_KEY))
        data = text[_DATA_AT:end].encode("utf-8")
        meta = text[end + len(_META_KEY) : meta_end].encode("utf-8")
        row = (
            event.position,
            event.stream,
            event.stream_version,
            event.type,
            event.schema_version,
            event.recorded_at,
            data,
            meta,
            event.hash,
            event.prev_hash,
        )
        if row_body(row) != event.body:
            raise ValueError("layout")
    except (ValueError, CanonicalError):
        raise ChainError(
            event.position, "the event's body is not a canonical cladelog event document"
        ) from None
    return data, meta


# -- replay: rows read, checked against the chain, a page at a time -----------------------------

#: How many rows the replay read checks at once: a few dozen rows keep the columns it
#: walks in the processor's cache (2,048 at once ran about twice as slow per row) ...
CHECK_ROWS = 64
#: ... and no more than about this many bytes of ``data`` (large events come a few at a
#: time, as a store's fetches bring them).
CHECK_BYTES = 1 << 20


_FLAT = (str, int, float, bool, type(None))
_INT = {int}
_STR = {str}
_hexdigest = type(hashlib.sha256()).hexdigest


class _Reader:
    """A read of rows: where the chain stands, and what it remembers between pages."""

    __slots__ = ("decoders", "metas", "position", "prev", "prev_raw", "shapes")

    def __init__(
        self,
        start: Any,
        decoders: Mapping[str, tuple[int, Callable[[Any], Any]]],
        raw_decoders: Mapping[str, tuple[int, Callable[[bytes], Any]]],
    ) -> None:
        both = decoders.keys() & raw_decoders.keys()
        if both:
            raise ValueError(f"decoders and raw_decoders both name {sorted(both)}")
        self.decoders: dict[str, tuple[int, Callable[[Any], Any], bool]] = {
            **{t: (v, f, False) for t, (v, f) in decoders.items()},
            **{t: (v, f, True) for t, (v, f) in raw_decoders.items()},
        }
        #: per (stream, type, schema version): the shape's two parts, the decoder or None,
        #: and whether it takes the stored bytes
        self.shapes: dict[tuple[Any, Any, Any], tuple[bytes, bytes, Any, bool]] = {}
        self.metas: dict[bytes, dict[str, Any]] = {}  # flat metas, parsed once
        self.position: int = start.position
        self.prev: str = start.hash
        self.prev_raw = _GENESIS_RAW if start.hash == GENESIS_HASH else bytes.fromhex(start.hash)

    def pages(self, rows: Iterator[Any]) -> Iterator[list[RecordedEvent]]:
        size = 1  # until the size of a row is known
        while True:
            page: list[Any] = []
            try:
                page.extend(itertools.islice(rows, size))  # keeps what came before
            except BaseException:  # an error of the source
                yield from self.checked(page)  # the rows before the error, then the error
                raise
            if not page:
                return
            yield from self.checked(page)
            try:
                size = min(CHECK_ROWS, CHECK_BYTES // (len(page[-1][6]) + 1)) or 1
            except (TypeError, IndexError):  # not a row the check passed: it has raised
                size = 1

    def checked(self, page: list[Any]) -> Iterator[list[RecordedEvent]]:
        """The page's events; a page that does not check out is checked again one row at a
        time, so that its good rows come out and the first bad one raises its error."""
        if not page:
            return
        try:
            events = self.check(page, bulk=True)
        except Exception:  # checked again, row by row, for the real error
            for row in page:
                yield self.check([row], bulk=False)
            return
        yield events

    def check(self, page: list[Any], bulk: bool) -> list[RecordedEvent]:
        """The events of ``page``, each checked against the chain. Of one row (not
        ``bulk``) it raises the error that row deserves, naming its position; of many it
        may raise anything (the caller checks them again one by one)."""
        n = len(page)
        first = self.position + 1
        pos, streams, svs, types, schemas, times, datas, metas, hashes = zip(*page, strict=True)
        if bulk:
            # the exact types of the columns at once (the row-by-row check that follows a
            # refusal names the column); before the caches below, which equal values (1.0
            # and 1) would share
            if pos != tuple(range(first, first + n)) \
                    or {*map(type, pos), *map(type, svs), *map(type, schemas)} != _INT \
                    or {*map(type, streams), *map(type, types), *map(type, times)} != _STR:
                raise ValueError("columns")
        else:
            if pos[0] != first:
                raise ChainError(first, f"missing: the next stored position is {pos[0]}")
            if pos[0].__class__ is not int or svs[0].__class__ is not int:
                raise ChainError(first, "a stored column is not valid (not an integer)")
            if schemas[0].__class__ is not int or streams[0].__class__ is not str \
                    or types[0].__class__ is not str:
                self.shape((streams[0], types[0], schemas[0]), first, cached=False)  # names it
                raise ValueError("columns")
        # the body's parts: the shape per (stream, type, schema version), the time quoted
        if streams.count(streams[0]) == n and types.count(types[0]) == n \
                and schemas.count(schemas[0]) == n:  # a page of one stream and type
            key = (streams[0], types[0], schemas[0])
            shapes: list[Any] = [self.shapes.get(key) or self.shape(key, first)] * n
        else:
            keys = list(zip(streams, types, schemas))
            shapes = list(map(self.shapes.get, keys))
            if None in shapes:
                shapes = [s if s is not None else self.shape(k, first)
                          for s, k in zip(shapes, keys)]
        if not bulk and times[0].__class__ is not str:
            self.time(times[0], first)  # names it
            raise ValueError("recorded_at")
        if times.count(times[0]) == n:  # a batch shares its time
            quoted = [self.time(times[0], first)] * n
        else:  # strings: orjson writes them as canonical_bytes does (it hands them to it)
            quoted = list(map(orjson.dumps, times))
        prevs = (self.prev, *hashes[:-1])
        try:
            heads, tails, decoders, raws = zip(*shapes)
            bodies = list(
                map(
                    _LAYOUT.__mod__,
                    zip(datas, metas, pos, map(str.encode, prevs), quoted, heads, svs, tails),
                )
            )
        except TypeError:
            raise ChainError(first, "a stored column is not valid") from None
        # the hashes: each rebuilt with the stored hash before it, so when all match, each
        # stored hash is the one computed, and every link is proved
        prev_raws = [self.prev_raw, *map(bytes.fromhex, hashes[:-1])]
        computed = list(map(_hexdigest, map(hashlib.sha256, map(bytes.__add__, prev_raws, bodies))))
        if computed != list(hashes):
            raise ChainError(first, "hash does not match the stored event")
        uniform = decoders.count(decoders[0]) == n and raws.count(raws[0]) == n
        try:
            data = _parse(datas, decoders, raws, uniform)
            found: list[Any] = list(map(self.metas.get, metas))
            if None in found:
                found = [m if m is not None else self.meta(b) for m, b in zip(found, metas)]
            meta = list(map(dict.copy, found))  # each event its own
        except InputError as exc:  # a decoder of the stored bytes refused them
            raise InputError(f"event at position {first} ({types[0]}): {exc}") from None
        except (ValueError, TypeError):
            raise ChainError(first, "stored data or meta is not valid JSON") from None
        try:
            data = _decode(data, decoders, raws, uniform)
        except InputError as exc:  # a decoder refused the data
            raise InputError(f"event at position {first} ({types[0]}): {exc}") from None
        events = list(
            map(
                _new_event,
                zip(pos, streams, svs, types, schemas, data, meta, times, prevs, hashes, bodies),
            )
        )
        self.position, self.prev = pos[-1], hashes[-1]
        self.prev_raw = bytes.fromhex(hashes[-1])
        return events

    def shape(
        self, key: tuple[Any, Any, Any], position: int, cached: bool = True
    ) -> tuple[bytes, bytes, Any, bool]:
        """The shape of ``key`` (stream, type, schema version), its decoder and whether that
        takes the stored bytes; cached."""
        known = self.shapes.get(key) if cached else None
        if known is not None:
            return known
        if len(self.shapes) >= 4096:  # a log of many streams: keep the cache small
            self.shapes.clear()
        stream, type_, schema_version = key
        try:
            head, tail = shape(stream, type_, schema_version)
        except CanonicalError as exc:
            raise ChainError(position, f"a stored column is not valid ({exc})") from None
        version, decode, raw = self.decoders.get(type_, (None, None, False))
        if version != schema_version:
            decode, raw = None, False
        known = self.shapes[key] = (head, tail, decode, raw)
        return known

    @staticmethod
    def time(recorded_at: Any, position: int) -> bytes:
        """``recorded_at`` quoted for the body."""
        try:
            return quote(recorded_at, "recorded_at")
        except CanonicalError:
            raise ChainError(position, "a stored column is not valid (recorded_at)") from None

    def meta(self, meta_b: bytes) -> dict[str, Any]:
        """``meta`` parsed, remembered when it is flat (then events get copies of it).
        Raises ValueError when it is not a JSON object."""
        known = self.metas.get(meta_b)
        if known is not None:
            return known
        meta = orjson.loads(meta_b)
        if meta.__class__ is not dict:
            raise ValueError("meta")
        if len(self.metas) < 1024 and all(v.__class__ in _FLAT for v in meta.values()):
            self.metas[meta_b] = meta
        return meta


_new_event = partial(tuple.__new__, RecordedEvent)  # RecordedEvent's own __new__ is Python


def _parse(
    datas: Sequence[Any], decoders: Sequence[Any], raws: Sequence[bool], uniform: bool
) -> list[Any]:
    """The events' data parsed, or what their decoder of the stored bytes makes of them."""
    if uniform:
        if decoders[0] is not None and raws[0]:
            return list(map(decoders[0], datas))
        return list(map(orjson.loads, datas))
    return [
        d(x) if d is not None and r else orjson.loads(x)
        for x, d, r in zip(datas, decoders, raws, strict=True)
    ]


def _decode(
    data: list[Any], decoders: Sequence[Any], raws: Sequence[bool], uniform: bool
) -> list[Any]:
    """The parsed data passed through their type's decoder (one that takes JSON values)."""
    if uniform:
        if decoders[0] is None or raws[0]:
            return data
        many = getattr(decoders[0], "many", None)
        if many is not None:  # a payload loader's page at once; the data is the read's own
            return many(data, True)  # type: ignore[no-any-return]
        return list(map(decoders[0], data))
    return [
        d(x) if d is not None and not r else x for x, d, r in zip(data, decoders, raws, strict=True)
    ]


def verified_events(
    rows: Iterable[ReplayRow],
    start: Any,
    decoders: Mapping[str, tuple[int, Callable[[Any], Any]]] | None = None,
    raw_decoders: Mapping[str, tuple[int, Callable[[bytes], Any]]] | None = None,
) -> Iterator[RecordedEvent]:
    """Turn stored rows into events, checking each against the chain (the replay hot path).

    ``start`` is the :class:`~cladelog.core.store.base.Head` the rows follow. The body is
    rebuilt with the previous event's hash, so the hash check also proves the link; the
    ``prev_hash`` column (which only the insert trigger uses) is not read here, and
    :meth:`EventStore.verify` checks it. Each event gets its own ``meta`` (a flat one is
    parsed once per distinct value and copied).

    ``decoders`` maps an event type to ``(schema_version, decode)``: the ``data`` of
    an event of that type and version is passed through ``decode`` (a payload
    loader, say) and the event carries what it returns. An :class:`InputError` it
    raises is re-raised naming the position.

    ``raw_decoders`` is the same for decoders that take the stored ``data`` bytes
    themselves (canonical JSON, UTF-8), which the read then does not parse: for a reader
    that needs a part of a large payload. Such a decoder vouches for what it returns;
    a ``ValueError`` it raises is reported as data that is not valid JSON. The hash is
    checked over the stored bytes either way. A type may not have both kinds of decoder.

    Events come out in order up to the first row that does not check out, which raises
    :class:`ChainError` naming its position. A decoder may be called twice for an event of
    a page that holds a bad row.
    """
    return itertools.chain.from_iterable(verified_pages(rows, start, decoders, raw_decoders))


def verified_pages(
    rows: Iterable[ReplayRow],
    start: Any,
    decoders: Mapping[str, tuple[int, Callable[[Any], Any]]] | None = None,
    raw_decoders: Mapping[str, tuple[int, Callable[[bytes], Any]]] | None = None,
) -> Iterator[list[RecordedEvent]]:
    """:func:`verified_events` a page at a time: lists of consecutive events (a few dozen
    each, as the read checks them), for a caller that handles a page at once."""
    reader = _Reader(start, decoders or {}, raw_decoders or {})
    return reader.pages(iter(rows))
