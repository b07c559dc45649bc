"""The scenario runner of SPEC §2: declarative providers, substitution, steps, output."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.graph_engine import Engine, ScenarioError, generate_workload, run_scenario
from ge_helpers import concept, tree


def scenario(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "t", "conceptTree": tree(), "seed": {}, "providers": {},
                            "steps": []}
    base.update(kw)
    return base


def test_substitution_keeps_types_and_concatenates() -> None:
    out = run_scenario(scenario(
        conceptTree=tree(concept("S", require=["n"], provider="P::s")),
        seed={"freeNodes": [{"_id": "o", "n": 2, "tag": None, "d": {"k": 1}}]},
        providers={"P::s": {"kind": "emit", "emit": {
            "$_id": "_parent", "S": True,
            "num": "${=$n * 2}", "txt": "n=${n};", "who": "${@id}/${@concept}",
            "nul": "[${tag}]", "obj": "${d}!", "same": "${d}", "miss": "${nope}",
            "list": ["${n}", "${nope}"]}}},
    ))
    got = out["final"]["o"]
    assert got["num"] == 4 and got["txt"] == "n=2;" and got["who"] == "o/S"
    assert got["nul"] == "[]" and got["obj"] == '{"k":1}!' and got["same"] == {"k": 1}
    assert "miss" not in got  # a lone undefined placeholder drops the key
    assert got["list"] == [2, None]


def test_cases_and_none_providers() -> None:
    out = run_scenario(scenario(
        conceptTree=tree(concept("C", require=["n"], provider="P::c"),
                         concept("N", require=["n"], provider="P::n")),
        seed={"freeNodes": [{"_id": "a", "n": 1}, {"_id": "b", "n": 9}]},
        providers={
            "P::c": {"kind": "cases", "cases": [
                {"when": "$n > 5", "emit": {"$_id": "_parent", "C": "big"}}],
                "else": {"$_id": "_parent", "C": "small"}},
            "P::n": {"kind": "none"}},
        config={"applyCap": 2},
    ))
    assert out["final"]["a"]["C"] == "small" and out["final"]["b"]["C"] == "big"
    # N writes nothing: it re-applies until the cap of 2 on each object
    assert out["providerCalls"] == {"P::c": 2, "P::n": 4}


def test_steps_produce_one_state_each() -> None:
    out = run_scenario(scenario(
        conceptTree=tree(concept("A", require=["v"])),
        seed={"freeNodes": [{"_id": "o"}]},
        steps=[{"op": "mutate", "template": {"$$_id": "o", "v": 1}},
               {"op": "addConcept", "parent": None, "schema": {"_id": "B", "require": ["A"]}},
               {"op": "patchConcept", "concept": "B", "updates": {"defaultValue": "bee"}},
               {"op": "unCastConcept", "target": "o", "concept": "B"},
               {"op": "deleteConcept", "concept": "A"},
               {"op": "castConcept", "target": "o", "concept": "B"},
               {"op": "reload"},
               {"op": "settle"}],
    ))
    assert [s["after"] for s in out["states"]] == [
        "boot", "step1:mutate", "step2:addConcept", "step3:patchConcept",
        "step4:unCastConcept", "step5:deleteConcept", "step6:castConcept", "step7:reload",
        "step8:settle"]
    objs = [s["objects"]["o"] for s in out["states"]]
    assert objs[1] == {"A": True, "_id": "o", "v": 1}
    assert objs[2]["B"] is True
    assert objs[4]["B"] == "bee"  # un-cast, then re-cast at once with the patched default
    assert objs[5] == {"B": "bee", "_id": "o", "v": 1}  # A deleted, B stays cast
    assert out["final"]["o"] == objs[5] == objs[8]
    assert "nodeLinks" not in out


def test_reload_sessions_replay() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    out = run_scenario(scenario(conceptTree=tree(concept("A", require=["v"])),
                                seed={"freeNodes": [{"_id": "o", "v": 1}]},
                                steps=[{"op": "reload"}]),
                       sink=lambda k, d: records.append((k, d)))
    replayed = Engine.replay(records)
    assert {k: {x: y for x, y in f.items() if x != "_rev"}
            for k, f in replayed.facts().items()} == out["final"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"providers": {"P::x": {"kind": "loop"}}}, "authoring package"),
     ({"providers": {"P::x": {"kind": "zap"}}}, "unknown provider kind"),
     ({"providers": {"P::x": {"kind": "llm", "replies": []}}}, r"P::x\.replies"),
     ({"steps": [{"op": "fly"}]}, r"steps\[0\]\.op"),
     ({"steps": [{"op": "mutate"}]}, r"steps\[0\]\.template: required")],
)
def test_bad_scenarios(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        run_scenario(scenario(**bad))


def test_generated_workload_cast_counts() -> None:
    # SPEC §3 at N=2000: G01-G03 2000, G04-G07 1600, G08-G15 1200, G16-G20 800. The counts
    # scale with N in steps of 1/5 (ensure on s(k-1) % 5 at k = 4, 8, 12, 16, 20), so at
    # N = 200 they are 200, 160, 120 and 80.
    t, seed, providers = generate_workload(200, 20)
    eng = Engine(t, providers=providers, seed=seed)
    report = eng.settle()
    per: dict[str, int] = {}
    for cids in eng.cast_state().values():
        for cid in cids:
            per[cid] = per.get(cid, 0) + 1
    expected = {f"G{k:02d}": 200 if k <= 3 else 160 if k <= 7 else 120 if k <= 15 else 80
                for k in range(1, 21)}
    assert per == expected
    assert report.passes == 17  # the depth SPEC §1.11 reports for this workload


@pytest.mark.parametrize("gen", [{"entities": 10**9}, {"concepts": 0}, {"concepts": 100},
                                 {"entities": "5"}, {"seedMod": 0}])
def test_generate_bounds(gen: dict[str, Any]) -> None:
    with pytest.raises(ScenarioError, match="generate"):
        run_scenario({"generate": gen})


@pytest.mark.parametrize(
    ("bad", "message"),
    [  # each is refused before the engine boots, naming the field (SPEC §2 formats)
        ({"config": {"applyCapp": 3}},
         r"^scenario\.config\.applyCapp: unknown key \(allowed: applyCap, "),
        ({"providers": {"P::x": {"kind": "emit"}}}, r"^providers\.P::x\.emit: required"),
        ({"providers": {"P::x": {"kind": "emit", "emit": {}, "async": "yes"}}},
         r"^providers\.P::x\.async: must be true or false, got 'yes'"),
        ({"providers": {"P::x": {"kind": "none", "cache": 1}}},
         r"^providers\.P::x\.cache: must be true or false"),
        ({"providers": {"P::x": {"kind": "emit", "emit": {"a": "${=1 +}"}}}},
         r"^providers\.P::x\.emit\.a: unexpected end of expression"),
        ({"providers": {"P::x": {"kind": "emit", "emit": [{"a": ["x ${=$v +} y"]}]}}},
         r"^providers\.P::x\.emit\[0\]\.a\[0\]: unexpected end of expression"),
        ({"providers": {"P::x": {"kind": "cases", "cases": [
            {"when": "true", "emit": {"a": "${=)}"}}]}}},
         r"^providers\.P::x\.cases\[0\]\.emit\.a: "),
        ({"providers": {"P::x": {"kind": "cases", "cases": [], "else": {"a": "${=(}"}}}},
         r"^providers\.P::x\.else\.a: "),
        ({"providers": {"P::x": {"kind": "emit", "emit": {}, "emitt": 1}}},
         r"^providers\.P::x\.emitt: unknown key for kind 'emit'"),
        ({"providers": {"Px": {"kind": "none"}}}, r"^providers\.Px: a provider is named"),
        ({"providers": {"bad name::f": {"kind": "none"}}}, r"^providers\.bad name::f: "),
        ({"steps": [{"op": "settle", "extra": 1}]},
         r"^scenario\.steps\[0\]\.extra: unknown key for op 'settle'"),
        ({"steps": [{"op": "mutate", "template": {}, "targte": "o"}]},
         r"^scenario\.steps\[0\]\.targte: unknown key"),
        ({"bogus": 1}, r"^scenario\.bogus: unknown key"),
        ({"seed": {"freeNode": []}}, r"^scenario\.seed\.freeNode: unknown key"),
    ],
)
def test_malformed_scenarios_are_refused_before_anything_runs(
        bad: dict[str, Any], message: str) -> None:
    records: list[tuple[str, Any]] = []
    with pytest.raises(ScenarioError, match=message):
        run_scenario(scenario(**bad), sink=lambda k, d: records.append((k, d)))
    assert records == []  # nothing booted, nothing recorded


def test_good_provider_specs_still_load() -> None:
    out = run_scenario(scenario(
        conceptTree=tree(concept("A", require=["v"], provider="P::a")),
        seed={"freeNodes": [{"_id": "o", "v": 2}]},
        providers={"P::a": {"kind": "emit", "async": False, "cache": False,
                            "emit": {"$_id": "_parent", "A": True, "w": "${=$v * 2}",
                                     "s": "${v}-${@id}", "t": "${ not an expression }"}}},
        steps=[{"op": "mutate", "template": {"$$_id": "o", "x": 1}, "target": "o"},
               {"op": "addConcept", "parent": None, "schema": {"_id": "B"}}]))
    assert out["final"]["o"]["w"] == 4 and out["final"]["o"]["s"] == "2-o"


@pytest.mark.parametrize(
    ("step", "message"),
    [({"op": "castConcept", "target": "nope", "concept": "A"},
      "steps[1].cast.target: unknown object 'nope'"),
     ({"op": "mutate", "template": {"$$_id": "o", "v": 1}, "target": "ghost"},
      "steps[1].mutate.target: unknown object 'ghost'"),
     ({"op": "patchConcept", "concept": "A", "updates": {"ensure": ["$v >"]}},
      "steps[1] (patchConcept): tree.A.assert/ensure: unexpected end of expression at 4 in "
      "'$v >'")],
)
def test_a_step_refused_mid_run_is_named_and_recorded(step: dict[str, Any],
                                                      message: str) -> None:
    records: list[tuple[str, Any]] = []
    data = scenario(conceptTree=tree(concept("A", require=["v"])),
                    seed={"freeNodes": [{"_id": "o", "v": 1}]},
                    steps=[{"op": "mutate", "template": {"$$_id": "o", "v": 2}}, step])
    with pytest.raises(ScenarioError) as info:
        run_scenario(data, sink=lambda k, d: records.append((k, d)))
    assert str(info.value) == message
    # what ran is recorded (boot, step 0), then the failure, and nothing after it
    kinds = [k for k, _ in records]
    assert kinds.count("settled") == 2 and kinds[-1] == "run_failed"
    assert records[-1][1] == {"step": 1, "op": step["op"], "message": message}
    replayed = Engine.replay(records)
    assert replayed.run_failed == records[-1][1]
    assert replayed.digest() == records[-2][1]["digest"]
