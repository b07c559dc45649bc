"""The demo's consensus scenario: lab-d equivocates and is slashed once, the honest labs
finalize and settle the upgrades, the bad one is not finalized, the certificate verifies,
and the report section shows it."""

from __future__ import annotations

from pathlib import Path

from cladelog.demo.consensus_story import consensus_section_html, run_consensus_story


def test_consensus_story(tmp_path: Path) -> None:
    summary = run_consensus_story(tmp_path / "consensus", seed=7)
    outcomes = {t["candidate"]: (t["outcome"], t["reason"]) for t in summary["timeline"]}
    assert outcomes == {"lumen-m1": ("settled", None), "lumen-m2": ("settled", None),
                        "lumen-m2-rival": ("not_finalized", "sibling_finalized"),
                        "lumen-m3": ("not_finalized", "no_quorum")}
    labs = {v["validator"]: v for v in summary["validators"]}
    assert labs["lab-d"]["slashes"] == [{"offense": "equivocation", "amount": 50}]
    assert labs["lab-d"]["state"] == "slashed" and labs["lab-d"]["stake"] == 50
    assert all(labs[x]["slashes"] == [] for x in ("lab-a", "lab-b", "lab-c"))
    assert summary["certificate"]["verified"], summary["certificate"]
    section = consensus_section_html(tmp_path)
    assert "lab-d" in section and "equivocation −50" in section
    assert "verified offline" in section
    # the same seed writes the same log
    again = run_consensus_story(tmp_path / "again", seed=7)
    assert again["timeline"] == summary["timeline"]
    a = (tmp_path / "consensus" / "lumen-m2.cert.json").read_text()
    b = (tmp_path / "again" / "lumen-m2.cert.json").read_text()
    assert a == b
