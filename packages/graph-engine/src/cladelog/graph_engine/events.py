"""The graph-engine plugin's event types: its public, versioned contract.

Every record the engine hands to its sink (see ``docs/semantics.md``) becomes one cladelog
event of the type ``graph_engine.<record type>`` on the session's stream ``graph.<session
id>``; the payload is the record's data unchanged. Reading the stream back in order and
turning each event into ``(record type, data)`` gives exactly what :meth:`Engine.replay`
takes.

``graph_engine.records_packed`` is the one type that is not an engine record: it carries a
run of records in one event, for deployments that set ``pack_records`` (fewer, larger
events, much cheaper to write; see the plugin settings). This module owns its format: the
writer (:class:`RecordPacker`), the reader (:func:`packed_columns`, :func:`unpack_records`)
and the upcasters from every older version. Its schema version 5 lays the run out in
columns (:class:`RecordPacker`), stored as JSON values in the event's data, with a table of
the pack's mutation *shapes* (keys written and casts caused) so that a replay parses no key
per write (the audit, which a replay never reads, stays one JSON text), and says what
the run does to the session's summary (its ``provider_error`` and ``settled`` counts, the
status it leaves: :func:`record_status`). Version 4 events (one key column entry per write,
one cast column entry per cast) are upcast by regrouping their columns; version 3 events
(version 4's columns as the JSON text of their value inside a JSON string) by parsing that
text; version 2 events (version 3 without ``settles`` and ``status``) by reading their whole
records, and version 1 events (the run as the JSON text of ``[[type, data], ...]``)
through version 2; all decode to the same records.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final, Protocol

import attrs
import orjson
from cladelog.core import EventType

__all__ = [
    "EVENT_TYPES",
    "PACKED_SCHEMA_VERSION",
    "PREFIX",
    "RECORD_TYPES",
    "STREAM_PREFIX",
    "Cast",
    "Checkpoint",
    "ConceptAdded",
    "ConceptDeleted",
    "ConceptPatched",
    "MutationApplied",
    "Packer",
    "ProviderErrorRecorded",
    "RecordPacker",
    "RecordsPacked",
    "RolledBack",
    "RunFailed",
    "Seeded",
    "Settled",
    "TreeLoaded",
    "Uncast",
    "event_type_of",
    "new_packer",
    "pack_records",
    "packed_columns",
    "record_status",
    "record_type_of",
    "session_stream",
    "unpack_records",
]

#: The namespace of every event type of this plugin.
PREFIX: Final = "graph_engine."
#: A session's stream is ``graph.<session id>``.
STREAM_PREFIX: Final = "graph."


@attrs.frozen
class TreeLoaded:
    """``graph_engine.tree_loaded``: a session (or a reload) starts with this tree and config."""

    tree: dict[str, Any]
    config: dict[str, Any]


@attrs.frozen
class Seeded:
    """``graph_engine.seeded``: the normalized seed objects, mounted in this order."""

    freeNodes: list[dict[str, Any]]  # the engine record key
    nodes: list[dict[str, Any]]
    segments: list[dict[str, Any]]


@attrs.frozen
class MutationApplied:
    """``graph_engine.mutation_applied``: one resolved mutation with its final ids and cause.

    ``items`` are ``{"id", "create", "set": [[key, value], ...]}``; ``cause.kind`` is
    ``host``, ``provider``, ``onCast``, ``cleaner``, ``default``, ``applyMutations``, ``cap``
    or ``error``.
    """

    rev: int
    target: str | None
    items: list[dict[str, Any]]
    cause: dict[str, Any]


@attrs.frozen
class Cast:
    """``graph_engine.cast``: a concept became cast on an object (``at`` = [rev, write])."""

    object: str
    concept: str
    at: list[int] | None


@attrs.frozen
class Uncast:
    """``graph_engine.uncast``: a concept was retracted (``permanent``: not re-opened)."""

    object: str
    concept: str
    permanent: bool
    at: list[int] | None


@attrs.frozen
class ProviderErrorRecorded:
    """``graph_engine.provider_error``: a provider raised or returned a bad template.

    The error fact itself (the object's ``divergent`` entry) follows as a mutation.
    """

    object: str
    concept: str
    provider: str
    role: str
    apply: str
    message: str


@attrs.frozen
class ConceptAdded:
    """``graph_engine.concept_added``: ``schema`` attached under ``parent`` (None: root)."""

    parent: str | None
    schema: dict[str, Any]


@attrs.frozen
class ConceptPatched:
    """``graph_engine.concept_patched``: ``updates`` deep-merged (arrays replaced)."""

    concept: str
    updates: dict[str, Any]


@attrs.frozen
class ConceptDeleted:
    """``graph_engine.concept_deleted``: the concept and its subtree were removed."""

    concept: str


@attrs.frozen
class Settled:
    """``graph_engine.settled``: the end of a settle, with the digests replay verifies."""

    revision: int
    passes: int
    applies: int
    created: int
    capped: str | None
    digest: str
    castDigest: str  # the engine record key


@attrs.frozen
class RolledBack:
    """``graph_engine.rolled_back``: the tree and facts of the settle snapshot ``to`` were
    restored; ``previous`` was the revision before (revision numbers keep counting up)."""

    to: int
    previous: int


@attrs.frozen
class Checkpoint:
    """``graph_engine.checkpoint``: the whole state after a settle, so a replay may start
    here. ``objects`` is the JSON text of ``[[id, kind, facts, cast state, incoming,
    outgoing], ...]``; ``digest`` is the facts digest at ``revision``."""

    revision: int
    digest: str
    tree: dict[str, Any]
    config: dict[str, Any]
    objects: str


@attrs.frozen
class RunFailed:
    """``graph_engine.run_failed``: the run recorded on this stream stopped at a refused
    step (``step`` is its index in the scenario's ``steps``, ``op`` its op, ``message`` the
    one-line error). What the run did before is recorded ahead of it; nothing follows.
    Never packed."""

    step: int
    op: str
    message: str


@attrs.frozen
class RecordsPacked:
    """``graph_engine.records_packed`` (schema version 5): a run of engine records in one
    event, in columns.

    So that summaries need not parse the rest, it says what the records do to a session's
    summary (the ``graph_engine.sessions`` projection), exactly as they would one by one:
    ``count`` is the number of records, ``errors`` their ``provider_error`` count,
    ``settles`` their ``settled`` count, ``settled`` the data of the last ``settled`` record
    (None when there is none) and ``status`` the status the last record that sets one
    leaves (:func:`record_status`: ``running`` after a ``tree_loaded``, ``settled`` or
    ``capped`` after a ``settled``, ``failed`` after a ``run_failed``; None when no record
    of the run sets one, the status then stays what it was). ``columns`` holds what a
    replay reads, as JSON values; ``audit`` is the JSON text of what it does not (each
    columnar mutation's ``target`` and ``cause``: ``{"target": [...], "cause": [...]}``).
    The audit stays one text so that a replay passes over it as one string (most of a
    pack's bytes; parsed, its causes would be about 130,000 objects for the 10,000-entity
    benchmark session, built only to be dropped). :class:`RecordPacker` documents the
    layout.
    """

    count: int
    errors: int
    settles: int
    settled: dict[str, Any] | None
    status: str | None
    columns: dict[str, Any]
    audit: str


_PAYLOADS: Final[dict[str, tuple[type, str]]] = {
    "tree_loaded": (TreeLoaded, "a session (or reload) starts with this concept tree"),
    "seeded": (Seeded, "the seed objects were mounted"),
    "mutation_applied": (MutationApplied, "a resolved mutation was applied"),
    "cast": (Cast, "a concept was cast on an object"),
    "uncast": (Uncast, "a concept was retracted on an object"),
    "provider_error": (ProviderErrorRecorded, "a provider failed (recorded, not raised)"),
    "concept_added": (ConceptAdded, "a concept was added to the live tree"),
    "concept_patched": (ConceptPatched, "a concept was patched"),
    "concept_deleted": (ConceptDeleted, "a concept was deleted"),
    "settled": (Settled, "a settle ended; digests of facts and cast state"),
    "rolled_back": (RolledBack, "the engine went back to a settle snapshot"),
    "checkpoint": (Checkpoint, "the whole state after a settle (a replay may start here)"),
    "run_failed": (RunFailed, "the run stopped at a refused scenario step"),
}

#: The engine record types, in the order of the table in ``docs/semantics.md``.
RECORD_TYPES: Final = tuple(_PAYLOADS)

#: The schema version of ``graph_engine.records_packed`` that this version writes.
PACKED_SCHEMA_VERSION: Final = 5

#: The records that set a session's status (see :func:`record_status`).
_STATUS_KINDS: Final = frozenset({"tree_loaded", "settled", "run_failed"})


def record_status(kind: str, data: Any) -> str | None:
    """The status of a session after a record of type ``kind`` with ``data`` (see the
    ``graph_engine.sessions`` projection): ``running`` after a ``tree_loaded`` (a session
    or a reload starts), ``capped`` or ``settled`` after a ``settled`` (capped: a per-settle
    cap stopped it; only a data object counts as a settle), ``failed`` after a
    ``run_failed``; None for every other record, which leaves the status as it was."""
    if kind == "settled":
        if isinstance(data, dict):
            return "capped" if data.get("capped") else "settled"
        return None
    if kind == "tree_loaded":
        return "running"
    if kind == "run_failed":
        return "failed"
    return None


def _status_summary(records: Iterable[Sequence[Any]]) -> tuple[int, str | None]:
    """``(settles, status)`` of a run of records, in order: how many settle (a ``settled``
    record :func:`record_status` counts) and the status the last one that sets one leaves
    (None: none does)."""
    settles, status = 0, None
    for kind, data in records:
        if kind in _STATUS_KINDS:
            now = record_status(kind, data)
            if now is not None:
                status = now
                settles += kind == "settled"
    return settles, status


def _packed_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Upcast a version 1 ``records_packed`` data object (``records``: the JSON text of
    ``[[type, data], ...]``) to version 2 without parsing it: every record goes to the
    ``other`` column as it is, so both versions decode to the same records."""
    count = data.get("count")
    records = data.get("records")
    if type(records) is not str:
        records = "null"  # not version 1 data: decoding it says so
    # each record takes more than one character of the text: a larger count is wrong, and
    # an empty order then makes the decoding say so too
    order = "o" * count if type(count) is int and 0 < count <= len(records) else ""
    return {
        "count": count, "errors": data.get("errors"), "settled": data.get("settled"),
        "columns": (f'{{"order":"{order}","rev":[],"id":[],"n":[],"k":[],"v":[],"cast":[],'
                    f'"write":[],"other":{records}}}'),
        "audit": '{"target":[],"cause":[]}',
    }


def _packed_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Upcast a version 2 ``records_packed`` data object to version 3: its ``settles`` and
    ``status`` are computed from its own records. The records that count (``settled``,
    ``tree_loaded``, ``run_failed``) are never laid out in columns, they are whole in
    ``other`` (see :class:`RecordPacker`), so only the columns are parsed, not the audit.

    Columns that do not decode (the replay of the event says why) leave what the event
    itself tells: one settle and its status when it has a last ``settled``, else none."""
    try:
        settles, status = _status_summary(_v4_columns(data)["other"])
    except (KeyError, TypeError, ValueError):
        settled = data.get("settled")
        status = record_status("settled", settled)
        settles = 0 if status is None else 1
    return {**data, "settles": settles, "status": status}


def _packed_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Upcast a version 3 ``records_packed`` data object to version 4: its ``columns`` text
    becomes the JSON value it holds (the audit stays a text). A text that does not parse
    stays as it is (decoding the event then says what is wrong)."""
    text = data.get("columns")
    if type(text) is not str:
        return data
    try:
        return {**data, "columns": _decode_pack(text)}
    except ValueError:
        return data


def _packed_v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Upcast a version 4 ``records_packed`` data object to version 5: its columns
    regrouped as :func:`_v5_from_v4` says (the summary and the audit stay as they are).
    Columns that are not consistent version 4 ones stay as they are (decoding the event
    then says what is wrong)."""
    try:
        cols = _v4_columns(data)
    except (KeyError, TypeError, ValueError):
        return data
    try:
        return {**data, "columns": _v5_from_v4(cols)}
    except (KeyError, TypeError, ValueError, IndexError):
        return data


def _v5_from_v4(cols: dict[str, Any]) -> dict[str, Any]:
    """Version 5 columns from consistent version 4 ones (see :func:`_v4_columns`): each
    columnar mutation (``m``) with the letters after it up to its last cast (``c``) becomes
    one ``m`` of shape ``[keys, follow]``, the ``o`` records among its casts ``null``
    entries of ``follow``; every other ``o`` stays a letter. So a run decodes to the same
    records in both versions, and regrouped it is what :class:`RecordPacker` writes of
    them."""
    order, ns, keys = cols["order"], cols["n"], cols["k"]
    casts, writes = cols["cast"], cols["write"]
    shapes: dict[Any, int] = {}
    out: list[str] = []
    s: list[int] = []
    m = c = kv = i = 0
    end = len(order)
    while i < end:
        if order[i] != "m":  # an "o": a cast before any "m" was refused by _v4_columns
            out.append("o")
            i += 1
            continue
        last = order.rfind("c", i, _next_m(order, i + 1))
        follow: list[Any] = []
        for letter in order[i + 1:last + 1]:
            if letter == "c":
                follow.append((casts[c], writes[c]))
                c += 1
            else:
                follow.append(None)
        n = ns[m]
        s.append(_shape_number(shapes, tuple(keys[kv:kv + n]), tuple(follow)))
        out.append("m")
        m += 1
        kv += n
        i = max(i, last) + 1
    return {"order": "".join(out), "shape": _shape_table(shapes), "s": s, "rev": cols["rev"],
            "id": cols["id"], "v": cols["v"], "other": cols["other"]}


def _next_m(order: str, start: int) -> int:
    """The index of the next ``m`` of ``order`` from ``start`` (its length when none)."""
    found = order.find("m", start)
    return len(order) if found < 0 else found


def _shape_number(shapes: dict[Any, int], keys: tuple[Any, ...], follow: tuple[Any, ...]
                  ) -> int:
    """The number of the shape ``(keys, follow)`` in a pack's table (added when new)."""
    shape = (keys, follow)
    number = shapes.get(shape)
    if number is None:
        number = shapes[shape] = len(shapes)
    return number


def _shape_table(shapes: dict[Any, int]) -> list[list[Any]]:
    """The ``shape`` column of a pack: ``[keys, follow]`` per shape, in number order."""
    return [[list(keys), [None if f is None else list(f) for f in follow]]
            for keys, follow in shapes]


#: Every event type this plugin registers.
EVENT_TYPES: Final = tuple(
    [EventType(PREFIX + name, cls, description=text) for name, (cls, text) in _PAYLOADS.items()]
    + [EventType(PREFIX + "records_packed", RecordsPacked,
                 schema_version=PACKED_SCHEMA_VERSION,
                 upcasters={1: _packed_v1_to_v2, 2: _packed_v2_to_v3, 3: _packed_v3_to_v4,
                            4: _packed_v4_to_v5},
                 description="several engine records in one event")]
)


def event_type_of(record_type: str) -> str:
    """``mutation_applied`` -> ``graph_engine.mutation_applied``."""
    return PREFIX + record_type


def record_type_of(event_type: str) -> str | None:
    """``graph_engine.cast`` -> ``cast``; None for a type that is not an engine record."""
    if not event_type.startswith(PREFIX):
        return None
    name = event_type[len(PREFIX):]
    return name if name in _PAYLOADS else None


def session_stream(session_id: str) -> str:
    """The stream of a session: ``graph.<session id>``."""
    return STREAM_PREFIX + session_id


_EFFECTS: Final = frozenset({"cast", "uncast"})

#: Writes the audit text where orjson cannot (an integer beyond 64 bits, a lone surrogate),
#: as ``json.dumps(..., allow_nan=False, separators=(",", ":"))`` does.
_AUDIT_ENCODER: Final = json.JSONEncoder(allow_nan=False, separators=(",", ":"),
                                         check_circular=False)


def _encode_audit(value: Any) -> str:
    """The compact JSON text of a pack's audit (``target`` and ``cause`` columns), written
    by orjson, or by the json module where orjson refuses the value. Targets and causes are
    made by the engine of ids, names and counts (no non-finite number, which orjson would
    write as null)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return _AUDIT_ENCODER.encode(value)


def _decode_pack(text: str | bytes) -> Any:
    """The value of a JSON text of a packed event (the stored bytes of one, or the columns
    or audit text of a version 1 to 3 one): orjson reads it, and the json module what
    orjson refuses (a lone surrogate's escape, say), so that every text an older version
    wrote reads as before. ``ValueError`` if neither can."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class RecordPacker:
    """Builds the data of one ``graph_engine.records_packed`` event, record by record.

    Most records of a session are mutations of one existing object followed by the casts
    their writes caused. Such a *columnar* mutation is one letter ``m`` of ``order`` and one
    entry of each per-mutation column (``rev``, ``id``: the object, ``s``: the number of its
    shape) and of ``v`` per write (the value). Its *shape* is an entry of the pack's table
    ``shape``, ``[keys, follow]``: the keys it writes, in order, and what follows it, a cast
    as ``[concept, write]`` (its object and revision are the mutation's) or ``null`` for a
    ``provider_error`` recorded among its casts, kept whole in ``other``. A session's
    mutations have few shapes (the benchmark session: one per concept), so a pack stores
    each key once, not once per write, and a replay parses no key string per write. Every
    other record goes whole to ``other`` as ``[type, data]``, one letter ``o`` each. So the
    records decode back exactly, in order (:func:`unpack_records`).

    A mutation is columnar when it has one item that creates nothing, each of its set pairs
    has two members and a string key, and every effect recorded after it (until the next
    record that is neither an effect nor a ``provider_error``) is a cast of that object at
    one of its writes, all within this pack. A replay may then apply the casts after the
    writes (see ``replay.py``); any other mutation, with its effects, goes to ``other``. A
    mutation whose effects might continue in the next pack is not columnar either, so a
    pack can be sealed at any record. The provider errors after a columnar mutation's last
    cast are letters ``o`` of their own, not part of its shape.

    The summary (``count``, ``errors``, ``settles``, ``settled``, ``status``: see
    :class:`RecordsPacked`) is counted as the records come. The records it reads besides
    ``provider_error`` (``settled``, ``tree_loaded``, ``run_failed``) are never columnar:
    they always go whole to ``other``, from which the version 2 upcaster computes it.
    """

    __slots__ = ("_cause", "_clean", "_count", "_errors", "_follow", "_id", "_mutation",
                 "_order", "_other", "_rev", "_s", "_settled", "_settles", "_shapes",
                 "_status", "_target", "_v")

    def __init__(self) -> None:
        self._count = 0
        self._errors = 0
        self._settles = 0
        self._settled: dict[str, Any] | None = None
        self._status: str | None = None
        # the columns (``order`` as a list of letters until sealed), then the audit ones
        self._order: list[str] = []
        self._shapes: dict[Any, int] = {}  # (keys, follow) -> its number in the table
        self._s: list[int] = []
        self._rev: list[Any] = []
        self._id: list[Any] = []
        self._v: list[Any] = []
        self._other: list[list[Any]] = []  # [type, data] pairs, as JSON keeps them
        self._target: list[Any] = []
        self._cause: list[Any] = []
        # a columnar candidate, the effects and provider errors recorded after it, and
        # whether all those effects are casts it may keep in columns (see _cast_of)
        self._mutation: dict[str, Any] | None = None
        self._follow: list[tuple[str, Any]] = []
        self._clean = True

    def __len__(self) -> int:
        return self._count

    def add(self, kind: str, data: Any) -> None:
        """Add the next record."""
        self._count += 1
        mutation = self._mutation
        if mutation is not None:
            if kind == "cast" or kind == "uncast":
                if type(data) is dict and data.get("at") is not None:
                    if self._clean and (kind == "uncast" or not _cast_of(data, mutation)):
                        self._clean = False
                    self._follow.append((kind, data))
                    return
            elif kind == "provider_error":
                self._errors += 1
                self._follow.append((kind, data))
                return
            self._close()
        if kind == "mutation_applied":
            if _columnar(data):
                self._mutation = data
                return
        elif kind == "provider_error":
            self._errors += 1
        elif kind in _STATUS_KINDS:  # never held in columns: _status_summary reads them
            if kind == "settled":
                self._settled = data
            status = record_status(kind, data)
            if status is not None:
                self._status = status
                self._settles += kind == "settled"
        self._order.append("o")
        self._other.append([kind, data])

    def seal(self) -> dict[str, Any]:
        """The event data of the records added: the columns as plain JSON values, which
        core's append checks and encodes like any event's data (NaN and infinities refused
        there), and the audit as one JSON text."""
        if self._mutation is not None:  # its effects might go on in the next pack
            self._clean = False
            self._close()
        columns = {"order": "".join(self._order), "shape": _shape_table(self._shapes),
                   "s": self._s, "rev": self._rev, "id": self._id, "v": self._v,
                   "other": self._other}
        audit = _encode_audit({"target": self._target, "cause": self._cause})
        return {"count": self._count, "errors": self._errors, "settles": self._settles,
                "settled": self._settled, "status": self._status, "columns": columns,
                "audit": audit}

    def _close(self) -> None:
        """Lay out the held mutation and what followed it: in columns when every effect is
        a cast of its object at one of its writes, else as whole records."""
        mutation, follow = self._mutation, self._follow
        assert mutation is not None
        self._mutation = None
        if follow:
            self._follow = []
        order, other = self._order, self._other
        if not self._clean:
            self._clean = True
            order.append("o")
            other.append(["mutation_applied", mutation])
            for kind, data in follow:
                order.append("o")
                other.append([kind, data])
            return
        item = mutation["items"][0]
        written: list[Any] = []
        values = self._v
        for key, value in item["set"]:
            written.append(key)
            values.append(value)
        keys = tuple(written)
        # the records after the last cast are not part of the shape
        end = len(follow)
        while end and follow[end - 1][0] != "cast":
            end -= 1
        shape: tuple[Any, ...] = ()
        if end == 1:  # most often: one cast
            data = follow[0][1]
            shape = ((data["concept"], data["at"][1]),)
        elif end:
            after: list[Any] = []
            for kind, data in follow[:end]:
                if kind == "cast":
                    after.append((data["concept"], data["at"][1]))
                else:  # a provider error among the casts: whole, in order
                    after.append(None)
                    other.append([kind, data])
            shape = tuple(after)
        shapes, key = self._shapes, (keys, shape)
        number = shapes.get(key)
        if number is None:
            number = shapes[key] = len(shapes)
        order.append("m")
        self._s.append(number)
        self._rev.append(mutation["rev"])
        self._id.append(item["id"])
        self._target.append(mutation["target"])
        self._cause.append(mutation["cause"])
        if end < len(follow):
            for kind, data in follow[end:]:
                order.append("o")
                other.append([kind, data])


def _columnar(data: Any) -> bool:
    """Whether a ``mutation_applied`` data object has the columnar shape (see
    :class:`RecordPacker`): exactly ``rev`` (an int), ``target``, ``items`` (one item of
    exactly ``id``, ``create`` None and ``set`` pairs with string keys) and ``cause``."""
    if type(data) is not dict or len(data) != 4 or type(data.get("rev")) is not int:
        return False
    if "target" not in data or "cause" not in data:
        return False
    items = data.get("items")
    if type(items) is not list or len(items) != 1:
        return False
    item = items[0]
    if type(item) is not dict or len(item) != 3 or "id" not in item:
        return False
    if "create" not in item or item["create"] is not None:
        return False
    pairs = item.get("set")
    if type(pairs) is not list:
        return False
    for p in pairs:
        tp = type(p)
        if (tp is not list and tp is not tuple) or len(p) != 2 or type(p[0]) is not str:
            return False
    return True


def _cast_of(data: dict[str, Any], mutation: dict[str, Any]) -> bool:
    """Whether a ``cast`` data object is exactly ``{object, concept, at: [rev, w]}`` of a
    columnar ``mutation``: its object, its revision and one of its writes ``w`` (the
    concept a string)."""
    at: Any = data["at"]
    tp = type(at)
    if len(data) != 3 or type(data.get("concept")) is not str \
            or (tp is not list and tp is not tuple) or len(at) != 2:
        return False
    rev, write = at
    if type(rev) is not int or type(write) is not int or rev != mutation["rev"]:
        return False
    item = mutation["items"][0]
    return data.get("object") == item["id"] and 1 <= write <= len(item["set"])


def pack_records(records: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The ``graph_engine.records_packed`` data of a run of records (see
    :class:`RecordPacker`)."""
    packer = new_packer()
    for kind, data in records:
        packer.add(kind, data)
    return packer.seal()


class Packer(Protocol):
    """What :func:`new_packer` gives (:class:`RecordPacker`)."""

    def __len__(self) -> int: ...

    def add(self, kind: str, data: Any) -> None: ...

    def seal(self) -> dict[str, Any]: ...


def new_packer() -> Packer:
    """A new :class:`RecordPacker`."""
    return RecordPacker()


_V4_COLUMNS: Final = ("order", "rev", "id", "n", "k", "v", "cast", "write", "other")
_COLUMNS: Final = ("shape", "s", "rev", "id", "v", "other")


def _v4_columns(data: Any) -> dict[str, Any]:
    """The ``columns`` of a version 2 to 4 ``records_packed`` data object (the text of them
    for versions 2 and 3), checked to be consistent: ``order`` has one letter per record,
    ``m`` (a columnar mutation: ``rev``, ``id``, ``n`` writes of ``k`` and ``v``), ``c`` (a
    cast of the columnar mutation before it: ``cast``, ``write``) or ``o`` (``other``).
    What the upcasters to versions 3 and 5 read. Raises ``ValueError`` when they are not
    consistent."""
    cols = data["columns"]
    if type(cols) is str:  # versions 2 and 3
        cols = _decode_pack(cols)
    if type(cols) is not dict or any(type(cols.get(k)) is not list for k in _V4_COLUMNS[1:]):
        raise ValueError("columns: not an object of the packed columns")
    order = cols["order"]
    if type(order) is not str or len(order) != data.get("count"):
        raise ValueError("columns: not a list of the announced count")
    m, c = order.count("m"), order.count("c")
    ns = cols["n"]
    if (m + c + order.count("o") != len(order)
            or not len(cols["rev"]) == len(cols["id"]) == len(ns) == m
            or not len(cols["cast"]) == len(cols["write"]) == c
            or len(cols["other"]) != len(order) - m - c
            or (ns and (not set(map(type, ns)) <= {int} or min(ns) < 0))
            or (c and not set(map(type, cols["write"])) <= {int})
            or not sum(ns) == len(cols["k"]) == len(cols["v"])):
        raise ValueError("columns: their lengths do not agree with the order")
    if c and (not m or order.index("c") < order.index("m")):
        raise ValueError("columns: a cast before any columnar mutation")
    _check_other(cols["other"])
    return cols


def _check_other(other: list[Any]) -> None:
    for item in other:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
            raise ValueError("records: each item must be [type, data]")


def packed_columns(data: Any) -> dict[str, Any]:
    """The ``columns`` of a ``graph_engine.records_packed`` data object (schema version 5:
    the upcasters bring older ones to it), checked to be consistent: a replay may then read
    them without decoding each record (see ``replay.py``), and they decode to ``count``
    records.

    Checked: ``order`` has one letter per columnar mutation (``m``) and per record of
    ``other`` outside a shape (``o``); each shape is ``[keys, follow]``, its keys strings,
    each entry of ``follow`` ``null`` or ``[concept, write]`` (a string and a write of the
    shape, ``1 <= write <= len(keys)``); each ``s`` is a shape's number; ``rev`` and ``id``
    have one entry per ``m``, ``v`` one per key of their shapes, ``other`` one per ``o``
    and per ``null`` of their shapes; and the records they decode to number ``count``.
    Raises ``ValueError`` when they are not.
    """
    cols = data["columns"]
    if type(cols) is not dict or type(cols.get("order")) is not str \
            or any(type(cols.get(k)) is not list for k in _COLUMNS):
        raise ValueError("columns: not an object of the packed columns")
    width, slots, follows = [], [], []  # per shape: keys, nulls, records after the mutation
    for shape in cols["shape"]:
        if type(shape) is not list or len(shape) != 2 or type(shape[0]) is not list \
                or type(shape[1]) is not list:
            raise ValueError("columns: a shape must be [keys, follow]")
        keys, follow = shape
        n = len(keys)
        if not set(map(type, keys)) <= {str}:
            raise ValueError("columns: a shape's keys must be strings")
        for f in follow:
            if f is not None and (type(f) is not list or len(f) != 2 or type(f[0]) is not str
                                  or type(f[1]) is not int or not 0 < f[1] <= n):
                raise ValueError("columns: a shape's cast must be [concept, one of its writes]")
        width.append(n)
        slots.append(follow.count(None))
        follows.append(len(follow))
    order, s = cols["order"], cols["s"]
    m = order.count("m")
    # shape number -> its mutations (one count in C for a pack of one shape, the usual one)
    uses: dict[Any, int] = {0: len(s)} if len(width) == 1 and s.count(0) == len(s) \
        else Counter(s)
    if s and (not set(map(type, s)) <= {int} or min(uses) < 0 or max(uses) >= len(width)):
        raise ValueError("columns: each s must be the number of a shape")
    if (m + order.count("o") != len(order)
            or not len(s) == len(cols["rev"]) == len(cols["id"]) == m
            or len(cols["v"]) != sum([width[i] * k for i, k in uses.items()])
            or len(cols["other"]) != len(order) - m + sum([slots[i] * k
                                                            for i, k in uses.items()])):
        raise ValueError("columns: their lengths do not agree with the order")
    if len(order) + sum([follows[i] * k for i, k in uses.items()]) != data.get("count"):
        raise ValueError("columns: not a list of the announced count")
    _check_other(cols["other"])
    return cols


def unpack_records(data: Any) -> list[tuple[str, Any]]:
    """The records of a ``graph_engine.records_packed`` data object (schema version 5), in
    order.

    Raises ``ValueError`` when its columns are not consistent (see :func:`packed_columns`).
    """
    cols = packed_columns(data)
    audit = _decode_pack(data["audit"])
    if type(audit) is not dict or type(audit.get("target")) is not list \
            or type(audit.get("cause")) is not list:
        raise ValueError("audit: not an object of the target and cause columns")
    targets, causes = audit["target"], audit["cause"]
    if len(targets) != len(cols["rev"]) or len(causes) != len(targets):
        raise ValueError("audit: not one target and cause per columnar mutation")
    shapes, s, revs, ids, values = cols["shape"], cols["s"], cols["rev"], cols["id"], cols["v"]
    other = iter(cols["other"])
    out: list[tuple[str, Any]] = []
    m = kv = 0
    for letter in cols["order"]:
        if letter == "m":
            keys, follow = shapes[s[m]]
            rev, oid = revs[m], ids[m]
            pairs = [[key, values[i]] for i, key in enumerate(keys, kv)]
            out.append(("mutation_applied", {"rev": rev, "target": targets[m],
                                             "items": [{"id": oid, "create": None,
                                                        "set": pairs}],
                                             "cause": causes[m]}))
            for f in follow:
                if f is None:
                    kind, record = next(other)
                    out.append((kind, record))
                else:
                    out.append(("cast", {"object": oid, "concept": f[0], "at": [rev, f[1]]}))
            m += 1
            kv += len(keys)
        else:
            kind, record = next(other)
            out.append((kind, record))
    return out
