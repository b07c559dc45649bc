"""The graph-engine plugin's event types: its public, versioned contract.

Every record the engine hands to its sink (see ``docs/semantics.md``) becomes one cladelog
event of the type ``graph_engine.<record type>`` on the session's stream ``graph.<session
id>``; the payload is the record's data unchanged. Reading the stream back in order and
turning each event into ``(record type, data)`` gives exactly what :meth:`Engine.replay`
takes.

``graph_engine.records_packed`` is the one type that is not an engine record: it carries a
run of records in one event (as JSON text), for deployments that set ``pack_records``
(fewer, larger events, much cheaper to write; see the plugin settings).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
from cladelog.core import EventType

__all__ = [
    "EVENT_TYPES",
    "PREFIX",
    "RECORD_TYPES",
    "STREAM_PREFIX",
    "Cast",
    "Checkpoint",
    "ConceptAdded",
    "ConceptDeleted",
    "ConceptPatched",
    "MutationApplied",
    "ProviderErrorRecorded",
    "RecordsPacked",
    "RolledBack",
    "RunFailed",
    "Seeded",
    "Settled",
    "TreeLoaded",
    "Uncast",
    "encode_record",
    "event_type_of",
    "pack_encoded",
    "pack_records",
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
    """``graph_engine.records_packed``: a run of engine records in one event.

    ``records`` is the JSON text of ``[[record type, data], ...]`` in order (text, so that
    writing a large pack costs one encoding, not a walk of every value); ``count`` is its
    length, ``errors`` its ``provider_error`` count and ``settled`` the data of its last
    ``settled`` record (None when it has none), so summaries need not parse the text.
    """

    count: int
    errors: int
    settled: dict[str, Any] | None
    records: str


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

#: Every event type this plugin registers.
EVENT_TYPES: Final = tuple(
    [EventType(PREFIX + name, cls, description=text) for name, (cls, text) in _PAYLOADS.items()]
    + [EventType(PREFIX + "records_packed", RecordsPacked,
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


#: Encodes packed runs like ``json.dumps(..., allow_nan=False, separators=(",", ":"))``.
#: The circular-reference check is off: records are fresh JSON trees built by the engine (no
#: value contains itself), and skipping the check saves ~15% of the encoding.
_PACK_ENCODER: Final = json.JSONEncoder(allow_nan=False, separators=(",", ":"),
                                        check_circular=False)


def _value_encoder() -> Callable[[Any], str]:
    """``_PACK_ENCODER.encode`` without its per-call setup, where the C encoder is available.

    :func:`encode_record` runs once per record of a live session; ``JSONEncoder.encode``
    builds a fresh C encoder on every call, which costs about as much as encoding a small
    record. The encoder built here once is the very one ``encode`` would build (same
    arguments), so the text is identical; a probe checks that and falls back otherwise.
    """
    base = _PACK_ENCODER
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return base.encode
    try:
        enc = make(None, base.default, json.encoder.encode_basestring_ascii, None,
                   base.key_separator, base.item_separator, base.sort_keys, base.skipkeys,
                   base.allow_nan)
    except TypeError:  # pragma: no cover - a C encoder of another signature
        return base.encode

    def encode(value: Any) -> str:
        return "".join(enc(value, 0))

    probe = ("k\u00e9\n", {"a": [1, 2.5, None, True, {"b": '"x"'}], "c": -0.0})
    try:
        same = encode(probe) == base.encode(probe)
    except (TypeError, ValueError):  # pragma: no cover
        same = False
    return encode if same else base.encode


_encode_value: Final = _value_encoder()


def encode_record(kind: str, data: Any) -> str:
    """The JSON text of one ``[record type, data]`` pair, exactly as it appears in the
    ``records`` text of :func:`pack_records` (so a run can be encoded record by record and
    packed with :func:`pack_encoded`). Raises ``ValueError`` on NaN or infinities and
    ``TypeError`` on a value JSON cannot hold, like :func:`json.dumps`.
    """
    return _encode_value((kind, data))


def pack_encoded(texts: Sequence[str], errors: int, settled: dict[str, Any] | None
                 ) -> dict[str, Any]:
    """The ``graph_engine.records_packed`` data of a run of records already encoded by
    :func:`encode_record`: ``errors`` is its ``provider_error`` count, ``settled`` the data
    of its last ``settled`` record. Equal to :func:`pack_records` of the same records."""
    return {"count": len(texts), "errors": errors, "settled": settled,
            "records": "[" + ",".join(texts) + "]"}


def pack_records(records: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The ``graph_engine.records_packed`` data of a run of records.

    Raises ``ValueError`` on a value JSON cannot hold (NaN, infinities).
    """
    settled = None
    errors = 0
    for kind, data in records:
        if kind == "settled":
            settled = data
        elif kind == "provider_error":
            errors += 1
    # the pairs are encoded as they are: a tuple encodes as a JSON array, like a list
    text = _encode_value(records if type(records) is list else list(records))
    return {"count": len(records), "errors": errors, "settled": settled, "records": text}


def unpack_records(data: Any) -> list[tuple[str, Any]]:
    """The records of a ``graph_engine.records_packed`` data object, in order.

    Raises ``ValueError`` when the text is not a JSON list of ``[type, data]`` pairs.
    """
    items = json.loads(data["records"])
    if type(items) is not list or len(items) != data.get("count"):
        raise ValueError("records: not a list of the announced count")
    out: list[tuple[str, Any]] = []
    for item in items:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
            raise ValueError("records: each item must be [type, data]")
        out.append((item[0], item[1]))
    return out
