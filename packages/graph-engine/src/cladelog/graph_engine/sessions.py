"""Event-sourced graph sessions: an :class:`Engine` whose records go to the deployment's log.

A session is one stream, ``graph.<session id>``. The engine's sink buffers its records; each
settle appends the buffer in one atomic batch with ``expected_versions`` on the session
stream (a concurrent writer makes the append fail rather than interleave). A settle that
buffers more than ``flush_every`` records (plugin settings) flushes early, which keeps the
memory of a big boot bounded. :func:`replay_session` rebuilds the engine from the log alone:
no provider is called.

Fresh ids are deterministic (Q10), so the same session run twice with the same providers
writes the same event data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .engine import (
    Engine,
    EngineConfig,
    Provider,
    ReplayPort,
    SettleReport,
    _gc_paused,
)
from .errors import SessionError
from .events import (
    PACKED_SCHEMA_VERSION,
    PREFIX,
    Packer,
    event_type_of,
    new_packer,
    record_type_of,
    session_stream,
    unpack_records,
)
from .replay import Unfoldable, packed_chunk, packed_replay_data, replay_chunks
from .scenario import ProviderKind, reload_seed, run_scenario
from .settings import GraphEngineSettings

if TYPE_CHECKING:
    from cladelog.core import Deployment

__all__ = [
    "Session",
    "SessionScenarioHost",
    "default_provider_kinds",
    "plugin_providers",
    "replay_session",
    "run_recorded_scenario",
    "session_records",
]

_SESSION_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,149}$")
_PACKED: Final = PREFIX + "records_packed"
_CHECKPOINT: Final = PREFIX + "checkpoint"
_PLUGIN: Final = "graph-engine"
#: Records never packed: replay finds a checkpoint by its type, and the sessions projection
#: sees a failed run without reading packed text.
_UNPACKED: Final = frozenset({"checkpoint", "run_failed"})


def _check_id(session_id: Any) -> str:
    if type(session_id) is not str or not _SESSION_ID.match(session_id):
        raise SessionError(
            f"session_id: must be 1-150 characters of letters, digits and _.:@- starting with "
            f"a letter or digit, got {session_id!r}"
        )
    return session_id


def _check_enabled(deployment: Deployment) -> None:
    if event_type_of("tree_loaded") not in deployment.registry:
        raise SessionError("deployment: the graph-engine plugin is not enabled")


def _settings(deployment: Deployment) -> GraphEngineSettings:
    try:
        found = deployment.settings(_PLUGIN)
    except Exception:
        return GraphEngineSettings()
    return found if isinstance(found, GraphEngineSettings) else GraphEngineSettings()


def plugin_providers(deployment: Deployment) -> dict[str, Provider]:
    """Collect ``{"Ns::fn": provider}`` from every enabled plugin's ``graph_engine_providers``.

    Raises :class:`SessionError` when a plugin returns something else than a mapping of
    ``"Ns::fn"`` names to callables, or when two plugins offer the same name.
    """
    hook = getattr(deployment.pm.hook, "graph_engine_providers", None)
    if hook is None:
        return {}
    out: dict[str, Provider] = {}
    owner: dict[str, str] = {}
    for impl in hook.get_hookimpls():
        plugin = impl.plugin_name
        result = impl.function()
        if result is None:
            continue
        if not isinstance(result, Mapping):
            raise SessionError(f"providers: plugin {plugin!r} returned "
                               f"{type(result).__name__}, not a mapping")
        for name, fn in result.items():
            if type(name) is not str or "::" not in name:
                raise SessionError(f"providers.{name!r}: plugin {plugin!r} must name providers "
                                   f"'Ns::fn'")
            if not callable(fn):
                raise SessionError(f"providers.{name}: plugin {plugin!r} gave a non-callable")
            if name in out:
                raise SessionError(f"providers.{name}: offered by both {owner[name]!r} and "
                                   f"{plugin!r}")
            out[name] = fn
            owner[name] = plugin
    return out


class Session:
    """A live engine recorded to the deployment's log under ``graph.<session_id>``.

    ``providers`` are added to (and override) those of the enabled plugins' hook. Nothing is
    appended if the tree or seed is rejected, and nothing before the first :meth:`settle`
    (or :meth:`flush`). Host operations go through :attr:`engine`
    (``session.engine.mutate(...)``) and become events at the next :meth:`settle`.
    """

    def __init__(
        self,
        deployment: Deployment,
        session_id: str,
        tree: Mapping[str, Any],
        *,
        providers: Mapping[str, Provider] | None = None,
        seed: Mapping[str, Any] | None = None,
        config: EngineConfig | None = None,
    ) -> None:
        _check_enabled(deployment)
        self.session_id = _check_id(session_id)
        self.stream = session_stream(session_id)
        self._deployment = deployment
        self._version = deployment.store.stream_version(self.stream)
        if self._version:
            raise SessionError(f"session_id: session {session_id!r} already exists in the log")
        settings = _settings(deployment)
        self._flush_every = settings.flush_every
        self._pack = settings.pack_records
        self._checkpoint_every = settings.checkpoint_every
        self._since_checkpoint = 0
        # what the next flush appends: packers (a packed event each) and unpacked records
        self._buffer: list[Packer | tuple[str, dict[str, Any]]] = []
        self._packer: Packer | None = None  # the packer taking records, if any
        self._buffered = 0  # records in the buffer
        self._broken: str | None = None
        self.events_written = 0
        self.records_written = 0
        self.providers: dict[str, Provider] = plugin_providers(deployment) | dict(providers or {})
        self.engine = Engine(tree, providers=self.providers, seed=seed, config=config,
                             sink=self._record)

    # ------------------------------------------------------------------ recording

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        if self._pack and kind not in _UNPACKED:
            # A packer keeps only the columns of each record (keys, values, causes), so most
            # of a record's containers are freed as soon as the next record arrives (on a big
            # boot, keeping thousands of them until the flush cost more memory traffic than
            # encoding); the columns are encoded at the flush.
            packer = self._packer
            if packer is None or len(packer) >= self._pack:
                packer = self._packer = new_packer()
                self._buffer.append(packer)
            packer.add(kind, data)
        else:
            self._packer = None  # a record never packed ends the run
            self._buffer.append((kind, data))
        self._buffered += 1
        if self._flush_every and self._buffered >= self._flush_every:
            self.flush()

    def _events(self, entries: Sequence[Packer | tuple[str, dict[str, Any]]]
                ) -> list[Any]:
        from cladelog.core import NewEvent

        stream = self.stream
        out: list[Any] = []
        for entry in entries:
            if not isinstance(entry, tuple):  # a packer
                try:
                    data = entry.seal()
                except (ValueError, TypeError) as exc:
                    raise SessionError(f"session {self.session_id}: a record is not JSON "
                                       f"({exc})") from None
                out.append(NewEvent(stream, _PACKED, data))
            else:
                out.append(NewEvent(stream, PREFIX + entry[0], entry[1]))
        return out

    def _check_live(self) -> None:
        if self._broken is not None:
            raise SessionError(f"session {self.session_id}: {self._broken}")

    def flush(self) -> int:
        """Append the buffered records now (one atomic batch); return how many events."""
        self._check_live()
        if not self._buffer:
            return 0
        entries, self._buffer, self._packer = self._buffer, [], None
        records, self._buffered = self._buffered, 0
        # encoding and appending a batch allocate many containers and no cycles, while the
        # live graph can be large: the cyclic collector would only walk it again and again
        with _gc_paused():
            events = self._events(entries)
            try:
                self._deployment.append(events, expected_versions={self.stream: self._version})
            except Exception as exc:
                self._broken = f"the log refused an append, the session is stopped ({exc})"
                raise SessionError(f"session {self.session_id}: {self._broken}") from exc
        self._version += len(events)
        self.events_written += len(events)
        self.records_written += records
        self._since_checkpoint += records
        if events[-1].type == _CHECKPOINT:
            self._since_checkpoint = 0
        return len(events)

    def _maybe_checkpoint(self) -> None:
        due = self._checkpoint_every
        if due and self._since_checkpoint + self._buffered >= due:
            with _gc_paused():  # a checkpoint copies the whole state: no cycles, many objects
                self.engine.write_checkpoint()

    # ------------------------------------------------------------------ running

    def settle(self) -> SettleReport:
        """Settle the engine and append its records."""
        self._check_live()
        try:
            report = self.engine.settle()
            self._maybe_checkpoint()
        finally:
            if self._broken is None:
                self.flush()
        return report

    async def asettle(self) -> SettleReport:
        """Like :meth:`settle`, from inside a running event loop."""
        self._check_live()
        try:
            report = await self.engine.asettle()
            self._maybe_checkpoint()
        finally:
            if self._broken is None:
                self.flush()
        return report

    def reload(self) -> Engine:
        """SPEC §2 ``reload``: rebuild from the log, then boot a new engine on those facts.

        The facts and the live tree come from :func:`replay_session` (not from the running
        engine), so a reload also proves that the log alone carries the session.
        """
        self.flush()
        rebuilt = replay_session(self._deployment, self.session_id)
        self.engine = Engine(rebuilt.export_tree(), providers=self.providers,
                             seed=reload_seed(rebuilt), config=self.engine.config,
                             sink=self._record)
        return self.engine


def session_records(deployment: Deployment, session_id: str, *,
                    from_checkpoint: bool = False) -> list[tuple[str, Any]]:
    """The engine records of a session, in order, read from the log.

    With ``from_checkpoint``, reading starts at the session's last checkpoint event.
    """
    with _gc_paused():  # decoding builds many small containers and no cycles
        return _session_records(deployment, session_id, from_checkpoint)


def _session_records(deployment: Deployment, session_id: str,
                     from_checkpoint: bool) -> list[tuple[str, Any]]:
    _check_enabled(deployment)
    stream = session_stream(_check_id(session_id))
    registry = deployment.registry
    start = 1
    if from_checkpoint:
        for e in deployment.store.read(stream=stream, types=[_CHECKPOINT]):
            start = e.position
    out: list[tuple[str, Any]] = []
    for e in deployment.store.read(start, stream=stream):
        data = registry.upcast(e.type, e.schema_version, e.data)
        if e.type == _PACKED:
            try:
                out.extend(unpack_records(data))
            except (ValueError, KeyError, TypeError) as exc:
                raise SessionError(f"{stream}@{e.stream_version}: {exc}") from None
            continue
        kind = record_type_of(e.type)
        if kind is None:
            raise SessionError(f"{stream}@{e.stream_version}: unexpected event type {e.type!r}")
        out.append((kind, data))
    if not out:
        raise SessionError(f"session: no session {session_id!r} in the log")
    return out


def replay_session(
    deployment: Deployment,
    session_id: str,
    *,
    providers: Mapping[str, Provider] | None = None,
    verify: bool = True,
    from_checkpoint: bool = True,
) -> Engine:
    """Rebuild a session's engine from the log without calling any provider.

    By default the replay starts at the session's last checkpoint (its digest checked) and
    folds the events after it; ``from_checkpoint=False`` replays every event from the start,
    reading the log chain-checked (a broken chain raises core's ``ChainError``). Every
    recorded settle digest is checked when ``verify``; ``providers`` are attached for live
    use afterwards (none is called by the replay).
    """
    # Reading and folding the records build many containers and no cycles. The collector is
    # paused for both, and the records are dropped before it resumes: otherwise its first
    # pass after the pause walks every record still alive (about a second for 260,000).
    with _gc_paused():
        if not from_checkpoint:
            # event by event, each applied before the next is read (see .replay); the
            # general path replays what the fold left to it, or words the error
            engine: Engine = replay_chunks(
                _session_chunks(deployment, session_id),
                lambda: _session_records(deployment, session_id, False),
                ReplayPort, providers=providers, verify=verify)
            return engine
        records = _session_records(deployment, session_id, True)
        if records[0][0] == "checkpoint" and not _covers(records):
            # a rollback reaches behind the checkpoint: replay from the first event
            records = _session_records(deployment, session_id, False)
        engine = Engine.replay(records, providers=providers, verify=verify,
                               from_checkpoint=True)
        del records
    return engine


def _session_chunks(deployment: Deployment, session_id: str) -> Iterator[Any]:
    """The records of a session's events, in chunks for ``replay.fold_records``: a packed
    event's columns, or the records of consecutive unpacked events (up to 1000).

    The log is read chain-checked from the session's first event (``read_verified`` is
    also the store's fastest read), until the session's last event; events of other
    streams in between are checked and passed over, and so are the session's checkpoints
    (a replay from the first event does not need them: their data is not even parsed, nor
    is a packed event's audit). Raises :class:`Unfoldable` where
    :func:`session_records` raises: the general path words the error.
    """
    from cladelog.core import GENESIS_HASH, Head

    _check_enabled(deployment)
    stream = session_stream(_check_id(session_id))
    store = deployment.store
    first = _first_position(store, stream)
    if first is None:
        raise Unfoldable("no such session")
    count = store.stream_version(stream)
    before = first - 1
    prev_hash = store.hash_at(before) if before else GENESIS_HASH
    if prev_hash is None:
        raise Unfoldable(f"no event at position {before}")
    upcast = deployment.registry.upcast
    batch: list[tuple[str, Any]] = []  # records of unpacked events, folded together
    seen = 0
    # a packed event's audit is not read (most of its bytes), nor is a checkpoint (the
    # whole state, which a replay from the first event rebuilds): neither is parsed
    checkpoint_version = deployment.registry.get(_CHECKPOINT).schema_version
    decode = {_PACKED: (PACKED_SCHEMA_VERSION, packed_replay_data),
              _CHECKPOINT: (checkpoint_version, _unread)}
    for e in store.read_verified(Head(before, prev_hash), raw_decoders=decode):
        if e.stream != stream:
            continue
        if e.type == _PACKED:
            data = upcast(e.type, e.schema_version, e.data)
            try:
                columns = packed_chunk(data)
            except (ValueError, KeyError, TypeError) as exc:
                raise Unfoldable(f"{stream}@{e.stream_version}: {exc}") from None
            if batch:
                yield batch
                batch = []
            yield columns
        elif e.type != _CHECKPOINT:
            kind = record_type_of(e.type)
            if kind is None:
                raise Unfoldable(f"{stream}@{e.stream_version}: type {e.type!r}")
            batch.append((kind, upcast(e.type, e.schema_version, e.data)))
            if len(batch) == 1000:
                yield batch
                batch = []
        seen += 1
        if seen == count:
            break
    if batch:
        yield batch


def _unread(stored: bytes) -> None:
    """The data of an event a replay passes over: its hash is checked, its data unparsed."""
    return None


def _first_position(store: Any, stream: str) -> int | None:
    """The position of the first event of ``stream`` (None when it has none).

    An SQL store answers a read of one stream by sorting all its rows by position, data
    included, before handing out the first (about 70 ms for a 10,000-entity session), so
    the reads here are bounded to positions up to 1, 2, 4, ...: each sorts only the rows of
    the stream below its bound, and the first read that finds one has found the first.
    """
    last = store.head().position
    bound = 1
    while True:
        rows = store.read_rows(stop=bound, stream=stream)
        try:
            first = next(rows, None)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:  # a generator holding a cursor: release it now
                close()
        if first is not None:
            return int(first[0])
        if bound >= last:
            return None
        bound *= 2


def _covers(records: list[tuple[str, Any]]) -> bool:
    start = int(records[0][1].get("revision", 0))
    return all(int(d.get("to", 0)) >= start for k, d in records if k == "rolled_back")


class SessionScenarioHost:
    """Runs a SPEC §2 scenario as a recorded session (see :func:`run_recorded_scenario`)."""

    def __init__(self, deployment: Deployment, session_id: str) -> None:
        self.deployment = deployment
        self.session_id = _check_id(session_id)
        self.session: Session | None = None

    def boot(self, tree: Mapping[str, Any], providers: Mapping[str, Provider],
             seed: Mapping[str, Any], config: EngineConfig) -> Engine:
        self.session = Session(self.deployment, self.session_id, tree, providers=providers,
                               seed=seed, config=config)
        return self.session.engine

    def _live(self) -> Session:
        if self.session is None:
            raise SessionError("scenario: the session has not booted")
        return self.session

    def settle(self, engine: Engine) -> None:
        self._live().settle()

    def reload(self, engine: Engine) -> Engine:
        return self._live().reload()

    def flush(self, engine: Engine) -> None:
        """Append what is buffered now (a failed step's ``run_failed`` record)."""
        self._live().flush()


def run_recorded_scenario(
    deployment: Deployment,
    data: Mapping[str, Any],
    session_id: str,
    *,
    extra_providers: Mapping[str, Callable[..., Any]] | None = None,
    provider_kinds: Mapping[str, ProviderKind] | None = None,
) -> dict[str, Any]:
    """Run a scenario (SPEC §2) as session ``session_id`` and return the expected output.

    ``provider_kinds`` defaults to :func:`default_provider_kinds`.
    """
    host = SessionScenarioHost(deployment, session_id)
    kinds = default_provider_kinds() if provider_kinds is None else provider_kinds
    return run_scenario(data, host=host, extra_providers=extra_providers, provider_kinds=kinds)


def default_provider_kinds() -> dict[str, ProviderKind]:
    """The scenario provider kinds beyond the built-in ones: ``loop`` from the authoring
    package when it is installed."""
    try:
        from .authoring import loop_provider_kind
    except ImportError:
        return {}
    return {"loop": loop_provider_kind}
