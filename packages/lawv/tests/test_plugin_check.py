"""Recording checks through the domain commands: windows, contracts, GAP, DEFECTIVE, replay."""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.lawv import LawVInputError, evaluate
from cladelog.lawv.commands import MeasurementInput, add_contract, add_measurement, run_check
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain


def _file(doc: dict[str, Any]) -> MeasurementInput:
    return MeasurementInput(source=f"{doc['id']}.json", document=doc)


def _check(lawv: Any, new: dict[str, Any] | None, *, old: dict[str, Any] | None = None,
           to_seq: int | None = None) -> Any:
    return run_check(lawv.dep, old=None if old is None else _file(old),
                     new=None if new is None else _file(new), to_seq=to_seq)


def _register(lawv: Any, **changes: Any) -> None:
    add_contract(lawv.dep, contract(ONE_ANCHOR, **changes), source="contract.json")


def test_windows_follow_each_other_across_checks(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 10.0), plain(2, "special_path"), gain(3, 10.0))
    first = _check(lawv, one_anchor_measurement("m1", -35.0),
                   old=one_anchor_measurement("m0", -50.0))
    # S = 10 + 10 = 20, dA = -35 - (-50) = 15, R = 0.75: CONTINUE (exactly at warn_below)
    assert (first.check["first_seq"], first.check["last_seq"]) == (1, 3)
    assert first.check["entry_seqs"] == [1, 2, 3]
    assert first.result.s == 20.0 and first.result.verdict == "CONTINUE"

    lawv.entries(gain(4, 10.0), plain(5, "epoch_change"), gain(6, 4.0), gain(7, 6.0))
    second = _check(lawv, one_anchor_measurement("m2", -27.0), to_seq=5)
    # window 4..5 only; old defaults to m1; dA = -27 - (-35) = 8, S = 10: R = 0.8
    assert (second.check["first_seq"], second.check["last_seq"]) == (4, 5)
    assert second.check["old_measurement"] == "m1"
    assert second.check["entry_seqs"] == [4, 5]
    assert second.result.r == pytest.approx(0.8)

    third = _check(lawv, one_anchor_measurement("m3", -19.0))
    # the rest of the register: 6..7, S = 4 + 6 = 10, dA = 8: R = 0.8
    assert (third.check["first_seq"], third.check["last_seq"]) == (6, 7)
    assert third.check["old_measurement"] == "m2"
    assert third.result.counted_seqs == (6, 7)

    empty = _check(lawv, one_anchor_measurement("m4", -19.0))
    assert empty.check["first_seq"] is None and empty.check["entry_seqs"] == []
    assert empty.result.verdict == "GAP"


def test_gap_and_defective_checks_do_not_consume_their_window(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 20.0))
    first = _check(lawv, one_anchor_measurement("m1", -30.0),
                   old=one_anchor_measurement("m0", -50.0))
    assert first.result.verdict == "CONTINUE"  # 20 / 20
    lawv.entries(gain(2, 10.0))
    gap = _check(lawv, None)  # no new measurement: a gap, never a confirmation
    assert gap.result.verdict == "GAP"
    assert "new measurement missing" in gap.result.reasons
    assert gap.check["closes_window"] is False
    lawv.entries(gain(3, 10.0))
    later = _check(lawv, one_anchor_measurement("m2", -20.0))
    # the gap's gain (seq 2) is still counted: window 2..3, S = 20, dA = 10, R = 0.5
    assert (later.check["first_seq"], later.check["last_seq"]) == (2, 3)
    assert later.check["old_measurement"] == "m1"
    assert later.result.s == 20.0 and later.result.verdict == "WARNING"


def test_first_check_without_old_measurement_is_a_gap(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 20.0))
    outcome = _check(lawv, one_anchor_measurement("m1", -30.0))
    assert outcome.result.verdict == "GAP"
    assert outcome.result.reasons == ("old measurement missing",)
    assert outcome.check["old_measurement"] is None


def test_register_gap_is_defective_until_it_is_filled(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 10.0), gain(2, 5.0), gain(4, 5.0))  # seq 3 is missing
    m0, m1 = one_anchor_measurement("m0", -50.0), one_anchor_measurement("m1", -30.0)
    first = _check(lawv, m1, old=m0)
    assert first.result.verdict == "DEFECTIVE"
    assert any("seq 4 follows seq 2" in r for r in first.result.reasons)
    assert first.check["entry_seqs"] == [1, 2, 4]
    lawv.entry(plain(3, "special_path"))  # the register is complete now
    again = _check(lawv, m1, old=m0)
    # window 1..4, S = 10 + 5 + 5 = 20, dA = 20: R = 1
    assert again.result.verdict == "CONTINUE"
    assert again.check["entry_seqs"] == [1, 2, 3, 4]


def test_unreadable_register_entry_makes_the_window_defective(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 10.0), plain(2, "mystery"), gain(3, 10.0))
    outcome = _check(lawv, one_anchor_measurement("m1", -30.0),
                     old=one_anchor_measurement("m0", -50.0))
    assert outcome.result.verdict == "DEFECTIVE"
    assert outcome.check["unreadable_seqs"] == [2]
    assert outcome.check["entry_seqs"] == [1, 3]


def test_conflicting_register_entries_for_one_seq_are_defective(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 10.0), gain(2, 10.0))
    lawv.entry(gain(2, 10.0))  # an identical repetition changes nothing
    assert len(lawv.state()["register"]["entries"]["2"]) == 1
    lawv.entry(gain(2, 30.0))  # a different entry under the same seq
    outcome = _check(lawv, one_anchor_measurement("m1", -30.0),
                     old=one_anchor_measurement("m0", -50.0))
    assert outcome.result.verdict == "DEFECTIVE"
    assert outcome.check["entry_seqs"] == [1, 2, 2]


def test_new_contract_version_applies_from_the_next_check_on(lawv: Any) -> None:
    _register(lawv, version=7, halt_below=0.40, warn_below=0.75)
    lawv.entries(gain(1, 20.0))
    first = _check(lawv, one_anchor_measurement("m1", -30.0),
                   old=one_anchor_measurement("m0", -50.0))
    assert first.check["contract_version"] == 7
    lawv.entries(gain(2, 20.0))
    # version 8 is registered while the window of the next check is open
    _register(lawv, version=8, date="2026-10-19", halt_below=0.50, warn_below=0.80)
    second = _check(lawv, one_anchor_measurement("m2", -21.0))
    # dA = 9, S = 20: R = 0.45, WARNING under v7 (it would be HALT under v8)
    assert second.check["contract_version"] == 7
    assert second.result.verdict == "WARNING"
    lawv.entries(gain(3, 20.0))
    third = _check(lawv, one_anchor_measurement("m3", -12.0))
    # the window opened at the second check, after v8 was registered: R = 9/20 < 0.50
    assert third.check["contract_version"] == 8
    assert third.result.verdict == "HALT"
    assert third.result.halt_below == 0.50


def test_first_check_uses_the_newest_version_registered_before_it(lawv: Any) -> None:
    _register(lawv, version=7)
    _register(lawv, version=8, date="2026-10-19")
    lawv.entries(gain(1, 20.0))
    outcome = _check(lawv, one_anchor_measurement("m1", -30.0),
                     old=one_anchor_measurement("m0", -50.0))
    assert outcome.check["contract_version"] == 8


def test_check_needs_a_contract_and_appends_nothing_without(lawv: Any) -> None:
    lawv.entries(gain(1, 20.0))
    before = len(lawv.events())
    with pytest.raises(LawVInputError, match=r"^contract: no Law V contract"):
        _check(lawv, one_anchor_measurement("m1", -30.0), old=one_anchor_measurement("m0", -5.0))
    assert len(lawv.events()) == before


def test_old_must_continue_the_chain_of_measurements(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 20.0))
    _check(lawv, one_anchor_measurement("m1", -30.0), old=one_anchor_measurement("m0", -50.0))
    lawv.entries(gain(2, 20.0))
    before = len(lawv.events())
    with pytest.raises(LawVInputError, match=r"^--old: must be 'm1'"):
        run_check(lawv.dep, old=MeasurementInput(source="--old", ref="m0"),
                  new=_file(one_anchor_measurement("m2", -20.0)))
    assert len(lawv.events()) == before


def test_measurement_ids_are_unique(lawv: Any) -> None:
    first = add_measurement(lawv.dep, one_anchor_measurement("m1", -30.0), source="a.json")
    assert first.appended
    same = add_measurement(lawv.dep, one_anchor_measurement("m1", -30.0), source="b.json")
    assert not same.appended and same.events == ()
    with pytest.raises(LawVInputError, match=r"^c\.json: measurement\.id: 'm1' is already"):
        add_measurement(lawv.dep, one_anchor_measurement("m1", -31.0), source="c.json")


def test_check_event_records_every_input_and_number(lawv: Any) -> None:
    _register(lawv)
    lawv.entries(gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0))
    outcome = _check(lawv, one_anchor_measurement("m1", -41.0),
                     old=one_anchor_measurement("m0", -50.0))
    events = lawv.events()
    # the two measurement files and the check went in as one batch, in that order
    assert [e.type for e in events[-3:]] == ["lawv.measurement_recorded"] * 2 + [
        "lawv.check_recorded"]
    data = events[-1].data
    assert data["check_id"] == "check-1" and data["number"] == 1
    assert data["contract_version"] == 7
    assert (data["old_measurement"], data["new_measurement"]) == ("m0", "m1")
    assert (data["first_seq"], data["last_seq"], data["entry_seqs"]) == (1, 3, [1, 2, 3])
    # the first window opened at the log position of the first register entry
    first_entry = next(e for e in events if e.type == "receipts.entry_recorded")
    assert data["window_opened_at"] == first_entry.position
    assert data["result"] == outcome.result.to_dict()
    assert data["verdict"] == "WARNING" and data["result"]["r"] == 9.0 / 20.0


def _inputs_from_log(lawv: Any, data: dict[str, Any]) -> tuple[Any, ...]:
    """Look the recorded references up in the raw events (not through lawv.state)."""
    events = lawv.events()
    contracts = {e.data["version"]: e.data for e in events
                 if e.type == "lawv.contract_registered"}
    measurements = {e.data["id"]: e.data for e in events
                    if e.type == "lawv.measurement_recorded"}
    register = {e.data["seq"]: e.data["entry"] for e in events
                if e.type == "receipts.entry_recorded"}
    return (contracts[data["contract_version"]], measurements.get(data["old_measurement"]),
            measurements.get(data["new_measurement"]),
            [register[s] for s in data["entry_seqs"]], (data["first_seq"], data["last_seq"]))


def test_replay_rederives_the_recorded_verdict_and_band(lawv: Any) -> None:
    _register(lawv, mc_samples=500)
    lawv.entries(gain(1, 12.0), gain(2, 8.0))
    _check(lawv, one_anchor_measurement("m1", -41.0), old=one_anchor_measurement("m0", -50.0))
    data = lawv.events()[-1].data
    contract_doc, old, new, entries, window = _inputs_from_log(lawv, data)
    again = evaluate(contract_doc, old, new, entries, window=window)
    assert again.to_dict() == data["result"]
    assert lawv.fresh_state()["checks"][0]["result"] == data["result"]


def test_monte_carlo_band_matches_an_independent_recomputation(lawv: Any) -> None:
    _register(lawv, mc_samples=400)
    lawv.entries(gain(1, 12.0), gain(2, 8.0))
    old = one_anchor_measurement("m0", -50.0, h=10.0)
    new = one_anchor_measurement("m1", -41.0, h=10.0)
    _check(lawv, new, old=old)
    recorded = lawv.fresh_state()["checks"][0]["result"]
    # The seed: SHA-256 of the canonical inputs, in their documented JSON forms.
    inputs = {"contract": contract(ONE_ANCHOR, mc_samples=400), "old": old, "new": new,
              "entries": [gain(1, 12.0), gain(2, 8.0)], "window": [1, 2]}
    digest = hashlib.sha256(canonical_bytes(inputs)).hexdigest()
    assert recorded["inputs_digest"] == digest
    # dA = 9 exactly; u(dA) = sqrt(s_old^2 + s_new^2) with s = sqrt(10^2 + 10^2) (h_i, h_L)
    u = math.sqrt(2 * (10.0**2 + 10.0**2))
    rng = random.Random(int(digest, 16))
    draws = sorted(rng.gauss(9.0, u / 1.959963984540054) / 20.0 for _ in range(400))

    def pct(p: float) -> float:  # linear between order statistics at p/100 * (n - 1)
        pos = p / 100 * (len(draws) - 1)
        low = math.floor(pos)
        high = min(low + 1, len(draws) - 1)
        return draws[low] + (draws[high] - draws[low]) * (pos - low)

    band = recorded["monte_carlo"]
    assert (band["samples"], band["used"], band["skipped"]) == (400, 400, 0)
    assert band["percentiles"]["2.5"] == pytest.approx(pct(2.5), abs=1e-12)
    assert band["percentiles"]["50"] == pytest.approx(pct(50), abs=1e-12)
    assert band["percentiles"]["97.5"] == pytest.approx(pct(97.5), abs=1e-12)
