"""Static tree checks (the structural part of SPEC §1.14's validator)."""

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
