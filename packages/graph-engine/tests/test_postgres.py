"""A session recorded on SQLite, exported, imported into PostgreSQL, replays identically.

The issue's property: ``replay`` rebuilds facts, tree and cast state with zero provider
calls, identical to the live run's digest, also after a SQLite -> PostgreSQL export/import.
The export and the import go through core's own ``cladelog export`` / ``cladelog import``
commands. Each test gets its own PostgreSQL schema (dropped afterwards); an unreachable
server fails these tests loudly instead of skipping them.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import Deployment, DeploymentConfig
from cladelog.core.cli import main
from cladelog.core.testing import CladelogEnv
from cladelog.graph_engine import ProviderCall, Session, replay_session, session_records
from click.testing import CliRunner
from ge_helpers import Calls, concept, tree

PG_URL = os.environ.get("CLADELOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A store URL on a fresh schema of the test database; the schema is dropped after."""
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=5):
            pass
    except psycopg.Error as exc:  # fail loudly: CI must not skip these silently
        raise RuntimeError(
            f"PostgreSQL is not reachable at {PG_URL} ({exc}); start it with "
            "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
        ) from None
    schema = f"ge_test_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _record_session(env: CladelogEnv) -> tuple[Session, Calls]:
    """A session that exercises every record type a live run writes, over four settles."""
    calls = Calls()

    async def slow(call: ProviderCall) -> Any:
        await asyncio.sleep(0)
        return {"$$_id": call.object_id, "A": True, "a": call.facts["v"] * 2}

    calls.add("P::a", slow)
    calls.emit("P::clean", cleaned={"__push": 1})
    calls.add("P::kid", lambda c: [{"$$_id": c.object_id, "K": True},
                                   {"_id": "child", "Node": True, "parent": c.object_id}])
    calls.add("P::bad", lambda c: {}["missing"])  # a provider error: an event, not a crash
    t = tree(
        concept("A", require=["v"], ensure=["$v > 0"], provider="P::a", cleaner="P::clean",
                children=[concept("B", defaultValue="b")]),
        concept("K", require=["kid"], provider="P::kid"),
        concept("Bad", require=["bad"], provider="P::bad"),
        concept("F", require=["v"], follow=["v"],
                applyMutations={"$_id": "_parent", "seen": {"__push": 1}}),
    )
    seed = {"nodes": [{"_id": "n", "kid": 1}], "freeNodes": [{"_id": "o", "v": 2, "bad": 1}]}
    session = Session(env.deployment, "moved", t, providers=calls.providers, seed=seed)
    session.settle()
    session.engine.mutate({"$$_id": "o", "v": 0})  # ensure fails: A retracted, cleaner runs
    session.settle()
    session.engine.mutate({"$$_id": "o", "v": 3})
    session.engine.add_concept("A", {"_id": "C", "require": ["B"]})
    session.engine.patch_concept("F", {"follow": []})
    session.settle()
    session.engine.delete_concept("K")
    session.engine.uncast("o", "A")
    session.settle()
    return session, calls


def _pg_deployment(root: Path, url: str, *, create: bool) -> Deployment:
    cfg = DeploymentConfig.from_dict({"store": url, "plugins": ["graph-engine"],
                                      "actor": "test"}, path=root / "cladelog.toml")
    return Deployment(cfg, create=create)


@pytest.mark.parametrize("settings", [
    {"pack_records": 0},  # one event per record, checkpoints at the default interval (none)
    {},  # the defaults: runs of up to 1000 records per event, no checkpoint here
    {"pack_records": 7, "checkpoint_every": 15},  # packed events and checkpoints
], ids=["per-record", "packed", "packed-checkpointed"])
def test_sqlite_session_replays_identically_from_postgres(
    tmp_path: Path, pg_url: str, settings: dict[str, int]
) -> None:
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "pg").mkdir()
    env = CladelogEnv(tmp_path / "sqlite", ["graph-engine"],
                      settings={"graph-engine": settings} if settings else None)
    try:
        session, calls = _record_session(env)
        live = session.engine
        live_calls = dict(calls.count)
        # every provider ran live, P::a and the cleaner more than once (A is retracted by
        # v=0, re-applied at v=3, retracted again by the host uncast)
        assert set(live_calls) == {"P::a", "P::bad", "P::kid", "P::clean"}
        assert live_calls["P::a"] >= 2 and live_calls["P::clean"] >= 2
        local = replay_session(env.deployment, "moved")
        assert local.digest() == live.digest()
        exported = tmp_path / "log.jsonl"
        result = env.cli("export", str(exported))
        assert result.exit_code == 0, result.output
        sqlite_events = env.events()
    finally:
        env.close()

    with _pg_deployment(tmp_path / "pg", pg_url, create=True) as dep:
        pg_config = tmp_path / "pg" / "cladelog.toml"
        pg_config.write_text(dep.config.to_toml(pg_url), encoding="utf-8")
    imported = CliRunner().invoke(main, ["--config", str(pg_config), "import", str(exported)],
                                  catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    assert f"imported {len(sqlite_events)} new event(s)" in imported.output

    with _pg_deployment(tmp_path / "pg", pg_url, create=False) as dep:
        assert dep.store.__class__.__name__ == "PostgresStore"
        pg_events = list(dep.store.read())
        assert [(e.position, e.hash) for e in pg_events] == [
            (e.position, e.hash) for e in sqlite_events]
        for from_checkpoint in (True, False):
            replayed = replay_session(dep, "moved", from_checkpoint=from_checkpoint)
            assert calls.count == live_calls  # not one provider call during either replay
            assert replayed.provider_calls == {}
            assert replayed.digest() == live.digest()
            assert replayed.facts() == live.facts()
            assert replayed.cast_state() == live.cast_state()
            assert replayed.export_tree() == live.export_tree()
            assert replayed.node_links() == live.node_links()
            assert replayed.revision == live.revision
        # the recorded settle digests are the live ones (replay also verifies each of them)
        settled = [d for k, d in session_records(dep, "moved") if k == "settled"]
        assert len(settled) == 4 and settled[-1]["digest"] == live.digest()
        kinds = [json.loads(line)["type"] for line in exported.read_text().splitlines()]
        engine_kinds = {k for k in kinds if k.startswith("graph_engine.")}
        if settings.get("pack_records") == 0:
            assert kinds.count("graph_engine.settled") == 4
            assert "graph_engine.records_packed" not in kinds
        elif "checkpoint_every" in settings:
            assert engine_kinds == {"graph_engine.records_packed", "graph_engine.checkpoint"}
        else:
            assert engine_kinds == {"graph_engine.records_packed"}
            assert kinds.count("graph_engine.records_packed") == 4  # one per settle
