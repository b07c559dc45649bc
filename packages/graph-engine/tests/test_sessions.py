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
from cladelog.graph_engine.settings import GraphEngineSettings
from ge_helpers import Calls, concept, tree

FIXTURES = Path(__file__).parent / "fixtures"

#: The two layouts of a session's records in the log: one event per record
#: (``pack_records = 0``) and the default, runs of up to 1000 records per
#: ``graph_engine.records_packed`` event. Tests that read records run in both.
LAYOUTS: dict[str, dict[str, dict[str, Any]]] = {
    "per-record": {"graph-engine": {"pack_records": 0}},
    "packed": {},  # the default settings
}
both_layouts = pytest.mark.parametrize("cladelog_settings", list(LAYOUTS.values()),
                                       ids=list(LAYOUTS))


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


def load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return (json.loads((FIXTURES / f"{name}.input.json").read_text()),
            json.loads((FIXTURES / f"{name}.expected.json").read_text()))


def stream_events(env: Any, sid: str) -> list[Any]:
    return env.events(stream=f"graph.{sid}")


def event_records(event: Any) -> list[tuple[str, Any]]:
    """The engine records one event of a session carries (several when packed)."""
    if event.type == "graph_engine.records_packed":
        return unpack_records(event.data)
    assert event.type.startswith("graph_engine.")
    return [(event.type[len("graph_engine."):], event.data)]


def records_per_batch(events: list[Any]) -> list[list[str]]:
    """The record kinds of each append batch (the fixed test clock ticks once per batch)."""
    batches: dict[str, list[str]] = {}
    for e in events:
        batches.setdefault(e.recorded_at, []).extend(k for k, _ in event_records(e))
    return list(batches.values())


def check_layout(env: Any, sid: str, settings: dict[str, Any]) -> list[Any]:
    """Check that the session's events have the layout ``settings`` ask for; return its
    records, read through ``session_records`` (and equal to what the events carry)."""
    pack = settings.get("graph-engine", {}).get("pack_records",
                                                GraphEngineSettings().pack_records)
    events = stream_events(env, sid)
    records = session_records(env.deployment, sid)
    assert [r for e in events for r in event_records(e)] == records
    if pack == 0:  # one event per record, never a packed one
        assert [e.type for e in events] == [f"graph_engine.{k}" for k, _ in records]
    else:  # packed, except the records never packed
        packed = [e for e in events if e.type == "graph_engine.records_packed"]
        assert len(packed) == len([e for e in events if e.type not in (
            "graph_engine.checkpoint", "graph_engine.run_failed")])
        assert all(0 < e.data["count"] <= pack for e in packed)
        assert len(events) < len(records)
    return records


def chain_session(env: Any, sid: str = "s1", config: Any = None) -> tuple[Session, Calls]:
    calls = Calls()
    calls.emit("P::a", A=True, a=1)
    calls.add("P::b", lambda c: {"$$_id": c.object_id, "B": True, "b": c.facts["a"] + 1})
    t = tree(concept("A", require=["x"], provider="P::a"),
             concept("B", require=["A", "a"], provider="P::b"))
    session = Session(env.deployment, sid, t, providers=calls.providers, config=config,
                      seed={"freeNodes": [{"_id": "o1", "x": 1}, {"_id": "o2", "x": 2}]})
    return session, calls


@both_layouts
def test_fixture_runs_as_a_session_and_matches_the_reference(
        cladelog_env: Any, cladelog_settings: dict[str, Any]) -> None:
    scenario, expected = load("01_require_chain")
    out = run_recorded_scenario(cladelog_env.deployment, scenario, "fx")
    assert out["final"] == expected["final"]
    assert out["providerCalls"] == expected["providerCalls"]
    kinds = [k for k, _ in check_layout(cladelog_env, "fx", cladelog_settings)]
    assert kinds[0] == "tree_loaded" and kinds[1] == "seeded"
    # boot + two mutate steps: three settles, each closing its batch
    batches = records_per_batch(stream_events(cladelog_env, "fx"))
    assert len(batches) == 3
    assert all(b[-1] == "settled" and b.count("settled") == 1 for b in batches)


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


@pytest.mark.parametrize("settings", list(LAYOUTS.values()), ids=list(LAYOUTS))
def test_same_session_twice_writes_the_same_events(
        tmp_path: Path, settings: dict[str, Any]) -> None:
    scenario, _ = load("01_require_chain")
    runs = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        env = CladelogEnv(tmp_path / name, ["graph-engine"], settings=settings)
        try:
            run_recorded_scenario(env.deployment, scenario, "same")
            runs.append([(e.type, e.data, e.hash) for e in env.events(stream="graph.same")])
            records = check_layout(env, "same", settings)
        finally:
            env.close()
    assert runs[0] == runs[1]
    assert len(records) > 10  # every record is in an event, under the same hashes


@both_layouts
def test_reload_step_rebuilds_from_the_log(cladelog_env: Any,
                                           cladelog_settings: dict[str, Any]) -> None:
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
    kinds = [k for k, _ in check_layout(cladelog_env, "r", cladelog_settings)]
    assert kinds.count("tree_loaded") == 2
    engine = replay_session(cladelog_env.deployment, "r")
    assert engine.get("p")["A"] is True


@both_layouts
def test_provider_error_is_an_event_and_a_fact(cladelog_env: Any,
                                               cladelog_settings: dict[str, Any]) -> None:
    def boom(call: Any) -> Any:
        raise RuntimeError("model unavailable")

    session = Session(cladelog_env.deployment, "err", tree(concept("A", require=["x"],
                                                                    provider="P::boom")),
                      providers={"P::boom": boom}, seed={"freeNodes": [{"_id": "o", "x": 1}]})
    session.settle()
    errors = [d for k, d in check_layout(cladelog_env, "err", cladelog_settings)
              if k == "provider_error"]
    assert len(errors) == 1
    assert errors[0]["message"] == "RuntimeError: model unavailable"
    facts = session.engine.get("o")
    assert facts["divergent"][0]["reason"] == "provider-error" and "A" not in facts
    assert replay_session(cladelog_env.deployment, "err").digest() == session.engine.digest()
    row = cladelog_env.state("graph_engine.sessions")["sessions"]["err"]
    assert row["errors"] == 1


@both_layouts
def test_sessions_projection(cladelog_env: Any, cladelog_settings: dict[str, Any]) -> None:
    session, _ = chain_session(cladelog_env)
    report = session.settle()
    n = len(check_layout(cladelog_env, "s1", cladelog_settings))
    assert n == session.records_written
    state = cladelog_env.state("graph_engine.sessions")
    assert state["sessions"]["s1"] == {"records": n, "settles": 1, "errors": 0,
                                       "status": "settled", "revision": report.revision,
                                       "digest": report.digest}


def _flush_unsettled(env: Any) -> None:
    """Records appended with no settle after them (here: a host mutation, then flush)."""
    session, _ = chain_session(env)
    session.settle()
    session.engine.mutate({"$$_id": "o3", "x": 3})
    session.flush()


def _two_settles_one_flush(env: Any) -> None:
    """Two settles of ``session.engine`` itself (as ``synthesize(session.engine, ...)``
    settles it), appended by one flush."""
    session, _ = chain_session(env)
    session.engine.settle()
    session.engine.mutate({"$$_id": "o3", "x": 3})
    session.engine.settle()
    session.flush()


def _many_settles_one_flush(env: Any) -> None:
    """Several settles, the first ones capped by a per-settle cap, in one flush."""
    from cladelog.graph_engine import EngineConfig

    session, _ = chain_session(env, config=EngineConfig(max_applies_per_settle=1))
    reports = [session.engine.settle() for _ in range(6)]
    assert reports[0].capped and not reports[-1].capped
    session.flush()


def _capped_last(env: Any) -> None:
    """A settle stopped by its cap is the last one: the status is ``capped``."""
    from cladelog.graph_engine import EngineConfig

    session, _ = chain_session(env, config=EngineConfig(max_applies_per_settle=1))
    session.engine.settle()
    session.engine.mutate({"$$_id": "o3", "x": 3})
    assert session.settle().capped


def _rolled_back(env: Any) -> Any:
    """A session settled twice, then rolled back to its first settle (not yet flushed)."""
    session, _ = chain_session(env)
    session.settle()
    r1 = session.engine.revision
    session.engine.mutate({"$$_id": "o3", "x": 3})
    session.settle()
    session.engine.rollback_to(r1)
    return session


def _rollback_flush(env: Any) -> None:
    """A rollback appended with no settle after it (``rollback_to()`` then ``flush()``)."""
    _rolled_back(env).flush()


def _rollback_settle(env: Any) -> None:
    """A rollback, then a settle, then host operations flushed unsettled."""
    session = _rolled_back(env)
    session.settle()
    session.engine.mutate({"$$_id": "o4", "x": 4})
    session.flush()


def _reload_flush(env: Any) -> None:
    """A reload (a second ``tree_loaded``) appended with no settle after it."""
    session, _ = chain_session(env)
    session.settle()
    session.reload()
    session.flush()


def _reload_settle(env: Any) -> None:
    """A reload, a host mutation and a settle."""
    session, _ = chain_session(env)
    session.settle()
    session.reload()
    session.engine.mutate({"$$_id": "o3", "x": 3})
    session.settle()


def _provider_errors(env: Any) -> None:
    """A provider that raises on some objects: ``provider_error`` records among the rest."""
    def sometimes(call: Any) -> Any:
        if call.facts["x"] % 2:
            raise RuntimeError("model unavailable")
        return {"$$_id": call.object_id, "A": True}

    session = Session(env.deployment, "s1", tree(concept("A", require=["x"],
                                                         provider="P::some")),
                      providers={"P::some": sometimes},
                      seed={"freeNodes": [{"_id": f"o{i}", "x": i} for i in range(7)]})
    session.settle()
    session.engine.mutate({"$$_id": "o9", "x": 9})
    session.engine.settle()
    session.flush()


def _run_failed(env: Any) -> None:
    """A recorded scenario run that stops at a refused step (unsettled records before)."""
    from cladelog.graph_engine import ScenarioError

    data = {"conceptTree": tree(concept("A", require=["v"])),
            "seed": {"freeNodes": [{"_id": "o", "v": 1}]},
            "steps": [{"op": "mutate", "template": {"$$_id": "o", "v": 2}}, {"op": "settle"},
                      {"op": "settle"}, {"op": "mutate", "template": {"$$_id": "p", "v": 3}},
                      {"op": "castConcept", "target": "nope", "concept": "A"}]}
    with pytest.raises(ScenarioError, match="unknown object 'nope'"):
        run_recorded_scenario(env.deployment, data, "s1")


#: Cases of the sessions projection: what the session does, and the status it must end in.
PROJECTION_CASES = {
    "unsettled-flush": (_flush_unsettled, "settled"),
    "two-settles-one-flush": (_two_settles_one_flush, "settled"),
    "many-settles-one-flush": (_many_settles_one_flush, "settled"),
    "capped-last": (_capped_last, "capped"),
    "rollback-flush": (_rollback_flush, "settled"),
    "rollback-settle-flush": (_rollback_settle, "settled"),
    "reload-flush": (_reload_flush, "running"),
    "reload-settle": (_reload_settle, "settled"),
    "provider-errors": (_provider_errors, "settled"),
    "run-failed": (_run_failed, "failed"),
}
#: The packed layouts compared with one event per record: the default (1000 records per
#: event) and packs of 3, so that pack boundaries fall anywhere among the records.
PACKED_LAYOUTS = {"packed": {}, "packed-3": {"pack_records": 3}}


@pytest.mark.parametrize("extra", [{}, {"flush_every": 4, "checkpoint_every": 10}],
                         ids=["plain", "flush4-checkpoints"])
@pytest.mark.parametrize("case", list(PROJECTION_CASES))
def test_sessions_projection_is_the_same_in_both_layouts(
        tmp_path: Path, case: str, extra: dict[str, Any]) -> None:
    steps, status = PROJECTION_CASES[case]
    layouts = {"per-record": {"pack_records": 0}, **PACKED_LAYOUTS}
    rows = {}
    for name, settings in layouts.items():
        (tmp_path / name).mkdir()
        env = CladelogEnv(tmp_path / name, ["graph-engine"],
                          settings={"graph-engine": {**settings, **extra}})
        try:
            steps(env)
            if name == "packed-3":
                assert any(e.type == "graph_engine.records_packed"
                           and e.data["count"] == 3 for e in stream_events(env, "s1"))
            rows[name] = env.state("graph_engine.sessions")["sessions"]["s1"]
            records = session_records(env.deployment, "s1")
        finally:
            env.close()
        assert rows[name]["records"] == len(records)
        assert rows[name]["settles"] == sum(1 for k, _ in records if k == "settled")
        assert rows[name]["errors"] == sum(1 for k, _ in records if k == "provider_error")
    assert rows["per-record"]["status"] == status
    for name in PACKED_LAYOUTS:
        assert rows[name] == rows["per-record"], name


def _recorded(stream: str, type_: str, data: Any, schema_version: int = 1) -> Any:
    from cladelog.core import RecordedEvent

    return RecordedEvent(0, stream, 0, type_, schema_version, data, {}, "", "", "", b"")


def _rows_one_by_one(records: list[tuple[str, Any]], stream: str = "graph.s") -> Any:
    """The sessions projection of ``records`` as one event each."""
    from cladelog.graph_engine.projections import apply_sessions

    state: dict[str, Any] = {"sessions": {}}
    for kind, data in records:
        apply_sessions(state, _recorded(stream, f"graph_engine.{kind}", data))
    return state


def _random_records(rng: Any, n: int) -> list[tuple[str, Any]]:
    """``n`` records of every type the projection tells apart, in a random order (their
    data only as complete as the packer and the projection need)."""
    out: list[tuple[str, Any]] = []
    rev = 0
    while len(out) < n:
        rev += 1
        pick = rng.randrange(9)
        if pick == 0:
            out.append(("tree_loaded", {"tree": {}, "config": {}}))
        elif pick == 1:
            out.append(("settled", {"revision": rev, "passes": 1, "applies": 0, "created": 0,
                                    "capped": rng.choice([None, None, "applies"]),
                                    "digest": f"d{rev}", "castDigest": f"c{rev}"}))
        elif pick == 2:
            out.append(("provider_error", {"object": "o", "concept": "A", "provider": "P::a",
                                           "role": "provider", "apply": "x", "message": "m"}))
        elif pick == 3:
            out.append(("rolled_back", {"to": max(rev - 2, 0), "previous": rev}))
        elif pick == 4:
            out.append(("run_failed", {"step": rev, "op": "mutate", "message": "m"}))
        elif pick == 5:
            out.append(("uncast", {"object": "o", "concept": "A", "permanent": False,
                                   "at": None}))
        else:  # a columnar mutation, with its casts (and a provider error) now and then
            out.append(("mutation_applied", {"rev": rev, "target": None, "cause": {"kind": "host"},
                                             "items": [{"id": "o", "create": None,
                                                        "set": [["k", rev], ["j", 1]]}]}))
            for w in range(rng.randrange(3)):
                out.append(("cast", {"object": "o", "concept": f"C{w}", "at": [rev, w + 1]}))
            if rng.randrange(4) == 0:
                out.append(("provider_error", {"object": "o", "concept": "B", "message": "m"}))
    return out[:n]


def _as_version_2(data: dict[str, Any]) -> dict[str, Any]:
    """The records of packed data as a version 2 writer may write them: every record whole
    (as the version 1 upcaster lays them out), the columns as JSON text, no settles and
    status."""
    records = [list(r) for r in unpack_records(data)]
    return {"count": data["count"], "errors": data["errors"], "settled": data["settled"],
            "columns": json.dumps({"order": "o" * len(records), "rev": [], "id": [], "n": [],
                                   "k": [], "v": [], "cast": [], "write": [],
                                   "other": records}),
            "audit": json.dumps({"target": [], "cause": []})}


@pytest.mark.parametrize("seed", range(12))
def test_a_packed_run_counts_as_its_records_one_by_one(seed: int) -> None:
    import random

    from cladelog.core import EventTypeRegistry
    from cladelog.graph_engine.events import EVENT_TYPES
    from cladelog.graph_engine.projections import apply_sessions

    rng = random.Random(seed)
    registry = EventTypeRegistry(EVENT_TYPES)
    records = _random_records(rng, rng.randrange(1, 60))
    cuts = sorted(rng.sample(range(1, len(records)), min(rng.randrange(6), len(records) - 1)))
    runs = [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)], strict=True)]
    expected = _rows_one_by_one(records)
    packed: dict[str, Any] = {"sessions": {}}
    upcast: dict[str, Any] = {"sessions": {}}
    for run in runs:
        data = json.loads(json.dumps(pack_records(run)))
        apply_sessions(packed, _recorded("graph.s", "graph_engine.records_packed", data))
        old = _as_version_2(data)
        new = registry.upcast("graph_engine.records_packed", 2, old)
        summary = ("count", "errors", "settles", "settled", "status")
        # the same summary as the writer's, computed from the records, and the same records
        assert [new[k] for k in summary] == [data[k] for k in summary]
        assert unpack_records(new) == unpack_records(data)
        registry.structure("graph_engine.records_packed", new)  # fits the version 5 class
        apply_sessions(upcast, _recorded("graph.s", "graph_engine.records_packed", new))
    assert packed == expected
    assert upcast == expected


def test_a_version_2_packed_event_is_upcast_to_its_settles_and_status() -> None:
    from cladelog.core import EventTypeRegistry
    from cladelog.graph_engine.events import EVENT_TYPES, PACKED_SCHEMA_VERSION

    registry = EventTypeRegistry(EVENT_TYPES)
    assert PACKED_SCHEMA_VERSION == 5
    settled = {"revision": 4, "passes": 1, "applies": 2, "created": 0, "capped": None,
               "digest": "d4", "castDigest": "c4"}
    capped = {**settled, "revision": 2, "capped": "applies", "digest": "d2"}
    mutation = {"rev": 3, "target": None, "cause": {"kind": "host"},
                "items": [{"id": "o", "create": None, "set": [["k", 1]]}]}
    records: list[tuple[str, Any]] = [
        ("tree_loaded", {"tree": {}, "config": {}}), ("settled", capped),
        ("mutation_applied", mutation), ("cast", {"object": "o", "concept": "C", "at": [3, 1]}),
        ("provider_error", {"object": "o", "concept": "C", "message": "m"}),
        ("settled", settled), ("rolled_back", {"to": 2, "previous": 4}),
        ("mutation_applied", mutation)]
    # the version 2 writer's data: no settles, no status
    v2 = {"count": 8, "errors": 1, "settled": settled,
          "columns": json.dumps({"order": "ooooooom", "rev": [3], "id": ["o"], "n": [1],
                                 "k": ["k"], "v": [1], "cast": [], "write": [],
                                 "other": [list(r) for r in records[:-1]]}),
          "audit": json.dumps({"target": [None], "cause": [{"kind": "host"}]})}
    v3 = registry.upcast("graph_engine.records_packed", 2, v2)
    # and version 5's columns: the one columnar mutation, of the shape (["k"], no cast)
    assert v3 == {**v2, "settles": 2, "status": "settled",
                  "columns": {"order": "ooooooom", "shape": [[["k"], []]], "s": [0],
                              "rev": [3], "id": ["o"], "v": [1],
                              "other": [json.loads(json.dumps(r)) for r in records[:-1]]}}
    assert unpack_records(v3) == [(k, json.loads(json.dumps(d))) for k, d in records]
    registry.structure("graph_engine.records_packed", v3)
    # a reload after the last settle: running; a version 1 event goes through version 2
    tail = [*records, ("tree_loaded", {"tree": {}, "config": {}})]
    v1 = {"count": 9, "errors": 1, "settled": settled,
          "records": json.dumps([list(r) for r in tail])}
    v3 = registry.upcast("graph_engine.records_packed", 1, v1)
    assert (v3["settles"], v3["status"]) == (2, "running")
    assert unpack_records(v3) == [(k, json.loads(json.dumps(d))) for k, d in tail]
    # no record that sets a status: the status stays (None)
    quiet = pack_records([("rolled_back", {"to": 2, "previous": 4}), ("mutation_applied",
                                                                      mutation)])
    v3 = registry.upcast("graph_engine.records_packed", 2, _as_version_2(quiet))
    assert (v3["settles"], v3["status"], v3["settled"]) == (0, None, None)
    # columns that do not decode: the upcast keeps what the event says, the replay refuses
    broken = {**v2, "columns": "[not json"}
    v3 = registry.upcast("graph_engine.records_packed", 2, broken)
    assert (v3["settles"], v3["status"], v3["columns"]) == (1, "settled", "[not json")
    with pytest.raises(ValueError):
        unpack_records(v3)
    v3 = registry.upcast("graph_engine.records_packed", 2, {**broken, "settled": None})
    assert (v3["settles"], v3["status"]) == (0, None)


def test_a_version_1_log_projects_as_its_records_one_by_one(tmp_path: Path) -> None:
    """The committed version 1 log (``fixtures/logs/packed_v1.*``, packs of 5 records): its
    events are upcast through version 2 to 3, and the projection counts them as it would
    their records one by one."""
    from cladelog.core.store.base import event_from_json

    lines = (FIXTURES / "logs" / "packed_v1.log.jsonl").read_text().splitlines()
    env = CladelogEnv(tmp_path, ["graph-engine"],
                      settings={"graph-engine": {"pack_records": 5, "checkpoint_every": 40}})
    try:
        env.deployment.import_events(event_from_json(json.loads(line)) for line in lines)
        versions = {e.schema_version for e in env.events()
                    if e.type == "graph_engine.records_packed"}
        assert versions == {1}
        state = env.state("graph_engine.sessions")
        expected: dict[str, Any] = {"sessions": {}}
        for sid in ("old", "old-other"):
            one_by_one = _rows_one_by_one(session_records(env.deployment, sid), f"graph.{sid}")
            expected["sessions"].update(one_by_one["sessions"])
        assert state == expected
        assert state["sessions"]["old"]["settles"] == 6
    finally:
        env.close()


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
    assert (data["count"], data["errors"], data["settles"], data["settled"], data["status"]
            ) == (7, 1, 1, records[3][1], "settled")
    # the provider error among the first mutation's casts is a null of its shape; the
    # uncast keeps its mutation whole
    assert data["columns"]["order"] == "moooo"
    assert data["columns"]["shape"] == [[["k", "p"], [None, ["C", 2]]]]
    assert unpack_records(json.loads(json.dumps(data))) == [
        (k, json.loads(json.dumps(d))) for k, d in records]
    # the columns are JSON values in the event's data: the log's encoder refuses NaN there
    from cladelog.core.canonical import canonical_bytes

    with pytest.raises(ValueError):
        canonical_bytes(pack_records([("cast", {"at": [float("nan")]})]))


class TestFlushEvery:
    @pytest.fixture(params=[0, None], ids=["per-record", "packed"])
    def cladelog_settings(self, request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
        if request.param is None:  # the default pack_records
            return {"graph-engine": {"flush_every": 4}}
        return {"graph-engine": {"flush_every": 4, "pack_records": request.param}}

    def test_a_big_settle_flushes_early(self, cladelog_env: Any,
                                        cladelog_settings: dict[str, Any]) -> None:
        session, _ = chain_session(cladelog_env)
        report = session.settle()
        packed = "pack_records" not in cladelog_settings["graph-engine"]
        records = check_layout(cladelog_env, "s1", cladelog_settings)
        batches = records_per_batch(stream_events(cladelog_env, "s1"))
        # one batch per 4 records, the rest at settle
        assert len(records) > 4
        assert [len(b) for b in batches] == [4] * (len(records) // 4) + (
            [len(records) % 4] if len(records) % 4 else [])
        if packed:  # each early flush is one packed event
            assert len(stream_events(cladelog_env, "s1")) == len(batches)
        assert replay_session(cladelog_env.deployment, "s1").digest() == report.digest


def test_records_are_packed_by_default() -> None:
    assert GraphEngineSettings().pack_records == 1000


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
