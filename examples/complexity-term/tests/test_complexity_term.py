"""The complexity-term example, tested end to end with fork-score enabled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import ConfigError
from cladelog.core.testing import CladelogEnv
from cladelog.fork_score import collect_terms
from cladelog_complexity_term import ComplexityInputError, complexity_penalty

SUBS_5S = ("syntax", "semantics", "syllogism", "synthesis", "semiotics")
RATE_5S = {
    "syntax": "parse_pass_rate",
    "semantics": "equivalence_recovery_rate",
    "syllogism": "step_validity_rate",
    "synthesis": "derivation_pass_rate",
    "semiotics": "invariance_under_swap",
}


def doc(rate: float, **top: Any) -> dict[str, Any]:
    """A battery result with every 5S rate at ``rate`` (the other batteries empty)."""
    return {"batteries": {"5S": {s: {RATE_5S[s]: rate} for s in SUBS_5S}, "5T": {}, "5F": {}},
            **top}


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score", "complexity-term"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    docs = {
        "parent": doc(0.5),
        "plain": doc(0.75),  # delta_5S = 0.25 -> score 0.25 without the term
        "grown": doc(0.75, complexity={"loc_delta": 1200}),
        "grown2k": doc(0.75, complexity={"loc_delta": 2000}),
        "shrunk": doc(0.75, complexity={"loc_delta": -5000}),
        "broken": doc(0.75, complexity={"loc_delta": "lots"}),
    }
    out = {}
    for name, content in docs.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(content), encoding="utf-8")
        out[name] = str(path)
    return out


def score(env: Any, files: dict[str, str], child: str, *extra: str) -> Any:
    result = env.cli("fork-score", "score", "--parent", files["parent"], "--child", files[child],
                     *extra)
    return result


def test_the_hook_supplies_the_kappa_term(cladelog_env: Any) -> None:
    terms = collect_terms(cladelog_env.deployment.pm)
    assert [(t.name, t.weight_name, t.default_weight, t.sign) for t in terms] == [
        ("loc_growth", "kappa", 0.05, -1)]


def test_end_to_end_the_score_drops_by_the_hand_computed_amount(
    cladelog_env: Any, files: dict[str, str]
) -> None:
    plain = score(cladelog_env, files, "plain")
    grown = score(cladelog_env, files, "grown")
    assert plain.exit_code == 0 and grown.exit_code == 0, grown.output
    without, with_term = json.loads(plain.stdout), json.loads(grown.stdout)
    # ComplexityPenalty = 1200 / 1000 = 1.2 units; kappa = 0.05 -> contribution -(0.05 * 1.2)
    expected_kappa = -(0.05 * 1.2)
    assert with_term["breakdown"]["minus_kappa_x_complexity_penalty"] == expected_kappa
    assert expected_kappa == pytest.approx(-0.06)
    assert without["breakdown"]["minus_kappa_x_complexity_penalty"] == 0.0
    assert without["score"] == 0.25
    assert with_term["score"] == without["score"] + expected_kappa  # 0.25 - 0.06 = 0.19
    assert with_term["term_values"]["complexity_penalty"] == 1.2
    assert with_term["weights"]["kappa"] == 0.05
    assert with_term["verdict"] == "ACCEPT"


def test_kappa_can_be_overridden_in_the_weights_file(
    cladelog_env: Any, files: dict[str, str], tmp_path: Path
) -> None:
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({"kappa": 0.125}), encoding="utf-8")
    result = score(cladelog_env, files, "grown2k", "--weights", str(weights))
    doc_out = json.loads(result.stdout)
    # 2000 lines = 2 units; 0.125 * 2 = 0.25; score 0.25 - 0.25 = 0 -> MARGINAL
    assert doc_out["breakdown"]["minus_kappa_x_complexity_penalty"] == -0.25
    assert doc_out["score"] == 0.0
    assert doc_out["verdict"] == "MARGINAL"
    assert result.exit_code == 0


def test_shrinking_costs_nothing(cladelog_env: Any, files: dict[str, str]) -> None:
    result = json.loads(score(cladelog_env, files, "shrunk").stdout)
    assert result["breakdown"]["minus_kappa_x_complexity_penalty"] == 0.0
    assert result["score"] == 0.25


def test_recorded_branch_carries_the_term(cladelog_env: Any, files: dict[str, str]) -> None:
    result = score(cladelog_env, files, "grown", "--branch-set", "S", "--branch-id", "b1",
                   "--parent-root", "P")
    assert result.exit_code == 0, result.output
    (event,) = cladelog_env.events(types=["fork_score.branch_scored"])
    assert event.data["breakdown"]["minus_kappa_x_complexity_penalty"] == -(0.05 * 1.2)


def test_malformed_complexity_is_bad_input_and_appends_nothing(
    cladelog_env: Any, files: dict[str, str]
) -> None:
    before = len(cladelog_env.events())
    result = score(cladelog_env, files, "broken", "--branch-set", "S", "--branch-id", "b1",
                   "--parent-root", "P")
    assert result.exit_code == 2
    assert "child.complexity.loc_delta: must be an integer" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert len(cladelog_env.events()) == before


@pytest.mark.parametrize(
    ("child", "expected"),
    [
        ({}, 0.0),
        ({"complexity": {}}, 0.0),
        ({"complexity": {"loc_delta": 0}}, 0.0),
        ({"complexity": {"loc_delta": 500}}, 0.5),  # 500 / 1000
        ({"complexity": {"loc_delta": -1}}, 0.0),
    ],
)
def test_penalty_value(child: dict[str, Any], expected: float) -> None:
    assert complexity_penalty({}, child, {}) == expected


@pytest.mark.parametrize(
    ("complexity", "fragment"),
    [
        ([1], "child.complexity: must be an object"),
        ({"loc_delta": True}, "child.complexity.loc_delta: must be an integer"),
        ({"loc_delta": 1.5}, "child.complexity.loc_delta: must be an integer"),
        ({"loc_delta": 2**60}, "child.complexity.loc_delta: must satisfy"),
    ],
)
def test_bad_complexity_names_the_field(complexity: Any, fragment: str) -> None:
    with pytest.raises(ComplexityInputError) as info:
        complexity_penalty({}, {"complexity": complexity}, {})
    assert fragment in str(info.value)


def test_enabling_it_without_fork_score_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'complexity-term' requires 'fork-score'"):
        CladelogEnv(tmp_path, ["complexity-term"])
