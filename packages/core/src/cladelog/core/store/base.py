"""The store interface every backend implements, and the logic they share.

A backend only moves rows; this module decides what a row is. Building a
batch (positions, stream versions, bodies, hashes) and verifying a chain are
plain functions here, so SQLite and PostgreSQL produce byte-identical events.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple

import attrs
import orjson

from ..body import (
    GENESIS_HASH,
    REPLAY_COLUMNS,
    ROW_COLUMNS,
    RawRow,
    RecordedEvent,
    chain_batch,
    chain_hash,
    check_row,
    encode_body,
    event_from_row,
    row_body,
    split_body,
    verified_events,
    verified_pages,
)
from ..canonical import CanonicalError, canonical_bytes
from ..errors import ChainError, ConcurrencyError, InputError
from ..events import utc_now

__all__ = [
    "REPLAY_COLUMNS",
    "ROW_COLUMNS",
    "BatchRecord",
    "BatchResult",
    "Checkpoint",
    "CheckpointMark",
    "Chunk",
    "EncodedBatch",
    "EventStore",
    "Head",
    "ImportResult",
    "PreparedEvent",
    "RawRow",
    "VerifyReport",
    "batch_digest",
    "build_batch",
    "build_rows",
    "check_checkpoints",
    "check_import",
    "check_row",
    "check_versions",
    "digest_chunks",
    "digest_part",
    "digest_update",
    "encode_batch",
    "event_from_json",
    "event_from_row",
    "row_body",
    "row_filter",
    "split_body",
    "stream_rows",
    "verified_events",
    "verified_pages",
    "verify_rows",
    "write_chunks",
]

class PreparedEvent(NamedTuple):
    """A validated event ready for a store: JSON data in the current schema version.

    ``encoded``, when given, is ``canonical_bytes(data)`` computed while validating
    (the deployment does so for classes with a generated encoder), so the store need not
    encode ``data`` again.
    """

    stream: str
    type: str
    schema_version: int
    data: Any
    meta: Mapping[str, Any]
    encoded: bytes | None = None


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
    #: every rule every event breaks, as ``(position, rule, message)`` (a deployment's
    #: verify fills it: see :mod:`cladelog.core.rules`)
    violations: tuple[tuple[int | None, str, str], ...] = ()
    #: the Merkle roots recomputed from the chain hashes walked, at the sizes asked for
    #: (``EventStore.verify(roots_at=...)``) that the walk reached
    roots: Mapping[int, bytes] = attrs.field(factory=dict)


class BatchRecord(NamedTuple):
    """An idempotency record: the key a batch was appended under, the batch's digest
    (:func:`encode_batch`) and the positions it was given."""

    key: str
    digest: str
    first: int
    last: int


#: A part of a batch appended in chunks: its events, and the expected versions (stream ->
#: version before the batch) its input named (see :meth:`EventStore.append_chunks`).
Chunk = tuple[Sequence[PreparedEvent], Mapping[str, int]]


@attrs.frozen
class BatchResult:
    """What a batch appended in chunks became: positions ``first..last`` (none when
    ``last < first``), the head after it, and whether it had been appended before under
    its idempotency key (then nothing was appended now)."""

    first: int
    last: int
    head: Head
    repeated: bool = False

    @property
    def count(self) -> int:
        return max(self.last - self.first + 1, 0)


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
        if e.stream.__class__ is not str or e.type.__class__ is not str \
                or e.schema_version.__class__ is not int:  # exact: True is no version 1
            where = f"events[{i}]" if len(events) > 1 else "event"
            bad = ("stream" if e.stream.__class__ is not str else "type"
                   if e.type.__class__ is not str else "schema_version")
            kind = "an integer" if bad == "schema_version" else "a string"
            raise InputError(f"{where}.{bad}: must be {kind}")
        try:
            meta_bytes = metas.get(id(e.meta))
            if meta_bytes is None:
                meta_bytes = metas[id(e.meta)] = canonical_bytes(e.meta, path="$.meta")
            data_bytes = e.encoded
            if data_bytes is None:
                data_bytes = canonical_bytes(e.data, path="$.data")
            parts.append((data_bytes, meta_bytes))
        except CanonicalError as exc:
            where = f"events[{i}]" if len(events) > 1 else "event"
            raise InputError(f"{where}.{str(exc).removeprefix('$.')}") from None
    if not digest:  # only idempotent appends compare digests
        return EncodedBatch(events, parts, "")
    h = hashlib.sha256()
    try:
        digest_update(h, events, parts)
    except CanonicalError:  # a stream or type the body could not quote either
        raise _name_refused(events) from None
    return EncodedBatch(events, parts, h.hexdigest())


def digest_part(stream: str, type_: str, schema_version: int, data: bytes,
                meta: bytes) -> bytes:
    """What one event adds to a batch digest (:func:`encode_batch`): its stream, type and
    schema version, and the canonical bytes of its data and meta, as stored."""
    # canonical JSON never holds a raw NUL byte, so NUL separates unambiguously
    return _digest_head(stream, type_, schema_version) + data + b"\0" + meta + b"\0"


@functools.lru_cache(maxsize=1024)
def _digest_head(stream: str, type_: str, schema_version: int) -> bytes:
    return canonical_bytes([stream, type_, schema_version], path="$.stream") + b"\0"


def _name_refused(events: Sequence[PreparedEvent]) -> InputError:
    """The error for the first event whose stream or type has no canonical form (a lone
    surrogate), naming the event and the member (looked for only once the digest failed)."""
    for i, e in enumerate(events):
        for name, value in (("stream", e.stream), ("type", e.type)):
            try:
                canonical_bytes(value, path="$")
            except CanonicalError as exc:
                where = f"events[{i}]" if len(events) > 1 else "event"
                return InputError(f"{where}.{name}: {str(exc).removeprefix('$: ')}")
    raise AssertionError("every stream and type is canonical")  # pragma: no cover


def digest_update(h: Any, events: Sequence[PreparedEvent],
                  parts: Sequence[tuple[bytes, bytes]]) -> None:
    """Feed a batch's events to the hash ``h`` of its digest (a batch written in chunks
    feeds each chunk in turn, and gets the digest the whole batch at once would have)."""
    for e, (data_bytes, meta_bytes) in zip(events, parts, strict=True):
        h.update(digest_part(e.stream, e.type, e.schema_version, data_bytes, meta_bytes))


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
    return build_rows(batch, head, current_versions, expected_versions, clock)[0]


def build_rows(
    batch: EncodedBatch | Sequence[PreparedEvent],
    head: Head,
    current_versions: Mapping[str, int],
    expected_versions: Mapping[str, int] | None,
    clock: Callable[[], str] | None = None,
    digests: list[bytes] | None = None,
) -> tuple[list[RecordedEvent], list[RawRow]]:
    """:func:`build_batch`, plus each event as the row a store inserts (a :data:`RawRow`);
    ``digests`` receives the chain hashes' raw bytes (:func:`~cladelog.core.body.chain_batch`)."""
    if not isinstance(batch, EncodedBatch):
        batch = encode_batch(batch)
    check_versions(current_versions, expected_versions)
    return chain_batch(batch.events, batch.parts, head.position, head.hash,
                       dict(current_versions), (clock or utc_now)(), digests)


def check_versions(current_versions: Mapping[str, int],
                   expected_versions: Mapping[str, int] | None) -> None:
    """Raise :class:`ConcurrencyError` for the first stream not at its expected version."""
    if expected_versions:
        for stream, expected in expected_versions.items():
            actual = current_versions.get(stream, 0)
            if actual != expected:
                raise ConcurrencyError(stream, expected, actual)


def stream_rows(batch: EncodedBatch, head: Head, current_versions: Mapping[str, int],
                now: str, digests: list[bytes], recorded: list[RecordedEvent], *,
                chunk: int = 128) -> Iterator[RawRow]:
    """:func:`build_rows` (its versions checked by the caller first, with
    :func:`check_versions`) a chunk at a time: the rows are yielded as they are chained,
    so a backend sends the first ones while it chains the next (PostgreSQL's COPY: the
    server inserts while the writer hashes); the events go to ``recorded``."""
    versions = dict(current_versions)
    position, prev = head.position, head.hash
    events, parts = batch.events, batch.parts
    for i in range(0, len(events), chunk):
        done, rows = chain_batch(events[i:i + chunk], parts[i:i + chunk], position, prev,
                                 versions, now, digests)
        recorded.extend(done)
        yield from rows
        position, prev = rows[-1][0], rows[-1][8]


def write_chunks(
    chunks: Iterable[Chunk],
    head: Head,
    lookup: Callable[[list[str]], Mapping[str, int]],
    write: Callable[[list[RawRow]], None],
    clock: Callable[[], str] | None,
    *,
    lead: Sequence[PreparedEvent] = (),
    lead_expected: Mapping[str, int] | None = None,
    digest: bool = True,
) -> tuple[Head, int, str]:
    """Number, chain and hand to ``write`` a batch that arrives in chunks, one chunk at a
    time (a backend calls this inside the one transaction the batch is written in, so
    it stays all or nothing); only one chunk's events and rows are alive at once.

    ``lookup(streams)`` gives the stored versions of streams the batch has not touched
    yet. A stream's expected version (a chunk's second member) is checked against its
    version before the batch, wherever in the batch it is named (:class:`ConcurrencyError`).
    ``lead`` is a batch of its own written first (with ``lead_expected``), such as the
    plugin enablement a deployment records before a caller's first batch: it shares the
    transaction but not the digest. All events share one ``recorded_at``. Returns the head
    after the batch, the batch's first position and its digest (:func:`encode_batch`;
    ``""`` unless ``digest``: only a batch under an idempotency key needs it).
    """
    now = (clock or utc_now)()

    def fixed() -> str:
        return now

    before: dict[str, int] = {}  # each stream's version before the batch
    current: dict[str, int] = {}  # ... and now, within it

    def put(events: Sequence[PreparedEvent], expected: Mapping[str, int],
            h: Any) -> None:
        nonlocal head
        new = sorted(({e.stream for e in events} | set(expected)) - before.keys())
        if new:
            found = lookup(new)
            for stream in new:
                before[stream] = current[stream] = int(found.get(stream, 0))
        for stream, version in expected.items():
            if before[stream] != version:
                raise ConcurrencyError(stream, version, before[stream])
        if not events:
            return
        batch = encode_batch(events, digest=False)
        _, rows = build_rows(batch, head, current, None, fixed)
        write(rows)
        if h is not None:
            digest_update(h, events, batch.parts)
        for row in rows:
            current[row[1]] = row[2]
        head = Head(rows[-1][0], rows[-1][8])

    if lead or lead_expected:
        put(lead, lead_expected or {}, None)
    first = head.position + 1
    h = hashlib.sha256() if digest else None
    for events, expected in chunks:
        put(events, expected, h)
    return head, first, h.hexdigest() if h is not None else ""


def digest_chunks(chunks: Iterable[Chunk]) -> str:
    """The digest of a batch arriving in chunks (:func:`encode_batch`), without writing it:
    a retry under an idempotency key compares it with the recorded one."""
    h = hashlib.sha256()
    for events, _ in chunks:
        if events:
            digest_update(h, events, encode_batch(events, digest=False).parts)
    return h.hexdigest()


#: About how many bytes of ``data`` a page of a read holds (see :func:`paged_rows`).
PAGE_BYTES = 1 << 20
#: The most rows in one page: small events come 2,048 at a time.
PAGE_ROWS = 2048


def paged_rows(fetch: Callable[[int], list[Any]]) -> Iterator[Any]:
    """The rows of a cursor, fetched in pages (``fetch(size)``, a ``fetchmany``) that hold
    about :data:`PAGE_BYTES` of ``data`` (column 6 of both row layouts,
    :data:`~cladelog.core.body.RawRow` and :data:`~cladelog.core.body.ReplayRow`) each.

    Pages of a fixed number of rows suit small events but not large ones: 2,048 events of
    90 KB each are 180 MB alive at once, most of it copied out of the database before the
    first row is used. So each page's size is set by the size of the last row of the page
    before (one ``len`` per page, not per row). The pages are flattened in C, so there is
    no Python frame per row.
    """
    def pages() -> Iterator[list[Any]]:
        size = 16  # a first page small enough for rows of any size
        while True:
            page = fetch(size)
            if not page:
                return
            yield page
            try:
                n = len(page[-1][6])
            except TypeError:  # a column of another type (a damaged log): the read that
                n = 0          # checks the row says what is wrong, not the paging
            size = max(1, min(PAGE_ROWS, PAGE_BYTES // (n + 1)))

    return itertools.chain.from_iterable(pages())


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


def _counted(rows: Iterable[RawRow], progress: Callable[[int], None],
             every: int = 4096) -> Iterator[RawRow]:
    """``rows`` passed through, calling ``progress(rows so far)`` every ``every`` rows and
    at the end (a progress display; the verifying walk itself is unchanged)."""
    n = 0
    for row in rows:
        yield row
        n += 1
        if not n % every:
            progress(n)
    progress(n)


def verify_rows(rows: Iterable[RawRow], start: Head | None = None,
                records: Iterable[BatchRecord] = ()) -> VerifyReport:
    """Walk rows in position order; report the first position that does not verify.

    Each idempotency record in ``records`` is checked against the events it covers (see
    :func:`check_records`) in the same walk.
    """
    head = start or Head(0, GENESIS_HASH)
    position, prev = head.position, head.hash
    checked = 0
    usable, problems = _sorted_records(records, head.position)
    next_record = iter(usable)
    pending = next(next_record, None)
    current: BatchRecord | None = None
    h: Any = None
    for row in rows:
        try:
            _, prev = check_row(row, position + 1, prev)
        except ChainError as exc:
            return VerifyReport(False, checked, Head(position, prev), exc.position, exc.reason)
        position += 1
        checked += 1
        if current is None and pending is not None and pending.first == position:
            current, pending, h = pending, next(next_record, None), hashlib.sha256()
        if current is not None:
            h.update(digest_part(row[1], row[3], row[4], bytes(row[6]), bytes(row[7])))
            if position == current.last:
                if h.hexdigest() != current.digest:
                    return VerifyReport(
                        False, checked, Head(position, prev), current.first,
                        f"idempotency record {current.key!r} (positions {current.first}.."
                        f"{current.last}): the events stored there are not the batch "
                        "appended under this key (its digest differs)")
                current = None
    for record in (r for r in usable if r.last > position):
        problems.append((position + 1, f"idempotency record {record.key!r} covers positions "
                                        f"{record.first}..{record.last}, but the log ends "
                                        f"at {position}"))
    if problems:
        at, reason = min(problems)
        return VerifyReport(False, checked, Head(position, prev), at, reason)
    return VerifyReport(True, checked, Head(position, prev))


def _sorted_records(records: Iterable[BatchRecord],
                    after: int) -> tuple[list[BatchRecord], list[tuple[int, str]]]:
    """The records a walk from ``after`` checks, in position order, and the problems that
    show without the events: a range that is not one, two records sharing a position."""
    usable: list[BatchRecord] = []
    problems: list[tuple[int, str]] = []
    for r in records:
        if not (r.first.__class__ is int and r.last.__class__ is int
                and r.key.__class__ is str and r.digest.__class__ is str
                and 1 <= r.first <= r.last):
            at = r.first if r.first.__class__ is int and r.first >= 1 else 1
            problems.append((at, f"idempotency record {r.key!r}: positions {r.first!r}.."
                                 f"{r.last!r} are not a range of the log"))
        elif r.first > after:
            usable.append(r)
    usable.sort(key=lambda r: r.first)
    kept: list[BatchRecord] = []
    for r in usable:
        if kept and r.first <= kept[-1].last:
            problems.append((r.first, f"idempotency records {kept[-1].key!r} and {r.key!r} "
                                      f"both cover position {r.first}"))
            continue
        kept.append(r)
    return kept, problems


class CheckpointMark(NamedTuple):
    """Where a projection checkpoint was taken (its position and the hash of the event
    there) and the hash the log holds at that position now (None: no event there)."""

    name: str
    position: int
    head_hash: str
    log_hash: str | None


def check_checkpoints(head: Head,
                      marks: Iterable[CheckpointMark]) -> tuple[int, str] | None:
    """The first position at which the store's projection checkpoints show that the log
    was longer (or different) when they were taken, and why; None when they agree.

    A checkpoint lives beside the log, outside the chain, and records the position and the
    hash of the event it was taken at. One beyond the head proves events at the log's end
    were removed (a chain walk alone cannot see a cut tail: what is left still links); one
    whose position holds another event proves that history was rewritten.
    """
    beyond: list[CheckpointMark] = []
    for c in marks:
        if c.position.__class__ is not int or c.position < 0:
            return (head.position + 1, f"checkpoint of projection {c.name!r}: its position "
                                       f"{c.position!r} is not a position")
        if c.position > head.position:
            beyond.append(c)
        elif c.position > 0 and c.log_hash != c.head_hash:
            return (c.position, f"checkpoint of projection {c.name!r} was taken at position "
                                f"{c.position} over another event (hash {c.head_hash!r}): "
                                "the log was rewritten since")
    if not beyond:
        return None
    last = max(c.position for c in beyond)
    names = ", ".join(sorted(c.name for c in beyond))
    return (head.position + 1, f"the log ends at {head.position} but checkpoints were taken "
                               f"at {last} ({names}): {last - head.position} event(s) at its "
                               "end are missing")


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
    try:
        body = encode_body(
            position=doc["position"], stream=doc["stream"],
            stream_version=doc["stream_version"], type=doc["type"],
            schema_version=doc["schema_version"], data=doc["data"], meta=doc["meta"],
            recorded_at=doc["recorded_at"], prev_hash=doc["prev_hash"],
        )
    except CanonicalError as exc:  # no canonical form (a number beyond 2**53, a surrogate)
        raise InputError(f"{where}.{str(exc).removeprefix('$.')}") from None
    return RecordedEvent(doc["position"], doc["stream"], doc["stream_version"], doc["type"],
                         doc["schema_version"], orjson.loads(body)["data"], doc["meta"],
                         doc["recorded_at"], doc["prev_hash"], doc["hash"], body)


class EventStore(abc.ABC):
    """An append-only, hash-chained event log.

    Implementations guarantee: batches are atomic; positions are 1, 2, 3, ...
    without gaps; ``(stream, stream_version)`` is unique; rows can be neither
    updated nor deleted (the database refuses it); reads stream lazily.
    """

    url: str
    #: the schema version this store was upgraded from when it was opened with
    #: ``create=True`` (``cladelog init``), else None
    upgraded_from: int | None = None

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

    def append_chunks(
        self,
        chunks: Iterable[Chunk],
        *,
        idempotency_key: str | None = None,
        clock: Callable[[], str] | None = None,
        lead: Sequence[PreparedEvent] = (),
        lead_expected: Mapping[str, int] | None = None,
    ) -> BatchResult:
        """Append one batch that arrives in chunks, atomically, holding one chunk at a time.

        Each chunk is ``(events, expected_versions)``: the expected versions its input
        named, each checked against the stream's version before the whole batch. The
        batch is written in one transaction: an error in any chunk (raised by the
        iterator itself, say, for bad input) leaves nothing appended. A key already
        recorded with the same content returns that batch (``repeated``) and appends
        nothing; with other content it is refused, as :meth:`append` does. ``lead`` is
        written first as a batch of its own (see :func:`write_chunks`) in the same
        transaction.

        This default holds the whole batch in memory and writes ``lead`` in a transaction
        of its own; the SQL backends override it to stream.
        """
        events: list[PreparedEvent] = []
        expected: dict[str, int] = {}
        for part, named in chunks:
            events.extend(part)
            for stream, version in named.items():
                expected.setdefault(stream, version)
        if lead or lead_expected:
            self.append(lead, expected_versions=lead_expected, clock=clock)
        before = self.head().position
        recorded = self.append(events, expected_versions=expected or None,
                               idempotency_key=idempotency_key, clock=clock)
        if not recorded:
            return BatchResult(before + 1, before, self.head())
        return BatchResult(recorded[0].position, recorded[-1].position, self.head(),
                           repeated=recorded[-1].position <= before)

    def read_rows(
        self,
        start: int = 1,
        stop: int | None = None,
        *,
        stream: str | None = None,
        types: Collection[str] | None = None,
    ) -> Iterator[RawRow]:
        """Stored rows in position order, ``start <= position <= stop``, streamed."""
        with self._select(ROW_COLUMNS, start, stop, stream, types) as rows:
            yield from rows

    def _select(
        self,
        columns: str,
        start: int,
        stop: int | None,
        stream: str | None = None,
        types: Collection[str] | None = None,
    ) -> AbstractContextManager[Iterator[Any]]:
        """``columns`` of the rows matching :func:`row_filter`, in position order."""
        query = row_filter(start, stop, stream, types, self._mark)
        if query is None:
            return nullcontext(iter(()))
        where, args = query
        return self._rows(f"SELECT {columns} FROM events WHERE {where} ORDER BY position", args)

    #: the driver's parameter placeholder (an SQL backend sets it)
    _mark = "?"

    def _rows(self, sql: str, args: list[Any]) -> AbstractContextManager[Iterator[Any]]:
        """The one query an SQL backend implements for both reads: the rows of ``sql``,
        streamed from a snapshot that holds no hole. A backend that is not SQL overrides
        :meth:`read_rows` and :meth:`read_verified` instead."""
        raise NotImplementedError(f"{type(self).__name__} must implement _rows or the reads")

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
            yield event_from_row(row)

    def read_verified(
        self,
        start: Head,
        stop: int | None = None,
        *,
        decoders: Mapping[str, tuple[int, Callable[[Any], Any]]] | None = None,
        raw_decoders: Mapping[str, tuple[int, Callable[[bytes], Any]]] | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events after ``start``, each checked against the chain as it is read (and its
        ``data`` decoded as :func:`verified_events` describes)."""
        with self._select(REPLAY_COLUMNS, start.position + 1, stop) as rows:
            yield from verified_events(rows, start, decoders, raw_decoders)

    def read_verified_pages(
        self,
        start: Head,
        stop: int | None = None,
        *,
        decoders: Mapping[str, tuple[int, Callable[[Any], Any]]] | None = None,
        raw_decoders: Mapping[str, tuple[int, Callable[[bytes], Any]]] | None = None,
    ) -> Iterator[list[RecordedEvent]]:
        """:meth:`read_verified` a page of events at a time (see
        :func:`~cladelog.core.body.verified_pages`)."""
        with self._select(REPLAY_COLUMNS, start.position + 1, stop) as rows:
            yield from verified_pages(rows, start, decoders, raw_decoders)

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

    def verify(self, stop: int | None = None, *, roots_at: Collection[int] = (),
               progress: Callable[[int], None] | None = None) -> VerifyReport:
        """Walk the whole chain and report the first position that does not verify.

        A whole-log walk (no ``stop``) also checks every idempotency record against the
        events it covers and the projection checkpoints against the log's end (see
        :func:`check_checkpoints`): a log cut at its tail still links, but the store's
        checkpoints remember that it was longer. It recomputes the Merkle tree from the
        chain hashes as it goes and checks the stored tree's root against it, and reports
        the recomputed roots at the sizes ``roots_at`` (``verify --checkpoint``).
        """
        from . import tree

        if stop is not None:
            return verify_rows(self.read_rows(1, stop))
        walk = tree.TreeWalk(roots_at, self.tree_ranges)
        rows = self.read_rows(1, None)
        if progress is not None:
            rows = _counted(rows, progress)
        report = verify_rows(walk.rows(rows), records=self.batch_records())
        report = attrs.evolve(report, roots=walk.roots)
        if not report.ok:
            return report
        if walk.failure is not None:
            return attrs.evolve(report, ok=False, position=walk.failure[0],
                                reason=walk.failure[1])
        found = check_checkpoints(report.head, self.checkpoint_marks())
        if found is not None:
            return attrs.evolve(report, ok=False, position=found[0], reason=found[1])
        return report

    def batch_records(self) -> list[BatchRecord]:
        """The idempotency records (``append(idempotency_key=...)``) the store holds."""
        return []

    def checkpoint_marks(self) -> list[CheckpointMark]:
        """Where each stored checkpoint was taken, beside what the log holds there (without
        loading the states: a replay asks this every time)."""
        return [CheckpointMark(c.name, c.position, c.head_hash,
                               self.hash_at(c.position) if c.position.__class__ is int
                               else None)
                for c in self.checkpoints()]

    def truncation(self) -> tuple[int, str] | None:
        """Whether the projection checkpoints prove the log was longer (or different) when
        they were taken: :func:`check_checkpoints` for this store's head."""
        return check_checkpoints(self.head(), self.checkpoint_marks())

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

    # -- the Merkle tree over the chain hashes (schema 4; see store/tree.py) ------------
    #: rows the tree reads of this store object have fetched (proofs, roots, peaks)
    tree_rows_read: int = 0

    def tree_ranges(self, ranges: Sequence[tuple[int, int, int]]) -> list[list[bytes]]:
        """The stored tree rows, one read: for each ``(level, lo, hi)`` the hashes of the
        nodes ``(level, lo)`` .. ``(level, hi - 1)`` the store holds, in order. Level 0 is
        the leaf hashes of the events at positions ``lo + 1`` .. ``hi``; the other levels
        are the multiples of ``tree.STRIDE`` (the stored ones). Counted in
        :attr:`tree_rows_read`."""
        raise NotImplementedError(f"{type(self).__name__} keeps no Merkle tree")

    def tree_nodes(self, wanted: Sequence[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The hashes of complete subtrees ``(level, index)`` (level 0: the leaf hash of the
        event at position ``index + 1``), all within the log; each is computed from at
        most 2**(STRIDE-1) = 32 stored rows under it, in one read."""
        from . import tree

        return tree.fetch(wanted, self.tree_ranges)

    def tree_node_range(self, level: int, start: int, stop: int) -> list[bytes]:
        """The hashes of the complete nodes ``(level, start)`` .. ``(level, stop - 1)``
        (fewer at the log's end), in order. One read; tiles use it."""
        from . import tree

        return tree.node_range(level, start, stop, self.tree_ranges)

    def tree_root(self, size: int | None = None) -> bytes:
        """The RFC 9162 root of the first ``size`` events (default: the whole log)."""
        from . import tree

        head = self.head().position
        n = head if size is None else tree.check_size("size", size, head)
        return tree.root(n, self.tree_nodes)

    def inclusion_proof(self, position: int, size: int | None = None) -> list[bytes]:
        """The RFC 9162 audit path of the event at ``position`` (leaf ``position - 1``) in
        the tree of the first ``size`` events (default: the whole log)."""
        from . import tree

        head = self.head().position
        n = head if size is None else tree.check_size("size", size, head, minimum=1)
        tree.check_size("position", position, n, minimum=1)
        return tree.inclusion(position - 1, n, self.tree_nodes)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """The RFC 9162 consistency proof from the tree of the first ``old_size`` events to
        that of the first ``new_size`` (default: the whole log); ``0 < old <= new``."""
        from . import tree

        head = self.head().position
        n = head if new_size is None else tree.check_size("new_size", new_size, head,
                                                          minimum=1)
        tree.check_size("old_size", old_size, n, minimum=1)
        return tree.consistency(old_size, n, self.tree_nodes)

    def size_bytes(self) -> int | None:
        """Bytes the store occupies, when the backend can tell."""
        return None

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
