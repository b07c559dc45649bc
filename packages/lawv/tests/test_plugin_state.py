"""The ``lawv.state`` projection and the event payloads: what is kept, what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.lawv.commands import MeasurementInput, add_contract, run_check
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain


def test_register_entries_keep_only_what_law_v_reads(lawv: Any) -> None:
    entry = gain(1, 12.0, half_width=3.5, nelo=20.0)
    entry["stages"][1]["games"] = [1, 2, 3]
    entry["receipt"] = {"signature": "..."}
    lawv.entry(entry, envelope={"payload": "x"}, flags=["late"])
    lawv.entry(plain(2, "reversion", reverts=1, note="oops"))
    kept = lawv.state()["register"]
    assert kept["entries"]["1"] == [{
        "seq": 1, "kind": "gain_test",
        "stages": [{"name": "short", "elo": 5.0, "pass": True},
                   {"name": "long", "elo": 12.0, "pass": True, "nelo": 20.0,
                    "half_width": 3.5}]}]
    assert kept["entries"]["2"] == [{"seq": 2, "kind": "reversion", "reverts": 1}]
    assert (kept["first"], kept["head"]) == (1, 2)


def test_entry_whose_seq_disagrees_is_unreadable(lawv: Any) -> None:
    lawv.env.append("receipts.entry_recorded",
                    {"seq": 3, "kind": "gain_test", "entry": gain(4, 1.0)},
                    stream="receipts.register")
    assert lawv.state()["register"]["entries"]["3"] == [
        {"seq": 3, "unreadable": "register seq 3: entry.seq 4 differs from 3"}]


def test_bad_lawv_payload_is_refused_and_nothing_appended(lawv: Any) -> None:
    before = len(lawv.events())
    with pytest.raises(InputError, match=r"data\.anchors"):
        lawv.env.append("lawv.contract_registered", {**contract(ONE_ANCHOR), "anchors": "x"},
                        stream="lawv.contracts")
    bad = {**contract(ONE_ANCHOR), "halt_below": 0.9}  # above warn_below 0.75
    with pytest.raises(InputError, match=r"^event\.data"):
        lawv.env.append("lawv.contract_registered", bad, stream="lawv.contracts")
    with pytest.raises(InputError, match=r"^event\.data"):
        lawv.env.append("lawv.review_recorded", {"check_id": "check-1", "decision": "maybe",
                                                 "reviewer": "a", "reason": "b"},
                        stream="lawv.reviews")
    assert len(lawv.events()) == before


def test_events_that_break_the_rules_are_listed_as_ignored(lawv: Any) -> None:
    append = lawv.env.append
    append("lawv.contract_registered", contract(ONE_ANCHOR, version=7), stream="lawv.contracts")
    append("lawv.contract_registered", contract(ONE_ANCHOR, version=6), stream="lawv.contracts")
    append("lawv.contract_registered", contract(ONE_ANCHOR, version=9), stream="elsewhere")
    m = one_anchor_measurement("m1", -3.0)
    append("lawv.measurement_recorded", m, stream="lawv.measurements")
    append("lawv.measurement_recorded", one_anchor_measurement("m1", -4.0),
           stream="lawv.measurements")
    append("lawv.review_recorded", {"check_id": "check-1", "decision": "resume",
                                    "reviewer": "a", "reason": "b"}, stream="lawv.reviews")
    state = lawv.state()
    assert sorted(state["contracts"]) == ["7"]
    assert state["measurements"]["m1"]["document"] == m
    reasons = [i["reason"] for i in state["ignored"]]
    assert len(reasons) == 4
    assert "must be greater than the latest version 7, got 6" in reasons[0]
    assert "belongs on 'lawv.contracts'" in reasons[1]
    assert "'m1' is already recorded" in reasons[2]
    assert "no check 'check-1'" in reasons[3]


def test_forged_check_records_anomalies_and_closes_nothing(lawv: Any) -> None:
    add_contract(lawv.dep, contract(ONE_ANCHOR), source="c.json")
    lawv.entries(gain(1, 20.0))
    run_check(lawv.dep, old=MeasurementInput("a", one_anchor_measurement("m0", -50.0)),
              new=MeasurementInput("b", one_anchor_measurement("m1", -43.0)))  # HALT
    forged = dict(lawv.events()[-1].data)
    forged.update(check_id="check-2", number=2, contract_version=5, window_opened_at=0)
    lawv.env.append("lawv.check_recorded", forged, stream="lawv.checks")
    check = lawv.state()["checks"][1]
    assert check["closes_window"] is False
    assert any("contract_version: 5 is not registered" in a for a in check["anomalies"])
    assert any("window_opened_at" in a for a in check["anomalies"])
    # a HALT with anomalies still blocks: the rule errs on the side of review
    assert lawv.state()["halt"]["open"] == ["check-1", "check-2"]


def test_state_is_the_same_incrementally_and_from_scratch(lawv: Any) -> None:
    add_contract(lawv.dep, contract(ONE_ANCHOR), source="c.json")
    lawv.entries(gain(1, 20.0))
    incremental = lawv.dep.replay()
    run_check(lawv.dep, old=MeasurementInput("a", one_anchor_measurement("m0", -50.0)),
              new=MeasurementInput("b", one_anchor_measurement("m1", -41.0)))
    lawv.entries(gain(2, 20.0))
    incremental = lawv.dep.replay()
    scratch = lawv.dep.replay(rebuild=True, save=False)
    digest = {p.name: p.digest for p in incremental.projections}
    assert digest["lawv.state"] == {p.name: p.digest for p in scratch.projections}["lawv.state"]
    assert lawv.state()["ignored"] == []
