"""The Merkle tree the stores maintain at append: equal to the tree rebuilt from scratch
(property tests on both stores, concurrent writers), and consistent with the log after a
writer is killed mid-append. The conformance suite (testing/conformance.py) has the
per-store basics; the expected tree here is always an in-memory MerkleTree rebuilt from
the chain hashes the store returns."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.store.base import EventStore, PreparedEvent
from cladelog.core.store.sqlite import SQLiteStore
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _events(stream: str, n: int, tag: int = 0) -> list[PreparedEvent]:
    return [PreparedEvent(stream, "test.happened", 1, {"tag": tag, "i": i}, {})
            for i in range(n)]


def _assert_tree_is_rebuilt(store: EventStore) -> MerkleTree:
    rebuilt = MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in store.read())
    size = rebuilt.size
    assert store.head().position == size
    wanted = [(level, idx) for level in range(1, size.bit_length())
              for idx in range(size >> level)]
    stored = store.tree_nodes(wanted)
    bad = [node for node in wanted if stored[node] != rebuilt.node(*node)]
    assert not bad, f"stored nodes differ from the rebuilt tree: {bad[:5]}"
    assert store.tree_root() == rebuilt.root()
    report = store.verify()
    assert report.ok, report
    return rebuilt


batch_sizes = st.lists(st.integers(min_value=1, max_value=70), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(batch_sizes)
def test_sqlite_tree_at_append_equals_rebuilt(batches: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            SQLiteStore(Path(tmp) / "t.sqlite3", create=True) as store:
        for i, n in enumerate(batches):
            store.append(_events(f"s{i % 4}", n, i))
        _assert_tree_is_rebuilt(store)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch_sizes)
def test_postgres_tree_at_append_equals_rebuilt(pg_harness: Any, batches: list[int]) -> None:
    store = pg_harness.new()
    for i, n in enumerate(batches):
        store.append(_events(f"s{i % 4}", n, i))
    _assert_tree_is_rebuilt(store)


def test_two_store_objects_take_turns(tmp_path: Path) -> None:
    """Each store object caches the tree's peaks after its own append; an append by the
    other one in between must make it read them again."""
    path = tmp_path / "t.sqlite3"
    with SQLiteStore(path, create=True) as a, SQLiteStore(path) as b:
        rng = random.Random(3)
        for i in range(30):
            (a if rng.random() < 0.5 else b).append(_events("s", rng.randint(1, 9), i))
        _assert_tree_is_rebuilt(a)


def test_postgres_concurrent_writers_keep_the_tree(pg_harness: Any) -> None:
    first = pg_harness.new()
    stores = [first] + [pg_harness.reopen(first) for _ in range(3)]
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        rng = random.Random(k)
        try:
            for i in range(15):
                stores[k].append(_events(f"w{k}", rng.choice([1, 1, 2, 5, 17, 40]), i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    rebuilt = _assert_tree_is_rebuilt(first)
    assert rebuilt.size == sum(e.position > 0 for e in first.read())
    for other in stores[1:]:
        assert other.tree_root() == rebuilt.root()


WRITER = textwrap.dedent("""
    import sys
    from cladelog.core.store import open_store
    from cladelog.core.store.base import PreparedEvent
    url, batch = sys.argv[1], int(sys.argv[2])
    store = open_store(url)
    b = 0
    while True:
        n = 1 + (b * 7919) % batch
        store.append([PreparedEvent("k", "test.happened", 1, {"b": b, "i": i}, {})
                      for i in range(n)])
        print(b, flush=True)
        b += 1
""")


def _kill_writers(url: str, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, url, "300"],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        target = rng.randint(1, 12)
        for _ack in range(target):
            if not proc.stdout.readline():
                break
        time.sleep(rng.random() * 0.03)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_sigkill_during_append_leaves_tree_and_log_consistent_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "crash.sqlite3"
    SQLiteStore(path, create=True).close()
    _kill_writers(f"sqlite:///{path}", 6, 11)
    with SQLiteStore(path) as store:
        assert store.head().position > 0
        _assert_tree_is_rebuilt(store)
        store.append(_events("after", 3))  # and the log goes on
        _assert_tree_is_rebuilt(store)


@pytest.mark.slow
def test_sigkill_during_append_leaves_tree_and_log_consistent_postgres(pg_harness: Any) -> None:
    store = pg_harness.new()
    _kill_writers(store.url, 4, 12)
    other = pg_harness.reopen(store)
    assert other.head().position > 0
    _assert_tree_is_rebuilt(other)
    other.append(_events("after", 3))
    _assert_tree_is_rebuilt(other)
