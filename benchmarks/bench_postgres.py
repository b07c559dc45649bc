"""PostgreSQL: append (one writer and four) and replay, against raw psycopg in the same run.

The paths, at batch sizes 1, 100 and 1,000, each with one writer process and with four
concurrent writer processes (the rows split evenly, one stream per writer):

- cladelog: ``Deployment.append`` of ``NewEvent``s carrying attrs payload instances (as
  in bench_core), each writer process opening its own deployment on the PostgreSQL URL;
  replayed, chain verified, through ``cladelog.core.projections.replay`` into a counting
  projection, once taking payload instances (``payloads=True``) and once JSON objects;
- raw psycopg ``executemany``: ``json.dumps`` of the same payloads plus one
  ``executemany`` per batch, in a transaction (issue 8's targets are stated against this);
- raw psycopg ``COPY``: the same rows, one ``COPY ... FROM STDIN`` per batch, in a
  transaction (what cladelog's own append uses; printed for information);
- raw replay: a plain ``SELECT data ... ORDER BY position`` (server-side cursor, pages of
  2,000 as cladelog reads) plus ``json.loads``, on the executemany table.

Best of three interleaved rounds per batch size (every path once per round); every series
appends into a fresh schema in the database named by $CLADELOG_BENCH_PG (default
postgresql://postgres@127.0.0.1:5432/test), created for it and dropped afterwards, so no
round sees another's rows; each store is replayed three times (the best counts). An
append is timed from the moment the writers are released together to the last writer's
last commit (time.perf_counter is CLOCK_MONOTONIC, common to the processes), so process
start, imports, payload building and teardown are outside the timer in every path.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing as mp
import os
import sys
import threading
import time
import uuid
from typing import Any

import attrs
from bench_core import REPLAYS, ROUNDS, BenchPlugin, payloads, rate
from cladelog.core import Deployment, DeploymentConfig, NewEvent
from cladelog.core.projections import replay

PG = os.environ.get("CLADELOG_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
WRITERS = (1, 4)
KINDS = ("executemany", "copy", "cladelog")  # the order the paths run in, every round
LABEL = {"executemany": "raw executemany", "copy": "raw COPY", "cladelog": "cladelog"}
BATCH1_EVENTS = 5_000  # batch 1 is one transaction per event: the first 5,000 events only
TIMEOUT = 3600  # seconds a series may take before the benchmark gives up on it


# -- cladelog ------------------------------------------------------------------------------
def _deployment(schema: str, *, create: bool = False) -> Deployment:
    """A deployment whose store is the benchmark database's ``schema``."""
    cfg = DeploymentConfig.from_dict({"store": f"{PG}?schema={schema}", "actor": "bench"})
    return Deployment(cfg, plugins=[BenchPlugin()], create=create)


# -- raw psycopg ---------------------------------------------------------------------------
def _connect(schema: str) -> Any:
    import psycopg

    return psycopg.connect(PG, autocommit=True, options=f"-c search_path={schema}")


def _raw_schema(schema: str) -> None:
    with _connect(schema) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute("CREATE TABLE events (position BIGSERIAL PRIMARY KEY, stream TEXT, "
                     "type TEXT, data TEXT)")


def _drop(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _raw_replay(schema: str, n: int) -> float:
    """Best of REPLAYS: a plain SELECT of the JSON text plus json.loads, streamed."""
    best = float("inf")
    with _connect(schema) as conn:
        for _ in range(REPLAYS):
            t0 = time.perf_counter()
            count = 0
            with conn.transaction(), conn.cursor(name="raw") as cur:
                cur.execute("SELECT data FROM events ORDER BY position")
                for (text,) in itertools.chain.from_iterable(
                    iter(lambda cur=cur: cur.fetchmany(2000), [])
                ):
                    json.loads(text)
                    count += 1
            best = min(best, time.perf_counter() - t0)
            assert count == n, (count, n)
    return rate(n, best)


# -- writer processes ----------------------------------------------------------------------
def _writer(kind: str, schema: str, lo: int, hi: int, batch: int, start: Any,
            out: Any) -> None:
    """Append rows lo..hi of the payloads to stream ``readings-<lo>`` once released;
    put (start, end) of the timed loop on ``out``, or ("error", message)."""
    try:
        data = payloads(hi)[lo:]
        stream = f"readings-{lo}"
        n = len(data)
        if kind == "cladelog":
            dep = _deployment(schema)
            dep.record_plugins()  # already recorded by the parent: reads, appends nothing
            events = [NewEvent(stream, "bench.reading", p) for p in data]
            append = dep.append
            start.wait(TIMEOUT)
            t0 = time.perf_counter()
            for i in range(0, n, batch):
                append(events[i:i + batch])
            t1 = time.perf_counter()
            dep.close()
        else:
            conn = _connect(schema)
            start.wait(TIMEOUT)
            t0 = time.perf_counter()
            if kind == "executemany":
                for i in range(0, n, batch):
                    rows = [(stream, "bench.reading", json.dumps(attrs.asdict(p)))
                            for p in data[i:i + batch]]
                    with conn.transaction(), conn.cursor() as cur:
                        cur.executemany(
                            "INSERT INTO events (stream, type, data) VALUES (%s, %s, %s)", rows
                        )
            else:
                for i in range(0, n, batch):
                    with (
                        conn.transaction(),
                        conn.cursor() as cur,
                        cur.copy("COPY events (stream, type, data) FROM STDIN") as copy,
                    ):
                        for p in data[i:i + batch]:
                            copy.write_row((stream, "bench.reading",
                                            json.dumps(attrs.asdict(p))))
            t1 = time.perf_counter()
            conn.close()
        out.put((t0, t1))
    except BaseException as exc:
        start.abort()
        out.put(("error", f"{kind} writer {lo}..{hi}: {exc!r}"))
        raise


def series(kind: str, n: int, batch: int, writers: int) -> tuple[float, ...]:
    """Append n events in a fresh schema with ``writers`` processes; replay.

    Returns (append rate,) for COPY, (append rate, replay rate) for executemany, and
    (append rate, replay into payload instances, replay into JSON objects) for cladelog.
    """
    prefix = "cl_bench_" if kind == "cladelog" else "cl_raw_"
    schema = prefix + uuid.uuid4().hex[:10]
    dep = None
    try:
        if kind == "cladelog":
            dep = _deployment(schema, create=True)
            dep.record_plugins()  # the enabled plugin goes in before the writers start
        else:
            _raw_schema(schema)
        per = n // writers
        ctx = mp.get_context("spawn")
        start = ctx.Barrier(writers + 1)
        out = ctx.Queue()
        procs = [ctx.Process(target=_writer,
                             args=(kind, schema, k * per, (k + 1) * per, batch, start, out))
                 for k in range(writers)]
        for p in procs:
            p.start()
        try:
            with contextlib.suppress(threading.BrokenBarrierError):  # a writer failed: below
                start.wait(TIMEOUT)
            times = [out.get(timeout=TIMEOUT) for _ in procs]  # one item from each writer
        finally:
            for p in procs:
                p.join()
        errors = [t[1] for t in times if t[0] == "error"]
        if errors or any(p.exitcode for p in procs):
            raise RuntimeError("; ".join(errors) or "a writer process failed")
        count = per * writers
        t_append = max(t1 for _, t1 in times) - min(t0 for t0, _ in times)
        rates = [rate(count, t_append)]
        if kind == "executemany":
            rates.append(_raw_replay(schema, count))
        elif kind == "cladelog":
            assert dep is not None
            for name in ("bench.count", "bench.count_json"):
                projection = [p for p in dep.projections if p.name == name]
                best = float("inf")
                for _ in range(REPLAYS):
                    t0 = time.perf_counter()
                    result = replay(dep.store, dep.registry, projection, rebuild=True,
                                    save=False)
                    best = min(best, time.perf_counter() - t0)
                    state = result.projections[0].state
                    assert state["n"] == count, (state, count)
                rates.append(rate(count, best))
        return tuple(rates)
    finally:
        if dep is not None:
            dep.close()
        _drop(schema)


def run(args: Any) -> int:
    n = args.events
    size = len(json.dumps(attrs.asdict(payloads(1)[0])))
    print(f"postgres benchmark: {n} events per series (batch 1: the first "
          f"{min(n, BATCH1_EVENTS):,}), payload about {size} bytes of JSON, "
          f"Python {sys.version.split()[0]}, database {PG}")
    print(f"(best of {ROUNDS} rounds, all six paths interleaved; each series appends into a "
          f"fresh schema from separate writer processes and is replayed {REPLAYS} times)")
    print(f"{'batch':>6} {'writers':>7} {'path':<16} {'append ev/s':>12} {'replay ev/s':>12}")
    best: dict[tuple[int, int, str], tuple[float, ...]] = {}
    for batch in (1, 100, 1000):
        count = min(n, BATCH1_EVENTS) if batch == 1 else n
        note = f"   (first {count:,} events)" if count != n else ""
        for _ in range(ROUNDS):
            for writers in WRITERS:
                for kind in KINDS:
                    got = series(kind, count, batch, writers)
                    key = (batch, writers, kind)
                    best[key] = tuple(map(max, zip(best.get(key, got), got, strict=True)))
        for writers in WRITERS:
            em = best[batch, writers, "executemany"]
            cp = best[batch, writers, "copy"]
            cl = best[batch, writers, "cladelog"]
            head = f"{batch:>6} {writers:>7}"
            print(f"{head} {LABEL['executemany']:<16} {em[0]:>12,.0f} {em[1]:>12,.0f}"
                  f"   (SELECT + json.loads){note}")
            print(f"{head} {LABEL['copy']:<16} {cp[0]:>12,.0f}")
            print(f"{head} {LABEL['cladelog']:<16} {cl[0]:>12,.0f} {cl[1]:>12,.0f}"
                  "   (replayed into payload instances)")
            print(f"{'':>6} {'':>7} {'':<16} {'':>12} {cl[2]:>12,.0f}"
                  "   (replayed as JSON objects, the form json.loads gives)")
            line = (f"{'':>6} ratios, {writers} writer{'s' if writers > 1 else ''}: append "
                    f"cladelog/executemany {cl[0] / em[0]:.2f}, cladelog/COPY "
                    f"{cl[0] / cp[0]:.2f}")
            if writers > 1:
                one = best[batch, 1, "executemany"]
                line += f" (vs 1-writer executemany {cl[0] / one[0]:.2f})"
            print(f"{line}; replay cladelog/raw SELECT {cl[1] / em[1]:.2f} "
                  f"(JSON {cl[2] / em[1]:.2f})")
    print("targets (issue 8): batch-1,000 append within 3x of raw executemany (ratio >= 0.33, "
          "same writer count); replay within 2x of raw SELECT (ratio >= 0.50); the COPY "
          "ratios are for information")
    return 0
