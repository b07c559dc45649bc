"""The formula, the breakdown, verdicts and caller scalars."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import pytest
from cladelog.fork_score import (
    SIGNAL_FLOOR,
    ScalarInputError,
    ScoredFork,
    Verdict,
    WeightSet,
    score,
)
from fork_score_docs import SEED_BREAKDOWN_KEYS, make_doc

FIVE_S = ("syntax", "semantics", "syllogism", "synthesis", "semiotics")


def total(result: ScoredFork) -> float:
    out = 0.0
    for value in result.breakdown.values():
        out += value
    return out


# ---------------------------------------------------------------- verdicts


def test_accept() -> None:
    child = make_doc(0.5, {f"5S.{s}": 0.6 for s in FIVE_S})
    result = score(make_doc(0.5), child)
    # delta_5S = 0.1 (each sub +0.1); score = alpha * 0.1 = 0.1 >= 0.05
    assert result.score == pytest.approx(0.1)
    assert result.verdict is Verdict.ACCEPT
    assert result.verdict == "ACCEPT"


def test_marginal_small_positive() -> None:
    result = score(make_doc(0.5), make_doc(0.5, {"5S.syntax": 0.6}))
    # delta_5S = 0.1 / 5 = 0.02; 0 <= 0.02 < 0.05
    assert result.score == pytest.approx(0.02)
    assert result.verdict is Verdict.MARGINAL


def test_marginal_at_zero() -> None:
    result = score(make_doc(0.5), make_doc(0.5))
    assert result.score == 0.0
    assert result.verdict is Verdict.MARGINAL


def test_reject_negative_score_without_flags() -> None:
    child = make_doc(0.5, {f"5S.{s}": 0.46 for s in FIVE_S})
    result = score(make_doc(0.5), child)
    # delta_5S = -0.04 (under the 5pp floor: no flag); penalty 0.04 * eta 2 = 0.08
    # score = -0.04 - 0.08 = -0.12
    assert result.flags == []
    assert result.score == pytest.approx(-0.12)
    assert result.verdict is Verdict.REJECT


def test_score_exactly_at_signal_floor_is_accept() -> None:
    weights = WeightSet(epsilon=1.0)
    result = score(make_doc(0.5), make_doc(0.5), weights, audit_completeness=0.05)
    # epsilon 1.0 * 0.05 = 0.05 exactly; all other terms are 0
    assert result.score == 0.05
    assert SIGNAL_FLOOR == 0.05
    assert result.verdict is Verdict.ACCEPT


def test_signal_floor_is_a_parameter() -> None:
    weights = WeightSet(epsilon=1.0)
    args: dict[str, Any] = {"audit_completeness": 0.05}
    assert score(make_doc(0.5), make_doc(0.5), weights, signal_floor=0.06, **args).verdict == (
        Verdict.MARGINAL
    )
    assert score(make_doc(0.5), make_doc(0.5), weights, signal_floor=0.0).verdict == (
        Verdict.ACCEPT
    )


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"signal_floor": -0.01}, "signal_floor: must be >= 0"),
        ({"signal_floor": math.nan}, "signal_floor: must be finite"),
        ({"hard_regression_floor": 0}, "hard_regression_floor: must lie in (0, 1]"),
        ({"hard_regression_floor": 1.5}, "hard_regression_floor: must lie in (0, 1]"),
        ({"hard_regression_floor": "5pp"}, "hard_regression_floor: must be a number"),
    ],
)
def test_bad_floors(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScalarInputError) as info:
        score(make_doc(0.5), make_doc(0.5), **kwargs)
    assert str(info.value).startswith(fragment)


# ---------------------------------------------------------------- breakdown


def test_breakdown_has_the_eleven_seed_keys_in_formula_order() -> None:
    result = score(make_doc(0.5), make_doc(0.5))
    assert list(result.breakdown) == SEED_BREAKDOWN_KEYS


def test_breakdown_sums_to_the_score() -> None:
    child = make_doc(0.5, {"5S.syntax": 0.9, "5T.time": 0.3, "5F.function": 0.47})
    result = score(
        make_doc(0.5),
        child,
        capital_delta=0.3,
        selfmodel_calibration_gain=0.2,
        audit_completeness=0.9,
        memory_invalidation_count=2,
        validator_diversity=0.7,
    )
    assert result.score == total(result)


def test_sign_convention_and_seed_example() -> None:
    weights = WeightSet(zeta=1.0)
    result = score(
        make_doc(0.5),
        make_doc(0.5),
        weights,
        capital_delta=1.0,
        selfmodel_calibration_gain=1.0,
        audit_completeness=1.0,
        memory_invalidation_count=1,
        validator_diversity=1.0,
    )
    b = result.breakdown
    assert b["delta_x_selfmodel_calibration_gain"] == 0.5  # +delta 0.5 * 1
    assert b["epsilon_x_audit_completeness"] == 0.3  # +epsilon 0.3 * 1
    assert b["zeta_x_validator_diversity"] == 1.0  # +zeta 1.0 * 1
    assert b["minus_theta_x_capital_cost_penalty"] == -0.5  # -theta 0.5 * 1
    assert b["minus_lambda_x_memory_invalidation"] == -0.5  # the seed's example value
    assert b["minus_eta_x_regression_penalty"] == 0.0  # -(2.0 * 0.0), i.e. -0.0
    assert b["minus_iota_x_security_risk_penalty"] == 0.0  # reserved, no filling term
    assert b["minus_kappa_x_complexity_penalty"] == 0.0
    # 0.5 + 0.3 + 1.0 - 0.5 - 0.5 = 0.8
    assert result.score == pytest.approx(0.8)


def test_every_term_responds_to_its_weight_with_its_sign() -> None:
    child = make_doc(0.5, {"5S.syntax": 0.45, "5T.time": 0.6, "5F.formulate": 0.7})
    kwargs: dict[str, Any] = {
        "capital_delta": 0.4,
        "selfmodel_calibration_gain": 0.3,
        "audit_completeness": 0.8,
        "memory_invalidation_count": 3,
        "validator_diversity": 0.25,
    }
    zero = WeightSet(
        **{
            f: 0.0
            for f in (
                "alpha",
                "beta",
                "gamma",
                "delta",
                "epsilon",
                "zeta",
                "eta",
                "theta",
                "iota",
                "kappa",
                "lambda_",
            )
        }
    )
    # The value each term carries here, computed by hand:
    #   delta_5S = (0.45 - 0.5) / 5 = -0.01 ; delta_5T = 0.1 / 5 = 0.02 ;
    #   delta_5F = 0.2 / 5 = 0.04 ; regression penalty = max(0, 0.01) = 0.01
    expected = {
        "alpha": ("alpha_x_delta_5s", -0.01),
        "beta": ("beta_x_delta_5t", 0.02),
        "gamma": ("gamma_x_delta_5f", 0.04),
        "delta": ("delta_x_selfmodel_calibration_gain", 0.3),
        "epsilon": ("epsilon_x_audit_completeness", 0.8),
        "zeta": ("zeta_x_validator_diversity", 0.25),
        "eta": ("minus_eta_x_regression_penalty", -0.01),
        "theta": ("minus_theta_x_capital_cost_penalty", -0.4),
        "lambda_": ("minus_lambda_x_memory_invalidation", -3.0),
    }
    for field, (key, per_unit) in expected.items():
        weights = attrs.evolve(zero, **{field: 2.0})
        result = score(make_doc(0.5), child, weights, **kwargs)
        assert result.breakdown[key] == pytest.approx(2.0 * per_unit), key
        assert result.score == pytest.approx(2.0 * per_unit), key


def test_negative_capital_delta_rewards_a_cheaper_child() -> None:
    result = score(make_doc(0.5), make_doc(0.5), capital_delta=-0.2)
    # -theta * (-0.2) = -0.5 * -0.2 = +0.1
    assert result.breakdown["minus_theta_x_capital_cost_penalty"] == pytest.approx(0.1)
    assert result.verdict is Verdict.ACCEPT


# ---------------------------------------------------------------- scalars


def test_scalar_defaults_are_zero() -> None:
    result = score(make_doc(0.5), make_doc(0.5))
    assert dict(result.inputs) == {
        "capital_delta": 0.0,
        "selfmodel_calibration_gain": 0.0,
        "audit_completeness": 0.0,
        "memory_invalidation_count": 0,
        "validator_diversity": 0.0,
    }


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"audit_completeness": 1.01}, "audit_completeness: must lie in [0, 1]"),
        ({"audit_completeness": -0.5}, "audit_completeness: must lie in [0, 1]"),
        ({"memory_invalidation_count": -1}, "memory_invalidation_count: must be a non-negative"),
        ({"memory_invalidation_count": 1.5}, "memory_invalidation_count: must be a non-negative"),
        ({"memory_invalidation_count": True}, "memory_invalidation_count: must be a non-negative"),
        ({"capital_delta": math.inf}, "capital_delta: must be finite"),
        ({"capital_delta": math.nan}, "capital_delta: must be finite"),
        ({"selfmodel_calibration_gain": "high"}, "selfmodel_calibration_gain: must be a number"),
        ({"validator_diversity": None}, "validator_diversity: must be a number, got null"),
        ({"capital_delta": False}, "capital_delta: must be a number, got boolean false"),
        ({"capital_delat": 1.0}, "capital_delat: unknown scalar"),
    ],
)
def test_bad_scalars(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScalarInputError) as info:
        score(make_doc(0.5), make_doc(0.5), **kwargs)
    assert str(info.value).startswith(fragment)
    assert isinstance(info.value, ValueError)


def test_overflow_is_an_error_not_an_infinite_score() -> None:
    with pytest.raises(ScalarInputError, match="overflow"):
        score(make_doc(0.5), make_doc(0.5), WeightSet(theta=1e308), capital_delta=1e308)


def test_efficiency_overflow_is_an_error() -> None:
    parent = make_doc(0.5)
    child = make_doc(0.5)
    parent["batteries"]["5F"]["finetuning"]["adaptation_efficiency_mean_finite"] = -1.7e308
    child["batteries"]["5F"]["finetuning"]["adaptation_efficiency_mean_finite"] = 1.7e308
    with pytest.raises(ScalarInputError, match="overflow"):
        score(parent, child)


# ---------------------------------------------------------------- result form


def test_to_dict_is_json_ready() -> None:
    child = make_doc(0.5, {"5S.syntax": None, "5T.time": 0.9})
    result = score(make_doc(0.5), child, memory_invalidation_count=2)
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    for key in ("score", "verdict", "breakdown", "flags", "deltas", "missing", "weights_id"):
        assert key in data
    assert data["verdict"] == "REJECT"
    assert data["flags"] == ["MISSING_5S_syntax"]
    assert data["deltas"]["5T"]["delta"] == pytest.approx(0.4 / 5)  # (0.9 - 0.5) / 5
    assert data["deltas"]["5T"]["rate_mean"] == pytest.approx(0.08)
    assert data["missing"] == [{"battery": "5S", "sub_battery": "syntax", "absent_in": "child"}]
    assert data["weights"]["lambda"] == 0.5
    assert data["inputs"]["memory_invalidation_count"] == 2


def test_scoring_is_deterministic_and_does_not_mutate_inputs() -> None:
    parent, child = make_doc(0.5), make_doc(0.5, {"5T.time": 0.8})
    parent_text, child_text = json.dumps(parent), json.dumps(child)
    first = score(parent, child).to_dict()
    second = score(parent, child).to_dict()
    assert first == second
    assert json.dumps(parent) == parent_text
    assert json.dumps(child) == child_text
