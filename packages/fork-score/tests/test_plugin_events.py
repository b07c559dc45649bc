"""``fork_score.branch_scored``: the payload refuses events that contradict themselves.

An operator can append this event by hand (``cladelog append``); the gate trusts its
verdict. So the payload class checks what can be checked without the deployment's
settings: every built-in breakdown key is there, the breakdown adds up to the score
in the scorer's order, and the verdict follows the settings-free rules of the seed
(section 3.1: any hard flag or a negative score is REJECT; with neither, the verdict
is ACCEPT or MARGINAL).

Expected sums are written out in the test, in the documented order (the eleven
built-ins in formula order, then extra terms by name), never computed by the code
under test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.fork_score import BranchScored, ScoringTerm, score
from cladelog.fork_score.service import branch_scored_payload
from fork_score_docs import SEED_BREAKDOWN_KEYS, make_doc
from fork_score_plugin_helpers import BRANCH_SCORED, all_5s, payload


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


def stream(data: dict[str, Any]) -> str:
    return f"fork_score.branch_set:{data['branch_set_id']}"


def with_breakdown(data: dict[str, Any], **values: float) -> dict[str, Any]:
    """``data`` with the eleven seed keys at 0.0 except ``values``."""
    breakdown = dict.fromkeys(SEED_BREAKDOWN_KEYS, 0.0)
    breakdown.update(values)
    return {**data, "breakdown": breakdown}


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(ValueError) as info:
        BranchScored(**data)
    return str(info.value)


# ---------------------------------------------------------------- the audit's forged event

FORGED = {
    "branch_set_id": "S1", "branch_id": "b2", "parent_root": "P", "child_root": "C2",
    "score": -5.0, "verdict": "ACCEPT", "flags": ["REGRESSION_5S:syntax", "NEG_INF_REGRESSION"],
    "breakdown": {"alpha_x_delta_5s": 123.0}, "weights_id": "x", "estimator_version": "0.1.0",
}


def test_cli_append_of_a_forged_event_exits_2_names_the_field_and_appends_nothing(
    cladelog_env: Any, tmp_path: Path
) -> None:
    path = tmp_path / "forged.json"
    path.write_text(json.dumps({"stream": "fork_score.branch_set:S1",
                                "type": BRANCH_SCORED, "data": FORGED}), encoding="utf-8")
    before = len(cladelog_env.events())
    result = cladelog_env.cli("append", str(path))
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "breakdown" in lines[0] and "beta_x_delta_5t" in lines[0]
    assert "Traceback" not in result.stderr
    assert len(cladelog_env.events()) == before
    # nothing names C2, so the gate does not let it through
    gate = cladelog_env.cli("gate", "C2")
    assert gate.exit_code == 1, gate.output
    assert "never scored" in gate.output


def test_forged_event_with_a_complete_breakdown_is_still_refused(cladelog_env: Any) -> None:
    # every key there, but 0.1 + ten zeros is 0.1, not -5.0
    data = with_breakdown(FORGED, alpha_x_delta_5s=0.1)
    with pytest.raises(InputError, match=r"score: must equal the sum of the breakdown"):
        cladelog_env.append(BRANCH_SCORED, data, stream=stream(data))


# ---------------------------------------------------------------- breakdown keys


@pytest.mark.parametrize("key", SEED_BREAKDOWN_KEYS)
def test_every_built_in_key_is_required(key: str) -> None:
    data = payload("S", "b", 0.0, "MARGINAL")
    del data["breakdown"][key]
    message = refused(data)
    assert message.startswith("breakdown: ")
    assert repr(key) in message


@pytest.mark.parametrize(
    "key",
    [
        "bonus",  # no _x_ at all
        "alpha_x_novelty",  # alpha is a built-in weight: no extra term may use it
        "mu_x_delta_5s",  # delta_5s is a built-in term name
        "Mu_x_novelty",  # not lower case
        "mu_x_",  # empty term name
        "lambda__x_novelty",  # lambda_ is reserved
        "mu_x_" + "n" * 65,  # term names are at most 64 characters
    ],
)
def test_a_key_no_term_can_produce_is_refused(key: str) -> None:
    data = payload("S", "b", 0.0, "MARGINAL")
    data["breakdown"][key] = 0.0
    assert refused(data).startswith(f"breakdown.{key}: ")


def test_two_keys_for_one_term_name_are_refused() -> None:
    # term names are unique, so mu_x_novelty and nu_x_novelty cannot both be scored
    data = payload("S", "b", 0.0, "MARGINAL")
    data["breakdown"].update(mu_x_novelty=0.0, nu_x_novelty=0.0)
    assert refused(data).startswith("breakdown.nu_x_novelty: a second key for the term")


def test_an_extra_term_key_is_accepted_and_counted() -> None:
    # alpha 0.25, then the extra term mu_x_novelty 0.125: 0.25 + 0.125 = 0.375
    data = with_breakdown(payload("S", "b", 0.375), alpha_x_delta_5s=0.25,
                          mu_x_novelty=0.125)
    assert BranchScored(**data).score == 0.375
    data["score"] = 0.25  # without the extra term's share
    assert refused(data).startswith("score: must equal the sum of the breakdown")


def test_a_non_finite_contribution_is_refused() -> None:
    data = with_breakdown(payload("S", "b", 0.0, "MARGINAL"), gamma_x_delta_5f=math.inf)
    assert refused(data).startswith("breakdown.gamma_x_delta_5f: must be a finite number")


# ---------------------------------------------------------------- the sum is exact


def test_the_sum_is_checked_exactly_in_formula_order() -> None:
    # Formula order adds alpha, gamma, then delta; key (alphabetical) order would add
    # alpha, delta, then gamma. In binary floats the two differ:
    formula_order = (0.1 + 0.2) + 0.4  # 0.30000000000000004 + 0.4 = 0.7000000000000001
    key_order = (0.1 + 0.4) + 0.2  # 0.5 + 0.2 = 0.7
    assert formula_order != key_order
    values = {"alpha_x_delta_5s": 0.1, "gamma_x_delta_5f": 0.2,
              "delta_x_selfmodel_calibration_gain": 0.4}
    data = with_breakdown(payload("S", "b", formula_order), **values)
    assert BranchScored(**data).score == formula_order
    # the breakdown's own key order does not matter (a stored event comes back sorted)
    data["breakdown"] = dict(sorted(data["breakdown"].items()))
    assert BranchScored(**data).score == formula_order
    # one ulp off is refused: the check is equality, not closeness
    data["score"] = key_order
    assert refused(data).startswith("score: must equal the sum of the breakdown")


def test_extra_terms_are_added_by_term_name_not_by_key() -> None:
    # Extra terms come after the built-ins, ordered by *name*: term "a" (weight zw,
    # key zw_x_a) before term "b" (weight aw, key aw_x_b), although the keys sort the
    # other way round. Built-ins: alpha 0.1, the rest 0.
    by_name = (0.1 + 0.2) + 0.4  # 0.7000000000000001
    by_key = (0.1 + 0.4) + 0.2  # 0.7
    assert by_name != by_key
    data = with_breakdown(payload("S", "b", by_name), alpha_x_delta_5s=0.1,
                          zw_x_a=0.2, aw_x_b=0.4)
    assert BranchScored(**data).score == by_name
    data["score"] = by_key
    assert refused(data).startswith("score: must equal the sum of the breakdown")


def test_ambiguous_extra_keys_are_checked_within_the_documented_tolerance() -> None:
    # "mu_x_a_x_b" is weight mu + term a_x_b, or weight mu_x_a + term b: the term
    # name (and so the order) cannot be read back. Then the score must lie within
    # n * 2**-52 * sum(|contribution|) of the exact sum: 12 * 2**-52 * 1.0 ~ 2.7e-15.
    data = with_breakdown(payload("S", "b", 1.0), alpha_x_delta_5s=0.5, mu_x_a_x_b=0.5)
    assert BranchScored(**data).score == 1.0
    data["score"] = 1.0 + 1e-9
    assert refused(data).startswith("score: must equal the sum of the breakdown")


# ---------------------------------------------------------------- the verdict


@pytest.mark.parametrize("verdict", ["ACCEPT", "MARGINAL"])
def test_a_hard_flag_means_reject(verdict: str) -> None:
    data = payload("S", "b", 0.3, verdict, ("REGRESSION_5S:syntax",))
    assert refused(data).startswith("verdict: must be REJECT when there are hard flags")


@pytest.mark.parametrize("verdict", ["ACCEPT", "MARGINAL"])
def test_a_negative_score_means_reject(verdict: str) -> None:
    data = payload("S", "b", -0.01, verdict)
    assert refused(data).startswith("verdict: must be REJECT for a negative score")


def test_reject_needs_a_flag_or_a_negative_score() -> None:
    data = payload("S", "b", 0.0, "REJECT")
    assert refused(data).startswith("verdict: REJECT needs a hard flag or a negative score")


@pytest.mark.parametrize(
    ("score_", "verdict", "flags"),
    [
        (0.3, "ACCEPT", ()),
        (0.3, "MARGINAL", ()),  # a deployment may set its signal floor above 0.3
        (0.0, "ACCEPT", ()),  # ... or at 0
        (0.0, "MARGINAL", ()),
        (-0.2, "REJECT", ()),
        (0.3, "REJECT", ("NEG_INF_REGRESSION",)),
    ],
)
def test_consistent_verdicts_are_accepted(score_: float, verdict: str,
                                          flags: tuple[str, ...]) -> None:
    assert BranchScored(**payload("S", "b", score_, verdict, flags)).verdict == verdict


# ---------------------------------------------------------------- what the scorer writes


def _term(name: str, weight_name: str, value: float, sign: int = 1) -> ScoringTerm:
    return ScoringTerm(name=name, weight_name=weight_name, default_weight=1.0, sign=sign,
                       fn=lambda parent, child, inputs: value)


@pytest.mark.parametrize(
    "terms",
    [
        [],
        [_term("a", "zw", 0.7), _term("b", "aw", 0.2, -1)],
        [_term("a_x_b", "mu", 0.3), _term("loc", "kappa", 2.0, -1)],  # ambiguous + filled
    ],
)
def test_events_the_scorer_writes_validate_after_a_round_trip_through_the_log(
    cladelog_env: Any, terms: list[ScoringTerm]
) -> None:
    child = make_doc(0.5, {**all_5s(0.61), "5T.time": 0.3, "5F.function": 0.47})
    result = score(make_doc(0.5), child, extra_terms=terms, capital_delta=0.3,
                   selfmodel_calibration_gain=0.2, audit_completeness=0.9,
                   memory_invalidation_count=2)
    data = branch_scored_payload(result, branch_set_id="S", branch_id="b", parent_root="P")
    cladelog_env.append(BRANCH_SCORED, data, stream="fork_score.branch_set:S")
    (event,) = cladelog_env.events(types=[BRANCH_SCORED])
    again = BranchScored(**event.data)  # the stored data (keys sorted) still validates
    assert again.score == result.score
    assert again.verdict == str(result.verdict)
