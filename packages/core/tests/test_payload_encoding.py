"""Appending payload instances: the generated encoder for flat classes must give exactly
the bytes of the general path (cattrs unstructure + RFC 8785), or step aside."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from cladelog.core import schema
from cladelog.core.canonical import canonical_bytes
from cladelog.core.errors import InputError
from cladelog.core.registry import EventType, EventTypeRegistry
from hypothesis import given, settings
from hypothesis import strategies as st


@attrs.frozen
class Flat:
    name: str
    count: int
    ratio: float
    ok: bool
    tags: list[str]
    maybe: float | None = None
    scores: list[float] | None = None
    flags: list[bool] = attrs.field(factory=list)
    Ω: int = 0  # a non-ASCII field name: the general path takes this class


@attrs.frozen
class Plain:
    b_second: str
    a_first: int
    scores: list[float]
    maybe: int | None = None


@attrs.frozen
class Nested:
    inner: Plain
    extra: dict[str, int]


def _general(obj: Any, cls: type) -> tuple[Any, bytes]:
    data = schema.unstructure_checked(obj, cls)
    return data, canonical_bytes(data)


anything = st.one_of(
    st.text(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.none(), st.lists(st.text(max_size=3), max_size=3),
)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**60, 2**60),
    st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e16 - 2, 2.0**53, 2.0**53 + 2, 1e21,
                     0.1, 123456.789, -20.0]),
)


@settings(max_examples=400, deadline=None)
@given(b=st.one_of(st.text(), anything), a=st.one_of(st.integers(-2**54, 2**54), anything),
       scores=st.one_of(st.lists(numbers, max_size=4), anything),
       maybe=st.one_of(st.none(), st.integers(-2**54, 2**54), anything))
def test_the_flat_encoder_equals_the_general_path_or_steps_aside(
    b: Any, a: Any, scores: Any, maybe: Any
) -> None:
    dump = schema.flat_dumper(Plain)
    assert dump is not None
    obj = Plain(b, a, scores, maybe)
    done = dump(obj)
    try:
        expected = _general(obj, Plain)
        schema.structure(expected[0], Plain)
    except (ValueError, InputError):
        # the general path refuses it (not JSON, or not of the annotated type):
        # the fast encoder must not have accepted it
        assert done is None
        return
    if done is None:  # stepping aside is allowed (odd floats, subclasses)
        return
    data, encoded = done
    assert encoded == expected[1]
    assert data == expected[0]
    if isinstance(scores, list) and data["scores"]:
        assert data["scores"] is not scores  # the event does not share the caller's list


def test_the_flat_encoder_takes_the_common_cases() -> None:
    dump = schema.flat_dumper(Plain)
    assert dump is not None
    for obj in (Plain("x", 1, [0.5, 20.0, -3]), Plain("é\n\"\\\x01", -7, [], None),
                Plain("", 2**53 - 1, [1e-4, 123.25], 5)):
        done = dump(obj)
        assert done is not None, obj
        assert done[1] == _general(obj, Plain)[1]
    # members come out in sorted order, whatever the declaration order
    assert dump(Plain("b", 1, []))[1] == b'{"a_first":1,"b_second":"b","maybe":null,"scores":[]}'


@pytest.mark.parametrize("obj", [
    Plain("x", True, []),          # a bool is not an int
    Plain("x", 2**53, []),         # beyond the safe range
    Plain("x", 1, [math.nan]),     # no canonical form
    Plain("x", 1, [1e-7]),         # repr() differs from ECMAScript: the general path formats
    Plain("x", 1, [2.0**53]),      # integral beyond the safe range: likewise
    Plain("x", 1, (0.5,)),         # type: ignore[arg-type]  # a tuple for a list
    Plain("\ud800", 1, []),        # a lone surrogate
])
def test_the_flat_encoder_steps_aside_when_unsure(obj: Any) -> None:
    dump = schema.flat_dumper(Plain)
    assert dump is not None and dump(obj) is None


@attrs.define
class Derived:
    x: int
    y: int = attrs.field(init=False, default=3)  # cattrs leaves it out


def test_classes_with_other_fields_have_no_flat_encoder() -> None:
    assert schema.flat_dumper(Nested) is None
    assert schema.flat_dumper(Flat) is None  # the non-ASCII member name
    assert schema.flat_dumper(Derived) is None
    registry = EventTypeRegistry([EventType("t.derived", Derived)])
    _, data, _ = registry.prepare_encoded("t.derived", Derived(1))
    assert data == {"x": 1}


@pytest.mark.parametrize("obj,field", [
    (Plain("x", "1", []), "a_first"),      # type: ignore[arg-type]
    (Plain(3, 1, []), "b_second"),         # type: ignore[arg-type]
    (Plain("x", 1, ["a"]), "scores"),      # type: ignore[list-item]
    (Plain("x", 1, 0), "scores"),          # type: ignore[arg-type]  # not even iterable
])
def test_an_instance_with_a_wrongly_typed_field_is_refused(obj: Any, field: str) -> None:
    registry = EventTypeRegistry([EventType("t.plain", Plain)])
    with pytest.raises(InputError, match=field):
        registry.prepare_encoded("t.plain", obj)


def test_prepare_gives_the_canonical_bytes_of_what_it_returns() -> None:
    registry = EventTypeRegistry([EventType("t.plain", Plain), EventType("t.nested", Nested)])
    version, data, encoded = registry.prepare_encoded("t.plain", Plain("x", 1, [2.5]))
    assert (version, encoded) == (1, canonical_bytes(data))
    # the general path leaves the encoding to the store
    _, data, encoded = registry.prepare_encoded("t.nested", Nested(Plain("x", 1, []), {"k": 1}))
    assert encoded is None and data["inner"]["a_first"] == 1


@pytest.mark.parametrize("value", [
    0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e16 - 2, 2.0**53 - 1, 2.0**53, 2.0**53 + 2, -(2.0**53),
    1e21, 0.1, 123456.789, -20.0, 5e-324, 1.7976931348623157e308, 2**53 - 1, -(2**53 - 1),
])
def test_the_flat_encoder_at_the_float_boundaries(value: Any) -> None:
    """Where Python's repr and ECMAScript's number form part: equal bytes, or step aside."""
    dump = schema.flat_dumper(Plain)
    assert dump is not None
    obj = Plain("x", 1, [value])
    done = dump(obj)
    if done is not None:
        assert done[1] == _general(obj, Plain)[1]


# -- free JSON fields, and JSON objects as input ------------------------------------------------
@attrs.frozen
class Rich:
    rev: int
    target: str | None
    items: list[dict[str, Any]]
    cause: dict[str, Any]
    extra: Any = None
    tags: list[Any] = attrs.field(factory=list)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), numbers, st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)),
                                            inner, max_size=3),
                            st.tuples(inner)),
    max_leaves=8,
)


# values for each field of Rich: of its annotated type, or any other JSON
RICH_FIELDS = dict(
    rev=st.one_of(st.integers(-2**54, 2**54), json_values),
    target=st.one_of(st.none(), st.text(max_size=3), json_values),
    items=st.one_of(st.lists(st.dictionaries(st.text(max_size=3), json_values, max_size=3),
                             max_size=3), json_values),
    cause=st.one_of(st.dictionaries(st.text(max_size=3), json_values, max_size=3), json_values),
    extra=json_values, tags=st.one_of(st.lists(json_values, max_size=3), json_values),
)


def _general_from_dict(data: dict[str, Any], cls: type) -> tuple[Any, bytes]:
    obj = schema.structure(data, cls)
    out = schema.converter.unstructure(obj, cls)
    return out, canonical_bytes(out)


@settings(max_examples=400, deadline=None)
@given(**RICH_FIELDS)
def test_free_json_fields_and_json_objects_match_the_general_path(
    rev: Any, target: Any, items: Any, cause: Any, extra: Any, tags: Any
) -> None:
    registry = EventTypeRegistry([EventType("t.rich", Rich)])
    doc = {"rev": rev, "target": target, "items": items, "cause": cause, "extra": extra,
           "tags": tags}
    try:
        expected = _general_from_dict(doc, Rich)
    except (ValueError, InputError):
        with pytest.raises((ValueError, InputError)):  # refused, whichever path refuses it
            _, data, encoded = registry.prepare_encoded("t.rich", doc)
            if encoded is None:  # the general path leaves the canonical check to the store
                canonical_bytes(data)
        return
    _, data, encoded = registry.prepare_encoded("t.rich", doc)
    assert (encoded if encoded is not None else canonical_bytes(data)) == expected[1]
    assert canonical_bytes(data) == expected[1]
    if encoded is not None and isinstance(cause, dict):
        assert data["cause"] is not cause  # the event does not share the caller's dict


def test_json_objects_take_the_generated_encoder_and_keep_the_general_errors() -> None:
    registry = EventTypeRegistry([EventType("t.rich", Rich), EventType("t.plain", Plain)])
    doc = {"rev": 3, "target": None, "items": [{"k": [1, 2.5, "é"]}], "cause": {"why": 20.0}}
    _, data, encoded = registry.prepare_encoded("t.rich", doc)
    assert encoded is not None  # the fast path took it
    assert encoded == _general_from_dict(doc, Rich)[1]
    assert data["extra"] is None and data["tags"] == []  # defaults filled in, as cattrs does
    for bad, field in (({**doc, "surprise": 1}, "surprise"), ({"rev": 3}, "target"),
                       ({**doc, "rev": "3"}, "rev"), ({**doc, "items": [1]}, "items"),
                       ({**doc, "cause": {"x": float("nan")}}, "cause")):
        with pytest.raises((InputError, ValueError), match=field):
            _, data, encoded = registry.prepare_encoded("t.rich", bad)
            assert encoded is None  # the general path, which the store then checks
            canonical_bytes(data, path="$.data.cause")


# -- the generated loader (replay's payload instances) ------------------------------------------
def _same(a: Any, b: Any) -> bool:
    """Equal, member by member of the same exact types (3 == 3.0 is not enough)."""
    if attrs.has(type(a)):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _check_loader(cls: type, doc: Any) -> Any:
    """The loader gives what the strict converter gives, or steps aside; returns its answer."""
    load = schema.flat_loader(cls)
    assert load is not None
    fast = load(doc)
    try:
        general = schema.structure(doc, cls)
    except InputError:
        assert fast is None  # refused by the general path: never accepted by the loader
        return None
    if fast is not None:
        assert _same(fast, general), (fast, general)
    return fast


@settings(max_examples=400, deadline=None)
@given(b=st.one_of(st.text(), anything), a=st.one_of(st.integers(-2**54, 2**54), anything),
       scores=st.one_of(st.lists(numbers, max_size=4), anything),
       maybe=st.one_of(st.none(), st.integers(-2**54, 2**54), anything),
       extra=st.dictionaries(st.text(max_size=3), anything, max_size=2),
       drop=st.sets(st.sampled_from(["b_second", "a_first", "scores", "maybe"]), max_size=1),
       shuffle=st.randoms())
def test_the_loader_equals_the_general_path_or_steps_aside(
    b: Any, a: Any, scores: Any, maybe: Any, extra: Any, drop: Any, shuffle: Any
) -> None:
    doc = {"a_first": a, "b_second": b, "maybe": maybe, "scores": scores, **extra}
    for key in drop:
        doc.pop(key, None)
    items = list(doc.items())
    shuffle.shuffle(items)  # members in any order: canonical data comes sorted, input may not
    _check_loader(Plain, dict(items))


@settings(max_examples=300, deadline=None)
@given(**RICH_FIELDS)
def test_the_loader_of_free_json_fields_equals_the_general_path(
    rev: Any, target: Any, items: Any, cause: Any, extra: Any, tags: Any
) -> None:
    doc = {"cause": cause, "extra": extra, "items": items, "rev": rev, "tags": tags,
           "target": target}
    fast = _check_loader(Rich, doc)
    if fast is not None:  # containers are the instance's own, as cattrs makes them
        assert fast.cause is not cause and fast.items is not items and fast.tags is not tags
        assert all(x is not y for x, y in zip(fast.items, items, strict=True))


def test_the_loader_takes_the_common_cases_and_converts_as_cattrs_does() -> None:
    load = schema.flat_loader(Plain)
    for doc in ({"a_first": 1, "b_second": "x", "maybe": None, "scores": [0.5, 2]},
                {"scores": [], "maybe": 3, "b_second": "", "a_first": -7}):  # any order
        obj = load(doc)
        assert obj is not None and _same(obj, schema.structure(doc, Plain))
    obj = load({"a_first": 1, "b_second": "x", "maybe": None, "scores": [2]})
    assert obj.scores == [2.0] and type(obj.scores[0]) is float  # an int for a float


@attrs.frozen
class Checked:
    level: int = attrs.field(validator=attrs.validators.ge(0))
    name: str = attrs.field(converter=str.strip)


@pytest.mark.parametrize("doc", [
    {"a_first": 1, "b_second": "x", "scores": []},                          # missing member
    {"a_first": 1, "b_second": "x", "maybe": None, "scores": [], "z": 1},   # unknown member
    {"a_first": 1, "b_second": "x", "maybe": None, "scores": (0.5,)},       # a tuple
    {"a_first": 1, "b_second": "x", "maybe": None, "scores": [2**60]},      # not a safe number
    {"a_first": True, "b_second": "x", "maybe": None, "scores": []},        # a bool, not an int
    {"a_first": 1, "b_second": "x", "maybe": None, "scores": [math.inf]},
    [1, 2],
])
def test_the_loader_steps_aside_when_unsure(doc: Any) -> None:
    assert schema.flat_loader(Plain)(doc) is None
    # with or_else, the function hands such data to it (the registry's general path)
    assert schema.flat_loader(Plain, or_else=lambda d: ("general", d))(doc) == ("general", doc)


def test_validators_and_converters_run_and_refusals_take_the_general_path() -> None:
    load = schema.flat_loader(Checked)
    assert load({"level": 2, "name": "  a "}) == Checked(2, "a")
    assert load({"level": -1, "name": "a"}) is None
    assert schema.flat_loader(Checked, or_else=lambda d: "general")({"level": -1}) == "general"
    registry = EventTypeRegistry([EventType("t.checked", Checked)])
    with pytest.raises(InputError, match="level"):
        registry.structure("t.checked", {"level": -1, "name": "a"})
    assert registry.structure("t.checked", {"level": 0, "name": " b"}) == Checked(0, "b")


def test_classes_the_loader_does_not_cover_use_the_general_path() -> None:
    assert schema.flat_loader(Nested) is None and schema.flat_loader(Derived) is None
    registry = EventTypeRegistry([EventType("t.nested", Nested)])
    doc = {"inner": {"a_first": 1, "b_second": "x", "scores": [1]}, "extra": {"k": 2}}
    assert registry.structure("t.nested", doc) == Nested(Plain("x", 1, [1.0]), {"k": 2})
    with pytest.raises(InputError, match="inner"):
        registry.structure("t.nested", {**doc, "inner": 3})


# -- the page loader (replay's payload instances, a page of events at once) ----------------------
def _check_page(cls: type, docs: list[Any]) -> None:
    """The page loader gives, for a page, what the loader of one object gives for each
    (and so what the strict converter gives), or steps aside; ``load.many`` always gives
    the loader of one's answers."""
    many = schema.page_loader(cls)
    one = schema.flat_loader(cls)
    assert many is not None and one is not None
    each = [one(d) for d in docs]
    got = many(docs, False)
    if got is not None:
        assert None not in each  # it vouches for a page only when each object is vouched for
        assert len(got) == len(docs)
        assert all(_same(a, b) for a, b in zip(got, each, strict=True)), (got, each)
        for obj, doc in zip(got, docs, strict=True):
            assert _same(obj, schema.structure(doc, cls))
    elif docs and None not in each:  # it may step aside only for a page of objects it cannot
        pytest.fail(f"the page loader refused a page the loader of one took: {docs}")
    paged = one.many(docs)
    assert len(paged) == len(docs)
    assert all((a is None and b is None) or _same(a, b)
               for a, b in zip(paged, each, strict=True))


plain_docs = st.fixed_dictionaries(
    {"a_first": st.integers(-2**54, 2**54), "b_second": st.text(max_size=3),
     "scores": st.lists(numbers, max_size=3), "maybe": st.one_of(st.none(), st.integers())},
)


@settings(max_examples=300, deadline=None)
@given(good=st.lists(plain_docs, max_size=6), bad=st.lists(st.tuples(
    st.integers(0, 5), st.sampled_from(["a_first", "b_second", "scores", "maybe", "z"]),
    anything)), shuffle=st.randoms())
def test_the_page_loader_equals_the_loader_of_one(good: Any, bad: Any, shuffle: Any) -> None:
    docs = [dict(d) for d in good]
    for at, key, value in bad:  # a member of another type, or an unknown one
        if at < len(docs):
            docs[at][key] = value
    if docs:
        items = list(docs[0].items())
        shuffle.shuffle(items)  # members in another order than the canonical one
        docs[0] = dict(items)
    _check_page(Plain, docs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries(RICH_FIELDS), max_size=4))
def test_the_page_loader_of_free_json_fields_equals_the_loader_of_one(docs: Any) -> None:
    _check_page(Rich, docs)


@attrs.frozen
class Mixed:
    ok: bool
    ratio: float | None
    nums: list[float] | None
    words: list[str] | None
    doc: dict[str, Any] | None
    rows: list[dict[str, Any]] | None
    free: list[Any]
    label: str = attrs.field(kw_only=True, default="")


MIXED_FIELDS = dict(
    ok=st.one_of(st.booleans(), json_values), ratio=st.one_of(st.none(), numbers, json_values),
    nums=st.one_of(st.none(), st.lists(numbers, max_size=3), json_values),
    words=st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=3), json_values),
    doc=st.one_of(st.none(), st.dictionaries(st.text(max_size=2), json_values, max_size=2),
                  json_values),
    rows=st.one_of(st.none(), st.lists(st.dictionaries(st.text(max_size=2), json_values,
                                                       max_size=2), max_size=2), json_values),
    free=st.one_of(st.lists(json_values, max_size=2), json_values),
    label=st.one_of(st.text(max_size=2), json_values),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.fixed_dictionaries(MIXED_FIELDS), max_size=4))
def test_the_page_loader_of_optional_fields_equals_the_loader_of_one(docs: Any) -> None:
    _check_page(Mixed, docs)


def test_the_page_loader_takes_a_page_of_common_data_and_converts_as_cattrs_does() -> None:
    docs = [{"a_first": k, "b_second": str(k), "maybe": None if k % 2 else k,
             "scores": [0.5, k]} for k in range(5)]
    got = schema.page_loader(Plain)(docs, False)
    assert got == [schema.structure(d, Plain) for d in docs]
    assert all(type(x) is float for obj in got for x in obj.scores)  # ints for floats
    assert schema.page_loader(Plain)([], False) == []
    doc = {"ok": True, "ratio": 2, "nums": [1, 2.5], "words": None, "doc": {"k": [1]},
           "rows": [{"a": 1}], "free": [{"b": 2}], "label": "x"}
    (obj,) = schema.page_loader(Mixed)([doc], False)
    assert _same(obj, schema.structure(doc, Mixed)) and obj.label == "x"


def test_the_page_loader_copies_containers_unless_they_are_handed_over() -> None:
    doc = {"cause": {"k": 1}, "extra": None, "items": [{"a": 1}], "rev": 1, "tags": [1],
           "target": None}
    many = schema.page_loader(Rich)
    (copied,) = many([doc], False)
    assert copied.cause is not doc["cause"] and copied.tags is not doc["tags"]
    assert copied.items is not doc["items"] and copied.items[0] is not doc["items"][0]
    (kept,) = many([doc], True)  # the replay read's own objects: kept as they are
    assert kept.cause is doc["cause"] and kept.tags is doc["tags"]
    assert _same(kept, copied)


def test_a_page_with_one_bad_object_is_loaded_object_by_object() -> None:
    docs = [{"a_first": k, "b_second": "x", "maybe": None, "scores": []} for k in range(4)]
    docs[2]["a_first"] = "2"
    assert schema.page_loader(Plain)(docs, True) is None
    load = schema.flat_loader(Plain, or_else=lambda d: ("general", d))
    got = load.many(docs, True)
    assert got[2] == ("general", docs[2])
    assert [got[k] for k in (0, 1, 3)] == [Plain("x", k, []) for k in (0, 1, 3)]


@attrs.frozen
class Hooked:
    x: int

    def __attrs_post_init__(self) -> None:
        if self.x == 13:
            raise ValueError("unlucky")


@attrs.frozen(cache_hash=True)
class CachedHash:
    x: int


@attrs.define(slots=False)
class NoSlots:
    x: int


@attrs.define
class Mutable:
    x: int
    y: str


@attrs.define
class Watched:
    x: int

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value * 2)


@pytest.mark.parametrize(("cls", "stores"), [
    (Plain, True), (Mutable, True), (Checked, False), (Hooked, False),
    (Rich, False),  # a factory default: attrs' init tests for it, so the class is called
    (CachedHash, False), (NoSlots, False), (Watched, False),
])
def test_slots_are_stored_directly_only_where_attrs_init_does_nothing_else(
    cls: type, stores: bool
) -> None:
    names = [f.name for f in attrs.fields(cls)]
    assert schema._stores_only(cls, names) is stores
    ints, lists, nones = ("x", "a_first", "rev", "level"), ("scores", "items", "tags"), (
        "maybe", "target", "extra")
    doc = {n: (1 if n in ints else [] if n in lists else {} if n == "cause"
               else None if n in nones else " a ") for n in names}
    (obj,) = schema.page_loader(cls)([doc], False)
    general = schema.structure(doc, cls)
    assert _same(obj, general)
    if cls.__hash__ is not None and not any(isinstance(v, list | dict) for v in doc.values()):
        assert hash(obj) == hash(general)


def test_refusals_of_the_init_take_the_general_path_with_its_words() -> None:
    registry = EventTypeRegistry([EventType("t.hooked", Hooked), EventType("t.checked", Checked)])
    load = registry.loader("t.hooked")
    assert load.many([{"x": 1}, {"x": 2}]) == [Hooked(1), Hooked(2)]
    with pytest.raises(InputError, match="unlucky"):
        load.many([{"x": 1}, {"x": 13}])
    with pytest.raises(InputError, match="level"):
        registry.loader("t.checked").many([{"level": 1, "name": "a"}, {"level": -1, "name": "b"}])
    assert registry.loader("t.checked").many([{"level": 1, "name": " a "}]) == [Checked(1, "a")]
