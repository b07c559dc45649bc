"""Extra scoring terms: contributions, weights, filling iota/kappa, and errors."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
from cladelog.fork_score import (
    ScoringTerm,
    ScoringTermError,
    Verdict,
    WeightsError,
    WeightSet,
    default_weights,
    load_weights,
    score,
)
from fork_score_docs import SEED_BREAKDOWN_KEYS, make_doc


def const(value: Any) -> Any:
    def fn(parent: Any, child: Any, inputs: Mapping[str, Any]) -> Any:
        return value

    return fn


NOVELTY = ScoringTerm("novelty", "mu", 0.2, 1, const(0.5))
SIZE = ScoringTerm("size_growth", "nu", 0.1, -1, const(3.0))


def test_reward_and_penalty_terms_add_signed_keys() -> None:
    result = score(make_doc(0.5), make_doc(0.5), extra_terms=[SIZE, NOVELTY])
    # +0.2 * 0.5 = 0.1 ; -0.1 * 3.0 = -0.3 (up to float rounding)
    assert result.breakdown["mu_x_novelty"] == pytest.approx(0.1)
    assert result.breakdown["minus_nu_x_size_growth"] == pytest.approx(-0.3)
    # built-ins first (formula order), then extras by name
    assert list(result.breakdown) == [
        *SEED_BREAKDOWN_KEYS,
        "mu_x_novelty",
        "minus_nu_x_size_growth",
    ]
    # all built-ins are 0 here: score = 0.1 - 0.3 = -0.2
    assert result.score == pytest.approx(-0.2)
    assert result.verdict is Verdict.REJECT
    assert result.weights.to_json_dict()["mu"] == 0.2
    assert result.term_values["novelty"] == 0.5


def test_extra_term_order_does_not_depend_on_registration_order() -> None:
    a = score(make_doc(0.5), make_doc(0.5), extra_terms=[SIZE, NOVELTY])
    b = score(make_doc(0.5), make_doc(0.5), extra_terms=[NOVELTY, SIZE])
    assert a.to_dict() == b.to_dict()


def test_extra_term_weight_can_be_overridden() -> None:
    result = score(make_doc(0.5), make_doc(0.5), {"mu": 2.0}, extra_terms=[NOVELTY])
    # 2.0 * 0.5 = 1.0
    assert result.breakdown["mu_x_novelty"] == 1.0
    weights = load_weights({"mu": 0.0}, terms=[NOVELTY])
    assert score(make_doc(0.5), make_doc(0.5), weights, extra_terms=[NOVELTY]).score == 0.0


def test_extra_term_weight_is_part_of_the_weights_id() -> None:
    plain = score(make_doc(0.5), make_doc(0.5))
    extra = score(make_doc(0.5), make_doc(0.5), extra_terms=[NOVELTY])
    assert plain.weights_id != extra.weights_id
    assert extra.weights_id == default_weights([NOVELTY]).weights_id


def test_weight_set_without_the_extra_weight_takes_the_term_default() -> None:
    result = score(make_doc(0.5), make_doc(0.5), WeightSet(eta=3.0), extra_terms=[NOVELTY])
    assert result.weights.get("mu") == 0.2
    assert result.weights.eta == 3.0


def test_weight_for_an_absent_term_is_an_error() -> None:
    with pytest.raises(WeightsError, match=r"^weights\.mu: no extra term uses this weight"):
        score(make_doc(0.5), make_doc(0.5), WeightSet(extra={"mu": 1.0}))


def test_kappa_term_fills_complexity_penalty() -> None:
    loc = ScoringTerm("loc_delta", "kappa", 0.1, -1, const(3))
    result = score(make_doc(0.5), make_doc(0.5), extra_terms=[loc])
    # -kappa * value = -(0.1 * 3) = -0.3; no extra key appears
    assert list(result.breakdown) == SEED_BREAKDOWN_KEYS
    assert result.breakdown["minus_kappa_x_complexity_penalty"] == pytest.approx(-0.3)
    assert result.weights.kappa == 0.1  # the term's default replaces the reserved 0
    assert result.term_values["complexity_penalty"] == 3.0
    assert result.score == pytest.approx(-0.3)


def test_iota_term_fills_security_risk_and_its_weight_is_overridable() -> None:
    risk = ScoringTerm("cve_count", "iota", 0.5, -1, const(2.0))
    result = score(make_doc(0.5), make_doc(0.5), {"iota": 0.25}, extra_terms=[risk])
    # -0.25 * 2.0 = -0.5
    assert result.breakdown["minus_iota_x_security_risk_penalty"] == -0.5


def test_term_sees_documents_and_read_only_inputs() -> None:
    seen: dict[str, Any] = {}

    def fn(parent: Any, child: Any, inputs: Mapping[str, Any]) -> float:
        seen["organism"] = child["organism_id"]
        seen["count"] = inputs["memory_invalidation_count"]
        with pytest.raises(TypeError):
            inputs["capital_delta"] = 9.0  # type: ignore[index]
        return 0.0

    term = ScoringTerm("probe", "omega", 1.0, 1, fn)
    score(
        make_doc(0.5),
        make_doc(0.5, organism_id="c-7"),
        extra_terms=[term],
        memory_invalidation_count=4,
    )
    assert seen == {"organism": "c-7", "count": 4}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("regression_penalty", "mu", 1.0, -1), "term regression_penalty: name collides"),
        (("delta_5s", "mu", 1.0, 1), "term delta_5s: name collides"),
        (("complexity_penalty", "kappa", 1.0, -1), "term complexity_penalty: name collides"),
        (("Bad Name", "mu", 1.0, 1), "term name: must match"),
        (("ok", "Mu", 1.0, 1), "term weight_name: must match"),
        (("ok", "alpha", 1.0, 1), "term ok: weight name 'alpha' is a built-in weight"),
        (("ok", "lambda", 1.0, -1), "term ok: weight name 'lambda' is a built-in weight"),
        (("ok", "mu", -0.1, 1), "term ok: default_weight must be finite and >= 0"),
        (("ok", "mu", math.nan, 1), "term ok: default_weight must be finite and >= 0"),
        (("ok", "mu", "1", 1), "term ok: default_weight must be a number"),
        (("ok", "mu", 1.0, 0), "term ok: sign must be +1 or -1"),
        (("ok", "mu", 1.0, True), "term ok: sign must be +1 or -1"),
        (("ok", "mu", 1.0, 1.0), "term ok: sign must be +1 or -1"),
        (("ok", "iota", 1.0, 1), "term ok: a term filling iota is a penalty"),
    ],
)
def test_malformed_terms(args: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(ScoringTermError) as info:
        ScoringTerm(*args, const(0.0))  # type: ignore[call-arg]
    assert str(info.value).startswith(fragment)


def test_fn_must_be_callable() -> None:
    with pytest.raises(ScoringTermError, match=r"^term ok: fn must be callable"):
        ScoringTerm("ok", "mu", 1.0, 1, 3.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (math.nan, "term weird: fn returned a non-finite value nan"),
        (math.inf, "term weird: fn returned a non-finite value inf"),
        ("1.0", "term weird: fn must return a number, got str"),
        (None, "term weird: fn must return a number, got NoneType"),
        (True, "term weird: fn must return a number, got bool"),
        (10**400, "term weird: fn returned an integer too large"),
    ],
)
def test_bad_term_values(value: Any, fragment: str) -> None:
    term = ScoringTerm("weird", "mu", 1.0, 1, const(value))
    with pytest.raises(ScoringTermError) as info:
        score(make_doc(0.5), make_doc(0.5), extra_terms=[term])
    assert str(info.value) == fragment


def test_raising_fn_is_wrapped() -> None:
    def boom(parent: Any, child: Any, inputs: Mapping[str, Any]) -> float:
        return float(parent["no-such-key"])

    term = ScoringTerm("boom", "mu", 1.0, 1, boom)
    with pytest.raises(ScoringTermError, match=r"^term boom: fn raised KeyError"):
        score(make_doc(0.5), make_doc(0.5), extra_terms=[term])


@pytest.mark.parametrize(
    ("terms", "fragment"),
    [
        ([NOVELTY, NOVELTY], "term novelty: registered twice"),
        (
            [NOVELTY, ScoringTerm("other", "mu", 1.0, 1, const(0.0))],
            "term other: weight name 'mu' is already used",
        ),
        (
            [
                ScoringTerm("loc", "kappa", 1.0, -1, const(0.0)),
                ScoringTerm("churn", "kappa", 1.0, -1, const(0.0)),
            ],
            "weight name 'kappa' is already used",
        ),
        ("novelty", "extra_terms: must be a sequence of ScoringTerm"),
        (["novelty"], "extra_terms[0]: must be a ScoringTerm, got str"),
        ([3], "extra_terms[0]: must be a ScoringTerm, got int"),
        (5, "extra_terms: must be a sequence of ScoringTerm"),
    ],
)
def test_bad_term_collections(terms: Any, fragment: str) -> None:
    with pytest.raises(ScoringTermError) as info:
        score(make_doc(0.5), make_doc(0.5), extra_terms=terms)
    assert fragment in str(info.value)


def test_loader_accepts_term_weights_only_when_given_the_terms() -> None:
    with pytest.raises(WeightsError, match=r"^weights\.mu: unknown weight"):
        load_weights({"mu": 1.0})
    assert load_weights({"mu": 1.0}, terms=[NOVELTY]).get("mu") == 1.0
    with pytest.raises(WeightsError, match=r"^weights\.mu: must be non-negative"):
        load_weights({"mu": -1.0}, terms=[NOVELTY])


def test_extra_term_weights_id_computed_by_hand() -> None:
    import hashlib

    result = score(make_doc(0.5), make_doc(0.5), extra_terms=[NOVELTY])
    # the seed defaults plus "mu": 0.2, as RFC 8785 canonical JSON (keys sorted,
    # "mu" between "lambda" and "theta"; 1.0 written 1, 0.0 written 0)
    canonical = (
        '{"alpha":1,"beta":1,"delta":0.5,"epsilon":0.3,"eta":2,"gamma":1,'
        '"iota":0,"kappa":0,"lambda":0.5,"mu":0.2,"theta":0.5,"zeta":0}'
    )
    assert result.weights_id == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_huge_integer_default_weight_is_a_term_error(value: int) -> None:
    with pytest.raises(ScoringTermError) as info:
        ScoringTerm("big", "mu", value, 1, const(0.0))
    assert str(info.value) == (
        "term big: default_weight must be finite and >= 0, got a huge integer"
    )
