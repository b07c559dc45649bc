"""One small scenario per rule of SPEC §1.1-§1.13 (expected facts derived by hand)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cladelog.graph_engine import Engine, GraphEngineError, ProviderCall, TemplateError
from ge_helpers import Calls, concept, facts, free, make, tree


def test_push_appends_and_objects_replace_whole() -> None:
    eng = make(tree(), free({"_id": "o", "log": "x", "d": {"a": 1, "b": 2}}))
    eng.mutate({"$$_id": "o", "log": {"__push": 1}, "d": {"c": 3}})
    eng.mutate({"$$_id": "o", "log": {"__push": 1}})
    # "x" is not an array so it counts as []; duplicates are kept; "d" is replaced, not merged
    assert facts(eng, "o") == {"_id": "o", "log": [1, 1], "d": {"c": 3}}


def test_per_key_index_and_select() -> None:
    eng = make(tree(), free({"_id": "a", "x": 1}, {"_id": "b", "x": None, "y": 1}, {"_id": "c"}))
    assert eng.select(["x"]) == ["a", "b"]  # indexed on first write, even when null
    assert eng.select(["x"], ["y"]) == ["a"]
    assert eng.select([], ["x"]) == ["c"]


def test_segment_links_move_with_origin_and_target() -> None:
    seed = {"nodes": [{"_id": "n1"}, {"_id": "n2"}],
            "segments": [{"_id": "s", "originNode": "n1", "targetNode": "n2"}]}
    eng = make(tree(), seed)
    assert eng.node_links() == {"n1": {"in": [], "out": ["s"]}, "n2": {"in": ["s"], "out": []}}
    eng.mutate({"$$_id": "s", "originNode": "n2", "targetNode": "ghost"})
    assert eng.node_links() == {"n1": {"in": [], "out": []}, "n2": {"in": [], "out": ["s"]}}
    assert any("ghost" in w for w in eng.warnings)


def test_require_satisfied_by_falsy_values_but_not_null() -> None:
    t = tree(concept("A", require=["v"]))
    eng = make(t, free({"_id": "f", "v": False}, {"_id": "z", "v": 0}, {"_id": "e", "v": ""},
                       {"_id": "n", "v": None}, {"_id": "m"}))
    assert eng.cast_state() == {"f": ["A"], "z": ["A"], "e": ["A"]}


def test_cross_object_require_waits_for_the_other_object() -> None:
    t = tree(concept("A", require=["owner:ready"]))
    eng = make(t, free({"_id": "o", "owner": "p"}, {"_id": "p"}))
    assert eng.cast_state() == {}
    eng.mutate({"$$_id": "p", "ready": 1})  # o follows p.ready, so it is re-tested
    eng.settle()
    assert eng.cast_state() == {"o": ["A"]}


def test_children_open_only_under_a_cast_parent() -> None:
    t = tree(concept("P", require=["p"], children=[concept("C", require=["c"])]))
    eng = make(t, free({"_id": "x", "c": 1}, {"_id": "y", "p": 1, "c": 1}))
    assert eng.cast_state() == {"y": ["C", "P"]}


def test_assert_is_a_one_time_gate_and_never_retracts() -> None:
    t = tree(concept("A", require=["v"], assert_=None, **{"assert": ["$v > 1"]}))
    eng = make(t, free({"_id": "o", "v": 2}))
    eng.mutate({"$$_id": "o", "v": 0})
    eng.settle()
    assert facts(eng, "o")["A"] is True  # cast-once: a false assert does not retract


def test_require_disappearing_does_not_retract() -> None:
    eng = make(tree(concept("A", require=["v"])), free({"_id": "o", "v": 1}))
    eng.mutate({"$$_id": "o", "v": None})
    eng.settle()
    assert eng.cast_state() == {"o": ["A"]}


def test_ensure_retracts_recasts_and_cascades() -> None:
    calls = Calls()
    calls.emit("P::a", A=True, data=1)
    t = tree(concept("A", require=["v"], ensure=["$v > 1"], provider="P::a",
                     children=[concept("B")]))
    eng = make(t, free({"_id": "o", "v": 2}), calls)
    assert facts(eng, "o") == {"_id": "o", "v": 2, "A": True, "B": True, "data": 1}
    eng.mutate({"$$_id": "o", "v": 0})
    eng.settle()
    # flags removed silently, the child with it; provider data stays
    assert facts(eng, "o") == {"_id": "o", "v": 0, "data": 1}
    assert eng.cast_state() == {}
    eng.mutate({"$$_id": "o", "v": 5})
    eng.settle()
    assert eng.cast_state() == {"o": ["A", "B"]}
    assert calls.count == {"P::a": 2}  # re-casting re-runs the provider


def test_follow_reapplies_even_when_cast() -> None:
    calls = Calls()
    calls.add("P::f", lambda c: {"$$_id": c.object_id, "F": True,
                                 "seen": {"__push": c.facts["src"]}})
    eng = make(tree(concept("F", require=["src"], follow=["src"], provider="P::f")),
               free({"_id": "o", "src": 1}), calls)
    eng.mutate({"$$_id": "o", "src": 2})
    eng.settle()
    assert facts(eng, "o")["seen"] == [1, 2]


def test_on_cast_runs_on_each_not_cast_to_cast_transition() -> None:
    calls = Calls()
    calls.add("P::on", lambda c: {"$$_id": c.object_id, "casts": {"__push": 1}})
    t = tree(concept("A", require=["v"], ensure=["$v > 0"], onCast="P::on"))
    eng = make(t, free({"_id": "o", "v": 1}), calls)
    eng.mutate({"$$_id": "o", "v": 0})
    eng.settle()
    eng.mutate({"$$_id": "o", "v": 3})
    eng.settle()
    assert facts(eng, "o")["casts"] == [1, 1]


def test_cleaner_runs_on_uncast() -> None:
    calls = Calls()
    calls.emit("P::clean", cleaned=True)
    eng = make(tree(concept("A", require=["v"], cleaner="P::clean")),
               free({"_id": "o", "v": 1}), calls)
    eng.uncast("o", "A")
    eng.settle()
    # the null write uncasts (cleaner runs), then A re-casts at once as it is still applicable
    assert facts(eng, "o") == {"_id": "o", "v": 1, "A": True, "cleaned": True}


def test_auto_cast_false_only_casts_manually_but_children_open() -> None:
    t = tree(concept("M", autoCast=False, children=[concept("K")]))
    eng = make(t, free({"_id": "o"}))
    assert eng.cast_state() == {}
    eng.cast("o", "M")
    eng.settle()
    assert eng.cast_state() == {"o": ["K", "M"]}


def test_auto_recast_reapplies_a_present_flag() -> None:
    calls = Calls()
    calls.emit("P::r", R=True, refreshed=True)
    eng = make(tree(concept("R", autoReCast=True, provider="P::r")),
               free({"_id": "o", "R": True}), calls)
    assert facts(eng, "o")["refreshed"] is True
    assert calls.count == {"P::r": 1}


def test_default_value_and_falsy_default_and_enum() -> None:
    t = tree(concept("D", defaultValue="yes"), concept("Z", defaultValue=0),
             concept("E", type="enum", children=[concept("E1"), concept("E2")]))
    eng = make(t, free({"_id": "o"}))
    got = facts(eng, "o")
    assert got["D"] == "yes"
    assert got["Z"] is True  # Q5: a falsy defaultValue is written as true
    assert got["E"] == ["E1", "E2"]
    assert got["E1"] is True and got["E2"] is True


def test_enum_descends_only_into_listed_children() -> None:
    t = tree(concept("E", type="enum", children=[concept("E1"), concept("E2")]))
    eng = make(t, free({"_id": "o", "E": ["E2"]}))
    assert facts(eng, "o") == {"_id": "o", "E": ["E2"], "E2": True}


def test_zero_flag_does_not_count_as_cast_q5() -> None:
    calls = Calls()
    calls.emit("P::z", Z=0)
    eng = make(tree(concept("Z", provider="P::z")), free({"_id": "o"}), calls, apply_cap=3)
    # the flag 0 is not "present": Z stays open and re-applies until the cap
    assert calls.count == {"P::z": 3}
    assert facts(eng, "o")["divergent"] == [
        {"concept": "Z", "applies": 4, "cap": 3, "reason": "apply-cap"}]


def test_async_providers_mix_with_sync() -> None:
    calls = Calls()

    async def slow(call: ProviderCall) -> Any:
        await asyncio.sleep(0)
        return {"$$_id": call.object_id, "A": True, "a": 1}

    calls.add("P::a", slow)
    calls.add("P::b", lambda c: {"$$_id": c.object_id, "B": True, "b": c.facts["a"] + 1})
    t = tree(concept("A", provider="P::a"), concept("B", require=["A"], provider="P::b"))
    eng = make(t, free({"_id": "o"}), calls)
    assert facts(eng, "o") == {"_id": "o", "A": True, "a": 1, "B": True, "b": 2}


def test_asettle_inside_a_loop() -> None:
    calls = Calls()

    async def slow(call: ProviderCall) -> Any:
        return {"$$_id": call.object_id, "A": True}

    calls.add("P::a", slow)
    eng = Engine(tree(concept("A", provider="P::a")), providers=calls.providers,
                 seed=free({"_id": "o"}))

    async def main() -> None:
        with pytest.raises(GraphEngineError, match="use asettle"):
            eng.settle()
        await eng.asettle()

    asyncio.run(main())
    assert eng.cast_state() == {"o": ["A"]}


def test_provider_exception_becomes_an_error_fact_not_a_crash() -> None:
    calls = Calls()

    def boom(call: ProviderCall) -> Any:
        raise RuntimeError("no luck")

    calls.add("P::x", boom)
    records: list[tuple[str, dict[str, Any]]] = []
    eng = make(tree(concept("X", provider="P::x")), free({"_id": "o"}), calls, records)
    assert facts(eng, "o")["divergent"] == [{
        "concept": "X", "reason": "provider-error", "role": "provider", "provider": "P::x",
        "message": "RuntimeError: no luck"}]
    assert eng.cast_state() == {}
    assert calls.count == {"P::x": 1}  # the error record makes X non-applicable
    assert [d["message"] for k, d in records if k == "provider_error"] == [
        "RuntimeError: no luck"]


@pytest.mark.parametrize("result", [42, "text", {"$$_id": "o", "$$ext": "db:1"}])
def test_bad_provider_results_are_recorded(result: Any) -> None:
    calls = Calls()
    calls.add("P::x", lambda c: result)
    eng = make(tree(concept("X", provider="P::x")), free({"_id": "o"}), calls)
    assert facts(eng, "o")["divergent"][0]["reason"] == "provider-error"


def test_host_cast_ignores_applicability_and_autokill_blocks_it() -> None:
    eng = make(tree(concept("A", require=["never"])), free({"_id": "o"}, {"_id": "k",
                                                                        "_autokill": True}))
    eng.cast("o", "A")
    eng.cast("k", "A")
    eng.settle()
    assert eng.cast_state() == {"o": ["A"]}
    with pytest.raises(GraphEngineError, match=r"cast\.concept: unknown concept 'Nope'"):
        eng.cast("o", "Nope")


def test_apply_cap_marks_divergent_permanently() -> None:
    calls = Calls()
    calls.emit("P::n", tries={"__push": 1})
    eng = make(tree(concept("N", provider="P::n")), free({"_id": "o"}), calls, apply_cap=2)
    eng.mutate({"$$_id": "o", "poke": 1})
    eng.settle()
    assert calls.count == {"P::n": 2}  # still divergent after the next settle
    assert facts(eng, "o")["tries"] == [1, 1]


def test_per_settle_cap_is_reported() -> None:
    calls = Calls()
    calls.add("P::spawn", lambda c: {"_id": "kid", "child": True})
    eng = Engine(tree(concept("S", provider="P::spawn")), providers=calls.providers,
                 seed=free({"_id": "o"}), config=_cfg(max_created_per_settle=5))
    report = eng.settle()
    assert report.capped == "max_created_per_settle"
    assert report.created == 6  # the cap is checked after the mutation that crossed it


def _cfg(**kw: Any) -> Any:
    from cladelog.graph_engine import EngineConfig

    return EngineConfig(**kw)


def test_host_mutation_errors_raise() -> None:
    eng = make(tree(), free({"_id": "o"}))
    with pytest.raises(TemplateError, match=r"\$\$x: external references"):
        eng.mutate({"$$_id": "o", "$$x": "db:1"})
    with pytest.raises(GraphEngineError, match=r"mutate\.target: unknown object"):
        eng.mutate({"v": 1}, "ghost")


def test_ingest_applies_one_mutation() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    eng = make(tree(), free({"_id": "a"}), records=records)
    eng.ingest({"a": {"x": 1}, "b": {"y": 2}})
    eng.ingest([{"id": "a", "fields": {"z": 3}}])
    assert facts(eng, "a") == {"_id": "a", "x": 1, "z": 3}
    assert facts(eng, "b") == {"_id": "b", "y": 2}
    assert sum(1 for k, _ in records if k == "mutation_applied") == 2


def test_add_concept_opens_on_live_objects() -> None:
    eng = make(tree(concept("P", require=["p"])), free({"_id": "x", "p": 1}, {"_id": "y"}))
    eng.add_concept(None, {"_id": "R", "require": ["p"]})
    eng.add_concept("P", {"_id": "C"})
    eng.settle()
    assert eng.cast_state() == {"x": ["C", "P", "R"]}
    exported = eng.export_tree()["childConcepts"]
    assert exported["P"]["childConcepts"]["C"] == {"_id": "C", "_name": "C"}
    with pytest.raises(GraphEngineError, match="already exists"):
        eng.add_concept(None, {"_id": "R"})


def test_patch_concept_loosens_and_tightens() -> None:
    t = tree(concept("A", require=["v"], assert_=None, **{"assert": ["$v > 5"]},
                     children=[concept("B")]))
    eng = make(t, free({"_id": "o", "v": 3}, {"_id": "p", "v": 9}))
    assert eng.cast_state() == {"p": ["A", "B"]}
    eng.patch_concept("A", {"assert": ["$v > 1"]})
    eng.settle()
    assert eng.cast_state() == {"o": ["A", "B"], "p": ["A", "B"]}
    eng.patch_concept("A", {"assert": ["$v > 5"]})
    eng.settle()
    assert eng.cast_state() == {"p": ["A", "B"]}  # o un-cast, cascading to B
    assert eng.export_tree()["childConcepts"]["A"]["assert"] == ["$v > 5"]


def test_delete_concept_uncasts_permanently_and_dependents_stay() -> None:
    t = tree(concept("A", children=[concept("B")]), concept("D", require=["A"]))
    eng = make(t, free({"_id": "o"}))
    eng.delete_concept("A")
    eng.settle()
    assert eng.cast_state() == {"o": ["D"]}
    assert "A" not in eng.export_tree()["childConcepts"]
    assert facts(eng, "o") == {"_id": "o", "D": True}


def test_structural_ops_during_a_pass_are_deferred() -> None:
    calls = Calls()

    def adder(call: ProviderCall) -> Any:
        call.engine.add_concept(None, {"_id": "Late"})
        assert "Late" not in call.engine.tree.concepts  # deferred to the boundary
        return {"$$_id": call.object_id, "A": True}

    calls.add("P::add", adder)
    eng = make(tree(concept("A", provider="P::add")), free({"_id": "o"}), calls)
    assert eng.cast_state() == {"o": ["A", "Late"]}


def test_queries() -> None:
    eng = make(tree(), free({"_id": "a", "n": 3}, {"_id": "b", "n": 1}))
    assert eng.query("$n > 2") == ["a"]
    assert eng.query("") == ["a", "b"]
    assert eng.get("nope") is None
    assert eng.get_ref("n", "a") == 3
    assert eng.evaluate("$n * 2", "b") == 2


def test_waiting_index_follows_tree_edits() -> None:
    # A waits for x (missing). A patch makes its require y; o is not indexed under y yet, so
    # only o's next discovery re-tests A: when y arrives, A must cast although x is still
    # missing (the remembered wait belonged to the old compiled concept)
    calls = Calls()
    calls.emit("P::a", A=True)
    eng = make(tree(concept("A", require=["x"], provider="P::a")), free({"_id": "o"}), calls)
    eng.patch_concept("A", {"require": ["y"]})
    eng.settle()
    assert calls.count == {}
    eng.mutate({"$$_id": "o", "y": 1})
    eng.settle()
    assert calls.count == {"P::a": 1} and facts(eng, "o")["A"] is True
    # and a wait ends when the fact arrives
    eng.add_concept(None, {"_id": "B", "require": ["z"]})
    eng.settle()
    assert "B" not in facts(eng, "o")
    eng.mutate({"$$_id": "o", "z": 0})  # 0 satisfies a require (SPEC §1.4)
    eng.settle()
    assert facts(eng, "o")["B"] is True


def test_a_waiting_concept_looks_again_when_its_fact_or_flag_changes() -> None:
    # discovery passes over a concept waiting for a local fact until that fact or the
    # concept's flag is written (or deleted), or its watches are removed
    calls = Calls()
    calls.emit("P::a", A=True)
    eng = make(tree(concept("A", require=["x", "y"], provider="P::a"),
                    concept("W", require=["w"], ensure=["$v > 0"])),
               free({"_id": "o", "v": 1}), calls)
    eng.mutate({"$$_id": "o", "x": None})  # written, still unsatisfied: still waiting
    eng.settle()
    eng.mutate({"$$_id": "o", "x": 1})  # now it waits for y
    eng.settle()
    assert calls.count == {} and sorted(eng.open_concepts("o")) == ["A", "W"]
    eng.mutate({"$$_id": "o", "A": "set by the host"})  # its flag: cast without applying
    eng.settle()
    assert calls.count == {} and eng.cast_state() == {"o": ["A"]}
    eng.mutate({"$$_id": "o", "A": None})  # uncast: open again, waiting for y
    eng.settle()
    eng.mutate({"$$_id": "o", "y": 2})
    eng.settle()
    assert calls.count == {"P::a": 1} and facts(eng, "o")["A"] is True
    # W waits for w with its ensure watch installed; a patch rebuilds the tree and watches
    eng.patch_concept("W", {"ensure": ["$v > 1"]})
    eng.mutate({"$$_id": "o", "w": 1})
    eng.settle()
    assert "W" not in facts(eng, "o")
    eng.mutate({"$$_id": "o", "v": 2})  # the new watch fires
    eng.settle()
    assert facts(eng, "o")["W"] is True


def test_apply_counters_reset_at_each_settle() -> None:
    # docs/semantics.md: each settle resets the per-(object, concept) apply counters, so a
    # follow re-applied once per settle never reaches the cap however many settles there are
    calls = Calls()
    calls.add("P::f", lambda c: {"$$_id": c.object_id, "F": True,
                                 "seen": {"__push": c.facts["src"]}})
    eng = make(tree(concept("F", require=["src"], follow=["src"], provider="P::f")),
               free({"_id": "o", "src": 0}), calls, apply_cap=2)
    for src in range(1, 5):
        eng.mutate({"$$_id": "o", "src": src})
        eng.settle()
    assert calls.count == {"P::f": 5}  # 5 applies in all, more than the cap of 2
    assert facts(eng, "o")["seen"] == [0, 1, 2, 3, 4]
    assert "divergent" not in facts(eng, "o")

    # control: the same follow re-applied 3 times within one settle does hit the cap
    calls = Calls()
    calls.add("P::f", lambda c: {"$$_id": c.object_id, "F": True,
                                 "src": min(c.facts["src"] + 1, 9)})
    eng = make(tree(concept("F", require=["src"], follow=["src"], provider="P::f")),
               free({"_id": "o", "src": 0}), calls, apply_cap=2)
    assert calls.count == {"P::f": 2}
    assert facts(eng, "o")["divergent"] == [
        {"concept": "F", "applies": 3, "cap": 2, "reason": "apply-cap"}]
