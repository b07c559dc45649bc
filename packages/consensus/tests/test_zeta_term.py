"""ζ reaches fork-score through its term hook (rule 6): a fork whose child names a
closed candidate gets that candidate's ζ as ValidatorDiversity."""

from __future__ import annotations

import math

import pytest
from cladelog.consensus.zeta_term import zeta_for
from cladelog.core.testing import CladelogEnv
from cladelog.fork_score import scoring_context
from cladelog.fork_score.service import score_in_context
from ledger_helpers import Driver

PARENT = {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.5}}}}


def test_zeta_value_from_the_state_by_hand() -> None:
    d = Driver({"v1": 9, "v2": 3, "v3": 3, "v4": 1})
    d.propose("c")
    for v in ("v1", "v2", "v3"):
        d.vote(v, "c")               # 15 of 16 > 2/3
    assert zeta_for({"ledger": d.state}, "c") is None   # window not closed yet
    d.tick(2)
    state = {"ledger": d.state}
    shares = [9 / 15, 3 / 15, 3 / 15]
    expected = -sum(p * math.log2(p) for p in shares) / math.log2(4)
    assert zeta_for(state, "c") == pytest.approx(expected)
    assert zeta_for(state, "unknown") is None


def test_zeta_term_fills_validator_diversity(cladelog_env: CladelogEnv) -> None:
    result = cladelog_env.cli("consensus", "simulate", "--validators", "4", "--epochs", "2",
                              "--seed", "1")
    assert result.exit_code == 0, result.output
    state = cladelog_env.state("consensus.state")
    closed = state["ledger"]["proposals"]["c0-h"]
    assert closed["zeta"] == pytest.approx(1.0)   # four equal validators all accepted
    context = scoring_context(cladelog_env.deployment)
    assert [t.name for t in context.terms] == ["consensus_zeta"]
    child = {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.6}}}, "candidate": "c0-h"}
    scored = score_in_context(context, PARENT, child, {"zeta": 0.25})
    assert scored.term_values["validator_diversity"] == pytest.approx(1.0)
    assert scored.breakdown["zeta_x_validator_diversity"] == pytest.approx(0.25)
    # no candidate named: the caller scalar, as in single-validator mode
    plain = score_in_context(context, PARENT, {**child, "candidate": None}, {"zeta": 0.25},
                             validator_diversity=0.5)
    assert plain.term_values["validator_diversity"] == 0.5
