"""Concept tree loading, merging and validation (SPEC §1.2, Q3, Q18, Q21, Q22)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cladelog.graph_engine import (
    ConceptTreeError,
    Engine,
    build_tree,
    load_tree,
    merge_sets,
    parse_jsonc,
)


def tree(**concepts: Any) -> dict[str, Any]:
    return {"childConcepts": {k: {"_id": k, "_name": k, **v} for k, v in concepts.items()}}


def test_string_ensure_is_normalized_q3() -> None:
    t = build_tree(tree(A={"ensure": "$x > 1", "require": "x"}))
    a = t.concepts["A"]
    assert a.ensure == ("x",)
    assert [p.text for p in a.require] == ["x"]


def test_child_key_must_equal_id_q21() -> None:
    raw = {"childConcepts": {"A": {"_id": "B", "_name": "B"}}}
    with pytest.raises(ConceptTreeError, match=r"^tree\.A\._id: 'B' differs from its key 'A'"):
        build_tree(raw)


def test_missing_id_is_taken_from_the_key() -> None:
    assert build_tree({"childConcepts": {"A": {"_name": "A"}}}).concepts["A"].id == "A"


def test_duplicate_ids_are_rejected() -> None:
    raw = tree(A={"childConcepts": {"B": {"_id": "B"}}}, B={})
    with pytest.raises(ConceptTreeError, match="duplicate concept id 'B'"):
        build_tree(raw)


def test_external_refs_in_apply_mutations_are_rejected_q22() -> None:
    raw = tree(A={"applyMutations": {"$_id": "_parent", "$$doc": "db:1"}})
    with pytest.raises(ConceptTreeError, match=r"tree\.A\.applyMutations\.\$\$doc"):
        build_tree(raw)


def test_missing_provider_is_a_load_error_q18() -> None:
    with pytest.raises(ConceptTreeError, match=r"tree\.A\.provider: provider 'P::x' is not"):
        Engine(tree(A={"provider": ["P::x"]}))
    with pytest.raises(ConceptTreeError, match=r"tree\.A\.cleaner"):
        Engine(tree(A={"cleaner": "P::c"}))


def test_syntax_error_in_a_gate_fails_the_load() -> None:
    with pytest.raises(ConceptTreeError, match=r"tree\.A\.assert/ensure: "):
        build_tree(tree(A={"assert": ["$x >"]}))
    with pytest.raises(ConceptTreeError, match="blocked"):
        build_tree(tree(A={"ensure": ["($x).constructor"]}))


@pytest.mark.parametrize(
    ("concept", "message"),
    [({"require": 5}, r"tree\.A\.require: must be a string or a list"),
     ({"require": ["x", 3]}, r"tree\.A\.require\[1\]: must be a string"),
     ({"autoCast": "no"}, r"tree\.A\.autoCast: must be true or false"),
     ({"childConcepts": []}, r"tree\.A\.childConcepts: must be an object"),
     ({"provider": 7}, r"tree\.A\.provider: must be"),
     ({"_name": ""}, r"tree\.A\._name: must be a non-empty string")],
)
def test_structural_errors_name_the_field(concept: dict[str, Any], message: str) -> None:
    with pytest.raises(ConceptTreeError, match=message):
        build_tree(tree(A=concept))


def test_warnings_for_method_in_token_q2_and_marker_names() -> None:
    t = build_tree(tree(A={"ensure": ["$name.toUpperCase() == 'X'"]},
                        Node={"require": ["x"]}))
    assert any("(Q2)" in w for w in t.warnings)
    assert any("'Node'" in w for w in t.warnings)


def test_jsonc_comments_outside_strings() -> None:
    text = '{"a": "x // not a comment", /* c */ "b": 1 // tail\n}'
    assert parse_jsonc(text) == {"a": "x // not a comment", "b": 1}
    with pytest.raises(ConceptTreeError, match="invalid JSON"):
        parse_jsonc("{")


def test_folder_layout(tmp_path: Path) -> None:
    (tmp_path / "B.json").write_text('{"require": "Node"} // root B')
    (tmp_path / "A.json").write_text('{"require": ["x"]}')
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "C.json").write_text('/* child */ {"require": ["A"]}')
    raw = load_tree(tmp_path)
    assert list(raw["childConcepts"]) == ["A", "B"]  # sorted file order
    child = raw["childConcepts"]["A"]["childConcepts"]["C"]
    assert child["_id"] == child["_name"] == "C"
    assert build_tree(raw).concepts["C"].parent == "A"


def test_folder_duplicate_stem_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "A.json").write_text("{}")
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "A.json").write_text("{}")
    with pytest.raises(ConceptTreeError, match="duplicate concept 'A'"):
        load_tree(tmp_path)


def test_folder_without_its_concept_file(tmp_path: Path) -> None:
    (tmp_path / "A.json").write_text("{}")
    (tmp_path / "X").mkdir()
    with pytest.raises(ConceptTreeError, match=r"child concepts of 'X', but there is no "
                                               r"X\.json beside it"):
        load_tree(tmp_path)


def test_a_folder_of_sets_is_named_as_such(tmp_path: Path) -> None:
    # a concept map on disk (one folder per set) is not one set: say so, not "no main.json"
    for name in ("main", "extra"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "A.json").write_text("{}")
    with pytest.raises(ConceptTreeError, match=r"only the folder\(s\) extra, main: is it a "
                                               r"folder of concept sets\? Give one set's "
                                               r"folder"):
        load_tree(tmp_path)


def test_single_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"childConcepts": {"A": {"_id": "A"}}} // trailing')
    assert load_tree(path) == {"childConcepts": {"A": {"_id": "A"}}}


def test_merging_sets_concatenates_arrays_and_keeps_last_scalar() -> None:
    common = tree(A={"require": ["x"], "defaultValue": 1})
    extra = tree(A={"require": ["y"], "defaultValue": 2}, B={})
    merged = merge_sets({"common": common, "extra": extra}, ["common", "extra"])
    a = merged["childConcepts"]["A"]
    assert a["require"] == ["x", "y"]
    assert a["defaultValue"] == 2
    assert list(merged["childConcepts"]) == ["A", "B"]
    with pytest.raises(ConceptTreeError, match="unknown set 'nope'"):
        merge_sets({"common": common}, ["nope"])


def test_deep_trees_are_refused_not_a_crash() -> None:
    raw: dict[str, Any] = {"childConcepts": {}}
    node = raw
    for i in range(200):
        child: dict[str, Any] = {"_id": f"c{i}", "childConcepts": {}}
        node["childConcepts"][f"c{i}"] = child
        node = child
    with pytest.raises(ConceptTreeError, match="nested deeper"):
        build_tree(raw)
