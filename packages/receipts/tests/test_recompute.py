"""Recomputation of claims from game counts, against independently computed values."""

from __future__ import annotations

import math

import pytest
import receipts_stats as ind
from cladelog.receipts import parse_entry, recompute_entry, recompute_stage
from cladelog.receipts.entries import GENESIS_PREV
from receipts_helpers import gain_test, stage


def _stage(doc: dict) -> object:
    entry = parse_entry(gain_test(0, GENESIS_PREV) | {"stages": [doc, stage("long", (1, 1, 1))]})
    return entry.stages[0]  # type: ignore[union-attr]


def test_worked_example_10_20_30() -> None:
    # L, D, W = 10, 20, 30: N = 60, mean = (30 + 20/2) / 60 = 2/3
    # elo = -400 log10(1 / (2/3) - 1) = -400 log10(0.5) = 120.412
    # var = (10 (2/3)^2 + 20 (1/6)^2 + 30 (1/3)^2) / 60 = (4.4444 + 0.5556 + 3.3333) / 60
    #     = 0.138889; se = sqrt(0.138889 / 60) = 0.048113; z se = 0.094300
    # hi = elo(0.760967) = 195.672, lo = elo(0.572367) = 45.152 -> half = 75.260
    # nelo = 347.436 * (2/3 - 1/2) / sqrt(0.138889) = 347.436 * 0.447214 = 155.378
    r = recompute_stage(_stage(stage("short", (10, 20, 30))))  # type: ignore[arg-type]
    assert r.elo == pytest.approx(120.412, abs=1e-3)
    assert r.half_width == pytest.approx(75.260, abs=1e-3)
    assert r.nelo == pytest.approx(155.378, abs=1e-3)
    assert r.model == "trinomial" and r.games == 60
    assert r.flags == () and r.passed is True  # 120.41 - 75.26 > 0


@pytest.mark.parametrize("counts", [(10, 20, 30), (307, 411, 330), (5, 1, 2), (1000, 3, 999)])
def test_logistic_and_llr_match_independent_formulas(counts: tuple[int, int, int]) -> None:
    r = recompute_stage(_stage(stage("short", counts, sprt=True)))  # type: ignore[arg-type]
    elo, half = ind.logistic(counts)
    assert r.elo == pytest.approx(elo, abs=1e-9)
    assert r.half_width == pytest.approx(half, abs=1e-9)
    assert r.nelo == pytest.approx(ind.nelo(counts), abs=1e-9)
    assert r.llr == pytest.approx(ind.llr(counts, 0.0, 5.0), abs=1e-6)
    # Wald: B = ln((1 - 0.05) / 0.05) = ln 19 = 2.944439
    assert r.llr_upper_bound == pytest.approx(math.log(19), abs=1e-12)
    assert r.llr_lower_bound == pytest.approx(-math.log(19), abs=1e-12)
    assert r.passed is (ind.llr(counts, 0.0, 5.0) >= math.log(19))
    assert r.flags == ()


def test_sprt_passes_exactly_when_llr_reaches_upper_bound() -> None:
    # 300 wins, 100 losses, 600 draws: mean = 0.6, a strong result; LLR >> ln 19
    strong = recompute_stage(_stage(stage("short", (100, 600, 300), sprt=True)))  # type: ignore
    assert strong.passed and strong.llr is not None and strong.llr > math.log(19)
    # a drawn match: mean 0.5 lies nearer elo0 = 0 than elo1 = 5, LLR < 0
    even = recompute_stage(_stage(stage("short", (100, 600, 100), sprt=True)))  # type: ignore
    assert not even.passed and even.llr is not None and even.llr < 0


@pytest.mark.parametrize(("wins", "passes"), [(1135, False), (1136, True)])
def test_sprt_verdict_flips_right_at_the_upper_bound(wins: int, passes: bool) -> None:
    # 1000 losses, 2000 draws: one more win moves the LLR from just below ln 19 = 2.944439
    # (2.934469) to just above it (2.961488), so the verdict flips between these counts
    counts = (1000, 2000, wins)
    llr = ind.llr(counts, 0.0, 5.0)
    assert abs(llr - math.log(19)) < 0.02 and (llr >= math.log(19)) is passes
    r = recompute_stage(_stage(stage("short", counts, sprt=True)))  # type: ignore[arg-type]
    assert r.llr == pytest.approx(llr, abs=1e-9)
    assert r.passed is passes
    assert r.flags == ()  # the claimed verdict (computed independently) agrees


def test_pentanomial_counts_are_used_when_given() -> None:
    # pairs [LL, LD+DL, LW+DD+WL, DW+WD, WW] = [5, 10, 20, 10, 5]: 50 pairs, 100 games,
    # half points 10 + 40 + 30 + 20 = 100 = 2 W + D for W = 30, D = 40, L = 30
    doc = stage("short", (30, 40, 30)) | {"pentanomial": [5, 10, 20, 10, 5]}
    # symmetric pair distribution: mean score exactly 1/2, so elo = 0;
    # pair score values 0, 1/4, 1/2, 3/4, 1 with probs .1 .2 .4 .2 .1:
    # var = 2 (.1 * .25 + .2 * .0625) = 0.075, se = sqrt(0.075 / 50) = 0.0387298
    # half = elo(0.5 + 1.959964 * 0.0387298) = elo(0.575909) = 53.1266
    hw = ind.elo_of(0.5 + ind.Z95 * math.sqrt(0.075 / 50))
    doc |= {"elo": 0.0, "half_width": round(hw, 4), "pass": False}
    r = recompute_stage(_stage(doc))  # type: ignore[arg-type]
    assert r.model == "pentanomial" and r.games == 100
    assert r.elo == pytest.approx(0.0, abs=1e-9)
    assert r.half_width == pytest.approx(hw, abs=1e-9)
    assert r.flags == ()


@pytest.mark.parametrize("counts", [(0, 0, 50), (50, 0, 0), (0, 50, 0), (0, 0, 1), (1, 0, 0)])
def test_degenerate_counts_give_finite_results(counts: tuple[int, int, int]) -> None:
    doc = stage("short", (1, 1, 1), sprt=True)
    doc["results"] = {"losses": counts[0], "draws": counts[1], "wins": counts[2]}
    r = recompute_stage(_stage(doc))  # type: ignore[arg-type]
    values = [v for v in r.to_dict().values() if isinstance(v, float)]
    assert values and all(math.isfinite(v) for v in values)
    if counts[2] and not counts[0]:
        assert r.elo > 0
    if counts[0] and not counts[2]:
        assert r.elo < 0
    if counts[1] and not counts[0] and not counts[2]:
        assert r.elo == pytest.approx(0.0, abs=1e-9)  # all draws: mean exactly 1/2


@pytest.mark.parametrize(("override", "flag"), [
    ({"elo": 99.0}, "ELO_MISMATCH"),
    ({"half_width": 1.0}, "ELO_MISMATCH"),
    ({"nelo": 10.0}, "ELO_MISMATCH"),
    ({"pass": False}, "STAGE_VERDICT_MISMATCH"),
])
def test_mismatch_flags(override: dict, flag: str) -> None:
    r = recompute_stage(_stage(stage("short", (10, 20, 30)) | override))  # type: ignore
    assert r.flags == (flag,)


def test_llr_mismatch_flag_and_rounding_to_hundredths() -> None:
    doc = stage("short", (307, 411, 330), sprt=True)
    true_llr = ind.llr((307, 411, 330), 0.0, 5.0)
    doc["criterion"] = doc["criterion"] | {"llr": round(true_llr, 2)}  # rounded claim: fine
    assert recompute_stage(_stage(doc)).flags == ()  # type: ignore[arg-type]
    doc["criterion"] = doc["criterion"] | {"llr": round(true_llr, 2) + 0.01}
    assert recompute_stage(_stage(doc)).flags == ("LLR_MISMATCH",)  # type: ignore[arg-type]


def test_entry_flags_are_the_union_and_both_stages_must_pass() -> None:
    doc = gain_test(0, GENESIS_PREV)
    doc["stages"][1]["pass"] = not doc["stages"][1]["pass"]
    doc["stages"][0]["elo"] += 1.0
    r = recompute_entry(parse_entry(doc))
    assert r.flags == ("ELO_MISMATCH", "STAGE_VERDICT_MISMATCH")
    failing = gain_test(0, GENESIS_PREV, long=(300, 200, 100))  # long stage loses
    assert recompute_entry(parse_entry(failing)).passed is False
    assert parse_entry(failing).passed is False  # type: ignore[union-attr]


def test_integral_values_are_recorded_as_integers() -> None:
    # threshold 0.0 is written as 0: the same canonical JSON ("0"), and the event then
    # needs no float rewriting when it is encoded
    from cladelog.core.canonical import canonical_bytes

    doc = stage("short", (10, 20, 30)) | {"criterion": {"type": "fixed", "threshold": 0.0}}
    out = recompute_stage(_stage(doc)).to_dict()  # type: ignore[arg-type]
    assert type(out["threshold"]) is int and out["threshold"] == 0
    assert type(out["confidence"]) is float and out["confidence"] == 0.95
    assert type(out["elo"]) is float
    assert b'"threshold":0}' in canonical_bytes(out)  # the last key of the stage object
