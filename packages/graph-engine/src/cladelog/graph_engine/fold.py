"""The streaming replay fold: a full replay that applies each record as it is read.

:meth:`Engine.replay` from the first record (and ``replay_session(from_checkpoint=False)``)
rebuilds an engine from every record of a session. The general path (``Engine._replay``)
first copies all the records into lists and files every ``cast`` / ``uncast`` effect under
the (load, revision, write) it belongs to, so that the write path replays it right after
that write. On the SPEC §3 workload (260,000 records, half of them casts) that bookkeeping,
and keeping every record alive until the end, cost as much as applying the writes.

This fold takes the records as chunks (a packed event's records, say), in order, and applies
each chunk before the next is read. It relies on how a live engine records
(``docs/semantics.md``):

- a ``mutation_applied`` record comes before the effects of its writes, and all of them come
  before the next mutation record (mutations are serialized); ``provider_error`` records may
  come in between and change nothing on replay;
- a ``cast`` effect only sets the object's cast state, which no replayed write reads, so
  the casts of a mutation can be applied after all its writes, in their recorded order,
  provided each names the object its write wrote (the object then exists at that write).

So the fold holds one mutation back until the next record that is not one of its effects,
then applies its writes inline (the replay branch of ``Engine._apply_resolved`` and
``Engine._write``, without the per-write effect lookup) and its casts after them. A mutation
with any other effect (an ``uncast`` deletes a fact, so its place among the writes matters;
a cast on another object) goes through ``Engine._apply_resolved`` itself, with its effects
keyed exactly as the general path keys them. Every other record is handed to
``Engine._replay_one``, the general path's own step.

A packed event's columns (``events.RecordPacker``) are applied without building its records:
the packer lays out in columns only the mutations whose effects are all such casts, recorded
in the same event, so a columnar mutation's writes are applied at once and its casts as they
come; the whole records in between go through the path above.

Whatever the fold cannot vouch for (an effect with no mutation before it, a malformed
record, a digest that differs from the recording) raises :class:`Unfoldable`; the caller then
runs the general path on the same records, which replays them or says what is wrong in its
own words. So the fold never accepts records the general path refuses, and both build the
same engine.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .engine import _LINK_KEYS, _LOAD_STRIDE, Engine, EngineConfig, Provider, RecordSink
from .events import _decode_pack, packed_columns
from .jsvalue import UNDEFINED, js_same
from .objects import GraphObject, own_facts

__all__ = ["Unfoldable", "apply_run", "fold_records", "packed_chunk", "packed_replay_data",
           "write_pairs"]

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


def fold_records(
    chunks: Iterable[Any],
    *,
    providers: Mapping[str, Provider] | None = None,
    sink: RecordSink | None = None,
    verify: bool = True,
) -> Engine:
    """Replay every record of ``chunks``, in order, into a new engine, with no provider
    call; ``checkpoint`` records are skipped (the replay starts from the first record).

    A chunk is a sequence of ``[type, data]`` pairs, or the columns of a packed event
    (from :func:`packed_chunk`). Raises :class:`Unfoldable` when the
    general path must decide (see the module docstring); errors raised while producing the
    chunks pass through unchanged."""
    fold = _Fold(providers, verify)
    for chunk in chunks:
        if type(chunk) is list:
            fold.feed(chunk)
        else:
            fold.feed_columns(chunk)
    return fold.finish(sink)


def packed_chunk(data: Any) -> Any:
    """The columns of a ``graph_engine.records_packed`` data object (schema version 2 or
    3, whose columns are the same) as :func:`fold_records` takes them:
    :func:`.events.packed_columns` (whose ``ValueError`` says what is wrong)."""
    return packed_columns(data)


def packed_replay_data(stored: bytes) -> Any:
    """A packed event's data, less its ``audit``, from the bytes the log stores (a decoder
    for core's chain-checked read, ``raw_decoders``): a replay reads the columns and never
    the audit, which is dropped as soon as it is read. orjson reads the bytes (the audit is
    one JSON string to it, which it reads at memory speed); the json module reads what
    orjson refuses, so the bytes are read as core's read parses data (UTF-8, one JSON value,
    nothing after it), ``ValueError`` when they are not."""
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

    def __init__(self, providers: Mapping[str, Provider] | None, verify: bool) -> None:
        eng = Engine.__new__(Engine)
        eng._setup(dict(providers or {}), EngineConfig(), None)
        eng._replaying = True
        self.engine = eng
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
                eng._replay_one(pos, kind, data, verify)
        self.pending, self.effects = pending, effects

    def _feed_columns(self, cols: Any) -> None:
        """The columnar mutations are applied as they come, their casts right after: the
        packer made sure every effect of such a mutation is a cast of its object at one of
        its writes, recorded before anything but provider errors. Each run of columnar
        letters (``m``, ``c``) goes to :func:`apply_run`; each run
        of whole records (``o``) goes through :meth:`_feed`, in order. A cast is still
        checked to belong to the columnar mutation right before it, since a replay must
        refuse what the general path refuses."""
        eng = self.engine
        order, other = cols["order"], cols["other"]
        columns = (cols["rev"], cols["id"], cols["n"], cols["k"], cols["v"], cols["cast"],
                   cols["write"])

        def run(context: tuple[Any, ...], lo: int, hi: int, state: tuple[Any, ...]
                ) -> tuple[Any, ...]:
            return apply_run(context, columns, order, lo, hi, state)
        end = len(order)
        # m, c, kv: the next mutation, cast and write; last: the object of the columnar
        # mutation whose casts may follow (None after any whole record but an error) and
        # its number of writes; the engine's revision; whether a fact changed
        state: tuple[Any, ...] = (0, 0, 0, None, 0, eng._rev, False)
        at = o = 0
        for match in _OTHER_RUNS.finditer(order):
            lo, hi = match.span()
            if lo > at:
                state = self._columnar(run, order, at, lo, state)
            records = other[o:o + hi - lo]
            self.feed(records)
            o += hi - lo
            if any(kind != "provider_error" for kind, _ in records):
                state = (*state[:3], None, 0, *state[5:])  # the casts of `last` are over
            at = hi
        if at < end:
            self._columnar(run, order, at, end, state)

    def _columnar(self, run: Any, order: str, lo: int, hi: int, state: tuple[Any, ...]
                  ) -> tuple[Any, ...]:
        """Apply the columnar records ``order[lo:hi]``; the state after them."""
        eng = self.engine
        if order[lo] == "m" and self.pending is not None:  # a mutation of a whole record
            self._flush(self.pending, self.effects)
            self.pending, self.effects = None, []
        context = self._context()
        state = (*state[:5], eng._rev, False)
        state = run(context, lo, hi, state)
        eng._rev = state[5]
        if state[6]:
            eng._dirty = True
        self.pos += hi - lo
        return state

    def _context(self, concepts: bool = True) -> tuple[Any, ...]:
        """What :func:`apply_run` and :func:`write_pairs` write through: see
        :func:`apply_run`. Writes alone do not need the
        tree's concepts (None without ``concepts``: a seed may come before any tree)."""
        eng = self.engine
        return (eng._objects, eng._index, eng._tree.concepts if concepts else None,
                self._create_free, eng._relink, js_same, UNDEFINED)

    def _create_free(self, oid: str) -> GraphObject:
        return self.engine._create(oid, "free")

    def finish(self, sink: RecordSink | None) -> Engine:
        """The engine, ready for live use (its sink attached)."""
        if self.pending is not None:
            try:
                self._flush(self.pending, self.effects)
            except _MALFORMED as exc:
                raise Unfoldable(f"{type(exc).__name__}: {exc}") from None
        eng = self.engine
        eng._replaying = False
        eng._undiscovered = True  # see Engine._catch_up
        eng._sink = sink
        return eng

    # ------------------------------------------------------------------ one mutation

    def _flush(self, record: dict[str, Any], effects: list[tuple[str, dict[str, Any]]]
               ) -> None:
        """Apply a mutation and the effects recorded after it."""
        if effects and not _casts_in_place(record, effects):
            self._apply_keyed(record, effects)
            return
        eng = self.engine
        rev = record["rev"]
        if rev > eng._rev:
            eng._rev = rev
        objects = eng._objects
        changed = False
        for item in record["items"]:
            oid = item["id"]
            obj = objects[oid] if oid in objects else eng._create(oid, item["create"] or "free")
            own_facts(obj)["_rev"] = rev
            changed = _write_all(eng._index, eng._relink, obj, obj.id, item["set"]) or changed
        if changed:
            eng._dirty = True
        if effects:
            concepts = eng._tree.concepts
            for _, data in effects:  # casts only (see _casts_in_place)
                c = concepts[data["concept"]]
                objects[data["object"]].mapped[c.name or c.id] = c.id

    def _seed(self, data: dict[str, Any]) -> None:
        """``Engine._apply_seed`` on replay: the seed objects with their facts, each written
        through the write path (Q9). The ``_id`` fact is written too, which changes nothing:
        it is the object's own id, set when the object was created."""
        eng = self.engine
        objects = eng._objects
        context = self._context(concepts=False)
        write = write_pairs
        changed = False
        for group, kind, flag in _SEED_GROUPS:
            for facts in data[group]:
                oid = facts["_id"]
                obj = objects[oid] if oid in objects else eng._create(oid, kind)
                if flag is not None:
                    changed = write(context, obj, obj.id, ((flag, True),)) or changed
                changed = write(context, obj, obj.id, facts) or changed
        if changed:
            eng._dirty = True

    def _apply_keyed(self, record: dict[str, Any],
                     effects: list[tuple[str, dict[str, Any]]]) -> None:
        """Apply a mutation through the engine, each effect replayed right after its write
        (keyed as ``Engine._replay`` keys it)."""
        eng = self.engine
        load = eng._loads * _LOAD_STRIDE
        for kind, data in effects:
            at = data["at"]
            eng._effects.setdefault((load + int(at[0]), int(at[1])), []).append((kind, data))
        eng._apply_resolved(record)
        if eng._effects:
            raise Unfoldable("an effect points at no write of its mutation")


def _write_all(index: dict[str, dict[str, None]], relink: Any, obj: GraphObject, oid: str,
               pairs: Iterable[Sequence[Any]]) -> bool:
    """Writes to one object, as ``Engine._write`` does them on replay; whether any changed
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
        if key in _LINK_KEYS and obj.kind == "segment":
            relink(obj, key, old, new)
    return changed


def write_pairs(context: tuple[Any, ...], obj: GraphObject, oid: str, pairs: Any) -> bool:
    """:func:`_write_all` of ``pairs`` (a dict of facts, or ``[key, value]`` pairs) with
    ``context`` as :func:`apply_run` takes it."""
    return _write_all(context[1], context[4], obj, oid,
                      pairs.items() if type(pairs) is dict else pairs)


def apply_run(context: tuple[Any, ...], columns: tuple[list[Any], ...], order: str,
                 lo: int, hi: int, state: tuple[Any, ...]) -> tuple[Any, ...]:
    """Apply the columnar records ``order[lo:hi]`` (letters ``m`` and ``c`` only) of a
    packed event's columns.

    ``context`` is ``(objects, index, concepts, create, relink, js_same, undefined)``: the
    engine's objects and key index, the tree's concepts by id, a callable creating a free
    object, ``Engine._relink``, the equality of identical writes and the ``undefined``
    value (the last two are what ``_write_all`` uses too). ``columns`` is ``(rev, id, n,
    k, v, cast, write)``. ``state`` is ``(m, c, kv, last, writes_of_last, revision,
    changed)``: the next mutation, cast and write of the
    columns, the object of the mutation whose casts may follow (or None) and its number of
    writes, the engine's revision and whether a fact changed; the state after the run is
    returned. A cast that is not one of the mutation before it raises ``ValueError``;
    malformed columns raise ``KeyError``, ``TypeError``, ``ValueError`` or ``IndexError``.
    """
    objects, index, concepts, create, relink = context[:5]
    revs, ids, ns, keys, values, casts, writes = columns
    m, c, kv, last, writes_of_last, top, changed = state
    for letter in order[lo:hi]:
        if letter == "m":
            oid, n, rev = ids[m], ns[m], revs[m]
            m += 1
            if rev > top:
                top = rev
            last = objects[oid] if oid in objects else create(oid)
            writes_of_last = n
            if type(n) is not int or n < 0 or kv + n > len(keys):
                raise ValueError("columns: a mutation with more writes than the columns hold")
            own_facts(last)["_rev"] = rev
            # the key index holds the object's own id, not the parsed copy of it
            if _write_all(index, relink, last, last.id, zip(keys[kv:kv + n],
                                                            values[kv:kv + n])):
                changed = True
            kv += n
        elif letter == "c":
            write = writes[c]
            if last is None or type(write) is not int or not 1 <= write <= writes_of_last:
                raise ValueError("columns: a cast that is not one of the mutation before it")
            concept = concepts[casts[c]]
            c += 1
            last.mapped[concept.name or concept.id] = concept.id
        else:
            raise ValueError(f"columns: {letter!r} is not a columnar letter")
    return m, c, kv, last, writes_of_last, top, changed


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
