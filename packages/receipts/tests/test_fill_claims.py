"""The README's sample entry is recorded by `receipts add`; `receipts fill-claims` completes one.

Expected claims come from receipts_stats (the formulas written independently of
cladelog.core.elo), rounded to 0.01 as fill-claims writes them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import receipts_stats as ind
from cladelog.receipts import EntryError, fill_claims
from receipts_helpers import Keys

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- sample-entry:"


def sample_entry() -> dict[str, Any]:
    """The JSON block that follows the sample-entry marker in the package README."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index(MARKER) :]
    block = re.search(r"```json\n(.*?)\n```", after, re.S)
    assert block is not None, "no JSON block after the sample-entry marker"
    doc: dict[str, Any] = json.loads(block.group(1))
    return doc


def counts(stage: dict[str, Any]) -> tuple[int, int, int]:
    r = stage["results"]
    return r["losses"], r["draws"], r["wins"]


def draft_of(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with every claim fill-claims computes left out (llr null, the rest absent)."""
    draft = copy.deepcopy(entry)
    for stage in draft["stages"]:
        for member in ("elo", "half_width", "pass"):
            stage.pop(member, None)
        if stage["criterion"]["type"] == "sprt":
            stage["criterion"]["llr"] = None
    return draft


def test_the_sample_claims_are_what_the_games_give() -> None:
    short, long = sample_entry()["stages"]
    elo, half = ind.logistic(counts(short))
    assert (short["elo"], short["half_width"]) == (round(elo, 2), round(half, 2))
    assert short["pass"] is (elo - half > 0)  # fixed criterion, threshold 0
    elo, half = ind.logistic(counts(long))
    assert (long["elo"], long["half_width"]) == (round(elo, 2), round(half, 2))
    crit = long["criterion"]
    llr = ind.llr(counts(long), crit["elo0"], crit["elo1"])
    assert crit["llr"] == round(llr, 2)
    assert long["pass"] is (llr >= ind.sprt_upper(crit["alpha"], crit["beta"]))


@pytest.fixture
def keyfiles(tmp_path: Path, keys: Keys) -> dict[str, str]:
    out = {}
    for name, text in (
        ("oracle.key", keys.oracle_skey),
        ("oracle.vkey", keys.oracle_vkey),
        ("log.vkey", keys.log_vkey),
    ):
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
        out[name] = str(tmp_path / name)
    return out


def ok(result: Any) -> str:
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def test_the_sample_entry_passes_receipts_add(
    cladelog_env: Any, keyfiles: dict[str, str], tmp_path: Path
) -> None:
    ok(cladelog_env.cli("receipts", "key", "add", keyfiles["oracle.vkey"], "--role", "oracle"))
    ok(cladelog_env.cli("receipts", "key", "add", keyfiles["log.vkey"], "--role", "log"))
    entry = tmp_path / "entry.json"
    entry.write_text(json.dumps(sample_entry()), encoding="utf-8")
    signed = tmp_path / "r0.json"
    signed.write_text(
        ok(cladelog_env.cli("receipts", "sign", str(entry), "--key", keyfiles["oracle.key"])),
        encoding="utf-8",
    )
    added = cladelog_env.cli("receipts", "add", str(signed))
    assert added.exit_code == 0, added.output
    assert added.stdout == "recorded 1 receipt(s), seq 0..0\n"
    assert added.stderr == ""  # no flag: every claim agrees with the games
    [recorded] = [e for e in cladelog_env.events() if e.type == "receipts.entry_recorded"]
    assert recorded.data["flags"] == [] and recorded.data["recomputed"]["pass"] is True


def test_fill_claims_completes_the_sample_from_its_counts(
    cladelog_env: Any, tmp_path: Path
) -> None:
    sample = sample_entry()
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps(draft_of(sample)), encoding="utf-8")
    printed = json.loads(ok(cladelog_env.cli("receipts", "fill-claims", str(draft))))
    assert printed == sample
    # the draft's members in their order, then the claims
    assert list(printed["stages"][0]) == [
        *draft_of(sample)["stages"][0],
        "elo",
        "half_width",
        "pass",
    ]

    as_json = json.loads(ok(cladelog_env.cli("receipts", "fill-claims", "--json", str(draft))))
    assert as_json["entry"] == sample
    assert as_json["filled"] == {
        "stages[0].elo": sample["stages"][0]["elo"],
        "stages[0].half_width": sample["stages"][0]["half_width"],
        "stages[0].pass": True,
        "stages[1].elo": sample["stages"][1]["elo"],
        "stages[1].half_width": sample["stages"][1]["half_width"],
        "stages[1].criterion.llr": sample["stages"][1]["criterion"]["llr"],
        "stages[1].pass": True,
    }

    out = tmp_path / "entry.json"
    written = cladelog_env.cli("receipts", "fill-claims", str(draft), "-o", str(out))
    assert written.exit_code == 0 and written.stderr == f"wrote {out}\n"
    assert json.loads(out.read_text(encoding="utf-8")) == sample


def test_wrong_claims_are_replaced_a_claimed_verdict_is_kept_and_nelo_is_filled() -> None:
    doc = copy.deepcopy(sample_entry())
    short = doc["stages"][0]
    short["elo"], short["half_width"], short["nelo"], short["pass"] = 1.0, 2.0, None, False
    entry, filled = fill_claims(doc)
    elo, half = ind.logistic(counts(short))
    assert (entry["stages"][0]["elo"], entry["stages"][0]["half_width"]) == (
        round(elo, 2),
        round(half, 2),
    )
    assert entry["stages"][0]["nelo"] == round(ind.nelo(counts(short)), 2)
    assert entry["stages"][0]["pass"] is False  # the claim stays; add would flag it
    assert "stages[0].pass" not in filled
    assert doc["stages"][0]["elo"] == 1.0  # the input is not changed


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.update(kind="special_path"),
            "entry.kind: only a gain_test has claims to fill, got 'special_path'",
        ),
        (
            lambda d: d["stages"][0].update(results={"losses": 0, "draws": 0, "wins": 0}),
            "entry.stages[0].results: zero games; a stage needs at least one game",
        ),
        (lambda d: d.update(colour="red"), "entry.colour: is not a known field"),
    ],
)
def test_a_bad_entry_is_one_error_line(
    cladelog_env: Any, tmp_path: Path, change: Any, message: str
) -> None:
    doc = draft_of(sample_entry())
    change(doc)
    with pytest.raises(EntryError, match=re.escape(message)):
        fill_claims(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = cladelog_env.cli("receipts", "fill-claims", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}")
    assert result.stdout == ""
