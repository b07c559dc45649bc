"""The demo's pure parts: clock, seeded model, oracle claims, report data, folder rules."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cladelog.demo.clock import DemoClock
from cladelog.demo.errors import DemoError
from cladelog.demo.model import DemoConfig, draw_games, plan_rounds
from cladelog.demo.oracle import gain_test_entry, stage
from cladelog.demo.report_data import build_report_data
from cladelog.demo.runner import prepare_directory


def test_clock_moves_one_second_per_batch_and_on_demand() -> None:
    clock = DemoClock(datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC))
    assert clock() == "2026-03-02T09:00:00.000000Z"
    assert clock() == "2026-03-02T09:00:01.000000Z"
    clock.advance(hours=1, minutes=30)  # 09:00:02 + 1h30
    assert clock() == "2026-03-02T10:30:02.000000Z"
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(minutes=-1)


@pytest.mark.parametrize("candidates, checkpoints", [(16, 4), (24, 4), (25, 5), (30, 5)])
def test_plan_splits_candidates_into_rounds_of_at_least_four(candidates: int,
                                                            checkpoints: int) -> None:
    rounds = plan_rounds(DemoConfig(seed=5, candidates=candidates))
    assert len(rounds) == checkpoints
    assert sum(len(r.candidates) for r in rounds) == candidates
    assert [c.name for r in rounds for c in r.candidates] == [
        f"c{i:02d}" for i in range(1, candidates + 1)]
    phases = [r.phase.name for r in rounds]
    assert phases == ["healthy"] * (checkpoints - 3) + ["drift", "overfit", "recovered"]
    for r in rounds:
        roles = [c.role for c in r.candidates]
        assert len(roles) >= 4
        assert {"strong", "neutral", "regression"} <= set(roles)
        assert r.phase.transfer_low <= r.transfer <= r.phase.transfer_high


def test_plan_depends_on_the_seed_only() -> None:
    assert plan_rounds(DemoConfig(seed=9)) == plan_rounds(DemoConfig(seed=9))
    assert plan_rounds(DemoConfig(seed=9)) != plan_rounds(DemoConfig(seed=10))


@pytest.mark.parametrize("kwargs, message", [
    ({"candidates": 15}, "--candidates: must be an integer in [16, 100000], got 15"),
    ({"candidates": 100_001}, "--candidates"),
    ({"seed": -3}, "--seed: must be an integer in [0, 2**63), got -3"),
])
def test_config_refuses_bad_values(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(DemoError) as info:
        DemoConfig(**kwargs)
    assert message in str(info.value)


def test_games_follow_the_logistic_model_with_the_draw_rate() -> None:
    # at +100 Elo the expected score is 1 / (1 + 10 ** (-100 / 400)) = 0.64006
    expected = 1 / (1 + 10 ** (-0.25))
    losses, draws, wins = draw_games(random.Random(4), 100.0, 400_000, 0.5)
    assert losses + draws + wins == 400_000
    score = (wins + draws / 2) / 400_000
    # the standard error of a score over 400k games is below 0.5 / sqrt(400k) = 0.0008
    assert abs(score - expected) < 0.004
    assert abs(draws / 400_000 - 0.5) < 0.004


def test_stage_claims_are_the_elo_of_its_own_games() -> None:
    # 300 wins, 200 draws, 100 losses: score (300 + 100) / 600 = 2/3,
    # elo = -400 log10(1 / (2/3) - 1) = 400 log10(2) = 120.41
    st = stage("long", [100, 200, 300], {"type": "fixed", "threshold": 0.0})
    assert st["elo"] == round(400 * math.log10(2), 2) == 120.41
    assert st["results"] == {"losses": 100, "draws": 200, "wins": 300} and st["games"] == 600
    assert st["pass"] is (st["elo"] - st["half_width"] > 0)


def test_gain_test_entries_pass_the_registers_recomputation() -> None:
    from cladelog.receipts import parse_entry, recompute_entry

    rng = random.Random(11)
    art = {"name": "lumen", "version": "c01", "digest": "sha256:" + "a" * 64}
    base = {"name": "lumen", "version": "c00", "digest": "sha256:" + "b" * 64}
    verdicts = set()
    for gain in (-6.0, -1.0, 0.0, 2.5, 6.0, 9.0):
        entry = gain_test_entry(rng, seq=0, prev="0" * 64, candidate=art, baseline=base,
                                epoch=0, oracle_gain=gain)
        recomputed = recompute_entry(parse_entry(entry))
        assert recomputed.flags == ()
        verdicts.add(recomputed.passed)
    assert verdicts == {True, False}


def _states() -> dict[str, object]:
    entry = {"seq": 0, "kind": "gain_test", "position": 10, "pass": True,
             "candidate": {"version": "c01"}, "flags": [],
             "stages": [{"name": "short", "elo": 5.0}, {"name": "long", "elo": 4.0}]}
    entry2 = {"seq": 1, "kind": "gain_test", "position": 11, "pass": True,
              "candidate": {"version": "c02"}, "flags": [],
              "stages": [{"name": "short", "elo": 3.0}, {"name": "long", "elo": 2.5}]}
    entry3 = {"seq": 2, "kind": "reversion", "position": 30, "reverts": 1, "flags": []}
    check = {"check_id": "check-1", "number": 1, "verdict": "HALT", "contract_version": 7,
             "position": 20, "old_measurement": "m-0", "new_measurement": "m-1",
             "result": {"r": 0.2, "s": 6.5, "delta_a": 1.3, "a_old": 3000.0, "a_new": 3001.3,
                        "sigma_old": 2.0, "sigma_new": 2.5, "halt_below": 0.4,
                        "warn_below": 0.75, "flags": ["overfitting_suspected"],
                        "monte_carlo": {"percentiles": {"2.5": 0.1, "50": 0.2, "97.5": 0.3}}}}
    return {
        "receipts.register": {"entries": {"0": entry, "1": entry2, "2": entry3},
                              "reverted": {"1": 2}},
        "lawv.state": {"checks": [check], "measurements": {"m-0": {"position": 5}},
                       "reviews": [{"check_id": "check-1", "decision": "resume",
                                    "reviewer": "ana", "reason": "ok", "position": 25}]},
    }


def test_report_data_from_hand_made_states() -> None:
    times = {5: "2026-03-01T00:00:00.000000Z", 10: "2026-03-02T00:00:00.000000Z",
             11: "2026-03-03T00:00:00.000000Z", 20: "2026-03-04T00:00:00.000000Z",
             25: "2026-03-05T00:00:00.000000Z", 30: "2026-03-06T00:00:00.000000Z"}
    data = build_report_data(_states(), times, [])
    (check,) = data.checks
    assert (check.r, check.mc_low, check.mc_high, check.review) == (0.2, 0.1, 0.3,
                                                                    "resume by ana")
    # claimed: 0 at the first measurement, then 4.0, then 4.0 + 2.5 = 6.5, held to the check
    assert [(p.recorded_at[:10], p.value) for p in data.claimed] == [
        ("2026-03-01", 0.0), ("2026-03-02", 4.0), ("2026-03-03", 6.5), ("2026-03-04", 6.5)]
    # external: A - A0 = 0 at m-0, then 3001.3 - 3000.0 = 1.3 at check-1
    assert [(p.recorded_at[:10], round(p.value, 6)) for p in data.external] == [
        ("2026-03-01", 0.0), ("2026-03-04", 1.3)]
    assert [(i.seq, i.lane, i.reverted_by) for i in data.register] == [
        (0, "gain test passed", None), (1, "gain test passed", 2), (2, "reversion", None)]
    (halt,) = data.halts
    assert halt.check_id == "check-1" and halt.open is False
    assert not data.empty


def test_report_data_of_nothing_is_empty() -> None:
    assert build_report_data({}, {}, []).empty


def test_prepare_directory_refuses_and_forces(tmp_path: Path) -> None:
    target = tmp_path / "d"
    prepare_directory(target, force=False)  # absent: created
    assert target.is_dir()
    (target / "cladelog.toml").write_text("x")
    (target / "keys").mkdir()
    (target / "keys" / "oracle.key").write_text("secret")
    (target / "mine.txt").write_text("keep")
    with pytest.raises(DemoError, match=r"--dir: .* is not empty"):
        prepare_directory(target, force=False)
    prepare_directory(target, force=True)
    assert sorted(p.name for p in target.iterdir()) == ["mine.txt"]
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(DemoError, match="not a folder"):
        prepare_directory(file, force=True)


def test_a_relative_store_is_made_absolute_against_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cladelog.demo.runner import resolve_store

    monkeypatch.chdir(tmp_path)
    here = str(tmp_path.resolve())
    assert resolve_store("d1/log.sqlite3") == f"{here}/d1/log.sqlite3"
    assert resolve_store("sqlite:///d1/log.sqlite3") == f"sqlite:///{here}/d1/log.sqlite3"
    assert resolve_store("/srv/log.sqlite3") == "/srv/log.sqlite3"
    assert resolve_store("sqlite:////srv/log.sqlite3") == "sqlite:////srv/log.sqlite3"
    url = "postgresql://lumen@db.example/lumen"
    assert resolve_store(url) == url
    assert resolve_store(None) is None


def test_public_names_resolve() -> None:
    import cladelog.demo as demo

    for name in demo.__all__:
        assert getattr(demo, name) is not None, name
    assert demo.run_demo.__module__ == "cladelog.demo.runner"


def test_plan_of_100000_candidates_is_seeded_and_complete() -> None:
    """Issue 25: any size up to 100,000; the same seed plans the same rounds."""
    config = DemoConfig(seed=4, candidates=100_000)
    rounds = plan_rounds(config)
    assert sum(len(r.candidates) for r in rounds) == 100_000
    names = [c.name for r in rounds for c in r.candidates]
    assert len(set(names)) == 100_000 and names[-1] == "c100000"
    assert rounds == plan_rounds(DemoConfig(seed=4, candidates=100_000))
    # every round keeps the roles that give each branch set ACCEPT, MARGINAL and REJECT
    for r in rounds:
        roles = {c.role for c in r.candidates}
        assert {"strong", "neutral", "regression"} <= roles


def test_large_rounds_draw_as_many_improvements_as_a_400_candidate_round() -> None:
    """Past 80 candidates a round, the extra candidates are mostly neutral or regressions:
    the engine's strength must stay within reach of the fixed anchors (issue 25)."""
    def improvements(candidates: int) -> list[int]:
        return [sum(c.role in ("strong", "modest") for c in r.candidates)
                for r in plan_rounds(DemoConfig(seed=0, candidates=candidates))]

    base = improvements(400)
    for n in (2_000, 10_000):
        for got, want in zip(improvements(n), base, strict=True):
            assert abs(got - want) <= 4 * math.sqrt(want) + 4, (n, got, want)
