"""The method library on cladelog's event log: master-loop records in, library state out.

:class:`LibraryLog` is a record sink for :class:`~.master_loop.MasterLoop` (and its
:class:`~.mount.MountController`, and a :class:`~.cache.RecordingCache` if one is used)
that appends each record as a cladelog event on the stream ``graph_library.<library id>``
of a :class:`~cladelog.core.Deployment`. The records of one solve (or one drift) form one
atomic batch, appended with ``expected_versions`` so a concurrent writer makes the append
fail instead of interleaving. :meth:`LibraryLog.state` folds the stream back into a
:class:`~.projection.LibraryState`, and :meth:`LibraryLog.open_loop` starts a master loop
that continues the library (cache, recall index, mount regimes, hit counters, stats): the
method library survives restarts and replays.

The event types (:data:`LIBRARY_EVENT_TYPES`, namespace ``graph_engine.``) and the
projection :data:`LIBRARIES` are the graph-engine plugin's to register: its
``cladelog_event_types`` hook must return them for a deployment to accept the events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
from cladelog.core import EventType, Projection, RecordedEvent

from .cache import CACHE_DELETED, CACHE_SET
from .errors import AuthoringError
from .master_loop import ARMS, DRIFTED, SOLVED, ForgeContext, MasterLoop
from .mount import REGIMES, MountThresholds
from .projection import LibraryState, apply_record_in_place, empty_library, fold_records

if TYPE_CHECKING:
    from cladelog.core import Deployment

__all__ = [
    "EVENT_OF_RECORD",
    "LIBRARIES",
    "LIBRARY_EVENT_TYPES",
    "LIBRARY_STREAM_PREFIX",
    "LibraryLog",
    "MethodCached",
    "MethodDrifted",
    "MethodSolved",
    "MethodUncached",
    "MountDecided",
    "MountDeopted",
    "MountWidened",
    "library_records",
    "library_state",
    "library_stream",
]

#: A library's stream is ``graph_library.<library id>``.
LIBRARY_STREAM_PREFIX: Final = "graph_library."
_LIBRARY_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,149}$")

_arm = attrs.validators.in_(ARMS)
_regime = attrs.validators.in_(REGIMES)


@attrs.frozen
class MethodSolved:
    """``graph_engine.method_solved``: one master-loop solve (record ``master_loop.solved``).

    ``key`` is the exact-match cache key, ``id`` the method class; ``cached``/``indexed``
    say whether ``result`` entered the cache / the recall index; ``mount`` is the class's
    mount state after the decision (``regime``, ``deoptCount``, ``widenCount``).
    """

    arm: str = attrs.field(validator=_arm)
    key: str
    id: str
    signature: dict[str, Any]
    cost: float
    regime: str = attrs.field(validator=_regime)
    hit: bool
    cached: bool
    indexed: bool
    mount: dict[str, Any]
    result: Any = None
    reForged: list[str] | None = None  # the record key


@attrs.frozen
class MethodDrifted:
    """``graph_engine.method_drifted``: a premise changed; the method left the cache and
    the recall index and its class took one deopt (record ``master_loop.drifted``)."""

    key: str
    id: str
    signature: dict[str, Any]
    deopts: int
    regime: str = attrs.field(validator=_regime)
    mount: dict[str, Any]


@attrs.frozen
class MountDecided:
    """``graph_engine.mount_decided``: the mount policy classified a method class."""

    id: str
    regime: str = attrs.field(validator=_regime)
    deoptCount: int  # the record key
    widenCount: int  # the record key
    reason: str


@attrs.frozen
class MountDeopted:
    """``graph_engine.mount_deopted``: a method class took one deopt."""

    id: str
    regime: str = attrs.field(validator=_regime)
    deoptCount: int  # the record key
    widenCount: int  # the record key


@attrs.frozen
class MountWidened:
    """``graph_engine.mount_widened``: a method class had to widen (frozen → instance)."""

    id: str
    regime: str = attrs.field(validator=_regime)
    deoptCount: int  # the record key
    widenCount: int  # the record key
    demotedFrom: str | None  # the record key (null in events recorded before it was pinned)


@attrs.frozen
class MethodCached:
    """``graph_engine.method_cached``: a recording cache stored ``value`` under ``key``."""

    key: str
    value: Any


@attrs.frozen
class MethodUncached:
    """``graph_engine.method_uncached``: a recording cache forgot ``key``."""

    key: str


_TYPES: Final[dict[str, tuple[str, type, str]]] = {
    SOLVED: ("graph_engine.method_solved", MethodSolved, "a master-loop solve"),
    DRIFTED: ("graph_engine.method_drifted", MethodDrifted, "a master-loop drift"),
    "mount.decided": ("graph_engine.mount_decided", MountDecided, "a mount decision"),
    "mount.deopted": ("graph_engine.mount_deopted", MountDeopted, "a mount deopt"),
    "mount.widened": ("graph_engine.mount_widened", MountWidened, "a mount widen"),
    CACHE_SET: ("graph_engine.method_cached", MethodCached, "a method-cache entry was set"),
    CACHE_DELETED: ("graph_engine.method_uncached", MethodUncached,
                    "a method-cache entry was deleted"),
}

#: Record type (what the sinks emit) -> event type.
EVENT_OF_RECORD: Final[Mapping[str, str]] = {k: v[0] for k, v in _TYPES.items()}
_RECORD_OF_EVENT: Final[Mapping[str, str]] = {v[0]: k for k, v in _TYPES.items()}

#: The event types of the method library (for the plugin's ``cladelog_event_types``).
LIBRARY_EVENT_TYPES: Final = tuple(
    EventType(name, cls, description=text) for name, cls, text in _TYPES.values())

#: Records after which the buffered batch is complete (one solve, one drift, one widen).
_CLOSING: Final = frozenset({SOLVED, DRIFTED, "mount.widened"})

Sink = Callable[[str, dict[str, Any]], None]


def library_stream(library_id: str) -> str:
    """The stream of a library: ``graph_library.<library id>``."""
    if type(library_id) is not str or not _LIBRARY_ID.match(library_id):
        raise AuthoringError(
            f"library_id: must be 1-150 characters of letters, digits and _.:@- starting "
            f"with a letter or digit, got {library_id!r}")
    return LIBRARY_STREAM_PREFIX + library_id


def _check_enabled(deployment: Deployment) -> None:
    missing = [name for name in EVENT_OF_RECORD.values() if name not in deployment.registry]
    if missing:
        raise AuthoringError(
            f"deployment: no enabled plugin registers {missing[0]} (the graph-engine plugin "
            "must return authoring.eventlog.LIBRARY_EVENT_TYPES from cladelog_event_types)")


def library_records(deployment: Deployment, library_id: str) -> list[tuple[str, Any]]:
    """The records of a library, in order, read from the log (empty for a new library)."""
    _check_enabled(deployment)
    stream = library_stream(library_id)
    registry = deployment.registry
    out: list[tuple[str, Any]] = []
    for e in deployment.store.read(stream=stream):
        kind = _RECORD_OF_EVENT.get(e.type)
        if kind is None:
            raise AuthoringError(f"{stream}@{e.stream_version}: unexpected event type {e.type!r}")
        out.append((kind, registry.upcast(e.type, e.schema_version, e.data)))
    return out


def library_state(deployment: Deployment, library_id: str) -> LibraryState:
    """The library's state projected from the log: cache, recall index, mounts, hits, stats."""
    records = library_records(deployment, library_id)
    try:
        return fold_records(records)
    except AuthoringError as exc:
        raise AuthoringError(f"{library_stream(library_id)}: {exc}") from None


class LibraryLog:
    """A sink that appends a method library's records to the deployment's log.

    Records are buffered and appended as one atomic batch once ``flush_every`` solves,
    drifts or widens have been recorded (default 1: every solve is durable when
    :meth:`~.master_loop.MasterLoop.solve` returns). Use it as a context manager, or call
    :meth:`flush`, to append what is left. Once the log refuses an append the sink is
    stopped: every later call raises :class:`AuthoringError`.
    """

    def __init__(self, deployment: Deployment, library_id: str, *,
                 flush_every: int = 1) -> None:
        _check_enabled(deployment)
        if isinstance(flush_every, bool) or not isinstance(flush_every, int) or flush_every < 1:
            raise AuthoringError(f"flush_every: must be a positive integer, got {flush_every!r}")
        self.library_id = library_id
        self.stream = library_stream(library_id)
        self.flush_every = flush_every
        self._deployment = deployment
        self._version = deployment.store.stream_version(self.stream)
        self._buffer: list[tuple[str, dict[str, Any]]] = []
        self._units = 0
        self._broken: str | None = None
        self.events_written = 0

    def _check_live(self) -> None:
        if self._broken is not None:
            raise AuthoringError(f"library {self.library_id}: {self._broken}")

    def record(self, kind: str, data: dict[str, Any]) -> None:
        """The sink: buffer one record; append the batch when it is complete."""
        self._check_live()
        if kind not in EVENT_OF_RECORD:
            raise AuthoringError(f"record: unknown record type {kind!r}")
        self._buffer.append((kind, data))
        if kind in _CLOSING:
            self._units += 1
            if self._units >= self.flush_every:
                self.flush()

    __call__ = record

    def flush(self) -> int:
        """Append the buffered records now (one atomic batch); return how many events."""
        self._check_live()
        if not self._buffer:
            return 0
        from cladelog.core import NewEvent

        records, self._buffer, self._units = self._buffer, [], 0
        events = [NewEvent(self.stream, EVENT_OF_RECORD[k], d) for k, d in records]
        try:
            self._deployment.append(events, expected_versions={self.stream: self._version})
        except Exception as exc:
            self._broken = f"the log refused an append, the library is stopped ({exc})"
            raise AuthoringError(f"library {self.library_id}: {self._broken}") from exc
        self._version += len(events)
        self.events_written += len(events)
        return len(events)

    def records(self) -> list[tuple[str, Any]]:
        """The library's records in the log (buffered records are not included)."""
        return library_records(self._deployment, self.library_id)

    def state(self) -> LibraryState:
        """The library's state projected from the log."""
        return library_state(self._deployment, self.library_id)

    def open_loop(
        self,
        signature: Callable[[Any], Mapping[str, Any]],
        forge: Callable[[Any, ForgeContext], Any],
        re_forge: Callable[..., Any] | None = None,
        *,
        recall_k: int = 3,
        signals: Callable[[Any, str], Mapping[str, Any]] | None = None,
        thresholds: MountThresholds | None = None,
    ) -> MasterLoop:
        """A master loop continuing the library as the log holds it, recording to the log.

        The loop and its mount controller both record through this sink, so solves,
        drifts and every mount decision become events.
        """
        self.flush()
        return self.state().build_loop(signature, forge, re_forge, recall_k=recall_k,
                                       signals=signals, thresholds=thresholds,
                                       sink=self.record, mount_sink=self.record)

    def __enter__(self) -> LibraryLog:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._broken is None:
            self.flush()


def _apply_libraries(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    """Fold one library event into ``{"libraries": {id: library JSON}}``."""
    kind = _RECORD_OF_EVENT.get(event.type)
    stream = event.stream
    if kind is None or not stream.startswith(LIBRARY_STREAM_PREFIX):
        return state
    libraries: dict[str, Any] = state["libraries"]
    lib_id = stream[len(LIBRARY_STREAM_PREFIX):]
    lib = libraries.get(lib_id)
    if lib is None:
        lib = libraries[lib_id] = empty_library()
    apply_record_in_place(lib, (kind, event.data), event.stream_version)
    return state


def _summary(state: Mapping[str, Any]) -> str:
    libs: Mapping[str, Any] = state["libraries"]
    solves = sum(lib["stats"]["calls"] for lib in libs.values())
    return f"{len(libs)} librar{'y' if len(libs) == 1 else 'ies'}, {solves} solve(s)"


#: The library projection: per library id, the JSON form of its state (cache, recall index
#: entries as ``[signature, method]``, mounts, hits as ``[hits, solves]``, stats);
#: :func:`~.projection.library_of` turns one into a :class:`~.projection.LibraryState`.
LIBRARIES: Final = Projection(
    name="graph_engine.libraries",
    version=1,
    event_types=frozenset(EVENT_OF_RECORD.values()),
    initial={"libraries": {}},
    apply=_apply_libraries,
    summary=_summary,
    description="master-loop method libraries (cache, recall index, mounts, stats)",
)
