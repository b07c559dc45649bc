"""The replay of a graph session: the one module that rebuilds an engine from its records.

:meth:`Engine.replay`, ``replay_session`` and every test go through here; the engine itself
holds no replay logic. The engine is reached through one narrow, named interface,
:class:`ReplayTarget` (implemented by ``engine.ReplayPort`` over a blank engine): its
tables (``objects``, ``index``, the ``effects`` awaiting their write), its ``revision`` and
``loads``, and one method per record type that the write path must apply itself. This
module imports nothing of the engine module (``engine`` imports it), so the two cannot form
a cycle; the import-linter contract in the repository's ``pyproject.toml`` keeps it so.

**The fold** (:func:`fold_records`) takes the records as chunks (a packed event's columns,
say), in order, and applies each chunk before the next is read. It relies on how a live
engine records (``docs/semantics.md``):

- a ``mutation_applied`` record comes before the effects of its writes, and all of them come
  before the next mutation record (mutations are serialized); ``provider_error`` records may
  come in between and change nothing on replay;
- a ``cast`` effect only sets the object's cast state, which no replayed write reads, so
  the casts of a mutation can be applied after all its writes, in their recorded order,
  provided each names the object its write wrote (the object then exists at that write).

So the fold holds one mutation back until the next record that is not one of its effects,
then applies its writes inline (the replay branch of the engine's write path, without the
per-write effect lookup) and its casts after them. A mutation with any other effect (an
``uncast`` deletes a fact, so its place among the writes matters; a cast on another
object) goes through :meth:`ReplayTarget.apply_mutation`, with its effects keyed exactly as
the general path keys them. Every other record goes to :func:`_apply_record`, the general
path's own step.

A packed event's columns (``events.RecordPacker``) are applied without building its records:
the packer lays out in columns only the mutations whose effects are all such casts, recorded
in the same event, so a columnar mutation's writes are applied at once and then its casts,
both as its shape (the keys it writes, the casts after it) says; the whole records in
between go through the path above.

**The general path** (:func:`replay_general`) first files every ``cast`` / ``uncast``
effect under the (load, revision, write) it belongs to, so that the write path replays it
right after that write; it also starts from a checkpoint. Whatever the fold cannot vouch for
(an effect with no mutation before it, a malformed record, a digest that differs from the
recording) raises :class:`Unfoldable`; :func:`replay_records` then runs the general path on
the same records, which replays them or says what is wrong in its own words. So the fold
never accepts records the general path refuses, and both build the same engine.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any, Final, Protocol

from .errors import ReplayError
from .events import _decode_pack, packed_columns
from .jsvalue import UNDEFINED, js_same
from .objects import LINK_KEYS, GraphObject, own_facts

__all__ = [
    "LOAD_STRIDE",
    "ReplayTarget",
    "Unfoldable",
    "apply_run",
    "fold_records",
    "packed_chunk",
    "packed_replay_data",
    "replay_general",
    "replay_records",
    "usable_checkpoint",
    "write_pairs",
]

#: Effects are keyed by (load number * LOAD_STRIDE + revision, write number): revisions
#: restart at each load (a scenario reload, a checkpoint), so the load tells them apart.
LOAD_STRIDE: Final = 2**53

_intern: Final = sys.intern
#: What a malformed record raises while it is applied (ValueError includes the engine's
#: ReplayError: a digest that differs, say); the general path then words the error.
_MALFORMED: Final = (KeyError, TypeError, ValueError, IndexError, AttributeError)


#: The seed groups, the kind of their objects and the flag a seed writes first.
_SEED_GROUPS: Final = (("freeNodes", "free", None), ("nodes", "node", "Node"),
                       ("segments", "segment", "Segment"))


#: The runs of whole records in a packed event's ``order``.
_OTHER_RUNS: Final = re.compile("o+")


class Unfoldable(Exception):
    """The records need the general replay path (which replays them or reports the error)."""


class ReplayTarget(Protocol):
    """The engine's side of a replay: everything this module reads or changes of the engine
    being rebuilt (``engine.ReplayPort`` implements it over a blank engine).

    The tables are the engine's own (the writes below go straight into them); each method
    is the engine's write path for one record type, run as a replay runs it (no discovery,
    no provider, nothing recorded).
    """

    @property
    def objects(self) -> dict[str, GraphObject]:
        """The objects by id."""

    @property
    def index(self) -> dict[str, dict[str, None]]:
        """The key index: fact key -> the ids of the objects that have it, in order."""

    @property
    def effects(self) -> dict[tuple[int, int], list[tuple[str, Mapping[str, Any]]]]:
        """The effects awaiting their write, keyed as :data:`LOAD_STRIDE` says; the write
        path applies and removes each right after its write."""

    @property
    def concepts(self) -> Mapping[str, Any]:
        """The current tree's concepts by id."""

    revision: int  #: the engine's revision (the highest replayed so far)
    loads: int  #: how many trees (``tree_loaded``, ``checkpoint``) were loaded so far

    def create(self, oid: str, kind: str) -> GraphObject:
        """A new object (added to ``objects`` and the ``_id`` index)."""

    def relink(self, segment: GraphObject, key: str, old: Any, new: Any) -> None:
        """Keep the node links in step with a segment's link fact (``LINK_KEYS``)."""

    def mark_changed(self) -> None:
        """Say that a fact changed since the last settle."""

    def apply_mutation(self, record: Mapping[str, Any]) -> None:
        """A ``mutation_applied`` record through the write path, each effect in
        ``effects`` applied after its write."""

    def apply_seed(self, data: Mapping[str, Any]) -> None:
        """A ``seeded`` record."""

    def apply_effect(self, kind: str, data: Mapping[str, Any]) -> None:
        """A ``cast`` or ``uncast`` record made outside any mutation."""

    def load_tree(self, data: Mapping[str, Any]) -> None:
        """A ``tree_loaded`` record (a second one starts the engine over: a reload)."""

    def load_checkpoint(self, pos: int, data: Mapping[str, Any], verify: bool) -> None:
        """A ``checkpoint`` record: the whole state (its digest checked when ``verify``)."""

    def add_concept(self, parent: str, schema: Mapping[str, Any]) -> None:
        """A ``concept_added`` record."""

    def patch_concept(self, concept: str, updates: Mapping[str, Any]) -> None:
        """A ``concept_patched`` record."""

    def delete_concept(self, concept: str) -> None:
        """A ``concept_deleted`` record."""

    def settled(self, pos: int, data: Mapping[str, Any], verify: bool) -> None:
        """A ``settled`` record: its digests checked when ``verify``
        (:class:`ReplayError`), then the settle's snapshot taken."""

    def roll_back(self, revision: int) -> None:
        """A ``rolled_back`` record."""

    def fail_run(self, data: Mapping[str, Any]) -> None:
        """A ``run_failed`` record (kept as the engine's ``run_failed``)."""

    def finish(self, sink: Any) -> Any:
        """The engine, ready for live use (``sink`` attached); the target is spent."""


#: A new :class:`ReplayTarget` over a blank engine with these providers (``engine.ReplayPort``).
NewTarget = Callable[[Mapping[str, Any] | None], ReplayTarget]


def fold_records(
    chunks: Iterable[Any],
    new_target: NewTarget,
    *,
    providers: Mapping[str, Any] | None = None,
    sink: Any = None,
    verify: bool = True,
) -> Any:
    """Replay every record of ``chunks``, in order, into a new engine (from ``new_target``),
    with no provider call; ``checkpoint`` records are skipped (the replay starts from the
    first record).

    A chunk is a sequence of ``[type, data]`` pairs, or the columns of a packed event
    (from :func:`packed_chunk`). Raises :class:`Unfoldable` when the
    general path must decide (see the module docstring); errors raised while producing the
    chunks pass through unchanged."""
    fold = _Fold(new_target(providers), verify)
    for chunk in chunks:
        if type(chunk) is list:
            fold.feed(chunk)
        else:
            fold.feed_columns(chunk)
    return fold.finish(sink)


def packed_chunk(data: Any) -> Any:
    """The columns of a ``graph_engine.records_packed`` data object (schema version 5, an
    older one upcast) as :func:`fold_records` takes them: :func:`.events.packed_columns`
    (whose ``ValueError`` says what is wrong)."""
    return packed_columns(data)


def packed_replay_data(stored: bytes) -> Any:
    """A packed event's data, less its ``audit``, from the bytes the log stores (a decoder
    for core's chain-checked read, ``raw_decoders``): a replay reads the columns, never the
    audit, which is dropped as soon as it is read. orjson reads the bytes; the json module
    what orjson refuses, so the bytes are read as core's read parses data (UTF-8, one JSON
    value, nothing after it), ``ValueError`` when they are not."""
    try:
        data = _decode_pack(stored)
    except UnicodeDecodeError:
        raise ValueError("data: not UTF-8") from None
    if type(data) is dict:
        data.pop("audit", None)
    return data


class _Fold:
    """One replay in progress: the engine being built and the mutation held back."""

    __slots__ = ("effects", "engine", "pending", "pos", "verify")

    def __init__(self, target: ReplayTarget, verify: bool) -> None:
        self.engine = target
        self.verify = verify
        self.pos = 0  # the index of the next record (the engine's messages name it)
        self.pending: dict[str, Any] | None = None  # a mutation whose effects may follow
        self.effects: list[tuple[str, dict[str, Any]]] = []  # those effects so far

    def feed(self, chunk: Sequence[Any]) -> None:
        """Apply the records of one chunk (the last mutation may be held back)."""
        try:
            self._feed(chunk)
        except _MALFORMED as exc:
            raise Unfoldable(f"{type(exc).__name__}: {exc}") from None
        self.pos += len(chunk)

    def feed_columns(self, cols: Any) -> None:
        """Apply the records of a packed event's columns (see ``events.RecordPacker``):
        a dict from :func:`.events.packed_columns`."""
        try:
            self._feed_columns(cols)
        except _MALFORMED as exc:
            raise Unfoldable(f"{type(exc).__name__}: {exc}") from None

    def _feed(self, chunk: Sequence[Any]) -> None:
        eng = self.engine
        verify = self.verify
        flush = self._flush
        pending, effects = self.pending, self.effects  # locals in the loop, saved after it
        for pos, (kind, data) in enumerate(chunk, self.pos):
            if kind == "cast" or kind == "uncast":
                at = data["at"]
                if at is not None:  # an effect of a write of the pending mutation
                    if pending is None or type(at) is not list or len(at) != 2:
                        raise Unfoldable("an effect with no mutation before it")
                    effects.append((kind, data))
                    continue
            elif kind == "mutation_applied":
                if pending is not None:
                    flush(pending, effects)
                    if effects:
                        effects = []
                if type(data) is not dict:
                    raise Unfoldable("data must be an object")
                pending = data
                continue
            elif kind == "provider_error":  # changes nothing on replay
                if type(data) is not dict:
                    raise Unfoldable("data must be an object")
                continue
            elif kind == "checkpoint":  # a replay from the first record skips them
                continue
            if pending is not None:
                flush(pending, effects)
                pending = None
                if effects:
                    effects = []
            if type(data) is not dict:
                raise Unfoldable("data must be an object")
            if kind == "seeded":
                self._seed(data)
            else:
                _apply_record(eng, pos, kind, data, verify)
        self.pending, self.effects = pending, effects

    def _feed_columns(self, cols: Any) -> None:
        """The columnar mutations are applied as they come, each with its casts: the packer
        made sure every effect of such a mutation is a cast of its object at one of its
        writes, recorded before anything but provider errors (``events.RecordPacker``).
        Each run of ``m`` letters goes to :func:`apply_run`; each run of whole records
        (``o``) goes through :meth:`_feed`, in order."""
        order, other = cols["order"], cols["other"]
        # a value that is an object (a "__push", say) takes the write path's own steps
        plain = dict not in map(type, cols["v"])
        state: tuple[int, int, int] = (0, 0, 0)  # the next mutation, value and whole record
        at = 0
        for match in _OTHER_RUNS.finditer(order):
            lo, hi = match.span()
            if lo > at:
                state = self._columnar(cols, lo - at, state, plain)
            m, kv, o = state
            self.feed(other[o:o + hi - lo])
            state = (m, kv, o + hi - lo)
            at = hi
        if at < len(order):
            self._columnar(cols, len(order) - at, state, plain)

    def _columnar(self, cols: Any, count: int, state: tuple[int, int, int], plain: bool
                  ) -> tuple[int, int, int]:
        """Apply the next ``count`` columnar mutations; the state after them."""
        eng = self.engine
        if self.pending is not None:  # a mutation of a whole record
            self._flush(self.pending, self.effects)
            self.pending, self.effects = None, []
        m, kv, o, revision, changed, self.pos = apply_run(
            self._context(), cols, count, (*state, eng.revision, False, self.pos), plain)
        eng.revision = revision
        if changed:
            eng.mark_changed()
        return m, kv, o

    def _context(self, concepts: bool = True) -> tuple[Any, ...]:
        """What :func:`apply_run` and :func:`write_pairs` write through: see
        :func:`apply_run`. Writes alone do not need the
        tree's concepts (None without ``concepts``: a seed may come before any tree)."""
        eng = self.engine
        return (eng.objects, eng.index, eng.concepts if concepts else None,
                self._create_free, eng.relink, js_same, UNDEFINED)

    def _create_free(self, oid: str) -> GraphObject:
        return self.engine.create(oid, "free")

    def finish(self, sink: Any) -> Any:
        """The engine, ready for live use (its sink attached)."""
        if self.pending is not None:
            try:
                self._flush(self.pending, self.effects)
            except _MALFORMED as exc:
                raise Unfoldable(f"{type(exc).__name__}: {exc}") from None
        return self.engine.finish(sink)

    # ------------------------------------------------------------------ one mutation

    def _flush(self, record: dict[str, Any], effects: list[tuple[str, dict[str, Any]]]
               ) -> None:
        """Apply a mutation and the effects recorded after it."""
        if effects and not _casts_in_place(record, effects):
            self._apply_keyed(record, effects)
            return
        eng = self.engine
        rev = record["rev"]
        if rev > eng.revision:
            eng.revision = rev
        objects, index, relink = eng.objects, eng.index, eng.relink
        changed = False
        for item in record["items"]:
            oid = item["id"]
            obj = objects[oid] if oid in objects else eng.create(oid, item["create"] or "free")
            own_facts(obj)["_rev"] = rev
            changed = _write_all(index, relink, obj, obj.id, item["set"]) or changed
        if changed:
            eng.mark_changed()
        if effects:
            concepts = eng.concepts
            for _, data in effects:  # casts only (see _casts_in_place)
                c = concepts[data["concept"]]
                objects[data["object"]].mapped[c.name or c.id] = c.id

    def _seed(self, data: dict[str, Any]) -> None:
        """A ``seeded`` record as the engine's seed applies it on replay: the seed objects
        with their facts, each written through the write path (Q9). The ``_id`` fact is
        written too, which changes nothing: it is the object's own id, set when the object
        was created."""
        eng = self.engine
        objects = eng.objects
        context = self._context(concepts=False)
        write = write_pairs
        changed = False
        for group, kind, flag in _SEED_GROUPS:
            for facts in data[group]:
                oid = facts["_id"]
                obj = objects[oid] if oid in objects else eng.create(oid, kind)
                if flag is not None:
                    changed = write(context, obj, obj.id, ((flag, True),)) or changed
                changed = write(context, obj, obj.id, facts) or changed
        if changed:
            eng.mark_changed()

    def _apply_keyed(self, record: dict[str, Any],
                     effects: list[tuple[str, dict[str, Any]]]) -> None:
        """Apply a mutation through the engine, each effect replayed right after its write
        (keyed as :func:`replay_general` keys it)."""
        eng = self.engine
        load = eng.loads * LOAD_STRIDE
        pending = eng.effects
        for kind, data in effects:
            at = data["at"]
            pending.setdefault((load + int(at[0]), int(at[1])), []).append((kind, data))
        eng.apply_mutation(record)
        if eng.effects:
            raise Unfoldable("an effect points at no write of its mutation")


def _write_all(index: dict[str, dict[str, None]], relink: Any, obj: GraphObject, oid: str,
               pairs: Iterable[Sequence[Any]]) -> bool:
    """Writes to one object, as the engine's write path does them on replay; whether any changed
    a fact.

    ``oid`` is the object's own id (``obj.id``, not a parsed copy of it), which the key
    index then holds. A replayed object has no ``quiet`` table (only discovery fills it, and
    a replay runs none), and the effects are applied by the caller instead of being looked
    up after each write.
    """
    facts = own_facts(obj)  # (a copy when a settle snapshot holds them)
    changed = False
    for key, value in pairs:
        old = facts.get(key, UNDEFINED)
        if type(value) is dict and "__push" in value:
            new = (list(old) if type(old) is list else []) + [value["__push"]]
        else:
            new = value
        if old is UNDEFINED:
            key = _intern(key)  # one string per key for all objects
            bucket = index.get(key)
            if bucket is None:
                bucket = index[key] = {}
            bucket[oid] = None
        elif old is new or js_same(old, new):
            continue  # an identical write is a no-op (SPEC §0-16)
        facts[key] = new
        changed = True
        if key in LINK_KEYS and obj.kind == "segment":
            relink(obj, key, old, new)
    return changed


def write_pairs(context: tuple[Any, ...], obj: GraphObject, oid: str, pairs: Any) -> bool:
    """:func:`_write_all` of ``pairs`` (a dict of facts, or ``[key, value]`` pairs) with
    ``context`` as :func:`apply_run` takes it."""
    return _write_all(context[1], context[4], obj, oid,
                      pairs.items() if type(pairs) is dict else pairs)


def apply_run(context: tuple[Any, ...], cols: dict[str, Any], count: int,
              state: tuple[Any, ...], plain: bool) -> tuple[Any, ...]:
    """Apply ``count`` columnar mutations of a packed event's columns (as
    :func:`.events.packed_columns` returns them, which checks what this loop then takes for
    granted: each ``s`` a shape's number, ``v`` as long as their keys, each cast one of its
    shape's writes), each with the casts and whole records of its shape.

    ``context`` is ``(objects, index, concepts, create, relink, js_same, undefined)``: the
    engine's objects and key index, the tree's concepts by id, a callable creating a free
    object, the target's ``relink``, the equality of identical writes and the ``undefined``
    value (the last two are what ``_write_all`` uses too). ``state`` is ``(m, kv, o,
    revision, changed, pos)``: the next mutation, value and whole record of the columns,
    the engine's revision, whether a fact changed and the index of the next record; the
    state after the run is returned. ``plain`` says that no value of the columns is an
    object (no ``__push``). A record of a shape's ``follow`` that is not a provider error
    raises ``ValueError``; malformed columns raise ``KeyError``, ``TypeError``,
    ``ValueError`` or ``IndexError``.

    The run is applied a stretch of consecutive mutations of one shape at a time (a pack's
    run is usually one stretch, often all its mutations), so that what a shape says is
    looked up once per stretch, not once per mutation.
    """
    objects, index, concepts, create, relink = context[:5]
    m, kv, o, top, changed, pos = state
    end = m + count
    numbers, ids, revs = cols["s"][m:end], cols["id"][m:end], cols["rev"][m:end]
    values, other, shapes = cols["v"], cols["other"], cols["shape"]
    # per shape of the run (made at its first stretch): its keys, whether its writes take
    # the quick loop below, whether it writes a link key, the cast state its casts set (the
    # one concept's name and id, or a dict of several; None: none) and its follow
    run: dict[int, tuple[Any, ...]] = {}
    get_object = objects.get
    lo = 0
    for number, stretch in groupby(numbers):
        hi = lo + len(list(stretch))
        shape = run.get(number)
        if shape is None:
            keys, follow = shapes[number]
            mapped: dict[str, str] = {}
            for f in follow:
                if f is not None:
                    concept = concepts[f[0]]
                    mapped[concept.name or concept.id] = concept.id
            keys = tuple(map(_intern, keys))  # one string per key for all objects
            quick = plain and None not in follow and "_rev" not in keys \
                and len(set(keys)) == len(keys)
            name, cid = next(iter(mapped.items())) if len(mapped) == 1 else (None, None)
            shape = run[number] = (keys, quick, not set(keys).isdisjoint(LINK_KEYS), name,
                                   cid, mapped if len(mapped) > 1 else None, follow)
        keys, quick, link, name, cid, many, follow = shape
        pos += (hi - lo) * (1 + len(follow))  # the records of its mutations
        n = len(keys)
        if quick and not link:
            # What _write_all does, inlined for writes that can be told apart by key (no
            # key twice, no object value, no link to keep): a replay spends most of its
            # time here (one pass per columnar mutation of the session). First each
            # mutation's object, its ``_rev`` and its casts (the cast state is apart from
            # the facts), then the writes a key at a time, in the mutations' order: each
            # object's writes to each key come in the order a mutation at a time gives
            # them, and so do the ids each key's bucket of the key index takes.
            stop = kv + n * (hi - lo)
            table: list[dict[str, Any]] = []  # each mutation's object's facts
            lids: list[str] = []  # and the object's own id (which the key index holds)
            for oid, rev in zip(ids[lo:hi], revs[lo:hi]):
                obj = get_object(oid)
                if obj is None:
                    obj = create(oid)
                facts = own_facts(obj) if obj.shared else obj.facts
                facts["_rev"] = rev
                table.append(facts)
                lids.append(obj.id)
                if name is not None:
                    obj.mapped[name] = cid
                elif many is not None:
                    obj.mapped.update(many)
            for j, key in enumerate(keys):
                bucket = index.setdefault(key, {})
                for facts, lid, value in zip(table, lids, values[kv + j:stop:n]):
                    if key in facts:
                        old = facts[key]
                        if old is value or js_same(old, value):
                            continue  # an identical write is a no-op (SPEC §0-16)
                    else:
                        bucket[lid] = None
                    facts[key] = value
                    changed = True
            kv = stop
        else:  # through the write path, each mutation's writes in order
            for oid, rev in zip(ids[lo:hi], revs[lo:hi]):
                obj = get_object(oid)
                if obj is None:
                    obj = create(oid)
                own_facts(obj)["_rev"] = rev
                changed = _write_all(index, relink, obj, obj.id, zip(keys, values[kv:kv + n])) \
                    or changed
                kv += n
                for f in follow:
                    if f is None:  # a record among the casts: only a provider error may be
                        kind, data = other[o]
                        o += 1
                        if kind != "provider_error" or type(data) is not dict:
                            raise ValueError("columns: a record among a mutation's casts "
                                             "that is not a provider error")
                if name is not None:
                    obj.mapped[name] = cid
                elif many is not None:
                    obj.mapped.update(many)
        lo = hi
    if revs:
        last = max(revs)
        if last > top:
            top = last
    return end, kv, o, top, changed, pos


def _casts_in_place(record: dict[str, Any], effects: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether every effect is a cast, of this mutation, on the object its write wrote: then
    applying them after all the writes gives the state of applying each after its write.
    Raises :class:`Unfoldable` for an effect of another revision."""
    rev = record["rev"]
    items = record["items"]
    for kind, data in effects:
        at = data["at"]
        write = at[1]
        if at[0] != rev or type(at[0]) is not int:
            raise Unfoldable("an effect of another revision than the mutation before it")
        if kind != "cast" or type(write) is not int or write < 1:
            return False
        for item in items:  # the item of write number ``write`` (1-based, across items)
            count = len(item["set"])
            if write <= count:
                break
            write -= count
        else:
            return False
        if data["object"] != item["id"]:
            return False
    return True


# ---------------------------------------------------------------------- the general path


def replay_records(
    records: Iterable[tuple[str, Mapping[str, Any]]],
    new_target: NewTarget,
    *,
    providers: Mapping[str, Any] | None = None,
    sink: Any = None,
    verify: bool = True,
    from_checkpoint: bool = False,
) -> Any:
    """What :meth:`Engine.replay` does: the records through the fold, or through
    :func:`replay_general` from the last usable checkpoint (``from_checkpoint``) or when the
    fold leaves them to it."""
    if from_checkpoint:
        return replay_general(records, new_target, providers=providers, sink=sink,
                              verify=verify, from_checkpoint=True)
    stream = records if type(records) is list else list(records)
    try:
        return fold_records((stream,), new_target, providers=providers, sink=sink,
                            verify=verify)
    except Unfoldable:
        return replay_general(stream, new_target, providers=providers, sink=sink,
                              verify=verify)


def replay_chunks(
    chunks: Iterable[Any],
    records: Callable[[], list[tuple[str, Any]]],
    new_target: NewTarget,
    *,
    providers: Mapping[str, Any] | None = None,
    verify: bool = True,
) -> Any:
    """The fold of ``chunks`` (as :func:`fold_records` takes them); when it cannot vouch
    for them, :func:`replay_general` of ``records()`` (the same records, read again), which
    replays them or words the error. What ``replay_session(from_checkpoint=False)`` runs."""
    try:
        return fold_records(chunks, new_target, providers=providers, verify=verify)
    except Unfoldable:
        return replay_general(records(), new_target, providers=providers, verify=verify)


def replay_general(
    records: Iterable[tuple[str, Mapping[str, Any]]],
    new_target: NewTarget,
    *,
    providers: Mapping[str, Any] | None = None,
    sink: Any = None,
    verify: bool = True,
    from_checkpoint: bool = False,
) -> Any:
    """Replay ``records`` through the general path (see the module docstring): every
    effect filed under the write it belongs to first, then each record in order. With
    ``from_checkpoint`` the replay starts at the last usable checkpoint; otherwise
    checkpoints are skipped. Raises :class:`ReplayError` naming what is wrong."""
    stream: list[tuple[str, Mapping[str, Any]]] = [(str(k), d) for k, d in records]
    if from_checkpoint:
        stream = stream[usable_checkpoint(stream):]
        stream = [(k, d) for i, (k, d) in enumerate(stream) if k != "checkpoint" or i == 0]
    else:
        stream = [(k, d) for k, d in stream if k != "checkpoint"]
    target = new_target(providers)
    pending = target.effects
    main: list[tuple[int, str, Mapping[str, Any]]] = []
    loads = 0  # effects are keyed per loaded session: revisions restart at a reload
    for pos, (kind, data) in enumerate(stream):
        if type(data) is not dict and not isinstance(data, Mapping):
            raise ReplayError(f"records[{pos}]: data must be an object")
        if kind == "tree_loaded" or kind == "checkpoint":
            loads += 1
        if kind in ("cast", "uncast") and data.get("at") is not None:
            at = data["at"]
            if type(at) is not list or len(at) != 2:
                raise ReplayError(f"records[{pos}].at: must be [rev, write]")
            key = (loads * LOAD_STRIDE + int(at[0]), int(at[1]))
            pending.setdefault(key, []).append((kind, data))
        else:
            main.append((pos, kind, data))
    try:
        for pos, kind, data in main:
            _apply_record(target, pos, kind, data, verify)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ReplayError(f"records: malformed record ({type(exc).__name__}: {exc})") from None
    if target.effects:
        raise ReplayError(f"records: {len(target.effects)} effects point at no mutation write")
    return target.finish(sink)


def _apply_record(target: ReplayTarget, pos: int, kind: str, data: Mapping[str, Any],
                  verify: bool) -> None:
    """One record (of index ``pos``) through the engine's write path: the general path's
    step, which the fold also takes for every record it does not apply itself."""
    if kind == "mutation_applied":
        target.apply_mutation(data)
    elif kind in ("cast", "uncast"):
        target.apply_effect(kind, data)
    elif kind == "settled":
        target.settled(pos, data, verify)
    elif kind == "provider_error":
        pass
    elif kind == "seeded":
        target.apply_seed(data)
    elif kind == "tree_loaded":
        target.load_tree(data)
    elif kind == "checkpoint":
        target.load_checkpoint(pos, data, verify)
    elif kind == "concept_added":
        target.add_concept(data["parent"], data["schema"])
    elif kind == "concept_patched":
        target.patch_concept(data["concept"], data["updates"])
    elif kind == "concept_deleted":
        target.delete_concept(data["concept"])
    elif kind == "rolled_back":
        target.roll_back(int(data["to"]))
    elif kind == "run_failed":
        target.fail_run(data)
    else:
        raise ReplayError(f"records[{pos}]: unknown record type {kind!r}")


def usable_checkpoint(records: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
    """The index of the last ``checkpoint`` record a replay may start from (0 when none).

    A checkpoint is unusable when a later ``rolled_back`` goes back before its revision (the
    snapshot it needs is older than the checkpoint).
    """
    earliest: int | None = None
    for i in range(len(records) - 1, -1, -1):
        kind, data = records[i]
        if kind == "rolled_back" and type(data.get("to")) is int:
            earliest = data["to"] if earliest is None else min(earliest, data["to"])
        elif kind == "checkpoint" and (earliest is None
                                       or earliest >= int(data.get("revision", 0))):
            return i
    return 0
