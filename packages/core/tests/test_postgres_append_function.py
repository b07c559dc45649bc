"""The PostgreSQL append function (schema 5, store/postgres_append.sql) against the rule it
implements a second time: every hash it chains and every tree node it stores equals the
one computed without it (json.dumps + hashlib, an in-memory RFC 9162 tree), for any batch
sizes, streams and payloads, and with concurrent writers; a retry under a key returns the
original positions; a conflict appends nothing; and the client notices a function that
chains otherwise."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from cladelog.core.errors import ConcurrencyError, InputError, StoreError
from cladelog.core.store.base import PreparedEvent
from cladelog.core.testing.conformance import clock, expected_hash, prepared
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.postgres

GENESIS = "0" * 64


def _independent_chain(store: Any) -> None:
    """Every stored event's hash recomputed by expected_hash (json.dumps and hashlib, no
    cladelog), and every stored tree node by an in-memory MerkleTree over those hashes."""
    prev, versions, hashes = GENESIS, {}, []
    for e in store.read():
        versions[e.stream] = versions.get(e.stream, 0) + 1
        assert e.stream_version == versions[e.stream]
        assert e.prev_hash == prev
        want = expected_hash(prev, e.position, e.stream, e.stream_version, e.type, e.data,
                             dict(e.meta))
        assert e.hash == want, f"position {e.position}: the server chained otherwise"
        prev = e.hash
        hashes.append(e.hash)
    rebuilt = MerkleTree(leaf_hash(bytes.fromhex(h)) for h in hashes)
    size = rebuilt.size
    wanted = [(level, idx) for level in range(1, size.bit_length())
              for idx in range(size >> level)]
    stored = store.tree_nodes(wanted)
    assert [n for n in wanted if stored[n] != rebuilt.node(*n)] == []
    assert store.tree_root() == rebuilt.root()
    assert store.verify().ok


# ASCII keys (JCS sorts keys by UTF-16 units, json.dumps by code points: the same for
# ASCII); any text without lone surrogates as values; integers within 2**53; no floats
# (json.dumps does not write them as JCS does)
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | _text,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text("abcxyz_\"\\", max_size=4), inner, max_size=3),
    max_leaves=8,
)
_streams = st.sampled_from(["a", "b", 'q"uote', "back\\slash", "grüße", "emoji 😀", "tab\t"])
_event = st.builds(
    lambda stream, data, actor: PreparedEvent(stream, "test.happened", 1, {"v": data},
                                              {"actor": actor}),
    _streams, _json, _text.filter(bool))
_batches = st.lists(st.lists(_event, min_size=1, max_size=40), min_size=1, max_size=6)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(_batches)
def test_the_server_chains_and_grows_the_tree_as_the_rule_says(pg_harness: Any,
                                                               batches: list[Any]) -> None:
    store = pg_harness.new()
    for batch in batches:
        recorded = store.append(batch, clock=clock)
        assert [e.hash for e in recorded] == [e.hash for e in store.read(recorded[0].position)]
    assert store.lock_held[1] == len(batches)  # every batch went through the function
    _independent_chain(store)
    store.close()  # one store per example: give its connections back now


def test_batch_sizes_across_tree_levels(pg_harness: Any) -> None:
    """Sizes that cross stored levels (16, 256) inside one call and between calls."""
    store = pg_harness.new()
    for k, n in enumerate([1, 14, 1, 17, 200, 31, 1, 300]):
        store.append(prepared(f"s{k % 3}", n, start=k * 1000), clock=clock)
    assert store.head().position == 565
    _independent_chain(store)


def test_concurrent_writers_chain_as_the_rule_says(pg_harness: Any) -> None:
    first = pg_harness.new()
    stores = [first] + [pg_harness.reopen(first) for _ in range(3)]
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(12):
                stores[k].append(prepared(f"w{k}", 1 + (i * 7 + k) % 23, start=i * 100),
                                 clock=clock)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(s.lock_held[1] for s in stores) == 48
    _independent_chain(first)


def test_a_retry_under_its_key_returns_the_original_positions(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 2), clock=clock)
    first = store.append(prepared("b", 3), idempotency_key="k-1", clock=clock)
    other = pg_harness.reopen(store)
    other.append(prepared("a", 4, start=2), clock=clock)  # the head moves on meanwhile
    again = other.append(prepared("b", 3), idempotency_key="k-1", clock=clock)
    assert [(e.position, e.hash) for e in again] == [(e.position, e.hash) for e in first]
    assert [e.position for e in again] == [3, 4, 5]
    assert store.head().position == 9
    with pytest.raises(InputError, match="'k-1' was used for a different batch"):
        other.append(prepared("b", 2), idempotency_key="k-1", clock=clock)
    assert store.head().position == 9 and store.stream_version("b") == 3


def test_a_conflict_appends_nothing(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 2) + prepared("b", 1), clock=clock)
    head = store.head()
    records = store.batch_records()
    with pytest.raises(ConcurrencyError) as caught:
        store.append(prepared("a", 1, start=2) + prepared("c", 1),
                     expected_versions={"a": 2, "b": 0, "c": 0},
                     idempotency_key="k-c", clock=clock)
    assert (caught.value.stream, caught.value.expected, caught.value.actual) == ("b", 0, 1)
    assert store.head() == head and store.batch_records() == records
    assert store.stream_version("c") == 0
    # the key was not used up: the same batch with the right versions goes in
    done = store.append(prepared("a", 1, start=2) + prepared("c", 1),
                        expected_versions={"a": 2, "b": 1, "c": 0},
                        idempotency_key="k-c", clock=clock)
    assert [e.position for e in done] == [4, 5]
    _independent_chain(store)


def test_the_client_notices_a_function_that_chains_otherwise(pg_harness: Any) -> None:
    """A function that hashes the body without its predecessor: the client's own
    computation differs, and the append says so (the test can fail: the check is real)."""
    from cladelog.core.store.postgres import _function_sql

    store = pg_harness.new()
    store.append(prepared("a", 2), clock=clock)
    wrong = _function_sql().replace("prev_raw := sha256(prev_raw || body);",
                                    "prev_raw := sha256(body);")
    assert wrong != _function_sql()
    pg_harness.raw_execute(store, wrong)
    with pytest.raises(StoreError, match=r"server chained position 3 .* does not follow "
                                         r"the chain rule"):
        store.append(prepared("a", 1, start=2), clock=clock)
    assert not store.verify().ok  # what it wrote is in the log, and verify names it


def test_the_tree_peaks_in_the_head_row_move_only_with_the_head(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 5), clock=clock)
    for sql in ("UPDATE cladelog_head SET tree_peaks = tree_peaks || tree_peaks",
                "UPDATE cladelog_head SET tree_peaks = NULL",
                "UPDATE cladelog_head SET tree_for = 'x'"):
        with pytest.raises(Exception, match="head must"):
            pg_harness.raw_execute(store, sql)
    # peaks that are not for the head (as a repair leaves them) are read from the tree
    pg_harness.unprotected(store, "UPDATE cladelog_head SET tree_for = NULL")
    store.append(prepared("a", 20, start=5), clock=clock)
    _independent_chain(store)


@pytest.mark.parametrize("events,expected", [(1, 0), (1, 1), (2, 3), (4, 4), (5, 0), (3, 5)])
def test_the_call_with_scalar_parameters_is_the_call_with_arrays(pg_harness: Any, events: int,
                                                                 expected: int) -> None:
    """A small batch sends its arrays' elements as parameters of their own (psycopg adapts
    a list in Python): the function gets the same arrays either way, so both calls return
    the same row, for batches on both sides of SCALAR_UPTO, with and without expected
    versions, conflicting or not. Each call runs in a transaction rolled back after it."""
    from cladelog.core.store import postgres
    from cladelog.core.store.base import encode_batch

    store = pg_harness.new()
    store.append(prepared("s0", 3) + prepared("s1", 2), clock=clock)
    batch = encode_batch([PreparedEvent(f"s{k % 3}", f"t.{k}", 1 + k % 2, {"k": k, "q": 'x"'},
                                        {"actor": "ü"}) for k in range(events)])
    rows = {}
    for right in (True, False):
        # s0 holds 3 events, s1 2, the others none; s1 is named wrongly for a conflict
        versions = {f"s{k}": (7 if k == 1 and not right else (3, 2)[k] if k < 2 else 0)
                    for k in range(expected)}
        args = postgres._call_args(batch, versions, f"key-{right}", "2026-01-02T03:04:05Z")
        assert len(args) == 13
        calls = [(postgres._APPEND_IN_TRANSACTION, args),
                 (postgres._append_sql(events, expected, True), postgres._scalar_params(args))]
        got = []
        with store._pool.connection() as conn:
            for sql, params in calls:
                with conn.transaction(force_rollback=True):
                    got.append(conn.execute(sql, [*params, None, None]).fetchone()[:9])
        assert got[0] == got[1]
        rows[right] = got[0]
    assert rows[True][0] == "ok" and rows[True][3:5] == (6, 5 + events)
    assert len(rows[True][5]) == events
    assert rows[False][0] == ("conflict" if expected > 1 else "ok")
    if expected > 1:
        assert rows[False][7:9] == ("s1", 2)
    assert store.head().position == 5  # every call was rolled back


def test_appends_of_every_size_take_the_path_their_size_picks(pg_harness: Any,
                                                              monkeypatch: Any) -> None:
    """Which statement a batch is sent with: up to SCALAR_UPTO events and expected versions,
    the scalar one; beyond, the arrays. Both chain as the rule says, and a conflict found on
    either path appends nothing."""
    from cladelog.core.store import postgres

    sent: list[str] = []
    store = pg_harness.new()
    store.append(prepared("a", 1, start=1000), clock=clock)  # the first one reads the peaks
    with store._pool.connection() as conn:
        real = type(conn).execute

    def spy(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if isinstance(query, str) and "cladelog_append_durably(" in query:
            sent.append("arrays" if query == postgres._APPEND else "scalar")
            assert query in (postgres._APPEND, postgres._append_sql(1, 0), postgres._append_sql(
                limit, 0), postgres._append_sql(1, 1))
        return real(self, query, params, **kw)

    monkeypatch.setattr(type(conn), "execute", spy)
    limit = postgres.SCALAR_UPTO
    for n in (1, limit, limit + 1):
        store.append(prepared("a", n, start=len(sent) * 10), clock=clock)
    with pytest.raises(ConcurrencyError):
        store.append(prepared("a", 1, start=99), expected_versions={"a": 0}, clock=clock)
    with pytest.raises(ConcurrencyError):
        store.append(prepared("a", 1, start=99),
                     expected_versions={f"z{k}": 0 for k in range(limit)} | {"a": 1},
                     clock=clock)
    assert sent == ["scalar", "scalar", "arrays", "scalar", "arrays"]
    assert store.head().position == 2 * limit + 3
    _independent_chain(store)


def _writer(pg_harness: Any, log: Any, async_after_us: str) -> Any:
    """Another store on ``log``'s schema whose one connection waits as long as
    ``async_after_us`` allows before an append counts as contended ('1e9': never, whatever
    the machine's load)."""
    store = pg_harness.reopen(log)
    with store._pool.connection() as conn:
        conn.execute(f"SET cladelog.async_after_us = '{async_after_us}'")
    return store


def test_an_append_commits_alone_only_right_after_its_own_previous_one(
        pg_harness: Any) -> None:
    """Schema 9: the procedure holds the head lock through the flush ('alone') only when no
    other append came since this connection's previous one; otherwise, and for a
    connection's first append, it releases the lock before the flush ('shared'). Appends
    that append nothing are neither; cladelog.async_after_us = -1 makes every append
    shared. Either way every acknowledged event is in the log, chained by the rule."""
    log = pg_harness.new()
    one, two = (_writer(pg_harness, log, "1e9") for _ in range(2))
    for i in range(4):  # alone: the first has no previous append on its connection
        one.append(prepared("a", 1, start=i), clock=clock)
    assert one.flushes == {"alone": 3, "shared": 1}
    for i in range(4, 10):  # taking turns: each append follows the other writer's
        (one if i % 2 else two).append(prepared("a", 1, start=i), clock=clock)
    assert one.flushes == {"alone": 3, "shared": 4} and two.flushes == {"alone": 0, "shared": 3}
    two.append(prepared("a", 1, start=10), clock=clock)  # one's last came between
    two.append(prepared("a", 1, start=11), clock=clock)  # two's own last: alone again
    assert two.flushes == {"alone": 1, "shared": 4}
    with pytest.raises(ConcurrencyError):
        two.append(prepared("a", 1, start=99), expected_versions={"a": 0}, clock=clock)
    two.append(prepared("a", 1, start=11), idempotency_key="k", clock=clock)
    two.append(prepared("a", 1, start=11), idempotency_key="k", clock=clock)  # repeated
    assert two.flushes == {"alone": 2, "shared": 4}
    forced = _writer(pg_harness, log, "-1")
    for i in range(12, 15):
        forced.append(prepared("a", 1, start=i), clock=clock)
    assert forced.flushes == {"alone": 0, "shared": 3}
    assert forced.head().position == 16
    _independent_chain(forced)


@pytest.mark.parametrize("size,bad", [(1, 0), (3, 2), (300, 299)])
def test_a_stream_or_type_without_a_canonical_form_is_refused_by_its_place(
        pg_harness: Any, size: int, bad: int) -> None:
    """A lone surrogate in a stream or type name is refused before anything is sent,
    naming the event's index in the batch (the function's path and the COPY path)."""
    from cladelog.core.errors import InputError

    store = pg_harness.new()
    for field in ("stream", "type"):
        events = prepared("s", size)
        e = events[bad]
        events[bad] = PreparedEvent("s\ud800" if field == "stream" else e.stream,
                                    "t\udfff" if field == "type" else e.type,
                                    e.schema_version, e.data, e.meta)
        where = "event" if size == 1 else f"events[{bad}]"
        with pytest.raises(InputError, match=rf"^{re.escape(where)}\.{field}: .*surrogate"):
            store.append(events)
    assert store.head().position == 0
