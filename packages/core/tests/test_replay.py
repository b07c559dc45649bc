"""Projections, checkpoints and incremental replay."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from cladelog.core import ChainError, Deployment, DeploymentConfig, NewEvent, Projection
from cladelog.core.testing import fixed_clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def counted(n: int, label: str = "") -> NewEvent:
    return NewEvent("c", "counter.counted", {"n": n, "label": label})


def expected_digest(state: Any) -> str:
    # canonical JSON of a state made of ints, ASCII strings, lists and dicts
    return hashlib.sha256(
        json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def test_replay_folds_and_reports_digest(deployment: Deployment) -> None:
    deployment.append([counted(2, "a"), counted(3, "b")])
    result = deployment.replay()
    proj = {p.name: p for p in result.projections}["counter.totals"]
    want = {"events": 2, "total": 5, "labels": ["a", "b"]}
    assert proj.state == want
    assert proj.digest == expected_digest(want)
    assert proj.summary == "2 events, total 5"


def test_incremental_replay_uses_the_checkpoint(deployment: Deployment) -> None:
    deployment.append([counted(1)])
    first = {p.name: p for p in deployment.replay().projections}["counter.totals"]
    assert first.rebuilt
    deployment.append([counted(10)])
    second = {p.name: p for p in deployment.replay().projections}["counter.totals"]
    assert not second.rebuilt
    assert second.applied == 1
    assert second.state["total"] == 11


def test_rebuild_and_to(deployment: Deployment) -> None:
    deployment.append([counted(1), counted(2), counted(4)])
    full = deployment.replay()
    # positions: 1 is core.plugin_enabled, then 2, 3, 4
    part = {p.name: p for p in deployment.replay(to=3).projections}["counter.totals"]
    assert part.state["total"] == 3
    assert part.rebuilt  # the checkpoint was past position 3
    again = {p.name: p for p in deployment.replay(rebuild=True).projections}["counter.totals"]
    assert again.rebuilt and again.state["total"] == 7
    assert again.digest == {p.name: p for p in full.projections}["counter.totals"].digest


def test_new_projection_version_rebuilds(
    tmp_path: Path, plugin_factory: Any, counter_projection: Any
) -> None:
    make_plugin, COUNTER = plugin_factory, counter_projection
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[make_plugin()], create=True) as dep:
        dep.append([counted(5)])
        dep.replay()
    v2 = attrs.evolve(COUNTER, version=2)
    with Deployment(cfg, plugins=[make_plugin(projections=(v2,))]) as dep:
        p = {p.name: p for p in dep.replay().projections}["counter.totals"]
        assert p.rebuilt and p.version == 2 and p.state["total"] == 5


def test_upcaster_runs_on_read(tmp_path: Path, plugin_factory: Any) -> None:
    make_plugin = plugin_factory
    from cladelog.core.store.base import PreparedEvent

    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[make_plugin()], create=True) as dep:
        # an event written by an older plugin version, in schema version 1
        dep.store.append([PreparedEvent("c", "counter.counted", 1, {"value": 7}, {})])
        state = dep.state("counter.totals")
        assert state == {"events": 1, "total": 7, "labels": ["from-v1"]}
        # the stored bytes are untouched
        stored = next(iter(dep.store.read(types=["counter.counted"])))
        assert stored.data == {"value": 7} and stored.schema_version == 1


def test_unknown_types_are_skipped_and_counted_never_dropped(
    tmp_path: Path, plugin_factory: Any
) -> None:
    make_plugin = plugin_factory
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    other = make_plugin("other", event_types=(attrs.evolve(
        make_plugin().cladelog_event_types()[0], name="other.counted"),), projections=())
    with Deployment(cfg, plugins=[make_plugin(), other], create=True) as dep:
        dep.append([counted(1), NewEvent("o", "other.counted", {"n": 1})])
    with Deployment(cfg, plugins=[make_plugin()]) as dep:
        result = dep.replay()
        assert result.skipped_unknown == {"other.counted": 1}
        assert dep.verify().ok
        assert [e.type for e in dep.store.read(types=["other.counted"])] == ["other.counted"]


def test_replay_stops_at_a_broken_chain_and_saves_nothing(
    deployment: Deployment, sqlite_harness: Any
) -> None:
    deployment.append([counted(1), counted(2)])
    sqlite_harness.tamper(deployment.store, 3, "data_byte", None)
    with pytest.raises(ChainError) as info:
        deployment.replay()
    assert info.value.position == 3
    assert deployment.store.load_checkpoint("counter.totals") is None


def _fresh(tmp: str, plugin: Any) -> Deployment:
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=Path(tmp) / "c.toml")
    return Deployment(cfg, plugins=[plugin], clock=fixed_clock(), create=True)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=40),
    chunks=st.lists(st.integers(1, 7), min_size=1, max_size=40),
)
def test_replay_in_random_chunks_equals_replay_in_one_go(
    values: list[int], chunks: list[int], counter_plugin: Any
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with _fresh(tmp, counter_plugin) as dep:
            dep.append([counted(v, str(v)) for v in values])
            head = dep.store.head().position
            # incremental: replay up to growing positions, each step resuming its checkpoint
            pos = 0
            for step in chunks:
                pos = min(pos + step, head)
                dep.replay(to=pos)
                if pos == head:
                    break
            stepwise = {p.name: p.digest for p in dep.replay().projections}
            oneshot = {p.name: p.digest for p in dep.replay(rebuild=True, save=False).projections}
        assert stepwise == oneshot
        want = {"events": len(values), "total": sum(values), "labels": [str(v) for v in values]}
        assert oneshot["counter.totals"] == expected_digest(want)


def test_projection_initial_state_is_not_shared() -> None:
    p = Projection("x.y", 1, None, {"a": []}, lambda s, e: s)
    s1 = p.fresh_state()
    s1["a"].append(1)
    assert p.fresh_state() == {"a": []}


# -- projections that take payload instances ----------------------------------------------------
def _typed_count(state: dict[str, Any], event: Any) -> dict[str, Any]:
    assert attrs.has(type(event.data)) and type(event.data).__name__ == "Counted", event.data
    state["events"] += 1
    state["total"] += event.data.n
    state["labels"].append(event.data.label)
    return state


TYPED = Projection("counter.typed", 1, frozenset({"counter.counted"}),
                   {"events": 0, "total": 0, "labels": []}, _typed_count, payloads=True)


def test_a_projection_can_take_payload_instances(tmp_path: Path, plugin_factory: Any,
                                                 counter_projection: Any) -> None:
    from cladelog.core.store.base import PreparedEvent

    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    for projections in ((TYPED,), (TYPED, counter_projection)):  # alone, and beside JSON
        with Deployment(cfg, plugins=[plugin_factory(projections=projections)],
                        create=True) as dep:
            if dep.store.head().position < 3:
                dep.append([counted(2, "a"), counted(3, "b")])
                # written by an older plugin version: upcast first, then loaded
                dep.store.append([PreparedEvent("c", "counter.counted", 1, {"value": 7}, {})])
            result = {p.name: p for p in dep.replay(rebuild=True).projections}
            typed = result["counter.typed"]
            assert typed.state == {"events": 3, "total": 12, "labels": ["a", "b", "from-v1"]}
            assert typed.applied == 3
            if "counter.totals" in result:  # the JSON projection still sees JSON
                assert result["counter.totals"].state == typed.state
                assert result["counter.totals"].digest == typed.digest
            # incremental: one more event from the checkpoint
            dep.append([counted(1, "c")])
            again = {p.name: p for p in dep.replay().projections}["counter.typed"]
            assert (again.applied, again.state["total"]) == (1, 13)
            (tmp_path / "x.sqlite3").unlink()


def test_stored_data_that_does_not_fit_the_class_names_position_and_field(
    tmp_path: Path, plugin_factory: Any
) -> None:
    from cladelog.core import InputError
    from cladelog.core.store.base import PreparedEvent

    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(TYPED,))], create=True) as dep:
        dep.append([counted(1)])
        # what a payload class changed without a schema version bump would meet
        dep.store.append([PreparedEvent("c", "counter.counted", 2, {"n": "7", "label": ""}, {})])
        position = dep.store.head().position
        with pytest.raises(InputError, match=rf"position {position} \(counter.counted\): "
                                             r"data.n: .*expected int"):
            dep.replay()
        assert dep.store.load_checkpoint("counter.typed") is None


def test_a_projection_alone_on_its_type_folds_pages_as_the_event_by_event_path_does(
    tmp_path: Path, plugin_factory: Any, counter_projection: Any
) -> None:
    """Alone on its type, a projection folds each page of the read in one loop; beside
    another, event by event: the same states, digests, counts and progress reports, over
    many pages, a run of another type and events of an older schema version among them."""
    from cladelog.core.projections import replay
    from cladelog.core.store.base import PreparedEvent

    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    other = Projection("counter.other", 1, frozenset({"counter.other"}), {"n": 0},
                       lambda s, e: {"n": s["n"] + 1})
    with Deployment(cfg, plugins=[plugin_factory(projections=(TYPED, counter_projection))],
                    create=True) as dep:
        for k in range(0, 10_500, 500):
            dep.append([counted(n % 7, f"l{n % 3}") for n in range(k, k + 500)])
            if k == 5_000:  # an older schema version, upcast by the fold
                dep.store.append([PreparedEvent("c", "counter.counted", 1, {"value": 7}, {})
                                  for _ in range(3)])
        results = {}
        for projections in ((TYPED,), (counter_projection,), (TYPED, counter_projection),
                            (TYPED, other)):
            reports: list[tuple[int, int]] = []
            got = replay(dep.store, dep.registry, projections, rebuild=True, save=False,
                         progress=lambda done, total, to=reports: to.append((done, total)))
            for p in got.projections:
                results.setdefault(p.name, []).append((p.digest, p.applied, p.state))
            results.setdefault("progress", []).append(reports)
        head = dep.store.head().position  # the events above and the plugin's enabling
    typed, totals = results["counter.typed"], results["counter.totals"]
    assert typed[0] == typed[1] == typed[2] and totals[0] == totals[1]
    digest, applied, state = typed[0]
    assert applied == 10_503 and state["total"] == sum(n % 7 for n in range(10_500)) + 21
    assert (digest, state) == (totals[0][0], totals[0][2])
    assert all(r == results["progress"][0] for r in results["progress"])
    assert [done for done, _ in results["progress"][0]] == [5_000, 10_000, head]


def test_the_fold_pauses_the_collector_and_collects_the_young_generation_itself(
    tmp_path: Path, plugin_factory: Any, monkeypatch: Any
) -> None:
    """The collector is paused for the fold and left as it was (on, off, after a failure);
    while it is on, the fold runs young collections itself between pages."""
    import gc

    from cladelog.core import ProjectionError
    from cladelog.core import projections as projections_module

    calls: list[tuple[Any, bool]] = []
    real = gc.collect

    def recorded(generation: int = 2) -> int:
        calls.append((generation, gc.isenabled()))
        return real(generation)

    def fails_late(state: dict[str, Any], event: Any) -> dict[str, Any]:
        if event.data.n == 4_199:
            raise ValueError("late")
        return _typed_count(state, event)

    late = Projection("counter.late", 1, frozenset({"counter.counted"}),
                      {"events": 0, "total": 0, "labels": []}, fails_late, payloads=True)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(TYPED,))], create=True) as dep:
        dep.append([counted(n) for n in range(4_200)])
        monkeypatch.setattr(projections_module.gc, "collect", recorded)
        assert gc.isenabled()
        result = projections_module.replay(dep.store, dep.registry, [TYPED], rebuild=True,
                                           save=False)
        assert result.projections[0].applied == 4_200
        assert gc.isenabled()  # restored
        # 4,200 events come in more than 64 pages: at least one young collection, made
        # while the automatic collector was paused
        assert calls and all(c == (0, False) for c in calls)
        with pytest.raises(ProjectionError, match="late"):
            projections_module.replay(dep.store, dep.registry, [late], rebuild=True,
                                      save=False)
        assert gc.isenabled()  # restored after a failure too
        calls.clear()
        gc.disable()
        try:  # a collector the caller turned off stays off, and is not run
            projections_module.replay(dep.store, dep.registry, [TYPED], rebuild=True,
                                      save=False)
            assert not gc.isenabled() and calls == []
        finally:
            gc.enable()


def test_a_bad_payload_or_a_failing_fold_deep_in_a_page_is_named_by_its_position(
    tmp_path: Path, plugin_factory: Any
) -> None:
    from cladelog.core import InputError, ProjectionError
    from cladelog.core.store.base import PreparedEvent

    def fussy(state: dict[str, Any], event: Any) -> dict[str, Any]:
        if event.data.label == "boom":
            raise KeyError(event.data.label)
        state["events"] += 1
        return state

    broken = Projection("counter.fussy", 1, frozenset({"counter.counted"}), {"events": 0},
                        fussy, payloads=True)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(broken,))], create=True) as dep:
        dep.append([counted(n, "boom" if n == 150 else "") for n in range(300)])
        boom = next(e.position for e in dep.store.read() if e.data.get("label") == "boom")
        with pytest.raises(ProjectionError, match=rf"position {boom}: projection "
                                                  r"counter.fussy failed: KeyError: 'boom'"):
            dep.replay()
    (tmp_path / "x.sqlite3").unlink()
    with Deployment(cfg, plugins=[plugin_factory(projections=(TYPED,))], create=True) as dep:
        dep.append([counted(n) for n in range(200)])
        dep.store.append([PreparedEvent("c", "counter.counted", 2, {"n": 1.5, "label": ""}, {})])
        dep.append([counted(n) for n in range(200)])
        position = dep.store.head().position - 200
        with pytest.raises(InputError, match=rf"position {position} \(counter.counted\): "
                                             r"data.n: .*expected int"):
            dep.replay()


def test_a_checkpoint_edited_outside_the_chain_is_rebuilt_not_trusted(
    deployment: Deployment, sqlite_harness: Any, counter_plugin: Any
) -> None:
    deployment.append([counted(1), counted(2)])
    honest = {p.name: p for p in deployment.replay().projections}["counter.totals"]
    # checkpoints sit beside the log, outside the chain: a hand edit of one
    sqlite_harness.raw_execute(deployment.store, "UPDATE checkpoints SET state = "
                               "CAST('{\"events\":999,\"labels\":[],\"total\":999}' AS BLOB) "
                               "WHERE name = 'counter.totals'")
    assert deployment.store.load_checkpoint("counter.totals").state["total"] == 999
    # the deployment that verified the state holds it: it does not read the checkpoint again
    held = {p.name: p for p in deployment.replay().projections}["counter.totals"]
    assert not held.rebuilt and held.state == honest.state and held.digest == honest.digest
    # whoever loads the checkpoint next (another process) finds the edit and rebuilds
    with Deployment(deployment.config, plugins=[counter_plugin]) as other:
        again = {p.name: p for p in other.replay().projections}["counter.totals"]
    assert again.rebuilt and again.state == honest.state and again.digest == honest.digest
    assert deployment.store.load_checkpoint("counter.totals").state == honest.state


def test_a_projection_that_fails_on_an_event_is_named_with_its_position(
    tmp_path: Path, plugin_factory: Any
) -> None:
    from cladelog.core import ProjectionError

    def fussy(state: dict[str, Any], event: Any) -> dict[str, Any]:
        state[event.data["label"]]  # KeyError for a label it has not seen
        return state

    broken = Projection("counter.fussy", 1, frozenset({"counter.counted"}), {"": 0}, fussy)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(broken,))], create=True) as dep:
        dep.append([counted(1), counted(2, "surprise")])
        with pytest.raises(ProjectionError, match=r"position 3: projection counter.fussy "
                                                  r"failed: KeyError: 'surprise'") as info:
            dep.replay()
        assert (info.value.position, info.value.projection) == (3, "counter.fussy")
        assert dep.store.load_checkpoint("counter.fussy") is None


def test_an_event_from_a_newer_plugin_version_is_named_by_position(
    deployment: Deployment,
) -> None:
    from cladelog.core import InputError
    from cladelog.core.store.base import PreparedEvent

    deployment.append([counted(1)])
    deployment.store.append([PreparedEvent("c", "counter.counted", 3, {"n": 1}, {})])
    position = deployment.store.head().position
    with pytest.raises(InputError, match=rf"event at position {position} \(counter.counted\): "
                                         r"schema_version: .*newer"):
        deployment.replay()


def test_each_replayed_event_has_its_own_meta(tmp_path: Path, plugin_factory: Any) -> None:
    """Events of one batch share their stored meta bytes; replay parses them once, but a
    projection that changes one event's meta must not change another's."""
    def marks(state: dict[str, Any], event: Any) -> dict[str, Any]:
        state["already"].append("seen" in event.meta)  # set by nobody but this fold
        event.meta["seen"] = event.position
        return state

    marking = Projection("counter.marks", 1, frozenset({"counter.counted"}),
                         {"already": []}, marks)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(marking,))], create=True) as dep:
        dep.append([counted(1), counted(2), counted(3)])  # one batch: one meta
        state = {p.name: p.state for p in dep.replay(rebuild=True).projections}
        assert state["counter.marks"]["already"] == [False, False, False]


# -- states held between replays (issue 25) ----------------------------------------------------
def _count_encodings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every canonical encoding of a state: the digest (projections) and the stored
    checkpoint (the SQLite store) both go through ``canonical_bytes``."""
    import cladelog.core.projections as projections
    import cladelog.core.store.sqlite as sqlite_store

    calls = [0]
    for module in (projections, sqlite_store):
        real = module.canonical_bytes

        def counting(value: Any, _real: Any = real) -> bytes:
            calls[0] += 1
            return _real(value)  # type: ignore[no-any-return]

        monkeypatch.setattr(module, "canonical_bytes", counting)
    return calls


def test_a_second_replay_with_nothing_new_encodes_no_state(
    deployment: Deployment, counter_plugin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment.append([counted(n, str(n)) for n in range(50)])
    first = deployment.replay()
    calls = _count_encodings(monkeypatch)
    second = deployment.replay()
    assert calls[0] == 0
    assert [p.digest for p in second.projections] == [p.digest for p in first.projections]
    assert {p.applied for p in second.projections} == {0}
    deployment.states()
    deployment.gate("anything")
    assert calls[0] == 0
    # another deployment (another process) loads the checkpoint and verifies it once
    with Deployment(deployment.config, plugins=[counter_plugin]) as other:
        other.replay()
        verified = calls[0]
        assert verified == len(second.projections)  # one digest per projection, no save
        other.replay()
        other.states()
        assert calls[0] == verified


def test_held_states_follow_new_events_as_a_rebuild_does(
    deployment: Deployment, counter_plugin: Any
) -> None:
    want = {"events": 0, "total": 0, "labels": []}
    for step in range(1, 6):
        deployment.append([counted(step, f"s{step}")])
        want["events"] += 1
        want["total"] += step
        want["labels"].append(f"s{step}")  # type: ignore[attr-defined]
        if step % 2:
            assert deployment.state("counter.totals") == want
        else:
            result = {p.name: p for p in deployment.replay().projections}["counter.totals"]
            assert result.applied in (1, 2) and result.digest == expected_digest(want)
    assert deployment.states()["counter.totals"] == want
    # the working copies were saved on close: a new deployment resumes from position 6
    position = deployment.store.head().position
    deployment.close()
    with Deployment(deployment.config, plugins=[counter_plugin]) as other:
        result = {p.name: p for p in other.replay().projections}["counter.totals"]
        assert (result.applied, result.rebuilt, result.position) == (0, False, position)
        assert result.digest == expected_digest(want)


def test_a_failed_replay_forgets_the_held_states(
    tmp_path: Path, plugin_factory: Any
) -> None:
    from cladelog.core import ProjectionError

    def picky(state: dict[str, Any], event: Any) -> dict[str, Any]:
        state["seen"] += 1  # changed in place before it fails
        if event.data["label"] == "bad":
            raise ValueError("bad label")
        return state

    proj = Projection("counter.picky", 1, frozenset({"counter.counted"}), {"seen": 0}, picky)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin_factory(projections=(proj,))], create=True) as dep:
        dep.append([counted(1)])
        assert dep.state("counter.picky") == {"seen": 1}
        dep.append([counted(2, "bad")])
        for _ in range(2):  # the half-folded state is not kept: the same error each time
            with pytest.raises(ProjectionError):
                dep.state("counter.picky")


def test_gate_all_answers_as_gate_does_for_each_candidate(
    tmp_path: Path, plugin_factory: Any, counter_projection: Any
) -> None:
    def vote(candidate: str, states: Any) -> tuple[str, str]:
        total = states["counter.totals"]["total"]
        return ("block", f"{candidate} over {total}") if candidate.startswith("x") \
            else ("allow", f"{candidate} at {total}")

    plugin = plugin_factory(projections=(counter_projection,), vote=vote)
    cfg = DeploymentConfig.from_dict({"store": "x.sqlite3"}, path=tmp_path / "c.toml")
    with Deployment(cfg, plugins=[plugin], create=True) as dep:
        dep.append([counted(4), counted(5)])
        names = ["a", "x1", "b", "x2"]
        together = dep.gate_all(names)
        assert [r.to_json() for r in together] == [dep.gate(n).to_json() for n in names]
        assert [r.allowed for r in together] == [True, False, True, False]
        assert together[1].votes[0].reason == "x1 over 9"
