"""A deployment: one store, the enabled plugins, their event types and projections.

This is the application layer every command goes through: it validates a
whole batch before anything is written, fills each event's meta, records
plugin enablement in the log, replays projections and asks the gate.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import builtin
from ._gc import gc_paused
from .config import DeploymentConfig
from .errors import ConfigError, InputError
from .events import NewEvent, RecordedEvent
from .plugins import LoadedPlugin, load_plugins, make_plugin_manager
from .projections import HeldStates, Projection, ReplayResult, advance, replay
from .registry import EventTypeRegistry
from .store import EventStore, PreparedEvent, open_store
from .store.base import ImportResult, VerifyReport

if TYPE_CHECKING:
    from .gate import GateResult

__all__ = ["Deployment"]

CORE_VERSION = "0.1.0"


def _check_stream(stream: Any, where: str) -> None:
    if stream.__class__ is not str or not stream or len(stream) > 200:
        raise InputError(f"{where}.stream: must be a non-empty string of at most 200 chars")
    try:
        stream.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{where}.stream: contains a lone surrogate") from None
    if not stream.isprintable():  # control characters (a NUL cannot even be stored everywhere)
        bad = next(c for c in stream if not c.isprintable())
        raise InputError(f"{where}.stream: must not contain control characters "
                         f"(U+{ord(bad):04X})")
    if stream == builtin.PLUGINS_STREAM:
        raise InputError(f"{where}.stream: {stream} is reserved for cladelog's own records")


def _check_payload(registry: EventTypeRegistry, event: RecordedEvent) -> None:
    where = f"event at position {event.position} ({event.type})"
    try:
        data = registry.upcast(event.type, event.schema_version, event.data)
        registry.structure(event.type, data)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # an upcaster's
        raise InputError(f"{where}: data: cannot be upcast ({type(exc).__name__}: "
                         f"{exc})") from None


#: meta members the deployment sets and a caller may not change (who produced an event)
_OWN_META = ("plugin", "plugin_version")


def _caller_meta(meta: dict[str, Any], given: Any, where: str) -> dict[str, Any]:
    """The deployment's meta with a caller's additions (``actor`` and ``correlation_id``
    may be given, as strings; the producing plugin and its version may not)."""
    if not isinstance(given, Mapping):
        raise InputError(f"{where}.meta: must be an object")
    for key in _OWN_META:
        if key in given and given[key] != meta[key]:
            raise InputError(f"{where}.meta.{key}: set by the deployment (the event type's "
                             f"plugin is {meta['plugin']} {meta['plugin_version']}), not by "
                             "the caller")
    for key in ("actor", "correlation_id"):
        if key in given and (given[key].__class__ is not str or not given[key]):
            raise InputError(f"{where}.meta.{key}: must be a non-empty string")
    return {**meta, **given}


class Deployment:
    """Open a deployment from its config; close it (or use ``with``) when done.

    ``plugins`` are extra plugin modules to register as enabled (tests and
    embedding); ``clock`` returns ``recorded_at`` strings (the demo uses a
    deterministic one); ``create`` creates the store when missing.
    """

    def __init__(
        self,
        config: DeploymentConfig,
        *,
        plugins: Iterable[ModuleType | Any] = (),
        clock: Callable[[], str] | None = None,
        create: bool = False,
    ) -> None:
        self.config = config
        self.clock = clock
        self.loaded: list[LoadedPlugin] = load_plugins(config.plugins, config.settings, plugins)
        self.pm = make_plugin_manager(self.loaded, builtin)
        self.registry = EventTypeRegistry()
        self._owner: dict[str, str] = {}
        self._versions = {"core": CORE_VERSION} | {
            p.info.name: p.info.version for p in self.loaded
        }
        for plugin, types in self._per_plugin(self.pm.hook.cladelog_event_types):
            prefix = plugin.replace("-", "_") + "."
            for et in types:
                if not et.name.startswith(prefix):
                    raise ConfigError(
                        f"plugins: {plugin!r} registers {et.name!r}, outside its namespace "
                        f"{prefix}*"
                    )
                self.registry.register(et)
                self._owner[et.name] = plugin
        self.projections: list[Projection] = []
        seen: set[str] = set()
        for _plugin, projs in self._per_plugin(self.pm.hook.cladelog_projections):
            for proj in projs:
                if proj.name in seen:
                    raise ConfigError(f"plugins: projection {proj.name!r} is registered twice")
                seen.add(proj.name)
                self.projections.append(proj)
        self.store: EventStore = open_store(config.store, create=create)
        self._plugins_recorded = False
        self._held = HeldStates()
        self.pm.hook.cladelog_configure(deployment=self)

    @classmethod
    def open(cls, path: str | os.PathLike[str], **kw: Any) -> Deployment:
        return cls(DeploymentConfig.load(path), **kw)

    def _per_plugin(self, hook: Any) -> list[tuple[str, Sequence[Any]]]:
        out: list[tuple[str, Sequence[Any]]] = []
        for impl in hook.get_hookimpls():
            result = impl.function()
            out.append((impl.plugin_name, tuple(result or ())))
        return out

    # -- plugins ------------------------------------------------------------------------
    def settings(self, plugin: str) -> Any:
        """The validated settings object of an enabled plugin."""
        for p in self.loaded:
            if p.info.name == plugin:
                return p.settings
        raise ConfigError(f"plugins: {plugin!r} is not enabled in this deployment")

    @property
    def plugin_versions(self) -> dict[str, str]:
        return dict(self._versions)

    def _plugin_changes(self) -> tuple[list[PreparedEvent], int]:
        """The enable/disable events the log lacks, and the version of the plugins stream
        they were worked out from."""
        recorded: dict[str, tuple[str, bool]] = {}
        seen = 0
        for e in self.store.read(stream=builtin.PLUGINS_STREAM):
            recorded[e.data["name"]] = (e.data["version"], e.type == "core.plugin_enabled")
            seen = e.stream_version
        wanted = {p.info.name: p.info.version for p in self.loaded}
        meta = self._meta("core", None)
        out = []
        for name, version in sorted(wanted.items()):
            if recorded.get(name) != (version, True):
                out.append(PreparedEvent(builtin.PLUGINS_STREAM, "core.plugin_enabled", 1,
                                         {"name": name, "version": version}, meta))
        for name, (version, on) in sorted(recorded.items()):
            if on and name not in wanted:
                out.append(PreparedEvent(builtin.PLUGINS_STREAM, "core.plugin_disabled", 1,
                                         {"name": name, "version": version}, meta))
        return out, seen

    def record_plugins(self) -> list[RecordedEvent]:
        """Append enable/disable events if the enabled set differs from the log's record.

        Conditional on the plugins stream not having moved since it was read: two
        deployments starting to append at once record the change once (the second one
        finds it recorded and appends nothing)."""
        from .errors import ConcurrencyError

        # ends: every deployment records once, so the stream moves a bounded number of times
        while True:
            changes, seen = self._plugin_changes()
            if not changes:
                recorded: list[RecordedEvent] = []
                break
            try:
                recorded = self.store.append(changes, clock=self.clock,
                                             expected_versions={builtin.PLUGINS_STREAM: seen})
                break
            except ConcurrencyError:
                continue  # another deployment recorded meanwhile: look again
        self._plugins_recorded = True  # only once they are in the log
        return recorded

    # -- writing ------------------------------------------------------------------------
    def _meta(self, plugin: str, correlation_id: str | None) -> dict[str, Any]:
        actor = self.config.actor or os.environ.get("CLADELOG_ACTOR")
        if not actor:
            import getpass

            try:
                actor = getpass.getuser()
            except Exception:  # no user database entry in some containers
                actor = "unknown"
        meta: dict[str, Any] = {"actor": actor, "plugin": plugin,
                                "plugin_version": self._versions.get(plugin, "unknown")}
        if correlation_id is not None:
            meta["correlation_id"] = correlation_id
        return meta

    def prepare(
        self, events: Sequence[NewEvent], *, correlation_id: str | None = None
    ) -> list[PreparedEvent]:
        """Validate a batch completely; raise :class:`InputError` naming the first bad field."""
        out = []
        metas: dict[str, dict[str, Any]] = {}
        prepare = self.registry.prepare_encoded
        owner = self._owner
        new_event = tuple.__new__  # PreparedEvent's own __new__ is a Python function

        def where(i: int) -> str:
            return f"events[{i}]" if len(events) > 1 else "event"

        last_stream = None
        for i, e in enumerate(events):
            stream = e.stream
            if stream is not last_stream:  # a batch mostly shares one stream: check it once
                _check_stream(stream, where(i))
                last_stream = stream
            etype = e.type
            try:
                version, data, encoded = prepare(etype, e.data, e.schema_version)
            except InputError as exc:
                raise type(exc)(f"{where(i)}.{exc}") from None
            plugin = owner[etype]
            if plugin == "core":
                raise InputError(f"{where(i)}.type: {etype} is written by cladelog itself "
                                 "(plugin enablement follows the deployment file), not appended")
            meta = metas.get(plugin)
            if meta is None:
                meta = metas[plugin] = self._meta(plugin, correlation_id)
            if e.meta:
                meta = _caller_meta(meta, e.meta, where(i))
            out.append(new_event(PreparedEvent, (stream, etype, version, data, meta, encoded)))
        return out

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        correlation_id: str | None = None,
    ) -> list[RecordedEvent]:
        """Validate and append a batch atomically; a rejected batch appends nothing."""
        # everything a batch allocates outlives the call (the returned events hold it)
        # and forms no cycle: collections during it would find nothing to free
        with gc_paused():
            prepared = self.prepare(events, correlation_id=correlation_id)
            if not self._plugins_recorded:
                # the enabled plugins go in first, as a batch of their own: the caller's
                # batch (and the digest its idempotency key stands for) must not depend on
                # whether this deployment had recorded them yet
                self.record_plugins()
            return self.store.append(prepared, expected_versions=expected_versions,
                                     idempotency_key=idempotency_key, clock=self.clock)

    # -- reading ------------------------------------------------------------------------
    def import_events(self, events: Iterable[RecordedEvent]) -> ImportResult:
        """Import exported events (see :meth:`EventStore.import_events`), after checking the
        payload of every event the store does not hold yet against its registered class
        (upcast first), as an append would: a history written elsewhere must not bring in
        what this deployment's plugins would refuse. Events of types no enabled plugin
        registers are taken as they are. Raises :class:`InputError` naming the position
        and the field; nothing is imported then. ``events`` is consumed once, as it comes
        (an iterator over a large export is never held in memory)."""
        head = self.store.head().position
        registry = self.registry

        def checked() -> Iterator[RecordedEvent]:
            for event in events:
                if event.position > head and event.type in registry:
                    _check_payload(registry, event)
                yield event

        return self.store.import_events(checked())

    def replay(self, **kw: Any) -> ReplayResult:
        """Fold the log through every enabled projection (see :func:`projections.replay`).

        States this deployment already replayed are resumed from memory (verified when
        they were first loaded), so a replay with nothing new costs no encoding."""
        return replay(self.store, self.registry, self.projections, held=self._held, **kw)

    # -- held states: the working copies states()/state()/gate() read ------------------
    def _advance(self, projections: Sequence[Projection]) -> dict[str, Any]:
        """The states of ``projections`` brought up to the head, without taking digests;
        checkpoints are saved when the held states have doubled their distance from the
        last save (and on close), so a long run of small appends saves O(log n) times."""
        states = advance(self.store, self.registry, projections, self._held)
        for name, held in self._held.unsaved():
            if held.head.position - max(held.saved, 0) >= max(held.saved, 1000):
                self._held.save(self.store, name, held)
        return states

    def states(self) -> dict[str, Any]:
        """Bring every projection up to date and return their states by name.

        The states are this deployment's working copies: read them, do not change them;
        a later call updates them in place as new events are folded."""
        return self._advance(self.projections)

    def state(self, projection: str) -> Any:
        """One projection's state, brought up to date (a working copy, as :meth:`states`)."""
        for p in self.projections:
            if p.name == projection:
                return self._advance([p])[projection]
        raise ConfigError(f"projection {projection!r} is not registered in this deployment")

    def verify(self) -> VerifyReport:
        return self.store.verify()

    def gate(self, candidate: str) -> GateResult:
        """Ask every enabled plugin's gate hook about ``candidate``."""
        return self.gate_all([candidate])[0]

    def gate_all(self, candidates: Iterable[str]) -> list[GateResult]:
        """The gate's answer for each of ``candidates``, in order, from one replay: the
        states are brought up to date once and every plugin's gate hook votes on each
        candidate from them (the same answer :meth:`gate` gives one at a time)."""
        from .gate import GateResult, Vote

        states = self.states()
        hooks = self.pm.hook.cladelog_gate_vote.get_hookimpls()
        results = []
        for candidate in candidates:
            votes: list[Vote] = []
            for impl in hooks:
                vote = impl.function(candidate=candidate, states=states, deployment=self)
                if isinstance(vote, Vote):
                    votes.append(vote)
            votes.sort(key=lambda v: v.plugin)
            results.append(GateResult(candidate, tuple(votes)))
        return results

    def cli_commands(self) -> list[Any]:
        cmds: list[Any] = []
        for _, result in self._per_plugin(self.pm.hook.cladelog_cli_commands):
            cmds.extend(result)
        return cmds

    def close(self) -> None:
        """Save the checkpoints of states held ahead of them, then close the store."""
        try:
            self._held.flush(self.store)
        except Exception:  # a checkpoint is a cache: a store that cannot take it
            pass           # (read-only, gone) only costs the next replay some work
        finally:
            self.store.close()

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
