"""The store conformance suite: every backend must pass these very tests.

A backend's test module subclasses :class:`StoreConformance` and provides a
``store_harness`` fixture returning a :class:`StoreHarness`::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store_harness(self, tmp_path):
            return MyHarness(tmp_path)

Expected hashes are computed here independently of cladelog's encoder (with
``json.dumps`` on inputs that need no float formatting), so two backends that
pass produce byte-identical events.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pytest

from ..errors import ChainError, ConcurrencyError, ImportConflictError, InputError, StoreError
from ..events import GENESIS_HASH, RecordedEvent
from ..store.base import Checkpoint, CheckpointMark, EventStore, Head, PreparedEvent

__all__ = ["StoreConformance", "StoreHarness", "expected_hash", "prepared"]

CLOCK_VALUE = "2026-01-01T00:00:00.000000Z"


def clock() -> str:
    return CLOCK_VALUE


class StoreHarness(Protocol):
    def new(self) -> EventStore:
        """A fresh, empty, initialised store."""

    def reopen(self, store: EventStore) -> EventStore:
        """A second, independent connection to the same store."""

    def raw_execute(self, store: EventStore, sql: str) -> None:
        """Run one SQL statement on a raw connection (no cladelog code); raise on refusal."""

    def tamper(self, store: EventStore, position: int, column: str, value: Any) -> None:
        """Overwrite a stored column with the append-only protection lifted.

        ``column`` ``data_byte`` / ``meta_byte``: flip one bit in the middle of the
        stored ``data`` / ``meta`` bytes instead (``value`` is then ignored).
        """

    def unprotected(self, store: EventStore, sql: str) -> None:
        """Run one SQL statement with every protection the store's schema adds (triggers,
        rules) lifted, as a forger with full write access to the database would."""

    def cut_tail(self, store: EventStore, keep: int) -> None:
        """Delete every event after position ``keep`` with the protection lifted, with the
        idempotency records of those events and the Merkle tree nodes over them, and move
        whatever the backend keeps of its head back with them (a tail cut cleanly)."""


def fill_for_tree_upgrade(store: EventStore) -> list[RecordedEvent]:
    """The log a tree-upgrade test starts from: 150 events of stream ``a``, then 70 of
    ``b`` under the idempotency key ``batch-A`` (returned): 220 events, 3 complete
    subtrees of 64 leaves."""
    store.append(prepared("a", 150), clock=clock)
    return store.append(prepared("b", 70), idempotency_key="batch-A", clock=clock)


def check_tree_after_upgrade(store: EventStore, batch_a: Sequence[RecordedEvent]) -> None:
    """A store filled by :func:`fill_for_tree_upgrade` whose tree table an upgrade rebuilt:
    the chain verifies, a retry of ``batch-A`` appends nothing, and after more appends
    every root and a proof equal the in-memory tree's over the chain hashes."""
    from ..transparency.merkle import MerkleTree, leaf_hash

    assert store.verify().ok
    again = store.append(prepared("b", 70), idempotency_key="batch-A", clock=clock)
    assert [e.hash for e in again] == [e.hash for e in batch_a]
    store.append(prepared("c", 100), clock=clock)
    rebuilt = MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in store.read())
    assert [store.tree_root(n) for n in range(321)] == [rebuilt.root(n) for n in range(321)]
    assert store.inclusion_proof(200) == rebuilt.inclusion_proof(199)
    assert store.verify().ok


def prepared(stream: str, n: int, *, type: str = "test.happened", start: int = 0
             ) -> list[PreparedEvent]:
    return [PreparedEvent(stream, type, 1, {"i": start + i, "text": f"event {start + i}"},
                          {"actor": "conformance"}) for i in range(n)]


def expected_hash(prev: str, position: int, stream: str, stream_version: int, type: str,
                  data: dict[str, Any], meta: dict[str, Any]) -> str:
    """The hash ARCHITECTURE.md and docs/events.md define, computed without cladelog."""
    body = json.dumps(
        {"data": data, "meta": meta, "position": position, "prev_hash": prev,
         "recorded_at": CLOCK_VALUE, "schema_version": 1, "stream": stream,
         "stream_version": stream_version, "type": type},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    ).encode()
    return hashlib.sha256(bytes.fromhex(prev) + body).hexdigest()


_RECORD_TAMPERING = [
    # (statement, position reported, pattern of the reason). A store may keep records
    # for batches appended without a key too (PostgreSQL makes one up for its retry):
    # a forged range then also collides with one of those.
    (f"UPDATE batches SET digest = '{'0' * 64}' WHERE key = 'batch-1'", 4,
     "digest differs"),
    # pointing at other events: the first, unkeyed batch
    ("UPDATE batches SET first_position = 1, last_position = 3 WHERE key = 'batch-1'", 1,
     "digest differs|both cover position 1"),
    ("UPDATE batches SET first_position = 5 WHERE key = 'batch-1'", 5, "digest differs"),
    ("UPDATE batches SET last_position = 9 WHERE key = 'batch-1'", 7,
     "but the log ends at 6"),
    ("UPDATE batches SET first_position = 6, last_position = 4 WHERE key = 'batch-1'", 6,
     "not a range"),
    # a forged record claiming events another record covers
    ("INSERT INTO batches (key, digest, first_position, last_position) "
     "SELECT 'forged', digest, first_position, last_position FROM batches "
     "WHERE key = 'batch-1'", 4, "both cover position 4"),
    # a forged record for events appended without a key, with a made-up digest
    ("INSERT INTO batches (key, digest, first_position, last_position) "
     f"VALUES ('forged', '{'1' * 64}', 2, 3)", 2, "digest differs|both cover position 2"),
]


class StoreConformance:
    """Behaviour every :class:`EventStore` must show."""

    @pytest.fixture
    def store(self, store_harness: StoreHarness) -> Iterator[EventStore]:
        s = store_harness.new()
        yield s
        s.close()

    # -- appending -------------------------------------------------------------------------
    def test_empty_store_head_is_genesis(self, store: EventStore) -> None:
        assert store.head() == Head(0, GENESIS_HASH)
        assert list(store.read()) == []
        assert store.verify().ok

    def test_positions_and_stream_versions(self, store: EventStore) -> None:
        store.append(prepared("a", 2), clock=clock)
        store.append(prepared("b", 1) + prepared("a", 1, start=2), clock=clock)
        got = [(e.position, e.stream, e.stream_version) for e in store.read()]
        assert got == [(1, "a", 1), (2, "a", 2), (3, "b", 1), (4, "a", 3)]
        assert store.stream_version("a") == 3
        assert store.stream_version("b") == 1
        assert store.stream_version("none") == 0

    def test_hashes_match_the_documented_encoding(self, store: EventStore) -> None:
        recorded = store.append(prepared("a", 3), clock=clock)
        prev = GENESIS_HASH
        for i, e in enumerate(recorded, 1):
            want = expected_hash(prev, i, "a", i, "test.happened",
                                 {"i": i - 1, "text": f"event {i - 1}"}, {"actor": "conformance"})
            assert e.hash == want
            assert e.prev_hash == prev
            prev = want
        assert [e.hash for e in store.read()] == [e.hash for e in recorded]
        assert store.head() == Head(3, prev)

    def test_expected_version_conflict_appends_nothing(self, store: EventStore) -> None:
        store.append(prepared("a", 2), clock=clock)
        head = store.head()
        with pytest.raises(ConcurrencyError) as info:
            store.append(prepared("b", 1) + prepared("a", 1), expected_versions={"a": 1},
                         clock=clock)
        assert info.value.stream == "a" and info.value.actual == 2
        assert "'a'" in str(info.value)
        assert store.head() == head
        assert store.stream_version("b") == 0

    def test_expected_version_zero_means_new_stream(self, store: EventStore) -> None:
        store.append(prepared("a", 1), expected_versions={"a": 0}, clock=clock)
        with pytest.raises(ConcurrencyError):
            store.append(prepared("a", 1), expected_versions={"a": 0}, clock=clock)
        store.append(prepared("a", 1), expected_versions={"a": 1}, clock=clock)
        assert store.stream_version("a") == 2

    def test_same_expected_version_from_two_connections(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        other = store_harness.reopen(store)
        try:
            store.append(prepared("a", 1), expected_versions={"a": 0}, clock=clock)
            with pytest.raises(ConcurrencyError):
                other.append(prepared("a", 1), expected_versions={"a": 0}, clock=clock)
        finally:
            other.close()
        assert store.head().position == 1

    def test_idempotency_key_appends_once(self, store: EventStore) -> None:
        first = store.append(prepared("a", 3), idempotency_key="batch-1", clock=clock)
        again = store.append(prepared("a", 3), idempotency_key="batch-1", clock=clock)
        assert [e.hash for e in again] == [e.hash for e in first]
        assert store.head().position == 3
        with pytest.raises(InputError, match="idempotency_key"):
            store.append(prepared("a", 2), idempotency_key="batch-1", clock=clock)
        assert store.head().position == 3

    def test_empty_batch_is_a_no_op(self, store: EventStore) -> None:
        assert store.append([], clock=clock) == []
        assert store.head().position == 0

    # -- append-only, enforced by the database ---------------------------------------------
    @pytest.mark.parametrize("sql", [
        "UPDATE events SET type = 'x.y' WHERE position = 1",
        "UPDATE events SET data = data",
        "DELETE FROM events WHERE position = 2",
        "DELETE FROM events",
    ])
    def test_database_refuses_rewrites(
        self, store_harness: StoreHarness, store: EventStore, sql: str
    ) -> None:
        store.append(prepared("a", 3), clock=clock)
        before = [e.hash for e in store.read()]
        with pytest.raises(Exception, match="append-only"):
            store_harness.raw_execute(store, sql)
        assert [e.hash for e in store.read()] == before
        assert store.verify().ok

    def test_database_refuses_an_unlinked_insert(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 2), clock=clock)
        with pytest.raises(Exception, match="extend the log"):
            store_harness.raw_execute(
                store,
                "INSERT INTO events (position, stream, stream_version, type, schema_version, "
                "recorded_at, data, meta, hash, prev_hash) VALUES (7, 'z', 1, 'x.y', 1, 't', "
                "'1', '{}', "
                f"'{'1' * 64}', '{'2' * 64}')",
            )
        assert store.head().position == 2

    # -- a batch in chunks ----------------------------------------------------------------
    def test_a_batch_in_chunks_is_the_batch_at_once(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        """Same events, same hashes, same digest: one batch however it was split."""
        events = prepared("a", 5) + prepared("b", 3) + prepared("a", 4, start=5)
        other = store_harness.new()
        try:
            whole = other.append(events, idempotency_key="k", clock=clock)
        finally:
            other.close()
        chunks = [(events[:2], {}), (events[2:7], {"b": 0}), ([], {}), (events[7:], {"a": 0})]
        result = store.append_chunks(iter(chunks), idempotency_key="k", clock=clock)
        assert (result.first, result.last, result.count, result.repeated) == (1, 12, 12, False)
        assert result.head == store.head()
        assert [e.hash for e in store.read()] == [e.hash for e in whole]
        assert store.verify().ok  # its record's digest is the one-batch digest
        again = store.append(events, idempotency_key="k", clock=clock)  # a retry at once
        assert [e.hash for e in again] == [e.hash for e in whole]
        repeat = store.append_chunks(iter(chunks), idempotency_key="k", clock=clock)
        assert repeat.repeated and (repeat.first, repeat.last) == (1, 12)
        assert store.head().position == 12
        with pytest.raises(InputError, match="idempotency_key"):
            store.append_chunks(iter(chunks[:2]), idempotency_key="k", clock=clock)

    def test_a_batch_in_chunks_is_all_or_nothing(self, store: EventStore) -> None:
        store.append(prepared("a", 2), clock=clock)

        def failing() -> Iterator[tuple[list[PreparedEvent], dict[str, int]]]:
            yield prepared("a", 3, start=2), {}
            yield prepared("b", 3), {}
            raise InputError("events[6].data: bad, found while reading the input")

        with pytest.raises(InputError, match="found while reading"):
            store.append_chunks(failing(), idempotency_key="k", lead=prepared("lead", 1),
                                clock=clock)
        assert store.head().position == 2 and store.stream_version("lead") == 0
        # an expected version is the stream's before the batch, wherever it is named
        with pytest.raises(ConcurrencyError, match="expected version 0, but it is at 2"):
            store.append_chunks(iter([(prepared("b", 2), {}), (prepared("c", 1), {"a": 0})]),
                                clock=clock)
        assert store.head().position == 2 and store.verify().ok
        done = store.append_chunks(iter([(prepared("a", 2, start=2), {}),
                                         (prepared("a", 1, start=4), {"a": 2})]),
                                   lead=prepared("lead", 1), lead_expected={"lead": 0},
                                   clock=clock)
        assert (done.first, done.last) == (4, 6)  # after the lead batch, at 3
        assert [e.stream for e in store.read(3)] == ["lead", "a", "a", "a"]
        assert [e.stream_version for e in store.read(4)] == [3, 4, 5]
        assert store.verify().ok

    # -- idempotency records are protected like the events ------------------------------
    @pytest.mark.parametrize("sql", [
        "DELETE FROM batches",
        "UPDATE batches SET digest = 'x'",
        "UPDATE batches SET first_position = 1",
        "UPDATE batches SET key = 'other'",
        # a forged record: for old events, or repeating a key
        "INSERT INTO batches (key, digest, first_position, last_position) "
        "VALUES ('forged', 'x', 1, 3)",
        "INSERT INTO batches (key, digest, first_position, last_position) "
        "VALUES ('batch-1', 'x', 5, 5)",
    ])
    def test_database_refuses_rewriting_idempotency_records(
        self, store_harness: StoreHarness, store: EventStore, sql: str
    ) -> None:
        """A deleted record would let a retry append its batch twice."""
        store.append(prepared("a", 3), clock=clock)
        first = store.append(prepared("b", 2), idempotency_key="batch-1", clock=clock)
        with pytest.raises(Exception, match=r"idempotency records are append-only|"
                                            r"idempotency record is written once|"
                                            r"duplicate key"):
            store_harness.raw_execute(store, sql)
        again = store.append(prepared("b", 2), idempotency_key="batch-1", clock=clock)
        assert [e.hash for e in again] == [e.hash for e in first]
        assert store.head().position == 5
        assert store.verify().ok

    @pytest.mark.parametrize(("sql", "position", "words"), _RECORD_TAMPERING)
    def test_verify_checks_each_idempotency_record_against_its_events(
        self, store_harness: StoreHarness, store: EventStore, sql: str, position: int,
        words: str
    ) -> None:
        store.append(prepared("a", 3), clock=clock)
        store.append(prepared("b", 3), idempotency_key="batch-1", clock=clock)
        assert store.verify().ok
        store_harness.unprotected(store, sql)
        report = store.verify()
        assert not report.ok
        assert report.position == position
        assert report.reason is not None and "idempotency record" in report.reason
        assert re.search(words, report.reason), report.reason

    # -- a log cut at its tail -------------------------------------------------------------
    def _checkpointed(self, store: EventStore, n: int) -> Head:
        store.append(prepared("a", n), clock=clock)
        head = store.head()
        store.save_checkpoint(Checkpoint("p.one", 1, head.position, head.hash, {"n": n},
                                         "d" * 64))
        return head

    def test_verify_sees_a_cut_tail_in_the_checkpoints(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        """What is left of a log cut at its end still links; the checkpoint taken at the
        old head proves the log was longer."""
        old = self._checkpointed(store, 9)
        assert store.verify().ok and store.truncation() is None
        assert store.checkpoint_marks() == [CheckpointMark("p.one", 9, old.hash, old.hash)]
        store_harness.cut_tail(store, 4)
        assert store.checkpoint_marks() == [CheckpointMark("p.one", 9, old.hash, None)]
        report = store.verify()
        assert not report.ok
        assert report.position == 5 and report.checked == 4
        assert report.reason is not None
        assert "the log ends at 4 but checkpoints were taken at 9 (p.one)" in report.reason
        assert "5 event(s)" in report.reason
        assert store.truncation() == (5, report.reason)
        assert store.verify(stop=4).ok  # a walk to a position checks the chain only

    def test_verify_sees_a_cut_tail_appended_again_in_the_checkpoints(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        """A tail cut and then appended over again ends at the old length: the checkpoint's
        hash names an event the log no longer holds."""
        old = self._checkpointed(store, 6)
        store_harness.cut_tail(store, 4)
        store.append(prepared("z", 2), clock=clock)
        assert store.head().position == old.position and store.head().hash != old.hash
        assert store.checkpoint_marks() == [CheckpointMark("p.one", 6, old.hash,
                                                           store.head().hash)]
        report = store.verify()
        assert not report.ok and report.position == 6
        assert report.reason is not None and "the log was rewritten" in report.reason

    # -- reading ---------------------------------------------------------------------------
    def test_reads_by_range_stream_and_type(self, store: EventStore) -> None:
        store.append(prepared("a", 3) + prepared("b", 2, type="test.other"), clock=clock)
        assert [e.position for e in store.read(2, 4)] == [2, 3, 4]
        assert [e.position for e in store.read(stream="b")] == [4, 5]
        assert [e.position for e in store.read(types=["test.other"])] == [4, 5]
        assert [e.position for e in store.read(types=[])] == []
        assert [e.position for e in store.read(2, stream="a", types=["test.happened"])] == [2, 3]

    def test_read_streams_lazily(self, store: EventStore) -> None:
        for k in range(5):
            store.append(prepared("a", 1000, start=k * 1000), clock=clock)
        it = store.read()
        assert isinstance(it, Iterator)
        first = next(it)
        assert first.position == 1
        # appending while a reader is open neither blocks nor disturbs it
        store.append(prepared("b", 1), clock=clock)
        rest = sum(1 for _ in it)
        assert rest in (4999, 5000)

    def test_reads_of_large_and_small_events_return_each_once_in_order(
        self, store: EventStore
    ) -> None:
        """Reads come in pages sized by bytes: large events (here ~0.4 MB each, more than
        one page of data) among thousands of small ones are all read, in order, by every
        read, the chain-checked one included."""
        big = [PreparedEvent("big", "test.big", 1, {"i": i, "blob": f"{i:04d}" * 100_000},
                             {"actor": "conformance"}) for i in range(6)]
        store.append(prepared("a", 3000), clock=clock)
        store.append(big[:3], clock=clock)
        store.append(prepared("a", 20, start=3000) + big[3:], clock=clock)
        positions = list(range(1, 3000 + 3 + 20 + 3 + 1))
        assert [e.position for e in store.read()] == positions
        verified = list(store.read_verified(Head(0, GENESIS_HASH)))
        assert [e.position for e in verified] == positions
        assert [e.data["i"] for e in verified if e.stream == "big"] == list(range(6))
        assert all(e.data["blob"] == f"{e.data['i']:04d}" * 100_000
                   for e in verified if e.stream == "big")
        assert [e.stream_version for e in store.read(stream="big")] == list(range(1, 7))

    def test_a_chain_checked_read_hands_raw_decoders_the_stored_bytes(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        """A raw decoder gets each event's data as stored (its canonical bytes, unparsed),
        the event carries what it returns, and the hash is still checked over those bytes."""
        from ..canonical import canonical_bytes

        store.append(prepared("a", 3) + prepared("b", 2, type="test.other"), clock=clock)
        seen: list[bytes] = []

        def take(stored: bytes) -> Any:
            seen.append(stored)
            return ("raw", len(stored))

        events = list(store.read_verified(Head(0, GENESIS_HASH),
                                          raw_decoders={"test.other": (1, take)}))
        plain = list(store.read())
        assert seen == [canonical_bytes(e.data) for e in plain[3:]]
        assert [e.data for e in events] == [e.data for e in plain[:3]] + [
            ("raw", len(b)) for b in seen]
        # a decoder of another schema version is not called
        seen.clear()
        assert [e.data for e in store.read_verified(
            Head(0, GENESIS_HASH), raw_decoders={"test.other": (2, take)})] == [
            e.data for e in plain]
        assert seen == []
        store_harness.tamper(store, 4, "data_byte", None)
        with pytest.raises(ChainError) as caught:
            list(store.read_verified(Head(0, GENESIS_HASH),
                                     raw_decoders={"test.other": (1, take)}))
        assert caught.value.position == 4

    # -- verification ----------------------------------------------------------------------
    @pytest.mark.parametrize("column,value", [
        ("data_byte", None), ("meta_byte", None), ("hash", "f" * 64), ("prev_hash", "e" * 64),
        ("type", "test.forged"), ("stream", "forged"), ("stream_version", 9),
        ("schema_version", 2), ("recorded_at", "2030-01-01T00:00:00.000000Z"),
    ])
    def test_verify_names_a_tampered_position(
        self, store_harness: StoreHarness, store: EventStore, column: str, value: Any
    ) -> None:
        store.append(prepared("a", 6), clock=clock)
        store_harness.tamper(store, 4, column, value)
        report = store.verify()
        assert not report.ok
        assert report.position == 4
        assert report.checked == 3
        assert report.reason

    def test_verify_catches_a_rewritten_and_rehashed_event(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        """A forger who rewrites event 4 and recomputes its hash (so it verifies on its own)
        still breaks the link to event 5, which names the old hash."""
        from ..canonical import canonical_bytes
        from ..events import assemble_body, chain_hash

        store.append(prepared("a", 6), clock=clock)
        (e4,) = store.read(4, 4)
        forged = b'{"forged":true}'
        body = assemble_body(forged, canonical_bytes(dict(e4.meta)), position=4,
                             stream=e4.stream, stream_version=e4.stream_version, type=e4.type,
                             schema_version=e4.schema_version, recorded_at=e4.recorded_at,
                             prev_hash=e4.prev_hash)
        store_harness.tamper(store, 4, "data", forged)
        store_harness.tamper(store, 4, "hash", chain_hash(e4.prev_hash, body))
        report = store.verify()
        assert not report.ok
        assert (report.position, report.checked) == (5, 4)
        assert report.reason is not None and "does not link" in report.reason

    # -- import ----------------------------------------------------------------------------
    def test_import_is_idempotent_for_a_known_prefix(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 4), clock=clock)
        events = list(store.read())
        target = store_harness.new()
        try:
            r1 = target.import_events(events[:2])
            assert (r1.already_present, r1.appended) == (0, 2)
            r2 = target.import_events(events)
            assert (r2.already_present, r2.appended) == (2, 2)
            r3 = target.import_events(events)
            assert (r3.already_present, r3.appended) == (4, 0)
            assert [e.hash for e in target.read()] == [e.hash for e in events]
            assert target.verify().ok
            assert target.stream_version("a") == 4
        finally:
            target.close()

    def test_import_refuses_conflicting_history(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 3), clock=clock)
        other = store_harness.new()
        try:
            other.append(prepared("b", 2), clock=clock)
            with pytest.raises(ImportConflictError, match="position 1"):
                other.import_events(list(store.read()))
            assert [e.stream for e in other.read()] == ["b", "b"]
        finally:
            other.close()

    def test_import_refuses_a_broken_chain(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 3), clock=clock)
        events = list(store.read())
        events[1] = events[1]._replace(hash="0" * 63 + "1")
        target = store_harness.new()
        try:
            with pytest.raises(ChainError):
                target.import_events(events)
            assert target.head().position == 0
        finally:
            target.close()

    # -- checkpoints -----------------------------------------------------------------------
    def test_checkpoints_are_saved_replaced_and_outside_the_chain(
        self, store: EventStore
    ) -> None:
        store.append(prepared("a", 2), clock=clock)
        head = store.head()
        cp = Checkpoint("p", 1, 2, head.hash, {"n": [1, 2]}, "d" * 64)
        store.save_checkpoint(cp)
        assert store.load_checkpoint("p") == cp
        cp2 = Checkpoint("p", 2, 2, head.hash, {"n": []}, "e" * 64)
        store.save_checkpoint(cp2)
        assert store.load_checkpoint("p") == cp2
        assert [c.name for c in store.checkpoints()] == ["p"]
        store.delete_checkpoint("p")
        assert store.load_checkpoint("p") is None
        assert store.head() == head

    # -- the Merkle tree (schema 4) ----------------------------------------------------------
    # Expected values come from an in-memory tree rebuilt from the chain hashes the store
    # returns (and RFC 9162's verifiers), never from the store's own tree.
    @staticmethod
    def _rebuilt(store: EventStore) -> Any:
        from ..transparency.merkle import MerkleTree, leaf_hash

        return MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in store.read())

    @staticmethod
    def _every_node(size: int) -> list[tuple[int, int]]:
        return [(level, idx) for level in range(size.bit_length())
                for idx in range(size >> level)]

    @pytest.mark.parametrize("batches", [[1] * 20, [1000], [3, 1, 7, 16, 1, 2, 33, 5],
                                         [64, 64, 1, 127], [2] * 9 + [255]])
    def test_tree_maintained_at_append_equals_the_tree_rebuilt(
        self, store: EventStore, batches: list[int]
    ) -> None:
        for i, n in enumerate(batches):
            store.append(prepared(f"s{i % 3}", n, start=i * 1000), clock=clock)
            size = store.head().position
            rebuilt = self._rebuilt(store)
            assert store.tree_root() == rebuilt.root()
        wanted = self._every_node(size)
        stored = store.tree_nodes(wanted)
        assert all(stored[(level, idx)] == rebuilt.node(level, idx) for level, idx in wanted)
        assert [store.tree_root(k) for k in range(size + 1)] == \
               [rebuilt.root(k) for k in range(size + 1)]

    def test_tree_proofs_verify_against_the_rebuilt_roots(self, store: EventStore) -> None:
        from ..transparency.merkle import ProofError, verify_consistency, verify_inclusion

        for n in (1, 2, 5, 9, 14):
            store.append(prepared("a", n, start=store.head().position), clock=clock)
        rebuilt = self._rebuilt(store)
        size = rebuilt.size
        for k in (1, 2, 7, 16, size):
            for position in range(1, k + 1):
                proof = store.inclusion_proof(position, k)
                verify_inclusion(rebuilt.leaf_hash(position - 1), position - 1, k, proof,
                                 rebuilt.root(k))
                if position < k:  # the proof of one leaf proves no other
                    with pytest.raises(ProofError):
                        verify_inclusion(rebuilt.leaf_hash(position), position - 1, k, proof,
                                         rebuilt.root(k))
        for old in range(1, size + 1):
            for new in (old, size):
                verify_consistency(old, new, store.consistency_proof(old, new),
                                   rebuilt.root(old), rebuilt.root(new))
        with pytest.raises(InputError, match="beyond the log"):
            store.inclusion_proof(size + 1)
        with pytest.raises(InputError, match="old_size"):
            store.consistency_proof(0)
        with pytest.raises(InputError, match="size"):
            store.tree_root(size + 1)

    def test_tree_reads_are_logarithmic(self, store: EventStore) -> None:
        store.append(prepared("a", 1000), clock=clock)
        store.append(prepared("b", 24), clock=clock)
        for call in (lambda: store.inclusion_proof(517), lambda: store.consistency_proof(300),
                     lambda: store.tree_root(777)):
            before = store.tree_rows_read
            call()
            # 1,024 leaves: at most 11 proof hashes, the one at level l from at most
            # 2 ** (l % 6) stored rows (every 6th level is stored): 63 + 31 for levels 0..10
            assert store.tree_rows_read - before <= 94

    def test_import_builds_the_same_tree(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 7), clock=clock)
        store.append(prepared("b", 12), clock=clock)
        events = list(store.read())
        target = store_harness.new()
        try:
            target.import_events(events[:5])
            target.import_events(events)  # a known prefix, then the rest
            assert [target.tree_root(k) for k in range(20)] == \
                   [store.tree_root(k) for k in range(20)]
            target.append(prepared("c", 3), clock=clock)
            assert target.tree_root() == self._rebuilt(target).root()
        finally:
            target.close()

    @pytest.mark.parametrize("sql", [
        "UPDATE tree_nodes SET idx = idx + 100",
        "DELETE FROM tree_nodes",
        "DELETE FROM tree_nodes WHERE level = 6",
        # a node over leaves the log does not hold; a malformed one; one written twice;
        # one at a level the store does not keep
        "INSERT INTO tree_nodes (level, idx, hash) "
        "SELECT 6, 10, hash FROM tree_nodes WHERE level = 6 AND idx = 0",
        "INSERT INTO tree_nodes (level, idx, hash) VALUES (6, 1, 'abc')",
        "INSERT INTO tree_nodes (level, idx, hash) "
        "SELECT level, idx, hash FROM tree_nodes WHERE level = 6 AND idx = 0",
        "INSERT INTO tree_nodes (level, idx, hash) "
        "SELECT 2, 1, hash FROM tree_nodes WHERE level = 6 AND idx = 0",
        "INSERT INTO tree_nodes (level, idx, hash) "
        "SELECT 4, 1, hash FROM tree_nodes WHERE level = 6 AND idx = 0",
    ])
    def test_database_refuses_rewriting_the_tree(
        self, store_harness: StoreHarness, store: EventStore, sql: str
    ) -> None:
        store.append(prepared("a", 140), clock=clock)
        root = store.tree_root()
        with pytest.raises(Exception, match=r"Merkle tree is append-only|tree node is written|"
                                            r"duplicate key"):
            store_harness.raw_execute(store, sql)
        assert store.tree_root() == root
        assert store.verify().ok

    def test_verify_checks_the_stored_tree_against_the_events(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 140), clock=clock)
        assert store.verify().ok
        store_harness.unprotected(store, "DELETE FROM tree_nodes WHERE level = 6 AND idx = 0")
        report = store.verify()
        assert not report.ok and report.position == 64
        assert report.reason is not None
        assert "nodes (level 6, index 0..1) over events 1..128: the table holds 1 of the 2" \
            in report.reason
        store.append(prepared("b", 2), clock=clock)  # beyond the damage: appends still work
        report = store.verify(roots_at=[3, 142])
        assert not report.ok and report.position == 64
        rebuilt = self._rebuilt(store)
        assert report.roots == {3: rebuilt.root(3), 142: rebuilt.root(142)}
        with pytest.raises(StoreError, match=r"lacks some of its nodes \(level 6, index 0..1\)"):
            store.tree_root()

    def test_verify_names_a_tree_node_that_differs(
        self, store_harness: StoreHarness, store: EventStore
    ) -> None:
        store.append(prepared("a", 140), clock=clock)
        store_harness.unprotected(
            store, "UPDATE tree_nodes SET hash = (SELECT hash FROM tree_nodes "
                   "WHERE level = 6 AND idx = 0) WHERE level = 6 AND idx = 1")
        report = store.verify()
        assert not report.ok and report.position == 128
        assert report.reason is not None
        assert "(level 6, index 1) over events 65..128 is " in report.reason
