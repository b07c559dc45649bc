"""The lawv gate vote: HALT blocks until a human resumes; WARNING, GAP, DEFECTIVE warn."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.lawv import LawVInputError
from cladelog.lawv.commands import MeasurementInput, add_contract, add_review, run_check
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement


def _file(doc: dict[str, Any]) -> MeasurementInput:
    return MeasurementInput(source=f"{doc['id']}.json", document=doc)


def _vote(lawv: Any, *, fresh: bool = False) -> tuple[str, str]:
    """The lawv vote, from the incremental state or from a replay from position 0."""
    if fresh:
        from cladelog.lawv.gate import decide

        return decide(lawv.fresh_state(), lawv.dep.settings("lawv"))
    votes = {v.plugin: v for v in lawv.gate().votes}
    return votes["lawv"].decision, votes["lawv"].reason


def _halt(lawv: Any, seq: int, new_id: str, new_delta: float, *, first: bool = False) -> str:
    """Append one gain test of +20 and check with the given new measurement: R = dA / 20."""
    lawv.entry(gain(seq, 20.0))
    old = _file(one_anchor_measurement("m0", -50.0)) if first else None
    outcome = run_check(lawv.dep, old=old, new=_file(one_anchor_measurement(new_id, new_delta)))
    return str(outcome.check["check_id"]), outcome.result.verdict


def _review(lawv: Any, check: str, decision: str) -> None:
    add_review(lawv.dep, check=check, decision=decision, reviewer="ana", reason="looked at it")


@pytest.fixture
def lawv_ready(lawv: Any) -> Any:
    add_contract(lawv.dep, contract(ONE_ANCHOR), source="contract.json")
    return lawv


def test_no_check_yet_allows(lawv_ready: Any) -> None:
    assert _vote(lawv_ready)[0] == "allow"


def test_halt_blocks_until_resume_across_replays(lawv_ready: Any) -> None:
    lawv = lawv_ready
    check, verdict = _halt(lawv, 1, "m1", -43.0, first=True)  # dA = 7, R = 7/20 = 0.35
    assert verdict == "HALT"
    assert _vote(lawv)[0] == "block" and _vote(lawv, fresh=True)[0] == "block"
    assert not lawv.gate().allowed
    # a later CONTINUE check does not lift the halt: only a human review does
    _, verdict = _halt(lawv, 2, "m2", -23.0)  # dA = 20, R = 1
    assert verdict == "CONTINUE"
    assert _vote(lawv)[0] == "block"
    _review(lawv, check, "resume")
    assert _vote(lawv) == ("allow", "Law V CONTINUE at check-2: R=1.000")
    assert _vote(lawv, fresh=True)[0] == "allow"
    assert lawv.gate().allowed
    # resume holds until the next HALT
    check3, verdict = _halt(lawv, 3, "m3", -20.0)  # dA = 3, R = 0.15
    assert verdict == "HALT"
    assert _vote(lawv)[0] == "block" and _vote(lawv, fresh=True)[0] == "block"
    assert lawv.state()["halt"]["open"] == [check3]


def test_keep_halted_keeps_blocking(lawv_ready: Any) -> None:
    lawv = lawv_ready
    check, _ = _halt(lawv, 1, "m1", -43.0, first=True)
    _review(lawv, check, "keep-halted")
    decision, reason = _vote(lawv)
    assert decision == "block" and "keep-halted" in reason
    assert _vote(lawv, fresh=True)[0] == "block"
    _review(lawv, check, "resume")  # the latest review of a check counts
    assert _vote(lawv)[0] == "allow"


def test_every_halt_needs_its_own_resume(lawv_ready: Any) -> None:
    lawv = lawv_ready
    first, _ = _halt(lawv, 1, "m1", -43.0, first=True)
    second, verdict = _halt(lawv, 2, "m2", -36.0)  # dA = 7, R = 0.35
    assert verdict == "HALT"
    _review(lawv, second, "resume")
    assert _vote(lawv)[0] == "block" and lawv.state()["halt"]["open"] == [first]
    _review(lawv, first, "resume")
    assert _vote(lawv)[0] == "allow"


def test_warning_warns_but_does_not_block(lawv_ready: Any) -> None:
    lawv = lawv_ready
    _, verdict = _halt(lawv, 1, "m1", -41.0, first=True)  # dA = 9, R = 0.45
    assert verdict == "WARNING"
    decision, reason = _vote(lawv)
    assert decision == "warn" and "R=0.450" in reason
    assert lawv.gate().allowed
    result = lawv.cli("gate", "cand")
    assert result.exit_code == 0
    assert "warn" in result.output and "lawv" in result.output


def test_gap_and_defective_warn_by_default(lawv_ready: Any) -> None:
    lawv = lawv_ready
    lawv.entry(gain(1, 20.0))
    outcome = run_check(lawv.dep, new=_file(one_anchor_measurement("m1", -30.0)))
    assert outcome.result.verdict == "GAP"
    decision, reason = _vote(lawv)
    assert decision == "warn" and "GAP" in reason and "old measurement missing" in reason
    lawv.entry(gain(3, 20.0))  # seq 2 is missing
    outcome = run_check(lawv.dep, old=_file(one_anchor_measurement("m0", -50.0)),
                        new=MeasurementInput(source="--new", ref="m1"))
    assert outcome.result.verdict == "DEFECTIVE"
    assert _vote(lawv)[0] == "warn"
    assert lawv.gate().allowed


class TestGapVoteSetting:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"lawv": {"gap_vote": "block"}}

    def test_gap_can_be_made_to_block(self, lawv_ready: Any) -> None:
        lawv = lawv_ready
        lawv.entry(gain(1, 20.0))
        run_check(lawv.dep, new=_file(one_anchor_measurement("m1", -30.0)))
        assert _vote(lawv)[0] == "block"


def test_bad_setting_is_a_configuration_error(tmp_path: Any) -> None:
    import lawv_receipts_standin
    from cladelog.core import ConfigError, Deployment, DeploymentConfig

    cfg = DeploymentConfig.from_dict({"store": str(tmp_path / "x.sqlite3"),
                                      "plugins": ["lawv", "receipts"],
                                      "settings": {"lawv": {"gap_vote": "maybe"}}})
    with pytest.raises(ConfigError, match=r"\[settings\.lawv\] gap_vote: .*maybe"):
        Deployment(cfg, plugins=[lawv_receipts_standin], create=True)


def test_lawv_requires_receipts(tmp_path: Any) -> None:
    from cladelog.core import ConfigError, Deployment, DeploymentConfig

    cfg = DeploymentConfig.from_dict({"store": str(tmp_path / "x.sqlite3"), "plugins": ["lawv"]})
    with pytest.raises(ConfigError, match=r"'lawv' requires 'receipts'"):
        Deployment(cfg, create=True)


def test_review_errors(lawv_ready: Any) -> None:
    lawv = lawv_ready
    _, verdict = _halt(lawv, 1, "m1", -41.0, first=True)
    assert verdict == "WARNING"
    before = len(lawv.events())
    with pytest.raises(LawVInputError, match=r"^--check: check-1 is WARNING; only HALT"):
        _review(lawv, "check-1", "resume")
    with pytest.raises(LawVInputError, match=r"^--check: no such check, got string 'check-9'"):
        _review(lawv, "check-9", "resume")
    with pytest.raises(LawVInputError, match=r"^--decision: must be one of"):
        _review(lawv, "check-1", "maybe")
    with pytest.raises(LawVInputError, match=r"^--reviewer: must not be empty"):
        add_review(lawv.dep, check="1", decision="resume", reviewer=" ", reason="x")
    assert len(lawv.events()) == before
