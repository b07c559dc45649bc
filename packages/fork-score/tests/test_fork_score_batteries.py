"""Strict reading of battery-result documents and the shipped JSON Schema."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cladelog.fork_score import BatteryInputError, ForkScoreError, battery_result_schema, score
from fork_score_docs import SEED_TABLE, make_doc, with_metrics

SCHEMA_FILE = (
    Path(__file__).resolve().parents[1]
    / "src/cladelog/fork_score/schema/battery-result.schema.json"
)


def child_error(child: Any) -> str:
    with pytest.raises(BatteryInputError) as info:
        score(make_doc(0.5), child)
    return str(info.value)


def test_error_is_a_value_error_and_names_the_path() -> None:
    child = make_doc(0.5, {"5F.finetuning": 1.2})
    message = child_error(child)
    assert message == "child.5F.finetuning.adaptation_improvement_rate: must lie in [0, 1], got 1.2"
    assert issubclass(BatteryInputError, ValueError)
    assert issubclass(BatteryInputError, ForkScoreError)


def test_parent_errors_are_prefixed_parent() -> None:
    with pytest.raises(BatteryInputError, match=r"^parent\.5S\.syntax\.parse_pass_rate: "):
        score(make_doc(0.5, {"5S.syntax": -0.01}), make_doc(0.5))


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-0.1, "must lie in [0, 1], got -0.1"),
        (1.0000001, "must lie in [0, 1]"),
        (math.nan, "must be finite"),
        (math.inf, "must be finite"),
        (True, "must be a number, got boolean true"),
        (None, "must be a number, got null"),
        ("0.5", "must be a number, got string"),
        ([0.5], "must be a number, got list"),
    ],
)
def test_bad_rates(value: Any, fragment: str) -> None:
    child = make_doc(0.5)
    child["batteries"]["5T"]["time"]["temporal_context_preservation_rate"] = value
    message = child_error(child)
    assert message.startswith("child.5T.time.temporal_context_preservation_rate: ")
    assert fragment in message


def test_rate_bounds_are_inclusive_and_ints_are_numbers() -> None:
    # 0 and 1 (ints) are valid rates; the score is computed without error.
    result = score(make_doc(0), make_doc(1))
    # every sub-battery rises by 1 -> delta 1 per battery -> 1 + 1 + 1 = 3
    assert result.score == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("adaptation_efficiency_infinite_count", -1, "must be a non-negative integer, got -1"),
        ("adaptation_efficiency_infinite_count", 1.0, "must be a non-negative integer, got 1.0"),
        ("adaptation_efficiency_neg_infinite_count", True, "boolean true"),
        ("adaptation_efficiency_neg_infinite_count", 2**60, "out of range"),
        ("adaptation_efficiency_mean_finite", math.nan, "must be finite"),
        ("adaptation_efficiency_mean_finite", "fast", "must be a number"),
    ],
)
def test_bad_efficiency_metrics(key: str, value: Any, fragment: str) -> None:
    child = with_metrics(make_doc(0.5), "5F.finetuning", **{key: value})
    message = child_error(child)
    assert message.startswith(f"child.5F.finetuning.{key}: ")
    assert fragment in message


def test_feedback_efficiency_is_read_from_feedback_loop() -> None:
    child = with_metrics(make_doc(0.5), "5F.feedback-loop", feedback_efficiency_infinite_count=-3)
    assert child_error(child).startswith(
        "child.5F.feedback-loop.feedback_efficiency_infinite_count"
    )


def test_unknown_battery_is_an_error() -> None:
    child = make_doc(0.5)
    child["batteries"]["5X"] = {}
    message = child_error(child)
    assert message.startswith("child.5X: unknown battery")


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ([], "child: must be an object"),
        ({}, "child.batteries: required member is missing"),
        ({"batteries": []}, "child.batteries: must be an object"),
        ({"batteries": {"5S": 3}}, "child.5S: must be an object"),
        ({"batteries": {"5S": {"syntax": 0.5}}}, "child.5S.syntax: must be an object"),
    ],
)
def test_structural_errors(document: Any, fragment: str) -> None:
    assert child_error(document).startswith(fragment)


def test_hostile_key_is_rendered_on_one_line() -> None:
    child = make_doc(0.5)
    child["batteries"]["bad\nkey\ud800" + "x" * 500] = {}
    message = child_error(child)
    assert "\n" not in message
    assert len(message) < 200
    message.encode("ascii")  # no lone surrogate can reach a terminal


def test_other_top_level_keys_and_metrics_are_accepted_and_ignored() -> None:
    parent = make_doc(0.5, organism_id="parent-1", run={"seed": 7})
    child = with_metrics(
        make_doc(0.5, organism_id="child-1"), "5S.syntax", parse_time_ms="slow", notes=None
    )
    result = score(parent, child)
    # nothing changed in any rate: every delta is 0, so the score is 0
    assert result.score == 0.0
    assert result.flags == []


def test_unlisted_sub_batteries_are_ignored_without_validation() -> None:
    child = make_doc(0.5)
    child["batteries"]["5S"]["handwriting"] = "not even an object"
    result = score(make_doc(0.5), child)
    assert result.score == 0.0


def test_legacy_transfer_is_ignored_even_when_present() -> None:
    # The legacy sub-battery collapses from 1.0 to 0.0 in the child, and is even
    # malformed there; transfer-learning (the one that counts) rises 0.5 -> 0.6.
    parent = make_doc(0.5)
    parent["batteries"]["5T"]["transfer"] = {"transfer_success_rate": 1.0}
    child = make_doc(0.5, {"5T.transfer-learning": 0.6})
    child["batteries"]["5T"]["transfer"] = {"transfer_success_rate": 0.0, "junk": [1, 2]}
    result = score(parent, child)
    # delta_5T = (0.6 - 0.5 + 0 + 0 + 0 + 0) / 5 = 0.02; no flag, no missing entry
    assert result.deltas["5T"].delta == pytest.approx(0.02)
    assert "transfer" not in result.deltas["5T"].sub_deltas
    assert result.flags == []
    assert all(m.sub_battery != "transfer" for m in result.missing)


def test_sub_battery_without_its_rate_counts_as_missing() -> None:
    child = make_doc(0.5)
    child["batteries"]["5S"]["syntax"] = {"other_metric": 0.9}
    result = score(make_doc(0.5), child)
    assert "MISSING_5S_syntax" in result.flags


def test_schema_file_is_valid_json_and_matches_the_seed_table() -> None:
    on_disk = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert battery_result_schema() == on_disk
    assert on_disk["required"] == ["batteries"]
    assert on_disk["additionalProperties"] is True  # other top-level keys are kept
    batteries = on_disk["properties"]["batteries"]
    assert batteries["additionalProperties"] is False  # unknown batteries are refused
    assert set(batteries["properties"]) == set(SEED_TABLE)
    for battery, subs in SEED_TABLE.items():
        listed = batteries["properties"][battery]["properties"]
        assert set(listed) == set(subs)
        for sub, rate_key in subs.items():
            assert rate_key in listed[sub]["properties"]
    rate = on_disk["$defs"]["rate"]
    assert (rate["type"], rate["minimum"], rate["maximum"]) == ("number", 0, 1)
    finetuning = batteries["properties"]["5F"]["properties"]["finetuning"]["properties"]
    assert "adaptation_efficiency_neg_infinite_count" in finetuning
    feedback = batteries["properties"]["5F"]["properties"]["feedback-loop"]["properties"]
    assert "feedback_efficiency_mean_finite" in feedback
