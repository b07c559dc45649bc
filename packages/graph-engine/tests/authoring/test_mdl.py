"""The MDL objective (SPEC §1.14 mdl) with hand-worked arithmetic."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from cladelog.graph_engine.authoring import AuthoringError
from cladelog.graph_engine.authoring.mdl import (
    Alphabet,
    GateVerdict,
    alphabet_size,
    compose_gates,
    concept_count_of,
    corpus_bits,
    make_mdl_gate,
    mdl_gain,
    rank_candidates,
    run_gate,
    schema_bits,
    symbols_of,
)


def _tree(n: int) -> dict[str, Any]:
    return {"childConcepts": {f"C{i}": {"_id": f"C{i}", "_name": f"C{i}"} for i in range(n)}}


def test_seed_vector() -> None:
    # N = 16 concepts, R = 30 records, |Σ| = 24 known facts + 1 palette entry + 16 names = 41
    tree = _tree(16)
    alphabet = Alphabet(known_facts=tuple(f"f{i}" for i in range(24)), palette=("AI::x",))
    schema = {"require": ["f0"], "provider": "AI::x"}  # 2 symbols
    g = mdl_gain({"from": "C0", "to": "C1", "count": 5}, tree, [{}] * 30, alphabet, schema)
    # encode = 2·log2(41) + 4 = 2·5.357552 + 4 = 14.715104
    assert g.encode_bits == pytest.approx(14.715104, abs=1e-6)
    # saved = 5·(2−1)·log2(16) = 20
    assert g.saved_bits == 20
    # tax = 30·(log2(17) − log2(16)) = 30·0.0874628 = 2.623885
    assert g.tax_bits == pytest.approx(2.623885, abs=1e-6)
    # ΔL = 14.715104 + 2.623885 − 20 = −2.661011 < 0: admitted
    assert g.delta_l == pytest.approx(-2.661011, abs=1e-6)
    assert g.admit is True
    assert (g.count, g.ell, g.n, g.r) == (5, 2, 16, 30)


def test_symbols_of_counts_every_spine_symbol() -> None:
    schema = {
        "require": ["a", "b:c"],                       # 2
        "ensure": ["$x > 1 && $$g:y"],                 # 2 references
        "assert": "$z == 'lit $notref'",               # 1 (string literals are not refs)
        "applyMutations": [{"$_id": "_parent", "k1": 1, "$k2": 2,
                            "_incoming": [{"k3": 1, "originNode": "n"}]}],  # k1 k2 k3
        "provider": ["P::f", 1],                       # 1
    }
    assert symbols_of(schema) == 2 + 2 + 1 + 3 + 1
    assert symbols_of({"_schema": {"require": "a"}}) == 1
    assert symbols_of(None) == 0


@pytest.mark.parametrize(("provider", "symbols"), [
    # the reference counts a provider when `schema.provider` is JavaScript-truthy
    ([], 1), ({}, 1), ("P::f", 1), (["P::f"], 1), ("", 0), (0, 0), (None, 0), (False, 0)])
def test_symbols_of_counts_a_provider_by_javascript_truthiness(provider: Any,
                                                                symbols: int) -> None:
    assert symbols_of({"provider": provider}) == symbols


def test_alphabet_and_bits() -> None:
    assert alphabet_size(None) == 2
    assert alphabet_size(1) == 2
    assert alphabet_size(41) == 41
    assert alphabet_size(Alphabet(known_facts=("a", "b"), concept_names=("b", "c"),
                                  palette=("a",))) == 3
    # 3 symbols · log2(8) + 4 = 13
    assert schema_bits({"require": ["a", "b"], "provider": "P::x"}, 8) == 13
    assert schema_bits({"require": ["a"]}, 4, struct_const=0) == 2
    # R = 8 records · log2(4) = 16; N = 1 is raised to 2: 8 · 1
    assert corpus_bits([0] * 8, 4) == 16
    assert corpus_bits([0] * 8, 1) == 8
    nested = {"childConcepts": {"A": {"_id": "A", "_name": "A", "childConcepts": {
        "B": {"_id": "B", "_name": "B"}, "X": {"_id": "X"}}}}}
    assert concept_count_of(nested) == 2
    with pytest.raises(AuthoringError, match="alphabet: must be a finite number"):
        alphabet_size(math.inf)


def test_estimate_from_constituents_and_concept_names_default() -> None:
    tree = {"childConcepts": {
        "A": {"_id": "A", "_name": "A", "require": ["x"], "provider": "P::a"},     # 2 symbols
        "B": {"_id": "B", "_name": "B", "require": ["A"], "ensure": ["$x > 0"]},   # 2 symbols
        "C": {"_id": "C", "_name": "C"},
        "D": {"_id": "D", "_name": "D"},
    }}
    # Σ = {x, y} ∪ {A, B, C, D} = 6 names; encode = 4·log2(6) + 4
    g = mdl_gain({"from": "A", "to": "B", "count": 10, "length": 3}, tree, [0] * 4,
                 Alphabet(known_facts=("x", "y")))
    assert g.encode_bits == pytest.approx(4 * math.log2(6) + 4)
    # saved = 10·(3−1)·log2(4) = 40; tax = 4·(log2(5) − 2)
    assert g.saved_bits == 40
    assert g.tax_bits == pytest.approx(4 * (math.log2(5) - 2))
    assert g.admit is True
    # an explicit (empty) concept_names list is kept: Σ = {x, y} → 2
    g2 = mdl_gain({"from": "A", "to": "B", "count": 1}, tree, [],
                  Alphabet(known_facts=("x", "y"), concept_names=()))
    assert g2.encode_bits == pytest.approx(4 * 1 + 4)


def test_delta_zero_is_rejected_and_ranking_is_stable() -> None:
    tree = _tree(2)
    # |Σ| = 2, 1 symbol, struct 2 → encode 3; saved = 3·1·log2(2) = 3; tax = 0 (R = 0); ΔL = 0
    g = mdl_gain({"count": 3}, tree, [], 2, {"require": "a"}, struct_const=2)
    assert g.delta_l == 0 and g.admit is False
    chains = [{"from": "C0", "to": "C1", "count": c, "tag": t}
              for c, t in ((1, "low"), (9, "best"), (1, "low2"))]
    ranked = rank_candidates(chains, tree, [], 2)
    assert [rc.chain["tag"] for rc in ranked] == ["best", "low", "low2"]


def test_mdl_gate_abstains_rejects_and_admits() -> None:
    tree = _tree(16)
    alphabet = Alphabet(known_facts=tuple(f"f{i}" for i in range(24)), palette=("AI::x",))
    gate = make_mdl_gate(tree, [{}] * 30, alphabet)
    small = {"require": ["f0"], "provider": "AI::x"}
    assert gate(None, {"op": "patch", "chain": {"count": 0}}) == GateVerdict(admit=True)
    abstain = gate(None, {"op": "add", "schema": small})
    assert abstain.admit is True and abstain.reason is not None and "abstain" in abstain.reason
    admitted = gate(None, {"chain": {"from": "C0", "to": "C1", "count": 5}, "schema": small})
    assert admitted.admit is True and admitted.mdl is not None
    # count 4: saved 16, ΔL = 14.715 + 2.624 − 16 = 1.339 ≥ 0 → rejected
    rejected = gate(None, {"chain": {"count": 4}, "schema": small})
    assert rejected.admit is False and rejected.reason == "mdl-reject (ΔL=1.34 ≥ 0)"
    custom = make_mdl_gate(tree, [], 2, chain_of=lambda p: p.get("mined"))
    assert custom(None, {"chain": {"count": 100}}).reason is not None
    with pytest.raises(AuthoringError, match=r"chain\.count: must be a finite number"):
        gate(None, {"chain": {"count": "many"}})


def test_compose_gates_first_reject_wins() -> None:
    calls: list[str] = []

    def admit_a(graph: Any, p: Any) -> Any:
        calls.append("a")
        return {"admit": True, "who": "a"}

    async def reject_b(graph: Any, p: Any) -> Any:
        calls.append("b")
        return GateVerdict(admit=False, reason="b says no")

    def never(graph: Any, p: Any) -> Any:
        calls.append("c")
        return {"admit": True}

    verdict = asyncio.run(compose_gates(admit_a, reject_b, never)(None, {}))
    assert verdict == GateVerdict(admit=False, reason="b says no")
    assert calls == ["a", "b"]
    assert run_gate(compose_gates(admit_a, admit_a), None, {}) == {"admit": True, "who": "a"}
    assert run_gate(compose_gates(), None, {}) == GateVerdict(admit=True)
    assert run_gate(compose_gates(lambda g, p: None), None, {}) is None  # a falsy verdict rejects
    with pytest.raises(AuthoringError, match=r"gates\[0\]: must be callable"):
        compose_gates(3)  # type: ignore[arg-type]


def test_seed_vector_with_the_reference_alphabet_object() -> None:
    # the same vector as test_seed_vector, the alphabet given as the reference's object:
    # |Σ| = 24 known facts + 1 palette entry + 16 concept names added by mdl_gain = 41
    alphabet = {"knownFacts": [f"f{i}" for i in range(24)], "palette": ["AI::x"]}
    g = mdl_gain({"from": "C0", "to": "C1", "count": 5}, _tree(16), [{}] * 30, alphabet,
                 {"require": ["f0"], "provider": "AI::x"})
    # ΔL = 2·log2(41) + 4 + 30·(log2(17) − 4) − 20 = −2.661011
    assert g.delta_l == pytest.approx(-2.661011, abs=1e-6) and g.admit is True
    # an explicit conceptNames list is kept: {a, b} ∪ {a} = 2
    assert alphabet_size({"known_facts": ["a", "b"], "conceptNames": ["a"]}) == 2
    with pytest.raises(AuthoringError, match=r"alphabet\.colors: unknown key"):
        alphabet_size({"colors": ["red"]})
    with pytest.raises(AuthoringError, match=r"alphabet\.palette: must be a list of names"):
        alphabet_size({"palette": "AI::x"})
