"""The lawv CLI end to end (the seed's example, exit codes, bad input, views)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain


def _seed_setup(lawv: Any) -> None:
    # the seed's invented example: the oracle confirmed +20 Elo since the last check
    # (here two gain tests, long stages 12 + 8 = 20); a special path counts 0.
    assert lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR))).exit_code == 0
    lawv.entries(gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0))


def test_seed_example_warning_exit_0(lawv: Any) -> None:
    _seed_setup(lawv)
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -41.0))  # +9 against the anchor
    result = lawv.cli("lawv", "check", "--old", old, "--new", new)
    assert result.exit_code == 0, result.output + result.stderr
    assert "check-1: WARNING" in result.output
    assert "R = 0.4500" in result.output  # 9 / 20
    check = lawv.state()["checks"][0]
    assert check["verdict"] == "WARNING"
    assert check["result"]["r"] == 9.0 / 20.0


def test_seed_example_halt_exit_1(lawv: Any) -> None:
    _seed_setup(lawv)
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -43.0))  # +7 against the anchor
    result = lawv.cli("lawv", "check", "--old", old, "--new", new)
    assert result.exit_code == 1, result.output + result.stderr
    assert "check-1: HALT" in result.output
    assert "R = 0.3500" in result.output  # 7 / 20
    gate = lawv.cli("gate", "cand")
    assert gate.exit_code == 1
    assert "block" in gate.output and "check-1" in gate.output


def _bad(lawv: Any, *args: str, pattern: str) -> None:
    """The command exits 2 with one 'error: ...' line matching ``pattern``, appending nothing."""
    import re

    before = len(lawv.events())
    result = lawv.cli(*args)
    assert result.exit_code == 2, result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert len(lawv.events()) == before


def test_bad_contract_files_exit_2(lawv: Any) -> None:
    bad = lawv.write(contract(ONE_ANCHOR, T=-1), name="bad.json")
    _bad(lawv, "lawv", "contract", "add", bad,
         pattern=r"^error: \S*bad\.json: contract\.T: must be a finite number >= 0, got -1$")
    broken = lawv.write("{not json", name="broken.json")
    _bad(lawv, "lawv", "contract", "add", broken, pattern=r"broken\.json: invalid JSON")
    _bad(lawv, "lawv", "contract", "add", str(lawv.root / "missing.json"),
         pattern=r"missing\.json: cannot read")


def test_contract_versions_must_increase_and_identical_is_a_no_op(lawv: Any) -> None:
    v8 = lawv.write(contract(ONE_ANCHOR, version=8))
    assert lawv.cli("lawv", "contract", "add", v8).exit_code == 0
    before = len(lawv.events())
    again = lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR, version=8)))
    assert again.exit_code == 0 and "already registered" in again.output
    assert len(lawv.events()) == before
    _bad(lawv, "lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR, version=8, T=1.0)),
         pattern=r"contract\.version: 8 is already registered with other content")
    _bad(lawv, "lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR, version=7)),
         pattern=r"contract\.version: must be greater than the latest registered version 8")


def test_bad_check_inputs_exit_2(lawv: Any) -> None:
    _seed_setup(lawv)
    good = lawv.write(one_anchor_measurement("m0", -50.0))
    _bad(lawv, "lawv", "check", "--old", "nope", "--new", good,
         pattern=r"^error: --old: no such file and no recorded measurement 'nope'$")
    bad = lawv.write({"id": "m1", "version": "v", "anchors": [{"name": "solo"}]},
                     name="m1.json")
    _bad(lawv, "lawv", "check", "--old", good, "--new", bad,
         pattern=r"m1\.json: measurement\.anchors\[0\]\.hash: is required")
    _bad(lawv, "lawv", "check", "--old", good, "--new", good,
         pattern=r"--new: is the same measurement as --old")
    _bad(lawv, "lawv", "check", "--old", good, "--to-seq", "9",
         pattern=r"--to-seq: seq 9 lies beyond the register head \(3\)")
    # a file that fails is not recorded, not even the good one of the same batch
    assert lawv.state()["measurements"] == {}


def test_review_cli(lawv: Any) -> None:
    _seed_setup(lawv)
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -43.0))
    assert lawv.cli("lawv", "check", "--old", old, "--new", new).exit_code == 1
    review = ("lawv", "review", "--decision", "resume", "--reviewer", "ana", "--reason", "ok")
    _bad(lawv, *review, "--check", "check-7", pattern=r"--check: no such check")
    result = lawv.cli(*review, "--check", "check-1")
    assert result.exit_code == 0, result.stderr
    assert "review of check-1 recorded: resume" in result.output
    assert lawv.cli("gate", "cand").exit_code == 0
    assert lawv.cli("lawv", "review", "--check", "check-1", "--decision", "later",
                    "--reviewer", "a", "--reason", "b").exit_code == 2


def test_review_of_a_non_halt_check_exits_2(lawv: Any) -> None:
    _seed_setup(lawv)
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -41.0))
    assert lawv.cli("lawv", "check", "--old", old, "--new", new).exit_code == 0
    _bad(lawv, "lawv", "review", "--check", "1", "--decision", "resume", "--reviewer", "a",
         "--reason", "b", pattern=r"--check: check-1 is WARNING; only HALT checks and checks with "
                                   r"anomalies are reviewed")


def test_measurements_by_id_lists_status_and_explain(lawv: Any) -> None:
    _seed_setup(lawv)
    for doc in (one_anchor_measurement("m0", -50.0), one_anchor_measurement("m1", -41.0)):
        result = lawv.cli("lawv", "measure", "add", lawv.write(doc))
        assert result.exit_code == 0 and "recorded at position" in result.output
    listed = json.loads(lawv.cli("lawv", "measure", "list", "--json").output)
    assert [m["id"] for m in listed["measurements"]] == ["m0", "m1"]
    assert lawv.cli("lawv", "check", "--old", "m0", "--new", "m1").exit_code == 0

    contracts = json.loads(lawv.cli("lawv", "contract", "list", "--json").output)
    assert [c["version"] for c in contracts["contracts"]] == [7]
    assert contracts["governs_next_check"] == 7

    status = json.loads(lawv.cli("lawv", "status", "--json").output)
    assert status["blocked"] is False
    assert status["vote"]["decision"] == "warn"
    assert status["checks"][0]["r"] == 0.45 and status["checks"][0]["verdict"] == "WARNING"
    assert status["next_check"] == {"old_measurement": "m1", "window": None, "entries": 0,
                                    "unreadable": []}
    text = lawv.cli("lawv", "status").output
    assert "check-1" in text and "0.450" in text and "WARNING" in text

    explained = json.loads(lawv.cli("lawv", "explain", "check-1", "--json").output)
    assert explained["replay"] == {"identical": True}
    # one anchor: A = R + delta = 3000 - 50 and 3000 - 41; w = 1/(10^2 + 10^2 + 36.9^2)
    (old_term,) = explained["old"]["anchors"]
    assert explained["old"]["A"] == 2950.0 and explained["new"]["A"] == 2959.0
    assert old_term["weight"] == pytest.approx(1 / (100 + 100 + 36.9**2))
    assert old_term["share"] == 1.0
    assert [(e["seq"], e["adds"]) for e in explained["window"]["entries"]] == [
        (1, 12.0), (2, 0.0), (3, 8.0)]
    assert explained["s"] == 20.0 and explained["r"] == 0.45
    text = lawv.cli("lawv", "explain", "1").output
    assert "R = dA / S = 0.4500" in text and "replay from the recorded inputs: identical" in text
    assert "Monte Carlo band" in text
    _bad(lawv, "lawv", "explain", "check-5", pattern=r"CHECK: no such check")


def test_status_shows_what_blocks(lawv: Any) -> None:
    _seed_setup(lawv)
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    new = lawv.write(one_anchor_measurement("m1", -43.0))
    lawv.cli("lawv", "check", "--old", old, "--new", new)
    status = json.loads(lawv.cli("lawv", "status", "--json").output)
    assert status["blocked"] is True and status["open_halts"] == ["check-1"]
    assert status["vote"]["decision"] == "block"
    assert "blocked   by check-1" in lawv.cli("lawv", "status").output


def test_review_and_add_commands_print_json(lawv: Any) -> None:
    added = lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR)), "--json")
    assert added.exit_code == 0, added.stderr
    assert json.loads(added.output)["appended"] is True
    lawv.entries(gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0))
    old = lawv.write(one_anchor_measurement("m0", -50.0))
    measured = json.loads(lawv.cli("lawv", "measure", "add", old, "--json").output)
    assert measured["key"] == "m0" and measured["appended"] is True
    new = lawv.write(one_anchor_measurement("m1", -43.0))
    assert lawv.cli("lawv", "check", "--old", old, "--new", new).exit_code == 1
    result = lawv.cli("lawv", "review", "--check", "check-1", "--decision", "resume",
                      "--reviewer", "ana", "--reason", "ok", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.output)
    assert doc["check"] == "check-1" and doc["decision"] == "resume" and doc["reviewer"] == "ana"
    assert doc["position"] == lawv.events()[-1].position
