"""The state machine against the issue's rules 2-6 (each scenario worked out by hand)."""

from __future__ import annotations

import pytest
from cladelog.consensus.errors import ConsensusInputError
from ledger_helpers import Driver

FOUR = {"v1": 10, "v2": 10, "v3": 10, "v4": 10}


def types(out: list[tuple[str, dict]]) -> list[str]:
    return [t for t, _ in out]


def test_bond_activates_at_once_and_bootstrap_gate() -> None:
    d = Driver(open_bonding_epoch=3)
    assert types(d.bond("v1", 10)) == ["consensus.validator_activated"]
    with pytest.raises(ConsensusInputError, match="bootstrap"):
        d.bond("outsider", 10)
    d.tick(3)
    d.bond("outsider", 10)          # epoch 3: bonding is open to anyone
    assert d.state["validators"]["outsider"]["status"] == "active"
    with pytest.raises(ConsensusInputError, match="minimum bond"):
        Driver(min_bond=5).bond("v1", 4)


def test_finality_needs_strictly_more_than_two_thirds() -> None:
    d = Driver({"v1": 1, "v2": 1, "v3": 1})
    d.propose("c1")
    d.vote("v1", "c1")
    assert d.vote("v2", "c1") == []          # 2 of 3 = exactly 2/3: not finalized
    assert d.outcome("c1") == "open"
    out = d.vote("v3", "c1")
    assert types(out) == ["consensus.candidate_finalized"]
    assert d.outcome("c1") == "finalized"


def test_settles_after_challenge_window_and_rewards_counted_votes() -> None:
    d = Driver(FOUR)                         # V=2, C=2, reward 5
    d.propose("c1")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "c1")
    d.vote("v4", "c1", "reject")
    assert d.outcome("c1") == "finalized"    # finalized in epoch 0 -> challenge 0..1
    d.tick()                                 # end of 0: window 0..1 still open
    assert d.outcome("c1") == "finalized"
    out = d.tick()                           # end of 1: voting closes, then settles
    assert types(out)[:2] == ["consensus.voting_closed", "consensus.candidate_settled"]
    assert d.outcome("c1") == "settled"
    assert {v: d.state["validators"][v]["rewards"] for v in FOUR} == dict.fromkeys(FOUR, 5)
    assert {v: d.stake(v) for v in FOUR} == FOUR   # rewards apart from stake


def test_not_finalized_names_missing_power_and_counts_misses_then_jails() -> None:
    d = Driver(FOUR)                          # K=2 misses, jail period 1
    d.propose("c1")
    d.vote("v1", "c1")
    d.vote("v2", "c1")
    out = d.tick(2)
    closed = dict(out)["consensus.voting_closed"]
    assert closed["outcome"] == "not_finalized" and closed["reason"] == "no_quorum"
    assert closed["missing"] == {"validators": ["v3", "v4"], "power": 20, "stake": 20,
                                 "needed_power": 7}   # 2*40//3 + 1 = 27, has 20
    assert d.state["validators"]["v3"]["misses"] == 1
    d.propose("c2")
    d.vote("v1", "c2")
    d.vote("v2", "c2")
    out = d.tick(2)                            # closes in epoch 3
    jailed = [x for t, x in out if t == "consensus.validator_jailed"]
    assert [j["validator"] for j in jailed] == ["v3", "v4"]
    assert jailed[0]["until"] == 3 + 1
    # jailed validators leave new frozen sets
    d.propose("c3")
    assert set(d.state["proposals"]["c3"]["frozen"]) == {"v1", "v2"}
    with pytest.raises(ConsensusInputError, match="jailed until"):
        d.apply("unjail", {"validator": "v3", "epoch": d.ledger.epoch})   # epoch 4 <= 4
    d.tick()
    d.apply("unjail", {"validator": "v3", "epoch": d.ledger.epoch})
    assert d.state["validators"]["v3"]["jailed"] is False
    assert d.state["validators"]["v3"]["misses"] == 0


def test_vote_resets_the_streak() -> None:
    d = Driver(FOUR)
    d.propose("c1")
    d.tick(2)
    assert d.state["validators"]["v1"]["misses"] == 1
    d.propose("c2")
    d.vote("v1", "c2")
    assert d.state["validators"]["v1"]["misses"] == 0


def test_votes_wait_for_the_parent_and_bad_parents_are_refused() -> None:
    d = Driver(FOUR)
    d.propose("c1")
    d.propose("c2", parent="c1")             # open parent: accepted
    with pytest.raises(ConsensusInputError, match="not finalized"):
        d.vote("v1", "c2")
    d.tick(2)                                 # c1 NOT_FINALIZED
    assert d.outcome("c2") == "not_finalized"
    assert d.state["proposals"]["c2"]["reason"] == "parent_not_finalized"
    # no miss for c2: voting was never possible
    assert d.state["validators"]["v1"]["misses"] == 1
    with pytest.raises(ConsensusInputError, match="not_finalized"):
        d.propose("c3", parent="c1")
    assert "c3" not in d.state["proposals"]  # the id stays free
    with pytest.raises(ConsensusInputError, match="already proposed"):
        d.propose("c1")


def test_sibling_of_finalized_never_finalizes_even_after_overturn() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.propose("b")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    assert d.outcome("a") == "finalized"
    d.vote("v4", "b")
    d.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                          "inputs_digest": "e" * 64,
                          "audit": {"verdict": "REJECT", "hard_flags": []}})
    assert d.outcome("a") == "overturned"
    assert d.state["finalized_child"]["genesis"] is None  # reopened
    for v in ("v1", "v2", "v3"):
        d.vote(v, "b")
    assert d.outcome("b") == "open"
    d.tick(2)
    assert d.outcome("b") == "not_finalized"
    assert d.state["proposals"]["b"]["reason"] == "sibling_finalized"
    d.propose("c")                            # the reopened parent takes new proposals
    for v in ("v1", "v2", "v3"):
        d.vote(v, "c")
    assert d.outcome("c") == "finalized"


def test_confirmed_challenge_slashes_accepts_overturns_descendants_only() -> None:
    d = Driver(FOUR)
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    d.vote("v4", "a", "reject")
    d.propose("b", parent="a")
    for v in ("v2", "v3", "v4"):
        d.vote(v, "b")
    assert d.outcome("b") == "finalized"
    with pytest.raises(ConsensusInputError, match="eval digest"):
        d.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                              "inputs_digest": "f" * 64,
                              "audit": {"verdict": "REJECT", "hard_flags": []}})
    out = d.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                                "inputs_digest": "e" * 64,
                                "audit": {"verdict": "ACCEPT", "hard_flags": ["h"]}})
    over = [x["candidate"] for t, x in out if t == "consensus.candidate_overturned"]
    assert over == ["a", "b"]
    slashed = {x["validator"]: x["amount"] for t, x in out
               if t == "consensus.validator_slashed"}
    assert slashed == {"v1": 1, "v2": 1, "v3": 1}   # floor(1/10 * 10); v4 rejected a
    assert d.stake("v4") == 10
    assert not d.state["validators"]["v1"]["tombstoned"]


def test_failed_challenge_is_recorded_and_window_is_enforced() -> None:
    d = Driver(FOUR)
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    out = d.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                                "inputs_digest": "e" * 64,
                                "audit": {"verdict": "ACCEPT", "hard_flags": []}})
    assert out == [("consensus.challenge_resolved",
                    {"candidate": "a", "confirmed": False, "epoch": 0})]
    assert d.outcome("a") == "finalized"
    d.tick(2)
    assert d.outcome("a") == "settled"
    with pytest.raises(ConsensusInputError, match="settled"):
        d.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                              "inputs_digest": "e" * 64,
                              "audit": {"verdict": "REJECT", "hard_flags": []}})


def test_double_vote_slashes_once_and_tombstones() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.vote("v1", "a", "accept")
    out = d.vote("v1", "a", "reject")
    assert types(out) == ["consensus.equivocation_recorded", "consensus.validator_slashed"]
    assert d.stake("v1") == 5                  # floor(1/2 * 10)
    assert d.state["proposals"]["a"]["votes"]["v1"]["decision"] == "accept"  # first counts
    assert d.state["validators"]["v1"]["tombstoned"]
    with pytest.raises(ConsensusInputError, match="tombstoned"):
        d.vote("v1", "a", "reject")
    d.propose("b", by="v2")
    assert "v1" not in d.state["proposals"]["b"]["frozen"]


def test_conflicting_children_and_the_overturned_exception() -> None:
    d = Driver(FOUR)
    d.propose("a")
    d.propose("b")
    d.vote("v1", "a")
    out = d.vote("v1", "b")
    assert dict(out)["consensus.equivocation_recorded"]["kind"] == "conflicting_children"
    # honest case: accept the replacement of an overturned candidate
    d2 = Driver(FOUR)
    d2.propose("a")
    for v in ("v1", "v2", "v3"):
        d2.vote(v, "a")
    d2.apply("challenge", {"candidate": "a", "challenger": "x", "claim": "reject",
                           "inputs_digest": "e" * 64,
                           "audit": {"verdict": "REJECT", "hard_flags": []}})
    d2.propose("c")
    assert d2.vote("v1", "c") == []
    assert not d2.state["validators"]["v1"]["tombstoned"]


def test_evidence_age_copy_and_tombstoned_recorded_not_slashed() -> None:
    d = Driver(FOUR, voting_window=4, evidence_max_age=1, unbonding_period=8)
    d.propose("a")
    one = d.statement("v2", "a", "accept", epoch=0)
    two = d.statement("v2", "a", "reject", epoch=0)
    d.tick(2)                                   # epoch 2: age 2 > 1
    with pytest.raises(ConsensusInputError, match="older"):
        d.apply("evidence", {"first": one, "second": two})
    three = d.statement("v2", "a", "accept", epoch=2)
    four = d.statement("v2", "a", "reject", epoch=1)
    out = d.apply("evidence", {"first": three, "second": four})
    assert dict(out)["consensus.validator_slashed"]["amount"] == 5
    with pytest.raises(ConsensusInputError, match="already recorded"):
        d.apply("evidence", {"first": four, "second": three})
    five = d.statement("v2", "a", "reject", epoch=2)
    out = d.apply("evidence", {"first": three, "second": five})
    assert types(out) == ["consensus.equivocation_recorded"]   # recorded, not slashed again
    assert d.stake("v2") == 5
    future = d.statement("v3", "a", "accept", epoch=3)
    with pytest.raises(ConsensusInputError, match="future"):
        d.apply("evidence", {"first": future, "second": d.statement("v3", "a", "reject", 2)})


def test_unbonding_waits_for_challenge_and_evidence_and_stays_slashable() -> None:
    # V=2 C=2 A=2 U=6
    d = Driver(FOUR)
    d.propose("a")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "a")
    d.apply("unbond", {"validator": "v1", "epoch": 0})
    d.propose("b", by="v2")
    assert "v1" not in d.state["proposals"]["b"]["frozen"]     # leaves new sets
    d.tick(5)                                  # ends of 0..4; r+U-1 = 5
    assert d.state["validators"]["v1"]["status"] == "unbonding"
    evidence_one = d.statement("v1", "a", "accept", epoch=1, digest="1" * 64)
    out = d.tick()                             # end of 5: completes
    assert dict(out)["consensus.unbond_completed"] == {"validator": "v1", "epoch": 5,
                                                       "stake": 10}
    assert d.state["validators"]["v1"]["status"] == "exited"
    assert evidence_one  # (statement made while still bonded; too old now: A=2)


def test_unbonding_is_held_by_a_later_long_policy_proposal() -> None:
    d = Driver(FOUR)
    d.apply("unbond", {"validator": "v1", "epoch": 0})
    assert d.state["validators"]["v1"]["status"] == "unbonding"
    d2 = Driver(FOUR)
    d2.propose("a")                            # v1 frozen in, window 0..1
    d2.apply("unbond", {"validator": "v1", "epoch": 0})
    d2.apply("policy_set", {"policy": {**d2.state["policy"], "version": 2,
                                       "voting_window": 1, "challenge_window": 1,
                                       "evidence_max_age": 0, "unbonding_period": 2}})
    for v in ("v1", "v2", "v3"):
        d2.vote(v, "a")                        # finalized in 0, window C=2 (frozen) 0..1
    d2.tick()                                  # end of 0: but U in force at request = 6
    assert d2.state["validators"]["v1"]["status"] == "unbonding"


def test_zeta_recorded_at_close() -> None:
    d = Driver(FOUR)
    d.propose("a")
    for v in ("v1", "v2", "v3", "v4"):
        d.vote(v, "a")
    out = d.tick(2)
    assert dict(out)["consensus.voting_closed"]["zeta"] == pytest.approx(1.0)


def test_policy_versions_must_increase_and_apply_to_next_proposal() -> None:
    d = Driver(FOUR)
    d.propose("a")
    with pytest.raises(ConsensusInputError, match="version"):
        d.apply("policy_set", {"policy": d.state["policy"]})
    d.apply("policy_set", {"policy": {**d.state["policy"], "version": 2,
                                      "voting_window": 3, "unbonding_period": 7}})
    d.propose("b")
    assert d.state["proposals"]["a"]["voting_window"] == 2
    assert d.state["proposals"]["b"]["voting_window"] == 3


def test_unbonding_jailed_and_late_votes_count_where_frozen_in() -> None:
    # rule 4: votes are accepted until the window ends, also after finalization, also
    # from unbonding or jailed members of the frozen set
    d = Driver(FOUR, voting_window=3, unbonding_period=7)
    d.propose("a")
    d.apply("unbond", {"validator": "v1", "epoch": 0})
    d.vote("v1", "a")                                   # unbonding: counted
    d.vote("v2", "a")
    d.vote("v3", "a")
    assert d.outcome("a") == "finalized"
    d.tick()
    d.state["validators"]["v4"]["jailed"] = True        # jailed after the set froze
    d.state["validators"]["v4"]["jailed_until"] = 9
    assert d.vote("v4", "a", "reject") == []            # after finalization, jailed: counted
    assert d.state["proposals"]["a"]["votes"]["v4"] == {
        "epoch": 1, "digest": d.state["proposals"]["a"]["votes"]["v4"]["digest"],
        "decision": "reject", "audit": {"verdict": "ACCEPT"}}
    assert d.state["proposals"]["a"]["reject_power"] == 10
    d.tick(2)
    with pytest.raises(ConsensusInputError, match="closed"):
        d.vote("v4", "a", "accept", epoch=2)            # the window 0..2 has ended


def test_evidence_against_a_validator_outside_the_frozen_set_is_refused() -> None:
    """A validator that bonded after a proposal opened is not in its frozen set: its vote
    on it would be refused (rule 4), so two conflicting statements on it are no offense,
    and nothing is slashed."""
    d = Driver(FOUR)
    d.propose("a")
    d.bond("late", 10)                         # joins sets frozen from now on, not a's
    assert "late" not in d.state["proposals"]["a"]["frozen"]
    one = d.statement("late", "a", "accept", epoch=0)
    two = d.statement("late", "a", "reject", epoch=0)
    with pytest.raises(ConsensusInputError, match="not in the frozen validator set"):
        d.apply("evidence", {"first": one, "second": two})
    assert d.stake("late") == 10
    assert d.state["evidence"] == {}
