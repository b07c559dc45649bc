"""Each DEFECTIVE reason and each GAP reason of a check."""

from __future__ import annotations

import copy

import pytest
from cladelog.lawv import evaluate
from lawv_helpers import ANCHORS, contract, gain, measurement

OLD = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
NEW = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])
ENTRIES = [gain(1, 20.0)]


def _with(meas: dict, index: int, **changes: object) -> dict:  # type: ignore[type-arg]
    out = copy.deepcopy(meas)
    out["anchors"][index].update(changes)
    return out


def test_baseline_is_ok() -> None:
    assert evaluate(contract(), OLD, NEW, ENTRIES).status == "ok"


@pytest.mark.parametrize(
    ("field", "value"),
    [("hash", "b2-rebuilt"), ("rating", 2951.0), ("rating_uncertainty", 6.0)],
)
def test_identity_field_differs_from_contract(field: str, value: object) -> None:
    new = _with(NEW, 1, **{field: value})
    result = evaluate(contract(), OLD, new, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert result.verdict == "DEFECTIVE"
    assert result.r is None
    assert any(r.startswith(f"new.anchors[1].{field}:") for r in result.reasons)
    # the old endpoint still gets its absolute value recorded
    assert result.a_old is not None
    assert result.a_new is None


def test_endpoints_differ_from_each_other() -> None:
    old = _with(OLD, 0, hash="a1-old")
    result = evaluate(contract(), old, NEW, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert any("old.anchors[0].hash" in r for r in result.reasons)
    assert any("the old measurement" in r for r in result.reasons)


def test_both_endpoints_agree_but_differ_from_contract() -> None:
    old = _with(OLD, 2, rating=3101.0)
    new = _with(NEW, 2, rating=3101.0)
    result = evaluate(contract(), old, new, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert any("old.anchors[2].rating" in r for r in result.reasons)
    assert any("new.anchors[2].rating" in r for r in result.reasons)


def test_anchor_missing() -> None:
    new = copy.deepcopy(NEW)
    del new["anchors"][2]
    result = evaluate(contract(), OLD, new, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert any("'gamma'" in r and "missing" in r for r in result.reasons)


def test_extra_anchor() -> None:
    new = copy.deepcopy(NEW)
    new["anchors"].append(
        {"name": "delta", "hash": "d4", "rating": 2800.0, "rating_uncertainty": 9.0,
         "delta": 0.0, "uncertainty": 5.0}
    )
    result = evaluate(contract(), OLD, new, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert any("'delta' is not in the contract" in r for r in result.reasons)


def test_anchor_without_uncertainty_or_games() -> None:
    new = copy.deepcopy(NEW)
    del new["anchors"][1]["uncertainty"]
    result = evaluate(contract(), OLD, new, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert "new.anchors[1]: lacks both an uncertainty and game counts" in result.reasons


def test_anchor_with_null_uncertainty() -> None:
    new = _with(NEW, 0, uncertainty=None)
    result = evaluate(contract(), OLD, new, ENTRIES)
    assert "new.anchors[0]: lacks both an uncertainty and game counts" in result.reasons


def test_anchor_without_delta_or_games() -> None:
    old = copy.deepcopy(OLD)
    del old["anchors"][0]["delta"]
    result = evaluate(contract(), old, NEW, ENTRIES)
    assert result.status == "DEFECTIVE"
    assert "old.anchors[0]: lacks both a delta and game counts" in result.reasons


def test_register_gap_is_defective_even_with_good_measurements() -> None:
    result = evaluate(contract(), OLD, NEW, [gain(1, 10.0), gain(3, 10.0)])
    assert result.status == "DEFECTIVE"
    assert result.delta_a is not None  # numbers stay recorded
    assert result.overfitting_suspected is False


def test_defective_wins_over_gap() -> None:
    result = evaluate(contract(), None, _with(NEW, 0, hash="x"), [])
    assert result.status == "DEFECTIVE"
    assert "old measurement missing" in result.reasons


@pytest.mark.parametrize("which", ["old", "new", "both"])
def test_missing_measurement_is_a_gap_never_a_confirmation(which: str) -> None:
    old = None if which in ("old", "both") else OLD
    new = None if which in ("new", "both") else NEW
    result = evaluate(contract(), old, new, ENTRIES)
    assert result.status == "GAP"
    assert result.verdict == "GAP"
    assert result.verdict_short == "GAP"
    assert result.r is None
    assert result.delta_a is None
    assert result.monte_carlo is None
    if which != "new":
        assert "old measurement missing" in result.reasons
    if which != "old":
        assert "new measurement missing" in result.reasons


def test_contract_anchor_order_is_irrelevant() -> None:
    c = contract(list(reversed(ANCHORS)))
    base = evaluate(contract(), OLD, NEW, ENTRIES)
    swapped = evaluate(c, OLD, NEW, ENTRIES)
    assert swapped.status == "ok"
    assert swapped.a_old == pytest.approx(base.a_old, abs=1e-9)
