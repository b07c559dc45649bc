"""Crash safety and cross-process concurrency of the SQLite store."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cladelog.core.store.sqlite import SQLiteStore

BATCH = 25

WRITER = textwrap.dedent("""
    import sys
    from cladelog.core.store.sqlite import SQLiteStore
    from cladelog.core.store.base import PreparedEvent
    path, stream, batches, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = SQLiteStore(path)
    for b in range(batches):
        events = [PreparedEvent(stream, "test.happened", 1, {"batch": b, "i": i}, {})
                  for i in range(batch)]
        store.append(events)
        print(b, flush=True)
    store.close()
""")

RACER = textwrap.dedent("""
    import sys, time
    from cladelog.core.errors import ConcurrencyError
    from cladelog.core.store.sqlite import SQLiteStore
    from cladelog.core.store.base import PreparedEvent
    path, stream, expected, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    store = SQLiteStore(path)
    while time.time() < go:
        time.sleep(0.001)
    try:
        store.append([PreparedEvent(stream, "test.happened", 1, {"who": sys.argv[5]}, {})],
                     expected_versions={stream: expected})
        print("won")
    except ConcurrencyError:
        print("lost")
""")


def _python(*args: str) -> list[str]:
    return [sys.executable, "-c", *args]


@pytest.mark.slow
def test_sigkill_leaves_a_verifiable_log_ending_on_a_batch_boundary(tmp_path: Path) -> None:
    path = tmp_path / "crash.sqlite3"
    SQLiteStore(path, create=True).close()
    rng = random.Random(7)
    acknowledged = 0
    for _round in range(8):
        proc = subprocess.Popen(_python(WRITER, str(path), "s", "100000", str(BATCH)),
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        # let it commit a random number of batches, then kill it mid-flight
        target = rng.randint(1, 30)
        acks = 0
        while acks < target:
            line = proc.stdout.readline()
            if not line:
                break
            acks += 1
        time.sleep(rng.random() * 0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        acknowledged += acks
        with SQLiteStore(path) as store:
            report = store.verify()
            assert report.ok, report
            total = report.head.position
            assert total % BATCH == 0, f"log ends mid-batch at {total}"
            # every batch the writer reported as committed is there
            assert total >= acknowledged * BATCH
            acknowledged = total // BATCH
            batches = [e.data["batch"] for e in store.read() if e.data["i"] == 0]
            assert len(batches) == total // BATCH


@pytest.mark.slow
@pytest.mark.parametrize("same_stream", [True, False])
def test_two_processes_with_the_same_expected_version(tmp_path: Path, same_stream: bool
                                                      ) -> None:
    for attempt in range(5):
        path = tmp_path / f"race{attempt}.sqlite3"
        SQLiteStore(path, create=True).close()
        go = time.time() + 1.0
        procs = [
            subprocess.Popen(
                _python(RACER, str(path), "shared" if same_stream else f"s{k}", "0", str(go),
                        f"p{k}"),
                stdout=subprocess.PIPE, text=True)
            for k in range(2)
        ]
        outcomes = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
        with SQLiteStore(path) as store:
            positions = [e.position for e in store.read()]
            assert store.verify().ok
        if same_stream:
            assert outcomes == ["lost", "won"]
            assert positions == [1]
        else:
            assert outcomes == ["won", "won"]
            assert positions == [1, 2]


@pytest.mark.slow
def test_concurrent_writers_keep_positions_gap_free(tmp_path: Path) -> None:
    path = tmp_path / "many.sqlite3"
    SQLiteStore(path, create=True).close()
    procs = [subprocess.Popen(_python(WRITER, str(path), f"w{k}", "20", "10"),
                              stdout=subprocess.DEVNULL) for k in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    with SQLiteStore(path) as store:
        events = list(store.read())
        assert [e.position for e in events] == list(range(1, 601))
        assert store.verify().ok
        for k in range(3):
            versions = [e.stream_version for e in events if e.stream == f"w{k}"]
            assert versions == list(range(1, 201))
        # a batch is one transaction: its events hold consecutive positions
        groups: dict[tuple[str, int], list[int]] = {}
        for e in events:
            groups.setdefault((e.stream, e.data["batch"]), []).append(e.position)
        assert len(groups) == 60
        for positions in groups.values():
            assert positions == list(range(positions[0], positions[0] + 10))
