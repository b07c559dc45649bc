"""Policy validation and voting power, from the issue's rules 1 and 7 (numbers computed by hand)."""

from __future__ import annotations

import math

import pytest
from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.policy import Fraction, parse_fraction, parse_policy
from cladelog.consensus.power import frozen_powers, missing_for_quorum, quorum_reached, zeta
from cladelog.core import InputError
from hypothesis import given
from hypothesis import strategies as st
from ledger_helpers import policy_doc


def test_policy_round_trips() -> None:
    policy = parse_policy(policy_doc(cap="1/3", weighting="sqrt"))
    assert parse_policy(policy.to_dict()) == policy
    assert policy.cap == Fraction(1, 3)


@pytest.mark.parametrize(("v", "c", "a", "u", "ok"), [
    (2, 2, 2, 6, True), (2, 2, 2, 5, False), (1, 1, 0, 2, True), (1, 1, 0, 1, False),
    (3, 4, 5, 12, True), (3, 4, 5, 11, False)])
def test_unbonding_must_cover_voting_challenge_and_evidence(v: int, c: int, a: int, u: int,
                                                            ok: bool) -> None:
    doc = policy_doc(voting_window=v, challenge_window=c, evidence_max_age=a,
                     unbonding_period=u)
    if ok:
        assert parse_policy(doc).unbonding_period == u
    else:
        with pytest.raises(ConsensusInputError, match="unbonding_period"):
            parse_policy(doc)


@pytest.mark.parametrize(("field", "value"), [
    ("weighting", "cube"), ("cap", "2/1"), ("cap", "0/3"), ("cap", 0.3), ("voting_window", 0),
    ("min_bond", 0), ("reward_per_vote", -1), ("version", True), ("bootstrap", ["a", "a"]),
    ("slash", {"equivocation": "1/2"}), ("jail", {"misses": 0, "period": 1})])
def test_bad_fields_are_named(field: str, value: object) -> None:
    with pytest.raises(InputError, match=f"policy.{field}"):
        parse_policy(policy_doc(**{field: value}))


def test_unknown_and_missing_fields() -> None:
    with pytest.raises(ConsensusInputError, match=r"policy\.quorum: unknown field"):
        parse_policy({**policy_doc(), "quorum": "2/3"})
    doc = policy_doc()
    del doc["min_bond"]
    with pytest.raises(ConsensusInputError, match=r"policy\.min_bond: missing"):
        parse_policy(doc)


def test_fraction_parse() -> None:
    assert parse_fraction("1/10", "f").of(99) == 9
    for bad in ("1/0", "01/3", "-1/3", "1.5/3", "3/2"):
        with pytest.raises(ConsensusInputError):
            parse_fraction(bad, "f")


def test_power_linear_sqrt_and_cap_by_hand() -> None:
    stakes = {"a": 100, "b": 16, "c": 1, "d": 0}
    assert frozen_powers(stakes, "linear", None) == {"a": 100, "b": 16, "c": 1}
    assert frozen_powers(stakes, "sqrt", None) == {"a": 10, "b": 4, "c": 1}
    # cap 1/3 of W = 117 -> floor(39): a capped, others untouched, nothing redistributed
    assert frozen_powers(stakes, "linear", Fraction(1, 3)) == {"a": 39, "b": 16, "c": 1}
    # a cap below 1 is raised to 1 (max(1, ...)): W = 3, 1/10 -> floor(0.3) = 0 -> 1
    assert frozen_powers({"x": 1, "y": 2}, "linear", Fraction(1, 10)) == {"x": 1, "y": 1}


def test_quorum_is_strictly_more_than_two_thirds() -> None:
    assert not quorum_reached(2, 3)      # exactly 2/3
    assert quorum_reached(3, 4)
    assert not quorum_reached(66, 99)
    assert quorum_reached(67, 99)
    assert not quorum_reached(0, 0)
    assert missing_for_quorum(2, 3) == 1
    assert missing_for_quorum(0, 100) == 67
    assert missing_for_quorum(80, 100) == 0


@given(st.integers(0, 10**6), st.integers(1, 10**6))
def test_quorum_matches_exact_rational(accepting: int, total: int) -> None:
    from fractions import Fraction as F
    assert quorum_reached(accepting, total) == (F(accepting, total) > F(2, 3))
    need = missing_for_quorum(accepting, total)
    assert quorum_reached(accepting + need, total)
    if need > 0:
        assert not quorum_reached(accepting + need - 1, total)


@given(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 10**9), min_size=1),
       st.sampled_from(["linear", "sqrt"]),
       st.one_of(st.none(), st.tuples(st.integers(1, 10), st.integers(10, 20))))
def test_power_rule_1(stakes: dict[str, int], weighting: str,
                      cap: tuple[int, int] | None) -> None:
    frac = None if cap is None else Fraction(*cap)
    powers = frozen_powers(stakes, weighting, frac)
    weights = {v: (math.isqrt(s) if weighting == "sqrt" else s) for v, s in stakes.items()}
    assert set(powers) == {v for v, w in weights.items() if w > 0}
    total_w = sum(weights.values())
    for v, p in powers.items():
        assert p >= 1
        assert p <= weights[v]
        if frac is not None:
            assert p == max(1, min(weights[v], frac.p * total_w // frac.q))
        else:
            assert p == weights[v]


def test_zeta_by_hand() -> None:
    assert zeta([5, 5, 5, 5], 4) == pytest.approx(1.0)
    assert zeta([1, 1], 4) == pytest.approx(0.5)   # H = 1 bit, log2 4 = 2
    assert zeta([10], 1) == 0.0                     # N <= 1
    assert zeta([], 5) == 0.0
    assert zeta([1000, 1], 2) < 0.02                # one holds almost all
    h = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
    assert zeta([3, 1], 3) == pytest.approx(h / math.log2(3))
