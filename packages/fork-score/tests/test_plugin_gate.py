"""The gate vote: the latest recorded verdict naming the candidate decides."""

from __future__ import annotations

from typing import Any

import pytest
from fork_score_plugin_helpers import BRANCH_SCORED, payload


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


def record(env: Any, data: dict[str, Any]) -> None:
    env.append(BRANCH_SCORED, data, stream=f"fork_score.branch_set:{data['branch_set_id']}")


def vote(env: Any, candidate: str) -> Any:
    votes = [v for v in env.deployment.gate(candidate).votes if v.plugin == "fork-score"]
    assert len(votes) <= 1
    return votes[0] if votes else None


def test_reject_blocks_with_the_flags_as_reason(cladelog_env: Any) -> None:
    flags = ("REGRESSION_5S:syntax", "MISSING_5T_time")
    record(cladelog_env, payload("S", "b1", 0.1, "REJECT", flags, child_root="c1"))
    for candidate in ("b1", "c1"):  # branch id and child root both name it
        v = vote(cladelog_env, candidate)
        assert v.decision == "block"
        assert "REGRESSION_5S:syntax, MISSING_5T_time" in v.reason
    assert not cladelog_env.deployment.gate("c1").allowed


def test_reject_without_flags_names_the_negative_score(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", -0.25, "REJECT"))
    v = vote(cladelog_env, "b1")
    assert v.decision == "block"
    assert "negative score -0.25" in v.reason


@pytest.mark.parametrize("verdict", ["ACCEPT", "MARGINAL"])
def test_accept_and_marginal_allow(cladelog_env: Any, verdict: str) -> None:
    record(cladelog_env, payload("S", "b1", 0.01, verdict, child_root="c1"))
    assert vote(cladelog_env, "c1").decision == "allow"
    assert vote(cladelog_env, "b1").decision == "allow"


def test_a_candidate_never_scored_is_blocked(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.2, child_root="c1"))
    v = vote(cladelog_env, "someone-else")
    assert v.decision == "block" and "never scored" in v.reason
    assert not cladelog_env.deployment.gate("someone-else").allowed
    assert cladelog_env.cli("gate", "someone-else").exit_code == 1


@pytest.mark.parametrize("cladelog_settings", [{"fork-score": {"gate_unscored": "abstain"}}])
def test_a_deployment_may_abstain_on_unscored_candidates(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.2, child_root="c1"))
    assert vote(cladelog_env, "someone-else") is None
    assert cladelog_env.deployment.gate("someone-else").allowed
    assert vote(cladelog_env, "c1").decision == "allow"


def test_latest_by_position_wins_across_sets(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.2, "ACCEPT", child_root="c1"))
    record(cladelog_env, payload("T", "b9", 0.2, "REJECT", ("REGRESSION_5F:function",),
                                 child_root="c1"))
    assert vote(cladelog_env, "c1").decision == "block"
    assert vote(cladelog_env, "b1").decision == "allow"  # its own latest is still ACCEPT
    record(cladelog_env, payload("S", "b1", 0.3, "ACCEPT", child_root="c1"))
    assert vote(cladelog_env, "c1").decision == "allow"


def test_a_superseded_child_root_keeps_its_own_verdict(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.1, "REJECT", ("REGRESSION_5S:syntax",),
                                 child_root="old"))
    record(cladelog_env, payload("S", "b1", 0.2, "ACCEPT", child_root="new"))
    assert vote(cladelog_env, "old").decision == "block"
    assert vote(cladelog_env, "new").decision == "allow"
    assert vote(cladelog_env, "b1").decision == "allow"


def test_gate_command_exit_codes(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "good", 0.2))
    record(cladelog_env, payload("S", "bad", 0.2, "REJECT", ("NEG_INF_REGRESSION",)))
    blocked = cladelog_env.cli("gate", "bad")
    assert blocked.exit_code == 1
    assert "NEG_INF_REGRESSION" in blocked.output
    assert cladelog_env.cli("gate", "good").exit_code == 0
    assert cladelog_env.cli("gate", "unknown").exit_code == 1  # never scored


def test_numbers_are_rounded_for_people_and_whole_in_json(cladelog_env: Any) -> None:
    import json

    score = 0.08943000000000002
    record(cladelog_env, payload("S", "b1", score, "ACCEPT", child_root="c1"))
    gate = cladelog_env.cli("gate", "c1")
    assert "ACCEPT: score 0.0894 (branch b1 of set S" in gate.output
    assert "0.08943" not in gate.output
    shown = cladelog_env.cli("fork-score", "branch-set", "show", "S")
    row = next(line.split() for line in shown.output.splitlines() if " b1 " in line)
    assert row[:4] == ["1", "b1", "0.0894", "1.0000"]
    listed = cladelog_env.cli("fork-score", "branch-set", "list").output.splitlines()
    assert listed[1].split()[:4] == ["S", "1", "b1", "0.0894"]
    whole = json.loads(cladelog_env.cli("fork-score", "branch-set", "show", "S", "--json").output)
    assert whole["branches"][0]["score"] == score
