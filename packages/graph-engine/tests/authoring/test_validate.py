"""The ref helpers and the four validation passes (SPEC §1.14 validate)."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.graph_engine.authoring import AuthoringError, RefKey
from cladelog.graph_engine.authoring.validate import (
    ConceptValidationError,
    each_concept,
    ref_key_of,
    refs_of,
    template_keys,
    validate_concept_tree,
    validate_or_throw,
)


def c(cid: str, **keys: Any) -> dict[str, Any]:
    children = keys.pop("children", None)
    out: dict[str, Any] = {"_id": cid, "_name": cid, **keys}
    if children:
        out["childConcepts"] = {ch["_id"]: ch for ch in children}
    return out


def tree(*concepts: dict[str, Any]) -> dict[str, Any]:
    return {"childConcepts": {x["_id"]: x for x in concepts}}


def kinds(findings: Any) -> list[tuple[str, str]]:
    return [(f.concept, f.kind) for f in findings]


def test_refs_of_and_ref_key_of() -> None:
    assert refs_of(["a", "b:c", 3, None], False) == ["a", "b:c"]
    assert refs_of("only", False) == ["only"]
    assert refs_of(["$x > 1 && $$clock:tick.length == 'a $b'", 7], True) == [
        "x", "$clock:tick.length"]
    assert refs_of(None, True) == []
    assert ref_key_of("$$budget:spent.length") == RefKey("spent", True)
    assert ref_key_of("size") == RefKey("size", False)
    assert ref_key_of("a:b:c.d.e") == RefKey("c", True)


def test_template_keys() -> None:
    tpl = [{"$_id": "_parent", "a": 1, "$b": 2, "_incoming": [{"c": 1, "_id": "x"}],
            "originNode": "n", "a2": {"__push": 1}}, "skip", {"a": 3, "_name": "n"}]
    assert template_keys(tpl) == ["a", "b", "c", "a2", "a"]
    assert template_keys({"k": 1}) == ["k"]
    assert template_keys(None) == []


def test_each_concept_pre_order() -> None:
    t = tree(c("A", children=[c("A1"), {"_id": "A2"}]), c("B"))
    seen: list[tuple[str, str | None]] = []
    each_concept(t, lambda concept, key: seen.append((concept.get("_id"), key)))
    assert seen == [("A", "A"), ("A1", "A1"), ("A2", "A2"), ("B", "B")]
    named_root = {"_name": "root", "childConcepts": {"X": c("X")}}
    seen.clear()
    each_concept(named_root, lambda concept, key: seen.append((concept.get("_name"), key)))
    assert seen == [("root", None), ("X", "X")]


def test_per_concept_checks() -> None:
    t = tree(
        c("Classify", provider="LLM::complete", prompt={"facts": {"severity": {"enum": ["low"]}}}),
        c("UseProse", require=["ClassifyProse"], ensure=["$ClassifyCanonMiss == null"]),
        c("Agg", require=["expandedInto"], ensure=["$answeredBy.length > 0"]),
        c("Bad", ensure=["$x.constructor"]),
        c("Broken", **{"assert": "$x +"}),
        c("Parent", children=[{"_id": "Nameless"}]),
        c("Other", provider=["X::y", 1]),
    )
    result = validate_concept_tree(t, palette=["LLM::complete"])
    assert kinds(result.errors) == [
        ("UseProse", "prose-dependency"), ("UseProse", "prose-dependency"),
        ("Bad", "blocked-prop"), ("Broken", "unparseable"), ("Nameless", "no-name")]
    assert kinds(result.warnings) == [
        ("Agg", "aggregating-dependency"), ("Other", "provider-not-in-palette")]
    assert result.warnings[0].ref == "expandedInto"
    assert result.errors[3].ref == "$x +"  # unparseable: the expression as written
    strict = validate_concept_tree(t, palette=["LLM::complete"], strict=True)
    assert ("Other", "provider-not-in-palette") in kinds(strict.errors)
    with pytest.raises(ConceptValidationError, match=r"^UseProse: prose-dependency: "):
        validate_or_throw(t)
    assert validate_or_throw(tree(c("Fine", require=["Segment"]))).ok


def test_unknown_refs_and_marker_names() -> None:
    t = tree(c("A", require=["seen", "other:far"], ensure=["$B && $mystery > 1"]),
             c("B", applyMutations={"made": 1}),
             c("C", require=["made"]),
             c("Node", require=["x"]))
    result = validate_concept_tree(t, known_facts=["seen", "x"])
    assert kinds(result.warnings) == [("Node", "engine-marker-name"), ("A", "unknown-ref")]
    assert result.warnings[1].ref == "mystery"
    assert kinds(validate_concept_tree(t, known_facts=["seen", "x"], strict=True).errors) == [
        ("A", "unknown-ref")]
    assert validate_concept_tree(t).warnings == result.warnings[:1]  # opt-in only


def test_a_collection_key_is_reported_once() -> None:
    # aggregating-dependency covers collection keys: never also unknown-ref, bare or not
    t = tree(c("Roll", require=["expandedInto"],
               ensure=["$answeredBy.length == $steps.length && $children"]))
    result = validate_concept_tree(t, known_facts=[])
    assert [(f.kind, f.ref) for f in result.warnings] == [
        ("aggregating-dependency", "expandedInto"), ("aggregating-dependency", "children")]
    strict = validate_concept_tree(t, known_facts=[], strict=True)
    assert strict.errors == ()


def test_continuous_gates_are_opt_in() -> None:
    t = tree(c("G", ensure=["$score > 0.5", "$scoreBucket > 0.5", "$n >= 2", "$ratio<=.25",
                            "$free == 0.1"]))
    assert validate_concept_tree(t).warnings == ()
    found = validate_concept_tree(t, flag_continuous_gates=True, continuous_exempt=["free"])
    assert [(f.kind, f.ref) for f in found.warnings] == [
        ("continuous-gate", "score"), ("continuous-gate", "ratio")]


def test_synonym_rings() -> None:
    spec = {"enum": ["High", "high ", "low"], "synonyms": {"mid": ["m"], "High": ["LOW"]}}
    t = tree(c("Cls", prompt={"facts": {"sev": spec}}))
    msgs = [f.message for f in validate_concept_tree(t).errors]
    assert msgs == [
        "prompt.facts.sev: members 'High' and 'high ' normalize alike",
        "prompt.facts.sev.synonyms: 'mid' is not a member",
        "prompt.facts.sev.synonyms.High: alias 'LOW' collides with member 'low'",
    ]


def test_stratification() -> None:
    t = tree(
        c("A", require=["B"]), c("B", ensure=["!$A"]),                       # negative cycle
        c("C", require=["D"]), c("D", require=["C"]),                        # positive cycle
        c("E", ensure=["$E != true"]),                                       # negative self-loop
        c("F", require=["F"]),                                               # positive self-loop
        c("G", require=["H"], applyMutations={"gv": 1}), c("H", ensure=["$gv == null"]),
        c("I", require=["J"]), c("J", ensure=["false == $I"]),
    )
    result = validate_concept_tree(t)
    # Tarjan from each concept in tree order: a component pops deepest first (its concept)
    assert [(f.concept, f.cycle) for f in result.warnings] == [
        ("B", ("B", "A")), ("E", ("E",)), ("H", ("H", "G")), ("J", ("J", "I"))]
    assert [f.message.split("cycle ")[1].split(";")[0] for f in result.warnings] == [
        "B -> A", "E", "H -> G", "J -> I"]
    assert {f.kind for f in result.warnings} == {"unstratified-cycle"}
    assert validate_concept_tree(t, skip_stratification=True).warnings == ()


def test_unstratified_cycle_lists_tarjans_pop_order() -> None:
    # A reads B then C (edges followed in that order); B negates A, C requires A. From A:
    # push A, B (B -> A closes), then C (C -> A closes); A is the root: pop C, B, A.
    t = tree(c("A", require=["B", "C"]), c("B", ensure=["!$A"]), c("C", require=["A"]))
    [finding] = validate_concept_tree(t).warnings
    assert (finding.kind, finding.concept, finding.cycle) == (
        "unstratified-cycle", "C", ("C", "B", "A"))
    # a longer chain: A -> B -> C -> (not A); the stack pops C, B, A
    chain = tree(c("A", require=["B"]), c("B", require=["C"]), c("C", ensure=["!$A"]))
    [finding] = validate_concept_tree(chain).warnings
    assert (finding.concept, finding.cycle) == ("C", ("C", "B", "A"))
    # started from a concept outside the cycle, the cycle is still found (tree order)
    outside = tree(c("Z", require=["B"]), c("A", require=["B"]), c("B", ensure=["!$A"]))
    [finding] = validate_concept_tree(outside).warnings
    assert (finding.concept, finding.cycle) == ("A", ("A", "B"))


def test_interface_coherence() -> None:
    facts_a = {"sev": {"enum": ["low", "high"], "synonyms": {"high": ["bad"]}}}
    facts_b = {"sev": {"enum": ["low", "high"], "synonyms": {"low": ["Bad "]}}}
    t = tree(
        c("Cls", provider="LLM::complete", prompt={"facts": facts_a}),
        c("Cls2", provider="LLM::complete", prompt={"facts": facts_b}),
        c("Force", applyMutations={"sev": "critical"}),
        c("Hi", ensure=["$sev == 'high'"]),
        c("Crit", ensure=["$sev == 'critical'"]),
        c("Never", ensure=["$sev === 'urgent'", "$sev in ['low', 'gone']"]),
    )
    result = validate_concept_tree(t, palette=None)
    assert kinds(result.errors) == [("Cls2", "synonym-intent-collision")]
    # the ref is the whole gate expression as written, not the key
    assert [(f.concept, f.kind, f.ref) for f in result.warnings] == [
        ("Never", "interface-never-fire", "$sev === 'urgent'"),
        ("Never", "interface-never-fire", "$sev in ['low', 'gone']")]
    assert "'urgent'" in result.warnings[0].message and "'gone'" in result.warnings[1].message
    assert validate_concept_tree(t, skip_interface_coherence=True).errors == ()


def test_bad_input() -> None:
    with pytest.raises(AuthoringError, match="tree: must be an object"):
        validate_concept_tree([])  # type: ignore[arg-type]
    deep: dict[str, Any] = {"_id": "x0", "_name": "x0"}
    for i in range(1, 3000):
        deep = {"_id": f"x{i}", "_name": f"x{i}", "childConcepts": {deep["_id"]: deep}}
    assert validate_concept_tree({"childConcepts": {deep["_id"]: deep}}).ok


def test_options_accept_the_reference_names_and_reject_bad_values() -> None:
    t = tree(c("A", require=["ghost"]))
    snake = validate_concept_tree(t, known_facts=["x"], strict=True)
    camel = validate_concept_tree(t, knownFacts=["x"], strict=True)
    assert kinds(snake.errors) == kinds(camel.errors) == [("A", "unknown-ref")]
    with pytest.raises(AuthoringError, match=r"opts\.knownFact: unknown option"):
        validate_concept_tree(t, knownFact=["x"])
    with pytest.raises(AuthoringError, match=r"opts\.palette: must be a list of names, got str"):
        validate_concept_tree(t, palette="AI::x")
    with pytest.raises(AuthoringError, match=r"opts\.known_facts: must be a list of names"):
        validate_concept_tree(t, known_facts=5)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match=r"opts\.collection_keys\[1\]: must be a string"):
        validate_concept_tree(t, collection_keys=["steps", 3])  # type: ignore[list-item]
