"""Static tree checks: the loader's, the engine-only ones and the four passes of SPEC §1.14."""

from __future__ import annotations

from typing import Any

from cladelog.graph_engine import validate_tree
from ge_helpers import concept, tree


def kinds(report: Any) -> tuple[list[str], list[str]]:
    return sorted(i.kind for i in report.errors), sorted(i.kind for i in report.warnings)


def test_a_clean_tree() -> None:
    report = validate_tree(tree(concept("A", require=["x"], children=[concept("B")])))
    assert report.ok and kinds(report) == ([], [])


def test_load_errors_are_reported_not_raised() -> None:
    for raw in (None, [], {"childConcepts": {"A": {"_id": "Z"}}},
                {"childConcepts": {"A": {"_id": "A", "ensure": ["(("]}}}):
        report = validate_tree(raw)
        assert kinds(report) == (["load"], [])


def test_prose_dependency_and_synonym_ring() -> None:
    llm = concept("Classify", require=["text"], provider="LLM::complete",
                  prompt={"user": "u", "facts": {"sev": {"enum": ["a", "b"],
                                                         "synonyms": {"c": ["x"]}}}})
    reader = concept("Reader", require=["ClassifyProse"], ensure=["$ClassifyCanonMiss.length"])
    report = validate_tree(tree(llm, reader))
    errors, _ = kinds(report)
    assert errors == ["prose-dependency", "prose-dependency", "synonym-ring"]


def test_custom_prose_key_and_aggregating_dependency() -> None:
    llm = concept("S", provider="LLM::complete", prompt={"user": "u", "prose": "summary"})
    rollup = concept("R", require=["expandedInto"], ensure=["$answeredBy.length > 0"])
    uses = concept("U", require=["summary"])
    errors, warnings = kinds(validate_tree(tree(llm, rollup, uses)))
    assert errors == ["prose-dependency"]
    assert warnings == ["aggregating-dependency"]  # the bare expandedInto, not .length


def test_palette_and_strict() -> None:
    t = tree(concept("A", provider=["P::a", 1], cleaner="P::c"))
    assert kinds(validate_tree(t, palette={"P::a"}))[1] == ["provider-not-in-palette"]
    assert kinds(validate_tree(t, palette={"P::a"}, strict=True))[0] == [
        "provider-not-in-palette"]
    assert validate_tree(t).ok


# --- the four passes of SPEC §1.14 reach validate_tree (and so `cladelog graph validate`) ---


Found = list[tuple[str, str, str | None]]


def found(report: Any) -> tuple[Found, Found]:
    """(concept, kind, ref) of the errors and of the warnings, sorted."""

    def key(i: Any) -> tuple[str, str, str | None]:
        return (i.concept, i.kind, i.ref)

    return sorted(map(key, report.errors)), sorted(map(key, report.warnings))


def test_stratification_pass_negative_cycle() -> None:
    # A reads B under "!", B requires A: a cycle A -> B -> A with a negative edge. Tarjan
    # starts at A (tree order), pushes A then B; the component pops B first (SPEC §1.14)
    report = validate_tree(tree(concept("A", ensure=["!$B"]), concept("B", require=["A"])))
    assert found(report) == ([], [("B", "unstratified-cycle", None)])
    assert report.warnings[0].cycle == ("B", "A")
    assert "B -> A" in report.warnings[0].message
    assert report.to_json()["warnings"][0]["cycle"] == ["B", "A"]
    assert "cycle" not in validate_tree(tree(concept("N", provider="x"))).to_json()["errors"][0]
    # the same cycle without negation is stratified: nothing to report
    assert found(validate_tree(tree(concept("A", ensure=["$B"]),
                                    concept("B", require=["A"])))) == ([], [])


def test_interface_pass_gate_no_producer_can_satisfy() -> None:
    llm = concept("C", provider="LLM::complete",
                  prompt={"user": "u", "facts": {"sev": {"enum": ["low", "high"]}}})
    never = concept("D", require=["sev"], ensure=["$sev == 'medium'"])
    fine = concept("E", require=["sev"], ensure=["$sev == 'high'"])
    report = validate_tree(tree(llm, never, fine))
    # the ref is the whole gate expression as written (SPEC §1.14), not the key
    assert found(report) == ([], [("D", "interface-never-fire", "$sev == 'medium'")])


def test_interface_pass_one_alias_two_meanings() -> None:
    def llm(cid: str, member: str) -> dict[str, Any]:
        spec = {"enum": ["a", "b"], "synonyms": {member: ["x"]}}
        return concept(cid, provider="LLM::complete", prompt={"user": "u", "facts": {"sev": spec}})

    report = validate_tree(tree(llm("S1", "a"), llm("S2", "b")))
    assert found(report) == ([("S2", "synonym-intent-collision", None)], [])


def test_unknown_refs_and_continuous_gates_are_opt_in() -> None:
    t = tree(concept("E", require=["x", "y"], ensure=["$score > 0.5"]))
    assert found(validate_tree(t)) == ([], [])
    report = validate_tree(t, known_facts=["x"], flag_continuous_gates=True)
    assert found(report) == ([], [("E", "continuous-gate", "score"),
                                  ("E", "unknown-ref", "score"), ("E", "unknown-ref", "y")])
    strict = validate_tree(tree(concept("E", require=["x", "y"])), known_facts=["x"],
                           strict=True)
    assert found(strict) == ([("E", "unknown-ref", "y")], [])


def test_unparseable_names_the_expression_as_written() -> None:
    # the loader refuses the tree first; the four-pass validator on its own names the text
    from cladelog.graph_engine.authoring import validate_concept_tree

    result = validate_concept_tree(tree(concept("P", ensure=["$ok", " $x + "])))
    assert [(f.kind, f.ref) for f in result.errors] == [("unparseable", " $x + ")]


def test_a_collection_key_is_never_also_an_unknown_ref() -> None:
    t = tree(concept("R", require=["expandedInto", "ghost"],
                     ensure=["$answeredBy.length == $expandedInto.length"]))
    report = validate_tree(t, known_facts=["R"])
    assert found(report) == ([], [("R", "aggregating-dependency", "expandedInto"),
                                  ("R", "unknown-ref", "ghost")])


def test_blocked_property_is_an_error() -> None:
    report = validate_tree(tree(concept("F", ensure=["$x.constructor"])))
    assert found(report) == ([("F", "blocked-prop", None)], [])


def test_each_finding_once_and_messages_name_the_concept() -> None:
    # the loader and the four-pass validator both see the marker name: reported once
    marker = validate_tree(tree(concept("Node", require=["x"])))
    assert found(marker) == ([], [("Node", "engine-marker-name", None)])
    # the engine's fact-schema check and pass 1 both reject this ring: reported once
    bad_ring = concept("K", provider="LLM::complete",
                       prompt={"user": "u", "facts": {"s": {"enum": ["a", "A"]}}})
    ring = validate_tree(tree(bad_ring))
    assert [i.kind for i in ring.errors] == ["synonym-ring"]
    for issue in ring.errors + marker.warnings:
        assert issue.message.startswith(f"{issue.concept}: ")
    assert ring.to_json()["errors"][0]["ref"] is None


def test_provider_names_must_read_ns_fn() -> None:
    # SPEC §0 row 18: a provider that is missing is a load error; one whose name is not
    # "Ns::fn" can never be registered, whatever the registry (checked with no palette too)
    t = tree(concept("A", provider="bad name"), concept("B", provider=["Nope", 1]),
             concept("C", cleaner="A::b::c"), concept("D", onCast="Ok::fine"),
             concept("E", provider="::f"))
    report = validate_tree(t)
    assert sorted((i.concept, i.kind, i.ref) for i in report.errors) == [
        ("A", "provider-name", "bad name"), ("B", "provider-name", "Nope"),
        ("C", "provider-name", "A::b::c"), ("E", "provider-name", "::f")]
