"""The issue's simulation properties over many seeds, on the bare rules (LedgerSink).

Each property is checked against what the simulation says each validator *did*
(its role and recorded actions), not against the ledger's own verdicts: an
equivocation the simulation performed must show up as a slash, an honest
validator must never be slashed, and so on. The same runs on a real, signed log
are in test_simulation_log.py.
"""

from __future__ import annotations

from typing import Any

from cladelog.consensus.simulate import LedgerSink, SimConfig, run
from cladelog.fork_score.audit import audit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@st.composite
def configs(draw: Any, byzantine_share: str) -> SimConfig:
    n = draw(st.integers(4, 13))
    if byzantine_share == "below":
        f = draw(st.integers(0, (n - 1) // 3))          # 3F < N
    else:
        f = draw(st.integers(n // 3 + 1, n))            # 3F > N
    g = draw(st.integers(0, n - f))
    return SimConfig(n, f, g, draw(st.integers(2, 7)), draw(st.integers(0, 2**32)))


def simulate(config: SimConfig) -> tuple[dict[str, Any], LedgerSink]:
    sink = LedgerSink()
    return run(config, sink, audit), sink


def equivocators(report: dict[str, Any]) -> set[str]:
    return {v["validator"] for v in report["validators"]
            if any(a.startswith(("equivocate:", "double_vote:")) for a in v["actions"])}


def check_common(report: dict[str, Any]) -> None:
    # every equivocation slashed (once, tombstoned); nobody honest or offline slashed
    for v in report["validators"]:
        offenses = [s["offense"] for s in v["slashes"]]
        if v["validator"] in equivocators(report):
            assert offenses.count("equivocation") == 1, v
            assert v["state"] == "slashed"
        if v["role"] != "byzantine":
            assert offenses == [], v


settings_ = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@settings_
@given(configs("below"))
def test_below_one_third_byzantine(config: SimConfig) -> None:
    report, sink = simulate(config)
    check_common(report)
    assert report["conflicting_finalizations"] == []
    proposals = sink.ledger.state["proposals"]
    winners: dict[str, list[str]] = {}
    for p in proposals.values():
        if p["outcome"] in ("finalized", "settled"):
            winners.setdefault(p["parent"], []).append(p["candidate"])
    for parent, children in winners.items():
        for a in children:
            for b in children:
                if a < b:  # two finalized siblings must not have overlapping windows
                    assert not sink.ledger.overlap(proposals[a], proposals[b]), (parent, a, b)
    honest = sum(v["role"] == "honest" for v in report["validators"])
    if 3 * honest > 2 * config.validators:
        # liveness: every honest (valid) candidate finalized in its window
        for p in report["proposals"]:
            if p["candidate"].endswith("-h"):
                assert p["outcome"] in ("finalized", "settled"), p


@settings_
@given(configs("below"))
def test_not_finalized_names_the_missing_power(config: SimConfig) -> None:
    report, sink = simulate(config)
    for p in report["proposals"]:
        if p["outcome"] != "not_finalized":
            continue
        record = sink.ledger.state["proposals"][p["candidate"]]
        voted = set(record["votes"])
        absent = sorted(set(record["frozen"]) - voted)
        assert p["missing"]["validators"] == absent
        assert p["missing"]["power"] == sum(record["frozen"][v] for v in absent)
        if p["reason"] == "no_quorum":
            # the accepting power fell short, by exactly the named amount
            assert 3 * p["accept_power"] <= 2 * p["total_power"]
            need = p["missing"]["needed_power"]
            assert 3 * (p["accept_power"] + need) > 2 * p["total_power"]
            assert 3 * (p["accept_power"] + need - 1) <= 2 * p["total_power"]


@settings_
@given(configs("above"))
def test_above_one_third_conflicts_are_accountable(config: SimConfig) -> None:
    report, _ = simulate(config)
    check_common(report)
    roles = {v["validator"]: v["role"] for v in report["validators"]}
    for conflict in report["conflicting_finalizations"]:
        # at least 1/3 of the power signed both, and each of them was slashed
        assert 3 * conflict["double_signer_power"] > conflict["total_power"], conflict
        slashed = {v["validator"] for v in report["validators"]
                   if any(s["offense"] == "equivocation" for s in v["slashes"])}
        assert set(conflict["double_signers"]) <= slashed
        assert all(roles[v] == "byzantine" for v in conflict["double_signers"])


def test_a_partitioned_run_produces_a_conflict() -> None:
    # not vacuous: some seed above 1/3 Byzantine does reach a conflicting quorum
    found = 0
    for seed in range(40):
        report, _ = simulate(SimConfig(7, 4, 0, 4, seed))
        found += len(report["conflicting_finalizations"])
    assert found > 0


def test_equivocations_do_happen_below_one_third() -> None:
    total = 0
    for seed in range(20):
        report, _ = simulate(SimConfig(10, 3, 1, 5, seed))
        total += len(equivocators(report))
    assert total > 0
