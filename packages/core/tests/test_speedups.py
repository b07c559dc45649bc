"""The optional compiled replay loop (``cladelog.core._speedups``) against the Python one.

The Python loop is the reference: for any rows, good or hostile, the compiled loop must
give the same events and the same error (type, position, message). The loader's
compiled constructor must give objects equal to the class's own ``__init__``.

``CLADELOG_REQUIRE_SPEEDUPS=1`` (CI sets it) turns a missing compiled module into a
failure instead of a skip, so a build that silently fell back to pure Python is seen.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from cladelog.core import _accel, canonical, schema
from cladelog.core.errors import CladelogError
from cladelog.core.events import GENESIS_HASH, RecordedEvent
from cladelog.core.store import base
from cladelog.core.store.base import Head, PreparedEvent, build_rows, verified_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if os.environ.get("CLADELOG_NO_SPEEDUPS"):  # the pure-Python run (tox -e core-pure)
    pytest.skip("CLADELOG_NO_SPEEDUPS is set: the compiled module is off",
                allow_module_level=True)
try:
    from cladelog.core import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - only where it could not be built
    if os.environ.get("CLADELOG_REQUIRE_SPEEDUPS"):
        raise
    pytest.skip("the compiled module is not built here", allow_module_level=True)


GENESIS = Head(0, GENESIS_HASH)


def run(kind: str, rows: list[Any], start: Head = GENESIS,
        decoders: Any = None, raw_decoders: Any = None) -> tuple[str, Any]:
    """Read ``rows`` with the compiled loop (``"c"``) or the Python loop (``"py"``): the
    events as plain tuples, or the error with the events read before it."""
    saved = _accel._SPEEDUPS
    _accel._SPEEDUPS = _speedups if kind == "c" else None
    out: list[RecordedEvent] = []
    try:
        for event in verified_events(iter(rows), start, decoders, raw_decoders):
            out.append(event)
    except CladelogError as exc:
        return "error", (type(exc).__name__, str(exc), [tuple(e) for e in out])
    finally:
        _accel._SPEEDUPS = saved
    return "ok", [tuple(e) for e in out]


@attrs.frozen
class Reading:
    sensor: str
    seq: int
    value: float


def _rows(n: int, *, meta: dict[str, Any] | None = None, streams: int = 1) -> list[tuple[Any, ...]]:
    """``n`` chained rows as a store holds them (the replay columns)."""
    events = [PreparedEvent(f"s{i % streams}", "t.reading" if i % 3 else "t.other", 1,
                            {"sensor": f"x{i}", "seq": i, "value": i / 4},
                            meta if meta is not None else {"actor": "a", "k": i % 2})
              for i in range(n)]
    _, raw = build_rows(events, GENESIS, {}, None, clock=lambda: "2026-11-30T00:00:00Z")
    return [r[:9] for r in raw]  # a RawRow ends with prev_hash, which replay does not read


def _load(d: Any) -> Any:
    return Reading(**d)


def _load_raw(stored: bytes) -> Any:
    """A decoder of the stored bytes: the sensor and the bytes, so that a test sees both."""
    import json

    return ("raw", json.loads(stored)["sensor"], stored)


def test_the_compiled_loop_is_the_one_used() -> None:
    assert _accel.speedups() is _speedups


def test_good_rows_give_the_same_events() -> None:
    rows = _rows(300, streams=7)
    decoders = {"t.reading": (1, _load)}
    assert run("c", rows) == run("py", rows)
    c = run("c", rows, decoders=decoders)
    assert c == run("py", rows, decoders=decoders)
    assert c[0] == "ok" and len(c[1]) == 300
    assert isinstance(c[1][1][5], Reading) and isinstance(c[1][0][5], dict)


def test_a_start_past_genesis_and_nested_meta() -> None:
    rows = _rows(20, meta={"trace": {"a": [1, 2]}, "n": None})
    start = Head(rows[4][0], rows[4][8])
    got = run("c", rows[5:], start)
    assert got == run("py", rows[5:], start)
    assert got[0] == "ok" and got[1][0][0] == 6
    # a meta that is not flat is not cached: every event has its own object
    monkey_events = list(verified_events(iter(rows[5:]), start))
    assert monkey_events[0].meta is not monkey_events[1].meta


def test_each_event_gets_its_own_meta() -> None:
    events = list(verified_events(iter(_rows(3)), Head(0, GENESIS_HASH)))
    events[0].meta["actor"] = "changed"
    assert events[2].meta["actor"] == "a"


# A column replaced by a value of another type or another content: the loops must agree
# on the error (or, where the value still verifies, on the events).
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(allow_nan=True),
    st.text(max_size=70), st.binary(max_size=70),
    st.just(b'{"sensor":"x","seq":1,"value":0.5}'), st.just(b"{}"), st.just(b"[1"),
    st.just(b"\xff\xfe"), st.just("0" * 64), st.just("\u00e9" * 64), st.just(b'{"a":1} '),
    st.just(b'"\xed\xa0\x80"'), st.just(["list"]), st.just(1.0),
    st.just("2026-11-30T00:00:00Z\ud800"), st.just('2026"\\\x01\x7f\u2028é'),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(at=st.integers(0, 11), column=st.integers(0, 8), value=HOSTILE,
       shape=st.sampled_from(["tuple", "list", "short", "long"]),
       decode=st.sampled_from(["none", "parsed", "raw"]))
def test_hostile_rows_give_the_same_outcome(at: int, column: int, value: Any,
                                            shape: str, decode: str) -> None:
    rows: list[Any] = _rows(12)
    row = list(rows[at])
    row[column] = value
    rows[at] = {"tuple": tuple(row), "list": row, "short": tuple(row[:8]),
                "long": (*row, None)}[shape]
    how = {"decoders": {"t.reading": (1, _load)}} if decode == "parsed" else (
        {"raw_decoders": {"t.reading": (1, _load_raw)}} if decode == "raw" else {})
    try:
        expected = run("py", rows, **how)
    except (TypeError, ValueError, AttributeError) as exc:  # what Python does, the C loop does
        with pytest.raises(type(exc)):
            run("c", rows, **how)
        return
    assert run("c", rows, **how) == expected


def test_a_decoder_refusal_is_worded_by_python() -> None:
    from cladelog.core.errors import InputError

    def refuse(d: Any) -> Any:
        if d["seq"] == 7:
            raise InputError("seq: seven")
        return d

    rows = _rows(12)
    got = run("c", rows, decoders={"t.reading": (1, refuse)})
    assert got == run("py", rows, decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and "position 8" in got[1][1] and len(got[1][2]) == 7


def test_raw_decoders_get_the_stored_bytes_in_both_loops() -> None:
    rows = _rows(30, streams=3)
    raw = {"t.reading": (1, _load_raw)}
    got = run("c", rows, raw_decoders=raw)
    assert got == run("py", rows, raw_decoders=raw)
    assert got[0] == "ok"
    for row, event in zip(rows, got[1]):
        if row[3] == "t.reading":  # the decoder's result, from the row's own bytes
            assert event[5] == ("raw", f"x{row[0] - 1}", row[6])
        else:
            assert isinstance(event[5], dict)
    # the compiled loop handles them itself: one call per event, never a dict, and no
    # hand-over to the Python loop (which would call the decoder a second time)
    calls: list[Any] = []
    counted = {"t.reading": (1, lambda stored: calls.append(type(stored)) or stored)}
    assert run("c", rows, raw_decoders=counted)[0] == "ok"
    assert calls == [bytes] * sum(row[3] == "t.reading" for row in rows)
    with pytest.raises(ValueError, match="both name"):
        verified_events(iter(rows), GENESIS, {"t.reading": (1, _load)}, raw)


@pytest.mark.parametrize("kind", ["c", "py"])
def test_a_raw_decoder_refusal_names_the_position(kind: str) -> None:
    from cladelog.core.errors import InputError

    def refuse(stored: bytes) -> Any:
        if b'"seq":7' in stored:
            raise InputError("seq: seven")
        if b'"seq":8' in stored:
            raise ValueError("not what a packed event holds")
        return stored

    rows = _rows(12)
    got = run(kind, rows, raw_decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and got[1][0] == "InputError" and len(got[1][2]) == 7
    assert got[1][1].startswith("event at position 8 (t.reading): seq: seven")
    got = run(kind, rows[8:], Head(rows[7][0], rows[7][8]),
              raw_decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and got[1][0] == "ChainError" and got[1][2] == []
    assert "position 9" in got[1][1] and "not valid JSON" in got[1][1]


def test_an_error_of_the_row_source_propagates() -> None:
    def rows() -> Iterator[Any]:
        yield from _rows(3)
        raise OSError("disk")

    with pytest.raises(OSError, match="disk"):
        list(verified_events(rows(), Head(0, GENESIS_HASH)))


# -- the loader's compiled constructor ----------------------------------------------------
@attrs.define
class Mutable:
    a: int
    b: list[str]


@attrs.frozen
class WithValidator:
    a: int = attrs.field(validator=attrs.validators.gt(0))


@attrs.frozen
class WithConverter:
    a: int = attrs.field(converter=int)


@attrs.frozen
class WithPostInit:
    a: int

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "a", self.a + 1)


@attrs.frozen(cache_hash=True)
class CachedHash:
    a: int


@attrs.define(slots=False)
class NoSlots:
    a: int


@attrs.define(init=False)
class OwnInit:
    a: int

    def __init__(self, a: int) -> None:
        self.a = a * 2


@attrs.frozen
class KwOnly:
    a: int
    b: str = attrs.field(kw_only=True)


@pytest.mark.parametrize("cls,doc", [
    (Reading, {"sensor": "s", "seq": 3, "value": 1}),
    (Mutable, {"a": 1, "b": ["x"]}),
    (KwOnly, {"b": "x", "a": 2}),
])
def test_the_compiled_constructor_builds_what_init_builds(cls: type, doc: dict[str, Any]) -> None:
    load = schema.flat_loader(cls)
    assert "make(" in load.source
    got = load(dict(doc))
    want = schema.structure(dict(doc), cls)
    assert got == want and type(got) is cls
    assert attrs.asdict(got) == attrs.asdict(want)
    assert hash(got) == hash(want) if cls is not Mutable else True
    with pytest.raises(attrs.exceptions.FrozenInstanceError) if cls is not Mutable \
            else _no_error():
        got.a = 5  # type: ignore[misc]


@pytest.mark.parametrize("cls,doc", [
    (WithValidator, {"a": 0}), (WithConverter, {"a": 1}), (WithPostInit, {"a": 1}),
    (CachedHash, {"a": 1}), (NoSlots, {"a": 1}), (OwnInit, {"a": 1}),
])
def test_classes_whose_init_does_more_keep_it(cls: type, doc: dict[str, Any]) -> None:
    load = schema.flat_loader(cls)
    assert "make(" not in load.source
    if cls is WithValidator:
        assert load(doc) is None  # refused: the general path words the error
    else:
        assert load(doc) == cls(**doc)


def test_the_constructor_refuses_what_it_cannot_build() -> None:
    with pytest.raises(TypeError):
        _speedups.slot_maker(NoSlots, ("a",))
    with pytest.raises(TypeError):
        _speedups.slot_maker(Reading, ("nope",))
    make = _speedups.slot_maker(Reading, ("sensor", "seq", "value"))
    with pytest.raises(TypeError):
        make("s", 1)
    with pytest.raises(TypeError):
        make("s", 1, 2.0, sensor="x")


class _no_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


# -- laying out and hashing a batch ------------------------------------------------------
def _built(kind: str, events: list[PreparedEvent], head: Head,
           versions: dict[str, int]) -> tuple[str, Any]:
    saved = _accel._SPEEDUPS
    _accel._SPEEDUPS = _speedups if kind == "c" else None
    try:
        out, rows = build_rows(events, head, versions, None,
                               clock=lambda: "2026-11-30T01:02:03.456789Z")
    except CladelogError as exc:
        return "error", (type(exc).__name__, str(exc))
    finally:
        _accel._SPEEDUPS = saved
    return "ok", ([tuple(e) for e in out], rows)


NAMES = st.one_of(st.sampled_from(["s", "t.x", "é/ü", "a\"b\\c", "\u2028"]),
                  st.text(max_size=8))


@settings(max_examples=300, deadline=None)
@given(spec=st.lists(st.tuples(NAMES, NAMES, st.integers(1, 3), st.integers(-5, 5)),
                     min_size=1, max_size=12),
       start=st.integers(0, 2**40), known=st.dictionaries(NAMES, st.integers(0, 2**40)))
def test_a_batch_is_laid_out_and_chained_the_same(spec: list[Any], start: int,
                                                  known: dict[str, int]) -> None:
    events = [PreparedEvent(stream, type_, version, {"n": n}, {"m": [n]})
              for stream, type_, version, n in spec]
    head = Head(start, "ab" * 32 if start else GENESIS_HASH)
    got = _built("c", events, head, known)
    assert got == _built("py", events, head, known)
    if got[0] == "ok":  # and each hash covers the previous one and the body
        prev = head.hash
        for e in map(RecordedEvent._make, got[1][0]):
            assert e.prev_hash == prev and base.chain_hash(prev, e.body) == e.hash
            prev = e.hash


def test_a_batch_the_compiled_loop_does_not_expect_goes_to_python() -> None:
    class Odd(tuple):  # type: ignore[type-arg]
        pass

    events = [PreparedEvent("s", "t", 1, {"n": 1}, {})]
    head = Head(0, GENESIS_HASH)
    batch = base.encode_batch(events)
    odd = base.EncodedBatch(batch.events, [Odd(p) for p in batch.parts], batch.digest)
    assert _speedups.build_rows(list(odd.events), odd.parts, 0, GENESIS_HASH, bytes(32), {},
                                {}, lambda *a: (b"", b""), "now", RecordedEvent,
                                __import__("hashlib").sha256) is None
    saved = _accel._SPEEDUPS
    _accel._SPEEDUPS = _speedups
    try:
        assert build_rows(odd, head, {}, None, clock=lambda: "t")[1] == \
            build_rows(batch, head, {}, None, clock=lambda: "t")[1]
    finally:
        _accel._SPEEDUPS = saved


# -- the compiled payload loader -----------------------------------------------------------
@attrs.frozen
class Every:
    s: str
    i: int
    b: bool
    f: float
    ls: list[str]
    li: list[int]
    lb: list[bool]
    lf: list[float]
    os: str | None
    oi: int | None
    of: float | None
    olf: list[float] | None
    free: Any


class Sub(str):
    pass


class IntSub(int):
    pass


ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-2**60, 2**60), st.sampled_from([2**53 - 1, 2**53,
                                                                           -(2**53) + 1]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
    st.builds(Sub, st.text(max_size=2)), st.builds(IntSub, st.integers(-3, 3)),
    st.builds(tuple, st.lists(st.integers(), max_size=2)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
LISTS = st.lists(ODD, max_size=4)
NAMES_OF_EVERY = [f.name for f in attrs.fields(Every)]


def _typed(value: Any) -> Any:
    """A value with the exact classes of everything inside it, for comparing."""
    if isinstance(value, list | tuple):
        return (type(value), [_typed(v) for v in value])
    if attrs.has(type(value)):
        return (type(value), [_typed(getattr(value, n)) for n in NAMES_OF_EVERY])
    return (type(value), value if value == value else "nan")


@settings(max_examples=1500, deadline=None)
@given(doc=st.fixed_dictionaries({n: st.one_of(ODD, LISTS) for n in NAMES_OF_EVERY}),
       drop=st.sampled_from([None, *NAMES_OF_EVERY]), extra=st.booleans(),
       shuffle=st.randoms(use_true_random=False))
def test_the_compiled_loader_equals_the_generated_one(doc: dict[str, Any], drop: str | None,
                                                      extra: bool, shuffle: Any) -> None:
    load = schema.flat_loader(Every)
    assert type(load).__name__ == "FlatLoader"
    items = sorted(doc.items())
    if drop:
        items = [kv for kv in items if kv[0] != drop]
    if extra:
        items.append(("zz", 1))
    if shuffle.random() < 0.3:
        shuffle.shuffle(items)
    d = dict(items)
    assert _typed(load(dict(d))) == _typed(load.python(dict(d)))


def test_the_compiled_loader_takes_the_common_case() -> None:
    load = schema.flat_loader(Every)
    doc = {"b": True, "f": 1, "free": {"x": [1]}, "i": 2, "lb": [False], "lf": [1, 2.5],
           "li": [3], "ls": ["a"], "of": None, "oi": 4, "olf": [2], "os": None, "s": "x"}
    got = load(doc)
    assert got == Every("x", 2, True, 1.0, ["a"], [3], [False], [1.0, 2.5], None, 4, None,
                        [2.0], {"x": [1]})
    assert type(got.f) is float and got.lf[0].__class__ is float
    assert got.ls is not doc["ls"] and got.free is doc["free"]  # lists copied, free JSON as is
    assert load(None) is None and load({}) is None and load([doc]) is None
    with pytest.raises(TypeError):
        load()


# -- the compiled payload encoder ------------------------------------------------------------
@attrs.frozen
class Scalars:
    s: str
    i: int
    b: bool
    f: float
    ls: list[str]
    li: list[int]
    lf: list[float]
    lb: list[bool]
    os: str | None
    of: float | None
    olf: list[float] | None


SCALAR_FIELDS = [f.name for f in attrs.fields(Scalars)]
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-4, 0.99999e-4, 1e16, 9999999999999998.0, 2.0**53,
                     2.0**53 - 1, -(2.0**53), 0.1, 1 / 3, 5e-324, 1.7976931348623157e308,
                     123456.789, -2.5]),
)
TEXTS = st.one_of(st.text(), st.sampled_from(["\x00\x1f\x7f\"\\/", "é\u2028\U0001f600",
                                              "\ud800", "a\udfffb"]))
VALUES = st.one_of(FLOATS, TEXTS, st.integers(-2**60, 2**60), st.booleans(), st.none(),
                   st.builds(Sub, st.text(max_size=2)), st.builds(IntSub, st.integers(-3, 3)),
                   st.just(2**53 - 1), st.just(-(2**53) + 1), st.just(2**53))


@settings(max_examples=2000, deadline=None)
@given(values=st.fixed_dictionaries(
    {n: st.one_of(VALUES, st.lists(VALUES, max_size=3), st.tuples(VALUES))
     for n in SCALAR_FIELDS}))
def test_the_compiled_encoder_equals_the_generated_one(values: dict[str, Any]) -> None:
    dump = schema.flat_dumper(Scalars)
    assert type(dump).__name__ == "FlatDumper"
    obj = Scalars(**values)  # attrs checks no types: any value reaches the encoder
    got, want = dump(obj), dump.python(obj)
    assert _typed_dump(got) == _typed_dump(want)
    if got is not None:  # and the lists in the JSON object are copies
        for name in ("ls", "li", "lf", "lb", "olf"):
            value = getattr(obj, name)
            assert got[0][name] is not value or value is None


def _typed_dump(result: Any) -> Any:
    if result is None:
        return None
    d, text = result
    return [(k, _typed(v)) for k, v in d.items()], text


def test_the_compiled_encoder_takes_the_common_case_and_leaves_the_rest() -> None:
    dump = schema.flat_dumper(Scalars)
    obj = Scalars("a\n\"é", 2, True, 20.0, ["x"], [1], [0.5, 3], [False], None, 1e-3, None)
    d, text = dump(obj)
    assert d == {"s": "a\n\"é", "i": 2, "b": True, "f": 20.0, "ls": ["x"], "li": [1],
                 "lf": [0.5, 3], "lb": [False], "os": None, "of": 1e-3, "olf": None}
    assert text == ('{"b":true,"f":20,"i":2,"lb":[false],"lf":[0.5,3],"li":[1],"ls":["x"],'
                    '"of":0.001,"olf":null,"os":null,"s":"a\\n\\"\u00e9"}').encode()
    assert dump(attrs.evolve(obj, f=float("nan"))) is None
    assert dump(attrs.evolve(obj, s="\ud800")) is None
    assert dump(attrs.evolve(obj, i=2**53)) is None
    assert dump(attrs.evolve(obj, ls=("x",))) is None
    assert dump(Reading("s", 1, 0.5)) is None  # another class
    loose = schema.flat_dumper(NoSlots)  # a class without slots keeps the generated one
    assert type(loose).__name__ == "function"


@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6))
def test_times_that_need_quoting_verify_the_same(times: list[str]) -> None:
    """Each row its own recorded_at (one commit per event), escapes and non-ASCII included:
    the compiled loop quotes it itself and must rebuild the very bytes that were hashed."""
    rows: list[Any] = []
    head = GENESIS
    for n, when in enumerate(times):
        event = PreparedEvent("s", "t", 1, {"n": n}, {})
        try:
            _, raw = build_rows([event], head, {"s": n}, None, clock=lambda w=when: w)
        except CladelogError:  # a lone surrogate: no such row can be appended
            continue
        rows.append(raw[0][:9])
        head = Head(raw[0][0], raw[0][8])
    got = run("c", rows)
    assert got == run("py", rows)
    assert got[0] == "ok" and len(got[1]) == len(rows)


def test_the_registry_loader_falls_back_to_the_general_path_in_c() -> None:
    from cladelog.core.errors import InputError
    from cladelog.core.registry import EventType, EventTypeRegistry

    registry = EventTypeRegistry([EventType("t.every", Every, 1)])
    load = registry.loader("t.every")
    assert type(load).__name__ == "FlatLoader"  # no Python frame per event
    doc = {"b": True, "f": 1.5, "free": None, "i": 2, "lb": [], "lf": [], "li": [], "ls": [],
           "of": None, "oi": None, "olf": None, "os": None, "s": "x"}
    assert load(doc) == schema.structure(doc, Every)
    with pytest.raises(InputError, match="i"):  # refused by the checks: cattrs words it
        load({**doc, "i": "two"})
    with pytest.raises(TypeError):
        schema.flat_loader(Every).or_else(42)


# -- canonical JSON of plain values ------------------------------------------------------------
KEYS = st.one_of(st.text(max_size=4), st.sampled_from(["a", "B", "é", "\U0001f600", "\ufb01",
                                                       "\ud800", "\x00"]))
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), FLOATS, TEXTS,
              st.builds(Sub, st.text(max_size=2)), st.builds(IntSub, st.integers(-3, 3))),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(KEYS, inner, max_size=4),
                            st.dictionaries(st.integers(0, 3), inner, max_size=2)),
    max_leaves=12,
)


def _python_canonical(value: Any) -> bytes | None:
    try:
        return canonical._canonical_text(value, "$").encode("utf-8")
    except (CladelogError, ValueError):
        return None


@settings(max_examples=2000, deadline=None)
@given(value=JSONISH)
def test_the_compiled_canonical_encoder_equals_the_python_one_or_steps_aside(
        value: Any) -> None:
    got = _speedups.canonical(value)
    if got is not None:  # never a form the Python encoder would not give (or would refuse)
        assert got == _python_canonical(value)


def test_the_compiled_canonical_encoder_takes_the_common_cases() -> None:
    value = {"b": [1, 2.5, True, None, "x\n\u00e9"], "a": {"z": 20.0, "y": -0.0}, "é": ()}
    assert _speedups.canonical(value) == \
        '{"a":{"y":0,"z":20},"b":[1,2.5,true,null,"x\\n\u00e9"],"é":[]}'.encode()
    for aside in (1e-7, 1e21, 2.0**53, float("nan"), 2**53, {"\U0001f600": 1}, {1: 2},
                  Sub("x"), {"s": "\ud800"}, b"x", _nested(65)):
        assert _speedups.canonical(aside) is None, aside
    assert _speedups.canonical(_nested(64)) == canonical._canonical_text(_nested(64), "$") \
        .encode()


_POOL = ["a", "b", "B", "é", "\u0100", "ab", "a\x00", "\ufb01", "key", "k", ""]


@settings(max_examples=300, deadline=None)
@given(orders=st.lists(st.permutations(_POOL).map(lambda keys: keys[:]), min_size=1,
                       max_size=6),
       repeats=st.lists(st.integers(0, 5), min_size=1, max_size=40),
       sizes=st.lists(st.integers(0, len(_POOL)), min_size=1, max_size=40))
def test_dicts_sharing_their_keys_encode_in_canonical_order(
        orders: list[list[str]], repeats: list[int], sizes: list[int]) -> None:
    # many dicts with the same keys in the same insertion order (the encoder reuses the
    # order it sorted for the last one), others in other orders or with fewer keys, each
    # holding a dict of its own keys (encoded between the members of its parent)
    rows = []
    for i, r in enumerate(repeats):
        keys = orders[r % len(orders)][:sizes[i % len(sizes)]]
        rows.append({k: ({k2: j for j, k2 in enumerate(reversed(keys))} if j % 2 else j)
                     for j, k in enumerate(keys)})
    value = {"rows": rows, "copies": [{"".join(list(k)): 1 for k in _POOL}],
             "big": {f"k{i}": i for i in range(200, 0, -1)}}
    assert _speedups.canonical(value) == _python_canonical(value)
    assert _speedups.canonical(rows) == _python_canonical(rows)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@attrs.frozen
class Free:
    name: str
    d: dict[str, Any]
    items: list[Any]
    rows: list[dict[str, Any]]
    anything: Any
    maybe: dict[str, Any] | None


FREE_FIELDS = [f.name for f in attrs.fields(Free)]


@settings(max_examples=1500, deadline=None)
@given(values=st.fixed_dictionaries({n: st.one_of(JSONISH, st.lists(JSONISH, max_size=3))
                                     for n in FREE_FIELDS}))
def test_the_compiled_encoder_of_free_json_equals_the_generated_one(
        values: dict[str, Any]) -> None:
    dump = schema.flat_dumper(Free)
    assert type(dump).__name__ == "FlatDumper"
    obj = Free(**values)
    got, want = dump(obj), dump.python(obj)
    if got is None and want is not None:
        # stepping aside is allowed only where the compiled canonical encoder does
        assert any(_speedups.canonical(getattr(obj, n)) is None
                   for n in ("d", "items", "rows", "anything", "maybe"))
    else:
        assert _typed_dump(got) == _typed_dump(want)
    if got is not None:  # containers are copies, free JSON of type Any is not
        for n in ("d", "items", "rows", "maybe"):
            assert got[0][n] is not getattr(obj, n) or getattr(obj, n) is None
        assert got[0]["anything"] is obj.anything


def test_the_compiled_encoder_of_free_json_takes_the_common_case() -> None:
    dump = schema.flat_dumper(Free)
    obj = Free("n", {"b": 1, "a": [1.5]}, ("x", None), [{"k": True}], {"z": {}}, None)
    d, text = dump(obj)
    assert text == (b'{"anything":{"z":{}},"d":{"a":[1.5],"b":1},"items":["x",null],'
                    b'"maybe":null,"name":"n","rows":[{"k":true}]}')
    assert d["items"] == ["x", None] and type(d["items"]) is list  # a tuple becomes a list
    assert dump(attrs.evolve(obj, rows=[1])) is None  # not a list of dicts
    assert dump(attrs.evolve(obj, d=[1])) is None
