"""The simulation on a real, signed log: properties hold there too, replay is exact, and
the same log replays to identical digests on SQLite and PostgreSQL (export/import)."""

from __future__ import annotations

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
from click.testing import CliRunner

PG_URL = os.environ.get("CLADELOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
PLUGINS = ["fork-score", "consensus"]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema of the test database, dropped afterwards (fails loudly if no server)."""
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=5):
            pass
    except psycopg.Error as exc:
        raise RuntimeError(f"PostgreSQL is not reachable at {PG_URL} ({exc})") from None
    schema = f"consensus_test_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def simulate(env: CladelogEnv, *args: str) -> dict[str, Any]:
    result = env.cli("consensus", "simulate", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_signed_simulation_keeps_the_properties(cladelog_env: CladelogEnv) -> None:
    report = simulate(cladelog_env, "--validators", "7", "--byzantine", "2", "--offline", "0",
                      "--epochs", "5", "--seed", "11")
    state = cladelog_env.state("consensus.state")
    # every statement the simulation made was accepted and every consequence matched
    assert state["ignored"] == [] and state["anomalies"] == [] and state["pending"] == []
    assert report["conflicting_finalizations"] == []
    for v in report["validators"]:
        if v["role"] != "byzantine":
            assert v["slashes"] == []
        if any(a.startswith(("equivocate:", "double_vote:")) for a in v["actions"]):
            assert [s["offense"] for s in v["slashes"]] == ["equivocation"]
    # 5 of 7 honest and online (> 2/3): every honest candidate finalized
    honest = [p for p in report["proposals"] if p["candidate"].endswith("-h")]
    assert honest and all(p["outcome"] in ("finalized", "settled") for p in honest)
    # events carry DSSE envelopes of in-toto Statements
    votes = [e for e in cladelog_env.events() if e.type == "consensus.voted"]
    assert votes and votes[0].data["envelope"]["payloadType"] == "application/vnd.in-toto+json"


def test_simulation_refuses_a_used_log_and_bad_numbers(cladelog_env: CladelogEnv) -> None:
    r = cladelog_env.cli("consensus", "simulate", "--validators", "3", "--byzantine", "4")
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "error: --byzantine: byzantine + offline must be at most --validators"]
    simulate(cladelog_env, "--validators", "3", "--epochs", "1")
    before = len(cladelog_env.events())
    r = cladelog_env.cli("consensus", "simulate", "--validators", "3")
    assert r.exit_code == 2 and "fresh deployment" in r.output
    assert len(cladelog_env.events()) == before


def _pg(root: Path, url: str, *, create: bool) -> Deployment:
    cfg = DeploymentConfig.from_dict({"store": url, "plugins": PLUGINS, "actor": "test"},
                                     path=root / "cladelog.toml")
    return Deployment(cfg, create=create)


def test_simulated_log_replays_identically_on_sqlite_and_postgresql(
        tmp_path: Path, pg_url: str) -> None:
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "pg").mkdir()
    env = CladelogEnv(tmp_path / "sqlite", PLUGINS)
    try:
        simulate(env, "--validators", "6", "--byzantine", "3", "--offline", "1",
                 "--epochs", "6", "--seed", "5")
        live = {p.name: p.digest for p in env.replay().projections}
        rebuilt = {p.name: p.digest for p in env.replay(rebuild=True).projections}
        assert rebuilt == live
        exported = tmp_path / "log.jsonl"
        assert env.cli("export", str(exported)).exit_code == 0
        sqlite_events = env.events()
    finally:
        env.close()
    with _pg(tmp_path / "pg", pg_url, create=True) as dep:
        config = tmp_path / "pg" / "cladelog.toml"
        config.write_text(dep.config.to_toml(pg_url), encoding="utf-8")
    result = CliRunner().invoke(main, ["--config", str(config), "import", str(exported)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with _pg(tmp_path / "pg", pg_url, create=False) as dep:
        assert dep.store.__class__.__name__ == "PostgresStore"
        assert [e.hash for e in dep.store.read()] == [e.hash for e in sqlite_events]
        replayed = {p.name: p.digest for p in dep.replay(rebuild=True).projections}
    assert replayed["consensus.state"] == live["consensus.state"]
    assert replayed == live


def test_the_same_simulation_on_each_store_gives_the_same_state(
        tmp_path: Path, pg_url: str) -> None:
    # run live on PostgreSQL and on SQLite (not an import): the consensus state digests
    # agree (the events' times differ; the state never reads them)
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "pg").mkdir()
    env = CladelogEnv(tmp_path / "sqlite", PLUGINS)
    try:
        lite = simulate(env, "--validators", "7", "--byzantine", "3", "--offline", "1",
                        "--epochs", "5", "--seed", "21")
        lite_digest = {p.name: p.digest for p in env.replay().projections}["consensus.state"]
    finally:
        env.close()
    with _pg(tmp_path / "pg", pg_url, create=True) as dep:
        config = tmp_path / "pg" / "cladelog.toml"
        config.write_text(dep.config.to_toml(pg_url), encoding="utf-8")
    result = CliRunner().invoke(main, ["--config", str(config), "consensus", "simulate",
                                       "--validators", "7", "--byzantine", "3", "--offline",
                                       "1", "--epochs", "5", "--seed", "21", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == lite
    with _pg(tmp_path / "pg", pg_url, create=False) as dep:
        pg_digest = {p.name: p.digest for p in dep.replay(rebuild=True).projections}
    assert pg_digest["consensus.state"] == lite_digest
