"""PostgreSQL: append (one writer and four) and replay, against raw psycopg in the same run.

Each series uses a fresh schema in the database named by $CLADELOG_BENCH_PG
(default postgresql://postgres@127.0.0.1:5432/test), dropped afterwards.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
import uuid
from typing import Any

import attrs
from bench_core import payloads, rate

PG = os.environ.get("CLADELOG_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _schema_url(schema: str) -> str:
    return f"{PG}?schema={schema}"


def _drop(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _prepared(data: list[Any], stream: str) -> list[Any]:
    from cladelog.core.store.base import PreparedEvent

    return [PreparedEvent(stream, "bench.reading", 1, attrs.asdict(p), {"actor": "bench"})
            for p in data]


def _writer(url: str, stream: str, n: int, batch: int, start: Any) -> None:
    from cladelog.core.store.postgres import PostgresStore

    store = PostgresStore(url)
    events = _prepared(payloads(n), stream)
    start.wait()
    for i in range(0, n, batch):
        store.append(events[i:i + batch])
    store.close()


def bench_cladelog(n: int, batch: int, writers: int) -> tuple[float, float]:
    from cladelog.core.events import GENESIS_HASH
    from cladelog.core.store.base import Head
    from cladelog.core.store.postgres import PostgresStore

    schema = f"cl_bench_{uuid.uuid4().hex[:10]}"
    url = _schema_url(schema)
    store = PostgresStore(url, create=True)
    try:
        per = n // writers
        ctx = mp.get_context("spawn")
        start = ctx.Barrier(writers + 1)
        procs = [ctx.Process(target=_writer, args=(url, f"w{k}", per, batch, start))
                 for k in range(writers)]
        for p in procs:
            p.start()
        start.wait()
        t0 = time.perf_counter()
        for p in procs:
            p.join()
        t_append = time.perf_counter() - t0
        t0 = time.perf_counter()
        count = sum(1 for _ in store.read_verified(Head(0, GENESIS_HASH)))
        t_replay = time.perf_counter() - t0
        assert count == per * writers
        return rate(count, t_append), rate(count, t_replay)
    finally:
        store.close()
        _drop(schema)


def bench_raw(n: int, batch: int) -> tuple[float, float]:
    import psycopg

    schema = f"cl_raw_{uuid.uuid4().hex[:10]}"
    data = payloads(n)
    try:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(f'SET search_path TO "{schema}"')
            conn.execute("CREATE TABLE events (position BIGSERIAL PRIMARY KEY, stream TEXT, "
                         "type TEXT, data TEXT)")
            t0 = time.perf_counter()
            for i in range(0, n, batch):
                rows = [("readings", "bench.reading", json.dumps(attrs.asdict(p)))
                        for p in data[i:i + batch]]
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany("INSERT INTO events (stream, type, data) VALUES (%s, %s, %s)",
                                    rows)
            t_append = time.perf_counter() - t0
            t0 = time.perf_counter()
            count = 0
            with conn.transaction(), conn.cursor(name="raw") as cur:
                cur.itersize = 2000
                cur.execute("SELECT data FROM events ORDER BY position")
                for (text,) in cur:
                    json.loads(text)
                    count += 1
            t_replay = time.perf_counter() - t0
            assert count == n
    finally:
        _drop(schema)
    return rate(n, t_append), rate(n, t_replay)


def run(args: Any) -> int:
    n = args.events
    print(f"postgres benchmark: {n} events per series, database {PG}")
    print(f"{'batch':>6} {'path':<22} {'append ev/s':>12} {'replay ev/s':>12}")
    for batch in (1, 100, 1000):
        count = min(n, 5_000) if batch == 1 else n
        raw = bench_raw(count, batch)
        one = bench_cladelog(count, batch, 1)
        four = bench_cladelog(count, batch, 4)
        note = f"   (first {count} events)" if count != n else ""
        print(f"{batch:>6} {'raw psycopg':<22} {raw[0]:>12,.0f} {raw[1]:>12,.0f}{note}")
        print(f"{batch:>6} {'cladelog, 1 writer':<22} {one[0]:>12,.0f} {one[1]:>12,.0f}")
        print(f"{batch:>6} {'cladelog, 4 writers':<22} {four[0]:>12,.0f} {four[1]:>12,.0f}")
        print(f"{'':>6} ratios vs raw: append {one[0] / raw[0]:.2f} (4 writers "
              f"{four[0] / raw[0]:.2f}), replay {one[1] / raw[1]:.2f}")
    return 0
