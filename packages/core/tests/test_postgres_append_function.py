"""The PostgreSQL append function (schema 5, store/postgres_append.sql) against the rule it
implements a second time: every hash it chains and every tree node it stores equals the
one computed without it (json.dumps + hashlib, an in-memory RFC 9162 tree), for any batch
sizes, streams and payloads, and with concurrent writers; a retry under a key returns the
original positions; a conflict appends nothing; and the client notices a function that
chains otherwise."""

from __future__ import annotations

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
