"""The SQLite store runs the shared store conformance suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.errors import StoreError
from cladelog.core.store import open_store
from cladelog.core.store.sqlite import SCHEMA_VERSION, SQLiteStore
from cladelog.core.testing.conformance import (
    StoreConformance,
    check_tree_after_upgrade,
    clock,
    fill_for_tree_upgrade,
    prepared,
)
from cladelog.core.transparency.merkle import MerkleTree, leaf_hash


class TestSQLiteConformance(StoreConformance):
    @pytest.fixture
    def store_harness(self, sqlite_harness):  # type: ignore[no-untyped-def]
        return sqlite_harness


def test_missing_file_is_a_clear_error(tmp_path):  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="does not exist"):
        SQLiteStore(tmp_path / "nope.sqlite3")
    assert not (tmp_path / "nope.sqlite3").exists()


def test_a_file_that_is_not_a_log_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        SQLiteStore(junk)


def test_schema_creation_is_safe_to_repeat(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "log.sqlite3"
    with SQLiteStore(path, create=True) as s:
        s.append([], clock=None)
        assert s.schema_version() == SCHEMA_VERSION
    with SQLiteStore(path, create=True) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.head().position == 0


def test_open_store_urls(tmp_path):  # type: ignore[no-untyped-def]
    p = tmp_path / "a.sqlite3"
    with open_store(f"sqlite:///{p}", create=True) as s:
        assert isinstance(s, SQLiteStore)
    with pytest.raises(StoreError, match="unsupported URL"):
        open_store("mysql://x/y")


# -- upgrading a version-1 log ----------------------------------------------------------------
# Version 1 stored each event's whole canonical body beside copies of its members.
_V1_DDL = """
CREATE TABLE cladelog_schema (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO cladelog_schema VALUES (1, '2026-11-29T00:00:00.000000Z');
CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL,
    stream_version INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL,
    recorded_at TEXT NOT NULL, body BLOB NOT NULL, hash TEXT NOT NULL,
    prev_hash TEXT NOT NULL, UNIQUE (stream, stream_version));
CREATE INDEX events_by_type ON events (type, position);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'append-only'); END;
CREATE TABLE batches (key TEXT PRIMARY KEY, digest TEXT NOT NULL,
    first_position INTEGER NOT NULL, last_position INTEGER NOT NULL);
CREATE TABLE checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL,
    position INTEGER NOT NULL, head_hash TEXT NOT NULL, state BLOB NOT NULL,
    digest TEXT NOT NULL);
"""


def _v1_store(path, events):  # type: ignore[no-untyped-def]
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(_V1_DDL)
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(e.position, e.stream, e.stream_version, e.type, e.schema_version,
                     e.recorded_at, e.body, e.hash, e.prev_hash) for e in events])
    db.close()


def _some_events(tmp_path):  # type: ignore[no-untyped-def]
    from cladelog.core.testing.conformance import clock, prepared

    with SQLiteStore(tmp_path / "source.sqlite3", create=True) as s:
        s.append(prepared("a", 3) + prepared("b", 2, type="test.other"), clock=clock)
        s.append(prepared("a", 2, start=3), clock=clock)
        return list(s.read())


def test_a_version_1_log_is_upgraded_by_init_only(tmp_path):  # type: ignore[no-untyped-def]
    from cladelog.core.testing.conformance import clock, prepared

    events = _some_events(tmp_path)
    path = tmp_path / "v1.sqlite3"
    _v1_store(path, events)
    with pytest.raises(StoreError, match="schema version 1; run 'cladelog init' to upgrade"):
        SQLiteStore(path)
    with SQLiteStore(path, create=True) as s:  # what `cladelog init` does
        assert s.schema_version() == SCHEMA_VERSION
        assert s.verify().ok
        assert [(e.hash, e.body, e.data, e.meta) for e in s.read()] == \
               [(e.hash, e.body, e.data, e.meta) for e in events]
        s.append(prepared("a", 1, start=9), clock=clock)
        assert s.verify().ok and s.head().position == len(events) + 1
    with SQLiteStore(path) as s:  # upgraded for good: and the triggers are back
        import sqlite3

        db = sqlite3.connect(path, isolation_level=None)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE events SET stream = 'x'")
        db.close()
        assert s.verify().ok


def test_an_upgrade_that_cannot_reproduce_a_body_changes_nothing(tmp_path):  # type: ignore[no-untyped-def]
    import sqlite3

    events = _some_events(tmp_path)
    path = tmp_path / "v1.sqlite3"
    # a body that hashes correctly but is not laid out canonically (a space after a colon)
    e = events[0]
    odd = e.body.replace(b'"data":', b'"data": ', 1)
    from cladelog.core.events import chain_hash

    events[0] = e._replace(body=odd, hash=chain_hash(e.prev_hash, odd))
    _v1_store(path, events[:1])
    with pytest.raises(StoreError, match=r"cannot upgrade .* nothing was changed"):
        SQLiteStore(path, create=True)
    db = sqlite3.connect(path)
    assert db.execute("SELECT MAX(version) FROM cladelog_schema").fetchone()[0] == 1
    assert db.execute("SELECT body FROM events").fetchone()[0] == odd
    db.close()


@pytest.mark.parametrize("column,value", [
    ("data", "text, not bytes"), ("meta", 7), ("stream", 5), ("recorded_at", 1.5),
    ("schema_version", "one"), ("stream_version", 2.5), ("hash", None),
])
def test_verify_and_replay_name_a_column_of_the_wrong_type(sqlite_harness, column, value):  # type: ignore[no-untyped-def]
    """SQLite stores any type in any column: a hand-edited row of the wrong type must be
    reported at its position, never crash the walk."""
    from cladelog.core.errors import ChainError
    from cladelog.core.events import GENESIS_HASH
    from cladelog.core.store.base import Head
    from cladelog.core.testing.conformance import clock, prepared

    store = sqlite_harness.new()
    store.append(prepared("a", 5), clock=clock)
    import sqlite3

    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("DROP TRIGGER events_no_update")
    if column == "hash":  # NOT NULL: the database itself refuses this one
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("UPDATE events SET hash = NULL WHERE position = 3")
        return
    db.execute(f"UPDATE events SET {column} = ? WHERE position = 3", (value,))
    db.close()
    report = store.verify()
    assert not report.ok and report.position == 3, report
    with pytest.raises(ChainError) as caught:
        list(store.read_verified(Head(0, GENESIS_HASH)))
    assert caught.value.position == 3
    if column in ("data", "meta", "schema_version"):  # TEXT columns store 5 as "5"
        with pytest.raises(ChainError) as caught:  # even an unverified read names it
            list(store.read())
        assert caught.value.position == 3


def test_init_upgrades_a_version_1_store_and_says_so(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from cladelog.core.cli import main
    from click.testing import CliRunner

    events = _some_events(tmp_path)
    _v1_store(tmp_path / "cladelog.sqlite3", events)
    (tmp_path / "cladelog.toml").write_text('store = "cladelog.sqlite3"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    before = runner.invoke(main, ["status"])
    assert before.exit_code == 2
    assert "schema version 1; run 'cladelog init' to upgrade it" in before.output
    done = runner.invoke(main, ["init"])
    assert done.exit_code == 0, done.output
    assert "upgraded the store's schema from version 1" in done.output
    # the chain verifies to the head; the events, written straight into a store rather
    # than by a deployment, name no producing plugin: verify names that rule, no other
    report = json.loads(runner.invoke(main, ["verify", "--json"]).stdout)
    assert report["verified_to"] == report["head"] == len(events)
    assert {v["rule"] for v in report["violations"]} == {"meta"}
    again = runner.invoke(main, ["init"])
    assert "already initialised" in again.output


def test_replay_reads_a_log_of_many_streams(tmp_path):  # type: ignore[no-untyped-def]
    """More distinct (stream, type) pairs than replay caches body layouts for."""
    from cladelog.core.events import GENESIS_HASH
    from cladelog.core.store.base import Head, PreparedEvent
    from cladelog.core.testing.conformance import clock, expected_hash

    with SQLiteStore(tmp_path / "many.sqlite3", create=True) as s:
        events = [PreparedEvent(f"s{i}", "test.happened", 1, {"i": i}, {"n": i % 3})
                  for i in range(5000)]
        s.append(events, clock=clock)
        got = list(s.read_verified(Head(0, GENESIS_HASH)))
        assert [e.stream for e in got] == [f"s{i}" for i in range(5000)]
        prev = GENESIS_HASH
        for i, e in enumerate(got[:50] + got[-50:]):
            j = i if i < 50 else 5000 - 100 + i
            prev = got[j - 1].hash if j else GENESIS_HASH
            assert e.hash == expected_hash(prev, j + 1, f"s{j}", 1, "test.happened", {"i": j},
                                           {"n": j % 3})


@pytest.mark.parametrize("field,value,message", [
    ("stream", ["a"], "stream: must be a string"), ("stream", 3, "stream: must be a string"),
    ("type", ("t",), "type: must be a string"),
    ("schema_version", True, "schema_version: must be an integer"),
    ("schema_version", "1", "schema_version: must be an integer"),
])
def test_store_append_refuses_malformed_prepared_events(tmp_path, field, value, message):  # type: ignore[no-untyped-def]
    """The store's own API (below the deployment's validation) names the field too."""
    from cladelog.core.errors import InputError
    from cladelog.core.store.base import PreparedEvent
    from cladelog.core.testing.conformance import clock

    good = PreparedEvent("a", "test.happened", 1, {"i": 0}, {})
    with SQLiteStore(tmp_path / "s.sqlite3", create=True) as s:
        with pytest.raises(InputError, match=message):
            s.append([good, good._replace(**{field: value})], clock=clock)
        assert s.head().position == 0


@pytest.mark.parametrize("sql", [
    # replaces event 2 in place (the row's own position)
    "INSERT OR REPLACE INTO events SELECT position, stream, stream_version, type, "
    "schema_version, recorded_at, CAST('{\"forged\":1}' AS BLOB), meta, hash, prev_hash "
    "FROM events WHERE position = 2",
    # a new, correctly linked head row whose (stream, stream_version) collides with event 1:
    # REPLACE would delete event 1 to make room
    "REPLACE INTO events SELECT 4, stream, stream_version, type, schema_version, recorded_at, "
    "data, meta, '" + "a" * 64 + "', (SELECT hash FROM events WHERE position = 3) "
    "FROM events WHERE position = 1",
])
def test_replace_cannot_rewrite_history(sqlite_harness, sql):  # type: ignore[no-untyped-def]
    """SQLite's REPLACE deletes colliding rows without firing DELETE triggers."""
    from cladelog.core.testing.conformance import clock, prepared

    store = sqlite_harness.new()
    store.append(prepared("a", 3), clock=clock)
    before = [(e.position, e.hash, e.data) for e in store.read()]
    with pytest.raises(Exception, match="append-only"):
        sqlite_harness.raw_execute(store, sql)
    assert [(e.position, e.hash, e.data) for e in store.read()] == before
    assert store.verify().ok


def test_a_store_made_before_the_replace_trigger_gets_it_when_opened(sqlite_harness):  # type: ignore[no-untyped-def]
    from cladelog.core.testing.conformance import clock, prepared

    store = sqlite_harness.new()
    store.append(prepared("a", 2), clock=clock)
    sqlite_harness.raw_execute(store, "DROP TRIGGER events_no_replace")
    again = sqlite_harness.reopen(store)
    with pytest.raises(Exception, match="append-only"):
        sqlite_harness.raw_execute(again, "INSERT OR REPLACE INTO events SELECT * FROM events "
                                          "WHERE position = 1")
    assert again.verify().ok


@pytest.mark.parametrize("value", [7, 2.5, None])
def test_a_damaged_data_column_at_the_end_of_a_page_is_named(sqlite_harness, value):  # type: ignore[no-untyped-def]
    """Reads size their pages by the data of a page's last row (16 rows first): a damaged
    one there is reported at its position, like anywhere else."""
    import sqlite3

    from cladelog.core.errors import ChainError
    from cladelog.core.events import GENESIS_HASH
    from cladelog.core.store.base import Head
    from cladelog.core.testing.conformance import clock, prepared

    store = sqlite_harness.new()
    store.append(prepared("a", 20), clock=clock)
    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("DROP TRIGGER events_no_update")
    if value is None:  # NOT NULL: the database itself refuses this one
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("UPDATE events SET data = NULL WHERE position = 16")
        return
    db.execute("UPDATE events SET data = ? WHERE position = 16", (value,))
    db.close()
    with pytest.raises(ChainError) as caught:
        list(store.read_verified(Head(0, GENESIS_HASH)))
    assert caught.value.position == 16
    report = store.verify()
    assert not report.ok and report.position == 16


# -- upgrading a version-2 log ----------------------------------------------------------------
# tests/data/store-schema-v2.sqlite3 was written by cladelog with store schema version 2 (the
# release before the idempotency records were protected): 7 events in 4 batches, two of
# them appended under the keys batch-A (positions 4..5) and batch-B (7), and a checkpoint
# of a projection "test.count" at the head.
V2_STORE = Path(__file__).parent / "data" / "store-schema-v2.sqlite3"
V2_HEAD = "f21dc0a42ad9a3204401ae91d08f2768f218e71c30ae80aa5f5665acbc6b6426"


def _v2_copy(tmp_path: Path, name: str = "v2.sqlite3") -> Path:
    path = tmp_path / name
    shutil.copyfile(V2_STORE, path)
    return path


def test_a_version_2_log_is_upgraded_to_5_by_init_only(tmp_path: Path) -> None:
    import sqlite3

    from cladelog.core.store.base import PreparedEvent

    path = _v2_copy(tmp_path)
    with pytest.raises(StoreError, match="schema version 2; run 'cladelog init' to upgrade "
                                         "it to 5"):
        SQLiteStore(path)
    with SQLiteStore(path, create=True) as s:  # what `cladelog init` does
        assert s.upgraded_from == 2 and s.schema_version() == SCHEMA_VERSION
        assert s.head().position == 7 and s.head().hash == V2_HEAD
        # version 4: the events held got their Merkle tree during the upgrade
        rebuilt = MerkleTree(leaf_hash(bytes.fromhex(e.hash)) for e in s.read())
        assert [s.tree_root(n) for n in range(8)] == [rebuilt.root(n) for n in range(8)]
        # the records version 2 wrote check out against their events (their digests were
        # computed by that release)
        assert [(r.key, r.first, r.last) for r in s.batch_records()] == \
               [("batch-A", 4, 5), ("batch-B", 7, 7)]
        assert s.verify().ok
        # a retry of batch-A finds its record and appends nothing
        retry = [PreparedEvent("orders", "test.happened", 1, {"n": n}, {"actor": "v2-writer"})
                 for n in (3, 4)]
        again = s.append(retry, idempotency_key="batch-A")
        assert [e.position for e in again] == [4, 5] and s.head().position == 7
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for sql in ("DELETE FROM batches", "UPDATE batches SET digest = 'x'",
                    "INSERT OR REPLACE INTO batches VALUES ('batch-A', 'x', 7, 7)"):
            with pytest.raises(sqlite3.DatabaseError, match="idempotency record"):
                db.execute(sql)
        assert db.execute("SELECT version FROM cladelog_schema ORDER BY version").fetchall() \
            == [(2,), (5,)]
    finally:
        db.close()
    with SQLiteStore(path, create=True) as s:  # a second init changes nothing
        assert s.upgraded_from is None and s.verify().ok


def test_init_upgrades_a_version_2_store_and_says_so(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from cladelog.core.cli import main
    from click.testing import CliRunner

    _v2_copy(tmp_path, "cladelog.sqlite3")
    (tmp_path / "cladelog.toml").write_text('store = "cladelog.sqlite3"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    before = runner.invoke(main, ["verify"])
    assert before.exit_code == 2 and "schema version 2; run 'cladelog init'" in before.output
    done = runner.invoke(main, ["init"])
    assert done.exit_code == 0, done.output
    assert "upgraded the store's schema from version 2" in done.output
    assert "head 7" in done.output
    # the chain and the idempotency records verify (the fixture's events were written at the
    # store level, without the meta an append records, which `cladelog verify`'s event
    # rules report: that is another check than the upgrade's)
    with SQLiteStore(tmp_path / "cladelog.sqlite3") as s:
        assert s.upgraded_from is None and s.verify().ok


def test_insert_or_replace_cannot_rewrite_an_idempotency_record(sqlite_harness: Any) -> None:
    import sqlite3

    store = sqlite_harness.new()
    store.append(prepared("a", 2), idempotency_key="k", clock=clock)
    with pytest.raises(sqlite3.DatabaseError, match="idempotency record is written once"):
        sqlite_harness.raw_execute(store, "INSERT OR REPLACE INTO batches VALUES "
                                          "('k', 'x', 2, 2)")
    assert store.verify().ok
    assert store.append(prepared("a", 2), idempotency_key="k", clock=clock)[0].position == 1


# -- upgrading a version-4 log (its tree stored every 4th level) ----------------------------
def _as_version_4(path: Path) -> None:
    """Make a current store what version 4 wrote: tree_nodes holding every 4th level (the
    complete subtrees computed here from the events' chain hashes with hashlib alone) under
    version 4's trigger, and the schema table saying 4."""
    import hashlib
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    try:
        leaves = [hashlib.sha256(b"\x00" + bytes.fromhex(r[0])).digest()
                  for r in db.execute("SELECT hash FROM events ORDER BY position")]
        rows, level = [], [*leaves]
        for lv in range(1, 12):
            level = [hashlib.sha256(b"\x01" + level[k] + level[k + 1]).digest()
                     for k in range(0, len(level) - 1, 2)]
            if lv % 4 == 0:
                rows += [(lv, i, h) for i, h in enumerate(level)]
        db.execute("DROP TABLE tree_nodes")
        db.execute("CREATE TABLE tree_nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, "
                   "hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID")
        db.execute("CREATE TRIGGER tree_within_log BEFORE INSERT ON tree_nodes "
                   "WHEN NEW.level % 4 != 0 BEGIN SELECT RAISE(ABORT, 'cladelog: a tree "
                   "node is written once, over leaves the log holds'); END")
        db.executemany("INSERT INTO tree_nodes VALUES (?, ?, ?)", rows)
        db.execute("DELETE FROM cladelog_schema WHERE version > 4")
        db.execute("INSERT OR IGNORE INTO cladelog_schema VALUES (4, '2026-12-01T00:00:00Z')")
    finally:
        db.close()


def test_a_version_4_log_gets_its_tree_every_6th_level_by_init_only(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "v4.sqlite3"
    with SQLiteStore(path, create=True) as s:
        first = fill_for_tree_upgrade(s)
    _as_version_4(path)
    with pytest.raises(StoreError, match="schema version 4; run 'cladelog init' to upgrade "
                                         "it to 5"):
        SQLiteStore(path)
    with SQLiteStore(path, create=True) as s:
        assert s.upgraded_from == 4 and s.schema_version() == SCHEMA_VERSION == 5
        db = sqlite3.connect(path)
        try:  # 220 events: level 6 (64 leaves each) holds 3 nodes; no level 4 or 8 is left
            assert db.execute("SELECT level, COUNT(*) FROM tree_nodes GROUP BY level"
                              ).fetchall() == [(6, 3)]
        finally:
            db.close()
        check_tree_after_upgrade(s, first)
    with SQLiteStore(path, create=True) as s:  # a second init changes nothing
        assert s.upgraded_from is None and s.verify().ok
