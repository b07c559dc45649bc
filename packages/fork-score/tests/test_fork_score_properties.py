"""Hypothesis properties of the ForkScore."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import attrs
from cladelog.fork_score import BranchScored, ScoringTerm, WeightSet, score
from cladelog.fork_score.service import branch_scored_payload
from fork_score_docs import ALL_SUBS, SEED_BREAKDOWN_KEYS, SEED_TABLE
from hypothesis import given, settings
from hypothesis import strategies as st

rates = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
maybe_rate = st.one_of(st.none(), rates)
counts = st.integers(min_value=0, max_value=20)
means = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
weights_values = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)

WEIGHT_FIELDS = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta",
    "eta", "theta", "iota", "kappa", "lambda_",
)  # fmt: skip
BUILTIN_NAMES = {key.removeprefix("minus_").split("_x_", 1)[1] for key in SEED_BREAKDOWN_KEYS}
EFFICIENCY = {"finetuning": "adaptation_efficiency", "feedback-loop": "feedback_efficiency"}


@st.composite
def documents(draw: st.DrawFn, rate: st.SearchStrategy[float | None] = maybe_rate) -> Any:
    batteries: dict[str, dict[str, Any]] = {b: {} for b in SEED_TABLE}
    for battery, sub in ALL_SUBS:
        value = draw(rate)
        if value is None:
            continue
        metrics: dict[str, Any] = {SEED_TABLE[battery][sub]: value}
        family = EFFICIENCY.get(sub) if battery == "5F" else None
        if family is not None:
            if draw(st.booleans()):
                metrics[f"{family}_mean_finite"] = draw(means)
            if draw(st.booleans()):
                metrics[f"{family}_infinite_count"] = draw(counts)
            if draw(st.booleans()):
                metrics[f"{family}_neg_infinite_count"] = draw(counts)
        batteries[battery][sub] = metrics
    return {"batteries": batteries}


weight_sets = st.builds(WeightSet, **{field: weights_values for field in WEIGHT_FIELDS})
scalars = st.fixed_dictionaries(
    {
        "capital_delta": st.floats(min_value=-1e3, max_value=1e3, allow_nan=False),
        "selfmodel_calibration_gain": st.floats(min_value=-1e3, max_value=1e3, allow_nan=False),
        "audit_completeness": rates,
        "memory_invalidation_count": st.integers(min_value=0, max_value=10**6),
        "validator_diversity": st.floats(min_value=0.0, max_value=10.0, allow_nan=False),
    }
)


@settings(max_examples=300, deadline=None)
@given(parent=documents(), child=documents(), weights=weight_sets, kwargs=scalars)
def test_breakdown_always_sums_to_the_score(
    parent: Any, child: Any, weights: WeightSet, kwargs: dict[str, Any]
) -> None:
    result = score(parent, child, weights, **kwargs)
    running = 0.0
    for value in result.breakdown.values():
        running += value
    assert running == result.score
    assert math.isclose(math.fsum(result.breakdown.values()), result.score, abs_tol=1e-6)
    assert len(result.breakdown) == 11


@settings(max_examples=300, deadline=None)
@given(
    parent=documents(rate=rates),
    child=documents(),
    weights=weight_sets,
    kwargs=scalars,
    pick=st.integers(min_value=0, max_value=len(ALL_SUBS) - 1),
    fraction=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_raising_a_child_rate_never_lowers_the_score(
    parent: Any,
    child: Any,
    weights: WeightSet,
    kwargs: dict[str, Any],
    pick: int,
    fraction: float,
) -> None:
    battery, sub = ALL_SUBS[pick]
    key = SEED_TABLE[battery][sub]
    low = copy.deepcopy(child)
    # make sure the picked rate exists on the child (it is always in the parent)
    metrics = low["batteries"][battery].setdefault(sub, {})
    old = metrics.setdefault(key, 0.0)
    high = copy.deepcopy(low)
    # a rate between the old one and 1.0
    high["batteries"][battery][sub][key] = min(1.0, old + (1.0 - old) * fraction)
    before = score(parent, low, weights, **kwargs)
    after = score(parent, high, weights, **kwargs)
    assert after.score >= before.score


term_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}(_x_[a-z0-9_]{0,4})?", fullmatch=True)


@st.composite
def extra_terms(draw: st.DrawFn) -> list[ScoringTerm]:
    """Up to four extra terms with distinct names and weights (a few of them with
    names holding ``_x_``, whose breakdown keys are ambiguous), possibly a filler."""
    terms: list[ScoringTerm] = []
    names: set[str] = set()
    weights: set[str] = set()
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        name, weight = draw(term_names), draw(term_names)
        if name in names or weight in weights or name in BUILTIN_NAMES \
                or weight in WEIGHT_FIELDS or weight in ("lambda", "iota", "kappa"):
            continue
        value = draw(st.floats(min_value=-1e3, max_value=1e3, allow_nan=False))
        terms.append(ScoringTerm(name=name, weight_name=weight,
                                 default_weight=draw(weights_values),
                                 sign=draw(st.sampled_from([1, -1])),
                                 fn=lambda parent, child, inputs, v=value: v))
        names.add(name)
        weights.add(weight)
    if draw(st.booleans()):
        value = draw(st.floats(min_value=0.0, max_value=1e3, allow_nan=False))
        terms.append(ScoringTerm(name="filler_term", weight_name="kappa", default_weight=0.5,
                                 sign=-1, fn=lambda parent, child, inputs, v=value: v))
    return terms


@settings(max_examples=300, deadline=None)
@given(parent=documents(), child=documents(), kwargs=scalars, terms=extra_terms(),
       floor=st.floats(min_value=0.0, max_value=2.0, allow_nan=False))
def test_every_event_the_scorer_writes_passes_the_payload_checks(
    parent: Any, child: Any, kwargs: dict[str, Any], terms: list[ScoringTerm], floor: float
) -> None:
    result = score(parent, child, extra_terms=terms, signal_floor=floor, **kwargs)
    payload = branch_scored_payload(result, branch_set_id="S", branch_id="b",
                                    parent_root="P")  # checks itself on construction
    # as stored: canonical JSON (keys sorted, numbers through their repr) and back
    stored = json.loads(json.dumps(attrs.asdict(payload), sort_keys=True))
    assert BranchScored(**stored).score == result.score
