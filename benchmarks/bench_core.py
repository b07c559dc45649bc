"""Core: append and replay throughput against raw sqlite3 and the eventsourcing library,
the CLI's cold start against a bare interpreter, and the Merkle tree: what maintaining it
costs an append, an inclusion proof in a log of 10x --events (1,000,000 by default), and
`verify --checkpoint` of that log against a checkpoint at half its size."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
from cladelog.core import EventType, PluginInfo, Projection, hookimpl


@attrs.frozen
class Reading:
    """The benchmark payload (about 200 bytes of JSON)."""

    sensor: str
    seq: int
    value: float
    unit: str
    tags: list[str]
    note: str


def payloads(n: int) -> list[Reading]:
    return [Reading(f"sensor-{i % 97:03d}", i, i * 0.25 + 0.125, "celsius",
                    ["bench", f"zone-{i % 7}", "calibrated"],
                    "steady reading within tolerance; nothing to report " + "x" * 40)
            for i in range(n)]


ROUNDS = 3   # appends measured per path and batch size (the best counts)
REPLAYS = 3  # replays per round (the best counts)


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


class Timer:
    """Wall-clock and process CPU seconds of a ``with`` block."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def ed25519_verify(n: int) -> Timer:
    """The baseline of the signing benchmarks (receipts, consensus): ``n`` bare
    ``cryptography`` Ed25519 verifies of 88-byte messages, timed."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    pub = key.public_key()
    msgs = [f"message {i}".encode() * 8 for i in range(n)]
    sigs = [key.sign(m) for m in msgs]
    with Timer() as t:
        for m, sig in zip(msgs, sigs, strict=True):
            pub.verify(sig, m)
    return t


# -- cladelog ------------------------------------------------------------------------------
class BenchPlugin:
    """One event type (``bench.reading``, payload :class:`Reading`) and two counting
    projections: into payload instances and into JSON objects (bench_postgres uses it too)."""

    PLUGIN = PluginInfo(name="bench", version="1")

    @staticmethod
    @hookimpl
    def cladelog_event_types() -> list[Any]:
        return [EventType("bench.reading", Reading)]

    @staticmethod
    @hookimpl
    def cladelog_projections() -> list[Any]:
        def count(state: dict[str, Any], event: Any) -> dict[str, Any]:
            if event.data.__class__ is Reading:  # replayed back to payload objects
                state["n"] += 1
            return state

        def count_json(state: dict[str, Any], event: Any) -> dict[str, Any]:
            if event.data.__class__ is dict:  # the stored JSON object, as json.loads gives
                state["n"] += 1
            return state

        types = frozenset({"bench.reading"})
        return [Projection("bench.count", 1, types, {"n": 0}, count, payloads=True),
                Projection("bench.count_json", 1, types, {"n": 0}, count_json)]


def cladelog_deployment(root: Path) -> Any:
    from cladelog.core import Deployment, DeploymentConfig

    cfg = DeploymentConfig.from_dict({"store": "bench.sqlite3", "actor": "bench"},
                                     path=root / "cladelog.toml")
    return Deployment(cfg, plugins=[BenchPlugin()], create=True)


def bench_cladelog(root: Path, data: list[Reading], batch: int) -> tuple[float, ...]:
    """Append rate, replay rate into payload instances, replay rate into JSON objects."""
    from cladelog.core import NewEvent
    from cladelog.core.projections import replay

    dep = cladelog_deployment(root)
    events = [NewEvent("readings", "bench.reading", p) for p in data]
    t0 = time.perf_counter()
    for i in range(0, len(events), batch):
        dep.append(events[i:i + batch])
    t_append = time.perf_counter() - t0
    rates = []
    for name in ("bench.count", "bench.count_json"):
        projection = [p for p in dep.projections if p.name == name]
        t_replay = float("inf")
        for _ in range(REPLAYS):
            t0 = time.perf_counter()
            result = replay(dep.store, dep.registry, projection, rebuild=True, save=False)
            t_replay = min(t_replay, time.perf_counter() - t0)
            assert result.projections[0].state["n"] == len(data), result.projections[0].state
        rates.append(rate(len(data), t_replay))
    dep.close()
    return (rate(len(data), t_append), *rates)


# -- raw sqlite3 ---------------------------------------------------------------------------
def bench_raw(root: Path, data: list[Reading], batch: int) -> tuple[float, float]:
    db = sqlite3.connect(root / "raw.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT, type TEXT, "
               "data TEXT)")
    t0 = time.perf_counter()
    for i in range(0, len(data), batch):
        rows = [("readings", "bench.reading", json.dumps(attrs.asdict(p)))
                for p in data[i:i + batch]]
        db.execute("BEGIN")
        db.executemany("INSERT INTO events (stream, type, data) VALUES (?, ?, ?)", rows)
        db.execute("COMMIT")
    t_append = time.perf_counter() - t0
    t_replay = float("inf")
    for _ in range(REPLAYS):
        t0 = time.perf_counter()
        n = 0
        for (text,) in db.execute("SELECT data FROM events ORDER BY position"):
            json.loads(text)
            n += 1
        t_replay = min(t_replay, time.perf_counter() - t0)
        assert n == len(data)
    db.close()
    return rate(len(data), t_append), rate(len(data), t_replay)


# -- the eventsourcing library -------------------------------------------------------------
try:  # a benchmark-only dependency
    from eventsourcing.domain import Aggregate

    class Sensor(Aggregate):
        class Read(Aggregate.Event):
            sensor: str
            seq: int
            value: float
            unit: str
            tags: list[str]
            note: str

            def apply(self, aggregate: Any) -> None:
                aggregate.count += 1

        def __init__(self) -> None:
            self.count = 0

except ImportError:  # pragma: no cover
    Sensor = None  # type: ignore[assignment,misc]


def bench_eventsourcing(root: Path, data: list[Reading], batch: int) -> tuple[float, float]:
    if Sensor is None:
        return float("nan"), float("nan")
    from eventsourcing.application import Application

    os.environ["PERSISTENCE_MODULE"] = "eventsourcing.sqlite"
    os.environ["SQLITE_DBNAME"] = str(root / "es.sqlite3")
    app = Application()
    sensor = Sensor()
    t0 = time.perf_counter()
    for i in range(0, len(data), batch):
        for p in data[i:i + batch]:
            sensor.trigger_event(Sensor.Read, sensor=p.sensor, seq=p.seq, value=p.value,
                                 unit=p.unit, tags=p.tags, note=p.note)
        app.save(sensor)
    t_append = time.perf_counter() - t0
    t_replay = float("inf")
    for _ in range(REPLAYS):
        t0 = time.perf_counter()
        n, start = 0, 1
        while True:
            notes = app.recorder.select_notifications(start=start, limit=1000)
            if not notes:
                break
            for note in notes:
                app.mapper.to_domain_event(note)
                n += 1
            start = notes[-1].id + 1
        t_replay = min(t_replay, time.perf_counter() - t0)
        assert n == len(data) + 1, n  # plus the aggregate's creation event
    app.close() if hasattr(app, "close") else None
    return rate(len(data), t_append), rate(len(data), t_replay)


# -- CLI cold start ------------------------------------------------------------------------
def compile_bytecode() -> None:
    """Bytecode for cladelog's own modules, as a regular (non-editable) install has it and
    as the stdlib baseline has it; an editable install under PYTHONDONTWRITEBYTECODE would
    otherwise compile every module on every start of a cold-start measurement."""
    import cladelog

    subprocess.run([sys.executable, "-m", "compileall", "-q", *cladelog.__path__],
                   check=True, stdout=subprocess.DEVNULL)


def cold_start(cmd: list[str], cwd: Path, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(args: Any) -> int:
    n = args.events
    data = payloads(n)
    size = len(json.dumps(attrs.asdict(data[0])))
    print(f"core benchmark: {n} events, payload about {size} bytes of JSON, "
          f"Python {sys.version.split()[0]}")
    print(f"(best of {ROUNDS} rounds, the three paths interleaved; each round appends into a "
          f"fresh store and replays {REPLAYS} times)")
    print(f"{'batch':>6} {'path':<14} {'append ev/s':>12} {'replay ev/s':>12}")
    for batch in (1, 100, 1000):
        count = min(n, 10_000) if batch == 1 else n  # batch 1 is one commit per event
        rows: dict[str, tuple[float, ...]] = {}
        paths = (("cladelog", bench_cladelog), ("raw sqlite3", bench_raw),
                 ("eventsourcing", bench_eventsourcing))
        for _ in range(ROUNDS):
            for name, fn in paths:
                root = Path(tempfile.mkdtemp(prefix="cladelog-bench-"))
                try:
                    got = fn(root, data[:count], batch)
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                rows[name] = tuple(map(max, zip(rows.get(name, got), got, strict=True)))
        note = "   (first 10,000 events)" if count != n else ""
        for name, _ in paths:
            a, r = rows[name][:2]
            label = "   (replayed into payload instances)" if name == "cladelog" else ""
            print(f"{batch:>6} {name:<14} {a:>12,.0f} {r:>12,.0f}{label}{note}")
            if name == "cladelog":
                print(f"{'':>6} {'':<14} {'':>12} {rows[name][2]:>12,.0f}   (replayed as "
                      "JSON objects, the form json.loads gives)")
        ca, cr, cj = rows["cladelog"]
        ra, rr = rows["raw sqlite3"]
        ea, er = rows["eventsourcing"]
        print(f"{'':>6} ratios: append cladelog/raw {ca / ra:.2f}, cladelog/eventsourcing "
              f"{ca / ea:.2f}; replay cladelog/raw {cr / rr:.2f} (JSON {cj / rr:.2f}), "
              f"cladelog/eventsourcing {cr / er:.2f} (JSON {cj / er:.2f})")
    # CLI cold start
    tmp = Path(tempfile.mkdtemp(prefix="cladelog-cli-"))
    try:
        compile_bytecode()
        exe = str(Path(sys.executable).with_name("cladelog"))
        subprocess.run([exe, "init"], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        base = cold_start([sys.executable, "-c", "import sqlite3, json"], tmp)
        helpt = cold_start([exe, "--help"], tmp)
        replayt = cold_start([exe, "replay"], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"cold start (median of 15): python -c 'import sqlite3, json' {base * 1000:.0f} ms; "
          f"cladelog --help {helpt * 1000:.0f} ms ({helpt / base:.1f}x); "
          f"cladelog replay (empty log) {replayt * 1000:.0f} ms ({replayt / base:.1f}x)")
    bench_tree(n, data)
    return 0


# -- the Merkle tree -------------------------------------------------------------------------
def _append_rate(data: list[Reading], batch: int, keep_tree: bool) -> tuple[float, float]:
    """Events per second of wall time and of this process's CPU time (the machine may be
    shared: CPU time is the steadier of the two).

    The harness's own objects (the payloads and their events, hundreds of thousands) are
    frozen out of the cyclic GC while the appends run: a full collection walks them all
    (about 75 ms per 200,000 payloads), and whether an append of 200,000 events meets one,
    two or three of them moved its time by up to ±5%, which is the whole of what the
    tree costs (the tree itself allocates almost no containers)."""
    import gc

    from cladelog.core import NewEvent

    root = Path(tempfile.mkdtemp(prefix="cladelog-bench-tree-"))
    try:
        dep = cladelog_deployment(root)
        dep.store._keep_tree = keep_tree  # type: ignore[attr-defined]
        events = [NewEvent("readings", "bench.reading", p) for p in data]
        dep.append(events[:1])  # the plugin record and the first event: not measured
        gc.collect()
        gc.freeze()
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            for i in range(1, len(events), batch):
                dep.append(events[i:i + batch])
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        finally:
            gc.unfreeze()
        dep.close()
        return rate(len(events) - 1, wall), rate(len(events) - 1, cpu)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _big_log(path: Path, n: int) -> Any:
    """A log of n small events appended in batches of 10,000 (the tree maintained)."""
    from cladelog.core.store.base import PreparedEvent
    from cladelog.core.store.sqlite import SQLiteStore

    store = SQLiteStore(path, create=True)
    step = 10_000
    for start in range(0, n, step):
        store.append([PreparedEvent("s", "bench.reading", 1, {"i": i}, {})
                      for i in range(start, min(n, start + step))])
    return store


def bench_tree(n: int, data: list[Reading]) -> None:
    import random
    import statistics

    from cladelog.core.store.tree import chain_leaf
    from cladelog.core.transparency.merkle import verify_inclusion

    print("merkle tree: append with the tree maintained vs without (pairs: each append with "
          "the tree beside one without it, in turn; ev/s of wall time, and of CPU time)")
    for batch, count, pairs in ((1, min(n, 5_000), 5), (1000, min(n, 50_000), 15)):
        best = {True: (0.0, 0.0), False: (0.0, 0.0)}
        cost: list[float] = []  # the tree's share of CPU time, pair by pair
        for _ in range(pairs):
            got = {keep: _append_rate(data[:count], batch, keep) for keep in (False, True)}
            for keep in (False, True):
                best[keep] = (max(best[keep][0], got[keep][0]),
                              max(best[keep][1], got[keep][1]))
            cost.append(1 - got[True][1] / got[False][1])
        (wo, wo_cpu), (w, w_cpu) = best[False], best[True]
        q1, _, q3 = statistics.quantiles(cost, n=4)
        print(f"  batch {batch:>5}: without {wo:>9,.0f} ({wo_cpu:>9,.0f} cpu), with {w:>9,.0f} "
              f"({w_cpu:>9,.0f} cpu), best of {pairs} each: the tree costs "
              f"{(1 - w / wo) * 100:.1f}% of append throughput "
              f"({(1 - w_cpu / wo_cpu) * 100:.1f}% of CPU throughput); "
              f"median of the {pairs} pairs {statistics.median(cost) * 100:.1f}% of CPU "
              f"(quartiles {q1 * 100:.1f}..{q3 * 100:.1f}%)")
    big = 10 * n
    root = Path(tempfile.mkdtemp(prefix="cladelog-bench-tree-"))
    try:
        t0 = time.perf_counter()
        store = _big_log(root / "big.sqlite3", big)
        print(f"merkle tree: a log of {big:,} events built in {time.perf_counter() - t0:.1f} s")
        rng = random.Random(5)
        positions = [rng.randint(1, big) for _ in range(1000)]
        head_root = store.tree_root()
        before = store.tree_rows_read
        t0 = time.perf_counter()
        for p in positions:
            store.inclusion_proof(p)
        per = (time.perf_counter() - t0) / len(positions)
        rows = (store.tree_rows_read - before) / len(positions)
        for p in positions[:50]:  # the proofs verify (not timed)
            verify_inclusion(chain_leaf(store.hash_at(p) or ""), p - 1, big,
                             store.inclusion_proof(p), head_root)
        print(f"  inclusion proof of a random event: {per * 1000:.3f} ms each, "
              f"{rows:.1f} rows read (log2 n = {big.bit_length() - 1})")
        half = big // 2
        cp_root = store.tree_root(half)
        store.close()
        _verify_checkpoint(root, half, cp_root, big)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _verify_checkpoint(root: Path, half: int, cp_root: bytes, big: int) -> None:
    """`cladelog verify --checkpoint` (quick and full) of the big log against a checkpoint
    at half its size, through the command's own function."""
    import base64

    from cladelog.core import Deployment, DeploymentConfig
    from cladelog.core.tlog import check_checkpoints
    from cladelog.core.transparency.note import Checkpoint

    cfg = DeploymentConfig.from_dict({"store": "big.sqlite3", "log_name": "bench.example/log"},
                                     path=root / "cladelog.toml")
    dep = Deployment(cfg)
    cp = Checkpoint("bench.example/log", half, cp_root)
    assert base64.b64encode(cp_root)
    before = dep.store.tree_rows_read
    t0 = time.perf_counter()
    verdicts, _ = check_checkpoints(dep, [("half", cp)], quick=True)
    quick = time.perf_counter() - t0
    rows = dep.store.tree_rows_read - before
    assert verdicts[0].ok, verdicts
    t0 = time.perf_counter()
    verdicts, report = check_checkpoints(dep, [("half", cp)])
    full = time.perf_counter() - t0
    assert verdicts[0].ok and report is not None and report.ok, (verdicts, report)
    dep.close()
    print(f"  verify --checkpoint at {half:,} of {big:,}: --quick {quick * 1000:.1f} ms, "
          f"{rows} tree rows read, no event read; full (every event and node checked) "
          f"{full:.1f} s")
