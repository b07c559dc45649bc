"""Conformance with the issue's "Precise rules" 1-7, one test per rule sentence that
the older tests did not assert (the map is docs/conformance.md).

Every expected number is worked out in the test from the rule's own words (a comment
shows the arithmetic); nothing is taken from the code under test. Test names carry the
rule number (``test_rN_...``) so the map can point at them.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.ledger import Ledger
from ledger_helpers import Driver, policy_doc

FOUR = {"v1": 10, "v2": 10, "v3": 10, "v4": 10}
CHALLENGE = {"challenger": "x", "claim": "reject", "inputs_digest": "e" * 64}
REJECTING = {"verdict": "REJECT", "hard_flags": []}


def types(out: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [t for t, _ in out]


def challenge(d: Driver, cid: str, audit: dict[str, Any] = REJECTING) -> Any:
    return d.apply("challenge", {"candidate": cid, **CHALLENGE, "audit": audit})


def new_policy(d: Driver, **over: Any) -> None:
    version = d.state["policy"]["version"] + 1
    d.apply("policy_set", {"policy": {**d.state["policy"], "version": version, **over}})


def slashed(out: list[tuple[str, dict[str, Any]]]) -> dict[str, int]:
    return {x["validator"]: x["amount"] for t, x in out if t == "consensus.validator_slashed"}


# ---------------------------------------------------------------- rule 1: numbers
@pytest.mark.parametrize("stake", [2.5, True, "10", -3, 0])
def test_r1_stakes_are_integers_in_the_smallest_unit(stake: Any) -> None:
    with pytest.raises(ConsensusInputError, match=r"bond\.stake"):
        Driver().bond("v1", stake)


def test_r1_quorum_is_measured_against_the_capped_total() -> None:
    # stakes 100, 10, 10; cap 1/3: W = 120, limit floor(1 * 120 / 3) = 40
    # powers 40, 10, 10 (nothing redistributed): total 60
    d = Driver({"v1": 100, "v2": 10, "v3": 10}, cap="1/3")
    d.propose("a")
    assert d.state["proposals"]["a"]["frozen"] == {"v1": 40, "v2": 10, "v3": 10}
    assert d.state["proposals"]["a"]["total_power"] == 60
    d.vote("v1", "a")  # 3 * 40 = 120, not > 2 * 60 = 120
    assert d.outcome("a") == "open"
    d.vote("v2", "a")  # 3 * 50 = 150 > 120
    assert d.outcome("a") == "finalized"
    # without the cap v1 alone holds 100 of 120: 300 > 240 finalizes
    u = Driver({"v1": 100, "v2": 10, "v3": 10})
    u.propose("a")
    u.vote("v1", "a")
    assert u.outcome("a") == "finalized"


def test_r1_slash_is_the_floor_of_the_fraction_of_the_stake_held_then() -> None:
    d = Driver(
        {"v1": 7, "v2": 10, "v3": 10, "v4": 10}, slash={"equivocation": "1/2", "bad_accept": "1/3"}
    )
    d.propose("a")
    for v in ("v1", "v2", "v3"):  # 27 of 37: 81 > 74
        d.vote(v, "a")
    out = challenge(d, "a")
    # floor(7/3) = 2, floor(10/3) = 3
    assert slashed(out) == {"v1": 2, "v2": 3, "v3": 3}
    assert d.stake("v1") == 5
    d.propose("b", by="v2")  # v1 (stake 5) is frozen in b
    d.vote("v1", "b", "accept")
    out = d.vote("v1", "b", "reject")
    assert slashed(out) == {"v1": 2}  # floor(5/2) of the stake held now, not of 7
    assert d.stake("v1") == 3


# ---------------------------------------------------------------- rule 2: epochs
def test_r2_the_log_starts_in_epoch_0_and_epoch_closed_ends_the_current_one() -> None:
    ledger = Ledger()
    assert ledger.epoch == 0
    with pytest.raises(ConsensusInputError, match=r"epoch_closed\.epoch"):
        ledger.apply("epoch_closed", {"epoch": 1})
    ledger.apply("epoch_closed", {"epoch": 0})
    assert ledger.epoch == 1


def test_r2_a_w_epoch_window_opened_in_e_covers_e_to_e_plus_w_minus_1() -> None:
    d = Driver(FOUR, voting_window=3, unbonding_period=7)  # U >= 3 + 2 + 2
    d.tick()
    d.propose("a")  # e = 1, W = 3: epochs 1, 2, 3
    with pytest.raises(ConsensusInputError, match="outside the voting window"):
        d.vote("v1", "a", epoch=0)
    d.vote("v1", "a")  # signed in 1
    d.tick(2)  # epoch 3, the last of the window
    d.vote("v2", "a")  # signed in 3: accepted
    out = d.tick()  # end of 3 closes it
    assert dict(out)["consensus.voting_closed"]["epoch"] == 3
    with pytest.raises(ConsensusInputError, match="closed"):
        d.vote("v3", "a", epoch=3)  # epoch 4: the window has ended


def test_r2_the_challenge_window_starts_in_the_epoch_of_finalization() -> None:
    d = Driver(FOUR, voting_window=3, unbonding_period=7)  # C = 2
    d.propose("a")  # voting 0..2
    d.tick()
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")  # finalized in epoch 1: challenge window 1..2
    assert d.state["proposals"]["a"]["finalized_epoch"] == 1
    d.tick()  # end of 1: not settled (window 1..2)
    assert d.outcome("a") == "finalized"
    trial = d.ledger.copy()  # a challenge in epoch 2 is still in the window
    trial.apply("challenge", {"candidate": "a", **CHALLENGE, "audit": REJECTING})
    assert trial.state["proposals"]["a"]["outcome"] == "overturned"
    out = d.tick()  # end of 2 = f + C - 1: settles
    assert "consensus.candidate_settled" in types(out)
    assert d.state["proposals"]["a"]["settled_epoch"] == 2


def test_r2_unbonding_requested_in_r_completes_at_the_end_of_r_plus_u_minus_1() -> None:
    d = Driver(FOUR)  # U = 6
    d.tick()
    d.apply("unbond", {"validator": "v2", "epoch": 1})  # r = 1: end of 6
    d.tick(5)  # ends of 1..5
    assert d.state["validators"]["v2"]["status"] == "unbonding"
    out = d.tick()  # end of 6
    assert dict(out)["consensus.unbond_completed"]["epoch"] == 6


def test_r2_unbonding_waits_for_the_challenge_window_of_a_frozen_in_proposal() -> None:
    # policy 1 has long windows; a later policy shortens U; a proposal frozen under the
    # first still holds the validator until its challenge window closed
    d = Driver(FOUR, voting_window=4, challenge_window=4, evidence_max_age=0, unbonding_period=8)
    d.propose("a")  # voting 0..3, C = 4 frozen
    new_policy(d, voting_window=1, challenge_window=1, evidence_max_age=0, unbonding_period=2)
    d.apply("unbond", {"validator": "v1", "epoch": 0})  # U = 2: r + U - 1 = 1
    d.tick(3)
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")  # finalized in 3: challenge window 3..6
    d.tick(3)  # ends of 3, 4, 5
    assert d.state["validators"]["v1"]["status"] == "unbonding"
    out = d.tick()  # end of 6: a settles, then v1 leaves (in that order)
    order = types(out)
    assert order.index("consensus.candidate_settled") < order.index("consensus.unbond_completed")
    assert d.state["validators"]["v1"]["status"] == "exited"


def test_r2_unbonding_waits_for_the_evidence_max_age_after_the_voting_window() -> None:
    d = Driver(FOUR, voting_window=2, challenge_window=1, evidence_max_age=3, unbonding_period=6)
    d.propose("a")  # voting 0..1; nobody votes: not finalized
    d.apply("unbond", {"validator": "v1", "epoch": 0})  # r + U - 1 = 5
    # a later policy lengthens the evidence max age: evidence against a vote of window
    # 0..1 is now accepted until epoch 1 + 8 = 9, so v1 may not leave before its end
    new_policy(d, voting_window=1, challenge_window=1, evidence_max_age=8, unbonding_period=10)
    d.tick(9)  # ends of 0..8
    assert d.state["validators"]["v1"]["status"] == "unbonding"
    out = d.tick()  # end of 9
    assert dict(out)["consensus.unbond_completed"]["validator"] == "v1"


def test_r2_inside_one_epoch_closed_windows_close_then_settle_then_unbondings() -> None:
    d = Driver(FOUR, voting_window=2, challenge_window=2, evidence_max_age=0, unbonding_period=4)
    d.apply("unbond", {"validator": "v4", "epoch": 0})  # end of 0 + 4 - 1 = 3
    d.tick(2)
    d.propose("a")  # epoch 2, frozen v1..v3, voting 2..3
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")  # finalized in 2: challenge 2..3
    out = d.tick(2)  # the end of 3 does all three
    assert types(out) == (
        ["consensus.voting_closed", "consensus.candidate_settled"]
        + ["consensus.reward_credited"] * 3
        + ["consensus.unbond_completed"]
    )


# ---------------------------------------------------------------- rule 3: validators
def test_r3_a_bond_joins_only_sets_frozen_from_then_on() -> None:
    d = Driver({"v1": 10, "v2": 10, "v3": 10})
    d.propose("a")
    d.bond("v4", 10)
    d.propose("b")
    assert set(d.state["proposals"]["a"]["frozen"]) == {"v1", "v2", "v3"}
    assert set(d.state["proposals"]["b"]["frozen"]) == {"v1", "v2", "v3", "v4"}
    with pytest.raises(ConsensusInputError, match="not in the frozen validator set"):
        d.vote("v4", "a")


def test_r3_unbonding_stake_stays_slashable_before_and_after_the_request() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.propose("b")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")  # an offense before the request (a is bad)
    d.apply("unbond", {"validator": "v1", "epoch": 0})
    out = challenge(d, "a")
    assert slashed(out)["v1"] == 1  # floor(10/10)
    d.vote("v1", "b", "accept")  # honest: a was overturned in this epoch
    out = d.vote("v1", "b", "reject")  # an offense after the request
    assert slashed(out) == {"v1": 4}  # floor(9/2)
    assert d.state["validators"]["v1"]["status"] == "unbonding"
    out = d.tick(6)
    assert dict(out)["consensus.unbond_completed"] == {"validator": "v1", "epoch": 5, "stake": 5}


def test_r3_a_miss_when_the_parent_finalized_before_the_window_closed() -> None:
    d = Driver(FOUR)  # voting 2 epochs
    d.propose("a")
    d.propose("b", parent="a")  # both open 0..1; votes on b wait for a
    d.tick()
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")  # a finalized in epoch 1, before b's window closes
    d.vote("v1", "b")
    d.tick()  # end of 1: both close
    misses = {v: d.state["validators"][v]["misses"] for v in FOUR}
    # a: v4 missed; b: v2, v3, v4 missed (voting on b was possible in epoch 1)
    assert misses == {"v1": 0, "v2": 1, "v3": 1, "v4": 2}


def test_r3_no_miss_on_an_overturned_candidate() -> None:
    d = Driver(FOUR)
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    challenge(d, "a")  # overturned before its window closed
    d.tick(2)
    assert d.state["validators"]["v4"]["misses"] == 0


def test_r3_unjail_uses_the_jail_period_in_force_at_jailing() -> None:
    d = Driver(FOUR, jail={"misses": 1, "period": 3}, unbonding_period=8)
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    out = d.tick(2)  # end of 1: v4 missed once, K = 1: jailed until 1 + 3
    assert dict(out)["consensus.validator_jailed"]["until"] == 4
    new_policy(d, jail={"misses": 1, "period": 0})
    with pytest.raises(ConsensusInputError, match="jailed until"):
        d.apply("unjail", {"validator": "v4", "epoch": 2})
    d.tick(3)  # epoch 5 = j + P + 1
    d.apply("unjail", {"validator": "v4", "epoch": 5})
    assert d.state["validators"]["v4"]["jailed"] is False


def test_r3_rewards_are_those_in_force_at_settlement_and_apart_from_stake() -> None:
    d = Driver(FOUR)  # reward 5 when a opens
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    d.vote("v4", "a", "reject")  # a counted reject is rewarded too
    new_policy(d, reward_per_vote=7)
    d.tick(2)
    assert {v: d.state["validators"][v]["rewards"] for v in FOUR} == dict.fromkeys(FOUR, 7)
    d.propose("b", parent="a")
    assert d.state["proposals"]["b"]["frozen"] == FOUR  # rewards never add power


# ---------------------------------------------------------------- rule 4: proposals
def test_r4_a_settled_parent_takes_proposals_an_overturned_one_does_not() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.propose("x")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    d.tick(2)
    assert d.outcome("a") == "settled"
    d.propose("b", parent="a")  # on a settled parent
    for v in ("v1", "v2", "v3"):
        d.vote(v, "b")
    challenge(d, "b")
    assert d.outcome("b") == "overturned"
    with pytest.raises(ConsensusInputError, match="overturned"):
        d.propose("c", parent="b")
    assert "c" not in d.state["proposals"]
    d.propose("c", parent="a")  # the id stayed free


def test_r4_a_later_conflicting_statement_changes_no_tally() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.vote("v1", "a", "reject")
    d.vote("v1", "a", "accept")  # evidence, not a vote
    proposal = d.state["proposals"]["a"]
    assert (proposal["accept_power"], proposal["reject_power"]) == (0, 10)
    assert proposal["votes"]["v1"]["decision"] == "reject"


# ---------------------------------------------------------------- rule 5: offenses
def test_r5_windows_overlap_exactly_when_their_epoch_ranges_intersect() -> None:
    d = Driver(FOUR)  # voting 2 epochs
    d.propose("a")  # 0..1
    first = d.statement("v2", "a", epoch=0)
    d.vote("v2", "a", epoch=0, digest=first["digest"])
    d.tick()
    d.propose("b")  # 1..2: shares epoch 1 with a
    d.vote("v1", "a")
    out = d.vote("v1", "b")
    assert dict(out)["consensus.equivocation_recorded"]["kind"] == "conflicting_children"
    d.tick()  # a closes not finalized
    d.propose("c", by="v3")  # 2..3: no epoch in common with a (0..1)
    later = d.statement("v2", "c")
    assert d.vote("v2", "c", digest=later["digest"]) == []
    assert not d.state["validators"]["v2"]["tombstoned"]
    with pytest.raises(ConsensusInputError, match="do not overlap"):
        d.apply("evidence", {"first": first, "second": later})


def test_r5_a_tombstoned_validators_earlier_counted_vote_still_counts() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.vote("v1", "a", "accept")
    d.vote("v1", "a", "reject")  # tombstoned
    d.vote("v2", "a")
    d.vote("v3", "a")  # 10 + 10 + 10 = 30 of 40: 90 > 80
    assert d.outcome("a") == "finalized"
    assert d.state["proposals"]["a"]["accept_power"] == 30


def test_r5_a_challenge_slashes_accepts_known_only_from_submitted_evidence() -> None:
    d = Driver(FOUR, slash={"equivocation": "1/2", "bad_accept": "1/2"})
    d.propose("a")
    one = d.statement("v4", "a", "accept")
    two = d.statement("v4", "a", "reject")
    d.apply("evidence", {"first": one, "second": two})  # v4: 10 -> 5, tombstoned
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    out = challenge(d, "a")
    # floor(10/2) = 5 for v1..v3; floor(5/2) = 2 for v4 (its accept is not counted)
    assert slashed(out) == {"v1": 5, "v2": 5, "v3": 5, "v4": 2}
    assert not d.state["validators"]["v1"]["tombstoned"]


@pytest.mark.parametrize("outcome", ["open", "not_finalized", "overturned"])
def test_r5_a_challenge_only_on_a_finalized_candidate(outcome: str) -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.propose("b", parent="a")
    if outcome == "not_finalized":
        d.tick(2)
    elif outcome == "overturned":
        for v in ("v1", "v2", "v3"):
            d.vote(v, "a")
        challenge(d, "a")  # overturns b as a descendant
        assert d.outcome("b") == "overturned"
    cid = "b" if outcome == "overturned" else "a"
    assert d.outcome(cid) == outcome
    with pytest.raises(ConsensusInputError, match="only a finalized"):
        challenge(d, cid)


def test_r5_evidence_age_boundary_and_window() -> None:
    d = Driver(FOUR, voting_window=4, evidence_max_age=1, unbonding_period=8)
    d.tick()
    d.propose("a")  # voting 1..4
    with pytest.raises(ConsensusInputError, match="outside the voting window"):
        d.apply(
            "evidence",
            {
                "first": d.statement("v1", "a", "accept", epoch=0),
                "second": d.statement("v1", "a", "reject", epoch=1),
            },
        )
    one = d.statement("v1", "a", "accept", epoch=1)
    two = d.statement("v1", "a", "reject", epoch=1)
    d.tick(2)  # epoch 3: age 3 - 1 = 2 > 1
    with pytest.raises(ConsensusInputError, match="older"):
        d.apply("evidence", {"first": one, "second": two})
    three = d.statement("v2", "a", "accept", epoch=1)
    four = d.statement("v2", "a", "reject", epoch=2)
    out = d.apply("evidence", {"first": three, "second": four})  # age 3 - 2 = 1 = max
    assert dict(out)["consensus.validator_slashed"]["validator"] == "v2"


# ---------------------------------------------------------------- rule 6: zeta
def test_r6_zeta_over_counted_accepts_with_n_the_frozen_set_size() -> None:
    d = Driver({"v1": 30, "v2": 10, "v3": 10, "v4": 10}, unbonding_period=6)
    d.propose("a")
    d.vote("v1", "a")
    d.vote("v2", "a")
    d.vote("v3", "a", "reject")
    d.vote("v3", "a", "accept")  # not counted: evidence
    out = d.tick(2)
    # shares 30/40, 10/40 among the counted accepts; N = 4 (v4 never voted)
    h = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
    assert dict(out)["consensus.voting_closed"]["zeta"] == pytest.approx(h / math.log2(4))
    one = Driver({"v1": 10})
    one.propose("a")
    one.vote("v1", "a")
    assert dict(one.tick(2))["consensus.voting_closed"]["zeta"] == 0.0  # N = 1


# ---------------------------------------------------------------- rule 7: policy versions
def test_r7_weighting_cap_and_challenge_window_are_frozen_at_open() -> None:
    stakes = {"v1": 100, "v2": 16, "v3": 16, "v4": 16}
    d = Driver(stakes)
    d.propose("a")  # linear, no cap, C = 2
    new_policy(d, weighting="sqrt", cap="1/3", challenge_window=1)
    d.propose("b")
    assert d.state["proposals"]["a"]["frozen"] == stakes
    # sqrt: 10, 4, 4, 4; W = 22, cap floor(22/3) = 7
    assert d.state["proposals"]["b"]["frozen"] == {"v1": 7, "v2": 4, "v3": 4, "v4": 4}
    d.vote("v1", "a")  # 100 of 148: 300 > 296
    assert d.outcome("a") == "finalized"
    d.tick()  # end of 0: C = 1 would settle it, frozen C = 2 not
    assert d.outcome("a") == "finalized"
    trial = d.ledger.copy()  # epoch 1 is inside the frozen challenge window 0..1
    trial.apply("challenge", {"candidate": "a", **CHALLENGE, "audit": REJECTING})
    assert trial.state["proposals"]["a"]["outcome"] == "overturned"
    d.tick()
    assert d.outcome("a") == "settled"


def test_r7_unbonding_period_is_the_one_in_force_at_the_request() -> None:
    d = Driver(FOUR)  # U = 6
    d.apply("unbond", {"validator": "v1", "epoch": 0})  # end of 5
    new_policy(d, challenge_window=1, evidence_max_age=1, unbonding_period=4)
    d.apply("unbond", {"validator": "v2", "epoch": 0})  # end of 3
    done = {x["validator"]: x["epoch"] for t, x in d.tick(6) if t == "consensus.unbond_completed"}
    assert done == {"v1": 5, "v2": 3}


def test_r7_evidence_age_and_slash_fraction_in_force_when_evidence_is_applied() -> None:
    d = Driver(FOUR, voting_window=4, evidence_max_age=2, unbonding_period=8)
    d.propose("a")
    one = d.statement("v1", "a", "accept", epoch=0)
    two = d.statement("v1", "a", "reject", epoch=0)
    d.tick(2)  # age 2
    new_policy(d, evidence_max_age=1, slash={"equivocation": "1/5", "bad_accept": "1/10"})
    with pytest.raises(ConsensusInputError, match="older"):
        d.apply("evidence", {"first": one, "second": two})
    three = d.statement("v2", "a", "accept", epoch=2)
    four = d.statement("v2", "a", "reject", epoch=2)
    out = d.apply("evidence", {"first": three, "second": four})
    assert slashed(out) == {"v2": 2}  # floor(10/5), the fraction now in force


def test_r7_jail_misses_in_force_when_the_window_closes() -> None:
    d = Driver(FOUR)  # K = 2 when a opens
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    new_policy(d, jail={"misses": 1, "period": 1})
    out = d.tick(2)
    assert [x["validator"] for t, x in out if t == "consensus.validator_jailed"] == ["v4"]


def test_r7_the_quorum_is_not_a_policy_field() -> None:
    with pytest.raises(ConsensusInputError, match="quorum: unknown field"):
        Driver().apply("policy_set", {"policy": {**policy_doc(version=2), "quorum": "1/2"}})


# ---------------------------------------------------------------- decisions the rules left open
def test_decision_an_equivocation_seen_in_the_log_is_recorded_whatever_its_age() -> None:
    # the max age refuses *submitted* evidence; a vote that completes an equivocation is
    # inside its voting window (its validator cannot have left: rule 2), so it is recorded
    d = Driver(FOUR, voting_window=4, evidence_max_age=0, unbonding_period=6)
    d.propose("a")
    d.vote("v1", "a", "accept", epoch=0)
    d.tick(3)  # epoch 3: a pair signed in 0 is 3 epochs old > 0
    out = d.vote("v1", "a", "reject", epoch=0)
    assert types(out) == ["consensus.equivocation_recorded", "consensus.validator_slashed"]


def test_decision_a_tombstoned_member_gets_no_miss() -> None:
    d = Driver(FOUR, jail={"misses": 1, "period": 1})
    d.propose("a")
    d.apply(
        "evidence",
        {"first": d.statement("v4", "a", "accept"), "second": d.statement("v4", "a", "reject")},
    )
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    out = d.tick(2)
    assert "consensus.validator_jailed" not in types(out)
    assert d.state["validators"]["v4"]["misses"] == 0


# ---------------------------------------------------------------- accountable safety
def test_a_second_quorum_on_an_overlapping_sibling_is_a_recorded_conflict() -> None:
    # issue: "the second is not finalized, and the evidence slashes every validator
    # that signed both"
    d = Driver(FOUR)
    d.propose("a")
    d.propose("b")  # sibling, same window 0..1
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    out: list[tuple[str, dict[str, Any]]] = []
    for v in ("v2", "v3", "v4"):
        out += d.vote(v, "b")
    # v2 and v3 signed both: each slashed floor(10 / 2) = 5 and tombstoned
    assert slashed(out) == {"v2": 5, "v3": 5}
    conflict = dict(out)["consensus.conflict_recorded"]
    # b's accepts hold 30 of 40 (90 > 80); the double signers hold 20 of 40 > 1/3
    assert conflict == {
        "candidates": ["a", "b"],
        "double_signers": ["v2", "v3"],
        "epoch": 0,
        "double_signer_power": 20,
        "total_power": 40,
    }
    assert d.outcome("b") == "open"
    d.tick(2)
    assert (d.outcome("b"), d.state["proposals"]["b"]["reason"]) == (
        "not_finalized",
        "sibling_finalized",
    )
