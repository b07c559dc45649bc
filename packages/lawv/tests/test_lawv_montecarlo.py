"""The Monte Carlo band: seeded from the inputs, reproducible, and it decides nothing."""

from __future__ import annotations

import copy

import pytest
from cladelog.lawv import evaluate, parse_contract, parse_entries, parse_measurement
from cladelog.lawv.montecarlo import percentile
from lawv_helpers import contract, gain, measurement, one_anchor_check

OLD = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
NEW = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])
ENTRIES = [gain(1, 12.0, half_width=6.0), gain(2, 9.0)]


def test_same_inputs_give_the_identical_band() -> None:
    first = evaluate(contract(), OLD, NEW, ENTRIES)
    second = evaluate(copy.deepcopy(contract()), copy.deepcopy(OLD), copy.deepcopy(NEW),
                      copy.deepcopy(ENTRIES))
    assert first.monte_carlo is not None
    assert first.monte_carlo == second.monte_carlo
    assert first.to_dict() == second.to_dict()


def test_parsed_classes_and_dicts_give_the_same_band() -> None:
    from_dicts = evaluate(contract(), OLD, NEW, ENTRIES)
    from_classes = evaluate(
        parse_contract(contract()),
        parse_measurement(OLD, "old"),
        parse_measurement(NEW, "new"),
        parse_entries(ENTRIES),
    )
    assert from_dicts.monte_carlo == from_classes.monte_carlo


def test_ignored_entry_fields_do_not_move_the_seed() -> None:
    # the seed covers what Law V reads (documented), not decorations of the register
    decorated = [{**entry, "note": "anything"} for entry in ENTRIES]
    assert (
        evaluate(contract(), OLD, NEW, ENTRIES).monte_carlo
        == evaluate(contract(), OLD, NEW, decorated).monte_carlo
    )


@pytest.mark.parametrize(
    "change",
    ["delta", "entry", "contract_date", "window"],
)
def test_different_inputs_give_a_different_band(change: str) -> None:
    base = evaluate(contract(), OLD, NEW, ENTRIES)
    c, old, new, entries, window = contract(), OLD, copy.deepcopy(NEW), ENTRIES, None
    if change == "delta":
        new["anchors"][0]["delta"] = -19.9
    elif change == "entry":
        entries = [gain(1, 12.0, half_width=6.0), gain(2, 9.0, 6.0)]  # short 5 -> 6
    elif change == "contract_date":
        c = contract(date="2026-10-19", version=8)
    else:
        window = (1, 2)
    other = evaluate(c, old, new, entries, window=window)
    assert base.monte_carlo is not None and other.monte_carlo is not None
    assert other.monte_carlo.seed_digest != base.monte_carlo.seed_digest
    assert (other.monte_carlo.p2_5, other.monte_carlo.p97_5) != (
        base.monte_carlo.p2_5,
        base.monte_carlo.p97_5,
    )


def test_sample_count_comes_from_the_contract() -> None:
    result = evaluate(contract(mc_samples=123), OLD, NEW, ENTRIES)
    assert result.monte_carlo is not None
    assert result.monte_carlo.samples == 123
    assert result.monte_carlo.used + result.monte_carlo.skipped == 123


def test_no_uncertainty_anywhere_collapses_the_band_onto_r() -> None:
    # h = hL = 0 -> sigma = 0 at both ends; gains exact -> every sample is R = 8/20 = 0.4
    anchors = [{"name": "z", "hash": "z", "rating": 3000.0, "rating_uncertainty": 0.0}]
    c = contract(anchors, mc_samples=50)
    old = measurement("o", [0.0], [0.0], anchors)
    new = measurement("n", [8.0], [0.0], anchors)
    band = evaluate(c, old, new, [gain(1, 20.0)]).monte_carlo
    assert band is not None
    assert (band.p2_5, band.p50, band.p97_5) == (0.4, 0.4, 0.4)
    assert band.used == 50 and band.skipped == 0


def test_band_matches_the_normal_approximation() -> None:
    # one anchor, h = hL = 10 at both ends: sigma = 1/sqrt(1/200) = sqrt(200) each,
    # dA uncertainty = sqrt(200 + 200) = 20 (a 95% half-width -> sd = 20/1.96 ~ 10.2).
    # dA = 10, S = 20 exact: R ~ Normal(0.5, 10.2/20 = 0.51)
    #   2.5%  ~ 0.5 - 1.96*0.51 = -0.5,   50% ~ 0.5,   97.5% ~ 0.5 + 1.0 = 1.5
    c, old, new = one_anchor_check(0.0, 10.0)
    c["mc_samples"] = 20000
    band = evaluate(c, old, new, [gain(1, 20.0)]).monte_carlo
    assert band is not None
    assert band.p50 == pytest.approx(0.5, abs=0.03)
    assert band.p2_5 == pytest.approx(-0.5, abs=0.06)
    assert band.p97_5 == pytest.approx(1.5, abs=0.06)
    assert band.skipped == 0


def test_samples_with_s_at_or_below_zero_are_skipped_and_counted() -> None:
    # one gain of +1 with half-width 19.6 (sd 10): P(S <= 0) = Phi(-0.1) ~ 0.46
    c, old, new = one_anchor_check(0.0, 1.0)
    c["mc_samples"] = 4000
    result = evaluate(c, old, new, [gain(1, 1.0, half_width=19.6)])
    band = result.monte_carlo
    assert band is not None
    assert band.used + band.skipped == 4000
    assert 0.40 * 4000 < band.skipped < 0.52 * 4000
    # the band decides nothing: R = 1/1 = 1.0 -> CONTINUE whatever the band says
    assert result.verdict == "CONTINUE"


def test_band_only_for_checks_with_an_r() -> None:
    assert evaluate(contract(), None, NEW, ENTRIES).monte_carlo is None
    assert evaluate(contract(), OLD, NEW, [gain(1, -3.0)]).monte_carlo is None


def test_percentile_interpolates_linearly() -> None:
    # positions p/100 * (n - 1) over [1, 2, 3, 4]:
    #   50  -> 1.5   -> 2 + 0.5*(3 - 2) = 2.5
    #   2.5 -> 0.075 -> 1 + 0.075*(2 - 1) = 1.075
    #   97.5 -> 2.925 -> 3 + 0.925*(4 - 3) = 3.925
    data = [1.0, 2.0, 3.0, 4.0]
    assert percentile(data, 50) == 2.5
    assert percentile(data, 2.5) == pytest.approx(1.075)
    assert percentile(data, 97.5) == pytest.approx(3.925)
    assert percentile([7.0], 97.5) == 7.0
    assert percentile(data, 100) == 4.0


def _reference_band(delta_a: float, half_width: float, gains: list[tuple[float, float | None]],
                    samples: int, seed: str) -> tuple[int, int, list[float]]:
    """The band as documented, drawn with ``random.Random.gauss`` one value at a time."""
    import math
    import random

    z95 = 1.959963984540054
    rng = random.Random(int(seed, 16))
    exact = math.fsum(elo for elo, hw in gains if not hw)
    ratios, skipped = [], 0
    for _ in range(samples):
        a = rng.gauss(delta_a, half_width / z95)
        s = exact
        for elo, hw in gains:
            if hw:
                s += rng.gauss(elo, hw / z95)
        if s <= 0:
            skipped += 1
            continue
        ratios.append(a / s)
    ratios.sort()
    return len(ratios), skipped, ratios


@pytest.mark.parametrize(
    ("samples", "gains"),
    [(1, [(20.0, None)]), (2047, [(12.0, 6.0)]), (2049, [(12.0, 6.0), (9.0, None), (4.0, 3.0)]),
     (4100, [(1.0, 19.6), (0.5, 0.0), (2.0, 5.0), (3.0, 1.0)])],
)
def test_band_is_the_documented_gauss_draws_bit_for_bit(
        samples: int, gains: list[tuple[float, float | None]]) -> None:
    # odd and even draws per sample, sample counts across the generator's blocks
    from cladelog.lawv.claims import CountedGain
    from cladelog.lawv.montecarlo import monte_carlo_band

    seed = "5eed" * 16
    counted = [CountedGain(seq=i, long_elo=elo, short_elo=0.0, long_nelo=None,
                           long_half_width=hw) for i, (elo, hw) in enumerate(gains)]
    band = monte_carlo_band(9.0, 14.5, counted, samples, seed)
    used, skipped, ratios = _reference_band(9.0, 14.5, gains, samples, seed)
    assert (band.used, band.skipped) == (used, skipped)
    assert [band.p2_5, band.p50, band.p97_5] == [percentile(ratios, p) for p in (2.5, 50, 97.5)]
    # a second call (cached: the gains as a tuple this time) gives the same band
    assert monte_carlo_band(9.0, 14.5, tuple(counted), samples, seed) == band
