"""Property tests: scaling, monotonicity, invariance and robustness of the check."""

from __future__ import annotations

import copy
from typing import Any

from cladelog.lawv import CheckResult, LawVInputError, evaluate
from hypothesis import given, settings
from hypothesis import strategies as st
from lawv_helpers import contract, gain, measurement, plain

RANK = {"HALT": 0, "WARNING": 1, "CONTINUE": 2}
FAST = contract(mc_samples=1)

elo = st.floats(min_value=-300, max_value=300, allow_nan=False)
unc = st.floats(min_value=0.5, max_value=60, allow_nan=False)
positive_gain = st.floats(min_value=0.5, max_value=80, allow_nan=False)


def _measure(ident: str, deltas: list[float], hs: list[float]) -> dict[str, Any]:
    return measurement(ident, deltas, hs)


three = st.lists(elo, min_size=3, max_size=3)
three_unc = st.lists(unc, min_size=3, max_size=3)


@settings(max_examples=60, deadline=None)
@given(three, three_unc, three, three_unc, st.lists(positive_gain, min_size=1, max_size=6),
       st.floats(min_value=0.1, max_value=10))
def test_scaling_claims_by_k_divides_r_by_k(
    old_d: list[float], old_h: list[float], new_d: list[float], new_h: list[float],
    gains: list[float], k: float,
) -> None:
    old, new = _measure("o", old_d, old_h), _measure("n", new_d, new_h)
    base = evaluate(FAST, old, new, [gain(i, g) for i, g in enumerate(gains)])
    scaled = evaluate(FAST, old, new, [gain(i, g * k) for i, g in enumerate(gains)])
    assert base.r is not None and scaled.r is not None
    assert abs(scaled.r - base.r / k) <= 1e-9 * max(1.0, abs(base.r / k))


@settings(max_examples=60, deadline=None)
@given(three, three_unc, three_unc, st.lists(positive_gain, min_size=1, max_size=4),
       elo, elo)
def test_verdict_is_monotone_in_delta_a(
    old_d: list[float], old_h: list[float], new_h: list[float], gains: list[float],
    shift_a: float, shift_b: float,
) -> None:
    # raising every new delta by c (same uncertainties) raises dA by exactly c
    low, high = sorted((shift_a, shift_b))
    old = _measure("o", old_d, old_h)
    entries = [gain(i, g) for i, g in enumerate(gains)]
    r_low = evaluate(FAST, old, _measure("n", [d + low for d in old_d], new_h), entries)
    r_high = evaluate(FAST, old, _measure("n", [d + high for d in old_d], new_h), entries)
    assert r_low.delta_a is not None and r_high.delta_a is not None
    assert r_high.delta_a - r_low.delta_a - (high - low) < 1e-6
    assert RANK[r_low.verdict] <= RANK[r_high.verdict]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["special_path", "epoch_change", "fail_short", "fail_long",
                                 "reversion"]), max_size=6),
       st.lists(positive_gain, min_size=1, max_size=4))
def test_zero_count_entries_do_not_change_r(noise: list[str], gains: list[float]) -> None:
    old = _measure("o", [0.0, 0.0, 0.0], [10.0, 10.0, 10.0])
    new = _measure("n", [9.0, 9.0, 9.0], [10.0, 10.0, 10.0])
    clean = [gain(i, g) for i, g in enumerate(gains)]
    mixed: list[dict[str, Any]] = [copy.deepcopy(e) for e in clean]
    for kind in noise:
        seq = len(mixed)
        if kind == "fail_short":
            mixed.append(gain(seq, 99.0, short_pass=False))
        elif kind == "fail_long":
            mixed.append(gain(seq, 99.0, long_pass=False))
        elif kind == "reversion":
            mixed.append(plain(seq, "reversion", reverts=0))
        else:
            mixed.append(plain(seq, kind))
    a = evaluate(FAST, old, new, clean)
    b = evaluate(FAST, old, new, mixed)
    assert a.r == b.r
    assert a.verdict == b.verdict
    assert b.counted_seqs == tuple(range(len(gains)))


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["contract", "old", "new", "entries", "anchor", "stage"]), json_value)
def test_hostile_input_never_crashes(where: str, junk: Any) -> None:
    c = contract(mc_samples=1)
    old = measurement("o", [0.0, 1.0, 2.0], [5.0, 5.0, 5.0])
    new = measurement("n", [3.0, 4.0, 5.0], [5.0, 5.0, 5.0])
    entries: Any = [gain(1, 10.0)]
    if where == "contract":
        c = junk
    elif where == "old":
        old = junk
    elif where == "new":
        new = {**new, "anchors": junk}
    elif where == "entries":
        entries = junk
    elif where == "anchor":
        c["anchors"][1] = junk
    else:
        entries = [{**gain(1, 10.0), "stages": [junk, {"name": "long", "elo": 1, "pass": True}]}]
    try:
        result = evaluate(c, old, new, entries)
    except LawVInputError as exc:
        assert "\n" not in str(exc)
        assert ":" in str(exc)
    else:
        assert isinstance(result, CheckResult)
        result.to_dict()
