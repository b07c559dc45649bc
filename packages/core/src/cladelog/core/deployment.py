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

from . import __version__, builtin
from ._gc import gc_paused
from .config import DeploymentConfig
from .errors import ChainError, ConfigError, InputError
from .events import GENESIS_HASH, NewEvent, RecordedEvent
from .plugins import LoadedPlugin, load_plugins, make_plugin_manager
from .projections import HeldStates, Projection, ReplayResult, advance, replay
from .registry import EventTypeRegistry
from .rules import (
    LogRules,
    RuleError,
    check_idempotency_key,
    check_meta,
    check_recorded_at,
    check_reserved,
    check_stream,
)
from .store import EventStore, PreparedEvent, open_store
from .store.base import BatchResult, Head, ImportResult, VerifyReport

if TYPE_CHECKING:
    from .gate import GateResult

__all__ = ["Deployment"]

CORE_VERSION = __version__  # the event meta records it
_NO_TYPE = object()  # no event type seen yet (Deployment.prepare)


def _caller_meta(meta: dict[str, Any], given: Any, where: str) -> dict[str, Any]:
    """The deployment's meta with a caller's additions (``actor`` and ``correlation_id``
    may be given, as strings; the producing plugin and its version may not differ), checked
    by rule ``meta`` as an import checks a whole event's meta."""
    if not isinstance(given, Mapping):
        raise RuleError("meta", f"{where}.meta: must be an object")
    merged = {**meta, **given}
    check_meta(merged, plugin=meta["plugin"], versions=meta["plugin_version"], where=where)
    return merged


def _checked(clock: Callable[[], str]) -> Callable[[], str]:
    """``clock`` whose times are checked by rule ``recorded_at`` (once per batch)."""

    def checked() -> str:
        now = clock()
        check_recorded_at(now, "clock")
        return now

    return checked


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
        self.loaded: list[LoadedPlugin] = load_plugins(config.plugins, config.settings, plugins,
                                                          source=config.source)
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

    @property
    def event_type_owners(self) -> dict[str, str]:
        """Which plugin registered each event type (type name: plugin name)."""
        return dict(self._owner)

    def _plugin_changes(self) -> tuple[list[PreparedEvent], int]:
        """The enable/disable events the log lacks, and the version of the plugins stream
        they were worked out from."""
        recorded: dict[str, tuple[str, bool]] = {}
        seen = 0
        for e in self.store.read(stream=builtin.PLUGINS_STREAM):
            seen = e.stream_version
            # only cladelog's own records count: an event that is not one (imported or
            # written by hand before import checked it; verify names it) is passed over
            name, version = (e.data.get("name"), e.data.get("version")) \
                if e.data.__class__ is dict else (None, None)
            if e.type in ("core.plugin_enabled", "core.plugin_disabled") \
                    and name.__class__ is str and version.__class__ is str:
                recorded[name] = (version, e.type == "core.plugin_enabled")
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
                recorded = self.store.append(changes, clock=self._clock(),
                                             expected_versions={builtin.PLUGINS_STREAM: seen})
                break
            except ConcurrencyError:
                continue  # another deployment recorded meanwhile: look again
        self._plugins_recorded = True  # only once they are in the log
        return recorded

    # -- writing ------------------------------------------------------------------------
    def _clock(self) -> Callable[[], str] | None:
        """The deployment's clock, its times checked by rule ``recorded_at`` (the default
        clock writes the documented form itself)."""
        return None if self.clock is None else _checked(self.clock)

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
        self, events: Sequence[NewEvent], *, correlation_id: str | None = None,
        first_index: int | None = None,
    ) -> list[PreparedEvent]:
        """Validate a batch completely; raise :class:`InputError` naming the first bad field.

        ``first_index``: the events are a chunk of a larger batch starting at that index
        (errors name ``events[first_index + i]``)."""
        out: list[PreparedEvent] = []
        add = out.append
        metas: dict[str, dict[str, Any]] = {}
        encoder = self.registry._encoder
        owner = self._owner
        new_event = tuple.__new__  # PreparedEvent's own __new__ is a Python function

        def where(i: int) -> str:
            if first_index is not None:
                return f"events[{first_index + i}]"
            return f"events[{i}]" if len(events) > 1 else "event"

        last_stream = None
        # a batch mostly shares one type: its encoder, plugin and meta are looked up once
        last_type: Any = _NO_TYPE
        encode: Any = None
        plugin = ""
        type_meta: dict[str, Any] = {}
        for i, e in enumerate(events):
            stream = e.stream
            if stream is not last_stream:  # a batch mostly shares one stream: check it once
                check_stream(stream, where(i))
                if stream == builtin.PLUGINS_STREAM:
                    check_reserved(stream, e.type, where(i), appending=True)
                last_stream = stream
            etype = e.type
            try:
                if etype is not last_type:
                    encode = encoder(etype)
                version, data, encoded = encode(e.data, e.schema_version)
            except InputError as exc:
                raise type(exc)(f"{where(i)}.{exc}") from None
            if etype is not last_type:
                plugin = owner[etype]
                known = metas.get(plugin)
                if known is None:
                    known = metas[plugin] = self._meta(plugin, correlation_id)
                type_meta = known
                last_type = etype
            if plugin == "core":
                check_reserved(stream, etype, where(i), appending=True)
            meta = type_meta
            given = e.meta
            if given or given.__class__ is not dict:  # meta, when given, is an object
                meta = _caller_meta(meta, given, where(i))
            add(new_event(PreparedEvent, (stream, etype, version, data, meta, encoded)))
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
            if idempotency_key is not None:
                check_idempotency_key(idempotency_key)
            prepared = self.prepare(events, correlation_id=correlation_id)
            if not self._plugins_recorded:
                # the enabled plugins go in first, as a batch of their own: the caller's
                # batch (and the digest its idempotency key stands for) must not depend on
                # whether this deployment had recorded them yet
                self.record_plugins()
            return self.store.append(prepared, expected_versions=expected_versions,
                                     idempotency_key=idempotency_key, clock=self._clock())

    def append_chunks(
        self,
        chunks: Iterable[tuple[Sequence[NewEvent], Mapping[str, int]]],
        *,
        idempotency_key: str | None = None,
        correlation_id: str | None = None,
    ) -> BatchResult:
        """Validate and append one batch that arrives in chunks (``(events,
        expected_versions)``, as :meth:`EventStore.append_chunks` takes them), atomically,
        holding one chunk at a time: the memory of a large append stays that of a chunk.
        A bad event in any chunk (or an error the iterator raises) appends nothing, not
        even the plugin enablement that goes in first."""
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        started = False

        def prepared() -> Iterator[tuple[list[PreparedEvent], Mapping[str, int]]]:
            nonlocal started
            started = True
            n = 0
            for events, expected in chunks:
                yield (self.prepare(events, correlation_id=correlation_id, first_index=n),
                       expected)
                n += len(events)

        from .errors import ConcurrencyError

        while True:
            lead, seen = ([], 0) if self._plugins_recorded else self._plugin_changes()
            try:
                # a chunk's objects form no cycle and die with it (reference counting
                # frees them): collections during the batch would find nothing to free
                with gc_paused():
                    result = self.store.append_chunks(
                        prepared(), idempotency_key=idempotency_key, clock=self._clock(),
                        lead=lead,
                        lead_expected={builtin.PLUGINS_STREAM: seen} if lead else None)
            except ConcurrencyError as exc:
                # another deployment recorded the plugins meanwhile: look again (the input
                # was not read yet: the enablement is checked first)
                if exc.stream == builtin.PLUGINS_STREAM and not started:
                    continue
                raise
            if not result.repeated:
                self._plugins_recorded = True
            return result

    # -- reading ------------------------------------------------------------------------
    def import_events(self, events: Iterable[RecordedEvent]) -> ImportResult:
        """Import exported events (see :meth:`EventStore.import_events`), after checking every
        event the store does not hold yet against the rules an append holds
        (:mod:`cladelog.core.rules`: reserved streams and types, stream names and versions,
        meta, ``recorded_at``, and the payload of types the enabled plugins register,
        upcast first): a history written elsewhere must not bring in what this deployment
        would refuse. Events of types no enabled plugin registers are otherwise taken as
        they are. Raises :class:`~cladelog.core.rules.RuleError` (an :class:`InputError`)
        naming the position and the rule; nothing is imported then. ``events`` is consumed
        once, as it comes (an iterator over a large export is never held in memory)."""
        head = self.store.head().position
        rules = self.rules()

        def checked() -> Iterator[RecordedEvent]:
            for event in events:
                new = event.position > head
                found = rules.violations(event, check=new)
                if found:
                    first = found[0]
                    raise RuleError(first.rule, f"event at position {event.position} "
                                                f"({event.type}): {first} (rule {first.rule}); "
                                                "nothing was imported", event.position)
                yield event

        return self.store.import_events(checked())

    def rules(self) -> LogRules:
        """A checker of this deployment's rules for a log read from position 1 (see
        :class:`~cladelog.core.rules.LogRules`)."""
        return LogRules(self.registry, self._owner)

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

    def verify(self, progress: Callable[[int, int], None] | None = None) -> VerifyReport:
        """The store's chain check, then every rule of :mod:`cladelog.core.rules` over the
        events that verified: the report lists every rule every event breaks
        (``violations``), and is not ok when there is one. ``progress(done, total)`` is
        called as the two walks go (``done`` counts both, ``total`` is twice the head)."""
        total = 2 * self.store.head().position if progress is not None else 0
        try:
            report = self.store.verify(
                progress=None if progress is None else (lambda n: progress(n, total)))
        except ChainError as exc:  # a row the store could not even read (a damaged file)
            before = exc.position - 1  # the rows before it were read and verified
            report = VerifyReport(False, before, Head(before, self.store.hash_at(before)
                                                      or GENESIS_HASH), exc.position,
                                  exc.reason)
        rules = self.rules()
        found: list[RuleError] = []
        for n, event in enumerate(self.store.read(1, report.head.position), 1):
            found.extend(rules.violations(event))
            if progress is not None and not n % 4096:
                progress(total // 2 + n, total)
        if progress is not None:
            progress(total, total)
        if not found:
            return report
        import attrs

        first = found[0]
        if report.ok:
            report = attrs.evolve(report, ok=False, position=first.position,
                                  reason=f"{first} (rule {first.rule})")
        return attrs.evolve(report, violations=tuple(
            (e.position, e.rule, str(e)) for e in found))

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
