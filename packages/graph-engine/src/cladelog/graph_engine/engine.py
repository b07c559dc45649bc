"""The reactive concept-graph engine (SPEC §1.1-§1.13), event-sourced through a record sink.

The engine never talks to a store. Every state change is handed to ``sink(type, data)`` as
plain JSON; :meth:`Engine.replay` folds such a record list back into an engine without calling
a single provider. Live runs and replays share the functions that change state:
``_apply_resolved`` (a resolved mutation), ``_apply_seed``, ``_cast_state`` and
``_uncast_state``; only the live path runs discovery, providers and callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import attrs
from cladelog.core.canonical import canonical_digest

from .errors import GraphEngineError, ReplayError, TemplateError
from .expr import compile_expression
from .jsvalue import MAX_SAFE as _SAFE
from .jsvalue import UNDEFINED, js_same, to_fact_value, truthy
from .objects import LINK_KEYS as _LINK_KEYS
from .objects import GraphObject, own_facts, present
from .paths import FactView, compile_path, resolve, satisfies_require
from .replay import LOAD_STRIDE as _LOAD_STRIDE
from .replay import replay_records
from .templates import resolve_template
from .tree import Concept, ConceptTree, ProviderRef, build_tree, deep_merge_replace, raw_node

__all__ = [
    "Engine",
    "EngineConfig",
    "Provider",
    "ProviderCall",
    "RecordSink",
    "ReplayPort",
    "SettleReport",
]

RecordSink = Callable[[str, dict[str, Any]], None]
_intern: Final = sys.intern
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
_NOT_FAST: Final = frozenset({"_id", "_parent", "_incoming", "_outgoing"})  # need the resolver


_CONFIG_FIELDS: Final = {
    "applyCap": "apply_cap",
    "maxAppliesPerSettle": "max_applies_per_settle",
    "maxCreatedPerSettle": "max_created_per_settle",
    "maxRevisions": "max_revisions",
}


@attrs.frozen
class EngineConfig:
    """Engine limits.

    ``apply_cap`` is the per-(object, concept) apply cap between settles (SPEC §1.11);
    ``max_applies_per_settle`` and ``max_created_per_settle`` bound one settle (Q19);
    ``max_revisions`` bounds the settle snapshots kept for :meth:`Engine.rollback_to` and
    :meth:`Engine.diff_revisions` (the oldest go first).
    """

    apply_cap: int = 1000
    max_applies_per_settle: int = 2_000_000
    max_created_per_settle: int = 100_000
    max_revisions: int = 64

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineConfig:
        """Build from ``{"applyCap", "maxAppliesPerSettle", "maxCreatedPerSettle",
        "maxRevisions"}``; any other key is an error (a misspelt limit must not be
        ignored)."""
        fields = _CONFIG_FIELDS
        kwargs: dict[str, int] = {}
        for key, value in data.items():
            if key not in fields:
                raise GraphEngineError(f"config.{key}: unknown key (allowed: "
                                       f"{', '.join(fields)})")
            if type(value) is not int or value < 1:
                raise GraphEngineError(f"config.{key}: must be a positive integer, got {value!r}")
            kwargs[fields[key]] = value
        return cls(**kwargs)

    def to_json(self) -> dict[str, int]:
        """The JSON form stored in the ``tree_loaded`` record."""
        return {
            "applyCap": self.apply_cap,
            "maxAppliesPerSettle": self.max_applies_per_settle,
            "maxCreatedPerSettle": self.max_created_per_settle,
            "maxRevisions": self.max_revisions,
        }


@attrs.frozen
class SettleReport:
    """What one settle did. ``capped`` names the per-settle cap that stopped it, if any."""

    revision: int
    passes: int
    applies: int
    created: int
    capped: str | None
    digest: str


class ProviderCall(NamedTuple):
    """What a provider receives: the engine, the concept schema, the scope object and args.

    ``facts`` is a read-only view of the scope object's facts (do not mutate nested values).
    ``role`` is ``provider``, ``onCast`` or ``cleaner``. Immutable (a named tuple: one is
    built per apply, and this is the cheapest immutable record Python offers).
    """

    engine: Engine
    concept: Mapping[str, Any]
    concept_id: str
    object_id: str
    facts: Mapping[str, Any]
    args: Any
    apply_id: str
    role: str

    def get_ref(self, path: str) -> Any:
        """Resolve a reference path from the scope object (SPEC §1.3)."""
        return self.engine.get_ref(path, self.object_id)

    def evaluate(self, expression: str) -> Any:
        """Evaluate an expression (SPEC §1.5) on the scope object."""
        return self.engine.evaluate(expression, self.object_id)


Provider = Callable[[ProviderCall], Any]
_new_call = tuple.__new__  # ProviderCall's own __new__ is a Python function


@attrs.define
class _Async:
    object_id: str
    concept_id: str
    ref: ProviderRef
    role: str
    apply_id: str
    was_mapped: bool
    awaitable: Awaitable[Any]


class Engine:
    """A concept graph: objects, facts, a concept tree and the stabilization loop.

    ``tree`` is a raw root container (see :mod:`.tree` for loaders). ``providers`` maps
    ``"Ns::fn"`` to a callable taking a :class:`ProviderCall` and returning a template, None,
    or an awaitable of either. ``seed`` is ``{"nodes", "segments", "freeNodes"}``. Nothing runs
    until :meth:`settle` (or :meth:`asettle`) is called.
    """

    def __init__(
        self,
        tree: Mapping[str, Any],
        *,
        providers: Mapping[str, Provider] | None = None,
        seed: Mapping[str, Any] | None = None,
        config: EngineConfig | None = None,
        sink: RecordSink | None = None,
    ) -> None:
        if not isinstance(tree, Mapping):
            raise GraphEngineError("tree: must be a JSON object")
        self._setup(dict(providers or {}), config or EngineConfig(), sink)
        raw = _json_copy(dict(tree), "tree")
        self._tree = build_tree(raw, self._providers)
        self._emit("tree_loaded", {"tree": self._tree.export(), "config": self._config.to_json()})
        if seed is not None:
            # mounting a big seed allocates objects like a settle does: the cyclic collector
            # would walk the growing graph again and again for no garbage (see _gc_paused)
            with _gc_paused():
                data = _normalize_seed(seed)
                self._emit("seeded", data)
                mounted = self._apply_seed(data)
                self._mount(mounted)

    # ------------------------------------------------------------------ construction

    def _setup(self, providers: dict[str, Provider], config: EngineConfig,
               sink: RecordSink | None) -> None:
        self._providers = providers
        self._config = config
        self._sink = sink
        self._objects: dict[str, GraphObject] = {}
        self._index: dict[str, dict[str, None]] = {}
        self._unstable: dict[str, None] = {}
        self._counted: list[GraphObject] = []  # the objects whose apply counters are in use
        self._cast_queue: deque[tuple[str, str, bool]] = deque()
        self._mutations: deque[tuple[Any, str | None, dict[str, Any]]] = deque()
        self._pending: list[_Async] = []
        # (object id, concept id) -> async provider applies in flight; and those of them
        # on which an ensure callback fired meanwhile (Q8, see _complete_async)
        self._inflight: dict[tuple[str, str], int] = {}
        self._fired_inflight: set[tuple[str, str]] = set()
        self._deferred: list[Callable[[], None]] = []
        self._rev = 0
        self._apply_seq = 0
        self._in_mutation = False
        self._in_pass = False
        self._write_no = 0
        self._cur_rev = 0
        self._replaying = False
        self._effects: dict[tuple[int, int], list[tuple[str, Mapping[str, Any]]]] = {}
        self._loads = 0
        self._views: dict[str, tuple[Concept, Mapping[str, Any]]] = {}
        self._shared: dict[Any, Any] = {}  # watch entries and lists equal for all objects
        self._watching: tuple[ConceptTree, frozenset[str]] | None = None
        self._wakers: dict[str, tuple[str, ...]] = {}  # of the tree in _watching
        self._local_require: dict[str, tuple[str, ...]] = {}  # likewise
        self._snapshots: dict[int, _Snapshot] = {}
        self._rollback_to: int | None = None
        self._on_first_settle: Callable[[], None] | None = None
        self._destroyed = False
        self._dirty = False
        self._undiscovered = False  # see _catch_up
        self._settle_applies = 0
        self._settle_created = 0
        self._capped: str | None = None
        self.provider_calls: dict[str, int] = {}
        self.warnings: list[str] = []
        self.last_settle: SettleReport | None = None
        # the data of the last ``run_failed`` record (a scenario step failed), or None
        self.run_failed: dict[str, Any] | None = None

    def _emit(self, kind: str, data: dict[str, Any]) -> None:
        if self._sink is not None and not self._replaying:
            self._sink(kind, data)

    def _record_failure(self, data: dict[str, Any]) -> None:
        """Record that the run driving this engine failed (``run_failed``: a scenario step
        was refused); the engine's state is unchanged and stays usable."""
        self.run_failed = data
        self._emit("run_failed", data)

    def _lookup(self, oid: str) -> FactView | None:
        obj = self._objects.get(oid)
        return None if obj is None else obj.facts

    def _kind_of(self, oid: str) -> str | None:
        obj = self._objects.get(oid)
        return None if obj is None else obj.kind

    def _at(self) -> list[int] | None:
        return [self._cur_rev, self._write_no] if self._in_mutation else None

    # ------------------------------------------------------------------ seed and mount

    def _apply_seed(self, data: Mapping[str, Any]) -> list[GraphObject]:
        mounted: list[GraphObject] = []
        for group, kind in (("freeNodes", "free"), ("nodes", "node"), ("segments", "segment")):
            for facts in data[group]:
                oid = facts["_id"]
                obj = self._objects.get(oid)
                if obj is None:
                    obj = self._create(oid, kind)
                if kind == "node":
                    self._write(obj, "Node", True)
                elif kind == "segment":
                    self._write(obj, "Segment", True)
                for key, value in facts.items():
                    if key != "_id":
                        self._write(obj, key, value)  # Q9: every seed fact uses the write path
                mounted.append(obj)
        return mounted

    def _mount(self, objects: Iterable[GraphObject]) -> None:
        roots = list(self._tree.roots)
        for obj in objects:
            if not obj.open and not obj.mapped:
                obj.open = list(roots)
            self._unstable[obj.id] = None
            self._discover(obj)

    def _create(self, oid: str, kind: str) -> GraphObject:
        obj = GraphObject(oid, kind)
        self._objects[oid] = obj
        self._index.setdefault("_id", {})[oid] = None
        if not self._replaying:
            self._settle_created += 1
            obj.open = list(self._tree.roots)
        return obj

    # ------------------------------------------------------------------ the write path

    def _write(self, obj: GraphObject, key: str, value: Any) -> None:
        """``set(key, value)`` of SPEC §1.1, with identical writes as no-ops (§0-16)."""
        self._write_no += 1
        facts = obj.facts
        old = facts.get(key, UNDEFINED)
        if type(value) is dict and "__push" in value:  # is_push, inlined
            new = (list(old) if type(old) is list else []) + [value["__push"]]
        else:
            new = value
        if old is not UNDEFINED and (old is new or js_same(old, new)):
            self._after_write(obj, key, new, changed=False)
            return
        if old is UNDEFINED and type(key) is str:
            # one string per key for all objects, not one per write (keys built at run
            # time, e.g. by providers, are otherwise kept once per object)
            key = _intern(key)
        if obj.shared:  # a settle snapshot holds these facts: change a copy (own_facts)
            facts = own_facts(obj)
        facts[key] = new
        self._dirty = True
        quiet = obj.quiet
        if quiet:  # the concepts waiting on this key (or flagged by it) are looked at again
            for woken in self._wakers.get(key, ()):
                quiet.pop(woken, None)
        if old is UNDEFINED:
            bucket = self._index.get(key)
            if bucket is None:
                bucket = self._index[key] = {}
            bucket[obj.id] = None
        if obj.kind == "segment" and key in _LINK_KEYS:
            self._relink(obj, key, old, new)
        if self._replaying:
            self._after_write(obj, key, new, changed=True)
            return
        mapped = obj.mapped
        if new is None and old is not None and key in mapped:
            concept = self._tree.concepts.get(mapped[key])
            if concept is not None:
                self._uncast_concept(obj, concept, permanent=False)
            else:
                del mapped[key]
        applying = obj.applying  # _after_write, inlined on the live path
        if applying is not None:
            cid = applying.get(key)
            if cid is not None and key not in mapped and present(new):
                applied = self._tree.concepts.get(cid)
                if applied is not None:
                    self._mark_cast(obj, applied)  # Q8: cast when the flag is written
        callbacks = obj.callbacks
        if callbacks is not None:
            cbs = callbacks.get(key)
            if cbs:  # one entry, or a dict of them (see _install_watches)
                if type(cbs) is tuple:
                    watcher, wcid, kind = cbs
                    self._fire(obj.id if watcher is None else watcher, wcid, kind)
                else:
                    for watcher, wcid, kind in list(cbs):
                        self._fire(obj.id if watcher is None else watcher, wcid, kind)
        followers = obj.followers
        if followers is not None:
            fids = followers.get(key)
            if fids:
                for fid in fids:
                    self._unstable[fid] = None

    def _after_write(self, obj: GraphObject, key: str, new: Any, changed: bool) -> None:
        if self._replaying:
            if not self._in_mutation:
                return
            effects = self._effects.pop(
                (self._loads * _LOAD_STRIDE + self._cur_rev, self._write_no), None)
            if effects:
                for kind, data in effects:
                    self._replay_effect(kind, data)
            return
        applying = obj.applying
        cid = applying.get(key) if applying is not None else None
        if cid is not None and key not in obj.mapped and present(new):
            concept = self._tree.concepts.get(cid)
            if concept is not None:
                self._mark_cast(obj, concept)  # Q8: cast when the flag is written

    def _relink(self, seg: GraphObject, key: str, old: Any, new: Any) -> None:
        attr = "outgoing" if key == "originNode" else "incoming"
        if type(old) is str and old in self._objects:
            links: list[str] | None = getattr(self._objects[old], attr)
            if links is not None and seg.id in links:
                links.remove(seg.id)
        if new is None:
            return
        node = self._objects.get(new) if type(new) is str else None
        if node is None or node.kind != "node":
            self.warnings.append(f"segment {seg.id}.{key}: node {new!r} does not exist; no link")
            return
        links = getattr(node, attr)
        if links is None:
            setattr(node, attr, [seg.id])
        elif seg.id not in links:
            links.append(seg.id)

    def _silent_delete(self, obj: GraphObject, key: str) -> None:
        if key in obj.facts:
            self._dirty = True
            del own_facts(obj)[key]
            quiet = obj.quiet
            if quiet:
                for woken in self._wakers.get(key, ()):
                    quiet.pop(woken, None)
            index = self._index.get(key)
            if index is not None:
                index.pop(obj.id, None)

    # ------------------------------------------------------------------ mutations

    def _push_mutation(self, template: Any, target: str | None, cause: dict[str, Any]) -> None:
        if not self._in_mutation and not self._mutations:
            try:  # idle: apply at once, then whatever it queued
                self._resolve_and_apply(template, target, cause)
            except TemplateError as exc:
                if cause.get("kind") == "host":
                    self._mutations.clear()
                    raise
                self._template_failed(cause, exc)
        else:
            self._mutations.append((template, target, cause))
            if self._in_mutation:
                return  # serialized: applied right after the current one
        while self._mutations:
            tpl, tgt, cse = self._mutations.popleft()
            try:
                self._resolve_and_apply(tpl, tgt, cse)
            except TemplateError as exc:
                if cse.get("kind") == "host":
                    self._mutations.clear()
                    raise
                self._template_failed(cse, exc)

    def _resolve_and_apply(self, template: Any, target: str | None,
                           cause: dict[str, Any]) -> None:
        rev = self._rev + 1
        if type(template) is dict and "$$_id" in template and len(template) <= 3:
            items = _fast_items(template, self._objects)
        else:
            items = None
        if items is None:
            items = resolve_template(template, target, rev, self._lookup, self._kind_of,
                                     warnings=self.warnings)
        record = {"rev": rev, "target": target, "items": items, "cause": cause}
        self._rev = rev
        self._emit("mutation_applied", record)
        self._apply_resolved(record)

    def _apply_resolved(self, record: Mapping[str, Any]) -> None:
        """Apply one resolved mutation (live and replay share this function)."""
        rev = record["rev"]
        if rev > self._rev:
            self._rev = rev
        self._in_mutation = True
        self._cur_rev = rev
        self._write_no = 0
        created_segments: list[GraphObject] = []
        touched: list[str] = []
        try:
            for item in record["items"]:
                oid = item["id"]
                create = item["create"]
                obj = self._objects.get(oid)
                if obj is None:
                    obj = self._create(oid, create or "free")
                    if create == "segment":
                        created_segments.append(obj)
                (own_facts(obj) if obj.shared else obj.facts)["_rev"] = rev
                for key, value in item["set"]:
                    self._write(obj, key, value)
                touched.append(oid)
            if not self._replaying:
                for seg in created_segments:
                    self._discover(seg)
        finally:
            self._in_mutation = False
        if not self._replaying:
            for oid in touched:
                self._unstable[oid] = None
            if self._settle_created > self._config.max_created_per_settle:
                self._capped = "max_created_per_settle"

    def _template_failed(self, cause: dict[str, Any], exc: Exception) -> None:
        oid = cause.get("object")
        cid = cause.get("concept")
        concept = self._tree.concepts.get(cid) if type(cid) is str else None
        if type(oid) is str and concept is not None:
            self._provider_failed(oid, concept, str(cause.get("provider", "")),
                                  str(cause.get("role", "provider")),
                                  str(cause.get("apply", "")), exc)

    # ------------------------------------------------------------------ discovery

    def _applicable(self, obj: GraphObject, c: Concept) -> bool:
        if not c.auto_cast:
            return False
        facts = obj.facts
        div = facts.get("divergent")
        if type(div) is list and div:
            label = c.name or c.id
            for rec in div:
                if type(rec) is dict and rec.get("concept") == label:
                    return False
        for path in c.require:
            if path.simple:  # satisfies_require, inlined
                value = facts.get(path.text, UNDEFINED)
                if value is None or value is UNDEFINED or (type(value) is float
                                                           and value != value):
                    return False
                continue
            reads: list[tuple[str, str]] = []
            value = resolve(path, obj.id, self._lookup, reads)
            for rid, rkey in reads:
                if rid != obj.id:
                    robj = self._objects[rid]
                    followers = robj.followers
                    if followers is None:
                        followers = robj.followers = {}
                    followers.setdefault(rkey, {})[obj.id] = None
            if not satisfies_require(value):
                return False
        gate = c.gate
        if gate.empty:
            return True
        oid = obj.id
        lookup = self._lookup

        def read(path: str) -> Any:
            cp = compile_path(path)
            if cp.simple:  # what resolve returns for a local key of an existing object
                return facts.get(path, UNDEFINED)
            return resolve(cp, oid, lookup)

        return gate.test(read)

    def _discover(self, obj: GraphObject) -> list[Concept]:
        tree = self._tree
        concepts = tree.concepts
        watching = self._watching
        if watching is None or watching[0] is not tree:
            watching = self._watching = (tree, frozenset(
                cid for cid, c in concepts.items() if c.watches))
            self._wakers = _wakers(tree)
            self._local_require = {cid: _local_require(c) for cid, c in concepts.items()}
        watch_ids = watching[1]
        local_require = self._local_require
        facts = obj.facts
        waiting: Any = obj.waiting  # a dict, or _EMPTY until a wait is stored
        if waiting is None:
            waiting = _EMPTY  # read only until a wait is stored (then the object's own)
        quiet: Any = obj.quiet
        if obj.synced is not tree:  # quiet and waiting were found on another tree (and
            if quiet:                # _wakers too): any tree edit rebuilds the concepts
                quiet.clear()
            if waiting is not _EMPTY:
                waiting.clear()
            obj.synced = tree
        if quiet is None:
            quiet = _EMPTY  # read only here: _make_quiet creates the object's own
        stack = list(obj.open)
        new_open: list[str] = []
        tests: list[tuple[str, Concept]] = []  # open concepts to test, in new_open order
        while stack:
            cid = stack.pop()
            if cid in quiet:  # still waiting, as the full examination below would find
                new_open.append(cid)
                continue
            c = concepts.get(cid)
            if c is None:
                continue
            if cid in watch_ids and (obj.watches is None or cid not in obj.watches):
                self._install_watches(obj, c)
            name = c.name
            if name is not None:
                flag = facts.get(name)
                if flag is not None and (flag is True or present(flag)):
                    if obj.mapped.get(name) != cid:
                        self._mark_cast(obj, c)
                    if c.auto_recast:
                        self._cast_queue.append((obj.id, cid, True))
                    if not c.children:
                        continue
                    if c.auto_cast and not self._applicable(obj, c):
                        continue
                    children = c.children
                    if c.enum:
                        listed = set(flag) if type(flag) is list else set()
                        children = tuple(ch for ch in children if ch in listed)
                    stack.extend(children)
                    continue
            new_open.append(cid)
            # the waiting test has no side effect, so it is made here rather than in a
            # second walk of new_open; the applicability tests still run after the walk
            wkey = waiting.get(cid)  # of this tree's concept (see synced above)
            if wkey is not None:
                value = facts.get(wkey, UNDEFINED)
                if value is None or value is UNDEFINED or (type(value) is float
                                                           and value != value):
                    _make_quiet(obj, cid, name, wkey)
                    quiet = obj.quiet or quiet
                    continue  # still waiting for the same local fact: cannot apply
            tests.append((cid, c))
        obj.open = new_open
        found: list[Concept] = []
        if tests and waiting is _EMPTY:
            waiting = obj.waiting = {}
        for cid, c in tests:
            waiting.pop(cid, None)
            # the leading local require keys first: a missing one is what the full test
            # would stop at (before any side effect) and what _first_missing would return
            for key in local_require[cid]:
                value = facts.get(key, UNDEFINED)
                if value is None or value is UNDEFINED or (type(value) is float
                                                           and value != value):
                    waiting[cid] = key
                    _make_quiet(obj, cid, c.name, key)
                    break
            else:
                if self._applicable(obj, c):
                    found.append(c)
                    continue
                missing = _first_missing(c, facts)
                if missing is not None:
                    waiting[cid] = missing
                    _make_quiet(obj, cid, c.name, missing)
        return found

    def _install_watches(self, obj: GraphObject, c: Concept) -> None:
        # a watch or callback entry names the watcher (or watched object) None when it is
        # the object itself: such entries, and the watch lists made only of them, are the
        # same for every object and are shared (see _shared)
        oid = obj.id
        shared = self._shared
        keys: list[tuple[str | None, str, str]] = []
        for kind, paths in (("ensure", c.ensure), ("follow", tuple(p.text for p in c.follow))):
            for path in paths:
                reads: list[tuple[str, str]]
                if compile_path(path).simple:
                    reads = [(oid, path)]  # what resolve reports for a local key
                else:
                    reads = []
                    resolve(path, oid, self._lookup, reads)
                    if not reads and ":" not in path and "." not in path and "$" not in path:
                        reads.append((oid, path))
                for rid, rkey in reads:
                    local = rid == oid
                    entry = (None if local else rid, rkey, kind)
                    if entry in keys:
                        continue
                    keys.append(entry)
                    # rid is an existing object: resolve only reports reads of existing ones
                    robj = obj if local else self._objects[rid]
                    cb = (None if local else oid, c.id, kind)
                    if local:
                        cb = shared.setdefault(cb, cb)
                    callbacks = robj.callbacks
                    if callbacks is None:
                        robj.callbacks = {rkey: cb}
                        continue
                    cbs = callbacks.get(rkey)
                    if cbs is None:
                        callbacks[rkey] = cb  # one callback: the entry itself
                    elif type(cbs) is tuple:
                        if cbs != cb:
                            callbacks[rkey] = {cbs: None, cb: None}
                    else:
                        cbs[cb] = None
        watched = tuple(keys)
        if all(entry[0] is None for entry in watched):
            watched = shared.setdefault(watched, watched)
        if obj.watches is None:
            obj.watches = {}
        obj.watches[c.id] = watched

    def _remove_watches(self, obj: GraphObject, cid: str) -> None:
        if obj.quiet:
            obj.quiet.pop(cid, None)  # discovery must install them again
        keys = obj.watches.pop(cid, None) if obj.watches is not None else None
        if not keys:
            return
        objects = self._objects
        oid = obj.id
        for rid, rkey, kind in keys:
            robj = obj if rid is None else objects.get(rid)
            callbacks = None if robj is None else robj.callbacks
            cbs = None if callbacks is None else callbacks.get(rkey)
            if cbs is None:
                continue
            cb = (None if rid is None else oid, cid, kind)
            if type(cbs) is tuple:
                if cbs == cb:
                    del callbacks[rkey]  # type: ignore[union-attr]
            else:
                cbs.pop(cb, None)

    def _fire(self, watcher: str, cid: str, kind: str) -> None:
        obj = self._objects.get(watcher)
        c = self._tree.concepts.get(cid)
        if obj is None or c is None:
            return
        if kind == "ensure" and self._inflight:
            key = (watcher, cid)
            if key in self._inflight:  # re-tested when that apply lands (_complete_async)
                self._fired_inflight.add(key)
        mapped = c.name is not None and obj.mapped.get(c.name) == cid
        applicable = self._applicable(obj, c)
        if kind == "follow":
            if applicable:
                self._cast_queue.append((watcher, cid, True))
                self._unstable[watcher] = None
        elif applicable and not mapped:
            # re-checked when drained: a discovery apply may have cast it meanwhile
            self._cast_queue.append((watcher, cid, False))
            self._unstable[watcher] = None
        elif not applicable and mapped:
            self._uncast_concept(obj, c, permanent=False)

    # ------------------------------------------------------------------ cast state

    def _mark_cast(self, obj: GraphObject, c: Concept) -> None:
        obj.mapped[c.name or c.id] = c.id  # _cast_state, inlined on this hot path
        if self._sink is not None and not self._replaying:  # no record built for nobody
            self._sink("cast", {"object": obj.id, "concept": c.id,  # _at(), inlined
                                "at": [self._cur_rev, self._write_no] if self._in_mutation
                                else None})

    def _cast_state(self, obj: GraphObject, name: str, cid: str) -> None:
        obj.mapped[name] = cid

    def _uncast_state(self, obj: GraphObject, c: Concept, permanent: bool) -> bool:
        self._remove_watches(obj, c.id)
        name = c.name
        was = name is not None and name in obj.mapped
        if was:
            assert name is not None
            self._silent_delete(obj, name)
            drop = set(self._tree.subtree(c.id))  # Q7: only the concept and its subtree
            obj.open = [x for x in obj.open if x not in drop]
            if not permanent:
                obj.open.append(c.id)
            del obj.mapped[name]
        elif permanent:
            drop = set(self._tree.subtree(c.id))
            obj.open = [x for x in obj.open if x not in drop]
        return was

    def _uncast_concept(self, obj: GraphObject, c: Concept, permanent: bool) -> None:
        was = self._uncast_state(obj, c, permanent)
        self._emit("uncast", {"object": obj.id, "concept": c.id, "permanent": permanent,
                              "at": self._at()})
        for child_id in c.children:
            child = self._tree.concepts.get(child_id)
            if child is not None:
                self._uncast_concept(obj, child, permanent=True)
        if was and c.cleaner is not None:
            self._call_provider(obj, c, c.cleaner, "cleaner", self._next_apply_id(), False)

    def _replay_effect(self, kind: str, data: Mapping[str, Any]) -> None:
        obj = self._objects.get(data["object"])
        c = self._tree.concepts.get(data["concept"])
        if obj is None or c is None:
            raise ReplayError(f"{kind}: unknown object or concept in {data!r}")
        if kind == "cast":
            self._cast_state(obj, c.name or c.id, c.id)
        else:
            self._uncast_state(obj, c, bool(data.get("permanent")))

    # ------------------------------------------------------------------ applying concepts

    def _next_apply_id(self) -> str:
        self._apply_seq += 1
        return f"a{self._apply_seq}"

    def _apply(self, obj: GraphObject, c: Concept) -> None:
        label = c.name or c.id
        counters = obj.counters
        if counters is None:
            counters = obj.counters = {}
            self._counted.append(obj)  # dropped at the end of the settle
        count = counters.get(label, 0) + 1
        counters[label] = count
        cap = self._config.apply_cap
        if count > cap:
            div = obj.facts.get("divergent")
            if not (type(div) is list and any(
                type(d) is dict and d.get("concept") == label for d in div
            )):
                record = {"concept": label, "applies": count, "cap": cap, "reason": "apply-cap"}
                self._push_mutation({"$$_id": obj.id, "divergent": {"__push": record}}, obj.id,
                                    {"kind": "cap", "object": obj.id, "concept": c.id})
            return
        if self._settle_applies >= self._config.max_applies_per_settle:
            self._capped = "max_applies_per_settle"
            return
        self._settle_applies += 1
        self._apply_seq += 1  # _next_apply_id, inlined on this hot path
        apply_id = f"a{self._apply_seq}"
        was_mapped = c.name is not None and obj.mapped.get(c.name) == c.id
        if c.name is not None:
            applying = obj.applying
            if applying is None:
                obj.applying = {c.name: c.id}
            else:
                applying[c.name] = c.id
        if c.provider is not None:
            self._call_provider(obj, c, c.provider, "provider", apply_id, was_mapped)
            return
        if c.name is not None:
            if c.enum:
                value: Any = list(c.children)
            else:
                dv = c.default_value
                value = dv if dv is not UNDEFINED and truthy(dv) else True  # Q5
            self._push_mutation(
                {"$$_id": obj.id, c.name: _json_copy(value, "defaultValue")}, obj.id,
                {"kind": "default", "object": obj.id, "concept": c.id, "apply": apply_id},
            )
        self._finish_apply(obj.id, c, apply_id, was_mapped)

    def _call_provider(self, obj: GraphObject, c: Concept, ref: ProviderRef, role: str,
                       apply_id: str, was_mapped: bool) -> None:
        fn = self._providers.get(ref.name)
        if fn is None:
            self._provider_failed(obj.id, c, ref.name, role, apply_id,
                                  LookupError(f"provider {ref.name!r} is not registered"))
            if role == "provider":
                _unapplying(obj, c.name or "")
            return
        self.provider_calls[ref.name] = self.provider_calls.get(ref.name, 0) + 1
        view = self._views.get(c.id)
        if view is None or view[0] is not c:
            view = self._views[c.id] = (c, MappingProxyType(dict(c.schema)))
        # the call's view of the facts follows later writes (an async provider may read it
        # after other mutations): so it is a view of facts the object owns, not of those a
        # settle snapshot holds, which the next write would leave behind
        facts = own_facts(obj) if obj.shared else obj.facts
        call = _new_call(ProviderCall, (self, view[1], c.id, obj.id, MappingProxyType(facts),
                                        ref.args_value(), apply_id, role))
        try:
            result = fn(call)
        except Exception as exc:
            self._provider_failed(obj.id, c, ref.name, role, apply_id, exc)
            if role == "provider":
                _unapplying(obj, c.name or "")
            return
        tp = type(result)
        if tp is dict or tp is list:  # a template at once, the common case: _provider_done
            oid = obj.id
            self._push_mutation(result, oid, {"kind": role, "object": oid, "concept": c.id,
                                              "apply": apply_id, "provider": ref.name})
            if role == "provider":
                self._finish_apply(oid, c, apply_id, was_mapped)
            return
        if result is not None and inspect.isawaitable(result):
            self._pending.append(_Async(obj.id, c.id, ref, role, apply_id, was_mapped, result))
            if role == "provider":
                key = (obj.id, c.id)
                self._inflight[key] = self._inflight.get(key, 0) + 1
            return
        self._provider_done(obj.id, c, ref, role, apply_id, was_mapped, result)

    def _provider_done(self, oid: str, c: Concept, ref: ProviderRef, role: str, apply_id: str,
                       was_mapped: bool, result: Any) -> None:
        if isinstance(result, BaseException):
            self._provider_failed(oid, c, ref.name, role, apply_id, result)
            if role == "provider":
                self._stop_applying(oid, c)
            return
        if result is not None and result is not False:
            if type(result) not in (dict, list):
                self._provider_failed(oid, c, ref.name, role, apply_id, TypeError(
                    f"returned {type(result).__name__}, not a template"))
                if role == "provider":
                    self._stop_applying(oid, c)
                return
            self._push_mutation(result, oid, {"kind": role, "object": oid, "concept": c.id,
                                              "apply": apply_id, "provider": ref.name})
        if role == "provider":
            self._finish_apply(oid, c, apply_id, was_mapped)

    def _stop_applying(self, oid: str, c: Concept) -> None:
        obj = self._objects.get(oid)
        if obj is not None:
            _unapplying(obj, c.name or "")

    def _finish_apply(self, oid: str, c: Concept, apply_id: str, was_mapped: bool) -> None:
        obj = self._objects.get(oid)
        if obj is None:
            return
        if c.name is not None:
            _unapplying(obj, c.name)
        if c.apply_mutations is not None:
            self._push_mutation(_json_copy(c.apply_mutations, "applyMutations"), oid,
                                {"kind": "applyMutations", "object": oid, "concept": c.id,
                                 "apply": apply_id})
        now_mapped = c.name is not None and obj.mapped.get(c.name) == c.id
        if not was_mapped and now_mapped and c.on_cast is not None:
            self._call_provider(obj, c, c.on_cast, "onCast", apply_id, True)

    def _provider_failed(self, oid: str, c: Concept, provider: str, role: str, apply_id: str,
                         exc: BaseException) -> None:
        message = _describe_exception(exc)
        if len(message) > 500:
            message = message[:497] + "..."
        self._emit("provider_error", {"object": oid, "concept": c.id, "provider": provider,
                                      "role": role, "apply": apply_id, "message": message})
        record = {"concept": c.name or c.id, "reason": "provider-error", "role": role,
                  "provider": provider, "message": message}
        if oid in self._objects:
            self._push_mutation({"$$_id": oid, "divergent": {"__push": record}}, oid,
                                {"kind": "error", "object": oid, "concept": c.id,
                                 "apply": apply_id})

    def _landed(self, entry: _Async) -> bool:
        """Drop a finished async apply from the in-flight table; True when an ensure
        callback of its concept fired on its object while it was in flight."""
        if entry.role != "provider":
            return False
        key = (entry.object_id, entry.concept_id)
        left = self._inflight.get(key, 0) - 1
        fired = key in self._fired_inflight
        if left > 0:
            self._inflight[key] = left
        else:
            self._inflight.pop(key, None)
            self._fired_inflight.discard(key)
        return fired

    def _complete_async(self, entry: _Async, result: Any) -> None:
        # Q8: the concept is cast when the flag is written. While this apply was in flight,
        # an ensure callback could only see the concept un-cast: a cast it queued was
        # skipped (see _run), and a retraction it would have made is made now, once the
        # apply has landed, exactly as it would have been made after a synchronous apply.
        fired = self._landed(entry)
        c = self._tree.concepts.get(entry.concept_id)
        if c is None:
            return
        self._provider_done(entry.object_id, c, entry.ref, entry.role, entry.apply_id,
                            entry.was_mapped, result)
        if fired:
            obj = self._objects.get(entry.object_id)
            if (obj is not None and c.name is not None and obj.mapped.get(c.name) == c.id
                    and not self._applicable(obj, c)):
                self._uncast_concept(obj, c, permanent=False)
                self._unstable[obj.id] = None

    # ------------------------------------------------------------------ stabilization

    def _run(self) -> Iterator[list[_Async]]:
        passes = 0
        self._settle_applies = 0
        self._settle_created = 0
        self._capped = None
        while self._capped is None:
            if not self._unstable and not self._cast_queue:
                if self._rollback_to is not None:
                    to_rev, self._rollback_to = self._rollback_to, None
                    self._restore(to_rev)
                    continue
                if self._deferred:
                    ops, self._deferred = self._deferred, []
                    for op in ops:
                        op()
                    continue
                break
            passes += 1
            tasks: list[tuple[GraphObject, Concept]] = []
            for oid in list(self._unstable):
                obj = self._objects.get(oid)
                if obj is None:
                    self._unstable.pop(oid, None)
                    continue
                found = self._discover(obj)
                if not found:
                    self._unstable.pop(oid, None)
                else:
                    tasks.extend((obj, c) for c in found)
            self._in_pass = True
            try:
                for obj, c in tasks:
                    if self._capped is not None:
                        break
                    self._apply(obj, c)
                while self._capped is None:
                    while self._cast_queue and self._capped is None:
                        oid, cid, force = self._cast_queue.popleft()
                        target = self._objects.get(oid)
                        concept = self._tree.concepts.get(cid)
                        if target is None or concept is None:
                            continue
                        if not force and concept.name is not None and (
                            target.mapped.get(concept.name) == cid
                        ):
                            continue
                        if not force and (oid, cid) in self._inflight:
                            continue  # Q8: that apply is in flight (see _complete_async)
                        self._apply(target, concept)
                    if self._pending:
                        batch, self._pending = self._pending, []
                        yield batch
                        continue
                    break
            finally:
                self._in_pass = False
        for obj in self._counted:
            obj.counters = None
        self._counted.clear()
        report = SettleReport(self._rev, passes, self._settle_applies, self._settle_created,
                              self._capped, self.digest())
        self.last_settle = report
        self._emit("settled", {
            "revision": report.revision, "passes": passes, "applies": report.applies,
            "created": report.created, "capped": report.capped, "digest": report.digest,
            "castDigest": self.cast_digest(),
        })
        self._take_snapshot()
        self._dirty = False
        callback, self._on_first_settle = self._on_first_settle, None
        if callback is not None:
            callback()

    async def _drain(self, batch: list[_Async]) -> None:
        tasks = [asyncio.ensure_future(entry.awaitable) for entry in batch]
        order = {id(task): i for i, task in enumerate(tasks)}
        waiting: set[asyncio.Future[Any]] = set(tasks)
        while waiting:
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: order[id(t)]):
                exc = task.exception()
                self._complete_async(batch[order[id(task)]], exc if exc is not None
                                     else task.result())

    def settle(self) -> SettleReport:
        """Run passes until nothing is unstable (SPEC §1.11); async providers use asyncio.

        Call :meth:`asettle` instead from inside a running event loop.
        """
        if self._destroyed:
            raise GraphEngineError("settle: this fork was merged into its parent and destroyed")
        self._catch_up()
        with _gc_paused():
            self._settle_sync()
        assert self.last_settle is not None
        return self.last_settle

    def _settle_sync(self) -> None:
        for batch in self._run():
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self._drain(batch))
            else:
                for entry in batch:
                    self._landed(entry)
                    if inspect.iscoroutine(entry.awaitable):
                        entry.awaitable.close()
                raise GraphEngineError("settle: called inside a running event loop; use asettle")

    async def asettle(self) -> SettleReport:
        """Like :meth:`settle`, awaiting async providers on the running loop."""
        self._catch_up()
        with _gc_paused():
            for batch in self._run():
                await self._drain(batch)
        assert self.last_settle is not None
        return self.last_settle

    # ------------------------------------------------------------------ host API: facts

    def mutate(self, template: Any, target: str | None = None) -> None:
        """Apply a host mutation (SPEC §1.10); raises :class:`TemplateError` on a bad template."""
        self._catch_up()
        if target is not None and target not in self._objects:
            raise GraphEngineError(f"mutate.target: unknown object {target!r}")
        self._push_mutation(template, target, {"kind": "host"})

    def ingest(self, updates: Mapping[str, Any] | list[Any]) -> None:
        """A CDC batch: ``{id: fields}`` or ``[{"id", "fields"}]``, applied as one mutation."""
        self._catch_up()
        items: list[dict[str, Any]] = []
        pairs: Iterable[tuple[Any, Any]]
        if isinstance(updates, Mapping):
            pairs = updates.items()
        elif type(updates) is list:
            pairs = []
            for i, entry in enumerate(updates):
                if type(entry) is not dict or "id" not in entry:
                    raise GraphEngineError(f"ingest[{i}]: must be an object with 'id' and 'fields'")
                pairs.append((entry["id"], entry.get("fields", {})))
        else:
            raise GraphEngineError("ingest: must be an object or a list")
        for oid, fields in pairs:
            if type(oid) is not str or type(fields) is not dict:
                raise GraphEngineError(f"ingest.{oid}: fields must be an object")
            items.append({"$$_id": oid, **fields})
        if items:
            self._push_mutation(items, None, {"kind": "host"})

    def cast(self, object_id: str, concept: str) -> None:
        """Force-apply a concept on an object without testing applicability (castConcept)."""
        self._catch_up()
        obj, c = self._obj_concept(object_id, concept, "cast")
        if truthy(obj.facts.get("_autokill")):
            return
        self._cast_queue.append((obj.id, c.id, True))
        self._unstable[obj.id] = None

    def uncast(self, object_id: str, concept: str) -> None:
        """Write ``{flag: null}`` (unCastConcept); the concept may re-cast at once."""
        self._catch_up()
        obj, c = self._obj_concept(object_id, concept, "uncast")
        if truthy(obj.facts.get("_autokill")) or c.name is None:
            return
        self._push_mutation({"$$_id": obj.id, c.name: None}, obj.id, {"kind": "host"})

    def _obj_concept(self, object_id: str, concept: str, op: str) -> tuple[GraphObject, Concept]:
        obj = self._objects.get(object_id) if type(object_id) is str else None
        if obj is None:
            raise GraphEngineError(f"{op}.target: unknown object {object_id!r}")
        c = self._tree.get(concept) if type(concept) is str else None
        if c is None:
            raise GraphEngineError(f"{op}.concept: unknown concept {concept!r}")
        return obj, c

    def get(self, object_id: str) -> dict[str, Any] | None:
        """A deep copy of an object's facts, or None."""
        obj = self._objects.get(object_id)
        return None if obj is None else _json_copy(obj.facts, object_id)

    def get_ref(self, path: str, scope: str | None = None) -> Any:
        """Resolve a reference path (SPEC §1.3) from object ``scope``."""
        if type(path) is not str:
            raise GraphEngineError("get_ref.path: must be a string")
        return resolve(path, scope, self._lookup)

    def evaluate(self, expression: str | list[str], scope: str | None = None) -> Any:
        """Evaluate an expression on object ``scope``."""
        expr = compile_expression(expression, "evaluate")
        lookup = self._lookup
        return expr.evaluate(lambda p: resolve(p, scope, lookup))

    def query(self, expression: str | list[str]) -> list[str]:
        """Ids of the objects for which ``expression`` is truthy (empty: all)."""
        expr = compile_expression(expression, "query")
        lookup = self._lookup
        out: list[str] = []
        for oid in self._objects:
            if expr.test(lambda p, o=oid: resolve(p, o, lookup)):  # type: ignore[misc]
                out.append(oid)
        return out

    def select(self, with_: Iterable[str] = (), without: Iterable[str] = ()) -> list[str]:
        """Ids indexed under every key of ``with_`` and none of ``without`` (selectMaps)."""
        keys = list(with_)
        ids: Iterable[str] = self._objects if not keys else self._index.get(keys[0], {})
        out: list[str] = []
        excluded = [self._index.get(k, {}) for k in without]
        required = [self._index.get(k, {}) for k in keys[1:]]
        for oid in ids:
            if all(oid in r for r in required) and not any(oid in e for e in excluded):
                out.append(oid)
        return out

    def object_ids(self) -> list[str]:
        """Every object id, in creation order."""
        return list(self._objects)

    def facts(self) -> dict[str, dict[str, Any]]:
        """A deep copy of every object's facts."""
        return {oid: _json_copy(obj.facts, oid) for oid, obj in self._objects.items()}

    def node_links(self) -> dict[str, dict[str, list[str]]]:
        """``{node id: {"in": [...], "out": [...]}}`` adjacency of every node."""
        return {oid: {"in": list(o.incoming or ()), "out": list(o.outgoing or ())}
                for oid, o in self._objects.items() if o.kind == "node"}

    def cast_state(self) -> dict[str, list[str]]:
        """``{object id: sorted cast concept ids}`` for objects with at least one cast."""
        self._catch_up()
        return {oid: sorted(o.mapped.values()) for oid, o in self._objects.items() if o.mapped}

    def digest(self) -> str:
        """Hex SHA-256 of the canonical JSON of all facts (Q12: whole values)."""
        return canonical_digest({oid: o.facts for oid, o in self._objects.items()})

    def cast_digest(self) -> str:
        """Hex SHA-256 of the canonical JSON of :meth:`cast_state`."""
        return canonical_digest(self.cast_state())

    @property
    def config(self) -> EngineConfig:
        """The engine limits in force."""
        return self._config

    @property
    def revision(self) -> int:
        """The revision of the last applied mutation."""
        return self._rev

    @property
    def tree(self) -> ConceptTree:
        """The live compiled concept tree."""
        return self._tree

    def export_tree(self) -> dict[str, Any]:
        """The live raw tree, reflecting adds, patches and deletes."""
        return self._tree.export()

    def open_concepts(self, object_id: str) -> list[str]:
        """The open concept ids of an object (for inspection and tests)."""
        self._catch_up()
        obj = self._objects.get(object_id)
        return [] if obj is None else list(obj.open)

    # ------------------------------------------------------------------ host API: concepts

    def _run_or_defer(self, op: Callable[[], None]) -> None:
        if self._in_pass:
            self._deferred.append(op)
        else:
            op()

    def add_concept(self, parent: str | None, schema: Mapping[str, Any]) -> None:
        """Attach a concept under ``parent`` (id or name; None for root) and open it."""
        self._catch_up()
        if not isinstance(schema, Mapping):
            raise GraphEngineError("add_concept.schema: must be an object")
        data = _json_copy(dict(schema), "add_concept.schema")
        cid = data.get("_id")
        if type(cid) is not str or cid == "":
            raise GraphEngineError("add_concept.schema._id: required non-empty string")
        if cid in self._tree.concepts:
            raise GraphEngineError(f"add_concept.schema._id: concept {cid!r} already exists")
        data.setdefault("_name", cid)
        parent_id: str | None = None
        if parent is not None:
            pc = self._tree.get(parent)
            if pc is None:
                raise GraphEngineError(f"add_concept.parent: unknown concept {parent!r}")
            parent_id = pc.id
        raw = self._tree.export()
        node = raw_node(raw, self._tree, parent_id)
        node.setdefault("childConcepts", {})[cid] = data
        new_tree = build_tree(raw, self._providers if not self._replaying else None)
        self._run_or_defer(lambda: self._do_add(parent_id, data, new_tree))

    def _do_add(self, parent_id: str | None, data: dict[str, Any], tree: ConceptTree) -> None:
        self._tree = tree
        self._emit("concept_added", {"parent": parent_id, "schema": data})
        if self._replaying:
            return
        cid = data["_id"]
        pname = tree.concepts[parent_id].name if parent_id is not None else None
        for obj in self._objects.values():
            if parent_id is None or (pname is not None and obj.mapped.get(pname) == parent_id):
                obj.open.append(cid)
                self._unstable[obj.id] = None

    def patch_concept(self, concept: str, updates: Mapping[str, Any]) -> None:
        """Deep-merge ``updates`` (arrays replaced) into a concept and re-evaluate objects."""
        self._catch_up()
        c = self._tree.get(concept) if type(concept) is str else None
        if c is None:
            raise GraphEngineError(f"patch_concept.concept: unknown concept {concept!r}")
        if not isinstance(updates, Mapping):
            raise GraphEngineError("patch_concept.updates: must be an object")
        data = _json_copy(dict(updates), "patch_concept.updates")
        for bad in ("_id", "childConcepts"):
            if bad in data:
                raise GraphEngineError(f"patch_concept.updates.{bad}: cannot be patched")
        raw = self._tree.export()
        node = raw_node(raw, self._tree, c.id)
        merged = deep_merge_replace(node, data)
        node.clear()
        node.update(merged)
        new_tree = build_tree(raw, self._providers if not self._replaying else None)
        self._run_or_defer(lambda: self._do_patch(c.id, data, new_tree))

    def _do_patch(self, cid: str, data: dict[str, Any], tree: ConceptTree) -> None:
        self._tree = tree
        self._emit("concept_patched", {"concept": cid, "updates": data})
        if self._replaying:
            return
        c = tree.concepts[cid]
        keys = [c.name] if c.name is not None else []
        everyone = not c.require
        for path in c.require:
            if not path.simple:
                everyone = True
            keys.append(path.text)
        if everyone:
            targets = list(self._objects.values())
        else:
            seen: dict[str, None] = {}
            for key in keys:
                for oid in self._index.get(key, {}):
                    seen[oid] = None
            targets = [self._objects[oid] for oid in self._objects if oid in seen]
        parent = tree.concepts[c.parent] if c.parent is not None else None
        for obj in targets:
            if obj.watches is not None and cid in obj.watches:
                self._remove_watches(obj, cid)
                if c.watches:
                    self._install_watches(obj, c)
            if parent is not None and (parent.name is None
                                       or obj.mapped.get(parent.name) != parent.id):
                continue
            mapped = c.name is not None and obj.mapped.get(c.name) == cid
            applicable = self._applicable(obj, c)
            if applicable and not mapped:
                self._cast_queue.append((obj.id, cid, False))
                self._unstable[obj.id] = None
            elif mapped and not applicable:
                self._uncast_concept(obj, c, permanent=False)
                self._unstable[obj.id] = None

    def delete_concept(self, concept: str) -> None:
        """Uncast a concept permanently everywhere (cascading) and remove its subtree."""
        self._catch_up()
        c = self._tree.get(concept) if type(concept) is str else None
        if c is None:
            raise GraphEngineError(f"delete_concept.concept: unknown concept {concept!r}")
        self._run_or_defer(lambda: self._do_delete(c.id))

    def _do_delete(self, cid: str) -> None:
        c = self._tree.concepts.get(cid)
        if c is None:
            return
        if not self._replaying:
            for obj in list(self._objects.values()):
                self._uncast_concept(obj, c, permanent=True)
        raw = self._tree.export()
        parent = raw_node(raw, self._tree, c.parent)
        del parent["childConcepts"][cid]
        self._tree = build_tree(raw, None)
        self._emit("concept_deleted", {"concept": cid})

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self) -> dict[str, Any]:
        """The data of a ``checkpoint`` record: revision, facts digest, live tree, config,
        and every object (kind, facts, cast state, node links) as JSON text."""
        self._catch_up()
        import json

        objects = [[oid, o.kind, o.facts, o.mapped, o.incoming or [], o.outgoing or []]
                   for oid, o in self._objects.items()]
        settled = self.last_settle
        fresh = settled is not None and settled.revision == self._rev and not self._dirty
        return {
            "revision": self._rev,
            "digest": settled.digest if fresh and settled is not None else self.digest(),
            "tree": self._tree.export(),
            "config": self._config.to_json(),
            "objects": json.dumps(objects, allow_nan=False,
                                  separators=(",", ":")),
        }

    def write_checkpoint(self) -> None:
        """Send a ``checkpoint`` record to the sink: a replay may start there."""
        self._emit("checkpoint", self.checkpoint())

    def _load_checkpoint(self, pos: int, data: Mapping[str, Any], verify: bool) -> None:
        import json

        effects, loads = self._effects, self._loads + 1
        self._setup(self._providers, EngineConfig.from_json(data.get("config", {})), None)
        self._replaying = True
        self._effects, self._loads = effects, loads
        self._tree = build_tree(_json_copy(data["tree"], "tree"), None)
        self._rev = int(data["revision"])
        index = self._index
        for oid, kind, facts, mapped, incoming, outgoing in json.loads(data["objects"]):
            obj = GraphObject(oid, kind)
            obj.facts = facts
            obj.mapped = mapped
            obj.incoming = incoming or None
            obj.outgoing = outgoing or None
            self._objects[oid] = obj
            for key in facts:
                bucket = index.get(key)
                if bucket is None:
                    bucket = index[key] = {}
                bucket[oid] = None
        if verify and self.digest() != data.get("digest"):
            raise ReplayError(f"records[{pos}]: checkpoint facts differ from its digest")
        self._take_snapshot()

    # ------------------------------------------------------------------ revisions and forks

    def _take_snapshot(self) -> None:
        # the snapshot holds each object's facts dict itself, and the object copies it at
        # its next write (GraphObject.shared): objects not written again are never copied
        facts = {}
        for oid, o in self._objects.items():
            facts[oid] = (o.kind, o.facts)
            o.shared = True
        self._snapshots[self._rev] = _Snapshot(self._tree, facts)
        limit = self._config.max_revisions
        while len(self._snapshots) > limit:
            del self._snapshots[min(self._snapshots)]

    def revisions(self) -> list[int]:
        """The revisions of the retained settle snapshots, oldest first (SPEC §1.13)."""
        return sorted(self._snapshots)

    def snapshot(self, revision: int) -> dict[str, dict[str, Any]]:
        """A copy of the facts as they were at the settle of ``revision``."""
        snap = self._snapshot_at(revision, "snapshot")
        return {oid: _json_copy(f, oid) for oid, (_, f) in snap.facts.items()}

    def _snapshot_at(self, revision: Any, op: str) -> _Snapshot:
        snap = self._snapshots.get(revision) if type(revision) is int else None
        if snap is None:
            raise GraphEngineError(f"{op}.revision: no snapshot of revision {revision!r} "
                                   f"(kept: {self.revisions()})")
        return snap

    def diff_revisions(self, a: int, b: int) -> dict[str, Any]:
        """``{added, removed, changed: {id: {key: [before, after]}}}`` between two settle
        snapshots, ignoring ``_rev``; an absent key reads as null."""
        before = self._snapshot_at(a, "diff_revisions").facts
        after = self._snapshot_at(b, "diff_revisions").facts
        changed: dict[str, dict[str, list[Any]]] = {}
        for oid in sorted(set(before) & set(after)):
            fa, fb = before[oid][1], after[oid][1]
            keys = [k for k in sorted(set(fa) | set(fb)) if k != "_rev"]
            delta = {k: [fa.get(k), fb.get(k)] for k in keys
                     if k not in fa or k not in fb or not js_same(fa[k], fb[k])}
            if delta:
                changed[oid] = _json_copy(delta, oid)
        return {"added": sorted(set(after) - set(before)),
                "removed": sorted(set(before) - set(after)), "changed": changed}

    def rollback_to(self, revision: int) -> None:
        """Restore the tree and facts of a settle snapshot and drop the later ones (linear
        undo); deferred to the end of the pass when called from inside one (several collapse
        to the earliest). The next :meth:`settle` re-stabilizes. Revisions keep counting up,
        so no revision number is used twice."""
        self._catch_up()
        self._snapshot_at(revision, "rollback_to")
        if self._in_pass:
            if self._rollback_to is None or revision < self._rollback_to:
                self._rollback_to = revision
            return
        self._restore(revision)

    def _restore(self, revision: int) -> None:
        snap = self._snapshots.get(revision)
        if snap is None:
            raise ReplayError(f"rolled_back: no snapshot of revision {revision}")
        self._emit("rolled_back", {"to": revision, "previous": self._rev})
        self._rev += 1  # the restored state is a new revision: numbers are never reused
        for rev in [r for r in self._snapshots if r > revision]:
            del self._snapshots[rev]
        keep = (self._providers, self._config, self._sink, self._rev, self._snapshots,
                self._replaying, self._effects, self._loads, self.provider_calls,
                self.warnings, self.last_settle)
        self._setup(keep[0], keep[1], keep[2])
        (self._rev, self._snapshots, self._replaying, self._effects, self._loads,
         self.provider_calls, self.warnings, self.last_settle) = keep[3:]
        self._tree = snap.tree
        groups: dict[str, list[dict[str, Any]]] = {"freeNodes": [], "nodes": [], "segments": []}
        group_of = {"free": "freeNodes", "node": "nodes", "segment": "segments"}
        for kind, facts in snap.facts.values():
            groups[group_of[kind]].append(facts)
        mounted = self._apply_seed(groups)
        if not self._replaying:
            self._mount(mounted)

    def fork(
        self,
        seed: Mapping[str, Any] | None = None,
        *,
        config: EngineConfig | None = None,
        sink: RecordSink | None = None,
        reintegrate_into: str | None = None,
        project: Callable[[Engine], Any] | None = None,
    ) -> Engine:
        """A child engine on the live tree and these providers (SPEC §1.13 ``fork``).

        ``seed`` defaults to this engine's facts. With ``reintegrate_into`` (an object id of
        this engine), the child's first settle applies ``project(child)`` onto this engine
        (default ``{"$$_id": target, "forkResult": <child facts>}``) as a mutation with cause
        ``fork``, then the child is destroyed (settling it again is an error).
        """
        self._catch_up()  # the merge pushes a mutation into this engine
        if reintegrate_into is not None and reintegrate_into not in self._objects:
            raise GraphEngineError(f"fork.reintegrate_into: unknown object {reintegrate_into!r}")
        child = Engine(self.export_tree(), providers=self._providers,
                       seed=seed if seed is not None else facts_seed(self),
                       config=config or self._config, sink=sink)
        if reintegrate_into is not None:
            target = reintegrate_into

            def merge() -> None:
                if project is not None:
                    template = project(child)
                else:
                    result = {oid: {k: v for k, v in f.items() if k != "_rev"}
                              for oid, f in child.facts().items()}
                    template = {"$$_id": target, "forkResult": result}
                child._destroyed = True
                self._push_mutation(template, target, {"kind": "fork", "object": target})

            child._on_first_settle = merge
        return child

    # ------------------------------------------------------------------ replay

    @classmethod
    def replay(
        cls,
        records: Iterable[tuple[str, Mapping[str, Any]]],
        *,
        providers: Mapping[str, Provider] | None = None,
        sink: RecordSink | None = None,
        verify: bool = True,
        from_checkpoint: bool = False,
    ) -> Engine:
        """Rebuild an engine from its records without calling any provider.

        Facts, concept tree and cast state are restored; each ``settled`` digest is checked
        when ``verify`` (a mismatch raises :class:`ReplayError`). ``providers`` and ``sink``
        are attached for live use after the replay. With ``from_checkpoint``, the replay
        starts at the last ``checkpoint`` record (see :meth:`write_checkpoint`), whose digest
        is checked when ``verify``; otherwise checkpoints are skipped.

        The replay is :mod:`.replay`'s (the streaming fold, and its general path for what
        the fold leaves to it); it writes through :class:`ReplayPort`.
        """
        with _gc_paused():
            engine: Engine = replay_records(records, ReplayPort, providers=providers,
                                            sink=sink, verify=verify,
                                            from_checkpoint=from_checkpoint)
        return engine

    def _catch_up(self) -> None:
        """Rebuild every object's open concepts, waits and watches after a replay.

        A replay restores facts, tree and cast state; what discovery derives from them is
        only needed once the engine is used live (or inspected), and a replay that is only
        read (digests, facts, a reload's seed) never needs it. So :meth:`replay` leaves it to
        this method, which every public method that reads or changes that derived state calls
        first. It runs as the replay itself did: from the roots, recording nothing.
        """
        if not self._undiscovered:
            return
        self._undiscovered = False
        sink, self._sink = self._sink, None
        try:
            with _gc_paused():
                roots = list(self._tree.roots)
                for obj in self._objects.values():
                    obj.open = list(roots)
                    self._discover(obj)
        finally:
            self._sink = sink
        self._unstable.clear()
        self._cast_queue.clear()


@attrs.frozen
class _Snapshot:
    tree: ConceptTree
    facts: dict[str, tuple[str, dict[str, Any]]]


def record_run_failure(engine: Engine, data: dict[str, Any]) -> None:
    """Record on ``engine`` that the run driving it failed (a ``run_failed`` record: a
    scenario step was refused); its state is unchanged and stays usable. What
    ``scenario.run_scenario`` calls, so that it reaches no private attribute of the engine."""
    engine._record_failure(data)


def facts_seed(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every object's facts as a seed (``_rev`` dropped; kind from ``Node``/``Segment``)."""
    seed: dict[str, list[dict[str, Any]]] = {"freeNodes": [], "nodes": [], "segments": []}
    for facts in engine.facts().values():
        record = {k: v for k, v in facts.items() if k != "_rev"}
        if truthy(record.get("Node")):
            group = "nodes"
        elif truthy(record.get("Segment")):
            group = "segments"
        else:
            group = "freeNodes"
        seed[group].append(record)
    return seed


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a settle, a boot or a replay (restored after).

    These allocate many small containers and no cycles of their own; with the collector on,
    its passes over a large graph cost about a third of a big settle. Its first pass after
    the pause still walks every container allocated meanwhile and still alive, so big
    temporaries (records being read or written) are best dropped before the pause ends.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _describe_exception(exc: BaseException) -> str:
    """``"<type>: <str(exc)>"`` for a provider error; an exception whose ``str()`` raises
    falls back to its ``repr()``, then to its type name alone (a provider's exception must
    never stop a settle). Text that is not valid UTF-8 (lone surrogates) is escaped."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        try:
            text = repr(exc)
        except Exception:
            return name
    if type(text) is not str:  # pragma: no cover - str() and repr() always give a str
        return name
    message = f"{name}: {text}"
    try:
        message.encode("utf-8")
    except UnicodeEncodeError:
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return message


def _make_quiet(obj: GraphObject, cid: str, name: str | None, key: str) -> None:
    """Let discovery pass over open concept ``cid`` of ``obj`` until ``key`` or its flag
    ``name`` is written (or its watches are removed, or the tree changes).

    Examined in full, such a concept would only stay open: it exists, its watches are
    installed, its flag is not present (it would have been cast) and it waits for ``key``,
    which is still unsatisfied. ``_rev`` is set outside the write path, so a concept that
    depends on it is never quiet.
    """
    if key != "_rev" and name != "_rev":
        quiet = obj.quiet
        if quiet is None:
            obj.quiet = {cid: None}
        else:
            quiet[cid] = None


def _unapplying(obj: GraphObject, name: str) -> None:
    """Drop ``name`` from the flags being applied (the table goes when empty)."""
    applying = obj.applying
    if applying is not None:
        applying.pop(name, None)
        if not applying:
            obj.applying = None


def _wakers(tree: ConceptTree) -> dict[str, tuple[str, ...]]:
    """``{fact key: ids of the concepts flagged by it or requiring it locally}``: a write of
    the key may end their wait (a concept only ever waits for one of its local requires)."""
    found: dict[str, list[str]] = {}
    for cid, c in tree.concepts.items():
        keys = [path.text for path in c.require if path.simple]
        if c.name is not None:
            keys.append(c.name)
        for key in dict.fromkeys(keys):
            found.setdefault(key, []).append(cid)
    return {key: tuple(cids) for key, cids in found.items()}


def _local_require(c: Concept) -> tuple[str, ...]:
    """The keys of the leading one-key (local) require paths of ``c``: discovery tests them
    inline, before the full applicability test, which would stop at a missing one first."""
    keys: list[str] = []
    for path in c.require:
        if not path.simple:
            break
        keys.append(path.text)
    return tuple(keys)


def _first_missing(c: Concept, facts: Mapping[str, Any]) -> str | None:
    """A simple (local) require key of ``c`` that is unsatisfied on these facts, if any."""
    for path in c.require:
        if path.simple and not satisfies_require(facts.get(path.text, UNDEFINED)):
            return path.text
    return None


def _fast_items(template: dict[str, Any], objects: Mapping[str, GraphObject]
                ) -> list[dict[str, Any]] | None:
    """Resolve ``{"$$_id": id, key: value}`` on an existing object without the full resolver."""
    oid = template["$$_id"]
    if type(oid) is not str or oid not in objects:
        return None
    pairs: list[list[Any]] = []
    for key, value in template.items():
        if key == "$$_id":
            continue
        if key.startswith("$") or key in _NOT_FAST:
            return None
        tp = type(value)
        if tp is str or tp is bool or value is None or (tp is int and -_SAFE <= value <= _SAFE):
            pairs.append([key, value])  # an immutable scalar: _json_copy would return it as is
        elif tp is dict and "__push" in value:  # is_push
            pairs.append([key, {"__push": _json_copy(value["__push"], key)}])
        else:
            pairs.append([key, _json_copy(value, key)])
    return [{"id": oid, "create": None, "set": pairs}]


def _json_copy(value: Any, path: str) -> Any:
    tp = type(value)
    if tp is str or tp is bool or value is None or (tp is int and -_SAFE <= value <= _SAFE):
        return value  # immutable JSON scalars need no copy
    try:
        return to_fact_value(value, path)
    except TypeError as exc:
        raise TemplateError(str(exc)) from None


def _normalize_seed(seed: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(seed, Mapping):
        raise GraphEngineError("seed: must be an object")
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for group in ("freeNodes", "nodes", "segments"):
        items = seed.get(group) or []
        if type(items) is not list:
            raise GraphEngineError(f"seed.{group}: must be a list")
        normalized: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            if type(item) is not dict:
                raise GraphEngineError(f"seed.{group}[{i}]: must be an object")
            oid = item.get("_id")
            if type(oid) is not str or oid == "":
                raise GraphEngineError(f"seed.{group}[{i}]._id: must be a non-empty string")
            if oid in seen:
                raise GraphEngineError(f"seed.{group}[{i}]._id: duplicate id {oid!r}")
            seen.add(oid)
            normalized.append(_json_copy(item, f"seed.{group}[{i}]"))
        out[group] = normalized
    return out


class ReplayPort:
    """The engine's side of a replay (:class:`.replay.ReplayTarget`): one blank engine,
    rebuilt record by record by :mod:`.replay`, which reaches it only through this class.

    The tables are the engine's own; each method is the engine's write path for one record
    type, as a replay runs it (no discovery, no provider, nothing recorded). :meth:`finish`
    hands the engine over for live use; the port is then spent.
    """

    __slots__ = ("_engine",)

    def __init__(self, providers: Mapping[str, Provider] | None = None) -> None:
        eng = Engine.__new__(Engine)
        eng._setup(dict(providers or {}), EngineConfig(), None)
        eng._replaying = True
        self._engine = eng

    @property
    def objects(self) -> dict[str, GraphObject]:
        return self._engine._objects

    @property
    def index(self) -> dict[str, dict[str, None]]:
        return self._engine._index

    @property
    def effects(self) -> dict[tuple[int, int], list[tuple[str, Mapping[str, Any]]]]:
        return self._engine._effects

    @property
    def concepts(self) -> Mapping[str, Concept]:
        return self._engine._tree.concepts

    @property
    def revision(self) -> int:
        return self._engine._rev

    @revision.setter
    def revision(self, value: int) -> None:
        self._engine._rev = value

    @property
    def loads(self) -> int:
        return self._engine._loads

    @loads.setter
    def loads(self, value: int) -> None:
        self._engine._loads = value

    def create(self, oid: str, kind: str) -> GraphObject:
        return self._engine._create(oid, kind)

    def relink(self, segment: GraphObject, key: str, old: Any, new: Any) -> None:
        self._engine._relink(segment, key, old, new)

    def mark_changed(self) -> None:
        self._engine._dirty = True

    def apply_mutation(self, record: Mapping[str, Any]) -> None:
        self._engine._apply_resolved(record)

    def apply_seed(self, data: Mapping[str, Any]) -> None:
        self._engine._apply_seed(data)

    def apply_effect(self, kind: str, data: Mapping[str, Any]) -> None:
        self._engine._replay_effect(kind, data)

    def load_tree(self, data: Mapping[str, Any]) -> None:
        eng = self._engine
        eng._loads += 1
        if eng._objects or eng._rev:  # a new session (scenario reload): start over
            effects, loads = eng._effects, eng._loads
            eng._setup(eng._providers, eng._config, None)
            eng._replaying = True
            eng._effects, eng._loads = effects, loads
        eng._config = EngineConfig.from_json(data.get("config", {}))
        eng._tree = build_tree(_json_copy(data["tree"], "tree"), None)

    def load_checkpoint(self, pos: int, data: Mapping[str, Any], verify: bool) -> None:
        self._engine._load_checkpoint(pos, data, verify)

    def add_concept(self, parent: str, schema: Mapping[str, Any]) -> None:
        self._engine.add_concept(parent, schema)

    def patch_concept(self, concept: str, updates: Mapping[str, Any]) -> None:
        self._engine.patch_concept(concept, updates)

    def delete_concept(self, concept: str) -> None:
        self._engine._do_delete(concept)

    def settled(self, pos: int, data: Mapping[str, Any], verify: bool) -> None:
        eng = self._engine
        if verify and data.get("digest") != eng.digest():
            raise ReplayError(f"records[{pos}]: facts digest differs from the recording")
        if verify and "castDigest" in data and data["castDigest"] != eng.cast_digest():
            raise ReplayError(f"records[{pos}]: cast digest differs from the recording")
        eng._take_snapshot()

    def roll_back(self, revision: int) -> None:
        self._engine._restore(revision)

    def fail_run(self, data: Mapping[str, Any]) -> None:
        self._engine.run_failed = dict(data)

    def finish(self, sink: RecordSink | None) -> Engine:
        eng = self._engine
        eng._replaying = False
        eng._undiscovered = True  # the open concepts and watches: see Engine._catch_up
        eng._sink = sink
        return eng
