"""The register entry schema: strict parsing with errors that name the field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.receipts import EntryError, entry_hash, parse_entry
from cladelog.receipts.entries import GENESIS_PREV
from receipts_helpers import gain_test


def _bad(doc: Any, match: str) -> None:
    with pytest.raises(EntryError, match=match):
        parse_entry(doc)


def test_gain_test_round_trips_to_the_same_canonical_bytes() -> None:
    doc = gain_test(0, GENESIS_PREV)
    entry = parse_entry(doc)
    assert canonical_bytes(entry.to_dict()) == canonical_bytes(doc)
    assert entry_hash(entry) == entry_hash(doc)


def test_other_kinds() -> None:
    prev = "ab" * 32
    assert parse_entry({"seq": 1, "prev": prev, "kind": "special_path", "candidate": {
        "name": "e", "version": "2", "digest": "sha256:00"}, "path": "speed",
        "reason": "2x faster"}).kind == "special_path"
    assert parse_entry({"seq": 2, "prev": prev, "kind": "epoch_change", "oracle": {
        "name": "arena", "version": "4"}, "epoch": 1, "reason": "new book"}).kind == "epoch_change"
    assert parse_entry({"seq": 3, "prev": prev, "kind": "reversion", "reverts": 1,
                        "reason": "regression"}).reverts == 1  # type: ignore[union-attr]


def _mut(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(gain_test(0, GENESIS_PREV))
    target: Any = doc
    for p in path[:-1]:
        target = target[p]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(("path", "value", "match"), [
    (["seq"], -1, r"entry\.seq: must be an integer in \[0, 9007199254740991\], got -1$"),
    (["seq"], True, r"entry\.seq: must be an integer .*, got boolean true$"),
    (["prev"], "xyz", r"entry\.prev: must be 64"),
    (["kind"], "bogus", r"entry\.kind: must be one of"),
    (["extra"], 1, r"entry\.extra: is not a known field$"),
    (["epoch"], KeyError, r"entry\.epoch: is required"),
    (["stages"], [], r"entry\.stages: must be a list of 2"),
    (["stages", 0, "name"], "long", r"entry\.stages\[0\]\.name: must be 'short'"),
    (["stages", 1, "results", "wins"], -1, r"stages\[1\]\.results\.wins: must be a non-neg"),
    (["stages", 1, "results", "wins"], 2**60, r"results\.wins: integer out of range, must be "
                                               r"<= 2\*\*53 - 1$"),
    (["stages", 0, "elo"], float("nan"), r"stages\[0\]\.elo: must be finite"),
    (["stages", 0, "elo"], "12", r"stages\[0\]\.elo: must be a number"),
    (["stages", 0, "half_width"], -1, r"half_width: must be >= 0"),
    (["stages", 0, "pass"], 1, r"stages\[0\]\.pass: must be true or false"),
    (["stages", 0, "criterion", "type"], "x", r"criterion\.type: must be one of"),
    (["candidate", "name"], "", r"candidate\.name: must be a non-empty string, got string ''$"),
    (["candidate", "name"], " \t", r"candidate\.name: must not be blank$"),
    (["candidate", "name"], "a\x00b", r"candidate\.name: control character"),
])
def test_bad_fields_are_named(path: list[Any], value: Any, match: str) -> None:
    _bad(_mut(path, value), match)


def test_sprt_criterion_checks() -> None:
    doc = gain_test(0, GENESIS_PREV)
    sprt = {"type": "sprt", "elo0": 5, "elo1": 0, "alpha": 0.05, "beta": 0.05,
            "model": "logistic", "llr": 0}
    doc["stages"][0]["criterion"] = sprt
    _bad(doc, r"criterion\.elo1: must be greater than elo0")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5, "alpha": 0.6, "beta": 0.5}
    _bad(doc, r"criterion\.alpha \+ beta: must be below 1, got 1\.1$")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5, "alpha": 0.0}
    _bad(doc, r"criterion\.alpha: must lie in \(0, 1\), got 0\.0$")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5, "beta": 1}
    _bad(doc, r"criterion\.beta: must lie in \(0, 1\), got 1\.0$")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5, "beta": "0.05"}
    _bad(doc, r"criterion\.beta: must be a number, got string '0\.05'$")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5000}
    _bad(doc, r"criterion\.elo1: must lie in")
    doc["stages"][0]["criterion"] = sprt | {"elo0": 0, "elo1": 5, "model": "bayes"}
    _bad(doc, r"criterion\.model: must be one of logistic, normalized")


def test_counts_that_do_not_add_up_and_zero_games() -> None:
    doc = gain_test(0, GENESIS_PREV)
    doc["stages"][0]["results"] = {"losses": 0, "draws": 0, "wins": 0}
    _bad(doc, r"stages\[0\]\.results: zero games")
    doc = gain_test(0, GENESIS_PREV)
    doc["stages"][0]["games"] = 61  # 10 + 20 + 30 = 60
    _bad(doc, r"stages\[0\]\.games: 61 does not equal losses \+ draws \+ wins = 60")
    doc = gain_test(0, GENESIS_PREV)
    doc["stages"][0]["pentanomial"] = [1, 1, 1, 1, 1]  # 5 pairs = 10 games, not 60
    _bad(doc, r"pentanomial: 5 pairs make 10 games, but the results count 60")
    doc["stages"][0]["pentanomial"] = [0, 0, 0, 0, 30]  # 30 pairs = 60 games, 120 half points
    _bad(doc, r"pentanomial: the pairs score 120 half points, but the results score 80")


def test_seq_zero_needs_the_genesis_prev_and_reversion_an_earlier_seq() -> None:
    _bad(gain_test(0, "ab" * 32), r"entry\.prev: the entry with seq 0")
    _bad({"seq": 2, "prev": "ab" * 32, "kind": "reversion", "reverts": 2, "reason": "x"},
         r"entry\.reverts: must name an earlier seq than 2")


@pytest.mark.parametrize("value", [None, [], "x", 5, {"kind": 5}, {1: 2}])
def test_hostile_shapes_raise_entry_error(value: Any) -> None:
    with pytest.raises(EntryError):
        parse_entry(value)


def _reversion(reason: str) -> dict[str, Any]:
    return {"seq": 3, "prev": "ab" * 32, "kind": "reversion", "reverts": 1, "reason": reason}


@pytest.mark.parametrize(("path", "value", "match"), [
    (["candidate", "name"], "a\nb", r"candidate\.name: control character U\+000A at offset 1$"),
    (["candidate", "name"], "ab\tc", r"candidate\.name: control character U\+0009 at offset 2$"),
    (["candidate", "name"], "x\x7f", r"candidate\.name: control character U\+007F at offset 1$"),
    (["candidate", "name"], "xy\ud800", r"candidate\.name: lone surrogate at offset 2$"),
    (["candidate", "version"], "1" * 257, r"candidate\.version: must be at most 256 characters"),
])
def test_names_are_single_printable_lines(path: list[Any], value: Any, match: str) -> None:
    _bad(_mut(path, value), match)


def test_a_reason_may_span_lines_but_holds_no_other_control_character() -> None:
    assert parse_entry(_reversion("line one\n\tline two")).reason == "line one\n\tline two"  # type: ignore[union-attr]
    _bad(_reversion("a\r\nb"), r"entry\.reason: control character U\+000D at offset 1$")
    _bad(_reversion("ok\x1b[31m"), r"entry\.reason: control character U\+001B at offset 2$")
    _bad(_reversion("\udfff"), r"entry\.reason: lone surrogate at offset 0$")
