"""The one owner of the hashed body (``cladelog.core.body``): its layout against the
canonical encoder, and the replay read's page check against the same check one row at a
time.

A replay checks a page of rows at once; a page that does not check out is checked again
row by row, which names the first bad row. For any rows, good or hostile, reading them
all at once must give what reading them one at a time gives: the same events and the
same error (type, position, message).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from cladelog.core import body
from cladelog.core.canonical import CanonicalError, canonical_bytes
from cladelog.core.errors import ChainError, CladelogError, InputError
from cladelog.core.events import GENESIS_HASH, RecordedEvent
from cladelog.core.store.base import Head, PreparedEvent, build_rows, verified_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GENESIS = Head(0, GENESIS_HASH)
TIME = "2026-11-30T00:00:00.000000Z"


def run(
    how: str, rows: list[Any], start: Head = GENESIS, decoders: Any = None, raw_decoders: Any = None
) -> tuple[str, Any]:
    """Read ``rows`` in one read (``"pages"``) or one read per row (``"rows"``): the events
    as plain tuples, or the error with the events read before it."""
    out: list[RecordedEvent] = []
    try:
        if how == "pages":
            out.extend(verified_events(iter(rows), start, decoders, raw_decoders))
        else:
            for row in rows:
                (event,) = verified_events(iter([row]), start, decoders, raw_decoders)
                out.append(event)
                start = Head(event.position, event.hash)
    except CladelogError as exc:
        return "error", (type(exc).__name__, str(exc), [tuple(e) for e in out])
    return "ok", [tuple(e) for e in out]


@attrs.frozen
class Reading:
    sensor: str
    seq: int
    value: float


def _rows(n: int, *, meta: dict[str, Any] | None = None, streams: int = 1) -> list[tuple[Any, ...]]:
    """``n`` chained rows as a store holds them (the replay columns)."""
    events = [
        PreparedEvent(
            f"s{i % streams}",
            "t.reading" if i % 3 else "t.other",
            1,
            {"sensor": f"x{i}", "seq": i, "value": i / 4},
            meta if meta is not None else {"actor": "a", "k": i % 2},
        )
        for i in range(n)
    ]
    _, raw = build_rows(events, GENESIS, {}, None, clock=lambda: TIME)
    return [r[:9] for r in raw]  # a RawRow ends with prev_hash, which replay does not read


def _load(d: Any) -> Any:
    return Reading(**d)


def _load_raw(stored: bytes) -> Any:
    """A decoder of the stored bytes: the sensor and the bytes, so that a test sees both."""
    return ("raw", json.loads(stored)["sensor"], stored)


# -- the layout ------------------------------------------------------------------------------
NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(1, 2**53 - 1),
    version=st.integers(1, 2**53 - 1),
    schema=st.integers(1, 99),
    stream=NAMES,
    type_=NAMES,
    recorded_at=NAMES,
    prev=st.one_of(st.just(GENESIS_HASH), st.text(max_size=70)),
    data=st.dictionaries(
        NAMES,
        st.one_of(st.integers(-99, 99), NAMES, st.floats(allow_nan=False, allow_infinity=False)),
    ),
    meta=st.dictionaries(NAMES, NAMES, max_size=3),
)
def test_the_body_is_the_canonical_object_of_its_nine_members(
    position: int,
    version: int,
    schema: int,
    stream: str,
    type_: str,
    recorded_at: str,
    prev: str,
    data: dict[str, Any],
    meta: dict[str, Any],
) -> None:
    """The layout written out once (body.assemble_body, and the batch loop that caches its
    parts) against the canonical encoding of the whole body as one object."""
    try:
        prev.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(CanonicalError, match="prev_hash"):
            body.encode_body(
                position=position,
                stream=stream,
                stream_version=version,
                type=type_,
                schema_version=schema,
                data=data,
                meta=meta,
                recorded_at=recorded_at,
                prev_hash=prev,
            )
        return
    members = {
        "position": position,
        "stream": stream,
        "stream_version": version,
        "type": type_,
        "schema_version": schema,
        "data": data,
        "meta": meta,
        "recorded_at": recorded_at,
        "prev_hash": prev,
    }
    expected = canonical_bytes(members)
    assert (
        body.encode_body(**{("type" if k == "type" else k): v for k, v in members.items()})
        == expected
    )
    if len(prev) == 64 and all(c in "0123456789abcdef" for c in prev):
        (event,), (row,) = body.chain_batch(
            [PreparedEvent(stream, type_, schema, data, meta)],
            [(canonical_bytes(data), canonical_bytes(meta))],
            position - 1 if position > 1 else 0,
            prev,
            {stream: version - 1},
            recorded_at,
        )
        if position > 1:
            assert event.body == expected
            assert body.row_body(row) == expected
            assert event.hash == body.chain_hash(prev, expected)


def test_members_that_cannot_be_in_a_body_are_named() -> None:
    good = {
        "position": 1,
        "stream": "s",
        "stream_version": 1,
        "type": "t.x",
        "schema_version": 1,
        "data": {},
        "meta": {},
        "recorded_at": TIME,
        "prev_hash": GENESIS_HASH,
    }
    for member, value in (
        ("stream", 1),
        ("type", None),
        ("recorded_at", b"x"),
        ("prev_hash", 5),
        ("position", "1"),
        ("stream_version", 1.0),
        ("schema_version", True),
        ("stream", "a\ud800"),
    ):
        with pytest.raises(CanonicalError, match=member):
            body.encode_body(**{**good, member: value})
    with pytest.raises(InputError, match=r"event at position 1: stream: .*surrogate"):
        body.chain_batch(
            [PreparedEvent("a\ud800", "t.x", 1, {}, {})],
            [(b"{}", b"{}")],
            0,
            GENESIS_HASH,
            {},
            TIME,
        )
    with pytest.raises(InputError, match="event at position 1: recorded_at: must be"):
        body.chain_batch(
            [PreparedEvent("a", "t.x", 1, {}, {})], [(b"{}", b"{}")], 0, GENESIS_HASH, {}, None
        )  # type: ignore[arg-type]


# -- the replay read -----------------------------------------------------------------------------
def test_good_rows_give_the_same_events() -> None:
    rows = _rows(300, streams=7)
    decoders = {"t.reading": (1, _load)}
    assert run("pages", rows) == run("rows", rows)
    got = run("pages", rows, decoders=decoders)
    assert got == run("rows", rows, decoders=decoders)
    assert got[0] == "ok" and len(got[1]) == 300
    assert isinstance(got[1][1][5], Reading) and isinstance(got[1][0][5], dict)
    # the events are the ones appended, as check_row (the verify walk) reads them too
    prev = GENESIS_HASH
    for row, event in zip(rows, got[1], strict=True):
        checked, prev = body.check_row((*row, prev), row[0], prev)
        assert checked.body == event[10] and checked.meta == event[6]


def test_a_start_past_genesis_and_nested_meta() -> None:
    rows = _rows(20, meta={"trace": {"a": [1, 2]}, "n": None})
    start = Head(rows[4][0], rows[4][8])
    got = run("pages", rows[5:], start)
    assert got == run("rows", rows[5:], start)
    assert got[0] == "ok" and got[1][0][0] == 6
    # a meta that is not flat is parsed for each event: no event shares a part of another's
    events = list(verified_events(iter(rows[5:]), start))
    assert events[0].meta["trace"] is not events[1].meta["trace"]


def test_each_event_gets_its_own_meta() -> None:
    events = list(verified_events(iter(_rows(3)), GENESIS))
    events[0].meta["actor"] = "changed"
    assert events[2].meta["actor"] == "a"


# A column replaced by a value of another type or another content: reading all rows at
# once and one at a time must agree on the error (or, where it still verifies, the events).
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=70),
    st.binary(max_size=70),
    st.just(b'{"sensor":"x","seq":1,"value":0.5}'),
    st.just(b"{}"),
    st.just(b"[1"),
    st.just(b"\xff\xfe"),
    st.just("0" * 64),
    st.just("\u00e9" * 64),
    st.just(b'{"a":1} '),
    st.just(b'"\xed\xa0\x80"'),
    st.just(["list"]),
    st.just(1.0),
    st.just("2026-11-30T00:00:00Z\ud800"),
    st.just('2026"\\\x01\x7f\u2028é'),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    at=st.integers(0, 11),
    column=st.integers(0, 8),
    value=HOSTILE,
    shape=st.sampled_from(["tuple", "list", "short", "long"]),
    decode=st.sampled_from(["none", "parsed", "raw"]),
)
def test_hostile_rows_give_the_same_outcome(
    at: int, column: int, value: Any, shape: str, decode: str
) -> None:
    rows: list[Any] = _rows(12)
    row = list(rows[at])
    row[column] = value
    rows[at] = {"tuple": tuple(row), "list": row, "short": tuple(row[:8]), "long": (*row, None)}[
        shape
    ]
    how = (
        {"decoders": {"t.reading": (1, _load)}}
        if decode == "parsed"
        else ({"raw_decoders": {"t.reading": (1, _load_raw)}} if decode == "raw" else {})
    )
    try:
        expected = run("rows", rows, **how)
    except (TypeError, ValueError, AttributeError) as exc:  # not a row at all
        with pytest.raises(type(exc)):
            run("pages", rows, **how)
        return
    got = run("pages", rows, **how)
    assert got == expected
    if got[0] == "error" and got[1][0] == "ChainError":
        assert f"position {at + 1}" in got[1][1] or column == 0


@pytest.mark.parametrize("change,reason", [
    ({2: "5"}, "not an integer"),
    ({0: 5.0}, "not an integer"),
    ({4: 1.0}, "$.schema_version: must be an integer"),
    ({1: b"s0"}, "$.stream: must be a string"),
    ({3: 7}, "$.type: must be a string"),
    ({5: 5}, "recorded_at"),
    # two columns bad: the stream is named before recorded_at
    ({1: "s\ud800", 5: 5}, "$.stream: string contains a lone surrogate, not valid UTF-8"),
])
@pytest.mark.parametrize("how", ["pages", "rows"])
def test_a_column_of_the_wrong_type_is_named(change: dict[int, Any], reason: str,
                                            how: str) -> None:
    """A page refuses a column of the wrong type at once; the row-by-row check that follows
    names the row and the column, and the rows before it come out."""
    rows = _rows(12)
    row = list(rows[4])
    for column, value in change.items():
        row[column] = value
    rows[4] = tuple(row)
    got = run(how, rows)
    assert got[0] == "error"
    name, message, before = got[1]
    assert (name, message, len(before)) == (
        "ChainError", f"position 5: a stored column is not valid ({reason})", 4)


def test_a_tampered_row_is_named_and_the_rows_before_it_come_out() -> None:
    rows = _rows(40)
    bad = list(rows[29])
    bad[6] = bad[6].replace(b"x29", b"x92")
    rows[29] = tuple(bad)
    got = run("pages", rows)
    assert got[0] == "error"
    name, message, before = got[1]
    assert (name, len(before)) == ("ChainError", 29)
    assert "position 30" in message and "hash does not match" in message


def test_a_decoder_refusal_names_the_position() -> None:
    def refuse(d: Any) -> Any:
        if d["seq"] == 7:
            raise InputError("seq: seven")
        return d

    rows = _rows(12)
    got = run("pages", rows, decoders={"t.reading": (1, refuse)})
    assert got == run("rows", rows, decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and "position 8" in got[1][1] and len(got[1][2]) == 7


def test_raw_decoders_get_the_stored_bytes() -> None:
    rows = _rows(30, streams=3)
    raw = {"t.reading": (1, _load_raw)}
    got = run("pages", rows, raw_decoders=raw)
    assert got == run("rows", rows, raw_decoders=raw)
    assert got[0] == "ok"
    for row, event in zip(rows, got[1], strict=True):
        if row[3] == "t.reading":  # the decoder's result, from the row's own bytes
            assert event[5] == ("raw", f"x{row[0] - 1}", row[6])
        else:
            assert isinstance(event[5], dict)
    calls: list[Any] = []
    counted = {"t.reading": (1, lambda stored: calls.append(type(stored)) or stored)}
    assert run("pages", rows, raw_decoders=counted)[0] == "ok"
    assert calls == [bytes] * sum(row[3] == "t.reading" for row in rows)
    with pytest.raises(ValueError, match="both name"):
        verified_events(iter(rows), GENESIS, {"t.reading": (1, _load)}, raw)


@pytest.mark.parametrize("how", ["pages", "rows"])
def test_a_raw_decoder_refusal_names_the_position(how: str) -> None:
    def refuse(stored: bytes) -> Any:
        if b'"seq":7' in stored:
            raise InputError("seq: seven")
        if b'"seq":8' in stored:
            raise ValueError("not what a packed event holds")
        return stored

    rows = _rows(12)
    got = run(how, rows, raw_decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and got[1][0] == "InputError" and len(got[1][2]) == 7
    assert got[1][1].startswith("event at position 8 (t.reading): seq: seven")
    got = run(how, rows[8:], Head(rows[7][0], rows[7][8]), raw_decoders={"t.reading": (1, refuse)})
    assert got[0] == "error" and got[1][0] == "ChainError" and got[1][2] == []
    assert "position 9" in got[1][1] and "not valid JSON" in got[1][1]


def test_an_error_of_the_row_source_comes_after_the_rows_before_it() -> None:
    def rows() -> Iterator[Any]:
        yield from _rows(3)
        raise OSError("disk")

    seen: list[int] = []
    with pytest.raises(OSError, match="disk"):
        for event in verified_events(rows(), GENESIS):
            seen.append(event.position)
    assert seen == [1, 2, 3]


def test_a_gap_is_named() -> None:
    rows = _rows(10)
    got = run("pages", rows[:4] + rows[5:])
    assert got[0] == "error" and got[1][0] == "ChainError" and len(got[1][2]) == 4
    assert "missing: the next stored position is 6" in got[1][1]
    with pytest.raises(ChainError, match="position 5"):
        list(verified_events(iter(rows[:4] + rows[5:]), GENESIS))


@pytest.mark.parametrize("chunk", [1, 3, 128])
def test_stream_rows_chained_a_chunk_at_a_time_are_build_rows(chunk: int) -> None:
    """What PostgreSQL's COPY path sends while it chains equals the batch chained at once:
    the same events, rows and raw digests, across chunk boundaries and streams."""
    from cladelog.core.store.base import Head, build_rows, encode_batch, stream_rows
    from cladelog.core.testing.conformance import prepared

    batch = encode_batch(prepared("a", 7) + prepared("b", 4) + prepared("a", 3, start=7))
    head = Head(5, "ab" * 32)
    current = {"a": 0, "b": 0, "c": 9}
    want_digests: list[bytes] = []
    want, want_rows = build_rows(batch, head, current, None, lambda: "2026-12-07T00:00:00Z",
                                 want_digests)
    digests: list[bytes] = []
    recorded: list = []
    rows = list(stream_rows(batch, head, current, "2026-12-07T00:00:00Z", digests, recorded,
                            chunk=chunk))
    assert rows == want_rows and recorded == want and digests == want_digests
    assert current == {"a": 0, "b": 0, "c": 9}  # the caller's versions are not touched
