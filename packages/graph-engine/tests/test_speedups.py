"""The optional compiled replay step (``cladelog.graph_engine._speedups``) against Python.

The compiled ``Columns`` parses a packed event's columns straight from their JSON text and
applies them; ``events.packed_columns`` (json.loads plus its checks) and
``fold.apply_run_py`` are the reference. Every expected value here comes from them or from
the live engine: the parse gives the same values of the same types, or refuses (and the
fold then parses in Python); a fold gives the same engine either way.

``CLADELOG_REQUIRE_SPEEDUPS=1`` (CI sets it) turns a missing compiled module into a
failure; ``CLADELOG_NO_SPEEDUPS=1`` (tox -e graph-engine-pure) skips this module.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if os.environ.get("CLADELOG_NO_SPEEDUPS"):  # the pure-Python run
    pytest.skip("CLADELOG_NO_SPEEDUPS is set: the compiled module is off",
                allow_module_level=True)
try:
    from cladelog.graph_engine import _speedups  # type: ignore[attr-defined]
except ImportError:
    if os.environ.get("CLADELOG_REQUIRE_SPEEDUPS"):
        raise
    pytest.skip("the compiled module is not built here", allow_module_level=True)

from cladelog.core.canonical import canonical_bytes
from cladelog.graph_engine import events, fold
from cladelog.graph_engine.events import pack_records, packed_columns
from cladelog.graph_engine.fold import (
    _SCAN,
    Unfoldable,
    fold_records,
    packed_chunk,
    packed_replay_data,
)
from ge_random import random_session, state
from test_fold import chunked

Columns = _speedups.Columns


def typed(value: Any) -> Any:
    """A value with the type of every part spelled out (``1 == 1.0 == True`` in Python)."""
    if type(value) is list:
        return ["list", [typed(v) for v in value]]
    if type(value) is dict:
        return ["dict", [[k, typed(v)] for k, v in value.items()]]
    if type(value) is float and value != value:
        return ["nan"]
    return [type(value).__name__, value]


def compare(text: str, count: Any) -> None:
    """The compiled parse of ``text`` refuses, or agrees with the Python one; it never
    accepts what Python refuses."""
    data = {"columns": text, "count": count}
    try:
        expected: Any = packed_columns(data)
    except (ValueError, KeyError, TypeError):
        expected = None
    try:
        parsed = Columns(text, count, _SCAN)
    except ValueError:
        return  # left to the Python parser, which decides
    assert expected is not None, "the compiled parser accepted what Python refuses"
    got = parsed.columns()
    assert typed(got) == typed({k: expected[k] for k in got})
    assert parsed.order == expected["order"] and typed(parsed.other) == typed(expected["other"])


def packs(seed: int) -> list[dict[str, Any]]:
    """The packed event data of a random session, cut into packs of random sizes."""
    _, records, _ = random_session(seed)
    return [json.loads(json.dumps(pack_records([(k, d) for k, d in chunk])))
            for chunk in chunked(records, random.Random(seed))]


def test_packed_chunk_is_parsed_by_the_compiled_module() -> None:
    data = packs(1)[-1]
    chunk = packed_chunk(data)
    assert type(chunk) is Columns
    expected = packed_columns(data)
    assert typed(chunk.columns()) == typed({k: expected[k] for k in chunk.columns()})


@pytest.mark.parametrize("seed", range(40))
def test_every_pack_of_a_session_parses_the_same(seed: int) -> None:
    for data in packs(seed):
        Columns(data["columns"], data["count"], _SCAN)  # the packer's text is never refused
        compare(data["columns"], data["count"])


@pytest.mark.parametrize("seed", range(40))
def test_fold_of_compiled_columns_matches_python_and_live(seed: int) -> None:
    live, records, _ = random_session(seed)
    data = [json.loads(json.dumps(pack_records([(k, d) for k, d in chunk])))
            for chunk in chunked(records, random.Random(seed))]
    compiled = fold_records([packed_chunk(d) for d in data])
    python = fold_records([packed_columns(d) for d in data])
    assert state(compiled) == state(python) == state(live)


_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6)
            | st.sampled_from(["a", "G01", "s01", "é", "\"", "\\", "\n", "\u2028", "😀"]))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)


@st.composite
def column_texts(draw: Any) -> tuple[str, Any]:
    """Columns that mostly agree with each other, encoded in one of several ways."""
    order = draw(st.lists(st.sampled_from("mco"), max_size=12))
    m, c, o = order.count("m"), order.count("c"), order.count("o")
    ns = draw(st.lists(st.integers(0, 3), min_size=m, max_size=m))
    keys = draw(st.lists(st.sampled_from(["G01", "s01", "originNode", "k\"", "ké", "_id"]),
                         min_size=sum(ns), max_size=sum(ns)))
    cols: dict[str, Any] = {
        "order": "".join(order),
        "rev": draw(st.lists(st.integers(-5, 2**64) | _scalars, min_size=m, max_size=m)),
        "id": draw(st.lists(st.sampled_from(["o1", "n2", "é", "a\\b"]) | _scalars,
                            min_size=m, max_size=m)),
        "n": ns, "k": keys,
        "v": draw(st.lists(_values, min_size=sum(ns), max_size=sum(ns))),
        "cast": draw(st.lists(st.sampled_from(["A", "B", "ć"]), min_size=c, max_size=c)),
        "write": draw(st.lists(st.integers(0, 4), min_size=c, max_size=c)),
        "other": draw(st.lists(st.tuples(st.sampled_from(["cast", "seeded"]), _values)
                               .map(list), min_size=o, max_size=o)),
    }
    if draw(st.booleans()):  # break one column now and then
        key = draw(st.sampled_from(sorted(cols)))
        cols[key] = draw(st.sampled_from([[], [1], "x", None, [[]], [-1], [1.5]]))
    if draw(st.booleans()):
        del cols[draw(st.sampled_from(sorted(cols)))]
    items = list(cols.items())
    draw(st.randoms()).shuffle(items)
    text = json.dumps(dict(items), ensure_ascii=draw(st.booleans()),
                      separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    count = draw(st.sampled_from([len(order), len(order) + 1, None, str(len(order))]))
    return text, count


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column_texts())
def test_any_columns_parse_the_same_or_are_left_to_python(case: tuple[str, Any]) -> None:
    compare(*case)


def test_damaged_texts_never_crash_and_never_disagree() -> None:
    data = packs(5)[0]
    text = data["columns"]
    rng = random.Random(5)
    for cut in range(0, len(text), max(1, len(text) // 300)):
        compare(text[:cut], data["count"])
    for _ in range(300):
        i = rng.randrange(len(text))
        compare(text[:i] + rng.choice('"\\,[]{}:0-9tfne. \u00e9x') + text[i + 1:],
                data["count"])


def test_plain_values_the_fast_path_reads_itself() -> None:
    text = json.dumps({"order": "mm", "rev": [1, 2], "id": ["a", "b"], "n": [3, 2],
                       "k": ["G01", "s01", "x", "G01", "s01"],
                       "v": [True, -0, 123456789012345678, 1234567890123456789, 1.5e3],
                       "cast": [], "write": [], "other": []})
    got = Columns(text, 2, _SCAN).columns()
    assert typed(got["v"]) == typed([True, 0, 123456789012345678, 1234567890123456789, 1500.0])
    keys = got["k"]
    assert keys[0] is keys[3] and keys[1] is keys[4]  # one interned string per name


@pytest.mark.parametrize("text, why", [
    ('{"order":"m","rev":[1],"id":["a"],"n":[01],"k":["x"],"v":[1],"cast":[],"write":[],'
     '"other":[]}', "a leading zero in a count"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[1],"k":["x"],"v":[01],"cast":[],"write":[],'
     '"other":[]}', "a leading zero in a value"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[1],"k":["x"],"v":[tru],"cast":[],"write":[],'
     '"other":[]}', "a misspelt literal"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[1],"k":["x"],"v":["a\tb"],"cast":[],'
     '"write":[],"other":[]}', "a raw control character in a string"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[1],"k":["x"],"v":[1],"cast":[],"write":[],'
     '"other":[],"order":"m"}', "a repeated column"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[1],"k":["x"],"v":[1],"cast":[],"write":[]}',
     "a missing column"),
    ('{"order":"cm","rev":[1],"id":["a"],"n":[0],"k":[],"v":[],"cast":["A"],"write":[1],'
     '"other":[]}', "a cast before any mutation"),
    ('{"order":"m","rev":[1],"id":["a"],"n":[-1],"k":[],"v":[],"cast":[],"write":[],'
     '"other":[]}', "a negative count"),
    ('{"order":"mm","rev":[1,2],"id":["a","a"],"n":[-1,1],"k":[],"v":[],"cast":[],'
     '"write":[],"other":[]}', "a negative count the others make up for"),
    ('{"order":"mx","rev":[1],"id":["a"],"n":[0],"k":[],"v":[],"cast":[],"write":[],'
     '"other":[]}', "a letter that is no column"),
])
def test_columns_python_refuses_are_refused(text: str, why: str) -> None:
    count = text.split('"order":"')[1].index('"')
    if why != "a repeated column":  # json.loads takes the last; the compiled parse refuses
        with pytest.raises(ValueError):
            packed_columns({"columns": text, "count": count})
    with pytest.raises(ValueError):
        Columns(text, count, _SCAN)
    fixed = (text.replace("01", "1").replace("tru]", "true]").replace("\t", "\\t")
             .replace(',"order":"m"}', "}"))
    if why not in ("a cast before any mutation", "a negative count",
                   "a negative count the others make up for",
                   "a letter that is no column", "a missing column"):
        assert fixed != text  # the same text without its defect is read
        assert Columns(fixed, count, _SCAN).order == packed_columns(
            {"columns": fixed, "count": count})["order"]


def test_a_cast_of_no_mutation_is_unfoldable_either_way() -> None:
    data = pack_records([("mutation_applied", {"rev": 1, "target": "o", "cause": {},
                                               "items": [{"id": "o", "create": None,
                                                          "set": [["v", 1]]}]}),
                         ("cast", {"object": "o", "concept": "A", "at": [1, 1]})])
    cols = json.loads(data["columns"])
    assert cols["order"] == "o" * 2  # the last mutation of a pack is never columnar
    cols.update(order="mc", rev=[1], id=["o"], n=[1], k=["v"], v=[1], cast=["A"],
                write=[2], other=[])  # write 2 of a mutation that has one
    data["columns"], data["count"] = json.dumps(cols), 2
    for chunk in (packed_chunk(data), packed_columns(data)):
        with pytest.raises(Unfoldable):
            fold_records([chunk])
    assert type(packed_chunk(data)) is Columns


# -- a packed event's stored bytes (packed_split) ------------------------------------------

def full_parse(stored: Any) -> Any:
    """The reference of ``packed_replay_data``: all the bytes parsed as core's read parses
    data (UTF-8, one JSON value and nothing after it), less the audit; None when refused."""
    try:
        text = bytes(stored).decode("utf-8")
        value, end = _SCAN(text, 0)
    except (ValueError, StopIteration):
        return None
    if end != len(text):
        return None
    if type(value) is dict:
        value.pop("audit", None)
    return value


def decode_both(stored: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``packed_replay_data`` with and without the compiled split, which must agree with
    each other and with :func:`full_parse` (None: refused with ValueError)."""
    def run() -> Any:
        try:
            return typed(packed_replay_data(stored))
        except ValueError:
            return None

    compiled = run()
    with monkeypatch.context() as m:
        m.setattr(fold, "_split", None)
        python = run()
    expected = full_parse(stored)
    assert compiled == python == (None if expected is None else typed(expected))
    return compiled


@pytest.mark.parametrize("seed", range(40))
def test_stored_packs_are_split_without_their_audit(seed: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for data in packs(seed):
        stored = canonical_bytes(data)
        found = _speedups.packed_split(stored)
        assert found is not None, "the packer's bytes are always split by the compiled module"
        assert found[0] == data["columns"] and stored[found[1]:].startswith(b',"count":')
        decode_both(stored, monkeypatch)
        assert packed_replay_data(stored) == {k: v for k, v in data.items() if k != "audit"}


_strings = st.text(max_size=8) | st.sampled_from(
    ['{"a":[1]}', '\\"', "\\", '"', "\n", "\u0041", "é", "\u2028", "😀", "\\x", ""])


@st.composite
def stored_packs(draw: Any) -> bytes:
    """Data of roughly a packed event's shape, encoded canonically or not."""
    data: dict[str, Any] = {"audit": draw(_strings | _scalars),
                            "columns": draw(_strings | _scalars),
                            "count": draw(st.integers(0, 3) | _scalars)}
    for key in draw(st.lists(st.sampled_from(["errors", "settled", "status", "audit",
                                              "columns", "zz", "a"]), max_size=3)):
        data[key] = draw(_values)
    items = list(data.items())
    if draw(st.booleans()):
        draw(st.randoms()).shuffle(items)
    how = draw(st.sampled_from(["canonical", "ascii", "spaced"]))
    if how == "canonical":
        try:
            return canonical_bytes(dict(items))
        except Exception:  # NaN and the like: not storable, so no such stored bytes
            return b"{}"
    sep = (",", ":") if how == "ascii" else (", ", ": ")
    text = json.dumps(dict(items), ensure_ascii=how == "ascii", separators=sep)
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stored_packs())
def test_any_stored_bytes_decode_the_same_with_or_without_the_split(stored: bytes) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        decode_both(stored, monkeypatch)


def test_damaged_stored_packs_never_crash_and_never_disagree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stored = canonical_bytes(packs(5)[0])
    rng = random.Random(5)
    for cut in range(0, len(stored), max(1, len(stored) // 300)):
        decode_both(stored[:cut], monkeypatch)
    pieces = [b'"', b"\\\\", b",", b"}", b"\\u00e9", b"\\u", b"\\q", b"\\/", b"\\t",
              b"\\ud800", b"\\udc00", b"\xc3\xa9", b"\xc3", b"\xed\xa0\x80",
              b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"\x01", b"\x7f", b" ", b"\xff"]
    for _ in range(400):
        i = rng.randrange(len(stored))
        decode_both(stored[:i] + rng.choice(pieces) + stored[i + 1:], monkeypatch)


# the pieces a string's body is made of, valid or not, at the byte level: 64 bytes at a
# time are checked at once where they are plain, and the byte-by-byte scan decides the rest
_PIECES = [b"a", b"G06", b'\\"', b"\\\\", b"\\/", b"\\n", b"\\t", b"\\b", b"\\f",
           b"\\r", b"\\u00e9", b"\\u12", b"\\x", b"\\", b'"', b"\xc3\xa9", b"\xc3",
           b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\x01", b"\x1f", b"\x7f", b" ", b"\xff"]


def audit_pack(body: bytes) -> bytes:
    return b'{"audit":"' + body + b'","columns":"a\\"b","count":0}'


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES) | st.sampled_from([b"a" * 40, b'\\"a' * 20]),
                min_size=10, max_size=90))
def test_long_audits_decode_the_same_with_or_without_the_split(pieces: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        decode_both(audit_pack(b"".join(pieces)), monkeypatch)


def test_each_piece_at_each_offset_of_a_long_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every piece (and runs of 1 to 5 backslashes) at every offset around the first two
    64-byte boundaries of an audit whose plain bytes are an escaped JSON text, as a real
    one's are."""
    plain = (b'{\\"cause\\":[\\"a50000\\"],\\"t\\":1}' * 8)[:200]
    pieces = _PIECES + [b"\\" * k for k in range(1, 6)] + [b"\\" * k + b'"' for k in range(1, 6)]
    outcomes = []
    for piece in pieces:
        for at in [*range(0, 8), *range(54, 76), *range(118, 140)]:
            for body in (plain[:at] + piece + plain[at:], plain[:at] + piece):
                stored = audit_pack(body)
                ok = decode_both(stored, monkeypatch) is not None
                outcomes.append(ok)
                if ok:  # and the compiled split found the columns, not the full parse
                    found = _speedups.packed_split(stored)
                    assert found is not None and found[0] == 'a"b', body
    # about half are well formed: the scan is held to accepting them as well as refusing
    assert 0.3 < sum(outcomes) / len(outcomes) < 0.7


@pytest.mark.parametrize("stored", [
    b'{"audit":"","columns":"","count":0}',
    b'{"audit":"\\\\\\"","columns":"a\\"b\\\\c\\/d\\n\\t\\b\\f\\r","count":0}',
    b'{"audit":"\\u0041\\ud800\xc3\xa9\\/","columns":"\xf0\x9f\x98\x80\xc3\xa9","count":1}',
])
def test_packed_split_reads_the_columns_of_such_bytes(stored: bytes) -> None:
    text, end = _speedups.packed_split(stored)
    assert text == json.loads(stored)["columns"]
    assert stored[end:] == stored[stored.rindex(b',"count"'):]


@pytest.mark.parametrize("stored", [
    b'{"audit":"a","columns":"\\u0041","count":0}',  # a \u escape in the columns
    b'{"columns":"a","count":0}', b'{"audit":1,"columns":"a","count":0}',
    b'{"audit":"a", "columns":"a","count":0}', b'{"audit":"a","columns":"a"}',
    b'{"audit":"a\x01","columns":"a","count":0}', b'{"audit":"\\x","columns":"a","count":0}',
    b'{"audit":"\xed\xa0\x80","columns":"a","count":0}', b'{"audit":"a","columns":"a',
    b"", b'{"audit":"', b'{"audit":"\\u12","columns":"a","count":0}',
    b'{"audit":"\xe0\x80\x80","columns":"a","count":0}', b'{"audit":"\xc3","columns":"a"}',
])
def test_packed_split_leaves_other_bytes_to_the_full_parse(stored: bytes) -> None:
    assert _speedups.packed_split(stored) is None
    with pytest.raises(TypeError):
        _speedups.packed_split(stored.decode("utf-8", "replace"))


# -- the seed's writes (write_pairs) -------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "originNode", "targetNode", "_id", "tags", "é"])
_WRITTEN = st.sampled_from([1, 1.0, True, False, "n0", "n1", "s0", None, [1], {"x": 1},
                            {"__push": 3}, {"__push": [1]}]) | _scalars


def _engine() -> Any:
    """An empty replaying engine with nodes, a segment and free objects."""
    f = fold._Fold(None, True)
    for oid, kind in (("n0", "node"), ("n1", "node"), ("s0", "segment"), ("o0", "free")):
        f.engine._create(oid, kind)
    return f


def _seen(f: Any) -> Any:
    eng = f.engine
    return typed({"facts": {oid: o.facts for oid, o in eng._objects.items()},
                  "index": {k: list(b) for k, b in eng._index.items()},
                  "links": {oid: [o.incoming, o.outgoing] for oid, o in eng._objects.items()},
                  "warnings": eng.warnings})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["n0", "n1", "s0", "o0"]),
                          st.lists(st.tuples(_KEYS, _WRITTEN), max_size=4),
                          st.sampled_from(["dict", "tuple", "list"])), max_size=6))
def test_write_pairs_writes_as_the_python_reference(writes: list[Any]) -> None:
    compiled, python = _engine(), _engine()
    for oid, pairs, shape in writes:
        given_pairs: Any = (dict(pairs) if shape == "dict" else
                            tuple(pairs) if shape == "tuple" else [list(p) for p in pairs])
        results = [write(f._context(False), f.engine._objects[oid], oid, given_pairs)
                   for f, write in ((compiled, _speedups.write_pairs),
                                    (python, fold.write_pairs_py))]
        assert results[0] is results[1]
    assert _seen(compiled) == _seen(python)


@pytest.mark.parametrize("pairs, error", [
    ([("a", 1, 2)], ValueError), ([["a"]], ValueError), ([5], TypeError),
    ([(1, 2)], TypeError), ({1: 2}, TypeError), (iter([("a", 1)]), TypeError),
])
def test_write_pairs_refuses_as_python_does(pairs: Any, error: type) -> None:
    f = _engine()
    obj = f.engine._objects["o0"]
    if not isinstance(pairs, type(iter([]))):  # the reference takes any iterable of pairs
        with pytest.raises(error):
            fold.write_pairs_py(f._context(False), obj, "o0", pairs)
    with pytest.raises(error):
        _speedups.write_pairs(f._context(False), obj, "o0", pairs)
    with pytest.raises(TypeError):
        _speedups.write_pairs((), obj, "o0", {})


# -- the record packer (Packer) ------------------------------------------------------------

def seal_both(records: list[Any], size: int = 1000) -> Any:
    """The sealed packs of ``records`` (cut every ``size``) by the compiled packer and by
    ``events.RecordPacker``, which must agree: the same data, or the same error type."""
    def run(make: Any) -> Any:
        out: list[Any] = []
        try:
            packer = make()
            for kind, data in records:
                if len(packer) >= size:
                    out.append(packer.seal())
                    packer = make()
                packer.add(kind, data)
            out.append(packer.seal())
        except (ValueError, TypeError, KeyError) as exc:
            return ("error", type(exc).__name__, typed(out))
        return ("ok", typed(out))

    compiled = run(events.new_packer)
    assert compiled == run(events.RecordPacker)
    return compiled


def test_new_packer_is_the_compiled_one() -> None:
    packer = events.new_packer()
    assert isinstance(packer, _speedups.Packer) and not isinstance(packer, events.RecordPacker)


@pytest.mark.parametrize("seed", range(40))
def test_compiled_packer_seals_sessions_as_python_does(seed: int) -> None:
    _, records, _ = random_session(seed)
    got = seal_both(records, size=random.Random(seed).choice([1, 2, 3, 7, 1000]))
    assert got[0] == "ok"


_KINDS = st.sampled_from(["mutation_applied", "cast", "uncast", "provider_error", "settled",
                          "tree_loaded", "run_failed", "rolled_back", "seeded", "other"])


@st.composite
def odd_records(draw: Any) -> tuple[str, Any]:
    """A record of a packed kind with data of roughly, but not always, its shape."""
    kind = draw(_KINDS | st.sampled_from([1, None, ["cast"]]))
    rev = draw(st.integers(0, 3) | st.sampled_from([True, 2.0, "1", None]))
    oid = draw(st.sampled_from(["o", "p", 1, None]))
    pairs = draw(st.lists(st.sampled_from([["k", 1], ("j", None), ["k"], ["a", "b", "c"], 5,
                                           ["x", {"__push": 1}]]), max_size=3))
    item: Any = {"id": oid, "create": draw(st.sampled_from([None, None, "free"])),
                 "set": pairs}
    if draw(st.integers(0, 6)) == 0:
        item.pop(draw(st.sampled_from(["id", "create", "set"])))
    if draw(st.integers(0, 8)) == 0:
        item["extra"] = 1
    mutation: Any = {"rev": rev, "target": oid, "cause": {"c": 1},
                     "items": draw(st.sampled_from([[item], [item, item], [], "x"]))}
    if draw(st.integers(0, 6)) == 0:
        mutation.pop(draw(st.sampled_from(["rev", "target", "cause", "items"])))
    at = draw(st.sampled_from([None, [rev, 1], [rev, 2], (rev, 1), [rev, 0], [rev, True],
                               [rev, 2**70], [rev], "at", [1.0, 1]]))
    cast: Any = {"object": oid, "concept": draw(st.sampled_from(["A", "B"])), "at": at}
    if draw(st.integers(0, 6)) == 0:
        cast.pop(draw(st.sampled_from(["object", "concept", "at"])))
    if draw(st.integers(0, 8)) == 0:
        cast["extra"] = 1
    data = {"mutation_applied": mutation, "cast": cast, "uncast": cast}.get(
        kind if isinstance(kind, str) else "", {"capped": draw(st.booleans()), "n": rev})
    if draw(st.integers(0, 10)) == 0:
        data = draw(st.sampled_from([None, [], "data", 3]))
    return kind, data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(odd_records(), max_size=14), st.sampled_from([1, 2, 3, 1000]))
def test_compiled_packer_packs_any_records_as_python_does(records: list[Any],
                                                          size: int) -> None:
    seal_both(records, size)


_HELD = {"rev": 5, "target": "o", "cause": {"kind": "host"},
         "items": [{"id": "o", "create": None, "set": [["a", 1], ["b", 2]]}]}


@pytest.mark.parametrize("effect, order", [
    (("cast", {"object": "o", "concept": "A", "at": [5, 1]}), "mco"),
    (("cast", {"object": "o", "concept": "A", "at": (5, 2)}), "mco"),
    (("cast", {"object": "o", "concept": "A", "at": [5, 0]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5, 3]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [4, 1]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5, True]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5.0, 1]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5, 1, 0]}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5, 2**70]}), "ooo"),
    (("cast", {"object": "p", "concept": "A", "at": [5, 1]}), "ooo"),
    (("cast", {"concept": "A", "at": [5, 1], "x": 1}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": [5, 1], "x": 1}), "ooo"),
    (("cast", {"object": "o", "at": [5, 1], "x": 1}), "ooo"),
    (("cast", {"object": "o", "concept": "A", "at": None}), "moo"),  # not an effect
    (("uncast", {"object": "o", "concept": "A", "at": [5, 1]}), "ooo"),
    (("uncast", {"object": "o", "concept": "A", "at": None}), "moo"),  # not an effect
    (("provider_error", {"object": "o", "message": "m"}), "moo"),
])
def test_compiled_packer_judges_each_effect_as_python_does(effect: Any, order: str) -> None:
    """A held columnar mutation (two writes, revision 5, object o), one record after it,
    then a settle (never columnar): whether the mutation stays in columns (``m``) and the
    record with it (``c``), by the rules ``events.RecordPacker`` documents."""
    records = [("mutation_applied", _HELD), effect, ("settled", {"capped": None})]
    assert seal_both(records)[0] == "ok"
    packer = events.new_packer()
    for kind, data in records:
        packer.add(kind, data)
    assert json.loads(packer.seal()["columns"])["order"] == order


def test_the_collector_sees_what_a_packer_holds() -> None:
    packer = events.new_packer()
    packer.add("mutation_applied", _HELD)
    assert {id(packer._other), id(packer._order), id(_HELD)} <= {
        id(r) for r in gc.get_referents(packer)}
    freed: list[bool] = []

    class Marker:
        def __del__(self) -> None:
            freed.append(True)

    data: dict[str, Any] = {"marker": Marker()}
    packer.add("seeded", data)
    data["packer"] = packer  # a cycle only the collector can free
    del packer, data
    gc.collect()
    assert freed == [True]


def test_a_record_changed_while_held_does_not_crash_the_packer() -> None:
    mutation = {"rev": 1, "target": "o", "cause": None,
                "items": [{"id": "o", "create": None, "set": [["k", 1]]}]}
    packer = events.new_packer()
    packer.add("mutation_applied", mutation)
    mutation["items"][0]["set"] = "changed"
    with pytest.raises(ValueError, match="changed"):
        packer.add("settled", {})


# -- the packs' JSON text (encode_json) ----------------------------------------------------

_json_keys = st.text(max_size=4) | st.sampled_from(["a", "é", "\x00", '"'])
_json_values = st.recursive(
    _scalars | st.integers() | st.floats() | st.text(alphabet=st.characters(max_codepoint=0x7f))
    | st.sampled_from(["\x7f", "\x1f", "\u2028", "\ud800"]),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(_json_keys | st.sampled_from([1, None, 2.5, True]), inner, max_size=3),
    max_leaves=10)


def _dumps(value: Any) -> Any:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return None


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json_values)
def test_encode_json_writes_what_json_dumps_writes(value: Any) -> None:
    text = _speedups.encode_json(value)
    if text is not None:  # else the json module writes it (or refuses)
        assert text == _dumps(value)


def test_encode_json_leaves_what_it_does_not_write_to_the_json_module() -> None:
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    # non-ASCII text, keys json.dumps turns into strings, what allow_nan refuses, objects
    # that are no JSON, a lone surrogate, nesting past 200 levels
    for value in ["é", {1: 2}, float("nan"), [float("inf")], object(), {"a": ["\ud800"]},
                  deep, [1, {"k": 1.5, "s": {True: 1}}]]:
        assert _speedups.encode_json(value) is None, value
    assert _speedups.encode_json([[[]] * 2] * 2) == "[[[],[]],[[],[]]]"


@pytest.mark.parametrize("seed", range(20))
def test_packs_seal_to_the_same_text_with_or_without_the_compiled_encoder(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _, records, _ = random_session(seed)
    compiled = pack_records(records)
    monkeypatch.setattr(events, "_ENCODE_JSON", None)
    assert pack_records(records) == compiled


def test_parsing_and_folding_leave_no_memory_behind() -> None:
    data = packs(7)
    chunks = [packed_chunk(d) for d in data]
    assert all(type(c) is Columns for c in chunks)

    stored = [canonical_bytes(d) for d in data]

    _, records, _ = random_session(7)

    def once() -> None:
        pack_records(records)  # the compiled packer
        fold_records([packed_chunk(packed_replay_data(b)) for b in stored])
        _speedups.packed_split(stored[0][:-40])  # refused: frees what it built
        with contextlib.suppress(ValueError):  # a refused text frees what it parsed
            Columns(data[0]["columns"][:-9], data[0]["count"], _SCAN)

    for _ in range(20):
        once()
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(20):
            once()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            once()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes more after 200 more folds"


# -- a new object (new_object) -------------------------------------------------------------

def slots_of(obj: Any) -> dict[str, Any]:
    from cladelog.graph_engine.objects import GraphObject

    return {name: getattr(obj, name) for name in GraphObject.__slots__}


@pytest.mark.parametrize("oid,kind", [("n1", "node"), ("s-é", "segment"), ("", "free"),
                                      ("x" * 300, "node")])
def test_new_object_makes_what_the_class_makes(oid: str, kind: str) -> None:
    from cladelog.graph_engine.objects import GraphObject

    made, reference = _speedups.new_object(GraphObject, oid, kind), GraphObject(oid, kind)
    assert type(made) is GraphObject
    assert slots_of(made) == slots_of(reference)
    assert [type(v) for v in slots_of(made).values()] == [
        type(v) for v in slots_of(reference).values()]
    assert made.id is oid and made.kind is kind
    assert gc.is_tracked(made) == gc.is_tracked(reference)
    # its containers are its own
    other = _speedups.new_object(GraphObject, "other", kind)
    made.facts["k"] = 1
    made.open.append("c")
    made.mapped["F"] = "c"
    assert other.facts == {"_id": "other"} and other.open == [] and other.mapped == {}


def test_new_object_calls_a_class_it_cannot_lay_out() -> None:
    from cladelog.graph_engine.objects import GraphObject

    class Plain:  # a __dict__, no slots
        def __init__(self, oid: str, kind: str) -> None:
            self.args = (oid, kind)

    class Partial:  # slots, but not those GraphObject.__init__ sets
        __slots__ = ("id", "kind")

        def __init__(self, oid: str, kind: str) -> None:
            self.id, self.kind = oid, kind + "!"

    for _ in range(2):  # the learned layout follows the class asked for
        assert _speedups.new_object(Plain, "a", "node").args == ("a", "node")
        assert _speedups.new_object(Partial, "a", "node").kind == "node!"
        assert slots_of(_speedups.new_object(GraphObject, "a", "node")) == slots_of(
            GraphObject("a", "node"))
    with pytest.raises(TypeError):
        _speedups.new_object("not a class", "a", "node")
    with pytest.raises(TypeError):
        _speedups.new_object(GraphObject, "a")


def test_new_objects_are_freed() -> None:
    from cladelog.graph_engine.objects import GraphObject

    _speedups.new_object(GraphObject, "warm", "node")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            obj = _speedups.new_object(GraphObject, f"o{i}", "node")
            obj.mapped["self"] = obj  # a cycle: the collector must see the object
        del obj
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 200_000, grown


def test_write_pairs_copies_facts_a_snapshot_holds() -> None:
    from cladelog.graph_engine.jsvalue import UNDEFINED, js_same

    live, _, _ = random_session(3)
    oid = live.object_ids()[0]
    live.settle()
    revision = live.revisions()[-1]
    before = live.snapshot(revision)
    obj = live._objects[oid]
    assert obj.shared
    context = (live._objects, live._index, None, None, live._relink, js_same, UNDEFINED)
    assert _speedups.write_pairs(context, obj, obj.id, {"k": 1})
    assert not obj.shared and live._objects[oid].facts["k"] == 1
    assert live.snapshot(revision) == before
