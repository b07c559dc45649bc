"""Overfitting suspicion, the normalized-Elo R, and the JSON form of a result."""

from __future__ import annotations

import json
import math

import pytest
from cladelog.lawv import CheckResult, evaluate
from lawv_helpers import ONE_ANCHOR, contract, gain, measurement, one_anchor_check, plain

# one_anchor_check: one anchor with hL = 10 and h = 10 at both endpoints
#   sigma = 1/sqrt(1/(100 + 100)) = sqrt(200) each; dA uncertainty = sqrt(400) = 20


def test_overfitting_flag_when_claims_exceed_the_band() -> None:
    # S = 30, dA = 5: S - dA = 25 > 20 -> suspected (and R = 5/30 -> HALT)
    c, old, new = one_anchor_check(0.0, 5.0)
    result = evaluate(c, old, new, [gain(1, 30.0)])
    assert result.overfitting_band == pytest.approx(20.0)
    assert result.claimed_excess == pytest.approx(25.0)
    assert result.overfitting_suspected is True
    assert "overfitting_suspected" in result.flags
    assert result.verdict == "HALT"


def test_no_flag_at_exactly_the_band() -> None:
    # S = 30, dA = 10: S - dA = 20, not more than the band 20
    c, old, new = one_anchor_check(0.0, 10.0)
    result = evaluate(c, old, new, [gain(1, 30.0)])
    assert result.overfitting_suspected is False
    assert result.flags == ()


def test_gain_half_widths_widen_the_band() -> None:
    # band = sqrt(20^2 + 15^2) = sqrt(625) = 25; S - dA = 30 - 5 = 25 -> not suspected
    c, old, new = one_anchor_check(0.0, 5.0)
    result = evaluate(c, old, new, [gain(1, 30.0, half_width=15.0)])
    assert result.overfitting_band == pytest.approx(25.0)
    assert result.overfitting_suspected is False


def test_flag_is_independent_of_the_verdict() -> None:
    # the suspicion is evaluated whenever dA exists and a gain test was counted, even
    # when S <= 0 leaves the check without R: S = 5 - 10 = -5, dA = -40,
    # S - dA = 35 > 20 -> suspected, status GAP
    c, old, new = one_anchor_check(0.0, -40.0)
    result = evaluate(c, old, new, [gain(1, 5.0), gain(2, -10.0)])
    assert result.status == "GAP"
    assert result.overfitting_suspected is True


def test_r_nelo_is_recorded_when_every_input_carries_normalized_values() -> None:
    anchors = ONE_ANCHOR
    old = measurement("o", [0.0], [10.0], anchors)
    new = measurement("n", [8.0], [10.0], anchors)
    old["anchors"][0]["ndelta"] = 1.0
    new["anchors"][0]["ndelta"] = 13.0
    # dA_nelo = 13 - 1 = 12; S_nelo = 10 + 14 = 24; R_nelo = 0.5 (decides nothing)
    entries = [gain(1, 12.0, nelo=10.0), plain(2, "special_path"), gain(3, 8.0, nelo=14.0)]
    result = evaluate(contract(anchors), old, new, entries)
    assert result.delta_a_nelo == pytest.approx(12.0)
    assert result.s_nelo == 24.0
    assert result.r_nelo == pytest.approx(0.5)
    assert result.verdict == "WARNING"  # 8/20 = 0.4 decides


def test_r_nelo_absent_when_one_counted_stage_lacks_nelo() -> None:
    old = measurement("o", [0.0], [10.0], ONE_ANCHOR)
    new = measurement("n", [8.0], [10.0], ONE_ANCHOR)
    old["anchors"][0]["ndelta"] = 1.0
    new["anchors"][0]["ndelta"] = 13.0
    result = evaluate(contract(ONE_ANCHOR), old, new, [gain(1, 12.0, nelo=10.0), gain(2, 8.0)])
    assert result.s_nelo is None
    assert result.r_nelo is None


def test_r_nelo_absent_without_ndelta() -> None:
    c, old, new = one_anchor_check(0.0, 8.0)
    result = evaluate(c, old, new, [gain(1, 20.0, nelo=30.0)])
    assert result.s_nelo == 30.0
    assert result.delta_a_nelo is None
    assert result.r_nelo is None


def _round_trip(result: CheckResult) -> dict[str, object]:
    text = json.dumps(result.to_dict(), allow_nan=False, sort_keys=True)
    loaded = json.loads(text)
    assert isinstance(loaded, dict)
    return loaded


def test_to_dict_is_json_ready_for_an_ok_check() -> None:
    c, old, new = one_anchor_check(0.0, 9.0)
    result = evaluate(c, old, new, [gain(1, 20.0)], window=(1, 1))
    data = _round_trip(result)
    assert data["verdict"] == "WARNING"
    assert data["status"] == "ok"
    assert data["r"] == pytest.approx(0.45)
    assert data["counted_seqs"] == [1]
    assert data["window"] == [1, 1]
    assert data["contract_version"] == 7
    mc = data["monte_carlo"]
    assert isinstance(mc, dict)
    assert set(mc["percentiles"]) == {"2.5", "50", "97.5"}
    assert mc["samples"] == 2000
    expected_keys = {
        "a_old", "a_new", "sigma_old", "sigma_new", "total_band_old", "total_band_new",
        "delta_a", "delta_a_uncertainty", "s", "s_short", "r", "r_short", "r_nelo",
        "verdict", "verdict_short", "status", "reasons", "flags", "contract_version",
    }
    assert expected_keys <= set(data)


def test_to_dict_uses_none_for_absent_values() -> None:
    data = _round_trip(evaluate(contract(), None, None, []))
    assert data["verdict"] == "GAP"
    assert data["r"] is None
    assert data["a_old"] is None
    assert data["monte_carlo"] is None
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in data.values())


def test_replay_re_derives_the_same_result() -> None:
    c, old, new = one_anchor_check(0.0, 7.0)
    entries = [gain(1, 12.0, half_width=4.0), gain(2, 8.0)]
    first = evaluate(c, old, new, entries).to_dict()
    replayed = evaluate(
        json.loads(json.dumps(c)), json.loads(json.dumps(old)), json.loads(json.dumps(new)),
        json.loads(json.dumps(entries)),
    ).to_dict()
    assert first == replayed
    assert first["verdict"] == "HALT"  # 7/20 = 0.35
