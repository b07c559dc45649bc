"""Hard-flag gating off (the seed's Phase 1b switch): flags reported, not enforced.

Expected scores are worked out here in exact fractions from the seed formula and the
default weights (alpha = beta = 1, eta = 2); expected weight ids are the SHA-256 of JSON
texts written out by hand in RFC 8785 form (sorted keys, no spaces, 1.0 written 1).
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from cladelog.fork_score import score
from cladelog.fork_score.events import BRANCH_SCORED as BRANCH_SCORED_TYPE
from fork_score_docs import make_doc
from fork_score_plugin_helpers import BRANCH_SCORED, payload, write_json

PARENT = make_doc(0.5)
# four 5S rates rise by 0.4, semiotics drops by 0.08 (>= the 0.05 hard-regression floor)
ONE_DROP = make_doc(
    0.5,
    {
        "5S.syntax": 0.9,
        "5S.semantics": 0.9,
        "5S.syllogism": 0.9,
        "5S.synthesis": 0.9,
        "5S.semiotics": 0.42,
    },
)
ONE_DROP_SCORE = (4 * Fraction("0.4") - Fraction("0.08")) / 5  # alpha * delta_5S = 0.304
# every 5S rate +0.4; 5T transfer-learning 0.5 -> 0 (delta_5T = -0.1, RegressionPenalty 0.1)
SOFT = make_doc(
    0.5,
    {
        **{f"5S.{s}": 0.9 for s in ("syntax", "semantics", "syllogism", "synthesis", "semiotics")},
        "5T.transfer-learning": 0.0,
    },
)
SOFT_PENALTY = -2 * Fraction("0.5") / 5  # -eta * RegressionPenalty = -0.2
SOFT_SCORE = Fraction("0.4") - Fraction("0.5") / 5 + SOFT_PENALTY  # 0.4 - 0.1 - 0.2 = 0.1
# only the 5T drop: 0 - 0.1 - 0.2 = -0.3
NEGATIVE = make_doc(0.5, {"5T.transfer-learning": 0.0})
NEGATIVE_SCORE = -Fraction("0.5") / 5 + SOFT_PENALTY

DEFAULTS_JCS = (
    '{"alpha":1,"beta":1,"delta":0.5,"epsilon":0.3,"eta":2,"gamma":1,"iota":0,'
    '"kappa":0,"lambda":0.5,"theta":0.5,"zeta":0}'
)
GATED_ID = hashlib.sha256(DEFAULTS_JCS.encode()).hexdigest()
UNGATED_ID = hashlib.sha256(
    ('{"hard_flag_gating":false,"weights":' + DEFAULTS_JCS + "}").encode()
).hexdigest()


def close(value: float, exact: Fraction) -> bool:
    return abs(Fraction(value) - exact) <= Fraction(1, 10**12)


def test_a_hard_flag_rejects_by_default_and_not_when_gating_is_off() -> None:
    gated = score(PARENT, ONE_DROP)
    ungated = score(PARENT, ONE_DROP, hard_flag_gating=False)
    for result in (gated, ungated):
        assert close(result.score, ONE_DROP_SCORE)
        assert result.flags == ["REGRESSION_5S:semiotics"]  # computed and reported either way
        assert result.breakdown["minus_eta_x_regression_penalty"] == 0  # the 5S mean rose
    assert gated.verdict == "REJECT" and gated.hard_flag_gating is True
    assert ungated.verdict == "ACCEPT" and ungated.hard_flag_gating is False
    assert ungated.to_dict()["hard_flag_gating"] is False
    assert ungated.to_dict()["flags"] == ["REGRESSION_5S:semiotics"]


def test_the_soft_regression_penalty_stays_in_the_formula() -> None:
    result = score(PARENT, SOFT, hard_flag_gating=False)
    assert close(result.breakdown["minus_eta_x_regression_penalty"], SOFT_PENALTY)
    assert close(result.score, SOFT_SCORE)
    assert result.flags == ["REGRESSION_5T:transfer-learning"]
    assert result.verdict == "ACCEPT"  # 0.1 >= the 0.05 signal floor
    assert score(PARENT, SOFT).verdict == "REJECT"


def test_a_negative_score_is_still_reject_with_gating_off() -> None:
    result = score(PARENT, NEGATIVE, hard_flag_gating=False)
    assert close(result.score, NEGATIVE_SCORE)
    assert result.verdict == "REJECT"
    assert result.flags == ["REGRESSION_5T:transfer-learning"]


def test_the_setting_is_part_of_the_weights_id() -> None:
    assert score(PARENT, ONE_DROP).weights_id == GATED_ID  # unchanged for gated scorings
    assert score(PARENT, ONE_DROP, hard_flag_gating=False).weights_id == UNGATED_ID
    assert GATED_ID != UNGATED_ID


@pytest.mark.parametrize("value", [0, 1, "false", None])
def test_gating_must_be_a_boolean(value: Any) -> None:
    with pytest.raises(ValueError, match="hard_flag_gating: must be true or false"):
        score(PARENT, ONE_DROP, hard_flag_gating=value)


# -- the event ---------------------------------------------------------------------------------
def test_the_event_records_the_setting_and_is_checked_against_it() -> None:
    cls = BRANCH_SCORED_TYPE.payload
    data = payload("S", "b1", 0.2, "ACCEPT", ("REGRESSION_5S:syntax",))
    with pytest.raises(ValueError, match="must be REJECT when there are hard flags"):
        cls(**data)  # gating on (the default): a flag means REJECT
    assert cls(**data, hard_flag_gating=False).verdict == "ACCEPT"
    rejected = payload("S", "b1", 0.2, "REJECT", ("REGRESSION_5S:syntax",))
    with pytest.raises(ValueError, match="with hard_flag_gating false only a negative score"):
        cls(**rejected, hard_flag_gating=False)
    assert BRANCH_SCORED_TYPE.schema_version == 2


def test_a_version_1_event_reads_as_gated() -> None:
    v1 = payload("S", "b1", 0.2)
    assert "hard_flag_gating" not in v1
    assert BRANCH_SCORED_TYPE.upcasters[1](v1) == {**v1, "hard_flag_gating": True}


# -- in a deployment ---------------------------------------------------------------------------
@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


def score_cli(env: Any, tmp_path: Path, child: dict[str, Any], branch: str) -> Any:
    return env.cli(
        "fork-score",
        "score",
        "--parent",
        write_json(tmp_path, "p.json", PARENT),
        "--child",
        write_json(tmp_path, f"{branch}.json", child),
        "--branch-set",
        "S1",
        "--branch-id",
        branch,
        "--parent-root",
        "P0",
    )


@pytest.mark.parametrize("cladelog_settings", [{"fork-score": {"hard_flag_gating": False}}])
def test_a_deployment_with_gating_off_records_reports_and_says_so(
    cladelog_env: Any, tmp_path: Path
) -> None:
    run = score_cli(cladelog_env, tmp_path, ONE_DROP, "b1")
    assert run.exit_code == 0, run.output
    printed = json.loads(run.stdout)
    assert printed["verdict"] == "ACCEPT" and printed["hard_flag_gating"] is False
    assert printed["weights_id"] == UNGATED_ID
    assert run.stderr == (
        "warning: hard-flag gating is off ([settings.fork-score] "
        "hard_flag_gating = false): REGRESSION_5S:semiotics reported, "
        "not enforced\n"
    )
    [event] = cladelog_env.events(types=[BRANCH_SCORED])
    assert event.schema_version == 2
    assert event.data["hard_flag_gating"] is False
    assert event.data["flags"] == ["REGRESSION_5S:semiotics"]
    assert event.data["weights_id"] == UNGATED_ID
    row = cladelog_env.state("fork_score.branch_sets")["sets"]["S1"]["b1"]
    assert row["hard_flag_gating"] is False

    gate = cladelog_env.cli("gate", "b1")
    assert gate.exit_code == 0, gate.output
    assert "allow  fork-score     ACCEPT: score " in gate.output
    assert (
        f"(branch b1 of set S1, position {event.position}); hard-flag gating was off "
        "for this scoring: REGRESSION_5S:semiotics not enforced; hard-flag gating is off "
        "in this deployment"
    ) in gate.output

    shown = cladelog_env.cli("fork-score", "branch-set", "show", "S1")
    assert "REGRESSION_5S:semiotics (gating off)" in shown.output


def test_a_deployment_with_gating_on_rejects_and_the_gate_blocks(
    cladelog_env: Any, tmp_path: Path
) -> None:
    run = score_cli(cladelog_env, tmp_path, ONE_DROP, "b1")
    assert run.exit_code == 1
    assert json.loads(run.stdout)["weights_id"] == GATED_ID
    assert "gating" not in run.stderr
    [event] = cladelog_env.events(types=[BRANCH_SCORED])
    assert event.data["hard_flag_gating"] is True and event.data["verdict"] == "REJECT"
    gate = cladelog_env.cli("gate", "b1")
    assert gate.exit_code == 1
    assert "REJECT: REGRESSION_5S:semiotics" in gate.output
    assert "gating" not in gate.output


@pytest.mark.parametrize("cladelog_settings", [{"fork-score": {"hard_flag_gating": False}}])
def test_a_scoring_recorded_with_gating_on_still_blocks_and_the_gate_says_gating_is_off(
    cladelog_env: Any,
) -> None:
    flags = ("REGRESSION_5S:syntax",)
    cladelog_env.append(
        BRANCH_SCORED, payload("S", "old", 0.2, "REJECT", flags), stream="fork_score.branch_set:S"
    )
    [vote] = [v for v in cladelog_env.deployment.gate("old").votes if v.plugin == "fork-score"]
    assert vote.decision == "block"
    assert vote.reason.endswith("; hard-flag gating is off in this deployment")
