"""A replay re-derives every check from its recorded inputs; a forged result is not trusted.

The audit's case: a check event with the honest inputs but ``verdict`` and
``result.r`` changed (HALT at R = 0.35 made CONTINUE at R = 0.9), appended by
hand with ``cladelog append``. The expected numbers come from the seed's
invented example, not from the code under test: one anchor, so A = R_1 + δ_1
exactly and ΔA = δ_new − δ_old = −43 − (−50) = 7; the oracle claimed 12 + 8 = 20;
R = 7 / 20 = 0.35 < 0.40: HALT.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from cladelog.lawv import evaluate
from cladelog.lawv.commands import MeasurementInput, add_measurement, add_review, run_check
from cladelog.lawv.ledger import result_differences
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain

HONEST_R = 7.0 / 20.0


def _vote(lawv: Any) -> str:
    """The lawv plugin's vote on a candidate."""
    (vote,) = [v for v in lawv.gate().votes if v.plugin == "lawv"]
    return str(vote.decision)


def _setup(lawv: Any) -> None:
    assert lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR))).exit_code == 0
    lawv.entries(gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0))
    add_measurement(lawv.dep, one_anchor_measurement("m0", -50.0), source="m0.json")
    add_measurement(lawv.dep, one_anchor_measurement("m1", -43.0), source="m1.json")


def _honest_payload(lawv: Any) -> dict[str, Any]:
    """The check event ``lawv check --old m0 --new m1`` would append, built by hand."""
    events = lawv.events()
    first_entry = next(e for e in events if e.type == "receipts.entry_recorded")
    digest = lawv.state()["contracts"]["7"]["digest"]
    result = evaluate(contract(ONE_ANCHOR), one_anchor_measurement("m0", -50.0),
                      one_anchor_measurement("m1", -43.0),
                      [gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0)],
                      window=(1, 3)).to_dict()
    assert result["verdict"] == "HALT" and result["r"] == pytest.approx(HONEST_R)
    return {"check_id": "check-1", "number": 1, "contract_version": 7,
            "contract_digest": digest, "old_measurement": "m0", "new_measurement": "m1",
            "window_opened_at": first_entry.position, "first_seq": 1, "last_seq": 3,
            "entry_seqs": [1, 2, 3], "unreadable_seqs": [], "verdict": result["verdict"],
            "result": result}


def _append_by_hand(lawv: Any, data: dict[str, Any]) -> None:
    path = lawv.write({"stream": "lawv.checks", "type": "lawv.check_recorded", "data": data})
    appended = lawv.cli("append", path)
    assert appended.exit_code == 0, appended.output + appended.stderr


def _forged(lawv: Any) -> dict[str, Any]:
    data = _honest_payload(lawv)
    data["verdict"] = data["result"]["verdict"] = "CONTINUE"
    data["result"]["r"] = 0.9
    return data


def test_honest_hand_appended_check_is_accepted(lawv: Any) -> None:
    # the control: the same event without the forgery re-derives and closes its window
    _setup(lawv)
    _append_by_hand(lawv, _honest_payload(lawv))
    check = lawv.state()["checks"][0]
    assert check["anomalies"] == [] and check["closes_window"] is True
    assert lawv.state()["halt"]["open"] == ["check-1"]  # an honest HALT


def test_forged_check_closes_nothing_and_blocks_the_gate(lawv: Any) -> None:
    _setup(lawv)
    _append_by_hand(lawv, _forged(lawv))
    for state in (lawv.state(), lawv.fresh_state()):  # incrementally and from scratch
        (check,) = state["checks"]
        assert check["closes_window"] is False
        assert state["closed"]["check_id"] is None
        assert len(check["anomalies"]) == 1
        anomaly = check["anomalies"][0]
        assert anomaly.startswith("result: does not re-derive from the recorded inputs")
        assert "recorded CONTINUE R = 0.9" in anomaly and "recomputed HALT R = 0.35" in anomaly
        assert "differs in r, verdict" in anomaly
        assert state["halt"]["open"] == ["check-1"]
    gate = lawv.cli("gate", "cand")
    assert gate.exit_code == 1
    assert "block" in gate.output and "check-1" in gate.output
    assert "does not re-derive" in gate.output
    assert "CONTINUE (anomalous)" in lawv.cli("lawv", "status").output
    # the window stays open: the next honest check covers seq 1..3 again and halts
    outcome = run_check(lawv.dep, old=MeasurementInput("m0", ref="m0"),
                        new=MeasurementInput("m1", ref="m1"))
    assert (outcome.check["first_seq"], outcome.check["last_seq"]) == (1, 3)
    assert outcome.check["anomalies"] == [] and outcome.result.verdict == "HALT"
    assert outcome.result.r == pytest.approx(HONEST_R)


@pytest.mark.parametrize(
    ("field", "value"),
    [("delta_a", 9.0), ("s", 25.0), ("overfitting_suspected", True),
     ("counted_seqs", [1]), ("monte_carlo.percentiles.50", 0.9)],
)
def test_any_forged_number_is_an_anomaly(lawv: Any, field: str, value: Any) -> None:
    _setup(lawv)
    data = _honest_payload(lawv)
    *parents, last = field.split(".")
    target = data["result"]
    for key in parents:
        target = target[key]
    target[last] = value
    _append_by_hand(lawv, data)
    (check,) = lawv.state()["checks"]
    assert check["closes_window"] is False
    assert f"(differs in {field.split('.')[0]})" in check["anomalies"][-1]
    assert "recomputed HALT" in check["anomalies"][-1]
    assert _vote(lawv) == "block"


def test_explain_shows_the_recomputed_arithmetic_and_the_recorded_one(lawv: Any) -> None:
    _setup(lawv)
    _append_by_hand(lawv, _forged(lawv))
    doc = json.loads(lawv.cli("lawv", "explain", "check-1", "--json").output)
    assert doc["verdict"] == "HALT" and doc["recorded_verdict"] == "CONTINUE"
    assert doc["r"] == pytest.approx(HONEST_R)
    assert (doc["old"]["A"], doc["new"]["A"]) == (2950.0, 2957.0)
    assert doc["delta_a"] == 7.0 and doc["s"] == 20.0
    assert doc["replay"] == {"identical": False, "differs_in": ["r", "verdict"]}
    assert doc["recorded"]["r"]["recorded"] == 0.9
    assert doc["recorded"]["r"]["recomputed"] == pytest.approx(HONEST_R)
    assert doc["recorded"]["verdict"] == {"recorded": "CONTINUE", "recomputed": "HALT"}
    text = lawv.cli("lawv", "explain", "check-1").output
    assert "check-1 at position" in text
    assert ": HALT (recomputed; the event records CONTINUE)" in text
    assert "R = dA / S = 0.3500" in text
    assert "r: recorded 0.9, recomputed 0.35" in text
    assert 'verdict: recorded "CONTINUE", recomputed "HALT"' in text


def test_an_anomalous_check_is_reviewed_like_a_halt(lawv: Any) -> None:
    _setup(lawv)
    data = _forged(lawv)
    data["verdict"] = data["result"]["verdict"] = "WARNING"  # not even a HALT as recorded
    _append_by_hand(lawv, data)
    assert _vote(lawv) == "block"
    add_review(lawv.dep, check="check-1", decision="keep-halted", reviewer="ops",
               reason="forged event")
    assert _vote(lawv) == "block"
    add_review(lawv.dep, check="check-1", decision="resume", reviewer="ops",
               reason="forged event, window re-checked")
    for state in (lawv.state(), lawv.fresh_state()):
        assert state["halt"] == {"blocked": False, "open": [], "kept_halted": []}
        assert [r["decision"] for r in state["reviews"]] == ["keep-halted", "resume"]
    assert _vote(lawv) == "warn"  # it closed nothing: no verdict for the open window


def test_check_whose_inputs_cannot_be_looked_up_cannot_be_rederived(lawv: Any) -> None:
    _setup(lawv)
    data = _honest_payload(lawv)
    data["new_measurement"] = "m9"  # never recorded
    _append_by_hand(lawv, data)
    (check,) = lawv.state()["checks"]
    assert any(a.startswith("result: cannot be re-derived") for a in check["anomalies"])
    assert _vote(lawv) == "block"
    doc = json.loads(lawv.cli("lawv", "explain", "check-1", "--json").output)
    assert doc["replay"]["identical"] is False and "m9" in doc["replay"]["error"]
    assert doc["verdict"] == "HALT" and doc["r"] == pytest.approx(HONEST_R)  # as recorded


def test_result_differences_compares_exactly_but_floats_to_last_bits() -> None:
    recorded = {"verdict": "HALT", "r": 0.35, "s": 20, "counted_seqs": [1, 3],
                "monte_carlo": {"percentiles": {"50": 0.3}}, "flags": []}
    same = copy.deepcopy(recorded)
    same["s"] = 20.0  # canonical JSON writes 20.0 as 20
    same["r"] = 0.35 * (1 + 1e-13)  # a last-bit difference of another libm
    assert result_differences(recorded, same) == []
    other = copy.deepcopy(recorded)
    other["r"] = 0.35 + 1e-6
    other["counted_seqs"] = [1, 4]
    other["monte_carlo"]["percentiles"]["50"] = 0.31
    other["flags"] = ["overfitting_suspected"]
    assert result_differences(recorded, other) == ["counted_seqs", "flags", "monte_carlo", "r"]
    assert result_differences(recorded, {**recorded, "extra": 1}) == ["extra"]
    assert result_differences({"x": True}, {"x": 1}) == ["x"]
