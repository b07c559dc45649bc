"""PostgreSQL, server side only: what one primary sustains at 1, 2, 4 and 8 clients when
the clients cost (almost) nothing, measured with pgbench (its C client).

Three one-round-trip statements, each appending one event of the benchmark payload:

- raw: ``INSERT INTO events (stream, type, data) VALUES (...)`` into a BIGSERIAL table
  (autocommit): no order, no chain; the baseline of bench_postgres, without Python;
- serialized: the least a hash-chained log with a head row must do, as one PL/pgSQL
  procedure call: lock the head row, hash the event onto the head's hash (``sha256``),
  insert it, move the head, commit without waiting for the flush (releasing the lock),
  then wait for the flush as cladelog's contended path does: no guards, no tree, no
  idempotency record, no stream versions;
- cladelog: ``CALL cladelog_append_durably(...)``, the statement a batch-1 append of
  ``PostgresStore`` sends (schema 8), with the canonical bytes cladelog's encoder makes
  of the same payload, one stream per client and a random idempotency key per call.

Each (kind, clients) runs $CLADELOG_CEILING_SECONDS seconds (5 by default) in a fresh
schema of the database named by $CLADELOG_BENCH_PG, dropped afterwards; kinds alternate
for ROUNDS rounds and the best counts. Python never runs during a measured second here,
so the figures show the server's own ceiling on this machine: bench_postgres's Python
writers share the same cores, so its cladelog rates stay below the cladelog column here.

Run: ``python benchmarks/run.py postgres-ceiling`` (needs the ``pgbench`` program).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from typing import Any

from bench_core import ROUNDS, payloads
from bench_postgres import PG, _connect, _deployment, _drop, _raw_schema

CLIENTS = (1, 2, 4, 8)
KINDS = ("raw", "serialized", "cladelog")

_SERIALIZED_DDL = """
CREATE TABLE events (position BIGINT PRIMARY KEY, stream TEXT NOT NULL, type TEXT NOT NULL,
                     data TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE head (id INTEGER PRIMARY KEY, position BIGINT NOT NULL, hash TEXT NOT NULL);
INSERT INTO head VALUES (1, 0, '');
CREATE PROCEDURE serialized_append(p_stream TEXT, p_data TEXT, INOUT pos BIGINT) AS $$
DECLARE
    h TEXT;
BEGIN
    SELECT position, hash INTO pos, h FROM head WHERE id = 1 FOR UPDATE;
    pos := pos + 1;
    h := encode(sha256(convert_to(h || p_data, 'UTF8')), 'hex');
    INSERT INTO events VALUES (pos, p_stream, 'bench.reading', p_data, h);
    UPDATE head SET position = pos, hash = h WHERE id = 1;
    -- as cladelog's procedure does when contended: release the lock before the flush,
    -- then wait for the flush in a second transaction (one WAL record if none is flushed)
    PERFORM set_config('synchronous_commit', 'off', true);
    COMMIT;
    IF pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() THEN
        PERFORM pg_logical_emit_message(true, 'bench', '');
    END IF;
END $$ LANGUAGE plpgsql;
"""


def _literal(raw: bytes) -> str:
    """A bytea literal of ``raw`` (hex form)."""
    return f"'\\x{raw.hex()}'::bytea"


def _scripts() -> dict[str, str]:
    """The pgbench script of each kind (``:client_id`` and ``:k`` are pgbench's)."""
    import json

    import attrs
    from cladelog.core.canonical import canonical_bytes
    from cladelog.core.store.postgres import _append_call

    payload = attrs.asdict(payloads(1)[0])
    text = json.dumps(payload)
    data = canonical_bytes(payload, path="$")
    now = "2026-01-01T00:00:00.000000Z"
    quoted = "'" + text.replace("'", "''") + "'"
    # the store's own statement, with these 15 argument expressions (its INOUT results
    # added by _append_call)
    call = _append_call([
        "'bench:' || :k", "'digest'", f"'{now}'", _literal(canonical_bytes(now, path="$")),
        "ARRAY['readings-' || :client_id]",
        "ARRAY[convert_to('\"readings-' || :client_id || '\"', 'UTF8')]",
        "ARRAY['bench.reading']", f"ARRAY[{_literal(canonical_bytes('bench.reading', path='$'))}]",
        "ARRAY[1]", f"ARRAY[{_literal(data)}]", f"ARRAY[{_literal(canonical_bytes({}, path='$'))}]",
        "'{}'::text[]", "'{}'::bigint[]", "NULL", "NULL",
    ])
    key = "\\set k random(1, 9000000000000000000)\n"
    return {
        "raw": f"INSERT INTO events (stream, type, data) VALUES "
               f"('readings-' || :client_id, 'bench.reading', {quoted});\n",
        "serialized": f"CALL serialized_append('readings-' || :client_id, {quoted}, NULL);\n",
        "cladelog": key + call + ";\n",
    }


def _schema(kind: str) -> tuple[str, Any]:
    """A fresh schema for ``kind``; returns its name and what to close afterwards."""
    schema = f"cl_ceiling_{kind[:3]}_" + uuid.uuid4().hex[:8]
    if kind == "raw":
        _raw_schema(schema)
        return schema, None
    if kind == "serialized":
        with _connect("public") as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        with _connect(schema) as conn:
            conn.execute(_SERIALIZED_DDL)
        return schema, None
    dep = _deployment(schema, create=True)
    dep.record_plugins()
    return schema, dep


def _pgbench(script: str, schema: str, clients: int, seconds: int) -> float:
    """Transactions per second of ``script`` run by ``clients`` pgbench clients."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        env = {**os.environ, "PGOPTIONS": f"-c search_path={schema}"}
        done = subprocess.run(
            ["pgbench", "-n", "-M", "prepared", "-f", f.name, "-c", str(clients), "-j",
             str(clients), "-T", str(seconds), PG],
            env=env, capture_output=True, text=True, check=False)
    finally:
        os.unlink(f.name)
    found = re.search(r"^tps = ([0-9.]+)", done.stdout, re.MULTILINE)
    if done.returncode != 0 or found is None or "aborted" in done.stdout:
        raise RuntimeError(f"pgbench failed: {done.stdout[-400:]} {done.stderr[-400:]}")
    return float(found.group(1))


def run(args: Any) -> int:
    if shutil.which("pgbench") is None:
        print("postgres-ceiling needs the pgbench program (PostgreSQL's client tools)",
              file=sys.stderr)
        return 2
    seconds = int(os.environ.get("CLADELOG_CEILING_SECONDS", "5"))
    scripts = _scripts()
    print(f"postgres ceiling: pgbench -M prepared, {seconds} s per series, best of {ROUNDS} "
          f"rounds, kinds alternating; database {PG}")
    print(f"{'clients':>7} {'raw tx/s':>9} {'serialized':>11} {'cladelog':>9} "
          f"{'cl/raw':>7} {'cl/ser':>7} {'raw N/1':>8} {'ser N/1':>8} {'cl N/1':>7}")
    best: dict[tuple[int, str], float] = {}
    for clients in CLIENTS:
        for _ in range(ROUNDS):
            for kind in KINDS:
                schema, dep = _schema(kind)
                try:
                    tps = _pgbench(scripts[kind], schema, clients, seconds)
                finally:
                    if dep is not None:
                        dep.close()
                    _drop(schema)
                best[clients, kind] = max(best.get((clients, kind), 0.0), tps)
        raw, ser, cl = (best[clients, k] for k in KINDS)
        print(f"{clients:>7} {raw:>9,.0f} {ser:>11,.0f} {cl:>9,.0f} {cl / raw:>7.2f} "
              f"{cl / ser:>7.2f} {raw / best[1, 'raw']:>8.2f} "
              f"{ser / best[1, 'serialized']:>8.2f} {cl / best[1, 'cladelog']:>7.2f}",
              flush=True)
    return 0
