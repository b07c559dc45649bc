"""``cladelog graph run / validate / replay`` through the real CLI and entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.graph_engine import session_records
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
    # the records as the log holds them (packed by default): three settles, the last one's
    # digest is the replay's
    settled = [d for k, d in session_records(cladelog_env.deployment, "mine") if k == "settled"]
    assert len(settled) == 3
    assert doc["digest"] == settled[-1]["digest"]
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
    # LLM::complete is not registered by a plugin of this deployment: named in the palette
    text = cladelog_env.cli("graph", "validate", str(src), "--palette", "LLM::complete")
    assert text.exit_code == 0  # warnings only
    assert "unstratified-cycle" in text.output and "interface-never-fire" in text.output
    assert "0 error(s), 2 warning(s)" in text.output
    strict = cladelog_env.cli("graph", "validate", str(src), "--json", "--strict",
                              "--known-fact", "sev", "--palette", "LLM::complete")
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


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"config": {"applyCapp": 3}}, "error: scenario.config.applyCapp: unknown key"),
     ({"providers": {"P::x": {"kind": "emit"}}}, "error: providers.P::x.emit: required"),
     ({"providers": {"P::x": {"kind": "emit", "emit": {}, "async": "yes"}}},
      "error: providers.P::x.async: must be true or false, got 'yes'"),
     ({"providers": {"P::x": {"kind": "emit", "emit": {"a": "${=1 +}"}}}},
      "error: providers.P::x.emit.a: unexpected end of expression at 3 in '1 +'")],
)
def test_run_refuses_malformed_scenarios_in_one_line(cladelog_env: Any, tmp_path: Path,
                                                     bad: dict[str, Any], message: str) -> None:
    src = tmp_path / "bad.json"
    src.write_text(json.dumps({"conceptTree": tree(), **bad}))
    result = cladelog_env.cli("graph", "run", str(src))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message)
    assert [e for e in cladelog_env.events() if e.stream.startswith("graph.")] == []


def test_a_run_failing_mid_way_is_recorded_as_failed(cladelog_env: Any, tmp_path: Path) -> None:
    src = tmp_path / "mid.json"
    src.write_text(json.dumps({
        "conceptTree": tree(concept("A", require=["v"])),
        "seed": {"freeNodes": [{"_id": "o", "v": 1}]},
        "steps": [{"op": "mutate", "template": {"$$_id": "o", "v": 2}}, {"op": "settle"},
                  {"op": "settle"},
                  {"op": "castConcept", "target": "nope", "concept": "A"}]}))
    result = cladelog_env.cli("graph", "run", str(src), "--session", "mid")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: steps[3].cast.target: unknown object 'nope'"
    events = cladelog_env.events(stream="graph.mid")
    assert events[-1].type == "graph_engine.run_failed"
    assert events[-1].data == {"step": 3, "op": "castConcept",
                               "message": "steps[3].cast.target: unknown object 'nope'"}
    assert cladelog_env.state("graph_engine.sessions")["sessions"]["mid"]["status"] == "failed"
    replay = cladelog_env.cli("graph", "replay", "mid")
    assert replay.exit_code == 1
    assert "the run FAILED (steps[3].cast.target: unknown object 'nope')" in replay.output
    doc = json.loads(cladelog_env.cli("graph", "replay", "mid", "--json").output)
    assert doc["failed"]["step"] == 3 and doc["revision"] == 2  # boot's A, then step 0
    ok = cladelog_env.cli("graph", "run", str(FIXTURES / "01_require_chain.input.json"),
                          "--session", "fine")
    assert ok.exit_code == 0
    assert cladelog_env.cli("graph", "replay", "fine", "--json").exit_code == 0


def test_validate_checks_provider_names_and_the_registry(cladelog_env: Any,
                                                         tmp_path: Path) -> None:
    src = tmp_path / "p.json"
    src.write_text(json.dumps(tree(concept("A", provider="Nope::fn"),
                                   concept("B", provider="bad name"),
                                   concept("C", cleaner="X::c", onCast=["Y::o", 1]))))
    # this deployment's plugins register no provider: each well-formed one is missing
    out = cladelog_env.cli("graph", "validate", str(src), "--json")
    assert out.exit_code == 1
    found = sorted((i["concept"], i["kind"], i["ref"]) for i in json.loads(out.output)["errors"])
    assert found == [("A", "provider-not-registered", "Nope::fn"),
                     ("B", "provider-name", "bad name"),
                     ("C", "provider-not-registered", "X::c"),
                     ("C", "provider-not-registered", "Y::o")]
    # a palette names the providers instead (outside it: a warning); names are still checked
    named = cladelog_env.cli("graph", "validate", str(src), "--json", "--palette", "Nope::fn",
                             "--palette", "X::c", "--palette", "Y::o")
    doc = json.loads(named.output)
    assert named.exit_code == 1
    assert [(i["concept"], i["kind"]) for i in doc["errors"]] == [("B", "provider-name")]


def test_validate_a_folder_of_sets_says_so(cladelog_env: Any, tmp_path: Path) -> None:
    (tmp_path / "sets" / "main").mkdir(parents=True)
    (tmp_path / "sets" / "main" / "A.json").write_text('{"require": ["x"]}')
    result = cladelog_env.cli("graph", "validate", str(tmp_path / "sets"))
    assert result.exit_code == 2
    assert "is it a folder of concept sets? Give one set's folder" in result.stderr
    assert "has no main.json" not in result.stderr
    one = cladelog_env.cli("graph", "validate", str(tmp_path / "sets" / "main"))
    assert one.exit_code == 0, one.output


def test_jsonc_trailing_commas_stay_refused(cladelog_env: Any, tmp_path: Path) -> None:
    # SPEC §1.2 allows comments in JSONC files and says nothing of trailing commas
    src = tmp_path / "t.json"
    src.write_text('{"childConcepts": {"A": {"_id": "A", "require": ["x",]}}} // c')
    result = cladelog_env.cli("graph", "validate", str(src))
    assert result.exit_code == 2 and "invalid JSON" in result.stderr
