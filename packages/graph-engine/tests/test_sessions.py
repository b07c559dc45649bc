"""Event-sourced sessions through core: recording, replay from the log, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cladelog.core import ConfigError, PluginInfo, hookimpl
from cladelog.core.testing import CladelogEnv
from cladelog.graph_engine import (
    Session,
    SessionError,
    replay_session,
    run_recorded_scenario,
    session_records,
)
from cladelog.graph_engine.events import pack_records, unpack_records
from ge_helpers import Calls, concept, tree

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


def load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return (json.loads((FIXTURES / f"{name}.input.json").read_text()),
            json.loads((FIXTURES / f"{name}.expected.json").read_text()))


def stream_events(env: Any, sid: str) -> list[Any]:
    return env.events(stream=f"graph.{sid}")


def chain_session(env: Any, sid: str = "s1") -> tuple[Session, Calls]:
    calls = Calls()
    calls.emit("P::a", A=True, a=1)
    calls.add("P::b", lambda c: {"$$_id": c.object_id, "B": True, "b": c.facts["a"] + 1})
    t = tree(concept("A", require=["x"], provider="P::a"),
             concept("B", require=["A", "a"], provider="P::b"))
    session = Session(env.deployment, sid, t, providers=calls.providers,
                      seed={"freeNodes": [{"_id": "o1", "x": 1}, {"_id": "o2", "x": 2}]})
    return session, calls


def test_fixture_runs_as_a_session_and_matches_the_reference(cladelog_env: Any) -> None:
    scenario, expected = load("01_require_chain")
    out = run_recorded_scenario(cladelog_env.deployment, scenario, "fx")
    assert out["final"] == expected["final"]
    assert out["providerCalls"] == expected["providerCalls"]
    kinds = [e.type for e in stream_events(cladelog_env, "fx")]
    assert kinds[0] == "graph_engine.tree_loaded" and kinds[1] == "graph_engine.seeded"
    # boot + two mutate steps: three settles, each closing its batch
    assert kinds.count("graph_engine.settled") == 3 and kinds[-1] == "graph_engine.settled"


def test_replay_calls_no_provider_and_reproduces_the_digest(cladelog_env: Any) -> None:
    session, calls = chain_session(cladelog_env)
    report = session.settle()
    live = dict(calls.count)
    assert live == {"P::a": 2, "P::b": 2}  # two objects, each casts A then B
    engine = replay_session(cladelog_env.deployment, "s1")
    assert calls.count == live  # not one more call
    assert engine.provider_calls == {}
    assert engine.digest() == report.digest == session.engine.digest()
    assert engine.cast_state() == session.engine.cast_state()
    assert engine.get("o2")["b"] == 2  # P::a writes a=1, P::b writes b = a + 1 = 2


def test_one_atomic_append_per_settle_with_expected_versions(cladelog_env: Any) -> None:
    session, _ = chain_session(cladelog_env)
    assert stream_events(cladelog_env, "s1") == []  # nothing before the first settle
    session.settle()
    first = stream_events(cladelog_env, "s1")
    # the fixed test clock advances once per append batch: one timestamp = one batch
    assert len({e.recorded_at for e in first}) == 1
    assert [e.stream_version for e in first] == list(range(1, len(first) + 1))
    session.engine.mutate({"$$_id": "o1", "x": 5})
    session.settle()
    events = stream_events(cladelog_env, "s1")
    assert len({e.recorded_at for e in events}) == 2


def test_a_concurrent_writer_stops_the_session(cladelog_env: Any) -> None:
    session, _ = chain_session(cladelog_env)
    session.settle()
    before = len(stream_events(cladelog_env, "s1"))
    cladelog_env.append("graph_engine.concept_deleted", {"concept": "X"}, stream="graph.s1")
    session.engine.mutate({"$$_id": "o1", "x": 9})
    with pytest.raises(SessionError, match="refused an append"):
        session.settle()
    assert len(stream_events(cladelog_env, "s1")) == before + 1  # only the foreign event
    with pytest.raises(SessionError):
        session.flush()
    with pytest.raises(SessionError, match="stopped"):
        session.settle()


def test_session_ids_are_checked_and_unique(cladelog_env: Any) -> None:
    session, _ = chain_session(cladelog_env)
    session.settle()
    with pytest.raises(SessionError, match="already exists"):
        chain_session(cladelog_env, "s1")
    for bad in ("", "has space", "-lead", "x" * 151):
        with pytest.raises(SessionError, match="session_id"):
            Session(cladelog_env.deployment, bad, tree())
    with pytest.raises(SessionError, match="no session 'nope'"):
        replay_session(cladelog_env.deployment, "nope")


def test_same_session_twice_writes_the_same_events(tmp_path: Path) -> None:
    scenario, _ = load("01_require_chain")
    runs = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        env = CladelogEnv(tmp_path / name, ["graph-engine"])
        try:
            run_recorded_scenario(env.deployment, scenario, "same")
            runs.append([(e.type, e.data, e.hash) for e in env.events(stream="graph.same")])
        finally:
            env.close()
    assert runs[0] == runs[1]
    assert len(runs[0]) > 10


def test_reload_step_rebuilds_from_the_log(cladelog_env: Any) -> None:
    calls = Calls()
    calls.emit("P::a", A=True)
    scenario = {
        "conceptTree": tree(concept("A", require=["x"], provider="P::a"),
                            concept("D", require=["A"])),
        "seed": {"freeNodes": [{"_id": "o", "x": 1}]},
        "steps": [{"op": "reload"}, {"op": "mutate", "template": {"$$_id": "p", "x": 2}}],
    }
    out = run_recorded_scenario(cladelog_env.deployment, scenario, "r",
                                extra_providers=calls.providers)
    # reload re-mounts facts: the present flag A counts as cast, no provider re-runs;
    # only the new object p calls P::a afterwards: 1 (boot) + 1 (p) = 2
    assert calls.count == {"P::a": 2}
    assert out["final"]["o"] == {"_id": "o", "x": 1, "A": True, "D": True}
    kinds = [e.type for e in stream_events(cladelog_env, "r")]
    assert kinds.count("graph_engine.tree_loaded") == 2
    engine = replay_session(cladelog_env.deployment, "r")
    assert engine.get("p")["A"] is True


def test_provider_error_is_an_event_and_a_fact(cladelog_env: Any) -> None:
    def boom(call: Any) -> Any:
        raise RuntimeError("model unavailable")

    session = Session(cladelog_env.deployment, "err", tree(concept("A", require=["x"],
                                                                    provider="P::boom")),
                      providers={"P::boom": boom}, seed={"freeNodes": [{"_id": "o", "x": 1}]})
    session.settle()
    errors = [e for e in stream_events(cladelog_env, "err")
              if e.type == "graph_engine.provider_error"]
    assert len(errors) == 1
    assert errors[0].data["message"] == "RuntimeError: model unavailable"
    facts = session.engine.get("o")
    assert facts["divergent"][0]["reason"] == "provider-error" and "A" not in facts
    assert replay_session(cladelog_env.deployment, "err").digest() == session.engine.digest()
    row = cladelog_env.state("graph_engine.sessions")["sessions"]["err"]
    assert row["errors"] == 1


def test_sessions_projection(cladelog_env: Any) -> None:
    session, _ = chain_session(cladelog_env)
    report = session.settle()
    n = len(stream_events(cladelog_env, "s1"))
    state = cladelog_env.state("graph_engine.sessions")
    assert state["sessions"]["s1"] == {"records": n, "settles": 1, "errors": 0,
                                       "status": "settled", "revision": report.revision,
                                       "digest": report.digest}


def test_records_of_a_session_are_the_engine_records(cladelog_env: Any) -> None:
    session, _ = chain_session(cladelog_env)
    session.settle()
    got = session_records(cladelog_env.deployment, "s1")
    assert [k for k, _ in got][:2] == ["tree_loaded", "seeded"]
    assert sum(1 for k, _ in got if k == "mutation_applied") == 4  # 2 objects x (A, B)


def test_events_validate_against_their_payload_classes(cladelog_env: Any) -> None:
    from cladelog.core import PayloadError

    with pytest.raises(PayloadError):
        cladelog_env.append("graph_engine.cast", {"object": "o", "concept": 3, "at": None})
    with pytest.raises(PayloadError):
        cladelog_env.append("graph_engine.settled", {"revision": 1})


# ------------------------------------------------------------------ providers from plugins


def _provider_plugin(name: str, providers: Any) -> Any:
    @hookimpl
    def graph_engine_providers() -> Any:
        return providers

    return SimpleNamespace(PLUGIN=PluginInfo(name=name, version="1", requires=("graph-engine",)),
                           graph_engine_providers=graph_engine_providers)


class TestPluginProviders:
    @pytest.fixture
    def cladelog_plugin_modules(self) -> list[Any]:
        return [_provider_plugin("labels", {
            "Text::label": lambda c: {"$$_id": c.object_id, "L": True, "n": len(c.facts["t"])},
        })]

    def test_a_plugin_contributes_providers(self, cladelog_env: Any) -> None:
        session = Session(cladelog_env.deployment, "p", tree(concept("L", require=["t"],
                                                                      provider="Text::label")),
                          seed={"freeNodes": [{"_id": "o", "t": "abcd"}]})
        session.settle()
        assert session.engine.get("o")["n"] == 4  # len("abcd")

    def test_validate_checks_against_plugin_providers(self, cladelog_env: Any) -> None:
        from cladelog.graph_engine.sessions import plugin_providers
        from cladelog.graph_engine.validate import registry_issues

        raw = tree(concept("L", provider="Text::label"), concept("M", cleaner="Text::nope"))
        issues = registry_issues(raw, plugin_providers(cladelog_env.deployment))
        assert [(i.concept, i.kind, i.ref) for i in issues] == [
            ("M", "provider-not-registered", "Text::nope")]

    def test_explicit_providers_override_plugin_ones(self, cladelog_env: Any) -> None:
        session = Session(cladelog_env.deployment, "q", tree(concept("L", require=["t"],
                                                                      provider="Text::label")),
                          providers={"Text::label": lambda c: {"$$_id": c.object_id, "L": 7}},
                          seed={"freeNodes": [{"_id": "o", "t": "abcd"}]})
        session.settle()
        assert session.engine.get("o")["L"] == 7


class TestDuplicateProviders:
    @pytest.fixture
    def cladelog_plugin_modules(self) -> list[Any]:
        fn = lambda c: None  # noqa: E731
        return [_provider_plugin("one", {"X::f": fn}), _provider_plugin("two", {"X::f": fn})]

    def test_two_plugins_offering_one_name_is_an_error(self, cladelog_env: Any) -> None:
        with pytest.raises(SessionError, match=r"providers\.X::f: offered by both"):
            Session(cladelog_env.deployment, "d", tree())


class TestBadProviderHook:
    @pytest.fixture
    def cladelog_plugin_modules(self) -> list[Any]:
        return [_provider_plugin("bad", ["not", "a", "mapping"])]

    def test_a_hook_returning_a_list_is_an_error(self, cladelog_env: Any) -> None:
        with pytest.raises(SessionError, match="returned list, not a mapping"):
            Session(cladelog_env.deployment, "d", tree())


# ------------------------------------------------------------------ settings


class TestPacked:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"graph-engine": {"pack_records": 3}}

    def test_packed_events_replay_the_same(self, cladelog_env: Any) -> None:
        session, _ = chain_session(cladelog_env)
        report = session.settle()
        events = stream_events(cladelog_env, "s1")
        assert {e.type for e in events} == {"graph_engine.records_packed"}
        total = session.records_written
        assert len(events) == -(-total // 3)  # ceil(records / 3)
        assert replay_session(cladelog_env.deployment, "s1").digest() == report.digest
        row = cladelog_env.state("graph_engine.sessions")["sessions"]["s1"]
        assert row["records"] == total and row["status"] == "settled"

    def test_packed_events_hold_what_pack_records_writes(self, cladelog_env: Any) -> None:
        # records are laid out one by one as they arrive: the packed data must still be
        # exactly pack_records of each run
        session, _ = chain_session(cladelog_env)
        session.settle()
        records = session_records(cladelog_env.deployment, "s1")
        events = stream_events(cladelog_env, "s1")
        runs = [records[i:i + 3] for i in range(0, len(records), 3)]
        assert [e.data for e in events] == [pack_records(run) for run in runs]


    def test_a_failed_run_is_recorded_unpacked(self, cladelog_env: Any) -> None:
        from cladelog.graph_engine import ScenarioError

        data = {"conceptTree": tree(concept("A", require=["v"])),
                "seed": {"freeNodes": [{"_id": "o", "v": 1}]},
                "steps": [{"op": "unCastConcept", "target": "o", "concept": "Zed"}]}
        with pytest.raises(ScenarioError, match=r"^steps\[0\]\.uncast\.concept: unknown "):
            run_recorded_scenario(cladelog_env.deployment, data, "pf")
        events = stream_events(cladelog_env, "pf")
        assert events[-1].type == "graph_engine.run_failed"
        assert {e.type for e in events[:-1]} == {"graph_engine.records_packed"}
        row = cladelog_env.state("graph_engine.sessions")["sessions"]["pf"]
        assert row["status"] == "failed"
        assert replay_session(cladelog_env.deployment, "pf").run_failed == events[-1].data


def test_packed_records_decode_to_the_same_records() -> None:
    records: list[tuple[str, Any]] = [
        ("mutation_applied", {"rev": 1, "target": None, "cause": {"kind": "host"},
                              "items": [{"id": "é\n\"x\"", "create": None,
                                         "set": [["k", 2.5], ["p", {"__push": [1]}]]}]}),
        ("provider_error", {"message": "\u2028 ☃", "n": -0.0, "big": 1e300, "t": True}),
        ("cast", {"object": "é\n\"x\"", "concept": "C", "at": [1, 2]}),
        ("settled", {"revision": 3, "digest": "d", "capped": None}),
        ("cast", {"object": "o", "concept": "C", "at": [1, 2]}),  # no mutation before it
        ("mutation_applied", {"rev": 2, "target": "o", "cause": {"kind": "host"},
                              "items": [{"id": "o", "create": None, "set": [["a", None]]}]}),
        ("uncast", {"object": "o", "concept": "A", "permanent": False, "at": [2, 1]}),
    ]
    data = pack_records(records)
    assert (data["count"], data["errors"], data["settled"]) == (7, 1, records[3][1])
    columns = json.loads(data["columns"])
    assert columns["order"] == "mocoooo"  # the uncast keeps its mutation whole
    assert unpack_records(json.loads(json.dumps(data))) == [
        (k, json.loads(json.dumps(d))) for k, d in records]
    with pytest.raises(ValueError):
        pack_records([("cast", {"at": [float("nan")]})])


class TestFlushEvery:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"graph-engine": {"flush_every": 4}}

    def test_a_big_settle_flushes_early(self, cladelog_env: Any) -> None:
        session, _ = chain_session(cladelog_env)
        report = session.settle()
        events = stream_events(cladelog_env, "s1")
        batches = len({e.recorded_at for e in events})
        assert batches == -(-len(events) // 4)  # one batch per 4 records, the rest at settle
        assert replay_session(cladelog_env.deployment, "s1").digest() == report.digest


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="flush_every"):
        CladelogEnv(tmp_path, ["graph-engine"], settings={"graph-engine": {"flush_every": -1}})


def test_sessions_need_the_plugin(tmp_path: Path) -> None:
    env = CladelogEnv(tmp_path, [])
    try:
        with pytest.raises(SessionError, match="not enabled"):
            Session(env.deployment, "x", tree())
    finally:
        env.close()


# ------------------------------------------------------------------ checkpoints


def test_replay_from_a_checkpoint_in_memory() -> None:
    from cladelog.graph_engine import Engine, ReplayError

    records: list[tuple[str, Any]] = []
    calls = Calls()
    calls.emit("P::a", A=True)
    eng = Engine(tree(concept("A", require=["x"], provider="P::a")), providers=calls.providers,
                 seed={"freeNodes": [{"_id": "o", "x": 1}]},
                 sink=lambda k, d: records.append((k, d)))
    eng.settle()
    eng.write_checkpoint()
    eng.mutate({"$$_id": "p", "x": 2})
    eng.settle()
    fast = Engine.replay(records, from_checkpoint=True)
    full = Engine.replay(records)
    assert fast.digest() == full.digest() == eng.digest()
    assert fast.cast_state() == eng.cast_state() == {"o": ["A"], "p": ["A"]}
    assert fast.revisions()[0] == records[[k for k, _ in records].index("checkpoint")][1][
        "revision"]
    bad = [(k, {**d, "digest": "0" * 64} if k == "checkpoint" else d) for k, d in records]
    with pytest.raises(ReplayError, match="checkpoint facts differ"):
        Engine.replay(bad, from_checkpoint=True)
    Engine.replay(bad)  # a full replay skips checkpoints


class TestCheckpoints:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"graph-engine": {"checkpoint_every": 1, "pack_records": 4}}

    def test_sessions_checkpoint_and_replay_from_there(self, cladelog_env: Any) -> None:
        session, calls = chain_session(cladelog_env)
        session.settle()
        session.engine.mutate({"$$_id": "o3", "x": 3})
        session.settle()
        kinds = [e.type for e in stream_events(cladelog_env, "s1")]
        assert kinds.count("graph_engine.checkpoint") == 2  # one per settle (every >= 1)
        assert kinds[-1] == "graph_engine.checkpoint"
        fast = session_records(cladelog_env.deployment, "s1", from_checkpoint=True)
        assert [k for k, _ in fast] == ["checkpoint"]  # nothing after the last one
        before = dict(calls.count)
        for flag in (True, False):
            engine = replay_session(cladelog_env.deployment, "s1", from_checkpoint=flag)
            assert engine.digest() == session.engine.digest()
            assert engine.cast_state() == session.engine.cast_state()
        assert calls.count == before
