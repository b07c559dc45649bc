"""Which contract governs the first check: its window opens at the first register entry.

Seed: "This entry follows its version 7 of 2026-10-16; a later version applies only
from the next check on." The audit's scenario: contract v7 (HALT below 0.40),
register entries seq 0..2, then v8 (HALT below 0.20, WARNING below 0.30), then
the first check. One anchor, so ΔA = δ_new − δ_old exactly: −45 − (−50) = 5;
S = 12 + 8 = 20 (the special path counts 0); R = 5 / 20 = 0.25. Under v7 that is
HALT (< 0.40); under v8 it would be WARNING (0.20 <= 0.25 < 0.30).
"""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.lawv import evaluate
from cladelog.lawv.commands import MeasurementInput, add_contract, add_measurement, run_check
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain

V8 = {"version": 8, "date": "2026-10-19", "halt_below": 0.20, "warn_below": 0.30}


def _register(lawv: Any, **changes: Any) -> None:
    add_contract(lawv.dep, contract(ONE_ANCHOR, **changes), source="contract.json")


def _file(doc: dict[str, Any]) -> MeasurementInput:
    return MeasurementInput(source=f"{doc['id']}.json", document=doc)


def _first_entry_position(lawv: Any) -> int:
    return int(next(e.position for e in lawv.events() if e.type == "receipts.entry_recorded"))


def test_version_registered_during_the_first_window_waits_for_the_next_check(lawv: Any) -> None:
    _register(lawv)  # v7, HALT below 0.40
    lawv.entries(gain(0, 12.0), plain(1, "special_path"), gain(2, 8.0))
    _register(lawv, **V8)  # registered while the first window is open
    first = run_check(lawv.dep, old=_file(one_anchor_measurement("m0", -50.0)),
                      new=_file(one_anchor_measurement("m1", -45.0)))
    assert first.check["contract_version"] == 7
    assert first.result.r == pytest.approx(0.25)
    assert first.result.verdict == "HALT" and first.result.halt_below == 0.40
    assert first.check["window_opened_at"] == _first_entry_position(lawv)
    assert first.check["anomalies"] == []
    # the next window opened at the first check, after v8 was registered: v8 governs
    lawv.entries(gain(3, 20.0))
    second = run_check(lawv.dep, new=_file(one_anchor_measurement("m2", -40.0)))
    # dA = -40 - (-45) = 5, S = 20: R = 0.25, WARNING under v8
    assert second.check["contract_version"] == 8
    assert second.result.verdict == "WARNING"
    # the same on a replay from position 0
    checks = lawv.fresh_state()["checks"]
    assert [(c["contract_version"], c["verdict"], c["anomalies"]) for c in checks] == [
        (7, "HALT", []), (8, "WARNING", [])]


def test_the_audit_scenario_through_the_cli(lawv: Any) -> None:
    assert lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR))).exit_code == 0
    lawv.entries(gain(0, 12.0), plain(1, "special_path"), gain(2, 8.0))
    assert lawv.cli("lawv", "contract", "add",
                    lawv.write(contract(ONE_ANCHOR, **V8))).exit_code == 0
    listed = lawv.cli("lawv", "contract", "list").output
    assert "v7" in listed.split("<- governs the next check")[0].splitlines()[-1]
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -45.0))
    result = lawv.cli("lawv", "check", "--old", old, "--new", new)
    assert result.exit_code == 1, result.output + result.stderr  # HALT
    assert "check-1: HALT" in result.output and "contract v7" in result.output


def test_a_first_check_recorded_under_the_later_version_is_an_anomaly(lawv: Any) -> None:
    # what version 0.1.0 recorded for the audit's scenario: v8, the window opened at 0
    _register(lawv)
    entries = [gain(0, 12.0), plain(1, "special_path"), gain(2, 8.0)]
    lawv.entries(*entries)
    _register(lawv, **V8)
    m0, m1 = one_anchor_measurement("m0", -50.0), one_anchor_measurement("m1", -45.0)
    add_measurement(lawv.dep, m0, source="m0.json")
    add_measurement(lawv.dep, m1, source="m1.json")
    result = evaluate(contract(ONE_ANCHOR, **V8), m0, m1, entries, window=(0, 2)).to_dict()
    assert result["verdict"] == "WARNING"
    lawv.env.append("lawv.check_recorded", {
        "check_id": "check-1", "number": 1, "contract_version": 8,
        "contract_digest": lawv.state()["contracts"]["8"]["digest"],
        "old_measurement": "m0", "new_measurement": "m1", "window_opened_at": 0,
        "first_seq": 0, "last_seq": 2, "entry_seqs": [0, 1, 2], "unreadable_seqs": [],
        "verdict": "WARNING", "result": result}, stream="lawv.checks")
    (check,) = lawv.state()["checks"]
    assert "contract_version: 7 governs this check, not 8" in check["anomalies"]
    assert (f"window_opened_at: the window opened at {_first_entry_position(lawv)}, not 0"
            in check["anomalies"])
    assert check["closes_window"] is False
    assert lawv.state()["halt"]["open"] == ["check-1"]  # inconsistent: blocks until reviewed


def test_no_contract_when_the_window_opened_the_first_one_registered_governs(
        lawv: Any) -> None:
    # Decision (see the README): the register started before any contract. v7 is the
    # first version to exist for this window; v8 came later, while the window was
    # open, so it applies from the next check on.
    lawv.entries(gain(0, 12.0), plain(1, "special_path"), gain(2, 8.0))
    _register(lawv)
    _register(lawv, **V8)
    first = run_check(lawv.dep, old=_file(one_anchor_measurement("m0", -50.0)),
                      new=_file(one_anchor_measurement("m1", -45.0)))
    assert first.check["contract_version"] == 7 and first.result.verdict == "HALT"
    assert first.check["anomalies"] == []
    lawv.entries(gain(3, 20.0))
    second = run_check(lawv.dep, new=_file(one_anchor_measurement("m2", -40.0)))
    assert second.check["contract_version"] == 8


def test_a_gap_on_an_empty_register_uses_the_newest_version_and_keeps_the_window(
        lawv: Any) -> None:
    _register(lawv)
    _register(lawv, **V8)
    gap = run_check(lawv.dep, new=_file(one_anchor_measurement("m1", -45.0)))
    # nothing was registered while a window was open: the window has not opened
    assert gap.check["contract_version"] == 8 and gap.check["window_opened_at"] == 0
    assert gap.result.verdict == "GAP" and gap.check["anomalies"] == []
    lawv.entries(gain(0, 20.0))
    _register(lawv, version=9, date="2026-10-20")  # after the first entry: waits
    check = run_check(lawv.dep, old=_file(one_anchor_measurement("m0", -50.0)),
                      new=MeasurementInput("m1", ref="m1"))
    assert check.check["contract_version"] == 8
    assert check.check["window_opened_at"] == _first_entry_position(lawv)
    assert check.result.verdict == "WARNING"  # 5 / 20 = 0.25 in [0.20, 0.30) under v8
