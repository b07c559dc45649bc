"""The PostgreSQL store runs the very same conformance suite as SQLite, plus its own tests:
connection failures and retries, many writers, readers during writes, live follow,
and portability of a log between the two stores."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from cladelog.core.errors import StoreError
from cladelog.core.store.base import PreparedEvent
from cladelog.core.store.postgres import SCHEMA_VERSION, PostgresStore
from cladelog.core.testing.conformance import StoreConformance, prepared
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash
from click.testing import CliRunner

pytestmark = pytest.mark.postgres


class TestPostgresConformance(StoreConformance):
    @pytest.fixture
    def store_harness(self, pg_harness):  # type: ignore[no-untyped-def]
        return pg_harness


class _ByCopy:
    """The harness, with every batch appended by COPY (chained in Python) instead of by
    the server-side function: both paths must keep every guarantee."""

    def __init__(self, harness: Any) -> None:
        self._harness = harness

    def __getattr__(self, name: str) -> Any:
        return getattr(self._harness, name)

    def new(self) -> Any:
        store = self._harness.new()
        store.copy_from = 1
        return store

    def reopen(self, store: Any) -> Any:
        other = self._harness.reopen(store)
        other.copy_from = 1
        return other


class TestPostgresConformanceByCopy(StoreConformance):
    @pytest.fixture
    def store_harness(self, pg_harness):  # type: ignore[no-untyped-def]
        return _ByCopy(pg_harness)


# -- opening: clear errors ------------------------------------------------------------------
def test_unreachable_server() -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        PostgresStore("postgresql://postgres@127.0.0.1:1/test")


def test_unknown_role() -> None:
    with pytest.raises(StoreError, match='role "no_such_role_here" does not exist'):
        PostgresStore("postgresql://no_such_role_here@127.0.0.1:5432/test")


def test_missing_database() -> None:
    with pytest.raises(StoreError, match='database "no_such_db_here" does not exist'):
        PostgresStore("postgresql://postgres@127.0.0.1:5432/no_such_db_here")


def test_schema_without_init(pg_harness: Any) -> None:
    with pytest.raises(StoreError, match="holds no cladelog log"):
        PostgresStore(pg_harness.url())


def test_bad_schema_name(pg_harness: Any) -> None:
    with pytest.raises(StoreError, match="schema 'Bad;Name' must match"):
        PostgresStore(pg_harness.url("Bad;Name"))


def test_init_twice_and_the_schema_table(pg_harness: Any) -> None:
    url = pg_harness.url()
    with PostgresStore(url, create=True) as s:
        s.append(prepared("a", 2))
    with PostgresStore(url, create=True) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.head().position == 2
        assert s.verify().ok


def _insert_rows(pg_harness: Any, store: Any, rows: list[tuple[int, str, str]]) -> None:
    """INSERT, in one statement, events at (position, hash, prev_hash) bypassing cladelog
    (the trigger checks only the links); rolled back when the database accepts them."""
    values = ", ".join(f"({p}, 'z', {p}, 'x.y', 1, 't', '1', '{{}}', '{h}', '{ph}')"
                       for p, h, ph in rows)
    with pg_harness._conn(store) as conn, contextlib.suppress(_RolledBack), \
            conn.transaction():
        conn.execute("INSERT INTO events (position, stream, stream_version, type, "
                     "schema_version, recorded_at, data, meta, hash, prev_hash) "
                     f"VALUES {values}")
        raise _RolledBack


class _RolledBack(Exception):
    pass


def test_the_extends_log_trigger_checks_every_row_of_a_statement(pg_harness: Any) -> None:
    store = pg_harness.new()
    head = store.append(prepared("a", 3))[-1]
    h4, h5, h6 = "4" * 64, "5" * 64, "6" * 64
    # linked rows are accepted, in whatever order the statement lists them
    _insert_rows(pg_harness, store, [(4, h4, head.hash), (5, h5, h4)])
    _insert_rows(pg_harness, store, [(5, h5, h4), (4, h4, head.hash), (6, h6, h5)])
    for rows in (
        [(4, h4, "0" * 64)],                             # the first row is not linked to 3
        [(4, h4, head.hash), (5, h5, h6)],               # the second is not linked to the first
        [(4, h4, head.hash), (6, h6, h4)],               # a gap between them
        [(4, h4, head.hash), (5, h5, h4), (7, h6, h5)],  # a gap after linked rows
        [(5, h5, head.hash)],                            # a gap before the statement
    ):
        with pytest.raises(Exception, match="extend the log by one linked position"):
            _insert_rows(pg_harness, store, rows)
    assert store.head().position == 3 and store.verify().ok


def _scans(store: Any, append: Any) -> dict[str, int]:
    """The sequential scans of each table in the transaction of one ``append()``."""
    seen: dict[str, int] = {}
    # a backend flushes the counts of its finished transactions lazily: make it flush them
    # when this statement ends, so the append's transaction counts only its own
    with store._pool.connection() as conn:
        pid = conn.execute("SELECT pg_backend_pid(), pg_stat_force_next_flush()").fetchone()[0]

    def look(conn: Any) -> None:
        assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
        seen.update(conn.execute(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables "
            "WHERE schemaname = current_schema()").fetchall())

    store._before_commit = look
    try:
        append()
    finally:
        store._before_commit = None
    assert seen, "the hook saw no transaction"
    return seen


@pytest.mark.parametrize("copy_from", [1, 10_000], ids=["by-copy", "by-function"])
def test_an_append_scans_no_table_of_the_log(pg_harness: Any, copy_from: int) -> None:
    """An append's checks (the versions, the key, the link of its first event, the head)
    probe indexes: its cost does not grow with the log. Schema 5's extends-log trigger
    read the whole events table on every append."""
    store = pg_harness.new()
    store.copy_from = copy_from
    store.append(prepared("a", 2_000))
    for n in (1, 40, 300):
        scans = _scans(store, lambda n=n: store.append(prepared(
            "a", n, start=store.stream_version("a")), expected_versions={
                "a": store.stream_version("a")}, idempotency_key=f"k{n}"))
        assert scans.get("events", 0) == 0 and scans.get("batches", 0) == 0, (n, scans)
    assert store.lock_held[1] == 4 and store.lock_held[0] > 0  # either path reports it
    assert store.verify().ok


def test_truncate_is_refused(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 2))
    with pytest.raises(Exception, match="append-only"):
        pg_harness.raw_execute(store, "TRUNCATE events")
    assert store.head().position == 2


# -- a connection dropped mid-batch ---------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "UPDATE cladelog_head SET position = 5",  # a head beyond the log: appends would fail
    "UPDATE cladelog_head SET position = 1",  # back to an earlier event
    "UPDATE cladelog_head SET hash = 'x'",
    "DELETE FROM cladelog_head",
])
def test_the_head_row_moves_only_with_the_log(pg_harness: Any, sql: str) -> None:
    """The head row is what appends lock and extend: a hand-written change to it would make
    status disagree with the log and every later append fail."""
    from cladelog.core.testing.conformance import clock, prepared

    store = pg_harness.new()
    store.append(prepared("a", 3), clock=clock)
    before = store.head()
    with pytest.raises(Exception, match=r"head must name the last event|append-only"):
        pg_harness.raw_execute(store, sql)
    assert store.head() == before
    store.append(prepared("b", 1), clock=clock)  # appends still work
    assert store.head().position == 4 and store.verify().ok


def test_backend_killed_before_commit_appends_the_batch_exactly_once(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 3))
    killed: list[int] = []

    def kill_own_backend(conn: Any) -> None:
        if not killed:
            pid = conn.info.backend_pid
            killed.append(pid)
            with pg_harness.psycopg.connect(pg_harness.base_url, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
            time.sleep(0.2)

    store._before_commit = kill_own_backend
    recorded = store.append(prepared("b", 50))
    store._before_commit = None
    assert killed, "the hook did not run"
    assert [e.position for e in recorded] == list(range(4, 54))
    assert [e.position for e in store.read()] == list(range(1, 54))
    assert store.stream_version("b") == 50
    assert store.verify().ok


def test_lost_acknowledgement_is_resolved_by_the_idempotency_key(pg_harness: Any) -> None:
    store = pg_harness.new()
    calls: list[int] = []

    def lose_ack() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise pg_harness.psycopg.OperationalError("simulated: connection lost after commit")

    store._after_commit = lose_ack
    recorded = store.append(prepared("a", 5), idempotency_key="batch-7")
    store._after_commit = None
    assert len(calls) == 2  # committed once, retried once, found by its key
    assert [e.position for e in recorded] == [1, 2, 3, 4, 5]
    assert store.head().position == 5


def test_a_retry_that_also_fails_is_a_clear_error(pg_harness: Any) -> None:
    store = pg_harness.new()

    def always_lost() -> None:
        raise pg_harness.psycopg.OperationalError("simulated outage")

    store._after_commit = always_lost
    with pytest.raises(StoreError, match="retry with idempotency key 'k9'"):
        store.append(prepared("a", 2), idempotency_key="k9")
    store._after_commit = None
    # the batch did commit; the advertised retry returns it without appending again
    again = store.append(prepared("a", 2), idempotency_key="k9")
    assert [e.position for e in again] == [1, 2]
    assert store.head().position == 2


# -- a connection dropped during a read ------------------------------------------------------
def _terminate_readers(pg_harness: Any, schema: str) -> list[int]:
    """Terminate every backend holding a lock on ``schema``'s events table (an open read's
    transaction does; the pool's idle connections do not) and wait until each is gone."""
    with pg_harness.psycopg.connect(pg_harness.base_url, autocommit=True) as other:
        pids = [r[0] for r in other.execute(
            "SELECT DISTINCT pid FROM pg_locks WHERE relation = %s::regclass "
            "AND pid <> pg_backend_pid()", (f"{schema}.events",))]
        for pid in pids:
            other.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
    return pids


@pytest.mark.parametrize("how", ["read", "read_verified"])
def test_backend_killed_mid_read_is_a_one_line_store_error(pg_harness: Any, how: str) -> None:
    from cladelog.core.events import GENESIS_HASH
    from cladelog.core.store.base import Head

    store = pg_harness.new()
    store.append(prepared("a", 5000))  # more than one fetched page (2,000 rows)
    events = store.read() if how == "read" else store.read_verified(Head(0, GENESIS_HASH))
    assert next(events).position == 1
    assert len(_terminate_readers(pg_harness, store.schema)) == 1
    with pytest.raises(StoreError) as info:
        for _ in events:
            pass
    message = str(info.value)
    assert message == ("store: reading events from PostgreSQL failed (terminating connection "
                       "due to administrator command)")
    # the store itself is still usable: the next read opens a new connection
    assert [e.position for e in store.read(4999)] == [4999, 5000]
    assert store.verify().ok


def test_backend_killed_while_waiting_for_appends(pg_harness: Any) -> None:
    store = pg_harness.new()
    store.append(prepared("a", 1))
    assert store.wait_for_append(1, 0.01) is False  # opens the listening connection
    pid = store._listener.info.backend_pid
    with pg_harness.psycopg.connect(pg_harness.base_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
    with pytest.raises(StoreError, match=r"^store: waiting for new events \(LISTEN\) failed "
                                         r"\(.+\)$"):
        # the channel is shared by every schema of the database: a notification another
        # test's append queued before the kill may be delivered first
        for _ in range(20):
            assert store.wait_for_append(1, 2.0) is False
    # the next call listens on a new connection
    assert store.wait_for_append(1, 0.01) is False
    assert store._listener.info.backend_pid != pid
    store.append(prepared("a", 1, start=2))
    assert store.wait_for_append(1, 2.0) is True


@pytest.mark.parametrize("command", [["log", "--json"], ["replay"], ["replay", "--json"]])
def test_cli_read_killed_mid_way_exits_2_with_one_line(
    pg_harness: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    url = pg_harness.url()
    cfg = _deployment(tmp_path, url)
    with PostgresStore(url) as store:
        schema = store.schema
        store.append([PreparedEvent("notes", "notes.note_added", 2,
                                    {"text": f"n{k}", "tags": []}, {}) for k in range(3000)])
    real_rows = PostgresStore._rows
    killed: list[int] = []

    @contextlib.contextmanager
    def rows_killed_after_one(self: PostgresStore, sql: str, args: list[Any]) -> Any:
        with real_rows(self, sql, args) as rows:
            def rows_then_kill() -> Any:
                for k, row in enumerate(rows):
                    if k == 1:  # mid-read: the first page is fetched, the next is not
                        killed.extend(_terminate_readers(pg_harness, schema))
                    yield row
            yield rows_then_kill()

    monkeypatch.setattr(PostgresStore, "_rows", rows_killed_after_one)
    r = CliRunner().invoke(main, ["--config", str(cfg), *command])
    assert len(killed) == 1, "no read was interrupted"
    assert r.exit_code == 2, r.output
    assert r.stderr == ("error: store: reading events from PostgreSQL failed (terminating "
                        "connection due to administrator command)\n")
    assert "Traceback" not in r.output and "internal error" not in r.output


# -- many writers, readers during writes ----------------------------------------------------
WRITER = textwrap.dedent("""
    import sys, time
    from cladelog.core.store.postgres import PostgresStore
    from cladelog.core.store.base import PreparedEvent
    url, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store = PostgresStore(url)
    end = time.monotonic() + seconds
    b = 0
    while time.monotonic() < end:
        size = 1 + (b * 7) % 20
        store.append([PreparedEvent(name, "test.happened", 1, {"batch": b, "i": i}, {})
                      for i in range(size)])
        b += 1
    print(b)
    store.close()
""")


@pytest.mark.slow
def test_four_writers_and_a_reader(pg_harness: Any) -> None:
    store = pg_harness.new()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, store.url, f"w{k}", "4"],
                              stdout=subprocess.PIPE, text=True) for k in range(4)]
    observed: list[str] = []

    def reader() -> None:
        # while writers append, every read sees positions 1..n with no hole
        while any(p.poll() is None for p in procs):
            positions = [e.position for e in store.read()]
            if positions != list(range(1, len(positions) + 1)):
                observed.append(f"hole in {positions[:5]}...")
            if not store.verify().ok:
                observed.append("chain broken")
            time.sleep(0.05)

    t = threading.Thread(target=reader)
    t.start()
    batches = [int(p.communicate(timeout=120)[0]) for p in procs]
    t.join()
    assert all(p.returncode == 0 for p in procs)
    assert observed == []
    events = list(store.read())
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert store.verify().ok
    for k in range(4):
        mine = [e for e in events if e.stream == f"w{k}"]
        assert [e.stream_version for e in mine] == list(range(1, len(mine) + 1))
        assert len({e.data["batch"] for e in mine}) == batches[k]
        # a batch is one transaction: its events hold consecutive positions
        by_batch: dict[int, list[int]] = {}
        for e in mine:
            by_batch.setdefault(e.data["batch"], []).append(e.position)
        for positions in by_batch.values():
            assert positions == list(range(positions[0], positions[0] + len(positions)))
    assert sum(batches) > 4


# -- live follow ----------------------------------------------------------------------------
def _deployment(tmp_path: Path, store: str) -> Path:
    cfg = tmp_path / "cladelog.toml"
    cfg.write_text(f'store = "{store}"\nplugins = ["notes"]\nactor = "t"\n')
    r = CliRunner().invoke(main, ["--config", str(cfg), "init"])
    assert r.exit_code == 0, r.output
    return cfg


def _note(cfg: Path, text: str) -> None:
    r = CliRunner().invoke(main, ["--config", str(cfg), "notes", "add", text])
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_replay_follow_keeps_up_and_stops_cleanly(pg_harness: Any, tmp_path: Path) -> None:
    cfg = _deployment(tmp_path, pg_harness.url())
    exe = str(Path(sys.executable).with_name("cladelog"))
    proc = subprocess.Popen([exe, "--config", str(cfg), "replay", "--follow", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        start = first["head"]["position"]
        for k in range(3):
            _note(cfg, f"n{k}")
        head = json.loads(CliRunner().invoke(main, ["--config", str(cfg), "status", "--json"])
                          .output)["head"]["position"]
        assert head >= start + 3  # the three notes (and the plugin enablement, if first)
        seen = start
        deadline = time.monotonic() + 20
        while seen < head and time.monotonic() < deadline:
            seen = json.loads(proc.stdout.readline())["head"]["position"]  # type: ignore[union-attr]
        assert seen == head
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    status = json.loads(CliRunner().invoke(main, ["--config", str(cfg), "status",
                                                  "--json"]).output)
    behind = {p["name"]: p["behind"] for p in status["projections"]}
    assert behind["notes.index"] == 0  # the checkpoint was saved at the head


# -- portability ----------------------------------------------------------------------------
def _digests(cfg: Path) -> dict[str, str]:
    r = CliRunner().invoke(main, ["--config", str(cfg), "replay", "--rebuild", "--json"])
    assert r.exit_code == 0, r.output
    return {p["name"]: p["digest"] for p in json.loads(r.output)["projections"]}


@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_export_import_between_stores_keeps_every_digest(
    pg_harness: Any, tmp_path: Path, direction: str
) -> None:
    pg_url = pg_harness.url()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    src_store, dst_store = ("a.sqlite3", pg_url)
    if direction == "postgres-to-sqlite":
        src_store, dst_store = dst_store, src_store
    src = _deployment(a, src_store)
    for k in range(5):
        _note(src, f"note {k} ✓")
    export = tmp_path / "log.jsonl"
    assert CliRunner().invoke(main, ["--config", str(src), "export", str(export)]).exit_code == 0
    # an empty destination store (no init-time events) takes the whole log
    dst_cfg = b / "cladelog.toml"
    dst_cfg.write_text(f'store = "{dst_store}"\nplugins = ["notes"]\n')
    from cladelog.core.store import open_store

    open_store(dst_store if "://" in dst_store else str(b / dst_store), create=True).close()
    r = CliRunner().invoke(main, ["--config", str(dst_cfg), "import", str(export)])
    assert r.exit_code == 0, r.output
    assert _digests(src) == _digests(dst_cfg)
    src_events = [json.loads(x) for x in export.read_text().splitlines()]
    r = CliRunner().invoke(main, ["--config", str(dst_cfg), "log", "--json"])
    dst_events = [json.loads(x) for x in r.output.splitlines()]
    assert [e["hash"] for e in dst_events] == [e["hash"] for e in src_events]


def test_deployment_file_selects_postgres(pg_harness: Any, tmp_path: Path) -> None:
    cfg = _deployment(tmp_path, pg_harness.url())
    _note(cfg, "hello")
    r = CliRunner().invoke(main, ["--config", str(cfg), "status", "--json"])
    doc = json.loads(r.output)
    assert doc["store"].startswith("postgresql://") and doc["head"]["position"] == 2


def test_prepared_events_hash_identically_on_both_stores(pg_harness: Any,
                                                         sqlite_harness: Any) -> None:
    events = [PreparedEvent("s", "test.happened", 1, {"x": 1.5e-7, "t": "Grüße"}, {"a": 1})]

    def clock() -> str:
        return "2026-01-01T00:00:00.000000Z"

    pg = pg_harness.new().append(events, clock=clock)
    lite = sqlite_harness.new().append(events, clock=clock)
    assert [e.hash for e in pg] == [e.hash for e in lite]
    assert [e.body for e in pg] == [e.body for e in lite]


def test_environment_does_not_leak_schemas(pg_harness: Any) -> None:
    # every schema this session made is recorded for the final DROP SCHEMA
    store = pg_harness.new()
    assert store.schema in pg_harness.schemas
    assert os.environ.get("PGOPTIONS") is None


# -- upgrading a version-1 log ----------------------------------------------------------------
_V1_DDL = """
CREATE TABLE cladelog_schema (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO cladelog_schema VALUES (1, '2026-11-29T00:00:00.000000Z');
CREATE TABLE events (position BIGINT PRIMARY KEY, stream TEXT NOT NULL,
    stream_version BIGINT NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL,
    recorded_at TEXT NOT NULL, body BYTEA NOT NULL, hash TEXT NOT NULL,
    prev_hash TEXT NOT NULL, UNIQUE (stream, stream_version));
CREATE TABLE cladelog_head (id INTEGER PRIMARY KEY CHECK (id = 1), position BIGINT NOT NULL,
    hash TEXT NOT NULL);
CREATE OR REPLACE FUNCTION cladelog_refuse_rewrite() RETURNS trigger AS $$
BEGIN RAISE EXCEPTION 'cladelog: the event log is append-only (% refused)', TG_OP; END $$
LANGUAGE plpgsql;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION cladelog_refuse_rewrite();
"""


def test_a_version_1_log_is_upgraded_by_init_only(pg_harness: Any, tmp_path: Path) -> None:
    from cladelog.core.store.sqlite import SQLiteStore
    from cladelog.core.testing.conformance import clock

    with SQLiteStore(tmp_path / "source.sqlite3", create=True) as lite:
        lite.append(prepared("a", 3) + prepared("b", 2), clock=clock)
        events = list(lite.read())
    store = pg_harness.new()  # for its fresh schema name; its tables are replaced below
    schema = store.schema
    store.close()
    with pg_harness._conn(store) as conn:
        for table in ("events", "cladelog_head", "cladelog_schema", "batches", "checkpoints"):
            conn.execute(f"DROP TABLE {table} CASCADE")
        conn.execute(_V1_DDL)
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [(e.position, e.stream, e.stream_version, e.type, e.schema_version,
                  e.recorded_at, e.body, e.hash, e.prev_hash) for e in events])
        conn.execute("INSERT INTO cladelog_head VALUES (1, %s, %s)",
                     (events[-1].position, events[-1].hash))
    url = pg_harness.url(schema)
    with pytest.raises(StoreError, match="schema version 1; run 'cladelog init' to upgrade"):
        PostgresStore(url)
    with PostgresStore(url, create=True) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.verify().ok
        assert [(e.hash, e.body, e.data) for e in s.read()] == \
               [(e.hash, e.body, e.data) for e in events]
        s.append(prepared("a", 1, start=7), clock=clock)
        assert s.verify().ok and s.head().position == len(events) + 1
        with pytest.raises(Exception, match="append-only"):
            pg_harness.raw_execute(s, "UPDATE events SET stream = 'x'")


# -- upgrading a version-4 log ----------------------------------------------------------------
# Version 5 added exactly these to version 4 (the append function, the tree's peaks in the
# head row and their check in the head's trigger): undoing them leaves what version 4 made.
_V5_ADDITIONS_REMOVED = f"""
DROP FUNCTION cladelog_append;
CREATE OR REPLACE FUNCTION cladelog_head_follows_log() RETURNS trigger AS $$
BEGIN
    IF NEW.position <> COALESCE((SELECT MAX(position) FROM events), 0)
       OR NEW.hash <> COALESCE((SELECT hash FROM events WHERE position = NEW.position),
                               '{"0" * 64}') THEN
        RAISE EXCEPTION 'cladelog: the head must name the last event of the log';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
ALTER TABLE cladelog_head DROP COLUMN tree_peaks, DROP COLUMN tree_for;
DELETE FROM cladelog_schema WHERE version >= 5;
INSERT INTO cladelog_schema VALUES (4, '2026-12-01T00:00:00.000000Z') ON CONFLICT DO NOTHING;
"""


def _v4_append(pg_harness: Any, store: Any, stream: str, n: int, start: int) -> None:
    """Append as a version-4 writer did: in Python under the head lock, one COPY (the
    store's chunked path is that code), moving the head row's two version-4 columns."""
    from cladelog.core.store import tree
    from cladelog.core.store.base import Head, build_rows
    from cladelog.core.testing.conformance import clock

    with pg_harness._conn(store) as conn, conn.transaction():
        pos, prev = conn.execute("SELECT position, hash FROM cladelog_head FOR UPDATE"
                                 ).fetchone()
        head = Head(int(pos), prev)
        recorded, rows = build_rows(prepared(stream, n, start=start), head,
                                    {stream: start}, None, clock)
        with conn.cursor() as cur, cur.copy(
                "COPY events (position, stream, stream_version, type, schema_version, "
                "recorded_at, data, meta, hash, prev_hash) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        nodes, _ = tree.extension(head, [e.hash for e in recorded], None,
                                  lambda ranges: store._read_ranges(conn, ranges))
        for node in nodes:
            conn.execute("INSERT INTO tree_nodes VALUES (%s, %s, %s)", node)
        conn.execute("UPDATE cladelog_head SET position = %s, hash = %s",
                     (recorded[-1].position, recorded[-1].hash))


def _stride_4_tree(pg_harness: Any, store: Any) -> None:
    """Give a store the tree versions 4 to 6 kept: every 4th level stored (the nodes from
    the in-memory reference tree over the events' chain hashes), under their trigger."""
    with pg_harness._conn(store) as conn, conn.transaction():
        hashes = [r[0] for r in conn.execute("SELECT hash FROM events ORDER BY position")]
        ref = MerkleTree(leaf_hash(bytes.fromhex(h)) for h in hashes)
        conn.execute(_TRIGGER_OF_VERSIONS_4_TO_6)
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("DELETE FROM tree_nodes")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO tree_nodes VALUES (%s, %s, %s)",
                            [(lv, i, ref.node(lv, i)) for lv in (4, 8)
                             for i in range(len(hashes) >> lv)])


_TRIGGER_OF_VERSIONS_4_TO_6 = """
CREATE OR REPLACE FUNCTION cladelog_tree_within_log() RETURNS trigger AS $$
BEGIN
    IF NOT (NEW.level BETWEEN 1 AND 60 AND NEW.level % 4 = 0 AND NEW.idx >= 0) THEN
        RAISE EXCEPTION 'cladelog: a tree node is written once, over leaves the log holds';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql"""


def test_a_version_6_log_gets_its_tree_every_6th_level_by_init_only(pg_harness: Any) -> None:
    """Versions 4 to 6 stored every 4th level of the tree; init rebuilds the table with
    every 6th, and proofs, the chain and the records are what they were."""
    from cladelog.core.testing.conformance import check_tree_after_upgrade, fill_for_tree_upgrade

    store = pg_harness.new()
    first = fill_for_tree_upgrade(store)
    store.close()
    _stride_4_tree(pg_harness, store)
    pg_harness.raw_execute(store, "DELETE FROM cladelog_schema WHERE version >= 7; INSERT INTO "
                                  "cladelog_schema VALUES (6, '2026-12-02T00:00:00.000000Z')")
    with _upgraded(pg_harness, store.schema, 6) as s:
        with pg_harness._conn(s) as conn:  # 220 events: 3 nodes of 64 leaves, nothing else
            assert conn.execute("SELECT level, COUNT(*) FROM tree_nodes GROUP BY level"
                                ).fetchall() == [(6, 3)]
        check_tree_after_upgrade(s, first)
        with pytest.raises(Exception, match="tree node is written once"):
            pg_harness.raw_execute(s, "INSERT INTO tree_nodes VALUES (4, 0, sha256(''))")
        assert s.verify().ok


def test_a_version_4_log_is_upgraded_to_7_by_init_only(pg_harness: Any) -> None:
    """A version-4 store (events, tree, records; no function, no peaks in the head row) is
    upgraded in place by init: the function is installed, the first append reads the
    tree's peaks from the stored nodes, and the tree and chain stay those of the events."""
    from cladelog.core.testing.conformance import clock

    store = pg_harness.new()
    store.append(prepared("a", 3), clock=clock)
    first = store.append(prepared("b", 2), idempotency_key="batch-A", clock=clock)
    store.close()
    with pg_harness._conn(store) as conn:
        conn.execute(_V5_ADDITIONS_REMOVED)
    _v4_append(pg_harness, store, "c", 18, 0)  # a version-4 writer: 23 events, tree rows
    _stride_4_tree(pg_harness, store)
    with _upgraded(pg_harness, store.schema, 4) as s:
        assert s.verify().ok
        again = s.append(prepared("b", 2), idempotency_key="batch-A", clock=clock)
        assert [e.hash for e in again] == [e.hash for e in first] and s.head().position == 23
        more = s.append(prepared("c", 20, start=18), expected_versions={"c": 18}, clock=clock)
        assert [e.position for e in more] == list(range(24, 44))
        rebuilt = MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in s.read())
        assert [s.tree_root(n) for n in range(44)] == [rebuilt.root(n) for n in range(44)]
        assert s.verify().ok
    with PostgresStore(pg_harness.url(store.schema), create=True) as s:
        assert s.upgraded_from is None and s.verify().ok


# Version 6 changed only the body of the extends-log trigger: this is version 5's.
_V5_EXTEND_ONLY = f"""
CREATE OR REPLACE FUNCTION cladelog_extend_only() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM cladelog_added n
               WHERE NOT ((n.position = 1 AND n.prev_hash = '{"0" * 64}')
                          OR EXISTS (SELECT 1 FROM events e WHERE e.position = n.position - 1
                                     AND e.hash = n.prev_hash))) THEN
        RAISE EXCEPTION 'cladelog: an event must extend the log by one linked position';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DELETE FROM cladelog_schema WHERE version >= 6;
INSERT INTO cladelog_schema VALUES (5, '2026-12-02T00:00:00.000000Z');
"""


def test_a_version_5_log_is_upgraded_to_7_by_init_only(pg_harness: Any) -> None:
    """Version 5's trigger read the whole events table on every append; init replaces it,
    and the log (chain, tree, records) is what it was."""
    store = pg_harness.new()
    first = store.append(prepared("a", 300), idempotency_key="batch-A")
    trigger, version = _V5_EXTEND_ONLY.split("DELETE FROM cladelog_schema")
    pg_harness.raw_execute(store, trigger)
    assert _scans(store, lambda: store.append(prepared("a", 1, start=300)))["events"] == 1
    store.close()
    pg_harness.raw_execute(store, "DELETE FROM cladelog_schema" + version)
    with _upgraded(pg_harness, store.schema, 5) as s:
        again = s.append(prepared("a", 300), idempotency_key="batch-A")
        assert [e.hash for e in again] == [e.hash for e in first]
        assert _scans(s, lambda: s.append(prepared("a", 1, start=301))).get("events") == 0
        with pytest.raises(Exception, match="extend the log by one linked position"):
            _insert_rows(pg_harness, s, [(303, "3" * 64, "0" * 64)])
        assert s.head().position == 302 and s.verify().ok


# Version 7 changed only the bodies of two triggers (the same checks in fewer statements):
# these are version 6's.
_V6_TRIGGERS = f"""
CREATE OR REPLACE FUNCTION cladelog_extend_only() RETURNS trigger AS $$
DECLARE
    lo BIGINT;
    lo_prev TEXT;
    unlinked BIGINT;
BEGIN
    SELECT MIN(l.position), MIN(l.prev_hash) FILTER (WHERE l.rn = 1),
           COUNT(*) FILTER (WHERE l.rn > 1 AND (l.lag_position <> l.position - 1
                                                OR l.lag_hash <> l.prev_hash))
        INTO lo, lo_prev, unlinked
        FROM (SELECT n.position, n.prev_hash, row_number() OVER w AS rn,
                     lag(n.position) OVER w AS lag_position, lag(n.hash) OVER w AS lag_hash
              FROM cladelog_added n WINDOW w AS (ORDER BY n.position)) l;
    IF lo IS NOT NULL AND (unlinked > 0 OR lo_prev IS DISTINCT FROM
            CASE WHEN lo = 1 THEN '{"0" * 64}'
                 ELSE (SELECT e.hash FROM events e WHERE e.position = lo - 1) END) THEN
        RAISE EXCEPTION 'cladelog: an event must extend the log by one linked position';
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION cladelog_head_follows_log() RETURNS trigger AS $$
BEGIN
    IF NEW.position <> COALESCE((SELECT MAX(position) FROM events), 0)
       OR NEW.hash <> COALESCE((SELECT hash FROM events WHERE position = NEW.position),
                               '{"0" * 64}') THEN
        RAISE EXCEPTION 'cladelog: the head must name the last event of the log';
    END IF;
    IF NEW.tree_for IS NOT NULL AND NEW.tree_for = NEW.hash
       AND length(NEW.tree_peaks) IS DISTINCT FROM 32 * bit_count(NEW.position::bit(64)) THEN
        RAISE EXCEPTION 'cladelog: the head must keep one tree peak per bit of its size';
    END IF;
    IF NEW.position = OLD.position AND NEW.hash = OLD.hash AND OLD.tree_for = OLD.hash
       AND (NEW.tree_peaks IS DISTINCT FROM OLD.tree_peaks
            OR NEW.tree_for IS DISTINCT FROM OLD.tree_for) THEN
        RAISE EXCEPTION 'cladelog: the head must name the last event of the log (peaks)';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DELETE FROM cladelog_schema WHERE version >= 7;
INSERT INTO cladelog_schema VALUES (6, '2026-12-05T00:00:00.000000Z');
"""


def _upgraded(pg_harness: Any, schema: str, old: int) -> Any:
    """The store in ``schema``, a version-``old`` log: refused as it is, with the advice
    to run init; then opened as init does, which upgrades it to SCHEMA_VERSION."""
    url = pg_harness.url(schema)
    with pytest.raises(StoreError, match=f"schema version {old}; run 'cladelog init' to "
                                         f"upgrade it to {SCHEMA_VERSION}"):
        PostgresStore(url)
    store = PostgresStore(url, create=True)
    assert store.upgraded_from == old and store.schema_version() == SCHEMA_VERSION
    return store


def _trigger_sources(pg_harness: Any, store: Any) -> dict[str, str]:
    with pg_harness._conn(store) as conn:
        return dict(conn.execute(
            "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname IN "
            "('cladelog_extend_only', 'cladelog_head_follows_log')", (store.schema,)
        ).fetchall())


def test_a_version_6_log_is_upgraded_to_7_by_init_only(pg_harness: Any) -> None:
    """Version 7 checks what version 6 checked in fewer statements; init replaces the two
    trigger functions in place, the log is what it was, and the new bodies still refuse
    an unlinked event and a head that does not name the last event."""
    store = pg_harness.new()
    first = store.append(prepared("a", 20), idempotency_key="batch-A")
    new = _trigger_sources(pg_harness, store)
    store.close()
    pg_harness.raw_execute(store, _V6_TRIGGERS)
    old = _trigger_sources(pg_harness, store)
    assert old.keys() == new.keys() == {"cladelog_extend_only", "cladelog_head_follows_log"}
    assert all(old[k] != new[k] for k in old)
    with _upgraded(pg_harness, store.schema, 6) as s:
        assert _trigger_sources(pg_harness, s) == new
        again = s.append(prepared("a", 20), idempotency_key="batch-A")
        assert [e.hash for e in again] == [e.hash for e in first]
        more = s.append(prepared("a", 1, start=20), expected_versions={"a": 20})
        assert more[0].position == 21 and more[0].prev_hash == first[-1].hash
        with pytest.raises(Exception, match="extend the log by one linked position"):
            _insert_rows(pg_harness, s, [(22, "3" * 64, "0" * 64)])
        with pytest.raises(Exception, match="must name the last event of the log"):
            pg_harness.raw_execute(s, f"UPDATE cladelog_head SET position = 20, "
                                      f"hash = '{first[-1].hash}'")
        assert s.head().position == 21 and s.verify().ok


# -- upgrading a version-2 log ----------------------------------------------------------------
# Version 3 added exactly these to version 2 (the protection of the idempotency records),
# version 4 the Merkle tree: removing them from a store leaves what version 2 created
# (and its per-table refusals, until version 9 one function with the table's words, are
# triggers of version 2's cladelog_refuse_rewrite now).
_V3_ADDITIONS_REMOVED = """
DROP TABLE tree_nodes;
DROP FUNCTION cladelog_tree_within_log();
DELETE FROM cladelog_schema WHERE version = 4;
DROP TRIGGER batches_no_rewrite ON batches;
DROP TRIGGER batches_no_truncate ON batches;
DROP TRIGGER batches_with_their_batch ON batches;
DROP FUNCTION cladelog_batch_with_its_events();
DELETE FROM cladelog_schema WHERE version = 3;
INSERT INTO cladelog_schema VALUES (2, '2026-12-01T00:00:00.000000Z');
"""


def test_a_version_2_log_is_upgraded_by_init_only(pg_harness: Any) -> None:
    from cladelog.core.testing.conformance import clock

    store = pg_harness.new()
    store.append(prepared("a", 3), clock=clock)
    first = store.append(prepared("b", 2), idempotency_key="batch-A", clock=clock)
    store.close()
    with pg_harness._conn(store) as conn:
        conn.execute(_V5_ADDITIONS_REMOVED + _V3_ADDITIONS_REMOVED)
        conn.execute("DELETE FROM batches WHERE key LIKE 'auto:%'")  # shows the upgrade
    with _upgraded(pg_harness, store.schema, 2) as s:
        assert s.verify().ok
        # version 4: the events held got their Merkle tree during the upgrade
        rebuilt = MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in s.read())
        assert [s.tree_root(n) for n in range(6)] == [rebuilt.root(n) for n in range(6)]
        again = s.append(prepared("b", 2), idempotency_key="batch-A", clock=clock)
        assert [e.hash for e in again] == [e.hash for e in first] and s.head().position == 5
        for sql in ("DELETE FROM batches", "UPDATE batches SET digest = 'x'",
                    "TRUNCATE batches"):
            with pytest.raises(Exception, match="idempotency records are append-only"):
                pg_harness.raw_execute(s, sql)
        assert [r.key for r in s.batch_records()] == ["batch-A"]
    with PostgresStore(pg_harness.url(store.schema), create=True) as s:
        assert s.upgraded_from is None and s.verify().ok


# -- the lost acknowledgement, provoked on the wire -------------------------------------------
class CommitCutter:
    """A TCP proxy in front of the server that, once armed, lets the next COMMIT through,
    waits for the server to answer it (so the commit has happened), swallows the answer and
    closes the client's side: the client never hears that its transaction committed.

    It reads the frontend/backend protocol's framing (a type byte and a length) only; the
    URL through it disables TLS and GSSAPI encryption so the bytes are readable.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        import socket

        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.armed = False
        self.swallowed: list[bytes] = []  # the server's answers the client never got
        self.cuts = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, schema: str) -> str:
        return (f"postgresql://postgres@127.0.0.1:{self.port}/test?schema={schema}"
                "&sslmode=disable&gssencmode=disable")

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            state = {"cut_at_ready": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state),
                             daemon=True).start()

    @staticmethod
    def _read(sock: Any, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def _up(self, client: Any, server: Any, state: dict[str, bool]) -> None:
        """Client to server: the startup message, then typed messages."""
        try:
            head = self._read(client, 4)
            server.sendall(head + self._read(client, int.from_bytes(head, "big") - 4))
            while True:
                kind = self._read(client, 1)
                size = self._read(client, 4)
                body = self._read(client, int.from_bytes(size, "big") - 4)
                with self._lock:
                    # a COMMIT, or the append procedure called in autocommit mode (it
                    # commits, and waits for the flush, before the server's ReadyForQuery)
                    if self.armed and kind in (b"Q", b"P") and (
                            body.startswith(b"COMMIT") or b"cladelog_append_durably(" in body):
                        self.armed = False
                        state["cut_at_ready"] = True
                server.sendall(kind + size + body)
        except OSError:
            pass

    def _down(self, server: Any, client: Any, state: dict[str, bool]) -> None:
        """Server to client: typed messages; after an armed COMMIT, nothing more."""
        try:
            while True:
                kind = self._read(server, 1)
                size = self._read(server, 4)
                body = self._read(server, int.from_bytes(size, "big") - 4)
                if state["cut_at_ready"]:
                    self.swallowed.append(kind + body)
                    if kind == b"Z":  # the server is done with the COMMIT: cut
                        self.cuts += 1
                        for sock in (client, server):
                            with contextlib.suppress(OSError):
                                sock.shutdown(2)
                            sock.close()
                        return
                    continue
                client.sendall(kind + size + body)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("key", ["batch-lost", None])
def test_a_commit_whose_acknowledgement_is_lost_is_appended_once(pg_harness: Any,
                                                                 key: str | None,
                                                                 chunked: bool) -> None:
    """The commit lands, the client never hears back: the store's retry (under the caller's
    key, or one it made up) finds the batch and appends nothing. A batch appended in chunks
    cannot be sent again (its input was read once): the store asks whether its key landed."""
    from cladelog.core.testing.conformance import clock

    direct = pg_harness.new()
    direct.append(prepared("a", 2), clock=clock)
    host, port = "127.0.0.1", int(pg_harness.base_url.rsplit(":", 1)[1].split("/")[0])
    proxy = CommitCutter((host, port))
    try:
        through = PostgresStore(proxy.url(direct.schema))
        pg_harness.stores.append(through)
        proxy.armed = True
        if chunked:
            events = prepared("b", 3)
            result = through.append_chunks(iter([(events[:2], {}), (events[2:], {})]),
                                           idempotency_key=key, clock=clock)
            assert (result.first, result.last, result.repeated) == (3, 5, False)
            recorded = list(direct.read(3))
        else:
            recorded = through.append(prepared("b", 3), idempotency_key=key, clock=clock)
    finally:
        proxy.close()
    assert proxy.cuts == 1  # one connection was cut right after its COMMIT was answered
    # ... and it committed: a COMMIT, or a statement answered with the session idle again
    # (outside a transaction: its own has committed)
    assert any(m.startswith(b"CCOMMIT\0") for m in proxy.swallowed) or (
        any(m.startswith((b"CSELECT 1\0", b"CCALL\0")) for m in proxy.swallowed)
        and proxy.swallowed[-1] == b"ZI")
    assert [e.position for e in recorded] == [3, 4, 5]
    assert direct.head().position == 5
    assert [e.stream for e in direct.read()] == ["a", "a", "b", "b", "b"]
    assert [e.hash for e in direct.read(3)] == [e.hash for e in recorded]
    assert direct.verify().ok
    records = [r for r in direct.batch_records() if r.first == 3]
    assert len(records) == 1 and (key is None or records[0].key == key)


# -- the driver's own log lines are structured ------------------------------------------------
_KILLING_CLI = textwrap.dedent("""
    # the CLI, with the store's test hook killing its own backend just before COMMIT on
    # the first KILLS attempts, as an operator's pg_terminate_backend would
    import os, sys, time
    import psycopg
    from cladelog.core.store import postgres

    kills, base, done = int(os.environ["KILLS"]), os.environ["BASE_URL"], []
    _init = postgres.PostgresStore.__init__

    def init(self, *a, **kw):
        _init(self, *a, **kw)
        def kill(conn):
            if len(done) < kills:
                done.append(conn.info.backend_pid)
                with psycopg.connect(base, autocommit=True) as other:
                    other.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
                time.sleep(0.3)
        self._before_commit = kill

    postgres.PostgresStore.__init__ = init
    from cladelog.core.cli import main
    main(sys.argv[1:], prog_name="cladelog")
""")


@pytest.mark.parametrize(("kills", "code"), [(1, 0), (2, 2)])
def test_psycopg_log_lines_reach_stderr_structured(pg_harness: Any, tmp_path: Path,
                                                   kills: int, code: int) -> None:
    """psycopg logs through the standard library ("discarding closed connection: ..."): those
    lines are routed through structlog, so stderr holds JSON lines (stderr is no terminal)
    and at most one ``error:`` line."""
    cfg = _deployment(tmp_path, pg_harness.url())
    note = tmp_path / "n.json"
    note.write_text(json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": "x", "tags": []}}))
    env = {**os.environ, "KILLS": str(kills), "BASE_URL": pg_harness.base_url}
    env.pop("CLADELOG_LOG_JSON", None)
    done = subprocess.run([sys.executable, "-c", _KILLING_CLI, "--config", str(cfg), "append",
                           str(note)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == code, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    logs = [json.loads(line) for line in done.stderr.splitlines()
            if not line.startswith("error:")]  # an unstructured line fails here
    assert len(errors) == (1 if code else 0)
    if code:
        assert "append failed, connection lost" in errors[0]
    from_psycopg = [entry for entry in logs if entry.get("logger", "").startswith("psycopg")]
    assert from_psycopg, done.stderr  # the driver did log, and it came out structured
    assert all(entry["level"] in ("warning", "error") for entry in from_psycopg)
    assert any("discarding closed connection" in entry["event"] for entry in from_psycopg)


def test_reads_reuse_the_connection_the_last_read_left(pg_harness: Any) -> None:
    """A read streams on a connection of its own. The one the last read left in good order
    is kept and reused (opening one costs ~3 ms), once the server shows it still has it; a
    read that fails closes its connection, reads at the same time each have their own, and
    close() closes the one kept."""
    from cladelog.core.store.postgres import _function_sql

    store = pg_harness.new()
    store.append(prepared("a", 5))
    real = store._psycopg
    opened: list[Any] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def connect(self, *args: Any, **kwargs: Any) -> Any:
            conn = real.connect(*args, **kwargs)
            opened.append(conn)
            return conn

    store._psycopg = Counting()
    try:
        for _ in range(3):
            assert [e.position for e in store.read()] == [1, 2, 3, 4, 5]
        assert len(opened) == 1
        # the server drops the kept connection: the next read finds out before using it
        with real.connect(pg_harness.base_url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s, 10000)",
                          (opened[0].info.backend_pid,))
        assert len(list(store.read())) == 5
        assert len(opened) == 2 and opened[0].closed
        # a read inside another's iteration gets a connection of its own
        inner = [len(list(store.read())) for _ in store.read(1, 2)]
        assert inner == [5, 5] and len(opened) == 3
        # a read that fails (the barrier refuses) closes its connection instead of keeping it
        kept = [c for c in opened if not c.closed]
        assert len(kept) == 1
        pg_harness.raw_execute(store, """
            CREATE OR REPLACE FUNCTION cladelog_durable() RETURNS BOOLEAN AS $$
            BEGIN RAISE EXCEPTION 'the barrier was called'; END $$ LANGUAGE plpgsql""")
        with pytest.raises(StoreError, match="the barrier was called"):
            list(store.read())
        assert kept[0].closed
        pg_harness.raw_execute(store, "CREATE OR REPLACE FUNCTION cladelog_durable()"
                               + _function_sql().split("FUNCTION cladelog_durable()")[1])
        assert len(list(store.read())) == 5
        assert len(opened) == 4
    finally:
        store._psycopg = real
        store.close()
    assert all(c.closed for c in opened)


def test_every_read_waits_for_the_flush_of_what_it_shows(pg_harness: Any) -> None:
    """Schema 8: appends release the head lock before their WAL flush, so each way of
    reading the log calls the barrier cladelog_durable() after its snapshot (a crash
    cannot take back what a read returned: test_postgres_restart). Here the barrier
    refuses, and every read must fail with it."""
    store = pg_harness.new()
    store.append(prepared("a", 70))
    pg_harness.raw_execute(store, """
        CREATE OR REPLACE FUNCTION cladelog_durable() RETURNS BOOLEAN AS $$
        BEGIN RAISE EXCEPTION 'the barrier was called'; END $$ LANGUAGE plpgsql""")
    reads = {
        "head": store.head,
        "read": lambda: list(store.read()),
        "read from a stream": lambda: list(store.read(stream="a")),
        "hash_at": lambda: store.hash_at(3),
        "hash_at beyond the head": lambda: store.hash_at(99),
        "stream_version": lambda: store.stream_version("a"),
        "batch_records": store.batch_records,
        "tree_ranges": lambda: store.tree_ranges([(0, 0, 4)]),
        "inclusion_proof": lambda: store.inclusion_proof(5, 70),
        "tree_root": lambda: store.tree_root(64),
    }
    for name, read in reads.items():
        with pytest.raises(StoreError, match="the barrier was called"):
            read()
            pytest.fail(f"{name} did not call the barrier")
    # an append calls it too, after its commit, when it waited for the head lock (held
    # here by another transaction for a moment); its own reads, under the lock, do not:
    # chaining on an event not yet flushed is safe, a crash keeps a prefix of the WAL
    got: list[BaseException] = []

    def append() -> None:
        try:
            store.append(prepared("a", 1, start=70))
        except BaseException as exc:
            got.append(exc)

    with pg_harness._conn(store) as holder, holder.transaction():
        holder.execute("SELECT 1 FROM cladelog_head WHERE id = 1 FOR UPDATE")
        writer = threading.Thread(target=append)
        writer.start()
        time.sleep(0.3)
    writer.join(30)
    assert len(got) == 1 and isinstance(got[0], StoreError), got
    assert "the barrier was called" in str(got[0])
    from cladelog.core.store import postgres

    with pg_harness._conn(store) as conn:
        conn.execute(postgres._function_sql())
    assert store.head().position == 71 and store.append(prepared("a", 1, start=71))


def _appends_on(s: Any, first: list[Any]) -> None:
    """An upgraded store finds the five events appended before the upgrade under their key
    ('batch-A', the same hashes) and appends the sixth after them."""
    again = s.append(prepared("a", 5), idempotency_key="batch-A")
    assert [e.hash for e in again] == [e.hash for e in first]
    more = s.append(prepared("a", 1, start=5), expected_versions={"a": 5})
    assert more[0].position == 6 and more[0].prev_hash == first[-1].hash
    assert s.head().position == 6 and s.verify().ok


def test_a_version_7_log_is_upgraded_to_8_by_init_only(pg_harness: Any) -> None:
    """Version 8 adds the append procedure that releases the head lock before the flush
    and the readers' barrier; a version-7 store lacks both and is refused until init adds
    them, after which the same log appends and reads on."""
    store = pg_harness.new()
    first = store.append(prepared("a", 5), idempotency_key="batch-A")
    store.close()
    pg_harness.raw_execute(store, """
        DROP PROCEDURE cladelog_append_durably; DROP FUNCTION cladelog_durable();
        DELETE FROM cladelog_schema WHERE version >= 8;
        INSERT INTO cladelog_schema VALUES (7, '2026-12-06T00:00:00.000000Z')
            ON CONFLICT DO NOTHING""")
    with _upgraded(pg_harness, store.schema, 7) as s:
        _appends_on(s, first)


def test_a_version_8_log_is_upgraded_to_9_by_init_only(pg_harness: Any) -> None:
    """Version 9's procedure reports how each append committed (one more result, so a
    signature of its own), and one function refuses rewrites of every table (version 8 had
    a copy per table); a version-8 store, with version 8's procedure and copies, is refused
    until init replaces them, and afterwards the procedure has the one signature the store
    calls, the copies are gone and each table refuses in its own words."""
    store = pg_harness.new()
    first = store.append(prepared("a", 5), idempotency_key="batch-A")
    store.close()
    results = ", ".join(f"INOUT r{k} {t}" for k, t in enumerate(
        ["TEXT", "BIGINT", "TEXT", "BIGINT", "BIGINT", "TEXT[]", "BIGINT[]", "TEXT", "BIGINT",
         "BIGINT"]))
    pg_harness.raw_execute(store, f"""
        DROP PROCEDURE cladelog_append_durably;
        CREATE PROCEDURE cladelog_append_durably(
            TEXT, TEXT, TEXT, BYTEA, TEXT[], BYTEA[], TEXT[], BYTEA[], INTEGER[], BYTEA[],
            BYTEA[], TEXT[], BIGINT[], BYTEA, TEXT, {results}) AS $$
        BEGIN RAISE EXCEPTION 'version 8'; END $$ LANGUAGE plpgsql;
        CREATE FUNCTION cladelog_refuse_batch_rewrite() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION 'version 8 batches'; END $$ LANGUAGE plpgsql;
        CREATE FUNCTION cladelog_refuse_tree_rewrite() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION 'version 8 tree'; END $$ LANGUAGE plpgsql;
        DROP TRIGGER batches_no_truncate ON batches;
        CREATE TRIGGER batches_no_truncate BEFORE TRUNCATE ON batches
            FOR EACH STATEMENT EXECUTE FUNCTION cladelog_refuse_batch_rewrite();
        DROP TRIGGER tree_no_truncate ON tree_nodes;
        CREATE TRIGGER tree_no_truncate BEFORE TRUNCATE ON tree_nodes
            FOR EACH STATEMENT EXECUTE FUNCTION cladelog_refuse_tree_rewrite();
        DELETE FROM cladelog_schema WHERE version >= 9;
        INSERT INTO cladelog_schema VALUES (8, '2026-12-07T00:00:00.000000Z')
            ON CONFLICT DO NOTHING""")
    with _upgraded(pg_harness, store.schema, 8) as s:
        _appends_on(s, first)
        assert s.flushes["alone"] + s.flushes["shared"] == 1
    with pg_harness._conn(store) as conn:
        assert conn.execute(
            "SELECT pronargs FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = %s AND p.proname = 'cladelog_append_durably'",
            (store.schema,)).fetchall() == [(26,)]
        assert conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = %s AND p.proname LIKE 'cladelog_refuse%%'",
            (store.schema,)).fetchall() == [("cladelog_refuse_rewrite",)]
        for sql, refused in (
                ("DELETE FROM events", "the event log is append-only (DELETE refused)"),
                ("TRUNCATE batches", "idempotency records are append-only (TRUNCATE refused)"),
                ("TRUNCATE tree_nodes", "the Merkle tree is append-only (TRUNCATE refused)")):
            with pytest.raises(Exception, match=re.escape(f"cladelog: {refused}")):
                conn.execute(sql)


def test_an_append_the_server_refuses_is_one_store_error(pg_harness: Any) -> None:
    """A guard that refuses inside the append (here the link check, made to refuse
    everything) is one StoreError line, not a driver exception, on the function's path,
    the COPY path and the chunked path; nothing is appended."""
    store = pg_harness.new()
    pg_harness.raw_execute(store, """
        CREATE OR REPLACE FUNCTION cladelog_extend_only() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION 'refused here'; END $$ LANGUAGE plpgsql""")
    for events in (prepared("a", 1), prepared("a", 300)):
        with pytest.raises(StoreError, match=r"^store: append failed \(.*refused here.*\); "
                                             r"retry with idempotency key 'auto:"):
            store.append(events)
    with pytest.raises(StoreError, match=r"^store: append failed \(.*refused here.*\); "
                                         r"nothing was appended$"):
        store.append_chunks(iter([(prepared("a", 3), {})]))
    assert store.head().position == 0
