"""``cladelog graph run / validate / replay`` through the real CLI and entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ge_helpers import concept, tree

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


def expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.expected.json").read_text())


@pytest.mark.parametrize("name", ["01_require_chain", "08_apply_cap_cycles"])
def test_run_prints_the_expected_output(cladelog_env: Any, name: str) -> None:
    result = cladelog_env.cli("graph", "run", str(FIXTURES / f"{name}.input.json"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    want = expected(name)
    for key, value in want.items():
        assert out[key] == value, key
    assert f"graph.{name}" in result.stderr
    assert cladelog_env.events(stream=f"graph.{name}")


def test_run_fixture_06_with_the_loop_kind(cladelog_env: Any) -> None:
    pytest.importorskip("cladelog.graph_engine.authoring")
    result = cladelog_env.cli("graph", "run", str(FIXTURES / "06_decompose_loop.input.json"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    want = expected("06_decompose_loop")
    assert out["final"] == want["final"] and out["providerCalls"] == want["providerCalls"]


def test_run_out_session_and_replay(cladelog_env: Any, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    src = str(FIXTURES / "01_require_chain.input.json")
    result = cladelog_env.cli("graph", "run", src, "--out", str(target), "--session", "mine")
    assert result.exit_code == 0, result.output
    assert "session mine: 3 state(s)" in result.output  # boot + 2 steps
    out = json.loads(target.read_text())
    assert out["final"] == expected("01_require_chain")["final"]
    # the same id again is refused; no id makes a fresh one
    again = cladelog_env.cli("graph", "run", src, "--session", "mine")
    assert again.exit_code == 2 and "already exists" in again.output
    fresh = cladelog_env.cli("graph", "run", src, "--out", str(target))
    fresh2 = cladelog_env.cli("graph", "run", src, "--out", str(target))
    assert "session 01_require_chain:" in fresh.output
    assert "session 01_require_chain-2:" in fresh2.output
    replay = cladelog_env.cli("graph", "replay", "mine", "--json")
    assert replay.exit_code == 0, replay.output
    doc = json.loads(replay.output)
    final = out["final"]
    assert doc["objects"] == len(final)
    assert doc["facts"] == sum(len(f) for f in final.values())  # _rev is not counted
    settled = [e for e in cladelog_env.events(stream="graph.mine")
               if e.type == "graph_engine.settled"]
    assert doc["digest"] == settled[-1].data["digest"]
    text = cladelog_env.cli("graph", "replay", "mine")
    assert text.output.startswith(f"session mine: revision {doc['revision']}, ")


def test_run_rejects_bad_scenarios_appending_nothing(cladelog_env: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"conceptTree": tree(), "steps": [{"op": "explode"}]}))
    result = cladelog_env.cli("graph", "run", str(bad))
    assert result.exit_code == 2
    assert "steps[0].op: must be one of" in result.output
    assert [e for e in cladelog_env.events() if e.stream.startswith("graph.")] == []
    missing = cladelog_env.cli("graph", "run", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "cannot read" in missing.output
    notjson = tmp_path / "x.json"
    notjson.write_text("{oops")
    assert cladelog_env.cli("graph", "run", str(notjson)).exit_code == 2
    listed = tmp_path / "l.json"
    listed.write_text("[]")
    assert cladelog_env.cli("graph", "run", str(listed)).exit_code == 2


def test_replay_of_an_unknown_session_exits_2(cladelog_env: Any) -> None:
    result = cladelog_env.cli("graph", "replay", "ghost")
    assert result.exit_code == 2 and "no session 'ghost'" in result.output


def test_validate_exit_codes(cladelog_env: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(tree(concept("A", require=["x"]))))
    ok = cladelog_env.cli("graph", "validate", str(good))
    assert ok.exit_code == 0 and "0 error(s), 0 warning(s)" in ok.output
    warn = tmp_path / "warn.json"
    warn.write_text(json.dumps(tree(concept("Node", require=["x"]),
                                    concept("B", ensure=["$name.toUpperCase() == 'X'"]))))
    w = cladelog_env.cli("graph", "validate", str(warn), "--json")
    assert w.exit_code == 0
    kinds = sorted(i["kind"] for i in json.loads(w.output)["warnings"])
    assert kinds == ["engine-marker-name", "method-in-token"]
    errs = tmp_path / "errs.json"
    errs.write_text(json.dumps({"childConcepts": {"A": {"_id": "A", "require": ["x"]}}}))
    e = cladelog_env.cli("graph", "validate", str(errs))
    assert e.exit_code == 1 and "no-name" in e.output
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"childConcepts": {"A": {"_id": "B"}}}))
    b = cladelog_env.cli("graph", "validate", str(broken))
    assert b.exit_code == 1 and "load" in b.output and "differs from its key" in b.output
    unreadable = cladelog_env.cli("graph", "validate", str(tmp_path / "missing.json"))
    assert unreadable.exit_code == 2
    garbage = tmp_path / "g.json"
    garbage.write_text("{not json")
    assert cladelog_env.cli("graph", "validate", str(garbage)).exit_code == 2


def test_validate_palette(cladelog_env: Any, tmp_path: Path) -> None:
    src = tmp_path / "p.json"
    src.write_text(json.dumps(tree(concept("A", provider="P::a"))))
    w = cladelog_env.cli("graph", "validate", str(src), "--palette", "P::b")
    assert w.exit_code == 0 and "provider-not-in-palette" in w.output
    s = cladelog_env.cli("graph", "validate", str(src), "--palette", "P::b", "--strict")
    assert s.exit_code == 1


def test_plugin_is_listed(cladelog_env: Any) -> None:
    result = cladelog_env.cli("plugins", "--json")
    rows = {r["name"]: r for r in json.loads(result.output)["plugins"]}
    assert any(r.get("enabled") and r.get("version") == "0.1.0" for r in rows.values())


def test_validate_reports_the_four_passes(cladelog_env: Any, tmp_path: Path) -> None:
    src = tmp_path / "passes.json"
    src.write_text(json.dumps(tree(
        concept("A", ensure=["!$B"]), concept("B", require=["A"]),  # negative cycle
        concept("C", provider="LLM::complete",
                prompt={"user": "u", "facts": {"sev": {"enum": ["low", "high"]}}}),
        concept("D", require=["sev", "x"], ensure=["$sev == 'medium'"]),  # never fires
    )))
    text = cladelog_env.cli("graph", "validate", str(src))
    assert text.exit_code == 0  # warnings only
    assert "unstratified-cycle" in text.output and "interface-never-fire" in text.output
    assert "0 error(s), 2 warning(s)" in text.output
    strict = cladelog_env.cli("graph", "validate", str(src), "--json", "--strict",
                              "--known-fact", "sev")
    assert strict.exit_code == 1  # x is neither produced nor declared
    doc = json.loads(strict.output)
    assert [(i["concept"], i["kind"], i["ref"]) for i in doc["errors"]] == [
        ("D", "unknown-ref", "x")]
    gates = tmp_path / "gates.json"
    gates.write_text(json.dumps(tree(concept("G", ensure=["$p >= 0.75"]))))
    plain = cladelog_env.cli("graph", "validate", str(gates))
    assert plain.exit_code == 0 and "0 warning(s)" in plain.output
    flagged = cladelog_env.cli("graph", "validate", str(gates), "--continuous-gates")
    assert flagged.exit_code == 0 and "continuous-gate" in flagged.output
